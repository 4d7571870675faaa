// The curve sources a comparison hands the ordinary curve view: the two runs' statistic as the comparison
// aligned it (the overlay), and its difference run - baseline with the edge the triage engine judged the
// departure by (the strip beneath). Both serve min/max buckets at the view's resolution, as the store does.
#pragma once

#include "core/analysis/comparisondata.h"

#include "views/curves/curvesource.h"

#include <memory>

namespace fp8scope {

class Workspace;
class WorkspaceCurveSource;

class ComparisonCurveSource : public CurveSource
{
    Q_OBJECT
public:
    explicit ComparisonCurveSource(Workspace *workspace, QObject *parent = nullptr);
    ~ComparisonCurveSource() override;

    void setComparison(std::shared_ptr<const ComparisonData> data);
    const ComparisonData *comparison() const { return m_data.get(); }

    QColor runColour(RunRef run) const override;
    std::vector<std::pair<double, double>> stepSamples(RunRef run) const override;
    std::vector<std::pair<double, double>> stepTokens(RunRef run) const override;
    std::vector<Event> events(RunRef run) const override;

protected:
    // The workspace run whose counts place a run or pseudo-run of this source.
    virtual RunRef countsOf(RunRef run) const { return run; }

    // The run's or the baseline's name shortened by what the two share (the legends' names).
    QString pairName(RunRef run) const;

    // A series the comparison holds on the alignment axis, at run steps, bucketed for the request.
    static std::vector<SeriesPoint> serve(const std::vector<int64_t> &steps, const std::vector<double> &values,
        const MinMaxPyramid &pyramid, const Request &request);

    Workspace *m_workspace;
    std::unique_ptr<WorkspaceCurveSource> m_runs; // names, colours, samples and events of the open runs
    std::shared_ptr<const ComparisonData> m_data;
};

// The baseline and the run, overlaid, the baseline's band between them (drawn as the envelope the view draws
// for min/max buckets), each run's spikes marked with its other events.
class PairCurveSource : public ComparisonCurveSource
{
    Q_OBJECT
public:
    using ComparisonCurveSource::ComparisonCurveSource;

    // The pseudo-run that draws the baseline's band (it is no run of the workspace).
    RunRef bandRef() const;

    std::vector<Statistic> statistics() const override;
    std::vector<RunRef> runs() const override;
    QString runName(RunRef run) const override;
    QString legendName(RunRef run) const override;
    QColor runColour(RunRef run) const override;
    Qt::PenStyle runLineStyle(RunRef run) const override;
    std::vector<Event> events(RunRef run) const override;
    std::optional<Curve> curve(RunRef run, const Request &request) const override;

protected:
    RunRef countsOf(RunRef run) const override;

private:
    // A run checked on its own (no baseline): its own series, from the open runs, no band.
    bool alone() const;
};

// run - baseline, and the edge its running median must stay above for a departure.
class DifferenceCurveSource : public ComparisonCurveSource
{
    Q_OBJECT
public:
    using ComparisonCurveSource::ComparisonCurveSource;

    // The pseudo-run that draws the band's edge (it is no run of the workspace).
    RunRef edgeRef() const;

    std::vector<Statistic> statistics() const override;
    std::vector<RunRef> runs() const override;
    QString runName(RunRef run) const override;
    QString legendName(RunRef run) const override;
    QColor runColour(RunRef run) const override;
    std::vector<Event> events(RunRef) const override { return {}; }
    std::optional<Curve> curve(RunRef run, const Request &request) const override;

protected:
    RunRef countsOf(RunRef run) const override;
};

} // namespace fp8scope
