// A pickle *interpreter* for the data.pkl of torch.save files: it reads the opcodes torch writes and builds
// plain data from them (dicts, lists, numbers, strings, tensor descriptions), never calling anything. The
// globals a pickle names are looked up in an allowlist (torch's tensor and storage rebuild functions, storage
// and dtype names, collections.OrderedDict, torch.Size, and the reduce form of Transformer Engine's quantized
// tensor classes); a call of anything else becomes a "refused" value naming the global, so that the rest of
// the file still reads. Values live in one pool and refer to each other by index, so that no shape of input
// (cycles through the memo, deep nesting) can make destruction or traversal recurse without bound.
#pragma once

#include <QByteArray>
#include <QString>

#include <cstdint>
#include <vector>

namespace fp8scope::torchpickle {

enum class Kind : uint8_t {
    None,
    Bool,
    Int,
    Float,
    String, // text (str, or bytes)
    Tuple,
    List,
    Dict, // items: key, value, key, value, ...
    Global, // an allowlisted global not yet called: module, name
    Storage, // a persistent storage reference: text = key, name = storage type ("BFloat16Storage"), integer = numel;
             // a storage pickled by value (torch.storage._load_from_bytes: plain pickle.dumps of a CPU tensor, as
             // Transformer Engine's _extra_state holds) has its elements' bytes in `bytes`
    Tensor, // items[0] = its Storage; integer = storage offset; shape, stride; module = the dtype a v3 rebuild names
    TeDType, // Transformer Engine's DType enum; integer = its value (-1 until its state is set)
    TeMaker, // Transformer Engine's CLASS._make_in_reduce_ex; name = CLASS
    TeQuantized, // the result of a TeMaker call: name = CLASS, items = the call's arguments
    Refused, // a call or global that is not allowed: text = why
};

struct Value {
    Kind kind = Kind::None;
    int64_t integer = 0;
    double real = 0;
    QString text;
    QByteArray bytes; // a bytes object's contents (BINBYTES; text has them as UTF-8 too), a by-value storage's
    QString module;
    QString name;
    std::vector<int32_t> items;
    std::vector<int64_t> shape;
    std::vector<int64_t> stride;
};

struct Limits {
    int64_t maxValues = int64_t(1) << 22; // values in the pool
    int64_t maxStack = int64_t(1) << 20; // stack and memo entries
    int64_t maxText = int64_t(64) << 20; // bytes of one string
};

class Program
{
public:
    // Runs the pickle in `bytes`; false with *error and *offset (the opcode's byte offset) on anything it
    // cannot read: an unknown or unsupported opcode (named), a truncated argument, a stack underflow, a
    // limit exceeded. A call of a global that is not allowed is not an error (a Refused value).
    bool run(const QByteArray &bytes, QString *error, int64_t *offset, const Limits &limits = {});
    // The same from byte `from` on, *end set to the byte after its STOP (a file of pickles one after another, as
    // torch's legacy format writes).
    bool run(const QByteArray &bytes, int64_t from, int64_t *end, QString *error, int64_t *offset,
        const Limits &limits = {});

    int32_t root() const { return m_root; }
    const Value &at(int32_t index) const { return m_pool[size_t(index)]; }
    int64_t size() const { return int64_t(m_pool.size()); }

private:
    int32_t add(Value v);
    int32_t call(int32_t callable, int32_t args);
    int32_t refuse(const QString &why);
    int32_t global(const QString &module, const QString &name);

    // torch.storage._load_from_bytes(b): the storage torch's legacy format holds in b, read as data.
    int32_t storageFromBytes(const QByteArray &b);

    std::vector<Value> m_pool;
    int32_t m_root = -1;
    int64_t m_maxValues = 0;
    bool m_nested = false; // a legacy storage's own pickles: no storage by value inside them
};

// Whether module.name is on the allowlist, and what it is ("tensor rebuild", ...); empty when not allowed.
QString allowedGlobal(const QString &module, const QString &name);

} // namespace fp8scope::torchpickle
