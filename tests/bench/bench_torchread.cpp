// Throughput of the native torch.save reader on one bfloat16 entry (default 1024 MiB, 8192 columns): the
// archive is written here in torch's layout (<archive>/data.pkl with the pickle torch writes for a dict of
// one tensor, <archive>/data/0 stored uncompressed), read whole in 64 MiB pieces through openTensor(),
// against a plain read of the same bytes from a raw file, as bench_tensorread's reference (one run of
// each in turn; the ratio is the median of the per-pair ratios). The files are in the page cache after
// writing: this measures the reader, not the disk. Prints a table; asserts nothing about time.
// Usage: bench_torchread [MiB] [repeats]
#include "benchutil.h"
#include "core/tensors/tensorreader.h"
#include "plainread.h"

#include <QFile>
#include <QTemporaryDir>

#include <zip.h>

#include <cstdio>
#include <random>
#include <vector>

using namespace fp8scope;

namespace {

volatile double g_sink;
constexpr int64_t kPieceBytes = int64_t(64) << 20;

// Pickle protocol 2, as torch.save writes {"high_precision": tensor} (integers as LONG1 of 8 bytes).
QByteArray tensorPickle(int64_t rows, int64_t cols)
{
    QByteArray p("\x80\x02}(", 4);
    auto text = [&](const QByteArray &s) {
        p.append('X');
        const uint32_t n = uint32_t(s.size());
        p.append(reinterpret_cast<const char *>(&n), 4);
        p.append(s);
    };
    auto integer = [&](int64_t v) {
        p.append("\x8a\x08", 2);
        p.append(reinterpret_cast<const char *>(&v), 8);
    };
    text("high_precision");
    p.append("ctorch._utils\n_rebuild_tensor_v2\n((");
    text("storage");
    p.append("ctorch\nBFloat16Storage\n");
    text("0");
    text("cpu");
    integer(rows * cols);
    p.append("tQ");
    integer(0);
    p.append('(');
    integer(rows);
    integer(cols);
    p.append("t(");
    integer(cols);
    integer(1);
    p.append("t\x89"
             "ccollections\nOrderedDict\n)Rt",
        30);
    p.append("Ru.");
    return p;
}

bool writeArchive(const QString &path, const QString &raw, int64_t rows, int64_t cols)
{
    int error = 0;
    zip_t *z = zip_open(QFile::encodeName(path).constData(), ZIP_CREATE | ZIP_TRUNCATE, &error);
    if (!z)
        return false;
    static QByteArray pickle;
    pickle = tensorPickle(rows, cols);
    zip_source_t *pkl = zip_source_buffer(z, pickle.constData(), zip_uint64_t(pickle.size()), 0);
    zip_source_t *order = zip_source_buffer(z, "little", 6, 0);
    zip_source_t *data = zip_source_file(z, QFile::encodeName(raw).constData(), 0, -1);
    const zip_int64_t a = zip_file_add(z, "t/data.pkl", pkl, 0);
    const zip_int64_t b = zip_file_add(z, "t/byteorder", order, 0);
    const zip_int64_t c = zip_file_add(z, "t/data/0", data, 0);
    bool ok = a >= 0 && b >= 0 && c >= 0;
    for (zip_int64_t i : {a, b, c})
        ok = ok && zip_set_file_compression(z, zip_uint64_t(i), ZIP_CM_STORE, 0) == 0;
    return zip_close(z) == 0 && ok;
}

bool readAll(const QString &spec, std::vector<char> &buffer)
{
    Problem problem;
    auto reader = openTensor(spec, &problem);
    if (!reader) {
        std::fprintf(stderr, "%s\n", qPrintable(problem.toString()));
        return false;
    }
    const TensorInfo &info = reader->info();
    const int64_t step = std::max<int64_t>(1, kPieceBytes / (2 * info.cols)) * info.cols;
    double s = 0;
    for (int64_t first = 0; first < info.numel; first += step) {
        const int64_t count = std::min(step, info.numel - first);
        if (!reader->read(first, count, buffer.data(), &problem)) {
            std::fprintf(stderr, "%s\n", qPrintable(problem.toString()));
            return false;
        }
        s += double(buffer[size_t(count * 2 - 1)]);
    }
    g_sink = s;
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    const int64_t mib = argc > 1 ? std::atoll(argv[1]) : 1024;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
    const int64_t cols = 8192;
    const int64_t rows = std::max<int64_t>(1, mib * (int64_t(1) << 20) / (2 * cols));
    std::setvbuf(stdout, nullptr, _IOLBF, 0);

    QTemporaryDir dir;
    const QString raw = dir.filePath(QStringLiteral("t.bin"));
    const QString pt = dir.filePath(QStringLiteral("t.pt"));
    {
        // bfloat16 bit patterns of normal values, written a row block at a time.
        QFile f(raw);
        if (!f.open(QIODevice::WriteOnly))
            return 1;
        std::mt19937 rng(1);
        std::vector<uint16_t> block(size_t(cols) * 256);
        for (int64_t r = 0; r < rows; r += 256) {
            for (uint16_t &v : block)
                v = uint16_t(0x3000 + (rng() & 0x1FFF) + ((rng() & 1) << 15));
            const int64_t n = std::min<int64_t>(256, rows - r) * cols * 2;
            if (f.write(reinterpret_cast<const char *>(block.data()), n) != n)
                return 1;
        }
    }
    if (!writeArchive(pt, raw, rows, cols)) {
        std::fprintf(stderr, "cannot write the test archive in %s\n", qPrintable(dir.path()));
        return 1;
    }
    const double gb = double(rows * cols) * 2 / 1e9;
    std::vector<char> buffer(static_cast<size_t>(kPieceBytes));
    std::printf("fp8scope torch.save read benchmark: %lld x %lld bfloat16 (%.0f MiB), %d repeats (median)\n",
        (long long)rows, (long long)cols, double(rows * cols) * 2 / double(1 << 20), repeats);
    std::printf("%-26s %10s %14s %8s\n", "reader", "GB/s", "plain GB/s", "ratio");
    bool readOk = true;
    const bench::Paired t = bench::pairedMedians(
        repeats, [&] { readOk = readAll(pt + QStringLiteral(":high_precision"), buffer) && readOk; },
        [&] { g_sink = bench::plainRead(raw, buffer); });
    if (!readOk)
        return 1;
    std::printf(
        "%-26s %10.2f %14.2f %8.2f\n", ".pt (torch.save zip)", gb / t.workSeconds, gb / t.referenceSeconds, t.ratio);
    return 0;
}
