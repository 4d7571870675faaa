// Where a plot's legend goes: where the data is not. Inside the axes at the corner that covers no drawn point
// and no region the caller keeps clear (a comparison's departure), else outside, in a row above the axes that
// wraps its entries; and where that row would take more than a quarter of the axes' height, the names are
// written right of the axes instead, in a gutter of the plot's right margin at the height of each curve's end
// (direct labels, in each curve's colour, pushed apart so that none covers another; outside the axes, none
// covers a drawn point); where they do not fit, the row above after all, unless it would be taller than the axes
// it leaves: then the legend is hidden (hidden), and the caller says where the names are. A legend never hides
// what it names.
#pragma once

#include <QList>
#include <QRectF>

class QCustomPlot;

namespace fp8scope {

struct LegendPlacement {
    bool outside = false;
    bool labels = false; // the legend hidden, its curves named at their ends
    bool hidden = false; // neither fits: the legend hidden (never larger than the plot)
    Qt::Alignment corner = Qt::AlignTop | Qt::AlignRight; // inside: the corner it takes
};

// The property that marks a plot's item (a QCPItemRect, a QCPItemText or a vertical QCPItemStraightLine) as a
// region the legend keeps clear of: a comparison's departure and its interval, a note written on the plot.
inline constexpr char kKeepClearProperty[] = "fp8scopeLegendKeepsClear";

// Places plot's legend (visible or not) and returns where. keepClear: rectangles in the plot's pixels, besides
// the items marked with kKeepClearProperty.
// Corners are tried top right, top left, bottom right, bottom left. outsideOnly: always above the axes (a bar
// chart, whose bars fill every corner, and which has no line ends to label). The plot's layout is brought up
// to date first. A legend that is not visible stays hidden inside the axes (taking no room from them), and no
// labels are written: a caller shows the legend before each placement (labels hide it).
LegendPlacement placeLegend(QCustomPlot *plot, const QList<QRectF> &keepClear = {}, bool outsideOnly = false);
// The direct labels placeLegend wrote, top to bottom, and their rectangles in the plot's pixels.
QStringList directLabels(const QCustomPlot *plot, QList<QRectF> *rects = nullptr);

// The legend's rectangle in the plot's pixels, and whether a rectangle is covered by it (tests, the report).
QRectF legendRect(const QCustomPlot *plot);
// How many drawn points of the plot's graphs (in the visible range) fall inside rect.
int pointsInside(const QCustomPlot *plot, const QRectF &rect);

} // namespace fp8scope
