// Plots one above the other that share their x axis (a stack of curves, a comparison's overlay and its
// difference) read as one only when a step is at the same pixel in each: an XAxisGroup gives every plot of the
// group the widest left and right margin any of them needs (tick labels of y, the direct labels' gutter), so
// that their axis rectangles share both edges. Kept as the plots replot: a plot whose margin must change is
// replotted again.
#pragma once

#include <QList>
#include <QObject>
#include <QPointer>

class QCustomPlot;

namespace fp8scope {

class XAxisGroup : public QObject
{
    Q_OBJECT
public:
    explicit XAxisGroup(QObject *parent = nullptr);

    void add(QCustomPlot *plot);
    void remove(QCustomPlot *plot);
    QList<QCustomPlot *> plots() const;
    // Gives every plot of the group the widest margins now (a plot whose margins change is replotted queued).
    void align(QCustomPlot *replotting = nullptr);

private:
    QList<QPointer<QCustomPlot>> m_plots;
};

// The width a plot keeps right of its axes for direct labels (legendplacement): the right margin is at least
// this; in a group, every plot of the group keeps the widest.
void setRightGutter(QCustomPlot *plot, int pixels);
int rightGutter(const QCustomPlot *plot);

} // namespace fp8scope
