#include "core/analysis/rules.h"

#include <QJsonArray>

#include <algorithm>
#include <cmath>

namespace fp8scope::analysis::rules {

// A run's loss that rises for good (a loss that stops being a number is the blow-up rule's, rules/blowup.cpp): the
// smoothed loss (running median of n/50 points) stays more than max(5 % of its running minimum, 6 sigmas) above that
// minimum for 90 % of the points to the end. Its step is the run's departure.
void runBlowUp(const RunInputs &in, const TriageOptions &, RunCheck &r)
{
    if (!in.loss)
        return;
    // Intervals without a finite loss that the run came back from: said, where no skipped-iterations count says
    // them already (a Megatron log's all-skipped intervals are the skipped-iterations finding's); a blow-up, which
    // it never came back from, is the blow-up rule's (rules/blowup.cpp).
    const auto skippedAt = [&](int64_t step) {
        return in.skipped && valueAtStep(*in.skipped, step).value_or(0) > 0
            && std::binary_search(in.skipped->steps.begin(), in.skipped->steps.end(), step);
    };
    size_t nan = 0;
    for (size_t i = 0; i < in.loss->size(); ++i)
        nan += std::isfinite(in.loss->values[i]) || (in.blowUp && in.loss->steps[i] >= in.blowUp->step)
                || skippedAt(in.loss->steps[i])
            ? 0
            : 1;
    if (nan > 0) {
        Finding n;
        n.kind = FindingKind::SkippedIterations;
        n.severity = Severity::Info;
        n.stat = QStringLiteral("lm loss");
        n.summary = QStringLiteral("%1 log intervals without a finite loss (not finite, or every iteration skipped); "
                                   "the run came back from each")
                        .arg(nan);
        n.evidence = {{QStringLiteral("nan_points"), double(nan)}};
        r.findings.push_back(n);
    }
    const StepSeries f = finitePoints(*in.loss);
    if (f.size() < 8)
        return;
    const int h = std::clamp(int(f.size() / 50), 2, 50);
    const std::vector<double> smooth = runningMedian(f.values, h);
    const double noise = stepNoise(f.values);
    std::vector<bool> exceed(f.size());
    double low = smooth.front();
    for (size_t i = 0; i < f.size(); ++i) {
        low = std::min(low, smooth[i]);
        exceed[i] = smooth[i] > low + std::max(0.05 * std::abs(low), 6.0 * (std::isfinite(noise) ? noise : 0.0));
    }
    size_t at = size_t(-1);
    size_t count = 0;
    for (size_t i = f.size(); i-- > 0;) {
        count += exceed[i] ? 1 : 0;
        if (exceed[i] && double(count) / double(f.size() - i) >= 0.9 && f.size() - i >= size_t(std::max(3, h)))
            at = i;
    }
    if (at == size_t(-1))
        return;
    r.departure = f.steps[at];
    Finding b;
    b.kind = FindingKind::RunBlowUp;
    b.severity = Severity::Critical;
    b.stat = QStringLiteral("lm loss");
    b.step = r.departure;
    b.summary = QStringLiteral("the loss rises from step %1 and stays above its lowest level").arg(*r.departure);
    b.evidence = {{QStringLiteral("step"), double(*r.departure)}, {QStringLiteral("noise"), noise}};
    r.findings.push_back(b);
}

// Spikes that recover are part of training: 3 or more are said; a warning when 2 or more never come back.
void runSpikes(const RunInputs &in, const TriageOptions &options, RunCheck &r)
{
    if (!in.loss)
        return;
    const StepSeries f = finitePoints(*in.loss);
    if (f.size() < 8)
        return;
    const SpikeReport s = findSpikes(f, options.spikes);
    if (s.spikes.size() < 3)
        return;
    size_t unrecovered = 0, recovered = 0;
    QJsonArray steps;
    for (const Spike &x : s.spikes) {
        unrecovered += x.recoveredAt ? 0 : 1;
        recovered += x.recoveredAt ? 1 : 0;
        if (steps.size() < 20)
            steps.append(double(x.step));
    }
    Finding sp;
    sp.kind = FindingKind::LossSpikes;
    sp.severity = unrecovered >= 2 ? Severity::Warning : Severity::Info;
    sp.stat = QStringLiteral("lm loss");
    sp.step = s.spikes.front().step;
    sp.lastStep = s.spikes.back().step;
    sp.summary
        = QStringLiteral("%1 loss spikes in %2 points; %3 recovered").arg(s.spikes.size()).arg(s.points).arg(recovered);
    sp.evidence = {{QStringLiteral("spikes"), double(s.spikes.size())}, {QStringLiteral("points"), double(s.points)},
        {QStringLiteral("recovered"), double(recovered)}, {QStringLiteral("steps"), steps}};
    r.findings.push_back(sp);
}

} // namespace fp8scope::analysis::rules
