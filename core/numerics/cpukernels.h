// Vectorised (Highway, dispatched at run time to the best SIMD target of the CPU) kernels of the fused
// metrics pass. Each agrees element for element with scalarkernels.h; only the order of the double sums
// differs.
#pragma once

#include "metricsums.h"
#include "quantplan.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace fp8scope::cpukernels {

using fp8math::Format;
using fp8math::MetricSums;
using fp8math::QuantPlan;

// The input element types the kernels read directly (other dtypes are widened to float32 first).
enum class Input : uint8_t { F32, BF16, F16 };

// Per-thread state the kernels keep between calls. The two histograms are counted together, one
// increment per element, in a joint (input binade, scaled binade) table with one copy of each key per
// vector lane (a key's copies fill one cache line), so that equal keys in a vector never wait on each
// other's increments; flushInto() folds the rows that were touched into the MetricSums histograms. The
// table (4 MiB) is allocated zeroed by the system, so pages no key reaches cost nothing. Reuse one
// KernelScratch for many calls and flush before merging sums.
class KernelScratch
{
public:
    KernelScratch();

    // Adds the counted histograms to m and clears the table.
    void flushInto(MetricSums &m);

    // Internal to the kernels.
    static constexpr int kCopies = 16;
    static constexpr size_t kJointSize = size_t(fp8math::kHistBins) * fp8math::kHistBins * kCopies;
    static constexpr size_t kNvfp4Log2Size = 2048;
    struct FreeDeleter {
        void operator()(uint32_t *p) const;
    };
    std::unique_ptr<uint32_t[], FreeDeleter> joint;
    // Input binades (rows of the table) that may hold counts besides rows 0 and 255: [rowLo, rowHi].
    uint32_t rowLo = fp8math::kHistBins - 1;
    uint32_t rowHi = 0;
    std::vector<float> work; // per-call scratch (column amaxes and scales, widened tails)
    std::vector<double> workDouble; // per-call scratch (column decode scales)
    int64_t pending = 0; // elements counted into `joint` since the last flush
    // NVFP4: log2 of the decode scale of each E4M3 block-scale value under nvfp4Global, indexed by the top
    // 11 bits of the value's float32 magnitude (exponent and three mantissa bits).
    float nvfp4Global = -1.0f;
    std::vector<double> nvfp4Log2;
};

// Largest finite |x| (NaN and inf ignored); 0 for an empty span.
float amaxAbs(const void *x, Input in, size_t n);

// Every element quantized with the same scale (per-tensor recipes).
void accumulateUniform(
    const void *x, Input in, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch);

// `rows` rows of `rowLen` elements, 1 x plan.blockCols blocks restarting at every row.
void accumulateRowBlocks(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch);

// blockRows x blockCols tiles over `rows` rows.
void accumulateTiles(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch);

// Each 1 x plan.blockCols block of `rows` rows of `rowLen` elements on its own: its statistics to `out`, block
// r * ceil(rowLen / blockCols) + j for the j-th block of row r (the block map). Agrees with
// fp8math::scalarBlockStats block by block (relative errors to float32 rounding).
void rowBlockStats(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, const fp8math::BlockStatsOut &out);

// Adds the bit patterns of n 16-bit elements to `counts`: kPatternCopies tables of 65536 counters one after
// the other (consecutive elements alternate tables, so that runs of one pattern do not wait on one
// counter). PatternCounts::take() collects and clears them.
constexpr size_t kPatternCopies = 2;
void countPatterns16(const uint16_t *src, size_t n, uint32_t *counts);

// Plain vectorised read pass (the benchmark's reference): sum of the elements in double.
double sumFloat(const float *x, size_t n);
double sumBf16(const uint16_t *x, size_t n);

// Name of the SIMD target chosen on this CPU, e.g. "AVX3".
const char *simdTarget();

// The SIMD targets compiled in that this CPU can run, best first (Highway's target bits), their names, and
// a way for tests to pin the dispatch to one of them (0: back to the best).
std::vector<int64_t> simdTargets();
const char *simdTargetName(int64_t target);
void pinSimdTargetForTest(int64_t target);

} // namespace fp8scope::cpukernels
