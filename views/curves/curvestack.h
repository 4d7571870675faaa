// Plots that stack, as TensorBoard, W&B and PlotJuggler users read a run: loss, grad norm, learning rate and
// loss scale one above the other on one x axis. The Curves tab's view is the first plot; Stack Plot adds
// another curve view of the same runs beneath it (its own statistic, smoothing and log y), and each added one
// has a Remove button. Each plot keeps a readable height (the stack scrolls past what fits), their axes share
// both edges (XAxisGroup), and a statistic is stacked once. A zoom or pan of any plot's x moves all of them (when they
// share the x axis: steps, samples or tokens); the step selected is marked in every plot (the shared selection) and the
// mouse's position in one is a line in the others.
#pragma once

#include <QList>
#include <QStringList>
#include <QWidget>

class QScrollArea;
class QSplitter;
class QToolButton;

namespace fp8scope {

class CurveView;
class Selection;
class Workspace;
class XAxisGroup;

class CurveStack : public QWidget
{
    Q_OBJECT
public:
    // Every plot's least height (its tool bar, a readable axis, its x axis); the stack scrolls past what fits
    // and keeps the window's minimum (1280x720) whatever it holds.
    static constexpr int kStackedMinimumHeight = 170;
    // The most plots a stack holds.
    static constexpr int kMaxPlots = 6;

    // `first` is the stack's first plot (the stack takes it into its layout).
    CurveStack(CurveView *first, Workspace *workspace, Selection *selection, QWidget *parent = nullptr);

    // Adds a plot of `statistic` beneath the others ("": the first of grad norm, learning rate, loss scale that
    // the runs have and no plot shows, else the first statistic of the runs no plot shows). Returns it, or
    // nullptr where none is left to add or the stack is full (Stack Plot is disabled then).
    CurveView *addPlot(const QString &statistic = {});
    void removePlot(CurveView *plot);
    // The plots, top to bottom (the first is the one given).
    QList<CurveView *> plots() const { return m_plots; }
    // The Stack Plot button (for its owner to place; hidden with the stack is up to the owner).
    QToolButton *stackButton() const { return m_addButton; }
    // The statistics of the added plots, top to bottom (the window's settings), and the stack made of them.
    QStringList stackedStatistics() const;
    void setStackedStatistics(const QStringList &statistics);

Q_SIGNALS:
    void plotsChanged();

private:
    void addToStack(CurveView *plot);
    void syncRange(CurveView *from);
    QString nextStatistic() const;
    void updateStackButton();

    Workspace *m_workspace;
    Selection *m_selection;
    QScrollArea *m_scroll;
    QSplitter *m_splitter;
    QToolButton *m_addButton;
    XAxisGroup *m_group;
    QList<CurveView *> m_plots;
    bool m_syncing = false;
};

} // namespace fp8scope
