// The fused metrics pass written one element at a time. It is the definition the vector CPU kernels and
// the CUDA kernels must reproduce, the tail handler of the vector kernels, and the scalar baseline of the
// benchmark. Plain C++ (no Qt) so the CUDA backend can call it on the device.
#pragma once

#include "metricsums.h"
#include "quantplan.h"

#include <cstddef>

namespace fp8scope::fp8math {

FP8_HD float scalarAmax(const float *x, size_t n)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; ++i) {
        const float a = bitsFloat(floatBits(x[i]) & 0x7FFFFFFFu);
        if (a <= kFloatMax && a > amax)
            amax = a;
    }
    return amax;
}

FP8_HD void scalarAccumulateUniform(const float *x, size_t n, float scale, float scaleInv, Format f, MetricSums &m)
{
    for (size_t i = 0; i < n; ++i)
        accumulateElement(x[i], scale, scaleInv, f, m);
}

// `rows` rows of `rowLen` elements; blocks of plan.blockCols restart at every row (the last one of a row
// may be short).
FP8_HD void scalarAccumulateRowBlocks(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m)
{
    const size_t b = size_t(plan.blockCols);
    for (size_t r = 0; r < rows; ++r) {
        const float *row = x + r * rowLen;
        for (size_t c = 0; c < rowLen; c += b) {
            const size_t len = (rowLen - c < b) ? rowLen - c : b;
            const float amax = scalarAmax(row + c, len);
            const BlockScale s = blockScaleFor(amax, plan);
            m.addBlock(amax, s.decode);
            scalarAccumulateUniform(row + c, len, s.encode, s.decode, plan.format, m);
        }
    }
}

// Tiles of plan.blockRows x plan.blockCols over `rows` rows (a multiple of blockRows except at the end of
// the tensor). `colScale` and `colScaleInv` are scratch of rowLen floats each.
FP8_HD void scalarAccumulateTiles(const float *x, size_t rowLen, size_t rows, const QuantPlan &plan, MetricSums &m,
    float *colScale, float *colScaleInv)
{
    const size_t br = size_t(plan.blockRows);
    const size_t bc = size_t(plan.blockCols);
    for (size_t r0 = 0; r0 < rows; r0 += br) {
        const size_t nr = (rows - r0 < br) ? rows - r0 : br;
        for (size_t c0 = 0; c0 < rowLen; c0 += bc) {
            const size_t nc = (rowLen - c0 < bc) ? rowLen - c0 : bc;
            float amax = 0.0f;
            for (size_t r = r0; r < r0 + nr; ++r) {
                const float a = scalarAmax(x + r * rowLen + c0, nc);
                amax = a > amax ? a : amax;
            }
            const BlockScale s = blockScaleFor(amax, plan);
            m.addBlock(amax, s.decode);
            for (size_t c = c0; c < c0 + nc; ++c) {
                colScale[c] = s.encode;
                colScaleInv[c] = s.decode;
            }
        }
        for (size_t r = r0; r < r0 + nr; ++r) {
            const float *row = x + r * rowLen;
            for (size_t c = 0; c < rowLen; ++c)
                accumulateElement(row[c], colScale[c], colScaleInv[c], plan.format, m);
        }
    }
}

// The statistics of one block of nr x nc elements (rows rowStride apart) under its scale, written to
// block `index` of `out`: the definition the vector per-block kernel reproduces (its relative errors are
// summed in float32, these in double and rounded once).
FP8_HD void scalarBlockStats(const float *x, size_t rowStride, size_t nr, size_t nc, float amax, const BlockScale &s,
    Format f, const BlockStatsOut &out, size_t index)
{
    uint32_t nonzero = 0, lost = 0, saturated = 0;
    double rel = 0.0;
    for (size_t r = 0; r < nr; ++r) {
        for (size_t c = 0; c < nc; ++c) {
            const ElementEval e = evaluateElement(x[r * rowStride + c], s.encode, s.decode, f);
            saturated += e.saturated ? 1u : 0u;
            if (!e.finite || e.zero)
                continue;
            ++nonzero;
            lost += e.nonzeroQ ? 0u : 1u;
            rel += (e.x > e.q ? e.x - e.q : e.q - e.x) / double(e.absX);
        }
    }
    out.decode[index] = s.decode;
    out.amax[index] = amax;
    out.nonzero[index] = nonzero;
    out.lost[index] = lost;
    out.saturated[index] = saturated;
    out.relErr[index] = float(rel);
}

} // namespace fp8scope::fp8math
