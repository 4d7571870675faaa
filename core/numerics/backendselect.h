// Picks the metrics backend a user asked for. core cannot see gpu/ (the dependency runs the other way), so
// the executable passes the CUDA factory when it was built with one.
#pragma once

#include "metricsbackend.h"

#include <memory>

namespace fp8scope {

using CudaFactory = std::unique_ptr<MetricsBackend> (*)(QString *reason, int cpuThreads);

struct BackendSelection {
    std::unique_ptr<MetricsBackend> backend; // null only when `error` is set
    QString status; // for a status bar: "CUDA: NVIDIA H200", "CPU: no CUDA device found", ...
    QString error; // --backend cuda without a usable device
};

// Auto: CUDA when a device answers, else the CPU with the reason. Cuda: the device or an error.
BackendSelection selectBackend(BackendChoice choice, int cpuThreads, CudaFactory cudaFactory);

} // namespace fp8scope
