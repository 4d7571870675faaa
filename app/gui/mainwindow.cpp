#include "mainwindow.h"

#include "core/query/precisionmap.h"

#include "aboutdialog.h"
#include "app/common/version.h"
#include "appsettings.h"
#include "icons.h"
#include "runsettingsdialog.h"
#include "startpage.h"

#include "core/report/triagereport.h"
#include "core/session/foldersession.h"
#include "views/attempts/attemptsview.h"
#include "views/blocks/blockmapview.h"
#include "views/compare/compareview.h"
#include "views/curves/curvesource.h"
#include "views/curves/curvestack.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/histogram/histogramview.h"
#include "views/models/layertreemodel.h"
#include "views/models/problemsmodel.h"
#include "views/models/runlistmodel.h"
#include "views/models/statstablemodel.h"
#include "views/models/tableexport.h"
#include "views/report/reportrenderer.h"
#include "views/triage/findingnotice.h"
#include "views/triage/livetriage.h"
#include "views/triage/triagewizard.h"
#include "views/workspace/pairpickers.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QResizeEvent>
#include <QScreen>
#include <QScrollBar>
#include <QSet>
#include <QSortFilterProxyModel>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QSystemTrayIcon>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>
#include <tuple>

namespace fp8scope {

namespace {

QDockWidget *addDock(
    QMainWindow *window, const QString &name, const QString &title, QWidget *widget, Qt::DockWidgetArea area)
{
    auto *dock = new QDockWidget(title, window);
    dock->setObjectName(name);
    dock->setWidget(widget);
    window->addDockWidget(area, dock);
    return dock;
}

// Lines around `line` (1-based) of a text file, read until that line only; `offset` when there is no line.
QString problemContext(const QString &path, qint64 line, qint64 offset)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return QObject::tr("%1: %2").arg(path, f.errorString());
    QString out;
    // A W&B log's problems count records: its bytes show where.
    if (line > 0 && !(FolderSession::countsRecords(path) && offset >= 0)) {
        qint64 n = 0;
        while (!f.atEnd() && n < line + 2) {
            const QByteArray text = f.readLine(1 << 20);
            ++n;
            if (n >= line - 2)
                out += (n == line ? QStringLiteral("> %1: ") : QStringLiteral("  %1: ")).arg(n)
                    + QString::fromUtf8(text).trimmed() + QLatin1Char('\n');
        }
        return out;
    }
    const qint64 start = std::max<qint64>(0, offset - 32);
    f.seek(start);
    const QByteArray bytes = f.read(96);
    out = QObject::tr("bytes %1..%2 (problem at offset %3):\n").arg(start).arg(start + bytes.size()).arg(offset);
    for (qsizetype i = 0; i < bytes.size(); i += 16)
        out += QString::number(start + i, 16).rightJustified(8, QLatin1Char('0')) + QStringLiteral("  ")
            + QString::fromLatin1(bytes.mid(i, 16).toHex(' ')) + QLatin1Char('\n');
    return out;
}

} // namespace

MainWindow::MainWindow(BackendChoice backend, CudaFactory cudaFactory, QWidget *parent)
    : QMainWindow(parent)
    , m_workspace(new Workspace(this))
    , m_selection(new Selection(this))
{
    setObjectName(QStringLiteral("mainWindow"));
    setAcceptDrops(true);
    setDockNestingEnabled(true);
    createViews();
    createMenus();
    createStatusBar();
    restoreSettings();
    showStartPage(true);
    updateTitle();
    connect(m_workspace, &Workspace::changed, this, [this](Workspace::Parts parts) {
        if (parts & Workspace::Loaded)
            onLoaded();
        // A recompute stored: the heatmap that stepped aside beside dumps may have something to show now (a new
        // layer or run reloads: Loaded). Only then, not on every line a followed log grows by.
        else if ((parts & Workspace::Statistics) && !m_collapsedDocks.isEmpty() && !m_workspace->layerTensors().empty())
            collapseEmptyDocks();
    });
    connect(
        m_workspace, &Workspace::message, this, [this](const QString &text) { statusBar()->showMessage(text, 10000); });
    connect(m_selection, &Selection::changed, this, &MainWindow::syncTreeToSelection);
    // The layer tree marks the layers the selected run kept in BF16.
    connect(m_selection, &Selection::changed, this, [this](Selection::Parts parts) {
        if (parts & Selection::Run)
            updateLayerPrecision();
    });
    // A run unticked leaves every view: the selection (histogram, statistics) moves to a run still shown.
    connect(m_workspace, &Workspace::changed, this, [this](Workspace::Parts parts, RunRef run) {
        if (!(parts & Workspace::Visibility))
            return;
        const WorkspaceRun *r = m_workspace->run(run);
        if (!r || r->visible || m_selection->run() != run)
            return;
        RunRef next;
        for (const WorkspaceRun &other : m_workspace->runs()) {
            if (other.visible && !next.isValid())
                next = other.run.ref;
        }
        m_selection->setRun(next);
    });
    m_workspace->setBackend(backend, cudaFactory);
}

MainWindow::~MainWindow() = default;

void MainWindow::createViews()
{
    m_curves = new CurveView(m_workspace, m_selection, this);
    m_compare = new CompareView(m_workspace, m_selection, this);
    m_viewTabs = new QTabWidget(this);
    m_viewTabs->setObjectName(QStringLiteral("viewTabs"));
    m_viewTabs->setDocumentMode(true);
    // The curves, and the plots stacked beneath them on the same x axis.
    m_curveStack = new CurveStack(m_curves, m_workspace, m_selection, this);
    m_viewTabs->addTab(m_curveStack, tr("Curves"));
    // Beside the tabs, while the curves are in view: another plot beneath them.
    m_viewTabs->setCornerWidget(m_curveStack->stackButton(), Qt::TopRightCorner);
    connect(m_viewTabs, &QTabWidget::currentChanged, this,
        [this] { m_curveStack->stackButton()->setVisible(m_viewTabs->currentWidget() == m_curveStack); });
    m_viewTabs->addTab(m_compare, tr("Comparison"));
    connect(m_compare, &CompareView::focusRequested, this, &MainWindow::setFocusMode);
    // The baseline's attempts, one change at a time; a double-click opens an attempt's comparison.
    m_attempts = new AttemptsView(m_workspace, this);
    m_viewTabs->addTab(m_attempts, tr("Attempts"));
    connect(m_attempts, &AttemptsView::comparisonRequested, this, [this](RunRef b, RunRef r) { showComparison(b, r); });
    connect(m_attempts, &AttemptsView::parentRequested, this, [this](RunRef run, const QString &parent) {
        QString error;
        if (!setRunParent(run, parent, &error))
            QMessageBox::warning(this, tr("Set the Parent"), error);
    });
    // The selected tensor's blocks under a block recipe (and, on a DumpTensors file, as TE quantized them).
    m_blocks = new BlockMapView(m_workspace, m_selection, this);
    m_viewTabs->addTab(m_blocks, tr("Blocks"));
    m_startPage = new StartPage(this);
    m_central = new QStackedWidget(this);
    m_central->addWidget(m_viewTabs);
    m_central->addWidget(m_startPage);
    // The live triage's notices sit above the views, where they are seen without taking the focus.
    m_notice = new FindingNotice(this);
    auto *middle = new QWidget(this);
    auto *middleLayout = new QVBoxLayout(middle);
    middleLayout->setContentsMargins(0, 0, 0, 0);
    middleLayout->setSpacing(0);
    middleLayout->addWidget(m_notice);
    middleLayout->addWidget(m_central, 1);
    setCentralWidget(middle);
    m_live = new LiveTriage(m_workspace, this);
    connect(m_live, &LiveTriage::noticed, this, &MainWindow::tell);
    connect(m_notice, &FindingNotice::openRequested, this, &MainWindow::openNotice);
    connect(m_startPage, &StartPage::openFolderRequested, this, &MainWindow::askOpenFolder);
    connect(m_startPage, &StartPage::openRecentRequested, this, [this](const QString &f) { openFolders({f}); });
    connect(m_startPage, &StartPage::demoRequested, this, [this] { openDemo(); });
    m_heatmap = new HeatmapView(m_workspace, m_selection, this);
    // An experts map's router loss: drawn in the Curves tab.
    connect(m_heatmap, &HeatmapView::curveRequested, this, [this](const QString &stat) {
        m_curves->setStatistic(stat);
        m_viewTabs->setCurrentWidget(m_curveStack);
    });
    m_histogram = new HistogramView(m_workspace, m_selection, this);
    m_histogram->setMinimumWidth(260);

    m_runModel = new RunListModel(this);
    m_runModel->follow(m_workspace);
    m_runTable = newTableView(QStringLiteral("runTable"), this, false); // its own fit (onLoaded)
    m_runTable->setModel(m_runModel);
    m_runTable->setMinimumWidth(180);
    // Cluster job names run long; their two ends tell runs apart (..._bf16_baseline, ..._fp8_...).
    m_runTable->setTextElideMode(Qt::ElideMiddle);
    // A run's settings: double click it, or its context menu.
    connect(m_runTable, &QTableView::doubleClicked, this,
        [this](const QModelIndex &index) { editRunSettings(m_workspace->runAt(index.row())); });
    m_runTable->setContextMenuPolicy(Qt::ActionsContextMenu);
    auto *settingsAction = new QAction(tr("Run &Settings..."), m_runTable);
    settingsAction->setObjectName(QStringLiteral("runSettings"));
    connect(settingsAction, &QAction::triggered, this, [this] {
        const QModelIndex current = m_runTable->currentIndex();
        if (current.isValid())
            editRunSettings(m_workspace->runAt(current.row()));
    });
    m_runTable->addAction(settingsAction);
    auto *compareAction = new QAction(tr("&Compare with Its Baseline"), m_runTable);
    compareAction->setObjectName(QStringLiteral("compareRun"));
    connect(compareAction, &QAction::triggered, this, [this] {
        const RunRef run = m_workspace->runAt(m_runTable->currentIndex().row());
        showComparison(m_workspace->baselineOf(run), run);
    });
    m_runTable->addAction(compareAction);
    connect(m_runTable->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex &current) {
            if (current.isValid())
                m_selection->setRun(m_workspace->runAt(current.row()));
        });

    auto *layerPane = new QWidget(this);
    auto *layerLayout = new QVBoxLayout(layerPane);
    layerLayout->setContentsMargins(0, 0, 0, 0);
    m_layerFilter = new QLineEdit(layerPane);
    m_layerFilter->setObjectName(QStringLiteral("layerFilter"));
    m_layerFilter->setPlaceholderText(tr("Filter layers (e.g. layers.7.mlp)"));
    m_layerFilter->setClearButtonEnabled(true);
    m_layerModel = new LayerTreeModel(this);
    m_layerProxy = new QSortFilterProxyModel(this);
    m_layerProxy->setSourceModel(m_layerModel);
    m_layerProxy->setRecursiveFilteringEnabled(true);
    m_layerProxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_layerProxy->setFilterRole(LayerTreeModel::PathRole);
    m_layerTree = new QTreeView(layerPane);
    m_layerTree->setObjectName(QStringLiteral("layerTree"));
    m_layerTree->setModel(m_layerProxy);
    m_layerTree->setHeaderHidden(true);
    m_layerTree->setUniformRowHeights(true);
    m_layerTree->setIndentation(12);
    layerPane->setMinimumWidth(180);
    layerLayout->addWidget(m_layerFilter);
    layerLayout->addWidget(m_layerTree);
    connect(m_layerFilter, &QLineEdit::textChanged, this, [this](const QString &text) {
        m_layerProxy->setFilterFixedString(text);
        if (!text.isEmpty())
            m_layerTree->expandAll();
    });
    connect(
        m_layerTree->selectionModel(), &QItemSelectionModel::currentChanged, this, &MainWindow::onTreeCurrentChanged);

    m_statsModel = new StatsTableModel(this);
    m_statsModel->follow(m_workspace, m_selection);
    m_statsTable = newTableView(QStringLiteral("statsTable"), this);
    m_statsTable->setModel(m_statsModel);
    // Columns as wide as what they hold (once per refresh; the user may still drag them).
    connect(m_statsModel, &QAbstractItemModel::modelReset, m_statsTable, &QTableView::resizeColumnsToContents);
    // Copy (the selected rows, or all) and export, from the context menu or the keyboard.
    m_statsTable->setSelectionMode(QAbstractItemView::ExtendedSelection);
    addTableActions(m_statsTable, tr("statistics.csv"));

    m_problemsModel = new ProblemsModel(this);
    m_problemsModel->follow(m_workspace);
    m_problemsTable = newTableView(QStringLiteral("problemsTable"), this);
    m_problemsTable->setModel(m_problemsModel);
    connect(m_problemsTable, &QTableView::doubleClicked, this, &MainWindow::showProblemLine);

    addDock(this, QStringLiteral("runsDock"), tr("Runs"), m_runTable, Qt::LeftDockWidgetArea);
    addDock(this, QStringLiteral("layersDock"), tr("Layers"), layerPane, Qt::LeftDockWidgetArea);
    addDock(this, QStringLiteral("histogramDock"), tr("Histogram"), m_histogram, Qt::RightDockWidgetArea);
    addDock(this, QStringLiteral("statsDock"), tr("Statistics"), m_statsTable, Qt::RightDockWidgetArea);
    auto *heat = addDock(this, QStringLiteral("heatmapDock"), tr("Heatmap"), m_heatmap, Qt::BottomDockWidgetArea);
    // The problems table, or a line that says why it is empty; the tab counts them.
    auto *problemsPane = new QStackedWidget(this);
    problemsPane->setObjectName(QStringLiteral("problemsPane"));
    auto *noProblems = new QLabel(problemsPane);
    noProblems->setObjectName(QStringLiteral("noProblems"));
    noProblems->setAlignment(Qt::AlignCenter);
    noProblems->setWordWrap(true);
    problemsPane->addWidget(m_problemsTable);
    problemsPane->addWidget(noProblems);
    auto *problems
        = addDock(this, QStringLiteral("problemsDock"), tr("Problems"), problemsPane, Qt::BottomDockWidgetArea);
    const auto showProblems = [this, problemsPane, noProblems, problems] {
        const int n = m_problemsModel->rowCount();
        noProblems->setText(m_workspace->folders().isEmpty()
                ? tr("No folder is open.")
                : tr("No problems: every file fp8scope recognised in %1 was read whole.")
                      .arg(m_workspace->folders().join(QStringLiteral(", "))));
        problemsPane->setCurrentWidget(n > 0 ? static_cast<QWidget *>(m_problemsTable) : noProblems);
        // Files left out are listed (no gap is silent) but counted apart from the failures.
        const int skipped = m_problemsModel->skippedCount();
        collapseEmptyDocks();
        problems->setWindowTitle(n == 0 ? tr("Problems")
                : skipped == 0          ? tr("Problems (%1)").arg(n)
                : skipped == n          ? tr("Problems (%1 skipped)").arg(skipped)
                                        : tr("Problems (%1, %2 skipped)").arg(n - skipped).arg(skipped));
    };
    // The count follows the model; the text the folders (a folder read whole changes no row). The model follows
    // the workspace first: it was connected first.
    connect(m_problemsModel, &QAbstractItemModel::modelReset, this, showProblems);
    connect(m_problemsModel, &QAbstractItemModel::rowsInserted, this, showProblems);
    connect(m_workspace, &Workspace::changed, this, [showProblems](Workspace::Parts parts) {
        if (parts & (Workspace::Loaded | Workspace::Closed))
            showProblems();
    });
    showProblems();
    tabifyDockWidget(heat, problems);
    heat->raise();
    // The first size fits the screen it opens on (a 1366x768 laptop as a 2560x1440 desk); the docks get their
    // shares of it when they are first shown (layoutDocks).
    QSize size(1500, 950);
    if (const QScreen *screen = QGuiApplication::primaryScreen())
        size = size.boundedTo(screen->availableSize());
    resize(size);
}

void MainWindow::layoutDocks()
{
    // Shares of the window as it is now: the views in the middle get what the docks leave.
    const QSize size = this->size();
    auto *heat = findChild<QDockWidget *>(QStringLiteral("heatmapDock"));
    auto *histogramDock = findChild<QDockWidget *>(QStringLiteral("histogramDock"));
    resizeDocks({heat}, {size.height() * 38 / 100}, Qt::Vertical);
    resizeDocks({histogramDock}, {size.height() * 42 / 100}, Qt::Vertical);
    const int histogramWidth = std::max(360, size.width() * 25 / 100);
    resizeDocks({histogramDock}, {histogramWidth}, Qt::Horizontal);
    // The run list as wide as the curves' controls (about 660 px) leave, up to a sixth of the window.
    resizeDocks({findChild<QDockWidget *>(QStringLiteral("runsDock"))},
        {std::clamp(size.width() - histogramWidth - 660, 185, std::max(185, size.width() * 17 / 100))}, Qt::Horizontal);
}

void MainWindow::collapseEmptyDocks()
{
    if (isStartPageShown())
        return;
    // What the open runs hold: per-layer statistics (the heatmap), tensor dumps (the histogram), either (the
    // layer tree).
    bool layerStats = false, dumps = false;
    for (const WorkspaceRun &r : m_workspace->runs()) {
        layerStats = layerStats || !m_workspace->catalog().layerStatistics(r.run.ref).empty();
        dumps = dumps || !m_workspace->catalog().dumps(r.run.ref).empty();
    }
    // The problems share the heatmap's place as a tab: with no heatmap and nothing to list, that place goes too.
    const std::pair<const char *, bool> docks[] = {{"layersDock", layerStats || dumps}, {"heatmapDock", layerStats},
        {"histogramDock", dumps}, {"problemsDock", layerStats || m_problemsModel->rowCount() > 0}};
    for (const auto &[name, filled] : docks) {
        auto *dock = findChild<QDockWidget *>(QLatin1String(name));
        if (!dock)
            continue;
        if (!filled && !m_collapsedDocks.contains(dock) && !dock->isHidden() && !dock->isFloating()) {
            dock->hide();
            m_collapsedDocks << dock; // a user who shows it again keeps it: it is not hidden twice
        } else if (filled && m_collapsedDocks.removeOne(dock)) {
            if (m_focusMode) { // back when the focus ends
                m_focusedDocks << dock;
                continue;
            }
            dock->show();
            if (dock->objectName() == QLatin1String("heatmapDock"))
                dock->raise();
        }
    }
    // The problems alone in the bottom place (no heatmap): as tall as their rows, not the heatmap's share.
    auto *heat = findChild<QDockWidget *>(QStringLiteral("heatmapDock"));
    auto *problems = findChild<QDockWidget *>(QStringLiteral("problemsDock"));
    if (heat && problems && heat->isHidden() && !problems->isHidden() && !problems->isFloating() && isVisible()) {
        const int rows = m_problemsModel->rowCount();
        const int wanted = m_problemsTable->horizontalHeader()->height()
            + std::max(2, rows + 1) * m_problemsTable->verticalHeader()->defaultSectionSize() + 40;
        resizeDocks({problems}, {std::clamp(wanted, 100, height() * 30 / 100)}, Qt::Vertical);
    }
}

void MainWindow::setFocusMode(bool on)
{
    if (isStartPageShown())
        on = false;
    if (on && !m_focusMode) {
        // The tab of a tabbed place in front (the heatmap or the problems) comes back in front.
        m_frontDocks.clear();
        for (QDockWidget *dock : findChildren<QDockWidget *>()) {
            if (!dock->isHidden() && !dock->isFloating()) {
                if (!tabifiedDockWidgets(dock).isEmpty() && !dock->visibleRegion().isEmpty())
                    m_frontDocks << dock;
                m_focusedDocks << dock;
                dock->hide();
            }
        }
    } else if (!on && m_focusMode) {
        for (QDockWidget *dock : std::as_const(m_focusedDocks))
            dock->show();
        m_focusedDocks.clear();
        for (QDockWidget *dock : std::as_const(m_frontDocks))
            dock->raise();
        m_frontDocks.clear();
    }
    m_focusMode = on;
    // One state: the comparison's Focus button shows it too.
    m_compare->setFocusChecked(on);
    const QSignalBlocker block(m_focusAction);
    m_focusAction->setChecked(on);
}

bool MainWindow::isFocusMode() const
{
    return m_focusMode;
}

QByteArray MainWindow::dockLayout()
{
    QList<QDockWidget *> hidden;
    for (QDockWidget *dock : m_collapsedDocks + m_focusedDocks) {
        if (dock->isHidden() && !hidden.contains(dock))
            hidden << dock;
    }
    if (hidden.isEmpty())
        return saveState(AppSettings::kWindowStateVersion);
    setUpdatesEnabled(false);
    for (QDockWidget *dock : std::as_const(hidden))
        dock->show();
    const QByteArray state = saveState(AppSettings::kWindowStateVersion);
    for (QDockWidget *dock : std::as_const(hidden))
        dock->hide();
    setUpdatesEnabled(true);
    return state;
}

void MainWindow::showEvent(QShowEvent *event)
{
    QMainWindow::showEvent(event);
    if (m_layoutPending && !isStartPageShown()) {
        m_layoutPending = false;
        layoutDocks();
    }
}

void MainWindow::resizeEvent(QResizeEvent *event)
{
    QMainWindow::resizeEvent(event);
    const QSize before = event->oldSize(), after = event->size();
    if (!before.isValid() || before.isEmpty() || m_layoutPending || isStartPageShown())
        return;
    // Each docked panel keeps its share: the side ones of the width, the bottom ones of the height.
    QList<QDockWidget *> sides, bottoms;
    QList<int> widths, heights;
    for (QDockWidget *dock : findChildren<QDockWidget *>()) {
        if (dock->isHidden() || dock->isFloating())
            continue;
        const Qt::DockWidgetArea area = dockWidgetArea(dock);
        if ((area == Qt::LeftDockWidgetArea || area == Qt::RightDockWidgetArea) && after.width() != before.width()) {
            sides << dock;
            widths << std::max(dock->minimumSizeHint().width(), dock->width() * after.width() / before.width());
        } else if ((area == Qt::BottomDockWidgetArea || area == Qt::TopDockWidgetArea)
            && after.height() != before.height()) {
            bottoms << dock;
            heights << std::max(dock->minimumSizeHint().height(), dock->height() * after.height() / before.height());
        }
    }
    if (!sides.isEmpty())
        resizeDocks(sides, widths, Qt::Horizontal);
    if (!bottoms.isEmpty())
        resizeDocks(bottoms, heights, Qt::Vertical);
}

void MainWindow::createMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *open = file->addAction(tr("&Open Folder..."), this, &MainWindow::askOpenFolder);
    open->setObjectName(QStringLiteral("openFolder"));
    open->setShortcut(QKeySequence::Open);
    QAction *add = file->addAction(tr("&Add Folder..."), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Add a run folder to those open"));
        if (!dir.isEmpty())
            addFolders({dir});
    });
    add->setObjectName(QStringLiteral("addFolder"));
    // Adding to and rebuilding the open folders need some open.
    const auto enableWithFolders = [this](QAction *action) {
        connect(m_workspace, &Workspace::changed, action, [this, action](Workspace::Parts parts) {
            if (parts & (Workspace::Loaded | Workspace::Closed))
                action->setEnabled(!m_workspace->folders().isEmpty());
        });
    };
    enableWithFolders(add);
    add->setEnabled(false);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    file->addAction(tr("Open &Demo (synthetic data)"), this, [this] { openDemo(); });
    QAction *rebuild = file->addAction(tr("Re&build Store..."), this, [this] {
        if (QMessageBox::question(this, tr("Rebuild the store"),
                tr("Throw away what fp8scope keeps of the open folders and read every file again?\n\n"
                   "The store is a cache of the run's files; statistics recomputed from tensor dumps are "
                   "recomputed when asked for again. Your reviews of triage findings (confirmed, dismissed, "
                   "notes) are not in the files: they are carried over to the new store (unless the old one "
                   "can no longer be read)."))
            != QMessageBox::Yes)
            return;
        QString error;
        if (!m_workspace->rebuild(&error))
            QMessageBox::warning(this, tr("Rebuild the store"), error);
    });
    rebuild->setObjectName(QStringLiteral("rebuildStore"));
    enableWithFolders(rebuild);
    rebuild->setEnabled(false);
    QAction *report = file->addAction(tr("Export Triage &Report..."), this, [this] { exportReport(); });
    report->setObjectName(QStringLiteral("exportReport"));
    report->setToolTip(tr("The triage of a run against its baseline as a PDF: verdict, evidence, what to try next"));
    connect(m_workspace, &Workspace::changed, report, [this, report](Workspace::Parts parts) {
        if (parts & (Workspace::Loaded | Workspace::Closed))
            report->setEnabled(m_workspace->runCount() >= 2);
    });
    report->setEnabled(false);
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu *view = menuBar()->addMenu(tr("&View"));
    QAction *compare = view->addAction(tr("&Comparison with the Baseline"), this, [this] { showComparison(); });
    compare->setObjectName(QStringLiteral("showComparison"));
    compare->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_K));
    view->addAction(tr("C&urves"), this, [this] { m_viewTabs->setCurrentWidget(m_curveStack); });
    // On at every start: a folder still being written moves in the views and the live triage tells of it.
    QAction *follow = view->addAction(tr("&Follow Folders as They Are Written"));
    follow->setObjectName(QStringLiteral("followFolders"));
    follow->setCheckable(true);
    follow->setChecked(m_workspace->isFollowing());
    follow->setToolTip(tr("Read what the open folders gain while a run writes them, and triage it as it comes"));
    connect(follow, &QAction::toggled, this, [this](bool on) {
        m_workspace->setFollowing(on);
        m_live->setEnabled(on);
        statusBar()->showMessage(on ? tr("Following the open folders") : tr("Not following the open folders"), 4000);
    });
    // The tab in view given the whole window: the docks step aside until it is switched off.
    m_focusAction = view->addAction(tr("F&ocus on the Tab"));
    m_focusAction->setObjectName(QStringLiteral("focusTab"));
    m_focusAction->setCheckable(true);
    m_focusAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_F));
    m_focusAction->setToolTip(tr("Give the tab in view the whole window (the panels step aside)"));
    connect(m_focusAction, &QAction::toggled, this, &MainWindow::setFocusMode);
    view->addSeparator();
    for (QDockWidget *dock : findChildren<QDockWidget *>())
        view->addAction(dock->toggleViewAction());

    QMenu *tools = menuBar()->addMenu(tr("&Tools"));
    QAction *triage = tools->addAction(tr("&Triage..."), this, [this] { showTriage(); });
    triage->setObjectName(QStringLiteral("showTriage"));
    triage->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
    triage->setToolTip(tr("Walk through the triage of a run against its baseline, step by step"));

    // The actions a session starts with, one click away.
    QToolBar *bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setMovable(false);
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->setIconSize(QSize(20, 20));
    open->setIconText(tr("Open"));
    open->setIcon(actionIcon(QStringLiteral("open-folder")));
    compare->setIconText(tr("Compare"));
    compare->setIcon(actionIcon(QStringLiteral("compare")));
    triage->setIconText(tr("Triage"));
    triage->setIcon(actionIcon(QStringLiteral("triage")));
    report->setIconText(tr("Report"));
    report->setIcon(actionIcon(QStringLiteral("report")));
    bar->addAction(open);
    bar->addAction(compare);
    bar->addAction(triage);
    bar->addAction(report);

    m_runActions = {compare, triage, report};
    updateRunActions();

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    QAction *about = help->addAction(tr("&About fp8scope"), this, &MainWindow::showAbout);
    about->setObjectName(QStringLiteral("showAbout"));
    about->setMenuRole(QAction::AboutRole);
    updateRecentMenu();
}

void MainWindow::updateRunActions()
{
    if (m_runActions.size() != 3)
        return;
    // What needs runs waits for them: a comparison two, a triage or its report one.
    const int runs = isStartPageShown() ? 0 : int(m_workspace->runCount());
    const auto [compare, triage, report] = std::tuple(m_runActions[0], m_runActions[1], m_runActions[2]);
    compare->setEnabled(runs >= 2);
    if (m_focusAction) // nothing to give the window to on the start page
        m_focusAction->setEnabled(runs >= 1);
    compare->setToolTip(runs >= 2 ? tr("Compare a run with its baseline: the loss overlay, the difference, the "
                                       "findings")
            : runs == 1           ? tr("A comparison needs two runs: open a folder with its baseline too")
                                  : tr("Open a folder of runs first"));
    for (QAction *a : {triage, report}) {
        a->setEnabled(runs >= 1);
        a->setToolTip(runs >= 1 ? (a == triage ? tr("Walk through the triage of a run against its baseline, step "
                                                    "by step")
                                               : tr("Export the triage of a run as a PDF report"))
                                : tr("Open a folder of runs first"));
    }
}

void MainWindow::showAbout()
{
    auto *dialog = new AboutDialog(componentVersions(m_cudaVersions), m_backendLabel->text(), this);
    // The status label is set first (connected first), then the box follows it.
    connect(m_workspace, &Workspace::backendStatusChanged, dialog,
        [this, dialog] { dialog->setBackendStatus(m_backendLabel->text()); });
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowIcon(applicationIcon());
    dialog->open();
}

void MainWindow::createStatusBar()
{
    m_backendLabel = new QLabel(tr("Compute: selecting..."), this);
    m_backendLabel->setObjectName(QStringLiteral("backendStatus"));
    m_progress = new QProgressBar(this);
    m_progress->setObjectName(QStringLiteral("jobProgress"));
    m_progress->setMaximumWidth(260);
    m_progress->setTextVisible(true);
    m_progress->hide();
    m_cancel = new QToolButton(this);
    m_cancel->setObjectName(QStringLiteral("cancelJob"));
    m_cancel->setText(tr("Cancel"));
    m_cancel->hide();
    // Offered while a folder with a BF16/FP8 pair is open.
    m_triageOffer = new QToolButton(this);
    m_triageOffer->setObjectName(QStringLiteral("triageOffer"));
    m_triageOffer->setText(tr("Triage this pair..."));
    m_triageOffer->setToolTip(tr("A BF16 baseline and an FP8 run are open: walk through their triage"));
    m_triageOffer->hide();
    connect(m_triageOffer, &QToolButton::clicked, this, [this] { showTriage(); });
    statusBar()->addPermanentWidget(m_triageOffer);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);
    statusBar()->addPermanentWidget(m_backendLabel);
    connect(m_cancel, &QToolButton::clicked, this, [this] { m_workspace->jobs().stopRunning(); });
    connect(m_workspace, &Workspace::backendStatusChanged, this,
        [this](const QString &status) { m_backendLabel->setText(tr("Compute: %1").arg(status)); });
    JobQueue *jobs = &m_workspace->jobs();
    connect(jobs, &JobQueue::progressChanged, this, [this](qint64 done, qint64 total, const QString &message) {
        // Percent of the running job; totals can exceed an int.
        m_progress->setRange(0, total > 0 ? 1000 : 0);
        m_progress->setValue(total > 0 ? int(done * 1000 / total) : 0);
        m_progress->setFormat(message.isEmpty() ? QStringLiteral("%p%") : message + QStringLiteral(" %p%"));
        m_progress->show();
        m_cancel->show();
    });
    // A job shown only once it has run a moment: the follow ingest of a folder being written runs a few times a
    // second for a few milliseconds, and a bar flashing at that pace says nothing.
    m_busyDelay = new QTimer(this);
    m_busyDelay->setSingleShot(true);
    m_busyDelay->setInterval(300);
    connect(m_busyDelay, &QTimer::timeout, this, [this] {
        m_progress->show();
        m_cancel->show();
    });
    connect(jobs, &JobQueue::busyChanged, this, [this](bool busy) {
        if (busy) {
            m_busyDelay->start();
            return;
        }
        m_busyDelay->stop();
        m_progress->hide();
        m_cancel->hide();
    });
}

QString MainWindow::backendStatus() const
{
    return m_backendLabel->text();
}

void MainWindow::restoreSettings()
{
    AppSettings s;
    restoreGeometry(s.windowGeometry());
    // Restored when the start page gives way to the views (showStartPage); without one, the default layout.
    m_dockState = s.windowState();
    m_curves->setSmoothing(Smoothing(std::clamp(s.smoothingKind(), 0, 3)), s.smoothingStrength());
    m_curves->setLogY(s.curvesLogY());
    m_pendingStack = s.stackedStatistics(); // stacked once a folder has them
    m_heatmap->setLogColour(s.heatmapLogColour());
    m_compare->restoreState(s.compareState());
}

void MainWindow::saveSettings()
{
    AppSettings s;
    s.setWindow(saveGeometry(), isStartPageShown() ? m_dockState : dockLayout());
    s.setSmoothing(int(m_curves->smoothingKind()), m_curves->smoothingStrength());
    s.setCurvesLogY(m_curves->logY());
    s.setStackedStatistics(m_pendingStack.isEmpty() ? m_curveStack->stackedStatistics() : m_pendingStack);
    s.setHeatmapLogColour(m_heatmap->logColour());
    s.setCompareState(m_compare->saveState());
}

void MainWindow::showComparison(RunRef baseline, RunRef run)
{
    if (baseline.isValid() && run.isValid())
        m_compare->setPair(baseline, run);
    m_viewTabs->setCurrentWidget(m_compare);
}

void MainWindow::showTriage(RunRef baseline, RunRef run)
{
    if (!m_triage) {
        m_triage = new TriageWizard(m_workspace, m_selection, this);
        connect(
            m_triage, &TriageWizard::comparisonRequested, this, [this](RunRef b, RunRef r) { showComparison(b, r); });
        connect(m_triage, &TriageWizard::reportRequested, this, [this](RunRef b, RunRef r) { exportReport(b, r); });
        // A what-if row: the window's histogram under that recipe.
        connect(m_triage, &TriageWizard::recipeRequested, this, [this](const QString &recipe, const QString &format) {
            m_histogram->setRecipe(recipe, format);
            m_blocks->setRecipe(recipe, format);
            if (auto *dock = findChild<QDockWidget *>(QStringLiteral("histogramDock"))) {
                dock->show();
                dock->raise();
            }
        });
    }
    // No pair asked for: the one the comparison shows (an attempt double-clicked, a pair picked there), so that
    // the wizard answers for the pair on screen; a pair other than the wizard's starts it at its first step.
    if (!baseline.isValid() && !run.isValid() && m_compare->baseline().isValid() && m_compare->run().isValid()) {
        baseline = m_compare->baseline();
        run = m_compare->run();
    }
    if (baseline.isValid() && run.isValid() && (baseline != m_triage->baseline() || run != m_triage->run())) {
        m_triage->setPair(baseline, run);
        m_triage->setStep(TriageWizard::RunsStep);
    }
    m_triage->show();
    m_triage->raise();
    m_triage->activateWindow();
}

void MainWindow::tell(int notice)
{
    const LiveTriage::Notice &n = m_live->notices()[size_t(notice)];
    const bool critical = n.finding.severity == analysis::Severity::Critical;
    m_notice->showNotice(notice, n.text(), critical);
    if (!QSystemTrayIcon::isSystemTrayAvailable() || !QSystemTrayIcon::supportsMessages())
        return;
    if (!m_tray) {
        m_tray = new QSystemTrayIcon(windowIcon(), this);
        m_tray->setToolTip(QStringLiteral("fp8scope"));
        connect(m_tray, &QSystemTrayIcon::messageClicked, this, [this] {
            showNormal();
            raise();
            activateWindow();
            openNotice(m_notice->index());
        });
    }
    m_tray->show();
    m_tray->showMessage(tr("fp8scope: %1 finding in %2").arg(analysis::severityName(n.finding.severity), n.runName),
        n.text(), critical ? QSystemTrayIcon::Critical : QSystemTrayIcon::Warning, 15000);
}

void MainWindow::openNotice(int index)
{
    if (index < 0 || index >= int(m_live->notices().size()))
        return;
    const LiveTriage::Notice &n = m_live->notices()[size_t(index)];
    m_notice->hide();
    if (!m_workspace->run(n.run) || !m_workspace->run(n.baseline))
        return; // its folder was closed since
    if (!n.finding.layer.isEmpty())
        m_selection->set(n.run, n.finding.layer, n.finding.tensor, n.finding.step.value_or(m_selection->step()));
    showTriage(n.baseline, n.run);
    m_triage->setStep(n.finding.layer.isEmpty() ? TriageWizard::LossStep : TriageWizard::ClassStep);
}

void MainWindow::exportReport(RunRef baseline, RunRef run, QString path, bool letter)
{
    if (!baseline.isValid() || !run.isValid()) {
        if (m_triage && m_triage->run().isValid() && m_triage->baseline().isValid())
            std::tie(baseline, run) = std::pair(m_triage->baseline(), m_triage->run());
        else
            std::tie(baseline, run) = defaultPair(*m_workspace);
    }
    if (!baseline.isValid() || !run.isValid() || baseline == run) {
        QMessageBox::information(
            this, tr("Export Triage Report"), tr("Open a folder with a run and its baseline first."));
        return;
    }
    if (path.isEmpty()) {
        const WorkspaceRun *r = m_workspace->run(run);
        const QString a4 = tr("PDF, A4 (*.pdf)"), us = tr("PDF, Letter (*.pdf)");
        QString filter = QLocale::system().measurementSystem() == QLocale::ImperialUSSystem ? us : a4;
        const QString suggested
            = QDir(m_workspace->folders().value(0))
                  .filePath(QStringLiteral("triage-%1.pdf")
                                .arg(r ? r->run.name.section(QLatin1Char('/'), -1) : QStringLiteral("report")));
        path = QFileDialog::getSaveFileName(
            this, tr("Export Triage Report"), suggested, a4 + QStringLiteral(";;") + us, &filter);
        if (path.isEmpty())
            return;
        if (!path.endsWith(QLatin1String(".pdf"), Qt::CaseInsensitive))
            path += QStringLiteral(".pdf");
        letter = filter == us;
    }
    report::TriageReportOptions options;
    options.version = QApplication::applicationVersion();
    const Catalog &catalog = m_workspace->catalog();
    options.command = QStringLiteral("fp8scope-cli report %1 -o %2 --baseline %3 --run %4 --page-size %5")
                          .arg(catalog.run(run) ? catalog.run(run)->folder : QString(), path,
                              catalog.run(baseline) ? catalog.run(baseline)->name : QString(),
                              catalog.run(run) ? catalog.run(run)->name : QString(),
                              letter ? QStringLiteral("Letter") : QStringLiteral("A4"));
    statusBar()->showMessage(tr("Making the triage report..."));
    m_workspace->longQuery(
        QStringLiteral("report"),
        [baseline, run, options](const Catalog &c, MetricsBackend *backend, JobContext &ctx) -> QVariant {
            QString error;
            auto doc = report::buildTriageReport(
                c, baseline, run, backend, options, &error, [&ctx](int done, int total, const QString &what) {
                    ctx.setProgress(done, total, QObject::tr("Report: %1").arg(what));
                    return !ctx.isCancelled();
                });
            if (!doc) {
                ctx.setError(error);
                return {};
            }
            return QVariant::fromValue(*doc);
        },
        this,
        [this, path, letter](const QVariant &value, const QString &error) {
            const auto said = [this, path](const QString &why, int pages) {
                if (why.isEmpty())
                    statusBar()->showMessage(
                        tr("Triage report written to %1 (%n page(s))", nullptr, pages).arg(path), 10000);
                else
                    statusBar()->showMessage(tr("The triage report was not written: %1").arg(why), 10000);
                Q_EMIT reportExported(path, why);
            };
            if (!error.isEmpty()) {
                said(error, 0);
                return;
            }
            // The painting needs the plots, which live on this thread: page by page, the window drawn between
            // them (no input taken meanwhile); the file work after it (the bookmarks' rewrite, the file put in
            // place) goes to the job queue.
            QString why;
            RenderedReport rendered;
            PaintedReport painted;
            const bool ok = paintReport(value.value<report::Document>(), path,
                {letter ? QPageSize::Letter : QPageSize::A4}, &rendered, &painted, &why, [this](int page, int pages) {
                    statusBar()->showMessage(tr("Painting the triage report: page %1 of %2").arg(page).arg(pages));
                    QCoreApplication::processEvents(QEventLoop::ExcludeUserInputEvents);
                    return true;
                });
            if (!ok) {
                said(why, 0);
                return;
            }
            const int pages = rendered.pages;
            m_workspace->queries().submit({QString(), QStringLiteral("report-file"),
                                              [painted, path](JobContext &) -> QVariant {
                                                  QString error;
                                                  return finishReport(painted, path, &error) ? QString() : error;
                                              }},
                this, [said, pages](const JobResult &r) {
                    said(r.cancelled ? tr("cancelled") : !r.error.isEmpty() ? r.error : r.value.toString(), pages);
                });
        });
}

void MainWindow::askOpenFolder()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a run folder or a folder of runs"));
    if (!dir.isEmpty())
        openFolders({dir});
}

bool MainWindow::isStartPageShown() const
{
    return m_central->currentWidget() == m_startPage;
}

void MainWindow::showStartPage(bool on)
{
    if (on == isStartPageShown())
        return;
    if (on) {
        // The docks step aside, and come back as they were when a folder opens (the first time: as the last
        // session left them, or the default layout).
        if (m_shownViews)
            m_dockState = dockLayout();
        for (QDockWidget *dock : findChildren<QDockWidget *>())
            dock->hide();
        m_collapsedDocks.clear();
        m_focusedDocks.clear();
        m_focusMode = false;
        if (m_focusAction) {
            const QSignalBlocker block(m_focusAction);
            m_focusAction->setChecked(false);
        }
        m_compare->setFocusChecked(false);
        m_central->setCurrentWidget(m_startPage);
        updateRunActions();
    } else {
        m_central->setCurrentWidget(m_viewTabs);
        if (m_dockState.isEmpty() || !restoreState(m_dockState, AppSettings::kWindowStateVersion)) {
            for (QDockWidget *dock : findChildren<QDockWidget *>())
                dock->show();
            findChild<QDockWidget *>(QStringLiteral("heatmapDock"))->raise();
            m_layoutPending = !isVisible();
            if (isVisible())
                layoutDocks();
        }
        m_dockState.clear();
        m_shownViews = true;
    }
}

void MainWindow::updateRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = AppSettings().recentFolders();
    for (const QString &folder : recent)
        m_recentMenu->addAction(folder, this, [this, folder] { openFolders({folder}); });
    if (!recent.isEmpty()) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear"), this, [this] {
            AppSettings().clearRecentFolders();
            updateRecentMenu();
        });
    }
    m_recentMenu->setEnabled(!recent.isEmpty());
    m_startPage->setRecentFolders(recent);
}

QString MainWindow::folderToOpen(const QString &path)
{
    const QFileInfo info(path);
    if (info.isDir())
        return path;
    if (info.isFile()
        && (info.fileName() == QLatin1String("fp8scope.json")
            || info.fileName() == QLatin1String("fp8scope-workspace.json")))
        return info.absolutePath();
    return {};
}

void MainWindow::openFolders(const QStringList &folders)
{
    QStringList ok;
    for (const QString &f : folders) {
        const QString folder = folderToOpen(f);
        if (!folder.isEmpty())
            ok << folder;
        else
            statusBar()->showMessage(tr("%1 is not a folder").arg(f), 10000);
    }
    if (ok.isEmpty())
        return;
    AppSettings s;
    for (const QString &f : ok)
        s.addRecentFolder(QFileInfo(f).absoluteFilePath());
    updateRecentMenu();
    m_selection->clear();
    showStartPage(false);
    m_workspace->open(ok);
    updateTitle();
}

void MainWindow::addFolders(const QStringList &folders)
{
    QStringList all = m_workspace->folders();
    AppSettings s;
    for (const QString &f : folders) {
        const QString folder = folderToOpen(f);
        if (folder.isEmpty()) {
            statusBar()->showMessage(tr("%1 is not a folder").arg(f), 10000);
            continue;
        }
        const QString abs = QFileInfo(folder).absoluteFilePath();
        if (!all.contains(abs) && !all.contains(folder)) {
            all << abs;
            s.addRecentFolder(abs);
        }
    }
    updateRecentMenu();
    if (all == m_workspace->folders())
        return;
    showStartPage(false);
    reopenKeepingSelection(all);
}

void MainWindow::reopenKeepingSelection(const QStringList &folders)
{
    const WorkspaceRun *run = m_workspace->run(m_selection->run());
    const QString runName = run ? run->run.name : QString();
    const QString runFolder = run ? run->run.folder : QString();
    const QString layer = m_selection->layer(), tensor = m_selection->tensor();
    const qint64 step = m_selection->step();
    // Runs hidden stay hidden.
    QSet<QString> hidden;
    for (const WorkspaceRun &r : m_workspace->runs()) {
        if (!r.visible)
            hidden.insert(r.run.folder + QChar(0x1f) + r.run.name);
    }
    m_selection->clear();
    connect(
        m_workspace, &Workspace::loaded, this,
        [this, runName, runFolder, layer, tensor, step, hidden] {
            RunRef again;
            for (const WorkspaceRun &r : m_workspace->runs()) {
                if (r.run.name == runName && r.run.folder == runFolder)
                    again = r.run.ref;
                if (hidden.contains(r.run.folder + QChar(0x1f) + r.run.name))
                    m_workspace->setRunVisible(r.run.ref, false);
            }
            if (again.isValid())
                m_selection->set(again, layer, tensor, step);
        },
        Qt::SingleShotConnection);
    if (folders == m_workspace->folders())
        m_workspace->reload();
    else
        m_workspace->open(folders);
    updateTitle();
}

bool MainWindow::setRunSettings(RunRef ref, const RunManifest &settings, QString *error)
{
    const WorkspaceRun *run = m_workspace->run(ref);
    if (!run) {
        *error = tr("That run is no longer open.");
        return false;
    }
    const std::optional<ManifestPlace> place = runManifestPlace(run->run.folder, run->run.name, run->run.manifest,
        run->run.manifestKey, run->run.ownFolder, run->run.filesFolder);
    if (!place) {
        *error = tr("%1: nothing says which files are run %2's, so there is no manifest to write its settings in; "
                    "open the folder again (the store then knows).")
                     .arg(run->run.folder, run->run.name);
        return false;
    }
    if (!writeRunManifest(*place, settings, error))
        return false;
    reopenKeepingSelection(m_workspace->folders());
    return true;
}

bool MainWindow::setRunParent(RunRef ref, const QString &parent, QString *error)
{
    const WorkspaceRun *run = m_workspace->run(ref);
    const std::optional<ManifestPlace> place = run ? runManifestPlace(run->run.folder, run->run.name, run->run.manifest,
                                                   run->run.manifestKey, run->run.ownFolder, run->run.filesFolder)
                                                   : std::nullopt;
    if (!place) {
        *error = run ? tr("%1: nothing says which files are run %2's, so there is no manifest to name its parent in; "
                          "open the folder again (the store then knows).")
                           .arg(run->run.folder, run->run.name)
                     : tr("That run is no longer open.");
        return false;
    }
    if (!writeRunParent(*place, parent, error))
        return false;
    reopenKeepingSelection(m_workspace->folders());
    return true;
}

void MainWindow::editRunSettings(RunRef ref)
{
    const WorkspaceRun *run = m_workspace->run(ref);
    if (!run)
        return;
    QStringList baselines;
    for (const WorkspaceRun &r : m_workspace->runs()) {
        if (r.run.ref != ref)
            baselines << r.run.name;
    }
    const RunManifest current {run->run.displayName, run->run.precision, run->run.recipe, run->run.manifestBaseline,
        run->run.inferencePrecision, run->run.notes,
        run->run.lossGapBar ? QString::number(*run->run.lossGapBar, 'g', 6) : QString()};
    const std::optional<ManifestPlace> place = runManifestPlace(run->run.folder, run->run.name, run->run.manifest,
        run->run.manifestKey, run->run.ownFolder, run->run.filesFolder);
    RunSettingsDialog dialog(
        run->run.name, current, baselines, place ? place->file : QString(), place ? place->key : QString(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const QString name = run->run.name; // `run` does not outlive the folders read again
    QString error;
    if (!setRunSettings(ref, dialog.manifest(), &error))
        QMessageBox::warning(this, tr("Run Settings"), error);
    else if (place)
        statusBar()->showMessage(
            tr("The settings of %1 are saved in %2").arg(name, QDir::toNativeSeparators(place->file)), 10000);
}

void MainWindow::openDemo(const DemoOptions &options)
{
    // One folder per option set and demo version, so a cached pair always matches what was asked for.
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::CacheLocation)
        + QStringLiteral("/demo-v%4-seed%1-layers%2-steps%3")
              .arg(options.seed)
              .arg(options.layers)
              .arg(options.steps)
              .arg(kDemoVersion);
    m_selection->clear();
    showStartPage(false);
    m_workspace->openDemo(dir, options);
    updateTitle();
}

void MainWindow::updateTitle()
{
    QString what;
    if (m_workspace->isDemo()) {
        what = tr("demo (synthetic data)");
    } else {
        QStringList names;
        for (const QString &f : m_workspace->folders())
            names << QFileInfo(f).fileName();
        what = names.join(QStringLiteral(", "));
    }
    setWindowTitle(what.isEmpty() ? tr("fp8scope") : tr("%1 — fp8scope").arg(what));
}

void MainWindow::updateLayerPrecision()
{
    const RunRef run = m_selection->run().isValid() ? m_selection->run() : m_heatmap->run();
    if (!run.isValid()) {
        m_layerModel->setHighPrecision({});
        return;
    }
    m_workspace->query(
        QStringLiteral("layerTreePrecision"),
        [run](const Catalog &catalog) {
            const PrecisionMap map = precisionMap(catalog, run);
            QHash<QString, QString> bf16;
            for (const LayerPrecision &l : map.layers) {
                if (map.highPrecisionThroughout(l.layer)) {
                    const PrecisionSpan *s = map.at(l.layer, 0);
                    bf16.insert(l.layer, s ? s->source : QString());
                }
            }
            return QVariant::fromValue(bf16);
        },
        this, [this](const QVariant &v) { m_layerModel->setHighPrecision(v.value<QHash<QString, QString>>()); });
}

void MainWindow::onLoaded()
{
    bool paired = false;
    for (const WorkspaceRun &r : m_workspace->runs())
        paired = paired || r.pairing.baseline.isValid();
    // A pair is offered its triage; a run without one is offered its check on its own.
    m_triageOffer->setText(paired ? tr("Triage this pair...") : tr("Check this run..."));
    m_triageOffer->setToolTip(paired ? tr("A BF16 baseline and an FP8 run are open: walk through their triage")
                                     : tr("No baseline is open: check the run on its own (a blow-up, a sustained "
                                          "rise, spikes that never recover)"));
    m_triageOffer->setVisible(paired || m_workspace->runCount() > 0);
    std::vector<std::pair<QString, QStringList>> layers;
    for (const LayerTensors &l : m_workspace->layerTensors())
        layers.emplace_back(l.layer, l.tensors);
    m_layerModel->setLayers(layers);
    updateLayerPrecision();
    collapseEmptyDocks();
    // The plots stacked when the window last closed, once there are runs to draw them.
    if (!m_pendingStack.isEmpty() && m_workspace->runCount() > 0) {
        m_curveStack->setStackedStatistics(m_pendingStack);
        m_pendingStack.clear();
    }
    // Open the tree down to the first layer, so its siblings (the model's depth) are in view.
    QModelIndex first = m_layerProxy->index(0, 0);
    while (first.isValid()
        && m_layerModel->data(m_layerProxy->mapToSource(first), LayerTreeModel::LayerRole).toString().isEmpty()) {
        m_layerTree->expand(first);
        first = m_layerProxy->index(0, 0, first);
    }
    m_runTable->resizeColumnsToContents();
    // A long name takes what the panel leaves beside the precision column, elided, so precision stays in view
    // (a vertical scroll bar not shown yet may still take its share). The panel first grows, up to a fifth of
    // the window, to show the short labels whole: elided again, they might no longer tell the runs apart.
    const int scrollBar
        = m_runTable->verticalScrollBar()->isVisible() ? 0 : style()->pixelMetric(QStyle::PM_ScrollBarExtent);
    auto *runsDock = findChild<QDockWidget *>(QStringLiteral("runsDock"));
    const int wanted = m_runTable->columnWidth(RunListModel::NameColumn)
        + m_runTable->columnWidth(RunListModel::PrecisionColumn) + scrollBar + 2 * m_runTable->frameWidth() + 8;
    if (runsDock && !runsDock->isHidden() && !runsDock->isFloating() && wanted > m_runTable->viewport()->width()
        && isVisible()) {
        resizeDocks({runsDock}, {std::min(wanted, width() / 5)}, Qt::Horizontal);
        // The table's new width, for the cap below: the window's layout request only (no other queued event,
        // a job's result among them, is delivered in the middle of this).
        QCoreApplication::sendPostedEvents(this, QEvent::LayoutRequest);
    }
    const int nameCap = std::max(
        90, m_runTable->viewport()->width() - m_runTable->columnWidth(RunListModel::PrecisionColumn) - scrollBar);
    if (m_runTable->columnWidth(RunListModel::NameColumn) > nameCap)
        m_runTable->setColumnWidth(RunListModel::NameColumn, nameCap);
    const auto failures = std::count_if(m_workspace->problems().begin(), m_workspace->problems().end(),
        [](const ProblemEntry &p) { return !p.skipped; });
    if (failures > 0)
        statusBar()->showMessage(tr("%n import problem(s): see the Problems panel", nullptr, int(failures)), 15000);
    if (!m_selection->run().isValid() && m_workspace->runCount() > 0)
        m_selection->setRun(m_heatmap->run().isValid() ? m_heatmap->run() : m_workspace->runAt(0));
    // Runs with per-layer statistics only (TE's debug statistics, no loss logged): the curves open on the first
    // layer's tensor rather than on a request to choose one.
    const auto statistics = m_curves->source()->statistics();
    const bool runLevel = std::any_of(
        statistics.begin(), statistics.end(), [](const CurveSource::Statistic &st) { return !st.tensorLevel; });
    if (!runLevel && m_selection->layer().isEmpty() && !m_workspace->layerTensors().empty()) {
        const LayerTensors &first = m_workspace->layerTensors().front();
        if (!first.tensors.isEmpty()) {
            m_selection->setLayer(first.layer);
            m_selection->setTensor(first.tensors.contains(QStringLiteral("activation")) ? QStringLiteral("activation")
                                                                                        : first.tensors.front());
        }
    }
    updateTitle();
    updateRunActions();
    // Ready once the heatmap's matrix has arrived from the query thread too.
    auto emitReady = [this] { QTimer::singleShot(0, this, [this] { Q_EMIT ready(); }); };
    if (m_heatmap->isLoading())
        connect(m_heatmap, &HeatmapView::heatmapChanged, this, emitReady, Qt::SingleShotConnection);
    else
        emitReady();
}

void MainWindow::onTreeCurrentChanged()
{
    if (m_syncingTree)
        return;
    const QModelIndex index = m_layerProxy->mapToSource(m_layerTree->currentIndex());
    const QString layer = m_layerModel->data(index, LayerTreeModel::LayerRole).toString();
    if (layer.isEmpty())
        return;
    QString tensor = m_layerModel->data(index, LayerTreeModel::TensorRole).toString();
    if (tensor.isEmpty()) {
        // A layer: keep the tensor kind in view when this layer has it, else its first.
        tensor = m_selection->tensor();
        if (!m_layerModel->find(layer, tensor).isValid()) {
            const QModelIndex firstTensor = m_layerModel->index(0, 0, index);
            tensor = m_layerModel->data(firstTensor, LayerTreeModel::TensorRole).toString();
        }
    }
    const RunRef run = m_selection->run().isValid() ? m_selection->run() : m_workspace->runAt(0);
    m_selection->set(run, layer, tensor, m_selection->step());
}

void MainWindow::syncTreeToSelection()
{
    const QModelIndex source = m_layerModel->find(m_selection->layer(), m_selection->tensor());
    const QModelIndex proxy = m_layerProxy->mapFromSource(source);
    if (!proxy.isValid() || proxy == m_layerTree->currentIndex())
        return;
    m_syncingTree = true;
    m_layerTree->setCurrentIndex(proxy);
    m_layerTree->scrollTo(proxy);
    m_syncingTree = false;
    const int row = m_workspace->indexOf(m_selection->run());
    if (row >= 0 && m_runTable->currentIndex().row() != row)
        m_runTable->selectRow(row);
}

void MainWindow::showProblemLine(const QModelIndex &index)
{
    const QString path = index.data(ProblemsModel::PathRole).toString();
    const qint64 line = index.data(ProblemsModel::LineRole).toLongLong();
    const qint64 offset = index.data(ProblemsModel::OffsetRole).toLongLong();
    // A log can be gigabytes: read up to the line off the GUI thread, on the query queue (the job queue may
    // be busy recomputing).
    m_workspace->queries().submit(
        {QString(), QStringLiteral("problemLine"),
            [path, line, offset](JobContext &) -> QVariant { return problemContext(path, line, offset); }},
        this, [this, path](const JobResult &r) {
            auto *dialog = new QDialog(this);
            dialog->setObjectName(QStringLiteral("problemLineDialog"));
            dialog->setAttribute(Qt::WA_DeleteOnClose);
            dialog->setWindowTitle(QFileInfo(path).fileName());
            auto *layout = new QVBoxLayout(dialog);
            layout->addWidget(new QLabel(path, dialog));
            auto *text = new QPlainTextEdit(r.value.toString(), dialog);
            text->setObjectName(QStringLiteral("problemLineText"));
            text->setReadOnly(true);
            text->setLineWrapMode(QPlainTextEdit::NoWrap);
            text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
            layout->addWidget(text);
            auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
            connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
            layout->addWidget(buttons);
            dialog->resize(800, 240);
            dialog->show();
        });
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    saveSettings();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent *event)
{
    for (const QUrl &url : event->mimeData()->urls()) {
        if (url.isLocalFile() && !folderToOpen(url.toLocalFile()).isEmpty()) {
            event->acceptProposedAction();
            return;
        }
    }
}

void MainWindow::dropEvent(QDropEvent *event)
{
    QStringList folders;
    for (const QUrl &url : event->mimeData()->urls()) {
        if (url.isLocalFile() && !folderToOpen(url.toLocalFile()).isEmpty())
            folders << folderToOpen(url.toLocalFile());
    }
    if (!folders.isEmpty()) {
        event->acceptProposedAction();
        openFolders(folders);
    }
}

} // namespace fp8scope
