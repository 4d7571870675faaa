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
        if (e.more) {
            Finding f;
            f.kind = FindingKind::LossSpikes;
            f.severity = Severity::Warning;
            f.stat = QStringLiteral("lm loss");
            f.step = e.run.spikes.front().step;
            f.lastStep = e.run.spikes.back().step;
            QJsonArray steps;
            size_t recovered = 0;
            for (const Spike &s : e.run.spikes) {
                if (steps.size() < 20)
                    steps.append(double(s.step));
                recovered += s.recoveredAt ? 1 : 0;
            }
            f.summary = QStringLiteral("%1 loss spikes of its own in %2 steps against %3 of %4's own in %5 steps "
                                       "(mid-p = %6; %7 more at the same steps in both); %8 of %9 recovered")
                            .arg(e.runOnly)
                            .arg(e.runSpan)
                            .arg(e.baselineOnly)
                            .arg(baseName)
                            .arg(e.baselineSpan)
                            .arg(e.p, 0, 'g', 2)
                            .arg(e.shared)
                            .arg(recovered)
                            .arg(e.run.spikes.size());
            f.evidence = {{QStringLiteral("spikes"), double(e.run.spikes.size())},
                {QStringLiteral("baseline_spikes"), double(e.baseline.spikes.size())},
                {QStringLiteral("own_spikes"), double(e.runOnly)},
                {QStringLiteral("baseline_own_spikes"), double(e.baselineOnly)},
                {QStringLiteral("shared_spikes"), double(e.shared)},
                {QStringLiteral("match_tolerance_steps"), double(e.tolerance)},
                {QStringLiteral("points"), double(e.run.points)},
                {QStringLiteral("baseline_points"), double(e.baseline.points)},
                {QStringLiteral("steps_covered"), double(e.runSpan)},
                {QStringLiteral("baseline_steps_covered"), double(e.baselineSpan)}, {QStringLiteral("p"), e.p},
                {QStringLiteral("recovered"), double(recovered)}, {QStringLiteral("steps"), steps}};
            f.suggestion = QStringLiteral("lower the peak learning rate or lengthen its warm-up, or try current "
                                          "scaling instead of delayed (one change at a time)");
            c.findings.push_back(f);
        }
    }
}

} // namespace fp8scope::analysis::rules
