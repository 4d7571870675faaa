// The .wandb record framing (core/importers/wandblog) on logs a writer here makes as W&B's does
// (docs/research/wandb-mlflow-formats.md: the header, 32 KiB blocks from the file's first byte, 7-byte chunk
// headers with an IEEE CRC-32 of type and payload, zero trailers, FIRST/MIDDLE/LAST across blocks): records of
// every size read back whole, a log cut at every byte of its last block read up to its last complete record,
// and read on from there; a failing checksum, a lying length, a stray chunk refused at their offset.
// (Logs written by the real wandb package come with the importer, issue 60.)
#include "core/importers/wandblog.h"
#include "testmain.h"
#include "wandbwriter.h"

#include <QDirIterator>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <random>

using namespace fp8scope;
using fp8scope::testing::LogWriter;

namespace {

QByteArray record(int n, int seed)
{
    QByteArray r(n, Qt::Uninitialized);
    std::mt19937 gen(static_cast<unsigned>(seed));
    for (char &c : r)
        c = char(gen() & 0xFF);
    return r;
}

} // namespace

class TestWandbLog : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // Records of every size that matters (empty, small, a block's room exactly, a 7-byte remainder, spanning
    // three blocks) read back whole and in order.
    void recordsReadBack()
    {
        LogWriter w;
        std::vector<QByteArray> written;
        for (int n : {0, 1, 100, 32754 - 107 - 7 * 2, 5, 70000, 32761 - 7, 3, 200000, 12}) {
            written.push_back(record(n, n));
            w.add(written.back());
        }
        QString why;
        QVERIFY(isWandbLogHeader(w.bytes(), &why));
        std::vector<WandbLogRecord> read;
        int64_t end = 0;
        Problem problem;
        QVERIFY2(readWandbLog(w.bytes(), kWandbLogHeaderSize, &read, &end, &problem), qPrintable(problem.message));
        QCOMPARE(read.size(), written.size());
        for (size_t i = 0; i < written.size(); ++i)
            QVERIFY2(read[i].payload == written[i], qPrintable(QString::number(i)));
        QCOMPARE(end, int64_t(w.bytes().size()));
        QCOMPARE(read.front().offset, int64_t(kWandbLogHeaderSize));
    }

    // A log cut at every byte of its last two blocks: the records wholly before the cut, no error; read on
    // from *end with the rest written, the others.
    void cutAtEveryByte()
    {
        LogWriter w;
        std::vector<QByteArray> written;
        for (int i = 0; i < 40; ++i) {
            written.push_back(record(300 + 977 * i % 5000, i));
            w.add(written.back());
        }
        const QByteArray &all = w.bytes();
        for (qsizetype cut = all.size() - 2 * 32768; cut <= all.size(); ++cut) {
            std::vector<WandbLogRecord> read;
            int64_t end = 0;
            Problem problem;
            QVERIFY2(readWandbLog(all.left(cut), kWandbLogHeaderSize, &read, &end, &problem),
                qPrintable(QStringLiteral("cut at %1: %2").arg(cut).arg(problem.message)));
            QVERIFY(end <= cut);
            for (size_t i = 0; i < read.size(); ++i)
                QCOMPARE(read[i].payload, written[i]);
            // Every record that ends before the cut is there.
            size_t whole = 0;
            {
                LogWriter prefix;
                for (const QByteArray &r : written) {
                    prefix.add(r);
                    if (prefix.bytes().size() > cut)
                        break;
                    ++whole;
                }
            }
            QCOMPARE(read.size(), whole);
            if (cut % 4096 == 0) {
                std::vector<WandbLogRecord> rest;
                int64_t end2 = 0;
                QVERIFY(readWandbLog(all, end, &rest, &end2, &problem));
                QCOMPARE(read.size() + rest.size(), written.size());
            }
        }
    }

    // A log the real wandb package writes in offline mode (where the test Python has it): its header, every
    // record framed as read here, the whole file consumed.
    void realWriterLog()
    {
        const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
        if (python.isEmpty() || !QFile::exists(python))
            QSKIP("no test Python");
        QTemporaryDir dir;
        QProcess p;
        p.setWorkingDirectory(dir.path());
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("WANDB_SILENT"), QStringLiteral("true"));
        env.insert(QStringLiteral("WANDB_MODE"), QStringLiteral("offline"));
        p.setProcessEnvironment(env);
        p.start(python,
            {QStringLiteral("-c"),
                QStringLiteral("import sys\ntry:\n    import wandb\nexcept Exception:\n    sys.exit(3)\n"
                               "r = wandb.init(mode='offline', dir=sys.argv[1], project='p', name='fp8-run')\n"
                               "for i in range(3000):\n    r.log({'loss': 3.0 - i * 0.001, 'text': 'x' * (i % 700)})\n"
                               "r.finish()\n"),
                dir.path()});
        QVERIFY(p.waitForFinished(300000));
        if (p.exitCode() == 3)
            QSKIP("wandb is not importable in the test Python");
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QDirIterator it(dir.path(), {QStringLiteral("*.wandb")}, QDir::Files, QDirIterator::Subdirectories);
        QVERIFY(it.hasNext());
        QFile f(it.next());
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray bytes = f.readAll();
        QString why;
        QVERIFY2(isWandbLogHeader(bytes, &why), qPrintable(why));
        std::vector<WandbLogRecord> read;
        int64_t end = 0;
        Problem problem;
        QVERIFY2(readWandbLog(bytes, kWandbLogHeaderSize, &read, &end, &problem),
            qPrintable(QStringLiteral("%1 at %2").arg(problem.message).arg(problem.offset)));
        QCOMPARE(end, int64_t(bytes.size()));
        QVERIFY2(read.size() > 3000, qPrintable(QString::number(read.size()))); // a history record a step, and more
        QVERIFY(bytes.size() > 3 * kWandbLogBlockSize); // records across blocks
    }

    // Refused at their offset: a failing checksum, a length past its block, a middle chunk with no first, a
    // non-zero trailer; the records before each are still handed out. A header of another version is named.
    void hostileChunks()
    {
        LogWriter w;
        w.add(record(50, 1));
        const qsizetype second = w.bytes().size();
        w.add(record(60, 2));
        QByteArray bad = w.bytes();
        bad[second + 10] = char(bad[second + 10] ^ 1); // a payload byte: the CRC fails
        std::vector<WandbLogRecord> read;
        int64_t end = 0;
        Problem problem;
        QVERIFY(!readWandbLog(bad, kWandbLogHeaderSize, &read, &end, &problem));
        QCOMPARE(problem.offset, int64_t(second));
        QVERIFY(problem.message.contains(QLatin1String("checksum")));
        QCOMPARE(read.size(), size_t(1));
        QCOMPARE(end, int64_t(second));

        QByteArray lying = w.bytes();
        lying[second + 4] = char(0xFF);
        lying[second + 5] = char(0x7F); // 32767 bytes in a block with less room
        read.clear();
        QVERIFY(!readWandbLog(lying, kWandbLogHeaderSize, &read, &end, &problem));
        QCOMPARE(problem.offset, int64_t(second));
        QVERIFY(problem.message.contains(QLatin1String("past the end of its block")));

        LogWriter stray;
        stray.chunk(3, record(10, 3));
        read.clear();
        QVERIFY(!readWandbLog(stray.bytes(), kWandbLogHeaderSize, &read, &end, &problem));
        QVERIFY(problem.message.contains(QLatin1String("never begun")));

        QString why;
        QVERIFY(!isWandbLogHeader(QByteArray(":W&B\xe1\xbe\x01", 7), &why));
        QVERIFY(why.contains(QLatin1String("version 1")));
        QVERIFY(!isWandbLogHeader(QByteArray("PK\x03\x04xyz", 7), &why));
    }
};

FP8SCOPE_TEST_APPLESS_MAIN(TestWandbLog)
#include "tst_wandblog.moc"
