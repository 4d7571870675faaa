#include "torchpickle.h"

#include <QHash>
#include <QSet>

#include <algorithm>
#include <cstring>

namespace fp8scope::torchpickle {

namespace {

// The storage classes torch.save names (torch.<X>Storage); which of them fp8scope reads is the reader's
// business, but all are data, never code.
bool isStorageName(const QString &name)
{
    static const QSet<QString> names {QStringLiteral("FloatStorage"), QStringLiteral("HalfStorage"),
        QStringLiteral("BFloat16Storage"), QStringLiteral("DoubleStorage"), QStringLiteral("LongStorage"),
        QStringLiteral("IntStorage"), QStringLiteral("ShortStorage"), QStringLiteral("CharStorage"),
        QStringLiteral("ByteStorage"), QStringLiteral("BoolStorage"), QStringLiteral("Float8_e4m3fnStorage"),
        QStringLiteral("Float8_e5m2Storage"), QStringLiteral("Float8_e4m3fnuzStorage"),
        QStringLiteral("Float8_e5m2fnuzStorage"), QStringLiteral("Float8_e8m0fnuStorage"),
        QStringLiteral("ComplexFloatStorage"), QStringLiteral("ComplexDoubleStorage"),
        QStringLiteral("UntypedStorage")};
    return names.contains(name);
}

bool isDtypeName(const QString &name)
{
    static const QSet<QString> names {QStringLiteral("float32"), QStringLiteral("float"), QStringLiteral("float16"),
        QStringLiteral("half"), QStringLiteral("bfloat16"), QStringLiteral("float64"), QStringLiteral("double"),
        QStringLiteral("uint8"), QStringLiteral("int8"), QStringLiteral("int16"), QStringLiteral("int32"),
        QStringLiteral("int64"), QStringLiteral("bool"), QStringLiteral("float8_e4m3fn"), QStringLiteral("float8_e5m2"),
        QStringLiteral("float8_e4m3fnuz"), QStringLiteral("float8_e5m2fnuz"), QStringLiteral("float8_e8m0fnu")};
    return names.contains(name);
}

bool isTeTensorClass(const QString &module, const QString &name)
{
    static const QSet<QString> classes {QStringLiteral("Float8Tensor"), QStringLiteral("MXFP8Tensor"),
        QStringLiteral("Float8BlockwiseQTensor"), QStringLiteral("NVFP4Tensor"), QStringLiteral("MXFP4Tensor")};
    return module.startsWith(QLatin1String("transformer_engine.")) && classes.contains(name);
}

QString teMakerClass(const QString &module, const QString &name)
{
    // Transformer Engine 2.15 and later reduce to a module-level function (one GLOBAL in the pickle) instead of
    // the classmethod; its arguments start as the classmethod's did.
    static const QHash<QString, QString> makers {
        {QStringLiteral("_make_float8_tensor_in_reduce_ex"), QStringLiteral("Float8Tensor")},
        {QStringLiteral("_make_mxfp8_tensor_in_reduce_ex"), QStringLiteral("MXFP8Tensor")},
        {QStringLiteral("_make_float8_blockwise_tensor_in_reduce_ex"), QStringLiteral("Float8BlockwiseQTensor")},
        {QStringLiteral("_make_nvfp4_tensor_in_reduce_ex"), QStringLiteral("NVFP4Tensor")},
        {QStringLiteral("_make_mxfp4_tensor_in_reduce_ex"), QStringLiteral("MXFP4Tensor")}};
    if (!module.startsWith(QLatin1String("transformer_engine.")))
        return {};
    return makers.value(name);
}

bool isTeDType(const QString &module, const QString &name)
{
    return name == QLatin1String("DType")
        && (module == QLatin1String("transformer_engine_torch")
            || module == QLatin1String("transformer_engine_extensions"));
}

enum : uint8_t {
    kMark = '(',
    kStop = '.',
    kBinInt = 'J',
    kBinInt1 = 'K',
    kBinInt2 = 'M',
    kNone = 'N',
    kBinPersId = 'Q',
    kReduce = 'R',
    kBinString = 'T',
    kShortBinString = 'U',
    kBinUnicode = 'X',
    kAppend = 'a',
    kBuild = 'b',
    kGlobal = 'c',
    kAppends = 'e',
    kBinGet = 'h',
    kLongBinGet = 'j',
    kEmptyList = ']',
    kBinPut = 'q',
    kLongBinPut = 'r',
    kSetItem = 's',
    kTuple = 't',
    kSetItems = 'u',
    kEmptyDict = '}',
    kEmptyTuple = ')',
    kBinFloat = 'G',
    kBinBytes = 'B',
    kShortBinBytes = 'C',
    kProto = 0x80,
    kNewObj = 0x81,
    kTuple1 = 0x85,
    kTuple2 = 0x86,
    kTuple3 = 0x87,
    kNewTrue = 0x88,
    kNewFalse = 0x89,
    kLong1 = 0x8a,
    kLong4 = 0x8b,
    kShortBinUnicode = 0x8c,
    kBinUnicode8 = 0x8d,
    kBinBytes8 = 0x8e,
    kEmptySet = 0x8f,
    kAddItems = 0x90,
    kFrozenSet = 0x91,
    kStackGlobal = 0x93,
    kMemoize = 0x94,
    kFrame = 0x95,
};

QString opcodeText(uint8_t op)
{
    if (op >= 0x20 && op < 0x7f)
        return QStringLiteral("'%1' (0x%2)").arg(QLatin1Char(char(op))).arg(op, 2, 16, QLatin1Char('0'));
    return QStringLiteral("0x%1").arg(op, 2, 16, QLatin1Char('0'));
}

const Value kNoValue;

} // namespace

QString allowedGlobal(const QString &module, const QString &name)
{
    if (module == QLatin1String("torch._utils")
        && (name == QLatin1String("_rebuild_tensor") || name == QLatin1String("_rebuild_tensor_v2")
            || name == QLatin1String("_rebuild_tensor_v3") || name == QLatin1String("_rebuild_parameter")))
        return QStringLiteral("tensor rebuild");
    if ((module == QLatin1String("torch") && isStorageName(name))
        || (module == QLatin1String("torch.storage") && name == QLatin1String("UntypedStorage")))
        return QStringLiteral("storage type");
    if (module == QLatin1String("torch") && isDtypeName(name))
        return QStringLiteral("dtype");
    if (module == QLatin1String("torch") && name == QLatin1String("Size"))
        return QStringLiteral("shape");
    if (module == QLatin1String("collections") && name == QLatin1String("OrderedDict"))
        return QStringLiteral("ordered dict");
    if ((module == QLatin1String("builtins") || module == QLatin1String("__builtin__"))
        && name == QLatin1String("getattr"))
        return QStringLiteral("attribute of an allowed class");
    if (module == QLatin1String("torch.storage") && name == QLatin1String("_load_from_bytes"))
        return QStringLiteral("storage by value");
    if (isTeTensorClass(module, name))
        return QStringLiteral("Transformer Engine tensor class");
    if (!teMakerClass(module, name).isEmpty())
        return QStringLiteral("Transformer Engine tensor maker");
    if (isTeDType(module, name))
        return QStringLiteral("Transformer Engine dtype");
    return {};
}

int32_t Program::add(Value v)
{
    if (int64_t(m_pool.size()) >= m_maxValues)
        return -1;
    m_pool.push_back(std::move(v));
    return int32_t(m_pool.size() - 1);
}

int32_t Program::refuse(const QString &why)
{
    Value v;
    v.kind = Kind::Refused;
    v.text = why;
    return add(std::move(v));
}

int32_t Program::global(const QString &module, const QString &name)
{
    if (allowedGlobal(module, name).isEmpty())
        return refuse(QStringLiteral("global '%1.%2' is not on the allowlist").arg(module, name));
    Value v;
    v.kind = Kind::Global;
    v.module = module;
    v.name = name;
    if (const QString cls = teMakerClass(module, name); !cls.isEmpty()) {
        v.kind = Kind::TeMaker;
        v.name = cls;
    }
    return add(std::move(v));
}

// What calling `callable` with the tuple `args` makes, as data. Nothing is ever called.
int32_t Program::call(int32_t callable, int32_t args)
{
    const Value f = m_pool[size_t(callable)]; // a copy: add() may move the pool
    const Value &a = m_pool[size_t(args)];
    if (f.kind == Kind::Refused)
        return refuse(f.text.startsWith(QLatin1String("global ")) ? QStringLiteral("call of %1").arg(f.text) : f.text);
    if (a.kind != Kind::Tuple)
        return refuse(QStringLiteral("call with arguments that are not a tuple"));
    const std::vector<int32_t> argv = a.items;
    auto arg = [&](size_t i) -> const Value & { return i < argv.size() ? m_pool[size_t(argv[i])] : kNoValue; };
    auto intTuple = [&](const Value &t, std::vector<int64_t> *out) {
        if (t.kind != Kind::Tuple && t.kind != Kind::List)
            return false;
        for (int32_t i : t.items) {
            if (m_pool[size_t(i)].kind != Kind::Int)
                return false;
            out->push_back(m_pool[size_t(i)].integer);
        }
        return true;
    };
    if (f.kind == Kind::TeMaker) {
        Value v;
        v.kind = Kind::TeQuantized;
        v.name = f.name;
        v.items = argv;
        return add(std::move(v));
    }
    if (f.kind == Kind::TeDType) {
        // DType(7): the enum from its value.
        Value v;
        v.kind = Kind::TeDType;
        v.integer = arg(0).kind == Kind::Int ? arg(0).integer : -1;
        return add(std::move(v));
    }
    if (f.kind != Kind::Global)
        return refuse(QStringLiteral("call of a value that is not a function"));
    const QString &name = f.name;
    if (name.startsWith(QLatin1String("_rebuild_tensor"))) {
        // (storage, storage_offset, size, stride, ...)
        Value v;
        v.kind = Kind::Tensor;
        if (arg(0).kind == Kind::Refused)
            return refuse(arg(0).text);
        if (arg(0).kind != Kind::Storage || arg(1).kind != Kind::Int || !intTuple(arg(2), &v.shape)
            || !intTuple(arg(3), &v.stride) || v.shape.size() != v.stride.size())
            return refuse(QStringLiteral("torch._utils.%1 with arguments of the wrong kind").arg(name));
        v.items = {argv[0]};
        v.integer = arg(1).integer;
        // _rebuild_tensor_v3 names the dtype (its storage is untyped, counted in bytes).
        if (name == QLatin1String("_rebuild_tensor_v3")) {
            if (arg(6).kind != Kind::Global || allowedGlobal(arg(6).module, arg(6).name) != QLatin1String("dtype"))
                return refuse(QStringLiteral("torch._utils._rebuild_tensor_v3 without a dtype"));
            v.module = arg(6).name;
        }
        return add(std::move(v));
    }
    if (name == QLatin1String("_load_from_bytes")) {
        if (m_nested)
            return refuse(QStringLiteral("a storage by value inside one"));
        if (arg(0).kind != Kind::String)
            return refuse(QStringLiteral("torch.storage._load_from_bytes without its bytes"));
        return storageFromBytes(arg(0).bytes);
    }
    if (name == QLatin1String("_rebuild_parameter")) {
        if (argv.empty())
            return refuse(QStringLiteral("torch._utils._rebuild_parameter without its tensor"));
        return argv[0];
    }
    if (name == QLatin1String("Size")) {
        Value v;
        v.kind = Kind::Tuple;
        if (arg(0).kind == Kind::Tuple || arg(0).kind == Kind::List)
            v.items = arg(0).items;
        return add(std::move(v));
    }
    if (name == QLatin1String("OrderedDict")) {
        Value v;
        v.kind = Kind::Dict;
        // OrderedDict() or OrderedDict([(key, value), ...])
        if (arg(0).kind == Kind::List || arg(0).kind == Kind::Tuple) {
            for (int32_t pair : arg(0).items) {
                const Value &p = m_pool[size_t(pair)];
                if (p.kind == Kind::Tuple && p.items.size() == 2) {
                    v.items.push_back(p.items[0]);
                    v.items.push_back(p.items[1]);
                }
            }
        }
        return add(std::move(v));
    }
    if (name == QLatin1String("getattr")) {
        // getattr(CLASS, "_make_in_reduce_ex"): how pickle writes the classmethod Transformer Engine's
        // quantized tensors reduce to.
        if (arg(0).kind == Kind::Refused)
            return refuse(arg(0).text);
        if (arg(0).kind == Kind::Global && isTeTensorClass(arg(0).module, arg(0).name) && arg(1).kind == Kind::String
            && arg(1).text == QLatin1String("_make_in_reduce_ex")) {
            Value v;
            v.kind = Kind::TeMaker;
            v.module = arg(0).module;
            v.name = arg(0).name;
            return add(std::move(v));
        }
        return refuse(
            QStringLiteral("getattr(%1, %2) is not allowed")
                .arg(arg(0).kind == Kind::Global ? arg(0).module + QLatin1Char('.') + arg(0).name
                                                 : QStringLiteral("a value"),
                    arg(1).kind == Kind::String ? QStringLiteral("'%1'").arg(arg(1).text) : QStringLiteral("a value")));
    }
    if (isTeDType(f.module, name)) {
        Value v;
        v.kind = Kind::TeDType;
        v.integer = arg(0).kind == Kind::Int ? arg(0).integer : -1;
        return add(std::move(v));
    }
    return refuse(QStringLiteral("call of %1.%2 (not a function torch's files call)").arg(f.module, name));
}

int32_t Program::storageFromBytes(const QByteArray &b)
{
    // torch's legacy format (torch.save(storage, f, _use_new_zipfile_serialization=False)): pickles of its magic
    // number, its protocol version, the system's sizes, the storage (a persistent id), the storage keys; then each
    // storage as an 8-byte little-endian element count and its elements.
    static const QByteArray magic = QByteArray::fromHex("80028a0a6cfc9c46f9206aa850192e");
    if (!b.startsWith(magic))
        return refuse(QStringLiteral("a storage by value not in torch's legacy format"));
    int64_t at = magic.size();
    Program inner;
    inner.m_nested = true;
    QString error;
    int64_t offset = 0;
    Limits limits;
    limits.maxValues = 4096;
    limits.maxStack = 4096;
    // Protocol version, system info, then the storage.
    for (int i = 0; i < 3; ++i) {
        int64_t end = 0;
        if (!inner.run(b, at, &end, &error, &offset, limits))
            return refuse(
                QStringLiteral("a storage by value that does not read: %1 at byte %2").arg(error).arg(offset));
        at = end;
    }
    Value storage = inner.at(inner.root());
    if (storage.kind != Kind::Storage)
        return refuse(QStringLiteral("a storage by value that holds no storage"));
    int64_t end = 0;
    if (!inner.run(b, at, &end, &error, &offset, limits))
        return refuse(
            QStringLiteral("a storage by value whose keys do not read: %1 at byte %2").arg(error).arg(offset));
    at = end;
    if (b.size() - at < 8)
        return refuse(QStringLiteral("a storage by value without its element count"));
    uint64_t numel = 0;
    for (int i = 0; i < 8; ++i)
        numel |= uint64_t(uint8_t(b[qsizetype(at + i)])) << (8 * i);
    at += 8;
    if (numel != uint64_t(storage.integer))
        return refuse(
            QStringLiteral("a storage by value of %1 elements that says it has %2").arg(numel).arg(storage.integer));
    // Its elements, as many as follow (the reader checks them against the element size of its type).
    storage.bytes = b.mid(qsizetype(at));
    return add(std::move(storage));
}

bool Program::run(const QByteArray &bytes, QString *error, int64_t *offset, const Limits &limits)
{
    return run(bytes, 0, nullptr, error, offset, limits);
}

bool Program::run(
    const QByteArray &bytes, int64_t from, int64_t *end, QString *error, int64_t *offset, const Limits &limits)
{
    m_pool.clear();
    m_root = -1;
    m_maxValues = limits.maxValues;
    std::vector<int32_t> stack;
    std::vector<size_t> marks;
    QHash<int64_t, int32_t> memo;
    const auto *p = reinterpret_cast<const uint8_t *>(bytes.constData());
    const int64_t n = bytes.size();
    int64_t at = std::clamp<int64_t>(from, 0, n);
    int64_t opAt = at;
    auto fail = [&](const QString &why) {
        *error = why;
        *offset = opAt;
        m_pool.clear();
        return false;
    };
    auto need = [&](int64_t count) { return count >= 0 && count <= n - at; };
    auto le = [&](int bytesCount) {
        uint64_t v = 0;
        for (int i = 0; i < bytesCount; ++i)
            v |= uint64_t(p[at + i]) << (8 * i);
        at += bytesCount;
        return v;
    };
    auto pop = [&](int32_t *out) {
        if (stack.empty() || (!marks.empty() && stack.size() <= marks.back()))
            return false;
        *out = stack.back();
        stack.pop_back();
        return true;
    };
    auto push = [&](int32_t v) {
        if (v < 0 || int64_t(stack.size()) >= limits.maxStack)
            return false;
        stack.push_back(v);
        return true;
    };
    auto popMark = [&](std::vector<int32_t> *out) {
        if (marks.empty())
            return false;
        const size_t m = marks.back();
        marks.pop_back();
        out->assign(stack.begin() + qsizetype(m), stack.end());
        stack.resize(m);
        return true;
    };
    auto make = [&](Kind kind) {
        Value v;
        v.kind = kind;
        return add(std::move(v));
    };
    auto text = [&](int64_t len, Kind kind) {
        if (len > limits.maxText)
            return fail(QStringLiteral("a string of %1 bytes (more than %2)").arg(len).arg(limits.maxText));
        if (!need(len))
            return fail(QStringLiteral("a string runs past the end of the pickle"));
        Value v;
        v.kind = kind;
        v.text = QString::fromUtf8(reinterpret_cast<const char *>(p + at), qsizetype(len));
        if (const uint8_t code = p[opAt]; code == kShortBinBytes || code == kBinBytes || code == kBinBytes8)
            v.bytes = QByteArray(reinterpret_cast<const char *>(p + at), qsizetype(len));
        at += len;
        if (!push(add(std::move(v))))
            return fail(QStringLiteral("more values than the limit"));
        return true;
    };
    // The container a SETITEM/APPEND adds to is below the popped items; items go in only when it is the
    // right kind (a refused object's state is dropped).
    auto addItems = [&](const std::vector<int32_t> &items, bool pairs) {
        if (stack.empty() || (!marks.empty() && stack.size() <= marks.back()))
            return fail(QStringLiteral("no container to add items to"));
        Value &target = m_pool[size_t(stack.back())];
        if (pairs && items.size() % 2 != 0)
            return fail(QStringLiteral("a dict item without its value"));
        if (target.kind == Kind::Refused)
            return true;
        if ((pairs && target.kind != Kind::Dict) || (!pairs && target.kind != Kind::List))
            return fail(QStringLiteral("items added to a value that is not a %1")
                            .arg(pairs ? QStringLiteral("dict") : QStringLiteral("list")));
        if (int64_t(target.items.size() + items.size()) > limits.maxStack)
            return fail(QStringLiteral("a container with more items than the limit"));
        target.items.insert(target.items.end(), items.begin(), items.end());
        return true;
    };

    while (at < n) {
        opAt = at;
        const uint8_t op = p[at++];
        switch (op) {
        case kProto:
            if (!need(1))
                return fail(QStringLiteral("truncated PROTO"));
            if (p[at] > 5)
                return fail(QStringLiteral("pickle protocol %1 (at most 5 is read)").arg(p[at]));
            ++at;
            break;
        case kFrame:
            if (!need(8))
                return fail(QStringLiteral("truncated FRAME"));
            at += 8;
            break;
        case kMark:
            if (int64_t(marks.size()) >= limits.maxStack)
                return fail(QStringLiteral("more marks than the limit"));
            marks.push_back(stack.size());
            break;
        case kEmptyDict:
        case kEmptyList:
        case kEmptyTuple:
        case kEmptySet:
            if (!push(make(op == kEmptyDict ? Kind::Dict : op == kEmptyTuple ? Kind::Tuple : Kind::List)))
                return fail(QStringLiteral("more values than the limit"));
            break;
        case kNone:
        case kNewTrue:
        case kNewFalse: {
            Value v;
            v.kind = op == kNone ? Kind::None : Kind::Bool;
            v.integer = op == kNewTrue;
            if (!push(add(std::move(v))))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kBinInt:
        case kBinInt1:
        case kBinInt2: {
            const int width = op == kBinInt ? 4 : op == kBinInt1 ? 1 : 2;
            if (!need(width))
                return fail(QStringLiteral("truncated integer"));
            Value v;
            v.kind = Kind::Int;
            const uint64_t raw = le(width);
            v.integer = op == kBinInt ? int64_t(int32_t(uint32_t(raw))) : int64_t(raw);
            if (!push(add(std::move(v))))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kLong1:
        case kLong4: {
            const int width = op == kLong1 ? 1 : 4;
            if (!need(width))
                return fail(QStringLiteral("truncated long"));
            const uint64_t len = le(width);
            if (len > 8)
                return fail(QStringLiteral("an integer of %1 bytes (at most 8 are read)").arg(len));
            if (!need(int64_t(len)))
                return fail(QStringLiteral("truncated long"));
            uint64_t raw = le(int(len));
            if (len > 0 && len < 8 && (raw >> (8 * len - 1)) & 1)
                raw |= ~uint64_t(0) << (8 * len);
            Value v;
            v.kind = Kind::Int;
            v.integer = int64_t(raw);
            if (!push(add(std::move(v))))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kBinFloat: {
            if (!need(8))
                return fail(QStringLiteral("truncated float"));
            uint64_t raw = 0;
            for (int i = 0; i < 8; ++i)
                raw = (raw << 8) | p[at + i];
            at += 8;
            Value v;
            v.kind = Kind::Float;
            std::memcpy(&v.real, &raw, 8);
            if (!push(add(std::move(v))))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kShortBinUnicode:
        case kShortBinString:
        case kShortBinBytes:
            if (!need(1))
                return fail(QStringLiteral("truncated string length"));
            if (!text(int64_t(le(1)), Kind::String))
                return false;
            break;
        case kBinUnicode:
        case kBinString:
        case kBinBytes:
            if (!need(4))
                return fail(QStringLiteral("truncated string length"));
            if (!text(int64_t(le(4)), Kind::String))
                return false;
            break;
        case kBinUnicode8:
        case kBinBytes8: {
            if (!need(8))
                return fail(QStringLiteral("truncated string length"));
            const uint64_t len = le(8);
            if (!text(len > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(len), Kind::String))
                return false;
            break;
        }
        case kBinPut:
        case kLongBinPut: {
            const int width = op == kBinPut ? 1 : 4;
            if (!need(width))
                return fail(QStringLiteral("truncated memo index"));
            const int64_t key = int64_t(le(width));
            if (stack.empty())
                return fail(QStringLiteral("memo store with an empty stack"));
            if (memo.size() >= limits.maxStack)
                return fail(QStringLiteral("more memo entries than the limit"));
            memo.insert(key, stack.back());
            break;
        }
        case kMemoize:
            if (stack.empty())
                return fail(QStringLiteral("memo store with an empty stack"));
            if (memo.size() >= limits.maxStack)
                return fail(QStringLiteral("more memo entries than the limit"));
            memo.insert(memo.size(), stack.back());
            break;
        case kBinGet:
        case kLongBinGet: {
            const int width = op == kBinGet ? 1 : 4;
            if (!need(width))
                return fail(QStringLiteral("truncated memo index"));
            const int64_t key = int64_t(le(width));
            const auto found = memo.constFind(key);
            if (found == memo.constEnd())
                return fail(QStringLiteral("memo entry %1 was never stored").arg(key));
            if (!push(*found))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kGlobal: {
            // "module\nname\n"
            const char *base = reinterpret_cast<const char *>(p + at);
            const void *nl1 = std::memchr(base, '\n', size_t(std::min<int64_t>(n - at, 1024)));
            if (!nl1)
                return fail(QStringLiteral("truncated GLOBAL"));
            const int64_t l1 = static_cast<const char *>(nl1) - base;
            const void *nl2 = std::memchr(base + l1 + 1, '\n', size_t(std::min<int64_t>(n - at - l1 - 1, 1024)));
            if (!nl2)
                return fail(QStringLiteral("truncated GLOBAL"));
            const int64_t l2 = static_cast<const char *>(nl2) - (base + l1 + 1);
            const QString module = QString::fromUtf8(base, qsizetype(l1));
            const QString name = QString::fromUtf8(base + l1 + 1, qsizetype(l2));
            at += l1 + l2 + 2;
            if (!push(global(module, name)))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kStackGlobal: {
            int32_t name = -1;
            int32_t module = -1;
            if (!pop(&name) || !pop(&module))
                return fail(QStringLiteral("STACK_GLOBAL without its module and name"));
            if (m_pool[size_t(name)].kind != Kind::String || m_pool[size_t(module)].kind != Kind::String)
                return fail(QStringLiteral("STACK_GLOBAL with a module or name that is not a string"));
            const QString moduleText = m_pool[size_t(module)].text;
            const QString nameText = m_pool[size_t(name)].text;
            if (!push(global(moduleText, nameText)))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kTuple:
        case kFrozenSet: {
            std::vector<int32_t> items;
            if (!popMark(&items))
                return fail(QStringLiteral("TUPLE without a mark"));
            Value v;
            v.kind = op == kTuple ? Kind::Tuple : Kind::List;
            v.items = std::move(items);
            if (!push(add(std::move(v))))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kTuple1:
        case kTuple2:
        case kTuple3: {
            const int count = op - kTuple1 + 1;
            Value v;
            v.kind = Kind::Tuple;
            v.items.resize(size_t(count));
            for (int i = count - 1; i >= 0; --i) {
                if (!pop(&v.items[size_t(i)]))
                    return fail(QStringLiteral("TUPLE%1 with too few values").arg(count));
            }
            if (!push(add(std::move(v))))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kSetItem: {
            int32_t value = -1;
            int32_t key = -1;
            if (!pop(&value) || !pop(&key))
                return fail(QStringLiteral("SETITEM without its key and value"));
            if (!addItems({key, value}, true))
                return false;
            break;
        }
        case kAppend: {
            int32_t value = -1;
            if (!pop(&value))
                return fail(QStringLiteral("APPEND without its value"));
            if (!addItems({value}, false))
                return false;
            break;
        }
        case kSetItems:
        case kAppends:
        case kAddItems: {
            std::vector<int32_t> items;
            if (!popMark(&items))
                return fail(QStringLiteral("%1 without a mark").arg(opcodeText(op)));
            if (!addItems(items, op == kSetItems))
                return false;
            break;
        }
        case kReduce:
        case kNewObj: {
            int32_t args = -1;
            int32_t callable = -1;
            if (!pop(&args) || !pop(&callable))
                return fail(QStringLiteral("%1 without its callable and arguments").arg(opcodeText(op)));
            if (!push(call(callable, args)))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kBuild: {
            int32_t state = -1;
            if (!pop(&state) || stack.empty())
                return fail(QStringLiteral("BUILD without its object and state"));
            Value &object = m_pool[size_t(stack.back())];
            // Transformer Engine's DType (a pybind11 enum) pickles its value as the state (v,).
            if (object.kind == Kind::TeDType) {
                const Value &s = m_pool[size_t(state)];
                if (s.kind == Kind::Int)
                    object.integer = s.integer;
                else if (s.kind == Kind::Tuple && !s.items.empty() && m_pool[size_t(s.items[0])].kind == Kind::Int)
                    object.integer = m_pool[size_t(s.items[0])].integer;
            }
            // Any other object's state is data that nothing here applies; it is dropped.
            break;
        }
        case kBinPersId: {
            // torch.save: ('storage', storage type, key, location, numel)
            int32_t pid = -1;
            if (!pop(&pid))
                return fail(QStringLiteral("BINPERSID without its id"));
            const Value &t = m_pool[size_t(pid)];
            auto item
                = [&](size_t i) -> const Value & { return i < t.items.size() ? m_pool[size_t(t.items[i])] : kNoValue; };
            int32_t made = -1;
            if (t.kind == Kind::Tuple && t.items.size() >= 5 && item(0).kind == Kind::String
                && item(0).text == QLatin1String("storage") && item(1).kind == Kind::Global
                && allowedGlobal(item(1).module, item(1).name) == QLatin1String("storage type")
                && item(2).kind == Kind::String && item(4).kind == Kind::Int) {
                Value v;
                v.kind = Kind::Storage;
                v.name = item(1).name;
                v.text = item(2).text;
                v.integer = item(4).integer;
                made = add(std::move(v));
            } else if (t.kind == Kind::Tuple && item(1).kind == Kind::Refused) {
                made = refuse(item(1).text);
            } else {
                made = refuse(QStringLiteral("a persistent id that is not a torch storage"));
            }
            if (!push(made))
                return fail(QStringLiteral("more values than the limit"));
            break;
        }
        case kStop: {
            int32_t top = -1;
            if (!pop(&top))
                return fail(QStringLiteral("STOP with an empty stack"));
            m_root = top;
            if (end)
                *end = at;
            return true;
        }
        default:
            return fail(QStringLiteral("pickle opcode %1 is not one torch.save writes; not read").arg(opcodeText(op)));
        }
    }
    opAt = at;
    return fail(QStringLiteral("the pickle ends without STOP (truncated)"));
}

} // namespace fp8scope::torchpickle
