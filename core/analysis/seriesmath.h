// Series maths the triage rests on, on plain (step, value) series in step order: robust statistics that
// spikes do not move, alignment of two runs logged at other intervals, the departure of one run's loss from
// its baseline's against the noise of their difference, spikes against a local level, and the onset of a
// sustained change of a statistic against its own early level. Every rule and threshold is written down in
// docs/TRIAGE.md; the options structs carry the defaults so a caller can say which it used.
#pragma once

#include "core/query/stepseries.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace fp8scope::analysis {

using fp8scope::StepSeries; // core/query/stepseries.h

// The median of the finite values (NaN when there are none).
double median(std::span<const double> values);
// The median absolute deviation of the finite values, scaled to a normal's sigma (x 1.4826).
double robustSigma(std::span<const double> values);
// A sigma from the quietest values: the lower quartile of the absolute deviations from the median, scaled to
// a normal's sigma (/ 0.3186); it breaks down only when three quarters of the values are off.
double lowQuartileSigma(std::span<const double> values);
// The noise of one point: the robust sigma of successive differences over sqrt(2). A trend, a constant
// offset and isolated spikes leave it nearly unchanged; NaN when fewer than three finite points.
double stepNoise(std::span<const double> values);
// The finite points of a series, in order.
StepSeries finitePoints(const StepSeries &s);

// Two series on common steps: where both logged the same step, those; where their intervals differ, the
// denser one read at the sparser one's steps inside their common range (never extrapolated): linearly
// interpolated, or with `intervalMeans` (both series are means over their log intervals, as Megatron's loss
// is) the mean of the denser one's points in the sparser one's interval (s - gap, s], the same window, so
// that a steep warm-up does not look like a gap between runs logged every 5 and every 10 steps.
struct Aligned {
    std::vector<int64_t> steps;
    std::vector<double> a;
    std::vector<double> b;
};
Aligned align(const StepSeries &a, const StepSeries &b, bool intervalMeans = false);

// A running median over a centred window of 2h + 1 points. Near the ends the window is cut short, or, with
// `symmetric`, shrunk on both sides so that it stays centred (a steep trend at the start then does not
// stand out of its own window).
std::vector<double> runningMedian(std::span<const double> values, int halfWidth, bool symmetric = false);

struct DepartureOptions {
    double relativeTolerance = 0.005; // an offset within 0.5 % of the baseline is agreement (FIELD.md: < 0.25 %)
    double absoluteTolerance = 0.01; // ... or within 0.01 (matched-step gaps of healthy runs)
    double noiseSigmas = 4.0; // the band: tolerance + this many sigmas of the smoothed difference
    double stayFraction = 0.9; // "stays above": this share of the points from the departure on
    int minPoints = 8; // fewer aligned points: no verdict
};

struct Departure {
    std::optional<int64_t> step; // the first step from which the run stays above the band
    int64_t low = 0; // the interval: where 80 % and 98 % of the points from there on are above
    int64_t high = 0;
    double offset = 0; // the median difference before the departure (or overall): a constant offset
    double noise = 0; // sigma of one point of the difference
    double band = 0; // the smoothed difference's noise band (sigmas x noise / sqrt(window))
    int window = 0; // points of the running median
    double gapAtEnd = 0; // the smoothed difference at the last step
    size_t points = 0;
    // What it was decided on, one entry per aligned step where both values are finite: the values, their
    // difference (run - baseline), its running median, and the edge that median must stay above for a
    // departure (tolerance + band; empty vectors smoothed and edge with fewer than minPoints points).
    struct Trace {
        std::vector<int64_t> steps;
        std::vector<double> baseline, run, difference, smoothed, edge;
    } trace;
};

// Where `run` (aligned with `baseline` by align()) leaves the baseline's band for good: the difference
// run - baseline, smoothed by a running median, stays above the tolerance plus the band. `spikes` are step
// ranges [first, last) where either run was in a spike it recovered from: they do not count when the start of
// the departure is estimated (a long spike just before it would pull the start to itself).
Departure findDeparture(const Aligned &aligned, const DepartureOptions &options = {},
    std::span<const std::pair<int64_t, int64_t>> spikes = {});

struct SpikeOptions {
    double sigmas = 6.0; // a spike stands this many noise sigmas above the local level
    double relative = 0.02; // ... and at least 2 % above it
    int halfWidth = 0; // the local level: the median of this many points before; 0: points / 100, in [3, 50]
    double recoverSigmas = 3.0; // recovered: back within this many sigmas
};

struct Spike {
    int64_t step = 0; // where it starts
    double value = 0; // its peak
    double level = 0; // the local level it stands above
    double height = 0; // value - level, in noise sigmas
    std::optional<int64_t> recoveredAt; // the first later step back near the level before it (none: a blow-up)
};

struct SpikeReport {
    std::vector<Spike> spikes;
    double noise = 0;
    size_t points = 0;
    int64_t span = 0; // last - first step
};
SpikeReport findSpikes(const StepSeries &s, const SpikeOptions &options = {});
// The step ranges of a report's recovered spikes, from their start to their recovery.
std::vector<std::pair<int64_t, int64_t>> recoveredSpikeRanges(const SpikeReport &report);

// The median number of steps between a series' points (at least 1).
int64_t medianInterval(const StepSeries &s);

// Whether `k` spikes in an exposure `n` (the steps a run covers) is more than `kBase` in `nBase` at a
// one-sided significance `alpha`
// (the conditional binomial test of two Poisson rates), with at least `minSpikes` spikes.
bool spikesMoreOften(size_t k, size_t n, size_t kBase, size_t nBase, double alpha = 0.01, size_t minSpikes = 3);
// The one-sided p-value of that test.
double spikeRateP(size_t k, size_t n, size_t kBase, size_t nBase);
// Its mid-p value (Lancaster): P(more than k) + P(exactly k) / 2. The exact test's size is well below its alpha
// at the few spikes runs have (3 against none is p = 0.125); the mid-p's is close to it.
double spikeRateMidP(size_t k, size_t n, size_t kBase, size_t nBase);

enum class Direction { Up, Down, Either };

struct OnsetOptions {
    double earlyFraction = 0.2; // the early level: the median of this share of the points (at least 5)
    double sigmas = 6.0; // a change: beyond this many early-noise sigmas ...
    double relative = 0.25; // ... and beyond this share of the early level's magnitude
    double absolute = 0.0; // ... and beyond this (the statistic's resolution; 1e-4 for the TE log format)
    double stayFraction = 0.9; // sustained: this share of the points from the onset on
    int minPoints = 8;
    // A run still being written: the steps it is planned to reach. The shares above are then of the points the
    // complete run will have (earlyPoints, completePoints): a change must last as many points as it would have to
    // on the complete run (5 % of its points), not 5 % of those written so far, so that a short excursion early
    // in a run is not taken for an onset it would not be on the whole; and the early level, its noise and the
    // threshold are the complete run's as soon as its early share is written, so that an onset found while the
    // run is written is the one the complete run will show. 0: complete data.
    int64_t plannedSteps = 0;
};

// The points a series will have when its run is complete: its own on complete data; on a run still being
// written (OnsetOptions::plannedSteps past its last step), those written and those to come at its mean
// interval so far.
size_t completePoints(const StepSeries &s, const OnsetOptions &options);
// How many of a series' first points make its early level: earlyFraction of its complete points (at least 5),
// at most half of those written (an onset in the other half can be seen: the median of the early points stays at
// the early level while fewer than half of them have changed). On complete data earlyFraction of its points.
size_t earlyPoints(const StepSeries &s, const OnsetOptions &options);

struct Onset {
    std::optional<int64_t> step; // the first step of a sustained change
    std::optional<int64_t> halfway; // the first step from it where the smoothed series made half its change
    double early = 0; // the early level
    double noise = 0; // its noise
    double threshold = 0; // how far from the early level counts
    double late = 0; // the median of the last fifth of the points
    double size = 0; // (late - early) / threshold
};
// Where a statistic leaves its own early level for good, in the direction that carries risk.
Onset findOnset(const StepSeries &s, Direction direction, const OnsetOptions &options = {});

// Values printed with four decimals (the Transformer Engine statistics log): a series whose values are all
// multiples of 1e-4 and mostly exactly 0 is truncated, not zero.
bool looksTruncated(std::span<const double> values);

} // namespace fp8scope::analysis
