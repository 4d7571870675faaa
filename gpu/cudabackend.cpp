#include "cudabackend.h"

#include "metricskernels.h"

#include <QLoggingCategory>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <vector>

Q_LOGGING_CATEGORY(lcGpu, "fp8scope.gpu")

namespace fp8scope {

namespace {

struct CudaFailure {
    QString message;
};

void check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        throw CudaFailure {
            QStringLiteral("CUDA error in %1: %2").arg(QLatin1String(what), QLatin1String(cudaGetErrorString(e)))};
}

gpu::InputType inputType(DType t)
{
    switch (t) {
    case DType::F32:
    case DType::F64:
    case DType::F4E2M1: return gpu::InputType::F32; // never here: openTensor hands these out as float32
    case DType::BF16: return gpu::InputType::BF16;
    case DType::F16: return gpu::InputType::F16;
    case DType::F8E4M3: return gpu::InputType::E4M3;
    case DType::F8E5M2: return gpu::InputType::E5M2;
    }
    return gpu::InputType::F32;
}

// Pieces of a chunk copied and processed one after the other: whole 128-row bands of a 2-D chunk, or
// runs of a multiple of 128 elements of a 1-D one, so that no block or tile is cut.
struct Piece {
    int64_t firstElement;
    int64_t rows;
    int64_t cols;
};

std::vector<Piece> piecesOf(const ChunkView &c, int64_t targetBytes)
{
    std::vector<Piece> out;
    const int64_t es = dtypeSize(c.dtype);
    if (c.rows <= 1) {
        const int64_t per = std::max<int64_t>(128, targetBytes / es / 128 * 128);
        for (int64_t f = 0; f < c.cols; f += per)
            out.push_back({f, 1, std::min(per, c.cols - f)});
        return out;
    }
    const int64_t rowsPer = std::max<int64_t>(128, targetBytes / std::max<int64_t>(1, c.cols * es) / 128 * 128);
    for (int64_t r = 0; r < c.rows; r += rowsPer)
        out.push_back({r * c.cols, std::min(rowsPer, c.rows - r), c.cols});
    return out;
}

constexpr int64_t kPieceBytes = int64_t(16) << 20;

} // namespace

struct CudaBackend::Impl {
    QString deviceName;
    cudaStream_t streams[2] = {nullptr, nullptr};
    cudaEvent_t ready = nullptr;
    void *buffers[2] = {nullptr, nullptr};
    size_t bufferBytes = 0;
    gpu::DeviceSums *deviceSums = nullptr;
    gpu::DeviceSums *hostSums = nullptr; // pinned
    bool failed = false;
    QString failure;

    ~Impl()
    {
        for (void *b : buffers)
            cudaFree(b);
        cudaFree(deviceSums);
        cudaFreeHost(hostSums);
        if (ready)
            cudaEventDestroy(ready);
        for (cudaStream_t s : streams) {
            if (s)
                cudaStreamDestroy(s);
        }
    }

    void ensureBuffers(size_t bytes)
    {
        if (bytes <= bufferBytes)
            return;
        for (void *&b : buffers) {
            cudaFree(b);
            b = nullptr;
        }
        bufferBytes = 0;
        for (void *&b : buffers)
            check(cudaMalloc(&b, bytes), "cudaMalloc");
        bufferBytes = bytes;
    }

    // Resets the device sums on stream 0 and makes stream 1 wait for it.
    void resetSums()
    {
        *hostSums = gpu::emptyDeviceSums();
        check(cudaMemcpyAsync(deviceSums, hostSums, sizeof(gpu::DeviceSums), cudaMemcpyHostToDevice, streams[0]),
            "cudaMemcpyAsync");
        check(cudaEventRecord(ready, streams[0]), "cudaEventRecord");
        check(cudaStreamWaitEvent(streams[1], ready, 0), "cudaStreamWaitEvent");
    }

    const gpu::DeviceSums &readSums()
    {
        check(cudaStreamSynchronize(streams[1]), "cudaStreamSynchronize");
        check(cudaMemcpyAsync(hostSums, deviceSums, sizeof(gpu::DeviceSums), cudaMemcpyDeviceToHost, streams[0]),
            "cudaMemcpyAsync");
        check(cudaStreamSynchronize(streams[0]), "cudaStreamSynchronize");
        return *hostSums;
    }

    // Streams a host chunk through the two buffers; `launch` enqueues the kernels of one piece.
    template <class Launch> void streamChunk(const ChunkView &chunk, const Launch &launch)
    {
        const auto pieces = piecesOf(chunk, kPieceBytes);
        const int64_t es = dtypeSize(chunk.dtype);
        size_t largest = 0;
        for (const Piece &p : pieces)
            largest = std::max(largest, size_t(p.rows * p.cols * es));
        ensureBuffers(largest);
        for (size_t k = 0; k < pieces.size(); ++k) {
            const Piece &p = pieces[k];
            cudaStream_t s = streams[k % 2];
            const auto *src = static_cast<const char *>(chunk.data) + p.firstElement * es;
            check(cudaMemcpyAsync(buffers[k % 2], src, size_t(p.rows * p.cols * es), cudaMemcpyHostToDevice, s),
                "cudaMemcpyAsync");
            check(cudaError_t(launch(buffers[k % 2], p, s)), "kernel launch");
        }
    }
};

QList<ComponentVersion> CudaBackend::versions()
{
    // CUDA encodes versions as 1000 * major + 10 * minor.
    const auto text = [](int v) { return QStringLiteral("%1.%2").arg(v / 1000).arg((v % 1000) / 10); };
    int runtime = 0;
    int driver = 0;
    QList<ComponentVersion> list;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
        list.append({QStringLiteral("CUDA runtime"), text(runtime) + QStringLiteral(" (linked statically)")});
    const bool haveDriver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
    list.append({QStringLiteral("CUDA driver"), haveDriver ? text(driver) : QStringLiteral("none")});
    return list;
}

namespace {
std::atomic<int> g_preferredDevice {0};
}

void CudaBackend::setPreferredDevice(int device)
{
    g_preferredDevice.store(std::max(0, device));
}

std::unique_ptr<CudaBackend> CudaBackend::create(QString *reason, int cpuThreads)
{
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
        *reason = QStringLiteral("no CUDA device found");
        return nullptr;
    }
    if (e == cudaErrorInsufficientDriver) {
        *reason = QStringLiteral("the CUDA driver is missing or older than the runtime");
        return nullptr;
    }
    if (e != cudaSuccess) {
        *reason = QStringLiteral("CUDA unavailable: %1").arg(QLatin1String(cudaGetErrorString(e)));
        return nullptr;
    }
    auto impl = std::make_unique<Impl>();
    try {
        const int device = g_preferredDevice.load() % count;
        check(cudaSetDevice(device), "cudaSetDevice");
        cudaDeviceProp prop {};
        check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
        impl->deviceName = QString::fromLatin1(prop.name);
        for (cudaStream_t &s : impl->streams)
            check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
        check(cudaEventCreateWithFlags(&impl->ready, cudaEventDisableTiming), "cudaEventCreate");
        check(cudaMalloc(reinterpret_cast<void **>(&impl->deviceSums), sizeof(gpu::DeviceSums)), "cudaMalloc");
        check(cudaMallocHost(reinterpret_cast<void **>(&impl->hostSums), sizeof(gpu::DeviceSums)), "cudaMallocHost");
    } catch (const CudaFailure &f) {
        *reason = f.message;
        return nullptr;
    }
    return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(impl), cpuThreads));
}

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl, int cpuThreads)
    : d(std::move(impl))
    , m_cpu(cpuThreads)
{
}

CudaBackend::~CudaBackend() = default;

QString CudaBackend::name() const
{
    if (d->failed)
        return QStringLiteral("CPU: %1").arg(d->failure);
    return QStringLiteral("CUDA: %1").arg(d->deviceName);
}

bool CudaBackend::fellBack() const
{
    return d->failed;
}

QString CudaBackend::deviceName() const
{
    return d->deviceName;
}

float CudaBackend::amax(const ChunkView &chunk)
{
    if (!d->failed && chunk.numel() > 0) {
        try {
            d->resetSums();
            const gpu::InputType t = inputType(chunk.dtype);
            d->streamChunk(chunk, [&](void *buf, const Piece &p, cudaStream_t s) {
                return gpu::launchAmax(buf, t, p.rows * p.cols, d->deviceSums, s);
            });
            return fp8math::bitsFloat(d->readSums().tensorAmaxBits);
        } catch (const CudaFailure &f) {
            d->failed = true;
            d->failure = f.message;
            qCWarning(lcGpu) << "falling back to the CPU:" << f.message;
        }
    }
    return m_cpu.amax(chunk);
}

void CudaBackend::accumulate(const ChunkView &chunk, const fp8math::QuantPlan &plan, fp8math::MetricSums &sums)
{
    if (!d->failed && chunk.numel() > 0) {
        try {
            if (plan.mode == fp8math::ScaleMode::TileBlocks && !gpu::tileShapeSupported(plan))
                throw CudaFailure {
                    QStringLiteral("tile shape %1x%2 has no CUDA kernel").arg(plan.blockRows).arg(plan.blockCols)};
            d->resetSums();
            const gpu::InputType t = inputType(chunk.dtype);
            d->streamChunk(chunk, [&](void *buf, const Piece &p, cudaStream_t s) {
                return gpu::launchAccumulate(buf, t, p.rows, p.cols, plan, d->deviceSums, s);
            });
            gpu::addDeviceSums(d->readSums(), sums);
            return;
        } catch (const CudaFailure &f) {
            d->failed = true;
            d->failure = f.message;
            qCWarning(lcGpu) << "falling back to the CPU:" << f.message;
        }
    }
    m_cpu.accumulate(chunk, plan, sums);
}

void CudaBackend::pinHostMemory(void *data, size_t bytes)
{
    if (d->failed || bytes == 0)
        return;
    // Best effort: pageable memory still works, only without overlap.
    if (cudaHostRegister(data, bytes, cudaHostRegisterDefault) != cudaSuccess)
        cudaGetLastError();
}

void CudaBackend::unpinHostMemory(void *data)
{
    if (cudaHostUnregister(data) != cudaSuccess)
        cudaGetLastError();
}

bool CudaBackend::amaxResident(const ChunkView &deviceChunk, float *amax, QString *error)
{
    try {
        d->resetSums();
        check(cudaError_t(gpu::launchAmax(
                  deviceChunk.data, inputType(deviceChunk.dtype), deviceChunk.numel(), d->deviceSums, d->streams[1])),
            "kernel launch");
        *amax = fp8math::bitsFloat(d->readSums().tensorAmaxBits);
        return true;
    } catch (const CudaFailure &f) {
        *error = f.message;
        return false;
    }
}

bool CudaBackend::accumulateResident(
    const ChunkView &deviceChunk, const fp8math::QuantPlan &plan, fp8math::MetricSums &sums, QString *error)
{
    try {
        d->resetSums();
        check(cudaError_t(gpu::launchAccumulate(deviceChunk.data, inputType(deviceChunk.dtype), deviceChunk.rows,
                  deviceChunk.cols, plan, d->deviceSums, d->streams[1])),
            "kernel launch");
        gpu::addDeviceSums(d->readSums(), sums);
        return true;
    } catch (const CudaFailure &f) {
        *error = f.message;
        return false;
    }
}

} // namespace fp8scope
