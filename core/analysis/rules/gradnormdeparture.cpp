#include "core/analysis/rules.h"

namespace fp8scope::analysis::rules {

void gradNormDeparture(const PairInputs &in, const TriageOptions &, Comparison &c)
{
    // The grad norm: a departure of its own, before the loss's an early warning, after it a consequence.
    if (const StatComparison &grad = in.grad; grad.departure.step) {
        const Departure &g = grad.departure;
        Finding f;
        f.kind = FindingKind::GradNormDeparture;
        f.severity = Severity::Warning;
        f.stat = QStringLiteral("grad norm");
        f.step = g.step;
        const QString when = !c.departure ? QStringLiteral("while the loss does not depart")
            : *g.step <= *c.departure ? QStringLiteral("%1 steps before the loss departs").arg(*c.departure - *g.step)
                                      : QStringLiteral("%1 steps after the loss departs").arg(*g.step - *c.departure);
        f.summary = QStringLiteral("the grad norm leaves %1's band at step %2 (between %3 and %4), %5; %6 higher at "
                                   "the end")
                        .arg(in.baseline.name())
                        .arg(*g.step)
                        .arg(g.low)
                        .arg(g.high)
                        .arg(when)
                        .arg(g.gapAtEnd, 0, 'g', 3);
        f.evidence = departureEvidence(g);
        f.evidence.insert(QStringLiteral("relative_tolerance"), grad.options.relativeTolerance);
        f.evidence.insert(
            QStringLiteral("lead_steps"), c.departure ? QJsonValue(double(*c.departure - *g.step)) : QJsonValue());
        c.findings.push_back(f);
    }
}

} // namespace fp8scope::analysis::rules
