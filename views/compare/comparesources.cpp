#include "comparesources.h"

#include "core/formats/shortnames.h"
#include "views/workspace/workspace.h"

#include <algorithm>

namespace fp8scope {

ComparisonCurveSource::ComparisonCurveSource(Workspace *workspace, QObject *parent)
    : CurveSource(parent)
    , m_workspace(workspace)
    , m_runs(std::make_unique<WorkspaceCurveSource>(workspace))
{
}

ComparisonCurveSource::~ComparisonCurveSource() = default;

void ComparisonCurveSource::setComparison(std::shared_ptr<const ComparisonData> data)
{
    m_data = std::move(data);
    Q_EMIT statisticsChanged();
}

QString ComparisonCurveSource::pairName(RunRef run) const
{
    if (!m_data)
        return {};
    const QStringList names = distinctShortNames(
        {m_runs->runName(m_data->baseline), m_runs->runName(m_data->run)}, Workspace::kShortLabelChars);
    return run == m_data->baseline ? names[0] : run == m_data->run ? names[1] : m_runs->runName(run);
}

QColor ComparisonCurveSource::runColour(RunRef run) const
{
    return m_runs->runColour(run);
}

std::vector<std::pair<double, double>> ComparisonCurveSource::stepSamples(RunRef run) const
{
    return m_runs->stepSamples(countsOf(run));
}

std::vector<std::pair<double, double>> ComparisonCurveSource::stepTokens(RunRef run) const
{
    return m_runs->stepTokens(countsOf(run));
}

std::vector<CurveSource::Event> ComparisonCurveSource::events(RunRef run) const
{
    return m_runs->events(run);
}

std::vector<SeriesPoint> ComparisonCurveSource::serve(const std::vector<int64_t> &steps,
    const std::vector<double> &values, const MinMaxPyramid &pyramid, const Request &request)
{
    return bucketSeries(steps, values,
        request.bySamples ? PointRange {.resolution = request.range.resolution} : request.range, &pyramid);
}

RunRef PairCurveSource::bandRef() const
{
    return m_data ? RunRef {m_data->baseline.store, -m_data->baseline.id} : RunRef();
}

QColor PairCurveSource::runColour(RunRef run) const
{
    return run == bandRef() ? QColor(Qt::gray) : ComparisonCurveSource::runColour(run);
}

Qt::PenStyle PairCurveSource::runLineStyle(RunRef run) const
{
    return run == bandRef() ? Qt::DotLine : m_runs->runLineStyle(run);
}

RunRef PairCurveSource::countsOf(RunRef run) const
{
    return run == bandRef() && m_data ? m_data->baseline : run;
}

std::vector<CurveSource::Event> PairCurveSource::events(RunRef run) const
{
    if (!m_data || run == bandRef())
        return {};
    std::vector<Event> out = ComparisonCurveSource::events(run);
    const analysis::SpikeReport &spikes = run == m_data->baseline ? m_data->baselineSpikes : m_data->runSpikes;
    if (run == m_data->baseline || run == m_data->run) {
        for (const analysis::Spike &s : spikes.spikes)
            out.push_back({s.step, Event::Spike, s.height});
    }
    std::stable_sort(out.begin(), out.end(), [](const Event &a, const Event &b) { return a.step < b.step; });
    return out;
}

bool PairCurveSource::alone() const
{
    return m_data && !m_data->baseline.isValid() && m_data->run.isValid();
}

std::vector<CurveSource::Statistic> PairCurveSource::statistics() const
{
    if (!m_data || (!m_data->statistic.found && !alone()))
        return {};
    return {{m_data->stat, false, {}}};
}

std::vector<RunRef> PairCurveSource::runs() const
{
    if (alone()) // a run checked on its own: its own curve, no band
        return {m_data->run};
    if (!m_data || !m_data->statistic.found)
        return {};
    if (m_data->bandLow.empty())
        return {m_data->baseline, m_data->run};
    return {m_data->baseline, bandRef(), m_data->run};
}

QString PairCurveSource::runName(RunRef run) const
{
    if (run == bandRef())
        return tr("baseline's band (tolerance + noise)");
    const QString name = m_runs->runName(run);
    return m_data && run == m_data->baseline ? tr("%1 (baseline)").arg(name) : name;
}

QString PairCurveSource::legendName(RunRef run) const
{
    if (run == bandRef())
        return runName(run);
    // "(baseline)" where the name does not say it already ("BF16 baseline", "bf16_baseline").
    const QString name = pairName(run);
    return m_data && run == m_data->baseline && !name.contains(QLatin1String("baseline"), Qt::CaseInsensitive)
        ? tr("%1 (baseline)").arg(name)
        : name;
}

std::optional<CurveSource::Curve> PairCurveSource::curve(RunRef run, const Request &request) const
{
    if (!m_data || request.stat != m_data->stat || request.tensorLevel)
        return std::nullopt;
    if (alone()) {
        std::optional<Curve> c = run == m_data->run ? m_runs->curve(run, request) : std::nullopt;
        if (c)
            c->name = legendName(run);
        return c;
    }
    const analysis::StatComparison &s = m_data->statistic;
    if (run == bandRef()) {
        // Its low and high edges bucketed alike, drawn as one envelope (each point a two-sided range).
        const auto &steps = s.departure.trace.steps;
        if (m_data->bandLow.size() != steps.size())
            return std::nullopt;
        Curve c;
        c.name = runName(run);
        c.points = serve(steps, m_data->bandLow, m_data->bandLowPyramid, request);
        const std::vector<SeriesPoint> high = serve(steps, m_data->bandHigh, m_data->bandHighPyramid, request);
        for (size_t i = 0; i < c.points.size() && i < high.size(); ++i) {
            SeriesPoint &p = c.points[i];
            p.min = std::min(p.min, p.value);
            p.max = high[i].max;
            p.value = p.min;
            p.count = std::max<int64_t>(2, p.count);
        }
        c.xIsSamples = s.axis != QLatin1String("step");
        return c;
    }
    // By pointer: a conditional of the optionals and std::nullopt would copy the whole series.
    const analysis::StepSeries *points = nullptr;
    if (run == m_data->baseline && s.baselinePoints)
        points = &*s.baselinePoints;
    else if (run == m_data->run && s.runPoints)
        points = &*s.runPoints;
    if (!points)
        return std::nullopt;
    Curve c;
    c.name = legendName(run);
    c.points = serve(
        points->steps, points->values, run == m_data->baseline ? m_data->baselinePyramid : m_data->runPyramid, request);
    return c;
}

RunRef DifferenceCurveSource::edgeRef() const
{
    return m_data ? RunRef {m_data->run.store, -m_data->run.id} : RunRef();
}

std::vector<CurveSource::Statistic> DifferenceCurveSource::statistics() const
{
    if (!m_data || m_data->statistic.departure.trace.steps.empty())
        return {};
    return {{m_data->stat, false, {}}};
}

std::vector<RunRef> DifferenceCurveSource::runs() const
{
    if (!m_data || m_data->statistic.departure.trace.steps.empty())
        return {};
    std::vector<RunRef> out {m_data->run};
    if (!m_data->statistic.departure.trace.edge.empty())
        out.push_back(edgeRef());
    return out;
}

QString DifferenceCurveSource::runName(RunRef run) const
{
    if (!m_data)
        return {};
    if (run == edgeRef())
        return tr("band edge (tolerance + noise)");
    return tr("%1 − %2").arg(m_runs->runName(m_data->run), m_runs->runName(m_data->baseline));
}

QString DifferenceCurveSource::legendName(RunRef run) const
{
    if (!m_data || run == edgeRef())
        return runName(run);
    return tr("%1 − %2").arg(pairName(m_data->run), pairName(m_data->baseline));
}

QColor DifferenceCurveSource::runColour(RunRef run) const
{
    return run == edgeRef() ? QColor(Qt::gray) : ComparisonCurveSource::runColour(run);
}

RunRef DifferenceCurveSource::countsOf(RunRef run) const
{
    return run == edgeRef() && m_data ? m_data->run : run;
}

std::optional<CurveSource::Curve> DifferenceCurveSource::curve(RunRef run, const Request &request) const
{
    if (!m_data || request.stat != m_data->stat || request.tensorLevel)
        return std::nullopt;
    const auto &trace = m_data->statistic.departure.trace;
    const bool edge = run == edgeRef();
    if ((!edge && run != m_data->run) || (edge && trace.edge.size() != trace.steps.size()))
        return std::nullopt;
    Curve c;
    c.name = legendName(run);
    c.points = edge ? serve(trace.steps, trace.edge, m_data->edgePyramid, request)
                    : serve(trace.steps, trace.difference, m_data->differencePyramid, request);
    // Aligned on consumed samples (the runs' batch sizes differ): the trace's x is samples.
    c.xIsSamples = m_data->statistic.axis != QLatin1String("step");
    return c;
}

} // namespace fp8scope
