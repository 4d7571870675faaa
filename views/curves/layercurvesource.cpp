#include "layercurvesource.h"

#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <set>

namespace fp8scope {

LayerCurveSource::LayerCurveSource(Workspace *workspace, Selection *selection, QObject *parent)
    : CurveSource(parent)
    , m_workspace(workspace)
    , m_selection(selection)
    , m_runs(std::make_unique<WorkspaceCurveSource>(workspace))
{
    connect(workspace, &Workspace::changed, this, [this](Workspace::Parts parts, RunRef run) {
        if ((parts & (Workspace::Loaded | Workspace::Closed)) || ((parts & Workspace::Statistics) && run == m_run))
            reload();
    });
    // Another layer or tensor kind selected: other curves, another one on top.
    connect(selection, &Selection::changed, this, [this](Selection::Parts parts) {
        if (parts & (Selection::Layer | Selection::Tensor))
            Q_EMIT curvesChanged();
    });
}

LayerCurveSource::~LayerCurveSource() = default;

void LayerCurveSource::setRun(RunRef run)
{
    if (run == m_run)
        return;
    m_run = run;
    reload();
}

void LayerCurveSource::reload()
{
    m_layers = m_run.isValid() && m_workspace->run(m_run) ? m_workspace->catalog().layerTensors({m_run})
                                                          : std::vector<LayerTensors>();
    Q_EMIT statisticsChanged();
}

RunRef LayerCurveSource::layerRef(const QString &layer) const
{
    for (size_t i = 0; i < m_layers.size(); ++i) {
        if (m_layers[i].layer == layer)
            return {m_run.store, -int64_t(i + 1)}; // negative: no run of any store
    }
    return {};
}

QString LayerCurveSource::layerOf(RunRef ref) const
{
    const int64_t i = -ref.id - 1;
    return ref.store == m_run.store && i >= 0 && i < int64_t(m_layers.size()) ? m_layers[size_t(i)].layer : QString();
}

std::vector<CurveSource::Statistic> LayerCurveSource::statistics() const
{
    std::set<QString> stats;
    if (m_run.isValid() && m_workspace->run(m_run)) {
        for (const auto &[stat, tensor] : m_workspace->catalog().layerStatistics(m_run))
            stats.insert(stat);
    }
    std::vector<Statistic> out;
    for (const QString &s : stats)
        out.push_back({s, true, {}});
    return out;
}

std::vector<RunRef> LayerCurveSource::runs() const
{
    std::vector<RunRef> out;
    RunRef selected;
    for (const LayerTensors &l : m_layers) {
        if (!l.tensors.contains(m_selection->tensor()))
            continue;
        const RunRef ref = layerRef(l.layer);
        if (l.layer == m_selection->layer())
            selected = ref;
        else
            out.push_back(ref);
    }
    if (selected.isValid())
        out.push_back(selected);
    return out;
}

QString LayerCurveSource::runName(RunRef run) const
{
    return layerOf(run);
}

QColor LayerCurveSource::runColour(RunRef run) const
{
    return layerOf(run) == m_selection->layer() ? m_runs->runColour(m_run) : QColor(165, 165, 165);
}

bool LayerCurveSource::inLegend(RunRef run) const
{
    return layerOf(run) == m_selection->layer();
}

std::optional<CurveSource::Curve> LayerCurveSource::curve(RunRef run, const Request &request) const
{
    const QString layer = layerOf(run);
    if (layer.isEmpty() || request.tensor.isEmpty())
        return std::nullopt;
    const Catalog &catalog = m_workspace->catalog();
    const SeriesRequest s {.stat = request.stat, .layer = layer, .tensor = request.tensor, .source = request.source};
    const std::optional<Series> pick = catalog.chooseSeries(m_run, s);
    if (!pick)
        return std::nullopt;
    Curve c;
    c.name = layer + (pick->recipe.isEmpty() ? QString() : tr(" (%1)").arg(pick->recipe));
    c.series = *pick;
    c.points = catalog.points(*pick, request.range);
    return c;
}

std::vector<std::pair<double, double>> LayerCurveSource::stepSamples(RunRef) const
{
    return m_runs->stepSamples(m_run);
}

std::vector<std::pair<double, double>> LayerCurveSource::stepTokens(RunRef) const
{
    return m_runs->stepTokens(m_run);
}

QString LayerCurveSource::emptyText() const
{
    return m_run.isValid() ? tr("The run has no per-layer statistics.") : tr("No run chosen.");
}

} // namespace fp8scope
