// Curves: one scalar series (lm loss, grad norm, or any statistic of the selected tensor) for every visible
// run, overlaid in the run's colour. Every point is drawn while there are fewer points than pixels; beyond
// that the store serves min/max per pixel bucket for the visible range, and zooming in asks again.
// Smoothing (debiased EMA, running mean, Gaussian) with the raw curve faint behind; log y; x by step or by
// consumed samples; wheel zoom, drag pan, reset; a cursor at the selected step; a click selects a step.
#pragma once

#include "core/analysis/smoothing.h"
#include "views/plotting/plotview.h"

#include <QVector>

#include <vector>

class QCheckBox;
class QComboBox;
class QSlider;
class QTimer;
class QCPGraph;
class QCPItemStraightLine;

namespace fp8scope {

class Selection;
class Workspace;

class CurveView : public PlotView
{
    Q_OBJECT
public:
    CurveView(Workspace *workspace, Selection *selection, QWidget *parent = nullptr);

    // A run-level statistic ("lm loss") or, prefixed "tensor:", one of the selected tensor's ("tensor:mse").
    void setStatistic(const QString &key);
    QString statistic() const;
    void setSmoothing(Smoothing kind, double strength);
    Smoothing smoothingKind() const;
    double smoothingStrength() const;
    void setLogY(bool on);
    bool logY() const;
    void setXBySamples(bool on);
    void resetZoom();

    // What the plot holds for a run (after the last fetch): steps, raw values (bucket midpoints when
    // bucketed) and whether it is bucketed.
    struct RunCurve {
        int run = -1;
        std::vector<double> steps;
        QVector<double> xs; // plot x of each step (the step, or consumed samples)
        std::vector<double> values;
        std::vector<double> mins;
        std::vector<double> maxs;
        bool bucketed = false;
        QCPGraph *raw = nullptr;
        QCPGraph *smoothed = nullptr;
        QCPGraph *low = nullptr;
        QCPGraph *high = nullptr;
    };
    const std::vector<RunCurve> &curves() const { return m_curves; }
    // The tooltip the cursor shows at plot x (each visible run's value at the nearest point).
    QString toolTipAt(double x) const;
    QString csv() const override;
    // Replots now (benchmarks, tests); normal updates are coalesced.
    void refetchNow();

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    void reloadStatistics();
    void scheduleRefetch();
    void rebuild();
    void applySmoothing();
    void updateCursor();
    double xOfStep(int run, double step) const;
    double stepOfX(int run, double x) const;
    void onMouseMove(QMouseEvent *event);
    void onMousePress(QMouseEvent *event);
    void onMouseRelease(QMouseEvent *event);

    Workspace *m_workspace;
    Selection *m_selection;
    QComboBox *m_statBox;
    QComboBox *m_smoothBox;
    QSlider *m_strength;
    QCheckBox *m_logY;
    QComboBox *m_xAxis;
    QTimer *m_refetch;
    QCPItemStraightLine *m_cursor;
    std::vector<RunCurve> m_curves;
    std::vector<std::vector<std::pair<double, double>>> m_samples; // per run: (step, consumed samples)
    std::vector<std::vector<std::pair<double, double>>> m_samplesInverse; // per run: (samples, step)
    double m_stepLo = 0, m_stepHi = 0; // full range of the current statistic
    bool m_haveRange = false;
    bool m_inRebuild = false;
    QPoint m_pressPos;
};

} // namespace fp8scope
