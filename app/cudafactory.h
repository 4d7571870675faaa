// The CUDA backend factory handed to selectBackend(): present when the executable links fp8scope_gpu.
#pragma once

#include "core/numerics/backendselect.h"

#ifdef FP8SCOPE_HAVE_CUDA
#include "gpu/cudabackend.h"
#endif

namespace fp8scope {

inline CudaFactory cudaFactory()
{
#ifdef FP8SCOPE_HAVE_CUDA
    return [](QString *reason, int cpuThreads) -> std::unique_ptr<MetricsBackend> {
        return CudaBackend::create(reason, cpuThreads);
    };
#else
    return nullptr;
#endif
}

} // namespace fp8scope
