// What the comparison view shows of two runs, computed in one piece off the GUI thread (on the workspace's
// query queue): the triage engine's comparison (verdict, departure, findings), one statistic of both runs
// aligned with its difference and band, and the config and evaluation tables.
#pragma once

#include "core/analysis/comparetables.h"
#include "core/analysis/triage.h"

#include <QMetaType>

namespace fp8scope {

struct ComparisonData {
    RunRef baseline;
    RunRef run;
    QString stat; // canonical ("lm loss")
    analysis::Comparison comparison;
    analysis::StatComparison statistic;
    analysis::ConfigTable config;
    std::vector<analysis::EvalRow> evals;
};

// Everything above for the pair; `stat` empty: the loss.
ComparisonData computeComparison(const Catalog &catalog, RunRef baseline, RunRef run, const QString &stat);

// Min/max buckets of a series over [from, to] at about `resolution` points (every point when fewer), as the
// store serves them to a curve view.
std::vector<SeriesPoint> bucketSeries(
    const std::vector<int64_t> &steps, const std::vector<double> &values, const PointRange &range);

} // namespace fp8scope

Q_DECLARE_METATYPE(fp8scope::ComparisonData)
