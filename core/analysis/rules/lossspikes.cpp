#include "core/analysis/rules.h"
#include "core/analysis/spikeexcess.h"

#include <QJsonArray>

#include <algorithm>

namespace fp8scope::analysis::rules {

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
        const SpikeExcess e = compareSpikes(before(*runLoss, departure.step), before(*baseLoss, baselineDeparture),
            {.spikes = options.spikes, .alpha = options.spikeAlpha, .minSpikes = options.minSpikes});
        const SpikeReport &sr = e.run, &sb = e.baseline;
        const size_t runOnly = e.runOnly, baseOnly = e.baselineOnly, shared = e.shared;
        const size_t runSpan = size_t(e.runSpan), baseSpan = size_t(e.baselineSpan);
        const double p = e.p;
        const int64_t tolerance = e.tolerance;
        if (e.more) {
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
                                       "(mid-p = %6; %7 more at the same steps in both); %8 of %9 recovered")
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
