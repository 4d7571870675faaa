// fp8scope-cli demo OUTDIR: writes the synthetic BF16/FP8 run pair with planted problems.
#pragma once

#include <QStringList>

namespace fp8scope::cli {

int runDemo(const QStringList &args);

} // namespace fp8scope::cli
