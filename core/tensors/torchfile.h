// torch.save files (the zip layout of PyTorch 1.6 and later) read without Python and without running the
// pickle: `<archive>/data.pkl` goes through torchpickle's interpreter, each tensor's bytes are read in place
// from the stored (uncompressed) entry `<archive>/data/<key>`, chunk by chunk, through libzip. Transformer
// Engine's quantized tensors (DumpTensors' `quantized`) are read from their reduce form as FP8 codes with
// their scale_inv.
#pragma once

#include "tensorreader.h"

#include <QByteArray>

#include <optional>

namespace fp8scope {

struct TorchEntry {
    QString name; // dict keys and list indices joined by '.'; empty for a file holding one bare tensor
    QString dtypeName; // torch's name of the element type ("bfloat16", "float8_e4m3fn", "uint8")
    std::optional<DType> dtype; // what fp8scope reads it as; nothing for other dtypes (listed, not opened)
    QString storageKey;
    int64_t storageNumel = 0; // elements of the storage
    int elementSize = 1;
    int64_t storageOffset = 0; // in elements
    std::vector<int64_t> shape;
    std::vector<int64_t> stride; // in elements
    // Transformer Engine quantized tensors: the class the pickle names, and the scale_inv tensor (index in
    // TorchContents::scales) with the block it applies to (1x1: per tensor; 1x32/32x1: MXFP8, E8M0 bytes;
    // 128x128 and 1x128: Float8BlockwiseQTensor, float32), and whether its grid is stored transposed (block
    // column by row, as TE keeps 1x128 scales for the GEMM).
    QString teClass;
    int scaleIndex = -1;
    int64_t scaleBlockRows = 0;
    int64_t scaleBlockCols = 0;
    bool scaleTransposed = false;
};

// A Transformer Engine quantized tensor as its reduce form holds it (DumpTensors' `quantized`): each copy's
// buffers (indices into TorchContents::buffers; -1 where the copy is absent) and what the class says of them.
// The row-wise copy is the tensor's 2-D view; the column-wise one is the same view (MXFP8: blocks of 32
// rows) or its transpose, quantized row-wise (Float8Tensor's transpose, Float8BlockwiseQTensor, NVFP4Tensor).
struct TeQuantized {
    QString name; // the entry ("quantized", "layer.quantized")
    QString teClass; // Float8Tensor, MXFP8Tensor, Float8BlockwiseQTensor, NVFP4Tensor
    DType element = DType::F8E4M3; // F8E4M3, F8E5M2, or F4E2M1 (NVFP4: two codes a byte, the first low)
    std::vector<int64_t> shape; // the logical shape (the pickle's, or the row-wise data's)
    int rowwiseData = -1;
    int rowwiseScale = -1;
    int columnwiseData = -1;
    int columnwiseScale = -1;
    int amaxRowwise = -1; // NVFP4: the tensor amax its FP32 scale came from
    int amaxColumnwise = -1;
    std::optional<bool> is2D; // Float8BlockwiseQTensor: 128x128 blocks rather than 1x128
    bool swizzledScales = false; // scales in the GEMM's swizzled layout
    bool rowScaled = false; // NVFP4 with a scale per row
    bool fourOverSix = false; // NVFP4's 4-over-6 block scaling
};

// Which of Transformer Engine's blockwise scale layouts (Float8BlockQuantizer.get_scale_shape) a float32
// scale_inv of `scaleShape` is for a view of m rows and k columns: 128x128 blocks as (ceil(m/128), ceil(k/128)
// rounded up to 4); 1x128 as the GEMM takes them, transposed, (ceil(k/128), m rounded up to 4); 1x128 compact
// (all-gather) as (m, ceil(k/128)). Whole shapes only; `is2D` narrows where the pickle says it. Nothing where none
// or more than one fits (*fitting: how many did).
struct TeBlockwiseLayout {
    bool twoD = false;
    bool transposed = false;
};
std::optional<TeBlockwiseLayout> teBlockwiseLayout(
    const std::vector<int64_t> &scaleShape, int64_t m, int64_t k, std::optional<bool> is2D, int *fitting = nullptr);

struct TorchRefusal {
    QString name; // the entry it stood at
    QString why;
};

struct TorchContents {
    std::vector<TorchEntry> tensors;
    std::vector<TorchEntry> scales; // scale_inv tensors of quantized entries
    std::vector<TorchRefusal> refused; // entries not read, and why (a global not allowed, ...)
    std::vector<TeQuantized> quantized; // every quantized tensor whose buffers could be listed
    std::vector<TorchEntry> buffers; // their buffers, checked against their storages
};

// Interprets a data.pkl and lists its tensors, checking each view against its storage's declared size.
// False with *error and *offset when the pickle cannot be read at all.
bool parseTorchPickle(const QByteArray &pickle, TorchContents *contents, QString *error, int64_t *offset);

class TorchArchive
{
public:
    ~TorchArchive();
    TorchArchive(const TorchArchive &) = delete;
    TorchArchive &operator=(const TorchArchive &) = delete;

    // Opens a torch.save zip; the legacy (non-zip) format, a big-endian file, a missing data.pkl, storages
    // the archive lacks or that are smaller than the tensors on them, and compressed storages are errors
    // or refusals with their reason.
    static std::unique_ptr<TorchArchive> open(const QString &path, Problem *problem);
    // The same on bytes in memory (the fuzz target).
    static std::unique_ptr<TorchArchive> openBuffer(const QByteArray &bytes, Problem *problem);

    const TorchContents &contents() const { return m_contents; }
    // Copies `bytes` bytes of a storage, from `byteOffset` on.
    bool readStorage(const QString &key, int64_t byteOffset, int64_t bytes, void *dst, Problem *problem);

private:
    TorchArchive() = default;
    static std::unique_ptr<TorchArchive> finishOpen(std::unique_ptr<TorchArchive> archive, Problem *problem);

    QString m_path;
    QByteArray m_buffer;
    void *m_zip = nullptr; // zip_t
    QString m_openKey; // the storage last read, and its entry's index
    int64_t m_openIndex = -1;
    QString m_prefix; // "<archive>/"
    TorchContents m_contents;
};

// TensorReader for one tensor of a torch.save file.
class TorchReader : public TensorReader
{
public:
    static std::unique_ptr<TensorReader> open(const QString &path, const QString &name, Problem *problem);
    // The names of the tensors fp8scope reads; those of other dtypes go to *skipped, refused entries to
    // *refused.
    static QStringList names(const QString &path, Problem *problem, std::vector<SkippedTensor> *skipped = nullptr,
        std::vector<TorchRefusal> *refused = nullptr);
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;
    bool storedDecodeScale(Fp8DecodeScale *scale, QString *why) const override;

private:
    std::unique_ptr<TorchArchive> m_archive;
    TorchEntry m_entry;
    bool m_contiguous = true;
};

} // namespace fp8scope
