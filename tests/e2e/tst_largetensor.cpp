// Streaming: a 4 GiB float32 tensor (a sparse .npy file) goes through `fp8scope-cli stats` with a peak
// resident memory under 512 MiB, and its metrics come out right.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <sys/resource.h>

class TestLargeTensor : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void fourGiBUnder512MiB();
};

void TestLargeTensor::fourGiBUnder512MiB()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("big.npy"));
    const qint64 elements = qint64(1) << 30; // 4 GiB of float32
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        QByteArray header("{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }");
        while ((10 + header.size() + 1) % 64 != 0)
            header.append(' ');
        header.append('\n');
        QByteArray magic("\x93NUMPY\x01\x00", 8);
        magic.append(char(header.size() & 0xFF));
        magic.append(char(header.size() >> 8));
        f.write(magic + header);
        // A few non-zero values at the start and the very end; the rest is a hole that reads as zeros.
        const float head[4] = {1.0f, -2.0f, 1e-9f, 300.0f};
        f.write(reinterpret_cast<const char *>(head), sizeof head);
        const qint64 dataStart = 10 + header.size();
        QVERIFY(f.resize(dataStart + elements * 4));
        QVERIFY(f.seek(dataStart + (elements - 1) * 4));
        const float last = -4.0f;
        f.write(reinterpret_cast<const char *>(&last), 4);
    }
    QProcess p;
    p.start(qEnvironmentVariable("FP8SCOPE_CLI"),
        {QStringLiteral("stats"), path, QStringLiteral("--recipe"), QStringLiteral("current"),
            QStringLiteral("--json")});
    QVERIFY(p.waitForFinished(600000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    struct rusage usage {
    };
    getrusage(RUSAGE_CHILDREN, &usage);
    const double peakMiB = double(usage.ru_maxrss) / 1024.0;
    qInfo("peak resident memory of fp8scope-cli on a 4 GiB tensor: %.1f MiB", peakMiB);
    QVERIFY2(peakMiB < 512.0, qPrintable(QStringLiteral("peak RSS %1 MiB").arg(peakMiB)));
    const QJsonObject m
        = QJsonDocument::fromJson(p.readAllStandardOutput()).object().value(QStringLiteral("metrics")).toObject();
    QCOMPARE(m.value(QStringLiteral("numel")).toDouble(), double(elements));
    QCOMPARE(m.value(QStringLiteral("zeros")).toDouble(), double(elements - 5));
    QCOMPARE(m.value(QStringLiteral("amax")).toDouble(), 300.0);
    // scale 448/300: 1e-9 * 1.49 is below E4M3's smallest subnormal, so exactly one value underflows.
    QCOMPARE(m.value(QStringLiteral("underflow_pct")).toDouble(), 100.0 / double(elements));
}

QTEST_GUILESS_MAIN(TestLargeTensor)
#include "tst_largetensor.moc"
