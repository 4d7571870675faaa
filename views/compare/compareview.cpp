#include "compareview.h"

#include "auditchart.h"
#include "comparesources.h"
#include "departuremark.h"
#include "evalchart.h"
#include "layerdifference.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapsource.h"
#include "views/heatmap/heatmapview.h"
#include "views/models/tableexport.h"
#include "views/plotting/axisalign.h"
#include "views/plotting/qcp.h"
#include "views/workspace/pairpickers.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDataStream>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <set>

namespace fp8scope {

namespace {

enum FindingRole { RunRole = Qt::UserRole + 1, LayerRole, TensorRole, StepRole };
constexpr int kDiffersRole = Qt::UserRole + 1;

QTableView *makeTable(const QString &name, QAbstractItemModel *model, QWidget *parent)
{
    QTableView *t = newTableView(name, parent);
    t->setModel(model);
    return t;
}

QStandardItem *item(const QString &text)
{
    return textItem(text);
}

QStandardItem *number(double v)
{
    return numberItem(v);
}

} // namespace

CompareView::CompareView(Workspace *workspace, Selection *selection, QWidget *parent)
    : QWidget(parent)
    , m_workspace(workspace)
    , m_selection(selection)
    , m_slot(Workspace::newSlot(QStringLiteral("compare")))
    , m_baselineBox(new QComboBox(this))
    , m_runBox(new QComboBox(this))
    , m_statBox(new QComboBox(this))
    , m_status(new QLabel(this))
    , m_splitter(new QSplitter(Qt::Horizontal, this))
    , m_plots(new QSplitter(Qt::Vertical, this))
    , m_pairSource(new PairCurveSource(workspace, this))
    , m_differenceSource(new DifferenceCurveSource(workspace, this))
    , m_overlay(new CurveView(m_pairSource, selection, this))
    , m_difference(new CurveView(m_differenceSource, selection, this))
    , m_tabs(new QTabWidget(this))
    , m_findingsModel(new QStandardItemModel(this))
    , m_evalModel(new QStandardItemModel(this))
    , m_auditModel(new QStandardItemModel(this))
    , m_auditTitle(new QLabel(this))
    , m_auditChart(new AuditChart(this))
    , m_configModel(new QStandardItemModel(this))
    , m_configFilter(new QSortFilterProxyModel(this))
    , m_identical(new QCheckBox(tr("Show identical keys"), this))
    , m_evalChart(new EvalChart(this))
    , m_baseSource(new SingleRunHeatmapSource(workspace, this))
    , m_runSource(new SingleRunHeatmapSource(workspace, this))
    , m_baseHeat(new HeatmapView(m_baseSource, selection, this))
    , m_runHeat(new HeatmapView(m_runSource, selection, this))
    , m_diffSource(new LayerDifferenceSource(workspace, this))
    , m_diffHeat(new HeatmapView(m_diffSource, selection, this))
    , m_layerMode(new QComboBox(this))
{
    setObjectName(QStringLiteral("compareView"));
    m_baselineBox->setObjectName(QStringLiteral("compareBaseline"));
    m_runBox->setObjectName(QStringLiteral("compareRun"));
    m_statBox->setObjectName(QStringLiteral("compareStatistic"));
    m_status->setObjectName(QStringLiteral("compareStatus"));
    m_status->setWordWrap(true);
    for (QComboBox *box : {m_baselineBox, m_runBox}) {
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        box->setMinimumContentsLength(14);
    }
    auto *pickers = new QHBoxLayout;
    pickers->addWidget(new QLabel(tr("Baseline"), this));
    pickers->addWidget(m_baselineBox);
    pickers->addWidget(new QLabel(tr("Run"), this));
    pickers->addWidget(m_runBox);
    pickers->addWidget(m_statBox);
    pickers->addStretch(1);
    setUpTables();
    pickers->addWidget(m_focusButton);
    setUpLayers();

    // A narrow screen gives the plots the width; the tables can be dragged wider.
    m_tabs->setMinimumWidth(160);
    m_difference->setMinimumHeight(60);
    m_overlay->setMinimumHeight(90);
    // The plots one above the other with the whole height (a laptop's is short), the tables beside them.
    m_plots->setObjectName(QStringLiteral("comparePlots"));
    m_plots->addWidget(m_overlay);
    m_plots->addWidget(m_difference);
    // A step at one pixel in both: their axes share both edges.
    auto *xGroup = new XAxisGroup(this);
    xGroup->add(m_overlay->plot());
    xGroup->add(m_difference->plot());
    m_splitter->setObjectName(QStringLiteral("compareSplitter"));
    m_splitter->addWidget(m_plots);
    m_splitter->addWidget(m_tabs);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addLayout(pickers);
    layout->addWidget(m_status); // the verdict and the departure, on a line of its own
    layout->addWidget(m_splitter, 1);
    setUpPlots();

    // A pair picked by hand: the statistics both have, then the comparison.
    connect(m_baselineBox, &QComboBox::currentIndexChanged, this, [this] { setPair(baseline(), run()); });
    connect(m_runBox, &QComboBox::currentIndexChanged, this, [this] { setPair(baseline(), run()); });
    connect(m_statBox, &QComboBox::currentIndexChanged, this, &CompareView::recompute);
    connect(m_identical, &QCheckBox::toggled, this,
        [this](bool all) { m_configFilter->setFilterFixedString(all ? QString() : QStringLiteral("1")); });
    connect(m_findings, &QTableView::clicked, this, &CompareView::selectFinding);
    connect(m_findings, &QTableView::activated, this, &CompareView::selectFinding);
    const auto forget = [this] {
        m_cache.clear();
        m_runStatistics.clear();
    };
    connect(workspace, &Workspace::changed, this, [this, forget](Workspace::Parts parts) {
        // A recompute stores new statistics: the comparisons that read them are stale.
        if (parts & (Workspace::Loaded | Workspace::Closed | Workspace::Statistics))
            forget();
        if (parts & (Workspace::Loaded | Workspace::Closed))
            fillPickers();
    });
    fillPickers();
}

// The overlay of the pair and the difference strip beneath: one statistic picked above both, one x axis,
// the departure marked on each.
void CompareView::setUpPlots()
{
    m_overlay->setObjectName(QStringLiteral("compareOverlay"));
    m_difference->setObjectName(QStringLiteral("compareDifference"));
    // The statistic is picked above both; the strip follows the overlay's axis and shows the difference as
    // it is (no smoothing: the band is judged on a running median of the raw difference).
    m_overlay->setStatisticPickerVisible(false);
    m_difference->controlBar()->hide();
    m_difference->setSmoothing(Smoothing::None, 0);
    // The departure on both plots: a line at its step, its interval shaded.
    m_marks[0] = new DepartureMark(m_overlay);
    m_marks[1] = new DepartureMark(m_difference);
    // One x axis for both plots.
    const auto sync = [this](CurveView *from, CurveView *to) {
        connect(from->plot()->xAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this,
            [this, to](const QCPRange &r) {
                if (m_syncingRange || to->plot()->xAxis->range() == r)
                    return;
                m_syncingRange = true;
                to->plot()->xAxis->setRange(r);
                to->plot()->replot(QCustomPlot::rpQueuedReplot);
                m_syncingRange = false;
            });
    };
    sync(m_overlay, m_difference);
    sync(m_difference, m_overlay);
    if (auto *axis = m_overlay->findChild<QComboBox *>(QStringLiteral("curveXAxis")))
        connect(axis, &QComboBox::currentIndexChanged, this,
            [this](int i) { m_difference->setXAxis(CurveView::XAxis(std::clamp(i, 0, 2))); });
}

// The Findings, Evals and Config tabs: tables that copy and export, the scores also as bars.
void CompareView::setUpTables()
{
    m_findings = makeTable(QStringLiteral("compareFindings"), m_findingsModel, this);
    m_evals = makeTable(QStringLiteral("compareEvals"), m_evalModel, this);
    m_configFilter->setSourceModel(m_configModel);
    m_configFilter->setFilterRole(kDiffersRole);
    m_configFilter->setFilterFixedString(QStringLiteral("1"));
    m_config = makeTable(QStringLiteral("compareConfig"), m_configFilter, this);
    m_identical->setObjectName(QStringLiteral("compareIdentical"));
    auto *configPane = new QWidget(this);
    auto *configLayout = new QVBoxLayout(configPane);
    configLayout->setContentsMargins(0, 0, 0, 0);
    configLayout->addWidget(m_identical);
    configLayout->addWidget(m_config);
    addTableActions(m_findings, tr("findings.csv"));
    addTableActions(m_evals, tr("evaluations.csv"));
    addTableActions(m_config, tr("config.csv"));
    m_tabs->addTab(m_findings, tr("Findings"));
    // The scores as a table and, beneath, as bars with their standard errors.
    auto *evalPane = new QSplitter(Qt::Vertical, this);
    evalPane->setObjectName(QStringLiteral("compareEvalPane"));
    evalPane->addWidget(m_evals);
    // The chart as tall as its tasks need, scrolled where the pane is shorter.
    auto *evalScroll = new QScrollArea(this);
    evalScroll->setObjectName(QStringLiteral("compareEvalScroll"));
    evalScroll->setWidgetResizable(true);
    evalScroll->setFrameShape(QFrame::NoFrame);
    evalScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    evalScroll->setWidget(m_evalChart);
    evalPane->addWidget(evalScroll);
    // Beneath them, the audit of the inference checkpoint the run's folder holds (docs/TRIAGE.md): a layer a row,
    // its scale, its error against a reference and what was found; a click selects the layer.
    m_auditTable = makeTable(QStringLiteral("compareAudit"), m_auditModel, this);
    addTableActions(m_auditTable, tr("checkpoint-audit.csv"));
    m_auditTitle->setObjectName(QStringLiteral("compareAuditTitle"));
    m_auditTitle->setWordWrap(true);
    // Beside the table, its layers as a plot (weight error, scale ratio, weight amax).
    auto *auditSplit = new QSplitter(Qt::Horizontal, this);
    auditSplit->setObjectName(QStringLiteral("compareAuditSplit"));
    auditSplit->addWidget(m_auditTable);
    auditSplit->addWidget(m_auditChart);
    auditSplit->setStretchFactor(0, 1);
    auditSplit->setStretchFactor(1, 1);
    auto *auditPane = new QWidget(this);
    auto *auditLayout = new QVBoxLayout(auditPane);
    auditLayout->setContentsMargins(0, 0, 0, 0);
    auditLayout->addWidget(m_auditTitle);
    auditLayout->addWidget(auditSplit, 1);
    evalPane->addWidget(auditPane);
    // The audit's table gets the room: a checkpoint has a row a linear layer.
    evalPane->setStretchFactor(0, 2);
    evalPane->setStretchFactor(1, 2);
    evalPane->setStretchFactor(2, 3);
    // Each part keeps what it needs to be read (a few rows, the legend and two tasks' bars, the audit's table
    // beside its chart); a tab shorter or narrower than that scrolls, never squeezes them.
    evalPane->setChildrenCollapsible(false);
    m_evals->setMinimumHeight(90);
    evalScroll->setMinimumHeight(150);
    auditPane->setMinimumHeight(200);
    m_auditTable->setMinimumWidth(200);
    m_auditChart->setMinimumWidth(260);
    auto *evalTab = new QScrollArea(this);
    evalTab->setObjectName(QStringLiteral("compareEvalTab"));
    evalTab->setWidgetResizable(true);
    evalTab->setFrameShape(QFrame::NoFrame);
    evalTab->setWidget(evalPane);
    connect(m_auditTable, &QTableView::clicked, this,
        [this](const QModelIndex &index) { selectAuditLayer(m_auditModel->index(index.row(), 0).data().toString()); });
    connect(m_auditChart, &AuditChart::layerClicked, this, &CompareView::selectAuditLayer);
    // At the end of the pickers' row: the window's focus (View > Focus on the Tab), one state with it.
    m_focusButton = new QToolButton(this);
    m_focusButton->setObjectName(QStringLiteral("compareFocus"));
    m_focusButton->setText(tr("Focus"));
    m_focusButton->setCheckable(true);
    m_focusButton->setAutoRaise(true);
    m_focusButton->setToolTip(
        tr("Give the comparison the whole window (the panels step aside; View > Focus on the Tab, Ctrl+Shift+F); "
           "again to give it back"));
    connect(m_focusButton, &QToolButton::toggled, this, &CompareView::focusRequested);
    m_tabs->addTab(evalTab, tr("Evals"));
    m_tabs->addTab(configPane, tr("Config"));
    // The maps and the charts need room the lists do not: their tabs take 55 % of the width when chosen (as far
    // as the plots' least width allows; the Focus button gives them everything).
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int index) {
        if (index != kEvalsTab && index != kLayersTab)
            return;
        const QList<int> sizes = m_splitter->sizes();
        const int total = sizes.value(0) + sizes.value(1);
        if (sizes.size() == 2 && total > 0 && sizes[1] < total * 55 / 100)
            m_splitter->setSizes({total - total * 55 / 100, total * 55 / 100});
    });
    m_tabs->setTabToolTip(1, tr("Evaluation scores of both runs, the gap against its standard error"));
    m_tabs->setTabToolTip(2, tr("Config keys and package versions of both runs"));
}

// The Layers tab: the two runs' per-layer statistic side by side on one colour scale, or their difference
// or ratio as one map; a statistic picked in one map is shown in the others.
void CompareView::setUpLayers()
{
    // The two runs' layers, one above the other on one colour scale, or their difference or ratio as one.
    m_baseHeat->setObjectName(QStringLiteral("compareBaselineHeatmap"));
    m_runHeat->setObjectName(QStringLiteral("compareRunHeatmap"));
    m_diffHeat->setObjectName(QStringLiteral("compareDifferenceHeatmap"));
    m_layerMode->setObjectName(QStringLiteral("compareLayerMode"));
    m_layerMode->addItem(tr("Side by side"));
    m_layerMode->addItem(tr("Difference (run − baseline)"));
    m_layerMode->addItem(tr("Ratio (run / baseline)"));
    m_layerMode->setToolTip(tr("The two runs' statistic one above the other on one colour scale, or cell by "
                               "cell their difference or ratio (the layers both have, at steps both logged)"));
    auto *layers = new QSplitter(Qt::Vertical, this);
    layers->setObjectName(QStringLiteral("compareLayers"));
    layers->addWidget(m_baseHeat);
    layers->addWidget(m_runHeat);
    // One step at one pixel in both maps: their axes share both edges (their layer names differ in width).
    auto *mapGroup = new XAxisGroup(this);
    for (HeatmapView *map : {m_baseHeat, m_runHeat})
        mapGroup->add(map->plot());
    layers->addWidget(m_diffHeat);
    m_diffHeat->hide();
    auto *layerPane = new QWidget(this);
    auto *layerLayout = new QVBoxLayout(layerPane);
    layerLayout->setContentsMargins(0, 0, 0, 0);
    auto *modeRow = new QHBoxLayout;
    modeRow->addWidget(new QLabel(tr("Show"), layerPane));
    modeRow->addWidget(m_layerMode, 1);
    layerLayout->addLayout(modeRow);
    layerLayout->addWidget(layers, 1);
    m_tabs->addTab(layerPane, tr("Layers"));
    m_tabs->setTabToolTip(3,
        tr("The baseline's and the run's per-layer statistic on one colour scale, or their difference or ratio; "
           "the suspect layers marked"));
    connect(m_layerMode, &QComboBox::currentIndexChanged, this, [this](int i) {
        const bool one = i != 0;
        m_baseHeat->setVisible(!one);
        m_runHeat->setVisible(!one);
        m_diffHeat->setVisible(one);
        if (one) {
            m_diffSource->setCombination(i == 1 ? LayerCombination::Difference : LayerCombination::Ratio);
            m_diffHeat->setDiverging(true, i == 1 ? 0.0 : 1.0);
            // The run picker's label names the combination.
            Q_EMIT m_diffSource->runsChanged();
        }
    });
    // The statistic a user picks in one layer view is shown in the others (where they have it).
    for (HeatmapView *from : {m_baseHeat, m_runHeat, m_diffHeat}) {
        for (const char *name : {"heatmapStatistic", "heatmapTensor"}) {
            auto *box = from->findChild<QComboBox *>(QLatin1String(name));
            if (!box)
                continue;
            connect(box, &QComboBox::activated, this, [this, from] {
                for (HeatmapView *to : {m_baseHeat, m_runHeat, m_diffHeat}) {
                    if (to == from)
                        continue;
                    to->setTensor(from->tensor());
                    to->setStatistic(from->statistic());
                }
            });
        }
    }
    connect(m_baseHeat, &HeatmapView::heatmapChanged, this, &CompareView::shareColourScale);
    connect(m_runHeat, &HeatmapView::heatmapChanged, this, &CompareView::shareColourScale);
}

CompareView::~CompareView() = default;

void CompareView::fillPickers()
{
    PairPickers {m_baselineBox, m_runBox}.fill(*m_workspace);
    setPair({}, {});
}

void CompareView::setPair(RunRef baseline, RunRef run)
{
    std::tie(baseline, run) = PairPickers {m_baselineBox, m_runBox}.show(*m_workspace, baseline, run);
    // The statistics both runs have.
    const QString was = statistic();
    {
        const QSignalBlocker block(m_statBox);
        m_statBox->clear();
        if (baseline.isValid() && run.isValid()) {
            const std::vector<QString> &inRun = runStatistics(run);
            const std::vector<QString> &inBaseline = runStatistics(baseline);
            for (const QString &s : inRun) {
                if (std::binary_search(inBaseline.begin(), inBaseline.end(), s))
                    m_statBox->addItem(s);
            }
        }
        int i = m_statBox->findText(was.isEmpty() ? m_wantedStatistic : was);
        if (i < 0)
            i = m_statBox->findText(m_wantedStatistic);
        if (i < 0)
            i = m_statBox->findText(QStringLiteral("lm loss"));
        m_statBox->setCurrentIndex(std::max(i, m_statBox->count() > 0 ? 0 : -1));
    }
    recompute();
}

const std::vector<QString> &CompareView::runStatistics(RunRef run)
{
    const auto cached = m_runStatistics.find(run);
    if (cached != m_runStatistics.end())
        return cached->second;
    std::vector<QString> &names = m_runStatistics[run];
    for (const StatisticInfo &s : m_workspace->catalog().runStatistics(run))
        names.push_back(s.stat);
    std::sort(names.begin(), names.end());
    return names;
}

QByteArray CompareView::saveState() const
{
    QByteArray out;
    QDataStream s(&out, QIODevice::WriteOnly);
    s << qint32(2) << m_splitter->saveState() << m_plots->saveState() << statistic() << qint32(layerMode());
    return out;
}

void CompareView::restoreState(const QByteArray &state)
{
    QDataStream s(state);
    qint32 version = 0;
    QByteArray outer, plots;
    QString stat;
    qint32 mode = 0;
    s >> version >> outer >> plots >> stat;
    if (version >= 2)
        s >> mode;
    if (s.status() != QDataStream::Ok || version < 1 || version > 2)
        return; // another layout's, or none: the default shares
    if (mode >= 0 && mode <= int(LayerMode::Ratio))
        setLayerMode(LayerMode(mode));
    m_sized = m_splitter->restoreState(outer) && m_plots->restoreState(plots);
    m_wantedStatistic = stat;
    setStatistic(stat);
}

RunRef CompareView::baseline() const
{
    return m_baselineBox->currentData().value<RunRef>();
}

RunRef CompareView::run() const
{
    return m_runBox->currentData().value<RunRef>();
}

void CompareView::setStatistic(const QString &stat)
{
    const int i = m_statBox->findText(stat);
    if (i >= 0)
        m_statBox->setCurrentIndex(i);
}

QString CompareView::statistic() const
{
    return m_statBox->currentText();
}

void CompareView::recompute()
{
    const RunRef b = baseline(), r = run();
    if (!b.isValid() || !r.isValid() || b == r) {
        if (m_ticket)
            m_workspace->queries().cancel(m_ticket);
        m_ticket = 0;
        display(nullptr);
        m_status->setText(
            m_workspace->runCount() < 2 ? tr("Open two runs to compare them.") : tr("Choose two different runs."));
        return;
    }
    // Computed when seen: a folder opening does not queue a comparison nobody looks at before the heatmap.
    if (!isVisible()) {
        m_stale = true;
        return;
    }
    m_stale = false;
    const QString stat = statistic();
    if (const auto cached = m_cache.find({b, r, stat}); cached != m_cache.end()) {
        if (m_ticket)
            m_workspace->queries().cancel(m_ticket);
        m_ticket = 0;
        display(cached->second);
        return;
    }
    m_status->setText(tr("Comparing..."));
    m_ticket = m_workspace->query(
        m_slot,
        [b, r, stat](const Catalog &catalog) { return QVariant::fromValue(computeComparison(catalog, b, r, stat)); },
        this,
        [this, b, r, stat](const QVariant &value) {
            m_ticket = 0;
            auto data = std::make_shared<const ComparisonData>(value.value<ComparisonData>());
            m_cache[{b, r, stat}] = data;
            display(data);
        });
}

void CompareView::display(std::shared_ptr<const ComparisonData> data)
{
    m_data = std::move(data);
    m_pairSource->setComparison(m_data);
    m_differenceSource->setComparison(m_data);
    m_overlay->setStatistic(statistic());
    m_difference->setStatistic(statistic());

    m_findingsModel->clear();
    m_findingsModel->setHorizontalHeaderLabels({tr("Severity"), tr("Finding"), tr("Layer"), tr("Step"), tr("Summary")});
    m_evalModel->clear();
    m_evalModel->setHorizontalHeaderLabels({tr("Task"), tr("Metric"), tr("Inference"), tr("Baseline"), tr("Run"),
        tr("Difference"), tr("Std. error"), tr("z"), tr("Significant")});
    m_configModel->clear();
    m_configModel->setHorizontalHeaderLabels({tr("Key"), tr("Baseline"), tr("Run"), tr("Class")});
    fillAudit();
    if (!m_data) {
        m_evalChart->setRows({}, QString(), QString(), QColor());
        updateMarkers();
        Q_EMIT comparisonChanged();
        return;
    }
    for (const analysis::Finding &f : m_data->comparison.findings) {
        QList<QStandardItem *> row {item(analysis::severityName(f.severity)), item(analysis::findingKindName(f.kind)),
            item(f.layer), item(f.step ? QString::number(*f.step) : QString()),
            item(m_workspace->inRunNames(f.summary))};
        row.front()->setData(QVariant::fromValue(m_data->run), RunRole);
        row.front()->setData(f.layer, LayerRole);
        row.front()->setData(f.tensor, TensorRole);
        row.front()->setData(f.step ? QVariant(qint64(*f.step)) : QVariant(), StepRole);
        // On hover: the cell's own text whole (a layer's name is cut first), then what the finding says.
        const QString says = m_workspace->inRunNames(
            f.suggestion.isEmpty() ? f.summary : f.summary + QLatin1Char('\n') + f.suggestion);
        for (QStandardItem *i : row) {
            const QString own = i->text();
            i->setToolTip(own.isEmpty() || i == row.back() ? says : own + QStringLiteral("\n\n") + says);
        }
        m_findingsModel->appendRow(row);
    }
    for (const analysis::EvalRow &e : m_data->evals) {
        QList<QStandardItem *> row {item(e.task), item(e.metric), item(e.inference), number(e.baseline), number(e.run),
            number(e.difference), number(e.standardError), number(e.z),
            item(e.significant ? tr("yes: %1 standard errors below").arg(-e.z, 0, 'f', 1) : QString())};
        if (e.significant) {
            for (QStandardItem *i : row)
                i->setForeground(QColor(200, 30, 0));
        }
        m_evalModel->appendRow(row);
    }
    m_evalChart->setRows(m_data->evals, m_workspace->runName(m_data->baseline), m_workspace->runName(m_data->run),
        m_workspace->run(m_data->run) ? m_workspace->run(m_data->run)->colour : QColor(Qt::darkBlue));
    for (const analysis::ConfigRow &c : m_data->config.rows) {
        QList<QStandardItem *> row {item(c.version ? tr("%1 (version)").arg(c.key) : c.key), item(c.baseline),
            item(c.run), item(c.differs ? analysis::keyClassName(c.keyClass) : tr("identical"))};
        row.front()->setData(c.differs ? QStringLiteral("1") : QStringLiteral("0"), kDiffersRole);
        m_configModel->appendRow(row);
    }
    for (QTableView *t : {m_findings, m_evals, m_config})
        t->resizeColumnsToContents();
    // The layer view: both runs on the first suspect's statistic (or one both have), the suspects flagged with
    // their onsets.
    m_baseSource->setRun(m_data->baseline);
    m_runSource->setRun(m_data->run);
    m_diffSource->setPair(m_data->baseline, m_data->run);
    std::vector<std::pair<QString, QString>> suspects;
    const analysis::Finding *first = nullptr;
    for (const analysis::Finding &f : m_data->comparison.suspects) {
        if (!first)
            first = &f;
        if (f.stat == first->stat && f.tensor == first->tensor)
            suspects.emplace_back(f.layer, f.step ? tr("onset %1").arg(*f.step) : QString());
    }
    const auto [layerStat, layerTensor] = layerStatistic();
    for (HeatmapView *h : {m_baseHeat, m_runHeat, m_diffHeat}) {
        if (!layerStat.isEmpty()) {
            h->setTensor(layerTensor);
            h->setStatistic(layerStat);
        }
    }
    m_runHeat->setFlaggedLayers(suspects);
    m_diffHeat->setFlaggedLayers(suspects);
    m_baseHeat->setFlaggedLayers({});
    const analysis::Comparison &c = m_data->comparison;
    QString status = tr("Verdict: %1").arg(analysis::verdictName(c.verdict));
    // The caveat the wizard's first step states, here too: one pair, one answer.
    if (c.comparability.level == analysis::ComparabilityLevel::WithCare) {
        QStringList aspects;
        for (const analysis::ComparabilityRow &r : c.comparability.rows) {
            if (!r.aspect.isEmpty() && !aspects.contains(r.aspect))
                aspects << r.aspect;
        }
        status += tr(" (compared with care: the runs differ in %1)").arg(aspects.join(QStringLiteral(", ")));
    }
    const analysis::Finding *blowUp = nullptr, *firstNonFinite = nullptr;
    for (const analysis::Finding &f : c.findings) {
        if (f.kind == analysis::FindingKind::RunBlowUp && f.step && !blowUp)
            blowUp = &f;
        if (f.kind == analysis::FindingKind::FirstNonFinite && f.step && !firstNonFinite)
            firstNonFinite = &f;
    }
    const bool loss = m_data->stat == QLatin1String("lm loss");
    if (loss && blowUp && (!m_data->statistic.departure.step || *blowUp->step < *m_data->statistic.departure.step)) {
        // A blow-up is no band question: the loss stops being a number (its points are marks, not values).
        status += tr("; the run blows up at step %1: its loss is not a number from there to the end of its log")
                      .arg(*blowUp->step);
        if (firstNonFinite)
            status += tr("; the first non-finite value: %1 at step %2")
                          .arg(firstNonFinite->layer.isEmpty()
                                  ? firstNonFinite->stat
                                  : QStringLiteral("%1 %2 %3")
                                        .arg(firstNonFinite->layer, firstNonFinite->tensor, firstNonFinite->stat))
                          .arg(*firstNonFinite->step);
    } else if (m_data->statistic.departure.step)
        status += tr("; %1 departs at step %2 (between %3 and %4)")
                      .arg(m_data->stat)
                      .arg(*m_data->statistic.departure.step)
                      .arg(m_data->statistic.departure.low)
                      .arg(m_data->statistic.departure.high);
    else if (m_data->statistic.found)
        status += tr("; %1 stays within the baseline's band").arg(m_data->stat);
    else
        status += tr("; %1 is not in both runs").arg(m_data->stat);
    m_status->setText(status);
    m_status->setToolTip(c.comparability.text);
    updateMarkers();
    Q_EMIT comparisonChanged();
}

void CompareView::updateMarkers()
{
    for (DepartureMark *m : m_marks)
        m->setComparison(m_data);
}

void CompareView::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (!m_sized) {
        // Once laid out: 60 % of the height the overlay, the rest the difference; 55 % of the width the plots,
        // the rest the tables (their size hints would take more). The user's drags hold from then on.
        m_sized = true;
        QTimer::singleShot(0, this, [this] {
            const int h = m_plots->height(), w = m_splitter->width();
            m_plots->setSizes({h * 60 / 100, h - h * 60 / 100});
            m_splitter->setSizes({w * 55 / 100, w - w * 55 / 100});
        });
    }
    if (m_stale)
        recompute();
}

void CompareView::setFocusChecked(bool on)
{
    const QSignalBlocker block(m_focusButton);
    m_focusButton->setChecked(on);
}

double CompareView::departureMarkerX() const
{
    return m_marks[0]->x();
}

QString CompareView::status() const
{
    return m_status->text();
}

void CompareView::shareColourScale()
{
    // One scale when both show the same statistic of the same tensor kind.
    const bool same = m_baseHeat->statistic() == m_runHeat->statistic() && m_baseHeat->tensor() == m_runHeat->tensor()
        && !m_baseHeat->isLoading() && !m_runHeat->isLoading();
    const auto a = m_baseHeat->valueRange(), b = m_runHeat->valueRange();
    std::optional<std::pair<double, double>> range;
    if (same && a.first <= a.second && b.first <= b.second)
        range = std::pair(std::min(a.first, b.first), std::max(a.second, b.second));
    m_baseHeat->setColourRange(range);
    m_runHeat->setColourRange(range);
}

std::pair<QString, QString> CompareView::layerStatistic() const
{
    const std::vector<std::pair<QString, QString>> shared = m_diffSource->statistics(m_data->run);
    const auto has = [&](const QString &stat, const QString &tensor) {
        return std::find(shared.begin(), shared.end(), std::pair(stat, tensor)) != shared.end();
    };
    // The engine's layer signals, most important first (the leads, then the consequences): the first both
    // runs have.
    const analysis::Finding *first = nullptr;
    std::vector<const analysis::Finding *> signals;
    for (const analysis::Finding &f : m_data->comparison.suspects)
        signals.push_back(&f);
    for (const analysis::Finding &f : m_data->comparison.findings) {
        if (f.kind == analysis::FindingKind::LayerSignal && f.severity == analysis::Severity::Info)
            signals.push_back(&f); // the consequences, after the leads
    }
    {
        for (const analysis::Finding *fp : signals) {
            const analysis::Finding &f = *fp;
            if (!first)
                first = &f;
            if (has(f.stat, f.tensor))
                return {f.stat, f.tensor};
        }
    }
    // Else one that does not depend on the precision, of the first suspect's tensor.
    const QString tensor = first ? first->tensor : QStringLiteral("activation");
    for (const char *stat : {"dynamic_range", "cur_amax", "std", "l2_norm", "l1_norm"}) {
        if (has(QLatin1String(stat), tensor))
            return {QLatin1String(stat), tensor};
    }
    // Else the suspect's own (the baseline's view says it lacks it), or the first both have.
    if (first)
        return {first->stat, first->tensor};
    return shared.empty() ? std::pair<QString, QString>() : shared.front();
}

void CompareView::setLayerMode(LayerMode mode)
{
    m_layerMode->setCurrentIndex(int(mode));
}

CompareView::LayerMode CompareView::layerMode() const
{
    return LayerMode(std::max(0, m_layerMode->currentIndex()));
}

void CompareView::fillAudit()
{
    m_auditModel->clear();
    m_auditModel->setHorizontalHeaderLabels({tr("Layer"), tr("Training layer"), tr("Dtype"), tr("Scale"),
        tr("Scale min"), tr("Scale max"), tr("Amax"), tr("Error vs reference"), tr("Status")});
    const std::optional<AuditResult> &audit = m_data ? m_data->comparison.audit : std::nullopt;
    m_auditChart->setAudit(audit);
    if (!audit) {
        m_auditTitle->setText(m_data && m_data->comparison.fromStore
                ? tr("Inference checkpoint: the comparison was read from the store; compare again to audit it.")
                : tr("Inference checkpoint: none in the run's folder (a folder with a quantized config.json and "
                     "safetensors, or the one fp8scope.json names as inference_checkpoint)."));
        return;
    }
    int findings = 0;
    for (const AuditLayer &l : audit->layers)
        findings += l.findings.isEmpty() ? 0 : 1;
    m_auditTitle->setToolTip(QDir::toNativeSeparators(audit->checkpoint));
    m_auditTitle->setText(tr("Inference checkpoint %1: %n layer(s) with a finding", nullptr, findings)
                              .arg(QFileInfo(audit->checkpoint).fileName())
        + (audit->problems.empty() ? QString() : tr("; %1").arg(audit->problems.front().toString())));
    for (const AuditLayer *layer : auditRows(*audit)) {
        const AuditLayer &l = *layer;
        QList<QStandardItem *> row {item(l.name), item(l.training ? l.training->text() : QString()), item(l.dtype),
            item(l.scaleLayout), number(l.scaleMin), number(l.scaleMax), number(l.amax), number(l.relError),
            item(l.status())};
        row.front()->setData(l.training ? l.training->module : QString(), LayerRole);
        if (!l.findings.isEmpty()) {
            for (QStandardItem *i : row)
                i->setForeground(QColor(200, 30, 0));
        }
        m_auditModel->appendRow(row);
    }
}

void CompareView::selectAuditLayer(const QString &name)
{
    // The table's row and the plot's mark follow; the shared selection takes the layer's training module.
    for (int r = 0; r < m_auditModel->rowCount(); ++r) {
        const QModelIndex first = m_auditModel->index(r, 0);
        if (first.data().toString() != name)
            continue;
        if (m_auditTable->currentIndex().row() != r)
            m_auditTable->setCurrentIndex(first);
        m_auditChart->setCurrentLayer(name);
        const QString module = first.data(LayerRole).toString();
        if (!module.isEmpty() && m_data)
            m_selection->set(m_data->run, module, m_selection->tensor(), m_selection->step());
        return;
    }
}

void CompareView::selectFinding(const QModelIndex &index)
{
    const QModelIndex first = m_findingsModel->index(index.row(), 0);
    const RunRef run = first.data(RunRole).value<RunRef>();
    const QString layer = first.data(LayerRole).toString();
    const QString tensor = first.data(TensorRole).toString();
    const QVariant step = first.data(StepRole);
    m_selection->set(run, layer.isEmpty() ? m_selection->layer() : layer,
        tensor.isEmpty() ? m_selection->tensor() : tensor, step.isValid() ? step.toLongLong() : m_selection->step());
}

} // namespace fp8scope
