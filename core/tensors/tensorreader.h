// Streams the elements of one tensor in a dump file, chunk by chunk, so that tensors larger than memory
// can be processed. Each format (HDF5, safetensors, .npy, torch.save) implements it; openTensor() picks one.
#pragma once

#include "core/formats/dtype.h"
#include "problem.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <memory>
#include <vector>

namespace fp8scope {

struct TensorInfo {
    QString file;
    QString name; // dataset path or tensor name; empty for a single-tensor .npy
    DType dtype = DType::F32; // what read() hands out
    DType storedDtype = DType::F32; // what the file holds (FP8 codes and float64 are handed out as float32)
    std::vector<int64_t> shape;
    int64_t numel = 0;
    // Row-major 2-D view: all dimensions but the last are rows; a 1-D tensor is one row.
    int64_t rows = 1;
    int64_t cols = 0;
    // FP8 tensors: how the codes became values ("E4M3 codes x scale_inv ... from ..." or why they are read
    // as stored); empty for other dtypes. See fp8decode.h.
    QString decoding;
};

struct Fp8DecodeScale;

class TensorReader
{
public:
    virtual ~TensorReader() = default;

    const TensorInfo &info() const { return m_info; }

    // read() ranges must start and end on multiples of this many elements (HDF5 reads whole slices of
    // the first dimension; the other formats take any range).
    virtual int64_t alignment() const { return 1; }

    // Copies elements [first, first + count) in the file's dtype into dst (count * dtypeSize bytes).
    virtual bool read(int64_t first, int64_t count, void *dst, Problem *problem) = 0;

    // The amax history (newest first) the training run stored with the tensor, if any (HDF5 dumps).
    virtual std::vector<float> amaxHistory() const { return {}; }

    // Threads a reader that decodes in parallel (gzip HDF5 chunks) may use; 0: one per hardware thread.
    virtual void setThreads(int threads) { (void)threads; }

    // FP8 tensors: the decode scale the file keeps beside the tensor (HDF5: its scale_inv attribute or its
    // high-precision sibling's; safetensors: a NAME_scale_inv or NAME_scale tensor). False with *why set when there is
    // one that cannot be used, false with *why empty when there is none.
    virtual bool storedDecodeScale(Fp8DecodeScale *scale, QString *why) const
    {
        (void)scale;
        (void)why;
        return false;
    }

    void setDecoding(const QString &text) { m_info.decoding = text; }

protected:
    TensorInfo m_info;
};

// Fills the derived fields (numel, rows, cols, storedDtype) of info from its shape and dtype; false on
// overflow or negative sizes.
bool finishTensorInfo(TensorInfo &info);

// Opens FILE or FILE:DATASET (HDF5 dataset path or safetensors tensor name). A file holding exactly one
// tensor needs no name. Returns null with *problem set on any error. A torch.save .pt file is read without running
// its pickle (torchfile.h).
// FP8 tensors are read as their values (float32) where a decode scale is found (fp8decode.h), else as
// their codes. float64 tensors are read as float32, each value rounded to nearest even as a cast does. `scaleInv`
// chooses instead: "none" (the codes), a number (one scale for the tensor), or the name of a tensor in the same file
// holding the scales; a number or a name is an error for a tensor that is not FP8.
std::unique_ptr<TensorReader> openTensor(const QString &spec, Problem *problem, const QString &scaleInv = {});

// n elements of `type` at src as float32 (float64 rounded to nearest even, FP8 and FP4 codes as their values).
void widenToFloat(const char *src, DType type, size_t n, float *dst);

// All elements of a small tensor of decode scales as float32 (any dtype); an error when it holds more than
// `limit` values (the elements of the tensor it scales).
bool readDecodeScales(TensorReader &reader, int64_t limit, std::vector<float> *values, Problem *problem);

// A tensor of a dump file whose dtype fp8scope does not read (a checkpoint's integer buffers or masks, FP4
// packed in bytes): listed, never opened.
struct SkippedTensor {
    QString name;
    QString dtype; // as the file spells it
    std::vector<int64_t> shape;
};

// Names of the tensors a dump file holds that fp8scope reads (HDF5 dataset paths, safetensors names, or
// {""} for .npy); those of other dtypes (integers, booleans, ...) go to *skipped.
QStringList listTensors(const QString &file, Problem *problem, std::vector<SkippedTensor> *skipped = nullptr);

} // namespace fp8scope
