// What the curve view draws, worked out without a widget: each run's points of the chosen statistic, fetched
// from a CurveSource for the range in view at the plot's resolution, placed on the chosen x axis (steps, or
// consumed samples or tokens by each run's own counts), with the whole extent of the series, the axes' labels,
// and what the plot says in place of curves (no tensor chosen, nothing to draw, every value 0) or above them
// (runs left out of the axis). CurveView draws what fetch() returns; tests/views/tst_curvemodel checks it alone.
#pragma once

#include "curvesource.h"

#include <QCoreApplication>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace fp8scope {

class CurveModel
{
    Q_DECLARE_TR_FUNCTIONS(CurveModel)
public:
    // A statistic of the selected tensor is asked for as this prefix and its name ("tensor:mse").
    static const QString kTensorPrefix;

    enum class XAxis { Steps, Samples, Tokens };
    // "step", "consumed samples", "consumed tokens".
    static QString axisName(XAxis axis);

    // The model does not own the source.
    explicit CurveModel(const CurveSource *source);
    const CurveSource *source() const { return m_source; }

    // Reads each run's consumed samples and tokens by step again (after the source's runs changed).
    void reloadMappings();
    // Whether some run has counts for that axis (an axis none has cannot be chosen).
    bool hasCountsFor(XAxis axis) const;
    // Where a step of a run is on the axis, and back (linear between the run's counts, extended past them by
    // the end segments); the step itself by steps or without counts.
    double xOfStep(XAxis axis, RunRef run, double step) const;
    double stepOfX(XAxis axis, RunRef run, double x) const;
    // Whether the run has counts to place it on the axis (never by steps).
    bool placesOn(XAxis axis, RunRef run) const { return mapping(axis, run, false) != nullptr; }

    struct Request {
        QString statistic; // a run-level statistic ("lm loss"), or kTensorPrefix and one of the selected tensor's
        QString layer; // the selected tensor (for a tensor statistic)
        QString tensor;
        QString dataSource; // "" lets the query layer choose (run-level statistics only)
        XAxis axis = XAxis::Steps;
        int resolution = 100; // points a curve is served at (one min/max bucket per pixel column)
        std::optional<std::pair<double, double>> visible; // the x range in view; none: everything, to be framed
        bool sourceHasStatistics = true; // whether the source listed any statistic (else its emptyText() is said)
    };
    // One run's curve: its points as fetched, raw (a bucket's value is its midpoint), and where they go.
    struct Curve {
        RunRef run;
        Series series; // the series drawn
        QString name; // for the legend
        std::vector<double> steps;
        std::vector<double> xs; // x of each step on the axis
        std::vector<double> values;
        std::vector<double> mins;
        std::vector<double> maxs;
        bool bucketed = false;
    };
    struct Drawing {
        std::vector<Curve> curves; // in the source's run order
        // The x span of the points fetched, and the extent of the series drawn (every point, not just those
        // fetched); lo > hi when there are none.
        double lo = 0, hi = -1;
        double extentLo = 0, extentHi = -1;
        QString xLabel;
        bool checkpointOnly = false; // only checkpoint tensors (no step) drawn: the axis has no ticks to show
        QString yLabel;
        QString message; // said in place of curves, or ""
        QString note; // the runs the axis left out, or ""
    };
    Drawing fetch(const Request &request) const;

private:
    // The run's (step, x) counts of the axis, or their inverse; nullptr by steps or with fewer than two.
    const std::vector<std::pair<double, double>> *mapping(XAxis axis, RunRef run, bool inverse) const;

    const CurveSource *m_source;
    std::map<RunRef, std::vector<std::pair<double, double>>> m_samples; // (step, consumed samples)
    std::map<RunRef, std::vector<std::pair<double, double>>> m_samplesInverse; // (samples, step)
    std::map<RunRef, std::vector<std::pair<double, double>>> m_tokens; // (step, consumed tokens)
    std::map<RunRef, std::vector<std::pair<double, double>>> m_tokensInverse; // (tokens, step)
};

} // namespace fp8scope
