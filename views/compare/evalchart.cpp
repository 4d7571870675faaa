#include "evalchart.h"

#include "views/plotting/legendplacement.h"
#include "views/plotting/qcp.h"

#include <cmath>

namespace fp8scope {

EvalChart::EvalChart(QWidget *parent)
    : PlotView(QStringLiteral("evalChart"), parent)
{
    // Scores along x, tasks down y (the first on top).
    plot()->xAxis->setLabel(tr("score"));
    plot()->yAxis->setRangeReversed(true);
    plot()->yAxis->setSubTicks(false);
    plot()->yAxis->setTickLength(0);
    plot()->yAxis->grid()->setVisible(false);
    plot()->legend->setVisible(true);
}

int EvalChart::rowHeight() const
{
    bool twoLines = false;
    for (const analysis::EvalRow &r : m_rows)
        twoLines = twoLines || !r.inference.isEmpty();
    return QFontMetrics(plot()->yAxis->tickLabelFont()).height() * (twoLines ? 2 : 1) + 8;
}

void EvalChart::setRows(const std::vector<analysis::EvalRow> &rows, const QString &baselineName, const QString &runName,
    const QColor &runColour)
{
    m_rows = rows;
    m_baselineName = baselineName;
    m_runName = runName;
    plot()->clearPlottables();
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    // Per row the baseline's bar above the task's tick, the run's below it (among the drops when significant).
    QVector<double> bk, bv, be, rk, rv, re, dk, dv, de;
    double top = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const analysis::EvalRow &r = rows[i];
        const double k = double(i);
        ticker->addTick(k, r.inference.isEmpty() ? r.task : tr("%1\n(%2)").arg(r.task, r.inference));
        // Each run's own standard error is not kept apart from the combined one: its share, sqrt(1/2).
        const double err = std::isfinite(r.standardError) ? r.standardError / std::sqrt(2.0) : 0.0;
        bk << k - 0.18;
        bv << r.baseline;
        be << err;
        (r.significant ? dk : rk) << k + 0.18;
        (r.significant ? dv : rv) << r.run;
        (r.significant ? de : re) << err;
        top = std::max({top, r.baseline + err, r.run + err});
    }
    // Three series: the baseline's bars, the run's, and the run's significant drops.
    const auto addBars = [this](const QString &name, const QColor &colour) {
        auto *bars = new QCPBars(plot()->yAxis, plot()->xAxis);
        bars->setName(name);
        bars->setWidth(0.34);
        QColor fill = colour;
        fill.setAlpha(180);
        bars->setBrush(fill);
        bars->setPen(QPen(colour.darker(130)));
        return bars;
    };
    QCPBars *baseBars = addBars(tr("%1 (baseline)").arg(baselineName), QColor(0x7F, 0x7F, 0x7F));
    QCPBars *runBars = addBars(runName, runColour);
    QCPBars *dropBars = addBars(tr("%1: significant drop").arg(runName), QColor(200, 30, 0));
    baseBars->setData(bk, bv);
    runBars->setData(rk, rv);
    dropBars->setData(dk, dv);
    const auto addErrors = [this](QCPBars *bars, const QVector<double> &errors) {
        auto *e = new QCPErrorBars(plot()->yAxis, plot()->xAxis);
        e->removeFromLegend();
        e->setDataPlottable(bars);
        e->setData(errors);
        e->setPen(QPen(palette().color(QPalette::Text)));
    };
    addErrors(baseBars, be);
    addErrors(runBars, re);
    addErrors(dropBars, de);
    if (dk.isEmpty())
        dropBars->removeFromLegend();
    plot()->yAxis->setTicker(ticker);
    plot()->yAxis->setRange(-0.6, std::max<double>(double(rows.size()) - 0.4, 0.6));
    plot()->xAxis->setRange(0, top > 0 ? top * 1.08 : 1);
    // Every row its label's height (the comparison scrolls the chart where the pane is shorter), with room
    // for the score axis and the legend above.
    setMinimumHeight(rows.empty() ? 0 : int(rows.size()) * rowHeight() + 110);
    plot()->legend->setVisible(!rows.empty());
    placeLegend(plot(), {}, true);
    setAxesShown(!rows.empty());
    plot()->replot(QCustomPlot::rpQueuedReplot);
}

void EvalChart::resizeEvent(QResizeEvent *event)
{
    PlotView::resizeEvent(event);
    // The legend's entries a row as the new width takes.
    if (!m_rows.empty()) {
        placeLegend(plot(), {}, true);
        plot()->replot(QCustomPlot::rpQueuedReplot);
    }
}

QString EvalChart::title() const
{
    return tr("evaluation scores — %1 against %2").arg(m_runName, m_baselineName);
}

QString EvalChart::csv() const
{
    const auto number = [](double v) { return QString::number(v, 'g', QLocale::FloatingPointShortest); };
    QString out = QStringLiteral("task,metric,inference,baseline,run,difference,standard error,z,significant\n");
    for (const analysis::EvalRow &r : m_rows) {
        out += QStringList {r.task, r.metric, r.inference, number(r.baseline), number(r.run), number(r.difference),
                   number(r.standardError), number(r.z), r.significant ? QStringLiteral("yes") : QStringLiteral("no")}
                   .join(QLatin1Char(','))
            + QLatin1Char('\n');
    }
    return out;
}

} // namespace fp8scope
