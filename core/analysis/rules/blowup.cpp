#include "core/analysis/rules.h"
#include "core/query/statnames.h"

#include <QJsonArray>

#include <cmath>
#include <limits>

namespace fp8scope::analysis::rules {

namespace {

QString valueText(double v)
{
    return std::isnan(v) ? QStringLiteral("nan") : v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
}

// "decoder.layers.3.mlp.linear_fc1 gradient underflows% on rank 5", or "lm loss" for a run-level statistic.
QString pointName(const NonFinitePoint &p)
{
    if (p.series.layer.isEmpty())
        return p.series.stat;
    const int rank = rankOfSource(p.series.source);
    return QStringLiteral("%1 of %2 %3%4")
        .arg(p.series.stat, p.series.layer, p.series.tensor,
            rank >= 0 ? QStringLiteral(" on rank %1").arg(rank) : QString());
}

} // namespace

std::vector<Finding> blowUpFindings(const RunInputs &run, const TriageOptions &options)
{
    std::vector<Finding> out;
    if (const std::optional<BlowUp> &b = run.blowUp) {
        Finding f;
        f.kind = FindingKind::RunBlowUp;
        f.severity = Severity::Critical;
        f.stat = QStringLiteral("lm loss");
        f.step = b->step;
        f.lastStep = b->lastStep;
        f.summary
            = QStringLiteral("%1 blows up at step %2: from there to the end of its log (%3 log interval%4, to "
                             "step %5) %6%7")
                  .arg(run.name())
                  .arg(b->step)
                  .arg(b->intervals)
                  .arg(b->intervals == 1 ? QString() : QStringLiteral("s"))
                  .arg(b->lastStep)
                  .arg(b->what())
                  .arg(b->lastHealthy ? QStringLiteral("; its last finite loss was at step %1").arg(*b->lastHealthy)
                                      : QString());
        f.evidence = {{QStringLiteral("step"), double(b->step)}, {QStringLiteral("intervals"), double(b->intervals)},
            {QStringLiteral("last_step"), double(b->lastStep)},
            {QStringLiteral("last_healthy"), b->lastHealthy ? QJsonValue(double(*b->lastHealthy)) : QJsonValue()},
            {QStringLiteral("loss_not_finite"), b->lossNotFinite},
            {QStringLiteral("grad_norm_not_finite"), b->gradNormNotFinite}};
        out.push_back(f);
    }
    if (!run.nonFinite.empty()) {
        const NonFinitePoint &first = run.nonFinite.front();
        // In a run followed live that has not blown up (yet), an overflowing gradient of a run that scales its loss
        // dynamically is the scaler's business: a warning; anything else is the blow-up on its way.
        const bool expected = !run.blowUp && options.live && isGradientTensor(first.series.tensor)
            && scalesLossDynamically(run.lossScale ? &*run.lossScale : nullptr);
        Finding f;
        f.kind = FindingKind::FirstNonFinite;
        f.severity = expected ? Severity::Warning : Severity::Critical;
        f.layer = first.series.layer;
        f.tensor = first.series.tensor;
        f.stat = first.series.stat;
        f.step = first.step;
        QJsonArray same;
        QStringList sameText;
        size_t sameCount = 0;
        for (size_t i = 1; i < run.nonFinite.size() && run.nonFinite[i].step == first.step; ++i) {
            ++sameCount;
            if (same.size() < 12) {
                same.append(pointName(run.nonFinite[i]));
                if (sameText.size() < 3)
                    sameText << pointName(run.nonFinite[i]);
            }
        }
        const int rank = rankOfSource(first.series.source);
        const QString where = first.series.layer.isEmpty()
            ? first.series.stat
            : QStringLiteral("%1 %2 %3 (%4%5)")
                  .arg(first.series.layer, first.series.tensor, first.series.stat,
                      isGradientTensor(first.series.tensor) ? QStringLiteral("backward") : QStringLiteral("forward"),
                      rank >= 0 ? QStringLiteral(", rank %1").arg(rank) : QString());
        f.summary = QStringLiteral("the first non-finite value: %1 is %2 at step %3")
                        .arg(where, valueText(first.value))
                        .arg(first.step);
        if (run.blowUp && first.step < run.blowUp->step)
            f.summary += QStringLiteral(", %1 steps before the loss shows it").arg(run.blowUp->step - first.step);
        else if (!run.blowUp)
            f.summary += QStringLiteral(", before the loss shows it");
        if (sameCount > 0)
            f.summary += QStringLiteral("; at the same step %1 other value%2 turned, later in the step's order (%3%4)")
                             .arg(sameCount)
                             .arg(sameCount == 1 ? QString() : QStringLiteral("s"))
                             .arg(sameText.join(QStringLiteral(", ")))
                             .arg(sameCount > size_t(sameText.size()) ? QStringLiteral(", ...") : QString());
        if (run.precursor)
            f.summary += QStringLiteral("; before it, %1").arg(run.precursor->text());
        if (expected)
            f.summary += QStringLiteral(" (the run scales its loss dynamically: an overflowing gradient is skipped, "
                                        "and is a blow-up only if the loss follows)");
        f.evidence = {{QStringLiteral("step"), double(first.step)}, {QStringLiteral("value"), valueText(first.value)},
            {QStringLiteral("source"), first.series.source}, {QStringLiteral("rank"), rank},
            {QStringLiteral("phase"),
                first.series.layer.isEmpty()                ? QStringLiteral("run")
                    : isGradientTensor(first.series.tensor) ? QStringLiteral("backward")
                                                            : QStringLiteral("forward")},
            {QStringLiteral("same_step"), same}, {QStringLiteral("same_step_count"), double(sameCount)},
            {QStringLiteral("series_non_finite"), double(run.nonFinite.size())},
            {QStringLiteral("searched_from"),
                run.nonFiniteFrom && *run.nonFiniteFrom > std::numeric_limits<int64_t>::min()
                    ? QJsonValue(double(*run.nonFiniteFrom))
                    : QJsonValue()},
            {QStringLiteral("blow_up_step"), run.blowUp ? QJsonValue(double(run.blowUp->step)) : QJsonValue()}};
        if (run.precursor)
            f.evidence.insert(QStringLiteral("before"),
                QJsonObject {{QStringLiteral("stat"), run.precursor->stat},
                    {QStringLiteral("from"), double(run.precursor->from)},
                    {QStringLiteral("to"), double(run.precursor->to)}, {QStringLiteral("level"), run.precursor->before},
                    {QStringLiteral("last"), run.precursor->after}});
        if (!first.series.layer.isEmpty())
            f.suggestion = QStringLiteral("resume from the last checkpoint before step %1 with %2 kept in BF16 (the "
                                          "layer whose %3 turned first), or with a lower learning rate; one change at "
                                          "a time")
                               .arg(first.step)
                               .arg(first.series.layer, first.series.tensor);
        else
            f.suggestion = QStringLiteral("log Transformer Engine's statistics (overflows%, cur_amax) to see which "
                                          "layer turns first, and resume from the last checkpoint before step %1")
                               .arg(first.step);
        out.push_back(f);
    }
    const std::vector<Recovery> recoveries = recoveriesOf(run.rewoundBlowUps);
    if (!recoveries.empty()) {
        Finding f;
        f.kind = FindingKind::Recoveries;
        f.severity = recoveries.size() >= 2 ? Severity::Warning : Severity::Info;
        f.stat = QStringLiteral("rewound blow-up");
        f.step = recoveries.front().blewUpAt;
        f.lastStep = recoveries.back().blewUpAt;
        QJsonArray list;
        QStringList text;
        for (const Recovery &r : recoveries) {
            list.append(QJsonObject {{QStringLiteral("blew_up_at"), double(r.blewUpAt)},
                {QStringLiteral("resumed_from"), double(r.resumedFrom)}});
            text << QStringLiteral("blew up at step %1 and went back to %2").arg(r.blewUpAt).arg(r.resumedFrom);
        }
        f.summary = QStringLiteral("%1 needed %2 recover%3 from a blow-up by going back to a checkpoint: %4")
                        .arg(run.name())
                        .arg(recoveries.size())
                        .arg(recoveries.size() == 1 ? QStringLiteral("y") : QStringLiteral("ies"))
                        .arg(text.join(QStringLiteral("; ")));
        f.evidence = {{QStringLiteral("recoveries"), list}, {QStringLiteral("count"), double(recoveries.size())}};
        if (recoveries.size() >= 2)
            f.suggestion = QStringLiteral("spikes that need repeated recovery: lower the peak learning rate or "
                                          "lengthen its warm-up, and keep the layers whose statistics overflow first "
                                          "in BF16 (one change at a time)");
        out.push_back(f);
    }
    return out;
}

void blowUp(const PairInputs &in, const TriageOptions &options, Comparison &c)
{
    for (Finding &f : blowUpFindings(in.run, options))
        c.findings.push_back(std::move(f));
    // The run departs where it blew up, when its loss did not leave the band before.
    if (in.run.blowUp && (!c.departure || in.run.blowUp->step < *c.departure))
        c.departure = in.run.blowUp->step;
}

void runBlowUpNonFinite(const RunInputs &in, const TriageOptions &options, RunCheck &r)
{
    for (Finding &f : blowUpFindings(in, options))
        r.findings.push_back(std::move(f));
    if (in.blowUp && (!r.departure || in.blowUp->step < *r.departure))
        r.departure = in.blowUp->step;
}

} // namespace fp8scope::analysis::rules
