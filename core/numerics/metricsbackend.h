// The interface every metrics backend implements (the multi-threaded CPU one here, the CUDA one in gpu/):
// the two passes the engine needs over a chunk of a tensor. Views and the CLI never know which one ran.
#pragma once

#include "core/formats/dtype.h"
#include "metricsums.h"
#include "patterncounts.h"
#include "quantplan.h"

#include <QString>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace fp8scope {

// A row-major chunk in the dump's dtype. For a 1-D tensor rows is 1 and cols the chunk length (a multiple
// of 128 except at the end). For 2-D tensors a chunk holds whole rows, a multiple of 128 except at the end,
// so that no block or tile crosses chunks.
struct ChunkView {
    DType dtype = DType::F32;
    const void *data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t numel() const { return rows * cols; }
};

class MetricsBackend
{
public:
    virtual ~MetricsBackend() = default;
    // e.g. "CPU (AVX3, 2 threads)"
    virtual QString name() const = 0;
    // Largest finite |x| of the chunk.
    virtual float amax(const ChunkView &chunk) = 0;
    // Adds the chunk's contribution under the plan to sums.
    virtual void accumulate(const ChunkView &chunk, const fp8math::QuantPlan &plan, fp8math::MetricSums &sums) = 0;
    // Whether the engine should serve per-tensor recipes on chunks of this 16-bit dtype by counting bit
    // patterns (one pass for the amax and every per-tensor recipe) rather than by accumulate().
    virtual bool countsPatterns(DType dtype) const
    {
        (void)dtype;
        return false;
    }
    // Adds the chunk's bit patterns (chunk.dtype == counts.dtype(), BF16 or F16) to counts. This default
    // counts on the host with one thread; a backend that answers countsPatterns() may do better.
    virtual void countPatterns(const ChunkView &chunk, PatternCounts &counts);
    // The engine's chunk buffer: a backend that copies chunks to a device may page-lock it for the
    // duration of a compute() so that copies run asynchronously. Default: nothing to do.
    virtual void pinHostMemory(void *data, size_t bytes)
    {
        (void)data;
        (void)bytes;
    }
    virtual void unpinHostMemory(void *data) { (void)data; }
};

// Which backend a user asked for: the CUDA one when a device answers (auto), or one in particular.
enum class BackendChoice { Auto, Cpu, Cuda };
std::optional<BackendChoice> backendChoiceFromName(const QString &name);

} // namespace fp8scope
