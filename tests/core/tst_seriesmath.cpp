// The triage's series maths on constructed series, each asserting the number it must give: noise that
// spikes and trends do not move, alignment of other log intervals, departures at a known step (and none for
// an offset within tolerance), spikes and their recovery, the onset of a sustained change, missing and NaN
// points, one point, and the four-decimal truncation of the TE log.
#include "core/analysis/seriesmath.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <random>

using namespace fp8scope::analysis;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A loss-like curve: 10 * (1 + step)^-0.3 + 2, with Gaussian noise of `sigma`, at `every` steps.
StepSeries loss(int points, int every, double sigma, uint32_t seed, int64_t first = 0)
{
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, sigma);
    StepSeries s;
    for (int i = 0; i < points; ++i) {
        const int64_t step = first + int64_t(i) * every;
        s.steps.push_back(step);
        s.values.push_back(10.0 * std::pow(1.0 + double(step), -0.3) + 2.0 + noise(rng));
    }
    return s;
}

} // namespace

class TestSeriesMath : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void robustStatistics();
    void noiseIgnoresTrendAndSpikes();
    void alignsOtherIntervals();
    void departureAtAKnownStep();
    void offsetWithinToleranceIsNoDeparture();
    void departureOfTooFewPoints();
    void spikesAndRecovery();
    void spikeRates();
    void onsetOfASustainedRise();
    void traitIsNoOnset();
    void onsetWhileWrittenIsTheCompleteRunsOnset();
    void transientAtTheWrittenEndIsNoOnset();
    void truncatedValues();
    void lowQuartileSigmaOfKnownValues();
    void departureThatLevelsOff();
    void spikeJustBeforeADepartureDoesNotMoveItsStart();
    void departureInTheLastPointsIsNone();
    void spikesOnASteepWarmup();
    void spikesOfARunThatSpikesOften();
    void alignsIntervalMeans();
    void runningMedianOfEachWindow();
    void missingAndNaNPoints();
    void onePoint();
    void unevenIntervals();
};

namespace {

// A decaying spike: `height` at `at`, times `decay` per point after.
void addSpike(StepSeries *s, size_t at, double height, double decay)
{
    for (size_t i = at; i < s->size() && height > 1e-6; ++i, height *= decay)
        s->values[i] += height;
}

} // namespace

void TestSeriesMath::robustStatistics()
{
    const std::vector<double> v {1, 2, 3, 4, 100, kNaN};
    QCOMPARE(median(v), 3.0);
    QCOMPARE(median(std::vector<double> {1, 2, 3, 4}), 2.5);
    QVERIFY(std::isnan(median(std::vector<double> {kNaN})));
    // MAD of {1,2,3,4,100} about 3: {2,1,0,1,97} -> 1, times 1.4826.
    QCOMPARE(robustSigma(v), 1.4826);
    QVERIFY(std::isnan(stepNoise(std::vector<double> {1.0, 2.0})));
}

void TestSeriesMath::noiseIgnoresTrendAndSpikes()
{
    StepSeries s = loss(4000, 1, 0.05, 7);
    const double clean = stepNoise(s.values);
    QVERIFY2(std::abs(clean - 0.05) < 0.005, qPrintable(QString::number(clean)));
    for (size_t i = 100; i < s.size(); i += 400)
        s.values[i] += 5.0; // ten spikes of 100 sigmas
    QVERIFY(std::abs(stepNoise(s.values) - clean) < 0.005);
    // A constant offset does not change it either.
    for (double &v : s.values)
        v += 3.0;
    QVERIFY(std::abs(stepNoise(s.values) - clean) < 0.005);
}

void TestSeriesMath::alignsOtherIntervals()
{
    // The baseline every 10 steps from 0, the run every 25 from 5: the run's steps inside the common range,
    // the baseline interpolated onto them.
    StepSeries a, b;
    for (int i = 0; i <= 100; ++i) {
        a.steps.push_back(i * 10);
        a.values.push_back(double(i * 10));
    }
    for (int i = 0; i < 50; ++i) {
        b.steps.push_back(5 + i * 25);
        b.values.push_back(1.0);
    }
    b.values[3] = kNaN; // a point without a number is left out
    const Aligned al = align(a, b);
    QCOMPARE(al.steps.front(), 5);
    QCOMPARE(al.steps.back(), 980);
    QCOMPARE(al.steps.size(), size_t(39)); // 5 .. 980 step 25 is 40 points, less the NaN
    for (size_t i = 0; i < al.steps.size(); ++i) {
        QCOMPARE(al.a[i], double(al.steps[i])); // a is linear in step
        QCOMPARE(al.b[i], 1.0);
    }
    // Same steps: taken as they are.
    const Aligned same = align(a, a);
    QCOMPARE(same.steps.size(), a.size());
    // Disjoint ranges: nothing.
    StepSeries late;
    late.steps = {5000, 5010};
    late.values = {1, 2};
    QVERIFY(align(a, late).steps.empty());
}

void TestSeriesMath::departureAtAKnownStep()
{
    // Two runs with independent noise (the baseline's own curve with another seed), the run climbing away
    // from step 3000 on; logged at other intervals.
    const StepSeries base = loss(1000, 10, 0.03, 1);
    StepSeries run = loss(500, 20, 0.03, 2);
    for (size_t i = 0; i < run.size(); ++i) {
        if (run.steps[i] >= 3000)
            run.values[i] += 0.0005 * double(run.steps[i] - 3000);
    }
    const Departure d = findDeparture(align(base, run));
    QVERIFY(d.step.has_value());
    // The break of the climb, not where it crosses the tolerance (3150 here), and an interval that holds it.
    QVERIFY2(*d.step >= 2900 && *d.step <= 3100, qPrintable(QString::number(*d.step)));
    QVERIFY(d.low <= *d.step && *d.step <= d.high);
    QVERIFY2(d.low <= 3000 && d.high >= 3000 && d.high - d.low < 400,
        qPrintable(QStringLiteral("%1..%2").arg(d.low).arg(d.high)));
    QVERIFY2(std::abs(d.noise - 0.03 * std::sqrt(2.0)) < 0.01, qPrintable(QString::number(d.noise)));
    QVERIFY(d.gapAtEnd > 2.0);
    QVERIFY(std::abs(d.offset) < 0.02);
    // The same run against itself: none.
    QVERIFY(!findDeparture(align(base, base)).step);
}

void TestSeriesMath::offsetWithinToleranceIsNoDeparture()
{
    // An FP8 run 0.2 % above its baseline throughout (healthy runs stay below 0.25 %): no departure, the
    // offset measured.
    const StepSeries base = loss(2000, 1, 0.02, 3);
    StepSeries run = loss(2000, 1, 0.02, 4);
    for (size_t i = 0; i < run.size(); ++i)
        run.values[i] *= 1.002;
    const Departure d = findDeparture(align(base, run));
    QVERIFY(!d.step);
    QVERIFY2(d.offset > 0.002 && d.offset < 0.012, qPrintable(QString::number(d.offset)));
    // 3 % above from the start is a departure at the start.
    for (size_t i = 0; i < run.size(); ++i)
        run.values[i] *= 1.03 / 1.002;
    const Departure early = findDeparture(align(base, run));
    QVERIFY(early.step.has_value());
    QVERIFY2(*early.step < 50, qPrintable(QString::number(*early.step)));
}

void TestSeriesMath::departureOfTooFewPoints()
{
    StepSeries one;
    one.steps = {10};
    one.values = {3.0};
    const Departure d = findDeparture(align(one, one));
    QVERIFY(!d.step);
    QCOMPARE(d.points, size_t(1));
}

void TestSeriesMath::spikesAndRecovery()
{
    StepSeries s = loss(3000, 1, 0.02, 5);
    // Three spikes: two recover within a few steps, one is a blow-up that stays.
    s.values[500] += 2.0;
    s.values[501] += 1.0;
    s.values[1500] += 1.5;
    for (size_t i = 2800; i < s.size(); ++i)
        s.values[i] += 4.0;
    s.values[1000] = kNaN; // a NaN iteration is not a spike
    const SpikeReport r = findSpikes(s);
    QCOMPARE(r.spikes.size(), size_t(3));
    QCOMPARE(r.spikes[0].step, 500); // the peak of a two-point spike
    QVERIFY(r.spikes[0].recoveredAt && *r.spikes[0].recoveredAt <= 503);
    QCOMPARE(r.spikes[1].step, 1500);
    QCOMPARE(*r.spikes[1].recoveredAt, 1501);
    QCOMPARE(r.spikes[2].step, 2800);
    QVERIFY(!r.spikes[2].recoveredAt);
    QVERIFY(r.spikes[0].height > 50);
    QVERIFY2(std::abs(r.noise - 0.02) < 0.005, qPrintable(QString::number(r.noise)));
    // A noisier run with no spikes has none.
    QCOMPARE(findSpikes(loss(3000, 1, 0.2, 6)).spikes.size(), size_t(0));
    // Each spike's level is the median of the h finite points before it (h = points / 100, in [3, 50]), as a
    // selection of that window gives it.
    const StepSeries f = finitePoints(s);
    const size_t h = std::clamp<size_t>(f.size() / 100, 3, 50);
    for (const Spike &x : r.spikes) {
        const size_t i = size_t(std::find(f.steps.begin(), f.steps.end(), x.step) - f.steps.begin());
        QVERIFY(i >= h && i < f.size());
        std::vector<double> window(f.values.begin() + ptrdiff_t(i - h), f.values.begin() + ptrdiff_t(i));
        std::sort(window.begin(), window.end());
        const double expected
            = window.size() % 2 ? window[window.size() / 2] : 0.5 * (window[h / 2 - 1] + window[h / 2]);
        QCOMPARE(x.level, expected);
    }
}

void TestSeriesMath::spikeRates()
{
    // 12 spikes in 1000 points against 2 in 1000: more often. 3 against 2: not.
    QVERIFY(spikesMoreOften(12, 1000, 2, 1000));
    QVERIFY(!spikesMoreOften(3, 1000, 2, 1000));
    QVERIFY(spikeRateP(12, 1000, 2, 1000) < 0.01);
    // The rates, not the counts: 12 in 6000 points against 2 in 1000 is the same rate.
    QVERIFY(!spikesMoreOften(12, 6000, 2, 1000));
    QCOMPARE(spikeRateP(0, 1000, 0, 1000), 1.0);
    // The mid-p: 4 against none at equal exposure is P(4 of 4) / 2 = 1/32 (the exact test's 1/16 is not below 0.05).
    QCOMPARE(spikeRateMidP(4, 1000, 0, 1000), 1.0 / 32);
    QCOMPARE(spikeRateP(4, 1000, 0, 1000), 1.0 / 16);
    // 6 against 1: (P(7 of 7) + P(6 of 7) / 2) = (1 + 3.5) / 128.
    QCOMPARE(spikeRateMidP(6, 1000, 1, 1000), 4.5 / 128);
}

void TestSeriesMath::onsetOfASustainedRise()
{
    // An activation's underflows% near 0.8 with noise 0.05, rising from step 1200 to 30 %.
    std::mt19937 rng(9);
    std::normal_distribution<double> noise(0.0, 0.05);
    StepSeries s;
    for (int step = 0; step < 3000; step += 25) {
        s.steps.push_back(step);
        s.values.push_back(0.8 + noise(rng) + (step >= 1200 ? 0.02 * (step - 1200) : 0.0));
    }
    const Onset o = findOnset(s, Direction::Up);
    QVERIFY(o.step.has_value());
    QVERIFY2(*o.step >= 1200 && *o.step <= 1400, qPrintable(QString::number(*o.step)));
    QVERIFY(std::abs(o.early - 0.8) < 0.05);
    QVERIFY(o.size > 10);
    // The same series read for a fall: none.
    QVERIFY(!findOnset(s, Direction::Down).step);
    // A few missing points change nothing.
    s.values[10] = kNaN;
    s.values[60] = kNaN;
    QCOMPARE(findOnset(s, Direction::Up).step, o.step);
}

// A run still being written (its planned steps known): once its early share is written, the early level, its
// noise and the threshold are the complete run's, and an onset is found where the complete run will show it once
// the change has lasted as long as it must there. Before, the early level was that of a fifth of the points
// written so far: its noise, read off fewer points, moved the threshold and the onset with each new point.
void TestSeriesMath::onsetWhileWrittenIsTheCompleteRunsOnset()
{
    int compared = 0;
    for (unsigned seed = 1; seed <= 20; ++seed) {
        std::mt19937 rng(seed);
        std::normal_distribution<double> noise(0.0, 0.05 + 0.01 * (seed % 5));
        std::uniform_int_distribution<int> at(2000, 3500);
        const int rise = at(rng);
        StepSeries whole;
        for (int step = 0; step <= 5000; step += 50) {
            whole.steps.push_back(step);
            whole.values.push_back(0.8 + noise(rng) + (step >= rise ? 0.002 * (step - rise) : 0.0));
        }
        const Onset complete = findOnset(whole, Direction::Up);
        QVERIFY2(complete.step, qPrintable(QString::number(seed)));
        OnsetOptions live;
        live.plannedSteps = whole.steps.back();
        QCOMPARE(completePoints(whole, live), whole.size());
        // The change must last 5 % of the complete run's points (and the smoothing's half-width) to count.
        const size_t onsetAt
            = size_t(std::find(whole.steps.begin(), whole.steps.end(), *complete.step) - whole.steps.begin());
        for (size_t n = 2 * earlyPoints(whole, {}); n < whole.size(); ++n) {
            StepSeries written;
            written.steps.assign(whole.steps.begin(), whole.steps.begin() + n);
            written.values.assign(whole.values.begin(), whole.values.begin() + n);
            QCOMPARE(completePoints(written, live), whole.size());
            QCOMPARE(earlyPoints(written, live), earlyPoints(whole, {}));
            const Onset o = findOnset(written, Direction::Up, live);
            QCOMPARE(o.early, complete.early);
            QCOMPARE(o.noise, complete.noise);
            QCOMPARE(o.threshold, complete.threshold);
            if (n >= onsetAt + 8) {
                QVERIFY2(o.step == complete.step,
                    qPrintable(QStringLiteral("seed %1, %2 points: %3 against %4")
                                   .arg(seed)
                                   .arg(n)
                                   .arg(o.step ? QString::number(*o.step) : QStringLiteral("none"))
                                   .arg(*complete.step)));
                ++compared;
            }
        }
    }
    QVERIFY(compared > 200);
    // Fewer written than twice the early share: the early level is half of what is written, so that an onset
    // in the other half can be seen.
    StepSeries start;
    for (int step = 0; step < 1000; step += 50) {
        start.steps.push_back(step);
        start.values.push_back(step >= 600 ? 2.0 : 1.0);
    }
    OnsetOptions live;
    live.plannedSteps = 100000;
    QCOMPARE(earlyPoints(start, live), size_t(10));
    QCOMPARE(earlyPoints(start, {}), size_t(5));
}

// A transient that has just passed when the run is read (seed 47's healthy pair: an activation's underflows%
// of 1.5 % at 3.1, 8.0, 7.9 for three statistics intervals, back to 1.5 at the fourth, the newest): the running
// medians of the last points, their windows cut at the newest point, are all high; a change there counts only
// where the point itself has changed, so it is no onset, as on the complete run (while the high points are the
// newest, it is one: nothing tells it from a change that stays). A change that stays is one.
void TestSeriesMath::transientAtTheWrittenEndIsNoOnset()
{
    std::mt19937 rng(47);
    std::normal_distribution<double> noise(0.0, 0.05);
    StepSeries whole, rise;
    for (int step = 100; step <= 6000; step += 100) {
        whole.steps.push_back(step);
        const double transient = step == 2700 ? 1.6 : step == 2800 || step == 2900 ? 6.4 : 0.0;
        whole.values.push_back(1.5 + noise(rng) + transient);
        rise.steps.push_back(step);
        rise.values.push_back(whole.values.back() - transient + (step >= 2700 ? 6.4 : 0.0));
    }
    QVERIFY(!findOnset(whole, Direction::Up).step);
    OnsetOptions live;
    live.plannedSteps = 6000;
    const std::optional<int64_t> risen = findOnset(rise, Direction::Up).step;
    QCOMPARE(risen, std::optional<int64_t>(2700));
    for (size_t n = 8; n < whole.size(); ++n) {
        StepSeries written = whole, changed = rise;
        written.steps.resize(n);
        written.values.resize(n);
        changed.steps.resize(n);
        changed.values.resize(n);
        const Onset o = findOnset(written, Direction::Up, live);
        // Written through 2900, the three high points are the newest: as far as they tell, the change stays.
        if (written.steps.back() == 2900)
            QCOMPARE(o.step, std::optional<int64_t>(2700));
        else
            QVERIFY2(!o.step, qPrintable(QStringLiteral("%1 points written: onset at %2").arg(n).arg(*o.step)));
        // The change that stays: told at the complete run's onset once it has lasted 5 % of the planned points
        // (3) with the newest two points changed themselves.
        const Onset c = findOnset(changed, Direction::Up, live);
        if (changed.steps.back() >= 2900)
            QCOMPARE(c.step, risen);
        else
            QVERIFY(!c.step);
    }
}

void TestSeriesMath::traitIsNoOnset()
{
    // A layer constantly worse than the rest (high from the start, noisy, flat): a trait, not an onset.
    std::mt19937 rng(11);
    std::normal_distribution<double> noise(0.0, 0.5);
    StepSeries s;
    for (int step = 0; step < 3000; step += 25) {
        s.steps.push_back(step);
        s.values.push_back(6.0 + noise(rng));
    }
    QVERIFY(!findOnset(s, Direction::Up).step);
    // A single outlier late on is not sustained.
    s.values[100] = 60;
    QVERIFY(!findOnset(s, Direction::Up).step);
    StepSeries few;
    few.steps = {0, 1, 2};
    few.values = {1, 50, 50};
    QVERIFY(!findOnset(few, Direction::Up).step); // too few points to say
}

void TestSeriesMath::truncatedValues()
{
    QVERIFY(looksTruncated(std::vector<double> {0.0, 0.0, 0.0, 0.0001, 0.0}));
    QVERIFY(!looksTruncated(std::vector<double> {0.0, 0.0, 0.000012, 0.0}));
    QVERIFY(!looksTruncated(std::vector<double> {0.5, 0.25, 1.0, 0.0}));
    QVERIFY(!looksTruncated(std::vector<double> {}));
}

void TestSeriesMath::lowQuartileSigmaOfKnownValues()
{
    // Median 0; |x| sorted = {0, 0, 1, 1, 2, 2, 3, 50, 60}: the lower quartile (index 9 / 4 = 2) is 1, / 0.3186.
    const std::vector<double> v {-3, -2, -1, 0, 0, 1, 2, 50, 60, kNaN};
    QCOMPARE(lowQuartileSigma(v), 1.0 / 0.3186);
    // Of Gaussian noise: its sigma.
    std::mt19937 rng(3);
    std::normal_distribution<double> n(0.0, 0.1);
    std::vector<double> x;
    for (int i = 0; i < 4000; ++i)
        x.push_back(n(rng));
    QVERIFY2(std::abs(lowQuartileSigma(x) - 0.1) < 0.01, qPrintable(QString::number(lowQuartileSigma(x))));
}

void TestSeriesMath::departureThatLevelsOff()
{
    // The run opens a gap of 0.2 from step 6000 within ~100 steps and keeps it (a curve that levels off, which
    // a line from an early break would fit better than a late one): the start, not an early break.
    const StepSeries base = loss(1000, 10, 0.02, 11);
    StepSeries run = loss(1000, 10, 0.02, 12);
    for (size_t i = 0; i < run.size(); ++i) {
        if (run.steps[i] > 6000)
            run.values[i] += 0.2 * (1.0 - std::exp(-double(run.steps[i] - 6000) / 100.0));
    }
    const Departure d = findDeparture(align(base, run));
    QVERIFY(d.step.has_value());
    QVERIFY2(*d.step >= 5950 && *d.step <= 6100, qPrintable(QString::number(*d.step)));
    QVERIFY(d.gapAtEnd > 0.18 && d.gapAtEnd < 0.22);
    // The trace it was decided on (what fp8scope-cli compare prints): one entry per aligned point, the edge the
    // tolerance (0.5 % of a loss near 10 is 0.05) plus the band, the smoothed difference above it once the gap
    // is open and below it before the gap enters its centred window (101 points, 50 before: from step 5500).
    QCOMPARE(d.trace.steps.size(), d.points);
    QCOMPARE(d.trace.smoothed.size(), d.points);
    QCOMPARE(d.trace.edge.size(), d.points);
    QCOMPARE(d.trace.difference[10], d.trace.run[10] - d.trace.baseline[10]);
    QCOMPARE(d.trace.edge[10], std::max(0.005 * std::abs(d.trace.baseline[10]), 0.01) + d.band);
    QCOMPARE(d.trace.smoothed.back(), d.gapAtEnd);
    size_t above = 0, aboveBefore = 0;
    for (size_t i = 0; i < d.points; ++i) {
        const bool out = d.trace.smoothed[i] > d.trace.edge[i];
        if (d.trace.steps[i] >= 6200)
            above += out ? 1 : 0;
        else if (d.trace.steps[i] < 5500)
            aboveBefore += out ? 1 : 0;
    }
    QCOMPARE(d.window, 101);
    QCOMPARE(aboveBefore, size_t(0));
    QCOMPARE(
        above, size_t(std::count_if(d.trace.steps.begin(), d.trace.steps.end(), [](int64_t s) { return s >= 6200; })));
}

void TestSeriesMath::spikeJustBeforeADepartureDoesNotMoveItsStart()
{
    // A long spike of the run 500 steps before it departs (about 20 points back to its level) would pull a
    // CUSUM start to itself; given as a recovered spike it does not.
    const StepSeries base = loss(800, 10, 0.02, 13);
    StepSeries run = loss(800, 10, 0.02, 14);
    addSpike(&run, 380, 1.2, 0.8); // step 3800
    for (size_t i = 0; i < run.size(); ++i) {
        if (run.steps[i] >= 4300)
            run.values[i] += 0.08;
    }
    const SpikeReport spikes = findSpikes(run);
    QVERIFY(!spikes.spikes.empty());
    QCOMPARE(spikes.spikes.front().step, 3800);
    QVERIFY(spikes.spikes.front().recoveredAt.has_value());
    const Departure d = findDeparture(align(base, run), {}, recoveredSpikeRanges(spikes));
    QVERIFY(d.step.has_value());
    QVERIFY2(*d.step >= 4250 && *d.step <= 4350, qPrintable(QString::number(*d.step)));
}

void TestSeriesMath::departureInTheLastPointsIsNone()
{
    // A jump in the last 5 % of the points (a spike still decaying at the end) is no departure; the same jump
    // from the middle on is.
    const StepSeries base = loss(400, 10, 0.02, 15);
    StepSeries late = loss(400, 10, 0.02, 16);
    for (size_t i = 380; i < late.size(); ++i)
        late.values[i] += 0.5;
    QVERIFY(!findDeparture(align(base, late)).step);
    StepSeries mid = loss(400, 10, 0.02, 16);
    for (size_t i = 200; i < mid.size(); ++i)
        mid.values[i] += 0.5;
    const Departure d = findDeparture(align(base, mid));
    QVERIFY(d.step.has_value());
    QVERIFY2(std::abs(*d.step - 2000) <= 20, qPrintable(QString::number(*d.step)));
}

void TestSeriesMath::spikesOnASteepWarmup()
{
    // A loss that falls from 10 to 3 over its first 100 points, noise 0.02: the noise is measured as 0.02 (not
    // as the fall), and the three spikes, one of them on the fall, are found.
    StepSeries s;
    std::mt19937 rng(17);
    std::normal_distribution<double> n(0.0, 0.02);
    for (int i = 0; i < 500; ++i) {
        s.steps.push_back(i * 10);
        s.values.push_back(3.0 + 7.0 * std::exp(-double(i) / 25.0) + n(rng));
    }
    addSpike(&s, 40, 1.0, 0.6);
    addSpike(&s, 200, 0.5, 0.6);
    addSpike(&s, 350, 0.5, 0.6);
    const SpikeReport r = findSpikes(s);
    QVERIFY2(std::abs(r.noise - 0.02) < 0.006, qPrintable(QString::number(r.noise)));
    QCOMPARE(int(r.spikes.size()), 3);
    QCOMPARE(r.spikes[0].step, 400);
    QCOMPARE(r.spikes[1].step, 2000);
    QCOMPARE(r.spikes[2].step, 3500);
}

void TestSeriesMath::spikesOfARunThatSpikesOften()
{
    // 16 spikes in 400 points, each decaying over ~15 points: the run spends half its time in their tails.
    // The noise is still measured near its 0.02 and every spike is found.
    StepSeries s = loss(400, 10, 0.02, 19);
    for (int k = 0; k < 16; ++k)
        addSpike(&s, size_t(10 + 24 * k), 0.6, 0.8);
    const SpikeReport r = findSpikes(s);
    QVERIFY2(r.noise < 0.03, qPrintable(QString::number(r.noise)));
    QCOMPARE(int(r.spikes.size()), 16);
    for (const Spike &x : r.spikes)
        QVERIFY(x.recoveredAt.has_value());
}

void TestSeriesMath::alignsIntervalMeans()
{
    // One curve logged as Megatron logs it, the mean of each interval: every 5 steps and every 20. Read at
    // the sparser one's steps, the denser one's means over the same 20 steps agree with it; interpolated
    // they do not, on the steep start.
    const auto f = [](double t) { return 10.0 * std::exp(-t / 50.0) + 2.0; };
    const auto means = [&](int every) {
        StepSeries s;
        for (int end = every; end <= 1000; end += every) {
            double sum = 0;
            for (int t = end - every + 1; t <= end; ++t)
                sum += f(t);
            s.steps.push_back(end);
            s.values.push_back(sum / every);
        }
        return s;
    };
    const StepSeries fine = means(5), coarse = means(20);
    const Aligned exact = align(fine, coarse, true);
    QCOMPARE(exact.steps.size(), size_t(50));
    double worst = 0;
    for (size_t i = 0; i < exact.steps.size(); ++i)
        worst = std::max(worst, std::abs(exact.a[i] - exact.b[i]));
    QVERIFY2(worst < 1e-9, qPrintable(QString::number(worst)));
    const Aligned point = align(fine, coarse);
    QVERIFY(std::abs(point.a.front() - point.b.front()) > 0.5);
}

QTEST_APPLESS_MAIN(TestSeriesMath)
void TestSeriesMath::runningMedianOfEachWindow()
{
    // The sliding window against each window's median taken afresh: NaN left out, even counts averaged,
    // trailing and centred windows, windows wider than the series, ties.
    QCOMPARE(runningMedian(std::vector<double> {3, 1, 2, kNaN, 5}, 1), (std::vector<double> {2, 2, 1.5, 3.5, 5}));
    QCOMPARE(runningMedian(std::vector<double> {3, 1, 2, 7, 5}, 1, true), (std::vector<double> {3, 2, 2, 5, 5}));
    std::mt19937 rng(5);
    std::normal_distribution<double> g;
    for (int trial = 0; trial < 300; ++trial) {
        std::vector<double> v(1 + rng() % 200);
        for (double &x : v)
            x = rng() % 15 == 0 ? kNaN : rng() % 5 == 0 ? std::round(g(rng)) : g(rng);
        const int h = int(rng() % 40);
        const bool symmetric = rng() % 2 == 0;
        const std::vector<double> got = runningMedian(v, h, symmetric);
        const ptrdiff_t n = ptrdiff_t(v.size());
        for (ptrdiff_t i = 0; i < n; ++i) {
            const ptrdiff_t w = symmetric ? std::min<ptrdiff_t>({h, i, n - 1 - i}) : h;
            std::vector<double> window;
            for (ptrdiff_t j = std::max<ptrdiff_t>(0, i - w); j <= std::min(n - 1, i + w); ++j) {
                if (std::isfinite(v[size_t(j)]))
                    window.push_back(v[size_t(j)]);
            }
            const double want = median(window);
            QVERIFY2(std::isnan(want) ? std::isnan(got[size_t(i)]) : got[size_t(i)] == want,
                qPrintable(QStringLiteral("trial %1 point %2").arg(trial).arg(i)));
        }
    }
}

void TestSeriesMath::missingAndNaNPoints()
{
    // Every 7th point of the run NaN, steps 4000-4500 of the baseline missing (a lost log file): the
    // departure is found where it is, on the points both runs have; NaN neither counts nor spikes.
    StepSeries base = loss(1000, 10, 0.02, 21);
    StepSeries run = loss(1000, 10, 0.02, 22);
    for (size_t i = 0; i < run.size(); ++i) {
        if (run.steps[i] >= 6000)
            run.values[i] += 0.15;
        if (i % 7 == 3)
            run.values[i] = kNaN;
    }
    StepSeries gappy;
    for (size_t i = 0; i < base.size(); ++i) {
        if (base.steps[i] < 4000 || base.steps[i] > 4500) {
            gappy.steps.push_back(base.steps[i]);
            gappy.values.push_back(base.values[i]);
        }
    }
    const Aligned al = align(gappy, run);
    // The run is the sparser (857 finite points against 949): its finite steps, the baseline interpolated
    // across its gap.
    QCOMPARE(al.steps.size(), size_t(857));
    const Departure d = findDeparture(al);
    QCOMPARE(d.points, size_t(857));
    QVERIFY(d.step);
    QVERIFY2(*d.step >= 5950 && *d.step <= 6050, qPrintable(QString::number(*d.step)));
    QVERIFY(d.gapAtEnd > 0.13 && d.gapAtEnd < 0.17);
    // The jump at 6000 stays: one spike, where it starts, "recovered" (if at all) only once the falling curve
    // has come most of the way down to the level before it, over a hundred points later: not a spike's few.
    const SpikeReport jump = findSpikes(run);
    QCOMPARE(jump.spikes.size(), size_t(1));
    QCOMPARE(jump.spikes.front().step, int64_t(6000));
    QVERIFY2(!jump.spikes.front().recoveredAt || *jump.spikes.front().recoveredAt >= 7000,
        qPrintable(QString::number(jump.spikes.front().recoveredAt.value_or(-1))));
    StepSeries spiky = loss(1000, 10, 0.02, 23);
    for (size_t i = 0; i < spiky.size(); i += 5)
        spiky.values[i] = kNaN;
    spiky.values[501] += 2.0;
    const SpikeReport sr = findSpikes(spiky);
    QCOMPARE(sr.points, size_t(800));
    QCOMPARE(sr.spikes.size(), size_t(1));
    QCOMPARE(sr.spikes.front().step, int64_t(5010));
}

void TestSeriesMath::onePoint()
{
    // A run that logged one point: aligned where the other has it, no departure, spike or onset, no NaN out.
    StepSeries one;
    one.steps = {100};
    one.values = {3.5};
    const StepSeries base = loss(100, 10, 0.02, 31);
    const Aligned al = align(base, one);
    QCOMPARE(al.steps, std::vector<int64_t>({100}));
    QCOMPARE(al.b.front(), 3.5);
    const Departure d = findDeparture(al);
    QVERIFY(!d.step);
    QCOMPARE(d.points, size_t(1));
    QCOMPARE(d.offset, 3.5 - al.a.front());
    const SpikeReport sr = findSpikes(one);
    QCOMPARE(sr.points, size_t(1));
    QVERIFY(sr.spikes.empty());
    const Onset o = findOnset(one, Direction::Up);
    QVERIFY(!o.step);
    QCOMPARE(runningMedian(one.values, 3), std::vector<double>({3.5}));
    QVERIFY(align(one, StepSeries {}).steps.empty());
}

void TestSeriesMath::unevenIntervals()
{
    // The run logged at uneven steps (gaps of 7 to 40): aligned at its own steps, the baseline read between its
    // neighbours exactly (a line in step), and a departure found at the right place on them.
    StepSeries base, run;
    for (int64_t step = 0; step <= 10000; step += 10) {
        base.steps.push_back(step);
        base.values.push_back(5.0 - 1e-4 * double(step));
    }
    std::mt19937 rng(41);
    for (int64_t step = 3; step <= 9990; step += 7 + int64_t(rng() % 34)) {
        run.steps.push_back(step);
        run.values.push_back(5.0 - 1e-4 * double(step) + (step >= 7000 ? 0.1 : 0.0));
    }
    const Aligned al = align(base, run);
    QCOMPARE(al.steps, run.steps);
    for (size_t i = 0; i < al.steps.size(); ++i)
        QVERIFY(std::abs(al.a[i] - (5.0 - 1e-4 * double(al.steps[i]))) < 1e-12);
    const Departure d = findDeparture(al);
    QVERIFY(d.step);
    // The first logged step at or after 7000, within one log interval.
    QVERIFY2(*d.step >= 6960 && *d.step <= 7041, qPrintable(QString::number(*d.step)));
    QCOMPARE(d.gapAtEnd, 0.1);
}

#include "tst_seriesmath.moc"