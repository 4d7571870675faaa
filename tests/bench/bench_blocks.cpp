// The block map (core/numerics/blockmap) of an N x N bfloat16 tensor in memory (default 8192 x 8192: 2 M
// MXFP8 blocks) against one pass of the metrics engine over it under the same recipe (the CPU backend, all
// threads), one run of each in turn: the target is a map within 2x of the pass for MXFP8. Other block recipes
// are measured beside it (the tiles go through the scalar definition). Prints a table; asserts nothing about
// time.
// Usage: bench_blocks [N] [repeats] [recipes, comma separated]
#include "../core/memoryreader.h"
#include "benchutil.h"
#include "core/numerics/blockmap.h"
#include "core/numerics/cpubackend.h"

#include <cmath>
#include <cstdio>
#include <random>

using namespace fp8scope;

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? std::atoll(argv[1]) : 8192;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
    const QStringList recipes = QString::fromLatin1(argc > 3 ? argv[3] : "mxfp8,mxfp8-ocp,nvfp4,block1x128")
                                    .split(QLatin1Char(','), Qt::SkipEmptyParts);
    // Gaussian values whose scale varies along the columns (bfloat16 bits, round to nearest even).
    QByteArray bytes(qsizetype(n * n * 2), Qt::Uninitialized);
    std::mt19937 gen(1);
    std::normal_distribution<float> d(0.0f, 1.0f);
    auto *out = reinterpret_cast<uint16_t *>(bytes.data());
    for (int64_t i = 0; i < n * n; ++i) {
        const float x = d(gen) * std::ldexp(1.0f, int((i % n) % 24) - 12);
        const uint32_t b = fp8math::floatBits(x);
        out[i] = uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
    }
    MemoryReader reader(DType::BF16, {n, n}, bytes);
    CpuBackend backend;
    std::printf("block map of a %lld x %lld bfloat16 tensor (%.0f MiB), %d threads, median of %d\n", (long long)n,
        (long long)n, double(bytes.size()) / (1 << 20), backend.threads(), repeats);
    std::printf("| recipe | blocks | map s | one pass s | map / pass | target |\n|---|---|---|---|---|---|\n");
    for (const QString &name : recipes) {
        QString error;
        const std::optional<Recipe> recipe = Recipe::parse(name, std::nullopt, &error);
        if (!recipe) {
            std::fprintf(stderr, "%s\n", qPrintable(error));
            return 2;
        }
        int64_t blocks = 0;
        bool ok = true;
        const bench::Paired p = bench::pairedMedians(
            repeats,
            [&] {
                Problem problem;
                const std::optional<BlockMap> m = computeBlockMap(reader, *recipe, &problem);
                ok = ok && m;
                blocks = m ? m->blocks() : 0;
            },
            [&] {
                Problem problem;
                MetricsEngine engine(backend);
                ok = ok && engine.compute(reader, {*recipe}, &problem);
            });
        if (!ok) {
            std::fprintf(stderr, "%s: the map or the pass failed\n", qPrintable(name));
            return 1;
        }
        std::printf("| %s | %lld | %.3f | %.3f | %.2f | %s |\n", qPrintable(name), (long long)blocks, p.workSeconds,
            p.referenceSeconds, 1.0 / p.ratio, name == QLatin1String("mxfp8") ? "<= 2" : "-");
    }
    return 0;
}
