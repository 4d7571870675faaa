// The inspector window: the run list, the layer tree, and the linked curve, heatmap, histogram, statistics
// and problems views in docks around one shared selection; menus to open folders (also by drag and drop,
// the command line and Open Recent) and to export; a status bar with the compute backend and the running
// job's progress and cancel button.
#pragma once

#include "core/about/libraryversions.h"
#include "core/demo/demogenerator.h"
#include "core/importers/manifestwriter.h"
#include "core/numerics/backendselect.h"
#include "core/query/querytypes.h"

#include <QMainWindow>

class QAction;
class QDockWidget;
class QLabel;
class QLineEdit;
class QMenu;
class QProgressBar;
class QSortFilterProxyModel;
class QStackedWidget;
class QTabWidget;
class QSystemTrayIcon;
class QTableView;
class QTimer;
class QToolButton;
class QTreeView;

namespace fp8scope {

class AttemptsView;
class CompareView;
class CurveStack;
class FindingNotice;
class LiveTriage;
class CurveView;
class HeatmapView;
class HistogramView;
class BlockMapView;
class LayerTreeModel;
class ProblemsModel;
class RunListModel;
class Selection;
class StartPage;
class StatsTableModel;
class TriageWizard;
class Workspace;

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(
        BackendChoice backend = BackendChoice::Auto, CudaFactory cudaFactory = nullptr, QWidget *parent = nullptr);
    ~MainWindow() override;

    // Opens folders; a path may also be a run's fp8scope.json or a workspace's fp8scope-workspace.json (as a file
    // manager hands them over), which opens the folder it is in.
    void openFolders(const QStringList &folders);
    // The folder a path opens: itself when a folder, the folder of a manifest; empty for anything else.
    static QString folderToOpen(const QString &path);
    // Adds folders to those open (a second run folder beside the first), keeping the selection.
    void addFolders(const QStringList &folders);
    // Saves a run's settings into its folder's manifest and reads the folders again, keeping the selection;
    // false with *error when the manifest could not be written.
    bool setRunSettings(RunRef run, const RunManifest &settings, QString *error);
    // Sets (an empty name: clears) the attempt `run` derives from in its fp8scope.json (the Attempts tab), and
    // reads the folders again; false with *error when there is no such file to write.
    bool setRunParent(RunRef run, const QString &parent, QString *error);
    // Asks for a run's settings in a dialog (the Runs panel's double click and context menu).
    void editRunSettings(RunRef run);
    // Generates the demo pair once into the user cache directory and opens it.
    void openDemo(const DemoOptions &options = {});

    Workspace *workspace() const { return m_workspace; }
    Selection *selection() const { return m_selection; }
    CurveView *curves() const { return m_curves; }
    CurveStack *curveStack() const { return m_curveStack; }
    CompareView *compare() const { return m_compare; }
    AttemptsView *attempts() const { return m_attempts; }
    // Shows the comparison tab on `run` against `baseline` (invalid: its pairing's).
    void showComparison(RunRef baseline = {}, RunRef run = {});
    // The focus mode (View > Focus on the Tab, Ctrl+Shift+F): the tab in view has the whole window, the docks
    // stepped aside until it is switched off (they come back as they were). In the comparison, its tables'
    // Focus button also gives the table tab the plots' room.
    void setFocusMode(bool on);
    bool isFocusMode() const;
    // Opens the triage wizard (Tools > Triage...) on `run` against `baseline` (invalid: the pairing's first).
    void showTriage(RunRef baseline = {}, RunRef run = {});
    TriageWizard *triage() const { return m_triage; }
    // File > Export Triage Report...: the PDF report of `run` against `baseline` (invalid: the wizard's pair,
    // else the pairing's first) into `path` (empty: asked, the page size by the chosen filter). Built as a job
    // (the status bar's progress and Cancel), painted here; reportExported() follows.
    void exportReport(RunRef baseline = {}, RunRef run = {}, QString path = {}, bool letter = false);
    // The status bar's offer to triage, shown while a folder with a BF16/FP8 pair is open.
    QToolButton *triageOffer() const { return m_triageOffer; }
    HeatmapView *heatmap() const { return m_heatmap; }
    HistogramView *histogram() const { return m_histogram; }
    BlockMapView *blocks() const { return m_blocks; }
    QTreeView *layerTree() const { return m_layerTree; }
    QTableView *statsTable() const { return m_statsTable; }
    QTableView *problemsTable() const { return m_problemsTable; }
    QTableView *runTable() const { return m_runTable; }
    QString backendStatus() const;
    // What Help > About lists after the libraries: the CUDA runtime and driver, which only the executable that
    // links the CUDA backend can ask (app/cudafactory.h).
    void setCudaVersions(const QList<ComponentVersion> &versions) { m_cudaVersions = versions; }
    // Help > About fp8scope, window-modal (not blocking).
    void showAbout();
    // The live triage of the followed folders and the bar that tells of its findings.
    LiveTriage *liveTriage() const { return m_live; }
    FindingNotice *findingNotice() const { return m_notice; }
    // Shows notice `index` of the live triage: its pair in the triage wizard at the class step (the layer
    // suspects), the finding's layer, tensor and step selected.
    void openNotice(int index);
    // Shown while no folder is open, in place of the views.
    StartPage *startPage() const { return m_startPage; }
    bool isStartPageShown() const;

Q_SIGNALS:
    // The workspace is loaded and every view has drawn it.
    void ready();
    // A report was written to `path` (error empty) or not (why).
    void reportExported(const QString &path, const QString &error);

protected:
    void closeEvent(QCloseEvent *event) override;
    void showEvent(QShowEvent *event) override;
    // The docks keep their share of the window as it is resized (the views in the middle are not squeezed).
    void resizeEvent(QResizeEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void createViews();
    void createMenus();
    void createStatusBar();
    void tell(int notice); // the bar, and a desktop notification where the platform has one
    void restoreSettings();
    void saveSettings();
    void updateRecentMenu();
    void onLoaded();
    void updateLayerPrecision();
    void onTreeCurrentChanged();
    void syncTreeToSelection();
    void showProblemLine(const QModelIndex &index);
    void updateTitle();
    void showStartPage(bool on);
    // The default shares of the window for the docks.
    void layoutDocks();
    // The docks of per-layer data (layers, heatmap, histogram) step aside while no open run has any, and come
    // back when one does; the problems too, while they have nothing to list and no heatmap to sit beside.
    void collapseEmptyDocks();
    // The window's dock layout as the user left it: docks stepped aside for want of data count as shown.
    QByteArray dockLayout();
    // Opens `folders` again (or anew) and selects the same run, layer, tensor and step once loaded.
    void reopenKeepingSelection(const QStringList &folders);
    void askOpenFolder();

    Workspace *m_workspace;
    Selection *m_selection;
    CurveView *m_curves = nullptr;
    CompareView *m_compare = nullptr;
    AttemptsView *m_attempts = nullptr;
    TriageWizard *m_triage = nullptr; // made when first opened
    QToolButton *m_triageOffer = nullptr;
    QTabWidget *m_viewTabs = nullptr; // the curves and the comparison, in the middle
    HeatmapView *m_heatmap = nullptr;
    HistogramView *m_histogram = nullptr;
    BlockMapView *m_blocks = nullptr;
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
    QList<ComponentVersion> m_cudaVersions {{QStringLiteral("CUDA backend"), QStringLiteral("not linked")}};
    QProgressBar *m_progress = nullptr;
    QTimer *m_busyDelay = nullptr; // a job shows the progress bar once it has run this long
    LiveTriage *m_live = nullptr;
    FindingNotice *m_notice = nullptr;
    QSystemTrayIcon *m_tray = nullptr; // made for the first desktop notification
    QToolButton *m_cancel = nullptr;
    bool m_syncingTree = false;
    QStackedWidget *m_central = nullptr;
    StartPage *m_startPage = nullptr;
    QByteArray m_dockState; // the docks as they were when the start page hid them (or as saved)
    bool m_shownViews = false; // the views have been shown (their dock state is worth keeping)
    QList<QDockWidget *> m_collapsedDocks; // hidden by collapseEmptyDocks, to be shown again
    QList<QDockWidget *> m_focusedDocks; // hidden by the focus mode, to be shown again
    QList<QDockWidget *> m_frontDocks; // of those, the tabbed ones in front, in front again after it
    QAction *m_focusAction = nullptr;
    QList<QAction *> m_runActions; // Compare, Triage, Report: enabled when there are runs for them
    void updateRunActions();
    bool m_focusMode = false;
    CurveStack *m_curveStack = nullptr;
    QStringList m_pendingStack; // the stacked plots to restore once a folder is open
    bool m_layoutPending = false; // the default dock layout waits for the window to be shown
};

} // namespace fp8scope
