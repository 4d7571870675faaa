#include "core/analysis/rules.h"

#include <QJsonArray>

#include <algorithm>

namespace fp8scope::analysis::rules {

namespace {

// The spikes of `a` that `b` has no spike within `tolerance` steps of.
size_t unmatchedSpikes(const SpikeReport &a, const SpikeReport &b, int64_t tolerance)
{
    size_t n = 0;
    for (const Spike &x : a.spikes) {
        const bool matched = std::any_of(
            b.spikes.begin(), b.spikes.end(), [&](const Spike &y) { return std::abs(y.step - x.step) <= tolerance; });
        n += matched ? 0 : 1;
    }
    return n;
}

} // namespace

int64_t medianInterval(const StepSeries &s)
{
    std::vector<double> gaps;
    for (size_t i = 1; i < s.size(); ++i)
        gaps.push_back(double(s.steps[i] - s.steps[i - 1]));
    return gaps.empty() ? 1 : std::max<int64_t>(1, int64_t(median(gaps)));
}

// Spikes against the baseline: the run's own (not shared with the baseline at the same steps) outnumber the
// baseline's own beyond chance, before the departure.
void lossSpikes(const PairInputs &in, const TriageOptions &options, Comparison &c)
{
    // Spikes, before the departure (after it the loss has left its course anyway).
    const std::optional<StepSeries> &baseLoss = in.loss.baselinePoints, &runLoss = in.loss.runPoints;
    const std::optional<int64_t> &baselineDeparture = in.loss.baselineStep;
    const Departure &departure = in.loss.departure;
    const QString baseName = in.baseline.name();
    if (in.loss.found && baseLoss && runLoss) {
        const auto before = [&](const StepSeries &s, const std::optional<int64_t> &end) {
            if (!end)
                return s;
            StepSeries out;
            for (size_t i = 0; i < s.size() && s.steps[i] < *end; ++i) {
                out.steps.push_back(s.steps[i]);
                out.values.push_back(s.values[i]);
            }
            return out;
        };
        const SpikeReport sb = findSpikes(before(*baseLoss, baselineDeparture), options.spikes);
        const SpikeReport sr = findSpikes(before(*runLoss, departure.step), options.spikes);
        // Spikes both runs have at the same steps are the data's (the same batches in the same order), not the
        // precision's: the test compares the spikes only one of them has. The exposure is the steps a run's
        // points cover, not their number: runs logged at other intervals see the same spikes in more or fewer
        // points.
        const int64_t tolerance = 2 * std::max(medianInterval(*baseLoss), medianInterval(*runLoss));
        const size_t runOnly = unmatchedSpikes(sr, sb, tolerance), baseOnly = unmatchedSpikes(sb, sr, tolerance);
        const size_t shared = sr.spikes.size() - runOnly;
        const size_t runSpan = size_t(std::max<int64_t>(sr.span, 1)), baseSpan = size_t(std::max<int64_t>(sb.span, 1));
        const double p = spikeRateP(runOnly, runSpan, baseOnly, baseSpan);
        if (spikesMoreOften(runOnly, runSpan, baseOnly, baseSpan, options.spikeAlpha, options.minSpikes)) {
            Finding f;
            f.kind = FindingKind::LossSpikes;
            f.severity = Severity::Warning;
            f.stat = QStringLiteral("lm loss");
            f.step = sr.spikes.front().step;
            f.lastStep = sr.spikes.back().step;
            QJsonArray steps;
            size_t recovered = 0;
            for (const Spike &s : sr.spikes) {
                if (steps.size() < 20)
                    steps.append(double(s.step));
                recovered += s.recoveredAt ? 1 : 0;
            }
            f.summary = QStringLiteral("%1 loss spikes of its own in %2 steps against %3 of %4's own in %5 steps "
                                       "(p = %6; %7 more at the same steps in both); %8 of %9 recovered")
                            .arg(runOnly)
                            .arg(runSpan)
                            .arg(baseOnly)
                            .arg(baseName)
                            .arg(baseSpan)
                            .arg(p, 0, 'g', 2)
                            .arg(shared)
                            .arg(recovered)
                            .arg(sr.spikes.size());
            f.evidence = {{QStringLiteral("spikes"), double(sr.spikes.size())},
                {QStringLiteral("baseline_spikes"), double(sb.spikes.size())},
                {QStringLiteral("own_spikes"), double(runOnly)},
                {QStringLiteral("baseline_own_spikes"), double(baseOnly)},
                {QStringLiteral("shared_spikes"), double(shared)},
                {QStringLiteral("match_tolerance_steps"), double(tolerance)},
                {QStringLiteral("points"), double(sr.points)}, {QStringLiteral("baseline_points"), double(sb.points)},
                {QStringLiteral("steps_covered"), double(runSpan)},
                {QStringLiteral("baseline_steps_covered"), double(baseSpan)}, {QStringLiteral("p"), p},
                {QStringLiteral("recovered"), double(recovered)}, {QStringLiteral("steps"), steps}};
            f.suggestion = QStringLiteral("lower the peak learning rate or lengthen its warm-up, or try current "
                                          "scaling instead of delayed (one change at a time)");
            c.findings.push_back(f);
        }
    }
}

} // namespace fp8scope::analysis::rules
