// One run's tensor statistic for every layer of the selected tensor kind: the selected layer in the run's
// colour, drawn last (on top), the other layers thin and grey behind it, so a layer that moves apart from the
// rest stands out (the triage wizard's suspect against the run's other layers). Each layer is a pseudo-run
// of this source; the x axis counts of the run place them all.
#pragma once

#include "curvesource.h"

#include <memory>

namespace fp8scope {

class Selection;
class Workspace;

class LayerCurveSource : public CurveSource
{
    Q_OBJECT
public:
    LayerCurveSource(Workspace *workspace, Selection *selection, QObject *parent = nullptr);
    ~LayerCurveSource() override;

    void setRun(RunRef run);
    RunRef run() const { return m_run; }
    // The pseudo-run drawing a layer (invalid when the run has no such layer), and the layer one draws.
    RunRef layerRef(const QString &layer) const;
    QString layerOf(RunRef ref) const;

    std::vector<Statistic> statistics() const override;
    // The layers holding the selected tensor kind, in depth order, the selected layer last.
    std::vector<RunRef> runs() const override;
    QString runName(RunRef run) const override;
    QColor runColour(RunRef run) const override;
    // The selected layer only: the grey layers behind it are context, not entries.
    bool inLegend(RunRef run) const override;
    std::optional<Curve> curve(RunRef run, const Request &request) const override;
    std::vector<std::pair<double, double>> stepSamples(RunRef run) const override;
    std::vector<std::pair<double, double>> stepTokens(RunRef run) const override;
    QString emptyText() const override;

private:
    void reload();

    Workspace *m_workspace;
    Selection *m_selection;
    std::unique_ptr<WorkspaceCurveSource> m_runs; // colours and counts of the run
    RunRef m_run;
    std::vector<LayerTensors> m_layers; // the run's layers, depth order
};

} // namespace fp8scope
