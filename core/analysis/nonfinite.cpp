#include "nonfinite.h"

#include "seriesmath.h"

#include "core/formats/layerorder.h"
#include "core/query/statnames.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace fp8scope::analysis {

QString BlowUp::what() const
{
    if (lossNotFinite && gradNormNotFinite)
        return QStringLiteral("neither the loss nor the grad norm is a finite number");
    if (gradNormNotFinite)
        return QStringLiteral("the grad norm is not finite");
    return QStringLiteral("the loss is not a number (not finite, or every iteration skipped)");
}

bool scalesLossDynamically(const StepSeries *lossScale)
{
    if (!lossScale)
        return false;
    double lo = INFINITY, hi = -INFINITY;
    for (double v : lossScale->values) {
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
    return hi > lo || hi > 1.0;
}

std::optional<BlowUp> blowUpOf(const StepSeries *loss, const StepSeries *gradNorm, size_t minIntervals)
{
    if (!loss || loss->empty())
        return std::nullopt;
    const auto gradBad = [&](int64_t step) {
        if (!gradNorm)
            return false;
        const auto it = std::lower_bound(gradNorm->steps.begin(), gradNorm->steps.end(), step);
        return it != gradNorm->steps.end() && *it == step
            && !std::isfinite(gradNorm->values[size_t(it - gradNorm->steps.begin())]);
    };
    BlowUp b;
    b.lastStep = loss->steps.back();
    size_t i = loss->size();
    while (i > 0) {
        const bool lossBad = !std::isfinite(loss->values[i - 1]);
        const bool gBad = gradBad(loss->steps[i - 1]);
        if (!lossBad && !gBad)
            break;
        b.lossNotFinite = b.lossNotFinite || lossBad;
        b.gradNormNotFinite = b.gradNormNotFinite || gBad;
        --i;
    }
    if (loss->size() - i < std::max<size_t>(1, minIntervals))
        return std::nullopt;
    b.step = loss->steps[i];
    b.intervals = loss->size() - i;
    for (size_t k = i; k-- > 0;) {
        if (std::isfinite(loss->values[k])) {
            b.lastHealthy = loss->steps[k];
            break;
        }
    }
    return b;
}

std::optional<int64_t> lastNonFiniteBefore(const StepSeries &loss, int64_t until)
{
    for (size_t k = loss.size(); k-- > 0;) {
        if (loss.steps[k] < until && !std::isfinite(loss.values[k]))
            return loss.steps[k];
    }
    return std::nullopt;
}

int64_t nonFiniteSearchFrom(const BlowUp &b, const StepSeries &loss)
{
    const int64_t interval = std::max<int64_t>(1, medianInterval(loss));
    int64_t from = b.step - 5 * interval;
    // Not before the last transient: a non-finite loss before the last healthy interval, which the run came back
    // from.
    if (b.lastHealthy) {
        if (const auto transient = lastNonFiniteBefore(loss, *b.lastHealthy))
            from = std::max(from, *transient + 1);
    }
    return from;
}

bool isGradientTensor(const QString &tensor)
{
    return tensor == QLatin1String("gradient") || tensor == QLatin1String("dgrad") || tensor == QLatin1String("wgrad")
        || tensor.contains(QLatin1String("grad"));
}

namespace {

// Within a step: 0 forward tensors, 1 gradients, 2 the grad norm, 3 the loss, 4 anything else run-level.
int phaseOf(const NonFinitePoint &p)
{
    if (!p.series.layer.isEmpty())
        return isGradientTensor(p.series.tensor) ? 1 : 0;
    if (p.series.stat == QLatin1String("grad norm"))
        return 2;
    if (p.series.stat == QLatin1String("lm loss"))
        return 3;
    return 4;
}

} // namespace

std::vector<NonFinitePoint> orderNonFinite(std::vector<NonFinitePoint> points)
{
    std::stable_sort(points.begin(), points.end(), [](const NonFinitePoint &a, const NonFinitePoint &b) {
        if (a.step != b.step)
            return a.step < b.step;
        const int pa = phaseOf(a), pb = phaseOf(b);
        if (pa != pb)
            return pa < pb;
        if (a.series.layer != b.series.layer) {
            // Forward in layer order, backward in reverse.
            return pa == 1 ? layerLess(b.series.layer, a.series.layer) : layerLess(a.series.layer, b.series.layer);
        }
        const int ra = rankOfSource(a.series.source), rb = rankOfSource(b.series.source);
        if (ra != rb)
            return ra < rb;
        if (a.series.tensor != b.series.tensor)
            return a.series.tensor < b.series.tensor;
        if (a.series.stat != b.series.stat)
            return a.series.stat < b.series.stat;
        return a.series.source < b.series.source;
    });
    return points;
}

QString Precursor::text() const
{
    if (stat == QLatin1String("loss scale"))
        return QStringLiteral("the loss scale was cut from %1 to %2 between steps %3 and %4")
            .arg(before, 0, 'g', 6)
            .arg(after, 0, 'g', 6)
            .arg(from)
            .arg(to);
    return QStringLiteral("its %1 rose from %2 to %3 between steps %4 and %5")
        .arg(stat)
        .arg(before, 0, 'g', 4)
        .arg(after, 0, 'g', 4)
        .arg(from)
        .arg(to);
}

std::optional<Precursor> precursorIn(const QString &stat, const StepSeries &s, int64_t from, int64_t until)
{
    std::vector<double> earlier;
    std::vector<int64_t> steps;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s.steps[i] >= from && s.steps[i] < until && std::isfinite(s.values[i])) {
            earlier.push_back(s.values[i]);
            steps.push_back(s.steps[i]);
        }
    }
    if (earlier.size() < 3)
        return std::nullopt;
    const double last = earlier.back();
    earlier.pop_back();
    const double level = median(std::span<const double>(earlier));
    Precursor p {stat, steps.front(), steps.back(), level, last};
    if (stat == QLatin1String("loss scale"))
        return last < level ? std::optional(p) : std::nullopt;
    const bool percent = stat.endsWith(QLatin1Char('%'));
    const bool rose = level > 0 ? last >= 1.25 * level : (percent ? last > 0.01 : last > 0);
    return rose ? std::optional(p) : std::nullopt;
}

std::vector<Recovery> recoveriesOf(const std::optional<StepSeries> &rewoundBlowUps)
{
    std::vector<Recovery> out;
    if (!rewoundBlowUps)
        return out;
    for (size_t i = 0; i < rewoundBlowUps->size(); ++i)
        out.push_back({rewoundBlowUps->steps[i], int64_t(rewoundBlowUps->values[i])});
    return out;
}

} // namespace fp8scope::analysis
