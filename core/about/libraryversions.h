// The versions of the libraries fp8scope runs on, as they answer at run time where they can say (Qt, HDF5,
// SQLite, libzip) and as built otherwise, and the SIMD target the CPU kernels chose on this machine: for
// --version, the About box and bug reports.
#pragma once

#include <QList>
#include <QString>

namespace fp8scope {

struct ComponentVersion {
    QString component; // "Qt", "HDF5", "CPU kernels", ...
    QString version; // "6.4.2", "AVX2 (Highway 1.0.3)", ...
};

QList<ComponentVersion> libraryVersions();

} // namespace fp8scope
