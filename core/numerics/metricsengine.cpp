#include "metricsengine.h"

#include <memory>
#include <numeric>

namespace fp8scope {

std::optional<BackendChoice> backendChoiceFromName(const QString &name)
{
    if (name == QLatin1String("auto"))
        return BackendChoice::Auto;
    if (name == QLatin1String("cpu"))
        return BackendChoice::Cpu;
    if (name == QLatin1String("cuda"))
        return BackendChoice::Cuda;
    return std::nullopt;
}

using fp8math::BlockRule;
using fp8math::QuantPlan;
using fp8math::ScaleMode;

MetricsEngine::MetricsEngine(MetricsBackend &backend, int64_t chunkBytes, int64_t residentBytes)
    : m_backend(backend)
    , m_chunkBytes(chunkBytes)
    , m_residentBytes(residentBytes)
{
}

int64_t MetricsEngine::chunkElements(const TensorInfo &info, int64_t alignment, int64_t chunkBytes)
{
    const int64_t band = info.rows > 1 ? info.cols * 128 : 128;
    const int64_t unit = std::lcm(std::max<int64_t>(band, 1), std::max<int64_t>(alignment, 1));
    const int64_t budget = chunkBytes / dtypeSize(info.dtype);
    return std::max<int64_t>(unit, budget / unit * unit);
}

QuantPlan MetricsEngine::planFor(const Recipe &recipe, float tensorAmax)
{
    QuantPlan p;
    p.format = recipe.format;
    const float fmax = fp8math::formatSpec(recipe.format).maxFinite;
    switch (recipe.kind) {
    case RecipeKind::Delayed:
        p.mode = ScaleMode::Tensor;
        p.tensorScale = recipe.delayedScale();
        p.tensorScaleInv = 1.0f / p.tensorScale;
        break;
    case RecipeKind::Current:
        p.mode = ScaleMode::Tensor;
        p.tensorScale = fp8math::amaxScale(fmax, tensorAmax, recipe.pow2);
        p.tensorScaleInv = 1.0f / p.tensorScale;
        break;
    case RecipeKind::Bf16: p.mode = ScaleMode::Tensor; break;
    case RecipeKind::MxFp8:
        p.mode = recipe.blockRows > 1 ? ScaleMode::TileBlocks : ScaleMode::RowBlocks;
        p.rule = recipe.ocpRule ? BlockRule::MxOcp : BlockRule::MxTe;
        p.blockRows = recipe.blockRows;
        p.blockCols = recipe.blockCols;
        break;
    case RecipeKind::Block:
        p.mode = recipe.blockRows > 1 ? ScaleMode::TileBlocks : ScaleMode::RowBlocks;
        p.rule = recipe.pow2 ? BlockRule::AmaxPow2 : BlockRule::AmaxExact;
        p.blockRows = recipe.blockRows;
        p.blockCols = recipe.blockCols;
        break;
    case RecipeKind::NvFp4:
        p.mode = ScaleMode::RowBlocks;
        p.rule = BlockRule::Nvfp4;
        p.blockCols = 16;
        p.globalEncode = fp8math::nvfp4GlobalEncodeScale(tensorAmax);
        break;
    }
    return p;
}

std::optional<std::vector<TensorMetrics>> MetricsEngine::compute(
    TensorReader &reader, const std::vector<Recipe> &recipes, Problem *problem, const Progress &progress)
{
    const TensorInfo &info = reader.info();
    const int64_t n = info.numel;
    const int64_t chunk = chunkElements(info, reader.alignment(), m_chunkBytes);
    const int64_t rowLen = info.rows > 1 ? info.cols : 0;
    const int size = dtypeSize(info.dtype);

    // Per-tensor recipes on a 16-bit tensor are served by one pattern-counting pass (where the backend
    // counts patterns), which gives the tensor amax too; the other recipes by the fused pass, after an
    // amax pass where one of them needs the tensor amax and no counting pass gave it.
    std::vector<bool> byPatterns(recipes.size(), false);
    bool countPass = false;
    bool needAmax = false;
    bool fusedPass = false;
    for (size_t i = 0; i < recipes.size(); ++i) {
        byPatterns[i] = planFor(recipes[i], 1.0f).mode == ScaleMode::Tensor && m_backend.countsPatterns(info.dtype);
        countPass = countPass || byPatterns[i];
        needAmax = needAmax || recipes[i].needsTensorAmax();
        fusedPass = fusedPass || !byPatterns[i];
    }
    const bool amaxPass = needAmax && !countPass;
    const int passes = (countPass ? 1 : 0) + (amaxPass ? 1 : 0) + (fusedPass ? 1 : 0);
    const int64_t total = n * passes;
    int64_t done = 0;

    // Several passes over a tensor within the resident budget read it once, into a buffer of its size;
    // otherwise each pass reads it again, a chunk at a time. The backend sees chunks of the same size either
    // way.
    const bool resident = passes > 1 && n <= m_residentBytes / size;
    // Left uninitialised: the reader writes every byte a pass reads (zeroing 256 MiB costs as much as a read).
    const size_t bufferBytes
        = size_t((resident ? std::max<int64_t>(n, 1) : std::min(chunk, std::max<int64_t>(n, 1))) * size);
    const std::unique_ptr<char[]> buffer(new char[bufferBytes]);
    m_backend.pinHostMemory(buffer.get(), bufferBytes);
    struct Unpin {
        MetricsBackend &backend;
        void *data;
        ~Unpin() { backend.unpinHostMemory(data); }
    } unpin {m_backend, buffer.get()};
    bool loaded = false;

    auto forEachChunk = [&](const std::function<void(const ChunkView &)> &body) -> bool {
        for (int64_t first = 0; first < n; first += chunk) {
            const int64_t count = std::min(chunk, n - first);
            char *data = resident ? buffer.get() + size_t(first) * size_t(size) : buffer.get();
            if (!loaded && !reader.read(first, count, data, problem))
                return false;
            ChunkView view {info.dtype, data, rowLen ? count / rowLen : 1, rowLen ? rowLen : count};
            body(view);
            done += count;
            if (progress && !progress(done, total)) {
                *problem = {info.file, -1, QStringLiteral("cancelled")};
                return false;
            }
        }
        loaded = resident;
        return true;
    };

    float tensorAmax = 0.0f;
    std::optional<PatternCounts> patterns;
    if (countPass) {
        patterns.emplace(info.dtype);
        if (!forEachChunk([&](const ChunkView &c) { m_backend.countPatterns(c, *patterns); }))
            return std::nullopt;
        tensorAmax = patterns->amax();
    }
    if (amaxPass && !forEachChunk([&](const ChunkView &c) { tensorAmax = std::max(tensorAmax, m_backend.amax(c)); }))
        return std::nullopt;

    std::vector<QuantPlan> plans;
    for (const Recipe &r : recipes)
        plans.push_back(planFor(r, tensorAmax));
    std::vector<fp8math::MetricSums> sums(recipes.size());
    for (size_t i = 0; i < recipes.size(); ++i) {
        if (byPatterns[i])
            patterns->fold(plans[i], sums[i]);
    }
    if (fusedPass && !forEachChunk([&](const ChunkView &c) {
            for (size_t i = 0; i < recipes.size(); ++i) {
                if (!byPatterns[i])
                    m_backend.accumulate(c, plans[i], sums[i]);
            }
        }))
        return std::nullopt;

    std::vector<TensorMetrics> out;
    for (size_t i = 0; i < recipes.size(); ++i) {
        const bool tensorMode = plans[i].mode == ScaleMode::Tensor;
        out.push_back(TensorMetrics::fromSums(sums[i], recipes[i], tensorMode ? plans[i].tensorScale : 0.0,
            tensorMode ? plans[i].tensorScaleInv : 0.0, m_backend.name()));
        out.back().decoding = info.decoding;
    }
    return out;
}

} // namespace fp8scope
