// Transformer Engine's own quantization checked (core/numerics/techeck) on DumpTensors-shaped files a test
// script writes with TE's class paths and reduce forms, old (classmethod) and new (module function, TE 2.15)
// (tests/core/oracles/write_te_quantized.py; TE itself need not be installed): every class quantized as
// NUMERICS.md defines is equal bit for bit, each planted fault (a code, a block scale, a wrong NVFP4 tensor amax)
// is found where it was planted and nowhere else, hostile dumps are refused with why.
#include "core/numerics/techeck.h"
#include "core/tensors/torchfile.h"
#include "testmain.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace fp8scope;

class TestTeCheck : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
        if (python.isEmpty() || !QFile::exists(python))
            QSKIP("no test Python (packaging/install-deps.sh --python-venv build/venv makes one)");
        QVERIFY(m_dir.isValid());
        QProcess p;
        p.start(python,
            {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/write_te_quantized.py"),
                m_dir.path()});
        QVERIFY(p.waitForFinished(600000));
        if (p.exitCode() == 3)
            QSKIP("torch is not importable in the test Python");
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QFile f(path(QStringLiteral("expected.json")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        m_expected = QJsonDocument::fromJson(f.readAll()).object();
        QVERIFY(m_expected.size() >= 15);
    }

    // Every file quantized as the reference defines is equal, every copy it holds compared.
    void correctQuantizationIsEqual()
    {
        int files = 0;
        for (auto it = m_expected.begin(); it != m_expected.end(); ++it) {
            const QJsonObject e = it.value().toObject();
            if (!e.value(QLatin1String("planted")).isNull())
                continue;
            ++files;
            Problem problem;
            const std::optional<TeCheck> c = checkTeQuantized(path(it.key()), {}, &problem);
            QVERIFY2(c, qPrintable(it.key() + QStringLiteral(": ") + problem.message));
            QVERIFY2(c->equal(), qPrintable(it.key() + QStringLiteral(": ") + c->summary()));
            QCOMPARE(c->teClass, e.value(QLatin1String("class")).toString());
            QCOMPARE(int(c->copies.size()), int(e.value(QLatin1String("copies")).toArray().size()));
            for (const TeCopyCheck &copy : c->copies) {
                QVERIFY(copy.codes == c->rows * c->cols);
                QCOMPARE(copy.map.flaggedCount(), int64_t(0));
            }
            QVERIFY(c->summary().contains(QLatin1String("equal")));
        }
        QCOMPARE(files, 11); // four classes, old and new forms, a padded shape, blockwise's oldest form
        // What each class stands for.
        Problem problem;
        QCOMPARE(teRecipe(path(QStringLiteral("mxfp8-new.pt")), {}, &problem)->name(), QStringLiteral("mxfp8"));
        QCOMPARE(teRecipe(path(QStringLiteral("nvfp4-old.pt")), {}, &problem)->name(), QStringLiteral("nvfp4"));
        QCOMPARE(teRecipe(path(QStringLiteral("blockwise2d-new.pt")), {}, &problem)->name(),
            QStringLiteral("block128x128-fp32"));
        QCOMPARE(teRecipe(path(QStringLiteral("blockwise1d-old.pt")), {}, &problem)->name(),
            QStringLiteral("block1x128-fp32"));
        QCOMPARE(teRecipe(path(QStringLiteral("float8-new.pt")), {}, &problem)->name(), QStringLiteral("current"));
    }

    // One code three steps up at (5, 70) of the row-wise copy: found there, by +3, nowhere else.
    void plantedCodeFound()
    {
        for (const auto &[file, row, col, steps] :
            {std::tuple {"mxfp8-badcode.pt", 5, 70, 3}, std::tuple {"float8-badcode.pt", 0, 0, 1}}) {
            Problem problem;
            const std::optional<TeCheck> c = checkTeQuantized(path(QLatin1String(file)), {}, &problem);
            QVERIFY2(c, qPrintable(problem.message));
            QVERIFY(!c->equal());
            const TeCopyCheck &rowwise = c->copies.front();
            QCOMPARE(rowwise.copy, QStringLiteral("rowwise"));
            QCOMPARE(rowwise.codesDiffering, int64_t(1));
            QCOMPARE(rowwise.scalesDiffering, int64_t(0));
            QCOMPARE(rowwise.blocksDiffering, int64_t(1));
            QCOMPARE(rowwise.maxCodeSteps, steps);
            QCOMPARE(rowwise.differences.size(), size_t(1));
            const TeDifference &d = rowwise.differences.front();
            QCOMPARE(int(d.kind), int(TeDifference::Kind::Code));
            QCOMPARE(d.row, int64_t(row));
            QCOMPARE(d.col, int64_t(col));
            QCOMPARE(std::abs(d.by), double(steps));
            QVERIFY(c->copies.back().equal());
            QVERIFY(c->summary().contains(QStringLiteral("first at element (%1, %2)").arg(row).arg(col)));
        }
    }

    // One block scale a binade up, its codes left: the scale of that block differs, by one binade; the codes
    // are the reference's.
    void plantedScaleFound()
    {
        for (const auto &[file, row, col] :
            {std::tuple {"mxfp8-badscale.pt", 9, 2}, std::tuple {"blockwise2d-badscale.pt", 1, 1}}) {
            Problem problem;
            const std::optional<TeCheck> c = checkTeQuantized(path(QLatin1String(file)), {}, &problem);
            QVERIFY2(c, qPrintable(problem.message));
            const TeCopyCheck &rowwise = c->copies.front();
            QCOMPARE(rowwise.scalesDiffering, int64_t(1));
            QCOMPARE(rowwise.codesDiffering, int64_t(0));
            const TeDifference &d = rowwise.differences.front();
            QCOMPARE(int(d.kind), int(TeDifference::Kind::Scale));
            QCOMPARE(d.row, int64_t(row));
            QCOMPARE(d.col, int64_t(col));
            QCOMPARE(d.by, 1.0);
            QCOMPARE(d.te, 2.0 * d.reference);
            QVERIFY(c->copies.back().equal());
        }
    }

    // NVFP4 whose FP32 tensor scale came from an amax 1000 times the tensor's: the stored amax differs, and the
    // map of TE's quantization flags exactly the blocks whose E4M3 scale underflowed (every value lost),
    // ranked first; the other blocks, whose scales survive, are not flagged. The column-wise copy, made with
    // the right amax, is equal.
    void wrongNvfp4TensorScale()
    {
        Problem problem;
        const std::optional<TeCheck> c = checkTeQuantized(path(QStringLiteral("nvfp4-badamax.pt")), {}, &problem);
        QVERIFY2(c, qPrintable(problem.message));
        QCOMPARE(c->tensorScale.size(), size_t(2));
        QCOMPARE(c->tensorScale[0].te, 1000.0 * c->tensorScale[0].reference);
        QCOMPARE(c->tensorScale[1].te, c->tensorScale[1].reference);
        QVERIFY(c->summary().contains(QLatin1String("amax TE stored")));
        const BlockMap &m = c->copies.front().map;
        int64_t zeroScale = 0;
        for (int64_t b = 0; b < m.blocks(); ++b) {
            const bool lostAll = m.scale[size_t(b)] == 0.0f && m.nonzero[size_t(b)] > 0;
            zeroScale += lostAll ? 1 : 0;
            QCOMPARE(m.flagged(b), lostAll);
        }
        QVERIFY(zeroScale > 100);
        QCOMPARE(m.flaggedCount(), zeroScale);
        for (int64_t b : m.ranked(zeroScale))
            QCOMPARE(m.underflowPct(b), 100.0);
        QVERIFY(c->copies.back().equal());
        QCOMPARE(c->copies.back().map.flaggedCount(), int64_t(0));
    }

    // A scale tensor too small for its grid and a storage that holds less than it declares: refused, saying
    // why, with the file.
    void hostileDumpsRefused()
    {
        for (const QString &name :
            {QStringLiteral("hostile-scale-shape.pt"), QStringLiteral("hostile-lying-storage.pt")}) {
            Problem problem;
            QVERIFY(!checkTeQuantized(path(name), {}, &problem));
            const QString why = m_expected.value(name).toObject().value(QLatin1String("refused")).toString();
            QVERIFY2(problem.message.contains(why), qPrintable(problem.message));
            QCOMPARE(problem.file, path(name));
        }
    }

    // The quantized entries of the new (module-function) reduce forms are read as values too, where their
    // class is (NVFP4Tensor is compared, not opened, and says so).
    void newReduceFormsRead()
    {
        for (const char *file : {"float8-new.pt", "mxfp8-new.pt", "blockwise1d-new.pt"}) {
            Problem problem;
            const QStringList names = TorchReader::names(path(QLatin1String(file)), &problem);
            QVERIFY2(names.contains(QStringLiteral("quantized")), file);
        }
        std::vector<TorchRefusal> refused;
        Problem problem;
        TorchReader::names(path(QStringLiteral("nvfp4-new.pt")), &problem, nullptr, &refused);
        QCOMPARE(refused.size(), size_t(1));
        QVERIFY(refused.front().why.contains(QLatin1String("compared")));
        QCOMPARE(teQuantizedEntries(path(QStringLiteral("nvfp4-new.pt")), &problem),
            QStringList {QStringLiteral("quantized")});
    }

private:
    QString path(const QString &name) const { return m_dir.path() + QStringLiteral("/te/") + name; }

    QTemporaryDir m_dir;
    QJsonObject m_expected;
};

FP8SCOPE_TEST_GUILESS_MAIN(TestTeCheck)
#include "tst_techeck.moc"
