#include "evalchart.h"

#include "views/plotting/qcp.h"

#include <cmath>

namespace fp8scope {

EvalChart::EvalChart(QWidget *parent)
    : PlotView(QStringLiteral("evalChart"), parent)
{
    plot()->yAxis->setLabel(tr("score"));
    plot()->legend->setVisible(true);
    plot()->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
}

void EvalChart::setRows(const std::vector<analysis::EvalRow> &rows, const QString &baselineName, const QString &runName,
    const QColor &runColour)
{
    m_rows = rows;
    m_baselineName = baselineName;
    m_runName = runName;
    plot()->clearPlottables();
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    // Per row the baseline's bar left of the tick, the run's right of it (among the drops when significant).
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
        auto *bars = new QCPBars(plot()->xAxis, plot()->yAxis);
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
        auto *e = new QCPErrorBars(plot()->xAxis, plot()->yAxis);
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
    plot()->xAxis->setTicker(ticker);
    // Many tasks: their names slanted, so that they do not run into each other.
    plot()->xAxis->setTickLabelRotation(rows.size() > 4 ? 45 : 0);
    plot()->xAxis->setRange(-0.6, std::max<double>(double(rows.size()) - 0.4, 0.6));
    plot()->yAxis->setRange(0, top > 0 ? top * 1.15 : 1);
    plot()->legend->setVisible(!rows.empty());
    plot()->replot(QCustomPlot::rpQueuedReplot);
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
