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

namespace {

// The finite values' absolute deviations from their median (empty when there is none).
std::vector<double> absoluteDeviations(std::span<const double> values)
{
    std::vector<double> v = finite(values);
    const double m = medianInPlace(v);
    for (double &x : v)
        x = std::abs(x - m);
    return v;
}

} // namespace

double robustSigma(std::span<const double> values)
{
    std::vector<double> v = absoluteDeviations(values);
    return v.empty() ? kNaN : 1.4826 * medianInPlace(v);
}

double lowQuartileSigma(std::span<const double> values)
{
    std::vector<double> v = absoluteDeviations(values);
    if (v.empty())
        return kNaN;
    const auto q = v.begin() + ptrdiff_t(v.size() / 4);
    std::nth_element(v.begin(), q, v.end());
    return *q / 0.3186;
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

Aligned align(const StepSeries &aIn, const StepSeries &bIn, bool intervalMeans)
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
        return std::upper_bound(s.steps.begin(), s.steps.end(), hi)
            - std::lower_bound(s.steps.begin(), s.steps.end(), lo);
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
        const int64_t gap = i > 0 ? step - sparse.steps[i - 1] : (sparse.size() > 1 ? sparse.steps[1] - step : 0);
        const auto from = std::upper_bound(dense.steps.begin(), dense.steps.end(), step - gap);
        const auto to = std::upper_bound(dense.steps.begin(), dense.steps.end(), step);
        // The window must not start before the denser series' first interval does.
        const int64_t denseStart = dense.steps.front() - (dense.size() > 1 ? dense.steps[1] - dense.steps[0] : 0);
        if (intervalMeans && to - from >= 2 && step - gap >= denseStart) {
            // The window (step - gap, step] holds several of the denser series' intervals: their mean.
            double sum = 0;
            for (auto k = from; k != to; ++k)
                sum += dense.values[size_t(k - dense.steps.begin())];
            v = sum / double(to - from);
        } else if (it != dense.steps.end() && *it == step) {
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
    // The window's finite values kept sorted as it slides: each step takes the values that leave out and puts
    // the ones that enter in (a binary search and a move of at most 2h+1 values), instead of selecting the
    // median of the whole window again (which cost half the triage of 10^7 points).
    std::vector<double> out(values.size(), kNaN);
    std::vector<double> window;
    const ptrdiff_t n = ptrdiff_t(values.size());
    ptrdiff_t lo = 0, hi = -1; // the window holds the finite values of [lo, hi]
    const auto add = [&](double v) {
        if (std::isfinite(v))
            window.insert(std::upper_bound(window.begin(), window.end(), v), v);
    };
    const auto remove = [&](double v) {
        if (std::isfinite(v))
            window.erase(std::lower_bound(window.begin(), window.end(), v));
    };
    for (ptrdiff_t i = 0; i < n; ++i) {
        const ptrdiff_t h = symmetric ? std::min<ptrdiff_t>({halfWidth, i, n - 1 - i}) : halfWidth;
        const ptrdiff_t from = std::max<ptrdiff_t>(0, i - h), to = std::min(n - 1, i + h);
        // A symmetric window can shrink at the end; both edges move forward only.
        while (hi < to)
            add(values[size_t(++hi)]);
        while (hi > to)
            remove(values[size_t(hi--)]);
        while (lo < from)
            remove(values[size_t(lo++)]);
        while (lo > from)
            add(values[size_t(--lo)]);
        if (window.empty())
            continue;
        const size_t mid = window.size() / 2;
        out[size_t(i)] = window.size() % 2 == 1 ? window[mid] : 0.5 * (window[mid - 1] + window[mid]);
    }
    return out;
}

namespace {

// The start of a departure, by a hinge fit: y = a before step x_k, a + b (x - x_k) from it, least squares,
// over k in [0, last]. Returns the best k and the range of k whose squared error is within `margin` of the
// best (the interval). O(n) with suffix sums.
// Where a shift of the difference up by `shift` most likely started, at or before `last`: Page's CUSUM of the
// difference against `reference` (the midpoint between its level before and after); the start is the argmin
// of the cumulative sum. Each term is clipped to +-(3 sigma, at least the shift): the two runs' own spikes
// (of either sign, tens of sigmas, decaying over many points) would otherwise move the start to wherever
// they cluster. The interval holds the starts whose log-likelihood is within 1.92 (a chi-square(1) 95 %
// margin) of the best: (shift / sigma^2) (S_k - S_min) <= 1.92.
struct ChangeStart {
    size_t best = 0;
    size_t low = 0;
    size_t high = 0;
};

ChangeStart cusumStart(
    const std::vector<double> &y, const std::vector<double> &reference, size_t last, double shift, double sigma)
{
    std::vector<double> sum(last + 2, 0.0); // sum[k]: the cumulative sum of the points before k
    const double cap = std::max(3 * sigma, shift);
    for (size_t i = 0; i <= last && i < y.size(); ++i)
        sum[i + 1] = sum[i] + std::clamp(y[i] - reference[i], -cap, cap);
    ChangeStart c;
    for (size_t k = 0; k <= last; ++k) {
        if (sum[k] < sum[c.best])
            c.best = k;
    }
    const double weight = sigma > 0 ? shift / (sigma * sigma) : std::numeric_limits<double>::infinity();
    c.low = c.high = c.best;
    for (size_t k = 0; k <= last; ++k) {
        if (weight * (sum[k] - sum[c.best]) <= 1.92) {
            c.low = std::min(c.low, k);
            c.high = std::max(c.high, k);
        }
    }
    return c;
}

} // namespace

Departure findDeparture(
    const Aligned &aligned, const DepartureOptions &o, std::span<const std::pair<int64_t, int64_t>> spikes)
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
            d.trace.run.push_back(aligned.b[i]);
        }
    }
    d.trace.steps = steps;
    d.trace.baseline = base;
    d.trace.difference = diff;
    d.points = diff.size();
    if (int(diff.size()) < o.minPoints) {
        d.offset = median(diff);
        return d;
    }
    d.noise = stepNoise(diff);
    if (!std::isfinite(d.noise))
        d.noise = 0;
    // The window: a tenth of the points, so that a small gap stands out of the noise of its mean and spikes of
    // either run (a few points each, decaying) do not break a stay above the band; where the departure starts
    // is the CUSUM's below, not the smoothing's.
    d.window = std::clamp(int(diff.size() / 10) | 1, 5, 201);
    const int h = d.window / 2;
    const std::vector<double> smooth = runningMedian(diff, h);
    // A running median of w points has about 1.25 / sqrt(w) of one point's noise.
    d.band = o.noiseSigmas * 1.25 * d.noise / std::sqrt(double(d.window));
    std::vector<bool> exceed(diff.size());
    d.trace.smoothed = smooth;
    d.trace.edge.resize(diff.size());
    for (size_t i = 0; i < diff.size(); ++i) {
        const double tolerance = std::max(o.relativeTolerance * std::abs(base[i]), o.absoluteTolerance);
        d.trace.edge[i] = tolerance + d.band;
        exceed[i] = smooth[i] > d.trace.edge[i];
    }
    // Points inside a spike either run recovered from are neither for nor against a new course: the stay is
    // judged on the others (a cluster of recovered spikes is spikes, not a departure).
    std::vector<size_t> calm;
    std::vector<bool> calmExceed;
    for (size_t i = 0; i < diff.size(); ++i) {
        const bool inSpike = std::any_of(
            spikes.begin(), spikes.end(), [&](const auto &r) { return steps[i] >= r.first && steps[i] < r.second; });
        if (!inSpike) {
            calm.push_back(i);
            calmExceed.push_back(exceed[i]);
        }
    }
    const std::vector<double> share = suffixShare(calmExceed);
    // A departure is followed by at least 8 % of the points and a whole smoothing window: a spike in the last
    // few points of a run, still decaying, is no evidence of a new course.
    const size_t minRun = std::max({size_t(3), size_t(d.window), (diff.size() * 8 + 99) / 100});
    const size_t calmAt = firstSustained(calmExceed, share, o.stayFraction, minRun);
    const size_t at = calmAt == kNone ? kNone : calm[calmAt];
    d.gapAtEnd = smooth.back();
    if (at == kNone) {
        d.offset = median(diff);
        return d;
    }
    // Where it starts: the crossing of the band comes late on a slow climb. The level before is the median of
    // the difference before the crossing; the shift that matters takes it to the band's edge (at least half the
    // band); the start is where the CUSUM against the midpoint is lowest, whatever the shape after it (a step,
    // a ramp, a curve that levels off).
    // When the crossing comes late, the points before it hold part of the climb: the level is taken again
    // from the points before the start found, once.
    ChangeStart start;
    size_t levelPoints = std::max<size_t>(at, 1);
    // The smoothing is centred: a sharp jump crosses up to h points before it happens.
    const size_t last = std::min(diff.size() - 1, at + size_t(h));
    for (int round = 0; round < 2; ++round) {
        // Before the departure the runs agreed, by its definition: within the tolerance.
        const double tolerance = std::max(o.relativeTolerance * std::abs(base[at]), o.absoluteTolerance);
        const double before
            = std::clamp(median(std::span<const double>(diff.data(), levelPoints)), -tolerance, tolerance);
        std::vector<double> reference(diff.size());
        double shift = 0;
        for (size_t i = 0; i < diff.size(); ++i) {
            const double edge = std::max(o.relativeTolerance * std::abs(base[i]), o.absoluteTolerance) + d.band;
            const double half = std::max((edge - before) / 2, d.band / 2);
            reference[i] = before + half;
            if (i == at)
                shift = 2 * half;
        }
        // Points in a spike either run recovered from count as at the reference (neither way): a long spike
        // just before the departure would pull the start to itself.
        std::vector<double> quiet = diff;
        for (size_t i = 0; i < last; ++i) {
            for (const auto &[first, end] : spikes) {
                if (steps[i] >= first && steps[i] < end)
                    quiet[i] = reference[i];
            }
        }
        start = cusumStart(quiet, reference, last, shift, d.noise);

        if (start.best < 3 || start.best >= levelPoints)
            break;
        levelPoints = start.best;
    }
    d.step = steps[start.best];
    d.low = steps[start.low];
    d.high = steps[std::max(start.high, start.best)];
    d.offset = start.best > 0 ? median(std::span<const double>(diff.data(), start.best)) : 0.0;
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
    // The window is kept sorted as it slides (one value in, one out), not selected afresh at every point; its
    // median is the same number medianInPlace gives.
    std::vector<double> level(s.size(), kNaN), window;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i >= 1)
            window.insert(std::upper_bound(window.begin(), window.end(), s.values[i - 1]), s.values[i - 1]);
        if (i > size_t(h))
            window.erase(std::lower_bound(window.begin(), window.end(), s.values[i - 1 - size_t(h)]));
        if (i < 3) {
            level[i] = s.values[i];
            continue;
        }
        const size_t mid = window.size() / 2;
        level[i] = window.size() % 2 == 1 ? window[mid] : 0.5 * (window[mid - 1] + window[mid]);
    }
    std::vector<double> resid(s.size());
    for (size_t i = 0; i < s.size(); ++i)
        resid[i] = s.values[i] - level[i];
    // The noise the spikes are measured in: of second differences (a trend, even the steep fall of a warm-up,
    // cancels in them; each has 6 sigma^2 of variance), from their quietest three quarters, and again without
    // the spikes found and their tails (a run that spikes often spends much of its time in them), until the
    // estimate settles (three rounds at most).
    const auto noiseOutside = [&](const std::vector<bool> &masked) {
        std::vector<double> second;
        for (size_t i = 1; i + 1 < s.size(); ++i) {
            if (!masked[i - 1] && !masked[i] && !masked[i + 1])
                second.push_back(s.values[i + 1] - 2 * s.values[i] + s.values[i - 1]);
        }
        return second.size() >= 10 ? lowQuartileSigma(second) / std::sqrt(6.0) : kNaN;
    };
    const auto detect = [&](double noise, std::vector<bool> *masked) {
        std::vector<Spike> spikes;
        const auto high
            = [&](size_t i) { return resid[i] > o.sigmas * noise && resid[i] > o.relative * std::abs(level[i]); };
        masked->assign(s.size(), false);
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
            Spike sp {s.steps[i], s.values[peak], level[i], resid[peak] / noise, std::nullopt};
            size_t end = s.size();
            for (size_t k = peak + 1; k < s.size(); ++k) {
                if (s.values[k] <= level[i] + o.recoverSigmas * noise) {
                    sp.recoveredAt = s.steps[k];
                    end = k;
                    break;
                }
            }
            std::fill(masked->begin() + ptrdiff_t(i), masked->begin() + ptrdiff_t(end), true);
            spikes.push_back(sp);
            i = j;
        }
        return spikes;
    };
    std::vector<bool> masked(s.size(), false);
    r.noise = noiseOutside(masked);
    if (!(r.noise > 0))
        r.noise = std::max(stepNoise(s.values), 1e-12);
    r.spikes = detect(r.noise, &masked);
    for (int round = 0; round < 3 && !r.spikes.empty(); ++round) {
        const double quieter = noiseOutside(masked);
        if (!(quieter > 0) || quieter >= 0.98 * r.noise)
            break;
        r.noise = quieter;
        r.spikes = detect(r.noise, &masked);
    }
    return r;
}

std::vector<std::pair<int64_t, int64_t>> recoveredSpikeRanges(const SpikeReport &report)
{
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const Spike &s : report.spikes) {
        if (s.recoveredAt)
            out.emplace_back(s.step, *s.recoveredAt);
    }
    return out;
}

int64_t medianInterval(const StepSeries &s)
{
    std::vector<double> gaps;
    for (size_t i = 1; i < s.size(); ++i)
        gaps.push_back(double(s.steps[i] - s.steps[i - 1]));
    return gaps.empty() ? 1 : std::max<int64_t>(1, int64_t(median(gaps)));
}

namespace {

// P(X > k) + weight * P(X = k) for X ~ Binomial(k + kBase, n / (n + nBase)).
double binomialTail(size_t k, size_t n, size_t kBase, size_t nBase, double weight)
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
        const double logPmf = std::lgamma(double(total) + 1) - std::lgamma(double(x) + 1)
            - std::lgamma(double(total - x) + 1) + double(x) * std::log(p) + double(total - x) * std::log1p(-p);
        sum += (x == k ? weight : 1.0) * std::exp(logPmf);
    }
    return std::min(1.0, sum);
}

} // namespace

double spikeRateP(size_t k, size_t n, size_t kBase, size_t nBase)
{
    return binomialTail(k, n, kBase, nBase, 1.0);
}

double spikeRateMidP(size_t k, size_t n, size_t kBase, size_t nBase)
{
    return binomialTail(k, n, kBase, nBase, 0.5);
}

bool spikesMoreOften(size_t k, size_t n, size_t kBase, size_t nBase, double alpha, size_t minSpikes)
{
    return k >= minSpikes && spikeRateP(k, n, kBase, nBase) < alpha;
}

size_t completePoints(const StepSeries &s, const OnsetOptions &o)
{
    const size_t n = s.size();
    if (!(o.plannedSteps > 0) || n < 2 || o.plannedSteps <= s.steps.back() || s.steps.back() <= s.steps.front())
        return n;
    const double interval = double(s.steps.back() - s.steps.front()) / double(n - 1);
    return n + size_t(std::ceil(double(o.plannedSteps - s.steps.back()) / interval));
}

size_t earlyPoints(const StepSeries &s, const OnsetOptions &o)
{
    const size_t n = s.size(), complete = completePoints(s, o);
    const size_t share = std::max<size_t>(5, size_t(std::ceil(o.earlyFraction * double(complete))));
    return complete == n ? share : std::min(share, std::max<size_t>(5, (n + 1) / 2));
}

Onset findOnset(const StepSeries &in, Direction direction, const OnsetOptions &o)
{
    const StepSeries s = finitePoints(in);
    Onset r;
    if (int(s.size()) < o.minPoints)
        return r;
    const size_t m = earlyPoints(s, o);
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
    r.size = r.threshold > 0 ? (direction == Direction::Down        ? -change
                                       : direction == Direction::Up ? change
                                                                    : std::abs(change))
            / r.threshold
                             : 0;
    if (!(r.threshold > 0))
        return r;
    const size_t complete = completePoints(s, o);
    const int h = int(std::clamp<size_t>(complete / 50, 2, 25));
    const auto exceeds = [&](double smoothed) {
        const double c = smoothed - r.early;
        return direction == Direction::Up  ? c > r.threshold
            : direction == Direction::Down ? -c > r.threshold
                                           : std::abs(c) > r.threshold;
    };
    // Sustained: at least 5 % of the points (and the smoothing's half-width) from the onset on.
    const size_t n = s.size();
    // A point has changed where the running median around it has. On a run still being written, the last h
    // points' windows are cut at the newest point, so a transient that has just passed still fills them (three
    // high points of four written, the fourth back: all four medians high, "sustained"); there a point has
    // changed only where it has itself, too. The points whose windows are whole are judged as on the complete
    // run.
    const bool written = complete > n;
    const auto changed = [&](size_t i, double smoothed) {
        return exceeds(smoothed) && (!written || i + size_t(h) < n || exceeds(s.values[i]));
    };
    const size_t minRun = std::max({size_t(3), size_t(h), (complete + 19) / 20});
    // Most series of a run have no onset, and the last fifth of the points tells so without smoothing the rest:
    // an onset at a with L = n - a points after it has at least stayFraction L of them beyond the threshold,
    // so the last t points hold at least t - (1 - stayFraction) n of them (onset before them) or
    // stayFraction minRun (onset among them). Fewer: no onset (the same answer, a fifth of the work).
    {
        const size_t t = std::max<size_t>(1, n / 5);
        const size_t from = n - t - std::min(n - t, size_t(h));
        const std::vector<double> tailSmooth
            = runningMedian(std::span<const double>(s.values.data() + from, n - from), h);
        size_t inTail = 0;
        for (size_t i = n - t; i < n; ++i)
            inTail += changed(i, tailSmooth[i - from]) ? 1 : 0;
        const double bound
            = std::min(double(t) - (1 - o.stayFraction) * double(n), o.stayFraction * double(minRun)) - 1e-9;
        if (double(inTail) < bound)
            return r;
    }
    const std::vector<double> smooth = runningMedian(s.values, h);
    std::vector<bool> exceed(n);
    for (size_t i = 0; i < n; ++i)
        exceed[i] = changed(i, smooth[i]);
    const std::vector<double> share = suffixShare(exceed);
    const size_t at = firstSustained(exceed, share, o.stayFraction, minRun);
    if (at != kNone) {
        r.step = s.steps[at];
        // Where half the change to the late level is made: a slow drift crosses the threshold long before it,
        // a step at once.
        r.halfway = r.step;
        for (size_t i = at; i < n; ++i) {
            const double made = direction == Direction::Down ? r.early - smooth[i]
                : direction == Direction::Up                 ? smooth[i] - r.early
                                                             : std::abs(smooth[i] - r.early);
            if (made >= 0.5 * std::abs(change)) {
                r.halfway = s.steps[i];
                break;
            }
        }
    }
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
