// fp8scope's version: the release (CMake's project version), the revision it was built from (git describe,
// stamped at build time) and the versions of what it runs on, for --version, the About box and the man pages.
#pragma once

#include "core/about/libraryversions.h"

#include <QList>
#include <QString>

namespace fp8scope {

QString fp8scopeVersion(); // "0.1.0"
QString fp8scopeRevision(); // "v0.1.0-3-g1d911a2-dirty", "1d911a2"; empty when not built from a git checkout
QString fp8scopeRevisionDate(); // the revision's commit date, "2026-12-02"; empty when unknown

// "fp8scope-cli 0.1.0 (1d911a2)"
QString versionLine(const QString &program);

// Every component --version and the About box list: the libraries, then the CUDA runtime and driver (given by
// the caller, which knows whether the CUDA backend is linked).
QList<ComponentVersion> componentVersions(const QList<ComponentVersion> &cuda);

// What --version prints: the version line, then one "  component: version" line each.
QString versionReport(const QString &program, const QList<ComponentVersion> &cuda);

} // namespace fp8scope
