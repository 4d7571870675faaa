// tools/pt2safetensors.py end to end: .pt files written by torch.save become safetensors that fp8scope
// reads with the same bytes, a run folder indexes them, and a pickle that would run code is refused without
// running it. Needs the test Python (torch, safetensors); skips without it.
#include "core/store/runstore.h"
#include "core/tensors/tensorreader.h"

#include <QDir>
#include <QFile>
#include <QMap>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace fp8scope;

class TestPt2Safetensors : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void convertsEveryReadableTensor();
    void refusesAndReports();
    void runFolderIndexesTheConversion();

private:
    struct Run {
        int code;
        QString out;
        QString err;
    };
    Run tool(const QStringList &args)
    {
        QProcess p;
        p.start(m_python,
            QStringList {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tools/pt2safetensors.py")}
                + args);
        p.waitForFinished(300000);
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1,
            QString::fromUtf8(p.readAllStandardOutput()), QString::fromUtf8(p.readAllStandardError())};
    }
    QString path(const QString &name) const { return m_dir.filePath(name); }

    QTemporaryDir m_dir;
    QString m_python;
};

void TestPt2Safetensors::initTestCase()
{
    m_python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
    if (m_python.isEmpty() || !QFile::exists(m_python))
        QSKIP("no test Python (packaging/install-deps.sh --python-venv build/venv makes one)");
    QProcess p;
    p.start(m_python,
        {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/write_pt.py"),
            m_dir.path()});
    QVERIFY(p.waitForFinished(300000));
    if (p.exitCode() == 3)
        QSKIP("torch or safetensors is not importable in the test Python");
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
}

void TestPt2Safetensors::convertsEveryReadableTensor()
{
    const QString pt = path(QStringLiteral("run/iter_000100.pt"));
    const Run r = tool({pt});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString out = path(QStringLiteral("run/iter_000100.safetensors"));
    QVERIFY2(r.out.startsWith(pt + QStringLiteral(" -> ") + out + QStringLiteral(": 7 tensors\n")), qPrintable(r.out));
    QVERIFY(r.out.contains(QLatin1String("note: model.layers.0.fc1.bias: float64 rounded to float32")));
    QVERIFY(r.out.contains(QLatin1String("skipped: model.steps (int64)")));
    QVERIFY(r.out.contains(QLatin1String("skipped: model.mask (bool)")));
    QVERIFY(r.out.contains(QLatin1String("skipped: iteration (int, not a tensor)")));

    // Every kept tensor reads back with the bytes torch had (float64 rounded once, to float32).
    QFile namesFile(path(QStringLiteral("expected/names.txt")));
    QVERIFY(namesFile.open(QIODevice::ReadOnly));
    const QStringList names = QString::fromUtf8(namesFile.readAll()).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(names.size(), 7);
    Problem problem;
    QStringList listed = listTensors(out, &problem);
    QVERIFY2(problem.message.isEmpty(), qPrintable(problem.toString()));
    listed.sort();
    QStringList sorted = names;
    sorted.sort();
    QCOMPARE(listed, sorted);
    for (const QString &name : names) {
        auto reader = openTensor(out + QLatin1Char(':') + name, &problem);
        QVERIFY2(reader, qPrintable(problem.toString()));
        QFile bin(path(QStringLiteral("expected/") + name + QStringLiteral(".bin")));
        QFile shape(path(QStringLiteral("expected/") + name + QStringLiteral(".shape")));
        QVERIFY(bin.open(QIODevice::ReadOnly) && shape.open(QIODevice::ReadOnly));
        const QByteArray want = bin.readAll();
        QStringList dims;
        for (int64_t d : reader->info().shape)
            dims << QString::number(d);
        QCOMPARE(dims.join(QLatin1Char('x')), QString::fromUtf8(shape.readAll()));
        QByteArray got(qsizetype(reader->info().numel) * dtypeSize(reader->info().dtype), '\0');
        QVERIFY2(reader->read(0, reader->info().numel, got.data(), &problem), qPrintable(problem.toString()));
        QVERIFY2(got == want, qPrintable(name));
    }
    auto f8 = openTensor(out + QStringLiteral(":f8"), &problem);
    QCOMPARE(f8->info().dtype, DType::F8E4M3);
    auto emb = openTensor(out + QStringLiteral(":model.emb.weight"), &problem);
    QCOMPARE(emb->info().dtype, DType::BF16);

    // The output is not replaced unless asked.
    const Run again = tool({pt});
    QCOMPARE(again.code, 1);
    QVERIFY2(again.err.contains(QLatin1String("iter_000100.safetensors exists (--force replaces it)")),
        qPrintable(again.err));
    QCOMPARE(tool({QStringLiteral("--force"), pt}).code, 0);

    // A legacy (non-zip) file with a bare tensor, to a chosen name.
    const QString legacyOut = path(QStringLiteral("legacy-out.safetensors"));
    const Run legacy = tool({QStringLiteral("--out"), legacyOut, path(QStringLiteral("legacy.pt"))});
    QVERIFY2(legacy.code == 0, qPrintable(legacy.err));
    auto bare = openTensor(legacyOut, &problem);
    QVERIFY2(bare, qPrintable(problem.toString()));
    QCOMPARE(bare->info().name, QStringLiteral("tensor"));
    QCOMPARE(bare->info().dtype, DType::F16);
    QCOMPARE(bare->info().numel, 3);
}

void TestPt2Safetensors::refusesAndReports()
{
    // A pickle that would create a file when loaded: refused by the restricted unpickler, nothing runs.
    const Run evil = tool(
        {path(QStringLiteral("evil.pt")), path(QStringLiteral("nothing.pt")), path(QStringLiteral("missing.pt"))});
    QCOMPARE(evil.code, 1);
    QVERIFY2(evil.err.contains(path(QStringLiteral("evil.pt"))
                 + QStringLiteral(": torch.load(weights_only=True) refused it: "
                                  "Unsupported global")),
        qPrintable(evil.err));
    QVERIFY(!QFile::exists(path(QStringLiteral("pwned"))));
    QVERIFY(!QFile::exists(path(QStringLiteral("evil.safetensors"))));
    QVERIFY(!QFile::exists(path(QStringLiteral("evil.safetensors.part"))));
    // One line per failed file, and the other files are still tried.
    QVERIFY(evil.err.contains(path(QStringLiteral("nothing.pt"))
        + QStringLiteral(": holds no tensor fp8scope can read: skipped x (int, not a tensor)")));
    QVERIFY(evil.err.contains(path(QStringLiteral("missing.pt")) + QStringLiteral(": no such file")));
    QCOMPARE(evil.err.count(QLatin1Char('\n')), 3);
    // --out names one output, so it takes one input.
    const Run usage = tool({QStringLiteral("--out"), path(QStringLiteral("x.safetensors")),
        path(QStringLiteral("legacy.pt")), path(QStringLiteral("nothing.pt"))});
    QCOMPARE(usage.code, 2);
    QVERIFY(usage.err.contains(QLatin1String("--out takes one input file")));
}

void TestPt2Safetensors::runFolderIndexesTheConversion()
{
    // The run folder holds the .pt and, after convertsEveryReadableTensor, its conversion.
    QVERIFY(QFile::exists(path(QStringLiteral("run/iter_000100.safetensors"))));
    RunStore store;
    QString error;
    QVERIFY2(store.open(path(QStringLiteral("run")), &error), qPrintable(error));
    store.ingest();
    const auto runs = store.runs();
    QCOMPARE(runs.size(), size_t(1));
    const auto dumps = store.dumps(runs.front().id);
    // The .pt is read natively too (its pickle interpreted, never run): the same 7 tensors from each file.
    QCOMPARE(dumps.size(), size_t(14));
    QMap<QString, QStringList> byFile;
    for (const auto &[file, d] : dumps) {
        QCOMPARE(d.step, 100);
        byFile[file] << d.layer + QLatin1Char('/') + d.tensor;
    }
    QCOMPARE(
        byFile.keys(), (QStringList {QStringLiteral("iter_000100.pt"), QStringLiteral("iter_000100.safetensors")}));
    QStringList pt = byFile.value(QStringLiteral("iter_000100.pt"));
    QStringList st = byFile.value(QStringLiteral("iter_000100.safetensors"));
    pt.sort();
    st.sort();
    QCOMPARE(pt, st);
    QVERIFY(pt.contains(QStringLiteral("model.layers.0.fc1/weight")));
    for (const ProblemRecord &p : store.problems())
        QFAIL(qPrintable(QStringLiteral("%1: %2").arg(p.file, p.message)));
}

QTEST_GUILESS_MAIN(TestPt2Safetensors)
#include "tst_pt2safetensors.moc"
