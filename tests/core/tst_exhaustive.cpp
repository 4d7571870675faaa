// Every one of the 2^32 float32 bit patterns through our casts and NVIDIA's cuda_fp8.h / cuda_fp4.h host
// conversions (round to nearest even, satfinite): E4M3, E5M2, E2M1, and E8M0 with both rounding rules.
#include "core/formats/fp8math.h"

#include <QTest>

#include <atomic>
#include <thread>
#include <vector>

#ifdef FP8SCOPE_HAVE_CUDA_HEADERS
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

using namespace fp8scope::fp8math;

class TestExhaustive : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void allFloat32Patterns_data();
    void allFloat32Patterns();
};

void TestExhaustive::allFloat32Patterns_data()
{
    QTest::addColumn<int>("which");
    QTest::newRow("e4m3") << 0;
    QTest::newRow("e5m2") << 1;
    QTest::newRow("e2m1") << 2;
    QTest::newRow("e8m0 round toward zero") << 3;
    QTest::newRow("e8m0 round up") << 4;
}

void TestExhaustive::allFloat32Patterns()
{
#ifdef FP8SCOPE_HAVE_CUDA_HEADERS
    QFETCH(int, which);
    auto ours = [which](float x) -> uint32_t {
        switch (which) {
        case 0: return castToCode(x, Format::E4M3);
        case 1: return castToCode(x, Format::E5M2);
        case 2: return castToCode(x, Format::E2M1);
        case 3: return e8m0FromFloat(x, false);
        default: return e8m0FromFloat(x, true);
        }
    };
    auto nvidia = [which](float x) -> uint32_t {
        switch (which) {
        case 0: return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
        case 1: return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
        case 2: return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest);
        case 3: return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundZero);
        default: return __nv_cvt_float_to_e8m0(x, __NV_SATFINITE, cudaRoundPosInf);
        }
    };
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::atomic<uint64_t> mismatches {0};
    std::atomic<uint64_t> firstBad {~uint64_t(0)};
    std::vector<std::thread> pool;
    const uint64_t total = uint64_t(1) << 32;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            const uint64_t begin = total / threads * t;
            const uint64_t end = t + 1 == threads ? total : total / threads * (t + 1);
            uint64_t bad = 0;
            for (uint64_t i = begin; i < end; ++i) {
                const float x = bitsFloat(uint32_t(i));
                if (ours(x) != nvidia(x)) {
                    if (bad++ == 0) {
                        uint64_t expected = ~uint64_t(0);
                        firstBad.compare_exchange_strong(expected, i);
                    }
                }
            }
            mismatches += bad;
        });
    }
    for (auto &th : pool)
        th.join();
    if (mismatches.load() != 0) {
        const float x = bitsFloat(uint32_t(firstBad.load()));
        QFAIL(qPrintable(QStringLiteral("%1 mismatches; first at 0x%2: ours 0x%3, NVIDIA 0x%4")
                             .arg(mismatches.load())
                             .arg(firstBad.load(), 8, 16, QLatin1Char('0'))
                             .arg(ours(x), 2, 16)
                             .arg(nvidia(x), 2, 16)));
    }
#else
    QSKIP("cuda_fp8.h / cuda_fp4.h not found: the exhaustive NVIDIA comparison needs the CUDA toolkit headers");
#endif
}

QTEST_APPLESS_MAIN(TestExhaustive)
#include "tst_exhaustive.moc"
