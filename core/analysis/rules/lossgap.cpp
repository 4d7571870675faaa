#include "core/analysis/rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

namespace fp8scope::analysis::rules {

// The loss's gap at the end (the median difference over the last smoothing window) against
// the gap the baseline accepts: its manifest's loss_gap_bar, else the run's, else the default. Every comparison
// with a common loss says it (what a user asks first: "how big a gap is acceptable"): over the bar beyond the
// noise (the gap less the band of its smoothed difference is above it) is a warning; within it, or at it within
// the noise, is said (info), the noise with it.
void lossGap(const PairInputs &in, const TriageOptions &options, Comparison &c)
{
    const StatComparison &loss = in.loss;
    const Departure &d = loss.departure;
    // A run that blew up has no gap at its end: its loss is not a number there (the blow-up finding says so).
    if (!loss.found || d.trace.steps.empty() || d.trace.smoothed.empty() || d.trace.difference.empty() || in.run.blowUp)
        return;
    std::optional<double> bar;
    QString barFrom;
    if (in.baseline.info && in.baseline.info->lossGapBar) {
        bar = in.baseline.info->lossGapBar;
        barFrom = QStringLiteral("%1's loss_gap_bar").arg(in.baseline.name());
    } else if (in.run.info && in.run.info->lossGapBar) {
        bar = in.run.info->lossGapBar;
        barFrom = QStringLiteral("%1's loss_gap_bar").arg(in.run.name());
    } else {
        bar = options.lossGapBar;
        barFrom = QStringLiteral("the default; set loss_gap_bar in %1's fp8scope.json or its run settings")
                      .arg(in.baseline.name());
    }
    // The gap at the end: the median of the differences over the last smoothing window (the departure's own, at
    // least five points), leaving out the points inside a spike of either run, from its start to its recovery or
    // the log's end (a spike's tail in the last steps is not a cost); its noise: the departure's band formula for a
    // median of that many points (4 sigmas x 1.25 sigma / sqrt(points)).
    std::vector<std::pair<int64_t, int64_t>> spikes;
    if (loss.axis == QLatin1String("step")) {
        for (const std::optional<StepSeries> *p : {&loss.baselinePoints, &loss.runPoints}) {
            if (!*p)
                continue;
            // A spike the log ends in (not recovered yet) is left out to the end: its tail is no steady gap.
            for (const Spike &s : findSpikes(finitePoints(**p), options.spikes).spikes)
                spikes.emplace_back(s.step, s.recoveredAt.value_or(std::numeric_limits<int64_t>::max()));
        }
    }
    const auto inSpike = [&](int64_t step) {
        return std::any_of(
            spikes.begin(), spikes.end(), [&](const auto &r) { return step >= r.first && step < r.second; });
    };
    const size_t want = size_t(std::max(d.window, 5));
    std::vector<double> last;
    for (size_t i = d.trace.difference.size(); i-- > 0 && last.size() < want;) {
        if (!inSpike(d.trace.steps[i]))
            last.push_back(d.trace.difference[i]);
    }
    if (last.empty())
        return;
    const double gap = median(std::span<const double>(last));
    const double noise = std::isfinite(d.noise) ? d.noise : 0.0;
    const double band = options.departure.noiseSigmas * 1.25 * noise / std::sqrt(double(last.size()));
    if (!std::isfinite(gap))
        return;
    const double base = d.trace.baseline.back();
    const double relative = base != 0 ? gap / std::abs(base) : NAN;
    const bool over = gap - band > *bar;
    const bool within = gap + band <= *bar;
    Finding f;
    f.kind = FindingKind::LossGap;
    f.severity = over ? Severity::Warning : Severity::Info;
    f.stat = QStringLiteral("lm loss");
    f.step = d.trace.steps.back();
    f.lastStep = d.trace.steps.back();
    // The noise band, or why there is none: a difference that does not vary (one run the other shifted), or one
    // too short to measure its noise.
    const QString noiseText = band > 0 ? QStringLiteral("+-%1 noise").arg(band, 0, 'g', 2)
        : std::isfinite(d.noise)       ? QStringLiteral("the difference does not vary")
                                       : QStringLiteral("its noise not measured");
    f.summary = QStringLiteral("at the end (step %1) the loss is %2 %3 %4's (%5 %, %6): %7 the accepted "
                               "gap of %8 (%9)")
                    .arg(d.trace.steps.back())
                    .arg(std::abs(gap), 0, 'g', 3)
                    .arg(gap >= 0 ? QStringLiteral("above") : QStringLiteral("below"))
                    .arg(in.baseline.name())
                    .arg(100.0 * relative, 0, 'f', 2)
                    .arg(noiseText)
                    .arg(over        ? QStringLiteral("over")
                            : within ? QStringLiteral("within")
                                     : QStringLiteral("near (not told apart at this noise)"))
                    .arg(*bar, 0, 'g', 3)
                    .arg(barFrom);
    f.evidence = {{QStringLiteral("gap_at_end"), gap}, {QStringLiteral("relative"), relative},
        {QStringLiteral("bar"), *bar}, {QStringLiteral("bar_from"), barFrom}, {QStringLiteral("over"), over},
        {QStringLiteral("within"), within}, {QStringLiteral("noise_band"), band},
        {QStringLiteral("points"), double(last.size())}, {QStringLiteral("step"), double(d.trace.steps.back())}};
    c.findings.push_back(f);
}

} // namespace fp8scope::analysis::rules
