// libFuzzer target: the HDF5 reader's raw chunk path (stored sizes, filter masks, inflating, placing) on
// arbitrary chunk bytes. Each input becomes a small chunked float32 dataset written by the HDF5 library
// itself, so that its metadata is valid, while every chunk's stored bytes, size and filter mask come from
// the input; the reader then reads it in uneven pieces of whole slices. The library's own file parser is
// not fuzzed here (its bugs are not ours to fix), and every chunk is written so that no read falls back to
// H5Dread over the corrupt chunks.
//
// Input: byte 0 rank (1-3) and gzip or not; bytes 1-6 the shape and chunk of each dimension; byte 7 the
// rows per read; then for each chunk in row-major order a 2-byte stored size, a mask byte and the bytes.
#include "core/tensors/hdf5reader.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace {

// Takes bytes from the input in order; zeros once it runs out.
struct Input {
    const uint8_t *data;
    size_t size;
    size_t at = 0;
    uint8_t byte() { return at < size ? data[at++] : 0; }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static QTemporaryDir dir;
    static const QByteArray path = QFile::encodeName(dir.filePath(QStringLiteral("f.h5")));
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    Input in {data, size};
    const uint8_t head = in.byte();
    const int rank = 1 + head % 3;
    const bool gzip = (head & 4) != 0;
    hsize_t shape[3] = {1, 1, 1};
    hsize_t chunk[3] = {1, 1, 1};
    for (int d = 0; d < 3; ++d) {
        const uint8_t s = in.byte();
        const uint8_t c = in.byte();
        if (d < rank) {
            shape[d] = 1 + s % 24;
            chunk[d] = 1 + c % shape[d];
        }
    }
    const int64_t rowsPerRead = 1 + in.byte() % 7;

    const hid_t file = H5Fcreate(path.constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0)
        return 0;
    const hid_t space = H5Screate_simple(rank, shape, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, rank, chunk);
    if (gzip)
        H5Pset_deflate(dcpl, 1);
    const hid_t ds = H5Dcreate2(file, "t", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    size_t chunkBytes = 4;
    hsize_t grid[3] = {1, 1, 1};
    for (int d = 0; d < rank; ++d) {
        chunkBytes *= chunk[d];
        grid[d] = (shape[d] + chunk[d] - 1) / chunk[d];
    }
    std::vector<uint8_t> stored;
    for (hsize_t i = 0; i < grid[0]; ++i) {
        for (hsize_t j = 0; j < grid[1]; ++j) {
            for (hsize_t k = 0; k < grid[2]; ++k) {
                // Mostly sizes near the chunk's (the interesting edge), sometimes anything up to 64 KiB.
                const uint16_t raw = uint16_t(in.byte() | in.byte() << 8);
                const int64_t near = int64_t(chunkBytes) - 8 + raw % 17;
                const size_t n = raw & 0x8000u ? 1 + (raw & 0x7FFFu) : size_t(std::max<int64_t>(1, near));
                const uint32_t mask = in.byte() & 1u;
                stored.resize(n);
                for (size_t b = 0; b < n; ++b)
                    stored[b] = in.byte();
                const hsize_t offset[3] = {i * chunk[0], j * chunk[1], k * chunk[2]};
                H5Dwrite_chunk(ds, H5P_DEFAULT, mask, offset, n, stored.data());
            }
        }
    }
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);

    fp8scope::Problem problem;
    auto reader = fp8scope::Hdf5Reader::open(QFile::decodeName(path), QStringLiteral("/t"), &problem);
    if (!reader || !reader->readsChunksDirectly())
        return 0;
    reader->setThreads(2);
    const int64_t slice = reader->alignment();
    std::vector<float> out(size_t(rowsPerRead * slice));
    for (int64_t row = 0; row < int64_t(shape[0]); row += rowsPerRead) {
        const int64_t rows = std::min<int64_t>(rowsPerRead, int64_t(shape[0]) - row);
        if (!reader->read(row * slice, rows * slice, out.data(), &problem))
            break;
    }
    return 0;
}
