#include "auditchart.h"

#include "views/plotting/qcp.h"
#include "views/plotting/textwrap.h"

#include <QComboBox>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace fp8scope {

namespace {

constexpr QColor kFinding(200, 30, 0);

QString shortName(const AuditLayer &l)
{
    // "model.layers.11.self_attn.o_proj" -> "11.self_attn.o_proj"
    QString n = l.name;
    for (const QLatin1String prefix : {QLatin1String("model.layers."), QLatin1String("model.")}) {
        if (n.startsWith(prefix))
            return n.mid(prefix.size());
    }
    return n;
}

} // namespace

AuditChart::AuditChart(QWidget *parent)
    : PlotView(QStringLiteral("auditChart"), parent)
    , m_measure(new QComboBox(this))
    , m_current(new QCPItemStraightLine(plot()))
    , m_message(new QCPItemText(plot()))
{
    m_measure->setObjectName(QStringLiteral("auditMeasure"));
    m_measure->addItem(tr("Weight error"));
    m_measure->addItem(tr("Scale ratio"));
    m_measure->addItem(tr("Weight amax"));
    m_measure->setToolTip(tr("Weight error: against the reference, with what a fresh quantization explains.\n"
                             "Scale ratio: 1 for a sound scale (weight amax over the reference's; the training "
                             "run's activation amax over a static input scale's range).\n"
                             "Weight amax: as dequantized and as the other convention makes it, against the band "
                             "trained weights have."));
    addControl(m_measure);
    connect(m_measure, &QComboBox::currentIndexChanged, this, &AuditChart::rebuild);
    plot()->yAxis->setScaleType(QCPAxis::stLogarithmic);
    plot()->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    plot()->yAxis->setNumberFormat(QStringLiteral("eb"));
    plot()->yAxis->setNumberPrecision(0);
    // The legend in a row above the plot, its entries side by side: a narrow pane keeps the points visible.
    plot()->plotLayout()->insertRow(0);
    plot()->plotLayout()->addElement(0, 0, plot()->legend);
    plot()->plotLayout()->setRowStretchFactor(0, 0.001);
    plot()->legend->setFillOrder(QCPLegend::foColumnsFirst);
    plot()->legend->setWrap(2);
    plot()->legend->setBorderPen(Qt::NoPen);
    QFont small = plot()->legend->font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    plot()->legend->setFont(small);
    plot()->legend->setVisible(true);
    // Its minimum not the legend row's and the axes' (the window must fit 1280 x 720; the pane is in a splitter).
    plot()->setMinimumSize(120, 40);
    plot()->xAxis->setLabel(tr("layer (its modules by name)"));
    m_current->setPen(QPen(palette().color(QPalette::Text), 1, Qt::DashLine));
    m_current->setVisible(false);
    m_current->setSelectable(false);
    m_message->setSelectable(false);
    m_message->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_message->position->setCoords(0.5, 0.5);
    m_message->setPositionAlignment(Qt::AlignCenter);
    m_message->setTextAlignment(Qt::AlignCenter);
    m_message->setClipToAxisRect(false);
    m_message->setColor(palette().color(QPalette::Text));
    connect(plot(), &QCustomPlot::mouseRelease, this, &AuditChart::onMouseRelease);
    rebuild();
}

void AuditChart::setAudit(const std::optional<AuditResult> &audit)
{
    m_layers.clear();
    m_checkpoint = audit ? audit->checkpoint : QString();
    m_thresholds = audit ? audit->thresholds : AuditThresholds {};
    if (audit) {
        // The quantized layers and any with a finding, in the model's order (the audit's).
        for (const AuditLayer &l : audit->layers) {
            if (l.quantized || !l.findings.isEmpty())
                m_layers.push_back(l);
        }
    }
    m_currentIndex = -1;
    rebuild();
}

void AuditChart::setMeasure(Measure measure)
{
    m_measure->setCurrentIndex(int(measure));
}

AuditChart::Measure AuditChart::measure() const
{
    return Measure(std::max(0, m_measure->currentIndex()));
}

void AuditChart::setCurrentLayer(const QString &name)
{
    m_currentIndex = -1;
    for (size_t i = 0; i < m_layers.size(); ++i) {
        if (m_layers[i].name == name)
            m_currentIndex = int(i);
    }
    m_current->setVisible(m_currentIndex >= 0);
    if (m_currentIndex >= 0) {
        m_current->point1->setCoords(m_currentIndex, 1);
        m_current->point2->setCoords(m_currentIndex, 2);
    }
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

std::vector<AuditChart::Series> AuditChart::series() const
{
    const auto column = [this](const QString &name, auto value) {
        Series s {name, {}};
        s.values.reserve(m_layers.size());
        for (const AuditLayer &l : m_layers) {
            const double v = value(l);
            s.values.push_back(std::isfinite(v) && v > 0 ? v : NAN);
        }
        return s;
    };
    switch (measure()) {
    case Measure::WeightError:
        return {column(tr("as dequantized"), [](const AuditLayer &l) { return l.relError; }),
            column(tr("fresh quantization"), [](const AuditLayer &l) { return l.freshRelError; }),
            column(tr("mismatch (%1x fresh)").arg(m_thresholds.mismatchFactor),
                [factor = m_thresholds.mismatchFactor](const AuditLayer &l) { return factor * l.freshRelError; })};
    case Measure::ScaleRatio:
        return {column(tr("weight amax / reference's"), [](const AuditLayer &l) { return l.weightAmaxRatio(); }),
            column(tr("activation amax / input range"), [](const AuditLayer &l) { return l.activationOverRange(); })};
    case Measure::WeightAmax:
        return {column(tr("as dequantized"), [](const AuditLayer &l) { return l.amax; }),
            column(tr("other convention"), [](const AuditLayer &l) { return l.invertedAmax; })};
    }
    return {};
}

void AuditChart::rebuild()
{
    plot()->clearGraphs();
    plot()->clearPlottables();
    const std::vector<Series> all = series();
    const QColor text = palette().color(QPalette::Text);
    // The first series as points (red where the layer has a finding), the others as lines or faint points.
    const QColor colours[] = {QColor(31, 119, 180), QColor(127, 127, 127), QColor(127, 127, 127)};
    double lo = INFINITY, hi = 0;
    bool any = false;
    for (size_t k = 0; k < all.size(); ++k) {
        const Series &s = all[k];
        QVector<double> x, y, fx, fy;
        for (size_t i = 0; i < s.values.size(); ++i) {
            if (std::isnan(s.values[i]))
                continue;
            lo = std::min(lo, s.values[i]);
            hi = std::max(hi, s.values[i]);
            const bool faulty = k == 0 && !m_layers[i].findings.isEmpty();
            (faulty ? fx : x) << double(i);
            (faulty ? fy : y) << s.values[i];
        }
        if (x.isEmpty() && fx.isEmpty())
            continue;
        any = true;
        QCPGraph *g = plot()->addGraph();
        g->setName(s.name);
        g->setData(x, y, true);
        const bool threshold = measure() == Measure::WeightError && k == 2;
        const bool secondary = k > 0 && !threshold;
        if (threshold) {
            g->setLineStyle(QCPGraph::lsStepCenter);
            g->setPen(QPen(colours[k], 1, Qt::DashLine));
        } else {
            g->setLineStyle(QCPGraph::lsNone);
            const QColor c = measure() == Measure::ScaleRatio && k == 1 ? QColor(44, 160, 44) : colours[k];
            g->setScatterStyle(QCPScatterStyle(
                secondary && measure() != Measure::ScaleRatio ? QCPScatterStyle::ssCircle : QCPScatterStyle::ssDisc, c,
                5));
            g->setPen(QPen(c));
        }
        if (!fx.isEmpty()) {
            QCPGraph *f = plot()->addGraph();
            f->setName(tr("with a finding"));
            f->setData(fx, fy, true);
            f->setLineStyle(QCPGraph::lsNone);
            f->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, kFinding, 8));
            f->setPen(QPen(kFinding));
        }
    }
    // The band of plausible weight magnitudes, and 1 for the ratios.
    const auto hline = [this, text](double y, const QString &name) {
        QCPGraph *g = plot()->addGraph();
        g->setName(name);
        g->setData({-0.5, std::max<double>(double(m_layers.size()) - 0.5, 0.5)}, {y, y}, true);
        g->setPen(QPen(text, 1, Qt::DotLine));
        g->removeFromLegend();
    };
    if (measure() == Measure::ScaleRatio && any) {
        hline(1.0, QStringLiteral("1"));
        lo = std::min(lo, 1.0);
        hi = std::max(hi, 1.0);
    } else if (measure() == Measure::WeightAmax && any) {
        hline(std::exp2(m_thresholds.plausibleLog2Min), QString());
        hline(std::exp2(m_thresholds.plausibleLog2Max), QString());
        lo = std::min(lo, std::exp2(m_thresholds.plausibleLog2Min));
        hi = std::max(hi, std::exp2(m_thresholds.plausibleLog2Max));
    }
    // Along x, a tick where a layer's modules start, labelled with its number (a module outside the numbered
    // layers, such as lm_head, by its name), thinned to about 24.
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    static const QRegularExpression number(QStringLiteral("\\.(\\d+)\\."));
    QString last;
    std::vector<std::pair<size_t, QString>> starts;
    for (size_t i = 0; i < m_layers.size(); ++i) {
        const QRegularExpressionMatch m = number.match(m_layers[i].name);
        const QString label = m.hasMatch() ? m.captured(1) : shortName(m_layers[i]);
        if (label != last)
            starts.emplace_back(i, label);
        last = label;
    }
    const size_t every = std::max<size_t>(1, (starts.size() + 23) / 24);
    for (size_t k = 0; k < starts.size(); k += every)
        ticker->addTick(double(starts[k].first), starts[k].second);
    plot()->xAxis->setTicker(ticker);
    plot()->xAxis->setRange(-0.5, std::max<double>(double(m_layers.size()) - 0.5, 0.5));
    static const char *const labels[] = {"relative error (rms)", "ratio (1: sound)", "amax"};
    plot()->yAxis->setLabel(tr(labels[int(measure())]));
    if (any)
        plot()->yAxis->setRange(lo / 2, hi * 2);
    m_message->setVisible(!any);
    if (m_checkpoint.isEmpty())
        m_messageText = tr("No inference checkpoint in the run's folder");
    else if (measure() == Measure::WeightError || measure() == Measure::ScaleRatio)
        m_messageText
            = tr("Nothing to compare with: no reference weights (an unquantized model folder beside "
                 "the export, or inference_reference in fp8scope.json)%1")
                  .arg(measure() == Measure::ScaleRatio ? tr(" and no static input scale with the training's amax")
                                                        : QString());
    else
        m_messageText = tr("No quantized layer");
    // Nothing plotted: no axes of nothing (a log scale's ticks over no points), the message in their place.
    setAxesShown(any);
    placeMessage();
    plot()->legend->setVisible(any);
    // A legend without entries is a grid of no columns, whose widest is its margins: in the layout it held the
    // column to the axes' minimum (50 pixels of a wide pane, the message centred on them). Out while empty.
    const bool legendPlaced = plot()->plotLayout()->element(0, 0) == plot()->legend;
    if (any && !legendPlaced)
        plot()->plotLayout()->addElement(0, 0, plot()->legend);
    else if (!any && legendPlaced)
        plot()->plotLayout()->take(plot()->legend);
    if (m_currentIndex >= 0 && m_currentIndex < int(m_layers.size())) {
        m_current->point1->setCoords(m_currentIndex, 1);
        m_current->point2->setCoords(m_currentIndex, 2);
    }
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

void AuditChart::placeMessage()
{
    // The axes are hidden while it shows: the plot's width is theirs, less a margin.
    const double width = std::max(80, plot()->width() - 24);
    m_message->setText(wrapText(m_messageText, m_message->font(), width, plot()).join(QLatin1Char('\n')));
}

QString AuditChart::message() const
{
    return m_message->visible() ? m_message->text() : QString();
}

void AuditChart::resizeEvent(QResizeEvent *event)
{
    PlotView::resizeEvent(event);
    if (m_message->visible()) {
        placeMessage();
        plot()->replot(QCustomPlot::rpQueuedReplot);
    }
}

void AuditChart::onMouseRelease(QMouseEvent *event)
{
    if (m_layers.empty() || !plot()->axisRect()->rect().contains(event->pos()))
        return;
    const int i = int(std::lround(plot()->xAxis->pixelToCoord(event->pos().x())));
    if (i < 0 || i >= int(m_layers.size()))
        return;
    setCurrentLayer(m_layers[size_t(i)].name);
    Q_EMIT layerClicked(m_layers[size_t(i)].name);
}

QString AuditChart::title() const
{
    static const char *const names[] = {"weight error", "scale ratio", "weight amax"};
    return tr("checkpoint audit %1 — %2").arg(tr(names[int(measure())]), QFileInfo(m_checkpoint).fileName());
}

QString AuditChart::csv() const
{
    const auto number
        = [](double v) { return std::isnan(v) ? QString() : QString::number(v, 'g', QLocale::FloatingPointShortest); };
    const std::vector<Series> all = series();
    QStringList header {QStringLiteral("layer"), QStringLiteral("training layer")};
    for (const Series &s : all)
        header << s.name;
    header << QStringLiteral("status");
    QString out = header.join(QLatin1Char(',')) + QLatin1Char('\n');
    for (size_t i = 0; i < m_layers.size(); ++i) {
        const AuditLayer &l = m_layers[i];
        QStringList row {l.name, l.training ? l.training->text() : QString()};
        for (const Series &s : all)
            row << number(s.values[i]);
        row << QLatin1Char('"') + l.status() + QLatin1Char('"');
        out += row.join(QLatin1Char(',')) + QLatin1Char('\n');
    }
    return out;
}

} // namespace fp8scope
