// Tensor dump readers: round trips through HDF5 (float32, float16, bfloat16), safetensors and .npy v1-v3,
// chunked reads, and every kind of bad input (truncated files, lying headers, wrong dtypes, broken torch zips).
#include "core/formats/fp8math.h"
#include "core/tensors/dumplayout.h"
#include "core/tensors/hdf5dumpwriter.h"
#include "core/tensors/hdf5reader.h"
#include "core/tensors/jaxdump.h"
#include "core/tensors/npyreader.h"
#include "core/tensors/safetensorsreader.h"
#include "core/tensors/tensorreader.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <numeric>

using namespace fp8scope;

Q_DECLARE_METATYPE(std::vector<hsize_t>)

namespace {

QByteArray npy(int major, const QByteArray &dict, const QByteArray &data)
{
    QByteArray h = dict;
    const int prefix = major == 1 ? 10 : 12;
    while ((prefix + h.size() + 1) % 64 != 0)
        h.append(' ');
    h.append('\n');
    QByteArray out("\x93NUMPY", 6);
    out.append(char(major));
    out.append(char(0));
    const quint32 len = quint32(h.size());
    out.append(char(len & 0xFF));
    out.append(char((len >> 8) & 0xFF));
    if (major > 1) {
        out.append(char((len >> 16) & 0xFF));
        out.append(char((len >> 24) & 0xFF));
    }
    return out + h + data;
}

QByteArray safetensors(const QByteArray &json, const QByteArray &data)
{
    QByteArray out(8, '\0');
    quint64 len = quint64(json.size());
    for (int i = 0; i < 8; ++i)
        out[i] = char((len >> (8 * i)) & 0xFF);
    return out + json + data;
}

QByteArray floats(const std::vector<float> &v)
{
    return QByteArray(reinterpret_cast<const char *>(v.data()), qsizetype(v.size() * 4));
}

} // namespace

class TestReaders : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void npyVersions_data();
    void npyVersions();
    void npyByteOrderAndFortranOrder();
    void safetensorsRoundTrip();
    void fp8DecodeScalesSafetensors();
    void fp8DecodeScalesHdf5();
    void hdf5RoundTrip_data();
    void hdf5RoundTrip();
    void hdf5ChunkLayouts_data();
    void hdf5ChunkLayouts();
    void hdf5ShortUnfilteredChunk();
    void hdf5BigEndianFloat16();
    void hdf5CorruptChunk();
    void badInput_data();
    void badInput();
    void checkpointWithOtherDtypes();
    void float64ReadAsFloat32();
    void fp4PackedCheckpoints();
    void mxfp8E8m0Scales();
    void brokenTorchFile();
    void jaxInspectArray();
    void notAFile();
    void hdf5NamesThatAreNotDatasets();
    void dumpPaths();

private:
    QString write(const QString &name, const QByteArray &bytes)
    {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        f.open(QIODevice::WriteOnly);
        f.write(bytes);
        return path;
    }
    QTemporaryDir m_dir;
};

void TestReaders::npyVersions_data()
{
    QTest::addColumn<int>("major");
    QTest::newRow("1.0") << 1;
    QTest::newRow("2.0") << 2;
    QTest::newRow("3.0") << 3;
}

void TestReaders::npyVersions()
{
    QFETCH(int, major);
    const std::vector<float> v {1.0f, -2.0f, 3.5f, 0.0f, 1e-3f, 7.0f};
    const QString path = write(QStringLiteral("v%1.npy").arg(major),
        npy(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats(v)));
    Problem p;
    auto r = openTensor(path, &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QCOMPARE(r->info().dtype, DType::F32);
    QCOMPARE(r->info().rows, 2);
    QCOMPARE(r->info().cols, 3);
    std::vector<float> back(4);
    QVERIFY(r->read(2, 4, back.data(), &p));
    QCOMPARE(back[0], 3.5f);
    QCOMPARE(back[3], 7.0f);
}

void TestReaders::npyByteOrderAndFortranOrder()
{
    // np.save writes a transposed matrix in Fortran order and keeps a big-endian dtype's byte order: both
    // read as the logical row-major values, over any element range.
    const int64_t rows = 5, cols = 7;
    std::vector<float> v(size_t(rows * cols));
    for (int64_t i = 0; i < rows * cols; ++i)
        v[size_t(i)] = float(i / cols) * 10.0f + float(i % cols) + 0.5f;
    std::vector<float> columnMajor;
    for (int64_t c = 0; c < cols; ++c) {
        for (int64_t r = 0; r < rows; ++r)
            columnMajor.push_back(v[size_t(r * cols + c)]);
    }
    const auto swapped = [](QByteArray bytes, int size) {
        for (qsizetype i = 0; i + size <= bytes.size(); i += size)
            std::reverse(bytes.begin() + i, bytes.begin() + i + size);
        return bytes;
    };
    std::vector<double> asDouble(v.begin(), v.end());
    const QByteArray doubles(reinterpret_cast<const char *>(asDouble.data()), qsizetype(asDouble.size() * 8));
    std::vector<uint16_t> halves;
    for (float f : v) {
        // Exact in float16 (positive, normal, 10 mantissa bits at most): rebias the float32 fields.
        const uint32_t b = fp8math::floatBits(f);
        halves.push_back(uint16_t((((b >> 23) - 127 + 15) << 10) | ((b & 0x7FFFFFu) >> 13)));
        QCOMPARE(fp8math::halfToFloat(halves.back()), f);
    }
    const QByteArray halfBytes(reinterpret_cast<const char *>(halves.data()), qsizetype(halves.size() * 2));
    struct Case {
        const char *name;
        QByteArray dict;
        QByteArray data;
    };
    const Case cases[] = {
        {"fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (5, 7), }", floats(columnMajor)},
        {"fortran_be.npy", "{'descr': '>f4', 'fortran_order': True, 'shape': (5, 7), }",
            swapped(floats(columnMajor), 4)},
        {"be_f4.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (5, 7), }", swapped(floats(v), 4)},
        {"be_f8.npy", "{'descr': '>f8', 'fortran_order': False, 'shape': (5, 7), }", swapped(doubles, 8)},
        {"be_f2.npy", "{'descr': '>f2', 'fortran_order': False, 'shape': (5, 7), }", swapped(halfBytes, 2)},
        // One row: Fortran order is C order.
        {"fortran_row.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 35), }", floats(v)},
    };
    for (const Case &c : cases) {
        Problem p;
        auto r = openTensor(write(QLatin1String(c.name), npy(1, c.dict, c.data)), &p);
        QVERIFY2(r, qPrintable(p.toString()));
        QCOMPARE(r->info().numel, rows * cols);
        for (const auto &[first, count] :
            std::vector<std::pair<int64_t, int64_t>> {{0, 35}, {3, 10}, {6, 1}, {7, 7}, {13, 22}, {34, 1}, {8, 5}}) {
            std::vector<float> back(size_t(count), -1.0f);
            QVERIFY2(r->read(first, count, back.data(), &p), qPrintable(p.toString()));
            for (int64_t i = 0; i < count; ++i) {
                const float want = r->info().dtype == DType::F16 ? fp8math::halfToFloat(halves[size_t(first + i)])
                                                                 : v[size_t(first + i)];
                float got = back[size_t(i)];
                if (r->info().dtype == DType::F16)
                    got = fp8math::halfToFloat(reinterpret_cast<const uint16_t *>(back.data())[i]);
                QVERIFY2(got == want,
                    qPrintable(QStringLiteral("%1 [%2, +%3) element %4: %5, expected %6")
                                   .arg(QLatin1String(c.name))
                                   .arg(first)
                                   .arg(count)
                                   .arg(i)
                                   .arg(got)
                                   .arg(want)));
            }
        }
    }
}

void TestReaders::safetensorsRoundTrip()
{
    const std::vector<float> a {1, 2, 3, 4};
    const uint16_t b[3] = {0x3F80, 0xC000, 0x0000}; // bf16 1, -2, 0
    const uint8_t c[2] = {0x38, 0x7E}; // e4m3 1, 448
    QByteArray data = floats(a) + QByteArray(reinterpret_cast<const char *>(b), 6)
        + QByteArray(reinterpret_cast<const char *>(c), 2);
    const QByteArray json
        = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
          R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[16,22]},"c":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[22,24]}})";
    const QString path = write(QStringLiteral("t.safetensors"), safetensors(json, data));
    Problem p;
    QCOMPARE(listTensors(path, &p), QStringList({QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")}));
    auto rb = openTensor(path + QStringLiteral(":b"), &p);
    QVERIFY2(rb, qPrintable(p.toString()));
    QCOMPARE(rb->info().dtype, DType::BF16);
    uint16_t back[3];
    QVERIFY(rb->read(0, 3, back, &p));
    QCOMPARE(back[1], uint16_t(0xC000));
    auto rc = openTensor(path + QStringLiteral(":c"), &p);
    QVERIFY(rc);
    QCOMPARE(rc->info().dtype, DType::F8E4M3);
    QVERIFY(!openTensor(path, &p)); // three tensors: a name is needed
    QVERIFY(p.message.contains(QLatin1String("name one")));
}

namespace {

// All elements of a reader as float32 (it must hand out float32), read in pieces of `piece` elements.
std::vector<float> readFloats(TensorReader &r, int64_t piece)
{
    std::vector<float> out(size_t(r.info().numel));
    Problem p;
    for (int64_t first = 0; first < r.info().numel; first += piece) {
        if (!r.read(first, std::min(piece, r.info().numel - first), out.data() + first, &p))
            return {};
    }
    return out;
}

QByteArray header(const QStringList &entries)
{
    return QByteArray("{") + entries.join(QLatin1Char(',')).toUtf8() + "}";
}

QString entry(const char *name, const char *dtype, const QString &shape, qint64 begin, qint64 end)
{
    return QStringLiteral(R"("%1":{"dtype":"%2","shape":[%3],"data_offsets":[%4,%5]})")
        .arg(QLatin1String(name), QLatin1String(dtype), shape)
        .arg(begin)
        .arg(end);
}

} // namespace

void TestReaders::fp8DecodeScalesSafetensors()
{
    // DeepSeek-style: an E4M3 weight of 300 x 260 (not multiples of 128) and its 3 x 3 grid of 128x128
    // block decode scales beside it; the same codes without scales; an E5M2 tensor with one bfloat16 scale
    // per row; a grid that fits no block shape; a float32 tensor.
    const int64_t rows = 300, cols = 260;
    QByteArray codes(rows * cols, '\0');
    for (qsizetype i = 0; i < codes.size(); ++i) {
        const int c = int((i * 37 + i / 7) % 256);
        codes[i] = char((c & 0x7F) == 0x7F ? c - 1 : c); // every code but the two NaN
    }
    std::vector<float> grid(9);
    for (int k = 0; k < 9; ++k)
        grid[size_t(k)] = std::ldexp(1.0f + 0.1f * float(k), k - 12);
    const uint16_t rowScales[4] = {0x3F80, 0x4000, 0x3E80, 0x4480}; // bf16 1, 2, 0.25, 1024
    const uint8_t e5m2[12] = {0x3C, 0x40, 0x44, 0xBC, 0x01, 0x7B, 0x00, 0x80, 0x38, 0x3D, 0x42, 0x45};
    QByteArray data = codes;
    QStringList e;
    e << entry("w", "F8_E4M3", QStringLiteral("300,260"), 0, data.size());
    e << entry("w_scale_inv", "F32", QStringLiteral("3,3"), data.size(), data.size() + 36);
    data += floats(grid);
    e << entry("v", "F8_E4M3", QStringLiteral("300,260"), data.size(), data.size() + codes.size());
    data += codes;
    e << entry("r", "F8_E5M2", QStringLiteral("4,3"), data.size(), data.size() + 12);
    data += QByteArray(reinterpret_cast<const char *>(e5m2), 12);
    e << entry("r_scale_inv", "BF16", QStringLiteral("4"), data.size(), data.size() + 8);
    data += QByteArray(reinterpret_cast<const char *>(rowScales), 8);
    e << entry("odd", "F8_E4M3", QStringLiteral("10,10"), data.size(), data.size() + 100);
    data += codes.left(100);
    e << entry("odd_scale_inv", "F32", QStringLiteral("3,3"), data.size(), data.size() + 36);
    data += floats(grid);
    e << entry("f", "F32", QStringLiteral("2"), data.size(), data.size() + 8);
    data += floats({1.0f, 2.0f});
    // compressed-tensors / ModelOpt: NAME_scale, one per output channel ([rows, 1]).
    e << entry("ct", "F8_E4M3", QStringLiteral("4,3"), data.size(), data.size() + 12);
    data += QByteArray(reinterpret_cast<const char *>(e5m2), 12);
    e << entry("ct_scale", "F32", QStringLiteral("4,1"), data.size(), data.size() + 16);
    data += floats({0.5f, 0.25f, 4.0f, 8.0f});
    const QString path = write(QStringLiteral("fp8scales.safetensors"), safetensors(header(e), data));
    const auto value = [](uint8_t code, fp8math::Format f) { return fp8math::decodeCode(code, f); };
    Problem p;

    // Found beside the tensor: each value is its code's value times its block's scale, as float32.
    auto w = openTensor(path + QStringLiteral(":w"), &p);
    QVERIFY2(w, qPrintable(p.toString()));
    QCOMPARE(w->info().dtype, DType::F32);
    QCOMPARE(w->info().decoding, QStringLiteral("E4M3 codes x scale_inv (128x128 blocks) from tensor 'w_scale_inv'"));
    const std::vector<float> wv = readFloats(*w, 1001); // pieces that start and end inside rows and blocks
    QCOMPARE(wv.size(), size_t(rows * cols));
    int wrong = 0;
    for (qsizetype i = 0; i < codes.size(); ++i) {
        const float want
            = value(uint8_t(codes[i]), fp8math::Format::E4M3) * grid[size_t((i / cols) / 128 * 3 + (i % cols) / 128)];
        wrong += std::memcmp(&want, &wv[size_t(i)], 4) != 0;
    }
    QCOMPARE(wrong, 0);

    // The same codes without scales beside them: read as codes, and said so.
    auto v = openTensor(path + QStringLiteral(":v"), &p);
    QVERIFY(v);
    QCOMPARE(v->info().dtype, DType::F8E4M3);
    QVERIFY2(v->info().decoding.contains(QLatin1String("no scale_inv beside them")), qPrintable(v->info().decoding));
    // ... unless a scale is named: another tensor's, or a number.
    auto vNamed = openTensor(path + QStringLiteral(":v"), &p, QStringLiteral("w_scale_inv"));
    QVERIFY2(vNamed, qPrintable(p.toString()));
    QVERIFY(readFloats(*vNamed, rows * cols) == wv);
    auto vNumber = openTensor(path + QStringLiteral(":v"), &p, QStringLiteral("0.25"));
    QVERIFY(vNumber);
    QCOMPARE(vNumber->info().decoding, QStringLiteral("E4M3 codes x scale_inv 0.25 from the value given"));
    const std::vector<float> quarter = readFloats(*vNumber, 4096);
    QCOMPARE(quarter[5], value(uint8_t(codes[5]), fp8math::Format::E4M3) * 0.25f);
    // "none" keeps the codes where a scale exists.
    auto wNone = openTensor(path + QStringLiteral(":w"), &p, QStringLiteral("none"));
    QVERIFY(wNone);
    QCOMPARE(wNone->info().dtype, DType::F8E4M3);

    // One bfloat16 scale per row of an E5M2 tensor.
    auto r = openTensor(path + QStringLiteral(":r"), &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QVERIFY2(r->info().decoding.contains(QLatin1String("(per row)")), qPrintable(r->info().decoding));
    const std::vector<float> rv = readFloats(*r, 5);
    const float rowScale[4] = {1.0f, 2.0f, 0.25f, 1024.0f};
    for (int i = 0; i < 12; ++i)
        QCOMPARE(rv[size_t(i)], value(e5m2[i], fp8math::Format::E5M2) * rowScale[i / 3]);

    auto ct = openTensor(path + QStringLiteral(":ct"), &p);
    QVERIFY2(ct, qPrintable(p.toString()));
    QCOMPARE(ct->info().decoding,
        QStringLiteral("E4M3 codes x scale_inv (per row) from tensor 'ct_scale' (a decode multiplier, as "
                       "compressed-tensors and ModelOpt store it)"));
    const std::vector<float> cv = readFloats(*ct, 12);
    const float channel[4] = {0.5f, 0.25f, 4.0f, 8.0f};
    for (int i = 0; i < 12; ++i)
        QCOMPARE(cv[size_t(i)], value(e5m2[i], fp8math::Format::E4M3) * channel[i / 3]);

    // A grid no block shape fits: found but unusable, so the codes are read and the reason given; named
    // explicitly, it is an error.
    auto odd = openTensor(path + QStringLiteral(":odd"), &p);
    QVERIFY(odd);
    QCOMPARE(odd->info().dtype, DType::F8E4M3);
    QVERIFY2(odd->info().decoding.contains(QLatin1String("3x3 grid, which no block shape fits on the 10x10 tensor")),
        qPrintable(odd->info().decoding));
    QVERIFY(!openTensor(path + QStringLiteral(":odd"), &p, QStringLiteral("odd_scale_inv")));
    QVERIFY2(p.message.contains(QLatin1String("no block shape fits")), qPrintable(p.message));

    // Bad choices: not an FP8 tensor, not a positive number, no such tensor, too many scales.
    QVERIFY(!openTensor(path + QStringLiteral(":f"), &p, QStringLiteral("2")));
    QVERIFY2(p.message.contains(QLatin1String("holds float32 values, not FP8 codes")), qPrintable(p.message));
    QVERIFY(openTensor(path + QStringLiteral(":f"), &p, QStringLiteral("auto")));
    QVERIFY(openTensor(path + QStringLiteral(":f"), &p, QStringLiteral("none")));
    for (const char *bad : {"-1", "0", "nan", "inf"}) {
        QVERIFY(!openTensor(path + QStringLiteral(":v"), &p, QLatin1String(bad)));
        QVERIFY2(p.message.contains(QLatin1String("not a positive finite number")), qPrintable(p.message));
    }
    QVERIFY(!openTensor(path + QStringLiteral(":v"), &p, QStringLiteral("missing")));
    QVERIFY2(p.message.contains(QLatin1String("scale_inv tensor 'missing': no tensor named")), qPrintable(p.message));
    QVERIFY(!openTensor(path + QStringLiteral(":r"), &p, QStringLiteral("v")));
    QVERIFY2(p.message.contains(QLatin1String("more than the 12 elements")), qPrintable(p.message));
}

void TestReaders::fp8DecodeScalesHdf5()
{
    // The dump layout: <kind>_fp8 holds the codes, <kind> the high-precision tensor with the scale_inv the
    // run used (one per tensor, or one per block of its recipe), or the FP8 dataset carries its own.
    const QString path = m_dir.filePath(QStringLiteral("fp8scales.h5"));
    Problem p;
    std::vector<uint8_t> codes(4 * 64);
    for (size_t i = 0; i < codes.size(); ++i)
        codes[i] = uint8_t(i % 126);
    const std::vector<float> blockScales {1, 2, 4, 8, 16, 32, 64, 128};
    {
        auto w = Hdf5DumpWriter::create(path, &p);
        QVERIFY(w);
        DumpTensorAttributes hp;
        hp.recipe = QStringLiteral("current");
        hp.scaleInv = {0.5f};
        const std::vector<float> zeros(4 * 64, 0.0f);
        QVERIFY(w->writeTensor(QStringLiteral("/iter_000010/l/weight"), DType::F32, {4, 64}, zeros.data(), hp, &p));
        DumpTensorAttributes q;
        q.fp8Format = QStringLiteral("E4M3");
        QVERIFY(
            w->writeTensor(QStringLiteral("/iter_000010/l/weight_fp8"), DType::F8E4M3, {4, 64}, codes.data(), q, &p));
        DumpTensorAttributes mx;
        mx.recipe = QStringLiteral("mxfp8");
        mx.scaleInv = blockScales;
        QVERIFY(w->writeTensor(QStringLiteral("/iter_000010/l/activation"), DType::F32, {4, 64}, zeros.data(), mx, &p));
        QVERIFY(w->writeTensor(
            QStringLiteral("/iter_000010/l/activation_fp8"), DType::F8E4M3, {4, 64}, codes.data(), q, &p));
        DumpTensorAttributes own = q;
        own.scaleInv = {3.0f};
        QVERIFY(w->writeTensor(
            QStringLiteral("/iter_000010/l/gradient_fp8"), DType::F8E4M3, {4, 64}, codes.data(), own, &p));
        DumpTensorAttributes wrongCount = q;
        wrongCount.scaleInv = {1, 2, 3};
        QVERIFY(w->writeTensor(
            QStringLiteral("/iter_000010/l/output_fp8"), DType::F8E4M3, {4, 64}, codes.data(), wrongCount, &p));
    }
    const auto e4m3 = [](uint8_t c) { return fp8math::decodeCode(c, fp8math::Format::E4M3); };

    auto weight = openTensor(path + QStringLiteral(":/iter_000010/l/weight_fp8"), &p);
    QVERIFY2(weight, qPrintable(p.toString()));
    QCOMPARE(weight->info().decoding,
        QStringLiteral("E4M3 codes x scale_inv 0.5 from attribute scale_inv of /iter_000010/l/weight"));
    const std::vector<float> wv = readFloats(*weight, 64);
    for (size_t i = 0; i < codes.size(); ++i)
        QCOMPARE(wv[i], e4m3(codes[i]) * 0.5f);

    // One scale per 1x32 block: the sibling's recipe says which.
    auto act = openTensor(path + QStringLiteral(":/iter_000010/l/activation_fp8"), &p);
    QVERIFY2(act, qPrintable(p.toString()));
    QVERIFY2(act->info().decoding.contains(QLatin1String("(1x32 blocks)")), qPrintable(act->info().decoding));
    const std::vector<float> av = readFloats(*act, 128);
    for (size_t i = 0; i < codes.size(); ++i)
        QCOMPARE(av[i], e4m3(codes[i]) * blockScales[(i / 64) * 2 + (i % 64) / 32]);

    auto grad = openTensor(path + QStringLiteral(":/iter_000010/l/gradient_fp8"), &p);
    QVERIFY(grad);
    QVERIFY2(grad->info().decoding.endsWith(QLatin1String("x scale_inv 3 from attribute scale_inv of "
                                                          "/iter_000010/l/gradient_fp8")),
        qPrintable(grad->info().decoding));
    QCOMPARE(readFloats(*grad, 256)[7], e4m3(codes[7]) * 3.0f);

    // Three scales for a 4 x 64 tensor and no recipe: read as codes, with the reason.
    auto out = openTensor(path + QStringLiteral(":/iter_000010/l/output_fp8"), &p);
    QVERIFY(out);
    QCOMPARE(out->info().dtype, DType::F8E4M3);
    QVERIFY2(out->info().decoding.contains(QLatin1String("holds 3 values, and no recipe says")),
        qPrintable(out->info().decoding));
}

void TestReaders::hdf5RoundTrip_data()
{
    QTest::addColumn<int>("dtype");
    QTest::newRow("float32") << int(DType::F32);
    QTest::newRow("float16") << int(DType::F16);
    QTest::newRow("bfloat16") << int(DType::BF16);
}

void TestReaders::hdf5RoundTrip()
{
    QFETCH(int, dtype);
    const DType d = DType(dtype);
    const int64_t rows = 300;
    const int64_t cols = 77;
    std::vector<float> values(size_t(rows * cols));
    for (size_t i = 0; i < values.size(); ++i)
        values[i] = float(int(i % 1000) - 500) * 0.25f;
    QByteArray raw;
    for (float v : values) {
        if (d == DType::F32) {
            raw.append(reinterpret_cast<const char *>(&v), 4);
        } else if (d == DType::BF16) {
            const uint16_t b = uint16_t(fp8math::castToCode(v, fp8math::Format::BF16));
            raw.append(reinterpret_cast<const char *>(&b), 2);
        } else {
            const _Float16 h = static_cast<_Float16>(v);
            raw.append(reinterpret_cast<const char *>(&h), 2);
        }
    }
    const QString path = m_dir.filePath(QStringLiteral("dump%1.h5").arg(dtype));
    Problem p;
    {
        auto w = Hdf5DumpWriter::create(path, &p);
        QVERIFY(w);
        DumpTensorAttributes a;
        a.amaxHistory = {2.0f, 1.0f};
        QVERIFY(w->writeTensor(
            QStringLiteral("/iter_000010/model.layers.3.mlp.fc1/activation"), d, {rows, cols}, raw.constData(), a, &p));
        QVERIFY(w->writeTensor(
            QStringLiteral("/iter_000010/model.layers.3.mlp.fc1/weight"), DType::F32, {4}, values.data(), a, &p));
        QVERIFY(w->writeTensor(QStringLiteral("/iter_000010/model.layers.3.mlp.fc1/activation3d"), d, {rows, 7, 11},
            raw.constData(), a, &p));
    }
    QCOMPARE(listTensors(path, &p).size(), 3);
    auto r = openTensor(path + QStringLiteral(":/iter_000010/model.layers.3.mlp.fc1/activation"), &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QCOMPARE(r->info().dtype, d);
    QCOMPARE(r->info().rows, rows);
    QCOMPARE(r->alignment(), cols);
    QCOMPARE(r->amaxHistory(), std::vector<float>({2.0f, 1.0f}));
    // Read in uneven whole-row chunks and compare with what was written.
    QByteArray back(raw.size(), '\0');
    const int size = dtypeSize(d);
    for (int64_t row = 0; row < rows; row += 37) {
        const int64_t n = std::min<int64_t>(37, rows - row) * cols;
        QVERIFY(r->read(row * cols, n, back.data() + row * cols * size, &p));
    }
    QCOMPARE(back, raw);
    // A 3-D dataset: the same elements, read in slices of the first dimension.
    auto r3 = openTensor(path + QStringLiteral(":/iter_000010/model.layers.3.mlp.fc1/activation3d"), &p);
    QVERIFY2(r3, qPrintable(p.toString()));
    QCOMPARE(r3->info().shape, std::vector<int64_t>({rows, 7, 11}));
    QCOMPARE(r3->alignment(), cols);
    back.fill('\0');
    for (int64_t row = 0; row < rows; row += 41) {
        const int64_t n = std::min<int64_t>(41, rows - row) * cols;
        QVERIFY(r3->read(row * cols, n, back.data() + row * cols * size, &p));
    }
    QCOMPARE(back, raw);
}

namespace {

enum class Filters { None, Gzip, ShuffleGzip };

// Writes float32 elements 0, 1, 2, ... into dataset "t" through the HDF5 C API: the given shape, chunk,
// filters and byte order; `writtenRows` of the first dimension only (the rest never allocated) when >= 0.
// `rawChunk0` stores the first chunk unfiltered with gzip marked as skipped, as HDF5 may for a chunk that
// does not compress. Returns the elements as they must read back (0, the fill value, where never written).
std::vector<float> writeChunked(const QString &path, const std::vector<hsize_t> &shape,
    const std::vector<hsize_t> &chunk, Filters filters, bool bigEndian, int64_t writtenRows, bool rawChunk0)
{
    const int rank = int(shape.size());
    const size_t n = std::accumulate(shape.begin(), shape.end(), size_t(1), std::multiplies<>());
    const size_t slice = n / shape[0];
    std::vector<float> values(n);
    std::iota(values.begin(), values.end(), 0.0f);
    const hid_t file = H5Fcreate(QFile::encodeName(path).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hid_t space = H5Screate_simple(rank, shape.data(), nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, rank, chunk.data());
    if (filters == Filters::ShuffleGzip)
        H5Pset_shuffle(dcpl);
    if (filters != Filters::None)
        H5Pset_deflate(dcpl, 1);
    const hid_t ds
        = H5Dcreate2(file, "t", bigEndian ? H5T_IEEE_F32BE : H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    const hsize_t rows = writtenRows < 0 ? shape[0] : hsize_t(writtenRows);
    if (rows > 0) {
        std::vector<hsize_t> start(size_t(rank), 0);
        std::vector<hsize_t> extent = shape;
        extent[0] = rows;
        H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, extent.data(), nullptr);
        const hid_t mem = H5Screate_simple(rank, extent.data(), nullptr);
        H5Dwrite(ds, H5T_NATIVE_FLOAT, mem, space, H5P_DEFAULT, values.data());
        H5Sclose(mem);
    }
    std::vector<float> expected = values;
    std::fill(expected.begin() + std::ptrdiff_t(rows * slice), expected.end(), 0.0f);
    if (rawChunk0) {
        // The first chunk's elements in its own row-major order, stored as they are.
        size_t c = std::accumulate(chunk.begin(), chunk.end(), size_t(1), std::multiplies<>());
        std::vector<float> raw(c, 0.0f);
        std::vector<hsize_t> i(size_t(rank), 0);
        for (size_t k = 0; k < c; ++k) {
            size_t at = 0;
            bool inside = true;
            for (int d = 0; d < rank; ++d) {
                inside = inside && i[size_t(d)] < shape[size_t(d)];
                at = at * shape[size_t(d)] + i[size_t(d)];
            }
            raw[k] = inside ? -values[at] : 0.0f;
            if (inside)
                expected[at] = -values[at];
            for (int d = rank - 1; d >= 0 && ++i[size_t(d)] == chunk[size_t(d)]; --d)
                i[size_t(d)] = 0;
        }
        const std::vector<hsize_t> origin(size_t(rank), 0);
        H5Dwrite_chunk(ds, H5P_DEFAULT, 1u, origin.data(), c * 4, raw.data());
    }
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
    return expected;
}

} // namespace

void TestReaders::hdf5ChunkLayouts_data()
{
    QTest::addColumn<std::vector<hsize_t>>("shape");
    QTest::addColumn<std::vector<hsize_t>>("chunk");
    QTest::addColumn<int>("filters");
    QTest::addColumn<bool>("bigEndian");
    QTest::addColumn<int>("writtenRows");
    QTest::addColumn<bool>("rawChunk0");
    QTest::addColumn<bool>("direct");
    using V = std::vector<hsize_t>;
    const int gzip = int(Filters::Gzip);
    QTest::newRow("gzip whole rows") << V {300, 77} << V {32, 77} << gzip << false << -1 << false << true;
    QTest::newRow("gzip edge chunks") << V {300, 77} << V {7, 5} << gzip << false << -1 << false << true;
    QTest::newRow("gzip 1-D") << V {1000} << V {96} << gzip << false << -1 << false << true;
    const int none = int(Filters::None);
    QTest::newRow("plain whole rows") << V {300, 77} << V {32, 77} << none << false << -1 << false << true;
    QTest::newRow("plain edge chunks") << V {300, 77} << V {7, 5} << none << false << -1 << false << true;
    QTest::newRow("plain 3-D") << V {30, 7, 11} << V {4, 3, 11} << none << false << -1 << false << true;
    QTest::newRow("plain partly written") << V {300, 77} << V {32, 77} << none << false << 64 << false << true;
    QTest::newRow("plain big-endian") << V {300, 77} << V {32, 77} << none << true << -1 << false << false;
    QTest::newRow("gzip skipped on a chunk") << V {300, 77} << V {7, 5} << gzip << false << -1 << true << true;
    QTest::newRow("gzip skipped on a whole-row chunk")
        << V {300, 77} << V {32, 77} << gzip << false << -1 << true << true;
    QTest::newRow("partly written") << V {300, 77} << V {32, 77} << gzip << false << 64 << false << true;
    QTest::newRow("shuffle and gzip") << V {300, 77} << V {32, 77} << int(Filters::ShuffleGzip) << false << -1 << false
                                      << false;
    QTest::newRow("big-endian") << V {300, 77} << V {32, 77} << gzip << true << -1 << false << false;
}

// Every chunk layout reads back the elements written, whether its chunks are read raw and inflated here or
// through H5Dread, in uneven pieces of whole slices.
void TestReaders::hdf5ChunkLayouts()
{
    QFETCH(std::vector<hsize_t>, shape);
    QFETCH(std::vector<hsize_t>, chunk);
    QFETCH(int, filters);
    QFETCH(bool, bigEndian);
    QFETCH(int, writtenRows);
    QFETCH(bool, rawChunk0);
    QFETCH(bool, direct);
    const QString path = m_dir.filePath(QStringLiteral("layout.h5"));
    const std::vector<float> expected
        = writeChunked(path, shape, chunk, Filters(filters), bigEndian, writtenRows, rawChunk0);
    Problem p;
    auto r = Hdf5Reader::open(path, QStringLiteral("/t"), &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QCOMPARE(r->readsChunksDirectly(), direct);
    const int64_t slice = r->alignment();
    std::vector<float> back(expected.size(), -1.0f);
    for (int64_t row = 0; row < int64_t(shape[0]); row += 37) {
        const int64_t n = std::min<int64_t>(37, int64_t(shape[0]) - row) * slice;
        QVERIFY2(r->read(row * slice, n, back.data() + row * slice, &p), qPrintable(p.toString()));
    }
    QCOMPARE(back, expected);
    // The library's own read of the same file agrees.
    r->useH5Dread();
    std::fill(back.begin(), back.end(), -1.0f);
    QVERIFY2(r->read(0, int64_t(back.size()), back.data(), &p), qPrintable(p.toString()));
    QCOMPARE(back, expected);
}

// A gzip chunk whose bytes do not inflate fails the read with the chunk's byte offset in the file.
void TestReaders::hdf5CorruptChunk()
{
    const QString path = m_dir.filePath(QStringLiteral("corrupt.h5"));
    writeChunked(path, {300, 77}, {32, 77}, Filters::Gzip, false, -1, false);
    {
        const hid_t file = H5Fopen(QFile::encodeName(path).constData(), H5F_ACC_RDWR, H5P_DEFAULT);
        const hid_t ds = H5Dopen2(file, "t", H5P_DEFAULT);
        // A valid zlib stream of the wrong length, then bytes that are no zlib stream at all.
        std::vector<char> shortChunk(100, 'x');
        uLongf size = compressBound(uLong(shortChunk.size()));
        std::vector<Bytef> packed(size);
        compress(packed.data(), &size, reinterpret_cast<const Bytef *>(shortChunk.data()), uLong(shortChunk.size()));
        const hsize_t second[2] = {32, 0};
        H5Dwrite_chunk(ds, H5P_DEFAULT, 0u, second, size, packed.data());
        const std::vector<char> garbage(4000, '\x5a');
        const hsize_t fifth[2] = {128, 0};
        H5Dwrite_chunk(ds, H5P_DEFAULT, 0u, fifth, garbage.size(), garbage.data());
        H5Dclose(ds);
        H5Fclose(file);
    }
    Problem p;
    auto r = Hdf5Reader::open(path, QStringLiteral("/t"), &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QVERIFY(r->readsChunksDirectly());
    std::vector<float> back(size_t(32 * 77));
    QVERIFY2(r->read(0, 32 * 77, back.data(), &p), qPrintable(p.toString())); // the first chunk is intact
    QCOMPARE(back[77], 77.0f);
    for (int64_t row : {32, 128}) {
        p = {};
        QVERIFY(!r->read(row * 77, 32 * 77, back.data(), &p));
        QVERIFY2(
            p.message.contains(QLatin1String("does not inflate")) && p.message.contains(QLatin1String("byte offset")),
            qPrintable(p.toString()));
        QCOMPARE(p.file, path);
        QVERIFY(p.offset > 0 && p.message.contains(QString::number(p.offset)));
    }
}

// Big-endian float16 (h5py's '>f2'), contiguous and chunked with gzip, reads as the little-endian values;
// the chunked one goes through H5Dread, which swaps the bytes.
void TestReaders::hdf5BigEndianFloat16()
{
    const QString path = m_dir.filePath(QStringLiteral("be16.h5"));
    const std::vector<uint16_t> halves = {0x3C00, 0x4000, 0xC300, 0x5640, 0x0001, 0x7BFF, 0x8000, 0x7C00};
    {
        const hid_t file = H5Fcreate(QFile::encodeName(path).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        const hid_t le = H5Tcopy(H5T_IEEE_F32LE);
        H5Tset_fields(le, 15, 10, 5, 0, 10);
        H5Tset_size(le, 2);
        H5Tset_ebias(le, 15);
        const hid_t be = H5Tcopy(le);
        H5Tset_order(be, H5T_ORDER_BE);
        const hsize_t dims[2] = {4, 2};
        const hid_t space = H5Screate_simple(2, dims, nullptr);
        const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        const hsize_t chunk[2] = {1, 2};
        H5Pset_chunk(dcpl, 2, chunk);
        H5Pset_deflate(dcpl, 1);
        for (const char *name : {"contiguous", "chunked"}) {
            const hid_t ds = H5Dcreate2(
                file, name, be, space, H5P_DEFAULT, QByteArray(name) == "chunked" ? dcpl : H5P_DEFAULT, H5P_DEFAULT);
            QVERIFY(H5Dwrite(ds, le, H5S_ALL, H5S_ALL, H5P_DEFAULT, halves.data()) >= 0);
            H5Dclose(ds);
        }
        H5Pclose(dcpl);
        H5Sclose(space);
        H5Tclose(be);
        H5Tclose(le);
        H5Fclose(file);
    }
    for (const QString &name : {QStringLiteral("/contiguous"), QStringLiteral("/chunked")}) {
        Problem p;
        auto r = Hdf5Reader::open(path, name, &p);
        QVERIFY2(r, qPrintable(p.toString()));
        QCOMPARE(r->info().dtype, DType::F16);
        QVERIFY(!r->readsChunksDirectly());
        std::vector<uint16_t> back(halves.size(), 0x5555);
        QVERIFY2(r->read(0, int64_t(back.size()), back.data(), &p), qPrintable(p.toString()));
        QCOMPARE(back, halves);
    }
}

// A chunk of a dataset without a filter whose stored size is not the chunk's fails the read with its byte
// offset, before anything is read into place; the intact chunks still read.
void TestReaders::hdf5ShortUnfilteredChunk()
{
    const QString path = m_dir.filePath(QStringLiteral("short.h5"));
    const hsize_t shape[2] = {96, 77};
    const hsize_t chunk[2] = {32, 77};
    std::vector<float> values(size_t(96 * 77));
    std::iota(values.begin(), values.end(), 0.0f);
    haddr_t shortAt = 0;
    {
        const hid_t file = H5Fcreate(QFile::encodeName(path).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        const hid_t space = H5Screate_simple(2, shape, nullptr);
        const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 2, chunk);
        const hid_t ds = H5Dcreate2(file, "t", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        for (hsize_t row : {0, 32}) {
            const hsize_t at[2] = {row, 0};
            QVERIFY(H5Dwrite_chunk(ds, H5P_DEFAULT, 0u, at, 32 * 77 * 4, values.data() + row * 77) >= 0);
        }
        // The third chunk stored as 400 bytes: the size HDF5 records is what the reader must check.
        const std::vector<float> few(100, 1.0f);
        const hsize_t third[2] = {64, 0};
        QVERIFY(H5Dwrite_chunk(ds, H5P_DEFAULT, 0u, third, few.size() * 4, few.data()) >= 0);
        unsigned mask = 0;
        hsize_t stored = 0;
        QVERIFY(H5Dget_chunk_info_by_coord(ds, third, &mask, &shortAt, &stored) >= 0);
        QCOMPARE(stored, hsize_t(400));
        H5Dclose(ds);
        H5Pclose(dcpl);
        H5Sclose(space);
        H5Fclose(file);
    }
    Problem p;
    auto r = Hdf5Reader::open(path, QStringLiteral("/t"), &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QVERIFY(r->readsChunksDirectly());
    std::vector<float> back(size_t(64 * 77), -1.0f);
    QVERIFY2(r->read(0, 64 * 77, back.data(), &p), qPrintable(p.toString()));
    QVERIFY(std::equal(back.begin(), back.end(), values.begin()));
    std::fill(back.begin(), back.end(), -1.0f);
    QVERIFY(!r->read(32 * 77, 64 * 77, back.data(), &p));
    QVERIFY2(p.message.contains(QLatin1String("holds 400 bytes, not 9856")), qPrintable(p.toString()));
    QCOMPARE(p.offset, qint64(shortAt));
    QVERIFY(p.message.contains(QString::number(p.offset)));
}

void TestReaders::badInput_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("expected");
    const QByteArray f4 = floats({1, 2, 3, 4});
    QTest::newRow("npy truncated data") << npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (8,), }", f4)
                                        << QStringLiteral("a.npy") << QStringLiteral("declares 32 bytes");
    QTest::newRow("npy lying header length") << QByteArray("\x93NUMPY\x01\x00\xff\xff{'descr'", 17)
                                             << QStringLiteral("b.npy") << QStringLiteral("exceeds the file");
    QTest::newRow("npy wrong dtype") << npy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", f4)
                                     << QStringLiteral("c.npy") << QStringLiteral("unsupported dtype '<i4'");
    QTest::newRow("npy fortran 3-d") << npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1, 2), }", f4)
                                     << QStringLiteral("d.npy") << QStringLiteral("Fortran");
    QTest::newRow("npy fortran 3-d wide") << npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2, 2, 1), }",
        f4) << QStringLiteral("d2.npy") << QStringLiteral("more than two dimensions");
    QTest::newRow("npy bad version") << npy(9, "{}", f4) << QStringLiteral("e.npy") << QStringLiteral("version 9");
    QTest::newRow("npy negative shape") << npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", f4)
                                        << QStringLiteral("f.npy") << QStringLiteral("bad shape");
    QTest::newRow("npy huge shape") << npy(
        1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", f4)
                                    << QStringLiteral("g.npy") << QStringLiteral("overflows");
    QTest::newRow("safetensors header past end") << QByteArray("\xff\xff\x00\x00\x00\x00\x00\x00{}",
        10) << QStringLiteral("h.safetensors") << QStringLiteral("exceeds the file");
    QTest::newRow("safetensors offsets past end")
        << safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,64]}})", f4)
        << QStringLiteral("i.safetensors") << QStringLiteral("outside the 16-byte data section");
    QTest::newRow("safetensors shape lies")
        << safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", f4)
        << QStringLiteral("j.safetensors") << QStringLiteral("different byte count");
    QTest::newRow("safetensors wrong dtype")
        << safetensors(R"({"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", f4)
        << QStringLiteral("k.safetensors") << QStringLiteral("tensor 'a' is I64; fp8scope reads F32, F16, BF16");
    QTest::newRow("safetensors unread dtype, shape lies")
        << safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                       R"("b":{"dtype":"I64","shape":[3],"data_offsets":[0,16]}})",
               f4)
        << QStringLiteral("k2.safetensors")
        << QStringLiteral("tensor 'b': shape and dtype need a different byte count");
    QTest::newRow("safetensors FP4, odd count")
        << safetensors(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                       R"("p":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})",
               f4)
        << QStringLiteral("k3.safetensors")
        << QStringLiteral("tensor 'p': shape and dtype need a different byte count");
    QTest::newRow("safetensors no dtype") << safetensors(R"({"a":{"shape":[4],"data_offsets":[0,16]}})", f4)
                                          << QStringLiteral("k4.safetensors") << QStringLiteral("tensor 'a': no dtype");
    QTest::newRow("safetensors bad json")
        << safetensors(R"({"a":{"dtype":)", f4) << QStringLiteral("l.safetensors") << QStringLiteral("header JSON");
    QTest::newRow("not a dump") << QByteArray("hello world, not a tensor") << QStringLiteral("m.txt")
                                << QStringLiteral("not a tensor dump");
    QTest::newRow("hdf5 truncated") << QByteArray("\x89HDF\r\n\x1a\n\x00\x00\x00", 11) << QStringLiteral("n.h5")
                                    << QStringLiteral("HDF5");
}

void TestReaders::badInput()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QString, name);
    QFETCH(QString, expected);
    const QString path = write(name, bytes);
    Problem p;
    QVERIFY(!openTensor(path, &p));
    QVERIFY2(p.toString().contains(expected), qPrintable(p.toString()));
    QVERIFY(p.toString().startsWith(path));
}

void TestReaders::checkpointWithOtherDtypes()
{
    // A checkpoint as they come: the floating-point tensors beside integer buffers, a mask, FP4 packed two
    // to a byte, E8M0 scales and a dtype newer than this reader. The others are listed, the float one reads.
    const QByteArray json = R"({"__metadata__":{"format":"pt"},)"
                            R"("w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                            R"("position_ids":{"dtype":"I64","shape":[2],"data_offsets":[16,32]},)"
                            R"("mask":{"dtype":"BOOL","shape":[4],"data_offsets":[32,36]},)"
                            R"("packed":{"dtype":"F4","shape":[2,4],"data_offsets":[36,40]},)"
                            R"("scales":{"dtype":"F8_E8M0","shape":[2],"data_offsets":[40,42]},)"
                            R"("future":{"dtype":"F3_E1M1","shape":[5],"data_offsets":[42,44]}})";
    const QByteArray data = floats({1.5f, -2.0f, 0.25f, 8.0f}) + QByteArray(28, '\x01');
    const QString path = write(QStringLiteral("mixed.safetensors"), safetensors(json, data));
    Problem p;
    std::vector<SkippedTensor> skipped;
    QCOMPARE(listTensors(path, &p, &skipped), QStringList {QStringLiteral("w")});
    QVERIFY2(p.message.isEmpty(), qPrintable(p.toString()));
    QStringList listed;
    for (const SkippedTensor &t : skipped) {
        QStringList dims;
        for (int64_t d : t.shape)
            dims << QString::number(d);
        listed << t.name + QLatin1Char(' ') + t.dtype + QLatin1Char(' ') + dims.join(QLatin1Char('x'));
    }
    QCOMPARE(listed,
        (QStringList {QStringLiteral("future F3_E1M1 5"), QStringLiteral("mask BOOL 4"),
            QStringLiteral("packed F4 2x4"), QStringLiteral("position_ids I64 2"),
            QStringLiteral("scales F8_E8M0 2")}));
    auto r = openTensor(path + QStringLiteral(":w"), &p);
    QVERIFY2(r, qPrintable(p.toString()));
    std::vector<float> back(4);
    QVERIFY(r->read(0, 4, back.data(), &p));
    QCOMPARE(back, (std::vector<float> {1.5f, -2.0f, 0.25f, 8.0f}));
    QVERIFY(!openTensor(path + QStringLiteral(":position_ids"), &p));
    QVERIFY2(p.message
            == QStringLiteral("tensor 'position_ids' is I64; fp8scope reads F32, F16, BF16, F8_E4M3, "
                              "F8_E5M2 and F64 tensors"),
        qPrintable(p.message));
    QVERIFY(p.offset > 8);

    // The same in HDF5: integer and string datasets beside a tensor are listed, not opened.
    const QString h5 = m_dir.filePath(QStringLiteral("mixed.h5"));
    {
        const hid_t file = H5Fcreate(QFile::encodeName(h5).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        const hsize_t dims[2] = {2, 3};
        const hid_t space = H5Screate_simple(2, dims, nullptr);
        const float values[6] = {1, 2, 3, 4, 5, 6};
        const int64_t ids[6] = {7, 8, 9, 10, 11, 12};
        const hid_t t = H5Dcreate2(file, "/t", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(t, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
        const hid_t ids64 = H5Dcreate2(file, "/token_ids", H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(ids64, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, ids);
        const hid_t u32 = H5Dcreate2(file, "/counts", H5T_STD_U32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        const hid_t str = H5Tcopy(H5T_C_S1);
        H5Tset_size(str, 8);
        const hid_t scalar = H5Screate(H5S_SCALAR);
        const hid_t name = H5Dcreate2(file, "/name", str, scalar, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        for (hid_t h : {t, ids64, u32, name})
            H5Dclose(h);
        H5Tclose(str);
        H5Sclose(scalar);
        H5Sclose(space);
        H5Fclose(file);
    }
    skipped.clear();
    QCOMPARE(listTensors(h5, &p, &skipped), QStringList {QStringLiteral("/t")});
    listed.clear();
    for (const SkippedTensor &t : skipped) {
        QStringList dims;
        for (int64_t d : t.shape)
            dims << QString::number(d);
        listed << t.name + QLatin1Char(' ') + t.dtype + QLatin1Char(' ') + dims.join(QLatin1Char('x'));
    }
    listed.sort();
    QCOMPARE(listed,
        (QStringList {QStringLiteral("/counts uint32 2x3"), QStringLiteral("/name string "),
            QStringLiteral("/token_ids int64 2x3")}));
    // The one tensor needs no name.
    r = openTensor(h5, &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QCOMPARE(r->info().name, QStringLiteral("/t"));
}

void TestReaders::float64ReadAsFloat32()
{
    // numpy and h5py write float64 by default. The values are handed out as float32, each rounded to
    // nearest even as a cast does: the cases below, then a ramp past the reader's million-element pieces.
    const double cases[] = {1.0 + std::ldexp(1.0, -30), 1.0 + std::ldexp(1.0, -24) + std::ldexp(1.0, -40),
        1.0 + std::ldexp(1.0, -24), 1e300, -1e-50, std::nan(""), std::ldexp(1.0, -140), -0.1};
    const float expected[]
        = {1.0f, 1.0f + std::ldexp(1.0f, -23), 1.0f, INFINITY, -0.0f, NAN, std::ldexp(1.0f, -140), -0.1f};
    const int64_t rows = 1100, cols = 1000; // 1.1 M elements: two pieces
    std::vector<double> values(size_t(rows * cols));
    for (size_t i = 0; i < values.size(); ++i)
        values[i] = i < std::size(cases) ? cases[i] : double(i) * (1.0 + std::ldexp(1.0, -29));
    auto expect = [&](size_t i) {
        return i < std::size(expected) ? expected[i] : float(double(i) * (1.0 + std::ldexp(1.0, -29)));
    };
    const QByteArray raw(reinterpret_cast<const char *>(values.data()), qsizetype(values.size() * 8));

    const QString npyPath = write(
        QStringLiteral("d.npy"), npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1100, 1000), }", raw));
    const QString stPath = write(QStringLiteral("d.safetensors"),
        safetensors(R"({"d":{"dtype":"F64","shape":[1100,1000],"data_offsets":[0,8800000]}})", raw));
    const QString h5Path = m_dir.filePath(QStringLiteral("d.h5"));
    {
        Problem p;
        auto w = Hdf5DumpWriter::create(h5Path, &p);
        QVERIFY2(w, qPrintable(p.toString()));
        QVERIFY2(w->writeTensor(
                     QStringLiteral("/iter_000001/l/activation"), DType::F64, {rows, cols}, values.data(), {}, &p),
            qPrintable(p.toString()));
    }
    for (const QString &spec : QStringList {npyPath, stPath + QStringLiteral(":d"), h5Path}) {
        Problem p;
        auto r = openTensor(spec, &p);
        QVERIFY2(r, qPrintable(p.toString()));
        QCOMPARE(r->info().dtype, DType::F32);
        QCOMPARE(r->info().storedDtype, DType::F64);
        QCOMPARE(r->info().decoding, QStringLiteral("float64 values rounded to float32 (nearest even)"));
        std::vector<float> back(values.size(), 7.0f);
        QVERIFY2(r->read(0, rows * cols, back.data(), &p), qPrintable(p.toString()));
        for (size_t i = 0; i < values.size(); ++i) {
            const float want = expect(i);
            if (!(std::isnan(want) ? std::isnan(back[i])
                                   : std::memcmp(&back[i], &want, 4) == 0)) // -0.0f is not 0.0f here
                QFAIL(
                    qPrintable(QStringLiteral("%1: element %2 is %3, not %4").arg(spec).arg(i).arg(back[i]).arg(want)));
        }
        // A range that starts in one piece and ends in the next.
        std::vector<float> part(size_t(3 * cols));
        QVERIFY(r->read(1047 * cols, 3 * cols, part.data(), &p));
        QCOMPARE(part.back(), expect(size_t(1050 * cols - 1)));
        // A decode scale does not apply to float64 values.
        QVERIFY(!openTensor(spec, &p, QStringLiteral("0.5")));
        QVERIFY2(p.message.contains(QLatin1String("holds float64 values, not FP8 codes")), qPrintable(p.message));
    }
}

void TestReaders::fp4PackedCheckpoints()
{
    // FP4 weights as three kinds of quantized checkpoint keep them, two E2M1 codes to a byte (low nibble
    // first) with their block scales beside them: ModelOpt's NVFP4 (E4M3 scale per 16 elements, times the
    // global NAME_scale_2), compressed-tensors' NVFP4 (divided by NAME_global_scale) and gpt-oss's MXFP4
    // (E8M0 scale per 32 elements). Every element must be its code's value times its block's scale.
    const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    struct Case {
        QString name;
        std::vector<int64_t> bytesShape, shape;
        int64_t block;
        QByteArray scaleCodes;
        std::vector<float> scales; // what the codes above stand for
        float global; // 0: none
        bool divide;
        QString decoding;
    };
    const std::vector<Case> cases {
        {QStringLiteral("m.weight"), {2, 20}, {2, 40}, 16, QByteArray("\x38\x40\x30\x44\x3c\x28", 6),
            {1, 2, 0.5f, 3, 1.5f, 0.25f}, 0.5f, false,
            QStringLiteral(
                "NVFP4 (ModelOpt): E2M1 codes x E4M3 block scale (1x16) from tensor 'm.weight_scale' x global "
                "scale 0.5 from tensor 'm.weight_scale_2'")},
        {QStringLiteral("c.weight_packed"), {2, 8}, {2, 16}, 16, QByteArray("\x40\x28", 2), {2, 0.25f}, 4.0f, true,
            QStringLiteral("NVFP4 (compressed-tensors): E2M1 codes x E4M3 block scale (1x16) from tensor "
                           "'c.weight_scale' / global scale 4 from tensor 'c.weight_global_scale'")},
        {QStringLiteral("g.gate_blocks"), {3, 2, 16}, {3, 64}, 32, QByteArray("\x7f\x80\x7d\x82\x7f\x7f", 6),
            {1, 2, 0.25f, 8, 1, 1}, 0, false,
            QStringLiteral("MXFP4 (gpt-oss): E2M1 codes x E8M0 block scale (1x32) from tensor 'g.gate_scales'")},
    };
    QByteArray json = "{";
    QByteArray data;
    auto add = [&](const QString &name, const char *dtype, const std::vector<int64_t> &shape, const QByteArray &bytes) {
        QStringList dims;
        for (int64_t d : shape)
            dims << QString::number(d);
        if (json.size() > 1)
            json += ',';
        json += QStringLiteral("\"%1\":{\"dtype\":\"%2\",\"shape\":[%3],\"data_offsets\":[%4,%5]}")
                    .arg(name, QLatin1String(dtype), dims.join(QLatin1Char(',')))
                    .arg(data.size())
                    .arg(data.size() + bytes.size())
                    .toUtf8();
        data += bytes;
    };
    std::vector<QByteArray> codes;
    for (const Case &c : cases) {
        int64_t n = 1;
        for (int64_t d : c.bytesShape)
            n *= d;
        QByteArray bytes(qsizetype(n), '\0');
        for (int64_t i = 0; i < n; ++i)
            bytes[qsizetype(i)] = char((i * 37 + 11) & 0xFF); // every nibble, both halves
        codes.push_back(bytes);
        add(c.name, "U8", c.bytesShape, bytes);
        const bool mx = c.name.endsWith(QLatin1String("_blocks"));
        const QString base
            = c.name.section(QLatin1Char('_'), 0, mx ? -2 : (c.name.endsWith(QLatin1String("_packed")) ? -2 : -1));
        std::vector<int64_t> grid(c.bytesShape.begin(), c.bytesShape.end() - 1);
        if (!mx)
            grid.push_back(c.scaleCodes.size() / c.bytesShape.front());
        add(mx ? base + QStringLiteral("_scales") : base + QStringLiteral("_scale"), mx ? "U8" : "F8_E4M3", grid,
            c.scaleCodes);
        if (c.global != 0)
            add(c.divide ? base + QStringLiteral("_global_scale") : base + QStringLiteral("_scale_2"), "F32",
                c.divide ? std::vector<int64_t> {1} : std::vector<int64_t> {}, floats({c.global}));
    }
    // A U8 tensor whose scales fit no FP4 layout stays a tensor of bytes, not read.
    add(QStringLiteral("bad.weight"), "U8", {2, 8}, QByteArray(16, '\x11'));
    add(QStringLiteral("bad.weight_scale"), "F8_E4M3", {2, 5}, QByteArray(10, '\x38'));
    json += '}';
    const QString path = write(QStringLiteral("fp4.safetensors"), safetensors(json, data));

    Problem p;
    std::vector<SkippedTensor> skipped;
    const QStringList names = listTensors(path, &p, &skipped);
    QVERIFY2(p.message.isEmpty(), qPrintable(p.toString()));
    for (const Case &c : cases)
        QVERIFY2(names.contains(c.name), qPrintable(names.join(QLatin1Char(' '))));
    QStringList skippedNames;
    for (const SkippedTensor &t : skipped)
        skippedNames << t.name;
    QCOMPARE(skippedNames, (QStringList {QStringLiteral("bad.weight"), QStringLiteral("g.gate_scales")}));

    for (size_t k = 0; k < cases.size(); ++k) {
        const Case &c = cases[k];
        auto r = openTensor(path + QLatin1Char(':') + c.name, &p);
        QVERIFY2(r, qPrintable(p.toString()));
        QCOMPARE(r->info().dtype, DType::F32);
        QCOMPARE(r->info().storedDtype, DType::F4E2M1);
        QCOMPARE(r->info().shape, c.shape);
        QCOMPARE(r->info().decoding, c.decoding);
        const int64_t n = r->info().numel;
        const int64_t cols = c.shape.back();
        const int64_t perRow = (cols + c.block - 1) / c.block;
        std::vector<float> want(static_cast<size_t>(n));
        for (int64_t e = 0; e < n; ++e) {
            const uint8_t byte = uint8_t(codes[k][qsizetype(e / 2)]);
            const float scale = c.scales[size_t((e / cols) * perRow + (e % cols) / c.block)];
            const float block = c.global == 0 ? scale : (c.divide ? scale / c.global : scale * c.global);
            want[size_t(e)] = e2m1[(e & 1) ? byte >> 4 : byte & 0x0F] * block;
        }
        std::vector<float> back(size_t(n), 99.0f);
        QVERIFY(r->read(0, n, back.data(), &p));
        QCOMPARE(back, want);
        // A range starting on a high nibble, across a row.
        std::vector<float> part(static_cast<size_t>(cols));
        QVERIFY(r->read(cols / 2 + 1, cols, part.data(), &p));
        QCOMPARE(part, std::vector<float>(want.begin() + cols / 2 + 1, want.begin() + cols / 2 + 1 + cols));
    }
    QVERIFY(!openTensor(path + QStringLiteral(":bad.weight"), &p));
    QVERIFY2(p.message.contains(QLatin1String("is U8")), qPrintable(p.message));
}

void TestReaders::mxfp8E8m0Scales()
{
    // An MXFP8 checkpoint: E4M3 codes with one E8M0 exponent byte per 32 elements of a row beside them, as U8
    // or as safetensors' own F8_E8M0. Every element is its code's value times 2^(e - 127).
    const int rows = 3, cols = 64;
    QByteArray codes(rows * cols, '\0');
    for (int i = 0; i < codes.size(); ++i)
        codes[i] = char((i * 5) % 0x7F);
    const QByteArray exps("\x7f\x80\x7c\x85\x70\x7f", 6); // 1, 2, 1/8, 64, 2^-15, 1
    for (const char *dtype : {"U8", "F8_E8M0"}) {
        const QByteArray json = QByteArrayLiteral(R"({"w":{"dtype":"F8_E4M3","shape":[3,64],"data_offsets":[0,192]},)")
            + QByteArrayLiteral(R"("w_scale":{"dtype":")") + dtype
            + QByteArrayLiteral(R"(","shape":[3,2],"data_offsets":[192,198]}})");
        const QString path
            = write(QStringLiteral("mx_%1.safetensors").arg(QLatin1String(dtype)), safetensors(json, codes + exps));
        Problem p;
        auto r = openTensor(path + QStringLiteral(":w"), &p);
        QVERIFY2(r, qPrintable(p.toString()));
        QCOMPARE(r->info().decoding,
            QStringLiteral("E4M3 codes x scale_inv (1x32 blocks) from tensor 'w_scale' (E8M0 exponents, as MXFP8 "
                           "checkpoints store them)"));
        std::vector<float> back(rows * cols);
        QVERIFY(r->read(0, rows * cols, back.data(), &p));
        for (int i = 0; i < rows * cols; ++i) {
            const float scale = std::ldexp(1.0f, int(uint8_t(exps[(i / cols) * 2 + (i % cols) / 32])) - 127);
            QCOMPARE(back[size_t(i)], fp8math::decodeCode(uint8_t(codes[i]), fp8math::Format::E4M3) * scale);
        }
    }
}

void TestReaders::brokenTorchFile()
{
    // torch.save files are read natively (tst_torchfile); these are not ones.
    const QString path = write(QStringLiteral("model.pt"), QByteArray("PK\x03\x04 zip of pickles", 20));
    Problem p;
    QVERIFY(!openTensor(path, &p));
    QVERIFY2(p.message.contains(QLatin1String("not a readable zip archive")), qPrintable(p.message));
    QVERIFY(!openTensor(write(QStringLiteral("notes.pt"), QByteArray("just text")), &p));
    QVERIFY2(p.message.contains(QLatin1String("not a torch.save file")), qPrintable(p.message));
    QVERIFY(!openTensor(m_dir.filePath(QStringLiteral("missing.h5")), &p));
    QVERIFY(p.message.contains(QLatin1String("no such file")));
}

void TestReaders::jaxInspectArray()
{
    // Transformer Engine JAX's inspect_array: raw bytes beside metadata written as text (the probe name
    // unescaped, statistics that may print as nan), dtype as XLA's FFI code (16: BF16, 20: F8E4M3FN).
    std::vector<uint16_t> bf16(6 * 5);
    for (size_t i = 0; i < bf16.size(); ++i)
        bf16[i] = uint16_t(fp8math::floatBits(float(i) * 0.75f - 3.0f) >> 16);
    const QString bin = write(QStringLiteral("my_tensor_gpu3_block_0_out.bin"),
        QByteArray(reinterpret_cast<const char *>(bf16.data()), qsizetype(bf16.size() * 2)));
    write(QStringLiteral("my_tensor_gpu3_block_0_out_meta.json"),
        QByteArray("{\"name\": \"block 0/\"out\"\", \"shape\": [6, 5], \"dtype\": 16, \"min\": -3, \"max\": nan, "
                   "\"mean\": nan, \"std\": inf}"));
    Problem p;
    auto r = openTensor(bin, &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QCOMPARE(r->info().name, QStringLiteral("block 0/\"out\""));
    QCOMPARE(r->info().shape, (std::vector<int64_t> {6, 5}));
    QCOMPARE(int(r->info().dtype), int(DType::BF16));
    std::vector<uint16_t> back(30);
    QVERIFY(r->read(7, 23, back.data() + 7, &p));
    QVERIFY(std::equal(back.begin() + 7, back.end(), bf16.begin() + 7));
    QCOMPARE(listTensors(bin, &p), QStringList {QString()});

    // FP8 codes read as stored (no scale beside them), with the reason.
    write(QStringLiteral("e4m3.bin"), QByteArray("\x38\x40\xb8\x7e", 4));
    write(QStringLiteral("e4m3_meta.json"), QByteArray("{\"shape\": [4], \"dtype\": 20}"));
    r = openTensor(m_dir.filePath(QStringLiteral("e4m3.bin")), &p);
    QVERIFY2(r, qPrintable(p.toString()));
    QCOMPARE(int(r->info().storedDtype), int(DType::F8E4M3));

    // A size that disagrees with the metadata, a dtype not read, no shape: errors naming the file.
    write(QStringLiteral("short.bin"), QByteArray(10, '\0'));
    write(QStringLiteral("short_meta.json"), QByteArray("{\"shape\": [3, 2], \"dtype\": 11}"));
    QVERIFY(!openTensor(m_dir.filePath(QStringLiteral("short.bin")), &p));
    QVERIFY2(p.message.contains(QLatin1String("holds 10 bytes")) && p.message.contains(QLatin1String("says 24")),
        qPrintable(p.message));
    write(QStringLiteral("ints.bin"), QByteArray(8, '\0'));
    write(QStringLiteral("ints_meta.json"), QByteArray("{\"shape\": [2], \"dtype\": 4}"));
    QVERIFY(!openTensor(m_dir.filePath(QStringLiteral("ints.bin")), &p));
    QVERIFY2(p.message.contains(QLatin1String("XLA S32")), qPrintable(p.message));
    QVERIFY(p.file.endsWith(QLatin1String("ints_meta.json")));
    write(QStringLiteral("bad.bin"), QByteArray(8, '\0'));
    write(QStringLiteral("bad_meta.json"), QByteArray("{\"dtype\": 11}"));
    QVERIFY(!openTensor(m_dir.filePath(QStringLiteral("bad.bin")), &p));
    QVERIFY2(p.message.contains(QLatin1String("no \"shape\"")), qPrintable(p.message));
}

void TestReaders::notAFile()
{
    Problem p;
    QVERIFY(!openTensor(m_dir.path(), &p));
    QVERIFY2(p.message.contains(QLatin1String("is a folder")), qPrintable(p.toString()));
    QVERIFY(!openTensor(m_dir.path() + QStringLiteral(":/dataset"), &p));
    QVERIFY2(p.message.contains(QLatin1String("is a folder")), qPrintable(p.toString()));
    QVERIFY(listTensors(m_dir.path(), &p).isEmpty());
    QVERIFY(p.message.contains(QLatin1String("is a folder")));
    // A FIFO must be refused without being opened (opening one for reading waits for a writer).
    const QString fifo = m_dir.filePath(QStringLiteral("pipe.npy"));
    QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
    QVERIFY(!openTensor(fifo, &p));
    QVERIFY2(p.message.contains(QLatin1String("not a regular file")), qPrintable(p.toString()));
    QCOMPARE(p.file, fifo);
}

void TestReaders::hdf5NamesThatAreNotDatasets()
{
    // A group, a dangling soft link and an external link to a missing file each say what they are,
    // instead of "no dataset".
    const QString path = m_dir.filePath(QStringLiteral("links.h5"));
    {
        const hid_t file = H5Fcreate(QFile::encodeName(path).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        QVERIFY(file >= 0);
        const hid_t group = H5Gcreate2(file, "/layers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        QVERIFY(group >= 0);
        H5Gclose(group);
        QVERIFY(H5Lcreate_soft("/missing", file, "/dangling", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        QVERIFY(H5Lcreate_external("elsewhere.h5", "/x", file, "/outside", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        H5Fclose(file);
    }
    const struct {
        const char *name;
        const char *expected;
    } cases[] = {
        {"layers", "'layers' is a group, not a dataset"},
        {"dangling", "'dangling' is a soft link to '/missing'"},
        {"outside", "'outside' is an external link to 'elsewhere.h5:/x'"},
        {"nothing/here", "no dataset 'nothing/here'"},
    };
    for (const auto &c : cases) {
        Problem p;
        QVERIFY(!openTensor(path + QLatin1Char(':') + QLatin1String(c.name), &p));
        QVERIFY2(p.message.contains(QLatin1String(c.expected)), qPrintable(p.toString()));
        QCOMPARE(p.file, path);
    }
}

void TestReaders::dumpPaths()
{
    QString error;
    const auto p
        = parseDumpPath(QStringLiteral("/iter_000120/model.layers.0.self_attention.linear_qkv/activation_fp8"), &error);
    QVERIFY(p);
    QCOMPARE(p->iteration, 120);
    QCOMPARE(p->layer, QStringLiteral("model.layers.0.self_attention.linear_qkv"));
    QCOMPARE(p->tensorKind, QStringLiteral("activation"));
    QVERIFY(p->quantized);
    QVERIFY(!parseDumpPath(QStringLiteral("/iter_12/x/y"), &error));
    QVERIFY(!parseDumpPath(QStringLiteral("/iter_000001/_fp8"), &error));
    QCOMPARE(dumpElementType(StoredClass::UnsignedInteger, 2, QStringLiteral("bfloat16"), {}, {}, &error), DType::BF16);
    QVERIFY(!dumpElementType(StoredClass::UnsignedInteger, 2, {}, {}, {}, &error));
    QCOMPARE(dumpElementType(StoredClass::UnsignedInteger, 1, {}, QStringLiteral("E5M2"), {}, &error), DType::F8E5M2);
    // Transformer Engine's HYBRID: gradients in E5M2, the forward tensors in E4M3.
    const QString hybrid = QStringLiteral("hybrid");
    QCOMPARE(dumpElementType(StoredClass::UnsignedInteger, 1, {}, hybrid,
                 QStringLiteral("/iter_000100/model.layers.0.mlp.fc1/gradient_fp8"), &error),
        DType::F8E5M2);
    QCOMPARE(dumpElementType(StoredClass::UnsignedInteger, 1, {}, hybrid, QStringLiteral("grad_output_fp8"), &error),
        DType::F8E5M2);
    QCOMPARE(dumpElementType(StoredClass::UnsignedInteger, 1, {}, hybrid,
                 QStringLiteral("/iter_000100/model.layers.0.mlp.fc1/activation_fp8"), &error),
        DType::F8E4M3);
    // A layer named after gradients does not make its weight one.
    QCOMPARE(dumpElementType(StoredClass::UnsignedInteger, 1, {}, hybrid,
                 QStringLiteral("/iter_000100/grad_norm.fc/weight_fp8"), &error),
        DType::F8E4M3);
}

QTEST_APPLESS_MAIN(TestReaders)
#include "tst_readers.moc"
