#include "metricsbackend.h"

#include "cpukernels.h"

#include <algorithm>
#include <vector>

namespace fp8scope {

void MetricsBackend::countPatterns(const ChunkView &chunk, PatternCounts &counts)
{
    std::vector<uint32_t> counters(PatternCounts::kPatterns * cpukernels::kPatternCopies, 0u);
    const auto *src = static_cast<const uint16_t *>(chunk.data);
    // Counters are 32-bit: hand them over before any could overflow.
    constexpr int64_t kRun = int64_t(1) << 30;
    for (int64_t first = 0; first < chunk.numel(); first += kRun) {
        const int64_t count = std::min(kRun, chunk.numel() - first);
        cpukernels::countPatterns16(src + first, size_t(count), counters.data());
        counts.take(counters.data(), cpukernels::kPatternCopies);
    }
}

} // namespace fp8scope
