// The additive state of the fused metrics pass: counts, double-precision sums and histograms that any
// backend (CPU lanes, CUDA blocks) accumulates independently and merges. Plain C++ so CUDA code shares it.
#pragma once

#include "core/formats/fp8math.h"

#include <cmath>
#include <cstdint>

namespace fp8scope::fp8math {

// One bin per binade: bin i holds values whose float32 exponent field is i, that is
// floor(log2|v|) == i - 127 for i in 1..254; bin 0 holds float32 subnormals, bin 255 holds inf.
// Zeros and NaN are counted elsewhere, never binned.
constexpr int kHistBins = 256;

FP8_HD int histBinLog2(int bin)
{
    return bin - 127;
}

struct MetricSums {
    int64_t numel = 0;
    int64_t zeros = 0;
    int64_t nans = 0;
    int64_t infs = 0;
    int64_t nonzeroQ = 0; // quantized values != 0 (NaN counts as non-zero, as torch.count_nonzero does)
    int64_t saturated = 0; // |x * scale| > fmax (inf inputs included)
    double amax = 0.0; // max |x| over finite x
    double aminNonzero = INFINITY;
    double sum = 0.0; // moments of finite x
    double sumSq = 0.0;
    double sumCube = 0.0;
    double sumQuad = 0.0;
    double errSq = 0.0; // sum (x - q)^2 over finite x
    double dotXQ = 0.0;
    double sumQSq = 0.0;
    int64_t histIn[kHistBins] = {};
    int64_t histScaled[kHistBins] = {};
    // Block recipes: statistics of the per-block decode scales (scale_inv).
    int64_t blocks = 0;
    int64_t zeroAmaxBlocks = 0;
    double scaleInvMin = INFINITY;
    double scaleInvMax = 0.0;
    double log2ScaleInvSum = 0.0;

    void merge(const MetricSums &o)
    {
        numel += o.numel;
        zeros += o.zeros;
        nans += o.nans;
        infs += o.infs;
        nonzeroQ += o.nonzeroQ;
        saturated += o.saturated;
        amax = amax > o.amax ? amax : o.amax;
        aminNonzero = aminNonzero < o.aminNonzero ? aminNonzero : o.aminNonzero;
        sum += o.sum;
        sumSq += o.sumSq;
        sumCube += o.sumCube;
        sumQuad += o.sumQuad;
        errSq += o.errSq;
        dotXQ += o.dotXQ;
        sumQSq += o.sumQSq;
        for (int i = 0; i < kHistBins; ++i) {
            histIn[i] += o.histIn[i];
            histScaled[i] += o.histScaled[i];
        }
        blocks += o.blocks;
        zeroAmaxBlocks += o.zeroAmaxBlocks;
        scaleInvMin = scaleInvMin < o.scaleInvMin ? scaleInvMin : o.scaleInvMin;
        scaleInvMax = scaleInvMax > o.scaleInvMax ? scaleInvMax : o.scaleInvMax;
        log2ScaleInvSum += o.log2ScaleInvSum;
    }

    // log2Value must be log2(scaleInv) when scaleInv > 0; see addBlock.
    FP8_HD void addBlockLog2(float blockAmax, float scaleInv, double log2Value)
    {
        ++blocks;
        if (!(blockAmax > 0.0f))
            ++zeroAmaxBlocks;
        const double d = scaleInv;
        scaleInvMin = d < scaleInvMin ? d : scaleInvMin;
        scaleInvMax = d > scaleInvMax ? d : scaleInvMax;
        if (d > 0.0)
            log2ScaleInvSum += log2Value;
    }

    FP8_HD void addBlock(float blockAmax, float scaleInv) { addBlockLog2(blockAmax, scaleInv, exactLog2(scaleInv)); }

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

// Adds one element's contribution, `weight` times (a histogram of equal inputs folds in with its count).
FP8_HD void accumulateElement(float x, float scale, float scaleInv, Format f, MetricSums &m, int64_t weight = 1)
{
    const ElementEval e = evaluateElement(x, scale, scaleInv, f);
    m.numel += weight;
    m.nans += e.nan ? weight : 0;
    m.infs += e.inf ? weight : 0;
    m.zeros += e.zero ? weight : 0;
    m.saturated += e.saturated ? weight : 0;
    m.nonzeroQ += e.nonzeroQ ? weight : 0;
    if (e.binIn >= 0)
        m.histIn[e.binIn] += weight;
    if (e.binScaled >= 0)
        m.histScaled[e.binScaled] += weight;
    if (!e.finite)
        return;
    const double ax = e.absX;
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
    m.dotXQ += w * (e.x * e.q);
    m.sumQSq += w * (e.q * e.q);
}

} // namespace fp8scope::fp8math
