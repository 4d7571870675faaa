// FP8 casts against PyTorch's CPU float8 conversions (torch from PyPI, test-only) on a million random
// values with exact ties, zeros, subnormals and infinities, for E4M3, E5M2 and the FNUZ variants.
#include "core/formats/fp8math.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace fp8scope::fp8math;

class TestTorchOracle : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void castsMatchTorch_data();
    void castsMatchTorch();

private:
    QTemporaryDir m_dir;
    QByteArray m_inputs;
};

void TestTorchOracle::initTestCase()
{
    const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        QSKIP("no test Python (packaging/install-deps.sh --python-venv build/venv makes one)");
    QProcess p;
    p.start(python,
        {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/torch_casts.py"),
            m_dir.path()});
    QVERIFY(p.waitForFinished(600000));
    if (p.exitCode() == 3)
        QSKIP("torch is not importable in the test Python");
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    QFile f(m_dir.filePath(QStringLiteral("inputs.f32")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    m_inputs = f.readAll();
    QVERIFY(m_inputs.size() >= 4 * 100000);
}

void TestTorchOracle::castsMatchTorch_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("format");
    QTest::newRow("e4m3") << QStringLiteral("e4m3") << int(Format::E4M3);
    QTest::newRow("e5m2") << QStringLiteral("e5m2") << int(Format::E5M2);
    QTest::newRow("e4m3fnuz") << QStringLiteral("e4m3fnuz") << int(Format::E4M3FNUZ);
    QTest::newRow("e5m2fnuz") << QStringLiteral("e5m2fnuz") << int(Format::E5M2FNUZ);
}

void TestTorchOracle::castsMatchTorch()
{
    QFETCH(QString, name);
    QFETCH(int, format);
    QFile f(m_dir.filePath(name + QStringLiteral(".u8")));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray codes = f.readAll();
    const qsizetype n = m_inputs.size() / 4;
    QCOMPARE(codes.size(), n);
    const float *x = reinterpret_cast<const float *>(m_inputs.constData());
    qsizetype compared = 0;
    for (qsizetype i = 0; i < n; ++i) {
        const uint32_t expected = uchar(codes[i]);
        const uint32_t ours = castToCode(x[i], Format(format));
        if (ours != expected)
            QFAIL(qPrintable(QStringLiteral("x=%1 (0x%2): ours 0x%3, torch 0x%4")
                                 .arg(double(x[i]), 0, 'g', 9)
                                 .arg(floatBits(x[i]), 8, 16, QLatin1Char('0'))
                                 .arg(ours, 2, 16)
                                 .arg(expected, 2, 16)));
        ++compared;
    }
    QCOMPARE(compared, n);
}

QTEST_APPLESS_MAIN(TestTorchOracle)
#include "tst_torchoracle.moc"
