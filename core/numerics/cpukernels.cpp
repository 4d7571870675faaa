// The CPU kernels' dispatch: Highway picks the best SIMD target this CPU runs at the first call; see
// cpukernels.h. The kernels themselves are in cpukernels-inl.h; this translation unit compiles the baseline
// target's (and, off x86, every target's), cpukernels_<target>.cpp one x86 target's each.
#include "core/numerics/cpukernels-targets.h"

#define HWY_DISABLED_TARGETS FP8SCOPE_KERNELS_NOT_COMPILED
#define FP8SCOPE_KERNEL_TARGETS (~(FP8SCOPE_KERNELS_OWN_UNITS))
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/numerics/cpukernels-inl.h"
#include <hwy/foreach_target.h> // IWYU pragma: keep

#include "core/numerics/cpukernels-inl.h"

#if HWY_ONCE
namespace fp8scope::cpukernels {

HWY_EXPORT(AccumulateUniform);
HWY_EXPORT(AccumulateRowBlocks);
HWY_EXPORT(AccumulateTiles);
HWY_EXPORT(AmaxAbs);
HWY_EXPORT(RowBlockStats);
HWY_EXPORT(SumFloat);
HWY_EXPORT(SumBf16);
HWY_EXPORT(SimdTarget);

void KernelScratch::FreeDeleter::operator()(uint32_t *p) const
{
    std::free(p);
}

KernelScratch::KernelScratch()
    : joint(static_cast<uint32_t *>(std::calloc(kJointSize, sizeof(uint32_t))))
{
    if (!joint)
        throw std::bad_alloc();
}

void KernelScratch::flushInto(MetricSums &m)
{
    if (pending == 0)
        return;
    // Rows 0 (zeros, subnormals) and 255 (NaN, inf) and the binades of the finite inputs seen.
    const auto flushRow = [&](uint32_t row) {
        uint32_t *r = joint.get() + size_t(row) * fp8math::kHistBins * kCopies;
        for (size_t col = 0; col < size_t(fp8math::kHistBins); ++col) {
            uint32_t *c = r + col * kCopies;
            int64_t n = 0;
            for (int k = 0; k < kCopies; ++k)
                n += c[k];
            if (n == 0)
                continue;
            std::fill(c, c + kCopies, 0u);
            m.histIn[row] += n;
            m.histScaled[col] += n;
        }
    };
    flushRow(0);
    for (uint32_t row = std::max(rowLo, 1u); row <= std::min(rowHi, uint32_t(fp8math::kHistBins - 2)); ++row)
        flushRow(row);
    flushRow(fp8math::kHistBins - 1);
    rowLo = fp8math::kHistBins - 1;
    rowHi = 0;
    pending = 0;
}

namespace {

// Keeps every counter of the joint table below 2^32: flush before a call could overflow one.
constexpr int64_t kFlushAt = int64_t(1) << 31;
constexpr size_t kMaxRun = size_t(1) << 30;

void flushIfNeeded(KernelScratch &s, MetricSums &m, size_t next)
{
    if (s.pending + int64_t(next) >= kFlushAt)
        s.flushInto(m);
}

size_t inputSize(Input in)
{
    return in == Input::F32 ? 4 : 2;
}

const void *advance(const void *x, Input in, size_t elements)
{
    return static_cast<const char *>(x) + elements * inputSize(in);
}

} // namespace

float amaxAbs(const void *x, Input in, size_t n)
{
    return HWY_DYNAMIC_DISPATCH(AmaxAbs)(x, in, n);
}

void accumulateUniform(
    const void *x, Input in, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch)
{
    for (size_t off = 0; off < n; off += kMaxRun) {
        const size_t len = std::min(kMaxRun, n - off);
        flushIfNeeded(scratch, m, len);
        HWY_DYNAMIC_DISPATCH(AccumulateUniform)(advance(x, in, off), in, len, scale, scaleInv, f, m, scratch);
    }
}

void accumulateRowBlocks(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const size_t rowsPerRun = std::max<size_t>(1, kMaxRun / std::max<size_t>(rowLen, 1));
    for (size_t r = 0; r < rows; r += rowsPerRun) {
        const size_t nr = std::min(rowsPerRun, rows - r);
        flushIfNeeded(scratch, m, nr * rowLen);
        HWY_DYNAMIC_DISPATCH(AccumulateRowBlocks)(advance(x, in, r * rowLen), in, rowLen, nr, plan, m, scratch);
    }
}

void accumulateTiles(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const size_t br = size_t(std::max(plan.blockRows, 1));
    const size_t bandsPerRun = std::max<size_t>(1, kMaxRun / std::max<size_t>(rowLen * br, 1));
    for (size_t r = 0; r < rows; r += bandsPerRun * br) {
        const size_t nr = std::min(bandsPerRun * br, rows - r);
        flushIfNeeded(scratch, m, nr * rowLen);
        HWY_DYNAMIC_DISPATCH(AccumulateTiles)(advance(x, in, r * rowLen), in, rowLen, nr, plan, m, scratch);
    }
}

void rowBlockStats(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, const fp8math::BlockStatsOut &out)
{
    HWY_DYNAMIC_DISPATCH(RowBlockStats)(x, in, rowLen, rows, plan, out);
}

void countPatterns16(const uint16_t *src, size_t n, uint32_t *counts)
{
    // Alternate copies so that runs of one pattern do not serialise on one counter; each copy's touched
    // counters stay in L1 for the few thousand patterns a real tensor has.
    uint32_t *c0 = counts;
    uint32_t *c1 = counts + 65536;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        ++c0[src[i]];
        ++c1[src[i + 1]];
        ++c0[src[i + 2]];
        ++c1[src[i + 3]];
    }
    for (; i < n; ++i)
        ++c0[src[i]];
}

double sumFloat(const float *x, size_t n)
{
    return HWY_DYNAMIC_DISPATCH(SumFloat)(x, n);
}

double sumBf16(const uint16_t *x, size_t n)
{
    return HWY_DYNAMIC_DISPATCH(SumBf16)(x, n);
}

const char *simdTarget()
{
    return HWY_DYNAMIC_DISPATCH(SimdTarget)();
}

std::vector<int64_t> simdTargets()
{
    return hwy::SupportedAndGeneratedTargets();
}

const char *simdTargetName(int64_t target)
{
    return hwy::TargetName(target);
}

void pinSimdTargetForTest(int64_t target)
{
    hwy::SetSupportedTargetsForTest(target);
}

} // namespace fp8scope::cpukernels
#endif
