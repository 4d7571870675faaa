#include "comparisondata.h"

#include "attempts.h"

#include "core/query/statnames.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace fp8scope {

MinMaxPyramid::MinMaxPyramid(const std::vector<double> &values)
{
    // Level 0 from the values, each next level from the one below, while a level has more than one block.
    std::vector<std::pair<double, double>> level((values.size() + kFan - 1) / kFan, {INFINITY, -INFINITY});
    for (size_t i = 0; i < values.size(); ++i) {
        if (!std::isfinite(values[i]))
            continue;
        auto &b = level[i / kFan];
        b.first = std::min(b.first, values[i]);
        b.second = std::max(b.second, values[i]);
    }
    while (level.size() > 1) {
        std::vector<std::pair<double, double>> up((level.size() + kFan - 1) / kFan, {INFINITY, -INFINITY});
        for (size_t i = 0; i < level.size(); ++i) {
            auto &b = up[i / kFan];
            b.first = std::min(b.first, level[i].first);
            b.second = std::max(b.second, level[i].second);
        }
        m_levels.push_back(std::move(level));
        level = std::move(up);
    }
    if (!level.empty())
        m_levels.push_back(std::move(level));
}

std::pair<double, double> MinMaxPyramid::range(const std::vector<double> &values, size_t lo, size_t hi) const
{
    double mn = INFINITY, mx = -INFINITY;
    const auto takeValues = [&](size_t a, size_t b) {
        for (size_t i = a; i < b; ++i) {
            if (std::isfinite(values[i])) {
                mn = std::min(mn, values[i]);
                mx = std::max(mx, values[i]);
            }
        }
    };
    const auto takeBlocks = [&](const std::vector<std::pair<double, double>> &level, size_t a, size_t b) {
        for (size_t i = a; i < b; ++i) {
            mn = std::min(mn, level[i].first);
            mx = std::max(mx, level[i].second);
        }
    };
    hi = std::min(hi, values.size());
    // Climb while a whole block of the next level lies inside: the ragged ends at this level, the middle above.
    size_t a = lo, b = hi;
    int level = -1; // -1: the values themselves
    while (a < b) {
        const size_t up = size_t(level + 1);
        const size_t ua = (a + kFan - 1) / kFan, ub = b / kFan;
        if (up >= m_levels.size() || ua >= ub) {
            level < 0 ? takeValues(a, b) : takeBlocks(m_levels[size_t(level)], a, b);
            break;
        }
        if (level < 0) {
            takeValues(a, ua * kFan);
            takeValues(ub * kFan, b);
        } else {
            takeBlocks(m_levels[size_t(level)], a, ua * kFan);
            takeBlocks(m_levels[size_t(level)], ub * kFan, b);
        }
        a = ua;
        b = ub;
        level = int(up);
    }
    return {mn, mx};
}

namespace {

// The drawn statistic's band, pyramids and spikes, from d.statistic.
void fillStatistic(ComparisonData &d)
{
    const analysis::StatComparison &s = d.statistic;
    if (s.baselinePoints)
        d.baselinePyramid = MinMaxPyramid(s.baselinePoints->values);
    if (s.runPoints)
        d.runPyramid = MinMaxPyramid(s.runPoints->values);
    const analysis::Departure::Trace &t = s.departure.trace;
    d.differencePyramid = MinMaxPyramid(t.difference);
    d.edgePyramid = MinMaxPyramid(t.edge);
    if (!t.edge.empty() && t.edge.size() == t.baseline.size()) {
        const std::vector<double> centre = analysis::runningMedian(t.baseline, s.departure.window / 2);
        d.bandLow.resize(centre.size());
        d.bandHigh.resize(centre.size());
        for (size_t i = 0; i < centre.size(); ++i) {
            d.bandLow[i] = centre[i] - t.edge[i];
            d.bandHigh[i] = centre[i] + t.edge[i];
        }
        d.bandLowPyramid = MinMaxPyramid(d.bandLow);
        d.bandHighPyramid = MinMaxPyramid(d.bandHigh);
    }
    if (s.baselinePoints)
        d.baselineSpikes = analysis::findSpikes(*s.baselinePoints);
    if (s.runPoints)
        d.runSpikes = analysis::findSpikes(*s.runPoints);
}

} // namespace

ComparisonData computeComparison(const Catalog &catalog, RunRef baseline, RunRef run, const QString &stat)
{
    ComparisonData d;
    d.baseline = baseline;
    d.run = run;
    d.stat = stat.isEmpty() ? QStringLiteral("lm loss") : stat;
    if (!baseline.isValid()) {
        // A run on its own: its check as a comparison, and its statistic as read.
        d.comparison = analysis::comparisonOf(catalog, analysis::checkRun(catalog, run));
        d.statistic = analysis::compareStatistic(catalog, baseline, run, d.stat);
        fillStatistic(d);
        return d;
    }
    // The loss is compared once: the engine's judgement and the drawn statistic are the same work.
    analysis::StatComparison loss;
    d.comparison = analysis::compareRuns(catalog, baseline, run, {}, &loss);
    d.statistic = canonicalStat(d.stat).name == QLatin1String("lm loss")
        ? std::move(loss)
        : analysis::compareStatistic(catalog, baseline, run, d.stat);
    d.config = analysis::configTable(catalog, baseline, run);
    d.evals = analysis::evalTable(catalog, baseline, run);
    fillStatistic(d);
    // The baseline's other attempts, for what each next step was already tried in.
    const std::vector<Run> runs = catalog.runs();
    const auto others = std::count_if(runs.begin(), runs.end(),
        [&](const Run &r) { return r.ref != run && r.ref != baseline && catalog.pairing(r.ref).baseline == baseline; });
    if (others > 0 && !d.comparison.nextSteps.empty()) {
        const analysis::AttemptsResult attempts = analysis::computeAttempts(catalog, baseline);
        for (const analysis::NextStep &ns : d.comparison.nextSteps) {
            QStringList lines;
            for (const analysis::TriedBy &t : analysis::triedBy(catalog, ns, attempts, run))
                lines << t.text();
            if (!lines.isEmpty())
                d.triedBy.insert(triedByKey(ns), lines);
        }
    }
    return d;
}

QString triedByKey(const analysis::NextStep &step)
{
    return step.finding + QLatin1Char('\n') + step.action;
}

ComparisonData computeStatistic(const Catalog &catalog, RunRef baseline, RunRef run, const QString &stat)
{
    ComparisonData d;
    d.baseline = baseline;
    d.run = run;
    d.stat = stat;
    d.statistic = analysis::compareStatistic(catalog, baseline, run, stat);
    fillStatistic(d);
    return d;
}

std::vector<SeriesPoint> bucketSeries(const std::vector<int64_t> &steps, const std::vector<double> &values,
    const PointRange &range, const MinMaxPyramid *pyramid)
{
    const auto first = std::lower_bound(steps.begin(), steps.end(), range.from);
    const auto last = std::upper_bound(first, steps.end(), range.to);
    const size_t a = size_t(first - steps.begin()), b = size_t(last - steps.begin());
    std::vector<SeriesPoint> out;
    const size_t n = b - a;
    if (range.resolution <= 0 || n <= size_t(range.resolution)) {
        for (size_t i = a; i < b; ++i)
            out.push_back({steps[i], steps[i], values[i], values[i], values[i], 1});
        return out;
    }
    // Equal shares of the points (the series' steps are near even); each bucket its min and max.
    const size_t buckets = size_t(range.resolution);
    for (size_t k = 0; k < buckets; ++k) {
        const size_t lo = a + n * k / buckets, hi = a + n * (k + 1) / buckets;
        if (lo >= hi)
            continue;
        SeriesPoint p {steps[lo], steps[hi - 1], NAN, INFINITY, -INFINITY, int64_t(hi - lo)};
        if (pyramid) {
            std::tie(p.min, p.max) = pyramid->range(values, lo, hi);
        } else {
            for (size_t i = lo; i < hi; ++i) {
                if (!std::isfinite(values[i]))
                    continue;
                p.min = std::min(p.min, values[i]);
                p.max = std::max(p.max, values[i]);
            }
        }
        if (p.min > p.max)
            p.min = p.max = NAN;
        p.value = p.min;
        out.push_back(p);
    }
    return out;
}

} // namespace fp8scope
