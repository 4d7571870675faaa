// Throughput of the CUDA metrics backend. Device-resident: a 1 GiB bfloat16 tensor already on the GPU,
// per recipe, bytes read per second as a ratio to a device-to-device copy of the same buffer measured in
// the same run (bytes read + written per second); target >= 0.7. From host memory: the same tensor in
// pinned host memory through the backend's double-buffered streaming, as a ratio to a plain pinned
// host-to-device copy; target >= 0.8. Prints a table; without a device it says why and exits 0.
// Usage: bench_gpu [MiB] [repeats]
#include "benchutil.h"
#include "core/formats/fp8math.h"
#include "core/numerics/metricsengine.h"
#include "gpu/cudabackend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

using namespace fp8scope;
using fp8scope::bench::medianSeconds;

namespace {

bool ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        std::printf("CUDA error in %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

} // namespace

int main(int argc, char **argv)
{
    const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 1024;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    QString reason;
    auto cuda = CudaBackend::create(&reason);
    if (!cuda) {
        std::printf("bench_gpu: no CUDA backend here (%s); nothing measured\n", qPrintable(reason));
        return 0;
    }
    const int64_t bytes = mib << 20;
    const int64_t cols = 8192;
    const int64_t n = bytes / 2;
    const int64_t rows = n / cols;

    // Random bf16 with a wide magnitude spread: 64 MiB drawn, repeated.
    const int64_t patternElems = std::min<int64_t>(n, int64_t(32) << 20);
    std::vector<uint16_t> pattern(static_cast<size_t>(patternElems));
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (uint16_t &v : pattern)
        v = uint16_t(fp8math::castToCode(normal(rng) * std::exp2(-12.0f + 16.0f * u(rng)), fp8math::Format::BF16));
    uint16_t *host = nullptr;
    void *dev = nullptr;
    void *dev2 = nullptr;
    if (!ok(cudaMallocHost(reinterpret_cast<void **>(&host), size_t(bytes)), "cudaMallocHost")
        || !ok(cudaMalloc(&dev, size_t(bytes)), "cudaMalloc") || !ok(cudaMalloc(&dev2, size_t(bytes)), "cudaMalloc"))
        return 1;
    for (int64_t i = 0; i < n; i += patternElems)
        std::copy_n(pattern.begin(), std::min(patternElems, n - i), host + i);
    if (!ok(cudaMemcpy(dev, host, size_t(bytes), cudaMemcpyHostToDevice), "cudaMemcpy"))
        return 1;

    const double d2dSec = medianSeconds(
        repeats,
        [&] {
            cudaMemcpy(dev2, dev, size_t(bytes), cudaMemcpyDeviceToDevice);
            cudaDeviceSynchronize();
        },
        true);
    const double d2dGbs = 2.0 * double(bytes) / d2dSec / 1e9;
    const double h2dSec = medianSeconds(
        repeats,
        [&] {
            cudaMemcpy(dev2, host, size_t(bytes), cudaMemcpyHostToDevice);
            cudaDeviceSynchronize();
        },
        true);
    const double h2dGbs = double(bytes) / h2dSec / 1e9;
    std::printf("fp8scope GPU benchmark: %s, %lld MiB bfloat16 [%lld x %lld], %d repeats (median)\n",
        qPrintable(cuda->deviceName()), (long long)mib, (long long)rows, (long long)cols, repeats);
    std::printf(
        "device-to-device copy %.0f GB/s (read+written); pinned host-to-device copy %.1f GB/s\n", d2dGbs, h2dGbs);
    std::printf("%-14s %12s %10s %14s %10s\n", "recipe", "device GB/s", "vs d2d", "from host GB/s", "vs h2d");

    const char *recipeNames[] = {"delayed", "current", "current-pow2", "mxfp8", "mxfp8-ocp", "mxfp8-col", "block1x128",
        "block128x128", "nvfp4", "bf16"};
    QString error;
    int failures = 0;
    for (const char *name : recipeNames) {
        const Recipe recipe = *Recipe::parse(QString::fromLatin1(name), std::nullopt, &error);
        const ChunkView deviceView {DType::BF16, dev, rows, cols};
        const ChunkView hostView {DType::BF16, host, rows, cols};
        bool good = true;
        const double devSec = medianSeconds(
            repeats,
            [&] {
                float amax = 1.0f;
                if (recipe.needsTensorAmax())
                    good = good && cuda->amaxResident(deviceView, &amax, &error);
                fp8math::MetricSums m;
                good = good && cuda->accumulateResident(deviceView, MetricsEngine::planFor(recipe, amax), m, &error);
            },
            true);
        const double hostSec = medianSeconds(
            repeats,
            [&] {
                const float amax = recipe.needsTensorAmax() ? cuda->amax(hostView) : 1.0f;
                fp8math::MetricSums m;
                cuda->accumulate(hostView, MetricsEngine::planFor(recipe, amax), m);
            },
            true);
        if (!good || cuda->fellBack()) {
            std::printf("%-14s failed: %s %s\n", name, qPrintable(error), qPrintable(cuda->name()));
            ++failures;
            continue;
        }
        const double devGbs = double(bytes) / devSec / 1e9;
        const double hostGbs = double(bytes) / hostSec / 1e9;
        std::printf("%-14s %12.0f %10.2f %14.1f %10.2f\n", name, devGbs, devGbs / d2dGbs, hostGbs, hostGbs / h2dGbs);
    }
    cudaFree(dev);
    cudaFree(dev2);
    cudaFreeHost(host);
    return failures ? 1 : 0;
}
