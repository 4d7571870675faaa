// The inspector window: the run list, the layer tree, and the linked curve, heatmap, histogram, statistics
// and problems views in docks around one shared selection; menus to open folders (also by drag and drop,
// the command line and Open Recent) and to export; a status bar with the compute backend and the running
// job's progress and cancel button.
#pragma once

#include "core/demo/demogenerator.h"
#include "core/numerics/backendselect.h"

#include <QMainWindow>

class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QSortFilterProxyModel;
class QTableView;
class QToolButton;
class QTreeView;

namespace fp8scope {

class CurveView;
class HeatmapView;
class HistogramView;
class LayerTreeModel;
class ProblemsModel;
class RunListModel;
class Selection;
class StatsTableModel;
class Workspace;

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(
        BackendChoice backend = BackendChoice::Auto, CudaFactory cudaFactory = nullptr, QWidget *parent = nullptr);
    ~MainWindow() override;

    void openFolders(const QStringList &folders);
    // Generates the demo pair once into the user cache directory and opens it.
    void openDemo(const DemoOptions &options = {});

    Workspace *workspace() const { return m_workspace; }
    Selection *selection() const { return m_selection; }
    CurveView *curves() const { return m_curves; }
    HeatmapView *heatmap() const { return m_heatmap; }
    HistogramView *histogram() const { return m_histogram; }
    QTreeView *layerTree() const { return m_layerTree; }
    QTableView *statsTable() const { return m_statsTable; }
    QTableView *problemsTable() const { return m_problemsTable; }
    QTableView *runTable() const { return m_runTable; }
    QString backendStatus() const;

Q_SIGNALS:
    // The workspace is loaded and every view has drawn it.
    void ready();

protected:
    void closeEvent(QCloseEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void createViews();
    void createMenus();
    void createStatusBar();
    void restoreSettings();
    void saveSettings();
    void updateRecentMenu();
    void onLoaded();
    void onTreeCurrentChanged();
    void syncTreeToSelection();
    void showProblemLine(const QModelIndex &index);
    void updateTitle();

    Workspace *m_workspace;
    Selection *m_selection;
    CurveView *m_curves = nullptr;
    HeatmapView *m_heatmap = nullptr;
    HistogramView *m_histogram = nullptr;
    RunListModel *m_runModel = nullptr;
    LayerTreeModel *m_layerModel = nullptr;
    QSortFilterProxyModel *m_layerProxy = nullptr;
    StatsTableModel *m_statsModel = nullptr;
    ProblemsModel *m_problemsModel = nullptr;
    QTableView *m_runTable = nullptr;
    QTreeView *m_layerTree = nullptr;
    QLineEdit *m_layerFilter = nullptr;
    QTableView *m_statsTable = nullptr;
    QTableView *m_problemsTable = nullptr;
    QMenu *m_recentMenu = nullptr;
    QLabel *m_backendLabel = nullptr;
    QProgressBar *m_progress = nullptr;
    QToolButton *m_cancel = nullptr;
    bool m_syncingTree = false;
};

} // namespace fp8scope
