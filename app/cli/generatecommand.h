// `fp8scope-cli generate`: writes a synthetic dump with tensors that show the classic FP8 problems.
#pragma once

#include <QStringList>

namespace fp8scope::cli {

int runGenerate(const QStringList &args);

} // namespace fp8scope::cli
