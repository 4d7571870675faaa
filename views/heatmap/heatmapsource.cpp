#include "heatmapsource.h"

#include <QRegularExpression>

#include "core/query/pairing.h"
#include "views/workspace/workspace.h"

namespace fp8scope {

WorkspaceHeatmapSource::WorkspaceHeatmapSource(Workspace *workspace, QObject *parent)
    : HeatmapSource(parent)
    , m_workspace(workspace)
{
    connect(workspace, &Workspace::changed, this, [this](Workspace::Parts parts, RunRef run) {
        if (parts & (Workspace::Loaded | Workspace::Closed | Workspace::Visibility))
            Q_EMIT runsChanged();
        if (parts & Workspace::Statistics)
            Q_EMIT dataChanged(run);
    });
}

std::vector<HeatmapSource::RunChoice> WorkspaceHeatmapSource::runs() const
{
    std::vector<RunChoice> out;
    // The visible runs, by the name every view gives them.
    for (const WorkspaceRun &r : m_workspace->runs()) {
        if (r.visible)
            out.push_back({r.run.ref, m_workspace->runName(r.run.ref)});
    }
    return out;
}

RunRef WorkspaceHeatmapSource::preferredRun() const
{
    RunRef withStats, notBaseline;
    for (const WorkspaceRun &r : m_workspace->runs()) {
        if (!r.visible)
            continue;
        const bool baseline = precisionClass(r.run.precision, r.run.name) == PrecisionClass::Baseline;
        const bool stats = m_workspace->catalog().hasLayerStatistics(r.run.ref);
        if (stats && !baseline)
            return r.run.ref;
        if (stats && !withStats.isValid())
            withStats = r.run.ref;
        if (!baseline && !notBaseline.isValid())
            notBaseline = r.run.ref;
    }
    if (withStats.isValid())
        return withStats;
    if (notBaseline.isValid())
        return notBaseline;
    for (const WorkspaceRun &r : m_workspace->runs()) {
        if (r.visible)
            return r.run.ref;
    }
    return {};
}

std::vector<std::pair<QString, QString>> WorkspaceHeatmapSource::statistics(RunRef run) const
{
    return m_workspace->run(run) ? m_workspace->catalog().layerStatistics(run)
                                 : std::vector<std::pair<QString, QString>>();
}

quint64 WorkspaceHeatmapSource::load(RunRef run, const MatrixRequest &request, const QString &slot, QObject *receiver,
    std::function<void(const Heatmap &)> done)
{
    return m_workspace->query(
        slot, [run, request](const Catalog &catalog) { return QVariant::fromValue(catalog.matrix(run, request)); },
        receiver, [done](const QVariant &value) { done(value.value<Heatmap>()); });
}

quint64 WorkspaceHeatmapSource::loadPrecision(
    RunRef run, const QString &slot, QObject *receiver, std::function<void(const PrecisionMap &)> done)
{
    return m_workspace->query(
        slot, [run](const Catalog &catalog) { return QVariant::fromValue(precisionMap(catalog, run)); }, receiver,
        [done](const QVariant &value) { done(value.value<PrecisionMap>()); });
}

QStringList WorkspaceHeatmapSource::routerStatistics(RunRef run) const
{
    static const QRegularExpression router(
        QStringLiteral(R"(^(moe/)?(seq_|global_)?(load_balancing_loss|z_loss)(_layer_\d+)?$)"));
    QStringList out;
    if (!m_workspace->run(run))
        return out;
    for (const StatisticInfo &s : m_workspace->catalog().runStatistics(run)) {
        if (router.match(s.stat).hasMatch())
            out << s.stat;
    }
    return out;
}

void WorkspaceHeatmapSource::cancel(quint64 ticket)
{
    m_workspace->queries().cancel(ticket);
}

QString WorkspaceHeatmapSource::noStatisticsText(RunRef run) const
{
    if (!run.isValid() && m_workspace->folders().isEmpty())
        return m_workspace->isLoading() ? tr("Reading...") : tr("No folder is open.");
    if (!run.isValid())
        return tr("No run open has per-layer statistics.\nThey come from Transformer Engine debug statistics "
                  "logs\nand from tensor dumps recomputed under a recipe.");
    const WorkspaceRun *r = m_workspace->run(run);
    return tr("%1 has no per-layer statistics.\nThey come from Transformer Engine debug statistics logs\n"
              "and from tensor dumps recomputed under a recipe.")
        .arg(r ? m_workspace->runName(run) : tr("This run"));
}

SingleRunHeatmapSource::SingleRunHeatmapSource(Workspace *workspace, QObject *parent)
    : WorkspaceHeatmapSource(workspace, parent)
    , m_workspace(workspace)
{
    connect(workspace, &Workspace::changed, this, [this](Workspace::Parts parts) {
        if (parts & Workspace::Closed)
            setRun({});
    });
}

void SingleRunHeatmapSource::setRun(RunRef run)
{
    if (run == m_run)
        return;
    m_run = run;
    Q_EMIT runsChanged();
}

std::vector<HeatmapSource::RunChoice> SingleRunHeatmapSource::runs() const
{
    const WorkspaceRun *r = m_workspace->run(m_run);
    if (!r)
        return {};
    return {{m_run, m_workspace->runName(m_run)}};
}

} // namespace fp8scope
