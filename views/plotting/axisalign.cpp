#include "axisalign.h"

#include "qcp.h"

#include <algorithm>

namespace fp8scope {

namespace {

constexpr char kGutterProperty[] = "fp8scopeRightGutter";
constexpr char kGroupProperty[] = "fp8scopeXAxisGroup";

// The margin QCustomPlot's layout would give a side of the axes by itself (its tick labels and axis label),
// before any minimum: QCPAxisRect computes it in a protected function, reached by its member pointer.
struct MarginOf : QCPAxisRect {
    static int natural(QCPAxisRect *rect, QCP::MarginSide side)
    {
        if (!rect->autoMargins().testFlag(side))
            return 0;
        int (QCPAxisRect::*calculate)(QCP::MarginSide) = &MarginOf::calculateAutoMargin;
        return (rect->*calculate)(side);
    }
};

} // namespace

XAxisGroup::XAxisGroup(QObject *parent)
    : QObject(parent)
{
}

XAxisGroup::~XAxisGroup()
{
    for (const auto &[key, plot] : std::as_const(m_plots))
        plot->setProperty(kGroupProperty, QVariant());
}

void XAxisGroup::add(QCustomPlot *plot)
{
    if (!plot || plots().contains(plot))
        return;
    QObject *key = plot;
    m_plots.push_back({key, plot});
    plot->setProperty(kGroupProperty, QVariant::fromValue(static_cast<QObject *>(this)));
    connect(plot, &QCustomPlot::beforeReplot, this, [this, plot] { align(plot); });
    // A plot destroyed without leaving (not in a PlotView): gone from the list, by its key alone.
    connect(plot, &QObject::destroyed, this, [this, key] {
        m_plots.removeIf([key](const std::pair<QObject *, QCustomPlot *> &e) { return e.first == key; });
    });
    align();
}

void XAxisGroup::remove(QCustomPlot *plot)
{
    if (!plot || !plots().contains(plot))
        return;
    m_plots.removeIf([plot](const std::pair<QObject *, QCustomPlot *> &e) { return e.second == plot; });
    disconnect(plot, nullptr, this, nullptr);
    plot->setProperty(kGroupProperty, QVariant());
    // By itself again: its own margins (and its gutter).
    QCPAxisRect *rect = plot->axisRect();
    const QMargins m = rect->minimumMargins();
    rect->setMinimumMargins(QMargins(0, m.top(), rightGutter(plot), m.bottom()));
    align();
}

QList<QCustomPlot *> XAxisGroup::plots() const
{
    QList<QCustomPlot *> out;
    for (const auto &[key, plot] : m_plots)
        out << plot;
    return out;
}

void leaveXAxisGroup(QCustomPlot *plot)
{
    if (auto *group = qobject_cast<XAxisGroup *>(plot->property(kGroupProperty).value<QObject *>()))
        group->remove(plot);
}

void XAxisGroup::align(QCustomPlot *replotting)
{
    const QList<QCustomPlot *> all = plots();
    int left = 0, right = 0;
    for (QCustomPlot *p : all) {
        if (p->axisRectCount() == 0)
            continue;
        left = std::max(left, MarginOf::natural(p->axisRect(), QCP::msLeft));
        right = std::max({right, MarginOf::natural(p->axisRect(), QCP::msRight), rightGutter(p)});
    }
    for (QCustomPlot *p : all) {
        if (p->axisRectCount() == 0)
            continue;
        QCPAxisRect *rect = p->axisRect();
        const QMargins m = rect->minimumMargins();
        if (m.left() == left && m.right() == right)
            continue;
        rect->setMinimumMargins(QMargins(left, m.top(), right, m.bottom()));
        if (p != replotting && p->isVisible())
            p->replot(QCustomPlot::rpQueuedReplot);
    }
}

void setRightGutter(QCustomPlot *plot, int pixels)
{
    if (rightGutter(plot) == pixels)
        return;
    plot->setProperty(kGutterProperty, pixels);
    if (auto *group = qobject_cast<XAxisGroup *>(plot->property(kGroupProperty).value<QObject *>())) {
        group->align(plot);
        return;
    }
    QCPAxisRect *rect = plot->axisRect();
    const QMargins m = rect->minimumMargins();
    rect->setMinimumMargins(QMargins(m.left(), m.top(), pixels, m.bottom()));
}

int rightGutter(const QCustomPlot *plot)
{
    return plot->property(kGutterProperty).toInt();
}

} // namespace fp8scope
