// The native torch.save reader against files real torch writes (tests/core/oracles/write_torch_dumps.py in the
// test venv): every value bit for bit, views and shared storages, Transformer Engine's quantized reduce form
// decoded with its scale_inv, a DumpTensors folder indexed under the layers' real names, and hostile files
// refused with their reason while nothing they would run is run.
#include "core/numerics/cpubackend.h"
#include "core/recompute/dumprecompute.h"
#include "core/store/runstore.h"
#include "core/tensors/fp8decode.h"
#include "core/tensors/tensorreader.h"
#include "core/tensors/torchfile.h"
#include "core/tensors/torchpickle.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>

using namespace fp8scope;

class TestTorchFile : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void valuesEqualTorch();
    void listsEveryTensor();
    void quantizedDecodesWithScaleInv();
    void blockwiseDecodesWithScaleInv();
    void dumpTensorsFolderIndexes();
    void hostileFilesAreRefused_data();
    void hostileFilesAreRefused();
    void nothingRan();
    void interpreterNeverCalls();

private:
    QByteArray readFile(const QString &path)
    {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    }
    QByteArray readAll(const QString &spec, const QString &scaleInv, TensorInfo *info = nullptr)
    {
        Problem p;
        auto r = openTensor(spec, &p, scaleInv);
        if (!r) {
            qWarning("%s", qPrintable(p.toString()));
            return {};
        }
        if (info)
            *info = r->info();
        QByteArray bytes(qsizetype(r->info().numel * dtypeSize(r->info().dtype)), Qt::Uninitialized);
        // In uneven pieces, so that reads starting inside a row are exercised.
        int64_t at = 0;
        int64_t piece = 7;
        while (at < r->info().numel) {
            const int64_t n = std::min(piece, r->info().numel - at);
            if (!r->read(at, n, bytes.data() + at * dtypeSize(r->info().dtype), &p)) {
                qWarning("%s", qPrintable(p.toString()));
                return {};
            }
            at += n;
            piece = piece * 3 + 1;
        }
        return bytes;
    }

    QTemporaryDir m_dir;
    QString m_out;
};

void TestTorchFile::initTestCase()
{
    const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        QSKIP("no test Python (packaging/install-deps.sh --python-venv build/venv makes one)");
    m_out = m_dir.path();
    QProcess p;
    p.start(python,
        {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/write_torch_dumps.py"),
            m_out});
    QVERIFY(p.waitForFinished(600000));
    if (p.exitCode() == 3)
        QSKIP("torch is not importable in the test Python");
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
}

void TestTorchFile::valuesEqualTorch()
{
    const QList<QByteArray> lines = readFile(m_out + QStringLiteral("/expected/index.txt")).trimmed().split('\n');
    QCOMPARE(lines.size(), 12);
    for (const QByteArray &line : lines) {
        const QList<QByteArray> parts = line.split(' ');
        QCOMPARE(parts.size(), 3);
        const QString name = QString::fromUtf8(parts[0]);
        TensorInfo info;
        // "none": FP8 codes as stored, so that every tensor's bytes compare with torch's.
        const QByteArray ours = readAll(m_out + QStringLiteral("/plain.pt:") + name, QStringLiteral("none"), &info);
        const QByteArray torch = readFile(m_out + QStringLiteral("/expected/") + name + QStringLiteral(".bin"));
        QVERIFY2(!torch.isEmpty(), qPrintable(name));
        QVERIFY2(
            ours == torch, qPrintable(QStringLiteral("%1: %2 bytes differ from torch's").arg(name).arg(ours.size())));
        QStringList dims;
        for (int64_t d : info.shape)
            dims << QString::number(d);
        QCOMPARE(dims.join(QLatin1Char('x')), QString::fromUtf8(parts[2]));
        const QString dtype = QString::fromUtf8(parts[1]);
        const DType expected = dtype == QLatin1String("float32") ? DType::F32
            : dtype == QLatin1String("float16")                  ? DType::F16
            : dtype == QLatin1String("bfloat16")                 ? DType::BF16
            : dtype == QLatin1String("float8_e4m3fn")            ? DType::F8E4M3
                                                                 : DType::F8E5M2;
        QCOMPARE(int(info.storedDtype), int(expected));
    }
}

void TestTorchFile::listsEveryTensor()
{
    Problem p;
    std::vector<SkippedTensor> skipped;
    const QStringList names = listTensors(m_out + QStringLiteral("/plain.pt"), &p, &skipped);
    QVERIFY2(p.message.isEmpty(), qPrintable(p.message));
    QCOMPARE(names.size(), 12);
    QVERIFY(names.contains(QStringLiteral("views.strided")));
    QVERIFY(names.contains(QStringLiteral("fp8.1.e5m2")));
    QVERIFY(skipped.empty()); // "step" is an int, not a tensor
}

void TestTorchFile::quantizedDecodesWithScaleInv()
{
    const QList<QByteArray> lines = readFile(m_out + QStringLiteral("/expected/te/index.txt")).trimmed().split('\n');
    QCOMPARE(lines.size(), 13);
    int mxfp8 = 0;
    for (const QByteArray &line : lines) {
        const QString rel = QString::fromUtf8(line.split(' ')[0]);
        const QString file = m_out + QStringLiteral("/run/tensor_dumps/") + rel;
        TensorInfo info;
        const QByteArray values = readAll(file + QStringLiteral(":quantized"), QString(), &info);
        QCOMPARE(int(info.dtype), int(DType::F32));
        QCOMPARE(int(info.storedDtype), int(DType::F8E4M3));
        QVERIFY2(info.decoding.contains(QLatin1String("scale_inv")), qPrintable(info.decoding));
        const QByteArray expected = readFile(m_out + QStringLiteral("/expected/te/")
            + QString(rel).replace(QLatin1Char('/'), QLatin1Char('_')) + QStringLiteral(".bin"));
        QVERIFY2(values == expected, qPrintable(rel + QStringLiteral(": ") + info.decoding));
        if (info.decoding.contains(QLatin1String("MXFP8")))
            ++mxfp8;
        // The high-precision entry of the same file reads too, bit for bit.
        const QByteArray hp = readAll(file + QStringLiteral(":high_precision"), QString());
        QVERIFY(!hp.isEmpty());
        QVERIFY(hp
            == readFile(m_out + QStringLiteral("/expected/te/")
                + QString(rel).replace(QLatin1Char('/'), QLatin1Char('_')) + QStringLiteral(".hp.bin")));
    }
    QCOMPARE(mxfp8, 1);
}

void TestTorchFile::blockwiseDecodesWithScaleInv()
{
    // Float8BlockwiseQTensor: 128x128 blocks, 1x128 blocks with the scale grid transposed (as the GEMM takes
    // it), and the older reduce form without the shape and is_2D_scaled.
    const QList<QByteArray> lines = readFile(m_out + QStringLiteral("/expected/blockwise.txt")).trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    for (const QByteArray &line : lines) {
        const QString name = QString::fromUtf8(line.split(' ')[0]);
        TensorInfo info;
        const QByteArray values
            = readAll(m_out + QStringLiteral("/blockwise/") + name + QStringLiteral(".pt:quantized"), QString(), &info);
        QVERIFY2(info.decoding.contains(QLatin1String(line.split(' ')[1])), qPrintable(info.decoding));
        QVERIFY2(values == readFile(m_out + QStringLiteral("/expected/blockwise-") + name + QStringLiteral(".bin")),
            qPrintable(name + QStringLiteral(": ") + info.decoding));
    }
}

void TestTorchFile::dumpTensorsFolderIndexes()
{
    // And a JAX inspect_array dump beside them, indexed under its probe's name.
    {
        QFile bin(m_out + QStringLiteral("/run/my_tensor_gpu0_attn_out.bin"));
        QFile meta(m_out + QStringLiteral("/run/my_tensor_gpu0_attn_out_meta.json"));
        QVERIFY(bin.open(QIODevice::WriteOnly) && meta.open(QIODevice::WriteOnly));
        const float values[4] = {1.0f, -2.0f, 0.5f, 8.0f};
        bin.write(reinterpret_cast<const char *>(values), sizeof(values));
        meta.write("{\"name\": \"attn.out\", \"shape\": [2, 2], \"dtype\": 11, \"min\": -2, \"max\": 8}");
    }
    RunStore store;
    QString error;
    QVERIFY2(store.open(m_out + QStringLiteral("/run"), &error), qPrintable(error));
    const IngestReport report = store.ingest();
    QCOMPARE(report.filesFailed, 0);
    for (const ProblemRecord &p : store.problems())
        QFAIL(qPrintable(QStringLiteral("%1: %2").arg(p.file, p.message)));
    const auto runs = store.runs();
    QCOMPARE(runs.size(), size_t(1));
    const auto dumps = store.dumps(runs.front().id);
    // 2 ranks x 3 iterations x 2 files x 2 entries, the MXFP8 file's 2 and the JAX dump.
    QCOMPARE(dumps.size(), size_t(27));
    QSet<QString> layers;
    QSet<qint64> steps;
    int quantized = 0;
    for (const DumpRow &d : dumps) {
        if (d.file.endsWith(QLatin1String(".bin"))) {
            QCOMPARE(d.dump.layer, QStringLiteral("attn.out"));
            QCOMPARE(d.dump.shape, QStringLiteral("2x2"));
            continue;
        }
        layers.insert(d.dump.layer);
        steps.insert(d.dump.step);
        if (d.dump.tensor.endsWith(QLatin1String("_fp8"))) {
            ++quantized;
            QCOMPARE(d.dump.dtype, dtypeName(DType::F8E4M3));
        }
    }
    // The real names (with their dots), not the sanitized ones; "model.layers.1" is a prefix of another
    // layer's name and must not take its files.
    QCOMPARE(layers,
        (QSet<QString> {QStringLiteral("model.layers.0.self_attention.linear_qkv"),
            QStringLiteral("model.layers.1.mlp.linear_fc2")}));
    QCOMPARE(steps, (QSet<qint64> {10, 20, 30}));
    QCOMPARE(quantized, 13);

    // Recompute reads a .pt dump: the metrics of the high-precision entry land in the store under the real
    // layer name, and the quantized entry recomputes from its decoded values.
    const Recipe current = *Recipe::parse(QStringLiteral("current"), std::nullopt, nullptr);
    CpuBackend backend(1);
    int recomputed = 0;
    for (const DumpRow &d : dumps) {
        if (d.dump.step != 20 || d.dump.layer != QLatin1String("model.layers.0.self_attention.linear_qkv"))
            continue;
        QString why;
        const auto m = recomputeDump(store, backend, {runs.front().id, d.file, d.dump}, {current}, &why);
        QVERIFY2(m, qPrintable(why));
        QCOMPARE(m->front().numel, qint64(16 * 64));
        QVERIFY(m->front().amax > 0);
        ++recomputed;
    }
    QCOMPARE(recomputed, 4); // two ranks x (high_precision, quantized)
    const auto series = store.findSeries(runs.front().id,
        {QStringLiteral("model.layers.0.self_attention.linear_qkv"), QStringLiteral("activation"), {},
            QStringLiteral("recomputed"), {}});
    QVERIFY(!series.empty());

    // Without the debug tool's log the names stay as the file has them, and the store says so.
    RunStore unnamed;
    QVERIFY2(unnamed.open(m_out + QStringLiteral("/unnamed"), &error), qPrintable(error));
    unnamed.ingest();
    const auto problems = unnamed.problems();
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY2(problems.front().message.contains(QLatin1String("no nvdlfw_inspect_logs"))
            && problems.front().message.contains(QLatin1String("decoder_layers_3_fc1")),
        qPrintable(problems.front().message));
    const auto unnamedDumps = unnamed.dumps(unnamed.runs().front().id);
    QCOMPARE(unnamedDumps.size(), size_t(1));
    QCOMPARE(unnamedDumps.front().dump.layer, QStringLiteral("decoder_layers_3_fc1"));
    QCOMPARE(unnamedDumps.front().dump.tensor, QStringLiteral("activation"));
    QCOMPARE(unnamedDumps.front().dump.step, 5);
}

void TestTorchFile::hostileFilesAreRefused_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("entry"); // the entry refused ("" when the whole file is)
    QTest::addColumn<QString>("reason");
    QTest::addColumn<bool>("goodReads"); // high_precision still reads
    QTest::newRow("os.system") << "system"
                               << "quantized"
                               << "posix.system" << true;
    QTest::newRow("builtins.eval") << "eval"
                                   << "quantized"
                                   << "__builtin__.eval" << true;
    QTest::newRow("subprocess.Popen") << "popen"
                                      << "quantized"
                                      << ".Popen" << true; // pickle writes it as commands.Popen
    QTest::newRow("unknown class") << "unknown"
                                   << "quantized"
                                   << "__main__.Unknown" << true;
    QTest::newRow("getattr of os") << "getattr"
                                   << "quantized"
                                   << "posix.system" << true;
    QTest::newRow("storage outside") << "outside"
                                     << "high_precision"
                                     << "not in the archive" << false;
    QTest::newRow("huge size") << "huge"
                               << "high_precision"
                               << "fewer than" << false;
    QTest::newRow("compressed") << "compressed"
                                << "high_precision"
                                << "compressed" << false;
    QTest::newRow("deep nesting") << "deep"
                                  << ""
                                  << "nested deeper than 32" << false;
    QTest::newRow("truncated") << "truncated"
                               << ""
                               << "zip" << false;
    QTest::newRow("legacy") << "legacy"
                            << ""
                            << "legacy torch.save format" << false;
}

void TestTorchFile::hostileFilesAreRefused()
{
    QFETCH(QString, file);
    QFETCH(QString, entry);
    QFETCH(QString, reason);
    QFETCH(bool, goodReads);
    const QString path = m_out + QStringLiteral("/hostile/") + file + QStringLiteral(".pt");
    Problem p;
    std::vector<TorchRefusal> refused;
    const QStringList names = TorchReader::names(path, &p, nullptr, &refused);
    QString said = p.message;
    for (const TorchRefusal &r : refused) {
        if (r.name == entry || entry.isEmpty())
            said += r.why;
    }
    QVERIFY2(said.contains(reason), qPrintable(said));
    QCOMPARE(names.contains(QStringLiteral("high_precision")), goodReads);
    if (!entry.isEmpty()) {
        auto reader = openTensor(path + QLatin1Char(':') + entry, &p);
        QVERIFY(!reader);
        QVERIFY2(p.message.contains(reason), qPrintable(p.message));
    }
    if (goodReads) {
        const QByteArray good = readAll(path + QStringLiteral(":high_precision"), QString());
        QCOMPARE(good.size(), 32);
        QCOMPARE(reinterpret_cast<const float *>(good.constData())[7], 7.0f);
    }
}

void TestTorchFile::nothingRan()
{
    // Every hostile pickle would have created OUTDIR/pwned-NAME had any of it been run.
    QCOMPARE(QDir(m_out).entryList({QStringLiteral("pwned*")}), QStringList());
}

void TestTorchFile::interpreterNeverCalls()
{
    // A hand-written pickle: os.system("x") as a call, REDUCE of a refused global, then STOP; and opcodes
    // torch never writes (INST, OBJ, EXT) are errors naming the opcode.
    auto bytes = [](const auto &literal) { return QByteArray(literal, qsizetype(sizeof(literal) - 1)); };
    torchpickle::Program program;
    QString error;
    int64_t offset = 0;
    QVERIFY(program.run(bytes("\x80\x02"
                              "cos\nsystem\n"
                              "X\x01\x00\x00\x00x"
                              "\x85"
                              "R."),
        &error, &offset));
    QCOMPARE(int(program.at(program.root()).kind), int(torchpickle::Kind::Refused));
    QVERIFY(program.at(program.root()).text.contains(QLatin1String("os.system")));
    QVERIFY(!program.run(bytes("\x80\x02(ios\nsystem\n."), &error, &offset));
    QVERIFY2(error.contains(QLatin1String("'i'")), qPrintable(error));
    QCOMPARE(offset, 3);
    QVERIFY(!program.run(bytes("\x80\x02]"), &error, &offset));
    QVERIFY(error.contains(QLatin1String("without STOP")));
    QVERIFY(!program.run(bytes("\x80\x02h\x05."), &error, &offset));
    QVERIFY(error.contains(QLatin1String("never stored")));
}

QTEST_GUILESS_MAIN(TestTorchFile)
#include "tst_torchfile.moc"
