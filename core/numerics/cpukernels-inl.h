// The CPU kernels of one SIMD target (cpukernels.h): Highway includes this once per target
// (HWY_TARGET_INCLUDE), in each translation unit that compiles a target. A translation unit defines the
// kernels of the targets in FP8SCOPE_KERNEL_TARGETS and declares the others': cpukernels_<target>.cpp each
// define one x86 target, cpukernels.cpp the baseline's and the dispatch tables, so that the build compiles the
// targets side by side (one translation unit took 90 s). Include guard toggled per target, as Highway asks.
#if defined(FP8SCOPE_CPUKERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FP8SCOPE_CPUKERNELS_INL_H_
#undef FP8SCOPE_CPUKERNELS_INL_H_
#else
#define FP8SCOPE_CPUKERNELS_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "core/numerics/cpukernels.h"
#include "core/numerics/scalarkernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#ifndef FP8SCOPE_CPUKERNELS_SHARED
#define FP8SCOPE_CPUKERNELS_SHARED
namespace fp8scope::cpukernels::detail {

// One element of any input type, as float32.
template <Input kIn> inline float loadScalar(const void *x, size_t i)
{
    if constexpr (kIn == Input::F32)
        return static_cast<const float *>(x)[i];
    else if constexpr (kIn == Input::BF16)
        return fp8math::bitsFloat(uint32_t(static_cast<const uint16_t *>(x)[i]) << 16);
    else
        return fp8math::halfToFloat(static_cast<const uint16_t *>(x)[i]);
}

// n elements from index i, as float32, into dst (tails handed to the scalar definition).
template <Input kIn> inline const float *widen(const void *x, size_t i, size_t n, float *dst)
{
    if constexpr (kIn == Input::F32)
        return static_cast<const float *>(x) + i;
    for (size_t k = 0; k < n; ++k)
        dst[k] = loadScalar<kIn>(x, i + k);
    return dst;
}

} // namespace fp8scope::cpukernels::detail
#endif

HWY_BEFORE_NAMESPACE();
namespace fp8scope::cpukernels::HWY_NAMESPACE {

#if (HWY_TARGET & FP8SCOPE_KERNEL_TARGETS) != 0

namespace hn = hwy::HWY_NAMESPACE;
using namespace fp8scope::fp8math;
using detail::loadScalar;
using detail::widen;

#if HWY_TARGET == HWY_SCALAR
// The one-lane baseline (only chosen on CPUs without SSSE3) widens to float32 and runs the scalar
// definition itself.
template <Input kIn> std::vector<float> widenAll(const void *x, size_t n)
{
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = loadScalar<kIn>(x, i);
    return v;
}

std::vector<float> widenAll(const void *x, Input in, size_t n)
{
    switch (in) {
    case Input::F32: return widenAll<Input::F32>(x, n);
    case Input::BF16: return widenAll<Input::BF16>(x, n);
    case Input::F16: return widenAll<Input::F16>(x, n);
    }
    return {};
}

void AccumulateUniform(
    const void *x, Input in, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &)
{
    const std::vector<float> v = widenAll(x, in, n);
    scalarAccumulateUniform(v.data(), n, scale, scaleInv, f, m);
}
float AmaxAbs(const void *x, Input in, size_t n)
{
    const std::vector<float> v = widenAll(x, in, n);
    return scalarAmax(v.data(), n);
}
void AccumulateRowBlocks(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &)
{
    const std::vector<float> v = widenAll(x, in, rowLen * rows);
    scalarAccumulateRowBlocks(v.data(), rowLen, rows, plan, m);
}
void AccumulateTiles(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const std::vector<float> v = widenAll(x, in, rowLen * rows);
    scratch.work.resize(2 * rowLen);
    scalarAccumulateTiles(v.data(), rowLen, rows, plan, m, scratch.work.data(), scratch.work.data() + rowLen);
}
void RowBlockStats(const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, const BlockStatsOut &out)
{
    const std::vector<float> v = widenAll(x, in, rowLen * rows);
    const size_t b = size_t(plan.blockCols);
    const size_t perRow = (rowLen + b - 1) / b;
    for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < rowLen; c += b) {
            const size_t len = std::min(b, rowLen - c);
            const float *p = v.data() + r * rowLen + c;
            const float amax = scalarAmax(p, len);
            scalarBlockStats(p, rowLen, 1, len, amax, blockScaleFor(amax, plan), plan.format, out, r * perRow + c / b);
        }
    }
}
double SumFloat(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; ++i)
        s += x[i];
    return s;
}
double SumBf16(const uint16_t *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; ++i)
        s += bitsFloat(uint32_t(x[i]) << 16);
    return s;
}
#else

using DF = hn::ScalableTag<float>;
using DU = hn::RebindToUnsigned<DF>;
using DI = hn::RebindToSigned<DF>;
using DH = hn::Half<DF>;
using DHI = hn::Half<DI>;
using DD = hn::Rebind<double, DH>;
using DI64 = hn::Rebind<int64_t, DH>;
using D16 = hn::Rebind<uint16_t, DF>;
using DF16 = hn::Rebind<hwy::float16_t, DF>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;
using VI = hn::Vec<DI>;
using VD = hn::Vec<DD>;

constexpr uint32_t kInfBits = 0x7F800000u;
constexpr size_t kPrefetchBytes = 2048;
constexpr uint32_t kAbsMask = 0x7FFFFFFFu;

// One vector of elements of any input type, as float32 (bfloat16 widens exactly by a shift).
template <Input kIn> HWY_INLINE VF loadVec(const void *x, size_t i)
{
    const DF df;
    if constexpr (kIn == Input::F32) {
        return hn::LoadU(df, static_cast<const float *>(x) + i);
    } else if constexpr (kIn == Input::BF16) {
        const DU du;
        const D16 d16;
        return hn::BitCast(
            df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, static_cast<const uint16_t *>(x) + i))));
    } else {
        const DF16 d16;
        const auto h = hn::LoadU(d16, reinterpret_cast<const hwy::float16_t *>(x) + i);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
        return hn::PromoteTo(df, h);
#else
        // Without F16C Highway converts in software and turns inf and NaN (exponent 31) into finite values
        // (65536, 98304, ...): give those lanes the float32 inf/NaN with the same sign and payload.
        const DU du;
        const VU b = hn::PromoteTo(du, hn::BitCast(D16(), h));
        const VU special = hn::Or(hn::Set(du, kInfBits),
            hn::Or(hn::ShiftLeft<16>(hn::And(b, hn::Set(du, 0x8000u))),
                hn::ShiftLeft<13>(hn::And(b, hn::Set(du, 0x3FFu)))));
        return hn::IfThenElse(hn::RebindMask(df, hn::Eq(hn::And(b, hn::Set(du, 0x7C00u)), hn::Set(du, 0x7C00u))),
            hn::BitCast(df, special), hn::PromoteTo(df, h));
#endif
    }
}

// Asks for the data kPrefetchBytes ahead of element i (the hardware prefetcher alone leaves the fused pass
// waiting on memory). Addresses past the end are harmless: a prefetch never faults.
template <Input kIn> HWY_INLINE void prefetchAhead(const void *x, size_t i)
{
    constexpr size_t size = kIn == Input::F32 ? 4 : 2;
    hwy::Prefetch(reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(x) + i * size + kPrefetchBytes));
}

// |v| bits of the finite lanes, 0 elsewhere (the operand of every amax).
HWY_INLINE VU finiteAbsBits(VF v)
{
    const DU du;
    const VU ab = hn::And(hn::BitCast(du, v), hn::Set(du, kAbsMask));
    return hn::IfThenElseZero(hn::Lt(ab, hn::Set(du, kInfBits)), ab);
}

// Running vector state of one kernel call, folded into MetricSums by flush(). In uniform mode dotXQ and
// sumQSq hold sums of x*q and q*q with q in the scaled domain; flush() multiplies in the decode scale.
struct Acc {
    VU zeros, nans, infs, zeroQ, saturated, scaledZero, scaledNan;
    VU amax, amin; // float32 bits of |x|
    VD sum, sumSq, sumCube, sumQuad, errSq, relErr, dotXQ, sumQSq;
    size_t numel = 0;

    Acc()
    {
        const DU du;
        const DD dd;
        zeros = nans = infs = zeroQ = saturated = scaledZero = scaledNan = hn::Zero(du);
        amax = hn::Zero(du);
        amin = hn::Set(du, kInfBits);
        sum = sumSq = sumCube = sumQuad = errSq = relErr = dotXQ = sumQSq = hn::Zero(dd);
    }
};

// What the element cast needs of the format, as vectors.
struct FormatConsts {
    VU maxBits; // float32 bits of the largest finite magnitude
    VF maxFinite;
    VU expAdd; // (23 - manBits) << 23
    VU magicMinBits; // float32 bits of 2^(minNormalExp + 23 - manBits)

    explicit FormatConsts(Format f)
    {
        const DF df;
        const DU du;
        const FormatSpec s = formatSpec(f);
        maxBits = hn::Set(du, floatBits(s.maxFinite));
        maxFinite = hn::Set(df, s.maxFinite);
        expAdd = hn::Set(du, uint32_t(23 - s.manBits) << 23);
        magicMinBits = hn::Set(du, uint32_t(s.minNormalExp + 23 - s.manBits + 127) << 23);
    }
};

HWY_INLINE uint64_t laneSum(VU v)
{
    const DU du;
    HWY_ALIGN uint32_t lanes[hn::MaxLanes(du)];
    hn::Store(v, du, lanes);
    uint64_t s = 0;
    for (size_t i = 0; i < hn::Lanes(du); ++i)
        s += lanes[i];
    return s;
}

HWY_INLINE double laneSum(VD v)
{
    const DD dd;
    return hn::GetLane(hn::SumOfLanes(dd, v));
}

// uniformScaleInv: the decode scale in uniform mode, 0 in block modes. Widens the scratch's row range to
// the binades of the finite non-zero inputs seen.
HWY_INLINE void flush(Acc &a, MetricSums &m, double uniformScaleInv, KernelScratch &scratch)
{
    const DU du;
    if (a.numel > 0) {
        const uint32_t lo = hn::GetLane(hn::MinOfLanes(du, a.amin)) >> 23;
        const uint32_t hi = hn::GetLane(hn::MaxOfLanes(du, a.amax)) >> 23;
        scratch.rowLo = std::min(scratch.rowLo, lo);
        scratch.rowHi = std::max(scratch.rowHi, hi);
    }
    m.numel += int64_t(a.numel);
    const int64_t zeros = int64_t(laneSum(a.zeros));
    const int64_t nans = int64_t(laneSum(a.nans));
    m.zeros += zeros;
    m.nans += nans;
    m.infs += int64_t(laneSum(a.infs));
    m.nonzeroQ += int64_t(a.numel) - int64_t(laneSum(a.zeroQ));
    m.saturated += int64_t(laneSum(a.saturated));
    const double amax = bitsFloat(hn::GetLane(hn::MaxOfLanes(du, a.amax)));
    const double amin = bitsFloat(hn::GetLane(hn::MinOfLanes(du, a.amin)));
    m.amax = std::max(m.amax, amax);
    m.aminNonzero = std::min(m.aminNonzero, amin);
    m.sum += laneSum(a.sum);
    m.sumSq += laneSum(a.sumSq);
    m.sumCube += laneSum(a.sumCube);
    m.sumQuad += laneSum(a.sumQuad);
    m.errSq += laneSum(a.errSq);
    m.relErr += laneSum(a.relErr);
    if (uniformScaleInv != 0.0) {
        m.dotXQ += laneSum(a.dotXQ) * uniformScaleInv;
        m.sumQSq += laneSum(a.sumQSq) * (uniformScaleInv * uniformScaleInv);
    } else {
        m.dotXQ += laneSum(a.dotXQ);
        m.sumQSq += laneSum(a.sumQSq);
    }
    // Zeros and NaN land in bins 0 and 255 of the joint histogram; they are not binned by definition.
    m.histIn[0] -= zeros;
    m.histIn[kHistBins - 1] -= nans;
    m.histScaled[0] -= int64_t(laneSum(a.scaledZero));
    m.histScaled[kHistBins - 1] -= int64_t(laneSum(a.scaledNan));
    a = Acc();
}

// c + 1 in the lanes of m (one masked add on AVX-512; mask to vector and subtract cost two operations).
HWY_INLINE VU count(VU c, hn::Mask<DU> m)
{
    const DU du;
    return hn::IfThenElse(m, hn::Add(c, hn::Set(du, 1u)), c);
}

// |q| as float32 bits: |x * scale| (bits sab) cast to the element format, round to nearest even. FP8/FP4
// saturate: clamp to the largest finite value first (NaN lanes end there too, non-zero as they should),
// then x + magic - magic with magic = 2^(e + 23 - manBits) for the binade e of the clamped value (the
// smallest normal's binade below it) rounds at the element's step, ties to even. BF16 rounds the float32
// bits at bit 16 and overflows to inf.
template <bool kBf16Fmt> HWY_INLINE VU quantizeAbs(VU sab, const FormatConsts &fc)
{
    const DF df;
    const DU du;
    if constexpr (kBf16Fmt) {
        const VU lsb = hn::And(hn::ShiftRight<16>(sab), hn::Set(du, 1u));
        return hn::And(hn::Add(hn::Add(sab, hn::Set(du, 0x7FFFu)), lsb), hn::Set(du, 0xFFFF0000u));
    } else {
        const VU s = hn::Min(sab, fc.maxBits);
        const VF magic
            = hn::BitCast(df, hn::Max(hn::Add(hn::And(s, hn::Set(du, kInfBits)), fc.expAdd), fc.magicMinBits));
        return hn::BitCast(du, hn::Sub(hn::Add(hn::BitCast(df, s), magic), magic));
    }
}

// One increment per element into the joint (input binade, scaled binade) table, a copy per lane.
HWY_INLINE void countJoint(VU ab, VU sab, uint32_t *joint)
{
    const DU du;
    const VU key = hn::OrAnd(
        hn::And(hn::ShiftRight<19>(sab), hn::Set(du, 0xFF0u)), hn::ShiftRight<11>(ab), hn::Set(du, 0xFF000u));
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    // AVX-512: every lane owns its copy of the key, so the lanes' addresses are distinct and one gather,
    // add and scatter count the whole vector (measured in cache: 1.5-2x faster than sixteen scalar
    // increments). A scatter completes before a later gather of the same counter reads it, as any store
    // before a load.
    const DI di;
    const VI index = hn::BitCast(di, hn::Add(key, hn::Iota(du, 0)));
    hn::ScatterIndex(hn::Add(hn::GatherIndex(du, joint, index), hn::Set(du, 1u)), du, joint, index);
#else
    HWY_ALIGN uint32_t keys[hn::MaxLanes(du)];
    hn::Store(key, du, keys);
    // Read the keys back through memory (load ports) rather than lane extracts (vector ports).
    asm volatile("" : : "r"(keys) : "memory");
    for (size_t i = 0; i < hn::Lanes(du); ++i)
        ++joint[keys[i] + i];
#endif
}

// |err| / |x|, 0 where x is 0 (its q is 0 too: 0 / the smallest normal double).
HWY_INLINE VD relativeError(VD err, VD x)
{
    const DD dd;
    return hn::Div(hn::Abs(err), hn::Max(hn::Abs(x), hn::Set(dd, 2.2250738585072014e-308)));
}

// The double-precision sums of one half vector of x and its quantized value q (scaled domain; decode
// scale si). q * si is exact in double.
template <bool kUniform> HWY_INLINE void momentsHalf(VD x, VD q, VD si, Acc &a)
{
    const VD sq = hn::Mul(x, x);
    a.sum = hn::Add(a.sum, x);
    a.sumSq = hn::Add(a.sumSq, sq);
    a.sumCube = hn::MulAdd(sq, x, a.sumCube);
    a.sumQuad = hn::MulAdd(sq, sq, a.sumQuad);
    if constexpr (kUniform) {
        const VD err = hn::NegMulAdd(q, si, x);
        a.errSq = hn::MulAdd(err, err, a.errSq);
        a.relErr = hn::Add(a.relErr, relativeError(err, x));
        a.dotXQ = hn::MulAdd(x, q, a.dotXQ);
        a.sumQSq = hn::MulAdd(q, q, a.sumQSq);
    } else {
        const VD dq = hn::Mul(q, si);
        const VD err = hn::Sub(x, dq);
        a.errSq = hn::MulAdd(err, err, a.errSq);
        a.relErr = hn::Add(a.relErr, relativeError(err, x));
        a.dotXQ = hn::MulAdd(x, dq, a.dotXQ);
        a.sumQSq = hn::MulAdd(dq, dq, a.sumQSq);
    }
}

template <bool kUniform> HWY_INLINE void moments(VF x, VF q, VD siLo, VD siHi, Acc &a)
{
    const DH dh;
    const DD dd;
    momentsHalf<kUniform>(hn::PromoteTo(dd, hn::LowerHalf(dh, x)), hn::PromoteTo(dd, hn::LowerHalf(dh, q)), siLo, a);
    momentsHalf<kUniform>(hn::PromoteTo(dd, hn::UpperHalf(dh, x)), hn::PromoteTo(dd, hn::UpperHalf(dh, q)), siHi, a);
}

// A vector with a zero, NaN or inf input or a value that scales to zero: every case under masks.
template <bool kBf16Fmt, bool kUniform>
HWY_NOINLINE void processRare(VF v, VF scaleV, VD siLo, VD siHi, const FormatConsts &fc, Acc &a, uint32_t *joint)
{
    const DF df;
    const DU du;
    const VU absMask = hn::Set(du, kAbsMask);
    const VU infBits = hn::Set(du, kInfBits);
    const VU zeroU = hn::Zero(du);
    const VU ab = hn::And(hn::BitCast(du, v), absMask);
    const VU sab = hn::And(hn::BitCast(du, hn::Mul(v, scaleV)), absMask);
    const auto finite = hn::Lt(ab, infBits);
    const auto isZero = hn::Eq(ab, zeroU);
    a.zeros = count(a.zeros, isZero);
    a.nans = count(a.nans, hn::Gt(ab, infBits));
    a.infs = count(a.infs, hn::Eq(ab, infBits));
    a.scaledZero = count(a.scaledZero, hn::Eq(sab, zeroU));
    a.scaledNan = count(a.scaledNan, hn::Gt(sab, infBits));
    a.amax = hn::Max(a.amax, hn::IfThenElseZero(finite, ab));
    a.amin = hn::Min(a.amin, hn::IfThenElse(hn::AndNot(isZero, finite), ab, infBits));
    // A float compare: NaN lanes are not saturated.
    a.saturated = count(a.saturated, hn::RebindMask(du, hn::Gt(hn::BitCast(df, sab), fc.maxFinite)));
    const VU qb = quantizeAbs<kBf16Fmt>(sab, fc);
    a.zeroQ = count(a.zeroQ, hn::Eq(qb, zeroU));
    countJoint(ab, sab, joint);
    const auto finiteF = hn::RebindMask(df, finite);
    const VF q = hn::CopySignToAbs(hn::BitCast(df, qb), v);
    moments<kUniform>(hn::IfThenElseZero(finiteF, v), hn::IfThenElseZero(finiteF, q), siLo, siHi, a);
    a.numel += hn::Lanes(df);
}

// One vector of elements, each scaled by its lane of scaleV, cast to the element format (round to
// nearest even, saturating), dequantized with the decode scale (double, low and high halves) and
// accumulated. Must agree with fp8math::accumulateElement lane by lane.
// `rare` takes the vectors of the rare path, so that `a` never leaves registers.
template <bool kBf16Fmt, bool kUniform>
HWY_INLINE void processVec(
    VF v, VF scaleV, VD siLo, VD siHi, const FormatConsts &fc, Acc &a, Acc &rare, uint32_t *joint)
{
    const DF df;
    const DU du;
    const VU absMask = hn::Set(du, kAbsMask);
    const VU ab = hn::And(hn::BitCast(du, v), absMask);
    const VU sab = hn::And(hn::BitCast(du, hn::Mul(v, scaleV)), absMask);
    // Zero, NaN and inf inputs and values that scale to zero are rare; min(|x|, |x*scale|) - 1 wraps
    // or reaches the inf bits exactly for them.
    const VU t = hn::Sub(hn::Min(ab, sab), hn::Set(du, 1u));
    if (HWY_UNLIKELY(!hn::AllFalse(du, hn::Gt(t, hn::Set(du, kInfBits - 2u))))) {
        processRare<kBf16Fmt, kUniform>(v, scaleV, siLo, siHi, fc, rare, joint);
        return;
    }
    // Block modes fold the block amaxes (the same finite maxima) into a.amax instead.
    if constexpr (kUniform)
        a.amax = hn::Max(a.amax, ab);
    a.amin = hn::Min(a.amin, ab);
    a.saturated = count(a.saturated, hn::RebindMask(du, hn::Gt(hn::BitCast(df, sab), fc.maxFinite)));
    const VU qb = quantizeAbs<kBf16Fmt>(sab, fc);
    a.zeroQ = count(a.zeroQ, hn::Eq(qb, hn::Zero(du)));
    countJoint(ab, sab, joint);
    moments<kUniform>(v, hn::CopySignToAbs(hn::BitCast(df, qb), v), siLo, siHi, a);
    a.numel += hn::Lanes(df);
}

template <Input kIn, bool kBf16Fmt>
void uniformImpl(const void *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch)
{
    const DF df;
    const DD dd;
    const FormatConsts fc(f);
    const size_t lanes = hn::Lanes(df);
    const VF scaleV = hn::Set(df, scale);
    const VD scaleInvD = hn::Set(dd, double(scaleInv));
    uint32_t *joint = scratch.joint.get();
    Acc a, rare;
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        prefetchAhead<kIn>(x, i);
        processVec<kBf16Fmt, true>(loadVec<kIn>(x, i), scaleV, scaleInvD, scaleInvD, fc, a, rare, joint);
    }
    scratch.pending += int64_t(i);
    flush(a, m, double(scaleInv), scratch);
    flush(rare, m, double(scaleInv), scratch);
    HWY_ALIGN float tail[hn::MaxLanes(df)];
    scalarAccumulateUniform(widen<kIn>(x, i, n - i, tail), n - i, scale, scaleInv, f, m);
}

template <Input kIn> float amaxImpl(const void *x, size_t n)
{
    const DF df;
    const DU du;
    const size_t lanes = hn::Lanes(df);
    VU amax = hn::Zero(du);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        prefetchAhead<kIn>(x, i);
        amax = hn::Max(amax, finiteAbsBits(loadVec<kIn>(x, i)));
    }
    const float r = lanes && n >= lanes ? bitsFloat(hn::GetLane(hn::MaxOfLanes(du, amax))) : 0.0f;
    HWY_ALIGN float tail[hn::MaxLanes(df)];
    const float t = scalarAmax(widen<kIn>(x, i, n - i, tail), n - i);
    return t > r ? t : r;
}

// The block scale rule evaluated on a vector of block amaxes at once, with the statistics of the decode
// scales. Agrees with fp8math::blockScaleFor lane by lane.
struct ScaleRule {
    BlockRule rule;
    float fmax;
    int emax; // MX OCP: unbiased exponent of the element's largest value
    float globalEncode; // NVFP4
    float globalDecode;
    const double *nvfp4Log2; // NVFP4: log2(decode) by the top 11 bits of the E4M3 value
    FormatConsts e4m3;

    ScaleRule(const QuantPlan &plan, const double *log2Table)
        : rule(plan.rule)
        , fmax(formatSpec(plan.format).maxFinite)
        , emax(int(floatBits(formatSpec(plan.format).maxFinite) >> 23) - 127)
        , globalEncode(plan.globalEncode)
        , globalDecode(1.0f / plan.globalEncode)
        , nvfp4Log2(log2Table)
        , e4m3(Format::E4M3)
    {
    }
};

struct BlockStats {
    VU zeroAmax;
    VF decMin, decMax;
    VD log2Lo, log2Hi;
    double log2Scalar = 0.0;
    int64_t blocks = 0;

    BlockStats()
    {
        const DF df;
        const DU du;
        const DD dd;
        zeroAmax = hn::Zero(du);
        decMin = hn::Set(df, bitsFloat(kInfBits));
        decMax = hn::Zero(df);
        log2Lo = log2Hi = hn::Zero(dd);
    }

    void flushInto(MetricSums &m)
    {
        const DF df;
        const DD dd;
        m.blocks += blocks;
        m.zeroAmaxBlocks += int64_t(laneSum(zeroAmax));
        m.scaleInvMin = std::min(m.scaleInvMin, double(hn::GetLane(hn::MinOfLanes(df, decMin))));
        m.scaleInvMax = std::max(m.scaleInvMax, double(hn::GetLane(hn::MaxOfLanes(df, decMax))));
        m.log2ScaleInvSum += hn::GetLane(hn::SumOfLanes(dd, hn::Add(log2Lo, log2Hi))) + log2Scalar;
        *this = BlockStats();
    }
};

// 2^k for the exponent field e (1..254) of a vector; 2^-127 for e == 0 (the E8M0 code 0).
HWY_INLINE VF e8m0Value(VU code)
{
    const DF df;
    const DU du;
    return hn::BitCast(
        df, hn::IfThenElse(hn::Eq(code, hn::Zero(du)), hn::Set(du, 0x00400000u), hn::ShiftLeft<23>(code)));
}

// Scales of `valid` blocks with amaxes `amax` (finite, >= 0; other lanes ignored).
HWY_INLINE void blockScales(VF amax, size_t valid, const ScaleRule &r, BlockStats &st, VF &enc, VF &dec)
{
    const DF df;
    const DU du;
    const DI di;
    const DH dh;
    const DHI dhi;
    const DD dd;
    const auto vm = hn::FirstN(df, valid);
    const auto positive = hn::Gt(amax, hn::Zero(df));
    bool log2IsExponent = true;
    switch (r.rule) {
    case BlockRule::AmaxExact:
    case BlockRule::AmaxPow2: {
        VF s = hn::Min(hn::Div(hn::Set(df, r.fmax), amax), hn::Set(df, kFloatMax));
        if (r.rule == BlockRule::AmaxPow2) {
            const VU sb = hn::BitCast(du, s);
            const VU floor = hn::And(sb, hn::Set(du, 0xFF800000u));
            s = hn::BitCast(df,
                hn::IfThenElse(
                    hn::Eq(hn::And(sb, hn::Set(du, kInfBits)), hn::Zero(du)), hn::Set(du, 0x00800000u), floor));
        } else {
            log2IsExponent = false;
        }
        enc = hn::IfThenElse(positive, s, hn::Set(df, 1.0f));
        dec = hn::Div(hn::Set(df, 1.0f), enc);
        break;
    }
    case BlockRule::MxTe: {
        const VU yb = hn::BitCast(du, hn::Mul(amax, hn::Set(df, 1.0f / r.fmax)));
        const VU exp = hn::ShiftRight<23>(yb);
        const VU man = hn::And(yb, hn::Set(du, 0x7FFFFFu));
        const VU up = hn::Sub(exp, hn::VecFromMask(du, hn::Ne(man, hn::Zero(du))));
        const VU sub = hn::IfThenElseZero(hn::Gt(man, hn::Set(du, 0x400000u)), hn::Set(du, 1u));
        const VU code = hn::Min(hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), sub, up), hn::Set(du, 0xFEu));
        enc = e8m0Value(hn::Sub(hn::Set(du, 0xFEu), code));
        dec = e8m0Value(code);
        break;
    }
    case BlockRule::MxOcp: {
        // floor(log2 amax) as a biased exponent; subnormal amaxes through a scaling by 2^64.
        const VU ab = hn::BitCast(du, amax);
        const VU big = hn::BitCast(du, hn::Mul(amax, hn::Set(df, 0x1p64f)));
        const auto subnormal = hn::Eq(hn::ShiftRight<23>(ab), hn::Zero(du));
        const VI e = hn::BitCast(
            di, hn::IfThenElse(subnormal, hn::Sub(hn::ShiftRight<23>(big), hn::Set(du, 64u)), hn::ShiftRight<23>(ab)));
        VI code = hn::Sub(e, hn::Set(di, r.emax));
        code = hn::Min(hn::Max(code, hn::Zero(di)), hn::Set(di, 0xFE));
        const VU c = hn::IfThenElseZero(hn::RebindMask(du, positive), hn::BitCast(du, code));
        enc = e8m0Value(hn::Sub(hn::Set(du, 0xFEu), c));
        dec = e8m0Value(c);
        break;
    }
    case BlockRule::Nvfp4: {
        log2IsExponent = false;
        const VF y = hn::Mul(hn::Mul(amax, hn::Set(df, 1.0f / 6.0f)), hn::Set(df, r.globalEncode));
        const VU qb = quantizeAbs<false>(hn::BitCast(du, y), r.e4m3);
        const VF d = hn::Mul(hn::BitCast(df, qb), hn::Set(df, r.globalDecode));
        const auto live = hn::Gt(d, hn::Zero(df));
        dec = hn::IfThenElseZero(live, d);
        enc = hn::IfThenElseZero(live, hn::Min(hn::Div(hn::Set(df, 1.0f), d), hn::Set(df, kFloatMax)));
        const VI idx = hn::BitCast(di, hn::ShiftRight<20>(qb));
        const VD lo = hn::GatherIndex(dd, r.nvfp4Log2, hn::PromoteTo(DI64(), hn::LowerHalf(dhi, idx)));
        const VD hi = hn::GatherIndex(dd, r.nvfp4Log2, hn::PromoteTo(DI64(), hn::UpperHalf(dhi, idx)));
        const VF m = hn::IfThenElseZero(vm, hn::Set(df, 1.0f));
        st.log2Lo = hn::MulAdd(lo, hn::PromoteTo(dd, hn::LowerHalf(dh, m)), st.log2Lo);
        st.log2Hi = hn::MulAdd(hi, hn::PromoteTo(dd, hn::UpperHalf(dh, m)), st.log2Hi);
        break;
    }
    }
    st.blocks += int64_t(valid);
    st.zeroAmax = count(st.zeroAmax, hn::RebindMask(du, hn::AndNot(positive, vm)));
    st.decMin = hn::Min(st.decMin, hn::IfThenElse(vm, dec, hn::Set(df, bitsFloat(kInfBits))));
    st.decMax = hn::Max(st.decMax, hn::IfThenElseZero(vm, dec));
    if (r.rule == BlockRule::Nvfp4)
        return;
    if (log2IsExponent) {
        // Powers of two: the exponent; the one subnormal (2^-127) through a scaling by 2^64.
        const VU db = hn::BitCast(du, dec);
        const auto subnormal = hn::Eq(hn::ShiftRight<23>(db), hn::Zero(du));
        const VU big = hn::BitCast(du, hn::Mul(dec, hn::Set(df, 0x1p64f)));
        const VI e = hn::Sub(hn::BitCast(di, hn::ShiftRight<23>(hn::IfThenElse(subnormal, big, db))),
            hn::IfThenElse(hn::RebindMask(di, subnormal), hn::Set(di, 127 + 64), hn::Set(di, 127)));
        const VI l = hn::IfThenElseZero(hn::RebindMask(di, hn::And(vm, hn::Gt(dec, hn::Zero(df)))), e);
        st.log2Lo = hn::Add(st.log2Lo, hn::PromoteTo(dd, hn::LowerHalf(dhi, l)));
        st.log2Hi = hn::Add(st.log2Hi, hn::PromoteTo(dd, hn::UpperHalf(dhi, l)));
    } else {
        HWY_ALIGN float d[hn::MaxLanes(df)];
        hn::Store(dec, df, d);
        for (size_t i = 0; i < valid; ++i) {
            if (d[i] > 0.0f)
                st.log2Scalar += MetricSums::exactLog2(d[i]);
        }
    }
}

// The NVFP4 log2 table for the plan's global scale, built once per scale.
const double *nvfp4Table(const QuantPlan &plan, KernelScratch &s)
{
    if (plan.rule != BlockRule::Nvfp4)
        return nullptr;
    if (s.nvfp4Global != plan.globalEncode) {
        s.nvfp4Global = plan.globalEncode;
        s.nvfp4Log2.assign(KernelScratch::kNvfp4Log2Size, 0.0);
        const float globalDecode = 1.0f / plan.globalEncode;
        for (uint32_t code = 0; code < 0x7F; ++code) {
            const float value = decodeCode(code, Format::E4M3);
            const float decode = value * globalDecode;
            s.nvfp4Log2[floatBits(value) >> 20] = decode > 0.0f ? MetricSums::exactLog2(decode) : 0.0;
        }
    }
    return s.nvfp4Log2.data();
}

// Amaxes of a vector's worth of consecutive blocks of b elements (b a multiple of the lane count) from
// `first`, as one vector (lane j: block j); lanes at or beyond `count` are 0. Each block's lanes reduce to
// one vector, then pairs of vectors fold into one (even and odd lanes) until one is left: L - 1 folds in
// all instead of a horizontal reduction per block.
template <Input kIn> HWY_INLINE VF groupAmax(const void *x, size_t first, size_t b, size_t count)
{
    const DF df;
    const DU du;
    const size_t lanes = hn::Lanes(du);
    VU part[hn::MaxLanes(du)];
    for (size_t j = 0; j < lanes; ++j) {
        VU am = hn::Zero(du);
        for (size_t k = 0; j < count && k < b; k += lanes) {
            prefetchAhead<kIn>(x, first + j * b + k);
            am = hn::Max(am, finiteAbsBits(loadVec<kIn>(x, first + j * b + k)));
        }
        part[j] = am;
    }
    for (size_t w = lanes; w > 1; w /= 2) {
        for (size_t j = 0; j < w / 2; ++j)
            part[j] = hn::Max(
                hn::ConcatEven(du, part[2 * j + 1], part[2 * j]), hn::ConcatOdd(du, part[2 * j + 1], part[2 * j]));
    }
    return hn::BitCast(df, part[0]);
}

// groupAmax for bfloat16 and float16 blocks of b elements, b a multiple of twice the lane count: |x| of
// finite 16-bit values orders like its bits, so the maxima are taken on the 16-bit patterns, two vectors'
// worth of elements per operation, and widened to float32 at the end.
template <Input kIn> HWY_INLINE VF groupAmax16(const void *x, size_t first, size_t b, size_t count)
{
    const DF df;
    const DU du;
    const hn::Repartition<uint16_t, DU> dw;
    const size_t lanes = hn::Lanes(du);
    const auto *src = static_cast<const uint16_t *>(x);
    const auto absMask = hn::Set(dw, uint16_t(0x7FFF));
    const auto infBits = hn::Set(dw, uint16_t(kIn == Input::BF16 ? 0x7F80 : 0x7C00));
    VU part[hn::MaxLanes(du)];
    for (size_t j = 0; j < lanes; ++j) {
        auto am = hn::Zero(dw);
        for (size_t k = 0; j < count && k < b; k += 2 * lanes) {
            prefetchAhead<kIn>(x, first + j * b + k);
            const auto ab = hn::And(hn::LoadU(dw, src + first + j * b + k), absMask);
            am = hn::IfThenElse(hn::Lt(ab, infBits), hn::Max(am, ab), am);
        }
        // The two 16-bit maxima of each 32-bit lane.
        const VU w = hn::BitCast(du, am);
        part[j] = hn::Max(hn::And(w, hn::Set(du, 0xFFFFu)), hn::ShiftRight<16>(w));
    }
    for (size_t w = lanes; w > 1; w /= 2) {
        for (size_t j = 0; j < w / 2; ++j)
            part[j] = hn::Max(
                hn::ConcatEven(du, part[2 * j + 1], part[2 * j]), hn::ConcatOdd(du, part[2 * j + 1], part[2 * j]));
    }
    if constexpr (kIn == Input::BF16)
        return hn::BitCast(df, hn::ShiftLeft<16>(part[0]));
    else
        return hn::PromoteTo(df, hn::BitCast(DF16(), hn::DemoteTo(D16(), hn::BitCast(DI(), part[0]))));
}

// The amaxes of a vector's worth of blocks of b elements: on the 16-bit patterns where a block holds whole
// pairs of vectors of bfloat16 or float16, else widened.
template <Input kIn> HWY_INLINE VF blockGroupAmax(const void *x, size_t first, size_t b, size_t count)
{
    if constexpr (kIn == Input::F32)
        return groupAmax<kIn>(x, first, b, count);
    else
        return b % (2 * hn::Lanes(DF())) == 0 ? groupAmax16<kIn>(x, first, b, count)
                                              : groupAmax<kIn>(x, first, b, count);
}

// One block through the scalar definition (short blocks at the end of a row).
template <Input kIn>
void scalarBlock(const void *x, size_t i, size_t len, const QuantPlan &plan, MetricSums &m, float *buffer)
{
    const float *v = widen<kIn>(x, i, len, buffer);
    const float amax = scalarAmax(v, len);
    const BlockScale bs = blockScaleFor(amax, plan);
    m.addBlock(amax, bs.decode);
    scalarAccumulateUniform(v, len, bs.encode, bs.decode, plan.format, m);
}

// Row blocks, a vector of blocks at a time: their amaxes, then their scales as one vector, then their
// elements (still in L1).
template <Input kIn, bool kBf16Fmt>
void rowBlocksImpl(
    const void *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const DF df;
    const DD dd;
    const size_t lanes = hn::Lanes(df);
    const size_t b = size_t(plan.blockCols);
    scratch.work.resize(b);
    if (b % lanes != 0) {
        for (size_t r = 0; r < rows; ++r) {
            for (size_t c = 0; c < rowLen; c += b)
                scalarBlock<kIn>(x, r * rowLen + c, std::min(b, rowLen - c), plan, m, scratch.work.data());
        }
        return;
    }
    const FormatConsts fc(plan.format);
    const ScaleRule rule(plan, nvfp4Table(plan, scratch));
    uint32_t *joint = scratch.joint.get();
    HWY_ALIGN float enc[hn::MaxLanes(df)];
    HWY_ALIGN double dec[hn::MaxLanes(df)];
    Acc a, rare;
    BlockStats st;
    size_t counted = 0;
    for (size_t r = 0; r < rows; ++r) {
        const size_t row = r * rowLen;
        const size_t full = rowLen / b;
        for (size_t g = 0; g < full; g += lanes) {
            const size_t ng = std::min(lanes, full - g);
            VF e, d;
            const VF amax = blockGroupAmax<kIn>(x, row + g * b, b, ng);
            blockScales(amax, ng, rule, st, e, d);
            a.amax = hn::Max(a.amax, hn::BitCast(DU(), amax));
            hn::Store(e, df, enc);
            // Decode scales stored in double, so that each block's broadcast is one load.
            hn::Store(hn::PromoteTo(dd, hn::LowerHalf(DH(), d)), dd, dec);
            hn::Store(hn::PromoteTo(dd, hn::UpperHalf(DH(), d)), dd, dec + lanes / 2);
            for (size_t j = 0; j < ng; ++j) {
                const size_t first = row + (g + j) * b;
                const VF scaleV = hn::Set(df, enc[j]);
                const VD si = hn::Set(dd, dec[j]);
                for (size_t k = 0; k < b; k += lanes)
                    processVec<kBf16Fmt, false>(loadVec<kIn>(x, first + k), scaleV, si, si, fc, a, rare, joint);
            }
            counted += ng * b;
        }
        if (full * b < rowLen)
            scalarBlock<kIn>(x, row + full * b, rowLen - full * b, plan, m, scratch.work.data());
    }
    scratch.pending += int64_t(counted);
    flush(a, m, 0.0, scratch);
    flush(rare, m, 0.0, scratch);
    st.flushInto(m);
}

// Tiles of blockRows x blockCols: for each band of blockRows rows, strips of whole tiles of about
// kStripBytes (at least 64 columns), so that the second read of a strip finds it in L1: column amaxes read
// row by row, tile scales (a vector of tiles at a time), then the elements. (Measured in cache against
// strips of 256 columns: 32x1 tiles of bfloat16 +35 %, 128x128 tiles unchanged; 128 KiB strips were slower.)
constexpr size_t kStripBytes = size_t(32) << 10;

template <Input kIn, bool kBf16Fmt>
void tilesImpl(const void *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const DF df;
    const DD dd;
    const FormatConsts fc(plan.format);
    const ScaleRule rule(plan, nvfp4Table(plan, scratch));
    const size_t lanes = hn::Lanes(df);
    const size_t br = size_t(plan.blockRows);
    const size_t bc = size_t(plan.blockCols);
    const size_t stripColumns = std::max<size_t>(kStripBytes / (br * (kIn == Input::F32 ? 4 : 2)), 64);
    const size_t width = bc >= stripColumns ? bc : bc * (stripColumns / bc);
    const size_t tilesPerStrip = width / bc;
    const size_t tilePad = (tilesPerStrip + lanes - 1) / lanes * lanes;
    scratch.work.resize(2 * width + 3 * tilePad);
    float *colAmax = scratch.work.data();
    float *colScale = colAmax + width;
    float *tileAmax = colScale + width;
    float *tileEnc = tileAmax + tilePad;
    float *tileDec = tileEnc + tilePad;
    scratch.workDouble.resize(width);
    double *colScaleInvD = scratch.workDouble.data();
    uint32_t *joint = scratch.joint.get();
    Acc a, rare;
    BlockStats st;
    size_t counted = 0;
    for (size_t r0 = 0; r0 < rows; r0 += br) {
        const size_t nr = std::min(br, rows - r0);
        for (size_t c0 = 0; c0 < rowLen; c0 += width) {
            const size_t nc = std::min(width, rowLen - c0);
            // Column amaxes row by row, so that every read streams along a row.
            std::fill(colAmax, colAmax + nc, 0.0f);
            const DU du;
            for (size_t r = r0; r < r0 + nr; ++r) {
                const size_t row = r * rowLen + c0;
                size_t c = 0;
                for (; c + lanes <= nc; c += lanes) {
                    prefetchAhead<kIn>(x, row + c);
                    const VU am
                        = hn::Max(hn::BitCast(du, hn::LoadU(df, colAmax + c)), finiteAbsBits(loadVec<kIn>(x, row + c)));
                    hn::StoreU(hn::BitCast(df, am), df, colAmax + c);
                }
                for (; c < nc; ++c) {
                    const float v = loadScalar<kIn>(x, row + c);
                    colAmax[c] = std::max(colAmax[c], scalarAmax(&v, 1));
                }
            }
            const size_t nt = (nc + bc - 1) / bc;
            if (bc == 1) {
                std::copy(colAmax, colAmax + nt, tileAmax);
                std::fill(tileAmax + nt, tileAmax + tilePad, 0.0f);
            } else {
                for (size_t t = 0; t < tilePad; ++t)
                    tileAmax[t]
                        = t < nt ? *std::max_element(colAmax + t * bc, colAmax + std::min(nc, (t + 1) * bc)) : 0.0f;
            }
            for (size_t t = 0; t < nt; t += lanes) {
                VF e, d;
                const VF amax = hn::LoadU(df, tileAmax + t);
                blockScales(amax, std::min(lanes, nt - t), rule, st, e, d);
                a.amax = hn::Max(a.amax, hn::BitCast(DU(), amax));
                hn::StoreU(e, df, tileEnc + t);
                hn::StoreU(d, df, tileDec + t);
            }
            for (size_t t = 0; t < nt; ++t) {
                const size_t end = std::min(nc, (t + 1) * bc);
                std::fill(colScale + t * bc, colScale + end, tileEnc[t]);
                std::fill(colScaleInvD + t * bc, colScaleInvD + end, double(tileDec[t]));
            }
            for (size_t r = r0; r < r0 + nr; ++r) {
                const size_t row = r * rowLen + c0;
                size_t k = 0;
                if (bc % lanes == 0) {
                    // Whole vectors per tile: the tile's scales as broadcasts.
                    for (size_t t = 0; t * bc + lanes <= nc; ++t) {
                        const VF scaleV = hn::Set(df, tileEnc[t]);
                        const VD si = hn::Set(dd, double(tileDec[t]));
                        for (k = t * bc; k < (t + 1) * bc && k + lanes <= nc; k += lanes)
                            processVec<kBf16Fmt, false>(loadVec<kIn>(x, row + k), scaleV, si, si, fc, a, rare, joint);
                    }
                } else {
                    for (; k + lanes <= nc; k += lanes) {
                        processVec<kBf16Fmt, false>(loadVec<kIn>(x, row + k), hn::LoadU(df, colScale + k),
                            hn::LoadU(dd, colScaleInvD + k), hn::LoadU(dd, colScaleInvD + k + lanes / 2), fc, a, rare,
                            joint);
                    }
                }
                counted += k;
                for (; k < nc; ++k)
                    accumulateElement(loadScalar<kIn>(x, row + k), colScale[k], float(colScaleInvD[k]), plan.format, m);
            }
        }
    }
    scratch.pending += int64_t(counted);
    flush(a, m, 0.0, scratch);
    flush(rare, m, 0.0, scratch);
    st.flushInto(m);
}

// Per-block statistics of row blocks (the block map): a vector of blocks at a time, their amaxes and
// scales as in rowBlocksImpl, then each block's counts and relative errors in lanes, folded so that lane j
// holds block j's sums (one fold per halving instead of a horizontal sum per block and statistic).
template <Input kIn, bool kBf16Fmt>
void rowBlockStatsImpl(const void *x, size_t rowLen, size_t rows, const QuantPlan &plan, const BlockStatsOut &out)
{
    const DF df;
    const DU du;
    const size_t lanes = hn::Lanes(df);
    const size_t b = size_t(plan.blockCols);
    const size_t perRow = (rowLen + b - 1) / b;
    std::vector<float> buffer(b);
    const auto scalarBlock = [&](size_t r, size_t c) {
        const float *p = widen<kIn>(x, r * rowLen + c, std::min(b, rowLen - c), buffer.data());
        const size_t len = std::min(b, rowLen - c);
        const float amax = scalarAmax(p, len);
        scalarBlockStats(p, len, 1, len, amax, blockScaleFor(amax, plan), plan.format, out, r * perRow + c / b);
    };
    if (b % lanes != 0) {
        for (size_t r = 0; r < rows; ++r) {
            for (size_t c = 0; c < rowLen; c += b)
                scalarBlock(r, c);
        }
        return;
    }
    const FormatConsts fc(plan.format);
    // blockScales gathers NVFP4's log2 table for statistics the map does not keep: zeros serve.
    const std::vector<double> log2Table(plan.rule == BlockRule::Nvfp4 ? KernelScratch::kNvfp4Log2Size : 0, 0.0);
    const ScaleRule rule(plan, log2Table.empty() ? nullptr : log2Table.data());
    const VU absMask = hn::Set(du, kAbsMask);
    const VU infBits = hn::Set(du, kInfBits);
    HWY_ALIGN float enc[hn::MaxLanes(df)];
    HWY_ALIGN float dec[hn::MaxLanes(df)];
    HWY_ALIGN float am[hn::MaxLanes(df)];
    HWY_ALIGN uint32_t lanesOut[hn::MaxLanes(du)];
    VU nz[hn::MaxLanes(du)], lo[hn::MaxLanes(du)], sat[hn::MaxLanes(du)];
    VF rel[hn::MaxLanes(df)];
    const auto foldU = [&](VU *part) {
        for (size_t w = lanes; w > 1; w /= 2) {
            for (size_t j = 0; j < w / 2; ++j)
                part[j] = hn::Add(
                    hn::ConcatEven(du, part[2 * j + 1], part[2 * j]), hn::ConcatOdd(du, part[2 * j + 1], part[2 * j]));
        }
        return part[0];
    };
    const auto foldF = [&](VF *part) {
        for (size_t w = lanes; w > 1; w /= 2) {
            for (size_t j = 0; j < w / 2; ++j)
                part[j] = hn::Add(
                    hn::ConcatEven(df, part[2 * j + 1], part[2 * j]), hn::ConcatOdd(df, part[2 * j + 1], part[2 * j]));
        }
        return part[0];
    };
    for (size_t r = 0; r < rows; ++r) {
        const size_t row = r * rowLen;
        const size_t full = rowLen / b;
        for (size_t g = 0; g < full; g += lanes) {
            const size_t ng = std::min(lanes, full - g);
            BlockStats st;
            VF e, d;
            const VF amax = blockGroupAmax<kIn>(x, row + g * b, b, ng);
            blockScales(amax, ng, rule, st, e, d);
            hn::Store(e, df, enc);
            hn::Store(d, df, dec);
            hn::Store(amax, df, am);
            for (size_t j = 0; j < lanes; ++j) {
                nz[j] = lo[j] = sat[j] = hn::Zero(du);
                rel[j] = hn::Zero(df);
                if (j >= ng)
                    continue;
                const size_t first = row + (g + j) * b;
                const VF scaleV = hn::Set(df, enc[j]);
                const VF decV = hn::Set(df, dec[j]);
                for (size_t k = 0; k < b; k += lanes) {
                    const VF v = loadVec<kIn>(x, first + k);
                    const VU ab = hn::And(hn::BitCast(du, v), absMask);
                    const VU sab = hn::And(hn::BitCast(du, hn::Mul(v, scaleV)), absMask);
                    const auto live = hn::And(hn::Lt(ab, infBits), hn::Ne(ab, hn::Zero(du)));
                    sat[j] = count(sat[j], hn::RebindMask(du, hn::Gt(hn::BitCast(df, sab), fc.maxFinite)));
                    const VU qb = quantizeAbs<kBf16Fmt>(sab, fc);
                    nz[j] = count(nz[j], live);
                    lo[j] = count(lo[j], hn::And(live, hn::Eq(qb, hn::Zero(du))));
                    const VF axf = hn::BitCast(df, ab);
                    const VF err = hn::Abs(hn::NegMulAdd(hn::BitCast(df, qb), decV, axf));
                    const VF safe = hn::IfThenElse(hn::RebindMask(df, live), axf, hn::Set(df, 1.0f));
                    rel[j] = hn::Add(rel[j], hn::IfThenElseZero(hn::RebindMask(df, live), hn::Div(err, safe)));
                }
            }
            const size_t base = r * perRow + g;
            const auto store = [&](VU v, uint32_t *to) {
                hn::Store(v, du, lanesOut);
                std::copy(lanesOut, lanesOut + ng, to + base);
            };
            store(foldU(nz), out.nonzero);
            store(foldU(lo), out.lost);
            store(foldU(sat), out.saturated);
            HWY_ALIGN float relOut[hn::MaxLanes(df)];
            hn::Store(foldF(rel), df, relOut);
            std::copy(relOut, relOut + ng, out.relErr + base);
            std::copy(dec, dec + ng, out.decode + base);
            std::copy(am, am + ng, out.amax + base);
        }
        if (full * b < rowLen)
            scalarBlock(r, full * b);
    }
}

// Calls kernel.template operator()<kIn, kBf16Fmt>() for the input type and whether the element format is BF16
// (the kernels are instantiated for the six combinations).
template <class Kernel> void dispatch(Input in, Format f, Kernel &&kernel)
{
    const auto withFormat = [&]<Input kIn>() {
        if (f == Format::BF16)
            kernel.template operator()<kIn, true>();
        else
            kernel.template operator()<kIn, false>();
    };
    switch (in) {
    case Input::F32: withFormat.template operator()<Input::F32>(); break;
    case Input::BF16: withFormat.template operator()<Input::BF16>(); break;
    case Input::F16: withFormat.template operator()<Input::F16>(); break;
    }
}

void AccumulateUniform(
    const void *x, Input in, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch)
{
    dispatch(
        in, f, [&]<Input kIn, bool kBf16Fmt>() { uniformImpl<kIn, kBf16Fmt>(x, n, scale, scaleInv, f, m, scratch); });
}

float AmaxAbs(const void *x, Input in, size_t n)
{
    switch (in) {
    case Input::F32: return amaxImpl<Input::F32>(x, n);
    case Input::BF16: return amaxImpl<Input::BF16>(x, n);
    case Input::F16: return amaxImpl<Input::F16>(x, n);
    }
    return 0.0f;
}

void AccumulateRowBlocks(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    dispatch(in, plan.format,
        [&]<Input kIn, bool kBf16Fmt>() { rowBlocksImpl<kIn, kBf16Fmt>(x, rowLen, rows, plan, m, scratch); });
}

void AccumulateTiles(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    dispatch(in, plan.format,
        [&]<Input kIn, bool kBf16Fmt>() { tilesImpl<kIn, kBf16Fmt>(x, rowLen, rows, plan, m, scratch); });
}

void RowBlockStats(const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, const BlockStatsOut &out)
{
    dispatch(in, plan.format,
        [&]<Input kIn, bool kBf16Fmt>() { rowBlockStatsImpl<kIn, kBf16Fmt>(x, rowLen, rows, plan, out); });
}

double SumFloat(const float *x, size_t n)
{
    const DF df;
    const DH dh;
    const DD dd;
    const size_t lanes = hn::Lanes(df);
    VD s0 = hn::Zero(dd), s1 = hn::Zero(dd);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const VF v = hn::LoadU(df, x + i);
        s0 = hn::Add(s0, hn::PromoteTo(dd, hn::LowerHalf(dh, v)));
        s1 = hn::Add(s1, hn::PromoteTo(dd, hn::UpperHalf(dh, v)));
    }
    double s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(s0, s1)));
    for (; i < n; ++i)
        s += x[i];
    return s;
}

double SumBf16(const uint16_t *x, size_t n)
{
    const DF df;
    const DH dh;
    const DD dd;
    const size_t lanes = hn::Lanes(df);
    VD s0 = hn::Zero(dd), s1 = hn::Zero(dd);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const VF v = loadVec<Input::BF16>(x, i);
        s0 = hn::Add(s0, hn::PromoteTo(dd, hn::LowerHalf(dh, v)));
        s1 = hn::Add(s1, hn::PromoteTo(dd, hn::UpperHalf(dh, v)));
    }
    double s = hn::GetLane(hn::SumOfLanes(dd, hn::Add(s0, s1)));
    for (; i < n; ++i)
        s += bitsFloat(uint32_t(x[i]) << 16);
    return s;
}

#endif // HWY_TARGET == HWY_SCALAR

const char *SimdTarget()
{
    return hwy::TargetName(HWY_TARGET);
}

#else

// Defined by the translation unit that compiles this target.
void AccumulateUniform(
    const void *x, Input in, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch);
float AmaxAbs(const void *x, Input in, size_t n);
void AccumulateRowBlocks(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch);
void AccumulateTiles(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch);
void RowBlockStats(
    const void *x, Input in, size_t rowLen, size_t rows, const QuantPlan &plan, const fp8math::BlockStatsOut &out);
double SumFloat(const float *x, size_t n);
double SumBf16(const uint16_t *x, size_t n);
const char *SimdTarget();

#endif // HWY_TARGET & FP8SCOPE_KERNEL_TARGETS

} // namespace fp8scope::cpukernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif // FP8SCOPE_CPUKERNELS_INL_H_
