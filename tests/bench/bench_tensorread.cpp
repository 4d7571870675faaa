// Throughput of the tensor dump readers on a float32 tensor (default 256 MiB, 8192 columns) written to a
// temporary folder as .npy, contiguous HDF5, chunked HDF5 without a filter and the dump layout's gzip HDF5,
// read whole in 64 MiB pieces through openTensor() (the chunked files also through H5Dread), against a
// plain read of the same number of bytes from a raw file
// (one run of each in turn; the ratio is the median of the per-pair ratios). Then the metrics engine on
// the gzip file for `current` (an amax pass and a fused pass): the tensor read once and kept for the
// second pass (within the resident budget) against read once per pass.
// The files are in the page cache after writing: this measures the readers, not the disk.
// Prints a table; asserts nothing about time.
// Usage: bench_tensorread [MiB] [repeats]
#include "benchutil.h"
#include "core/numerics/cpubackend.h"
#include "core/numerics/metricsengine.h"
#include "core/tensors/hdf5dumpwriter.h"
#include "core/tensors/hdf5reader.h"
#include "core/tensors/tensorreader.h"
#include "plainread.h"

#include <QFile>
#include <QTemporaryDir>

#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace fp8scope;

namespace {

volatile double g_sink;
constexpr int64_t kPieceBytes = int64_t(64) << 20;

bool writeFile(const QString &path, const QByteArray &head, const std::vector<float> &x)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return false;
    const auto *bytes = reinterpret_cast<const char *>(x.data());
    const int64_t total = int64_t(x.size()) * 4;
    bool ok = f.write(head) == head.size();
    for (int64_t off = 0; ok && off < total; off += kPieceBytes) {
        const int64_t piece = std::min(kPieceBytes, total - off);
        ok = f.write(bytes + off, piece) == piece;
    }
    return ok;
}

QByteArray npyHeader(int64_t rows, int64_t cols)
{
    QByteArray dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + QByteArray::number(qint64(rows)) + ", "
        + QByteArray::number(qint64(cols)) + "), }";
    while ((10 + dict.size() + 1) % 64 != 0)
        dict.append(' ');
    dict.append('\n');
    QByteArray out("\x93NUMPY\x01\x00", 8);
    out.append(char(dict.size() & 0xFF));
    out.append(char((dict.size() >> 8) & 0xFF));
    return out + dict;
}

// Without a filter: chunked like the dump layout (whole rows, about 1 MiB a chunk), or contiguous (h5py's
// default).
bool writePlainHdf5(const QString &path, const std::vector<float> &x, int64_t rows, int64_t cols, bool chunked)
{
    const hid_t file = H5Fcreate(QFile::encodeName(path).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0)
        return false;
    const hsize_t dims[2] = {hsize_t(rows), hsize_t(cols)};
    const hsize_t chunk[2] = {std::max<hsize_t>(1, std::min<hsize_t>(dims[0], (1 << 20) / (4 * dims[1]))), dims[1]};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked)
        H5Pset_chunk(dcpl, 2, chunk);
    const hid_t ds = H5Dcreate2(file, "t", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    const bool ok = ds >= 0 && H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.data()) >= 0;
    if (ds >= 0)
        H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
    return ok;
}

// Reads the whole tensor through its reader in pieces of about 64 MiB (whole rows); HDF5 through the
// library's H5Dread when viaH5Dread is set.
bool readAll(const QString &spec, std::vector<char> &buffer, bool viaH5Dread)
{
    Problem problem;
    auto reader = openTensor(spec, &problem);
    if (auto *hdf5 = dynamic_cast<Hdf5Reader *>(reader.get()); hdf5 && viaH5Dread)
        hdf5->useH5Dread();
    if (!reader) {
        std::fprintf(stderr, "%s\n", qPrintable(problem.toString()));
        return false;
    }
    const TensorInfo &info = reader->info();
    const int64_t step = std::max<int64_t>(1, kPieceBytes / (4 * info.cols)) * info.cols;
    double s = 0;
    for (int64_t first = 0; first < info.numel; first += step) {
        const int64_t count = std::min(step, info.numel - first);
        if (!reader->read(first, count, buffer.data(), &problem))
            return false;
        s += double(reinterpret_cast<const float *>(buffer.data())[count - 1]);
    }
    g_sink = s;
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 256;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
    const int64_t cols = 8192;
    const int64_t rows = std::max<int64_t>(1, mib * (int64_t(1) << 20) / (4 * cols));
    const int64_t n = rows * cols;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);

    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (float &v : x)
        v = normal(rng) * std::exp2(-12.0f + 16.0f * u(rng));

    QTemporaryDir dir;
    const QString raw = dir.filePath(QStringLiteral("t.bin"));
    const QString npy = dir.filePath(QStringLiteral("t.npy"));
    const QString chunked = dir.filePath(QStringLiteral("t-chunked.h5"));
    const QString contiguous = dir.filePath(QStringLiteral("t-contiguous.h5"));
    const QString gzip = dir.filePath(QStringLiteral("t-gzip.h5"));
    Problem problem;
    bool ok = writeFile(raw, {}, x) && writeFile(npy, npyHeader(rows, cols), x)
        && writePlainHdf5(chunked, x, rows, cols, true) && writePlainHdf5(contiguous, x, rows, cols, false);
    if (ok) {
        auto w = Hdf5DumpWriter::create(gzip, &problem);
        ok = w && w->writeTensor(QStringLiteral("/t"), DType::F32, {rows, cols}, x.data(), {}, &problem);
    }
    if (!ok) {
        std::fprintf(stderr, "cannot write the test files in %s\n", qPrintable(dir.path()));
        return 1;
    }
    const double gb = double(n) * 4 / 1e9;
    std::vector<char> buffer(static_cast<size_t>(kPieceBytes));

    std::printf("fp8scope tensor read benchmark: %lld x %lld float32 (%.0f MiB), %d repeats (median)\n",
        (long long)rows, (long long)cols, double(n) * 4 / double(1 << 20), repeats);
    std::printf("%-26s %10s %14s %8s\n", "reader", "GB/s", "plain GB/s", "ratio");
    const struct {
        const char *name;
        QString spec;
        bool viaH5Dread;
    } readers[] = {{".npy", npy, false}, {"HDF5 contiguous", contiguous + QStringLiteral(":/t"), false},
        {"HDF5 chunked", chunked + QStringLiteral(":/t"), false},
        {"HDF5 chunked, H5Dread", chunked + QStringLiteral(":/t"), true},
        {"HDF5 gzip (dump)", gzip + QStringLiteral(":/t"), false},
        {"HDF5 gzip (dump), H5Dread", gzip + QStringLiteral(":/t"), true}};
    for (const auto &[name, spec, viaH5Dread] : readers) {
        bool readOk = true;
        const bench::Paired t = bench::pairedMedians(
            repeats, [&] { readOk = readAll(spec, buffer, viaH5Dread) && readOk; },
            [&] { g_sink = bench::plainRead(raw, buffer); });
        if (!readOk)
            return 1;
        std::printf("%-26s %10.2f %14.2f %8.2f\n", name, gb / t.workSeconds, gb / t.referenceSeconds, t.ratio);
    }

    // `current` on the gzip dump: the amax pass and the fused pass.
    const Recipe current = *Recipe::parse(QStringLiteral("current"), std::nullopt, nullptr);
    CpuBackend backend(0);
    const auto run = [&](int64_t residentBytes) {
        return [&, residentBytes] {
            auto reader = openTensor(gzip + QStringLiteral(":/t"), &problem);
            MetricsEngine engine(backend, int64_t(64) << 20, residentBytes);
            auto out = reader ? engine.compute(*reader, {current}, &problem) : std::nullopt;
            g_sink = out ? out->front().mse : 0.0;
        };
    };
    const bench::Paired e = bench::pairedMedians(repeats, run(int64_t(256) << 20), run(0));
    std::printf("\n%-44s %10s %10s %8s\n", "`current` on the gzip dump, threads: all", "s", "GB/s", "speedup");
    std::printf("%-44s %10.2f %10.2f %8s\n", "read once per pass (resident budget 0)", e.referenceSeconds,
        gb / e.referenceSeconds, "1.00");
    std::printf("%-44s %10.2f %10.2f %8.2f\n", "read once, kept for both passes (256 MiB)", e.workSeconds,
        gb / e.workSeconds, e.ratio);
    return 0;
}
