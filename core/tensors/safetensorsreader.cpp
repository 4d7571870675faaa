#include "safetensorsreader.h"

#include "fp4packed.h"
#include "fp8decode.h"

#include "core/formats/fp8math.h"

#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <array>
#include <cmath>

namespace fp8scope {

namespace {

constexpr qint64 kMaxHeader = 100 << 20; // the reference implementation's limit

std::optional<DType> safetensorsDType(const QString &s)
{
    if (s == QLatin1String("F32"))
        return DType::F32;
    if (s == QLatin1String("F16"))
        return DType::F16;
    if (s == QLatin1String("BF16"))
        return DType::BF16;
    if (s == QLatin1String("F8_E4M3"))
        return DType::F8E4M3;
    if (s == QLatin1String("F8_E5M2"))
        return DType::F8E5M2;
    if (s == QLatin1String("F64"))
        return DType::F64;
    return std::nullopt;
}

// Bits per element of every dtype the safetensors specification names; 0 for a name it does not.
int safetensorsBits(const QString &s)
{
    static const QHash<QString, int> bits {{QStringLiteral("BOOL"), 8}, {QStringLiteral("U8"), 8},
        {QStringLiteral("I8"), 8}, {QStringLiteral("F8_E5M2"), 8}, {QStringLiteral("F8_E4M3"), 8},
        {QStringLiteral("F8_E8M0"), 8}, {QStringLiteral("I16"), 16}, {QStringLiteral("U16"), 16},
        {QStringLiteral("F16"), 16}, {QStringLiteral("BF16"), 16}, {QStringLiteral("I32"), 32},
        {QStringLiteral("U32"), 32}, {QStringLiteral("F32"), 32}, {QStringLiteral("I64"), 64},
        {QStringLiteral("U64"), 64}, {QStringLiteral("F64"), 64}, {QStringLiteral("C64"), 64},
        {QStringLiteral("F4"), 4}, {QStringLiteral("F6_E2M3"), 6}, {QStringLiteral("F6_E3M2"), 6}};
    return bits.value(s, 0);
}

// The reader over an FP4 layout's codes: each scale byte's float32 multiplier with the global scale folded
// in (a float32 product or quotient, as the inference kernels take it).
std::unique_ptr<TensorReader> openFp4(QFile &file, const Fp4Layout &l, qint64 dataStart, Problem *problem)
{
    const QString path = file.fileName();
    float global = 1.0f;
    if (l.global) {
        std::vector<float> value;
        auto reader = SafetensorsReader::open(path, l.global->name, problem);
        if (!reader || !readDecodeScales(*reader, 1, &value, problem))
            return nullptr;
        global = value.front();
    }
    std::array<float, 256> values {};
    for (uint32_t code = 0; code < 256; ++code) {
        const float s = fp8math::decodeCode(code, l.e8m0 ? fp8math::Format::E8M0 : fp8math::Format::E4M3);
        values[code] = !l.global ? s : (l.divideByGlobal ? s / global : s * global);
    }
    TensorInfo info;
    info.file = path;
    info.name = l.codes->name;
    info.dtype = DType::F4E2M1;
    info.shape = l.shape;
    finishTensorInfo(info);
    QString decoding = QStringLiteral("%1: E2M1 codes x %2 block scale (1x%3) from tensor '%4'")
                           .arg(l.kind, l.e8m0 ? QStringLiteral("E8M0") : QStringLiteral("E4M3"))
                           .arg(l.block)
                           .arg(l.scales->name);
    if (l.global)
        decoding += QStringLiteral(" %1 global scale %2 from tensor '%3'")
                        .arg(l.divideByGlobal ? QStringLiteral("/") : QStringLiteral("x"))
                        .arg(double(global), 0, 'g', 7)
                        .arg(l.global->name);
    return Fp4PackedReader::open(
        std::move(info), dataStart + l.codes->begin, dataStart + l.scales->begin, l.block, values, decoding, problem);
}

const char *const kReadDtypes = "F32, F16, BF16, F8_E4M3, F8_E5M2 and F64";

} // namespace

bool parseSafetensorsHeader(
    const QByteArray &json, qint64 dataSize, std::vector<SafetensorsEntry> *entries, QString *error)
{
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &pe);
    if (pe.error != QJsonParseError::NoError) {
        *error = QStringLiteral("header JSON: %1 at header byte %2").arg(pe.errorString()).arg(pe.offset);
        return false;
    }
    if (!doc.isObject()) {
        *error = QStringLiteral("header is not a JSON object");
        return false;
    }
    const QJsonObject root = doc.object();
    entries->clear();
    for (auto it = root.begin(); it != root.end(); ++it) {
        if (it.key() == QLatin1String("__metadata__"))
            continue;
        const QJsonObject o = it.value().toObject();
        SafetensorsEntry e;
        e.name = it.key();
        const QJsonValue dtValue = o.value(QLatin1String("dtype"));
        e.dtypeName = dtValue.toString();
        if (!dtValue.isString() || e.dtypeName.isEmpty()) {
            *error = QStringLiteral("tensor '%1': no dtype").arg(e.name);
            return false;
        }
        const auto dtype = safetensorsDType(e.dtypeName);
        e.readable = dtype.has_value();
        e.dtype = dtype.value_or(DType::F32);
        const QJsonArray shape = o.value(QLatin1String("shape")).toArray();
        const QJsonArray offsets = o.value(QLatin1String("data_offsets")).toArray();
        for (const QJsonValue &v : shape) {
            const double d = v.toDouble(-1);
            if (!v.isDouble() || d < 0 || d > 9.0e15 || d != double(int64_t(d))) {
                *error = QStringLiteral("tensor '%1': bad shape").arg(e.name);
                return false;
            }
            e.shape.push_back(int64_t(d));
        }
        if (offsets.size() != 2 || !offsets[0].isDouble() || !offsets[1].isDouble()) {
            *error = QStringLiteral("tensor '%1': data_offsets must be two integers").arg(e.name);
            return false;
        }
        const double b = offsets[0].toDouble();
        const double en = offsets[1].toDouble();
        if (b != std::floor(b) || en != std::floor(en)) {
            // Printed as written: rounded, 10.5 read as "11" and the message pointed nowhere.
            *error = QStringLiteral("tensor '%1': data_offsets [%2, %3] are not whole byte offsets")
                         .arg(e.name)
                         .arg(QString::number(b, 'g', 17), QString::number(en, 'g', 17));
            return false;
        }
        if (b < 0 || en < b || en > double(dataSize)) {
            *error = QStringLiteral("tensor '%1': data_offsets [%2, %3] outside the %4-byte data section")
                         .arg(e.name)
                         .arg(b, 0, 'f', 0)
                         .arg(en, 0, 'f', 0)
                         .arg(dataSize);
            return false;
        }
        e.begin = int64_t(b);
        e.end = int64_t(en);
        TensorInfo probe;
        probe.shape = e.shape;
        // A dtype the specification does not name (a newer one) has no size to check against.
        const int64_t bits = safetensorsBits(e.dtypeName);
        const int64_t bytes = e.end - e.begin;
        if (!finishTensorInfo(probe)
            || (bits > 0 && (probe.numel > bytes * 8 / bits || probe.numel * bits != bytes * 8))) {
            *error = QStringLiteral("tensor '%1': shape and dtype need a different byte count than data_offsets give")
                         .arg(e.name);
            return false;
        }
        entries->push_back(std::move(e));
    }
    return true;
}

ModelFolder modelFolderKind(const QString &dir, const QStringList &names)
{
    const QDir d(dir);
    if (!std::any_of(
            names.begin(), names.end(), [](const QString &n) { return n.endsWith(QLatin1String(".safetensors")); }))
        return ModelFolder::None;
    if (names.contains(QLatin1String("hf_quant_config.json")))
        return ModelFolder::Quantized;
    if (!names.contains(QLatin1String("config.json")))
        return ModelFolder::None;
    QFile config(d.filePath(QStringLiteral("config.json")));
    // A model's config is small; a file of megabytes named so is something else.
    if (config.size() >= (qint64(1) << 20) || !config.open(QIODevice::ReadOnly))
        return ModelFolder::None;
    const QJsonObject o = QJsonDocument::fromJson(config.readAll()).object();
    if (o.contains(QStringLiteral("quantization_config")))
        return ModelFolder::Quantized;
    if (o.contains(QStringLiteral("architectures")) || o.contains(QStringLiteral("model_type")))
        return ModelFolder::Unquantized;
    return ModelFolder::None;
}

bool isInferenceExport(const QString &dir, const QStringList &names)
{
    return modelFolderKind(dir, names) == ModelFolder::Quantized;
}

bool isInferenceExport(const QString &dir)
{
    return isInferenceExport(dir, QDir(dir).entryList(QDir::Files));
}

bool SafetensorsReader::entries(
    const QString &path, std::vector<SafetensorsEntry> *entries, qint64 *dataStart, Problem *problem)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *problem = {path, -1, QStringLiteral("cannot open: %1").arg(f.errorString())};
        return false;
    }
    return readHeader(f, entries, dataStart, problem);
}

bool SafetensorsReader::readHeader(
    QFile &file, std::vector<SafetensorsEntry> *entries, qint64 *dataStart, Problem *problem)
{
    const QString path = file.fileName();
    const QByteArray lenBytes = file.read(8);
    if (lenBytes.size() != 8) {
        *problem = {path, 0, QStringLiteral("file too short for a safetensors header")};
        return false;
    }
    quint64 len = 0;
    for (int i = 7; i >= 0; --i)
        len = (len << 8) | uchar(lenBytes[i]);
    if (len > quint64(kMaxHeader) || qint64(len) > file.size() - 8) {
        *problem = {path, 0, QStringLiteral("header length %1 exceeds the file (%2 bytes)").arg(len).arg(file.size())};
        return false;
    }
    const QByteArray json = file.read(qint64(len));
    if (json.size() != qint64(len)) {
        *problem = {path, 8, QStringLiteral("truncated header")};
        return false;
    }
    *dataStart = 8 + qint64(len);
    QString error;
    if (!parseSafetensorsHeader(json, file.size() - *dataStart, entries, &error)) {
        *problem = {path, 8, error};
        return false;
    }
    return true;
}

std::optional<Fp4Layout> fp4LayoutOf(const SafetensorsEntry &codes, const std::vector<SafetensorsEntry> &entries)
{
    if (codes.dtypeName != QLatin1String("U8") || codes.shape.empty() || codes.begin == codes.end)
        return std::nullopt;
    auto find = [&](const QString &name, const char *dtype) -> const SafetensorsEntry * {
        for (const SafetensorsEntry &e : entries) {
            if (e.name == name && e.dtypeName == QLatin1String(dtype))
                return &e;
        }
        return nullptr;
    };
    const std::vector<int64_t> &s = codes.shape;
    Fp4Layout l;
    l.codes = &codes;
    if (codes.name.endsWith(QLatin1String("_blocks"))) {
        // gpt-oss: the last dimension holds a block's 16 bytes.
        const QString base = codes.name.chopped(7);
        const SafetensorsEntry *scales = find(base + QStringLiteral("_scales"), "U8");
        if (!scales || s.size() < 2 || s.back() != 16 || scales->shape != std::vector<int64_t>(s.begin(), s.end() - 1))
            return std::nullopt;
        l.scales = scales;
        l.e8m0 = true;
        l.block = 32;
        l.shape.assign(s.begin(), s.end() - 2);
        l.shape.push_back(s[s.size() - 2] * 32);
        l.kind = QStringLiteral("MXFP4 (gpt-oss)");
        return l;
    }
    const bool packedName = codes.name.endsWith(QLatin1String("_packed"));
    const QString base = packedName ? codes.name.chopped(7) : codes.name;
    const SafetensorsEntry *scales = find(base + QStringLiteral("_scale"), "F8_E4M3");
    std::vector<int64_t> gridShape(s);
    gridShape.back() = (2 * s.back() + 15) / 16;
    if (!scales || scales->shape != gridShape)
        return std::nullopt;
    l.scales = scales;
    l.shape = s;
    l.shape.back() = 2 * s.back();
    if (const SafetensorsEntry *g = find(base + QStringLiteral("_scale_2"), "F32"); g && !packedName) {
        l.global = g;
        l.kind = QStringLiteral("NVFP4 (ModelOpt)");
    } else if (const SafetensorsEntry *g = find(base + QStringLiteral("_global_scale"), "F32")) {
        l.global = g;
        l.divideByGlobal = true;
        l.kind = QStringLiteral("NVFP4 (compressed-tensors)");
    } else {
        l.kind = QStringLiteral("NVFP4 without a global scale");
    }
    if (l.global && l.global->end - l.global->begin != 4)
        return std::nullopt;
    return l;
}

QStringList SafetensorsReader::names(const QString &path, Problem *problem, std::vector<SkippedTensor> *skipped)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *problem = {path, -1, f.errorString()};
        return {};
    }
    std::vector<SafetensorsEntry> entries;
    qint64 dataStart = 0;
    if (!readHeader(f, &entries, &dataStart, problem))
        return {};
    QStringList out;
    for (const auto &e : entries) {
        if (e.readable || fp4LayoutOf(e, entries))
            out << e.name;
        else if (skipped)
            skipped->push_back({e.name, e.dtypeName, e.shape});
    }
    out.sort();
    if (skipped)
        std::sort(skipped->begin(), skipped->end(),
            [](const SkippedTensor &a, const SkippedTensor &b) { return a.name < b.name; });
    return out;
}

std::unique_ptr<TensorReader> SafetensorsReader::open(const QString &path, const QString &name, Problem *problem)
{
    auto r = std::unique_ptr<SafetensorsReader>(new SafetensorsReader);
    r->m_file.setFileName(path);
    if (!r->m_file.open(QIODevice::ReadOnly)) {
        *problem = {path, -1, r->m_file.errorString()};
        return nullptr;
    }
    std::vector<SafetensorsEntry> entries;
    qint64 dataStart = 0;
    if (!readHeader(r->m_file, &entries, &dataStart, problem))
        return nullptr;
    const SafetensorsEntry *found = nullptr;
    if (name.isEmpty() && entries.size() == 1)
        found = &entries.front();
    for (const auto &e : entries) {
        if (!name.isEmpty() && e.name == name)
            found = &e;
    }
    if (!found) {
        *problem = {path, -1,
            name.isEmpty()
                ? QStringLiteral("the file holds %1 tensors; name one as FILE:NAME (stats FILE --list lists them)")
                      .arg(entries.size())
                : QStringLiteral("no tensor named '%1'").arg(name)};
        return nullptr;
    }
    if (!found->readable) {
        if (const auto layout = fp4LayoutOf(*found, entries))
            return openFp4(r->m_file, *layout, dataStart, problem);
        *problem = {path, dataStart + found->begin,
            QStringLiteral("tensor '%1' is %2; fp8scope reads %3 tensors")
                .arg(found->name, found->dtypeName, QLatin1String(kReadDtypes))};
        return nullptr;
    }
    r->m_info.file = path;
    r->m_info.name = found->name;
    r->m_info.dtype = found->dtype;
    r->m_info.shape = found->shape;
    finishTensorInfo(r->m_info);
    r->m_dataOffset = dataStart + found->begin;
    for (const auto &e : entries)
        r->m_entries.insert(e.name, e);
    r->m_dataStart = dataStart;
    return r;
}

bool SafetensorsReader::storedDecodeScale(Fp8DecodeScale *scale, QString *why) const
{
    // DeepSeek-V3 keeps NAME_scale_inv beside NAME (a 128x128 block grid for a weight); compressed-tensors
    // (vLLM, llm-compressor) and NVIDIA ModelOpt keep NAME_scale, which they too multiply the codes by
    // (one per tensor or per output channel); MXFP8 checkpoints keep E8M0 exponents there, as bytes.
    for (const QString &candidate : decodeScaleNames(m_info.name)) {
        const auto entry = m_entries.constFind(candidate);
        if (entry == m_entries.constEnd())
            continue;
        if (entry->dtypeName == QLatin1String("U8") || entry->dtypeName == QLatin1String("F8_E8M0"))
            return storedE8m0Scale(*entry, scale, why);
        Problem p;
        auto reader = open(m_info.file, candidate, &p);
        std::vector<float> values;
        if (!reader || !readDecodeScales(*reader, m_info.numel, &values, &p)) {
            *why = QStringLiteral("tensor '%1' %2").arg(candidate, p.message);
            return false;
        }
        const QString source = candidate.endsWith(QLatin1String("_inv"))
            ? QStringLiteral("tensor '%1'").arg(candidate)
            : QStringLiteral("tensor '%1' (a decode multiplier, as compressed-tensors and ModelOpt store it)")
                  .arg(candidate);
        auto s
            = scaleFromList(std::move(values), reader->info().shape, m_info.rows, m_info.cols, QString(), source, why);
        if (!s)
            return false;
        *scale = std::move(*s);
        return true;
    }
    return false;
}

bool SafetensorsReader::storedE8m0Scale(const SafetensorsEntry &e, Fp8DecodeScale *scale, QString *why) const
{
    const int64_t n = e.end - e.begin;
    if (n > std::max<int64_t>(m_info.numel, 1)) {
        *why = QStringLiteral("tensor '%1' holds %2 values, more than the %3 elements it would scale")
                   .arg(e.name)
                   .arg(n)
                   .arg(m_info.numel);
        return false;
    }
    QFile f(m_info.file);
    QByteArray bytes(qsizetype(n), Qt::Uninitialized);
    if (!f.open(QIODevice::ReadOnly) || !f.seek(m_dataStart + e.begin) || f.read(bytes.data(), n) != n) {
        *why = QStringLiteral("tensor '%1': short read").arg(e.name);
        return false;
    }
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        values[size_t(i)] = fp8math::decodeCode(uint8_t(bytes[qsizetype(i)]), fp8math::Format::E8M0);
    auto s = scaleFromList(std::move(values), e.shape, m_info.rows, m_info.cols, QString(),
        QStringLiteral("tensor '%1' (E8M0 exponents, as MXFP8 checkpoints store them)").arg(e.name), why);
    if (!s)
        return false;
    *scale = std::move(*s);
    return true;
}

bool SafetensorsReader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    const int size = dtypeSize(m_info.dtype);
    const qint64 offset = m_dataOffset + first * size;
    const qint64 bytes = count * size;
    if (!m_file.seek(offset) || m_file.read(static_cast<char *>(dst), bytes) != bytes) {
        *problem = {m_info.file, offset, QStringLiteral("short read of %1 bytes").arg(bytes)};
        return false;
    }
    return true;
}

} // namespace fp8scope
