// The CUDA metrics backend: chunks are copied to the device through double buffers on two streams so that
// copies overlap the kernels, and the kernels of gpu/metricskernels.cu compute what CpuBackend computes.
// Any CUDA failure (no memory, a launch error) sends that call and every later one to the CPU backend,
// and name() says why.
#pragma once

#include "core/about/libraryversions.h"
#include "core/numerics/cpubackend.h"
#include "core/numerics/metricsbackend.h"

#include <memory>

namespace fp8scope {

class CudaBackend : public MetricsBackend
{
public:
    // A backend on the preferred CUDA device (the first unless setPreferredDevice() said otherwise), or nullptr
    // with the reason ("no CUDA device found", ...).
    static std::unique_ptr<CudaBackend> create(QString *reason, int cpuThreads = 0);
    // The device later create() calls use, modulo the devices there are: an MPI rank's node-local rank, so
    // that the ranks of a node share its GPUs out (under Slurm's --gpus-per-task each sees one anyway).
    static void setPreferredDevice(int device);
    // The CUDA runtime built in (static) and the driver installed ("none" without one); touches no device.
    static QList<ComponentVersion> versions();
    ~CudaBackend() override;

    // "CUDA: <device name>" while the device serves; "CPU: <reason>" after a fallback.
    QString name() const override;
    float amax(const ChunkView &chunk) override;
    void accumulate(const ChunkView &chunk, const fp8math::QuantPlan &plan, fp8math::MetricSums &sums) override;
    void pinHostMemory(void *data, size_t bytes) override;
    void unpinHostMemory(void *data) override;

    // Chunks already in device memory (the benchmark; no fallback: false and *error on failure).
    bool amaxResident(const ChunkView &deviceChunk, float *amax, QString *error);
    bool accumulateResident(
        const ChunkView &deviceChunk, const fp8math::QuantPlan &plan, fp8math::MetricSums &sums, QString *error);

    bool fellBack() const;
    QString deviceName() const;

private:
    struct Impl;
    explicit CudaBackend(std::unique_ptr<Impl> impl, int cpuThreads);
    std::unique_ptr<Impl> d;
    CpuBackend m_cpu;
};

} // namespace fp8scope
