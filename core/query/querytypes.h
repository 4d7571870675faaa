// The values the query layer hands out and takes in: runs with a stable identity, series with their
// canonical statistic and the name their source gave them, requests for a series or a layer x step matrix,
// evals, configs, versions, dumps and problems. Plain data; core/query/catalog.h answers with them.
#pragma once

#include "core/importers/importer.h"
#include "core/records/records.h"

#include <QMetaType>
#include <QString>
#include <QStringList>

#include <compare>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace fp8scope {

// A run as every reader knows it: the opened store it lives in (a serial handed out once per process when
// the folder was opened, never reused, so a closed folder's runs are never taken for a new one's) and its id
// in that store.
struct RunRef {
    quint64 store = 0;
    int64_t id = 0;
    bool isValid() const { return store != 0 && id != 0; }
    friend bool operator==(const RunRef &, const RunRef &) = default;
    friend auto operator<=>(const RunRef &, const RunRef &) = default;
};

inline size_t qHash(const RunRef &r, size_t seed = 0)
{
    return ::qHash(r.store, seed) ^ ::qHash(qint64(r.id), seed + 1);
}

struct Run {
    RunRef ref;
    QString name; // the store's name (its folder's name, or its path from the opened folder)
    QString displayName; // from the manifest; empty when none
    QString folder; // the opened folder whose store holds it (absolute)
    QString precision; // bf16, fp8, mxfp8, nvfp4, fp16, ... ("" when nothing says)
    QString recipe;
    QString manifestBaseline; // the baseline the manifest names ("" when none)
    QString inferencePrecision;
    QString notes;
    QString group; // the group its logger put it in (a W&B group, an MLflow experiment); "" for none
    // As a baseline: the gap of the loss at the end that its comparisons accept (the manifest's loss_gap_bar);
    // none when it sets none (the triage's default applies).
    std::optional<double> lossGapBar;
    // What the rest of its manifest says, read at ingest: the attempt it derives from (a run's name), the inference
    // checkpoint and its reference (paths relative to the manifest's folder), and the manifest itself (its path
    // relative to `folder`, "" for none; the key under "runs" where it is a workspace manifest).
    QString manifestParent;
    QString inferenceCheckpoint;
    QString inferenceReference;
    QString manifest;
    QString manifestKey;
    // The folder that is the run's, relative to `folder` ("" for it; none for a run no folder is alone).
    std::optional<QString> ownFolder;
    // The folder of the first file that wrote its records (relative to `folder`, "" or ending in '/'), where a
    // workspace manifest keyed by a run no folder is alone goes.
    std::optional<QString> filesFolder;
    int64_t seriesCount = 0;
    int64_t pointCount = 0;
    QString label() const { return displayName.isEmpty() ? name : displayName; }
};

// Which run another is compared with, and why (core/query/pairing.h has the rule).
struct Pairing {
    enum class Basis { None, Manifest, OnlyBaseline, Config, Steps, Name, Group };
    RunRef baseline; // invalid when there is none
    Basis basis = Basis::None;
    QString reason; // one sentence for people
    int configDifferences = -1; // for Basis::Config: keys that differ (precision keys aside)
};

QString basisName(Pairing::Basis basis); // "manifest", "only-baseline", "config", "steps", "name", "none"

enum class SeriesAxis { Step, Samples };

// One stored series as readers see it.
struct Series {
    int64_t id = 0;
    RunRef run;
    QString stat; // canonical ("lm loss"); tensor statistics keep their name ("underflows%")
    QString sourceStat; // as its source wrote it ("train/lm_loss", "lm loss vs samples")
    QString layer;
    QString tensor;
    QString source; // "megatron-log", "tensorboard", "te-debug rank 0", "recomputed", ...
    QString recipe; // for recomputed series: the recipe they were computed under
    SeriesAxis axis = SeriesAxis::Step; // Samples: its steps are consumed samples
    int64_t points = 0;
    int64_t firstStep = 0;
    int64_t lastStep = 0;
    bool isRecomputed() const { return source == QLatin1String("recomputed"); }
};

// The first value of a series that is not finite (NaN, +-inf): Catalog::firstNonFinite.
struct NonFinitePoint {
    Series series;
    int64_t step = 0;
    double value = 0;
};

// Which series of a run to show. Empty layer and tensor ask for a run-level statistic; source and recipe,
// when given, must match exactly; otherwise the one policy of core/query/catalog.h chooses.
struct SeriesRequest {
    QString stat;
    QString layer;
    QString tensor;
    QString source;
    QString recipe;
    SeriesAxis axis = SeriesAxis::Step;
};

// A range of steps and the most points to serve (0: every point; more are served as min/max buckets).
struct PointRange {
    int64_t from = std::numeric_limits<int64_t>::min();
    int64_t to = std::numeric_limits<int64_t>::max();
    int resolution = 0;
};

// A statistic of a run at run level, with the sources that hold it (for a picker's source choice).
struct StatisticInfo {
    QString stat; // canonical
    QStringList sources;
    bool samplesAxis = false; // a "... vs samples" series holds it too
};

// The sources of a statistic across the ranks that logged it (TE's debug tool writes a log per rank).
inline const QString kRanksMax = QStringLiteral("all ranks: max");
inline const QString kRanksMean = QStringLiteral("all ranks: mean");

// How the experts of a mixture-of-experts GEMM (core/formats/expertnames.h) are shown in a layer x step matrix:
// a row per expert (as stored), or one row per GEMM holding the worst (largest) expert's value at each step, their
// mean, or one chosen expert's.
enum class ExpertRows { All, Max, Mean, One };
QString expertRowsName(ExpertRows rows); // "all", "max", "mean", "one"
std::optional<ExpertRows> expertRowsFromName(const QString &name);

struct MatrixRequest {
    QString stat;
    QString tensor;
    QString source; // "" chooses: logged sources before recomputed, then the one covering most layers
    QString recipe; // "" chooses: the run's own, else the one most layers were recomputed under
    ExpertRows experts = ExpertRows::All;
    int expert = 0; // ExpertRows::One: the expert shown
    // Not empty: the experts x steps map of this GEMM (its experts' rows alone, whatever `experts` says).
    QString expertsOf;
};

// One statistic of one tensor kind over layers (depth order) and the real steps it was logged at.
struct Heatmap {
    QStringList layers; // depth order
    std::vector<int64_t> steps; // ascending, as logged (uneven intervals stay uneven)
    std::vector<double> values; // layers.size() x steps.size(), row-major, NaN where absent
    QString source; // the source shown
    QStringList sources; // every source holding the statistic for this tensor kind
    QString recipe; // the recipe shown (recomputed statistics)
    QStringList recipes; // the recipes the statistic was recomputed under (one row per layer shows one)
    // Across ranks (the sources kRanksMax and kRanksMean: every rank's layers, their union): the rank each
    // value is from (the extreme one for the max; -1 for a mean of several), empty for one source; and what
    // is shown, said in words ("4 ranks hold 40 layers between them; ranks 1-3 are copies of rank 0, read once").
    std::vector<int> ranks;
    QString ranksNote;
    // The cells whose logged value was not finite (NaN, +-inf; across ranks: on any rank): drawn as marks, never as
    // colours. Their `values` are NaN (no colour); what was logged, and the rank that logged it, are here.
    struct NonFiniteCell {
        qsizetype layer = 0;
        size_t step = 0; // the column
        double value = 0;
        int rank = -1;
        int expert = -1; // a row of grouped experts: the expert that logged it
    };
    std::vector<NonFiniteCell> nonFinite;
    // Experts grouped (MatrixRequest::experts other than All): how many experts each row stands for (0: a layer that
    // is no expert GEMM; empty when nothing was grouped), and for each cell the expert its value is from (-1: a
    // mean, or a layer of no experts); the reduction said as the label says it ("max over experts").
    std::vector<int> rowExperts;
    std::vector<int> cellExperts;
    std::vector<QStringList> rowLayers; // a grouped row's experts' layers, in the order of their experts
    QString expertReduction;
    // The experts map of one GEMM (MatrixRequest::expertsOf): the GEMM, its rows being its experts' layers.
    QString expertsOf;
    int rowExpertCount(qsizetype row) const { return size_t(row) < rowExperts.size() ? rowExperts[size_t(row)] : 0; }
    int cellExpert(qsizetype row, size_t step) const
    {
        const size_t i = size_t(row) * steps.size() + step;
        return i < cellExperts.size() ? cellExperts[i] : -1;
    }
    // What the statistic meant under the run's Transformer Engine version, where that differs from now
    // (teStatisticCaveat); empty when nothing applies.
    QString caveat;
    double at(qsizetype layer, size_t step) const { return values[size_t(layer) * steps.size() + step]; }
    // The column of the step nearest to `step` (-1 when there are none).
    qsizetype nearestColumn(double step) const;
};

struct Eval {
    QString task;
    QString metric;
    double value = 0;
    double stderrValue = 0; // NaN when not given
    QString inference; // the inference precision ("bf16", "fp8 kv-fp8"; "" when nothing says)
    QString settings; // what it was read from
    QString file; // the results file, relative to the run's store folder
};

struct ConfigEntry {
    QString key;
    QString value;
    QString file;
};

struct VersionEntry {
    QString package; // normalized ("transformer-engine", "megatron-core", "torch")
    QString version;
    QString file;
};

struct Dump {
    RunRef run;
    QString file; // relative to the store's folder
    QString path; // absolute
    DumpRecord record;
    // What openTensor() and `fp8scope-cli stats` take: PATH, or PATH:DATASET.
    QString spec() const { return record.dataset.isEmpty() ? path : path + QLatin1Char(':') + record.dataset; }
};

// A file a run's data was read from, with its size when read.
struct InputFile {
    QString path; // absolute
    QString file; // relative to the store's folder
    QString importer;
    int64_t size = 0;
};

struct LayerTensors {
    QString layer;
    QStringList tensors; // sorted
};

} // namespace fp8scope

Q_DECLARE_METATYPE(fp8scope::RunRef)
Q_DECLARE_METATYPE(fp8scope::Heatmap)
