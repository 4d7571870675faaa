#include "curvestack.h"

#include "curveview.h"
#include "views/plotting/axisalign.h"
#include "views/plotting/qcp.h"

#include <QScrollArea>
#include <QSplitter>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace fp8scope {

CurveStack::CurveStack(CurveView *first, Workspace *workspace, Selection *selection, QWidget *parent)
    : QWidget(parent)
    , m_workspace(workspace)
    , m_selection(selection)
    , m_scroll(new QScrollArea(this))
    , m_splitter(new QSplitter(Qt::Vertical))
    , m_addButton(new QToolButton(this))
    , m_group(new XAxisGroup(this))
{
    setObjectName(QStringLiteral("curveStack"));
    m_splitter->setObjectName(QStringLiteral("curveStackSplitter"));
    m_splitter->setChildrenCollapsible(false);
    // The plots keep their least height; what does not fit the stack's height scrolls (the window's minimum
    // never grows with the stack).
    m_scroll->setObjectName(QStringLiteral("curveStackScroll"));
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_scroll->setWidget(m_splitter);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_scroll);
    // The button that adds a plot beneath; its owner places it (the window: beside the view tabs, where the
    // first plot's tool bar has no room left on a laptop).
    m_addButton->setObjectName(QStringLiteral("stackPlot"));
    m_addButton->setText(tr("Stack Plot"));
    m_addButton->setToolTip(tr("Add a plot of another statistic beneath this one, on the same x axis (grad norm, "
                               "learning rate, loss scale...)"));
    m_addButton->setAutoRaise(true);
    connect(m_addButton, &QToolButton::clicked, this, [this] { addPlot(); });
    addToStack(first);
    // What can be stacked changes with the runs open.
    connect(first->source(), &CurveSource::statisticsChanged, this, &CurveStack::updateStackButton);
    connect(first, &CurveView::rebuilt, this, &CurveStack::updateStackButton);
    updateStackButton();
}

QString CurveStack::nextStatistic() const
{
    QStringList shown;
    for (CurveView *p : std::as_const(m_plots))
        shown << p->statistic();
    QStringList candidates;
    for (const CurveSource::Statistic &s : m_plots.front()->source()->statistics()) {
        if (!s.tensorLevel && !shown.contains(s.stat) && !candidates.contains(s.stat))
            candidates << s.stat;
    }
    for (const char *name : {"grad norm", "learning rate", "loss scale"}) {
        if (candidates.contains(QLatin1String(name)))
            return QLatin1String(name);
    }
    return candidates.value(0);
}

void CurveStack::updateStackButton()
{
    const bool full = m_plots.size() >= kMaxPlots;
    const QString next = full ? QString() : nextStatistic();
    m_addButton->setEnabled(!next.isEmpty());
    m_addButton->setToolTip(full ? tr("The stack holds %1 plots at most: remove one to add another").arg(kMaxPlots)
            : next.isEmpty()     ? tr("Every statistic of the runs is plotted already")
                                 : tr("Add a plot of %1 beneath, on the same x axis (then pick any statistic "
                                          "in it)")
                                   .arg(next));
}

void CurveStack::addToStack(CurveView *plot)
{
    m_plots << plot;
    // Readable however many are stacked: the stack scrolls past what fits.
    plot->setMinimumHeight(kStackedMinimumHeight);
    m_splitter->addWidget(plot);
    m_group->add(plot->plot());
    connect(plot->plot()->xAxis, qOverload<const QCPRange &>(&QCPAxis::rangeChanged), this,
        [this, plot] { syncRange(plot); });
    connect(plot, &CurveView::hovered, this, [this, plot](double x) {
        for (CurveView *other : std::as_const(m_plots)) {
            if (other != plot)
                other->setHoverLine(other->xAxis() == plot->xAxis() ? x : NAN);
        }
    });
}

CurveView *CurveStack::addPlot(const QString &statistic)
{
    CurveView *first = m_plots.front();
    const QString stat = !statistic.isEmpty() ? statistic : nextStatistic();
    if (m_plots.size() >= kMaxPlots || stat.isEmpty())
        return nullptr;
    auto *plot = new CurveView(m_workspace, m_selection, this);
    plot->setObjectName(QStringLiteral("stackedCurves%1").arg(m_plots.size()));
    plot->setXAxis(first->xAxis());
    // The same runs in the same colours: the first plot names them.
    plot->setLegendShown(false);
    plot->setSmoothing(first->smoothingKind(), first->smoothingStrength());
    auto *remove = new QToolButton(plot);
    remove->setObjectName(QStringLiteral("removeStackedPlot"));
    remove->setText(tr("Remove"));
    remove->setToolTip(tr("Remove this plot from the stack"));
    remove->setAutoRaise(true);
    QToolBar *bar = plot->controlBar();
    bar->insertWidget(bar->actions().value(bar->actions().size() - 1), remove);
    connect(remove, &QToolButton::clicked, this, [this, plot] { removePlot(plot); });
    addToStack(plot);
    plot->setStatistic(stat);
    // Where the others are.
    plot->plot()->xAxis->setRange(first->plot()->xAxis->range());
    connect(plot, &CurveView::rebuilt, this, &CurveStack::updateStackButton);
    // Each plot an equal share of the height the stack has (at least its least height: then it scrolls).
    const int h = std::max(m_scroll->viewport()->height() / int(m_plots.size()), kStackedMinimumHeight);
    m_splitter->setSizes(QList<int>(m_plots.size(), h));
    updateStackButton();
    Q_EMIT plotsChanged();
    return plot;
}

void CurveStack::removePlot(CurveView *plot)
{
    if (!plot || plot == m_plots.front() || !m_plots.contains(plot))
        return;
    m_plots.removeAll(plot);
    m_group->remove(plot->plot());
    plot->hide();
    plot->setParent(nullptr); // out of the splitter now: the others take its height
    plot->deleteLater();
    const int h = std::max(m_scroll->viewport()->height() / int(m_plots.size()), kStackedMinimumHeight);
    m_splitter->setSizes(QList<int>(m_plots.size(), h));
    // The stack as tall as what it still holds needs (the scroll area only grows it by itself).
    m_splitter->resize(m_scroll->viewport()->width(),
        std::max(m_scroll->viewport()->height(), m_splitter->minimumSizeHint().height()));
    updateStackButton();
    Q_EMIT plotsChanged();
}

QStringList CurveStack::stackedStatistics() const
{
    QStringList out;
    for (qsizetype i = 1; i < m_plots.size(); ++i)
        out << m_plots[i]->statistic();
    return out;
}

void CurveStack::setStackedStatistics(const QStringList &statistics)
{
    while (m_plots.size() > 1)
        removePlot(m_plots.back());
    for (const QString &s : statistics) {
        if (!s.isEmpty() && !stackedStatistics().contains(s) && s != m_plots.front()->statistic())
            addPlot(s);
    }
}

void CurveStack::syncRange(CurveView *from)
{
    if (m_syncing)
        return;
    m_syncing = true;
    const QCPRange range = from->plot()->xAxis->range();
    for (CurveView *other : std::as_const(m_plots)) {
        if (other != from && other->xAxis() == from->xAxis() && other->plot()->xAxis->range() != range) {
            other->plot()->xAxis->setRange(range);
            other->plot()->replot(QCustomPlot::rpQueuedReplot);
        }
    }
    m_syncing = false;
}

} // namespace fp8scope
