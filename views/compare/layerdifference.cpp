#include "layerdifference.h"

#include "views/workspace/workspace.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace fp8scope {

Heatmap combineHeatmaps(const Heatmap &baseline, const Heatmap &run, LayerCombination how)
{
    Heatmap out;
    out.source = run.source;
    out.sources = run.sources;
    out.recipe = run.recipe;
    out.recipes = run.recipes;
    std::vector<qsizetype> baseRows;
    for (qsizetype i = 0; i < run.layers.size(); ++i) {
        const qsizetype b = baseline.layers.indexOf(run.layers.at(i));
        if (b >= 0) {
            out.layers << run.layers.at(i);
            baseRows.push_back(b);
        }
    }
    out.steps = run.steps;
    // The baseline's column for each of the run's steps: its nearest step, within half its median interval.
    std::vector<qsizetype> baseColumns(run.steps.size(), -1);
    if (!baseline.steps.empty()) {
        std::vector<int64_t> gaps;
        for (size_t i = 1; i < baseline.steps.size(); ++i)
            gaps.push_back(baseline.steps[i] - baseline.steps[i - 1]);
        int64_t halfInterval = 0;
        if (!gaps.empty()) {
            std::nth_element(gaps.begin(), gaps.begin() + ptrdiff_t(gaps.size() / 2), gaps.end());
            halfInterval = gaps[gaps.size() / 2] / 2;
        }
        for (size_t j = 0; j < run.steps.size(); ++j) {
            const qsizetype c = baseline.nearestColumn(double(run.steps[j]));
            if (c >= 0 && std::abs(baseline.steps[size_t(c)] - run.steps[j]) <= halfInterval)
                baseColumns[j] = c;
        }
    }
    out.values.assign(size_t(out.layers.size()) * out.steps.size(), NAN);
    // A GEMM's row of grouped experts stays one (its experts map opens on the run's experts).
    out.expertReduction = run.expertReduction;
    out.expertsOf = run.expertsOf;
    if (!run.rowExperts.empty()) {
        for (qsizetype i = 0; i < out.layers.size(); ++i) {
            const qsizetype r = run.layers.indexOf(out.layers.at(i));
            out.rowExperts.push_back(run.rowExperts[size_t(r)]);
            out.rowLayers.push_back(run.rowLayers[size_t(r)]);
        }
    }
    for (qsizetype i = 0; i < out.layers.size(); ++i) {
        const qsizetype r = run.layers.indexOf(out.layers.at(i));
        for (size_t j = 0; j < out.steps.size(); ++j) {
            if (baseColumns[j] < 0)
                continue;
            const double a = run.at(r, j), b = baseline.at(baseRows[size_t(i)], size_t(baseColumns[j]));
            double v = NAN;
            if (std::isfinite(a) && std::isfinite(b))
                v = how == LayerCombination::Difference ? a - b : (b != 0 ? a / b : NAN);
            out.values[size_t(i) * out.steps.size() + j] = v;
        }
    }
    return out;
}

LayerDifferenceSource::LayerDifferenceSource(Workspace *workspace, QObject *parent)
    : HeatmapSource(parent)
    , m_workspace(workspace)
{
    connect(workspace, &Workspace::changed, this, [this](Workspace::Parts parts, RunRef r) {
        if (parts & Workspace::Closed)
            setPair({}, {});
        if ((parts & Workspace::Statistics) && (r == m_run || r == m_baseline))
            Q_EMIT dataChanged(m_run);
    });
}

void LayerDifferenceSource::setPair(RunRef baseline, RunRef run)
{
    if (baseline == m_baseline && run == m_run)
        return;
    const bool sameRun = run == m_run;
    m_baseline = baseline;
    m_run = run;
    // Another run: the view's run picker changes; the same run against another baseline: new values.
    if (sameRun)
        Q_EMIT dataChanged(m_run);
    else
        Q_EMIT runsChanged();
}

void LayerDifferenceSource::setCombination(LayerCombination how)
{
    if (how == m_how)
        return;
    m_how = how;
    Q_EMIT dataChanged(m_run);
}

std::vector<HeatmapSource::RunChoice> LayerDifferenceSource::runs() const
{
    const WorkspaceRun *b = m_workspace->run(m_baseline), *r = m_workspace->run(m_run);
    if (!b || !r)
        return {};
    return {{m_run,
        m_how == LayerCombination::Difference
            ? tr("%1 − %2").arg(m_workspace->runName(m_run), m_workspace->runName(m_baseline))
            : tr("%1 / %2").arg(m_workspace->runName(m_run), m_workspace->runName(m_baseline))}};
}

std::vector<std::pair<QString, QString>> LayerDifferenceSource::statistics(RunRef run) const
{
    if (run != m_run || !m_workspace->run(m_baseline) || !m_workspace->run(m_run))
        return {};
    const auto base = m_workspace->catalog().layerStatistics(m_baseline);
    const std::set<std::pair<QString, QString>> inBase(base.begin(), base.end());
    std::vector<std::pair<QString, QString>> out;
    for (const auto &s : m_workspace->catalog().layerStatistics(m_run)) {
        if (inBase.count(s))
            out.push_back(s);
    }
    return out;
}

quint64 LayerDifferenceSource::load(RunRef run, const MatrixRequest &request, const QString &slot, QObject *receiver,
    std::function<void(const Heatmap &)> done)
{
    const RunRef baseline = m_baseline;
    const LayerCombination how = m_how;
    return m_workspace->query(
        slot,
        [baseline, run, request, how](const Catalog &catalog) {
            Heatmap r = catalog.matrix(run, request);
            // The baseline's own source (its file names differ); the recipe the run's rows were computed
            // under, so that a recomputed statistic compares like with like.
            // A mixture-of-experts GEMM's experts grouped alike in both, so that the rows pair up.
            const auto like = [&](const QString &source, const QString &recipe) {
                MatrixRequest m = request;
                m.source = source;
                m.recipe = recipe;
                return m;
            };
            Heatmap b = catalog.matrix(baseline, like(QString(), r.recipe));
            // A baseline that holds the statistic only as recomputed from its dumps (a BF16 run logs no
            // underflows%; the query layer shows a logged source first) is compared with the run's rows
            // recomputed under the same recipe, when it has them, whatever source the run showed before: not
            // with what the run logged in training.
            const QString recomputed = QStringLiteral("recomputed");
            if (b.source == recomputed && r.source != recomputed && r.sources.contains(recomputed)) {
                r = catalog.matrix(run, like(recomputed, b.recipe));
                b = catalog.matrix(baseline, like(recomputed, r.recipe));
            }
            return QVariant::fromValue(combineHeatmaps(b, r, how));
        },
        receiver, [done](const QVariant &value) { done(value.value<Heatmap>()); });
}

void LayerDifferenceSource::cancel(quint64 ticket)
{
    m_workspace->queries().cancel(ticket);
}

QString LayerDifferenceSource::noStatisticsText(RunRef) const
{
    if (!m_workspace->run(m_baseline) || !m_workspace->run(m_run))
        return tr("Choose two runs to compare.");
    return tr("The two runs have no per-layer statistic in common.\nLog Transformer Engine's LogTensorStats in "
              "both,\nor recompute both runs' tensor dumps under one recipe.");
}

} // namespace fp8scope
