// Reader of HDF5 datasets (the fp8scope-dump layout and any float32/float16/bfloat16 dataset), read by
// whole first-dimension slices so that only one chunk range is in memory at a time. Chunked datasets
// with gzip alone or no filter, in the memory's byte order, have their chunks read raw here (gzip ones
// inflated by libdeflate on all cores: the dump layout's case); any other dataset goes through H5Dread.
#pragma once

#include "tensorreader.h"

#include <hdf5.h>

namespace fp8scope {

class Hdf5Reader : public TensorReader
{
public:
    ~Hdf5Reader() override;
    static std::unique_ptr<Hdf5Reader> open(const QString &path, const QString &dataset, Problem *problem);
    // Paths of the datasets that may hold tensors (floats, and the layout's 1- and 2-byte unsigned codes);
    // the others (integers, booleans, strings, compounds) go to *skipped.
    static QStringList datasets(const QString &path, Problem *problem, std::vector<SkippedTensor> *skipped = nullptr);
    static bool isHdf5(const QString &path);

    int64_t alignment() const override { return m_sliceElements; }
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;
    std::vector<float> amaxHistory() const override;
    bool storedDecodeScale(Fp8DecodeScale *scale, QString *why) const override;
    void setThreads(int threads) override { m_threads = threads; }

    // Largest chunk (bytes) a dataset may declare: the HDF5 library holds whole chunks while it decodes.
    static constexpr int64_t kMaxChunkBytes = int64_t(256) << 20;
    // Most fill-value elements (chunks never written) a dataset may make the metrics read, when they are most
    // of it: a few seconds of work. A partly written dump reads; a 1.4 KB file declaring 2^40 is refused.
    static constexpr int64_t kMaxFillElements = int64_t(1) << 27;
    // Largest chunk read raw and inflated here (each worker may hold one); larger ones use H5Dread.
    static constexpr int64_t kMaxDirectChunkBytes = int64_t(16) << 20;

    // Whether reads take the raw chunk path, and a way to send them through H5Dread instead (for tests and
    // the benchmark, which compare the two).
    bool readsChunksDirectly() const { return m_direct; }
    void useH5Dread() { m_direct = false; }

private:
    Hdf5Reader() = default;
    enum class Direct { Done, Failed, Unallocated };
    Direct readDirect(int64_t firstRow, int64_t endRow, char *dst, Problem *problem);
    bool readHyperslab(int64_t first, int64_t count, void *dst, Problem *problem);

    hid_t m_file = -1;
    hid_t m_dataset = -1;
    hid_t m_memType = -1;
    int64_t m_sliceElements = 1;
    bool m_direct = false;
    bool m_gzip = false; // the pipeline is gzip alone (else there is no filter)
    std::vector<int64_t> m_chunk; // chunk dimensions
    int64_t m_chunkBytes = 0;
    qint64 m_fileSize = 0;
    int m_threads = 0;
    std::vector<char> m_stored; // stored bytes of a batch of chunks (kept: a read reuses its pages)
};

} // namespace fp8scope
