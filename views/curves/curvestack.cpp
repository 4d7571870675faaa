#include "curvestack.h"

#include "curveview.h"
#include "views/plotting/qcp.h"

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
    , m_splitter(new QSplitter(Qt::Vertical, this))
    , m_addButton(new QToolButton(this))
{
    setObjectName(QStringLiteral("curveStack"));
    m_splitter->setObjectName(QStringLiteral("curveStackSplitter"));
    m_splitter->setChildrenCollapsible(false);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_splitter);
    // The button that adds a plot beneath; its owner places it (the window: beside the view tabs, where the
    // first plot's tool bar has no room left on a laptop).
    m_addButton->setObjectName(QStringLiteral("stackPlot"));
    m_addButton->setText(tr("Stack Plot"));
    m_addButton->setToolTip(tr("Add a plot of another statistic beneath this one, on the same x axis (grad norm, "
                               "learning rate, loss scale...)"));
    m_addButton->setAutoRaise(true);
    connect(m_addButton, &QToolButton::clicked, this, [this] { addPlot(); });
    addToStack(first);
}

void CurveStack::addToStack(CurveView *plot)
{
    m_plots << plot;
    m_splitter->addWidget(plot);
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
    QString stat = statistic;
    if (stat.isEmpty()) {
        QStringList shown;
        for (CurveView *p : std::as_const(m_plots))
            shown << p->statistic();
        const auto statistics = first->source()->statistics();
        for (const char *name : {"grad norm", "learning rate", "loss scale"}) {
            const QString n = QLatin1String(name);
            const bool has = std::any_of(statistics.begin(), statistics.end(),
                [&](const CurveSource::Statistic &s) { return !s.tensorLevel && s.stat == n; });
            if (stat.isEmpty() && has && !shown.contains(n))
                stat = n;
        }
        if (stat.isEmpty())
            stat = first->statistic();
    }
    auto *plot = new CurveView(m_workspace, m_selection, this);
    plot->setObjectName(QStringLiteral("stackedCurves%1").arg(m_plots.size()));
    // Short plots rather than a window taller than a laptop's screen: the stack never raises its minimum height.
    plot->setMinimumHeight(kStackedMinimumHeight);
    plot->setXAxis(first->xAxis());
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
    // Each plot an equal share of the height.
    const int h = m_splitter->height() / int(m_plots.size());
    m_splitter->setSizes(QList<int>(m_plots.size(), std::max(h, 1)));
    Q_EMIT plotsChanged();
    return plot;
}

void CurveStack::removePlot(CurveView *plot)
{
    if (!plot || plot == m_plots.front() || !m_plots.contains(plot))
        return;
    m_plots.removeAll(plot);
    plot->hide();
    plot->deleteLater();
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
    for (const QString &s : statistics)
        addPlot(s);
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
