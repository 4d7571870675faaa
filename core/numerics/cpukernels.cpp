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
void AccumulateUniform(const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &)
{
    scalarAccumulateUniform(x, n, scale, scaleInv, f, m);
}
float AmaxAbs(const float *x, size_t n)
{
    return scalarAmax(x, n);
}
void AccumulateRowBlocks(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &)
{
    scalarAccumulateRowBlocks(x, rowLen, rows, plan, m);
}
void AccumulateTiles(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    scratch.tileScratch.resize(2 * rowLen);
    scalarAccumulateTiles(x, rowLen, rows, plan, m, scratch.tileScratch.data(), scratch.tileScratch.data() + rowLen);
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

// Running vector state of one kernel call, folded into MetricSums by flush().
struct Acc {
    VU zeros, nans, infs, nonzeroQ, saturated, scaledZero, scaledNan;
    VF amax, amin;
    VD sum, sumSq, sumCube, sumQuad, errSq, dotXQ, sumQSq;
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
    }
};

// What processVec needs of the element format, as vectors.
struct FormatConsts {
    VU halfMinusOne; // 2^(shift-1) - 1, shift = 23 - manBits
    VU keepMask; // clears the bits below the element's last mantissa bit
    VU minNormalBits; // float32 bits of the smallest normal of the element format
    VU maxFiniteBits;
    VF subnormalMagic; // 2^(minNormalExp - manBits + 23): x + magic - magic rounds to the subnormal step
    VF maxFinite;
    int shift;

    explicit FormatConsts(Format f)
    {
        const DF df;
        const DU du;
        const FormatSpec s = formatSpec(f);
        shift = 23 - s.manBits;
        halfMinusOne = hn::Set(du, (1u << (shift - 1)) - 1u);
        keepMask = hn::Set(du, ~((1u << shift) - 1u));
        minNormalBits = hn::Set(du, floatBits(s.minNormal));
        maxFiniteBits = hn::Set(du, floatBits(s.maxFinite));
        subnormalMagic = hn::Set(df, bitsFloat(uint32_t(s.minNormalExp - s.manBits + 23 + 127) << 23));
        maxFinite = hn::Set(df, s.maxFinite);
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
    // Zeros and NaN land in bins 0 and 255 of the joint histogram; they are not binned by definition.
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

// One vector of elements, each scaled by its lane of scaleV, cast to the element format (round to
// nearest even, saturating), dequantized with scaleInv (double, low and high halves) and accumulated.
// Must agree with fp8math::accumulateElement lane by lane.
template <bool kBf16>
HWY_INLINE void processVec(
    VF v, VF scaleV, VD scaleInvLo, VD scaleInvHi, const FormatConsts &fc, Acc &a, uint32_t *joint)
{
    const DF df;
    const DU du;
    const DH dh;
    const DD dd;
    const VU signMask = hn::Set(du, 0x80000000u);
    const VU absMask = hn::Set(du, 0x7FFFFFFFu);
    const VU infBits = hn::Set(du, kInfBits);
    const VU zeroU = hn::Zero(du);

    const VU ab = hn::And(hn::BitCast(du, v), absMask);
    const VF absV = hn::BitCast(df, ab);
    const VF sc = hn::Mul(v, scaleV);
    const VU sb = hn::BitCast(du, sc);
    const VU sab = hn::And(sb, absMask);
    const auto finite = hn::Lt(ab, infBits);
    const auto finiteF = hn::RebindMask(df, finite);

    // Zero, NaN and inf inputs and values that scale to zero are rare: count them only when present.
    const auto scaledZero = hn::Eq(sab, zeroU);
    if (HWY_UNLIKELY(!hn::AllFalse(du, hn::Or(scaledZero, hn::Not(finite))))) {
        a.zeros = count(a.zeros, hn::Eq(ab, zeroU));
        a.nans = count(a.nans, hn::Gt(ab, infBits));
        a.infs = count(a.infs, hn::Eq(ab, infBits));
        a.scaledZero = count(a.scaledZero, scaledZero);
        a.scaledNan = count(a.scaledNan, hn::Gt(sab, infBits));
        a.amin = hn::Min(a.amin,
            hn::IfThenElse(hn::RebindMask(df, hn::AndNot(hn::Eq(ab, zeroU), finite)), absV, hn::BitCast(df, infBits)));
    } else {
        a.amin = hn::Min(a.amin, absV);
    }
    a.amax = hn::Max(a.amax, hn::IfThenElseZero(finiteF, absV));
    a.saturated = count(a.saturated, hn::RebindMask(du, hn::Gt(hn::BitCast(df, sab), fc.maxFinite)));

    // Quantized magnitude as float32 bits. Normal range: round the float32 bits at the element's last
    // mantissa bit (a carry moves into the exponent as it should). Subnormal range: the float addition
    // x + magic - magic rounds to the subnormal step, ties to even. Then saturate. NaN lanes end at max (non-zero).
    VU qb;
    if constexpr (kBf16) {
        const VU lsb = hn::And(hn::ShiftRight<16>(sab), hn::Set(du, 1u));
        qb = hn::And(hn::Add(hn::Add(sab, hn::Set(du, 0x7FFFu)), lsb), hn::Set(du, 0xFFFF0000u));
    } else {
        const VU lsb = hn::And(hn::ShiftRightSame(sab, fc.shift), hn::Set(du, 1u));
        const VU normal = hn::And(hn::Add(hn::Add(sab, fc.halfMinusOne), lsb), fc.keepMask);
        const VF sub = hn::Sub(hn::Add(hn::BitCast(df, sab), fc.subnormalMagic), fc.subnormalMagic);
        qb = hn::Min(hn::IfThenElse(hn::Lt(sab, fc.minNormalBits), hn::BitCast(du, sub), normal), fc.maxFiniteBits);
    }
    a.nonzeroQ = count(a.nonzeroQ, hn::Ne(qb, zeroU));
    const VF q = hn::BitCast(df, hn::Or(qb, hn::And(sb, signMask)));

    // Joint histogram key (input binade, scaled binade), times four copies, plus the lane's copy.
    const VU laneCopy = hn::And(hn::Iota(du, 0), hn::Set(du, uint32_t(KernelScratch::kCopies - 1)));
    const VU key = hn::Or(
        hn::Or(hn::ShiftLeft<10>(hn::ShiftRight<23>(ab)), hn::ShiftLeft<2>(hn::ShiftRight<23>(sab))), laneCopy);
    HWY_ALIGN uint32_t keys[hn::MaxLanes(du)];
    hn::Store(key, du, keys);
    for (size_t i = 0; i < hn::Lanes(du); ++i)
        ++joint[keys[i]];

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
    const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch)
{
    const DF df;
    const DD dd;
    const FormatConsts fc(f);
    const size_t lanes = hn::Lanes(df);
    const VF scaleV = hn::Set(df, scale);
    const VD scaleInvD = hn::Set(dd, double(scaleInv));
    uint32_t *joint = scratch.joint.data();
    Acc a;
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        processVec<kBf16>(hn::LoadU(df, x + i), scaleV, scaleInvD, scaleInvD, fc, a, joint);
    scratch.pending += int64_t(i);
    flush(a, m);
    scalarAccumulateUniform(x + i, n - i, scale, scaleInv, f, m);
}

void AccumulateUniform(
    const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch)
{
    if (f == Format::BF16)
        uniformRun<true>(x, n, scale, scaleInv, f, m, scratch);
    else
        uniformRun<false>(x, n, scale, scaleInv, f, m, scratch);
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

// NVFP4 block scales come from an E4M3 code: tabulate encode, decode and log2(decode) per code once per
// global scale, exactly as fp8math::nvfp4BlockScale computes them.
void prepareNvfp4(KernelScratch &s, float globalEncode)
{
    if (s.nvfp4Global == globalEncode)
        return;
    s.nvfp4Global = globalEncode;
    const float globalDecode = 1.0f / globalEncode;
    for (uint32_t code = 0; code < 256; ++code) {
        const float decode = decodeCode(code, Format::E4M3) * globalDecode;
        if (!(decode > 0.0f)) {
            s.nvfp4Encode[code] = 0.0f;
            s.nvfp4Decode[code] = 0.0f;
            s.nvfp4Log2[code] = 0.0;
            continue;
        }
        const float encode = 1.0f / decode;
        s.nvfp4Encode[code] = encode <= kFloatMax ? encode : kFloatMax;
        s.nvfp4Decode[code] = decode;
        s.nvfp4Log2[code] = MetricSums::exactLog2(decode);
    }
}

template <bool kBf16>
HWY_INLINE void rowBlocksImpl(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const DF df;
    const DD dd;
    const FormatConsts fc(plan.format);
    const size_t lanes = hn::Lanes(df);
    const size_t b = size_t(plan.blockCols);
    const DU du;
    const VU absMask = hn::Set(du, 0x7FFFFFFFu);
    const VU infBits = hn::Set(du, kInfBits);
    const bool nvfp4 = plan.rule == BlockRule::Nvfp4;
    if (nvfp4)
        prepareNvfp4(scratch, plan.globalEncode);
    uint32_t *joint = scratch.joint.data();
    // Three sweeps so that the scalar scale arithmetic of one block never waits on the vector work of the
    // previous one: block amaxes, then block scales, then the elements.
    const size_t perRow = (rowLen + b - 1) / b;
    const size_t blocks = perRow * rows;
    scratch.tileScratch.resize(3 * blocks);
    float *blockAmax = scratch.tileScratch.data();
    float *blockEncode = blockAmax + blocks;
    float *blockDecode = blockEncode + blocks;
    for (size_t r = 0, k = 0; r < rows; ++r) {
        const float *row = x + r * rowLen;
        for (size_t c = 0; c < rowLen; c += b, ++k) {
            const size_t len = std::min(b, rowLen - c);
            const float *blk = row + c;
            if (len % lanes == 0) {
                VF am = hn::Zero(df);
                for (size_t i = 0; i < len; i += lanes) {
                    const VU ab = hn::And(hn::BitCast(du, hn::LoadU(df, blk + i)), absMask);
                    am = hn::Max(am, hn::IfThenElseZero(hn::RebindMask(df, hn::Lt(ab, infBits)), hn::BitCast(df, ab)));
                }
                blockAmax[k] = hn::GetLane(hn::MaxOfLanes(df, am));
            } else {
                blockAmax[k] = AmaxAbs(blk, len);
            }
        }
    }
    for (size_t k = 0; k < blocks; ++k) {
        const float amax = blockAmax[k];
        BlockScale bs;
        if (nvfp4) {
            const uint32_t code = castToCode(amax * (1.0f / 6.0f) * plan.globalEncode, Format::E4M3);
            bs = {scratch.nvfp4Encode[code], scratch.nvfp4Decode[code]};
            m.addBlockLog2(amax, bs.decode, scratch.nvfp4Log2[code]);
        } else {
            bs = blockScaleFor(amax, plan);
            m.addBlock(amax, bs.decode);
        }
        blockEncode[k] = bs.encode;
        blockDecode[k] = bs.decode;
    }
    Acc a;
    for (size_t r = 0, k = 0; r < rows; ++r) {
        const float *row = x + r * rowLen;
        for (size_t c = 0; c < rowLen; c += b, ++k) {
            const size_t len = std::min(b, rowLen - c);
            const float *blk = row + c;
            const VF scaleV = hn::Set(df, blockEncode[k]);
            const VD scaleInvD = hn::Set(dd, double(blockDecode[k]));
            size_t i = 0;
            for (; i + lanes <= len; i += lanes)
                processVec<kBf16>(hn::LoadU(df, blk + i), scaleV, scaleInvD, scaleInvD, fc, a, joint);
            scratch.pending += int64_t(i);
            if (i < len)
                scalarAccumulateUniform(blk + i, len - i, blockEncode[k], blockDecode[k], plan.format, m);
        }
    }
    flush(a, m);
}

void AccumulateRowBlocks(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    if (plan.format == Format::BF16)
        rowBlocksImpl<true>(x, rowLen, rows, plan, m, scratch);
    else
        rowBlocksImpl<false>(x, rowLen, rows, plan, m, scratch);
}

void AccumulateTiles(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const DF df;
    const DU du;
    const DH dh;
    const DD dd;
    const FormatConsts fc(plan.format);
    const size_t lanes = hn::Lanes(df);
    const size_t br = size_t(plan.blockRows);
    const size_t bc = size_t(plan.blockCols);
    scratch.tileScratch.resize(3 * rowLen);
    float *colScale = scratch.tileScratch.data();
    float *colScaleInv = colScale + rowLen;
    float *colAmax = colScale + 2 * rowLen;
    uint32_t *joint = scratch.joint.data();
    const VU absMask = hn::Set(du, 0x7FFFFFFFu);
    const VU infBits = hn::Set(du, kInfBits);
    Acc acc;
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
                    processVec<true>(hn::LoadU(df, row + c), hn::LoadU(df, colScale + c), invLo, invHi, fc, acc, joint);
                else
                    processVec<false>(
                        hn::LoadU(df, row + c), hn::LoadU(df, colScale + c), invLo, invHi, fc, acc, joint);
            }
            scratch.pending += int64_t(c);
            for (; c < rowLen; ++c)
                accumulateElement(row[c], colScale[c], colScaleInv[c], plan.format, m);
        }
    }
    flush(acc, m);
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

KernelScratch::KernelScratch()
    : joint(kJointSize, 0u)
{
}

void KernelScratch::flushInto(MetricSums &m)
{
    if (pending == 0)
        return;
    for (size_t key = 0; key < size_t(fp8math::kHistBins) * fp8math::kHistBins; ++key) {
        const uint32_t *c = joint.data() + key * kCopies;
        const int64_t n = int64_t(c[0]) + c[1] + c[2] + c[3];
        if (n == 0)
            continue;
        m.histIn[key >> 8] += n;
        m.histScaled[key & 0xFF] += n;
    }
    std::fill(joint.begin(), joint.end(), 0u);
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

} // namespace

float amaxAbs(const float *x, size_t n)
{
    return HWY_DYNAMIC_DISPATCH(AmaxAbs)(x, n);
}

void accumulateUniform(
    const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m, KernelScratch &scratch)
{
    for (size_t off = 0; off < n; off += kMaxRun) {
        const size_t len = std::min(kMaxRun, n - off);
        flushIfNeeded(scratch, m, len);
        HWY_DYNAMIC_DISPATCH(AccumulateUniform)(x + off, len, scale, scaleInv, f, m, scratch);
    }
}

void accumulateRowBlocks(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const size_t rowsPerRun = std::max<size_t>(1, kMaxRun / std::max<size_t>(rowLen, 1));
    for (size_t r = 0; r < rows; r += rowsPerRun) {
        const size_t nr = std::min(rowsPerRun, rows - r);
        flushIfNeeded(scratch, m, nr * rowLen);
        HWY_DYNAMIC_DISPATCH(AccumulateRowBlocks)(x + r * rowLen, rowLen, nr, plan, m, scratch);
    }
}

void accumulateTiles(
    const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m, KernelScratch &scratch)
{
    const size_t br = size_t(std::max(plan.blockRows, 1));
    const size_t bandsPerRun = std::max<size_t>(1, kMaxRun / std::max<size_t>(rowLen * br, 1));
    for (size_t r = 0; r < rows; r += bandsPerRun * br) {
        const size_t nr = std::min(bandsPerRun * br, rows - r);
        flushIfNeeded(scratch, m, nr * rowLen);
        HWY_DYNAMIC_DISPATCH(AccumulateTiles)(x + r * rowLen, rowLen, nr, plan, m, scratch);
    }
}

void countPatterns16(const uint16_t *src, size_t n, uint32_t *counts)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        ++counts[size_t(src[i]) * 4];
        ++counts[size_t(src[i + 1]) * 4 + 1];
        ++counts[size_t(src[i + 2]) * 4 + 2];
        ++counts[size_t(src[i + 3]) * 4 + 3];
    }
    for (; i < n; ++i)
        ++counts[size_t(src[i]) * 4];
}

void foldPatternCounts(uint32_t *counts, bool bf16, float scale, float scaleInv, Format f, MetricSums &m)
{
    for (uint32_t p = 0; p < 65536; ++p) {
        uint32_t *c = counts + size_t(p) * 4;
        const int64_t n = int64_t(c[0]) + c[1] + c[2] + c[3];
        if (n == 0)
            continue;
        c[0] = c[1] = c[2] = c[3] = 0;
        const float x = bf16 ? fp8math::bitsFloat(p << 16) : fp8math::halfToFloat(uint16_t(p));
        fp8math::accumulateElement(x, scale, scaleInv, f, m, n);
    }
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
