// Casts, decoding and scale rules of core/numerics/fp8math.h against known values, an independent
// nearest-code search, and (where the CUDA headers exist) NVIDIA's host conversions on all bfloat16 patterns.
#include "core/formats/fp8math.h"
#include "core/numerics/quantplan.h"
#include "testmain.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#ifdef FP8SCOPE_HAVE_CUDA_HEADERS
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

using namespace fp8scope::fp8math;
Q_DECLARE_METATYPE(fp8scope::fp8math::Format)

namespace {

// Independent oracle: decode every code, then pick the nearest finite value to |x| (saturating), ties to
// the even code. Works in double on the decoded table only.
uint32_t nearestCode(float x, Format f)
{
    const FormatSpec s = formatSpec(f);
    if (std::isnan(x))
        return s.nanCode;
    const double ax = std::min<double>(std::fabs(double(x)), s.maxFinite);
    uint32_t best = 0;
    double bestErr = INFINITY;
    for (uint32_t c = 0; c <= s.maxCode; ++c) {
        const double v = decodeCode(c, f);
        if (std::isnan(v))
            continue;
        const double err = std::fabs(v - ax);
        if (err < bestErr || (err == bestErr && (c & 1u) == 0)) {
            best = c;
            bestErr = err;
        }
    }
    if (best == 0 && s.fnuz)
        return 0;
    return std::signbit(x) ? (best | s.signBit) : best;
}

float bf16(uint32_t pattern)
{
    return bitsFloat(pattern << 16);
}

} // namespace

class TestFp8Math : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void knownValues_data();
    void knownValues();
    void formatLimits_data();
    void formatLimits();
    void decodeRoundTrips();
    void fnuzAgainstNearestSearch_data();
    void fnuzAgainstNearestSearch();
    void ocpFormatsAgainstNearestSearch();
    void bfloat16PatternsAgainstCuda();
    void bf16Rounding();
    void e8m0Rules();
    void mxScaleRules();
    void delayedScaleKeepsPrevious();
    void amaxScale();
    void nvfp4Scales();
    void halfConversion();
};

void TestFp8Math::knownValues_data()
{
    QTest::addColumn<Format>("format");
    QTest::addColumn<float>("x");
    QTest::addColumn<uint32_t>("code");
    QTest::newRow("e4m3 one") << Format::E4M3 << 1.0f << 0x38u;
    QTest::newRow("e4m3 max") << Format::E4M3 << 448.0f << 0x7Eu;
    QTest::newRow("e4m3 saturates") << Format::E4M3 << 1.0e6f << 0x7Eu;
    QTest::newRow("e4m3 -inf saturates") << Format::E4M3 << -INFINITY << 0xFEu;
    QTest::newRow("e4m3 nan") << Format::E4M3 << NAN << 0x7Fu;
    QTest::newRow("e4m3 min subnormal") << Format::E4M3 << 0x1p-9f << 0x01u;
    QTest::newRow("e4m3 half min subnormal ties to zero") << Format::E4M3 << 0x1p-10f << 0x00u;
    QTest::newRow("e4m3 1.5 x min subnormal ties to even 2") << Format::E4M3 << 0x1.8p-9f << 0x02u;
    QTest::newRow("e4m3 -0") << Format::E4M3 << -0.0f << 0x80u;
    QTest::newRow("e4m3 tie 1.0625 -> 1.0") << Format::E4M3 << 1.0625f << 0x38u;
    QTest::newRow("e4m3 tie 1.1875 -> 1.25") << Format::E4M3 << 1.1875f << 0x3Au;
    QTest::newRow("e5m2 max") << Format::E5M2 << 57344.0f << 0x7Bu;
    QTest::newRow("e5m2 inf saturates") << Format::E5M2 << INFINITY << 0x7Bu;
    QTest::newRow("e5m2 min subnormal") << Format::E5M2 << 0x1p-16f << 0x01u;
    QTest::newRow("e4m3fnuz max") << Format::E4M3FNUZ << 240.0f << 0x7Fu;
    QTest::newRow("e4m3fnuz nan") << Format::E4M3FNUZ << NAN << 0x80u;
    QTest::newRow("e4m3fnuz -0 is +0") << Format::E4M3FNUZ << -0.0f << 0x00u;
    QTest::newRow("e4m3fnuz tiny negative is +0") << Format::E4M3FNUZ << -0x1p-20f << 0x00u;
    QTest::newRow("e5m2fnuz min subnormal") << Format::E5M2FNUZ << 0x1p-17f << 0x01u;
    QTest::newRow("e2m1 six") << Format::E2M1 << 6.0f << 0x7u;
    QTest::newRow("e2m1 5 ties to 4") << Format::E2M1 << 5.0f << 0x6u;
    QTest::newRow("e2m1 0.25 ties to 0") << Format::E2M1 << 0.25f << 0x0u;
    QTest::newRow("e2m1 0.75 ties to 1") << Format::E2M1 << 0.75f << 0x2u;
    QTest::newRow("e2m1 -3") << Format::E2M1 << -3.0f << 0xDu;
}

void TestFp8Math::knownValues()
{
    QFETCH(Format, format);
    QFETCH(float, x);
    QFETCH(uint32_t, code);
    QCOMPARE(castToCode(x, format), code);
}

void TestFp8Math::formatLimits_data()
{
    QTest::addColumn<Format>("format");
    QTest::addColumn<double>("max");
    QTest::addColumn<double>("minNormal");
    QTest::addColumn<double>("minSubnormal");
    QTest::newRow("e4m3") << Format::E4M3 << 448.0 << std::ldexp(1.0, -6) << std::ldexp(1.0, -9);
    QTest::newRow("e5m2") << Format::E5M2 << 57344.0 << std::ldexp(1.0, -14) << std::ldexp(1.0, -16);
    QTest::newRow("e4m3fnuz") << Format::E4M3FNUZ << 240.0 << std::ldexp(1.0, -7) << std::ldexp(1.0, -10);
    QTest::newRow("e5m2fnuz") << Format::E5M2FNUZ << 57344.0 << std::ldexp(1.0, -15) << std::ldexp(1.0, -17);
    QTest::newRow("e2m1") << Format::E2M1 << 6.0 << 1.0 << 0.5;
}

void TestFp8Math::formatLimits()
{
    QFETCH(Format, format);
    QFETCH(double, max);
    QFETCH(double, minNormal);
    QFETCH(double, minSubnormal);
    const FormatSpec s = formatSpec(format);
    QCOMPARE(double(s.maxFinite), max);
    QCOMPARE(double(decodeCode(s.maxCode, format)), max);
    QCOMPARE(double(decodeCode(1, format)), minSubnormal);
    QCOMPARE(double(decodeCode(1u << s.manBits, format)), minNormal);
    QCOMPARE(double(s.minNormal), minNormal);
    QCOMPARE(double(s.minSubnormal), minSubnormal);
}

void TestFp8Math::decodeRoundTrips()
{
    for (Format f : {Format::E4M3, Format::E5M2, Format::E4M3FNUZ, Format::E5M2FNUZ, Format::E2M1}) {
        const FormatSpec s = formatSpec(f);
        const uint32_t codes = f == Format::E2M1 ? 16 : 256;
        int finite = 0;
        for (uint32_t c = 0; c < codes; ++c) {
            const float v = decodeCode(c, f);
            if (std::isnan(v) || std::isinf(v))
                continue;
            ++finite;
            if (v == 0.0f && c != 0 && (s.fnuz || c != s.signBit))
                QFAIL(qPrintable(QStringLiteral("code %1 decodes to zero").arg(c)));
            if (v == 0.0f)
                continue;
            QCOMPARE(castToCode(v, f), c);
        }
        // E4M3: 256 - 2 NaN codes; E5M2: 256 - 2 inf - 6 NaN; FNUZ: 255; E2M1: 16.
        const int expected = f == Format::E4M3 ? 254 : f == Format::E5M2 ? 248 : f == Format::E2M1 ? 16 : 255;
        QCOMPARE(finite, expected);
    }
}

void TestFp8Math::fnuzAgainstNearestSearch_data()
{
    QTest::addColumn<Format>("format");
    QTest::newRow("e4m3fnuz") << Format::E4M3FNUZ;
    QTest::newRow("e5m2fnuz") << Format::E5M2FNUZ;
}

void TestFp8Math::fnuzAgainstNearestSearch()
{
    QFETCH(Format, format);
    // Every bfloat16 pattern, then random float32 patterns concentrated around the format's range.
    for (uint32_t p = 0; p < 0x10000u; ++p) {
        const float x = bf16(p);
        if (castToCode(x, format) != nearestCode(x, format))
            QFAIL(qPrintable(QStringLiteral("bf16 0x%1: %2 vs %3")
                                 .arg(p, 4, 16)
                                 .arg(castToCode(x, format))
                                 .arg(nearestCode(x, format))));
    }
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint32_t> exp(100, 140);
    std::uniform_int_distribution<uint32_t> man(0, 0x7FFFFF);
    for (int i = 0; i < 200000; ++i) {
        const uint32_t bits = (uint32_t(i & 1) << 31) | (exp(rng) << 23) | man(rng);
        const float x = bitsFloat(bits);
        QCOMPARE(castToCode(x, format), nearestCode(x, format));
    }
}

void TestFp8Math::ocpFormatsAgainstNearestSearch()
{
    // The OCP formats too, so the oracle itself is checked against the NVIDIA-verified cast.
    for (Format f : {Format::E4M3, Format::E5M2, Format::E2M1}) {
        for (uint32_t p = 0; p < 0x10000u; ++p) {
            const float x = bf16(p);
            if (std::isnan(x))
                continue;
            QCOMPARE(castToCode(x, f), nearestCode(x, f));
        }
    }
}

void TestFp8Math::bfloat16PatternsAgainstCuda()
{
#ifdef FP8SCOPE_HAVE_CUDA_HEADERS
    for (uint32_t p = 0; p < 0x10000u; ++p) {
        __nv_bfloat16_raw raw;
        raw.x = uint16_t(p);
        const float x = bf16(p);
        QCOMPARE(castToCode(x, Format::E4M3), uint32_t(__nv_cvt_bfloat16raw_to_fp8(raw, __NV_SATFINITE, __NV_E4M3)));
        QCOMPARE(castToCode(x, Format::E5M2), uint32_t(__nv_cvt_bfloat16raw_to_fp8(raw, __NV_SATFINITE, __NV_E5M2)));
        QCOMPARE(castToCode(x, Format::E2M1), uint32_t(__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)));
        QCOMPARE(e8m0FromFloat(x, false), uint32_t(__nv_cvt_bfloat16raw_to_e8m0(raw, __NV_SATFINITE, cudaRoundZero)));
        QCOMPARE(e8m0FromFloat(x, true), uint32_t(__nv_cvt_bfloat16raw_to_e8m0(raw, __NV_SATFINITE, cudaRoundPosInf)));
    }
#else
    QSKIP("cuda_fp8.h / cuda_fp4.h not found: NVIDIA oracle unavailable");
#endif
}

void TestFp8Math::bf16Rounding()
{
    QCOMPARE(castToCode(1.0f, Format::BF16), 0x3F80u);
    // 1 + 2^-8 is exactly half way between 1 and 1 + 2^-7: ties to even (1.0).
    QCOMPARE(castToCode(1.0f + 0x1p-8f, Format::BF16), 0x3F80u);
    QCOMPARE(castToCode(1.0f + 0x1p-8f + 0x1p-20f, Format::BF16), 0x3F81u);
    QCOMPARE(castToCode(1.0f + 0x1p-7f + 0x1p-8f, Format::BF16), 0x3F82u);
    QVERIFY(std::isnan(decodeCode(castToCode(NAN, Format::BF16), Format::BF16)));
}

void TestFp8Math::e8m0Rules()
{
    QCOMPARE(e8m0FromFloat(1.0f, false), 127u);
    QCOMPARE(e8m0FromFloat(1.0f, true), 127u);
    QCOMPARE(e8m0FromFloat(1.5f, false), 127u);
    QCOMPARE(e8m0FromFloat(1.5f, true), 128u);
    QCOMPARE(e8m0FromFloat(0.0f, true), 0u);
    QCOMPARE(e8m0FromFloat(INFINITY, true), 0xFEu);
    QCOMPARE(e8m0FromFloat(NAN, false), 0xFFu);
    QCOMPARE(double(e8m0ToFloat(127)), 1.0);
    QCOMPARE(double(e8m0ToFloat(0)), std::ldexp(1.0, -127));
}

void TestFp8Math::mxScaleRules()
{
    // amax 448 with E4M3: TE ceil(log2(448/448)) = 0 -> code 127; OCP floor(log2 448) - 8 = 0 -> 127.
    QCOMPARE(mxScaleCode(448.0f, Format::E4M3, false), 127u);
    QCOMPARE(mxScaleCode(448.0f, Format::E4M3, true), 127u);
    // amax 500: TE rounds up to 2^1 so 500/2 fits; OCP keeps 2^0 and 500 saturates.
    QCOMPARE(mxScaleCode(500.0f, Format::E4M3, false), 128u);
    QCOMPARE(mxScaleCode(500.0f, Format::E4M3, true), 127u);
    // amax 300: TE 2^0 (300 <= 448); OCP floor(log2 300) - 8 = 0.
    QCOMPARE(mxScaleCode(300.0f, Format::E4M3, false), 127u);
    QCOMPARE(mxScaleCode(1.0f, Format::E5M2, true), uint32_t(127 - 15));
    QCOMPARE(mxScaleCode(0.0f, Format::E4M3, false), 0u);
    QCOMPARE(mxScaleCode(0.0f, Format::E4M3, true), 0u);
    // The encode/decode pair of a plan are exact reciprocals.
    QuantPlan plan;
    plan.rule = BlockRule::MxTe;
    plan.format = Format::E4M3;
    const BlockScale s = blockScaleFor(1000.0f, plan);
    QCOMPARE(double(s.encode) * double(s.decode), 1.0);
    QCOMPARE(double(s.decode), 4.0);
}

void TestFp8Math::delayedScaleKeepsPrevious()
{
    QCOMPARE(delayedScale(448.0f, 4.0f, 0, 1.0f), 112.0f);
    QCOMPARE(delayedScale(448.0f, 4.0f, 1, 1.0f), 56.0f);
    QCOMPARE(delayedScale(448.0f, 0.0f, 0, 3.0f), 3.0f);
    QCOMPARE(delayedScale(448.0f, NAN, 0, 3.0f), 3.0f);
    QCOMPARE(delayedScale(448.0f, INFINITY, 0, 3.0f), 3.0f);
    QCOMPARE(delayedScale(448.0f, 1e-45f, 0, 3.0f), 3.0f); // overflowing scale keeps the previous one
}

void TestFp8Math::amaxScale()
{
    QCOMPARE(fp8scope::fp8math::amaxScale(448.0f, 2.0f, false), 224.0f);
    QCOMPARE(fp8scope::fp8math::amaxScale(448.0f, 3.0f, true), 128.0f);
    QCOMPARE(fp8scope::fp8math::amaxScale(448.0f, 0.0f, false), 1.0f);
    QCOMPARE(fp8scope::fp8math::amaxScale(448.0f, 1e-45f, false), kFloatMax);
}

void TestFp8Math::nvfp4Scales()
{
    // Global amax 2688 = 448 * 6: global encode 1. A block with amax 6 has decode scale 1 (exact in E4M3).
    QCOMPARE(nvfp4GlobalEncodeScale(2688.0f), 1.0f);
    const BlockScale s = nvfp4BlockScale(6.0f, 1.0f);
    QCOMPARE(s.decode, 1.0f);
    QCOMPARE(s.encode, 1.0f);
    // An all-zero block quantizes to zero.
    QCOMPARE(nvfp4BlockScale(0.0f, 1.0f).encode, 0.0f);
    // The block scale is itself an E4M3 value: amax 7 -> 7/6 rounds to 1.125.
    QCOMPARE(nvfp4BlockScale(7.0f, 1.0f).decode, 1.125f);
}

void TestFp8Math::halfConversion()
{
    QCOMPARE(halfToFloat(0x3C00), 1.0f);
    QCOMPARE(halfToFloat(0xC000), -2.0f);
    QCOMPARE(halfToFloat(0x0001), 0x1p-24f);
    QCOMPARE(halfToFloat(0x7BFF), 65504.0f);
    QVERIFY(std::isinf(halfToFloat(0x7C00)));
    QVERIFY(std::isnan(halfToFloat(0x7E00)));
}

FP8SCOPE_TEST_APPLESS_MAIN(TestFp8Math)
#include "tst_fp8math.moc"
