#include "folderargs.h"

#include "core/query/catalog.h"

#include <QTextStream>

namespace fp8scope::cli {

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

QString nameOf(const Catalog &catalog, RunRef ref)
{
    const auto r = catalog.run(ref);
    return r ? r->name : QString();
}

} // namespace fp8scope::cli
