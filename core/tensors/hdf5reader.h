// Reader of HDF5 datasets (the fp8scope-dump layout and any float32/float16/bfloat16 dataset), read by
// hyperslabs of whole first-dimension slices so that only one chunk range is in memory at a time.
#pragma once

#include "tensorreader.h"

#include <hdf5.h>

namespace fp8scope {

class Hdf5Reader : public TensorReader
{
public:
    ~Hdf5Reader() override;
    static std::unique_ptr<Hdf5Reader> open(const QString &path, const QString &dataset, Problem *problem);
    static QStringList datasets(const QString &path, Problem *problem);
    static bool isHdf5(const QString &path);

    int64_t alignment() const override { return m_sliceElements; }
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;
    std::vector<float> amaxHistory() const override;

    // Largest chunk (bytes) a dataset may declare: the HDF5 library holds whole chunks while it decodes.
    static constexpr int64_t kMaxChunkBytes = int64_t(256) << 20;

private:
    Hdf5Reader() = default;

    hid_t m_file = -1;
    hid_t m_dataset = -1;
    hid_t m_memType = -1;
    int64_t m_sliceElements = 1;
};

} // namespace fp8scope
