// The "fp8scope-cli COMMAND FOLDER [options]" shape several commands share.
#pragma once

#include <QCommandLineParser>
#include <QStringList>

namespace fp8scope {
class Catalog;
}
class QTextStream;

namespace fp8scope::cli {

// Adds the help option and the FOLDER argument, parses, and prints usage errors: 0 to go on, -1 when the
// help was printed (exit 0), 2 for a usage error.
int parseFolderArgs(QCommandLineParser &parser, const QStringList &args, const QString &what);

// Opens the folder's store and reads the folder as it is now first (files added or grown since the last
// ingest); false with the reason on err.
bool openAndIngest(const QString &folder, Catalog *catalog, QTextStream &err);

} // namespace fp8scope::cli
