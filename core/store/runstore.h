// The run store: one SQLite database per opened folder (<folder>/.fp8scope/store.sqlite, or the user cache
// directory when the folder is read-only) holding runs, series of (step, value) points, evals, configs,
// the tensor dump index, recomputed metrics and import problems. Ingest is per file and all-or-nothing,
// idempotent, and incremental for growing logs. The schema is documented in docs/STORE.md.
#pragma once

#include "database.h"

#include "core/importers/importer.h"

#include <QHash>
#include <QString>

#include <functional>
#include <optional>
#include <set>
#include <vector>

namespace fp8scope {

struct RunInfo {
    int64_t id = 0;
    QString name;
    QString displayName;
    QString precision;
    QString recipe;
    QString baseline;
    QString inferencePrecision;
    QString notes;
    int64_t seriesCount = 0;
    int64_t pointCount = 0;
};

// The recipe a run's tensor was quantized under, in fp8scope's recipe names: the run's recipe, except
// that blockwise scaling (Transformer Engine's Float8BlockScaling) is 128x128 tiles for weights and 1x128
// blocks for activations and gradients.
QString tensorRecipe(const QString &runRecipe, const QString &tensor);

struct SeriesInfo {
    int64_t id = 0;
    int64_t runId = 0;
    SeriesKey key;
    int64_t points = 0;
    int64_t firstStep = 0;
    int64_t lastStep = 0;
};

// One point, or one bucket of several: min/max of the values and the step range they span.
struct SeriesPoint {
    int64_t step = 0;
    int64_t lastStep = 0;
    double value = 0; // the point's value; for a bucket, its min (draw the bucket from min to max)
    double min = 0;
    double max = 0;
    int64_t count = 1;
};

struct Heatmap {
    QStringList layers; // depth order
    std::vector<int64_t> steps;
    std::vector<double> values; // layers.size() x steps.size(), row-major, NaN where absent
    QString source; // the series' source and recipe shown
    QString recipe;
    QStringList recipes; // the recipes the statistic was recomputed under (one row per layer shows one)
    double at(qsizetype layer, size_t step) const { return values[size_t(layer) * steps.size() + step]; }
};

struct ProblemRecord {
    QString file;
    int64_t line = 0;
    int64_t offset = -1;
    QString message;
};

struct IngestReport {
    int filesRead = 0;
    int filesUnchanged = 0;
    int filesResumed = 0;
    int filesFailed = 0;
    int64_t pointsWritten = 0;
    int problems = 0;
    QStringList unrecognised;
};

class RunStore
{
public:
    // Where the store of `folder` lives: inside it when writable, else in the user cache directory.
    static QString storePathFor(const QString &folder);

    bool open(const QString &folder, QString *error);
    bool openFile(const QString &storePath, const QString &folder, QString *error);
    QString path() const { return m_path; }
    QString folder() const { return m_folder; }

    // Scans the folder and ingests every recognised file that is new or changed. progress(done, total,
    // file) may return false to stop between files (what is committed stays).
    using Progress = std::function<bool(int done, int total, const QString &file)>;
    IngestReport ingest(const Progress &progress = {});

    std::vector<RunInfo> runs() const;
    std::optional<RunInfo> run(const QString &name) const;
    std::vector<SeriesInfo> series(int64_t runId) const;
    // Series matching the key fields that are not empty (source "" means any).
    std::vector<SeriesInfo> findSeries(int64_t runId, const SeriesKey &key) const;
    // Series whose layer and tensor are exactly these ("" for run-level series); no point counts (fast).
    std::vector<SeriesInfo> seriesAt(int64_t runId, const QString &layer, const QString &tensor) const;
    // Points of one series in [from, to]; more than maxPoints are served as min/max per bucket.
    std::vector<SeriesPoint> points(int64_t seriesId, int64_t from, int64_t to, int maxPoints) const;
    // The last point at or before `step` (the first point when all lie after it); nullopt for an empty series.
    std::optional<SeriesPoint> valueAt(int64_t seriesId, int64_t step) const;
    // One statistic of one tensor kind, layers x steps, from one source (logged sources before recomputed)
    // and one recipe: `recipe`, else the run's own, else the one most layers were recomputed under.
    Heatmap heatmap(int64_t runId, const QString &stat, const QString &tensor, const QString &source = QString(),
        const QString &recipe = QString()) const;
    std::vector<EvalRecord> evals(int64_t runId) const;
    std::vector<std::pair<QString, QString>> configs(int64_t runId) const;
    std::vector<ProblemRecord> problems() const;
    std::vector<std::pair<QString, DumpRecord>> dumps(int64_t runId) const; // (file, record)
    // Recomputed metrics as series with source "recomputed" and the recipe name.
    bool storeRecomputed(int64_t runId, const DumpRecord &d, const QString &recipe,
        const std::vector<std::pair<QString, double>> &stats, QString *error);

    Database &database() { return m_db; }

private:
    bool migrate(QString *error);
    void dropRunsLeftEmpty(const std::set<QString> &names);
    void inferFromConfigs();
    Database m_db;
    QString m_path;
    QString m_folder;
};

// Natural order of layer names: digit runs compare as numbers ("layers.2" before "layers.10").
bool layerLess(const QString &a, const QString &b);

} // namespace fp8scope
