#include "attemptschart.h"

#include "views/plotting/legendplacement.h"
#include "views/plotting/qcp.h"

#include <QTimer>

#include <cmath>

namespace fp8scope {

using namespace analysis;

AttemptsChart::AttemptsChart(QWidget *parent)
    : PlotView(QStringLiteral("attemptsChart"), parent)
{
    plot()->xAxis->setLabel(tr("step"));
    // Short enough for the plot's height at a laptop's size (the title and the tooltip say the rest).
    plot()->yAxis->setLabel(tr("loss − baseline"));
    plot()->setToolTip(tr("Each attempt's loss minus the baseline's, both smoothed, by step; the attempt selected "
                          "in colour with what the baseline's band allows (dashed) and its departure (dotted)"));
    plot()->legend->setVisible(true);
    plot()->setMinimumSize(160, 150);
}

void AttemptsChart::setAttempts(const AttemptsResult &result)
{
    m_result = result;
    if (m_highlighted >= int(m_result.attempts.size()))
        m_highlighted = -1;
    rebuild();
}

void AttemptsChart::setHighlighted(int index)
{
    m_highlighted = index >= 0 && index < int(m_result.attempts.size()) ? index : -1;
    rebuild();
}

void AttemptsChart::rebuild()
{
    plot()->clearGraphs();
    plot()->clearItems();
    m_attemptGraphs = 0;
    const QColor grey(170, 170, 170);
    const auto curve = [this](const Attempt &a, const QPen &pen, const QString &name) {
        QCPGraph *g = plot()->addGraph();
        QVector<double> x(qsizetype(a.traceSteps.size())), y(qsizetype(a.traceGap.size()));
        for (size_t i = 0; i < a.traceSteps.size(); ++i) {
            x[qsizetype(i)] = double(a.traceSteps[i]);
            y[qsizetype(i)] = a.traceGap[i];
        }
        g->setData(x, y, true);
        g->setPen(pen);
        g->setName(name);
        return g;
    };
    // The others first, in grey, one legend entry for them all.
    bool greyNamed = false;
    for (size_t i = 0; i < m_result.attempts.size(); ++i) {
        const Attempt &a = m_result.attempts[i];
        if (int(i) == m_highlighted || a.traceSteps.empty())
            continue;
        QCPGraph *g = curve(a, QPen(grey, 1), tr("other attempts"));
        if (greyNamed)
            g->removeFromLegend();
        greyNamed = true;
        ++m_attemptGraphs;
    }
    if (m_highlighted >= 0 && !m_result.attempts[size_t(m_highlighted)].traceSteps.empty()) {
        const Attempt &a = m_result.attempts[size_t(m_highlighted)];
        const QColor colour = a.healthy() ? QColor(31, 119, 180) : QColor(200, 30, 0);
        curve(a, QPen(colour, 2), a.name);
        ++m_attemptGraphs;
        QCPGraph *edge = plot()->addGraph();
        QVector<double> x, y;
        for (size_t i = 0; i < a.traceSteps.size(); ++i) {
            x << double(a.traceSteps[i]);
            y << a.traceEdge[i];
        }
        edge->setData(x, y, true);
        edge->setPen(QPen(colour.darker(120), 1, Qt::DashLine));
        edge->setName(tr("%1: what the band allows").arg(a.name));
        if (a.departure) {
            auto *line = new QCPItemStraightLine(plot());
            line->point1->setCoords(double(*a.departure), 0);
            line->point2->setCoords(double(*a.departure), 1);
            line->setPen(QPen(colour, 1, Qt::DotLine));
        }
    }
    plot()->rescaleAxes();
    placeAndReplot();
}

void AttemptsChart::placeAndReplot()
{
    plot()->legend->setVisible(m_attemptGraphs > 0);
    placeLegend(plot());
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

void AttemptsChart::resizeEvent(QResizeEvent *event)
{
    PlotView::resizeEvent(event);
    // Once the plot has its new size.
    QTimer::singleShot(0, this, &AttemptsChart::placeAndReplot);
}

QString AttemptsChart::title() const
{
    return tr("attempts against %1").arg(m_result.baselineName);
}

QString AttemptsChart::csv() const
{
    QString out = QStringLiteral("attempt,step,loss gap,band edge\n");
    for (const Attempt &a : m_result.attempts) {
        for (size_t i = 0; i < a.traceSteps.size(); ++i)
            out += QStringLiteral("%1,%2,%3,%4\n")
                       .arg(a.name)
                       .arg(a.traceSteps[i])
                       .arg(a.traceGap[i], 0, 'g', 8)
                       .arg(a.traceEdge[i], 0, 'g', 8);
    }
    return out;
}

} // namespace fp8scope
