// Ingest: reads the recognised files of a run folder into the store, one transaction per file (all or
// nothing), skipping unchanged files and resuming grown logs where the last ingest stopped; and the writer
// of recomputed metrics. RunStore::ingest and RunStore::storeRecomputed call these.
#pragma once

// Only core/query, core/session and core/recompute read or write a store (their targets link
// fp8scope_store, which defines this); everything above them goes through Catalog and FolderSession.
#ifndef FP8SCOPE_STORE_ACCESS
#error                                                                                                                 \
    "core/store is private to core: read runs through core/query's Catalog, write through core/session's FolderSession (docs/ARCHITECTURE.md)"
#endif

#include "database.h"

#include "core/records/records.h"

#include "core/importers/importer.h"

#include <QStringList>

#include <utility>

#include <functional>
#include <utility>
#include <vector>

namespace fp8scope {

// `storePath` names the store in messages; `writer` says who holds it when it is busy (readWriter()).
IngestReport ingestFolder(
    Database &db, const QString &folder, const QString &storePath, const IngestProgress &progress);

// Who is writing to a store: the program, its pid and since when, kept in <store>-writer while an ingest
// runs; "" when nobody (or a writer that is gone).
QString readWriter(const QString &storePath);

// Recomputed metrics of one dump under each recipe, as series with source "recomputed" and the recipe, in
// one transaction.
using RecomputedStats = std::vector<std::pair<QString, std::vector<std::pair<QString, double>>>>; // recipe, stats
[[nodiscard]] bool writeRecomputed(
    Database &db, int64_t runId, const DumpRecord &d, const RecomputedStats &byRecipe, QString *error);

} // namespace fp8scope
