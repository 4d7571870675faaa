// A series as the analysis reads it: every point's step and value, in step order. Plain data, no Qt: what
// Catalog::stepSeries() hands out and core/analysis/seriesmath.h computes on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8scope {

// Points in step order (steps strictly increasing); NaN values are points the log had no number for.
struct StepSeries {
    std::vector<int64_t> steps;
    std::vector<double> values;
    size_t size() const { return steps.size(); }
    bool empty() const { return steps.empty(); }
};

} // namespace fp8scope
