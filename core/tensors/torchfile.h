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

struct TorchRefusal {
    QString name; // the entry it stood at
    QString why;
};

struct TorchContents {
    std::vector<TorchEntry> tensors;
    std::vector<TorchEntry> scales; // scale_inv tensors of quantized entries
    std::vector<TorchRefusal> refused; // entries not read, and why (a global not allowed, ...)
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
