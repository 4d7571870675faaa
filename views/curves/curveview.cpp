#include "curveview.h"

#include "views/plotting/legendplacement.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSlider>
#include <QStandardItemModel>
#include <QTimer>
#include <QToolButton>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <set>

namespace fp8scope {

namespace {

const QString &kTensorPrefix = CurveModel::kTensorPrefix;

// Index of the value nearest to v in a sorted, non-empty vector.
size_t nearestIndex(const std::vector<double> &sorted, double v)
{
    auto it = std::lower_bound(sorted.begin(), sorted.end(), v);
    if (it == sorted.end())
        --it;
    else if (it != sorted.begin() && v - *(it - 1) < *it - v)
        --it;
    return size_t(it - sorted.begin());
}

} // namespace

CurveView::CurveView(Workspace *workspace, Selection *selection, QWidget *parent)
    : CurveView(new WorkspaceCurveSource(workspace), selection, parent)
{
    m_source->setParent(this);
}

CurveView::CurveView(CurveSource *source, Selection *selection, QWidget *parent)
    : PlotView(QStringLiteral("curves"), parent)
    , m_source(source)
    , m_selection(selection)
    , m_statBox(new QComboBox(this))
    , m_sourceBox(new QComboBox(this))
    , m_smoothBox(new QComboBox(this))
    , m_strength(new QSlider(Qt::Horizontal, this))
    , m_strengthValue(new QLabel(this))
    , m_logY(new QCheckBox(tr("Log y"), this))
    , m_xAxis(new QComboBox(this))
    , m_refetch(new QTimer(this))
    , m_cursor(new QCPItemStraightLine(plot()))
    , m_message(new QCPItemText(plot()))
    , m_note(new QCPItemText(plot()))
    , m_model(source)
{
    setUpControls();
    setUpPlot();
    connect(m_source, &CurveSource::statisticsChanged, this, &CurveView::reloadStatistics);
    connect(m_source, &CurveSource::curvesChanged, this, &CurveView::rebuild);
    connect(m_selection, &Selection::changed, this, [this](Selection::Parts parts) {
        if ((parts & (Selection::Layer | Selection::Tensor)) && statistic().startsWith(kTensorPrefix)) {
            m_haveRange = false;
            rebuild();
        } else if (parts & (Selection::Step | Selection::Run)) {
            updateCursor();
        }
    });
    reloadStatistics();
}

// The tool bar: statistic, source, smoothing and its strength, log y, x axis, reset; and what each does.
void CurveView::setUpControls()
{
    m_statBox->setObjectName(QStringLiteral("curveStatistic"));
    // Runs log dozens of statistics: typing filters the list (any part of the name), Enter picks.
    m_statBox->setEditable(true);
    m_statBox->setInsertPolicy(QComboBox::NoInsert);
    m_statBox->setMaxVisibleItems(24);
    m_statBox->completer()->setCompletionMode(QCompleter::PopupCompletion);
    m_statBox->completer()->setFilterMode(Qt::MatchContains);
    m_statBox->completer()->setCaseSensitivity(Qt::CaseInsensitive);
    m_statBox->lineEdit()->setPlaceholderText(tr("Statistic"));
    m_statBox->setToolTip(tr("The statistic to draw; type to filter"));
    m_statBox->setMinimumContentsLength(16); // "underflows% (tensor)" whole (an average character is wider)
    m_statBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_sourceBox->setObjectName(QStringLiteral("curveSource"));
    m_sourceBox->setToolTip(tr("Where several loggers hold the statistic: the one to draw (Auto: as the query layer "
                               "chooses, logged before recomputed, then the most points)"));
    // Source names run long ("golden:golden_values_lts_dgx_a100"): the box shows a few characters, its list
    // the whole names, so that it never widens the window.
    m_sourceBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_sourceBox->setMinimumContentsLength(6);
    m_smoothBox->setObjectName(QStringLiteral("curveSmoothing"));
    for (Smoothing s : {Smoothing::None, Smoothing::Ema, Smoothing::RunningMean, Smoothing::Gaussian})
        m_smoothBox->addItem(smoothingName(s), int(s));
    m_smoothBox->setCurrentIndex(1);
    m_strength->setObjectName(QStringLiteral("curveSmoothingStrength"));
    m_strength->setRange(0, 99);
    m_strength->setValue(60);
    m_strength->setFixedWidth(72);
    m_strength->setToolTip(tr("Smoothing strength"));
    m_smoothBox->setToolTip(
        tr("Smoothing (series of fewer than %1 points are drawn as logged)").arg(kMinSmoothedPoints));
    // The slider says its value: the EMA weight, or the half-width in points of the windowed kinds.
    m_strengthValue->setObjectName(QStringLiteral("curveSmoothingValue"));
    m_strengthValue->setMinimumWidth(m_strengthValue->fontMetrics().horizontalAdvance(QStringLiteral("0.00 ")));
    m_logY->setObjectName(QStringLiteral("curveLogY"));
    m_xAxis->setObjectName(QStringLiteral("curveXAxis"));
    m_xAxis->setToolTip(tr("The x axis: steps, or the samples or tokens consumed by each step"));
    m_xAxis->addItem(tr("x: step"));
    m_xAxis->addItem(tr("x: samples"));
    m_xAxis->addItem(tr("x: tokens"));
    auto *reset = new QToolButton(this);
    reset->setObjectName(QStringLiteral("curveReset"));
    reset->setText(tr("Reset"));
    reset->setToolTip(tr("Reset the zoom to the whole series"));

    m_statAction = addControl(m_statBox, true);
    m_sourceAction = addControl(m_sourceBox);
    m_sourceAction->setVisible(false);
    addControl(m_smoothBox);
    addControl(m_strength);
    addControl(m_strengthValue);
    addControl(m_logY);
    addControl(m_xAxis);
    addControl(reset);
    // Where no legend fits the plot (a short plot of many runs): the names on demand, over the curves.
    // A button in the plot's top right corner (a tool bar this narrow may have no room left for it).
    m_namesButton = new QToolButton(plot());
    m_namesButton->setObjectName(QStringLiteral("curveNames"));
    m_namesButton->setText(tr("Names"));
    m_namesButton->setCheckable(true);
    m_namesButton->setToolTip(tr("The plot is too short for a legend of its runs beside the curves: show it over "
                                 "them (the Runs panel names them in the same colours)"));
    m_namesButton->hide();
    connect(m_namesButton, &QToolButton::toggled, this, &CurveView::updateLegend);

    connect(m_statBox, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (m_statBox->itemData(index).toString().isEmpty() && index >= 0) {
            // A group header typed in full: keep the statistic drawn.
            const QSignalBlocker block(m_statBox);
            m_statBox->setCurrentIndex(m_statBox->findData(m_drawnStatistic));
            return;
        }
        m_drawnStatistic = statistic();
        m_statBox->lineEdit()->setCursorPosition(0); // the name's start in view, not its end
        m_haveRange = false;
        reloadSources();
        rebuild();
    });
    // Text typed that names no statistic gives way to the one drawn.
    connect(m_statBox->lineEdit(), &QLineEdit::editingFinished, this, [this] {
        if (m_statBox->findText(m_statBox->currentText()) < 0)
            m_statBox->setEditText(m_statBox->itemText(m_statBox->currentIndex()));
    });
    connect(m_sourceBox, &QComboBox::currentIndexChanged, this, [this] {
        m_haveRange = false;
        rebuild();
    });
    connect(m_smoothBox, &QComboBox::currentIndexChanged, this, &CurveView::applySmoothing);
    connect(m_strength, &QSlider::valueChanged, this, &CurveView::applySmoothing);
    connect(m_logY, &QCheckBox::toggled, this, [this](bool on) {
        plot()->yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
        if (on)
            plot()->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        else
            plot()->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        rebuild();
    });
    connect(m_xAxis, &QComboBox::currentIndexChanged, this, [this] {
        m_haveRange = false; // rebuild() labels the axis
        rebuild();
    });
    connect(reset, &QToolButton::clicked, this, &CurveView::resetZoom);
}

// The plot: dragging and zooming along x, the legend, the step cursor, the message and note texts, the
// refetch a pan or zoom schedules, and the mouse (hover, click to pick a step).
void CurveView::setUpPlot()
{
    plot()->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    // Min/max bands are filled polygons of a point per pixel: antialiasing them costs more than it shows.
    plot()->setNotAntialiasedElements(QCP::aeFills);
    plot()->setPlottingHints(QCP::phFastPolylines | QCP::phCacheLabels);
    plot()->axisRect()->setRangeDrag(Qt::Horizontal);
    plot()->axisRect()->setRangeZoom(Qt::Horizontal);
    plot()->xAxis->setLabel(tr("step"));
    plot()->legend->setVisible(true);
    plot()->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    QPen cursorPen(palette().color(QPalette::Text), 1, Qt::DashLine);
    m_cursor->setPen(cursorPen);
    m_cursor->setVisible(false);
    m_cursor->setSelectable(false);
    m_hoverLine = new QCPItemStraightLine(plot());
    QColor hoverColour = palette().color(QPalette::Text);
    hoverColour.setAlpha(110);
    m_hoverLine->setPen(QPen(hoverColour, 1, Qt::DotLine));
    m_hoverLine->setVisible(false);
    m_hoverLine->setSelectable(false);
    // Vertical lines at a plot x: their y from the axis rect, valid on a log axis too.
    for (QCPItemStraightLine *line : {m_cursor, m_hoverLine}) {
        line->point1->setTypeY(QCPItemPosition::ptAxisRectRatio);
        line->point2->setTypeY(QCPItemPosition::ptAxisRectRatio);
    }
    plot()->installEventFilter(this); // the mouse leaving the plot
    for (QCPItemText *t : {m_message, m_note}) {
        t->setSelectable(false);
        t->setVisible(false);
        t->position->setType(QCPItemPosition::ptAxisRectRatio);
        t->setClipToAxisRect(false);
        t->setColor(palette().color(QPalette::Text));
    }
    m_message->position->setCoords(0.5, 0.5);
    m_message->setPositionAlignment(Qt::AlignCenter);
    m_message->setTextAlignment(Qt::AlignCenter);
    m_note->position->setCoords(0.0, 0.0);
    m_note->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_note->setPadding(QMargins(6, 4, 6, 4));
    m_refetch->setSingleShot(true);
    m_refetch->setInterval(15);

    connect(m_refetch, &QTimer::timeout, this, &CurveView::rebuild);
    connect(plot()->xAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, [this] {
        if (!m_inRebuild)
            scheduleRefetch();
    });
    connect(plot(), &QCustomPlot::mouseMove, this, &CurveView::onMouseMove);
    connect(plot(), &QCustomPlot::mousePress, this, &CurveView::onMousePress);
    connect(plot(), &QCustomPlot::mouseRelease, this, &CurveView::onMouseRelease);
}

void CurveView::setStatistic(const QString &key)
{
    const int i = m_statBox->findData(key);
    if (i >= 0)
        m_statBox->setCurrentIndex(i);
}

QString CurveView::statistic() const
{
    return m_statBox->currentData().toString();
}

void CurveView::setStatisticPickerVisible(bool on)
{
    m_statAction->setVisible(on);
}

void CurveView::setDataSource(const QString &source)
{
    const int i = m_sourceBox->findData(source);
    if (i >= 0)
        m_sourceBox->setCurrentIndex(i);
}

QString CurveView::dataSource() const
{
    return m_sourceBox->currentData().toString();
}

void CurveView::reloadSources()
{
    const QString current = dataSource();
    const QString key = statistic();
    QStringList sources;
    for (const CurveSource::Statistic &s : m_statistics) {
        if (!s.tensorLevel && s.stat == key)
            sources = s.sources;
    }
    const QSignalBlocker block(m_sourceBox);
    m_sourceBox->clear();
    m_sourceBox->addItem(tr("Auto"), QString());
    for (const QString &s : sources)
        m_sourceBox->addItem(s, s);
    m_sourceBox->setCurrentIndex(std::max(0, m_sourceBox->findData(current)));
    m_sourceAction->setVisible(sources.size() > 1);
}

void CurveView::setSmoothing(Smoothing kind, double strength)
{
    const QSignalBlocker b1(m_smoothBox), b2(m_strength);
    m_smoothBox->setCurrentIndex(m_smoothBox->findData(int(kind)));
    m_strength->setValue(int(std::lround(strength * 100)));
    applySmoothing();
}

Smoothing CurveView::smoothingKind() const
{
    return Smoothing(m_smoothBox->currentData().toInt());
}

double CurveView::smoothingStrength() const
{
    return m_strength->value() / 100.0;
}

void CurveView::setLogY(bool on)
{
    m_logY->setChecked(on);
}

bool CurveView::logY() const
{
    return m_logY->isChecked();
}

void CurveView::setXAxis(XAxis axis)
{
    m_xAxis->setCurrentIndex(int(axis));
}

CurveView::XAxis CurveView::xAxis() const
{
    return XAxis(std::clamp(m_xAxis->currentIndex(), 0, 2));
}

bool CurveView::isFollowingEnd() const
{
    if (!m_haveRange || !m_haveExtent)
        return true;
    const QCPRange visible = plot()->xAxis->range();
    return visible.upper >= m_extentHi - 0.01 * visible.size();
}

void CurveView::resetZoom()
{
    m_haveRange = false;
    rebuild();
}

void CurveView::reloadStatistics()
{
    m_statistics = m_source->statistics();
    m_model.reloadMappings();
    const QString current = statistic();
    {
        const QSignalBlocker block(m_statBox);
        m_statBox->clear();
        // Two groups under headers that cannot be chosen: the run's statistics, then the selected tensor's.
        const auto addHeader = [this](const QString &text) {
            m_statBox->addItem(text);
            auto *model = qobject_cast<QStandardItemModel *>(m_statBox->model());
            if (QStandardItem *item = model ? model->item(m_statBox->count() - 1) : nullptr) {
                item->setFlags(Qt::NoItemFlags);
                QFont bold = item->font();
                bold.setBold(true);
                item->setFont(bold);
            }
        };
        for (const bool tensorLevel : {false, true}) {
            bool headed = false;
            for (const CurveSource::Statistic &s : m_statistics) {
                if (s.tensorLevel != tensorLevel)
                    continue;
                if (!headed)
                    addHeader(tensorLevel ? tr("Selected tensor") : tr("Run"));
                headed = true;
                if (tensorLevel)
                    m_statBox->addItem(tr("%1 (tensor)").arg(s.stat), QString(kTensorPrefix + s.stat));
                else
                    m_statBox->addItem(s.stat, s.stat);
            }
        }
        int i = m_statBox->findData(current);
        if (i < 0)
            i = m_statBox->findData(QStringLiteral("lm loss"));
        // Runs with no statistic of their own (TE's debug statistics only): a tensor statistic that says
        // something at once, not the first by name (an `mse` that is 0 wherever no cast happened).
        for (const char *stat : kInformativeTensorStatistics) {
            if (i < 0 && !std::any_of(m_statistics.begin(), m_statistics.end(), [](const CurveSource::Statistic &st) {
                    return !st.tensorLevel;
                }))
                i = m_statBox->findData(QString(kTensorPrefix + QLatin1String(stat)));
        }
        if (i < 0 && m_statBox->count() > 1)
            i = 1; // the first statistic under the first header
        m_statBox->setCurrentIndex(i);
        m_drawnStatistic = statistic();
        m_statBox->lineEdit()->setCursorPosition(0);
    }
    reloadSources();
    const bool anySamples = m_model.hasCountsFor(XAxis::Samples);
    const bool anyTokens = m_model.hasCountsFor(XAxis::Tokens);
    // An axis no run has counts for cannot be chosen.
    if (auto *model = qobject_cast<QStandardItemModel *>(m_xAxis->model())) {
        for (auto [row, on] : {std::pair(1, anySamples), std::pair(2, anyTokens)}) {
            if (QStandardItem *item = model->item(row))
                item->setEnabled(on);
        }
    }
    m_xAxis->setEnabled(anySamples || anyTokens);
    if ((xAxis() == XAxis::Samples && !anySamples) || (xAxis() == XAxis::Tokens && !anyTokens))
        m_xAxis->setCurrentIndex(0);
    m_haveRange = false;
    rebuild();
}

void CurveView::updateLegend()
{
    // Kept at every size: inside where no curve or mark is, else above the axes or at the lines' ends; where
    // none fits (a short plot of many runs), the run list's colours name them, and the hover's tooltip.
    plot()->legend->setVisible(m_legendShown && !m_curves.empty());
    const LegendPlacement placed = placeLegend(plot());
    m_namesButton->setVisible(placed.hidden);
    if (placed.hidden) {
        m_namesButton->adjustSize();
        m_namesButton->move(plot()->width() - m_namesButton->width() - 4, 2);
        m_namesButton->raise();
        if (m_namesButton->isChecked() && plot()->legend->itemCount() > 0) {
            // Asked for: over the curves, in a corner, in as many columns as keep it within the axes' height.
            QCPLegend *legend = plot()->legend;
            plot()->plotLayout()->update(QCPLayoutElement::upPreparation);
            const int item = legend->item(0)->minimumOuterSizeHint().height() + legend->rowSpacing();
            const int rows = std::max(1, (plot()->axisRect()->height() - 12) / std::max(1, item));
            legend->setFillOrder(QCPLayoutGrid::foRowsFirst, false);
            legend->setWrap(rows);
            legend->setFillOrder(QCPLayoutGrid::foRowsFirst, true);
            legend->setVisible(true);
            plot()->plotLayout()->update(QCPLayoutElement::upLayout);
        }
    }
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

void CurveView::resizeEvent(QResizeEvent *event)
{
    PlotView::resizeEvent(event);
    // About one x tick a 110 pixels: step numbers of five digits never run into each other.
    plot()->xAxis->ticker()->setTickCount(std::clamp(width() / 110, 2, 10));
    updateLegend();
    // Again once the plot has its own new size (a view shown after it was sized gets its resize before its
    // plot does: the legend was placed for the old width).
    QTimer::singleShot(0, this, &CurveView::updateLegend);
    // Buckets are one per pixel column: a wider or narrower plot asks again.
    if (m_haveRange)
        scheduleRefetch();
}

void CurveView::scheduleRefetch()
{
    m_refetch->start();
}

void CurveView::refetchNow()
{
    m_refetch->stop();
    const bool was = m_fetchWhileHidden;
    m_fetchWhileHidden = true;
    rebuild();
    m_fetchWhileHidden = was;
}

void CurveView::showEvent(QShowEvent *event)
{
    PlotView::showEvent(event);
    if (m_fetchPending)
        scheduleRefetch();
}

double CurveView::xOfStep(RunRef run, double step) const
{
    return m_model.xOfStep(xAxis(), run, step);
}

double CurveView::stepOfX(RunRef run, double x) const
{
    return m_model.stepOfX(xAxis(), run, x);
}

CurveView::RunCurve CurveView::addCurve(const CurveModel::Curve &curve)
{
    RunCurve c {.run = curve.run,
        .series = curve.series,
        .steps = curve.steps,
        .xs = QVector<double>(curve.xs.begin(), curve.xs.end()),
        .values = curve.values,
        .mins = curve.mins,
        .maxs = curve.maxs,
        .bucketed = curve.bucketed,
        .inLegend = m_source->inLegend(curve.run)};
    const QColor colour = m_source->runColour(c.run);
    QColor faint = colour;
    faint.setAlpha(70);
    if (c.bucketed) {
        c.low = plot()->addGraph();
        c.high = plot()->addGraph();
        c.low->setName(curve.name + tr(" min"));
        c.high->setName(curve.name + tr(" max"));
        c.low->setPen(QPen(faint));
        c.high->setPen(QPen(faint));
        c.low->setBrush(QBrush(faint));
        c.low->setChannelFillGraph(c.high);
        c.low->setData(c.xs, QVector<double>(c.mins.begin(), c.mins.end()), true);
        c.high->setData(c.xs, QVector<double>(c.maxs.begin(), c.maxs.end()), true);
        c.low->removeFromLegend();
        c.high->removeFromLegend();
    } else {
        c.raw = plot()->addGraph();
        c.raw->setName(curve.name + tr(" raw"));
        c.raw->setPen(QPen(faint));
        c.raw->setData(c.xs, QVector<double>(c.values.begin(), c.values.end()), true);
        c.raw->removeFromLegend();
    }
    c.smoothed = plot()->addGraph();
    c.smoothed->setName(curve.name);
    if (!c.inLegend)
        c.smoothed->removeFromLegend();
    c.smoothed->setPen(QPen(QBrush(colour), 1.5, m_source->runLineStyle(c.run)));
    if (c.xs.size() == 1) {
        // One point (a checkpoint's value, or a run's first logged step) draws no line: mark it.
        for (QCPGraph *g : {c.raw, c.smoothed}) {
            if (g)
                g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, 7));
        }
    }
    return c;
}

void CurveView::rebuild()
{
    m_refetch->stop();
    if (!m_fetchWhileHidden && !isVisible()) {
        m_fetchPending = true;
        return;
    }
    m_fetchPending = false;
    m_inRebuild = true;
    plot()->clearGraphs();
    m_curves.clear();
    m_marks.clear();
    const QCPRange visible = plot()->xAxis->range();
    const bool following = isFollowingEnd();
    const bool wholeShown = !m_haveExtent || visible.lower <= m_extentLo + 0.01 * visible.size();
    const CurveModel::Drawing drawing = m_model.fetch({.statistic = statistic(),
        .layer = m_selection->layer(),
        .tensor = m_selection->tensor(),
        .dataSource = dataSource(),
        .axis = xAxis(),
        .resolution = std::max(100, plot()->axisRect()->width()),
        .visible = m_haveRange ? std::optional(std::pair(visible.lower, visible.upper)) : std::nullopt,
        .sourceHasStatistics = !m_statistics.empty()});
    for (const CurveModel::Curve &curve : drawing.curves)
        m_curves.push_back(addCurve(curve));
    plot()->xAxis->setLabel(drawing.xLabel);
    plot()->xAxis->setTickLabels(!drawing.checkpointOnly);
    plot()->yAxis->setLabel(drawing.yLabel);
    const bool haveExtent = drawing.extentLo <= drawing.extentHi;
    const bool grew = m_haveRange && m_haveExtent && haveExtent && drawing.extentHi > m_extentHi;
    const double oldHi = m_extentHi;
    m_haveExtent = haveExtent;
    if (m_haveExtent) {
        m_extentLo = drawing.extentLo;
        m_extentHi = drawing.extentHi;
    }
    if (grew && following) {
        // A growing run (its folder followed): the view at the end goes on showing the end, the whole series
        // when it showed the whole, else the same width moved along; then fetch what that range holds.
        const QCPRange range = wholeShown
            ? QCPRange(visible.lower, drawing.extentHi)
            : QCPRange(visible.lower + (drawing.extentHi - oldHi), visible.upper + (drawing.extentHi - oldHi));
        plot()->xAxis->setRange(range);
        m_inRebuild = false;
        rebuild();
        return;
    }
    if (!m_haveRange && drawing.lo <= drawing.hi) {
        // A single step is centred rather than put at the left edge.
        const double lo = drawing.lo, hi = drawing.hi;
        plot()->xAxis->setRange(hi > lo ? lo : lo - 0.5, hi > lo ? hi : lo + 0.5);
        m_haveRange = true;
    }
    addMarks();
    plot()->yAxis->setTickLabels(!m_curves.empty());
    setAxesShown(!m_curves.empty());
    if (m_curves.empty()) {
        // Nothing drawn: no axes of what was drawn before (another folder's steps and values).
        plot()->xAxis->setTickLabels(false);
        plot()->xAxis->setRange(0, 1);
        plot()->yAxis->setRange(0, 1);
        m_haveRange = false;
    }
    // Said in place of curves: why there are none, or that every value is 0; above them: runs left out.
    m_message->setText(drawing.message);
    m_message->setVisible(!drawing.message.isEmpty());
    m_note->setText(drawing.note);
    m_note->setVisible(!drawing.note.isEmpty());
    m_inRebuild = false;
    applySmoothing();
    Q_EMIT rebuilt();
}

void CurveView::applySmoothing()
{
    const Smoothing kind = smoothingKind();
    const double strength = smoothingStrength();
    m_strength->setEnabled(kind != Smoothing::None);
    m_strengthValue->setEnabled(kind != Smoothing::None);
    m_strengthValue->setText(kind == Smoothing::Ema ? QString::number(strength, 'f', 2)
            : kind == Smoothing::None               ? QString()
                                                    : tr("±%1").arg(smoothingHalfWidth(strength)));
    for (RunCurve &c : m_curves) {
        const Smoothing own = smoothingOf(c);
        const std::vector<double> s = smooth(c.values, own, strength);
        c.smoothed->setData(c.xs, QVector<double>(s.begin(), s.end()), true);
        if (c.raw) {
            QColor col = m_source->runColour(c.run);
            col.setAlpha(own == Smoothing::None ? 255 : 70);
            c.raw->setPen(QPen(QBrush(col), own == Smoothing::None ? 1.5 : 1.0,
                own == Smoothing::None ? m_source->runLineStyle(c.run) : Qt::SolidLine));
            c.smoothed->setVisible(own != Smoothing::None);
            // The legend entry follows the line that is drawn.
            if (own == Smoothing::None) {
                c.smoothed->removeFromLegend();
                c.raw->setName(c.smoothed->name());
                if (c.inLegend)
                    c.raw->addToLegend();
            } else {
                c.raw->removeFromLegend();
                if (c.inLegend)
                    c.smoothed->addToLegend();
            }
        }
    }
    m_inRebuild = true;
    bool found = false;
    QCPRange yr;
    for (const RunCurve &c : m_curves) {
        for (QCPGraph *g : {c.raw, c.low, c.high, c.smoothed}) {
            if (!g)
                continue;
            // Over the finite values only: an infinite value (a step that overflowed, drawn as a mark) made
            // QCustomPlot's own range infinite, which the axis refuses, keeping the last statistic's range.
            bool ok = false;
            QCPRange r;
            for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) {
                const double v = it->value;
                if (!std::isfinite(v) || (m_logY->isChecked() && v <= 0))
                    continue;
                r = ok ? QCPRange(std::min(r.lower, v), std::max(r.upper, v)) : QCPRange(v, v);
                ok = true;
            }
            if (ok) {
                yr = found ? QCPRange(std::min(yr.lower, r.lower), std::max(yr.upper, r.upper)) : r;
                found = true;
            }
        }
    }
    if (found) {
        if (m_logY->isChecked())
            plot()->yAxis->setRange(yr.lower / 1.1, yr.upper * 1.1);
        else {
            // A flat range (one point, or a constant statistic) gets a tenth of its value either side, so
            // that the ticks do not all print the same number.
            const double flat = std::abs(yr.upper) * 1e-9;
            const double pad = yr.size() > flat ? yr.size() * 0.05 : yr.upper != 0.0 ? std::abs(yr.upper) * 0.1 : 1.0;
            plot()->yAxis->setRange(yr.lower - pad, yr.upper + pad);
        }
    }
    m_inRebuild = false;
    // Placed on what is drawn now: the lines as smoothed, on their y range.
    updateLegend();
    updateCursor();
}

QString CurveView::markName(CurveSource::Event::Kind kind)
{
    switch (kind) {
    case CurveSource::Event::Skipped: return tr("skipped iterations");
    case CurveSource::Event::NotFinite: return tr("NaN or Inf");
    case CurveSource::Event::LossScaleDrop: return tr("loss scale cut");
    case CurveSource::Event::Restart: return tr("restart");
    case CurveSource::Event::Spike: return tr("spike");
    }
    return {};
}

void CurveView::addMarks()
{
    // Along the bottom of the plot (on the hidden right axis, 0..1), a shape per kind in the run's colour.
    plot()->yAxis2->setRange(0, 1);
    std::set<CurveSource::Event::Kind> inLegend;
    for (const RunCurve &c : m_curves) {
        std::vector<Mark> marks;
        for (const CurveSource::Event &e : m_source->events(c.run))
            marks.push_back({c.run, e.step, e.kind, e.value, xOfStep(c.run, double(e.step))});
        if (!c.bucketed) {
            // The statistic's own NaN and Inf points, which draw as gaps.
            for (size_t i = 0; i < c.values.size(); ++i) {
                if (!std::isfinite(c.values[i]))
                    marks.push_back({c.run, qint64(std::lround(c.steps[i])), CurveSource::Event::NotFinite, c.values[i],
                        c.xs[qsizetype(i)]});
            }
        }
        for (const auto kind : CurveSource::kEventKinds) {
            QVector<double> xs, ys;
            // Rows along the bottom: what went wrong in training low, what the curve shows above it.
            const double y = kind == CurveSource::Event::Skipped || kind == CurveSource::Event::NotFinite ? 0.03
                : kind == CurveSource::Event::Spike                                                       ? 0.09
                                                                                                          : 0.06;
            for (const Mark &m : marks) {
                if (m.kind == kind) {
                    xs << m.x;
                    ys << y;
                }
            }
            if (xs.isEmpty())
                continue;
            QCPGraph *g = plot()->addGraph(plot()->xAxis, plot()->yAxis2);
            g->setName(markName(kind));
            g->setLineStyle(QCPGraph::lsNone);
            const QColor colour = m_source->runColour(c.run);
            const auto shape = kind == CurveSource::Event::Skipped ? QCPScatterStyle::ssTriangleInverted
                : kind == CurveSource::Event::NotFinite            ? QCPScatterStyle::ssCross
                : kind == CurveSource::Event::Restart              ? QCPScatterStyle::ssSquare
                : kind == CurveSource::Event::Spike                ? QCPScatterStyle::ssDiamond
                                                                   : QCPScatterStyle::ssTriangle;
            g->setScatterStyle(QCPScatterStyle(shape, colour, colour, 8));
            g->setData(xs, ys, true);
            g->setSelectable(QCP::stNone);
            if (!inLegend.insert(kind).second)
                g->removeFromLegend();
        }
        m_marks.insert(m_marks.end(), marks.begin(), marks.end());
    }
}

Smoothing CurveView::smoothingOf(const RunCurve &curve) const
{
    // A short series is drawn as logged.
    return curve.values.size() < size_t(kMinSmoothedPoints) ? Smoothing::None : smoothingKind();
}

void CurveView::updateCursor()
{
    const qint64 step = m_selection->step();
    RunRef run = m_selection->run();
    if (!m_model.placesOn(xAxis(), run) && !m_curves.empty())
        run = m_curves.front().run;
    m_cursor->setVisible(step >= 0);
    if (step >= 0) {
        const double x = xOfStep(run, double(step));
        m_cursor->point1->setCoords(x, 0);
        m_cursor->point2->setCoords(x, 1);
    }
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

QString CurveView::toolTipAt(double x) const
{
    QStringList lines;
    for (const RunCurve &c : m_curves) {
        const size_t i = nearestIndex(c.steps, stepOfX(c.run, x));
        const QString value = c.bucketed
            ? tr("%1 .. %2").arg(QString::number(c.mins[i], 'g', 5), QString::number(c.maxs[i], 'g', 5))
            : QString::number(c.values[i], 'g', 6);
        lines << tr("%1: %2 (step %3)").arg(m_source->runName(c.run), value).arg(qint64(std::lround(c.steps[i])));
    }
    // Events within a few pixels.
    const double px = plot()->xAxis->coordToPixel(x);
    for (const Mark &m : m_marks) {
        if (std::abs(plot()->xAxis->coordToPixel(m.x) - px) > 4)
            continue;
        const QString what = m.kind == CurveSource::Event::LossScaleDrop
            ? tr("loss scale cut to %1").arg(m.value, 0, 'g', 6)
            : m.kind == CurveSource::Event::Restart
            ? tr("restarted here, after reaching step %1").arg(m.value, 0, 'f', 0)
            : m.kind == CurveSource::Event::Spike   ? tr("spike, %1 sigmas above its level").arg(m.value, 0, 'f', 1)
            : m.kind == CurveSource::Event::Skipped ? tr("%1 skipped iteration(s)").arg(m.value, 0, 'g', 6)
            : std::isfinite(m.value)                ? tr("%1 iteration(s) with NaN or Inf").arg(m.value, 0, 'g', 6)
                                                    : tr("value %1").arg(m.value);
        lines << tr("%1, step %2: %3").arg(m_source->runName(m.run)).arg(m.step).arg(what);
    }
    return lines.join(QLatin1Char('\n'));
}

QString CurveView::message() const
{
    return m_message->visible() ? m_message->text() : QString();
}

QString CurveView::note() const
{
    return m_note->visible() ? m_note->text() : QString();
}

QString CurveView::title() const
{
    QStringList names;
    for (const RunCurve &c : m_curves)
        names << m_source->runName(c.run);
    return tr("%1 — %2 — by %3")
        .arg(plot()->yAxis->label(), names.isEmpty() ? tr("no runs") : names.join(QStringLiteral(", ")), xAxisName());
}

QString CurveView::csv() const
{
    // The header names the statistic and the x axis; numbers are the shortest text that reads back as the
    // same double (10.53752, not 10.537520000000001).
    const auto number = [](double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); };
    const auto field = [](QString name) { return name.replace(QLatin1Char(','), QLatin1Char(' ')); };
    const QString stat = field(statistic());
    QString out
        = QStringLiteral("run,step,%1,%2,%2 min,%2 max,%2 smoothed\n").arg(QStringLiteral("x: ") + xAxisName(), stat);
    for (const RunCurve &c : m_curves) {
        const std::vector<double> s = smooth(c.values, smoothingOf(c), smoothingStrength());
        for (size_t i = 0; i < c.steps.size(); ++i) {
            out += field(m_source->runName(c.run)) + QLatin1Char(',') + QString::number(qint64(std::lround(c.steps[i])))
                + QLatin1Char(',') + number(c.xs[qsizetype(i)]) + QLatin1Char(',') + number(c.values[i])
                + QLatin1Char(',') + number(c.mins[i]) + QLatin1Char(',') + number(c.maxs[i]) + QLatin1Char(',')
                + number(s[i]) + QLatin1Char('\n');
        }
    }
    return out;
}

void CurveView::setHoverLine(double x)
{
    const bool show = std::isfinite(x);
    if (show == m_hoverLine->visible() && (!show || m_hoverLine->point1->coords().x() == x))
        return;
    m_hoverLine->setVisible(show);
    if (show) {
        m_hoverLine->point1->setCoords(x, 0);
        m_hoverLine->point2->setCoords(x, 1);
    }
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

double CurveView::hoverLine() const
{
    return m_hoverLine->visible() ? m_hoverLine->point1->coords().x() : NAN;
}

bool CurveView::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == plot() && event->type() == QEvent::Leave)
        Q_EMIT hovered(NAN);
    return PlotView::eventFilter(watched, event);
}

void CurveView::onMouseMove(QMouseEvent *event)
{
    Q_EMIT hovered(plot()->xAxis->pixelToCoord(event->position().x()));
    if (event->buttons() != Qt::NoButton || m_curves.empty())
        return;
    const QString tip = toolTipAt(plot()->xAxis->pixelToCoord(event->position().x()));
    QToolTip::showText(event->globalPosition().toPoint(), tip, plot());
}

void CurveView::onMousePress(QMouseEvent *event)
{
    m_pressPos = event->position().toPoint();
}

void CurveView::onMouseRelease(QMouseEvent *event)
{
    if ((event->position().toPoint() - m_pressPos).manhattanLength() > 3 || m_curves.empty())
        return; // a drag (pan), not a click
    const double x = plot()->xAxis->pixelToCoord(event->position().x());
    const RunCurve *curve = &m_curves.front();
    for (const RunCurve &c : m_curves) {
        if (c.run == m_selection->run())
            curve = &c;
    }
    const size_t i = nearestIndex(curve->steps, stepOfX(curve->run, x));
    if (!m_selection->run().isValid())
        m_selection->setRun(curve->run);
    m_selection->setStep(qint64(std::lround(curve->steps[i])));
}

} // namespace fp8scope
