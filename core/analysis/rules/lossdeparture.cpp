#include "core/analysis/rules.h"

namespace fp8scope::analysis::rules {

QJsonObject departureEvidence(const Departure &d)
{
    return {{QStringLiteral("step"), d.step ? QJsonValue(double(*d.step)) : QJsonValue()},
        {QStringLiteral("low"), double(d.low)}, {QStringLiteral("high"), double(d.high)},
        {QStringLiteral("offset_before"), d.offset}, {QStringLiteral("noise"), d.noise},
        {QStringLiteral("band"), d.band}, {QStringLiteral("gap_at_end"), d.gapAtEnd},
        {QStringLiteral("points"), double(d.points)}};
}

// The loss: where the run leaves the baseline's band for good (seriesmath's findDeparture on the aligned
// difference, gathered as the loss's StatComparison).
void lossDeparture(const PairInputs &in, const TriageOptions &, Comparison &c)
{
    const StatComparison &loss = in.loss;
    if (!loss.found) {
        // Nothing to compare: said, so that no verdict reads as "healthy".
        const auto has = [](const std::optional<StepSeries> &p) { return p && !p->empty(); };
        const bool baselineHas = has(loss.baselinePoints), runHas = has(loss.runPoints);
        Finding f;
        f.kind = FindingKind::NoCommonLoss;
        f.severity = Severity::Warning;
        f.stat = QStringLiteral("lm loss");
        f.summary = baselineHas == runHas
            ? QStringLiteral("neither %1 nor %2 has a training loss fp8scope reads: the runs are not compared")
                  .arg(in.baseline.name(), in.run.name())
            : QStringLiteral("only %1 has a training loss; %2 has none fp8scope reads: the runs are not compared")
                  .arg(baselineHas ? in.baseline.name() : in.run.name(),
                      baselineHas ? in.run.name() : in.baseline.name());
        f.suggestion = QStringLiteral("give both runs their training log (the Megatron log, TensorBoard events, a "
                                      "metrics CSV or JSONL with a loss column)");
        f.evidence = {{QStringLiteral("baseline_has_loss"), baselineHas}, {QStringLiteral("run_has_loss"), runHas}};
        c.findings.push_back(f);
        return;
    }
    const Departure &departure = loss.departure;
    c.departure = departure.step;
    if (!departure.step)
        return;
    Finding f;
    f.kind = FindingKind::LossDeparture;
    f.severity = Severity::Critical;
    f.stat = QStringLiteral("lm loss");
    f.step = departure.step;
    f.summary = QStringLiteral("the loss leaves %1's band at step %2 (between %3 and %4) and stays above it; "
                               "%5 higher at the end")
                    .arg(in.baseline.name())
                    .arg(*departure.step)
                    .arg(departure.low)
                    .arg(departure.high)
                    .arg(departure.gapAtEnd, 0, 'g', 3);
    f.evidence = departureEvidence(departure);
    f.evidence.insert(QStringLiteral("planned_steps"), double(c.plannedSteps));
    f.evidence.insert(QStringLiteral("aligned_on"), loss.axis);
    c.findings.push_back(f);
}

} // namespace fp8scope::analysis::rules
