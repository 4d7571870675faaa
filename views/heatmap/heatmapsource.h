// Where a heatmap view gets what it draws: the runs it can show, the (statistic, tensor) pairs of a run, and
// the layer x step matrix for a request, loaded off the GUI thread. The workspace's source reads the stores
// through the query layer; a comparison hands the same view a source of differences, so the ordinary view
// draws them (as hotspot's and heaptrack's diff pages reuse their ordinary views).
#pragma once

#include "core/query/precisionmap.h"
#include "core/query/querytypes.h"

#include <QObject>

#include <functional>
#include <utility>
#include <vector>

namespace fp8scope {

class Workspace;

class HeatmapSource : public QObject
{
    Q_OBJECT
public:
    using QObject::QObject;

    struct RunChoice {
        RunRef run;
        QString label;
    };
    virtual std::vector<RunChoice> runs() const = 0;
    // The run to open on (a new workspace, a new comparison); invalid for none.
    virtual RunRef preferredRun() const = 0;
    // The (statistic, tensor kind) pairs the run has per layer.
    virtual std::vector<std::pair<QString, QString>> statistics(RunRef run) const = 0;
    // Loads the matrix and calls done on receiver's thread; a newer load of the same slot replaces an older
    // one, whose done is never called. Returns a ticket for cancel().
    virtual quint64 load(RunRef run, const MatrixRequest &request, const QString &slot, QObject *receiver,
        std::function<void(const Heatmap &)> done)
        = 0;
    virtual void cancel(quint64 ticket) = 0;
    // Loads the run's precision map (core/query/precisionmap.h) the same way; 0 (and done never called) for a source
    // that has none (a comparison's differences).
    virtual quint64 loadPrecision(
        RunRef run, const QString &slot, QObject *receiver, std::function<void(const PrecisionMap &)> done)
    {
        Q_UNUSED(run);
        Q_UNUSED(slot);
        Q_UNUSED(receiver);
        Q_UNUSED(done);
        return 0;
    }
    // What to say when the run has no per-layer statistics at all (an invalid run: when no run has them).
    virtual QString noStatisticsText(RunRef run) const = 0;
    // The run's mixture-of-experts router statistics (Megatron's load_balancing_loss and its variants, z_loss,
    // moe/<name>_layer_<i> from TensorBoard), run level; none by default.
    virtual QStringList routerStatistics(RunRef run) const
    {
        Q_UNUSED(run);
        return {};
    }

Q_SIGNALS:
    void runsChanged(); // runs() changed (a folder opened or closed)
    void dataChanged(fp8scope::RunRef run); // the run's statistics changed (a recompute stored new ones)
};

// The runs of a workspace, read from its stores.
class WorkspaceHeatmapSource : public HeatmapSource
{
    Q_OBJECT
public:
    explicit WorkspaceHeatmapSource(Workspace *workspace, QObject *parent = nullptr);

    std::vector<RunChoice> runs() const override;
    // The first run with per-layer statistics that is not a baseline, else the first with per-layer
    // statistics, else the first that is not a baseline.
    RunRef preferredRun() const override;
    std::vector<std::pair<QString, QString>> statistics(RunRef run) const override;
    quint64 load(RunRef run, const MatrixRequest &request, const QString &slot, QObject *receiver,
        std::function<void(const Heatmap &)> done) override;
    void cancel(quint64 ticket) override;
    quint64 loadPrecision(
        RunRef run, const QString &slot, QObject *receiver, std::function<void(const PrecisionMap &)> done) override;
    QString noStatisticsText(RunRef run) const override;
    QStringList routerStatistics(RunRef run) const override;

private:
    Workspace *m_workspace;
};

// One run of the workspace only (a comparison's baseline or run, each in a heatmap of its own), whatever
// the shared selection's run.
class SingleRunHeatmapSource : public WorkspaceHeatmapSource
{
    Q_OBJECT
public:
    explicit SingleRunHeatmapSource(Workspace *workspace, QObject *parent = nullptr);

    void setRun(RunRef run);
    RunRef run() const { return m_run; }

    std::vector<RunChoice> runs() const override;
    RunRef preferredRun() const override { return m_run; }

private:
    Workspace *m_workspace;
    RunRef m_run;
};

} // namespace fp8scope
