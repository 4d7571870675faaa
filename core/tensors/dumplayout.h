// The fp8scope-dump HDF5 layout (version 1): dataset paths /iter_<%06d>/<layer name>/<tensor kind>[_fp8]
// and how a dataset's stored type plus its "dtype" attribute map to an element type. Kept apart from
// the HDF5 calls so that it can be fuzzed and reused by the importers.
#pragma once

#include "core/formats/dtype.h"

#include <QString>

#include <optional>

namespace fp8scope {

struct DumpPath {
    qint64 iteration = -1;
    QString layer;
    QString tensorKind;
    bool quantized = false; // the "<kind>_fp8" sibling holding FP8 bytes
};

// Parses a dataset path of the layout; nullopt (with *error) for anything else.
std::optional<DumpPath> parseDumpPath(const QString &path, QString *error);

// Element type of a dataset: HDF5 float of 4 or 2 bytes, or 2-byte unsigned integers tagged
// dtype="bfloat16", or 1-byte unsigned integers tagged with an FP8 format ("E4M3"/"E5M2", any case, or
// Transformer Engine's "HYBRID": E4M3 forward, E5M2 for gradients). datasetName (the path, or its last
// component) tells a gradient ("gradient_fp8", "grad_output_fp8", ...) from the rest under HYBRID.
enum class StoredClass { Float, UnsignedInteger, SignedInteger, Other };
std::optional<DType> dumpElementType(StoredClass cls, int bytes, const QString &dtypeAttr, const QString &fp8FormatAttr,
    const QString &datasetName, QString *error);

} // namespace fp8scope
