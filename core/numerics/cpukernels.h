// Vectorised (Highway, dispatched at run time to the best SIMD target of the CPU) kernels of the fused
// metrics pass. Each agrees element for element with scalarkernels.h; only the order of the double sums
// differs.
#pragma once

#include "metricsums.h"
#include "quantplan.h"

#include <cstddef>
#include <cstdint>

namespace fp8scope::cpukernels {

using fp8math::Format;
using fp8math::MetricSums;
using fp8math::QuantPlan;

// Largest finite |x| (NaN and inf ignored); 0 for an empty span.
float amaxAbs(const float *x, size_t n);

// Every element quantized with the same scale (per-tensor recipes).
void accumulateUniform(const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m);

// `rows` rows of `rowLen` elements, 1 x plan.blockCols blocks restarting at every row.
void accumulateRowBlocks(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m);

// blockRows x blockCols tiles; `scratch` holds 3 * rowLen floats.
void accumulateTiles(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, float *scratch);

// Widening conversions into float32.
void bf16ToFloat(const uint16_t *src, size_t n, float *dst);
void f16ToFloat(const uint16_t *src, size_t n, float *dst);

// Plain vectorised read pass (the benchmark's reference): sum of the elements in double.
double sumFloat(const float *x, size_t n);
double sumBf16(const uint16_t *x, size_t n);

// Name of the SIMD target chosen on this CPU, e.g. "AVX3".
const char *simdTarget();

} // namespace fp8scope::cpukernels
