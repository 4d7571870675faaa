// One heatmap of two runs' per-layer statistic: run − baseline, or run / baseline, cell by cell, for the
// ordinary heatmap view to draw (a comparison produces the data type the ordinary views draw). The layers
// are those both runs have, in the run's depth order; the steps are the run's, each matched with the
// baseline's nearest logged step when that lies within half the baseline's median interval (else the cell
// is a gap). Recomputed statistics are matched under the same recipe; a baseline that has the statistic only
// as recomputed is compared with the run's recomputed rows, when it has them.
#pragma once

#include "views/heatmap/heatmapsource.h"

namespace fp8scope {

class Workspace;

enum class LayerCombination { Difference, Ratio };

// The combined matrix (exposed for tests); a ratio's cell is NaN where the baseline's is 0.
Heatmap combineHeatmaps(const Heatmap &baseline, const Heatmap &run, LayerCombination how);

class LayerDifferenceSource : public HeatmapSource
{
    Q_OBJECT
public:
    explicit LayerDifferenceSource(Workspace *workspace, QObject *parent = nullptr);

    void setPair(RunRef baseline, RunRef run);
    void setCombination(LayerCombination how);
    LayerCombination combination() const { return m_how; }

    std::vector<RunChoice> runs() const override;
    RunRef preferredRun() const override { return m_run; }
    // The (statistic, tensor) pairs both runs have per layer.
    std::vector<std::pair<QString, QString>> statistics(RunRef run) const override;
    quint64 load(RunRef run, const MatrixRequest &request, const QString &slot, QObject *receiver,
        std::function<void(const Heatmap &)> done) override;
    void cancel(quint64 ticket) override;
    QString noStatisticsText(RunRef run) const override;

private:
    Workspace *m_workspace;
    RunRef m_baseline;
    RunRef m_run;
    LayerCombination m_how = LayerCombination::Difference;
};

} // namespace fp8scope
