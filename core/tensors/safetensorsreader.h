// Reader of safetensors files: an 8-byte little-endian header length, a JSON header, then raw data.
#pragma once

#include "tensorreader.h"

#include <QByteArray>
#include <QFile>
#include <QHash>

#include <optional>

namespace fp8scope {

struct SafetensorsEntry {
    QString name;
    QString dtypeName; // as the header spells it
    bool readable = false; // a dtype fp8scope reads (`dtype` is set); the others are listed, never opened
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    int64_t begin = 0; // offsets relative to the start of the data section
    int64_t end = 0;
};

// Parses the JSON header of a file whose data section is `dataSize` bytes, checking every entry's offsets
// against it and, for the dtypes of the format's specification, against its dtype and shape. Tensors of
// dtypes fp8scope does not read (integers, booleans, float64, FP4, ...) are entries too, so that the others
// of a checkpoint stay readable. Used by SafetensorsReader and the fuzz target.
bool parseSafetensorsHeader(
    const QByteArray &json, qint64 dataSize, std::vector<SafetensorsEntry> *entries, QString *error);

// FP4 (E2M1) weights packed two to a byte (U8) in the layouts quantized checkpoints use, found by the
// tensors beside them:
// - NVFP4 as NVIDIA ModelOpt writes it: NAME (U8 [.., C]), NAME_scale (F8_E4M3 [.., 2C/16], one per 16
//   elements), NAME_scale_2 (F32, one value: the decode scale multiplies it);
// - NVFP4 as compressed-tensors (llm-compressor, vLLM) writes it: NAME_packed (U8), NAME_scale (F8_E4M3),
//   NAME_global_scale (F32, one value: the decode scale is divided by it);
// - MXFP4 as gpt-oss writes it: NAME_blocks (U8 [.., G, 16], 32 elements a block) and NAME_scales (U8
//   E8M0 [.., G]).
struct Fp4Layout {
    const SafetensorsEntry *codes = nullptr;
    const SafetensorsEntry *scales = nullptr;
    const SafetensorsEntry *global = nullptr; // NVFP4 only
    bool divideByGlobal = false;
    bool e8m0 = false; // the block scales are E8M0 (else E4M3)
    int64_t block = 16;
    std::vector<int64_t> shape; // in FP4 elements
    QString kind; // "NVFP4 (ModelOpt)", ...
};
std::optional<Fp4Layout> fp4LayoutOf(const SafetensorsEntry &codes, const std::vector<SafetensorsEntry> &entries);

// What a folder of *.safetensors is as a model: a quantized inference checkpoint as serving stacks load it
// (core/audit reads it: beside an hf_quant_config.json, or a config.json with a quantization_config), an
// unquantized model in the Hugging Face layout (a config.json naming its architectures or model_type: the BF16
// weights a quantized one is made from, the audit's reference), or neither (dumps, say). The folder scanner
// leaves both kinds of model out of the run's data (their config is the model's, not the training's; their
// weights are no dumps).
enum class ModelFolder { None, Quantized, Unquantized };
// From the names of the files the folder holds (a listing already made: no second one).
ModelFolder modelFolderKind(const QString &dir, const QStringList &names);
bool isInferenceExport(const QString &dir);
bool isInferenceExport(const QString &dir, const QStringList &names);

class SafetensorsReader : public TensorReader
{
public:
    // name may be empty when the file holds exactly one tensor. FP4 weights packed in bytes beside their
    // block scales (fp4LayoutOf) open as an Fp4PackedReader.
    static std::unique_ptr<TensorReader> open(const QString &path, const QString &name, Problem *problem);
    // The names of the tensors fp8scope reads, sorted; the others go to *skipped.
    static QStringList names(const QString &path, Problem *problem, std::vector<SkippedTensor> *skipped = nullptr);
    // Every entry of the file's header (readable or not) and where its data section starts.
    static bool entries(
        const QString &path, std::vector<SafetensorsEntry> *entries, qint64 *dataStart, Problem *problem);
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;
    bool storedDecodeScale(Fp8DecodeScale *scale, QString *why) const override;

private:
    static bool readHeader(QFile &file, std::vector<SafetensorsEntry> *entries, qint64 *dataStart, Problem *problem);
    // Decode scales kept as E8M0 exponent bytes (U8 or F8_E8M0), 2^(e - 127).
    bool storedE8m0Scale(const SafetensorsEntry &e, Fp8DecodeScale *scale, QString *why) const;

    QFile m_file;
    int64_t m_dataOffset = 0;
    QHash<QString, SafetensorsEntry> m_entries; // every tensor of the file (for the decode scale beside this one)
    qint64 m_dataStart = 0;
};

} // namespace fp8scope
