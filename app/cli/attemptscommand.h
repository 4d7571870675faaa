// `fp8scope-cli attempts`: the evaluation path of a baseline, every attempt against it (core/analysis/attempts).
#pragma once

#include <QStringList>

namespace fp8scope::cli {

// args[0] is the program name; returns the process exit code.
int runAttempts(const QStringList &args);

} // namespace fp8scope::cli
