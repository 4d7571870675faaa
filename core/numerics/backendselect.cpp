#include "backendselect.h"

#include "cpubackend.h"

namespace fp8scope {

BackendSelection selectBackend(BackendChoice choice, int cpuThreads, CudaFactory cudaFactory)
{
    BackendSelection s;
    QString reason;
    if (choice != BackendChoice::Cpu) {
        if (!cudaFactory)
            reason = QStringLiteral("this build has no CUDA backend");
        else
            s.backend = cudaFactory(&reason, cpuThreads);
        if (s.backend) {
            s.status = s.backend->name();
            return s;
        }
        if (choice == BackendChoice::Cuda) {
            s.error = QStringLiteral("CUDA backend unavailable: %1").arg(reason);
            return s;
        }
    }
    auto cpu = std::make_unique<CpuBackend>(cpuThreads);
    cpu->setNote(reason);
    s.status = reason.isEmpty() ? cpu->name() : QStringLiteral("CPU: %1").arg(reason);
    s.backend = std::move(cpu);
    return s;
}

} // namespace fp8scope
