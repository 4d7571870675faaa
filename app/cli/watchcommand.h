// fp8scope-cli watch: follows a folder whose runs are still being written, triages them again as data arrive
// and prints each new finding once; exits 3 on the first at or above --fail-on (a job script stops the run).
#pragma once

#include <QStringList>

namespace fp8scope::cli {

int runWatch(const QStringList &args);

} // namespace fp8scope::cli
