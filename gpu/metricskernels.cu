// CUDA kernels of the fused metrics pass. Every element goes through fp8math::evaluateElement, the same
// definition the CPU backends follow; block scales come from fp8math::blockScaleFor. Counts and histograms
// are exact; sums are in double, reduced per block and added with atomics.
#include "metricskernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>

namespace fp8scope::gpu {

using fp8math::BlockScale;
using fp8math::ElementEval;
using fp8math::Format;
using fp8math::kHistBins;
using fp8math::QuantPlan;

namespace {

constexpr int kThreads = 256;
constexpr int kTileGroup = 128; // columns per thread block in the tile kernel

__device__ __forceinline__ float loadElement(const void *data, InputType type, int64_t i)
{
    switch (type) {
    case InputType::F32: return static_cast<const float *>(data)[i];
    case InputType::BF16: return fp8math::bitsFloat(uint32_t(static_cast<const uint16_t *>(data)[i]) << 16);
    case InputType::F16: return fp8math::halfToFloat(static_cast<const uint16_t *>(data)[i]);
    case InputType::E4M3: return fp8math::decodeCode(static_cast<const uint8_t *>(data)[i], Format::E4M3);
    case InputType::E5M2: return fp8math::decodeCode(static_cast<const uint8_t *>(data)[i], Format::E5M2);
    }
    return 0.0f;
}

__device__ __forceinline__ float finiteAbs(float x)
{
    const float a = fabsf(x);
    return a <= FLT_MAX ? a : 0.0f;
}

// One thread's running sums; histograms go to the block's shared counters.
struct ThreadAcc : fp8math::MetricFields<unsigned long long, double, float> {
    __device__ void add(const ElementEval &e, unsigned *histIn, unsigned *histScaled)
    {
        fp8math::addElement(e, *this, 1u);
        if (e.binIn >= 0)
            atomicAdd(histIn + e.binIn, 1u);
        if (e.binScaled >= 0)
            atomicAdd(histScaled + e.binScaled, 1u);
    }

    __device__ void addBlock(float blockAmax, float scaleInv) { fp8math::addBlockTo(*this, blockAmax, scaleInv); }
};

template <class T, class Op> __device__ T blockReduce(T v, Op op, T *scratch, T identity)
{
    for (int off = 16; off > 0; off /= 2)
        v = op(v, __shfl_down_sync(0xFFFFFFFFu, v, off));
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    __syncthreads(); // scratch may still be read by a previous reduction
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    const int warps = blockDim.x / 32;
    if (warp == 0) {
        v = lane < warps ? scratch[lane] : identity;
        for (int off = 16; off > 0; off /= 2)
            v = op(v, __shfl_down_sync(0xFFFFFFFFu, v, off));
    }
    return v; // valid in thread 0
}

struct Plus {
    template <class T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct Max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Min {
    __device__ float operator()(float a, float b) const { return fminf(a, b); }
};

__device__ void sumInto(unsigned long long *dst, unsigned long long v, unsigned long long *scratch)
{
    v = blockReduce(v, Plus(), scratch, 0ull);
    if (threadIdx.x == 0 && v)
        atomicAdd(dst, v);
}

__device__ void sumInto(double *dst, double v, double *scratch)
{
    v = blockReduce(v, Plus(), scratch, 0.0);
    if (threadIdx.x == 0 && v != 0.0)
        atomicAdd(dst, v);
}

// Reduces each field over the block's threads and adds it to the global accumulators (thread 0 does).
// Non-negative floats order as their bit patterns.
struct BlockToGlobal {
    unsigned long long *su;
    double *sd;
    float *sf;

    __device__ void add(unsigned long long &dst, unsigned long long v) { sumInto(&dst, v, su); }
    __device__ void add(double &dst, double v) { sumInto(&dst, v, sd); }
    __device__ void max(unsigned &dstBits, float v)
    {
        v = blockReduce(v, Max(), sf, 0.0f);
        if (threadIdx.x == 0)
            atomicMax(&dstBits, __float_as_uint(v));
    }
    __device__ void min(unsigned &dstBits, float v)
    {
        v = blockReduce(v, Min(), sf, INFINITY);
        if (threadIdx.x == 0)
            atomicMin(&dstBits, __float_as_uint(v));
    }
};

// Folds the block's threads and shared histograms into the global accumulators.
__device__ void finish(const ThreadAcc &a, const unsigned *histIn, const unsigned *histScaled, DeviceSums *out)
{
    __shared__ unsigned long long su[32];
    __shared__ double sd[32];
    __shared__ float sf[32];
    BlockToGlobal op {su, sd, sf};
    fp8math::forEachField(*out, a, op);
    __syncthreads();
    for (int b = threadIdx.x; b < kHistBins; b += blockDim.x) {
        if (histIn[b])
            atomicAdd(&out->histIn[b], (unsigned long long)histIn[b]);
        if (histScaled[b])
            atomicAdd(&out->histScaled[b], (unsigned long long)histScaled[b]);
    }
}

__device__ void clearHist(unsigned *histIn, unsigned *histScaled)
{
    for (int b = threadIdx.x; b < kHistBins; b += blockDim.x)
        histIn[b] = histScaled[b] = 0;
    __syncthreads();
}

__global__ void amaxKernel(const void *data, InputType type, int64_t n, DeviceSums *out)
{
    __shared__ float sf[32];
    float a = 0.0f;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
        a = fmaxf(a, finiteAbs(loadElement(data, type, i)));
    a = blockReduce(a, Max(), sf, 0.0f);
    if (threadIdx.x == 0)
        atomicMax(&out->tensorAmaxBits, __float_as_uint(a));
}

// Per-tensor recipes: one scale for every element; a grid-stride pass.
__global__ void uniformKernel(const void *data, InputType type, int64_t n, QuantPlan plan, DeviceSums *out)
{
    __shared__ unsigned histIn[kHistBins];
    __shared__ unsigned histScaled[kHistBins];
    clearHist(histIn, histScaled);
    ThreadAcc acc;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        const float x = loadElement(data, type, i);
        acc.add(fp8math::evaluateElement(x, plan.tensorScale, plan.tensorScaleInv, plan.format), histIn, histScaled);
    }
    __syncthreads();
    finish(acc, histIn, histScaled, out);
}

// 1 x B blocks along rows (B = 16, 32 or 128), one fused pass: a group of G = min(B, 32) lanes loads a block
// into registers (at most 4 elements a lane), reduces its amax with shuffles, derives the scale and
// accumulates. A warp walks 32 / G consecutive blocks so that every lane takes part in every shuffle.
__global__ void rowBlocksKernel(
    const void *data, InputType type, int64_t rows, int64_t cols, QuantPlan plan, DeviceSums *out)
{
    __shared__ unsigned histIn[kHistBins];
    __shared__ unsigned histScaled[kHistBins];
    clearHist(histIn, histScaled);
    ThreadAcc acc;
    const int b = plan.blockCols;
    const int g = b >= 32 ? 32 : b;
    const int per = (b + g - 1) / g;
    const int groupsPerWarp = 32 / g;
    const int lane = threadIdx.x % 32;
    const int inGroup = lane % g;
    const int64_t blocksPerRow = (cols + b - 1) / b;
    const int64_t totalBlocks = rows * blocksPerRow;
    const int64_t warpId = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = int64_t(gridDim.x) * blockDim.x / 32;
    for (int64_t base = warpId * groupsPerWarp; base < totalBlocks; base += warps * groupsPerWarp) {
        const int64_t blk = base + lane / g;
        const bool active = blk < totalBlocks;
        const int64_t r = active ? blk / blocksPerRow : 0;
        const int64_t c0 = active ? (blk % blocksPerRow) * b : 0;
        const int64_t len = active ? min(int64_t(b), cols - c0) : 0;
        float v[4];
        float am = 0.0f;
        for (int k = 0; k < per && k < 4; ++k) {
            const int64_t idx = inGroup + int64_t(k) * g;
            v[k] = idx < len ? loadElement(data, type, r * cols + c0 + idx) : 0.0f;
            if (idx < len)
                am = fmaxf(am, finiteAbs(v[k]));
        }
        for (int off = g / 2; off > 0; off /= 2)
            am = fmaxf(am, __shfl_xor_sync(0xFFFFFFFFu, am, off, g));
        if (!active)
            continue;
        const BlockScale bs = fp8math::blockScaleFor(am, plan);
        if (inGroup == 0)
            acc.addBlock(am, bs.decode);
        for (int k = 0; k < per && k < 4; ++k) {
            if (inGroup + int64_t(k) * g < len)
                acc.add(fp8math::evaluateElement(v[k], bs.encode, bs.decode, plan.format), histIn, histScaled);
        }
    }
    __syncthreads();
    finish(acc, histIn, histScaled, out);
}

// blockRows x blockCols tiles (32 x 1 column-wise MXFP8, 128 x 128). A thread block takes 128 consecutive
// columns of one band of blockRows rows: column amaxes, tile amaxes in shared memory, tile scales, then the
// elements again (the second read of the band comes from cache).
__global__ void tilesKernel(
    const void *data, InputType type, int64_t rows, int64_t cols, QuantPlan plan, DeviceSums *out)
{
    __shared__ unsigned histIn[kHistBins];
    __shared__ unsigned histScaled[kHistBins];
    __shared__ float colAmax[kTileGroup];
    __shared__ float tileEncode[kTileGroup];
    __shared__ float tileDecode[kTileGroup];
    clearHist(histIn, histScaled);
    ThreadAcc acc;
    const int br = plan.blockRows;
    const int bc = plan.blockCols;
    const int64_t bands = (rows + br - 1) / br;
    const int64_t groups = (cols + kTileGroup - 1) / kTileGroup;
    const int t = threadIdx.x; // blockDim.x == kTileGroup
    for (int64_t work = blockIdx.x; work < bands * groups; work += gridDim.x) {
        const int64_t band = work / groups;
        const int64_t c = (work % groups) * kTileGroup + t;
        const int64_t r0 = band * br;
        const int64_t nr = min(int64_t(br), rows - r0);
        float a = 0.0f;
        if (c < cols) {
            for (int64_t r = r0; r < r0 + nr; ++r)
                a = fmaxf(a, finiteAbs(loadElement(data, type, r * cols + c)));
        }
        colAmax[t] = a;
        __syncthreads();
        if (t % bc == 0 && c < cols) {
            float tileAmax = 0.0f;
            for (int k = t; k < t + bc && k < kTileGroup; ++k)
                tileAmax = fmaxf(tileAmax, colAmax[k]);
            const BlockScale bs = fp8math::blockScaleFor(tileAmax, plan);
            acc.addBlock(tileAmax, bs.decode);
            tileEncode[t / bc] = bs.encode;
            tileDecode[t / bc] = bs.decode;
        }
        __syncthreads();
        if (c < cols) {
            const float enc = tileEncode[t / bc];
            const float dec = tileDecode[t / bc];
            for (int64_t r = r0; r < r0 + nr; ++r)
                acc.add(fp8math::evaluateElement(loadElement(data, type, r * cols + c), enc, dec, plan.format), histIn,
                    histScaled);
        }
        __syncthreads(); // the shared tile scales are rewritten by the next band
    }
    __syncthreads();
    finish(acc, histIn, histScaled, out);
}

int gridFor(int64_t work, int threads)
{
    static int sms = 0;
    if (sms == 0) {
        int device = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        sms = std::max(sms, 1);
    }
    const int64_t wanted = (work + threads - 1) / threads;
    return int(std::max<int64_t>(1, std::min<int64_t>(wanted, int64_t(sms) * 8)));
}

} // namespace

DeviceSums emptyDeviceSums()
{
    return DeviceSums {};
}

namespace {

// Folds the device's holders of the fields into the host's.
struct DeviceToHost {
    FP8_HD void add(int64_t &into, unsigned long long from) { into += int64_t(from); }
    FP8_HD void add(double &into, double from) { into += from; }
    FP8_HD void max(double &into, unsigned int fromBits)
    {
        const double v = fp8math::bitsFloat(fromBits);
        into = into > v ? into : v;
    }
    FP8_HD void min(double &into, unsigned int fromBits)
    {
        const double v = fp8math::bitsFloat(fromBits);
        into = into < v ? into : v;
    }
};

} // namespace

void addDeviceSums(const DeviceSums &d, fp8math::MetricSums &m)
{
    DeviceToHost op;
    fp8math::forEachField(m, d, op);
    for (int b = 0; b < kHistBins; ++b) {
        m.histIn[b] += int64_t(d.histIn[b]);
        m.histScaled[b] += int64_t(d.histScaled[b]);
    }
}

bool tileShapeSupported(const QuantPlan &plan)
{
    return plan.blockCols >= 1 && plan.blockCols <= kTileGroup && kTileGroup % plan.blockCols == 0
        && plan.blockRows >= 1;
}

int launchAmax(const void *data, InputType type, int64_t numel, DeviceSums *out, void *stream)
{
    if (numel == 0)
        return int(cudaSuccess);
    const auto s = static_cast<cudaStream_t>(stream);
    amaxKernel<<<gridFor(numel, kThreads), kThreads, 0, s>>>(data, type, numel, out);
    return int(cudaGetLastError());
}

int launchAccumulate(
    const void *data, InputType type, int64_t rows, int64_t cols, const QuantPlan &plan, DeviceSums *out, void *stream)
{
    const int64_t n = rows * cols;
    if (n == 0)
        return int(cudaSuccess);
    const auto s = static_cast<cudaStream_t>(stream);
    switch (plan.mode) {
    case fp8math::ScaleMode::Tensor:
        uniformKernel<<<gridFor(n, kThreads), kThreads, 0, s>>>(data, type, n, plan, out);
        break;
    case fp8math::ScaleMode::RowBlocks: {
        if (plan.blockCols > 128 || (plan.blockCols < 32 && 32 % plan.blockCols != 0)
            || (plan.blockCols > 32 && plan.blockCols % 32 != 0))
            return int(cudaErrorInvalidValue);
        const int64_t blocks = rows * ((cols + plan.blockCols - 1) / plan.blockCols);
        const int64_t lanes = blocks * std::min(plan.blockCols, 32);
        rowBlocksKernel<<<gridFor(lanes, kThreads), kThreads, 0, s>>>(data, type, rows, cols, plan, out);
        break;
    }
    case fp8math::ScaleMode::TileBlocks: {
        if (!tileShapeSupported(plan))
            return int(cudaErrorInvalidValue);
        const int64_t work = ((rows + plan.blockRows - 1) / plan.blockRows) * ((cols + kTileGroup - 1) / kTileGroup);
        tilesKernel<<<gridFor(work * kTileGroup, kTileGroup), kTileGroup, 0, s>>>(data, type, rows, cols, plan, out);
        break;
    }
    }
    return int(cudaGetLastError());
}

} // namespace fp8scope::gpu
