// Heatmap: one statistic of one tensor kind over layers (depth order, layer 0 on top) and steps, for one
// run; linear or log colour scale with its legend, optional threshold colouring (cells above it in red),
// a hover tooltip, and a click that selects the cell's layer and step in every view.
#pragma once

#include "core/store/runstore.h"

#include "views/plotting/plotview.h"
#include <cmath>
#include <utility>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QCPColorMap;
class QCPColorScale;
class QCPItemStraightLine;
class QCPItemText;

namespace fp8scope {

class Selection;
class Workspace;

class HeatmapView : public PlotView
{
    Q_OBJECT
public:
    HeatmapView(Workspace *workspace, Selection *selection, QWidget *parent = nullptr);

    void setRun(int run);
    int run() const;
    void setStatistic(const QString &stat);
    QString statistic() const;
    void setTensor(const QString &tensor);
    QString tensor() const;
    void setLogColour(bool on);
    bool logColour() const;
    void setThreshold(bool on, double value);

    // Draws a matrix directly (benchmarks; tests of the drawing); views normally load from the store.
    void setHeatmap(Heatmap heatmap);
    const Heatmap &heatmap() const { return m_data; }
    // A matrix is being read from the store (off the GUI thread); heatmapChanged() follows.
    bool isLoading() const { return m_pending != 0; }
    // The cell under a pixel of the plot: false outside the map.
    bool cellAt(const QPointF &pixel, int *layer, int *stepIndex) const;
    // The pixel at the centre of a cell (for tests that click one).
    QPointF cellCentre(int layer, int stepIndex) const;
    QString toolTipAt(const QPointF &pixel) const;
    QString csv() const override;
    // The dashed line at the selected step (hidden without one), as in the curve view.
    const QCPItemStraightLine *stepCursor() const { return m_cursor; }
    // What the plot says instead of a map when there is none to draw ("" while it draws one).
    QString message() const;

Q_SIGNALS:
    void heatmapChanged();

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
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

    Workspace *m_workspace;
    Selection *m_selection;
    QComboBox *m_runBox;
    QComboBox *m_statBox;
    QComboBox *m_tensorBox;
    QComboBox *m_recipeBox; // shown for recomputed statistics: the recipe the rows were computed under
    QCheckBox *m_logColour;
    QCheckBox *m_threshold;
    QDoubleSpinBox *m_thresholdValue;
    QCPColorMap *m_map;
    QCPColorScale *m_scale;
    QCPItemStraightLine *m_cursor;
    QCPItemText *m_message;
    Heatmap m_data;
    int m_hotRow = -1; // the row holding the largest value, when some value is smaller
    std::pair<double, double> m_linearRange {INFINITY, -INFINITY}; // finite values
    std::pair<double, double> m_logRange {INFINITY, -INFINITY}; // positive values
    QPointF m_pressPos;
    quint64 m_pending = 0;
};

} // namespace fp8scope
