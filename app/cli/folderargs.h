// What the commands that read a folder share: opening its store and reading what changed first.
#pragma once

#include "core/query/querytypes.h"

#include <QStringList>

namespace fp8scope {
class Catalog;
class FolderSession;
} // namespace fp8scope
class QTextStream;

namespace fp8scope::cli {

// Opens the folder's store and reads the folder as it is now first (files added or grown since the last
// ingest); false with the reason on err.
bool openAndIngest(const QString &folder, FolderSession *session, QTextStream &err);

// A run's name, empty when the catalog has no such run.
QString nameOf(const Catalog &catalog, RunRef ref);

} // namespace fp8scope::cli
