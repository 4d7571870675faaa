#include "auditkernels.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

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

// Partial sums in float over one segment (at most a row: a few thousand elements, 4 to 16 lanes each), added
// to the double totals once a segment. Four sums an element: the error as dequantized (the one that must not
// cancel: it is compared with a fresh quantization's, which can be zero), and x^2, v x and v^2, from which the
// products with the scale and the other convention's error follow (that error is only ever compared with a far
// larger one). No test for non-finite values (none in a sound checkpoint), so that the loop is a few vector
// operations an element; a segment whose sums come out not finite is summed again by the careful loop.
struct Partial {
    float err = 0, ref = 0, vx = 0, vv = 0, refMax = 0, codeMax = 0;
};

template <bool e5m2> const std::array<float, 256> &decodeTable()
{
    static const auto table = [] {
        std::array<float, 256> t {};
        for (uint32_t c = 0; c < 256; ++c)
            t[c] = decode<e5m2>(c);
        return t;
    }();
    return table;
}

// The portable sums: the codes' values through a table, a block at a time (a table lookup does not vectorize;
// the sums do).
template <bool e5m2, class Ref> Partial portableSums(const uint8_t *codes, const Ref *x, int64_t n, float s)
{
    const auto &table = decodeTable<e5m2>();
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
    return {err, ref, vx, vv, refMax, codeMax};
}

#if defined(__x86_64__)
#define FP8SCOPE_AUDIT_VECTOR 1
#define FP8SCOPE_AVX2 [[gnu::target("avx2,f16c,fma")]]

FP8SCOPE_AVX2 inline float horizontalSum(__m256 v)
{
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

FP8SCOPE_AVX2 inline float horizontalMax(__m256 v)
{
    const __m128 q = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 d = _mm_max_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_max_ss(d, _mm_movehdup_ps(d)));
}

// Eight codes as halves whose value is the code's (E5M2: the code is a half's upper byte) or 2^-8 of it (E4M3:
// sign, then the seven bits one place lower, the exponent's top bit clear; subnormals included). E4M3's NaN code
// becomes 480, which is why a segment holding one is summed by the careful loop.
template <bool e5m2> FP8SCOPE_AVX2 inline __m256 decode8(const uint8_t *codes)
{
    const __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(codes));
    if constexpr (e5m2)
        return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(raw), 8));
    else
        return _mm256_cvtph_ps(
            _mm_and_si128(_mm_slli_epi16(_mm_cvtepi8_epi16(raw), 7), _mm_set1_epi16(int16_t(0xBFFF))));
}

FP8SCOPE_AVX2 inline __m256 widen8(const float *x)
{
    return _mm256_loadu_ps(x);
}

FP8SCOPE_AVX2 inline __m256 widen8(const uint16_t *x)
{
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i *>(x));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}

// The largest low seven bits of n codes, 32 at a time.
FP8SCOPE_AVX2 inline uint8_t maxLowBits(const uint8_t *codes, int64_t n)
{
    __m256i m = _mm256_setzero_si256();
    const __m256i low = _mm256_set1_epi8(0x7F);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        m = _mm256_max_epu8(m, _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(codes + i)), low));
    alignas(32) uint8_t lanes[32];
    _mm256_store_si256(reinterpret_cast<__m256i *>(lanes), m);
    uint8_t r = 0;
    for (uint8_t v : lanes)
        r = std::max(r, v);
    for (; i < n; ++i)
        r = std::max(r, uint8_t(codes[i] & 0x7F));
    return r;
}

// The vector sums: two sets of accumulators (the additions' latency), sixteen elements a step; the largest
// code's value from the codes' largest low seven bits; the tail through the table.
template <bool e5m2, class Ref> FP8SCOPE_AVX2 Partial vectorSums(const uint8_t *codes, const Ref *x, int64_t n, float s)
{
    const auto &table = decodeTable<e5m2>();
    const uint8_t top = maxLowBits(codes, n);
    if (top >= (e5m2 ? 0x7C : 0x7F))
        return {std::numeric_limits<float>::infinity()}; // a special code: the careful loop
    // E4M3's halves are 2^-8 of the values: their products with the scale take it back.
    const float unit = e5m2 ? 1.0f : 256.0f;
    const __m256 sv = _mm256_set1_ps(s * unit);
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 err0 = _mm256_setzero_ps(), ref0 = err0, vx0 = err0, vv0 = err0, max0 = err0;
    __m256 err1 = err0, ref1 = err0, vx1 = err0, vv1 = err0, max1 = err0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 v0 = decode8<e5m2>(codes + i), x0 = widen8(x + i);
        const __m256 v1 = decode8<e5m2>(codes + i + 8), x1 = widen8(x + i + 8);
        const __m256 e0 = _mm256_fmsub_ps(v0, sv, x0), e1 = _mm256_fmsub_ps(v1, sv, x1);
        err0 = _mm256_fmadd_ps(e0, e0, err0);
        err1 = _mm256_fmadd_ps(e1, e1, err1);
        ref0 = _mm256_fmadd_ps(x0, x0, ref0);
        ref1 = _mm256_fmadd_ps(x1, x1, ref1);
        vx0 = _mm256_fmadd_ps(v0, x0, vx0);
        vx1 = _mm256_fmadd_ps(v1, x1, vx1);
        vv0 = _mm256_fmadd_ps(v0, v0, vv0);
        vv1 = _mm256_fmadd_ps(v1, v1, vv1);
        max0 = _mm256_max_ps(max0, _mm256_and_ps(x0, magnitude));
        max1 = _mm256_max_ps(max1, _mm256_and_ps(x1, magnitude));
    }
    Partial p;
    p.err = horizontalSum(_mm256_add_ps(err0, err1));
    p.ref = horizontalSum(_mm256_add_ps(ref0, ref1));
    // The halves' sums in the codes' units.
    p.vx = horizontalSum(_mm256_add_ps(vx0, vx1)) * unit;
    p.vv = horizontalSum(_mm256_add_ps(vv0, vv1)) * unit * unit;
    p.refMax = horizontalMax(_mm256_max_ps(max0, max1));
    p.codeMax = table[top];
    for (; i < n; ++i) {
        const float v = table[codes[i]], xi = widen(x[i]);
        const float e = v * s - xi;
        p.err += e * e;
        p.ref += xi * xi;
        p.vx += v * xi;
        p.vv += v * v;
        p.refMax = std::max(p.refMax, std::fabs(xi));
    }
    return p;
}

// AVX2 and FMA as the compiler's runtime knows them (the system's support of the wide registers included); F16C
// from CPUID (every processor with AVX2 has it, but some compilers' runtimes cannot be asked).
bool detectVector()
{
    __builtin_cpu_init();
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __get_cpuid(1, &a, &b, &c, &d)
        && (c & bit_F16C) != 0;
}
#endif

bool hasVector()
{
#ifdef FP8SCOPE_AUDIT_VECTOR
    static const bool yes = detectVector();
    return yes;
#else
    return false;
#endif
}

template <bool e5m2, class Ref>
void addSegmentT(const uint8_t *codes, const Ref *x, int64_t n, float s, float invS, SegmentSums &out, Kernel kernel)
{
    Partial p;
#ifdef FP8SCOPE_AUDIT_VECTOR
    if (kernel == Kernel::Best && hasVector())
        p = vectorSums<e5m2>(codes, x, n, s);
    else
#endif
        p = portableSums<e5m2>(codes, x, n, s);
    float err = p.err, ref = p.ref, refMax = p.refMax, codeMax = p.codeMax;
    float inv = float(double(p.vv) * invS * invS - 2.0 * double(p.vx) * invS + double(ref));
    float deq = float(double(p.vv) * s * s);
    float dot = float(double(p.vx) * s);
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

bool vectorKernels()
{
    return hasVector();
}

void addSegment(
    const uint8_t *codes, bool e5m2, const float *x, int64_t n, float s, float invS, SegmentSums &out, Kernel kernel)
{
    e5m2 ? addSegmentT<true>(codes, x, n, s, invS, out, kernel) : addSegmentT<false>(codes, x, n, s, invS, out, kernel);
}

void addSegment(const uint8_t *codes, bool e5m2, const uint16_t *bf16, int64_t n, float s, float invS, SegmentSums &out,
    Kernel kernel)
{
    e5m2 ? addSegmentT<true>(codes, bf16, n, s, invS, out, kernel)
         : addSegmentT<false>(codes, bf16, n, s, invS, out, kernel);
}

} // namespace fp8scope::auditkernels
