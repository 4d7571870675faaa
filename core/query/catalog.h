// The typed query layer: everything the views, the CLI, the analysis and the report read about the opened
// run folders goes through a Catalog. It holds one store connection per opened folder (a Catalog is used on
// one thread; a second thread opens its own over the same folders and serials) and answers with the values
// of core/query/querytypes.h. The domain rules live here, once: which run is whose baseline, the canonical
// name of a statistic, which of several series to show, a layer x step matrix at its real steps. No SQL here:
// the stores answer plain reads.
#pragma once

#include "querytypes.h"
#include "stepseries.h"

#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace fp8scope {

class RunStore;

class Catalog
{
public:
    Catalog();
    ~Catalog();
    Catalog(Catalog &&) noexcept;
    Catalog &operator=(Catalog &&) noexcept;

    // A serial no store of this process had before.
    static quint64 newStoreSerial();

    // Opens the store of `folder` (creating or migrating it) under `serial`; false with *error set. Several
    // folders make one catalog (a window that opened two folders).
    [[nodiscard]] bool open(const QString &folder, quint64 serial, QString *error);
    [[nodiscard]] bool open(const QString &folder, QString *error) { return open(folder, newStoreSerial(), error); }
    void close();
    struct StoreEntry {
        quint64 serial;
        QString folder;
    };
    std::vector<StoreEntry> stores() const;
    // Where the store of an opened folder lives ("" when not open here).
    QString storePath(quint64 serial) const;
    // The store's RunStore::dataRewrites() (-1 when not open here): between two equal numbers its series only
    // grew after their last step.
    int64_t dataRewrites(quint64 serial) const;
    // Forgets what it worked out from the stores (pairings), after they changed.
    void refresh();

    // Runs, in the order of the opened folders and, within one, by name; withCounts fills seriesCount and
    // pointCount (a pass over every point chunk).
    std::vector<Run> runs(bool withCounts = true) const;
    // One run (its seriesCount and pointCount left 0: runs() counts them).
    std::optional<Run> run(RunRef ref) const;
    // A run (counts left 0) by its name, its display name, or "<opened folder name>/<run name>" when names repeat.
    std::optional<Run> findRun(const QString &name) const;
    Pairing pairing(RunRef ref) const;

    // The run's series (run-level ones with canonical names), in store order.
    std::vector<Series> series(RunRef ref) const;
    // The series of one layer and tensor kind ("" and "" for run-level ones).
    std::vector<Series> seriesAt(RunRef ref, const QString &layer, const QString &tensor) const;
    // The run-level statistics of a run, canonical, with the sources holding each (step axis).
    std::vector<StatisticInfo> runStatistics(RunRef ref) const;
    // The series matching a request, in the order of the one policy: logged before recomputed; of recomputed
    // ones, the run's own recipe first; then the most points; then source, name, recipe (natural order).
    std::vector<Series> candidates(RunRef ref, const SeriesRequest &request) const;
    // The first of candidates(): the series every view and `fp8scope-cli series` shows for the request.
    std::optional<Series> chooseSeries(RunRef ref, const SeriesRequest &request) const;
    std::vector<SeriesPoint> points(const Series &series, const PointRange &range = {}) const;
    std::optional<SeriesPoint> valueAt(const Series &series, int64_t step) const;
    // Every series of a run that holds a value that is not finite at or after `from`, with its first such step
    // there and that value (found through the store's index of chunks that hold one; docs/STORE.md). Unordered.
    std::vector<NonFinitePoint> firstNonFinite(RunRef ref, int64_t from = std::numeric_limits<int64_t>::min()) const;
    // Every point's step and value of a series, in step order: what the analysis reads.
    StepSeries stepSeries(const Series &series) const;
    // Keep what stepSeries() read (16 bytes a point): a later read of the same series asks the store only for
    // the points after the last step kept, while the store's data were only added to since
    // (RunStore::dataRewrites); anything replaced or removed there, and what was kept of that store is read
    // again. A followed run's triage then reads each point once. Off by default; off forgets what was kept.
    void setKeepPoints(bool keep);
    bool keepsPoints() const { return m_keepPoints; }

    // While one lives, every read of this catalog sees its stores as they were at its first read
    // (RunStore::beginRead): an analysis of a folder being written reads one state of it, not series read
    // before and after an ingest's commit. Only for reads: no store write may happen under it.
    class ReadSnapshot
    {
    public:
        explicit ReadSnapshot(const Catalog &catalog);
        ~ReadSnapshot();
        ReadSnapshot(const ReadSnapshot &) = delete;
        ReadSnapshot &operator=(const ReadSnapshot &) = delete;

    private:
        std::vector<const RunStore *> m_open;
    };

    // Every distinct layer of these runs (all when empty) in depth order, with its tensor kinds (series or
    // dumps; the quantized siblings of dumps left out).
    std::vector<LayerTensors> layerTensors(const std::vector<RunRef> &runs = {}) const;
    // The (statistic, tensor kind) pairs a run has per layer.
    std::vector<std::pair<QString, QString>> layerStatistics(RunRef ref) const;
    bool hasLayerStatistics(RunRef ref) const { return !layerStatistics(ref).empty(); }
    Heatmap matrix(RunRef ref, const MatrixRequest &request) const;

    std::vector<Eval> evals(RunRef ref) const;
    // The files the run's data was read from (and its folder's files of no run), by path.
    std::vector<InputFile> inputFiles(RunRef ref) const;
    std::vector<ConfigEntry> configs(RunRef ref) const;
    std::vector<VersionEntry> versions(RunRef ref) const;
    // Indexed tensor dumps (the quantized "_fp8" siblings only with withQuantized).
    std::vector<Dump> dumps(RunRef ref, bool withQuantized = false) const;
    // The run's dump of that layer and tensor whose step is nearest `step` (dumps without a step left out; the
    // earlier of two as near); nullopt when it has none.
    std::optional<Dump> nearestDump(RunRef ref, const QString &layer, const QString &tensor, int64_t step) const;
    // Import problems of every store, then the store errors reads met (a damaged store says so).
    std::vector<ProblemEntry> problems() const;
    // Called with each store error a read of this catalog meets, when first met (problems() lists it too), on
    // this catalog's thread and inside the read that met it: a handler that does more than note it should
    // queue the work. Kept for the stores opened later.
    void setStoreErrorHandler(std::function<void(const ProblemEntry &problem)> handler);

    // Stored triage results (core/analysis/triage.h computes them). `baseline` invalid: the run checked alone.
    // The generation is the data's part of their stamp: it moves whenever the store's data change (-1 when
    // the store is not open here).
    int64_t dataGeneration(quint64 store) const;
    std::optional<StoredTriage> storedTriage(RunRef run, RunRef baseline) const;
    // Replaces the stored result of (run, baseline); false with *error set when the store could not take it.
    [[nodiscard]] bool storeTriage(RunRef run, RunRef baseline, const StoredTriage &result, QString *error);
    // The recipe what-if of one of the run's dumps for a set of recipes (RunStore::whatIf); nothing when none.
    std::optional<StoredWhatIf> storedWhatIf(RunRef run, const QString &dump, const QString &recipes) const;
    std::vector<StoredWhatIf> storedWhatIfs(RunRef run) const;
    [[nodiscard]] bool storeWhatIf(RunRef run, const StoredWhatIf &w, QString *error);
    // How a run's store names its baseline in stored results and reviews: (folder, name), the folder "" when
    // the baseline is in the run's store; the name "" when the baseline is not open (baseline invalid: ("", "")).
    std::pair<QString, QString> baselineKey(RunRef run, RunRef baseline) const;
    // The user's reviews of the findings of `run` against `baseline` (invalid: the run checked alone).
    std::vector<FindingReview> findingReviews(RunRef run, RunRef baseline) const;
    // The user's word on the final candidate among `baseline`'s attempts, kept in its store; nothing when none.
    std::optional<CandidateChoice> candidateChoice(RunRef baseline) const;

private:
    // The writes (ingest, rebuild, recompute, reviews) go through a FolderSession (core/session), which holds
    // its catalog; nothing else reaches a store.
    friend class FolderSession;
    friend struct CatalogTestAccess; // tests/core/storeaccess.h
    RunStore *storeOf(quint64 serial);
    Heatmap matrixOf(RunRef ref, const MatrixRequest &request) const;
    // The matrix across ranks' sources (kRanksMax / kRanksMean).
    static void acrossRanks(const RunStore &store, int64_t runId, const MatrixRequest &request,
        const QStringList &rankSources, bool max, Heatmap *h);
    struct Entry;
    const Entry *entry(quint64 serial) const;
    std::vector<Run> listRuns(bool withCounts) const;
    std::vector<std::unique_ptr<Entry>> m_entries;
    mutable std::optional<std::vector<Pairing>> m_pairings; // per runs() index
    mutable std::vector<Run> m_pairedRuns;
    bool m_keepPoints = false;
    std::function<void(const ProblemEntry &)> m_storeErrorHandler;
};

// The package versions shown with a run: the frameworks FP8 training depends on, in this order.
QStringList keyPackages();
// A run's versions of keyPackages() as "transformer-engine 1.7.0, torch 2.3.0" ("" when none is known).
QString keyVersionsText(const std::vector<VersionEntry> &versions);

} // namespace fp8scope
