#include "folderargs.h"

#include "core/query/catalog.h"

#include <QTextStream>

namespace fp8scope::cli {

int parseFolderArgs(QCommandLineParser &parser, const QStringList &args, const QString &what)
{
    parser.setApplicationDescription(what);
    parser.addHelpOption();
    parser.addPositionalArgument(QStringLiteral("folder"), QStringLiteral("run folder or workspace"));
    QTextStream err(stderr);
    if (!parser.parse(args)) {
        err << "fp8scope-cli: " << parser.errorText() << '\n';
        return 2;
    }
    if (parser.isSet(QStringLiteral("help"))) {
        QTextStream(stdout) << parser.helpText();
        return -1;
    }
    if (parser.positionalArguments().size() != 1) {
        err << "fp8scope-cli: expected one FOLDER\n";
        return 2;
    }
    return 0;
}

// Opens the folder's store and reads the folder as it is now first (files added or grown since the last ingest).
bool openAndIngest(const QString &folder, Catalog *catalog, QTextStream &err)
{
    QString error;
    if (!catalog->open(folder, &error)) {
        err << "fp8scope-cli: " << error << '\n';
        return false;
    }
    const IngestReport ingested = catalog->storeOf(catalog->stores().front().serial)->ingest();
    for (const QString &e : ingested.errors)
        err << "fp8scope-cli: " << e << '\n';
    catalog->refresh();
    return true;
}

} // namespace fp8scope::cli
