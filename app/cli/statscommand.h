// `fp8scope-cli stats`: FP8 metrics of one tensor from a dump, as a table or JSON.
#pragma once

#include <QStringList>

namespace fp8scope::cli {

// args[0] is the program name; returns the process exit code.
int runStats(const QStringList &args);

} // namespace fp8scope::cli
