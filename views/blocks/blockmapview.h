// Blocks: the block map of the selected run's tensor dump (the layer, tensor and step of the selection, the
// nearest step with a dump) under a block recipe: a map of its blocks (rows of blocks by block columns)
// coloured by scale, amax, flushed share, saturated share or mean relative error, served at the plot's
// resolution (each cell the largest value of the blocks it covers) so that 2 M blocks zoom and pan smoothly;
// the worst blocks listed; a click on a block (or a row of the list) selects it and shows its values'
// histogram against the format's range; the scales' histogram. On a Transformer Engine DumpTensors file the map
// can be of what TE made of each copy, with its quantization compared with the reference, bit for bit.
// Computed in the job queue (CPU), like every recomputation; linked to the selection and the recipe picker.
#pragma once

#include "core/numerics/blockmap.h"
#include "core/numerics/techeck.h"
#include "core/query/querytypes.h"
#include "views/plotting/plotview.h"

#include <map>
#include <memory>
#include <optional>
#include <vector>

class QComboBox;
class QLabel;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QCPBars;
class QCPColorMap;
class QCPColorScale;
class QCPItemRect;
class QCPItemText;
class QCPTextElement;

namespace fp8scope {

class Selection;
class Workspace;

// What one computation of the view gives: the map under the recipe, the same blocks with FP32 scales, and
// for a TE dump the check of its quantization (with a map per copy).
struct BlockMapResult {
    BlockMap map;
    std::optional<BlockMap> fp32;
    std::optional<TeCheck> te;
    QString teError;
};

class BlockMapView : public PlotView
{
    Q_OBJECT
public:
    BlockMapView(Workspace *workspace, Selection *selection, QWidget *parent = nullptr);
    ~BlockMapView() override;

    // The recipe the map is computed under ("mxfp8", "nvfp4", "block128x128", ...; a per-tensor recipe is one
    // block), as the main window's recipe picker sets every view's.
    void setRecipe(const QString &recipe, const QString &format = QString());
    void setField(BlockField field);
    BlockField field() const;
    // "recipe" or a TE copy ("rowwise", "columnwise") of a DumpTensors file.
    QStringList sources() const;
    void setSource(const QString &source);

    const std::optional<Dump> &dump() const { return m_dump; }
    const BlockMapResult *result() const { return m_result.get(); }
    // The map drawn (the recipe's or a TE copy's); null before one is computed.
    const BlockMap *shownMap() const;
    bool isComputing() const { return m_ticket != 0; }
    // The block selected (-1: none), as a click or the list selects it, and its values' histogram.
    int64_t selectedBlock() const { return m_selected; }
    void selectBlock(int64_t index);
    // The block under a point of the plot's widget, or -1.
    int64_t blockAt(const QPoint &pixel) const;
    // Cells of the colour map now (the plot's resolution caps them; a zoom in shows each block).
    QSize cellCount() const;
    QString statusText() const;
    // The recipe of the map shown (a TE copy's own, where one is shown).
    QString recipeShown() const;
    QString title() const override;
    QString csv() const override;

Q_SIGNALS:
    void mapChanged();
    void blockSelected(int64_t index);

protected:
    void showEvent(QShowEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void reloadDumps();
    void selectionChanged();
    void request();
    void computed(std::shared_ptr<BlockMapResult> result);
    void rebuildCells();
    void redraw();
    void fillTable();
    void drawScaleHistogram();
    void drawBlockHistogram();
    void updateStatus();
    void updateScaleLabel();
    void resetZoom();
    // A copy of TE's whose view is the tensor's transpose is shown.
    bool shownTransposed() const;

    Workspace *m_workspace;
    Selection *m_selection;
    QComboBox *m_recipeBox;
    QComboBox *m_fieldBox;
    QComboBox *m_sourceBox;
    QLabel *m_status;
    QTabWidget *m_tabs;
    QTableView *m_table;
    QStandardItemModel *m_model;
    QCustomPlot *m_blockPlot;
    QCPBars *m_blockBars;
    QCustomPlot *m_scalePlot;
    QCPBars *m_scaleBars;
    QCPColorMap *m_colorMap;
    QCPColorScale *m_colorScale;
    QCPItemRect *m_mark;
    QCPItemText *m_empty = nullptr; // why there is no map, over it
    QCPTextElement *m_blockTitle = nullptr;
    std::map<RunRef, std::vector<Dump>> m_dumps;
    std::optional<Dump> m_dump;
    std::shared_ptr<BlockMapResult> m_result;
    QString m_slot;
    quint64 m_ticket = 0;
    int64_t m_selected = -1;
    QString m_error;
    RunRef m_recipeRun;
    bool m_requestPending = false;
    bool m_rebuilding = false;
    QPoint m_pressAt;
    QSize m_cellArea; // the axes' size the cells were made for
    std::optional<Format> m_format; // the element format asked for (setRecipe, a TE dump's), where one was
};

} // namespace fp8scope
