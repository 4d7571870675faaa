// Exact bit-level arithmetic of the low-precision formats fp8scope models: casts with round-to-nearest-even
// and saturation, decoding, and the scale rules of every recipe. Plain C++ with no Qt so that the CUDA
// backend compiles the very same code for the device.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define FP8_HD __host__ __device__ __forceinline__
#else
#define FP8_HD inline
#endif

namespace fp8scope::fp8math {

// The element formats. BF16 is the "no quantization" fallback: its cast is the BF16 rounding.
enum class Format : uint8_t { E4M3, E5M2, E4M3FNUZ, E5M2FNUZ, E2M1, E8M0, BF16 };

struct FormatSpec {
    int manBits; // explicit mantissa bits
    int minNormalExp; // unbiased exponent of the smallest normal value
    uint32_t maxCode; // code (without sign) of the largest finite magnitude
    uint32_t signBit; // where the sign lives in the code; 0 for unsigned formats
    uint32_t nanCode; // the code a NaN input becomes (NVIDIA's choice for formats without NaN)
    bool fnuz; // no negative zero: -0 and values that round to zero become +0
    float maxFinite;
    float minNormal;
    float minSubnormal;
};

FP8_HD FormatSpec formatSpec(Format f)
{
    switch (f) {
    case Format::E4M3: return {3, -6, 0x7E, 0x80, 0x7F, false, 448.0f, 0x1p-6f, 0x1p-9f};
    case Format::E5M2: return {2, -14, 0x7B, 0x80, 0x7F, false, 57344.0f, 0x1p-14f, 0x1p-16f};
    case Format::E4M3FNUZ: return {3, -7, 0x7F, 0x80, 0x80, true, 240.0f, 0x1p-7f, 0x1p-10f};
    case Format::E5M2FNUZ: return {2, -15, 0x7F, 0x80, 0x80, true, 57344.0f, 0x1p-15f, 0x1p-17f};
    case Format::E2M1: return {1, 0, 0x7, 0x8, 0x7, false, 6.0f, 1.0f, 0.5f};
    case Format::E8M0: return {0, -127, 0xFE, 0, 0xFF, false, 0x1p127f, 0x1p-127f, 0x1p-127f};
    case Format::BF16: return {7, -126, 0x7F7F, 0x8000, 0x7FC0, false, 3.38953139e38f, 0x1p-126f, 0x1p-133f};
    }
    return {};
}

// Largest finite float32.
constexpr float kFloatMax = 3.40282347e38f;

FP8_HD uint32_t floatBits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

FP8_HD float bitsFloat(uint32_t b)
{
    float x;
    memcpy(&x, &b, sizeof x);
    return x;
}

// Shifts right by s (1..31) rounding to nearest, ties to even.
FP8_HD uint32_t shiftRightRne(uint32_t v, uint32_t s)
{
    const uint32_t q = v >> s;
    const uint32_t rem = v & ((1u << s) - 1u);
    const uint32_t half = 1u << (s - 1u);
    return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

// |x| as a code of a sign-magnitude minifloat with `manBits` mantissa bits and smallest normal exponent
// `minNormalExp`, rounded to nearest even; not yet saturated. `absBits` is a finite float32's |x| bits.
FP8_HD uint32_t roundMagnitude(uint32_t absBits, int manBits, int minNormalExp)
{
    const int exp32 = int(absBits >> 23);
    const uint32_t man32 = absBits & 0x7FFFFFu;
    const int e = exp32 ? exp32 - 127 : -126;
    uint32_t full;
    int shift;
    if (e >= minNormalExp) {
        // Exponent field above the smallest normal, with the mantissa below it: rounding carries naturally.
        full = (uint32_t(e - minNormalExp + 1) << 23) | man32;
        shift = 23 - manBits;
    } else {
        full = exp32 ? (man32 | 0x800000u) : man32;
        shift = 23 - manBits + (minNormalExp - e);
    }
    if (shift <= 0)
        return full;
    if (shift > 31)
        return 0; // far below half the smallest step
    return shiftRightRne(full, uint32_t(shift));
}

// float32 -> element code, round to nearest even, saturating to the largest finite value; NaN -> NaN code.
// Agrees with NVIDIA's __nv_cvt_float_to_fp8 / __nv_cvt_float_to_fp4 (satfinite) for E4M3, E5M2 and E2M1.
FP8_HD uint32_t castToCode(float x, Format f)
{
    const uint32_t bits = floatBits(x);
    const uint32_t sign = bits >> 31;
    const uint32_t absBits = bits & 0x7FFFFFFFu;
    if (f == Format::BF16) {
        if (absBits > 0x7F800000u)
            return (bits >> 16) | 0x40u; // quiet NaN, sign kept
        return (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    }
    if (f == Format::E8M0)
        return 0; // E8M0 is a scale format; use e8m0FromFloat with an explicit rounding rule.
    const FormatSpec s = formatSpec(f);
    if (absBits > 0x7F800000u)
        return s.nanCode;
    uint32_t mag = absBits == 0x7F800000u ? s.maxCode : roundMagnitude(absBits, s.manBits, s.minNormalExp);
    if (mag > s.maxCode)
        mag = s.maxCode;
    if (s.fnuz && mag == 0)
        return 0;
    return sign ? (mag | s.signBit) : mag;
}

// Element code -> float32 (exact for every format; FNUZ NaN and E4M3 NaN decode to NaN, E5M2 inf to inf).
FP8_HD float decodeCode(uint32_t code, Format f)
{
    if (f == Format::BF16)
        return bitsFloat(code << 16);
    const FormatSpec s = formatSpec(f);
    if (f == Format::E8M0)
        return code == 0xFF ? bitsFloat(0x7FC00000u) : (code == 0 ? 0x1p-127f : bitsFloat(code << 23));
    if (s.fnuz && code == 0x80)
        return bitsFloat(0x7FC00000u);
    const uint32_t sign = code & s.signBit;
    const uint32_t mag = code & (s.signBit - 1u);
    if (f == Format::E4M3 && mag == 0x7F)
        return bitsFloat(0x7FC00000u);
    if (f == Format::E5M2 && mag >= 0x7C)
        return mag == 0x7C ? (sign ? bitsFloat(0xFF800000u) : bitsFloat(0x7F800000u)) : bitsFloat(0x7FC00000u);
    float v;
    if (mag < (1u << s.manBits)) {
        v = float(mag) * bitsFloat(uint32_t(s.minNormalExp - s.manBits + 127) << 23);
    } else {
        const uint32_t offset = uint32_t(s.minNormalExp - 1 + 127);
        v = bitsFloat((mag + (offset << s.manBits)) << (23 - s.manBits));
    }
    return sign ? -v : v;
}

// E8M0 scale code for a positive float: roundUp=false gives floor(log2 x) (round toward zero),
// roundUp=true gives ceil(log2 x); saturates to 0xFE, NaN -> 0xFF, values below 2^-127 -> 0.
// Agrees with NVIDIA's __nv_cvt_float_to_e8m0 (satfinite, cudaRoundZero / cudaRoundPosInf).
FP8_HD uint32_t e8m0FromFloat(float x, bool roundUp)
{
    const uint32_t absBits = floatBits(x) & 0x7FFFFFFFu;
    if (absBits > 0x7F800000u)
        return 0xFF;
    if (absBits >= 0x7F000000u)
        return 0xFE; // >= 2^127 (inf included): saturate
    uint32_t exp = absBits >> 23;
    const uint32_t man = absBits & 0x7FFFFFu;
    if (exp == 0) {
        // subnormal float: in [2^-127, 2^-126) floor is 2^-127 (code 0); ceil is 2^-127 only at exactly
        // 2^-127 and 2^-126 otherwise.
        if (!roundUp)
            return 0;
        return (man > 0x400000u) ? 1u : 0u;
    }
    if (roundUp && man != 0)
        ++exp;
    return exp > 0xFE ? 0xFEu : exp;
}

FP8_HD float e8m0ToFloat(uint32_t code)
{
    return decodeCode(code, Format::E8M0);
}

// IEEE binary16 -> binary32, exact.
FP8_HD float halfToFloat(uint16_t h)
{
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1Fu;
    const uint32_t man = h & 0x3FFu;
    float v;
    if (e == 0)
        v = float(man) * 0x1p-24f;
    else if (e == 31)
        v = bitsFloat(man ? 0x7FC00000u : 0x7F800000u);
    else
        v = bitsFloat(((e + 112u) << 23) | (man << 13));
    return bitsFloat(floatBits(v) | sign);
}

// Largest power of two not above x (x > 0 finite), as a float.
FP8_HD float pow2Floor(float x)
{
    const uint32_t b = floatBits(x);
    if ((b & 0x7F800000u) == 0)
        return x > 0.0f ? 0x1p-126f : 0.0f; // subnormals: the caller never needs finer
    return bitsFloat(b & 0xFF800000u);
}

FP8_HD bool isFiniteBits(uint32_t absBits)
{
    return absBits < 0x7F800000u;
}

// Per-tensor scale fmax / amax (current scaling, 1x128 and 128x128 blocks). amax == 0 keeps scale 1; an
// overflowing quotient is clamped to the largest float. pow2 rounds the scale down to a power of two.
FP8_HD float amaxScale(float fmax, float amax, bool pow2)
{
    if (!(amax > 0.0f) || !(amax <= kFloatMax))
        return 1.0f;
    float s = fmax / amax;
    if (!(s <= kFloatMax))
        s = kFloatMax;
    return pow2 ? pow2Floor(s) : s;
}

// Delayed scaling (Transformer Engine's default): (fmax / amax) / 2^margin, keeping the previous scale when
// the reduced amax is 0, NaN or inf, or the new scale is not finite.
FP8_HD float delayedScale(float fmax, float reducedAmax, int margin, float previousScale)
{
    if (!(reducedAmax > 0.0f) || !(reducedAmax <= kFloatMax))
        return previousScale;
    float marginScale = 1.0f;
    for (int i = 0; i < margin && i < 127; ++i)
        marginScale *= 2.0f;
    for (int i = 0; i > margin && i > -126; --i)
        marginScale *= 0.5f;
    const float s = (fmax / reducedAmax) / marginScale;
    return (s <= kFloatMax) ? s : previousScale;
}

// MXFP8 block scale as an E8M0 code. Transformer Engine: ceil(log2(amax * (1/fmax))) computed with its
// float reciprocal; OCP MX v1.0: floor(log2(amax)) - emax(element).
FP8_HD uint32_t mxScaleCode(float amax, Format element, bool ocpRule)
{
    const FormatSpec s = formatSpec(element);
    if (!ocpRule) {
        const float rcp = 1.0f / s.maxFinite;
        return e8m0FromFloat(amax * rcp, true);
    }
    if (!(amax > 0.0f))
        return 0;
    const uint32_t b = floatBits(amax);
    int floorLog2 = int(b >> 23) - 127;
    if ((b >> 23) == 0) {
        // subnormal amax: locate the leading bit
        uint32_t m = b & 0x7FFFFFu;
        int lead = 22;
        while (lead > 0 && !(m & (1u << lead)))
            --lead;
        floorLog2 = -149 + lead;
    }
    const int emax = int(floatBits(s.maxFinite) >> 23) - 127;
    int code = floorLog2 - emax + 127;
    if (code < 0)
        code = 0;
    if (code > 0xFE)
        code = 0xFE;
    return uint32_t(code);
}

// NVFP4 two-level scaling. The global encode scale maps the tensor amax onto fmax(E4M3) * fmax(E2M1);
// each 16-element block stores amax/6 times that scale as an E4M3 code.
FP8_HD float nvfp4GlobalEncodeScale(float globalAmax)
{
    if (!(globalAmax > 0.0f) || !(globalAmax <= kFloatMax))
        return 1.0f;
    const float s = (448.0f * 6.0f) / globalAmax;
    return (s <= kFloatMax) ? s : kFloatMax;
}

struct BlockScale {
    float encode; // multiply before the cast
    float decode; // multiply after the cast (the scale_inv the kernel would store)
};

FP8_HD BlockScale nvfp4BlockScale(float blockAmax, float globalEncode)
{
    const float globalDecode = 1.0f / globalEncode;
    const float blockDecode = blockAmax * (1.0f / 6.0f);
    const float blockDecodeFp8 = decodeCode(castToCode(blockDecode * globalEncode, Format::E4M3), Format::E4M3);
    const float decode = blockDecodeFp8 * globalDecode;
    if (!(decode > 0.0f))
        return {0.0f, 0.0f};
    const float encode = 1.0f / decode;
    return {(encode <= kFloatMax) ? encode : kFloatMax, decode};
}

} // namespace fp8scope::fp8math
