// How often each of the 65536 bit patterns occurs in a bfloat16 or float16 tensor. Under one scale every
// metric of an element is a function of its pattern, so one counting pass over a 16-bit tensor serves the
// tensor amax (current scaling) and every per-tensor recipe at once: fold() evaluates the element-wise
// definition once per pattern that occurred, weighted by its count.
#pragma once

#include "core/formats/dtype.h"
#include "metricsums.h"
#include "quantplan.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8scope {

class PatternCounts
{
public:
    static constexpr size_t kPatterns = 65536;

    // dtype: DType::BF16 or DType::F16.
    explicit PatternCounts(DType dtype);

    DType dtype() const { return m_dtype; }
    int64_t count(uint16_t pattern) const { return m_counts[pattern]; }
    // Elements counted so far.
    int64_t total() const { return m_total; }

    // Adds `copies` consecutive tables of kPatterns counters (as cpukernels::countPatterns16 fills them)
    // and zeroes them.
    void take(uint32_t *counters, size_t copies);
    void merge(const PatternCounts &other);

    // Largest finite |x| among the patterns counted; 0 when there is none (as the amax pass gives).
    float amax() const;
    // Adds the metrics of the counted elements under a per-tensor plan (ScaleMode::Tensor) to sums.
    void fold(const fp8math::QuantPlan &plan, fp8math::MetricSums &sums) const;

private:
    float value(uint32_t pattern) const;

    DType m_dtype;
    int64_t m_total = 0;
    std::vector<int64_t> m_counts;
};

} // namespace fp8scope
