// Curves: one scalar series (lm loss, grad norm, or any statistic of the selected tensor) for every visible
// run, overlaid in the run's colour. Every point is drawn while there are fewer points than pixels; beyond
// that the store serves min/max per pixel bucket for the visible range, and zooming in asks again.
// Smoothing (debiased EMA, running mean, Gaussian) with the raw curve faint behind; log y; x by step or by
// consumed samples; wheel zoom, drag pan, reset; a cursor at the selected step; a click selects a step.
// What it draws comes from a CurveSource: the workspace's runs, or (in a comparison) a difference.
#pragma once

#include "curvemodel.h"
#include "curvesource.h"

#include "core/analysis/smoothing.h"
#include "views/plotting/plotview.h"

#include <QVector>

#include <map>
#include <vector>

class QAction;
class QCheckBox;
class QLabel;
class QComboBox;
class QToolButton;
class QSlider;
class QTimer;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemText;

namespace fp8scope {

class Selection;
class Workspace;

class CurveView : public PlotView
{
    Q_OBJECT
public:
    // Shorter series are drawn as logged, not smoothed: a few points smoothed end far from their last value
    // and flatten their spikes. An EMA of weight 0.9 reaches back about 10 points, so a series of fewer than
    // ten such spans is mostly its own smoothing's start (real runs logged every 50 steps have 25 to 60).
    static constexpr int kMinSmoothedPoints = 100;
    // The tensor statistics a view of runs without statistics of their own opens on, the first they have:
    // what fraction flushes and saturates, then the scale and range (TE's debug statistics).
    static constexpr const char *kInformativeTensorStatistics[] = {"underflows%", "overflows%", "saturation%",
        "cur_amax", "amax", "dynamic_range", "scale_inv_min", "scale_inv_max"};

    // Draws the workspace's visible runs.
    CurveView(Workspace *workspace, Selection *selection, QWidget *parent = nullptr);
    // Draws what `source` holds (the view does not own it).
    CurveView(CurveSource *source, Selection *selection, QWidget *parent = nullptr);

    CurveSource *source() const { return m_source; }
    // A run-level statistic ("lm loss", canonical) or, prefixed "tensor:", one of the selected tensor's
    // ("tensor:mse").
    void setStatistic(const QString &key);
    QString statistic() const;
    // The source to draw the statistic from where a run has it ("" lets the query layer choose).
    void setDataSource(const QString &source);
    QString dataSource() const;
    void setSmoothing(Smoothing kind, double strength);
    Smoothing smoothingKind() const;
    double smoothingStrength() const;
    void setLogY(bool on);
    bool logY() const;
    // The x axis: steps, consumed samples, or consumed tokens (each run placed by its own counts; a run
    // without them is left out, and the note says so).
    using XAxis = CurveModel::XAxis;
    void setXAxis(XAxis axis);
    XAxis xAxis() const;
    void setXBySamples(bool on) { setXAxis(on ? XAxis::Samples : XAxis::Steps); }
    void resetZoom();

    // What the plot holds for a run (after the last fetch): steps, raw values (bucket midpoints when
    // bucketed) and whether it is bucketed.
    struct RunCurve {
        RunRef run;
        Series series; // the series drawn
        std::vector<double> steps;
        QVector<double> xs; // plot x of each step (the step, or consumed samples or tokens)
        std::vector<double> values;
        std::vector<double> mins;
        std::vector<double> maxs;
        bool bucketed = false;
        bool inLegend = true; // CurveSource::inLegend
        QCPGraph *raw = nullptr;
        QCPGraph *smoothed = nullptr;
        QCPGraph *low = nullptr;
        QCPGraph *high = nullptr;
    };
    const std::vector<RunCurve> &curves() const { return m_curves; }
    // The events marked along the bottom of the plot for the runs drawn: skipped and NaN iterations (from
    // the run's counters, and the drawn statistic's own NaN or Inf values) and loss-scale cuts.
    struct Mark {
        RunRef run;
        qint64 step = 0;
        CurveSource::Event::Kind kind = CurveSource::Event::Skipped;
        double value = 0;
        double x = 0; // on the plot's x axis
    };
    const std::vector<Mark> &marks() const { return m_marks; }
    static QString markName(CurveSource::Event::Kind kind);
    // What the plot says in place of curves (no tensor chosen, nothing to draw, every value 0), or "".
    QString message() const;
    // The line above the plot naming runs left out of the chosen x axis, or "".
    QString note() const;
    // Hides the statistic picker (a view that draws one statistic chosen elsewhere: the comparison's).
    void setStatisticPickerVisible(bool on);
    // Where a step of a run is on the plot's x axis (the step, or its consumed samples or tokens).
    double plotX(RunRef run, double step) const { return xOfStep(run, step); }
    // The tooltip the cursor shows at plot x (each visible run's value at the nearest point).
    QString toolTipAt(double x) const;
    QString csv() const override;
    QString title() const override;
    // Whether the view follows the newest step: its right edge is at the end of the curves (the whole series
    // shown, or zoomed in on the end). A run that grows then extends it (or moves it along, keeping its width);
    // a view zoomed elsewhere stays where it is.
    bool isFollowingEnd() const;
    // Places the legend where the curves and the marked regions are not (views/plotting/legendplacement.h);
    // a view that marks the plot calls it once its marks moved.
    void updateLegend();
    // Whether the plot names its curves (a plot stacked beneath another of the same runs leaves it to the first).
    void setLegendShown(bool on)
    {
        m_legendShown = on;
        updateLegend();
    }
    // Replots now (benchmarks, tests); normal updates are coalesced.
    void refetchNow();
    // Off: while hidden (another page of a wizard, a closed window) the view reads nothing; it reads what it
    // missed when shown. On by default.
    void setFetchWhileHidden(bool on) { m_fetchWhileHidden = on; }

    // A vertical line at plot x (NaN: none): where the mouse is in another plot of a stack.
    void setHoverLine(double x);
    double hoverLine() const;

Q_SIGNALS:
    // The curves were fetched again (another statistic, axis, zoom or source data).
    void rebuilt();
    // The mouse is at plot x over the plot (NaN: it left).
    void hovered(double x);

protected:
    void resizeEvent(QResizeEvent *event) override;
    void showEvent(QShowEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void setUpControls();
    void setUpPlot();
    void reloadStatistics();
    void reloadSources();
    void scheduleRefetch();
    void rebuild();
    void applySmoothing();
    void addMarks();
    // The smoothing a curve is drawn with: the chosen kind, or none for a series too short to smooth.
    Smoothing smoothingOf(const RunCurve &curve) const;
    void updateCursor();
    double xOfStep(RunRef run, double step) const;
    double stepOfX(RunRef run, double x) const;
    void onMouseMove(QMouseEvent *event);
    void onMousePress(QMouseEvent *event);
    void onMouseRelease(QMouseEvent *event);

    CurveSource *m_source;
    Selection *m_selection;
    QComboBox *m_statBox;
    QString m_drawnStatistic; // the statistic the picker last chose (a header cannot be chosen)
    QComboBox *m_sourceBox; // shown when several sources hold the statistic
    QComboBox *m_smoothBox;
    QSlider *m_strength;
    QLabel *m_strengthValue;
    QAction *m_sourceAction = nullptr;
    QAction *m_statAction = nullptr;
    QToolButton *m_namesButton = nullptr; // where no legend fits: the legend on demand
    QCheckBox *m_logY;
    QComboBox *m_xAxis;
    QTimer *m_refetch;
    QCPItemStraightLine *m_hoverLine = nullptr;
    QCPItemStraightLine *m_cursor;
    QCPItemText *m_message;
    QCPItemText *m_note;
    std::vector<RunCurve> m_curves;
    std::vector<Mark> m_marks;
    // What to fetch and where it goes (the axes' mappings, the curves, the labels and messages).
    CurveModel m_model;
    QString xAxisName() const { return CurveModel::axisName(xAxis()); }
    // One curve of the model drawn: its graphs added to the plot.
    RunCurve addCurve(const CurveModel::Curve &curve);
    std::vector<CurveSource::Statistic> m_statistics;
    // The x extent of the curves drawn (every point of their series, not just those in view), to tell a view
    // following the newest step (its right edge at the end) from one zoomed elsewhere when a run grows.
    double m_extentLo = 0, m_extentHi = 0;
    bool m_haveExtent = false;
    bool m_haveRange = false;
    bool m_inRebuild = false;
    bool m_fetchWhileHidden = true;
    bool m_legendShown = true;
    bool m_fetchPending = false; // a fetch skipped while hidden
    QPoint m_pressPos;
};

} // namespace fp8scope
