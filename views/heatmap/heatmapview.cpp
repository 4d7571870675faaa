#include "heatmapview.h"

#include "core/formats/expertnames.h"
#include "views/plotting/heatgradient.h"

#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QRegularExpression>
#include <QSpinBox>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fp8scope {

namespace {

// Layer names without the prefix they all share ("decoder.layers."), so the axis stays readable.
QStringList shortNames(const QStringList &layers)
{
    if (layers.size() < 2)
        return layers;
    qsizetype common = layers.front().size();
    for (const QString &l : layers) {
        qsizetype i = 0;
        while (i < common && i < l.size() && l[i] == layers.front()[i])
            ++i;
        common = i;
    }
    common = layers.front().left(common).lastIndexOf(QLatin1Char('.')) + 1;
    QStringList out;
    for (const QString &l : layers)
        out << l.mid(common);
    return out;
}

} // namespace

HeatmapView::HeatmapView(Workspace *workspace, Selection *selection, QWidget *parent)
    : HeatmapView(new WorkspaceHeatmapSource(workspace), selection, parent)
{
    m_source->setParent(this);
}

HeatmapView::HeatmapView(HeatmapSource *source, Selection *selection, QWidget *parent)
    : PlotView(QStringLiteral("heatmap"), parent)
    , m_source(source)
    , m_selection(selection)
    , m_slot(Workspace::newSlot(QStringLiteral("heatmap")))
    , m_runBox(new QComboBox(this))
    , m_statBox(new QComboBox(this))
    , m_tensorBox(new QComboBox(this))
    , m_recipeBox(new QComboBox(this))
    , m_sourceBox(new QComboBox(this))
    , m_expertsBox(new QComboBox(this))
    , m_expertBox(new QSpinBox(this))
    , m_logColour(new QCheckBox(tr("Log colour"), this))
    , m_threshold(new QCheckBox(tr("Above"), this))
    , m_thresholdValue(new QDoubleSpinBox(this))
    , m_map(new QCPColorMap(plot()->xAxis, plot()->yAxis))
    , m_scale(new QCPColorScale(plot()))
    , m_cursor(new QCPItemStraightLine(plot()))
    , m_message(new QCPItemText(plot()))
    , m_nonFiniteMarks(plot()->addGraph(plot()->xAxis, plot()->yAxis))
    , m_caveat(new QLabel(this))
{
    setUpControls();
    setUpPlot();
    connect(m_source, &HeatmapSource::runsChanged, this, &HeatmapView::fillRunBox);
    connect(m_source, &HeatmapSource::dataChanged, this, [this](RunRef r) {
        // Recomputed statistics: new names for the pickers, new values for the matrix (and its precision map).
        if (r == run()) {
            m_precisionRun = {};
            reloadPickers();
            reload();
        }
    });
    connect(m_selection, &Selection::changed, this, [this](Selection::Parts parts) {
        if (parts & Selection::Run && m_selection->run().isValid() && m_selection->run() != run())
            setRun(m_selection->run());
        if (parts & Selection::Tensor && !m_selection->tensor().isEmpty())
            setTensor(m_selection->tensor());
        if (parts & Selection::Layer)
            updateLayerTicks();
        if (parts & Selection::Step)
            updateCursor();
        if (parts & (Selection::Layer | Selection::Step))
            plot()->replot(QCustomPlot::rpQueuedReplot);
    });
    fillRunBox();
}

// The tool bar: run, statistic, tensor, recipe, source, log colour, threshold; and what each does.
void HeatmapView::setUpControls()
{
    m_runBox->setObjectName(QStringLiteral("heatmapRun"));
    m_statBox->setObjectName(QStringLiteral("heatmapStatistic"));
    m_tensorBox->setObjectName(QStringLiteral("heatmapTensor"));
    m_recipeBox->setObjectName(QStringLiteral("heatmapRecipe"));
    m_recipeBox->setToolTip(tr("The recipe these statistics were recomputed under"));
    m_recipeBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_sourceBox->setObjectName(QStringLiteral("heatmapSource"));
    m_sourceBox->setToolTip(tr("The source these statistics were read from"));
    // Source names run long ("golden:golden_values_lts_dgx_a100"): the box shows a few characters, its list
    // the whole names, so that it never widens the window.
    m_sourceBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_sourceBox->setMinimumContentsLength(12);
    m_logColour->setObjectName(QStringLiteral("heatmapLogColour"));
    m_threshold->setObjectName(QStringLiteral("heatmapThreshold"));
    m_threshold->setToolTip(tr("Colour the cells above this value in red"));
    m_thresholdValue->setObjectName(QStringLiteral("heatmapThresholdValue"));
    m_thresholdValue->setDecimals(4);
    m_thresholdValue->setRange(-1e12, 1e12);
    m_thresholdValue->setValue(2.0);
    // Its range would size it for thirteen digits; the values people type are short.
    m_thresholdValue->setMaximumWidth(
        m_thresholdValue->fontMetrics().horizontalAdvance(QStringLiteral("-00000.0000")) + 36);
    // The pickers are filled after the first show; without this they keep the width of an empty box and
    // cut "underflows%" to "underflo". Run names (cluster job names) can be long: the run picker shows
    // about 24 characters, its list and tooltip the whole name.
    m_statBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_tensorBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_runBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_runBox->setMinimumContentsLength(16);
    addControl(m_runBox);
    addControl(m_statBox);
    addControl(m_tensorBox);
    m_recipeAction = addControl(m_recipeBox);
    m_recipeAction->setVisible(false);
    m_sourceAction = addControl(m_sourceBox);
    m_sourceAction->setVisible(false);
    // A mixture-of-experts run's GEMMs: a row each, the reduction of their experts chosen here.
    m_expertsBox->setObjectName(QStringLiteral("heatmapExperts"));
    m_expertsBox->addItem(tr("Experts: worst"), int(ExpertRows::Max));
    m_expertsBox->addItem(tr("Experts: mean"), int(ExpertRows::Mean));
    m_expertsBox->addItem(tr("Experts: one"), int(ExpertRows::One));
    m_expertsBox->addItem(tr("Experts: each"), int(ExpertRows::All));
    m_expertsBox->setToolTip(tr("A GEMM's experts in one row: the worst (largest) expert's value at each step, their "
                                "mean, or one expert's; or a row per expert. Click a GEMM's row for its experts "
                                "map."));
    m_expertsBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_expertBox->setObjectName(QStringLiteral("heatmapExpert"));
    m_expertBox->setRange(0, 1 << 20);
    m_expertBox->setPrefix(tr("expert "));
    m_expertBox->setToolTip(tr("The expert each GEMM's row shows"));
    auto *back = new QToolButton(this);
    back->setObjectName(QStringLiteral("heatmapBack"));
    back->setText(tr("\u25C0 All layers"));
    back->setToolTip(tr("Back to every layer's row (Backspace)"));
    connect(back, &QToolButton::clicked, this, [this] { showExpertsOf(QString()); });
    m_backAction = addControl(back);
    m_backAction->setVisible(false);
    // Beside an experts map: the router's loss as a curve, to see whether an expert that moved was overloaded.
    auto *router = new QToolButton(this);
    router->setObjectName(QStringLiteral("heatmapRouter"));
    router->setText(tr("Router loss"));
    connect(router, &QToolButton::clicked, this, [this] {
        if (!m_routerStat.isEmpty())
            Q_EMIT curveRequested(m_routerStat);
    });
    m_routerAction = addControl(router);
    m_routerAction->setVisible(false);
    m_expertsAction = addControl(m_expertsBox);
    m_expertsAction->setVisible(false);
    m_expertAction = addControl(m_expertBox);
    m_expertAction->setVisible(false);
    connect(m_expertsBox, &QComboBox::currentIndexChanged, this, &HeatmapView::reload);
    connect(m_expertBox, &QSpinBox::valueChanged, this, [this] {
        if (expertRows() == ExpertRows::One)
            reload();
    });
    addControl(m_logColour);
    addControl(m_threshold);
    addControl(m_thresholdValue);

    connect(m_runBox, &QComboBox::currentIndexChanged, this, [this] {
        reloadPickers();
        reload();
    });
    connect(m_statBox, &QComboBox::currentIndexChanged, this, &HeatmapView::reload);
    connect(m_tensorBox, &QComboBox::currentIndexChanged, this, &HeatmapView::reload);
    connect(m_recipeBox, &QComboBox::currentIndexChanged, this, &HeatmapView::reload);
    connect(m_sourceBox, &QComboBox::currentIndexChanged, this, &HeatmapView::reload);
    connect(m_logColour, &QCheckBox::toggled, this, &HeatmapView::redraw);
    connect(m_threshold, &QCheckBox::toggled, this, &HeatmapView::redraw);
    connect(m_thresholdValue, &QDoubleSpinBox::valueChanged, this, [this] {
        if (m_threshold->isChecked())
            redraw();
    });
}

// The map and its colour scale, the step cursor, the message, the caveat line above the map, zooming and
// panning the layer axis, and the mouse (hover, click to pick a layer and step).
void HeatmapView::setUpPlot()
{
    plot()->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_map->setColorScale(m_scale);
    m_map->setInterpolate(false);
    m_cursor->setSelectable(false);
    m_cursor->setVisible(false);
    m_message->setSelectable(false);
    m_message->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_message->position->setCoords(0.5, 0.5);
    m_message->setPositionAlignment(Qt::AlignCenter);
    m_message->setTextAlignment(Qt::AlignCenter);
    m_message->setVisible(false);
    // What the statistic meant under the run's TE version: a line of its own between the controls and the map.
    m_caveat->setObjectName(QStringLiteral("heatmapCaveat"));
    m_caveat->setWordWrap(true);
    m_caveat->setAutoFillBackground(true);
    m_caveat->setBackgroundRole(QPalette::ToolTipBase);
    m_caveat->setForegroundRole(QPalette::ToolTipText);
    m_caveat->setContentsMargins(4, 2, 4, 2);
    m_caveat->setVisible(false);
    if (auto *box = qobject_cast<QVBoxLayout *>(layout()))
        box->insertWidget(1, m_caveat);
    m_map->setTightBoundary(false);
    // Not-finite values are marks, never colours: a black-and-white cross stands out of every gradient.
    m_nonFiniteMarks->setName(tr("NaN or Inf"));
    m_nonFiniteMarks->setLineStyle(QCPGraph::lsNone);
    m_nonFiniteMarks->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCrossSquare, QPen(Qt::black, 1.2), Qt::white, 7));
    m_nonFiniteMarks->setSelectable(QCP::stNone);
    m_nonFiniteMarks->removeFromLegend();
    plot()->yAxis->setRangeReversed(true);
    // Many layers in a short dock: the wheel zooms the layer axis and a drag pans it, so that every row can
    // be read and clicked; a double click shows all layers again. Steps stay whole (a column per pixel).
    plot()->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot()->axisRect()->setRangeDrag(Qt::Vertical);
    plot()->axisRect()->setRangeZoom(Qt::Vertical);
    connect(plot()->yAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, [this](const QCPRange &r) {
        // Kept within the layers and at least three rows (or all of them) tall.
        const double rows = std::max<double>(1, double(m_data.layers.size()));
        const double span = std::clamp(r.size(), std::min(3.0, rows), rows);
        const double lower = std::clamp(r.lower, -0.5, rows - 0.5 - span);
        if (std::abs(lower - r.lower) > 1e-9 || std::abs(span - r.size()) > 1e-9) {
            plot()->yAxis->setRange(lower, lower + span);
            return;
        }
        updateLayerTicks();
    });
    // The map holds a column per pixel of the axis rect, whose width QCustomPlot knows only once it has laid
    // the plot out: a map built while hidden (a width of 0 or less) is built again at the first layout that
    // gives it its width, before it is drawn (a resize event can come before that layout, with the old width).
    connect(plot(), &QCustomPlot::afterLayout, this, [this] {
        if (m_map->data()->keySize() != std::max(plot()->axisRect()->width(), 1)) {
            rebuildMap();
            sizeNonFiniteMarks();
        }
        // The layer names that fit depend on the height too: named again, drawn at the next replot.
        if (m_ticksHeight != plot()->axisRect()->height()) {
            updateLayerTicks();
            plot()->replot(QCustomPlot::rpQueuedReplot);
        }
    });
    connect(plot(), &QCustomPlot::mouseDoubleClick, this, [this] {
        plot()->yAxis->setRange(-0.5, std::max<qsizetype>(m_data.layers.size(), 1) - 0.5);
        plot()->replot(QCustomPlot::rpQueuedReplot);
    });
    plot()->xAxis->setLabel(tr("step"));
    auto *margins = new QCPMarginGroup(plot());
    plot()->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    applyPalette();
    applyGradient();
    connect(plot(), &QCustomPlot::mouseMove, this, &HeatmapView::onMouseMove);
    connect(plot(), &QCustomPlot::mousePress, this, &HeatmapView::onMousePress);
    connect(plot(), &QCustomPlot::mouseRelease, this, &HeatmapView::onMouseRelease);
}

void HeatmapView::fillRunBox()
{
    if (m_pending)
        m_source->cancel(m_pending);
    m_pending = 0;
    {
        const QSignalBlocker block(m_runBox);
        // The run drawn stays drawn while the source still offers it (another run shown or hidden).
        const RunRef was = run();
        m_runBox->clear();
        bool wasOffered = false;
        for (const auto &choice : m_source->runs()) {
            m_runBox->addItem(choice.label, QVariant::fromValue(choice.run));
            m_runBox->setItemData(m_runBox->count() - 1, choice.label, Qt::ToolTipRole);
            wasOffered = wasOffered || choice.run == was;
        }
        const RunRef pick = wasOffered ? was : m_source->preferredRun();
        for (int i = 0; i < m_runBox->count(); ++i) {
            if (m_runBox->itemData(i).value<RunRef>() == pick)
                m_runBox->setCurrentIndex(i);
        }
    }
    if (m_runBox->count() == 0) {
        setHeatmap({});
        return;
    }
    reloadPickers();
    reload();
}

void HeatmapView::setRun(RunRef r)
{
    for (int i = 0; i < m_runBox->count(); ++i) {
        if (m_runBox->itemData(i).value<RunRef>() == r) {
            m_runBox->setCurrentIndex(i);
            return;
        }
    }
}

RunRef HeatmapView::run() const
{
    return m_runBox->currentIndex() < 0 ? RunRef() : m_runBox->currentData().value<RunRef>();
}

void HeatmapView::setDataSource(const QString &source)
{
    const int i = m_sourceBox->findText(source);
    if (i >= 0)
        m_sourceBox->setCurrentIndex(i);
}

void HeatmapView::setStatistic(const QString &stat)
{
    const int i = m_statBox->findText(stat);
    if (i >= 0)
        m_statBox->setCurrentIndex(i);
}

QString HeatmapView::statistic() const
{
    return m_statBox->currentText();
}

void HeatmapView::setTensor(const QString &tensor)
{
    const int i = m_tensorBox->findText(tensor);
    if (i >= 0)
        m_tensorBox->setCurrentIndex(i);
}

QString HeatmapView::tensor() const
{
    return m_tensorBox->currentText();
}

void HeatmapView::setLogColour(bool on)
{
    m_logColour->setChecked(on);
}

bool HeatmapView::logColour() const
{
    return m_logColour->isChecked();
}

void HeatmapView::setThreshold(bool on, double value)
{
    const QSignalBlocker block(m_thresholdValue);
    m_thresholdValue->setValue(value);
    m_threshold->setChecked(on);
    redraw();
}

void HeatmapView::reloadPickers()
{
    const RunRef r = run();
    const QString stat = statistic().isEmpty() ? QStringLiteral("underflows%") : statistic();
    const QString tensorKind = tensor().isEmpty() ? QStringLiteral("activation") : tensor();
    std::set<QString> stats, tensors;
    if (r.isValid()) {
        for (const auto &[st, t] : m_source->statistics(r)) {
            stats.insert(st);
            tensors.insert(t);
        }
    }
    const QSignalBlocker b1(m_statBox), b2(m_tensorBox);
    m_statBox->clear();
    m_tensorBox->clear();
    for (const QString &s : stats)
        m_statBox->addItem(s);
    for (const QString &t : tensors)
        m_tensorBox->addItem(t);
    m_statBox->setCurrentIndex(std::max(0, m_statBox->findText(stat)));
    m_tensorBox->setCurrentIndex(std::max(0, m_tensorBox->findText(tensorKind)));
}

void HeatmapView::reload()
{
    if (m_pending)
        m_source->cancel(m_pending);
    m_pending = 0;
    const RunRef r = run();
    if (!r.isValid() || statistic().isEmpty() || tensor().isEmpty()) {
        setHeatmap({});
        return;
    }
    // The recipe and source chosen before hold where this statistic has them; the query layer picks otherwise.
    const MatrixRequest request {.stat = statistic(),
        .tensor = tensor(),
        .source = m_sourceBox->currentText(),
        .recipe = m_recipeBox->currentText(),
        .experts = expertRows(),
        .expert = m_expertBox->value(),
        .expertsOf = m_expertsOf};
    m_pending = m_source->load(r, request, m_slot, this, [this](const Heatmap &h) {
        m_pending = 0;
        setHeatmap(h);
    });
    // The run's precision map, once per run (and again when its statistics change): which rows to hatch.
    if (r != m_precisionRun) {
        m_precisionRun = r;
        m_precision = {};
        if (m_precisionPending)
            m_source->cancel(m_precisionPending);
        m_precisionPending
            = m_source->loadPrecision(r, m_slot + QStringLiteral("/precision"), this, [this](const PrecisionMap &map) {
                  m_precisionPending = 0;
                  m_precision = map;
                  updateHighPrecisionRows();
                  rebuildMap();
                  plot()->replot(QCustomPlot::rpQueuedReplot);
              });
    }
}

void HeatmapView::updateHighPrecisionRows()
{
    // A row in high precision for the whole run: a layer, or a GEMM whose experts all are.
    m_bf16Rows.clear();
    m_bf16Source.assign(size_t(m_data.layers.size()), QString());
    for (qsizetype y = 0; y < m_data.layers.size(); ++y) {
        const QStringList members = size_t(y) < m_data.rowLayers.size() && !m_data.rowLayers[size_t(y)].isEmpty()
            ? m_data.rowLayers[size_t(y)]
            : QStringList {m_data.layers[y]};
        const bool all = std::all_of(
            members.begin(), members.end(), [&](const QString &l) { return m_precision.highPrecisionThroughout(l); });
        if (!all)
            continue;
        m_bf16Rows.push_back(int(y));
        const PrecisionSpan *s = m_precision.at(members.front(), 0);
        m_bf16Source[size_t(y)] = s ? s->source : QString();
    }
    for (QCPItemRect *r : m_hatches)
        plot()->removeItem(r);
    m_hatches.clear();
    const auto [lo, hi] = keyRange();
    for (int y : m_bf16Rows) {
        auto *rect = new QCPItemRect(plot());
        rect->setSelectable(false);
        rect->topLeft->setCoords(lo, y - 0.5);
        rect->bottomRight->setCoords(hi, y + 0.5);
        rect->setPen(Qt::NoPen);
        rect->setBrush(QBrush(palette().color(QPalette::Mid), Qt::BDiagPattern));
        m_hatches.push_back(rect);
    }
}

void HeatmapView::setHeatmap(Heatmap heatmap)
{
    // The same rows again (new columns of a followed run, a recompute): the layers zoomed to stay in view.
    const bool sameRows = !m_data.layers.empty() && heatmap.layers == m_data.layers;
    const QCPRange rows = plot()->yAxis->range();
    m_data = std::move(heatmap);
    const int nx = int(m_data.steps.size());
    const int ny = int(m_data.layers.size());
    double hot = -INFINITY, cold = INFINITY;
    m_hotRow = -1;
    for (size_t i = 0; i < m_data.values.size() && nx > 0; ++i) {
        const double v = m_data.values[i];
        if (!std::isfinite(v))
            continue;
        cold = std::min(cold, v);
        if (v > hot) {
            hot = v;
            m_hotRow = int(i / size_t(nx));
        }
    }
    if (!(hot > cold))
        m_hotRow = -1;
    const auto [lo, hi] = keyRange();
    plot()->xAxis->setRange(lo, hi);
    plot()->yAxis->setRange(sameRows ? rows : QCPRange(-0.5, std::max(ny, 1) - 0.5));
    // A checkpoint's tensors have no step (-1): one column, and the axis says what it is.
    const bool checkpoint = nx == 1 && m_data.steps.front() < 0;
    plot()->xAxis->setLabel(checkpoint ? tr("checkpoint (no step)") : tr("step"));
    plot()->xAxis->setTickLabels(!checkpoint);
    // Across ranks, the label says which aggregate is shown; the source box says how the ranks divide.
    const QString acrossRanks = m_data.source == kRanksMax ? tr(", max across ranks")
        : m_data.source == kRanksMean                      ? tr(", mean across ranks")
                                                           : QString();
    m_scale->axis()->setLabel(statistic() + QLatin1Char(' ') + tensor()
        + (m_data.recipe.isEmpty() ? QString() : tr(" (%1)").arg(m_data.recipe)) + acrossRanks
        + (m_data.expertReduction.isEmpty() ? QString() : QStringLiteral(", ") + m_data.expertReduction)
        + (m_data.expertsOf.isEmpty() ? QString() : tr(", one GEMM's experts")));
    {
        // The experts' controls where there are experts: a grouped map, an experts map, or a row per expert.
        const bool experts = !m_data.rowExperts.empty() || !m_data.expertsOf.isEmpty()
            || std::any_of(
                m_data.layers.begin(), m_data.layers.end(), [](const QString &l) { return expertOf(l).has_value(); });
        m_expertsAction->setVisible(experts && m_data.expertsOf.isEmpty());
        m_expertAction->setVisible(experts && m_data.expertsOf.isEmpty() && expertRows() == ExpertRows::One);
        m_backAction->setVisible(!m_data.expertsOf.isEmpty());
        // The router's statistic of the GEMM's layer where the run logs one per layer (moe/..._layer_<i>, Megatron
        // numbering its MoE layers), else the run's.
        m_routerStat.clear();
        if (!m_data.expertsOf.isEmpty()) {
            const QStringList stats = m_source->routerStatistics(run());
            static const QRegularExpression layerNo(QStringLiteral(R"((?:^|\.)layers?\.(\d+)\.)"));
            const auto m = layerNo.match(m_data.expertsOf);
            for (const QString &s : stats) {
                if (m.hasMatch() && s.endsWith(QStringLiteral("_layer_") + m.captured(1))
                    && s.contains(QLatin1String("load_balancing")))
                    m_routerStat = s;
            }
            for (const char *name :
                {"load_balancing_loss", "seq_load_balancing_loss", "global_load_balancing_loss", "z_loss"}) {
                if (m_routerStat.isEmpty() && stats.contains(QLatin1String(name)))
                    m_routerStat = QLatin1String(name);
            }
        }
        m_routerAction->setVisible(!m_routerStat.isEmpty());
        if (auto *router = findChild<QToolButton *>(QStringLiteral("heatmapRouter")))
            router->setToolTip(
                tr("Draw %1 in the Curves tab: whether the router overloaded an expert").arg(m_routerStat));
        // The back button names the GEMM whose experts are shown (its last dotted parts; the whole on hover).
        if (auto *back = findChild<QToolButton *>(QStringLiteral("heatmapBack"))) {
            const QStringList parts = m_data.expertsOf.split(QLatin1Char('.'));
            const QString gemm
                = parts.size() > 5 ? parts.mid(parts.size() - 5).join(QLatin1Char('.')) : m_data.expertsOf;
            back->setText(tr("\u25C0 %1: all layers").arg(gemm));
            back->setToolTip(tr("The experts of %1; back to every layer's row (Backspace)").arg(m_data.expertsOf));
        }
    }
    {
        const QSignalBlocker block(m_recipeBox);
        m_recipeBox->clear();
        m_recipeBox->addItems(m_data.recipes);
        m_recipeBox->setCurrentIndex(m_recipeBox->findText(m_data.recipe));
        m_recipeAction->setVisible(!m_data.recipe.isEmpty());
    }
    {
        const QSignalBlocker block(m_sourceBox);
        m_sourceBox->clear();
        m_sourceBox->addItems(m_data.sources);
        m_sourceBox->setCurrentIndex(m_sourceBox->findText(m_data.source));
        m_sourceAction->setVisible(m_data.sources.size() > 1);
        m_sourceBox->setToolTip(
            m_data.ranksNote.isEmpty() ? tr("The source these statistics were read from") : m_data.ranksNote);
    }
    QString message;
    const RunRef r = run();
    if ((!nx || !ny) && r.isValid()) {
        message = m_statBox->count() == 0
            ? m_source->noStatisticsText(r)
            : tr("No %1 of %2 in %3.").arg(statistic(), tensor(), m_runBox->currentText());
    } else if (!r.isValid()) {
        message = m_source->noStatisticsText(RunRef());
    } else if (hot == 0.0 && cold == 0.0) {
        message = tr("Every value of %1 is 0 as logged. A log that prints four decimals\n"
                     "writes anything under 0.00005 as 0.0000: recompute from a dump to see it.")
                      .arg(statistic());
    }
    // Nothing drawn: no ticks or colour scale of what was drawn before.
    const bool empty = !nx || !ny;
    plot()->yAxis->setTickLabels(!empty);
    if (empty) {
        plot()->xAxis->setTickLabels(false);
        m_scale->axis()->setLabel(QString());
    }
    m_scale->axis()->setTickLabels(!empty);
    setAxesShown(!empty);
    m_message->setText(message);
    m_message->setColor(palette().color(QPalette::Text));
    m_message->setVisible(!message.isEmpty());
    m_caveat->setText(empty ? QString() : m_data.caveat);
    m_caveat->setVisible(!m_caveat->text().isEmpty());
    {
        QVector<double> xs, ys;
        for (const Heatmap::NonFiniteCell &c : m_data.nonFinite) {
            xs << double(m_data.steps[c.step]);
            ys << double(c.layer);
        }
        m_nonFiniteMarks->setData(xs, ys);
    }
    updateHighPrecisionRows();
    updateLayerTicks();
    updateCursor();
    rebuildMap();
    sizeNonFiniteMarks();
    redraw();
    Q_EMIT heatmapChanged();
}

QString HeatmapView::scaleLabel() const
{
    return m_scale->axis()->label();
}

QString HeatmapView::title() const
{
    const QString runName = m_runBox->currentText();
    return scaleLabel().isEmpty() ? tr("heatmap") : tr("%1 — %2 — layer by step").arg(scaleLabel(), runName);
}

QString HeatmapView::message() const
{
    return m_message->visible() ? m_message->text() : QString();
}

QString HeatmapView::caveat() const
{
    return m_caveat->text();
}

std::pair<double, double> HeatmapView::keyRange() const
{
    const size_t nx = m_data.steps.size();
    if (nx == 0)
        return {-0.5, 0.5};
    const double first = double(m_data.steps.front()), last = double(m_data.steps.back());
    if (nx == 1)
        return {first - 0.5, first + 0.5};
    return {first - 0.5 * (double(m_data.steps[1]) - first), last + 0.5 * (last - double(m_data.steps[nx - 2]))};
}

void HeatmapView::sizeNonFiniteMarks()
{
    // As wide as a cell (a row's height at most), 3 to 7 pixels: crosses that stay apart where cells are narrow.
    const double columns = std::max<double>(1, double(m_data.steps.size()));
    const double rows = std::max<double>(1, double(m_data.layers.size()));
    const double cell
        = std::min(double(plot()->axisRect()->width()) / columns, double(plot()->axisRect()->height()) / rows);
    QCPScatterStyle style = m_nonFiniteMarks->scatterStyle();
    style.setSize(std::clamp(cell, 3.0, 7.0));
    m_nonFiniteMarks->setScatterStyle(style);
}

void HeatmapView::rebuildMap()
{
    // The map is a grid of one column per pixel over the key range, so that each step's cell (half way to its
    // neighbours) lands where its step is on the axis, however uneven the steps. A pixel column shows the
    // cell its centre falls in, and the largest value of any step inside it, so that a hot cell never
    // disappears when there are more steps than pixels. Tooltips and clicks read the full matrix.
    const int nx = int(m_data.steps.size());
    const int ny = int(m_data.layers.size());
    const int columns = std::max(plot()->axisRect()->width(), 1);
    QCPColorMapData *d = m_map->data();
    d->setSize(columns, std::max(ny, 1));
    const auto [lo, hi] = keyRange();
    const double w = (hi - lo) / columns;
    d->setRange(QCPRange(lo + 0.5 * w, hi - 0.5 * w), ny > 1 ? QCPRange(0, ny - 1) : QCPRange(-0.5, 0.5));
    if (!nx || !ny) {
        d->fill(std::nan(""));
        m_linearRange = m_logRange = {INFINITY, -INFINITY};
        return;
    }
    // Per pixel column: the step whose cell holds its centre, and the steps that lie inside it.
    std::vector<int> centreStep(static_cast<size_t>(columns));
    std::vector<std::pair<int, int>> inside(static_cast<size_t>(columns)); // [first, last) step indices
    {
        int k = 0, a = 0;
        for (int c = 0; c < columns; ++c) {
            const double left = lo + c * w, right = lo + (c + 1) * w, centre = lo + (c + 0.5) * w;
            while (k + 1 < nx && 0.5 * (double(m_data.steps[size_t(k)]) + double(m_data.steps[size_t(k + 1)])) < centre)
                ++k;
            centreStep[size_t(c)] = k;
            while (a < nx && double(m_data.steps[size_t(a)]) < left)
                ++a;
            int b = a;
            while (b < nx && (double(m_data.steps[size_t(b)]) < right || (c == columns - 1 && b < nx)))
                ++b;
            inside[size_t(c)] = {a, b};
            a = b;
        }
    }
    // The colour range comes out of the same sweep: all finite values, and the positive ones for log.
    double vlo = INFINITY, vhi = -INFINITY, posLo = INFINITY, posHi = -INFINITY;
    for (const double r : m_data.values) {
        if (!std::isfinite(r))
            continue;
        vlo = std::min(vlo, r);
        vhi = std::max(vhi, r);
        if (r > 0) {
            posLo = std::min(posLo, r);
            posHi = std::max(posHi, r);
        }
    }
    for (int y = 0; y < ny; ++y) {
        const double *row = m_data.values.data() + size_t(y) * size_t(nx);
        if (std::binary_search(m_bf16Rows.begin(), m_bf16Rows.end(), y)) {
            // A GEMM in high precision: hatched, no colour (its statistics say nothing of an FP8 cast).
            for (int c = 0; c < columns; ++c)
                d->setCell(c, y, NAN);
            continue;
        }
        for (int c = 0; c < columns; ++c) {
            double v = row[centreStep[size_t(c)]];
            if (!std::isfinite(v))
                v = NAN;
            for (int x = inside[size_t(c)].first; x < inside[size_t(c)].second; ++x) {
                const double r = row[x];
                if (std::isfinite(r) && (std::isnan(v) || r > v))
                    v = r;
            }
            d->setCell(c, y, v);
        }
    }
    m_linearRange = {vlo, vhi};
    m_logRange = {posLo, posHi};
}

double HeatmapView::drawnValueAt(const QPointF &pixel) const
{
    if (m_data.steps.empty() || m_data.layers.isEmpty() || !plot()->axisRect()->rect().contains(pixel.toPoint()))
        return NAN;
    int key = 0, value = 0;
    m_map->data()->coordToCell(
        plot()->xAxis->pixelToCoord(pixel.x()), plot()->yAxis->pixelToCoord(pixel.y()), &key, &value);
    if (key < 0 || value < 0 || key >= m_map->data()->keySize() || value >= m_map->data()->valueSize())
        return NAN;
    return m_map->data()->cell(key, value);
}

void HeatmapView::updateLayerTicks()
{
    // As many layer names as fit one above the other, the rest skipped evenly. Two rows are always named, in
    // place of the evenly spaced names too close to them: the selected layer (marked) and the row holding
    // the largest value, the one a reader looks for first.
    const int ny = int(m_data.layers.size());
    const int rowPixels = fontMetrics().height() + 2;
    m_ticksHeight = plot()->axisRect()->height();
    const int fit = std::max(1, m_ticksHeight / rowPixels);
    // Rows in view (the layer axis may be zoomed in).
    const QCPRange shown = plot()->yAxis->range();
    const int first = std::clamp(int(std::ceil(shown.lower)), 0, std::max(ny - 1, 0));
    const int last = std::clamp(int(std::floor(shown.upper)), 0, std::max(ny - 1, 0));
    const int every = std::max(1, (last - first + fit) / fit);
    const int selected = rowOfLayer(m_selection->layer());
    const int hot = m_hotRow < ny && m_hotRow != selected ? m_hotRow : -1;
    const auto nearNamed = [&](int y) {
        return (selected >= 0 && std::abs(y - selected) < every) || (hot >= 0 && std::abs(y - hot) < every);
    };
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    QStringList names = shortNames(m_data.layers);
    for (qsizetype y = 0; y < names.size(); ++y) {
        // An experts map names its rows by expert; a GEMM's row says how many experts it stands for.
        if (!m_data.expertsOf.isEmpty()) {
            if (const auto e = expertOf(m_data.layers[y]))
                names[y] = expertLabel(e->expert);
        } else if (const int n = m_data.rowExpertCount(y); n > 0) {
            // One expert of each GEMM: that expert named; else how many the row stands for.
            names[y] += expertRows() == ExpertRows::One ? QStringLiteral(" (%1)").arg(m_data.expertReduction)
                                                        : QStringLiteral(" \u00D7%1").arg(n);
        } else if (const auto e = expertOf(m_data.layers[y])) {
            // A row per expert: its GEMM's name and the expert, as the experts map says it.
            names[y] = shortNames({e->gemm}).value(0) + QLatin1Char(' ') + expertLabel(e->expert);
        }
        if (std::binary_search(m_bf16Rows.begin(), m_bf16Rows.end(), int(y)))
            names[y] += tr(" [BF16]");
    }
    for (int y = first; y <= last && ny > 0; y += every) {
        if (!nearNamed(y))
            ticker->addTick(y, names[y]);
    }
    if (hot >= 0 && (selected < 0 || std::abs(hot - selected) >= every))
        ticker->addTick(hot, names[hot]);
    // Flagged layers (a comparison's suspects) are always named, marked, with their note.
    for (const auto &[layer, note] : m_flagged) {
        const int y = rowOfLayer(layer);
        if (y >= 0 && y != selected)
            ticker->addTick(y,
                QStringLiteral("\u26A0 ") + names[y]
                    + (note.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(note)));
    }
    if (selected >= 0)
        ticker->addTick(selected, QStringLiteral("\u25B6 ") + names[selected]);
    plot()->yAxis->setTicker(ticker);
}

void HeatmapView::setFlaggedLayers(const std::vector<std::pair<QString, QString>> &layers)
{
    m_flagged = layers;
    updateLayerTicks();
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::setDiverging(bool on, double midpoint)
{
    m_diverging = on;
    m_divergeAt = midpoint;
    redraw();
}

void HeatmapView::setColourRange(std::optional<std::pair<double, double>> range)
{
    m_sharedRange = range;
    redraw();
}

void HeatmapView::updateCursor()
{
    const qint64 step = m_selection->step();
    m_cursor->setVisible(step >= 0 && !m_data.steps.empty());
    m_cursor->point1->setCoords(double(step), 0);
    m_cursor->point2->setCoords(double(step), 1);
}

void HeatmapView::resizeEvent(QResizeEvent *event)
{
    PlotView::resizeEvent(event);
    // About a step label per 90 pixels, so that a narrow map's labels do not run into each other.
    plot()->xAxis->ticker()->setTickCount(std::clamp(plot()->axisRect()->width() / 90, 2, 8));
    updateLayerTicks();
    if (m_map->data()->keySize() != std::max(plot()->axisRect()->width(), 1))
        rebuildMap();
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::redraw()
{
    const bool logScale = m_logColour->isChecked();
    double lo = logScale ? m_logRange.first : m_linearRange.first;
    double hi = logScale ? m_logRange.second : m_linearRange.second;
    if (m_sharedRange && !logScale) {
        // One scale with another heatmap (a comparison's two runs).
        lo = m_sharedRange->first;
        hi = m_sharedRange->second;
    }
    if (m_diverging && !logScale && lo <= hi) {
        // Centred on the midpoint (0 for differences, 1 for ratios), as far each way.
        const double half = std::max(std::abs(lo - m_divergeAt), std::abs(hi - m_divergeAt));
        lo = m_divergeAt - half;
        hi = m_divergeAt + half;
    }
    if (!(lo <= hi)) {
        lo = logScale ? 1e-3 : 0;
        hi = 1;
    }
    if (hi == lo)
        hi = logScale ? lo * 10 : lo + 1;
    m_map->setDataScaleType(logScale ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    m_scale->axis()->setTicker(logScale ? QSharedPointer<QCPAxisTicker>(QSharedPointer<QCPAxisTickerLog>::create())
                                        : QSharedPointer<QCPAxisTicker>::create());
    m_map->setDataRange(QCPRange(lo, hi));
    applyGradient();
    // A map not laid out yet (a comparison's hidden layer view) has nothing to paint on; its first resize
    // replots it.
    if (!plot()->size().isEmpty())
        plot()->replot();
}

void HeatmapView::applyGradient()
{
    QCPColorGradient g = heatGradient();
    if (m_diverging && !m_logColour->isChecked()) {
        // Below the midpoint blue, above it red, the midpoint white (a colour-blind-safe diverging ramp).
        g.clearColorStops();
        g.setColorStopAt(0.0, QColor(33, 102, 172));
        g.setColorStopAt(0.25, QColor(103, 169, 207));
        g.setColorStopAt(0.5, QColor(247, 247, 247));
        g.setColorStopAt(0.75, QColor(239, 138, 98));
        g.setColorStopAt(1.0, QColor(178, 24, 43));
    }
    if (m_threshold->isChecked()) {
        // Below the threshold a quiet grey ramp; above it a red ramp, with a hard edge at the threshold.
        const QCPRange r = m_map->dataRange();
        const double thr = m_thresholdValue->value();
        double t = 0;
        if (m_logColour->isChecked() && thr > 0 && r.lower > 0)
            t = (std::log(thr) - std::log(r.lower)) / (std::log(r.upper) - std::log(r.lower));
        else
            t = (thr - r.lower) / (r.upper - r.lower);
        t = std::clamp(t, 0.0, 1.0);
        g = QCPColorGradient();
        g.clearColorStops();
        g.setColorStopAt(0, QColor(235, 235, 235));
        g.setColorStopAt(std::max(0.0, t - 1e-6), QColor(150, 150, 150));
        g.setColorStopAt(std::min(1.0, t + 1e-6), QColor(255, 170, 120));
        g.setColorStopAt(1, QColor(180, 0, 0));
        g.setLevelCount(1000);
    }
    g.setNanHandling(QCPColorGradient::nhTransparent);
    m_map->setGradient(g);
    // The step cursor: light on the dark colour ramp, dark on the threshold view's light grey.
    m_cursor->setPen(
        QPen(m_threshold->isChecked() ? QColor(40, 40, 40, 220) : QColor(255, 255, 255, 210), 1, Qt::DashLine));
}

bool HeatmapView::cellAt(const QPointF &pixel, int *layer, int *stepIndex) const
{
    const int nx = int(m_data.steps.size());
    const int ny = int(m_data.layers.size());
    if (!nx || !ny || !plot()->axisRect()->rect().contains(pixel.toPoint()))
        return false;
    const double x = plot()->xAxis->pixelToCoord(pixel.x());
    const double y = plot()->yAxis->pixelToCoord(pixel.y());
    const auto [lo, hi] = keyRange();
    const int cy = int(std::lround(y));
    if (x < lo || x > hi || cy < 0 || cy >= ny)
        return false;
    *layer = cy;
    *stepIndex = int(m_data.nearestColumn(x)); // the cell a step spans reaches half way to its neighbours
    return true;
}

QPointF HeatmapView::cellCentre(int layer, int stepIndex) const
{
    const double x
        = stepIndex >= 0 && size_t(stepIndex) < m_data.steps.size() ? double(m_data.steps[size_t(stepIndex)]) : 0;
    return {plot()->xAxis->coordToPixel(x), plot()->yAxis->coordToPixel(layer)};
}

QString HeatmapView::toolTipAt(const QPointF &pixel) const
{
    int layer = 0, col = 0;
    if (!cellAt(pixel, &layer, &col))
        return {};
    const double v = m_data.at(layer, size_t(col));
    const auto bad = std::find_if(m_data.nonFinite.begin(), m_data.nonFinite.end(),
        [&](const Heatmap::NonFiniteCell &c) { return c.layer == layer && c.step == size_t(col); });
    const QString value = bad != m_data.nonFinite.end() ? tr("%1 (not finite)")
                                                              .arg(std::isnan(bad->value) ? QStringLiteral("nan")
                                                                      : bad->value > 0    ? QStringLiteral("inf")
                                                                                          : QStringLiteral("-inf"))
        : std::isnan(v) ? tr("no value")
                        : QString::number(v, 'g', 6);
    QString tip = tr("%1\nstep %2\n%3 %4: %5")
                      .arg(m_data.layers[layer])
                      .arg(m_data.steps[size_t(col)])
                      .arg(tensor(), statistic(), value);
    if (size_t(layer) < m_bf16Source.size() && std::binary_search(m_bf16Rows.begin(), m_bf16Rows.end(), layer))
        tip += tr("\nin BF16 for the whole run (%1): not coloured").arg(m_bf16Source[size_t(layer)]);
    if (const int experts = m_data.rowExpertCount(layer); experts > 0) {
        // A GEMM's row: its experts, the one the value is from, and what a click opens.
        tip += tr("\n%1 experts, %2").arg(experts).arg(m_data.expertReduction);
        if (const int e = m_data.cellExpert(layer, size_t(col)); e >= 0 && expertRows() == ExpertRows::Max)
            tip += tr("\nthe worst: expert %1").arg(e);
        tip += tr("\nclick: the experts map of this GEMM");
    }
    const size_t cell = size_t(layer) * m_data.steps.size() + size_t(col);
    if (cell < m_data.ranks.size() && m_data.ranks[cell] >= 0 && (!std::isnan(v) || bad != m_data.nonFinite.end()))
        tip += tr("\nfrom rank %1").arg(m_data.ranks[cell]);
    else if (bad != m_data.nonFinite.end() && bad->rank >= 0)
        tip += tr("\nfrom rank %1").arg(bad->rank);
    return tip;
}

QString HeatmapView::csv() const
{
    QString out = QStringLiteral("layer");
    for (int64_t s : m_data.steps)
        out += QLatin1Char(',') + QString::number(s);
    out += QLatin1Char('\n');
    // A value that was not finite is written as logged (nan, inf); an absent one is an empty cell.
    std::map<std::pair<qsizetype, size_t>, double> bad;
    for (const Heatmap::NonFiniteCell &c : m_data.nonFinite)
        bad[{c.layer, c.step}] = c.value;
    for (qsizetype y = 0; y < m_data.layers.size(); ++y) {
        out += m_data.layers[y];
        for (size_t x = 0; x < m_data.steps.size(); ++x) {
            const double v = m_data.at(y, x);
            const auto b = bad.find({y, x});
            out += QLatin1Char(',')
                + (b != bad.end()       ? (std::isnan(b->second) ? QStringLiteral("nan")
                                 : b->second > 0                 ? QStringLiteral("inf")
                                                                 : QStringLiteral("-inf"))
                        : std::isnan(v) ? QString()
                                        : QString::number(v, 'g', QLocale::FloatingPointShortest));
        }
        out += QLatin1Char('\n');
        if (m_data.rowExpertCount(y) == 0)
            continue;
        // A GEMM's row of experts: the expert each value is from, as fp8scope-cli heatmap writes it.
        out += m_data.layers[y] + QStringLiteral(" [expert]");
        for (size_t x = 0; x < m_data.steps.size(); ++x) {
            const int e = m_data.cellExpert(y, x);
            out += QLatin1Char(',') + (e >= 0 ? QString::number(e) : QString());
        }
        out += QLatin1Char('\n');
    }
    return out;
}

void HeatmapView::onMouseMove(QMouseEvent *event)
{
    if (event->buttons() != Qt::NoButton)
        return;
    const QString tip = toolTipAt(event->position());
    if (tip.isEmpty())
        QToolTip::hideText();
    else
        QToolTip::showText(event->globalPosition().toPoint(), tip, plot());
}

void HeatmapView::onMousePress(QMouseEvent *event)
{
    m_pressPos = event->position();
}

void HeatmapView::onMouseRelease(QMouseEvent *event)
{
    int layer = 0, col = 0;
    if ((event->position() - m_pressPos).manhattanLength() > 3 || !cellAt(event->position(), &layer, &col))
        return;
    if (m_data.rowExpertCount(layer) > 0) {
        // A GEMM's row stands for its experts: the click opens them, the worst at that step selected.
        const int e = m_data.cellExpert(layer, size_t(col));
        QString worst;
        for (const QString &l : m_data.rowLayers[size_t(layer)]) {
            if (const auto x = expertOf(l); x && x->expert == e)
                worst = l;
        }
        const int64_t step = m_data.steps[size_t(col)];
        showExpertsOf(m_data.layers[layer]);
        if (worst.isEmpty())
            m_selection->setStep(step);
        else
            m_selection->set(run(), worst, tensor(), step);
        return;
    }
    m_selection->set(run(), m_data.layers[layer], tensor(), m_data.steps[size_t(col)]);
}

void HeatmapView::setExpertRows(ExpertRows rows)
{
    m_expertsBox->setCurrentIndex(m_expertsBox->findData(int(rows)));
}

ExpertRows HeatmapView::expertRows() const
{
    return ExpertRows(m_expertsBox->currentData().toInt());
}

void HeatmapView::setExpert(int expert)
{
    m_expertBox->setValue(expert);
}

void HeatmapView::showExpertsOf(const QString &gemm)
{
    if (gemm == m_expertsOf)
        return;
    m_expertsOf = gemm;
    reload();
}

int HeatmapView::rowOfLayer(const QString &layer) const
{
    if (layer.isEmpty())
        return -1;
    const int row = int(m_data.layers.indexOf(layer));
    if (row >= 0 || m_data.rowExperts.empty())
        return row;
    const auto e = expertOf(layer);
    return e ? int(m_data.layers.indexOf(e->gemm)) : -1;
}

void HeatmapView::keyPressEvent(QKeyEvent *event)
{
    if ((event->key() == Qt::Key_Backspace || event->key() == Qt::Key_Escape) && !m_expertsOf.isEmpty()) {
        showExpertsOf(QString());
        return;
    }
    if (event->key() == Qt::Key_Return || event->key() == Qt::Key_Enter) {
        // The selected layer's GEMM, where it is an expert's.
        if (const auto e = expertOf(m_selection->layer()); e && m_expertsOf.isEmpty()) {
            showExpertsOf(e->gemm);
            return;
        }
    }
    PlotView::keyPressEvent(event);
}

} // namespace fp8scope
