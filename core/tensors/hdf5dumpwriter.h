// Writes tensor dumps in the fp8scope-dump HDF5 layout (version 1): chunked, gzip-compressed datasets
// under /iter_<%06d>/<layer>/<kind> with their attributes. Used by `fp8scope-cli generate` and by tests.
#pragma once

#include "core/formats/dtype.h"
#include "problem.h"

#include <hdf5.h>

#include <QString>

#include <memory>
#include <vector>

namespace fp8scope {

struct DumpTensorAttributes {
    QString recipe;
    QString fp8Format;
    std::vector<float> amaxHistory; // newest first
    std::vector<float> scaleInv; // one value (per-tensor) or one per block
};

class Hdf5DumpWriter
{
public:
    ~Hdf5DumpWriter();
    static std::unique_ptr<Hdf5DumpWriter> create(const QString &path, Problem *problem);

    void setRootAttribute(const char *name, const QString &value);
    // data holds numel elements of dtype (bfloat16 as raw uint16).
    bool writeTensor(const QString &datasetPath, DType dtype, const std::vector<int64_t> &shape, const void *data,
        const DumpTensorAttributes &attributes, Problem *problem);

private:
    Hdf5DumpWriter() = default;
    QString m_path;
    hid_t m_file = -1;
};

} // namespace fp8scope
