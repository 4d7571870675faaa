// The "fp8scope-cli COMMAND FOLDER [options]" shape several commands share.
#pragma once

#include <QCommandLineParser>
#include <QStringList>

namespace fp8scope::cli {

// Adds the help option and the FOLDER argument, parses, and prints usage errors: 0 to go on, -1 when the
// help was printed (exit 0), 2 for a usage error.
int parseFolderArgs(QCommandLineParser &parser, const QStringList &args, const QString &what);

} // namespace fp8scope::cli
