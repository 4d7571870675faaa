// The run store: one SQLite database per opened folder (<folder>/.fp8scope/store.sqlite, or the user cache
// directory when the folder is read-only) holding runs, series of (step, value) points, evals, configs,
// versions, the tensor dump index, recomputed metrics and import problems. Ingest is per file and
// all-or-nothing, idempotent, and incremental for growing logs (core/store/ingest.h). The schema and its
// migrations live in core/store/schema.cpp and are documented in docs/STORE.md.
//
// RunStore answers plain reads of what is stored, by store ids; which series to show, which run is whose
// baseline and the canonical names of statistics are decided above it, in core/query. A read that fails
// (a damaged store) returns what it could and records the error: errors() lists them for the problems panel.
#pragma once

// Only core/query, core/session and core/recompute read or write a store (their targets link
// fp8scope_store, which defines this); everything above them goes through Catalog and FolderSession.
#ifndef FP8SCOPE_STORE_ACCESS
#error                                                                                                                 \
    "core/store is private to core: read runs through core/query's Catalog, write through core/session's FolderSession (docs/ARCHITECTURE.md)"
#endif

#include "database.h"
#include "expertrows.h"
#include "ingest.h"
#include "runinference.h"

#include "core/formats/layerorder.h"
#include "core/records/records.h"

#include "core/importers/importer.h"

#include <QString>
#include <QStringList>

#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace fp8scope {

struct RunInfo {
    int64_t id = 0;
    QString name;
    QString displayName;
    QString precision;
    QString recipe;
    QString baseline; // as the manifest names it
    QString inferencePrecision;
    QString notes;
    QString lossGapBar; // the loss gap this run accepts of the runs compared with it, as the manifest says it
    QString parent; // the attempt it derives from, as the manifest names it
    QString inferenceCheckpoint; // as the manifest names it (relative to the manifest's folder)
    QString inferenceReference;
    QString manifest; // the manifest file that set these, relative to the store's folder; "" for none
    QString manifestKey; // the key under "runs" of that file when it is a workspace manifest
    std::optional<QString> folder; // the folder that is the run's, relative to the store's folder ("" for it)
    std::optional<QString> filesFolder; // the folder of the first file that wrote its records, with a trailing '/'
    QString group; // the group its logger put it in (a W&B group, an MLflow experiment); "" for none
    int64_t seriesCount = 0;
    int64_t pointCount = 0;
};

struct SeriesInfo {
    int64_t id = 0;
    int64_t runId = 0;
    SeriesKey key;
    int64_t points = 0;
    int64_t firstStep = 0;
    int64_t lastStep = 0;
};

struct ProblemRecord {
    QString file; // relative to the store's folder ("" for the store itself)
    int64_t line = 0;
    int64_t offset = -1;
    QString message;
};

struct EvalRow {
    EvalRecord eval;
    QString file; // the results file, relative to the store's folder
};

// A file the store read, as it was when read.
struct InputFileRow {
    QString path; // relative to the folder
    QString importer;
    int64_t size = 0;
};

struct KeyValueRow {
    QString key; // a config key, or a package
    QString value; // its value, or the package's version
    QString file;
};

struct DumpRow {
    QString file; // relative to the store's folder
    DumpRecord dump;
};

// The points of one layer's series of a statistic, for a layer x step matrix.
struct LayerRow {
    QString layer;
    std::vector<std::pair<int64_t, double>> points; // step order
};

class RunStore
{
public:
    // Where the store of `folder` lives: inside it when writable, else in the user cache directory.
    static QString storePathFor(const QString &folder);

    [[nodiscard]] bool open(const QString &folder, QString *error);
    [[nodiscard]] bool openFile(const QString &storePath, const QString &folder, QString *error);
    // Throws the folder's store away and opens a new, empty one (ingest fills it again): the store is a cache of
    // the run's files. What only it held (metrics recomputed from dumps) is recomputed on request; the reviews
    // of triage findings and the words on candidates, which no file holds, are read first (when the old store
    // can still be read) and carried into the new one, where the next ingest gives each review back to the run of
    // its name. *carried: how many reviews. The new store is made aside (STORE.rebuild) and renamed over the old
    // one, so that a crash at any moment leaves the old store or the new one, each with the reviews and choices.
    // `reached` (tests) is called at each point between two steps: 1 once the old store is read, ... 8 once
    // the new one is in place.
    [[nodiscard]] bool rebuild(const QString &folder, QString *error, int *carried = nullptr,
        const std::function<void(int point)> &reached = {});
    // Carried reviews waiting for a run of their name (none once every run is ingested).
    int carriedReviews() const;
    QString path() const { return m_path; }
    QString folder() const { return m_folder; }

    // Scans the folder and ingests every recognised file that is new or changed. progress(done, total,
    // file) may return false to stop between files (what is committed stays).
    using Progress = IngestProgress;
    IngestReport ingest(const Progress &progress = {});

    // The runs by name; withCounts fills seriesCount and pointCount (a pass over their point chunks).
    std::vector<RunInfo> runs(bool withCounts = true) const;
    // One run by id, without its series and point counts (which cost a pass over its chunks).
    std::optional<RunInfo> runInfo(int64_t id) const;
    // A run by its name or display name.
    std::optional<RunInfo> run(const QString &name) const;
    // Series matching the key fields that are not empty (source "" means any); stat, tensor, layer (natural
    // order), source, recipe order.
    std::vector<SeriesInfo> findSeries(int64_t runId, const SeriesKey &key) const;
    std::vector<SeriesInfo> series(int64_t runId) const { return findSeries(runId, {}); }
    // Series whose layer and tensor are exactly these ("" for run-level series), with their point counts.
    std::vector<SeriesInfo> seriesAt(int64_t runId, const QString &layer, const QString &tensor) const;
    // Points of one series in [from, to]; more than maxPoints are served as min/max per bucket.
    std::vector<SeriesPoint> points(int64_t seriesId, int64_t from, int64_t to, int maxPoints) const;
    // The last point at or before `step` (the first point when all lie after it); nullopt for an empty series.
    std::optional<SeriesPoint> valueAt(int64_t seriesId, int64_t step) const;
    // Each series of a run that holds a value that is not finite (NaN, +-inf) at or after `from`, with the step
    // of its first such value there and that value; found through the index of the chunks that hold one
    // (point_chunks.nonfinite_step), decoding only those chunks.
    struct NonFinite {
        SeriesInfo series; // its points, firstStep and lastStep are not filled
        int64_t step = 0;
        double value = 0;
    };
    std::vector<NonFinite> firstNonFinite(int64_t runId, int64_t from) const;
    // Distinct (layer, tensor) pairs of a run's per-layer series and dumps.
    std::vector<std::pair<QString, QString>> layerTensors(int64_t runId) const;
    // Distinct (stat, tensor) pairs of a run's per-layer series.
    std::vector<std::pair<QString, QString>> layerStatistics(int64_t runId) const;
    // The (source, recipe) pairs holding per-layer series of one statistic of one tensor kind, with how many
    // layers each covers.
    struct LayerSource {
        QString source;
        QString recipe;
        int64_t layers = 0;
    };
    std::vector<LayerSource> layerSources(int64_t runId, const QString &stat, const QString &tensor) const;
    // The per-layer series of one statistic of one tensor kind from one source and recipe, layer by layer; those
    // of the layers `keep` takes when given (their points alone are read).
    std::vector<LayerRow> layerRows(int64_t runId, const QString &stat, const QString &tensor, const QString &source,
        const QString &recipe, const std::function<bool(const QString &)> &keep = {}) const;
    // A GEMM's experts reduced step by step (core/store/expertrows.h) for one statistic of one tensor kind from one
    // source and recipe, and the layers that are no experts' left to layerRows; nullopt when the run has none, or
    // none made from its experts' points as they are now.
    std::optional<std::vector<ExpertGroupRow>> expertRows(
        int64_t runId, const QString &stat, const QString &tensor, const QString &source, const QString &recipe) const;
    // Makes them again where the experts' points changed since (every ingest does); false with *error on a failure.
    [[nodiscard]] bool refreshExpertRows(QString *error);
    std::vector<EvalRow> evals(int64_t runId) const;
    // The files read for the run (and those of no run: a workspace manifest), by path.
    std::vector<InputFileRow> inputFiles(int64_t runId) const;
    // A rank's statistics logs whose lines are another rank's (a reduction group): (its path, that file's path).
    // Nothing of theirs is stored; the file they copy holds it.
    std::vector<std::pair<QString, QString>> rankCopies(int64_t runId) const;
    std::vector<KeyValueRow> configs(int64_t runId) const;
    std::vector<KeyValueRow> versions(int64_t runId) const;
    std::vector<ProblemRecord> problems() const;
    std::vector<DumpRow> dumps(int64_t runId) const;
    // Recomputed metrics as series with source "recomputed" and the recipe name.
    [[nodiscard]] bool storeRecomputed(int64_t runId, const DumpRecord &d, const QString &recipe,
        const std::vector<std::pair<QString, double>> &stats, QString *error);
    // The same under several recipes (recipe, statistics) in one transaction.
    [[nodiscard]] bool storeRecomputed(int64_t runId, const DumpRecord &d,
        const std::vector<std::pair<QString, std::vector<std::pair<QString, double>>>> &byRecipe, QString *error);

    // A number that moves whenever what the store holds of the run files changes (a file read, rewritten or
    // gone, a run's attributes, a recomputed metric): what a stored triage result is stamped with.
    int64_t dataGeneration() const;
    // A number that moves whenever something the store held was replaced or removed (a file rewritten or gone,
    // points written again at steps a series had); between two equal numbers every series only grew after its
    // last step. -1 when it cannot be read.
    int64_t dataRewrites() const;
    // A read transaction: every read until endRead() sees the store as it was at the first one, whatever
    // an ingest on another connection commits meanwhile (WAL readers do not block the writer). False when one
    // could not begin (a transaction of this connection is open): reads then see each commit as it comes.
    bool beginRead() const;
    void endRead() const;
    std::optional<StoredTriage> triageResult(
        int64_t runId, const QString &baselineFolder, const QString &baselineName) const;
    // Replaces the run's result for that baseline, findings included, in one transaction.
    [[nodiscard]] bool storeTriageResult(int64_t runId, const StoredTriage &result, QString *error);
    // The reviews of the findings of the run against that baseline (schema version 7), by finding.
    std::vector<FindingReview> findingReviews(
        int64_t runId, const QString &baselineFolder, const QString &baselineName) const;
    // Keeps one review (replacing the finding's earlier one).
    [[nodiscard]] bool storeFindingReview(int64_t runId, const QString &baselineFolder, const QString &baselineName,
        const FindingReview &review, QString *error);

    // The user's word on the final candidate of the baseline of that name (schema version 12); nothing when none.
    std::optional<CandidateChoice> candidateChoice(const QString &baselineName) const;
    // Keeps it (replacing an earlier one); an empty candidate takes the word back.
    [[nodiscard]] bool storeCandidateChoice(const QString &baselineName, const CandidateChoice &choice, QString *error);

    // The recipe what-if of a dump for a set of candidate recipes (schema version 15): its result as JSON and the
    // dump file's size and modification time (ms since the epoch) when it was computed; nothing when none.
    std::optional<StoredWhatIf> whatIf(int64_t runId, const QString &dump, const QString &recipes) const;
    std::vector<StoredWhatIf> whatIfs(int64_t runId) const;
    // Keeps one (replacing that dump's for the same recipes).
    [[nodiscard]] bool storeWhatIf(int64_t runId, const StoredWhatIf &w, QString *error);

    // Store errors met by reads since the store was opened (each once), newest last.
    QStringList errors() const { return m_errors; }
    // Called with each store error when it is first met (errors() keeps them too), on the thread that met it.
    void setErrorHandler(std::function<void(const QString &error)> handler) { m_errorHandler = std::move(handler); }

private:
    friend struct RunStoreTestAccess; // tests/core/storeaccess.h: the raw connection, for tests of the schema
    // The quick check a store passes before it is trusted; false with *error (what to do included) when not.
    bool check(QString *error);
    // Records a failed statement's error; true when `s` did not fail.
    bool ok(const Statement &s) const;
    // Keeps a store error once and hands it to the error handler.
    // The fingerprint of the experts' chunks of one (run, stat, tensor, source, recipe), and their layers by GEMM.
    QString expertFingerprint(int64_t runId, const QString &stat, const QString &tensor, const QString &source,
        const QString &recipe, std::map<QString, std::vector<std::pair<int32_t, QString>>> *gemms) const;
    void recordError(const QString &error) const;
    Statement prepare(const char *sql) const;
    // (key, value, file) rows of a statement that takes the run id.
    std::vector<KeyValueRow> keyValues(const char *sql, int64_t runId) const;

    mutable Database m_db;
    QString m_path;
    QString m_folder;
    mutable QStringList m_errors;
    std::function<void(const QString &)> m_errorHandler;
};

} // namespace fp8scope
