#include "auditkernels.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>

namespace fp8scope::auditkernels {

uint8_t maxMagnitudeCode(const uint8_t *codes, int64_t n, uint8_t limit)
{
    // The plain maximum first (two instructions a vector); only a run holding a special code is scanned again
    // leaving those out.
    uint8_t m = 0;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t v = uint8_t(codes[i] & 0x7F);
        m = v > m ? v : m;
    }
    if (m < limit)
        return m;
    m = 0;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; ++i) {
        uint8_t v = uint8_t(codes[i] & 0x7F);
        v = v < limit ? v : uint8_t(0);
        m = v > m ? v : m;
    }
    return m;
}

namespace {

// The value of an FP8 code, with integer operations that vectorize (no table): E4M3 (NaN for 0x7F/0xFF) or
// E5M2; both kinds of special value become inf, which is left out.
template <bool e5m2> inline float decode(uint32_t c)
{
    const uint32_t sign = (c & 0x80u) << 24;
    const uint32_t man = e5m2 ? (c & 3u) : (c & 7u);
    const uint32_t exp = e5m2 ? ((c >> 2) & 0x1Fu) : ((c >> 3) & 0xFu);
    const uint32_t normal = sign | ((exp + (e5m2 ? 112u : 120u)) << 23) | (man << (e5m2 ? 21 : 20));
    const float sub = float(man) * (e5m2 ? 0x1p-16f : 0x1p-9f);
    const uint32_t subBits = std::bit_cast<uint32_t>(sub) | sign;
    const bool special = e5m2 ? exp == 31u : (c & 0x7Fu) == 0x7Fu;
    const uint32_t bits = special ? 0x7F800000u : (exp == 0 ? subBits : normal);
    return std::bit_cast<float>(bits);
}

inline float widen(float x)
{
    return x;
}

inline float widen(uint16_t bf16)
{
    return std::bit_cast<float>(uint32_t(bf16) << 16);
}

// The sums without a test for non-finite values (none in a sound checkpoint), so that the loop is a few
// vector operations an element; a segment whose sums come out not finite is summed again by the careful loop.
template <bool e5m2, class Ref>
[[gnu::always_inline]] inline void addSegmentT(
    const uint8_t *codes, const Ref *x, int64_t n, float s, float invS, SegmentSums &out)
{
    // The codes' values through a table, a block at a time (a table lookup does not vectorize; the sums do).
    static const auto table = [] {
        std::array<float, 256> t {};
        for (uint32_t c = 0; c < 256; ++c)
            t[c] = decode<e5m2>(c);
        return t;
    }();
    // Partial sums in float over one segment (at most a row: a few thousand elements, 4 to 16 lanes each),
    // added to the double totals once a segment.
    // Four sums an element: the error as dequantized (the one that must not cancel: it is compared with a
    // fresh quantization's, which can be zero), and x^2, v x and v^2, from which the products with the scale
    // and the other convention's error follow (that error is only ever compared with a far larger one).
    float err = 0, ref = 0, vx = 0, vv = 0, refMax = 0, codeMax = 0;
    constexpr int64_t kBlock = 256;
    float values[kBlock];
    for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
        const int64_t m = std::min(kBlock, n - b0);
        for (int64_t i = 0; i < m; ++i)
            values[i] = table[codes[b0 + i]];
        const Ref *xb = x + b0;
#pragma omp simd reduction(+ : err, ref, vx, vv) reduction(max : refMax, codeMax)
        for (int64_t i = 0; i < m; ++i) {
            const float v = values[i];
            const float xi = widen(xb[i]);
            const float e = v * s - xi;
            err += e * e;
            ref += xi * xi;
            vx += v * xi;
            vv += v * v;
            const float ax = std::fabs(xi), av = std::fabs(v);
            refMax = refMax > ax ? refMax : ax;
            codeMax = codeMax > av ? codeMax : av;
        }
    }
    float inv = float(double(vv) * invS * invS - 2.0 * double(vx) * invS + double(ref));
    float deq = float(double(vv) * s * s);
    float dot = float(double(vx) * s);
    inv = inv > 0 ? inv : 0.0f;
    if (!std::isfinite(err + inv + ref + deq + dot + codeMax * s + codeMax * invS + refMax)) {
        err = inv = ref = deq = dot = refMax = codeMax = 0;
        float deqMax = 0, invMax = 0;
        for (int64_t i = 0; i < n; ++i) {
            const float v = decode<e5m2>(codes[i]);
            const float d = v * s, a = v * invS, xi = widen(x[i]);
            if (!(std::fabs(d) <= FLT_MAX && std::fabs(a) <= FLT_MAX && std::fabs(xi) <= FLT_MAX))
                continue;
            err += (d - xi) * (d - xi);
            inv += (a - xi) * (a - xi);
            ref += xi * xi;
            deq += d * d;
            dot += d * xi;
            refMax = std::max(refMax, std::fabs(xi));
            deqMax = std::max(deqMax, std::fabs(d));
            invMax = std::max(invMax, std::fabs(a));
        }
        out.deqAmax = std::max(out.deqAmax, deqMax);
        out.invAmax = std::max(out.invAmax, invMax);
    } else {
        out.deqAmax = std::max(out.deqAmax, codeMax * s);
        out.invAmax = std::max(out.invAmax, codeMax * invS);
    }
    out.errSq += err;
    out.invErrSq += inv;
    out.refSq += ref;
    out.deqSq += deq;
    out.dot += dot;
    out.refAmax = std::max(out.refAmax, refMax);
}

} // namespace

// Compiled twice, for AVX2 and for the baseline, the loader picking one (GCC and Clang target_clones).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define FP8SCOPE_AUDIT_CLONES [[gnu::target_clones("avx2", "default")]]
#else
#define FP8SCOPE_AUDIT_CLONES
#endif

FP8SCOPE_AUDIT_CLONES
void addSegment(const uint8_t *codes, bool e5m2, const float *x, int64_t n, float s, float invS, SegmentSums &out)
{
    e5m2 ? addSegmentT<true>(codes, x, n, s, invS, out) : addSegmentT<false>(codes, x, n, s, invS, out);
}

FP8SCOPE_AUDIT_CLONES
void addSegment(const uint8_t *codes, bool e5m2, const uint16_t *bf16, int64_t n, float s, float invS, SegmentSums &out)
{
    e5m2 ? addSegmentT<true>(codes, bf16, n, s, invS, out) : addSegmentT<false>(codes, bf16, n, s, invS, out);
}

} // namespace fp8scope::auditkernels
