#include "core/analysis/rules.h"

#include <QJsonValue>

#include <algorithm>
#include <limits>

namespace fp8scope::analysis::rules {

namespace {

// Skipped and NaN iterations (Megatron's counts per log interval), after the start-up steps (those of the
// first steps are an FP16 loss scaler finding its scale).
struct SkipCounts {
    double total = 0, late = 0, nan = 0;
    size_t lateIntervals = 0; // log intervals after the start-up with a skip: one spike's skips come in one or two
    std::vector<int64_t> lateSteps; // their steps
    size_t atSpikes = 0; // of those, the intervals at one of the run's own loss spikes
    int64_t lateSpan = 0; // the steps after the start-up the counts cover
    std::optional<int64_t> first, last;
};

SkipCounts countSkips(const RunInputs &run, int64_t startUp)
{
    SkipCounts c;
    // The intervals of a blow-up (every iteration skipped to the end of the log) are the blow-up finding's.
    const int64_t until = run.blowUp ? run.blowUp->step : std::numeric_limits<int64_t>::max();
    if (const std::optional<StepSeries> &skipped = run.skipped) {
        for (size_t i = 0; i < skipped->size() && skipped->steps[i] < until; ++i) {
            const double v = skipped->values[i];
            if (skipped->steps[i] > startUp)
                c.lateSpan = std::max(c.lateSpan, skipped->steps[i] - startUp);
            if (!(v > 0))
                continue;
            c.total += v;
            if (!c.first)
                c.first = skipped->steps[i];
            c.last = skipped->steps[i];
            if (skipped->steps[i] > startUp) {
                c.late += v;
                ++c.lateIntervals;
                c.lateSteps.push_back(skipped->steps[i]);
            }
        }
    }
    if (const std::optional<StepSeries> &nans = run.nan) {
        for (size_t i = 0; i < nans->size() && nans->steps[i] < until; ++i)
            c.nan += nans->values[i] > 0 ? nans->values[i] : 0.0;
    }
    return c;
}

// Counts the skip intervals of `c` that fall at one of the run's own loss spikes (within two log intervals of
// its start): the skips are that spike's symptom, and the spike test has weighed the spike already.
void countSkipsAtSpikes(const RunInputs &run, const SpikeOptions &options, SkipCounts *c)
{
    const std::optional<StepSeries> &loss = run.loss;
    if (!loss || c->lateSteps.empty())
        return;
    const SpikeReport spikes = findSpikes(*loss, options);
    const int64_t tolerance = 2 * std::max<int64_t>(1, medianInterval(*loss));
    for (int64_t step : c->lateSteps) {
        bool at = false;
        for (const Spike &sp : spikes.spikes)
            at = at || std::abs(step - sp.step) <= tolerance;
        c->atSpikes += at ? 1 : 0;
    }
}

// The finding: checked alone, any skip after the start-up or any NaN iteration is a warning (steps whose
// gradients were not finite). Against a baseline, a skip at one of the run's own loss spikes is that spike's
// symptom, which the spike test weighs against the baseline's spikes: counted once, there. The skips elsewhere
// after the start-up are a warning when their intervals outnumber the baseline's (also those away from its
// spikes) beyond chance, by the same test at the same significance; otherwise they are said (info). NaN
// iterations stay a warning either way.
} // namespace

std::optional<Finding> skippedFinding(
    const RunInputs &run, int64_t planned, const RunInputs *baseline, const TriageOptions &options)
{
    const int64_t startUp = std::max<int64_t>(100, planned / 20);
    const SkipCounts c = countSkips(run, startUp);
    if (c.total <= 0 && c.nan <= 0)
        return std::nullopt;
    Finding f;
    f.kind = FindingKind::SkippedIterations;
    f.stat = QStringLiteral("number of skipped iterations");
    f.step = c.first;
    f.lastStep = c.last;
    std::optional<SkipCounts> base;
    double p = -1;
    bool moreOften = c.late > 0;
    SkipCounts own = c;
    size_t elsewhere = c.lateIntervals, baseElsewhere = 0;
    if (baseline && c.late > 0) {
        base = countSkips(*baseline, startUp);
        countSkipsAtSpikes(run, options.spikes, &own);
        countSkipsAtSpikes(*baseline, options.spikes, &*base);
        elsewhere = own.lateIntervals - own.atSpikes;
        baseElsewhere = base->lateIntervals - base->atSpikes;
        const size_t span = size_t(std::max<int64_t>(c.lateSpan, 1)),
                     baseSpan = size_t(std::max<int64_t>(base->lateSpan, 1));
        p = spikeRateP(elsewhere, span, baseElsewhere, baseSpan);
        moreOften = spikesMoreOften(elsewhere, span, baseElsewhere, baseSpan, options.spikeAlpha, options.minSpikes);
    }
    f.severity = moreOften || c.nan > 0 ? Severity::Warning : Severity::Info;
    if (c.late <= 0 && c.nan <= 0) {
        f.summary = QStringLiteral("%1 iterations skipped, all by step %2: the loss scaler finding its scale")
                        .arg(c.total)
                        .arg(*c.last);
    } else if (base && !moreOften && c.nan <= 0) {
        f.summary = QStringLiteral("%1 iterations skipped after step %2 in %3 log intervals, %4 of them at the "
                                   "run's own loss spikes (weighed with the spikes); elsewhere %5 against %6 of the "
                                   "baseline's: not more often beyond chance (p = %7)")
                        .arg(c.late)
                        .arg(startUp)
                        .arg(c.lateIntervals)
                        .arg(own.atSpikes)
                        .arg(elsewhere)
                        .arg(baseElsewhere)
                        .arg(p, 0, 'g', 2);
    } else {
        f.summary = QStringLiteral("%1 iterations skipped (%2 after step %3), %4 NaN: steps whose gradients were not "
                                   "finite")
                        .arg(c.total)
                        .arg(c.late)
                        .arg(startUp)
                        .arg(c.nan);
        if (base)
            f.summary += QStringLiteral("; away from its loss spikes in %1 log intervals against %2 of the "
                                        "baseline's (p = %3)")
                             .arg(elsewhere)
                             .arg(baseElsewhere)
                             .arg(p, 0, 'g', 2);
    }
    f.evidence = {{QStringLiteral("skipped"), c.total}, {QStringLiteral("skipped_after_start"), c.late},
        {QStringLiteral("intervals_after_start"), double(c.lateIntervals)},
        {QStringLiteral("intervals_at_spikes"), base ? QJsonValue(double(own.atSpikes)) : QJsonValue()},
        {QStringLiteral("nan"), c.nan}, {QStringLiteral("start_steps"), double(startUp)},
        {QStringLiteral("first"), c.first ? QJsonValue(double(*c.first)) : QJsonValue()},
        {QStringLiteral("last"), c.last ? QJsonValue(double(*c.last)) : QJsonValue()},
        {QStringLiteral("baseline_intervals_elsewhere"), base ? QJsonValue(double(baseElsewhere)) : QJsonValue()},
        {QStringLiteral("p"), p >= 0 ? QJsonValue(p) : QJsonValue()}};
    if (f.severity == Severity::Warning)
        f.suggestion = QStringLiteral("find the layers whose statistics overflow near those steps (overflows%, "
                                      "cur_amax) and keep them in BF16, or lower the learning rate");
    return f;
}

void skippedIterations(const PairInputs &in, const TriageOptions &options, Comparison &c)
{
    if (const auto f = skippedFinding(in.run, c.plannedSteps, &in.baseline, options))
        c.findings.push_back(*f);
}

void runSkippedIterations(const RunInputs &in, const TriageOptions &options, RunCheck &r)
{
    if (!in.loss)
        return;
    if (const auto f = skippedFinding(in, in.plannedSteps(in.loss->steps.back()), nullptr, options))
        r.findings.push_back(*f);
}

} // namespace fp8scope::analysis::rules
