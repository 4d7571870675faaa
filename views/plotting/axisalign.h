// Plots one above the other that share their x axis (a stack of curves, a comparison's overlay and its
// difference) read as one only when a step is at the same pixel in each: an XAxisGroup gives every plot of the
// group the widest left and right margin any of them needs (tick labels of y, the direct labels' gutter), so
// that their axis rectangles share both edges. Kept as the plots replot: a plot whose margin must change is
// replotted again.
#pragma once

#include <QList>
#include <QObject>
#include <utility>

class QCustomPlot;

namespace fp8scope {

class XAxisGroup : public QObject
{
    Q_OBJECT
public:
    explicit XAxisGroup(QObject *parent = nullptr);
    ~XAxisGroup() override;

    void add(QCustomPlot *plot);
    void remove(QCustomPlot *plot);
    QList<QCustomPlot *> plots() const;
    // Gives every plot of the group the widest margins now (a plot whose margins change is replotted queued).
    void align(QCustomPlot *replotting = nullptr);

private:
    // The plots, by the QObject each is too (compared as a key when one is destroyed: a plot half destroyed is
    // never used as one; PlotView takes its plot out of its group first, see leaveXAxisGroup).
    QList<std::pair<QObject *, QCustomPlot *>> m_plots;
};

// Takes a plot out of the group it is in (PlotView's destructor: while the plot is whole).
void leaveXAxisGroup(QCustomPlot *plot);

// The width a plot keeps right of its axes for direct labels (legendplacement): the right margin is at least
// this; in a group, every plot of the group keeps the widest.
void setRightGutter(QCustomPlot *plot, int pixels);
int rightGutter(const QCustomPlot *plot);

} // namespace fp8scope
