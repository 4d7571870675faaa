// Every attempt's loss difference to the baseline on one x axis (views/attempts/attemptsview): the attempt in
// hand in colour with the edge its band allows and its departure marked, the others in grey beneath it, so that
// ten attempts read as one path rather than a tangle.
#pragma once

#include "core/analysis/attempts.h"
#include "views/plotting/plotview.h"

namespace fp8scope {

class AttemptsChart : public PlotView
{
    Q_OBJECT
public:
    explicit AttemptsChart(QWidget *parent = nullptr);

    void setAttempts(const analysis::AttemptsResult &result);
    // The attempt drawn in colour (-1: none; every attempt in grey).
    void setHighlighted(int index);
    int highlighted() const { return m_highlighted; }
    // The graphs drawn, for tests: one an attempt with a trace, then the highlighted one's edge and departure.
    int attemptGraphs() const { return m_attemptGraphs; }
    QString csv() const override;
    QString title() const override;

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    void rebuild();
    // The legend where it covers no curve (legendplacement), then a replot.
    void placeAndReplot();

    analysis::AttemptsResult m_result;
    int m_highlighted = -1;
    int m_attemptGraphs = 0;
};

} // namespace fp8scope
