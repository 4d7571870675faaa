// Throughput of the fused metrics pass on a 256 MiB in-memory tensor (float32 and bfloat16), per recipe,
// with 1 and 2 threads, as GB/s of input and as a ratio to a plain vectorised read pass (sum) over the same
// buffer with the same threads, measured in the same run (one run of each in turn, so that both see the
// same phases of a shared machine; the ratio is the median of the per-pair ratios); plus the scalar
// definition as a baseline. Each recipe runs the passes MetricsEngine would run for it alone.
// "L2 GB/s" (one thread) runs the kernels of the same passes (amax where the recipe needs it, then the
// fused pass) over a 1 MiB slice again and again, so that it stays in the core's cache: the kernels' own
// speed, with memory out of the way. "bound" is that over the read pass from memory: the ratio these
// kernels could reach on this machine if memory cost nothing ("-" for the pattern-counting pass of
// per-tensor recipes on bfloat16, whose cost is in its tables).
// Prints a table; asserts nothing about time.
// Usage: bench_metrics [MiB] [repeats] [recipe,recipe,...|all] [float32,bfloat16|all]
#include "benchutil.h"
#include "core/numerics/cpubackend.h"
#include "core/numerics/cpukernels.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/scalarkernels.h"

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <thread>
#include <vector>

using namespace fp8scope;
using fp8scope::bench::medianSeconds;

namespace {

volatile double g_sink;

double readPass(DType dtype, const void *data, int64_t n, int threads)
{
    std::vector<std::thread> pool;
    std::vector<double> part(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            const int64_t b = n / threads * t;
            const int64_t e = t + 1 == threads ? n : n / threads * (t + 1);
            part[size_t(t)] = dtype == DType::F32
                ? cpukernels::sumFloat(static_cast<const float *>(data) + b, size_t(e - b))
                : cpukernels::sumBf16(static_cast<const uint16_t *>(data) + b, size_t(e - b));
        });
    }
    for (auto &th : pool)
        th.join();
    double s = 0;
    for (double v : part)
        s += v;
    return s;
}

} // namespace

int main(int argc, char **argv)
{
    const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 256;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
    const QStringList onlyRecipes = argc > 3 && QByteArray(argv[3]) != "all"
        ? QString::fromLocal8Bit(argv[3]).split(QLatin1Char(','))
        : QStringList();
    const QStringList onlyDtypes = argc > 4 && QByteArray(argv[4]) != "all"
        ? QString::fromLocal8Bit(argv[4]).split(QLatin1Char(','))
        : QStringList();
    const int64_t cols = 8192;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    std::printf(
        "fp8scope metrics benchmark: %lld MiB tensors, %d repeats (median), SIMD target %s, %u hardware threads\n",
        (long long)mib, repeats, cpukernels::simdTarget(), std::thread::hardware_concurrency());
    std::printf("%-8s %-14s %7s %10s %10s %8s %12s %9s %7s\n", "dtype", "recipe", "threads", "GB/s", "read GB/s",
        "ratio", "x scalar", "L2 GB/s", "bound");

    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    QString error;
    const char *recipeNames[] = {"delayed", "current", "current-pow2", "mxfp8", "mxfp8-ocp", "mxfp8-col", "block1x128",
        "block128x128", "nvfp4", "bf16"};
    for (DType dtype : {DType::F32, DType::BF16}) {
        const char *dtypeName = dtype == DType::F32 ? "float32" : "bfloat16";
        if (!onlyDtypes.isEmpty() && !onlyDtypes.contains(QLatin1String(dtypeName)))
            continue;
        const int64_t n = mib * (int64_t(1) << 20) / dtypeSize(dtype);
        const int64_t rows = n / cols;
        std::vector<float> f32;
        std::vector<uint16_t> b16;
        if (dtype == DType::F32) {
            f32.resize(size_t(n));
            for (float &v : f32)
                v = normal(rng) * std::exp2(-12.0f + 16.0f * u(rng));
        } else {
            b16.resize(size_t(n));
            for (uint16_t &v : b16)
                v = uint16_t(
                    fp8math::castToCode(normal(rng) * std::exp2(-12.0f + 16.0f * u(rng)), fp8math::Format::BF16));
        }
        const void *data = dtype == DType::F32 ? static_cast<const void *>(f32.data()) : b16.data();
        const double gb = double(n) * dtypeSize(dtype) / 1e9;

        // Scalar definition on a 1/16 slice (float32 view), extrapolated per GB of input.
        const int64_t sliceRows = std::max<int64_t>(128, rows / 16 / 128 * 128);
        std::vector<float> slice(size_t(sliceRows * cols));
        for (size_t i = 0; i < slice.size(); ++i)
            slice[i] = dtype == DType::F32 ? f32[i] : fp8math::decodeCode(b16[i], fp8math::Format::BF16);
        const double sliceGb = double(sliceRows * cols) * dtypeSize(dtype) / 1e9;

        for (const char *name : recipeNames) {
            if (!onlyRecipes.isEmpty() && !onlyRecipes.contains(QLatin1String(name)))
                continue;
            const Recipe recipe = *Recipe::parse(QString::fromLatin1(name), std::nullopt, &error);
            // Scalar baseline (one thread).
            const fp8math::QuantPlan scalarPlan = MetricsEngine::planFor(recipe, 1.0f);
            std::vector<float> scratch(size_t(2 * cols));
            const double scalarSec = medianSeconds(1, [&] {
                fp8math::MetricSums m;
                if (recipe.needsTensorAmax())
                    g_sink = fp8math::scalarAmax(slice.data(), slice.size());
                switch (scalarPlan.mode) {
                case fp8math::ScaleMode::Tensor:
                    fp8math::scalarAccumulateUniform(slice.data(), slice.size(), scalarPlan.tensorScale,
                        scalarPlan.tensorScaleInv, scalarPlan.format, m);
                    break;
                case fp8math::ScaleMode::RowBlocks:
                    fp8math::scalarAccumulateRowBlocks(slice.data(), size_t(cols), size_t(sliceRows), scalarPlan, m);
                    break;
                case fp8math::ScaleMode::TileBlocks:
                    fp8math::scalarAccumulateTiles(slice.data(), size_t(cols), size_t(sliceRows), scalarPlan, m,
                        scratch.data(), scratch.data() + cols);
                    break;
                }
                g_sink = m.errSq;
            });
            const double scalarGbs = sliceGb / scalarSec;
            for (int threads : {1, 2}) {
                CpuBackend backend(threads);
                const ChunkView view {dtype, data, rows, cols};
                // The passes MetricsEngine runs for this recipe alone: one pattern-counting pass for a
                // per-tensor recipe on 16-bit input (amax included), else the amax pass where the recipe
                // needs it and the fused pass.
                const bool byPatterns = backend.countsPatterns(dtype)
                    && MetricsEngine::planFor(recipe, 1.0f).mode == fp8math::ScaleMode::Tensor;
                const bench::Paired t = bench::pairedMedians(
                    repeats,
                    [&] {
                        fp8math::MetricSums m;
                        if (byPatterns) {
                            PatternCounts counts(dtype);
                            backend.countPatterns(view, counts);
                            counts.fold(MetricsEngine::planFor(recipe, counts.amax()), m);
                        } else {
                            const float amax = recipe.needsTensorAmax() ? backend.amax(view) : 1.0f;
                            backend.accumulate(view, MetricsEngine::planFor(recipe, amax), m);
                        }
                        g_sink = m.errSq;
                    },
                    [&] { g_sink = readPass(dtype, data, n, threads); });
                std::printf("%-8s %-14s %7d %10.2f %10.2f %8.2f %12.1f", dtypeName, name, threads, gb / t.workSeconds,
                    gb / t.referenceSeconds, t.ratio, (gb / t.workSeconds) / scalarGbs);
                if (threads == 1 && !byPatterns) {
                    // The kernels themselves, one thread, on 128 rows (whole 128x128 tiles) of 1 MiB of the
                    // same values, with one KernelScratch for all laps (the backend sets up a 4 MiB
                    // histogram table per call, which a 256 MiB call spreads thin but a 1 MiB one would
                    // not). Not for the pattern pass: its tables, not its loop, would be measured.
                    const int64_t smallCols = int64_t(1 << 20) / 128 / dtypeSize(dtype);
                    const size_t smallN = size_t(128 * smallCols);
                    const cpukernels::Input in = dtype == DType::F32 ? cpukernels::Input::F32 : cpukernels::Input::BF16;
                    cpukernels::KernelScratch scratch;
                    constexpr int kLaps = 64;
                    const double sec = medianSeconds(
                        std::max(repeats, 5),
                        [&] {
                            fp8math::MetricSums m;
                            for (int k = 0; k < kLaps; ++k) {
                                const float amax
                                    = recipe.needsTensorAmax() ? cpukernels::amaxAbs(data, in, smallN) : 1.0f;
                                const fp8math::QuantPlan plan = MetricsEngine::planFor(recipe, amax);
                                switch (plan.mode) {
                                case fp8math::ScaleMode::Tensor:
                                    cpukernels::accumulateUniform(data, in, smallN, plan.tensorScale,
                                        plan.tensorScaleInv, plan.format, m, scratch);
                                    break;
                                case fp8math::ScaleMode::RowBlocks:
                                    cpukernels::accumulateRowBlocks(data, in, size_t(smallCols), 128, plan, m, scratch);
                                    break;
                                case fp8math::ScaleMode::TileBlocks:
                                    cpukernels::accumulateTiles(data, in, size_t(smallCols), 128, plan, m, scratch);
                                    break;
                                }
                            }
                            scratch.flushInto(m);
                            g_sink = m.errSq;
                        },
                        true);
                    const double l2 = double(1 << 20) * kLaps / 1e9 / sec;
                    std::printf(" %9.2f %7.2f\n", l2, l2 / (gb / t.referenceSeconds));
                } else {
                    std::printf(" %9s %7s\n", "-", "-");
                }
            }
        }
    }
    return 0;
}
