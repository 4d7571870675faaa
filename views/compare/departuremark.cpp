#include "departuremark.h"

#include "views/curves/curveview.h"
#include "views/plotting/legendplacement.h"
#include "views/plotting/qcp.h"

#include <cmath>

namespace fp8scope {

DepartureMark::DepartureMark(CurveView *view)
    : QObject(view)
    , m_view(view)
    , m_interval(new QCPItemRect(view->plot()))
    , m_line(new QCPItemStraightLine(view->plot()))
{
    m_interval->topLeft->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_interval->bottomRight->setTypeY(QCPItemPosition::ptAxisRectRatio);
    m_interval->setPen(Qt::NoPen);
    m_interval->setBrush(QColor(200, 30, 0, 40));
    m_interval->setSelectable(false);
    m_line->setPen(QPen(QColor(200, 30, 0), 1.5));
    m_line->setSelectable(false);
    m_interval->setVisible(false);
    m_line->setVisible(false);
    // The legend stays off the departure.
    m_interval->setProperty(kKeepClearProperty, true);
    m_line->setProperty(kKeepClearProperty, true);
    connect(view, &CurveView::rebuilt, this, &DepartureMark::update);
}

void DepartureMark::setComparison(std::shared_ptr<const ComparisonData> data)
{
    m_data = std::move(data);
    update();
}

double DepartureMark::x() const
{
    return m_line->visible() ? m_line->point1->coords().x() : NAN;
}

void DepartureMark::update()
{
    std::optional<int64_t> step = m_data ? m_data->statistic.departure.step : std::nullopt;
    // A loss that blows up without leaving the band first departs where it blows up (no interval: the step is
    // where the loss stopped being a number).
    bool blowUp = false;
    if (m_data && m_data->stat == QLatin1String("lm loss") && m_data->comparison.departure
        && (!step || *m_data->comparison.departure < *step)) {
        step = m_data->comparison.departure;
        blowUp = true;
    }
    m_line->setVisible(step.has_value());
    m_interval->setVisible(step.has_value() && !blowUp);
    if (step && blowUp) {
        const double x = m_view->plotX(m_data->run, double(*step));
        m_line->point1->setCoords(x, 0);
        m_line->point2->setCoords(x, 1);
    } else if (step) {
        const RunRef r = m_data->run;
        const double x = m_view->plotX(r, double(*step));
        m_line->point1->setCoords(x, 0);
        m_line->point2->setCoords(x, 1);
        m_interval->topLeft->setCoords(m_view->plotX(r, double(m_data->statistic.departure.low)), 0);
        m_interval->bottomRight->setCoords(m_view->plotX(r, double(m_data->statistic.departure.high)), 1);
    }
    m_view->updateLegend();
}

} // namespace fp8scope
