#include "legendplacement.h"

#include "axisalign.h"
#include "qcp.h"

#include <QFontMetricsF>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fp8scope {

namespace {

// The layout phases a replot runs, so that the axis rectangle and the legend's size are current.
void layOut(QCustomPlot *plot)
{
    plot->plotLayout()->update(QCPLayoutElement::upPreparation);
    plot->plotLayout()->update(QCPLayoutElement::upMargins);
    plot->plotLayout()->update(QCPLayoutElement::upLayout);
}

bool isOutside(const QCustomPlot *plot)
{
    return plot->legend && plot->legend->layout() == plot->plotLayout();
}

void moveInside(QCustomPlot *plot, Qt::Alignment corner)
{
    QCPLegend *legend = plot->legend;
    QCPLayoutInset *inset = plot->axisRect()->insetLayout();
    if (isOutside(plot)) {
        plot->plotLayout()->take(legend);
        plot->plotLayout()->simplify();
        legend->setFillOrder(QCPLayoutGrid::foRowsFirst, false);
        legend->setWrap(0);
        legend->setFillOrder(QCPLayoutGrid::foRowsFirst, true);
        inset->addElement(legend, corner);
    } else {
        for (int i = 0; i < inset->elementCount(); ++i) {
            if (inset->elementAt(i) == legend)
                inset->setInsetAlignment(i, corner);
        }
    }
}

void moveOutside(QCustomPlot *plot)
{
    QCPLegend *legend = plot->legend;
    if (!isOutside(plot)) {
        plot->axisRect()->insetLayout()->take(legend);
        plot->plotLayout()->insertRow(0);
        plot->plotLayout()->addElement(0, 0, legend);
        plot->plotLayout()->setRowStretchFactor(0, 0.001);
    }
    // As many entries a row as the plot's width takes, each column as wide as its widest entry.
    const int available = plot->viewport().width() - 12;
    // The entries in order (a wrapped grid's cells may be empty: itemCount counts cells).
    std::vector<int> widths;
    for (int i = 0; i < legend->itemCount(); ++i) {
        if (QCPAbstractLegendItem *item = legend->item(i))
            widths.push_back(item->minimumOuterSizeHint().width());
    }
    const int count = int(widths.size());
    int perRow = 1;
    for (int k = std::max(1, count); k > 1; --k) {
        int width = 0;
        for (int c = 0; c < k; ++c) {
            int widest = 0;
            for (int i = c; i < count; i += k)
                widest = std::max(widest, widths[size_t(i)]);
            width += widest + legend->columnSpacing();
        }
        if (width <= available) {
            perRow = k;
            break;
        }
    }
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, false);
    legend->setWrap(perRow);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    // (The row's whole width: a maximum width on it would narrow the axes' column beneath to the legend's.)
}

// The marked items' regions in pixels: a rectangle as drawn, a line as a strip a few pixels wide.
QList<QRectF> markedRegions(const QCustomPlot *plot)
{
    QList<QRectF> out;
    const QRect area = plot->axisRect()->rect();
    for (int i = 0; i < plot->itemCount(); ++i) {
        QCPAbstractItem *item = plot->item(i);
        if (!item->visible() || !item->property(kKeepClearProperty).toBool())
            continue;
        if (auto *rect = qobject_cast<QCPItemRect *>(item)) {
            const QPointF a = rect->topLeft->pixelPosition(), b = rect->bottomRight->pixelPosition();
            out << QRectF(a, b).normalized().adjusted(-3, 0, 3, 0).intersected(QRectF(area));
        } else if (auto *text = qobject_cast<QCPItemText *>(item)) {
            out << QRectF(text->topLeft->pixelPosition(), text->bottomRight->pixelPosition()).normalized();
        } else if (auto *line = qobject_cast<QCPItemStraightLine *>(item)) {
            const double x = line->point1->pixelPosition().x();
            out << QRectF(x - 4, area.top(), 8, area.height());
        }
    }
    return out;
}

constexpr char kDirectLabelProperty[] = "fp8scopeDirectLabel";

void clearLabels(QCustomPlot *plot)
{
    for (int i = plot->itemCount() - 1; i >= 0; --i) {
        if (plot->item(i)->property(kDirectLabelProperty).toBool())
            plot->removeItem(i);
    }
    setRightGutter(plot, 0);
}

// Each curve the legend names (lines, not marks), named right of the axes, in a gutter of the plot's margin, at
// the height of its last point in view; the names pushed apart to a line each, elided to a quarter of the plot's
// width. Outside the axes, a name covers no drawn point and no region kept clear. Written only where all fit
// in the axes' height and the gutter is wide enough to read; returns whether they were.
bool addLabels(QCustomPlot *plot)
{
    const QFont font = plot->legend->font();
    const QFontMetricsF metrics(font);
    const double h = metrics.height() + 1;
    struct Label {
        QString text;
        QColor colour;
        QCPGraph *graph;
        double y = NAN;
    };
    std::vector<Label> labels;
    for (int i = 0; i < plot->legend->itemCount(); ++i) {
        auto *item = qobject_cast<QCPPlottableLegendItem *>(plot->legend->item(i));
        auto *graph = item ? qobject_cast<QCPGraph *>(item->plottable()) : nullptr;
        if (!graph || !graph->visible() || graph->lineStyle() == QCPGraph::lsNone || graph->data()->isEmpty())
            continue;
        labels.push_back({graph->name(), graph->pen().color(), graph});
    }
    constexpr double kMinLabelWidth = 60;
    const double widest = std::accumulate(labels.begin(), labels.end(), 0.0,
        [&](double w, const Label &l) { return std::max(w, metrics.horizontalAdvance(l.text)); });
    const double room = std::min(widest, plot->viewport().width() / 4.0);
    if (labels.empty() || room < kMinLabelWidth)
        return false;
    setRightGutter(plot, int(std::ceil(room)) + 10);
    layOut(plot);
    const QRect area = plot->axisRect()->rect();
    if (double(labels.size()) * h > area.height())
        return false;
    for (Label &l : labels) {
        QCPGraph *graph = l.graph;
        const QCPRange keys = graph->keyAxis()->range();
        const auto begin = graph->data()->findBegin(keys.lower, false);
        for (auto it = graph->data()->findEnd(keys.upper, false); it != begin && !std::isfinite(l.y);) {
            --it;
            if (std::isfinite(it->value))
                l.y = std::clamp(
                    graph->valueAxis()->coordToPixel(it->value), double(area.top()), double(area.bottom()));
        }
        if (!std::isfinite(l.y)) // nothing in view: at the foot, still named
            l.y = area.bottom();
        // A layer's path keeps its end (its index and GEMM); a run's name both its ends.
        const bool path = l.text.count(QLatin1Char('.')) >= 2 && !l.text.contains(QLatin1Char(' '));
        l.text = metrics.elidedText(l.text, path ? Qt::ElideLeft : Qt::ElideMiddle, room);
    }
    std::sort(labels.begin(), labels.end(), [](const Label &a, const Label &b) { return a.y < b.y; });
    const double top = area.top() + h / 2, bottom = area.bottom() - h / 2;
    for (size_t i = 0; i < labels.size(); ++i)
        labels[i].y = std::max(i == 0 ? top : labels[i - 1].y + h, std::min(labels[i].y, bottom));
    for (size_t i = labels.size(); i-- > 0;)
        labels[i].y = std::min(labels[i].y, i + 1 == labels.size() ? bottom : labels[i + 1].y - h);
    const double x = area.right() + 4;
    for (const Label &l : labels) {
        auto *text = new QCPItemText(plot);
        text->setProperty(kDirectLabelProperty, true);
        text->setSelectable(false);
        text->setClipToAxisRect(false);
        text->position->setType(QCPItemPosition::ptAbsolute);
        text->position->setCoords(x, l.y);
        text->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        text->setFont(font);
        text->setText(l.text);
        text->setColor(l.colour.darker(115));
        text->setPadding(QMargins(2, 0, 2, 0));
    }
    return true;
}

} // namespace

QStringList directLabels(const QCustomPlot *plot, QList<QRectF> *rects)
{
    std::vector<std::pair<double, QCPItemText *>> found;
    for (int i = 0; i < plot->itemCount(); ++i) {
        auto *text = qobject_cast<QCPItemText *>(plot->item(i));
        if (text && text->property(kDirectLabelProperty).toBool())
            found.emplace_back(text->position->pixelPosition().y(), text);
    }
    std::sort(found.begin(), found.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    QStringList out;
    for (const auto &[y, text] : found) {
        out << text->text();
        if (rects)
            *rects << QRectF(text->topLeft->pixelPosition(), text->bottomRight->pixelPosition()).normalized();
    }
    return out;
}

QRectF legendRect(const QCustomPlot *plot)
{
    return plot->legend ? QRectF(plot->legend->outerRect()) : QRectF();
}

int pointsInside(const QCustomPlot *plot, const QRectF &rect)
{
    int n = 0;
    for (int g = 0; g < plot->graphCount(); ++g) {
        const QCPGraph *graph = plot->graph(g);
        if (!graph->visible() || graph->data()->isEmpty())
            continue;
        const QCPRange keys = graph->keyAxis()->range();
        const auto end = graph->data()->findEnd(keys.upper);
        for (auto it = graph->data()->findBegin(keys.lower); it != end; ++it) {
            if (!std::isfinite(it->value))
                continue;
            if (rect.contains(graph->coordsToPixels(it->key, it->value)))
                ++n;
        }
    }
    return n;
}

LegendPlacement placeLegend(QCustomPlot *plot, const QList<QRectF> &keepClear, bool outsideOnly)
{
    LegendPlacement out;
    if (!plot->legend)
        return out;
    clearLabels(plot);
    const bool wanted = plot->legend->visible();
    if (!wanted) {
        // Hidden: inside the axes, where it takes no room from them.
        moveInside(plot, out.corner);
        layOut(plot);
        return out;
    }
    if (!outsideOnly) {
        // Measured as it would stand inside: one entry a row.
        if (isOutside(plot))
            moveInside(plot, out.corner);
        layOut(plot);
        const QSize size = plot->legend->minimumOuterSizeHint();
        const QRect area = plot->axisRect()->rect();
        const QList<QRectF> clearOf = keepClear + markedRegions(plot);
        if (size.width() < area.width() && size.height() < area.height()) {
            // Each corner measured where the inset layout actually puts the legend (its own margins included).
            for (Qt::Alignment corner : {Qt::AlignTop | Qt::AlignRight, Qt::AlignTop | Qt::AlignLeft,
                     Qt::AlignBottom | Qt::AlignRight, Qt::AlignBottom | Qt::AlignLeft}) {
                moveInside(plot, corner);
                layOut(plot);
                const QRectF r = legendRect(plot);
                const bool clear
                    = std::none_of(clearOf.begin(), clearOf.end(), [&](const QRectF &k) { return k.intersects(r); });
                if (clear && area.contains(r.toAlignedRect()) && pointsInside(plot, r) == 0) {
                    out.corner = corner;
                    return out;
                }
            }
        }
    }
    moveOutside(plot);
    out.outside = true;
    layOut(plot);
    // Above the axes, but not at the cost of the plot: past a quarter of the height the axes had (or wider than
    // the plot), names right of the axes at the lines' ends; where they do not fit, above the axes after all.
    const int legendHeight = plot->legend->outerRect().height();
    // A row wider than the plot (one name longer than the plot is wide) would be cut: labels, elided, instead.
    const bool tooWide = plot->legend->minimumOuterSizeHint().width() > plot->viewport().width();
    if (!outsideOnly && wanted && (tooWide || legendHeight * 4 > legendHeight + plot->axisRect()->height())) {
        moveInside(plot, out.corner);
        plot->legend->setVisible(false); // the caller shows it again before placing it again
        layOut(plot);
        if (addLabels(plot)) {
            out.outside = false;
            out.labels = true;
            return out;
        }
        clearLabels(plot);
        plot->legend->setVisible(true);
        moveOutside(plot);
        layOut(plot);
        // Never larger than the plot it names: a row taller than the axes it leaves goes (the caller says where
        // the names are instead).
        if (plot->legend->outerRect().height() > plot->axisRect()->height()) {
            moveInside(plot, out.corner);
            plot->legend->setVisible(false);
            layOut(plot);
            out.outside = false;
            out.hidden = true;
        }
    }
    return out;
}

} // namespace fp8scope
