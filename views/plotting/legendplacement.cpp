#include "legendplacement.h"

#include "qcp.h"

#include <QFontMetricsF>

#include <algorithm>
#include <cmath>

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
}

// Each curve the legend names (lines, not marks), named at its last point in view at the right edge of the axes
// (atEnd) or at its first at the left edge; the names pushed apart to a line each. Written only where all fit in
// the axes' height and none covers a region kept clear; returns whether they were.
bool addLabels(QCustomPlot *plot, bool atEnd, const QList<QRectF> &clearOf)
{
    const QRect area = plot->axisRect()->rect();
    const QFont font = plot->legend->font();
    const QFontMetricsF metrics(font);
    const double h = metrics.height() + 1;
    struct Label {
        QString text;
        QColor colour;
        double y;
    };
    std::vector<Label> labels;
    for (int i = 0; i < plot->legend->itemCount(); ++i) {
        auto *item = qobject_cast<QCPPlottableLegendItem *>(plot->legend->item(i));
        auto *graph = item ? qobject_cast<QCPGraph *>(item->plottable()) : nullptr;
        if (!graph || !graph->visible() || graph->lineStyle() == QCPGraph::lsNone || graph->data()->isEmpty())
            continue;
        const QCPRange keys = graph->keyAxis()->range();
        const auto begin = graph->data()->findBegin(keys.lower, false);
        const auto end = graph->data()->findEnd(keys.upper, false);
        double y = NAN;
        if (atEnd) {
            for (auto it = end; it != begin && !std::isfinite(y);) {
                --it;
                if (std::isfinite(it->value))
                    y = graph->valueAxis()->coordToPixel(it->value);
            }
        } else {
            for (auto it = begin; it != end && !std::isfinite(y); ++it) {
                if (std::isfinite(it->value))
                    y = graph->valueAxis()->coordToPixel(it->value);
            }
        }
        if (std::isfinite(y))
            labels.push_back({graph->name(), graph->pen().color(), y});
    }
    if (labels.empty() || double(labels.size()) * h > area.height())
        return false;
    std::sort(labels.begin(), labels.end(), [](const Label &a, const Label &b) { return a.y < b.y; });
    const double top = area.top() + h / 2, bottom = area.bottom() - h / 2;
    for (size_t i = 0; i < labels.size(); ++i)
        labels[i].y = std::max(i == 0 ? top : labels[i - 1].y + h, std::min(labels[i].y, bottom));
    for (size_t i = labels.size(); i-- > 0;)
        labels[i].y = std::min(labels[i].y, i + 1 == labels.size() ? bottom : labels[i + 1].y - h);
    const double x = atEnd ? area.right() - 3 : area.left() + 3;
    // The width up to the nearest region kept clear (a departure): names longer than that are elided to it,
    // and a side with less than kMinLabelWidth is no place for them.
    double room = area.width() - 6;
    for (const QRectF &k : clearOf) {
        if (k.right() < area.left() || k.left() > area.right())
            continue;
        room = std::min(room, atEnd ? x - k.right() - 2 : k.left() - x - 2);
    }
    constexpr double kMinLabelWidth = 60;
    if (room < kMinLabelWidth)
        return false;
    for (Label &l : labels)
        l.text = metrics.elidedText(l.text, Qt::ElideMiddle, room - 4);
    QColor back = plot->palette().color(QPalette::Base);
    back.setAlpha(200);
    for (const Label &l : labels) {
        auto *text = new QCPItemText(plot);
        text->setProperty(kDirectLabelProperty, true);
        text->setSelectable(false);
        text->setClipToAxisRect(false);
        text->position->setType(QCPItemPosition::ptAbsolute);
        text->position->setCoords(x, l.y);
        text->setPositionAlignment((atEnd ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
        text->setFont(font);
        text->setText(l.text);
        text->setColor(l.colour.darker(115));
        text->setBrush(back);
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
    // Above the axes, but not at the cost of the plot: past a quarter of the height the axes had, names at the
    // lines' ends (or starts, where the ends are kept clear); where they fit neither way, above the axes after all.
    const int legendHeight = plot->legend->outerRect().height();
    if (!outsideOnly && wanted && legendHeight * 4 > legendHeight + plot->axisRect()->height()) {
        moveInside(plot, out.corner);
        plot->legend->setVisible(false); // the caller shows it again before placing it again
        layOut(plot);
        const QList<QRectF> clearOf = keepClear + markedRegions(plot);
        if (addLabels(plot, true, clearOf) || addLabels(plot, false, clearOf)) {
            out.outside = false;
            out.labels = true;
            return out;
        }
        plot->legend->setVisible(true);
        moveOutside(plot);
        layOut(plot);
    }
    return out;
}

} // namespace fp8scope
