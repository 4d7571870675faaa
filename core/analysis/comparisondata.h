// What the comparison view, the triage wizard and the triage report show of two runs, computed in one piece
// (in the GUI off its thread, on the workspace's query queue): the triage engine's comparison (verdict,
// departure, findings), one statistic of both runs aligned with its difference and band, and the config and
// evaluation tables.
#pragma once

#include "core/analysis/comparetables.h"
#include "core/analysis/triage.h"

#include <QHash>
#include <QMetaType>

namespace fp8scope {

// The min and max of a series over any index range in O(log n) steps, as a curve view's buckets need them:
// levels of blocks of 64, 64^2, ... values, each with its block's min and max (non-finite values left out).
// Built once per series off the GUI thread, so a redraw of 10^7 points reads a few thousand blocks.
class MinMaxPyramid
{
public:
    MinMaxPyramid() = default;
    explicit MinMaxPyramid(const std::vector<double> &values);

    // The finite min and max of values[lo, hi) (min > max when there is none); `values` are those it was built
    // from.
    std::pair<double, double> range(const std::vector<double> &values, size_t lo, size_t hi) const;
    size_t levels() const { return m_levels.size(); }

    static constexpr size_t kFan = 64;

private:
    std::vector<std::vector<std::pair<double, double>>> m_levels; // level k: blocks of kFan^(k+1) values
};

struct ComparisonData {
    RunRef baseline;
    RunRef run;
    QString stat; // canonical ("lm loss")
    analysis::Comparison comparison;
    analysis::StatComparison statistic;
    analysis::ConfigTable config;
    std::vector<analysis::EvalRow> evals;
    // The baseline's band on the overlay, at the trace's steps: its running median (the departure's window)
    // minus and plus the edge the difference's running median must stay above for a departure.
    std::vector<double> bandLow, bandHigh;
    // The spikes of each run's statistic, as the triage engine finds them (at the run's own steps).
    analysis::SpikeReport baselineSpikes, runSpikes;
    // Of the statistic's series: the baseline's and the run's points, the difference, the band's edge and the
    // band.
    MinMaxPyramid baselinePyramid, runPyramid, differencePyramid, edgePyramid, bandLowPyramid, bandHighPyramid;
    // Where the baseline has other attempts: for a next step (triedByKey), the attempts that already tried what it
    // suggests and how they came out ("tried in fp8_current (--fp8-recipe: mxfp8 -> tensorwise): healthy: it
    // fixed it"; core/analysis/attempts).
    QHash<QString, QStringList> triedBy;
};
QString triedByKey(const analysis::NextStep &step);

// Everything above for the pair; `stat` empty: the loss. An invalid baseline: the run checked on its own
// (comparisonOf(checkRun)), its statistic without a baseline, no config or eval tables.
ComparisonData computeComparison(const Catalog &catalog, RunRef baseline, RunRef run, const QString &stat);
// Only the statistic's part (aligned, band, spikes, pyramids): the comparison, config and evals left empty, for
// a second statistic of a pair whose comparison is known.
ComparisonData computeStatistic(const Catalog &catalog, RunRef baseline, RunRef run, const QString &stat);

// Min/max buckets of a series over [from, to] at about `resolution` points (every point when fewer), as the
// store serves them to a curve view; `pyramid` (built from `values`), when given, makes it O(resolution log n).
std::vector<SeriesPoint> bucketSeries(const std::vector<int64_t> &steps, const std::vector<double> &values,
    const PointRange &range, const MinMaxPyramid *pyramid = nullptr);

} // namespace fp8scope

Q_DECLARE_METATYPE(fp8scope::ComparisonData)
