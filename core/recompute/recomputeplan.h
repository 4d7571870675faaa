// A recompute spread over processes (`fp8scope-cli recompute --mpi`, run by mpirun or srun): the work every
// rank agrees on (each indexed dump, and whether the store holds its results already), its split over the
// ranks by file, each dump's results computed without a store, and the bytes they travel to rank 0 as, which
// alone writes the store. No MPI here: app/cli/mpirecompute moves the bytes (optional, like the CUDA backend).
// The serial recompute (recomputeDump) computes and stores through the same two functions, so that both
// store the same numbers.
#pragma once

#include "dumprecompute.h"

#include "core/query/catalog.h"

#include <QByteArray>

#include <optional>
#include <vector>

namespace fp8scope {

struct RecomputeItem {
    DumpRef ref;
    int64_t fileBytes = 0; // the size of the dump's file (what the split balances)
};

// Every dump indexed in the catalog's runs, by run, file and dataset; with missingOnly, those lacking a
// recomputed point under one of the recipes (*alreadyStored, when given, counts the ones left out).
std::vector<RecomputeItem> recomputeWork(
    const Catalog &catalog, const std::vector<Recipe> &recipes, bool missingOnly, int *alreadyStored = nullptr);

// The split over `ranks`: a file's dumps stay together (its file is opened on one rank); the files, largest
// first (ties by path), go one by one to the rank holding the fewest bytes so far (ties: the lower rank), so
// that every rank given the same work makes the same split. Each rank's indices into `work`, ascending.
std::vector<std::vector<size_t>> splitByFile(const std::vector<RecomputeItem> &work, int ranks);

// One dump's results: the statistics storedStatistics() names, under each recipe's label, or why there are
// none.
struct DumpResult {
    uint32_t index = 0; // into the work
    QString error; // empty when computed
    std::vector<std::pair<QString, std::vector<std::pair<QString, double>>>> recipes; // label, statistics
    int64_t bytesRead = 0; // the tensor's bytes as stored
    double seconds = 0;
    std::vector<TensorMetrics> metrics; // each recipe's, where computed (not sent)
};

// Reads the dump from the store's folder and computes it under every recipe (the amax history it carries
// feeding delayed scaling), its compressed chunks decoded on `readerThreads` threads (0: one per hardware
// thread; a rank sharing a node with others takes its share). A failure (an unreadable file, memory running
// out) is the result's error.
DumpResult computeDump(const QString &folder, MetricsBackend &backend, const DumpRef &ref,
    const std::vector<Recipe> &recipes, const MetricsEngine::Progress &progress = {}, int readerThreads = 0);
// Stores a computed result as recomputed series (RunStore::storeRecomputed: every recipe's in one transaction).
[[nodiscard]] bool storeDumpResult(RunStore &store, const DumpRef &ref, const DumpResult &result, QString *error);

// What travels: the work with the recipes (rank 0 to all), and results (every rank to rank 0). Doubles go
// as their bits, so rank 0 stores exactly what the rank computed. decode* return nullopt on bytes that are
// not what encode* wrote.
struct RecomputeBroadcast {
    std::vector<RecomputeItem> work;
    QStringList recipes; // as the command line named them (Recipe::parse)
    QString folder; // absolute
    QString error; // rank 0 could not make the work: every rank stops with it
};
QByteArray encodeBroadcast(const RecomputeBroadcast &b);
std::optional<RecomputeBroadcast> decodeBroadcast(const QByteArray &bytes);
QByteArray encodeResult(const DumpResult &r);
std::optional<DumpResult> decodeResult(const QByteArray &bytes);

} // namespace fp8scope
