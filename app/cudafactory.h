// The CUDA backend factory handed to selectBackend(): present when the executable links fp8scope_gpu.
#pragma once

#include "core/about/libraryversions.h"
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

// The CUDA runtime and driver versions (touching no device), or that this build has no CUDA backend.
inline QList<ComponentVersion> cudaVersions()
{
#ifdef FP8SCOPE_HAVE_CUDA
    return CudaBackend::versions();
#else
    return {{QStringLiteral("CUDA backend"), QStringLiteral("not built")}};
#endif
}

} // namespace fp8scope
