#include "patterncounts.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace fp8scope {

PatternCounts::PatternCounts(DType dtype)
    : m_dtype(dtype)
    , m_counts(kPatterns, 0)
{
    assert(dtype == DType::BF16 || dtype == DType::F16);
}

void PatternCounts::take(uint32_t *counters, size_t copies)
{
    for (size_t k = 0; k < copies; ++k) {
        uint32_t *c = counters + k * kPatterns;
        for (size_t p = 0; p < kPatterns; ++p) {
            m_counts[p] += c[p];
            m_total += c[p];
            c[p] = 0;
        }
    }
}

void PatternCounts::merge(const PatternCounts &other)
{
    assert(other.m_dtype == m_dtype);
    for (size_t p = 0; p < kPatterns; ++p)
        m_counts[p] += other.m_counts[p];
    m_total += other.m_total;
}

float PatternCounts::value(uint32_t pattern) const
{
    return m_dtype == DType::BF16 ? fp8math::bitsFloat(pattern << 16) : fp8math::halfToFloat(uint16_t(pattern));
}

float PatternCounts::amax() const
{
    float a = 0.0f;
    for (uint32_t p = 0; p < kPatterns; ++p) {
        if (m_counts[p] == 0)
            continue;
        const float v = std::fabs(value(p));
        if (std::isfinite(v))
            a = std::max(a, v);
    }
    return a;
}

void PatternCounts::fold(const fp8math::QuantPlan &plan, fp8math::MetricSums &sums) const
{
    assert(plan.mode == fp8math::ScaleMode::Tensor);
    for (uint32_t p = 0; p < kPatterns; ++p) {
        if (m_counts[p] != 0)
            fp8math::accumulateElement(value(p), plan.tensorScale, plan.tensorScaleInv, plan.format, sums, m_counts[p]);
    }
}

} // namespace fp8scope
