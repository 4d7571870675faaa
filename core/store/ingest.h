// Ingest: reads the recognised files of a run folder into the store, one transaction per file (all or
// nothing), skipping unchanged files and resuming grown logs where the last ingest stopped; and the writer
// of recomputed metrics. RunStore::ingest and RunStore::storeRecomputed call these.
#pragma once

#include "database.h"

#include "core/importers/importer.h"

#include <QStringList>

#include <utility>

#include <functional>
#include <utility>
#include <vector>

namespace fp8scope {

struct IngestReport {
    int filesRead = 0;
    int filesUnchanged = 0;
    int filesResumed = 0;
    int filesFailed = 0;
    int filesDeleted = 0; // in the store, no longer in the folder: what they wrote is gone
    int64_t pointsWritten = 0;
    int problems = 0;
    QStringList unrecognised; // relative paths of files no importer reads
    std::vector<std::pair<QString, QString>> unreadable; // (relative path, why): bad names, no permission
    QStringList errors; // store errors (a failed statement or commit), with the file they stopped
    bool busy = false; // another fp8scope was writing to the store: the ingest stopped (errors say who)
};

using IngestProgress = std::function<bool(int done, int total, const QString &file)>;

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
