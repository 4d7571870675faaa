// Launchers of the CUDA kernels of the fused metrics pass. Plain C++ (no Qt, no CUDA types) so that the
// host side of the backend builds with the C++ compiler; streams travel as opaque pointers.
#pragma once

#include "core/numerics/metricsums.h"
#include "core/numerics/quantplan.h"

#include <cstdint>

namespace fp8scope::gpu {

enum class InputType : uint8_t { F32, BF16, F16, E4M3, E5M2 };

// The device-side accumulators of one accumulate() call; every kernel adds into them with atomics. The
// extremes are non-negative floats held as their bits (atomicMax and atomicMin on unsigned order them).
struct DeviceSums : fp8math::MetricFields<unsigned long long, double, unsigned int> {
    unsigned long long histIn[fp8math::kHistBins] = {};
    unsigned long long histScaled[fp8math::kHistBins] = {};
    unsigned int tensorAmaxBits = 0; // result of launchAmax
};

// Initial value (what the host copies to the device before a pass) and the fold into MetricSums.
DeviceSums emptyDeviceSums();
void addDeviceSums(const DeviceSums &d, fp8math::MetricSums &m);

// Each launcher enqueues on `stream` (a cudaStream_t) and returns the cudaError_t of the launch as int.
// `rows` x `cols` row-major elements of `type` at device address `data`.
int launchAmax(const void *data, InputType type, int64_t numel, DeviceSums *out, void *stream);
int launchAccumulate(const void *data, InputType type, int64_t rows, int64_t cols, const fp8math::QuantPlan &plan,
    DeviceSums *out, void *stream);

// Block shapes the tile kernel handles: blockCols must divide 128.
bool tileShapeSupported(const fp8math::QuantPlan &plan);

} // namespace fp8scope::gpu
