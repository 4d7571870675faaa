// Vectorised (Highway, dispatched at run time to the best SIMD target of the CPU) kernels of the fused
// metrics pass. Each agrees element for element with scalarkernels.h; only the order of the double sums
// differs.
#pragma once

#include "metricsums.h"
#include "quantplan.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fp8scope::cpukernels {

using fp8math::Format;
using fp8math::MetricSums;
using fp8math::QuantPlan;

// Per-thread state the kernels keep between calls. The two histograms are counted together, one
// increment per element, in a joint (input binade, scaled binade) table with four interleaved copies of
// each key so that runs of equal keys do not serialise on one counter; flushInto() folds it into the
// MetricSums histograms. Reuse one KernelScratch for many calls and flush before merging sums.
class KernelScratch
{
public:
    KernelScratch();

    // Adds the counted histograms to m and clears the table.
    void flushInto(MetricSums &m);

    // Internal to the kernels.
    static constexpr int kCopies = 4;
    static constexpr size_t kJointSize = size_t(fp8math::kHistBins) * fp8math::kHistBins * kCopies;
    std::vector<uint32_t> joint;
    std::vector<float> tileScratch;
    int64_t pending = 0; // elements counted into `joint` since the last flush
    // NVFP4: per E4M3 block-scale code, the encode and decode scales and log2(decode) under nvfp4Global.
    float nvfp4Global = -1.0f;
    float nvfp4Encode[256] = {};
    float nvfp4Decode[256] = {};
    double nvfp4Log2[256] = {};
};

// Largest finite |x| (NaN and inf ignored); 0 for an empty span.
float amaxAbs(const float *x, size_t n);

// Every element quantized with the same scale (per-tensor recipes).
void accumulateUniform(
    const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch);

// `rows` rows of `rowLen` elements, 1 x plan.blockCols blocks restarting at every row.
void accumulateRowBlocks(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch);

// blockRows x blockCols tiles over `rows` rows.
void accumulateTiles(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch);

// Per-tensor recipes on 16-bit inputs: every metric is a function of the 16-bit pattern, so the pass
// counts patterns (`counts` holds 4 x 65536 interleaved counters, kept between calls) and
// foldPatternCounts() evaluates the definition once per pattern that occurred, weighted by its count.
void countPatterns16(const uint16_t *src, size_t n, uint32_t *counts);
void foldPatternCounts(uint32_t *counts, bool bf16, float scale, float scaleInv, Format f, MetricSums &m);

// Widening conversions into float32.
void bf16ToFloat(const uint16_t *src, size_t n, float *dst);
void f16ToFloat(const uint16_t *src, size_t n, float *dst);

// Plain vectorised read pass (the benchmark's reference): sum of the elements in double.
double sumFloat(const float *x, size_t n);
double sumBf16(const uint16_t *x, size_t n);

// Name of the SIMD target chosen on this CPU, e.g. "AVX3".
const char *simdTarget();

} // namespace fp8scope::cpukernels
