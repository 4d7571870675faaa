// The CPU metrics backend: the chunk is cut into pieces of whole blocks that worker threads take in turn,
// each running the vectorised kernels of cpukernels.h over its pieces (float32, bfloat16 and float16 as
// they are; FP8 widened in small tiles). The cut does not depend on the thread count and the pieces' sums
// are merged in order, so any number of threads gives the same bits.
#pragma once

#include "metricsbackend.h"

namespace fp8scope {

class CpuBackend : public MetricsBackend
{
public:
    // threads <= 0: one per hardware thread.
    explicit CpuBackend(int threads = 0);

    QString name() const override;
    float amax(const ChunkView &chunk) override;
    void accumulate(const ChunkView &chunk, const fp8math::QuantPlan &plan, fp8math::MetricSums &sums) override;
    // bfloat16 and float16: each worker counts its part into its own tables.
    bool countsPatterns(DType dtype) const override;
    void countPatterns(const ChunkView &chunk, PatternCounts &counts) override;

    int threads() const { return m_threads; }
    // Why the CPU serves when a GPU was wanted ("no CUDA device found"); shown in name().
    void setNote(const QString &note) { m_note = note; }

private:
    int m_threads;
    QString m_note;
};

} // namespace fp8scope
