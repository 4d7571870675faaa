// Tests of the store's schema, migrations and damage handling reach its raw connection and a catalog's stores
// through here; no product code does (it reads through core/query and writes through core/session).
#pragma once

#include "core/query/catalog.h"
#include "core/store/runstore.h"

namespace fp8scope {

struct RunStoreTestAccess {
    static Database &db(RunStore &s) { return s.m_db; }
};

// A catalog's store, for tests that write or inspect it directly (the product writes through FolderSession).
struct CatalogTestAccess {
    static RunStore *storeOf(Catalog &c, quint64 serial) { return c.storeOf(serial); }
    static RunStore *store(Catalog &c, RunRef run) { return c.storeOf(run.store); }
};

namespace testing {

// Opens a folder in `catalog` and reads its files into the store; false with *error set when either failed.
inline bool openAndIngest(const QString &folder, Catalog *catalog, QString *error)
{
    if (!catalog->open(folder, error))
        return false;
    const IngestReport report = CatalogTestAccess::storeOf(*catalog, catalog->stores().front().serial)->ingest();
    if (!report.errors.isEmpty()) {
        *error = report.errors.join(QLatin1Char('\n'));
        return false;
    }
    catalog->refresh();
    return true;
}

// The query layer's layer x step matrix of a store's run, through a Catalog over the store's folder.
inline Heatmap matrixOf(
    const RunStore &store, int64_t runId, const QString &stat, const QString &tensor, const QString &recipe = QString())
{
    Catalog c;
    QString error;
    if (!c.open(store.folder(), &error))
        return {};
    return c.matrix({c.stores().front().serial, runId}, {.stat = stat, .tensor = tensor, .recipe = recipe});
}

} // namespace testing

} // namespace fp8scope
