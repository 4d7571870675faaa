#include "torchfile.h"

#include "fp8decode.h"
#include "torchpickle.h"

#include <QFile>
#include <QHash>

#include <zip.h>

#include <cmath>
#include <cstring>

namespace fp8scope {

namespace {

using torchpickle::Kind;
using torchpickle::Program;
using torchpickle::Value;

constexpr int kMaxNesting = 32;
constexpr int64_t kMaxEntries = 1 << 20;
constexpr int64_t kMaxPickleBytes = int64_t(256) << 20;

struct StorageType {
    const char *storage;
    const char *dtype;
    int size;
    std::optional<DType> read;
};

const StorageType *storageType(const QString &name)
{
    static const StorageType types[] = {
        {"FloatStorage", "float32", 4, DType::F32},
        {"HalfStorage", "float16", 2, DType::F16},
        {"BFloat16Storage", "bfloat16", 2, DType::BF16},
        {"DoubleStorage", "float64", 8, DType::F64},
        {"Float8_e4m3fnStorage", "float8_e4m3fn", 1, DType::F8E4M3},
        {"Float8_e5m2Storage", "float8_e5m2", 1, DType::F8E5M2},
        {"Float8_e4m3fnuzStorage", "float8_e4m3fnuz", 1, std::nullopt},
        {"Float8_e5m2fnuzStorage", "float8_e5m2fnuz", 1, std::nullopt},
        {"Float8_e8m0fnuStorage", "float8_e8m0fnu", 1, std::nullopt},
        {"LongStorage", "int64", 8, std::nullopt},
        {"IntStorage", "int32", 4, std::nullopt},
        {"ShortStorage", "int16", 2, std::nullopt},
        {"CharStorage", "int8", 1, std::nullopt},
        {"ByteStorage", "uint8", 1, std::nullopt},
        {"BoolStorage", "bool", 1, std::nullopt},
        {"ComplexFloatStorage", "complex64", 8, std::nullopt},
        {"ComplexDoubleStorage", "complex128", 16, std::nullopt},
        {"UntypedStorage", "untyped bytes", 1, std::nullopt},
    };
    for (const StorageType &t : types) {
        if (name == QLatin1String(t.storage))
            return &t;
    }
    return nullptr;
}

// The element type of a dtype name (torch.float32 pickles as "float32"; its aliases too).
const StorageType *dtypeType(QString name)
{
    static const QHash<QString, QString> aliases {{QStringLiteral("float"), QStringLiteral("float32")},
        {QStringLiteral("half"), QStringLiteral("float16")}, {QStringLiteral("double"), QStringLiteral("float64")}};
    name = aliases.value(name, name);
    static const char *const storages[]
        = {"FloatStorage", "HalfStorage", "BFloat16Storage", "DoubleStorage", "Float8_e4m3fnStorage",
            "Float8_e5m2Storage", "Float8_e4m3fnuzStorage", "Float8_e5m2fnuzStorage", "Float8_e8m0fnuStorage",
            "LongStorage", "IntStorage", "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage"};
    for (const char *s : storages) {
        const StorageType *t = storageType(QLatin1String(s));
        if (name == QLatin1String(t->dtype))
            return t;
    }
    return nullptr;
}

// The highest element index a view reaches, or -1 for an empty view; false on overflow.
bool viewExtent(const TorchEntry &e, int64_t *last)
{
    *last = e.storageOffset;
    for (size_t i = 0; i < e.shape.size(); ++i) {
        if (e.shape[i] == 0) {
            *last = -1;
            return true;
        }
    }
    for (size_t i = 0; i < e.shape.size(); ++i) {
        int64_t reach = 0;
        if (__builtin_mul_overflow(e.shape[i] - 1, e.stride[i], &reach) || __builtin_add_overflow(*last, reach, last))
            return false;
    }
    return true;
}

class Flattener
{
public:
    Flattener(const Program &program, TorchContents *out)
        : m_program(program)
        , m_out(out)
    {
    }

    void walk(int32_t index, const QString &name, int depth)
    {
        if (++m_visits > kMaxEntries) {
            if (m_visits == kMaxEntries + 1)
                m_out->refused.push_back(
                    {name, QStringLiteral("more than %1 entries; the rest is not read").arg(kMaxEntries)});
            return;
        }
        const Value &v = m_program.at(index);
        auto child = [&](const QString &part) { return name.isEmpty() ? part : name + QLatin1Char('.') + part; };
        switch (v.kind) {
        case Kind::Tensor: {
            TorchEntry e;
            QString why;
            if (tensorEntry(v, name, &e, &why))
                m_out->tensors.push_back(std::move(e));
            else
                m_out->refused.push_back({name, why});
            return;
        }
        case Kind::TeQuantized: quantizedEntry(v, name); return;
        case Kind::Refused: m_out->refused.push_back({name, v.text}); return;
        case Kind::Dict:
        case Kind::List:
        case Kind::Tuple:
            if (depth >= kMaxNesting) {
                m_out->refused.push_back(
                    {name, QStringLiteral("nested deeper than %1 levels; not read").arg(kMaxNesting)});
                return;
            }
            if (v.kind == Kind::Dict) {
                for (size_t i = 0; i + 1 < v.items.size(); i += 2) {
                    const Value &key = m_program.at(v.items[i]);
                    if (key.kind == Kind::String)
                        walk(v.items[i + 1], child(key.text), depth + 1);
                    else if (key.kind == Kind::Int)
                        walk(v.items[i + 1], child(QString::number(key.integer)), depth + 1);
                }
            } else {
                for (size_t i = 0; i < v.items.size(); ++i)
                    walk(v.items[i], child(QString::number(i)), depth + 1);
            }
            return;
        default: return; // numbers, strings, None: not tensors
        }
    }

private:
    bool tensorEntry(const Value &v, const QString &name, TorchEntry *e, QString *why) const
    {
        const Value &storage = m_program.at(v.items.front());
        const bool untyped = storage.name == QLatin1String("UntypedStorage");
        const StorageType *type = v.module.isEmpty() ? storageType(storage.name) : dtypeType(v.module);
        if (!type || (untyped && v.module.isEmpty())) {
            *why = QStringLiteral("element type %1 is not known").arg(v.module.isEmpty() ? storage.name : v.module);
            return false;
        }
        e->name = name;
        e->dtypeName = QLatin1String(type->dtype);
        e->dtype = type->read;
        e->elementSize = type->size;
        e->storageKey = storage.text;
        // An untyped storage is counted in bytes; a typed one in its elements.
        e->storageNumel = untyped ? storage.integer / type->size : storage.integer;
        e->storageOffset = v.integer;
        e->shape = v.shape;
        e->stride = v.stride;
        if (e->storageNumel < 0 || e->storageOffset < 0) {
            *why = QStringLiteral("a negative storage size or offset");
            return false;
        }
        for (size_t i = 0; i < e->shape.size(); ++i) {
            if (e->shape[i] < 0 || e->stride[i] < 0) {
                *why = QStringLiteral("a negative size or stride");
                return false;
            }
        }
        int64_t last = 0;
        if (!viewExtent(*e, &last) || last >= e->storageNumel) {
            *why = QStringLiteral("its view reaches past the end of storage '%1' (%2 elements)")
                       .arg(e->storageKey)
                       .arg(e->storageNumel);
            return false;
        }
        TensorInfo info;
        info.shape = e->shape;
        if (!finishTensorInfo(info)) {
            *why = QStringLiteral("a shape whose element count overflows");
            return false;
        }
        return true;
    }

    // Transformer Engine's DType values (transformer_engine/common: kFloat8E4M3 = 7, kFloat8E5M2 = 8 since
    // kInt16 was added; DumpTensors came later, so its files use this numbering).
    static std::optional<DType> teFp8(const Value &v, QString *why)
    {
        if (v.kind != Kind::TeDType && v.kind != Kind::Int) {
            *why = QStringLiteral("its fp8_dtype is not a Transformer Engine DType");
            return std::nullopt;
        }
        if (v.integer == 7)
            return DType::F8E4M3;
        if (v.integer == 8)
            return DType::F8E5M2;
        *why = QStringLiteral("Transformer Engine DType %1 is not an FP8 format (kFloat8E4M3 = 7, kFloat8E5M2 = 8)")
                   .arg(v.integer);
        return std::nullopt;
    }

    // The layout a Float8BlockwiseQTensor's float32 scale_inv has for its data (teBlockwiseLayout); a shape
    // that fits none or more than one is refused.
    static bool blockwiseLayout(const TorchEntry &data, const TorchEntry &scale, std::optional<bool> is2D,
        int64_t *blockRows, int64_t *blockCols, bool *transposed, QString *why)
    {
        TensorInfo info;
        info.shape = data.shape;
        finishTensorInfo(info);
        const int64_t m = info.rows;
        const int64_t k = info.cols;
        int fits = 0;
        const std::optional<TeBlockwiseLayout> layout = teBlockwiseLayout(scale.shape, m, k, is2D, &fits);
        if (scale.dtype != DType::F32 || !layout) {
            QStringList dims;
            for (int64_t d : scale.shape)
                dims << QString::number(d);
            *why = QStringLiteral("Float8BlockwiseQTensor scale_inv %1 %2 fits %3 of Transformer Engine's block "
                                  "layouts for a %4x%5 tensor")
                       .arg(scale.dtypeName, dims.join(QLatin1Char('x')))
                       .arg(fits == 0 ? QStringLiteral("none") : QStringLiteral("more than one"))
                       .arg(m)
                       .arg(k);
            return false;
        }
        *blockRows = layout->twoD ? 128 : 1;
        *blockCols = 128;
        *transposed = layout->transposed;
        return true;
    }

    // A buffer of a quantized tensor, checked against its storage; -1 where the argument is not a tensor.
    int buffer(const Value &v, const QString &name, QString *why)
    {
        if (v.kind != Kind::Tensor)
            return -1;
        TorchEntry e;
        if (!tensorEntry(v, name, &e, why))
            return -2;
        m_out->buffers.push_back(std::move(e));
        return int(m_out->buffers.size() - 1);
    }

    static std::optional<std::vector<int64_t>> sizeOf(const Program &p, const Value &v)
    {
        if (v.kind != Kind::Tuple && v.kind != Kind::List)
            return std::nullopt;
        std::vector<int64_t> out;
        for (int32_t i : v.items) {
            if (p.at(i).kind != Kind::Int || p.at(i).integer < 0)
                return std::nullopt;
            out.push_back(p.at(i).integer);
        }
        return out;
    }

    // The quantized tensor's buffers as its class's reduce form orders them (Transformer Engine's
    // transformer_engine/pytorch/tensor/*.py, the classmethod form and the module-level one of 2.15, which
    // appends arguments), into contents.quantized; false with *why when they cannot be listed.
    bool recordQuantized(const Value &v, const QString &name, QString *why)
    {
        auto arg = [&](size_t i) -> const Value & {
            static const Value none;
            return i < v.items.size() ? m_program.at(v.items[i]) : none;
        };
        TeQuantized q;
        q.name = name;
        q.teClass = v.name;
        const auto flag = [&](size_t i) { return arg(i).kind == Kind::Bool && arg(i).integer != 0; };
        size_t dtypeArg = 0;
        std::optional<std::vector<int64_t>> shape;
        struct Slots {
            size_t rowData, rowScale, colData, colScale;
        } slots {};
        if (v.name == QLatin1String("Float8Tensor")) {
            // (data, fp8_dtype, scale_inv, dtype[, shape, data_transpose])
            slots = {0, 2, 5, 2};
            dtypeArg = 1;
            shape = sizeOf(m_program, arg(4));
        } else if (v.name == QLatin1String("MXFP8Tensor")) {
            // (rowwise_data, rowwise_scale_inv, columnwise_data, columnwise_scale_inv, fp8_dtype, dtype, shape,
            // quantizer[, with_gemm_swizzled_scales])
            slots = {0, 1, 2, 3};
            dtypeArg = 4;
            shape = sizeOf(m_program, arg(6));
            q.swizzledScales = flag(8);
        } else if (v.name == QLatin1String("Float8BlockwiseQTensor")) {
            // ([shape,] rowwise_data, rowwise_scale_inv, columnwise_data, columnwise_scale_inv, fp8_dtype, dtype,
            // quantizer, is_2D_scaled, data_format)
            const size_t at = arg(0).kind == Kind::Tuple ? 1 : 0;
            if (at == 1)
                shape = sizeOf(m_program, arg(0));
            slots = {at, at + 1, at + 2, at + 3};
            dtypeArg = at + 4;
            if (arg(at + 7).kind == Kind::Bool)
                q.is2D = arg(at + 7).integer != 0;
        } else if (v.name == QLatin1String("NVFP4Tensor")) {
            // (shape, rowwise_data, rowwise_scale_inv, columnwise_data, columnwise_scale_inv, amax_rowwise,
            // amax_columnwise, fp4_dtype, dtype, quantizer, with_gemm_swizzled_scales[, row_scaled_nvfp4,
            // nvfp4_use_4over6, nvfp4_e4m3_max])
            shape = sizeOf(m_program, arg(0));
            slots = {1, 2, 3, 4};
            dtypeArg = 7;
            q.swizzledScales = flag(10);
            q.rowScaled = flag(11);
            q.fourOverSix = flag(12);
        } else {
            *why = QStringLiteral("Transformer Engine %1: its reduce form is not read (Float8Tensor, MXFP8Tensor, "
                                  "Float8BlockwiseQTensor and NVFP4Tensor are)")
                       .arg(v.name);
            return false;
        }
        const Value &dt = arg(dtypeArg);
        if (dt.kind != Kind::TeDType && dt.kind != Kind::Int) {
            *why = QStringLiteral("%1 without a Transformer Engine DType").arg(v.name);
            return false;
        }
        if (dt.integer == 7 || dt.integer == 8)
            q.element = dt.integer == 7 ? DType::F8E4M3 : DType::F8E5M2;
        else if (dt.integer == 10 && v.name == QLatin1String("NVFP4Tensor"))
            q.element = DType::F4E2M1;
        else {
            *why = QStringLiteral("%1 of Transformer Engine DType %2, not FP8 (7, 8) or FP4 (10)")
                       .arg(v.name)
                       .arg(dt.integer);
            return false;
        }
        q.rowwiseData = buffer(arg(slots.rowData), name + QStringLiteral(".rowwise_data"), why);
        q.rowwiseScale = buffer(arg(slots.rowScale), name + QStringLiteral(".rowwise_scale_inv"), why);
        q.columnwiseData = buffer(arg(slots.colData), name + QStringLiteral(".columnwise_data"), why);
        q.columnwiseScale = buffer(arg(slots.colScale), name + QStringLiteral(".columnwise_scale_inv"), why);
        if (v.name == QLatin1String("NVFP4Tensor")) {
            q.amaxRowwise = buffer(arg(5), name + QStringLiteral(".amax_rowwise"), why);
            q.amaxColumnwise = buffer(arg(6), name + QStringLiteral(".amax_columnwise"), why);
        }
        for (int i :
            {q.rowwiseData, q.rowwiseScale, q.columnwiseData, q.columnwiseScale, q.amaxRowwise, q.amaxColumnwise}) {
            if (i == -2)
                return false;
        }
        if ((q.rowwiseData < 0 || q.rowwiseScale < 0) && (q.columnwiseData < 0 || q.columnwiseScale < 0)) {
            *why = QStringLiteral("%1 without data and scale_inv tensors").arg(v.name);
            return false;
        }
        if (shape)
            q.shape = *shape;
        else if (q.rowwiseData >= 0)
            q.shape = m_out->buffers[size_t(q.rowwiseData)].shape;
        else if (v.name == QLatin1String("MXFP8Tensor"))
            q.shape = m_out->buffers[size_t(q.columnwiseData)].shape;
        else {
            *why = QStringLiteral("%1 with only its column-wise copy and no shape").arg(v.name);
            return false;
        }
        m_out->quantized.push_back(std::move(q));
        return true;
    }

    void quantizedEntry(const Value &v, const QString &name)
    {
        auto arg = [&](size_t i) -> const Value & {
            static const Value none;
            return i < v.items.size() ? m_program.at(v.items[i]) : none;
        };
        QString why;
        if (!recordQuantized(v, name, &why)) {
            m_out->refused.push_back({name, why});
            return;
        }
        TorchEntry data;
        TorchEntry scale;
        std::optional<DType> fp8;
        int64_t blockRows = 1;
        int64_t blockCols = 1;
        bool transposed = false;
        if (v.name == QLatin1String("Float8Tensor")) {
            // (data, fp8_dtype, scale_inv, dtype)
            if (arg(0).kind != Kind::Tensor || arg(2).kind != Kind::Tensor)
                why = QStringLiteral("Float8Tensor without its data and scale_inv tensors");
            else if (tensorEntry(arg(0), name, &data, &why)
                && tensorEntry(arg(2), name + QStringLiteral(".scale_inv"), &scale, &why))
                fp8 = teFp8(arg(1), &why);
        } else if (v.name == QLatin1String("MXFP8Tensor")) {
            // The rowwise copy when there is one (1x32 blocks), else the columnwise (32x1).
            if (m_out->quantized.back().swizzledScales) {
                why = QStringLiteral("MXFP8Tensor with its scales in the GEMM's swizzled layout: its values are not "
                                     "read (fp8scope-cli blocks compares it with its high_precision tensor)");
            } else {
                const bool rowwise = arg(0).kind == Kind::Tensor;
                const Value &codes = rowwise ? arg(0) : arg(2);
                const Value &scales = rowwise ? arg(1) : arg(3);
                if (codes.kind != Kind::Tensor || scales.kind != Kind::Tensor)
                    why = QStringLiteral("MXFP8Tensor without data and scale_inv tensors");
                else if (tensorEntry(codes, name, &data, &why)
                    && tensorEntry(scales, name + QStringLiteral(".scale_inv"), &scale, &why))
                    fp8 = teFp8(arg(4), &why);
                blockRows = rowwise ? 1 : 32;
                blockCols = rowwise ? 32 : 1;
            }
        } else if (v.name == QLatin1String("Float8BlockwiseQTensor")) {
            // The rowwise copy (the columnwise one is transposed for the GEMM).
            const size_t at = arg(0).kind == Kind::Tuple ? 1 : 0;
            const Value &is2D = at == 1 ? arg(8) : arg(99);
            if (arg(at).kind != Kind::Tensor || arg(at + 1).kind != Kind::Tensor)
                why = QStringLiteral("Float8BlockwiseQTensor without its rowwise data and scale_inv (only a "
                                     "columnwise copy is not read)");
            else if (tensorEntry(arg(at), name, &data, &why)
                && tensorEntry(arg(at + 1), name + QStringLiteral(".scale_inv"), &scale, &why)
                && blockwiseLayout(data, scale,
                    is2D.kind == Kind::Bool ? std::optional<bool>(is2D.integer != 0) : std::nullopt, &blockRows,
                    &blockCols, &transposed, &why))
                fp8 = teFp8(arg(at + 4), &why);
        } else {
            // NVFP4Tensor: two FP4 codes a byte under E4M3 block scales and an FP32 tensor scale; compared with
            // its high_precision tensor, not opened as values.
            why = QStringLiteral("NVFP4Tensor: its FP4 codes and scales are compared with the high_precision tensor "
                                 "(fp8scope-cli blocks, the block map), not opened as values");
        }
        if (!fp8) {
            m_out->refused.push_back({name, why});
            return;
        }
        if (data.elementSize != 1) {
            m_out->refused.push_back({name, QStringLiteral("%1 data of %2, not bytes").arg(v.name, data.dtypeName)});
            return;
        }
        data.dtype = fp8;
        data.dtypeName = *fp8 == DType::F8E4M3 ? QStringLiteral("float8_e4m3fn") : QStringLiteral("float8_e5m2");
        data.teClass = v.name;
        data.scaleIndex = int(m_out->scales.size());
        data.scaleBlockRows = blockRows;
        data.scaleBlockCols = blockCols;
        data.scaleTransposed = transposed;
        m_out->scales.push_back(std::move(scale));
        m_out->tensors.push_back(std::move(data));
    }

    const Program &m_program;
    TorchContents *m_out;
    int64_t m_visits = 0;
};

QString zipMessage(int code)
{
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    const QString text = QString::fromUtf8(zip_error_strerror(&e));
    zip_error_fini(&e);
    return text;
}

QString zipMessage(zip_t *zip)
{
    return QString::fromUtf8(zip_strerror(zip));
}

} // namespace

std::optional<TeBlockwiseLayout> teBlockwiseLayout(
    const std::vector<int64_t> &scaleShape, int64_t m, int64_t k, std::optional<bool> is2D, int *fitting)
{
    const auto up4 = [](int64_t x) { return (x + 3) / 4 * 4; };
    const int64_t kb = (k + 127) / 128;
    const struct {
        TeBlockwiseLayout layout;
        std::vector<int64_t> shape;
    } layouts[]
        = {{{true, false}, {(m + 127) / 128, up4(kb)}}, {{false, true}, {kb, up4(m)}}, {{false, false}, {m, kb}}};
    std::optional<TeBlockwiseLayout> found;
    int fits = 0;
    for (const auto &l : layouts) {
        if (scaleShape == l.shape && (!is2D || *is2D == l.layout.twoD)) {
            found = l.layout;
            ++fits;
        }
    }
    if (fitting)
        *fitting = fits;
    return fits == 1 ? found : std::nullopt;
}

bool parseTorchPickle(const QByteArray &pickle, TorchContents *contents, QString *error, int64_t *offset)
{
    *contents = {};
    Program program;
    if (!program.run(pickle, error, offset))
        return false;
    Flattener(program, contents).walk(program.root(), QString(), 0);
    return true;
}

TorchArchive::~TorchArchive()
{
    if (m_zip)
        zip_discard(static_cast<zip_t *>(m_zip));
}

std::unique_ptr<TorchArchive> TorchArchive::open(const QString &path, Problem *problem)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *problem = {path, -1, QStringLiteral("cannot be read (%1)").arg(f.errorString())};
        return nullptr;
    }
    const QByteArray head = f.read(4);
    f.close();
    if (!head.startsWith("PK")) {
        *problem = {path, 0,
            head.size() >= 2 && uchar(head[0]) == 0x80
                ? QStringLiteral("the legacy torch.save format (PyTorch before 1.6, or "
                                 "_use_new_zipfile_serialization=False) is not read; save it again with a current "
                                 "torch, or convert it with tools/pt2safetensors.py")
                : QStringLiteral("not a torch.save file (a zip archive expected)")};
        return nullptr;
    }
    int code = 0;
    zip_t *zip = zip_open(QFile::encodeName(path).constData(), ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!zip) {
        *problem = {path, -1, QStringLiteral("not a readable zip archive (%1)").arg(zipMessage(code))};
        return nullptr;
    }
    std::unique_ptr<TorchArchive> archive(new TorchArchive);
    archive->m_path = path;
    archive->m_zip = zip;
    return finishOpen(std::move(archive), problem);
}

std::unique_ptr<TorchArchive> TorchArchive::openBuffer(const QByteArray &bytes, Problem *problem)
{
    std::unique_ptr<TorchArchive> archive(new TorchArchive);
    archive->m_path = QStringLiteral("(buffer)");
    archive->m_buffer = bytes;
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t *source
        = zip_source_buffer_create(archive->m_buffer.constData(), zip_uint64_t(archive->m_buffer.size()), 0, &error);
    zip_t *zip = source ? zip_open_from_source(source, ZIP_RDONLY | ZIP_CHECKCONS, &error) : nullptr;
    if (!zip) {
        *problem = {archive->m_path, -1,
            QStringLiteral("not a readable zip archive (%1)").arg(QString::fromUtf8(zip_error_strerror(&error)))};
        if (source)
            zip_source_free(source);
        zip_error_fini(&error);
        return nullptr;
    }
    zip_error_fini(&error);
    archive->m_zip = zip;
    return finishOpen(std::move(archive), problem);
}

std::unique_ptr<TorchArchive> TorchArchive::finishOpen(std::unique_ptr<TorchArchive> archive, Problem *problem)
{
    auto *zip = static_cast<zip_t *>(archive->m_zip);
    const QString &path = archive->m_path;
    // The archive's one top folder holds data.pkl (its name is the file's stem when torch wrote it, but
    // files are renamed).
    const zip_int64_t count = zip_get_num_entries(zip, 0);
    zip_int64_t pklIndex = -1;
    for (zip_int64_t i = 0; i < count; ++i) {
        const char *name = zip_get_name(zip, zip_uint64_t(i), ZIP_FL_ENC_RAW);
        if (!name)
            continue;
        const QByteArray n(name);
        const qsizetype slash = n.indexOf('/');
        if (slash > 0 && n.mid(slash + 1) == "data.pkl") {
            pklIndex = i;
            archive->m_prefix = QString::fromUtf8(n.left(slash + 1));
            break;
        }
    }
    if (pklIndex < 0) {
        *problem = {path, -1, QStringLiteral("a zip archive without <archive>/data.pkl: not a torch.save file")};
        return nullptr;
    }
    auto readWhole = [&](zip_int64_t index, int64_t limit, QByteArray *out, QString *why) {
        zip_stat_t st;
        if (zip_stat_index(zip, zip_uint64_t(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
            *why = zipMessage(zip);
            return false;
        }
        if (int64_t(st.size) > limit) {
            *why = QStringLiteral("%1 bytes, more than the %2 read").arg(qulonglong(st.size)).arg(limit);
            return false;
        }
        zip_file_t *file = zip_fopen_index(zip, zip_uint64_t(index), 0);
        if (!file) {
            *why = zipMessage(zip);
            return false;
        }
        out->resize(qsizetype(st.size));
        const zip_int64_t got = zip_fread(file, out->data(), st.size);
        const QString fileError = QString::fromUtf8(zip_file_strerror(file));
        zip_fclose(file);
        if (got != zip_int64_t(st.size)) {
            *why = got < 0 ? fileError : QStringLiteral("truncated");
            return false;
        }
        return true;
    };
    QString why;
    const zip_int64_t orderIndex
        = zip_name_locate(zip, (archive->m_prefix + QStringLiteral("byteorder")).toUtf8().constData(), 0);
    if (orderIndex >= 0) {
        QByteArray order;
        if (!readWhole(orderIndex, 64, &order, &why)) {
            *problem = {path, -1, QStringLiteral("its byteorder entry cannot be read (%1)").arg(why)};
            return nullptr;
        }
        if (order.trimmed() != "little") {
            *problem = {path, -1,
                QStringLiteral("byteorder '%1': only little-endian files are read")
                    .arg(QString::fromUtf8(order.trimmed()))};
            return nullptr;
        }
    }
    QByteArray pickle;
    if (!readWhole(pklIndex, kMaxPickleBytes, &pickle, &why)) {
        *problem = {path, -1, QStringLiteral("%1data.pkl cannot be read (%2)").arg(archive->m_prefix, why)};
        return nullptr;
    }
    int64_t offset = -1;
    TorchContents contents;
    if (!parseTorchPickle(pickle, &contents, &why, &offset)) {
        *problem = {path, -1, QStringLiteral("%1data.pkl at byte %2: %3").arg(archive->m_prefix).arg(offset).arg(why)};
        return nullptr;
    }
    // Every storage a tensor uses must be a stored entry of the archive holding its declared elements.
    QHash<QString, QString> badStorage;
    auto check = [&](const TorchEntry &e) -> QString {
        const auto known = badStorage.constFind(e.storageKey);
        if (known != badStorage.constEnd())
            return *known;
        QString bad;
        const zip_int64_t index = zip_name_locate(
            zip, (archive->m_prefix + QStringLiteral("data/") + e.storageKey).toUtf8().constData(), 0);
        zip_stat_t st;
        int64_t bytes = 0;
        if (e.storageKey.contains(QLatin1Char('/')) || e.storageKey.contains(QLatin1String("..")) || index < 0)
            bad = QStringLiteral("storage '%1' is not in the archive").arg(e.storageKey);
        else if (zip_stat_index(zip, zip_uint64_t(index), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
            bad = QStringLiteral("storage '%1' cannot be read (%2)").arg(e.storageKey, zipMessage(zip));
        else if ((st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method != ZIP_CM_STORE)
            bad = QStringLiteral("storage '%1' is compressed (torch.save stores them uncompressed)").arg(e.storageKey);
        else if (__builtin_mul_overflow(e.storageNumel, int64_t(e.elementSize), &bytes) || int64_t(st.size) < bytes)
            bad = QStringLiteral("storage '%1' holds %2 bytes, fewer than the %3 elements of %4 bytes it declares")
                      .arg(e.storageKey)
                      .arg(qulonglong(st.size))
                      .arg(e.storageNumel)
                      .arg(e.elementSize);
        badStorage.insert(e.storageKey, bad);
        return bad;
    };
    for (auto it = contents.tensors.begin(); it != contents.tensors.end();) {
        QString bad = check(*it);
        if (bad.isEmpty() && it->scaleIndex >= 0)
            bad = check(contents.scales[size_t(it->scaleIndex)]);
        if (bad.isEmpty()) {
            ++it;
            continue;
        }
        contents.refused.push_back({it->name, bad});
        it = contents.tensors.erase(it);
    }
    // The same for every buffer of a quantized tensor (what a check of its quantization reads).
    for (auto it = contents.quantized.begin(); it != contents.quantized.end();) {
        QString bad;
        for (int i : {it->rowwiseData, it->rowwiseScale, it->columnwiseData, it->columnwiseScale, it->amaxRowwise,
                 it->amaxColumnwise}) {
            if (i >= 0 && bad.isEmpty())
                bad = check(contents.buffers[size_t(i)]);
        }
        if (bad.isEmpty()) {
            ++it;
            continue;
        }
        if (std::none_of(contents.refused.begin(), contents.refused.end(),
                [&](const TorchRefusal &r) { return r.name == it->name; }))
            contents.refused.push_back({it->name, bad});
        it = contents.quantized.erase(it);
    }
    archive->m_contents = std::move(contents);
    return archive;
}

bool TorchArchive::readStorage(const QString &key, int64_t byteOffset, int64_t bytes, void *dst, Problem *problem)
{
    auto *zip = static_cast<zip_t *>(m_zip);
    if (m_openKey != key || m_openIndex < 0) {
        m_openIndex = zip_name_locate(zip, (m_prefix + QStringLiteral("data/") + key).toUtf8().constData(), 0);
        m_openKey = key;
        if (m_openIndex < 0) {
            *problem = {m_path, -1, QStringLiteral("storage '%1' cannot be opened (%2)").arg(key, zipMessage(zip))};
            return false;
        }
    }
    if (bytes <= 0)
        return true;
    // A source over just the range: libzip checks a CRC only when a whole entry is read, which a range read of
    // a large storage must not pay for (it would read the whole entry on every open).
    zip_source_t *source = zip_source_zip(zip, zip, zip_uint64_t(m_openIndex), 0, zip_uint64_t(byteOffset), bytes);
    if (!source || zip_source_open(source) != 0) {
        *problem = {m_path, -1,
            QStringLiteral("storage '%1': bytes %2 to %3 cannot be read (%4)")
                .arg(key)
                .arg(byteOffset)
                .arg(byteOffset + bytes)
                .arg(source ? QString::fromUtf8(zip_error_strerror(zip_source_error(source))) : zipMessage(zip))};
        if (source)
            zip_source_free(source);
        return false;
    }
    auto *out = static_cast<char *>(dst);
    bool ok = true;
    while (bytes > 0) {
        const zip_int64_t got = zip_source_read(source, out, zip_uint64_t(bytes));
        if (got <= 0) {
            *problem = {m_path, -1,
                QStringLiteral("storage '%1' ends early (%2)")
                    .arg(key,
                        got < 0 ? QString::fromUtf8(zip_error_strerror(zip_source_error(source)))
                                : QStringLiteral("truncated"))};
            ok = false;
            break;
        }
        out += got;
        bytes -= got;
    }
    zip_source_close(source);
    zip_source_free(source);
    return ok;
}

std::unique_ptr<TensorReader> TorchReader::open(const QString &path, const QString &name, Problem *problem)
{
    auto archive = TorchArchive::open(path, problem);
    if (!archive)
        return nullptr;
    const TorchContents &c = archive->contents();
    const TorchEntry *found = nullptr;
    for (const TorchEntry &e : c.tensors) {
        if (e.name == name || (name.isEmpty() && c.tensors.size() == 1 && e.dtype))
            found = &e;
    }
    if (!found) {
        for (const TorchRefusal &r : c.refused) {
            if (r.name == name) {
                *problem = {path, -1, QStringLiteral("'%1' is not read: %2").arg(name, r.why)};
                return nullptr;
            }
        }
        *problem = {path, -1,
            name.isEmpty() ? QStringLiteral("holds %1 tensors; name one (FILE:NAME)").arg(c.tensors.size())
                           : QStringLiteral("no tensor '%1' in it").arg(name)};
        return nullptr;
    }
    if (!found->dtype) {
        *problem = {
            path, -1, QStringLiteral("'%1' holds %2 values, which fp8scope does not read").arg(name, found->dtypeName)};
        return nullptr;
    }
    std::unique_ptr<TorchReader> reader(new TorchReader);
    reader->m_entry = *found;
    reader->m_archive = std::move(archive);
    reader->m_info.file = path;
    reader->m_info.name = found->name;
    reader->m_info.dtype = *found->dtype;
    reader->m_info.shape = found->shape;
    finishTensorInfo(reader->m_info);
    int64_t expect = 1;
    for (size_t i = found->shape.size(); i-- > 0;) {
        if (found->shape[i] != 1 && found->stride[i] != expect)
            reader->m_contiguous = false;
        expect *= found->shape[i];
    }
    return reader;
}

QStringList TorchReader::names(
    const QString &path, Problem *problem, std::vector<SkippedTensor> *skipped, std::vector<TorchRefusal> *refused)
{
    auto archive = TorchArchive::open(path, problem);
    if (!archive)
        return {};
    QStringList out;
    for (const TorchEntry &e : archive->contents().tensors) {
        if (e.dtype)
            out << e.name;
        else if (skipped)
            skipped->push_back({e.name, e.dtypeName, e.shape});
    }
    if (refused)
        *refused = archive->contents().refused;
    return out;
}

bool TorchReader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    const int64_t es = m_entry.elementSize;
    if (first < 0 || count < 0 || first + count > m_info.numel) {
        *problem = {m_info.file, -1, QStringLiteral("read past the end of '%1'").arg(m_info.name)};
        return false;
    }
    if (m_contiguous)
        return m_archive->readStorage(
            m_entry.storageKey, (m_entry.storageOffset + first) * es, count * es, dst, problem);
    // A strided view: runs along the last dimension, each read whole when its stride is 1, else gathered
    // from the span it covers (a bounded buffer), element by element beyond that.
    const size_t dims = m_entry.shape.size();
    const int64_t cols = m_entry.shape[dims - 1];
    const int64_t colStride = m_entry.stride[dims - 1];
    auto *out = static_cast<char *>(dst);
    std::vector<char> span;
    int64_t at = first;
    while (at < first + count) {
        const int64_t row = at / cols;
        const int64_t col = at % cols;
        const int64_t run = std::min(cols - col, first + count - at);
        int64_t base = m_entry.storageOffset;
        int64_t rest = row;
        for (size_t d = dims - 1; d-- > 0;) {
            base += (rest % m_entry.shape[d]) * m_entry.stride[d];
            rest /= m_entry.shape[d];
        }
        base += col * colStride;
        if (colStride == 1) {
            if (!m_archive->readStorage(m_entry.storageKey, base * es, run * es, out, problem))
                return false;
        } else if ((run - 1) * colStride + 1 <= (int64_t(1) << 22)) {
            span.resize(size_t(((run - 1) * colStride + 1) * es));
            if (!m_archive->readStorage(m_entry.storageKey, base * es, int64_t(span.size()), span.data(), problem))
                return false;
            for (int64_t i = 0; i < run; ++i)
                std::memcpy(out + i * es, span.data() + i * colStride * es, size_t(es));
        } else {
            for (int64_t i = 0; i < run; ++i) {
                if (!m_archive->readStorage(m_entry.storageKey, (base + i * colStride) * es, es, out + i * es, problem))
                    return false;
            }
        }
        out += run * es;
        at += run;
    }
    return true;
}

bool TorchReader::storedDecodeScale(Fp8DecodeScale *scale, QString *why) const
{
    if (m_entry.scaleIndex < 0)
        return false;
    const TorchEntry &s = m_archive->contents().scales[size_t(m_entry.scaleIndex)];
    int64_t numel = 1;
    for (int64_t d : s.shape)
        numel *= d;
    const QString source = QStringLiteral("the %1's scale_inv").arg(m_entry.teClass);
    const int64_t rows = m_info.rows;
    const int64_t cols = m_info.cols;
    if (m_entry.scaleBlockRows == 1 && m_entry.scaleBlockCols == 1) {
        if (numel != 1 || !s.dtype || *s.dtype != DType::F32) {
            *why = QStringLiteral("%1 holds %2 %3 values, not one float32").arg(source).arg(numel).arg(s.dtypeName);
            return false;
        }
        float value = 0;
        Problem p;
        if (!m_archive->readStorage(s.storageKey, s.storageOffset * 4, 4, &value, &p)) {
            *why = p.message;
            return false;
        }
        *scale = Fp8DecodeScale::perTensor(value, source, rows, cols);
        return true;
    }
    // A grid of block scales: MXFP8's E8M0 exponents (bytes), one per 32 elements along a row (rowwise) or a
    // column (columnwise), in the grid Transformer Engine pads (to multiples of 128 x 4 rowwise, 4 x 128
    // columnwise); or Float8BlockwiseQTensor's float32 scales, per 128x128 block or per 1x128 (kept
    // transposed, block column by row, padded to 4). The top-left part covers the tensor.
    const int64_t gridRows = (rows + m_entry.scaleBlockRows - 1) / m_entry.scaleBlockRows;
    const int64_t gridCols = (cols + m_entry.scaleBlockCols - 1) / m_entry.scaleBlockCols;
    const bool e8m0 = s.elementSize == 1;
    const bool f32 = s.dtype == DType::F32;
    const int64_t storedRows = m_entry.scaleTransposed ? gridCols : gridRows;
    const int64_t storedCols = m_entry.scaleTransposed ? gridRows : gridCols;
    if ((!e8m0 && !f32) || s.shape.size() != 2 || s.shape[0] < storedRows || s.shape[1] < storedCols
        || s.stride[1] != 1) {
        QStringList dims;
        for (int64_t d : s.shape)
            dims << QString::number(d);
        *why = QStringLiteral("%1 (%2 %3) does not cover a %4x%5 tensor in %6x%7 blocks")
                   .arg(source, dims.join(QLatin1Char('x')), s.dtypeName)
                   .arg(rows)
                   .arg(cols)
                   .arg(m_entry.scaleBlockRows)
                   .arg(m_entry.scaleBlockCols);
        return false;
    }
    Fp8DecodeScale out;
    out.source = source;
    out.blockRows = m_entry.scaleBlockRows;
    out.blockCols = m_entry.scaleBlockCols;
    out.gridRows = gridRows;
    out.gridCols = gridCols;
    out.values.resize(size_t(gridRows * gridCols));
    std::vector<char> line(static_cast<size_t>(storedCols * s.elementSize));
    for (int64_t r = 0; r < storedRows; ++r) {
        Problem p;
        if (!m_archive->readStorage(s.storageKey, (s.storageOffset + r * s.stride[0]) * s.elementSize,
                int64_t(line.size()), line.data(), &p)) {
            *why = p.message;
            return false;
        }
        for (int64_t c = 0; c < storedCols; ++c) {
            float v = 0;
            if (e8m0) {
                const auto e = uint8_t(line[size_t(c)]);
                v = e == 0xFF ? std::nanf("") : std::ldexp(1.0f, int(e) - 127);
            } else {
                std::memcpy(&v, line.data() + c * 4, 4);
            }
            const int64_t gr = m_entry.scaleTransposed ? c : r;
            const int64_t gc = m_entry.scaleTransposed ? r : c;
            out.values[size_t(gr * gridCols + gc)] = v;
        }
    }
    *scale = std::move(out);
    return true;
}

} // namespace fp8scope
