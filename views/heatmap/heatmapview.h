// Heatmap: one statistic of one tensor kind over layers (depth order, layer 0 on top) and steps, for one
// run; linear or log colour scale with its legend, optional threshold colouring (cells above it in red),
// a hover tooltip, and a click that selects the cell's layer and step in every view. Cells sit at the real
// steps they were logged at (each spans half way to its neighbours), however uneven the steps. What it draws
// comes from a HeatmapSource: the workspace's stores, or (in a comparison) differences between two runs.
#pragma once

#include <optional>

#include "heatmapsource.h"

#include "views/plotting/plotview.h"
#include <cmath>
#include <utility>

class QAction;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QKeyEvent;
class QSpinBox;
class QLabel;
class QCPColorMap;
class QCPColorScale;
class QCPGraph;
class QCPItemStraightLine;
class QCPItemRect;
class QCPItemText;

namespace fp8scope {

class Selection;
class Workspace;
class WorkspaceHeatmapSource;

class HeatmapView : public PlotView
{
    Q_OBJECT
public:
    // Draws the workspace's runs.
    HeatmapView(Workspace *workspace, Selection *selection, QWidget *parent = nullptr);
    // Draws what `source` holds (the view does not own it).
    HeatmapView(HeatmapSource *source, Selection *selection, QWidget *parent = nullptr);

    HeatmapSource *source() const { return m_source; }
    void setRun(RunRef run);
    RunRef run() const;
    void setStatistic(const QString &stat);
    QString statistic() const;
    void setTensor(const QString &tensor);
    QString tensor() const;
    // The source the rows come from ("" lets the query layer choose) and the one shown.
    void setDataSource(const QString &source);
    void setLogColour(bool on);
    bool logColour() const;
    // A mixture-of-experts GEMM's experts (core/formats/expertnames.h): one row per GEMM holding the worst expert
    // (Max, the default), their mean, one expert's (setExpert), or a row per expert (All).
    void setExpertRows(ExpertRows rows);
    ExpertRows expertRows() const;
    void setExpert(int expert);
    // The experts x steps map of one GEMM ("" for the map of every layer): what a click on a GEMM's row, or Return
    // on a selected expert, opens; Backspace or Escape (or the Back button) goes back.
    void showExpertsOf(const QString &gemm);
    QString expertsOf() const { return m_expertsOf; }
    // The row that shows a layer: its own, or its GEMM's where experts are grouped (-1 for none).
    int rowOfLayer(const QString &layer) const;
    // The rows whose GEMMs ran in high precision for the whole run (the run's precision map): hatched, their cells
    // not coloured (a BF16 GEMM's statistics are no FP8 underflow), the source said on hover.
    const std::vector<int> &highPrecisionRows() const { return m_bf16Rows; } // ascending
    void setThreshold(bool on, double value);

    // Draws a matrix directly (benchmarks; tests of the drawing); views normally load from the store.
    void setHeatmap(Heatmap heatmap);
    const Heatmap &heatmap() const { return m_data; }
    // A matrix is being read from the store (off the GUI thread); heatmapChanged() follows.
    bool isLoading() const { return m_pending != 0; }
    // The cell under a pixel of the plot (the layer row and the column of the nearest step): false outside
    // the map.
    bool cellAt(const QPointF &pixel, int *layer, int *stepIndex) const;
    // The pixel at the centre of a cell: its layer's row at its step (for tests that click one).
    QPointF cellCentre(int layer, int stepIndex) const;
    QString toolTipAt(const QPointF &pixel) const;
    QString csv() const override;
    // The dashed line at the selected step (hidden without one), as in the curve view.
    const QCPItemStraightLine *stepCursor() const { return m_cursor; }
    // The marks drawn on cells whose value was NaN or infinite (a blow-up), one point a cell.
    const QCPGraph *nonFiniteMarks() const { return m_nonFiniteMarks; }
    // What the plot says instead of a map when there is none to draw ("" while it draws one).
    QString message() const;
    // What the statistic shown meant under the run's Transformer Engine version (Heatmap::caveat), shown over
    // the map in a line of its own; empty when nothing applies.
    QString caveat() const;
    // Layers named and marked on the layer axis whatever fits, each with a note ("onset 1375").
    void setFlaggedLayers(const std::vector<std::pair<QString, QString>> &layers);
    const std::vector<std::pair<QString, QString>> &flaggedLayers() const { return m_flagged; }
    // The linear colour scale's range, shared with another heatmap; nullopt: the map's own.
    void setColourRange(std::optional<std::pair<double, double>> range);
    // A diverging colour ramp (blue below `midpoint`, white at it, red above) on a linear range centred on it:
    // for differences (0) and ratios (1). Log colour and threshold colouring still take precedence.
    void setDiverging(bool on, double midpoint = 0.0);
    bool diverging() const { return m_diverging; }
    // The map's own linear range of finite values (lo > hi when it has none).
    std::pair<double, double> valueRange() const { return m_linearRange; }
    // The colour scale's label (the statistic and tensor drawn; "" with nothing drawn).
    QString scaleLabel() const;
    QString title() const override;
    // The value the colour map holds at a pixel (what is drawn there), NaN outside the map or in a gap.
    double drawnValueAt(const QPointF &pixel) const;

Q_SIGNALS:
    void heatmapChanged();
    // The router's statistic beside an experts map, asked to be drawn as a curve (the Router button).
    void curveRequested(const QString &stat);

protected:
    void resizeEvent(QResizeEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;

private:
    void setUpControls();
    void setUpPlot();
    void fillRunBox();
    // The key range the map spans: the first and last steps and half the distance to their neighbours.
    std::pair<double, double> keyRange() const;
    void updateLayerTicks();
    void updateCursor();
    void rebuildMap();
    void reloadPickers();
    void reload();
    void redraw();
    void applyGradient();
    void onMouseMove(QMouseEvent *event);
    void onMousePress(QMouseEvent *event);
    void onMouseRelease(QMouseEvent *event);

    HeatmapSource *m_source;
    Selection *m_selection;
    QString m_slot; // this view's request slot
    QAction *m_recipeAction = nullptr;
    QAction *m_sourceAction = nullptr;
    QComboBox *m_runBox;
    QComboBox *m_statBox;
    QComboBox *m_tensorBox;
    QComboBox *m_recipeBox; // shown for recomputed statistics: the recipe the rows were computed under
    QComboBox *m_sourceBox; // shown when several sources hold the statistic (the ranks of a TE debug log)
    QComboBox *m_expertsBox; // shown for a run with experts: how a GEMM's experts make its row
    QSpinBox *m_expertBox; // ... the expert shown, for one expert
    QAction *m_expertsAction = nullptr;
    QAction *m_expertAction = nullptr;
    QAction *m_backAction = nullptr; // back from an experts map
    QAction *m_routerAction = nullptr; // the router's loss as a curve, beside an experts map
    QString m_routerStat;
    QString m_expertsOf;
    // The run's precision map, and the rows it keeps in high precision with what says so.
    RunRef m_precisionRun;
    PrecisionMap m_precision;
    quint64 m_precisionPending = 0;
    std::vector<int> m_bf16Rows;
    std::vector<QString> m_bf16Source; // per row ("" for a row in the run's precision)
    std::vector<QCPItemRect *> m_hatches;
    void updateHighPrecisionRows();
    QCheckBox *m_logColour;
    QCheckBox *m_threshold;
    QDoubleSpinBox *m_thresholdValue;
    QCPColorMap *m_map;
    QCPColorScale *m_scale;
    QCPItemStraightLine *m_cursor;
    QCPItemText *m_message;
    QCPGraph *m_nonFiniteMarks; // a cross on each cell whose logged value was not finite (Heatmap::nonFinite)
    void sizeNonFiniteMarks();
    QLabel *m_caveat;
    Heatmap m_data;
    int m_hotRow = -1; // the row holding the largest value, when some value is smaller
    int m_ticksHeight = -1; // the axis rect height the layer names were fitted to
    std::pair<double, double> m_linearRange {INFINITY, -INFINITY}; // finite values
    std::pair<double, double> m_logRange {INFINITY, -INFINITY}; // positive values
    std::vector<std::pair<QString, QString>> m_flagged;
    std::optional<std::pair<double, double>> m_sharedRange;
    bool m_diverging = false;
    double m_divergeAt = 0.0;
    QPointF m_pressPos;
    quint64 m_pending = 0;
};

} // namespace fp8scope
