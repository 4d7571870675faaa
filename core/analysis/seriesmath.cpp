#include "seriesmath.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fp8scope::analysis {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kNone = size_t(-1);

std::vector<double> finite(std::span<const double> values)
{
    std::vector<double> out;
    out.reserve(values.size());
    for (double v : values) {
        if (std::isfinite(v))
            out.push_back(v);
    }
    return out;
}

double medianInPlace(std::vector<double> &v)
{
    if (v.empty())
        return kNaN;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + ptrdiff_t(mid), v.end());
    const double upper = v[mid];
    if (v.size() % 2 == 1)
        return upper;
    const double lower = *std::max_element(v.begin(), v.begin() + ptrdiff_t(mid));
    return 0.5 * (lower + upper);
}

// The share of `exceed` that holds from each index to the end.
std::vector<double> suffixShare(const std::vector<bool> &exceed)
{
    std::vector<double> share(exceed.size() + 1, 0.0);
    size_t count = 0;
    for (size_t i = exceed.size(); i-- > 0;) {
        count += exceed[i] ? 1 : 0;
        share[i] = double(count) / double(exceed.size() - i);
    }
    return share;
}

// The first index from which `exceed` holds and keeps holding for at least `fraction` of the points to the
// end, with at least `minRun` points left; npos when none.
size_t firstSustained(const std::vector<bool> &exceed, const std::vector<double> &share, double fraction, size_t minRun)
{
    for (size_t i = 0; i < exceed.size(); ++i) {
        if (exceed[i] && share[i] >= fraction && exceed.size() - i >= minRun)
            return i;
    }
    return kNone;
}

} // namespace

double median(std::span<const double> values)
{
    std::vector<double> v = finite(values);
    return medianInPlace(v);
}

double robustSigma(std::span<const double> values)
{
    std::vector<double> v = finite(values);
    const double m = medianInPlace(v);
    if (std::isnan(m))
        return kNaN;
    for (double &x : v)
        x = std::abs(x - m);
    return 1.4826 * medianInPlace(v);
}

double stepNoise(std::span<const double> values)
{
    const std::vector<double> v = finite(values);
    if (v.size() < 3)
        return kNaN;
    std::vector<double> d;
    d.reserve(v.size() - 1);
    for (size_t i = 1; i < v.size(); ++i)
        d.push_back(v[i] - v[i - 1]);
    return robustSigma(d) / std::sqrt(2.0);
}

StepSeries finitePoints(const StepSeries &s)
{
    StepSeries out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (std::isfinite(s.values[i])) {
            out.steps.push_back(s.steps[i]);
            out.values.push_back(s.values[i]);
        }
    }
    return out;
}

Aligned align(const StepSeries &aIn, const StepSeries &bIn)
{
    const StepSeries a = finitePoints(aIn);
    const StepSeries b = finitePoints(bIn);
    Aligned out;
    if (a.empty() || b.empty())
        return out;
    const int64_t lo = std::max(a.steps.front(), b.steps.front());
    const int64_t hi = std::min(a.steps.back(), b.steps.back());
    if (lo > hi)
        return out;
    const auto countIn = [&](const StepSeries &s) {
        return std::upper_bound(s.steps.begin(), s.steps.end(), hi) - std::lower_bound(s.steps.begin(), s.steps.end(), lo);
    };
    // The sparser series' steps; the other is read at them, exactly or between its neighbours.
    const bool aSparser = countIn(a) <= countIn(b);
    const StepSeries &sparse = aSparser ? a : b;
    const StepSeries &dense = aSparser ? b : a;
    for (size_t i = 0; i < sparse.size(); ++i) {
        const int64_t step = sparse.steps[i];
        if (step < lo || step > hi)
            continue;
        const auto it = std::lower_bound(dense.steps.begin(), dense.steps.end(), step);
        double v = kNaN;
        if (it != dense.steps.end() && *it == step) {
            v = dense.values[size_t(it - dense.steps.begin())];
        } else if (it != dense.steps.begin() && it != dense.steps.end()) {
            const size_t j = size_t(it - dense.steps.begin());
            const double t = double(step - dense.steps[j - 1]) / double(dense.steps[j] - dense.steps[j - 1]);
            v = dense.values[j - 1] + t * (dense.values[j] - dense.values[j - 1]);
        }
        if (std::isnan(v))
            continue;
        out.steps.push_back(step);
        out.a.push_back(aSparser ? sparse.values[i] : v);
        out.b.push_back(aSparser ? v : sparse.values[i]);
    }
    return out;
}

std::vector<double> runningMedian(std::span<const double> values, int halfWidth, bool symmetric)
{
    std::vector<double> out(values.size(), kNaN);
    std::vector<double> window;
    const ptrdiff_t n = ptrdiff_t(values.size());
    for (ptrdiff_t i = 0; i < n; ++i) {
        window.clear();
        const ptrdiff_t h = symmetric ? std::min<ptrdiff_t>({halfWidth, i, n - 1 - i}) : halfWidth;
        for (ptrdiff_t j = std::max<ptrdiff_t>(0, i - h); j <= std::min(n - 1, i + h); ++j) {
            if (std::isfinite(values[size_t(j)]))
                window.push_back(values[size_t(j)]);
        }
        out[size_t(i)] = medianInPlace(window);
    }
    return out;
}

namespace {

// The start of a departure, by a hinge fit: y = a before step x_k, a + b (x - x_k) from it, least squares,
// over k in [0, last]. Returns the best k and the range of k whose squared error is within `margin` of the
// best (the interval). O(n) with suffix sums.
struct Hinge {
    size_t best = 0;
    size_t low = 0;
    size_t high = 0;
};

Hinge fitHinge(const std::vector<int64_t> &steps, const std::vector<double> &y, size_t last, double margin)
{
    const size_t n = y.size();
    std::vector<double> sx(n + 1, 0), sxx(n + 1, 0), sxy(n + 1, 0);
    double sy = 0, syy = 0;
    const double x0 = double(steps.front());
    for (size_t i = n; i-- > 0;) {
        const double x = double(steps[i]) - x0;
        sx[i] = sx[i + 1] + x;
        sxx[i] = sxx[i + 1] + x * x;
        sxy[i] = sxy[i + 1] + x * y[i];
    }
    for (double v : y) {
        sy += v;
        syy += v * v;
    }
    std::vector<double> sse(last + 1, std::numeric_limits<double>::infinity());
    std::vector<double> syk(n + 1, 0);
    for (size_t i = n; i-- > 0;)
        syk[i] = syk[i + 1] + y[i];
    const double nn = double(n);
    for (size_t k = 0; k <= last && k < n; ++k) {
        const double xk = double(steps[k]) - x0;
        const double m = double(n - k);
        const double sz = sx[k] - m * xk;
        const double szz = sxx[k] - 2 * xk * sx[k] + m * xk * xk;
        const double szy = sxy[k] - xk * syk[k];
        // Regression of y on (1, z): b = cov(z, y) / var(z), a = mean(y) - b mean(z).
        const double vz = szz - sz * sz / nn;
        const double cz = szy - sz * sy / nn;
        const double b = vz > 0 ? cz / vz : 0.0;
        sse[k] = (syy - sy * sy / nn) - b * cz;
    }
    Hinge h;
    for (size_t k = 0; k <= last && k < n; ++k) {
        if (sse[k] < sse[h.best])
            h.best = k;
    }
    h.low = h.best;
    h.high = h.best;
    for (size_t k = 0; k <= last && k < n; ++k) {
        if (sse[k] <= sse[h.best] + margin) {
            h.low = std::min(h.low, k);
            h.high = std::max(h.high, k);
        }
    }
    return h;
}

} // namespace

Departure findDeparture(const Aligned &aligned, const DepartureOptions &o)
{
    Departure d;
    std::vector<double> diff, base;
    std::vector<int64_t> steps;
    for (size_t i = 0; i < aligned.steps.size(); ++i) {
        const double x = aligned.b[i] - aligned.a[i];
        if (std::isfinite(x)) {
            diff.push_back(x);
            base.push_back(aligned.a[i]);
            steps.push_back(aligned.steps[i]);
        }
    }
    d.points = diff.size();
    if (int(diff.size()) < o.minPoints) {
        d.offset = median(diff);
        return d;
    }
    d.noise = stepNoise(diff);
    if (!std::isfinite(d.noise))
        d.noise = 0;
    d.window = std::clamp(int(diff.size() / 50) | 1, 5, 101);
    const int h = d.window / 2;
    const std::vector<double> smooth = runningMedian(diff, h);
    // A running median of w points has about 1.25 / sqrt(w) of one point's noise.
    d.band = o.noiseSigmas * 1.25 * d.noise / std::sqrt(double(d.window));
    std::vector<bool> exceed(diff.size());
    for (size_t i = 0; i < diff.size(); ++i) {
        const double tolerance = std::max(o.relativeTolerance * std::abs(base[i]), o.absoluteTolerance);
        exceed[i] = smooth[i] > tolerance + d.band;
    }
    const std::vector<double> share = suffixShare(exceed);
    const size_t minRun = size_t(std::max(3, h));
    const size_t at = firstSustained(exceed, share, o.stayFraction, minRun);
    d.gapAtEnd = smooth.back();
    if (at == kNone) {
        d.offset = median(diff);
        return d;
    }
    // Where it starts: the crossing of the tolerance comes late on a slow climb, so the start is the break of a
    // hinge fit to the difference (flat, then rising) at or before the crossing, and the interval the breaks
    // whose fit is within a chi-square(1) 95 % margin (3.84 noise variances) of the best.
    const Hinge hinge = fitHinge(steps, diff, at, 3.84 * d.noise * d.noise);
    d.step = steps[hinge.best];
    d.low = steps[hinge.low];
    d.high = steps[std::max(hinge.high, hinge.best)];
    d.offset = hinge.best > 0 ? median(std::span<const double>(diff.data(), hinge.best)) : 0.0;
    return d;
}

SpikeReport findSpikes(const StepSeries &in, const SpikeOptions &o)
{
    const StepSeries s = finitePoints(in);
    SpikeReport r;
    r.points = s.size();
    if (s.size() < 5)
        return r;
    r.span = s.steps.back() - s.steps.front();
    const int h = o.halfWidth > 0 ? o.halfWidth : std::clamp(int(s.size() / 100), 3, 50);
    // The local level a point is judged against: the median of the h points before it (so that a jump that
    // stays, a blow-up, still stands out where it starts; a falling loss does not).
    std::vector<double> level(s.size(), kNaN), window;
    for (size_t i = 0; i < s.size(); ++i) {
        window.assign(s.values.begin() + ptrdiff_t(i >= size_t(h) ? i - size_t(h) : 0), s.values.begin() + ptrdiff_t(i));
        level[i] = i >= 3 ? medianInPlace(window) : s.values[i];
    }
    std::vector<double> resid(s.size());
    for (size_t i = 0; i < s.size(); ++i)
        resid[i] = s.values[i] - level[i];
    r.noise = robustSigma(resid);
    if (!(r.noise > 0))
        r.noise = std::max(stepNoise(s.values), 1e-12);
    const auto high = [&](size_t i) {
        return resid[i] > o.sigmas * r.noise && resid[i] > o.relative * std::abs(level[i]);
    };
    for (size_t i = 0; i < s.size();) {
        if (!high(i)) {
            ++i;
            continue;
        }
        // One spike per run of high points: where it starts, and the height of its peak.
        size_t peak = i, j = i;
        while (j < s.size() && high(j)) {
            if (resid[j] > resid[peak])
                peak = j;
            ++j;
        }
        Spike sp {s.steps[i], s.values[peak], level[i], resid[peak] / r.noise, std::nullopt};
        for (size_t k = peak + 1; k < s.size(); ++k) {
            if (s.values[k] <= level[i] + o.recoverSigmas * r.noise) {
                sp.recoveredAt = s.steps[k];
                break;
            }
        }
        r.spikes.push_back(sp);
        i = j;
    }
    return r;
}

double spikeRateP(size_t k, size_t n, size_t kBase, size_t nBase)
{
    // Given k + kBase spikes in all, each is the run's with p = n / (n + nBase) under equal rates.
    const size_t total = k + kBase;
    if (total == 0 || n == 0)
        return 1.0;
    const double p = double(n) / double(n + nBase);
    if (p >= 1.0)
        return 1.0;
    double sum = 0;
    for (size_t x = k; x <= total; ++x) {
        const double logPmf = std::lgamma(double(total) + 1) - std::lgamma(double(x) + 1) - std::lgamma(double(total - x) + 1)
            + double(x) * std::log(p) + double(total - x) * std::log1p(-p);
        sum += std::exp(logPmf);
    }
    return std::min(1.0, sum);
}

bool spikesMoreOften(size_t k, size_t n, size_t kBase, size_t nBase, double alpha, size_t minSpikes)
{
    return k >= minSpikes && spikeRateP(k, n, kBase, nBase) < alpha;
}

Onset findOnset(const StepSeries &in, Direction direction, const OnsetOptions &o)
{
    const StepSeries s = finitePoints(in);
    Onset r;
    if (int(s.size()) < o.minPoints)
        return r;
    const size_t m = std::max<size_t>(5, size_t(std::ceil(o.earlyFraction * double(s.size()))));
    const std::span<const double> early(s.values.data(), std::min(m, s.size()));
    r.early = median(early);
    r.noise = stepNoise(early);
    if (!std::isfinite(r.noise) || r.noise == 0)
        r.noise = robustSigma(early);
    if (!std::isfinite(r.noise))
        r.noise = 0;
    r.threshold = std::max({o.sigmas * r.noise, o.relative * std::abs(r.early), o.absolute});
    const size_t tail = std::max<size_t>(1, s.size() / 5);
    r.late = median(std::span<const double>(s.values.data() + (s.size() - tail), tail));
    const double change = r.late - r.early;
    r.size = r.threshold > 0 ? (direction == Direction::Down ? -change : direction == Direction::Up ? change : std::abs(change))
            / r.threshold
                             : 0;
    if (!(r.threshold > 0))
        return r;
    const int h = std::clamp(int(s.size() / 50), 2, 25);
    const std::vector<double> smooth = runningMedian(s.values, h);
    std::vector<bool> exceed(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        const double c = smooth[i] - r.early;
        exceed[i] = direction == Direction::Up ? c > r.threshold
            : direction == Direction::Down     ? -c > r.threshold
                                               : std::abs(c) > r.threshold;
    }
    const std::vector<double> share = suffixShare(exceed);
    const size_t at = firstSustained(exceed, share, o.stayFraction, size_t(std::max(3, h)));
    if (at != kNone)
        r.step = s.steps[at];
    return r;
}

bool looksTruncated(std::span<const double> values)
{
    size_t finiteCount = 0, zeros = 0;
    for (double v : values) {
        if (!std::isfinite(v))
            continue;
        ++finiteCount;
        if (v == 0) {
            ++zeros;
            continue;
        }
        const double scaled = v * 1e4;
        if (std::abs(scaled - std::round(scaled)) > 1e-6 * std::max(1.0, std::abs(scaled)))
            return false;
    }
    return finiteCount > 0 && zeros * 2 >= finiteCount;
}

} // namespace fp8scope::analysis
