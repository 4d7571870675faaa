#include "comparison.h"

#include <algorithm>
#include <cmath>

namespace fp8scope {

ComparisonData computeComparison(const Catalog &catalog, RunRef baseline, RunRef run, const QString &stat)
{
    ComparisonData d;
    d.baseline = baseline;
    d.run = run;
    d.stat = stat.isEmpty() ? QStringLiteral("lm loss") : stat;
    d.comparison = analysis::compareRuns(catalog, baseline, run);
    d.statistic = analysis::compareStatistic(catalog, baseline, run, d.stat);
    d.config = analysis::configTable(catalog, baseline, run);
    d.evals = analysis::evalTable(catalog, baseline, run);
    return d;
}

std::vector<SeriesPoint> bucketSeries(
    const std::vector<int64_t> &steps, const std::vector<double> &values, const PointRange &range)
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
        for (size_t i = lo; i < hi; ++i) {
            if (!std::isfinite(values[i]))
                continue;
            p.min = std::min(p.min, values[i]);
            p.max = std::max(p.max, values[i]);
        }
        if (p.min > p.max)
            p.min = p.max = NAN;
        p.value = p.min;
        out.push_back(p);
    }
    return out;
}

} // namespace fp8scope
