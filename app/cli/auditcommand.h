// `fp8scope-cli audit`: an inference checkpoint's FP8 weights and scales, checked (core/audit).
#pragma once

#include <QStringList>

namespace fp8scope::cli {

// args[0] is the program name; returns the process exit code (1 when the audit finds something).
int runAudit(const QStringList &args);

} // namespace fp8scope::cli
