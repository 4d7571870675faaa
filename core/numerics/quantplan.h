// How one tensor is to be quantized: the element format and where its scales come from. Resolved from a
// Recipe by the metrics engine and handed to a backend; plain C++ so that CUDA kernels take it as is.
#pragma once

#include "core/formats/fp8math.h"

namespace fp8scope::fp8math {

enum class ScaleMode : uint8_t {
    Tensor, // one scale for the whole tensor (delayed, current, BF16)
    RowBlocks, // 1 x blockCols blocks along each row (MXFP8 1x32, 1x128, NVFP4 1x16)
    TileBlocks, // blockRows x blockCols tiles (MXFP8 32x1 column-wise, 128x128)
};

enum class BlockRule : uint8_t {
    AmaxExact, // fmax / amax, FP32
    AmaxPow2, // fmax / amax rounded down to a power of two
    MxTe, // E8M0, Transformer Engine rounding (exponent rounded up)
    MxOcp, // E8M0, OCP MX v1.0 rule (floor(log2 amax) - emax)
    Nvfp4, // E4M3 block scale under an FP32 global scale
};

struct QuantPlan {
    Format format = Format::E4M3;
    ScaleMode mode = ScaleMode::Tensor;
    BlockRule rule = BlockRule::AmaxExact;
    int blockRows = 1;
    int blockCols = 1;
    float tensorScale = 1.0f; // Tensor mode
    float tensorScaleInv = 1.0f;
    float globalEncode = 1.0f; // NVFP4
};

// Encode and decode scale of one block whose finite amax is `amax`.
FP8_HD BlockScale blockScaleFor(float amax, const QuantPlan &plan)
{
    const float fmax = formatSpec(plan.format).maxFinite;
    switch (plan.rule) {
    case BlockRule::AmaxExact:
    case BlockRule::AmaxPow2: {
        const float s = amaxScale(fmax, amax, plan.rule == BlockRule::AmaxPow2);
        return {s, 1.0f / s};
    }
    case BlockRule::MxTe:
    case BlockRule::MxOcp: {
        const uint32_t code = mxScaleCode(amax, plan.format, plan.rule == BlockRule::MxOcp);
        // 2^(127 - code) for the encode side; code 0 decodes to 2^-127 and encodes as 2^127.
        return {e8m0ToFloat(254 - code), e8m0ToFloat(code)};
    }
    case BlockRule::Nvfp4: return nvfp4BlockScale(amax, plan.globalEncode);
    }
    return {1.0f, 1.0f};
}

// Where a per-block pass writes each block's statistics (block i of a grid, row-major): its decode scale
// (scale_inv) and finite amax, how many of its elements are finite and non-zero, how many of those quantize
// to zero (underflow), how many saturate (|x * scale| above the format's largest value, inf inputs included),
// and the sum of |x - q| / |x| over its finite non-zero elements.
struct BlockStatsOut {
    float *decode = nullptr;
    float *amax = nullptr;
    uint32_t *nonzero = nullptr;
    uint32_t *lost = nullptr;
    uint32_t *saturated = nullptr;
    float *relErr = nullptr;
};

} // namespace fp8scope::fp8math
