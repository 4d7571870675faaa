// Highway compiles this file once per SIMD target and dispatches at run time; see cpukernels.h.
// Sizeless SVE/RVV vectors cannot live in the accumulator struct; fixed-width targets only.
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128 | HWY_RVV)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/numerics/cpukernels.cpp"
#include <hwy/foreach_target.h> // IWYU pragma: keep

#include <hwy/highway.h>

#include "core/numerics/cpukernels.h"
#include "core/numerics/scalarkernels.h"

#include <algorithm>
#include <cstring>
#include <memory>

HWY_BEFORE_NAMESPACE();
namespace fp8scope::cpukernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace fp8scope::fp8math;

#if HWY_TARGET == HWY_SCALAR
// The one-lane baseline (only chosen on CPUs without SSSE3) runs the scalar definition itself.
void AccumulateUniform(const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m)
{
    scalarAccumulateUniform(x, n, scale, scaleInv, f, m);
}
float AmaxAbs(const float *x, size_t n)
{
    return scalarAmax(x, n);
}
void AccumulateRowBlocks(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m)
{
    scalarAccumulateRowBlocks(x, rowLen, rows, plan, m);
}
void AccumulateTiles(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, float *scratch)
{
    scalarAccumulateTiles(x, rowLen, rows, plan, m, scratch, scratch + rowLen);
}
void Bf16ToFloat(const uint16_t *src, size_t n, float *dst)
{
    for (size_t i = 0; i < n; ++i)
        dst[i] = bitsFloat(uint32_t(src[i]) << 16);
}
void F16ToFloat(const uint16_t *src, size_t n, float *dst)
{
    for (size_t i = 0; i < n; ++i)
        dst[i] = halfToFloat(src[i]);
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
using DD = hn::Rebind<double, DH>;
using VF = hn::Vec<DF>;
using VU = hn::Vec<DU>;
using VD = hn::Vec<DD>;

constexpr uint32_t kInfBits = 0x7F800000u;

// Running vector state of one kernel call, folded into MetricSums once at the end.
struct Acc {
    VU zeros, nans, infs, nonzeroQ, saturated, scaledZero, scaledNan;
    VF amax, amin;
    VD sum, sumSq, sumCube, sumQuad, errSq, dotXQ, sumQSq;
    // Four interleaved copies so that runs of equal bins do not serialise on one counter.
    uint32_t histIn[4][kHistBins];
    uint32_t histScaled[4][kHistBins];
    size_t numel = 0;

    Acc()
    {
        const DF df;
        const DU du;
        const DD dd;
        zeros = nans = infs = nonzeroQ = saturated = scaledZero = scaledNan = hn::Zero(du);
        amax = hn::Zero(df);
        amin = hn::Set(df, bitsFloat(kInfBits));
        sum = sumSq = sumCube = sumQuad = errSq = dotXQ = sumQSq = hn::Zero(dd);
        std::memset(histIn, 0, sizeof histIn);
        std::memset(histScaled, 0, sizeof histScaled);
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

HWY_INLINE void flush(Acc &a, MetricSums &m)
{
    const DF df;
    m.numel += int64_t(a.numel);
    const int64_t zeros = int64_t(laneSum(a.zeros));
    const int64_t nans = int64_t(laneSum(a.nans));
    m.zeros += zeros;
    m.nans += nans;
    m.infs += int64_t(laneSum(a.infs));
    m.nonzeroQ += int64_t(laneSum(a.nonzeroQ));
    m.saturated += int64_t(laneSum(a.saturated));
    const double amax = hn::GetLane(hn::MaxOfLanes(df, a.amax));
    const double amin = hn::GetLane(hn::MinOfLanes(df, a.amin));
    m.amax = std::max(m.amax, amax);
    m.aminNonzero = std::min(m.aminNonzero, amin);
    m.sum += laneSum(a.sum);
    m.sumSq += laneSum(a.sumSq);
    m.sumCube += laneSum(a.sumCube);
    m.sumQuad += laneSum(a.sumQuad);
    m.errSq += laneSum(a.errSq);
    m.dotXQ += laneSum(a.dotXQ);
    m.sumQSq += laneSum(a.sumQSq);
    for (int b = 0; b < kHistBins; ++b) {
        m.histIn[b] += int64_t(a.histIn[0][b]) + a.histIn[1][b] + a.histIn[2][b] + a.histIn[3][b];
        m.histScaled[b] += int64_t(a.histScaled[0][b]) + a.histScaled[1][b] + a.histScaled[2][b] + a.histScaled[3][b];
    }
    // Zeros and NaN landed in bins 0 and 255 of the vector histograms; they are not binned by definition.
    m.histIn[0] -= zeros;
    m.histIn[kHistBins - 1] -= nans;
    m.histScaled[0] -= int64_t(laneSum(a.scaledZero));
    m.histScaled[kHistBins - 1] -= int64_t(laneSum(a.scaledNan));
    a = Acc();
}

HWY_INLINE VU count(VU c, hn::Mask<DU> m)
{
    const DU du;
    return hn::Sub(c, hn::VecFromMask(du, m));
}

// Rounds |scaled| (bits in `sab`) to the code magnitude of a sign-magnitude minifloat; see
// fp8math::roundMagnitude, of which this is the lane-wise copy.
HWY_INLINE VU roundMagnitudeV(VU sab, const FormatSpec &s)
{
    const DU du;
    const DI di;
    const VU exp32 = hn::ShiftRight<23>(sab);
    const VU man = hn::And(sab, hn::Set(du, 0x7FFFFFu));
    const auto e = hn::Sub(hn::BitCast(di, hn::Max(exp32, hn::Set(du, 1u))), hn::Set(di, 127));
    const auto normal = hn::RebindMask(du, hn::Gt(e, hn::Set(di, s.minNormalExp - 1)));
    const VU fullNormal = hn::Or(hn::ShiftLeft<23>(hn::BitCast(du, hn::Sub(e, hn::Set(di, s.minNormalExp - 1)))), man);
    const VU sig = hn::IfThenElse(hn::Eq(exp32, hn::Zero(du)), man, hn::Or(man, hn::Set(du, 0x800000u)));
    const VU full = hn::IfThenElse(normal, fullNormal, sig);
    const auto subShift = hn::Min(hn::Sub(hn::Set(di, 23 - s.manBits + s.minNormalExp), e), hn::Set(di, 31));
    const VU shift = hn::IfThenElse(normal, hn::Set(du, uint32_t(23 - s.manBits)), hn::BitCast(du, subShift));
    const VU one = hn::Set(du, 1u);
    const VU q = hn::operator>>(full, shift);
    const VU rem = hn::And(full, hn::Sub(hn::operator<<(one, shift), one));
    const VU half = hn::operator<<(one, hn::Sub(shift, one));
    const auto up = hn::Or(hn::Gt(rem, half), hn::And(hn::Eq(rem, half), hn::Eq(hn::And(q, one), one)));
    const VU mag = hn::Sub(q, hn::VecFromMask(du, up));
    return hn::Min(mag, hn::Set(du, s.maxCode));
}

// Magnitude of the decoded value for a code magnitude.
HWY_INLINE VF decodeMagnitudeV(VU mag, const FormatSpec &s)
{
    const DF df;
    const DU du;
    const DI di;
    const auto sub = hn::Lt(mag, hn::Set(du, 1u << s.manBits));
    const VF subValue = hn::Mul(hn::ConvertTo(df, hn::BitCast(di, mag)),
        hn::Set(df, bitsFloat(uint32_t(s.minNormalExp - s.manBits + 127) << 23)));
    const uint32_t offset = uint32_t(s.minNormalExp - 1 + 127) << s.manBits;
    const VU normalBits = hn::operator<<(hn::Add(mag, hn::Set(du, offset)), hn::Set(du, uint32_t(23 - s.manBits)));
    return hn::IfThenElse(hn::RebindMask(df, sub), subValue, hn::BitCast(df, normalBits));
}

template <bool kBf16>
HWY_INLINE void processVec(VF v, VF scaleV, VD scaleInvLo, VD scaleInvHi, const FormatSpec &s, Acc &a)
{
    const DF df;
    const DU du;
    const DH dh;
    const DD dd;
    const VU signMask = hn::Set(du, 0x80000000u);
    const VU absMask = hn::Set(du, 0x7FFFFFFFu);
    const VU infBits = hn::Set(du, kInfBits);

    const VU ab = hn::And(hn::BitCast(du, v), absMask);
    const auto isZero = hn::Eq(ab, hn::Zero(du));
    const auto isNan = hn::Gt(ab, infBits);
    const auto finite = hn::Lt(ab, infBits);
    a.zeros = count(a.zeros, isZero);
    a.nans = count(a.nans, isNan);
    a.infs = count(a.infs, hn::Eq(ab, infBits));

    const VF absV = hn::BitCast(df, ab);
    const auto finiteF = hn::RebindMask(df, finite);
    a.amax = hn::Max(a.amax, hn::IfThenElseZero(finiteF, absV));
    a.amin = hn::Min(
        a.amin, hn::IfThenElse(hn::RebindMask(df, hn::AndNot(isZero, finite)), absV, hn::Set(df, bitsFloat(kInfBits))));

    const VF sc = hn::Mul(v, scaleV);
    const VU sb = hn::BitCast(du, sc);
    const VU sab = hn::And(sb, absMask);
    const auto scaledNan = hn::Gt(sab, infBits);
    a.scaledZero = count(a.scaledZero, hn::Eq(sab, hn::Zero(du)));
    a.scaledNan = count(a.scaledNan, scaledNan);
    a.saturated = count(a.saturated, hn::RebindMask(du, hn::Gt(hn::BitCast(df, sab), hn::Set(df, s.maxFinite))));

    VF qMag;
    VU mag;
    if constexpr (kBf16) {
        const VU rounded
            = hn::Add(hn::Add(sab, hn::Set(du, 0x7FFFu)), hn::And(hn::ShiftRight<16>(sab), hn::Set(du, 1u)));
        const VU r = hn::And(rounded, hn::Set(du, 0xFFFF0000u));
        qMag = hn::BitCast(df, r);
        mag = hn::ShiftRight<16>(r);
    } else {
        mag = roundMagnitudeV(sab, s);
        qMag = decodeMagnitudeV(mag, s);
    }
    a.nonzeroQ = count(a.nonzeroQ, hn::Or(hn::Ne(mag, hn::Zero(du)), scaledNan));
    const VF q = hn::BitCast(df, hn::Or(hn::BitCast(du, qMag), hn::And(sb, signMask)));

    // Histogram bins are the exponent fields; zeros and NaN are subtracted in flush().
    HWY_ALIGN uint32_t binIn[hn::MaxLanes(du)];
    HWY_ALIGN uint32_t binScaled[hn::MaxLanes(du)];
    hn::Store(hn::ShiftRight<23>(ab), du, binIn);
    hn::Store(hn::ShiftRight<23>(sab), du, binScaled);
    for (size_t i = 0; i < hn::Lanes(du); ++i) {
        ++a.histIn[i & 3][binIn[i]];
        ++a.histScaled[i & 3][binScaled[i]];
    }

    const VF xf = hn::IfThenElseZero(finiteF, v);
    const VF qf = hn::IfThenElseZero(finiteF, q);
    const VD xs[2] = {hn::PromoteTo(dd, hn::LowerHalf(dh, xf)), hn::PromoteTo(dd, hn::UpperHalf(dh, xf))};
    const VD qs[2] = {hn::Mul(hn::PromoteTo(dd, hn::LowerHalf(dh, qf)), scaleInvLo),
        hn::Mul(hn::PromoteTo(dd, hn::UpperHalf(dh, qf)), scaleInvHi)};
    for (int h = 0; h < 2; ++h) {
        const VD x = xs[h];
        const VD qd = qs[h];
        const VD sq = hn::Mul(x, x);
        a.sum = hn::Add(a.sum, x);
        a.sumSq = hn::Add(a.sumSq, sq);
        a.sumCube = hn::MulAdd(sq, x, a.sumCube);
        a.sumQuad = hn::MulAdd(sq, sq, a.sumQuad);
        const VD err = hn::Sub(x, qd);
        a.errSq = hn::MulAdd(err, err, a.errSq);
        a.dotXQ = hn::MulAdd(x, qd, a.dotXQ);
        a.sumQSq = hn::MulAdd(qd, qd, a.sumQSq);
    }
    a.numel += hn::Lanes(df);
}

template <bool kBf16>
HWY_INLINE void uniformRun(
    const float *x, size_t n, float scale, float scaleInv, const FormatSpec &s, Acc &a, MetricSums &m, Format f)
{
    const DF df;
    const DD dd;
    const size_t lanes = hn::Lanes(df);
    const VF scaleV = hn::Set(df, scale);
    const VD scaleInvD = hn::Set(dd, double(scaleInv));
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        processVec<kBf16>(hn::LoadU(df, x + i), scaleV, scaleInvD, scaleInvD, s, a);
    scalarAccumulateUniform(x + i, n - i, scale, scaleInv, f, m);
}

void AccumulateUniform(const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m)
{
    const FormatSpec s = formatSpec(f);
    auto acc = std::make_unique<Acc>();
    // Lane counters are 32-bit: keep each run well below 2^32 elements per lane.
    constexpr size_t kRun = size_t(1) << 28;
    for (size_t off = 0; off < n; off += kRun) {
        const size_t len = std::min(kRun, n - off);
        if (f == Format::BF16)
            uniformRun<true>(x + off, len, scale, scaleInv, s, *acc, m, f);
        else
            uniformRun<false>(x + off, len, scale, scaleInv, s, *acc, m, f);
        flush(*acc, m);
    }
}

float AmaxAbs(const float *x, size_t n)
{
    const DF df;
    const DU du;
    const size_t lanes = hn::Lanes(df);
    VF amax = hn::Zero(df);
    const VU absMask = hn::Set(du, 0x7FFFFFFFu);
    const VU infBits = hn::Set(du, kInfBits);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const VU ab = hn::And(hn::BitCast(du, hn::LoadU(df, x + i)), absMask);
        amax = hn::Max(amax, hn::IfThenElseZero(hn::RebindMask(df, hn::Lt(ab, infBits)), hn::BitCast(df, ab)));
    }
    float r = lanes ? hn::GetLane(hn::MaxOfLanes(df, amax)) : 0.0f;
    const float tail = scalarAmax(x + i, n - i);
    return tail > r ? tail : r;
}

template <bool kBf16>
HWY_INLINE void rowBlocksImpl(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m)
{
    const DF df;
    const DD dd;
    const FormatSpec s = formatSpec(plan.format);
    const size_t lanes = hn::Lanes(df);
    const size_t b = size_t(plan.blockCols);
    auto acc = std::make_unique<Acc>();
    size_t sinceFlush = 0;
    for (size_t r = 0; r < rows; ++r) {
        const float *row = x + r * rowLen;
        for (size_t c = 0; c < rowLen; c += b) {
            const size_t len = std::min(b, rowLen - c);
            const float *blk = row + c;
            const float amax = AmaxAbs(blk, len);
            const BlockScale bs = blockScaleFor(amax, plan);
            m.addBlock(amax, bs.decode);
            const VF scaleV = hn::Set(df, bs.encode);
            const VD scaleInvD = hn::Set(dd, double(bs.decode));
            size_t i = 0;
            for (; i + lanes <= len; i += lanes)
                processVec<kBf16>(hn::LoadU(df, blk + i), scaleV, scaleInvD, scaleInvD, s, *acc);
            scalarAccumulateUniform(blk + i, len - i, bs.encode, bs.decode, plan.format, m);
        }
        sinceFlush += rowLen;
        if (sinceFlush > (size_t(1) << 28)) {
            flush(*acc, m);
            sinceFlush = 0;
        }
    }
    flush(*acc, m);
}

void AccumulateRowBlocks(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m)
{
    if (plan.format == Format::BF16)
        rowBlocksImpl<true>(x, rowLen, rows, plan, m);
    else
        rowBlocksImpl<false>(x, rowLen, rows, plan, m);
}

void AccumulateTiles(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, float *scratch)
{
    const DF df;
    const DU du;
    const DH dh;
    const DD dd;
    const FormatSpec s = formatSpec(plan.format);
    const size_t lanes = hn::Lanes(df);
    const size_t br = size_t(plan.blockRows);
    const size_t bc = size_t(plan.blockCols);
    float *colScale = scratch;
    float *colScaleInv = scratch + rowLen;
    float *colAmax = scratch + 2 * rowLen;
    const VU absMask = hn::Set(du, 0x7FFFFFFFu);
    const VU infBits = hn::Set(du, kInfBits);
    auto acc = std::make_unique<Acc>();
    for (size_t r0 = 0; r0 < rows; r0 += br) {
        const size_t nr = std::min(br, rows - r0);
        // Per-column amax over the band, lanes along the columns; then each tile reduces its columns.
        size_t c = 0;
        for (; c + lanes <= rowLen; c += lanes) {
            VF a = hn::Zero(df);
            for (size_t r = r0; r < r0 + nr; ++r) {
                const VU ab = hn::And(hn::BitCast(du, hn::LoadU(df, x + r * rowLen + c)), absMask);
                a = hn::Max(a, hn::IfThenElseZero(hn::RebindMask(df, hn::Lt(ab, infBits)), hn::BitCast(df, ab)));
            }
            hn::StoreU(a, df, colAmax + c);
        }
        for (; c < rowLen; ++c) {
            float a = 0.0f;
            for (size_t r = r0; r < r0 + nr; ++r)
                a = std::max(a, scalarAmax(x + r * rowLen + c, 1));
            colAmax[c] = a;
        }
        for (size_t c0 = 0; c0 < rowLen; c0 += bc) {
            const size_t nc = std::min(bc, rowLen - c0);
            const float amax = *std::max_element(colAmax + c0, colAmax + c0 + nc);
            const BlockScale bs = blockScaleFor(amax, plan);
            m.addBlock(amax, bs.decode);
            std::fill(colScale + c0, colScale + c0 + nc, bs.encode);
            std::fill(colScaleInv + c0, colScaleInv + c0 + nc, bs.decode);
        }
        for (size_t r = r0; r < r0 + nr; ++r) {
            const float *row = x + r * rowLen;
            size_t c = 0;
            for (; c + lanes <= rowLen; c += lanes) {
                const VF inv = hn::LoadU(df, colScaleInv + c);
                const VD invLo = hn::PromoteTo(dd, hn::LowerHalf(dh, inv));
                const VD invHi = hn::PromoteTo(dd, hn::UpperHalf(dh, inv));
                if (plan.format == Format::BF16)
                    processVec<true>(hn::LoadU(df, row + c), hn::LoadU(df, colScale + c), invLo, invHi, s, *acc);
                else
                    processVec<false>(hn::LoadU(df, row + c), hn::LoadU(df, colScale + c), invLo, invHi, s, *acc);
            }
            for (; c < rowLen; ++c)
                accumulateElement(row[c], colScale[c], colScaleInv[c], plan.format, m);
        }
        flush(*acc, m);
    }
}

void Bf16ToFloat(const uint16_t *src, size_t n, float *dst)
{
    const DF df;
    const DU du;
    const hn::Rebind<uint16_t, DF> d16;
    const size_t lanes = hn::Lanes(df);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const VU w = hn::PromoteTo(du, hn::LoadU(d16, src + i));
        hn::StoreU(hn::BitCast(df, hn::ShiftLeft<16>(w)), df, dst + i);
    }
    for (; i < n; ++i)
        dst[i] = bitsFloat(uint32_t(src[i]) << 16);
}

void F16ToFloat(const uint16_t *src, size_t n, float *dst)
{
    const DF df;
    const hn::Rebind<hwy::float16_t, DF> d16;
    const size_t lanes = hn::Lanes(df);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const auto h = hn::LoadU(d16, reinterpret_cast<const hwy::float16_t *>(src + i));
        hn::StoreU(hn::PromoteTo(df, h), df, dst + i);
    }
    for (; i < n; ++i)
        dst[i] = halfToFloat(src[i]);
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
    const DU du;
    const DH dh;
    const DD dd;
    const hn::Rebind<uint16_t, DF> d16;
    const size_t lanes = hn::Lanes(df);
    VD s0 = hn::Zero(dd), s1 = hn::Zero(dd);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        const VF v = hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, x + i))));
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

} // namespace fp8scope::cpukernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace fp8scope::cpukernels {

HWY_EXPORT(AccumulateUniform);
HWY_EXPORT(AccumulateRowBlocks);
HWY_EXPORT(AccumulateTiles);
HWY_EXPORT(AmaxAbs);
HWY_EXPORT(Bf16ToFloat);
HWY_EXPORT(F16ToFloat);
HWY_EXPORT(SumFloat);
HWY_EXPORT(SumBf16);
HWY_EXPORT(SimdTarget);

float amaxAbs(const float *x, size_t n)
{
    return HWY_DYNAMIC_DISPATCH(AmaxAbs)(x, n);
}

void accumulateUniform(const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m)
{
    HWY_DYNAMIC_DISPATCH(AccumulateUniform)(x, n, scale, scaleInv, f, m);
}

void accumulateRowBlocks(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m)
{
    HWY_DYNAMIC_DISPATCH(AccumulateRowBlocks)(x, rowLen, rows, plan, m);
}

void accumulateTiles(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, float *scratch)
{
    HWY_DYNAMIC_DISPATCH(AccumulateTiles)(x, rowLen, rows, plan, m, scratch);
}

void bf16ToFloat(const uint16_t *src, size_t n, float *dst)
{
    HWY_DYNAMIC_DISPATCH(Bf16ToFloat)(src, n, dst);
}

void f16ToFloat(const uint16_t *src, size_t n, float *dst)
{
    HWY_DYNAMIC_DISPATCH(F16ToFloat)(src, n, dst);
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

} // namespace fp8scope::cpukernels
#endif
