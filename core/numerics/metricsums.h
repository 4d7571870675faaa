// The additive state of the fused metrics pass: counts, double-precision sums and histograms that any
// backend (CPU lanes, CUDA blocks) accumulates independently and merges. Plain C++ so CUDA code shares it.
#pragma once

#include "core/formats/fp8math.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace fp8scope::fp8math {

// One bin per binade: bin i holds values whose float32 exponent field is i, that is
// floor(log2|v|) == i - 127 for i in 1..254; bin 0 holds float32 subnormals, bin 255 holds inf.
// Zeros and NaN are counted elsewhere, never binned.
constexpr int kHistBins = 256;

FP8_HD int histBinLog2(int bin)
{
    return bin - 127;
}

// The starting value of a minimum: +inf, or its bits where an integer holds a float's bits.
template <class T> FP8_HD constexpr T infinityOf()
{
    if constexpr (std::is_integral_v<T>)
        return T(0x7F800000u);
    else
        return T(INFINITY);
}

// What a metric pass accumulates, defined once: every count, sum and extreme, named as the metrics read
// them. Each backend holds them in its own types (`Count`, `Real`, `Mag` for a non-negative extreme): the
// host in int64_t and double (MetricSums), a CUDA thread in unsigned long long, double and float
// (ThreadAcc), the device's global result in unsigned long long, double and the float's bits, which order
// as the floats do (DeviceSums). forEachField visits them, so a merge, a fold and a block reduction are
// each written once and cannot leave a field out. The histograms live beside them (the CUDA threads count
// into shared memory); the vector CPU kernel keeps lanes of its own and folds them in its flush().
// A new metric adds its field here, its line in forEachField and its term in addElement.
template <class Count, class Real, class Mag> struct MetricFields {
    Count numel = 0;
    Count zeros = 0;
    Count nans = 0;
    Count infs = 0;
    Count nonzeroQ = 0; // quantized values != 0 (NaN counts as non-zero, as torch.count_nonzero does)
    Count saturated = 0; // |x * scale| > fmax (inf inputs included)
    Mag amax = 0; // max |x| over finite x
    Mag aminNonzero = infinityOf<Mag>();
    Real sum = 0; // moments of finite x
    Real sumSq = 0;
    Real sumCube = 0;
    Real sumQuad = 0;
    Real errSq = 0; // sum (x - q)^2 over finite x
    Real relErr = 0; // sum |x - q| / |x| over finite non-zero x: the error the bulk of the values weighs
    Real dotXQ = 0;
    Real sumQSq = 0;
    // Block recipes: statistics of the per-block decode scales (scale_inv).
    Count blocks = 0;
    Count zeroAmaxBlocks = 0;
    Mag scaleInvMin = infinityOf<Mag>();
    Mag scaleInvMax = 0;
    Real log2ScaleInvSum = 0;
};

// Calls op.add (counts and sums), op.max or op.min (extremes) on each pair of fields of `into` and `from`,
// two holders of MetricFields, possibly of different types.
template <class Into, class From, class Op> FP8_HD void forEachField(Into &into, const From &from, Op &op)
{
    op.add(into.numel, from.numel);
    op.add(into.zeros, from.zeros);
    op.add(into.nans, from.nans);
    op.add(into.infs, from.infs);
    op.add(into.nonzeroQ, from.nonzeroQ);
    op.add(into.saturated, from.saturated);
    op.max(into.amax, from.amax);
    op.min(into.aminNonzero, from.aminNonzero);
    op.add(into.sum, from.sum);
    op.add(into.sumSq, from.sumSq);
    op.add(into.sumCube, from.sumCube);
    op.add(into.sumQuad, from.sumQuad);
    op.add(into.errSq, from.errSq);
    op.add(into.relErr, from.relErr);
    op.add(into.dotXQ, from.dotXQ);
    op.add(into.sumQSq, from.sumQSq);
    op.add(into.blocks, from.blocks);
    op.add(into.zeroAmaxBlocks, from.zeroAmaxBlocks);
    op.min(into.scaleInvMin, from.scaleInvMin);
    op.max(into.scaleInvMax, from.scaleInvMax);
    op.add(into.log2ScaleInvSum, from.log2ScaleInvSum);
}

// Combines two holders of the same types.
struct MergeFields {
    template <class T> FP8_HD void add(T &into, T from) { into += from; }
    template <class T> FP8_HD void max(T &into, T from) { into = into > from ? into : from; }
    template <class T> FP8_HD void min(T &into, T from) { into = into < from ? into : from; }
};

struct MetricSums : MetricFields<int64_t, double, double> {
    int64_t histIn[kHistBins] = {};
    int64_t histScaled[kHistBins] = {};

    void merge(const MetricSums &o)
    {
        MergeFields op;
        forEachField(*this, o, op);
        for (int i = 0; i < kHistBins; ++i) {
            histIn[i] += o.histIn[i];
            histScaled[i] += o.histScaled[i];
        }
    }

    FP8_HD void addBlock(float blockAmax, float scaleInv);

    // log2 of a positive float; powers of two (every MXFP8 and pow2 block scale) without calling log2.
    FP8_HD static double exactLog2(float v)
    {
        const uint32_t b = floatBits(v);
        const uint32_t e = b >> 23;
        if ((b & 0x7FFFFFu) == 0 && e > 0 && e < 255)
            return double(int(e) - 127);
        return v > 0.0f ? std::log2(double(v)) : 0.0;
    }
};

// Adds one block's decode scale (scale_inv) and amax to the block statistics of `m`, any MetricFields.
template <class Fields> FP8_HD void addBlockTo(Fields &m, float blockAmax, float scaleInv)
{
    using Mag = decltype(m.scaleInvMin);
    ++m.blocks;
    if (!(blockAmax > 0.0f))
        ++m.zeroAmaxBlocks;
    const Mag d = Mag(scaleInv);
    m.scaleInvMin = d < m.scaleInvMin ? d : m.scaleInvMin;
    m.scaleInvMax = d > m.scaleInvMax ? d : m.scaleInvMax;
    if (scaleInv > 0.0f)
        m.log2ScaleInvSum += MetricSums::exactLog2(scaleInv);
}

FP8_HD void MetricSums::addBlock(float blockAmax, float scaleInv)
{
    addBlockTo(*this, blockAmax, scaleInv);
}

// Bin of |v| (bits without sign): the float32 exponent field.
FP8_HD int histBin(uint32_t absBits)
{
    return int(absBits >> 23);
}

// Dequantized value of x under (scale, scaleInv) in `f`, as the training kernel would compute it:
// cast(x * scale) then multiply by scaleInv. Returned in double: the product of a code and a float
// scale is exact there.
FP8_HD double dequantize(uint32_t code, Format f, float scaleInv)
{
    return double(decodeCode(code, f)) * double(scaleInv);
}

// What one element contributes under (scale, scaleInv) in format f: the single definition every backend
// (scalar, vector CPU, CUDA) follows. Bins are -1 where the element is not binned.
struct ElementEval {
    bool nan = false;
    bool inf = false;
    bool zero = false;
    bool saturated = false;
    bool nonzeroQ = false;
    bool finite = false; // contributes to amax, amin and the sums
    int binIn = -1;
    int binScaled = -1;
    float absX = 0.0f;
    double x = 0.0;
    double q = 0.0; // dequantized value
};

FP8_HD ElementEval evaluateElement(float x, float scale, float scaleInv, Format f)
{
    ElementEval e;
    const FormatSpec s = formatSpec(f);
    const uint32_t absBits = floatBits(x) & 0x7FFFFFFFu;
    const float scaled = x * scale;
    const uint32_t scaledAbs = floatBits(scaled) & 0x7FFFFFFFu;
    if (absBits > 0x7F800000u) {
        e.nan = true;
        e.nonzeroQ = true;
        return e;
    }
    e.zero = absBits == 0;
    if (!e.zero)
        e.binIn = histBin(absBits);
    if (scaledAbs != 0 && scaledAbs <= 0x7F800000u)
        e.binScaled = histBin(scaledAbs);
    e.saturated = bitsFloat(scaledAbs) > s.maxFinite;
    const uint32_t code = castToCode(scaled, f);
    e.nonzeroQ = (code & ~s.signBit) != 0 || scaledAbs > 0x7F800000u;
    if (absBits == 0x7F800000u) {
        e.inf = true;
        return e;
    }
    e.finite = true;
    e.absX = bitsFloat(absBits);
    e.x = x;
    e.q = dequantize(code, f, scaleInv);
    return e;
}

// Adds what one element contributes, `weight` times, to the fields of `m` (any MetricFields with
// real-valued extremes), histograms aside.
template <class Fields, class Weight> FP8_HD void addElement(const ElementEval &e, Fields &m, Weight weight)
{
    m.numel += weight;
    m.nans += e.nan ? weight : 0;
    m.infs += e.inf ? weight : 0;
    m.zeros += e.zero ? weight : 0;
    m.saturated += e.saturated ? weight : 0;
    m.nonzeroQ += e.nonzeroQ ? weight : 0;
    if (!e.finite)
        return;
    using Mag = decltype(m.amax);
    const Mag ax = Mag(e.absX);
    m.amax = ax > m.amax ? ax : m.amax;
    if (!e.zero && ax < m.aminNonzero)
        m.aminNonzero = ax;
    const double w = double(weight);
    const double sq = e.x * e.x;
    m.sum += w * e.x;
    m.sumSq += w * sq;
    m.sumCube += w * (sq * e.x);
    m.sumQuad += w * (sq * sq);
    const double err = e.x - e.q;
    m.errSq += w * (err * err);
    if (!e.zero)
        m.relErr += w * (std::fabs(err) / double(e.absX));
    m.dotXQ += w * (e.x * e.q);
    m.sumQSq += w * (e.q * e.q);
}

// Adds one element's contribution, `weight` times (a histogram of equal inputs folds in with its count).
FP8_HD void accumulateElement(float x, float scale, float scaleInv, Format f, MetricSums &m, int64_t weight = 1)
{
    const ElementEval e = evaluateElement(x, scale, scaleInv, f);
    addElement(e, m, weight);
    if (e.binIn >= 0)
        m.histIn[e.binIn] += weight;
    if (e.binScaled >= 0)
        m.histScaled[e.binScaled] += weight;
}

} // namespace fp8scope::fp8math
