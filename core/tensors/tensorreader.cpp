#include "tensorreader.h"

#include "core/formats/fp8math.h"
#include "fp8decode.h"
#include "hdf5reader.h"
#include "jaxdump.h"
#include "npyreader.h"
#include "safetensorsreader.h"
#include "torchfile.h"

#include <QFile>
#include <QFileInfo>

#include <cmath>
#include <cstring>

namespace fp8scope {

bool finishTensorInfo(TensorInfo &info)
{
    int64_t numel = 1;
    for (int64_t d : info.shape) {
        if (d < 0 || (d > 0 && numel > (int64_t(1) << 62) / d))
            return false;
        numel *= d;
    }
    info.numel = numel;
    info.storedDtype = info.dtype;
    if (info.shape.empty()) {
        info.rows = 1;
        info.cols = 1;
    } else {
        info.cols = info.shape.back();
        info.rows = info.cols > 0 ? numel / info.cols : 0;
    }
    return true;
}

namespace {

enum class FileKind { Missing, Folder, Unreadable, Hdf5, Npy, Safetensors, Pickle, JaxDump, Unknown };

FileKind sniff(const QString &path)
{
    const QFileInfo fi(path);
    if (fi.isDir())
        return FileKind::Folder;
    if (!fi.exists())
        return FileKind::Missing;
    QFile f(path);
    if (!fi.isFile() || !f.open(QIODevice::ReadOnly))
        return FileKind::Unreadable;
    const QByteArray head = f.read(16);
    if (path.endsWith(QLatin1String(".bin")) && QFileInfo::exists(jaxMetaPath(path)))
        return FileKind::JaxDump;
    if (path.endsWith(QLatin1String(".pt")) || path.endsWith(QLatin1String(".pth"))
        || path.endsWith(QLatin1String(".bin")) || path.endsWith(QLatin1String(".pkl")) || head.startsWith("PK\x03\x04")
        || (head.size() >= 2 && uchar(head[0]) == 0x80 && uchar(head[1]) <= 5))
        return FileKind::Pickle;
    if (head.startsWith("\x93NUMPY"))
        return FileKind::Npy;
    if (head.startsWith("\x89HDF\r\n\x1a\n") || Hdf5Reader::isHdf5(path))
        return FileKind::Hdf5;
    if (head.size() >= 9 && head[8] == '{')
        return FileKind::Safetensors;
    return FileKind::Unknown;
}

Problem kindProblem(const QString &path, FileKind kind)
{
    if (kind == FileKind::Missing)
        return {path, -1, QStringLiteral("no such file")};
    if (kind == FileKind::Folder)
        return {path, -1,
            QStringLiteral("is a folder; name a tensor file in it (HDF5, safetensors, .npy, torch.save .pt or an "
                           "inspect_array .bin)")};
    if (kind == FileKind::Unreadable) {
        // Never open what is not a regular file here: opening a FIFO for reading waits for a writer.
        QString why = QStringLiteral("not a regular file");
        if (QFileInfo(path).isFile()) {
            QFile f(path);
            why = f.open(QIODevice::ReadOnly) ? QStringLiteral("it went away while being opened") : f.errorString();
        }
        return {path, -1, QStringLiteral("cannot be read (%1)").arg(why)};
    }
    return {path, 0, QStringLiteral("not a tensor dump (HDF5, safetensors, .npy or torch.save .pt expected)")};
}

// Splits FILE[:NAME]; a path containing ':' is taken whole when it exists. FILE may name a folder or
// another non-file, so that the error says what it is.
void splitSpec(const QString &spec, QString *file, QString *name)
{
    *file = spec;
    name->clear();
    if (QFileInfo::exists(spec))
        return;
    for (qsizetype i = spec.lastIndexOf(QLatin1Char(':')); i > 0; i = spec.lastIndexOf(QLatin1Char(':'), i - 1)) {
        if (QFileInfo::exists(spec.left(i))) {
            *file = spec.left(i);
            *name = spec.mid(i + 1);
            return;
        }
    }
}

std::unique_ptr<TensorReader> openStored(const QString &file, const QString &name, Problem *problem)
{
    const FileKind kind = sniff(file);
    switch (kind) {
    case FileKind::Hdf5: return Hdf5Reader::open(file, name, problem);
    case FileKind::Safetensors: return SafetensorsReader::open(file, name, problem);
    case FileKind::Pickle: return TorchReader::open(file, name, problem);
    case FileKind::JaxDump:
        if (!name.isEmpty()) {
            *problem = {file, -1, QStringLiteral("an inspect_array dump holds one tensor; drop ':%1'").arg(name)};
            return nullptr;
        }
        return JaxDumpReader::open(file, problem);
    case FileKind::Npy:
        if (!name.isEmpty()) {
            *problem = {file, -1, QStringLiteral(".npy files hold one unnamed tensor; drop ':%1'").arg(name)};
            return nullptr;
        }
        return NpyReader::open(file, problem);
    default: *problem = kindProblem(file, kind); return nullptr;
    }
}

// float64 tensors (numpy's and h5py's default) are handed out as float32, each value rounded to nearest
// even as a cast does (beyond the float32 range: infinity), since the metrics work on float32, float16 and
// bfloat16. Read in pieces of about a million elements, so the doubles never need a second large buffer.
class Float64Reader : public TensorReader
{
public:
    explicit Float64Reader(std::unique_ptr<TensorReader> stored)
        : m_stored(std::move(stored))
    {
        m_info = m_stored->info();
        m_info.dtype = DType::F32;
        m_info.decoding = QStringLiteral("float64 values rounded to float32 (nearest even)");
    }
    int64_t alignment() const override { return m_stored->alignment(); }
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override
    {
        const int64_t align = std::max<int64_t>(m_stored->alignment(), 1);
        const int64_t piece = std::max<int64_t>(align, (int64_t(1) << 20) / align * align);
        float *out = static_cast<float *>(dst);
        for (int64_t done = 0; done < count;) {
            const int64_t n = std::min(piece, count - done);
            m_buffer.resize(size_t(n));
            if (!m_stored->read(first + done, n, m_buffer.data(), problem))
                return false;
            for (int64_t i = 0; i < n; ++i)
                out[done + i] = float(m_buffer[size_t(i)]);
            done += n;
        }
        return true;
    }
    std::vector<float> amaxHistory() const override { return m_stored->amaxHistory(); }
    void setThreads(int threads) override { m_stored->setThreads(threads); }

private:
    std::unique_ptr<TensorReader> m_stored;
    std::vector<double> m_buffer;
};

bool isFp8(DType t)
{
    return t == DType::F8E4M3 || t == DType::F8E5M2;
}

QString fp8Name(DType t)
{
    return t == DType::F8E5M2 ? QStringLiteral("E5M2") : QStringLiteral("E4M3");
}

// The decode scales an explicit --scale-inv names: a number, or a tensor of the same file.
std::optional<Fp8DecodeScale> chosenScale(
    const QString &file, const QString &scaleInv, const TensorInfo &info, Problem *problem)
{
    bool isNumber = false;
    const float value = scaleInv.toFloat(&isNumber);
    if (isNumber) {
        if (!(value > 0.0f) || !std::isfinite(value)) {
            *problem = {file, -1, QStringLiteral("scale_inv %1 is not a positive finite number").arg(scaleInv)};
            return std::nullopt;
        }
        return Fp8DecodeScale::perTensor(value, QStringLiteral("the value given"), info.rows, info.cols);
    }
    Problem p;
    auto reader = openStored(file, scaleInv, &p);
    std::vector<float> values;
    if (!reader || !readDecodeScales(*reader, info.numel, &values, &p)) {
        *problem = {file, p.offset, QStringLiteral("scale_inv tensor '%1': %2").arg(scaleInv, p.message)};
        return std::nullopt;
    }
    QString why;
    auto scale = scaleFromList(std::move(values), reader->info().shape, info.rows, info.cols, QString(),
        QStringLiteral("tensor '%1'").arg(reader->info().name), &why);
    if (!scale)
        *problem = {file, -1, why};
    return scale;
}

} // namespace

void widenToFloat(const char *src, DType type, size_t n, float *dst)
{
    switch (type) {
    case DType::F32: std::memcpy(dst, src, n * 4); return;
    case DType::BF16:
        for (size_t i = 0; i < n; ++i) {
            uint16_t h;
            std::memcpy(&h, src + 2 * i, 2);
            dst[i] = fp8math::bitsFloat(uint32_t(h) << 16);
        }
        return;
    case DType::F16:
        for (size_t i = 0; i < n; ++i) {
            uint16_t h;
            std::memcpy(&h, src + 2 * i, 2);
            dst[i] = fp8math::halfToFloat(h);
        }
        return;
    case DType::F64:
        for (size_t i = 0; i < n; ++i) {
            double d;
            std::memcpy(&d, src + 8 * i, 8);
            dst[i] = float(d);
        }
        return;
    case DType::F8E4M3:
    case DType::F8E5M2: {
        const fp8math::Format f = type == DType::F8E4M3 ? fp8math::Format::E4M3 : fp8math::Format::E5M2;
        for (size_t i = 0; i < n; ++i)
            dst[i] = fp8math::decodeCode(uint8_t(src[i]), f);
        return;
    }
    case DType::F4E2M1:
        for (size_t i = 0; i < n; ++i)
            dst[i] = fp8math::decodeCode(uint8_t(src[i]) & 0x0F, fp8math::Format::E2M1);
        return;
    }
}

bool readDecodeScales(TensorReader &reader, int64_t limit, std::vector<float> *values, Problem *problem)
{
    const TensorInfo &info = reader.info();
    if (info.numel > std::max<int64_t>(limit, 1)) {
        *problem = {info.file, -1,
            QStringLiteral("holds %1 values, more than the %2 elements it would scale").arg(info.numel).arg(limit)};
        return false;
    }
    const size_t n = size_t(info.numel);
    std::vector<char> raw(n * size_t(dtypeSize(info.dtype)));
    if (n > 0 && !reader.read(0, int64_t(n), raw.data(), problem))
        return false;
    values->resize(n);
    widenToFloat(raw.data(), info.dtype, n, values->data());
    return true;
}

std::unique_ptr<TensorReader> openTensor(const QString &spec, Problem *problem, const QString &scaleInv)
{
    QString file;
    QString name;
    splitSpec(spec, &file, &name);
    auto reader = openStored(file, name, problem);
    if (!reader)
        return nullptr;
    const TensorInfo &info = reader->info();
    const bool automatic = scaleInv.isEmpty() || scaleInv == QLatin1String("auto");
    if (!isFp8(info.dtype)) {
        if (automatic || scaleInv == QLatin1String("none"))
            return info.dtype == DType::F64 ? std::make_unique<Float64Reader>(std::move(reader)) : std::move(reader);
        *problem = {file, -1,
            QStringLiteral("'%1' holds %2 values, not FP8 codes: a decode scale (scale_inv) does not apply")
                .arg(info.name, dtypeName(info.dtype))};
        return nullptr;
    }
    const QString format = fp8Name(info.dtype);
    if (scaleInv == QLatin1String("none")) {
        reader->setDecoding(
            QStringLiteral("%1 codes as stored (scale_inv none): values in the scaled domain").arg(format));
        return reader;
    }
    std::optional<Fp8DecodeScale> scale;
    if (automatic) {
        Fp8DecodeScale found;
        QString why;
        if (!reader->storedDecodeScale(&found, &why)) {
            reader->setDecoding(QStringLiteral("%1 codes as stored (%2): values in the scaled domain")
                                    .arg(format, why.isEmpty() ? QStringLiteral("no scale_inv beside them") : why));
            return reader;
        }
        scale = std::move(found);
    } else {
        scale = chosenScale(file, scaleInv, info, problem);
        if (!scale)
            return nullptr;
    }
    const QString shape = scale->shapeText(info.rows, info.cols);
    const QString what = scale->values.size() == 1
        ? QStringLiteral("scale_inv %1").arg(double(scale->values.front()), 0, 'g', 7)
        : QStringLiteral("scale_inv (%1)").arg(shape);
    const QString decoding = QStringLiteral("%1 codes x %2 from %3").arg(format, what, scale->source);
    auto scaled = std::make_unique<Fp8ScaledReader>(std::move(reader), std::move(*scale));
    scaled->setDecoding(decoding);
    return scaled;
}

QStringList listTensors(const QString &file, Problem *problem, std::vector<SkippedTensor> *skipped)
{
    const FileKind kind = sniff(file);
    switch (kind) {
    case FileKind::Hdf5: return Hdf5Reader::datasets(file, problem, skipped);
    case FileKind::Safetensors: return SafetensorsReader::names(file, problem, skipped);
    case FileKind::Npy:
    case FileKind::JaxDump: return {QString()};
    case FileKind::Pickle: return TorchReader::names(file, problem, skipped);
    default: *problem = kindProblem(file, kind); return {};
    }
}

} // namespace fp8scope
