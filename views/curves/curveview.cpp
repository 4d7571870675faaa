#include "curveview.h"

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
#include <limits>
#include <set>

namespace fp8scope {

namespace {

const QString kTensorPrefix = QStringLiteral("tensor:");

// Linear interpolation of y(x) over sorted (x, y) pairs, extrapolating with the end segments.
double interpolate(const std::vector<std::pair<double, double>> &xy, double x)
{
    if (xy.size() < 2)
        return xy.empty() ? x : xy.front().second;
    auto it = std::lower_bound(xy.begin(), xy.end(), x, [](const auto &p, double v) { return p.first < v; });
    if (it == xy.begin())
        ++it;
    if (it == xy.end())
        --it;
    const auto &[x1, y1] = *it;
    const auto &[x0, y0] = *(it - 1);
    return x1 == x0 ? y0 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

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
    connect(plot()->xAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this, [this] {
        if (!m_inRebuild)
            scheduleRefetch();
    });
    connect(plot(), &QCustomPlot::mouseMove, this, &CurveView::onMouseMove);
    connect(plot(), &QCustomPlot::mousePress, this, &CurveView::onMousePress);
    connect(plot(), &QCustomPlot::mouseRelease, this, &CurveView::onMouseRelease);

    connect(m_source, &CurveSource::statisticsChanged, this, &CurveView::reloadStatistics);
    connect(m_source, &CurveSource::curvesChanged, this, &CurveView::rebuild);
    connect(selection, &Selection::changed, this, [this](Selection::Parts parts) {
        if ((parts & (Selection::Layer | Selection::Tensor)) && statistic().startsWith(kTensorPrefix)) {
            m_haveRange = false;
            rebuild();
        } else if (parts & (Selection::Step | Selection::Run)) {
            updateCursor();
        }
    });
    reloadStatistics();
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

QString CurveView::xAxisName() const
{
    switch (xAxis()) {
    case XAxis::Steps: return tr("step");
    case XAxis::Samples: return tr("consumed samples");
    case XAxis::Tokens: return tr("consumed tokens");
    }
    return {};
}

const std::vector<std::pair<double, double>> *CurveView::xMapping(RunRef run, bool inverse) const
{
    const auto *map = xAxis() == XAxis::Samples ? (inverse ? &m_samplesInverse : &m_samples)
        : xAxis() == XAxis::Tokens              ? (inverse ? &m_tokensInverse : &m_tokens)
                                                : nullptr;
    if (!map)
        return nullptr;
    const auto it = map->find(run);
    return it == map->end() || it->second.size() < 2 ? nullptr : &it->second;
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
    m_samples.clear();
    m_samplesInverse.clear();
    m_tokens.clear();
    m_tokensInverse.clear();
    m_statistics = m_source->statistics();
    for (RunRef r : m_source->runs()) {
        m_samples[r] = m_source->stepSamples(r);
        m_tokens[r] = m_source->stepTokens(r);
        // The inverse mappings once here, not on every tooltip and click.
        for (auto [map, inverse] : {std::pair(&m_samples, &m_samplesInverse), std::pair(&m_tokens, &m_tokensInverse)}) {
            auto &out = (*inverse)[r];
            for (const auto &[step, n] : (*map)[r])
                out.emplace_back(n, step);
        }
    }
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
        if (i < 0 && m_statBox->count() > 1)
            i = 1; // the first statistic under the first header
        m_statBox->setCurrentIndex(i);
        m_drawnStatistic = statistic();
        m_statBox->lineEdit()->setCursorPosition(0);
    }
    reloadSources();
    bool anySamples = false, anyTokens = false;
    for (const auto &[run, s] : m_samples)
        anySamples = anySamples || s.size() >= 2;
    for (const auto &[run, t] : m_tokens)
        anyTokens = anyTokens || t.size() >= 2;
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
    // A plot too short for its legend would hide its curves under it: the run list and the tooltip name them.
    // Nor may a legend of many entries (a comparison's runs, band and marks) cover more than half the plot.
    const bool fits = plot()->legend->minimumOuterSizeHint().height() <= plot()->axisRect()->height() / 2;
    plot()->legend->setVisible(!m_curves.empty() && plot()->height() >= kMinLegendHeight && fits);
}

void CurveView::resizeEvent(QResizeEvent *event)
{
    PlotView::resizeEvent(event);
    updateLegend();
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
    const auto *map = xMapping(run);
    return map ? interpolate(*map, step) : step;
}

double CurveView::stepOfX(RunRef run, double x) const
{
    const auto *map = xMapping(run, true);
    return map ? interpolate(*map, x) : x;
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
    const QString key = statistic();
    const bool tensorLevel = key.startsWith(kTensorPrefix);
    const QString stat = tensorLevel ? key.mid(kTensorPrefix.size()) : key;
    const int maxPoints = std::max(100, plot()->axisRect()->width());
    const QCPRange visible = plot()->xAxis->range();
    double lo = std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::lowest();
    const XAxis axis = xAxis();
    const bool bySamples = axis == XAxis::Samples;
    const bool following = isFollowingEnd();
    const bool wholeShown = !m_haveExtent || visible.lower <= m_extentLo + 0.01 * visible.size();
    double extentLo = std::numeric_limits<double>::max(), extentHi = std::numeric_limits<double>::lowest();
    QStringList leftOut;
    for (RunRef r : stat.isEmpty() ? std::vector<RunRef>() : m_source->runs()) {
        if (tensorLevel && (m_selection->layer().isEmpty() || m_selection->tensor().isEmpty()))
            continue;
        CurveSource::Request request {.stat = stat,
            .tensorLevel = tensorLevel,
            .layer = m_selection->layer(),
            .tensor = m_selection->tensor(),
            .source = tensorLevel ? QString() : dataSource(),
            .range = {.resolution = maxPoints},
            .bySamples = bySamples};
        if (m_haveRange) {
            // The visible range and a margin, so lines run on past the edges while panning; in steps, or in
            // samples for a series logged against them (by tokens: the steps the visible tokens span).
            const double a = axis == XAxis::Tokens ? stepOfX(r, visible.lower) : visible.lower;
            const double b = axis == XAxis::Tokens ? stepOfX(r, visible.upper) : visible.upper;
            const double margin = (b - a) * 0.05 + 1;
            request.range.from = int64_t(std::floor(a - margin));
            request.range.to = int64_t(std::ceil(b + margin));
        }
        std::optional<CurveSource::Curve> curve = m_source->curve(r, request);
        if (curve && m_haveRange && !curve->xIsSamples && bySamples) {
            // A series against steps drawn by samples: ask again for the steps the visible samples span.
            const double a = stepOfX(r, visible.lower), b = stepOfX(r, visible.upper);
            const double margin = (b - a) * 0.05 + 1;
            request.range.from = int64_t(std::floor(a - margin));
            request.range.to = int64_t(std::ceil(b + margin));
            request.bySamples = false;
            curve = m_source->curve(r, request);
        }
        if (!curve)
            continue;
        // No counts to place it by: left out, and said, not drawn at its steps. (A series logged against
        // samples is placed by tokens through its steps.)
        const auto inverse = m_samplesInverse.find(r);
        const bool stepsOfSamples = inverse != m_samplesInverse.end() && inverse->second.size() >= 2;
        if (axis != XAxis::Steps && (!curve->xIsSamples || axis == XAxis::Tokens) && !xMapping(r)) {
            leftOut << m_source->runName(r);
            continue;
        }
        if (axis == XAxis::Tokens && curve->xIsSamples && !stepsOfSamples) {
            leftOut << m_source->runName(r);
            continue;
        }
        RunCurve c;
        c.run = r;
        c.series = curve->series;
        for (const SeriesPoint &p : curve->points) {
            c.bucketed = c.bucketed || p.count > 1;
            c.steps.push_back(double(p.step));
            c.values.push_back(p.count > 1 ? 0.5 * (p.min + p.max) : p.value);
            c.mins.push_back(p.min);
            c.maxs.push_back(p.max);
        }
        if (c.steps.empty())
            continue;
        if (curve->xIsSamples) {
            // Its steps are samples already: keep x (by samples), and give steps back where the run has the
            // mapping; by step, x is those steps.
            c.xs = QVector<double>(c.steps.begin(), c.steps.end());
            const auto inverse = m_samplesInverse.find(r);
            for (double &st : c.steps)
                st = inverse != m_samplesInverse.end() && inverse->second.size() >= 2 ? interpolate(inverse->second, st)
                                                                                      : st;
            if (!bySamples) {
                for (size_t i = 0; i < c.steps.size(); ++i)
                    c.xs[qsizetype(i)] = xOfStep(r, c.steps[i]);
            }
        }
        const QString name = curve->name;
        const QColor colour = m_source->runColour(r);
        if (!curve->xIsSamples) {
            c.xs.resize(qsizetype(c.steps.size()));
            for (size_t i = 0; i < c.steps.size(); ++i)
                c.xs[qsizetype(i)] = xOfStep(r, c.steps[i]);
        }
        const QVector<double> &xs = c.xs;
        lo = std::min(lo, xs.front());
        hi = std::max(hi, xs.back());
        // The series' whole extent, beyond the range fetched (the store knows its first and last step).
        extentLo = std::min(extentLo, xs.front());
        extentHi = std::max(extentHi, xs.back());
        if (c.series.points > 0 && c.series.lastStep >= c.series.firstStep) {
            const bool stepsAreX = curve->xIsSamples == bySamples || (!curve->xIsSamples && axis == XAxis::Steps);
            extentLo
                = std::min(extentLo, stepsAreX ? double(c.series.firstStep) : xOfStep(r, double(c.series.firstStep)));
            extentHi
                = std::max(extentHi, stepsAreX ? double(c.series.lastStep) : xOfStep(r, double(c.series.lastStep)));
        }
        QColor faint = colour;
        faint.setAlpha(70);
        if (c.bucketed) {
            c.low = plot()->addGraph();
            c.high = plot()->addGraph();
            c.low->setName(name + tr(" min"));
            c.high->setName(name + tr(" max"));
            c.low->setPen(QPen(faint));
            c.high->setPen(QPen(faint));
            c.low->setBrush(QBrush(faint));
            c.low->setChannelFillGraph(c.high);
            c.low->setData(xs, QVector<double>(c.mins.begin(), c.mins.end()), true);
            c.high->setData(xs, QVector<double>(c.maxs.begin(), c.maxs.end()), true);
            c.low->removeFromLegend();
            c.high->removeFromLegend();
        } else {
            c.raw = plot()->addGraph();
            c.raw->setName(name + tr(" raw"));
            c.raw->setPen(QPen(faint));
            c.raw->setData(xs, QVector<double>(c.values.begin(), c.values.end()), true);
            c.raw->removeFromLegend();
        }
        c.smoothed = plot()->addGraph();
        c.smoothed->setName(name);
        c.smoothed->setPen(QPen(QBrush(colour), 1.5, m_source->runLineStyle(r)));
        if (xs.size() == 1) {
            // One point (a checkpoint's value, or a run's first logged step) draws no line: mark it.
            for (QCPGraph *g : {c.raw, c.smoothed}) {
                if (g)
                    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, 7));
            }
        }
        m_curves.push_back(std::move(c));
    }
    // Checkpoint tensors have no step (-1): with nothing else in view, the axis says so.
    const bool checkpointOnly = lo == -1.0 && hi == -1.0 && axis == XAxis::Steps;
    plot()->xAxis->setLabel(checkpointOnly ? tr("checkpoint (no step)") : xAxisName());
    plot()->xAxis->setTickLabels(!checkpointOnly);
    // The layer by its last four parts ("layers.9.mlp.linear_fc2"), so that the label fits the axis.
    const QString layer = m_selection->layer().section(QLatin1Char('.'), -4);
    plot()->yAxis->setLabel(tensorLevel && !m_selection->tensor().isEmpty()
            ? tr("%1 of %2 %3").arg(stat, layer, m_selection->tensor())
            : stat);
    const bool grew = m_haveRange && m_haveExtent && extentLo <= extentHi && extentHi > m_extentHi;
    const double oldHi = m_extentHi;
    m_haveExtent = extentLo <= extentHi;
    if (m_haveExtent) {
        m_extentLo = extentLo;
        m_extentHi = extentHi;
    }
    if (grew && following) {
        // A growing run (its folder followed): the view at the end goes on showing the end, the whole series
        // when it showed the whole, else the same width moved along; then fetch what that range holds.
        const QCPRange range = wholeShown
            ? QCPRange(visible.lower, extentHi)
            : QCPRange(visible.lower + (extentHi - oldHi), visible.upper + (extentHi - oldHi));
        plot()->xAxis->setRange(range);
        m_inRebuild = false;
        rebuild();
        return;
    }
    if (!m_haveRange && lo <= hi) {
        // A single step is centred rather than put at the left edge.
        plot()->xAxis->setRange(hi > lo ? lo : lo - 0.5, hi > lo ? hi : lo + 0.5);
        m_haveRange = true;
    }
    addMarks();
    updateLegend();
    plot()->yAxis->setTickLabels(!m_curves.empty());
    if (m_curves.empty()) {
        // Nothing drawn: no axes of what was drawn before (another folder's steps and values).
        plot()->xAxis->setTickLabels(false);
        plot()->xAxis->setRange(0, 1);
        plot()->yAxis->setRange(0, 1);
        m_haveRange = false;
    }
    // Said in place of curves: why there are none, or that every value is 0.
    QString message;
    if (tensorLevel && (m_selection->layer().isEmpty() || m_selection->tensor().isEmpty())) {
        message = tr("%1 is a statistic of one tensor: choose a tensor in the Layers panel\n"
                     "or click a cell of the heatmap.")
                      .arg(stat);
    } else if (m_curves.empty()) {
        message = m_statistics.empty() || m_source->runs().empty() ? m_source->emptyText()
            : leftOut.isEmpty()                                    ? tr("No run shown has %1.").arg(stat)
                                                                   : QString();
    } else {
        bool allZero = true;
        for (const RunCurve &c : m_curves)
            allZero = allZero && std::all_of(c.maxs.begin(), c.maxs.end(), [](double v) { return v == 0.0; })
                && std::all_of(c.mins.begin(), c.mins.end(), [](double v) { return v == 0.0; });
        if (allZero)
            message = tr("Every value of %1 is 0 as logged. A log that prints four decimals\n"
                         "writes anything under 0.00005 as 0.0000: recompute from a dump to see it.")
                          .arg(stat);
    }
    m_message->setText(message);
    m_message->setVisible(!message.isEmpty());
    const QString note = leftOut.isEmpty() ? QString()
        : axis == XAxis::Tokens
        ? tr("Not drawn on the tokens axis (no consumed-tokens counts, nor samples and a sequence length): %1")
              .arg(leftOut.join(QStringLiteral(", ")))
        : tr("Not drawn on the samples axis (no consumed-samples counts): %1").arg(leftOut.join(QStringLiteral(", ")));
    m_note->setText(note);
    m_note->setVisible(!note.isEmpty());
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
                c.raw->addToLegend();
            } else {
                c.raw->removeFromLegend();
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
            bool ok = false;
            const QCPRange r = g->getValueRange(ok, m_logY->isChecked() ? QCP::sdPositive : QCP::sdBoth);
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
    if (!xMapping(run) && !m_curves.empty())
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

void CurveView::onMouseMove(QMouseEvent *event)
{
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
