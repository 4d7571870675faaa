#include "heatmapview.h"

#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QToolTip>

#include <cmath>
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

bool hasLayerStatistics(Workspace *workspace, int r)
{
    Statement s = workspace->store(r).database().prepare(
        "SELECT 1 FROM series WHERE run_id=? AND layer<>'' AND tensor<>'' LIMIT 1");
    s.bind(1, workspace->run(r).info.id);
    return s.next();
}

QString runLabel(const WorkspaceRun &run)
{
    return run.info.displayName.isEmpty() ? run.info.name : run.info.displayName;
}

} // namespace

HeatmapView::HeatmapView(Workspace *workspace, Selection *selection, QWidget *parent)
    : PlotView(QStringLiteral("heatmap"), parent)
    , m_workspace(workspace)
    , m_selection(selection)
    , m_runBox(new QComboBox(this))
    , m_statBox(new QComboBox(this))
    , m_tensorBox(new QComboBox(this))
    , m_recipeBox(new QComboBox(this))
    , m_logColour(new QCheckBox(tr("Log colour"), this))
    , m_threshold(new QCheckBox(tr("Above"), this))
    , m_thresholdValue(new QDoubleSpinBox(this))
    , m_map(new QCPColorMap(plot()->xAxis, plot()->yAxis))
    , m_scale(new QCPColorScale(plot()))
    , m_cursor(new QCPItemStraightLine(plot()))
    , m_message(new QCPItemText(plot()))
{
    m_runBox->setObjectName(QStringLiteral("heatmapRun"));
    m_statBox->setObjectName(QStringLiteral("heatmapStatistic"));
    m_tensorBox->setObjectName(QStringLiteral("heatmapTensor"));
    m_recipeBox->setObjectName(QStringLiteral("heatmapRecipe"));
    m_recipeBox->setToolTip(tr("The recipe these statistics were recomputed under"));
    m_recipeBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_recipeBox->setVisible(false);
    m_logColour->setObjectName(QStringLiteral("heatmapLogColour"));
    m_threshold->setObjectName(QStringLiteral("heatmapThreshold"));
    m_threshold->setToolTip(tr("Colour the cells above this value in red"));
    m_thresholdValue->setObjectName(QStringLiteral("heatmapThresholdValue"));
    m_thresholdValue->setDecimals(4);
    m_thresholdValue->setRange(-1e12, 1e12);
    m_thresholdValue->setValue(2.0);
    // The pickers are filled after the first show; without this they keep the width of an empty box and
    // cut "underflows%" to "underflo". Run names (cluster job names) can be long: the run picker shows
    // about 24 characters, its list and tooltip the whole name.
    m_statBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_tensorBox->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_runBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_runBox->setMinimumContentsLength(24);
    int at = 0;
    controls()->insertWidget(at++, m_runBox);
    controls()->insertWidget(at++, m_statBox);
    controls()->insertWidget(at++, m_tensorBox);
    controls()->insertWidget(at++, m_recipeBox);
    controls()->insertWidget(at++, m_logColour);
    controls()->insertWidget(at++, m_threshold);
    controls()->insertWidget(at++, m_thresholdValue);

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
    m_map->setTightBoundary(false);
    plot()->yAxis->setRangeReversed(true);
    plot()->xAxis->setLabel(tr("step"));
    auto *margins = new QCPMarginGroup(plot());
    plot()->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    applyPalette();
    applyGradient();

    connect(m_runBox, &QComboBox::currentIndexChanged, this, [this] {
        reloadPickers();
        reload();
    });
    connect(m_statBox, &QComboBox::currentIndexChanged, this, &HeatmapView::reload);
    connect(m_tensorBox, &QComboBox::currentIndexChanged, this, &HeatmapView::reload);
    connect(m_recipeBox, &QComboBox::currentIndexChanged, this, &HeatmapView::reload);
    connect(m_logColour, &QCheckBox::toggled, this, &HeatmapView::redraw);
    connect(m_threshold, &QCheckBox::toggled, this, &HeatmapView::redraw);
    connect(m_thresholdValue, &QDoubleSpinBox::valueChanged, this, [this] {
        if (m_threshold->isChecked())
            redraw();
    });
    connect(plot(), &QCustomPlot::mouseMove, this, &HeatmapView::onMouseMove);
    connect(plot(), &QCustomPlot::mousePress, this, &HeatmapView::onMousePress);
    connect(plot(), &QCustomPlot::mouseRelease, this, &HeatmapView::onMouseRelease);
    connect(workspace, &Workspace::loaded, this, [this] {
        const QSignalBlocker block(m_runBox);
        m_runBox->clear();
        for (int r = 0; r < m_workspace->runCount(); ++r) {
            m_runBox->addItem(m_workspace->run(r).info.name, r);
            m_runBox->setItemData(r, m_workspace->run(r).info.name, Qt::ToolTipRole);
        }
        // The run to show: the first with per-layer statistics that is not a BF16 baseline, else the first
        // with per-layer statistics, else the first that is not a baseline.
        int pick = -1, withStats = -1, notBaseline = -1;
        for (int r = 0; r < m_workspace->runCount() && pick < 0; ++r) {
            const bool baseline = m_workspace->run(r).info.precision == QLatin1String("bf16");
            const bool stats = hasLayerStatistics(m_workspace, r);
            if (stats && !baseline)
                pick = r;
            if (stats && withStats < 0)
                withStats = r;
            if (!baseline && notBaseline < 0)
                notBaseline = r;
        }
        if (pick < 0)
            pick = withStats >= 0 ? withStats : std::max(notBaseline, 0);
        m_runBox->setCurrentIndex(pick);
        reloadPickers();
        reload();
    });
    connect(workspace, &Workspace::statisticsChanged, this, [this](int r) {
        // Recomputed statistics: new names for the pickers, new values for the matrix.
        if (r == run()) {
            reloadPickers();
            reload();
        }
    });
    connect(workspace, &Workspace::closed, this, [this] {
        if (m_pending)
            m_workspace->queries().cancel(m_pending);
        m_pending = 0;
        const QSignalBlocker block(m_runBox);
        m_runBox->clear();
        setHeatmap({});
    });
    connect(selection, &Selection::changed, this, [this](Selection::Parts parts) {
        if (parts & Selection::Run && m_selection->run() >= 0 && m_selection->run() != run())
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
}

void HeatmapView::setRun(int r)
{
    const int i = m_runBox->findData(r);
    if (i >= 0)
        m_runBox->setCurrentIndex(i);
}

int HeatmapView::run() const
{
    return m_runBox->currentIndex() < 0 ? -1 : m_runBox->currentData().toInt();
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
    const int r = run();
    const QString stat = statistic().isEmpty() ? QStringLiteral("underflows%") : statistic();
    const QString tensorKind = tensor().isEmpty() ? QStringLiteral("activation") : tensor();
    std::set<QString> stats, tensors;
    if (r >= 0) {
        Statement s = m_workspace->store(r).database().prepare(
            "SELECT DISTINCT stat, tensor FROM series WHERE run_id=? AND layer<>'' AND tensor<>''");
        s.bind(1, m_workspace->run(r).info.id);
        while (s.next()) {
            stats.insert(s.text(0));
            tensors.insert(s.text(1));
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
        m_workspace->queries().cancel(m_pending);
    m_pending = 0;
    const int r = run();
    if (r < 0 || statistic().isEmpty() || tensor().isEmpty()) {
        setHeatmap({});
        return;
    }
    const int64_t runId = m_workspace->run(r).info.id;
    const QString stat = statistic(), kind = tensor();
    // The recipe chosen before holds where this statistic has it; the store picks otherwise.
    const QString recipe = m_recipeBox->currentText();
    m_pending = m_workspace->query(
        r, QStringLiteral("heatmap"),
        [runId, stat, kind, recipe](
            RunStore &store) { return QVariant::fromValue(store.heatmap(runId, stat, kind, QString(), recipe)); },
        this,
        [this](const QVariant &value) {
            m_pending = 0;
            setHeatmap(value.value<Heatmap>());
        });
}

void HeatmapView::setHeatmap(Heatmap heatmap)
{
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
    const double x0 = nx ? double(m_data.steps.front()) : 0;
    const double x1 = nx > 1 ? double(m_data.steps.back()) : x0;
    const double half = nx > 1 ? (x1 - x0) / (2.0 * (nx - 1)) : 0.5;
    plot()->xAxis->setRange(x0 - half, x1 + half);
    plot()->yAxis->setRange(-0.5, std::max(ny, 1) - 0.5);
    // A checkpoint's tensors have no step (-1): one column, and the axis says what it is.
    const bool checkpoint = nx == 1 && m_data.steps.front() < 0;
    plot()->xAxis->setLabel(checkpoint ? tr("checkpoint (no step)") : tr("step"));
    plot()->xAxis->setTickLabels(!checkpoint);
    m_scale->axis()->setLabel(statistic() + QLatin1Char(' ') + tensor()
        + (m_data.recipe.isEmpty() ? QString() : tr(" (%1)").arg(m_data.recipe)));
    {
        const QSignalBlocker block(m_recipeBox);
        m_recipeBox->clear();
        m_recipeBox->addItems(m_data.recipes);
        m_recipeBox->setCurrentIndex(m_recipeBox->findText(m_data.recipe));
        m_recipeBox->setVisible(!m_data.recipe.isEmpty());
    }
    QString message;
    const int r = run();
    if ((!nx || !ny) && r >= 0 && r < m_workspace->runCount()) {
        const QString name = runLabel(m_workspace->run(r));
        message = m_statBox->count() == 0
            ? tr("%1 has no per-layer statistics.\nThey come from Transformer Engine debug statistics logs\n"
                 "and from tensor dumps recomputed under a recipe.")
                  .arg(name)
            : tr("No %1 of %2 in %3.").arg(statistic(), tensor(), name);
    }
    m_message->setText(message);
    m_message->setColor(palette().color(QPalette::Text));
    m_message->setVisible(!message.isEmpty());
    updateLayerTicks();
    updateCursor();
    rebuildMap();
    redraw();
    Q_EMIT heatmapChanged();
}

QString HeatmapView::message() const
{
    return m_message->visible() ? m_message->text() : QString();
}

void HeatmapView::rebuildMap()
{
    // Served at screen resolution, as curves are: more steps than pixel columns are merged, each column
    // showing the largest value of its steps so that a hot cell never disappears. Tooltips and clicks
    // still read the full matrix.
    const int nx = int(m_data.steps.size());
    const int ny = int(m_data.layers.size());
    const int columns = std::clamp(plot()->axisRect()->width(), 1, std::max(nx, 1));
    QCPColorMapData *d = m_map->data();
    d->setSize(std::max(columns, 1), std::max(ny, 1));
    // One column or row: QCPColorMap spreads a single cell over the whole range, so the range is the cell
    // (centred on its step or layer) rather than [x, x + 1], which drew it half a cell off.
    const double x0 = nx ? double(m_data.steps.front()) : 0;
    const QCPRange keys = nx > 1 ? QCPRange(x0, double(m_data.steps.back())) : QCPRange(x0 - 0.5, x0 + 0.5);
    d->setRange(keys, ny > 1 ? QCPRange(0, ny - 1) : QCPRange(-0.5, 0.5));
    if (!nx || !ny) {
        d->fill(std::nan(""));
        m_linearRange = m_logRange = {INFINITY, -INFINITY};
        return;
    }
    // The colour range comes out of the same sweep: all finite values, and the positive ones for log.
    double lo = INFINITY, hi = -INFINITY, posLo = INFINITY, posHi = -INFINITY;
    for (int y = 0; y < ny; ++y) {
        const double *row = m_data.values.data() + size_t(y) * size_t(nx);
        for (int c = 0; c < columns; ++c) {
            const int a = int(int64_t(c) * nx / columns);
            const int b = std::max(a + 1, int(int64_t(c + 1) * nx / columns));
            double v = NAN;
            for (int x = a; x < b; ++x) {
                const double r = row[x];
                if (!std::isfinite(r))
                    continue;
                lo = std::min(lo, r);
                hi = std::max(hi, r);
                if (r > 0) {
                    posLo = std::min(posLo, r);
                    posHi = std::max(posHi, r);
                }
                if (std::isnan(v) || r > v)
                    v = r;
            }
            d->setCell(c, y, v);
        }
    }
    m_linearRange = {lo, hi};
    m_logRange = {posLo, posHi};
}

void HeatmapView::updateLayerTicks()
{
    // As many layer names as fit one above the other, the rest skipped evenly. Two rows are always named, in
    // place of the evenly spaced names too close to them: the selected layer (marked) and the row holding
    // the largest value, the one a reader looks for first.
    const int ny = int(m_data.layers.size());
    const int rowPixels = fontMetrics().height() + 2;
    const int fit = std::max(1, plot()->axisRect()->height() / rowPixels);
    const int every = std::max(1, (ny + fit - 1) / fit);
    const int selected = int(m_data.layers.indexOf(m_selection->layer()));
    const int hot = m_hotRow < ny && m_hotRow != selected ? m_hotRow : -1;
    const auto nearNamed = [&](int y) {
        return (selected >= 0 && std::abs(y - selected) < every) || (hot >= 0 && std::abs(y - hot) < every);
    };
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    const QStringList names = shortNames(m_data.layers);
    for (int y = 0; y < ny; y += every) {
        if (!nearNamed(y))
            ticker->addTick(y, names[y]);
    }
    if (hot >= 0 && (selected < 0 || std::abs(hot - selected) >= every))
        ticker->addTick(hot, names[hot]);
    if (selected >= 0)
        ticker->addTick(selected, QStringLiteral("\u25B6 ") + names[selected]);
    plot()->yAxis->setTicker(ticker);
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
    updateLayerTicks();
    if (m_map->data()->keySize() != std::min(plot()->axisRect()->width(), int(m_data.steps.size())))
        rebuildMap();
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapView::redraw()
{
    const bool logScale = m_logColour->isChecked();
    double lo = logScale ? m_logRange.first : m_linearRange.first;
    double hi = logScale ? m_logRange.second : m_linearRange.second;
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
    plot()->replot();
}

void HeatmapView::applyGradient()
{
    // A perceptually even dark-blue to yellow ramp (viridis' end points), readable in grey print.
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(68, 1, 84));
    g.setColorStopAt(0.25, QColor(59, 82, 139));
    g.setColorStopAt(0.5, QColor(33, 145, 140));
    g.setColorStopAt(0.75, QColor(94, 201, 98));
    g.setColorStopAt(1.0, QColor(253, 231, 37));
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
    const double x0 = double(m_data.steps.front());
    const double x1 = nx > 1 ? double(m_data.steps.back()) : x0 + 1;
    const int cx = nx > 1 ? int(std::lround((x - x0) / (x1 - x0) * (nx - 1))) : 0;
    const int cy = int(std::lround(y));
    if (cx < 0 || cy < 0 || cx >= nx || cy >= ny)
        return false;
    *layer = cy;
    *stepIndex = cx;
    return true;
}

QPointF HeatmapView::cellCentre(int layer, int stepIndex) const
{
    const int nx = int(m_data.steps.size());
    const double x0 = nx ? double(m_data.steps.front()) : 0;
    const double x1 = nx > 1 ? double(m_data.steps.back()) : x0 + 1;
    const double x = nx > 1 ? x0 + (x1 - x0) * stepIndex / (nx - 1) : x0;
    return {plot()->xAxis->coordToPixel(x), plot()->yAxis->coordToPixel(layer)};
}

QString HeatmapView::toolTipAt(const QPointF &pixel) const
{
    int layer = 0, col = 0;
    if (!cellAt(pixel, &layer, &col))
        return {};
    const double v = m_data.at(layer, size_t(col));
    return tr("%1\nstep %2\n%3 %4: %5")
        .arg(m_data.layers[layer])
        .arg(m_data.steps[size_t(col)])
        .arg(tensor(), statistic(), std::isnan(v) ? tr("no value") : QString::number(v, 'g', 6));
}

QString HeatmapView::csv() const
{
    QString out = QStringLiteral("layer");
    for (int64_t s : m_data.steps)
        out += QLatin1Char(',') + QString::number(s);
    out += QLatin1Char('\n');
    for (qsizetype y = 0; y < m_data.layers.size(); ++y) {
        out += m_data.layers[y];
        for (size_t x = 0; x < m_data.steps.size(); ++x) {
            const double v = m_data.at(y, x);
            out += QLatin1Char(',') + (std::isnan(v) ? QString() : QString::number(v, 'g', 17));
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
    m_selection->set(run(), m_data.layers[layer], tensor(), m_data.steps[size_t(col)]);
}

} // namespace fp8scope
