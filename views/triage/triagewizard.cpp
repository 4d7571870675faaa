#include "triagewizard.h"

#include "views/compare/comparesources.h"
#include "views/compare/departuremark.h"
#include "views/compare/evalchart.h"
#include "views/curves/curveview.h"
#include "views/curves/layercurvesource.h"
#include "views/heatmap/heatmapsource.h"
#include "views/heatmap/heatmapview.h"
#include "views/histogram/histogramview.h"
#include "views/models/tableexport.h"
#include "views/workspace/pairpickers.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include "core/analysis/storedwhatif.h"
#include "core/numerics/recipe.h"
#include "core/numerics/whatif.h"

#include <QClipboard>
#include <QComboBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScreen>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <set>

namespace fp8scope {

namespace {

// SelectStepRole: the step a click selects when it is not the row's own (a suspect's evidence dump, which shows
// its damage, rather than its onset).
enum Roles { RunRole = Qt::UserRole + 1, LayerRole, TensorRole, StepRole, IdentityRole, KindRole, SelectStepRole };

QStandardItem *item(const QString &text)
{
    return textItem(text);
}

QStandardItem *number(double v, int decimals = -1)
{
    return numberItem(v, decimals);
}

QStandardItem *integer(std::optional<int64_t> v)
{
    auto *i = item(v ? QString::number(*v) : QString());
    if (v)
        i->setData(qint64(*v), Qt::UserRole);
    i->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return i;
}

// The review column's editor: the three states.
class ReviewDelegate : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    QWidget *createEditor(QWidget *parent, const QStyleOptionViewItem &, const QModelIndex &) const override
    {
        auto *box = new QComboBox(parent);
        box->addItems({reviewStateName(ReviewState::Open), reviewStateName(ReviewState::Confirmed),
            reviewStateName(ReviewState::Dismissed)});
        return box;
    }
    void setEditorData(QWidget *editor, const QModelIndex &index) const override
    {
        auto *box = static_cast<QComboBox *>(editor);
        box->setCurrentIndex(std::max(0, box->findText(index.data().toString())));
    }
    void setModelData(QWidget *editor, QAbstractItemModel *model, const QModelIndex &index) const override
    {
        model->setData(index, static_cast<QComboBox *>(editor)->currentText());
    }
};

QTableView *makeTable(const QString &name, QStandardItemModel *model, QWidget *parent)
{
    QTableView *t = newTableView(name, parent);
    t->setModel(model);
    return t;
}

// A step of the verdict, as a link to it.
QString stepLink(int64_t step)
{
    return QStringLiteral("<a href=\"step:%1\">%1</a>").arg(step);
}

} // namespace

TriageWizard::TriageWizard(Workspace *workspace, Selection *selection, QWidget *parent)
    : QDialog(parent)
    , m_workspace(workspace)
    , m_selection(selection)
    , m_slot(Workspace::newSlot(QStringLiteral("triage")))
    , m_steps(new QListWidget(this))
    , m_pages(new QStackedWidget(this))
    , m_baselineBox(new QComboBox(this))
    , m_runBox(new QComboBox(this))
    , m_status(new QLabel(this))
    , m_comparabilityText(new QLabel(this))
    , m_verdict(new QLabel(this))
    , m_classTitle(new QLabel(this))
    , m_next(new QPlainTextEdit(this))
    , m_whatIfTitle(new QLabel(this))
    , m_comparabilityModel(new QStandardItemModel(this))
    , m_classModel(new QStandardItemModel(this))
    , m_whatIfModel(new QStandardItemModel(this))
    , m_summaryModel(new QStandardItemModel(this))
    , m_lossSource(new PairCurveSource(workspace, this))
    , m_lossView(new CurveView(m_lossSource, selection, this))
    , m_lossMark(new DepartureMark(m_lossView))
    , m_evidence(new QStackedWidget(this))
    , m_layerSource(new LayerCurveSource(workspace, selection, this))
    , m_layerCurves(new CurveView(m_layerSource, selection, this))
    , m_heatSource(new SingleRunHeatmapSource(workspace, this))
    , m_heatmap(new HeatmapView(m_heatSource, selection, this))
    , m_histogram(new HistogramView(workspace, selection, this))
    , m_spikeView(new CurveView(m_lossSource, selection, this))
    , m_evalChart(new EvalChart(this))
    , m_back(new QPushButton(tr("&Back"), this))
    , m_forward(new QPushButton(tr("&Next"), this))
{
    setObjectName(QStringLiteral("triageWizard"));
    setWindowTitle(tr("Triage"));
    setModal(false);
    // As large as the evidence needs, within the screen it opens on (a 1366x768 laptop).
    QSize size(1200, 800);
    if (const QScreen *screen = QGuiApplication::primaryScreen())
        size = size.boundedTo(screen->availableSize() * 0.95);
    resize(size);
    setUpViews();
    for (QWidget *page : {runsPage(), lossPage(), classPage(), nextPage(), summaryPage()})
        m_pages->addWidget(page);

    auto *body = new QHBoxLayout;
    body->addWidget(m_steps);
    body->addWidget(m_pages, 1);
    auto *buttons = new QHBoxLayout;
    auto *close = new QPushButton(tr("Close"), this);
    buttons->addWidget(m_status, 1);
    buttons->addWidget(m_back);
    buttons->addWidget(m_forward);
    buttons->addWidget(close);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(body, 1);
    layout->addLayout(buttons);

    connect(m_steps, &QListWidget::currentRowChanged, this, [this](int row) {
        m_pages->setCurrentIndex(std::max(0, row));
        updateButtons();
        if (row == ClassStep)
            showSuspects();
    });
    connect(m_back, &QPushButton::clicked, this, [this] { setStep(Step(std::max(0, int(step()) - 1))); });
    connect(m_forward, &QPushButton::clicked, this, [this] { setStep(Step(std::min(kSteps - 1, int(step()) + 1))); });
    connect(close, &QPushButton::clicked, this, &QDialog::close);
    connect(m_baselineBox, &QComboBox::currentIndexChanged, this, &TriageWizard::recompute);
    connect(m_runBox, &QComboBox::currentIndexChanged, this, &TriageWizard::recompute);
    connect(m_verdict, &QLabel::linkActivated, this, &TriageWizard::followLink);
    connect(workspace, &Workspace::changed, this, [this](Workspace::Parts parts) {
        if (parts & (Workspace::Loaded | Workspace::Closed))
            fillPickers();
    });
    fillPickers();
    m_steps->setCurrentRow(0);
}

// The step list, the pickers, the labels, the evidence views and the tables the pages show.
void TriageWizard::setUpViews()
{
    m_steps->setObjectName(QStringLiteral("triageSteps"));
    for (const QString &name :
        {tr("1. Runs"), tr("2. Loss"), tr("3. The class"), tr("4. What to try next"), tr("5. Summary")})
        m_steps->addItem(name);
    m_steps->setMaximumWidth(170);
    m_baselineBox->setObjectName(QStringLiteral("triageBaseline"));
    m_runBox->setObjectName(QStringLiteral("triageRun"));
    m_status->setObjectName(QStringLiteral("triageStatus"));
    for (QLabel *l : {m_status, m_comparabilityText, m_verdict, m_classTitle, m_whatIfTitle}) {
        l->setWordWrap(true);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    }
    // The verdict's numbers are links to the views showing them (mouse or Tab and Enter).
    m_verdict->setObjectName(QStringLiteral("triageVerdict"));
    m_verdict->setTextInteractionFlags(Qt::TextBrowserInteraction);
    m_verdict->setOpenExternalLinks(false);
    m_lossView->setObjectName(QStringLiteral("triageLossView"));
    m_lossView->setStatisticPickerVisible(false);
    m_spikeView->setObjectName(QStringLiteral("triageSpikeView"));
    m_spikeView->setStatisticPickerVisible(false);
    m_layerCurves->setObjectName(QStringLiteral("triageLayerCurves"));
    m_heatmap->setObjectName(QStringLiteral("triageHeatmap"));
    m_histogram->setObjectName(QStringLiteral("triageHistogram"));
    m_evalChart->setObjectName(QStringLiteral("triageEvalChart"));
    // The wizard's views follow the shared selection; while their page is not shown they read nothing.
    for (CurveView *v : {m_lossView, m_spikeView, m_layerCurves})
        v->setFetchWhileHidden(false);
    m_histogram->setRequestWhileHidden(false);
    m_comparability = makeTable(QStringLiteral("triageComparability"), m_comparabilityModel, this);
    m_class = makeTable(QStringLiteral("triageClass"), m_classModel, this);
    m_whatIf = makeTable(QStringLiteral("triageWhatIf"), m_whatIfModel, this);
    m_summary = makeTable(QStringLiteral("triageSummary"), m_summaryModel, this);
    m_summary->setEditTriggers(
        QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed | QAbstractItemView::SelectedClicked);
    m_summary->setItemDelegateForColumn(kReviewColumn, new ReviewDelegate(m_summary));
    addTableActions(m_comparability, tr("comparability.csv"));
    addTableActions(m_class, tr("evidence.csv"));
    addTableActions(m_whatIf, tr("what-if.csv"));
    addTableActions(m_summary, tr("findings.csv"));
    m_next->setObjectName(QStringLiteral("triageNext"));
    m_next->setReadOnly(true);
    m_next->setLineWrapMode(QPlainTextEdit::WidgetWidth);
}

// 1. Runs: the pair and whether it can be compared.
QWidget *TriageWizard::runsPage()
{
    auto *runs = new QWidget(this);
    auto *runsLayout = new QVBoxLayout(runs);
    auto *pickers = new QHBoxLayout;
    pickers->addWidget(new QLabel(tr("Baseline"), runs));
    pickers->addWidget(m_baselineBox, 1);
    pickers->addWidget(new QLabel(tr("Run"), runs));
    pickers->addWidget(m_runBox, 1);
    runsLayout->addLayout(pickers);
    runsLayout->addWidget(m_comparabilityText);
    runsLayout->addWidget(m_comparability, 1);
    return runs;
}

// 2. Loss: the verdict with its links, and the pair's loss.
QWidget *TriageWizard::lossPage()
{
    auto *loss = new QWidget(this);
    auto *lossLayout = new QVBoxLayout(loss);
    auto *openComparison = new QPushButton(tr("Open in the &Comparison Tab"), loss);
    openComparison->setObjectName(QStringLiteral("triageOpenComparison"));
    lossLayout->addWidget(m_verdict);
    lossLayout->addWidget(openComparison, 0, Qt::AlignLeft);
    lossLayout->addWidget(m_lossView, 1);
    connect(openComparison, &QPushButton::clicked, this, [this] { Q_EMIT comparisonRequested(baseline(), run()); });
    return loss;
}

// 3. The class: the evidence table above the views that show it.
QWidget *TriageWizard::classPage()
{
    auto *cls = new QWidget(this);
    auto *classLayout = new QVBoxLayout(cls);
    auto *layerViews = new QSplitter(Qt::Horizontal, m_evidence);
    layerViews->addWidget(m_layerCurves);
    layerViews->addWidget(m_heatmap);
    layerViews->addWidget(m_histogram);
    // The map the widest (its layer names take a third of it), the curve and the histogram beside it.
    layerViews->setStretchFactor(0, 3);
    layerViews->setStretchFactor(1, 4);
    layerViews->setStretchFactor(2, 3);
    layerViews->setSizes({320, 440, 320});
    m_evidence->addWidget(new QWidget(m_evidence)); // no views: early divergence, none found
    m_evidence->addWidget(layerViews);
    m_evidence->addWidget(m_spikeView);
    m_evidence->addWidget(m_evalChart);
    auto *classSplit = new QSplitter(Qt::Vertical, cls);
    classSplit->addWidget(m_class);
    classSplit->addWidget(m_evidence);
    classSplit->setStretchFactor(0, 1);
    classSplit->setStretchFactor(1, 3);
    classSplit->setSizes({200, 600}); // the views get the room; the table scrolls
    classLayout->addWidget(m_classTitle);
    classLayout->addWidget(classSplit, 1);
    // A row of the evidence made current (click or arrow keys) shows in the views.
    connect(m_class->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex &current) { selectClassRow(current); });
    connect(m_class, &QTableView::clicked, this, &TriageWizard::selectClassRow);
    return cls;
}

// 4. What to try next, and the recipes' what-if.
QWidget *TriageWizard::nextPage()
{
    auto *next = new QWidget(this);
    auto *nextLayout = new QVBoxLayout(next);
    auto *copy = new QPushButton(tr("Co&py"), next);
    copy->setObjectName(QStringLiteral("triageCopyNext"));
    copy->setEnabled(false);
    m_copyNext = copy;
    nextLayout->addWidget(m_next, 2);
    nextLayout->addWidget(copy, 0, Qt::AlignLeft);
    nextLayout->addWidget(m_whatIfTitle);
    nextLayout->addWidget(m_whatIf, 3);
    copy->setToolTip(tr("Copies the configs of the next steps (YAML), as they paste"));
    connect(copy, &QPushButton::clicked, this, [this] {
        if (!m_data)
            return;
        QStringList configs;
        for (const analysis::NextStep &ns : m_data->comparison.nextSteps) {
            if (!ns.config.isEmpty())
                configs << ns.config.trimmed();
        }
        QGuiApplication::clipboard()->setText(configs.join(QLatin1Char('\n')) + QLatin1Char('\n'));
    });
    connect(m_whatIf, &QTableView::activated, this, [this](const QModelIndex &index) {
        const QString recipe = m_whatIfModel->index(index.row(), 0).data().toString();
        if (recipe.isEmpty())
            return;
        const QString format = m_whatIfModel->index(index.row(), 1).data().toString().toLower();
        m_histogram->setRecipe(recipe, format);
        Q_EMIT recipeRequested(recipe, format);
    });
    return next;
}

// 5. Summary: the findings to review, and the report.
QWidget *TriageWizard::summaryPage()
{
    auto *summary = new QWidget(this);
    auto *summaryLayout = new QVBoxLayout(summary);
    auto *summaryHelp = new QLabel(tr("Mark each finding confirmed or dismissed and add a note (double-click); "
                                      "the review is kept in the run's store."),
        summary);
    summaryHelp->setWordWrap(true);
    summaryLayout->addWidget(summaryHelp);
    summaryLayout->addWidget(m_summary, 1);
    auto *exportReport = new QPushButton(tr("&Export Report..."), summary);
    exportReport->setObjectName(QStringLiteral("triageExportReport"));
    exportReport->setToolTip(tr("The triage as a PDF: the verdict, the evidence, what to try next and your review"));
    summaryLayout->addWidget(exportReport, 0, Qt::AlignLeft);
    connect(exportReport, &QPushButton::clicked, this, [this] {
        if (m_data)
            Q_EMIT reportRequested(m_data->baseline, m_data->run);
    });
    connect(m_summary, &QTableView::activated, this, &TriageWizard::activateSummaryRow);
    connect(m_summary, &QTableView::doubleClicked, this, &TriageWizard::activateSummaryRow);
    connect(m_summaryModel, &QStandardItemModel::itemChanged, this, &TriageWizard::onSummaryEdited);
    return summary;
}

TriageWizard::~TriageWizard() = default;

void TriageWizard::showEvent(QShowEvent *event)
{
    QDialog::showEvent(event);
    if (m_stale)
        recompute();
}

void TriageWizard::fillPickers()
{
    PairPickers {m_baselineBox, m_runBox}.fill(*m_workspace);
    {
        // A run can be triaged on its own (a blow-up, a sustained rise, spikes that never recover).
        const QSignalBlocker blocker(m_baselineBox);
        m_baselineBox->insertItem(0, tr("(none: the run on its own)"), QVariant::fromValue(RunRef {}));
    }
    setPair({}, {});
}

void TriageWizard::setPair(RunRef baseline, RunRef run)
{
    const auto [b, r] = PairPickers {m_baselineBox, m_runBox}.show(*m_workspace, baseline, run);
    if (!b.isValid() && !r.isValid() && m_workspace->runCount() > 0) {
        // No pair: the run on its own (the first with a loss to check, else the first).
        const QSignalBlocker b1(m_baselineBox), b2(m_runBox);
        m_baselineBox->setCurrentIndex(0);
        RunRef alone = run.isValid() ? run : m_workspace->runAt(0);
        for (const WorkspaceRun &w : m_workspace->runs()) {
            if (!run.isValid() && m_workspace->catalog().chooseSeries(w.run.ref, {.stat = QStringLiteral("lm loss")})) {
                alone = w.run.ref;
                break;
            }
        }
        m_runBox->setCurrentIndex(m_runBox->findData(QVariant::fromValue(alone)));
    }
    recompute();
}

RunRef TriageWizard::baseline() const
{
    return m_baselineBox->currentData().value<RunRef>();
}

RunRef TriageWizard::run() const
{
    return m_runBox->currentData().value<RunRef>();
}

void TriageWizard::setStep(Step s)
{
    m_steps->setCurrentRow(int(s));
}

TriageWizard::Step TriageWizard::step() const
{
    return Step(std::clamp(m_steps->currentRow(), 0, kSteps - 1));
}

void TriageWizard::updateButtons()
{
    m_back->setEnabled(step() > RunsStep);
    m_forward->setEnabled(step() < SummaryStep);
}

void TriageWizard::recompute()
{
    const RunRef b = baseline(), r = run();
    if (m_ticket)
        m_workspace->queries().cancel(m_ticket);
    m_ticket = 0;
    if (!r.isValid() || b == r) {
        display(nullptr);
        m_status->setText(m_workspace->runCount() < 1 ? tr("Open a folder with a BF16 baseline and an FP8 run.")
                                                      : tr("Choose a run and a baseline to compare it with."));
        return;
    }
    // Computed when seen: a folder opening does not queue a triage (and its what-if) nobody looks at.
    if (!isVisible()) {
        m_stale = true;
        return;
    }
    m_stale = false;
    m_status->setText(b.isValid()
            ? tr("Comparing %1 with %2...").arg(m_runBox->currentText(), m_baselineBox->currentText())
            : tr("Checking %1 on its own...").arg(m_runBox->currentText()));
    m_ticket = m_workspace->query(
        m_slot, [b, r](const Catalog &catalog) { return QVariant::fromValue(computeComparison(catalog, b, r, {})); },
        this,
        [this](const QVariant &value) {
            m_ticket = 0;
            display(std::make_shared<const ComparisonData>(value.value<ComparisonData>()));
        });
}

void TriageWizard::display(std::shared_ptr<const ComparisonData> data)
{
    m_data = std::move(data);
    m_lossSource->setComparison(m_data);
    m_lossView->setStatistic(m_data ? m_data->stat : QString());
    m_spikeView->setStatistic(m_data ? m_data->stat : QString());
    m_lossMark->setComparison(m_data);
    fillRuns();
    fillLoss();
    fillClass();
    fillNext();
    fillSummary();
    // The class page's words by the run list's names.
    m_classTitle->setText(m_workspace->inRunNames(m_classTitle->text()));
    if (m_data)
        m_status->setText(tr("Verdict: %1").arg(analysis::verdictName(m_data->comparison.verdict)));
    Q_EMIT computed();
}

QString TriageWizard::comparabilityText() const
{
    return m_comparabilityText->text();
}

QString TriageWizard::verdictText() const
{
    return m_verdict->text();
}

QString TriageWizard::classTitle() const
{
    return m_classTitle->text();
}

QString TriageWizard::nextText() const
{
    return m_next->toPlainText();
}

void TriageWizard::fillRuns()
{
    m_comparabilityModel->clear();
    m_comparabilityModel->setHorizontalHeaderLabels({tr("Key"), tr("Baseline"), tr("Run"), tr("Changes")});
    if (!m_data) {
        m_comparabilityText->clear();
        return;
    }
    // The engine's comparability verdict, displayed.
    const analysis::Comparability &c = m_data->comparison.comparability;
    for (const analysis::ComparabilityRow &r : c.rows) {
        auto *aspect = item(r.aspect.isEmpty() ? tr("none of these") : r.aspect);
        if (r.aspect.isEmpty())
            aspect->setToolTip(tr("Differs, and changes none of the model shape, the data, the plan, the precision "
                                  "family or the implementation"));
        m_comparabilityModel->appendRow({item(r.key), item(r.baseline), item(r.run), aspect});
    }
    m_comparability->resizeColumnsToContents();
    m_comparabilityText->setText(c.text);
}

void TriageWizard::fillLoss()
{
    if (!m_data) {
        m_verdict->clear();
        return;
    }
    const analysis::Comparison &c = m_data->comparison;
    QStringList lines;
    lines << tr("<b>Verdict: %1.</b>").arg(analysis::verdictName(c.verdict).toHtmlEscaped());
    const analysis::Finding *departure = nullptr, *skipped = nullptr;
    for (const analysis::Finding &f : c.findings) {
        if ((f.kind == analysis::FindingKind::LossDeparture || f.kind == analysis::FindingKind::RunBlowUp)
            && !departure)
            departure = &f;
        if (f.kind == analysis::FindingKind::SkippedIterations && !skipped)
            skipped = &f;
    }
    const analysis::Departure &d = m_data->statistic.departure;
    // A blow-up the loss showed before (or without) leaving the band: said as such, never "the losses agree".
    const bool blewUp = departure && departure->kind == analysis::FindingKind::RunBlowUp && departure->step
        && (!d.step || *departure->step < *d.step);
    if (blewUp && m_data->baseline.isValid()) {
        QString text = departure->summary;
        if (!text.isEmpty())
            text[0] = text[0].toUpper();
        lines << tr("%1.").arg(text.toHtmlEscaped());
        lines << (c.plannedSteps > 0
                ? tr("It blows up at step %1 of the %2 planned; its loss is not a number from there on (the "
                     "crosses along the bottom of the plot), not a value at 0.")
                      .arg(stepLink(*departure->step))
                      .arg(c.plannedSteps)
                : tr("It blows up at step %1; its loss is not a number from there on.")
                      .arg(stepLink(*departure->step)));
    } else if (departure && d.step) {
        // The engine's sentence: where, between which steps, by how much at the end; then, in a sentence of its own
        // (the departure is not the end), the departure's place in the run and which step the end is.
        QString text = departure->summary;
        if (!text.isEmpty())
            text[0] = text[0].toUpper();
        lines << tr("%1.").arg(text.toHtmlEscaped());
        // (A trace aligned on consumed samples counts samples, not steps: its end is not named.)
        const std::vector<int64_t> &traced = d.trace.steps;
        const bool bySteps = m_data->statistic.axis == QLatin1String("step") && !traced.empty();
        QString where = c.plannedSteps > 0
            ? tr("It departs at step %1 of the %2 planned").arg(stepLink(*d.step)).arg(c.plannedSteps)
            : tr("It departs at step %1").arg(stepLink(*d.step));
        lines << (bySteps ? tr("%1; the end is step %2, the last both logged.").arg(where, stepLink(traced.back()))
                          : where + QLatin1Char('.'));
    } else if (d.step) {
        lines << tr("The loss departs at step %1 (between %2 and %3) of %4 planned.")
                     .arg(stepLink(*d.step), stepLink(d.low), stepLink(d.high))
                     .arg(c.plannedSteps);
    } else if (!m_data->baseline.isValid()) {
        // A run on its own: where it leaves its own course, if it does.
        if (departure) {
            QString text = departure->summary;
            if (!text.isEmpty())
                text[0] = text[0].toUpper();
            lines << tr("Checked on its own (no baseline): %1.").arg(text.toHtmlEscaped());
        } else {
            lines << tr("Checked on its own (no baseline): the loss neither blows up nor rises for good.");
        }
    } else if (m_data->statistic.found) {
        lines << tr("The losses agree: the run stays within the baseline's band (tolerance + noise).");
    } else {
        lines << tr("The two runs have no loss in common to compare.");
    }
    if (c.lead && d.step)
        lines << tr("The first layer signal comes %1 steps before the departure (at step %2).")
                     .arg(*c.lead)
                     .arg(stepLink(*d.step - *c.lead));
    else if (c.lead)
        lines << tr("The first layer signal comes %1 steps before the departure.").arg(*c.lead);
    const auto spikes = [](const analysis::SpikeReport &r) {
        const auto recovered = std::count_if(
            r.spikes.begin(), r.spikes.end(), [](const analysis::Spike &s) { return s.recoveredAt.has_value(); });
        return tr("%n spike(s), %1 recovered", nullptr, int(r.spikes.size())).arg(recovered);
    };
    if (m_data->baseline.isValid())
        lines << tr("Spikes of the loss: the baseline %1; the run %2 (marked on the plot; the %3 tab shows the "
                    "difference).")
                     .arg(spikes(m_data->baselineSpikes), spikes(m_data->runSpikes),
                         QStringLiteral("<a href=\"comparison:\">%1</a>").arg(tr("Comparison")));
    else
        lines << tr("Spikes of the loss: %1 (marked on the plot).").arg(spikes(m_data->runSpikes));
    if (skipped)
        lines << skipped->summary.toHtmlEscaped();
    m_verdict->setText(m_workspace->inRunNames(lines.join(QStringLiteral("<br>"))));
}

void TriageWizard::showSuspectHeatmap(
    const analysis::Finding &suspect, const std::vector<std::pair<QString, QString>> &flagged)
{
    m_layerSource->setRun(m_data->run);
    m_layerCurves->setStatistic(QStringLiteral("tensor:") + suspect.stat);
    m_heatSource->setRun(m_data->run);
    m_heatmap->setTensor(suspect.tensor);
    m_heatmap->setStatistic(suspect.stat);
    m_heatmap->setFlaggedLayers(flagged);
    m_evidence->setCurrentIndex(1);
}

void TriageWizard::fillClass()
{
    m_classModel->clear();
    m_evidence->setCurrentIndex(0);
    if (!m_data) {
        m_classTitle->clear();
        return;
    }
    const analysis::Comparison &c = m_data->comparison;
    const auto mark = [&](QList<QStandardItem *> row, const analysis::Finding *f) {
        if (f) {
            row.front()->setData(QVariant::fromValue(m_data->run), RunRole);
            row.front()->setData(f->layer, LayerRole);
            row.front()->setData(f->tensor, TensorRole);
            row.front()->setData(f->step ? QVariant(qint64(*f->step)) : QVariant(), StepRole);
            // The first suspect's row selects the engine's evidence dump: the histogram shows the damage.
            const std::optional<analysis::EvidenceDump> &e = m_data->comparison.evidence;
            if (e && f->kind == analysis::FindingKind::LayerSignal && f->layer == e->dump.record.layer
                && f->tensor == e->dump.record.tensor)
                row.front()->setData(qint64(e->dump.record.step), SelectStepRole);
            for (QStandardItem *i : row)
                i->setToolTip(f->suggestion.isEmpty() ? f->summary : f->summary + QLatin1Char('\n') + f->suggestion);
        }
        m_classModel->appendRow(row);
    };
    if (!m_data->baseline.isValid()) {
        // A run on its own: its findings are the evidence (a blow-up, spikes that never recover, skips).
        m_classTitle->setText(tr("<b>Checked on its own</b> (verdict %1): what the run shows without a baseline, "
                                 "most important first.")
                                  .arg(analysis::verdictName(c.verdict).toHtmlEscaped()));
        m_classModel->setHorizontalHeaderLabels({tr("Severity"), tr("Finding"), tr("Step"), tr("Summary")});
        for (const analysis::Finding &f : c.findings)
            mark({item(analysis::severityName(f.severity)), item(analysis::findingKindName(f.kind)), integer(f.step),
                     item(m_workspace->inRunNames(f.summary))},
                &f);
        m_class->resizeColumnsToContents();
        return;
    }
    switch (c.verdict) {
    case analysis::Verdict::EarlyDivergence: {
        m_classTitle->setText(tr("<b>Early divergence</b>: the run parts from its baseline early in the plan, which "
                                 "points at software: the config keys and versions that differ, suspects first."));
        m_classModel->setHorizontalHeaderLabels(
            {tr("Severity"), tr("Key or package"), tr("Baseline"), tr("Run"), tr("Summary")});
        // A blow-up in the first steps: where its first non-finite value came from comes first, its statistic's
        // heatmap (every rank's, its non-finite cells marked) beside it.
        if (!c.suspects.empty() && c.suspects.front().kind == analysis::FindingKind::FirstNonFinite) {
            const analysis::Finding &f = c.suspects.front();
            m_classTitle->setText(m_classTitle->text() + QStringLiteral("<br>")
                + tr("The run blows up; its first non-finite value: %1 %2 %3 at step %4.")
                      .arg(f.layer, f.tensor, f.stat)
                      .arg(f.step.value_or(0))
                      .toHtmlEscaped());
            mark({item(analysis::severityName(f.severity)), item(tr("first non-finite value")), item(QString()),
                     item(QStringLiteral("%1 %2 %3").arg(f.layer, f.tensor, f.stat)),
                     item(m_workspace->inRunNames(f.summary))},
                &f);
            showSuspectHeatmap(f, {{f.layer, f.step ? tr("non-finite at %1").arg(*f.step) : QString()}});
        }
        for (const analysis::Finding &f : c.findings) {
            if (f.kind != analysis::FindingKind::ConfigDifference && f.kind != analysis::FindingKind::VersionDifference)
                continue;
            QString base, ours;
            for (const analysis::ConfigRow &r : m_data->config.rows) {
                if (r.key == f.key) {
                    base = r.baseline;
                    ours = r.run;
                }
            }
            mark({item(analysis::severityName(f.severity)), item(f.key), item(base), item(ours),
                     item(m_workspace->inRunNames(f.summary))},
                &f);
        }
        break;
    }
    case analysis::Verdict::MidRunInstability: {
        QString title = tr("<b>Mid-run instability</b>: the layers whose statistics moved before the loss "
                           "departed, most suspect first (damage before scale, then what made half its change first). "
                           "A click shows the layer in the curve, heatmap and histogram views.");
        if (!c.suspects.empty() && c.suspects.front().kind == analysis::FindingKind::FirstNonFinite)
            title += QStringLiteral("<br>")
                + tr("The run blows up: the first row is where its first non-finite value came from; the heatmap "
                     "marks every cell that was not finite, on every rank.")
                      .toHtmlEscaped();
        if (c.evidence)
            title += QStringLiteral("<br>")
                + tr("The histogram of %1 %2 shows its dump at step %3: %4.")
                      .arg(c.evidence->dump.record.layer, c.evidence->dump.record.tensor)
                      .arg(c.evidence->dump.record.step)
                      .arg(c.evidence->why)
                      .toHtmlEscaped();
        m_classTitle->setText(title);
        m_classModel->setHorizontalHeaderLabels({tr("Layer"), tr("Tensor"), tr("Statistic"), tr("Onset"),
            tr("Lead (steps)"), tr("Severity"), tr("Summary")});
        // The engine's suspects (most suspect first), then the consequences.
        std::vector<const analysis::Finding *> signals;
        for (const analysis::Finding &f : c.suspects)
            signals.push_back(&f);
        for (const analysis::Finding &f : c.findings) {
            if (f.kind == analysis::FindingKind::LayerSignal && f.severity == analysis::Severity::Info)
                signals.push_back(&f);
        }
        for (const analysis::Finding *f : signals) {
            std::optional<int64_t> lead;
            if (f->step && c.departure)
                lead = *c.departure - *f->step;
            mark({item(f->layer), item(f->tensor), item(f->stat), integer(f->step), integer(lead),
                     item(analysis::severityName(f->severity)), item(f->summary)},
                f);
        }
        // The views: the first suspect's statistic for every layer, its heatmap with the suspects of that
        // statistic marked with their onsets, the histogram of the selected layer's nearest dump.
        if (!signals.empty()) {
            const analysis::Finding *first = signals.front();
            std::vector<std::pair<QString, QString>> flagged;
            for (const analysis::Finding &f : c.suspects) {
                if (f.stat == first->stat && f.tensor == first->tensor)
                    flagged.emplace_back(f.layer, f.step ? tr("onset %1").arg(*f.step) : QString());
            }
            showSuspectHeatmap(*first, flagged);
        }
        break;
    }
    case analysis::Verdict::LossSpikes: {
        m_classTitle->setText(tr("<b>Loss spikes</b>: the run spikes more often than its baseline, or needs "
                                 "repeated recovery. Both runs' spikes, by step."));
        m_classModel->setHorizontalHeaderLabels(
            {tr("Run"), tr("Step"), tr("Peak"), tr("Level"), tr("Height (sigmas)"), tr("Recovered at")});
        std::vector<std::pair<int64_t, QList<QStandardItem *>>> rows;
        for (const auto &[ref, report] :
            {std::pair(m_data->baseline, &m_data->baselineSpikes), std::pair(m_data->run, &m_data->runSpikes)}) {
            const QString name = m_workspace->runName(ref);
            for (const analysis::Spike &s : report->spikes) {
                QList<QStandardItem *> row {item(name), integer(s.step), number(s.value), number(s.level),
                    number(s.height, 1), integer(s.recoveredAt)};
                row.front()->setData(QVariant::fromValue(ref), RunRole);
                row.front()->setData(qint64(s.step), StepRole);
                rows.emplace_back(s.step, row);
            }
        }
        std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
        for (auto &[step, row] : rows)
            m_classModel->appendRow(row);
        // How often: spikes per thousand steps of what each run logged.
        const auto rate = [](const analysis::SpikeReport &r) {
            const double per = r.span > 0 ? 1000.0 * double(r.spikes.size()) / double(r.span) : 0.0;
            return tr("%n spike(s) in %1 steps (%2 per 1000)", nullptr, int(r.spikes.size()))
                .arg(r.span)
                .arg(per, 0, 'f', 2);
        };
        m_classTitle->setText(m_classTitle->text() + QStringLiteral("<br>")
            + tr("The run: %1. The baseline: %2.").arg(rate(m_data->runSpikes), rate(m_data->baselineSpikes)));
        m_evidence->setCurrentIndex(2);
        break;
    }
    case analysis::Verdict::DownstreamGap: {
        QString title = tr("<b>Downstream gap</b>: the losses agree, the evaluation scores do not. The scores, "
                           "significant drops first.");
        for (const analysis::Finding &f : c.findings) {
            if (f.kind == analysis::FindingKind::InferencePrecision || f.kind == analysis::FindingKind::EvalDrop)
                title += QStringLiteral("<br>") + m_workspace->inRunNames(f.summary).toHtmlEscaped();
        }
        m_classTitle->setText(title);
        m_classModel->setHorizontalHeaderLabels({tr("Task"), tr("Metric"), tr("Inference"), tr("Baseline"), tr("Run"),
            tr("Difference"), tr("z"), tr("Significant")});
        std::vector<const analysis::EvalRow *> rows;
        for (const analysis::EvalRow &e : m_data->evals)
            rows.push_back(&e);
        std::stable_sort(rows.begin(), rows.end(),
            [](const analysis::EvalRow *a, const analysis::EvalRow *b) { return a->significant > b->significant; });
        for (const analysis::EvalRow *e : rows)
            m_classModel->appendRow({item(e->task), item(e->metric), item(e->inference), number(e->baseline),
                number(e->run), number(e->difference), number(e->z, 1), item(e->significant ? tr("yes") : QString())});
        const WorkspaceRun *ours = m_workspace->run(m_data->run);
        m_evalChart->setRows(m_data->evals, m_workspace->runName(m_data->baseline), m_workspace->runName(m_data->run),
            ours ? ours->colour : QColor(Qt::darkBlue));
        m_evidence->setCurrentIndex(3);
        break;
    }
    case analysis::Verdict::None:
        m_classTitle->setText(tr("<b>No problem found</b>: the losses agree within the baseline's band, the run "
                                 "does not spike more often, and no evaluation differs beyond its noise."));
        break;
    case analysis::Verdict::NotComparable: {
        QString title = tr("<b>Not comparable</b>: the two runs have no training loss in common, so nothing says "
                           "whether the run parts from its baseline.");
        for (const analysis::Finding &f : c.findings) {
            if (f.kind == analysis::FindingKind::NoCommonLoss)
                title += QStringLiteral("<br>") + m_workspace->inRunNames(f.summary).toHtmlEscaped();
        }
        m_classTitle->setText(title);
        break;
    }
    }
    m_class->resizeColumnsToContents();
}

void TriageWizard::fillNext()
{
    m_next->clear();
    m_copyNext->setEnabled(false);
    m_whatIfModel->clear();
    m_whatIfModel->setHorizontalHeaderLabels(
        // Two lines a header, so that the table fits a laptop's screen (1366 wide) without scrolling.
        {tr("Recipe"), tr("Format"), tr("Damage %\n(1st)"), tr("Mean rel.\nerror % (2nd)"), tr("Underflow\n%"),
            tr("Saturated\n%"), tr("MSE\n(3rd)"), tr("SQNR\ndB"), tr("Cosine"), tr("Blocks"), tr("Clipping\nblocks %"),
            tr("Underflowing\nblocks %"), tr("Flushed\nblocks %"), tr("scale_inv\nbinades")});
    for (int column : {2, 3, 6})
        m_whatIfModel->horizontalHeaderItem(column)->setToolTip(
            tr("The best recipe, in bold: %1").arg(whatIfCriterion()));
    m_whatIfModel->horizontalHeaderItem(kBlocksColumn + 1)
        ->setToolTip(tr("Blocks with an element that saturates: the block's scale cannot bring its amax within "
                        "the format"));
    m_whatIfModel->horizontalHeaderItem(kBlocksColumn + 2)
        ->setToolTip(tr("Blocks with a non-zero element quantized to zero"));
    m_whatIfModel->horizontalHeaderItem(kBlocksColumn + 3)
        ->setToolTip(tr("Blocks whose every non-zero element is quantized to zero"));
    m_whatIfTitle->clear();
    m_whatIfDump.clear();
    m_whatIfPending = 0; // the results of another pair's what-if are not waited for
    ++m_whatIfGeneration;
    if (!m_data)
        return;
    fillNextText();
    startWhatIf();
}

void TriageWizard::fillNextText()
{
    if (!m_data)
        return;
    // The engine's next steps (one change at a time, the reviews applied), displayed.
    QStringList text;
    int n = 0;
    m_copyNext->setEnabled(std::any_of(m_data->comparison.nextSteps.begin(), m_data->comparison.nextSteps.end(),
        [](const analysis::NextStep &ns) { return !ns.config.isEmpty(); }));
    for (const analysis::NextStep &ns : m_data->comparison.nextSteps) {
        QString step = QStringLiteral("%1. %2\n   %3")
                           .arg(++n)
                           .arg(m_workspace->inRunNames(ns.what), m_workspace->inRunNames(ns.action));
        if (!ns.config.isEmpty())
            step += QStringLiteral("\n\n") + ns.config.trimmed();
        // What the baseline's other attempts already tried of it, and how it came out.
        for (const QString &tried : m_data->triedBy.value(triedByKey(ns)))
            step += QStringLiteral("\n   -> %1").arg(tried);
        text << step;
    }
    if (text.isEmpty())
        text << (m_data->comparison.verdict == analysis::Verdict::None
                ? tr("Nothing to change: the verdict is healthy.")
                : tr("Nothing left to change: the findings to act on were dismissed in the review."));
    m_next->setPlainText(text.join(QStringLiteral("\n\n")));
}

void TriageWizard::startWhatIf()
{
    // The engine's evidence dump (the one that shows the first suspect's damage) under every recipe of the
    // what-if, in one job.
    const analysis::Comparison &c = m_data->comparison;
    if (c.suspects.empty()) {
        m_whatIfTitle->setText(tr("No layer suspect: no recipe what-if to compute."));
        return;
    }
    const analysis::Finding &suspect = c.suspects.front();
    if (!c.evidence) {
        m_whatIfTitle->setText(
            tr("%1 %2 has no tensor dump to recompute a recipe what-if on.").arg(suspect.layer, suspect.tensor));
        return;
    }
    const Dump &dump = c.evidence->dump;
    m_whatIfDump = dump.spec();
    // The recipes this tensor could be trained in (the run's formats for its role), the what-if the triage stored.
    const std::vector<Recipe> recipes = analysis::whatIfCandidatesOf(m_workspace->catalog(), dump);
    const QString title = tr("Recipe what-if on %1 %2 at step %3 (%4):")
                              .arg(dump.record.layer, dump.record.tensor)
                              .arg(dump.record.step)
                              .arg(c.evidence->why);
    m_whatIfTitle->setText(title);
    for (const Recipe &r : recipes) {
        QList<QStandardItem *> row {item(r.name()), item(formatName(r.format))};
        for (int i = 2; i < kWhatIfColumns; ++i)
            row << item(i == kBlocksColumn && !hasBlockScales(r) ? tr("-") : QString());
        if (!hasBlockScales(r))
            row[kBlocksColumn]->setToolTip(tr("One scale for the whole tensor: no blocks"));
        m_whatIfModel->appendRow(row);
    }
    if (const auto stored = analysis::storedWhatIfOf(m_workspace->catalog(), dump)) {
        showWhatIf(*stored, title);
        return;
    }
    // None stored (a store that could not be written): the same what-if computed here.
    const quint64 generation = m_whatIfGeneration;
    m_whatIfPending = 1;
    const auto stamp = analysis::whatIfFileStamp(dump); // the file as the job will read it
    m_workspace->whatIf(dump, recipes, m_slot + QStringLiteral("-whatif"), this,
        [this, generation, title, dump, recipes, stamp](
            const std::optional<WhatIfResult> &result, const QString &error) {
            if (generation != m_whatIfGeneration)
                return; // another pair is shown: its own what-if fills the table
            if (!result) {
                m_whatIfPending = 0;
                m_whatIfTitle->setText(title + QLatin1Char(' ') + tr("not computed: %1").arg(error));
                return;
            }
            showWhatIf(*result, title);
            // Kept, so that the findings and the next steps read it: they are finished again once it is.
            m_workspace->storeWhatIf(dump.run, analysis::whatIfRecord(dump, recipes, *result, stamp), this,
                [this, generation](const QString &storeError) {
                    if (generation != m_whatIfGeneration)
                        return;
                    if (!storeError.isEmpty() || !m_data) {
                        m_whatIfPending = 0;
                        return;
                    }
                    // Computing until the findings and the next steps have read it.
                    finishAgain(true, [this, generation] {
                        if (generation == m_whatIfGeneration)
                            m_whatIfPending = 0;
                    });
                });
        });
}

void TriageWizard::showWhatIf(const WhatIfResult &result, const QString &title)
{
    for (size_t i = 0; i < result.rows.size() && int(i) < m_whatIfModel->rowCount(); ++i) {
        const int row = int(i);
        const WhatIfRow &w = result.rows[i];
        const TensorMetrics &m = w.metrics;
        m_whatIfModel->setItem(row, 2, number(m.damagePct, 3));
        m_whatIfModel->setItem(row, 3, number(m.meanRelErrorPct, 3));
        m_whatIfModel->setItem(row, 4, number(m.underflowPct, 3));
        m_whatIfModel->setItem(row, 5, number(m.saturationPct, 3));
        m_whatIfModel->setItem(row, 6, number(m.mse));
        m_whatIfModel->setItem(row, 7, number(m.sqnrDb, 2));
        m_whatIfModel->setItem(row, 8, number(m.cosine, 6));
        if (!hasBlockScales(w.recipe))
            continue;
        if (!w.census) {
            m_whatIfModel->setItem(row, kBlocksColumn, item(w.censusError));
            continue;
        }
        const BlockCensus &cs = *w.census;
        m_whatIfModel->setItem(row, kBlocksColumn, integer(cs.blocks));
        m_whatIfModel->setItem(row, kBlocksColumn + 1, number(cs.clippingPct(), 2));
        m_whatIfModel->setItem(row, kBlocksColumn + 2, number(cs.underflowingPct(), 2));
        m_whatIfModel->setItem(row, kBlocksColumn + 3, number(cs.flushedPct(), 2));
        QString binades = cs.scaleLog2.empty()
            ? QString()
            : tr("2^%1..2^%2").arg(cs.scaleLog2.begin()->first).arg(cs.scaleLog2.rbegin()->first);
        if (cs.zeroScaleBlocks)
            binades += tr(", %n block(s) with scale 0", nullptr, int(cs.zeroScaleBlocks));
        QStringList histogram;
        for (const auto &[log2, n] : cs.scaleLog2)
            histogram << tr("2^%1: %2 blocks").arg(log2).arg(n);
        auto *cell = item(binades);
        cell->setToolTip(histogram.join(QLatin1Char('\n')));
        m_whatIfModel->setItem(row, kBlocksColumn + 4, cell);
        // Where the damaged blocks lie and the same blocks with FP32 scales, on the census's cells.
        if (w.blocks) {
            for (int col = kBlocksColumn; col <= kBlocksColumn + 3; ++col)
                m_whatIfModel->item(row, col)->setToolTip(w.blocks->sentence());
        }
    }
    if (result.best) {
        const int row = int(*result.best);
        QFont bold = m_whatIfModel->item(row, 0)->font();
        bold.setBold(true);
        for (int col = 0; col < m_whatIfModel->columnCount(); ++col) {
            if (QStandardItem *cell = m_whatIfModel->item(row, col))
                cell->setFont(bold);
        }
        m_whatIfTitle->setText(title + QLatin1Char(' ')
            + tr("the best recipe, in bold: %1 (%2).")
                  .arg(whatIfLabel(result.rows[*result.best].recipe), whatIfCriterion()));
    }
    m_whatIf->resizeColumnsToContents();
}

void TriageWizard::fillSummary()
{
    m_filling = true;
    m_summaryModel->clear();
    m_summaryModel->setHorizontalHeaderLabels(
        {tr("Severity"), tr("Finding"), tr("Layer"), tr("Step"), tr("Summary"), tr("Review"), tr("Note")});
    if (m_data) {
        std::map<QString, FindingReview> reviews;
        for (const FindingReview &r : m_workspace->catalog().findingReviews(m_data->run, m_data->baseline))
            reviews[r.finding] = r;
        for (const analysis::Finding &f : m_data->comparison.findings) {
            const QString identity = analysis::findingIdentity(f);
            const auto review = reviews.find(identity);
            auto *state = new QStandardItem(
                reviewStateName(review != reviews.end() ? review->second.state : ReviewState::Open));
            auto *note = new QStandardItem(review != reviews.end() ? review->second.note : QString());
            QList<QStandardItem *> row {item(analysis::severityName(f.severity)),
                item(analysis::findingKindName(f.kind)), item(f.layer), integer(f.step),
                item(m_workspace->inRunNames(f.summary)), state, note};
            row[4]->setToolTip(m_workspace->inRunNames(
                f.suggestion.isEmpty() ? f.summary : f.summary + QLatin1Char('\n') + f.suggestion));
            row.front()->setData(identity, IdentityRole);
            row.front()->setData(int(f.kind), KindRole);
            row.front()->setData(QVariant::fromValue(m_data->run), RunRole);
            row.front()->setData(f.layer, LayerRole);
            row.front()->setData(f.tensor, TensorRole);
            row.front()->setData(f.step ? QVariant(qint64(*f.step)) : QVariant(), StepRole);
            m_summaryModel->appendRow(row);
        }
        m_summary->resizeColumnsToContents();
        // The review and note in view: a long summary is cut (its tooltip holds it whole).
        m_summary->setColumnWidth(4, std::min(m_summary->columnWidth(4), 460));
    }
    m_filling = false;
}

void TriageWizard::setReview(int row, const QString &state, const QString &note)
{
    if (row < 0 || row >= m_summaryModel->rowCount())
        return;
    {
        // One review kept, with both: the note without a store of its own, then the state.
        const bool was = m_filling;
        m_filling = true;
        m_summaryModel->item(row, kNoteColumn)->setText(note);
        m_filling = was;
    }
    m_summaryModel->item(row, kReviewColumn)->setText(state);
}

void TriageWizard::onSummaryEdited(QStandardItem *changed)
{
    if (m_filling || !m_data || (changed->column() != kReviewColumn && changed->column() != kNoteColumn))
        return;
    const int row = changed->row();
    const QString stateText = m_summaryModel->item(row, kReviewColumn)->text();
    const std::optional<ReviewState> state = reviewStateNamed(stateText);
    if (!state) {
        // Typed in rather than picked: said, not kept.
        const QString error = tr("a review's state is open, confirmed or dismissed, not '%1'").arg(stateText);
        m_status->setText(tr("The review was not kept: %1").arg(error));
        // Said as a kept one is, after the edit returns.
        QMetaObject::invokeMethod(
            this, [this, error] { Q_EMIT reviewStored(error); }, Qt::QueuedConnection);
        return;
    }
    const FindingReview review {m_summaryModel->item(row, 0)->data(IdentityRole).toString(), *state,
        m_summaryModel->item(row, kNoteColumn)->text(), QString()};
    m_workspace->storeReview(m_data->run, m_data->baseline, review, this, [this](const QString &error) {
        if (!error.isEmpty()) {
            m_status->setText(tr("The review was not kept: %1").arg(error));
            Q_EMIT reviewStored(error);
        } else {
            // Reviews apply to the next steps: the engine makes them again with the review kept (off this thread).
            finishAgain(false, [this] { Q_EMIT reviewStored(QString()); });
        }
    });
}

void TriageWizard::finishAgain(bool summary, std::function<void()> then)
{
    if (!m_data) {
        if (then)
            then();
        return;
    }
    auto data = std::make_shared<ComparisonData>(*m_data);
    m_workspace->query(
        m_slot + QStringLiteral("-finish"),
        [data](const Catalog &catalog) {
            analysis::finishComparison(catalog, &data->comparison);
            return QVariant(true);
        },
        this,
        [this, data, shown = m_data, summary, then = std::move(then)](const QVariant &) {
            // Another comparison shown meanwhile keeps its own.
            if (m_data == shown) {
                m_data = data;
                fillNextText();
                if (summary)
                    fillSummary();
            }
            if (then)
                then();
        });
}

QWidget *TriageWizard::evidence() const
{
    return m_evidence->currentIndex() > 0 ? m_evidence->currentWidget() : nullptr;
}

void TriageWizard::followLink(const QString &link)
{
    if (!m_data)
        return;
    if (link.startsWith(QLatin1String("step:"))) {
        bool ok = false;
        const qint64 step = link.mid(5).toLongLong(&ok);
        if (ok) {
            if (m_selection->run() != m_data->run && m_selection->run() != m_data->baseline)
                m_selection->setRun(m_data->run);
            m_selection->setStep(step);
        }
    } else if (link.startsWith(QLatin1String("comparison:"))) {
        Q_EMIT comparisonRequested(m_data->baseline, m_data->run);
    }
}

void TriageWizard::showSuspects()
{
    // The first suspect shown when the class step opens on a layer verdict (its row made current once).
    if (m_data && m_data->comparison.verdict == analysis::Verdict::MidRunInstability && m_classModel->rowCount() > 0
        && !m_class->currentIndex().isValid())
        m_class->setCurrentIndex(m_classModel->index(0, 0));
}

void TriageWizard::activateSummaryRow(const QModelIndex &index)
{
    // The review and note are edited there; elsewhere the row leads to the step (and views) showing it.
    if (!m_data || index.column() == kReviewColumn || index.column() == kNoteColumn)
        return;
    const QModelIndex first = m_summaryModel->index(index.row(), 0);
    const auto kind = analysis::FindingKind(first.data(KindRole).toInt());
    const QString layer = first.data(LayerRole).toString();
    const QVariant s = first.data(StepRole);
    // The step that shows the finding's evidence, from the engine's table of kinds.
    switch (analysis::findingKindInfo(kind).step) {
    case analysis::FindingStep::Class:
        setStep(ClassStep);
        for (int r = 0; r < m_classModel->rowCount(); ++r) {
            const QModelIndex c = m_classModel->index(r, 0);
            if (c.data(LayerRole).toString() == layer && c.data(StepRole) == s) {
                m_class->setCurrentIndex(c);
                break;
            }
        }
        return;
    case analysis::FindingStep::Loss:
        setStep(LossStep);
        if (s.isValid())
            followLink(QStringLiteral("step:%1").arg(s.toLongLong()));
        return;
    case analysis::FindingStep::Next: setStep(NextStep); return;
    case analysis::FindingStep::Runs:
        // A config or version difference is the class's evidence of an early divergence.
        setStep(m_data->comparison.verdict == analysis::Verdict::EarlyDivergence ? ClassStep : RunsStep);
        return;
    }
}

void TriageWizard::selectClassRow(const QModelIndex &index)
{
    const QModelIndex first = m_classModel->index(index.row(), 0);
    const RunRef r = first.data(RunRole).value<RunRef>();
    if (!r.isValid())
        return;
    const QString layer = first.data(LayerRole).toString();
    const QString tensor = first.data(TensorRole).toString();
    const QVariant s = first.data(SelectStepRole).isValid() ? first.data(SelectStepRole) : first.data(StepRole);
    m_selection->set(r, layer.isEmpty() ? m_selection->layer() : layer,
        tensor.isEmpty() ? m_selection->tensor() : tensor, s.isValid() ? s.toLongLong() : m_selection->step());
}

} // namespace fp8scope
