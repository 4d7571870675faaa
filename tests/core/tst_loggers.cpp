// W&B offline runs and MLflow stores read natively (issue 60): runs written by the real wandb and mlflow packages
// in the test Python (tests/core/oracles/write_loggers.py, whose values follow formulas this test knows) read into
// a store: runs named (W&B's id where two share a name; MLflow's short id likewise), every step's values, config
// keys, precision inferred, the console's Megatron lines, versions, groups; a .wandb cut at every byte of its last
// block read up to its last complete record; a run being written followed; damaged chunks and foreign files said
// at their offset or line.
#include "core/importers/folderscanner.h"
#include "core/importers/mlflowimporters.h"
#include "core/importers/wandbimporter.h"
#include "core/importers/wandblog.h"
#include "core/query/catalog.h"
#include "core/query/pairing.h"
#include "core/store/runstore.h"
#include "folderfixture.h"
#include "testmain.h"
#include "wandbwriter.h"

#include <QDirIterator>
#include <QElapsedTimer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <cmath>
#include <map>

using namespace fp8scope;
using namespace fp8scope::testing;

namespace {

double loss(int64_t step, double offset)
{
    return 5.0 - 0.001 * double(step) + offset;
}

// Runs the writer; "" when it ran, else why the test skips (no Python, the package missing).
QString runWriter(const QString &kind, const QString &out)
{
    const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        return QStringLiteral("no test Python (FP8SCOPE_TEST_PYTHON)");
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("WANDB_SILENT"), QStringLiteral("true"));
    env.insert(QStringLiteral("WANDB_MODE"), QStringLiteral("offline"));
    p.setProcessEnvironment(env);
    p.setWorkingDirectory(out);
    p.start(python,
        {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/write_loggers.py"), kind,
            out});
    if (!p.waitForFinished(600000))
        return QStringLiteral("the writer did not finish");
    if (p.exitCode() == 3)
        return QStringLiteral("%1 is not importable in the test Python").arg(kind);
    if (p.exitCode() != 0)
        qFatal("writer failed: %s", p.readAllStandardError().constData());
    return {};
}

// What an importer hands over, counted.
class CollectingSink : public IngestSink
{
public:
    void useRun(const QString &) override { }
    int64_t series(const SeriesKey &key) override
    {
        names.push_back(key.source + QLatin1Char(':') + key.stat);
        return int64_t(names.size()) - 1;
    }
    void point(int64_t s, int64_t step, double value, double) override { points[names[size_t(s)]][step] = value; }
    void eval(const EvalRecord &) override { }
    void config(const QString &, const QString &) override { }
    void version(const QString &, const QString &) override { }
    void runInfo(const QString &, const QString &) override { }
    void dump(const DumpRecord &) override { }
    void problem(int64_t, int64_t offset, const QString &message) override { problems.emplace_back(offset, message); }

    std::vector<QString> names;
    std::map<QString, std::map<int64_t, double>> points;
    std::vector<std::pair<int64_t, QString>> problems;
};

// A history record (Record field 2) of items {nested_key: key, value_json: json}.
QByteArray historyRecord(const std::vector<std::pair<QByteArray, QByteArray>> &items)
{
    QByteArray history;
    for (const auto &[key, json] : items)
        history += field(1, field(2, key) + field(16, json));
    return field(2, history);
}

// A raw console record (Record field 13: output_raw, its line field 3).
QByteArray consoleRecord(const QByteArray &text)
{
    return field(13, varint(1 << 3) + varint(1) + field(3, text));
}

QString configOf(const RunStore &store, const QString &run, const QString &key)
{
    const auto r = store.run(run);
    if (!r)
        return QStringLiteral("<no run>");
    for (const KeyValueRow &row : store.configs(r->id)) {
        if (row.key == key)
            return row.value;
    }
    return QStringLiteral("<none>");
}

QString versionOf(const RunStore &store, const QString &run, const QString &package)
{
    const auto r = store.run(run);
    for (const KeyValueRow &row : r ? store.versions(r->id) : std::vector<KeyValueRow>()) {
        if (row.key == package)
            return row.value;
    }
    return {};
}

QString theLog(const QString &dir, const QString &id)
{
    QDirIterator it(dir, {QStringLiteral("run-%1.wandb").arg(id)}, QDir::Files, QDirIterator::Subdirectories);
    return it.hasNext() ? it.next() : QString();
}

} // namespace

class TestLoggers : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_wandb;
    QString m_wandbSkip;

    // The W&B runs, written once for the tests that read them.
    QString wandbRuns()
    {
        static bool written = false;
        if (!written) {
            written = true;
            m_wandbSkip = runWriter(QStringLiteral("wandb"), m_wandb.path());
        }
        return m_wandbSkip;
    }

private Q_SLOTS:
    // Three offline runs in wandb/ (two named alike, read as their ids), beside W&B's latest-run link: each a run
    // with every step of every key, its config, its precision, its console's Megatron lines and arguments, its
    // versions and group; the media said once; files/ copies not read again.
    void realWandbRuns()
    {
        if (const QString skip = wandbRuns(); !skip.isEmpty())
            QSKIP(qPrintable(skip));
        QTemporaryDir copy;
        QVERIFY(QProcess::execute(
                    QStringLiteral("cp"), {QStringLiteral("-a"), m_wandb.path() + QStringLiteral("/."), copy.path()})
            == 0);
        RunStore store;
        QString error;
        QVERIFY2(store.open(copy.path(), &error), qPrintable(error));
        const IngestReport report = store.ingest();
        QCOMPARE(report.filesFailed, 0);
        QStringList names;
        for (const RunInfo &r : store.runs())
            names << r.name;
        QCOMPARE(
            names, QStringList({QStringLiteral("bf16aaa1"), QStringLiteral("bf16bbb2"), QStringLiteral("llama-fp8")}));

        const SeriesKey trainLoss {
            QString(), QString(), QStringLiteral("train/loss"), QStringLiteral("wandb"), QString()};
        const SeriesKey gradNorm {
            QString(), QString(), QStringLiteral("grad/norm"), QStringLiteral("wandb"), QString()};
        const SeriesKey spiky {QString(), QString(), QStringLiteral("spiky"), QStringLiteral("wandb"), QString()};
        for (int64_t step = 0; step < 3000; step += 10) {
            QCOMPARE(pointAt(store, QStringLiteral("llama-fp8"), trainLoss, step), loss(step, 0.01));
            QCOMPARE(pointAt(store, QStringLiteral("llama-fp8"), gradNorm, step), 1.0 + double(step) / 1000.0);
        }
        QCOMPARE(pointAt(store, QStringLiteral("bf16bbb2"), trainLoss, 490), loss(490, 0.02));
        QCOMPARE(pointAt(store, QStringLiteral("bf16aaa1"), trainLoss, 490), loss(490, 0.0));
        QVERIFY(std::isnan(pointAt(store, QStringLiteral("llama-fp8"), spiky, 30)));
        QCOMPARE(pointAt(store, QStringLiteral("llama-fp8"), spiky, 40), INFINITY);
        // The summary's own key, at the last step.
        QCOMPARE(
            pointAt(store, QStringLiteral("llama-fp8"),
                {QString(), QString(), QStringLiteral("eval/accuracy"), QStringLiteral("wandb-summary"), QString()},
                3000), // the table's row, the last
            0.51);
        // The console: Megatron's iteration lines and arguments block.
        const SeriesKey lmLoss {
            QString(), QString(), QStringLiteral("lm loss"), QStringLiteral("megatron-log"), QString()};
        for (int64_t step = 0; step < 3000; step += 500)
            QCOMPARE(pointAt(store, QStringLiteral("llama-fp8"), lmLoss, step),
                std::stod(QString::number(loss(step, 0.01), 'E', 6).toStdString()));
        QCOMPARE(configOf(store, QStringLiteral("llama-fp8"), QStringLiteral("fp8_format")), QStringLiteral("hybrid"));
        // The config, flattened as any JSON config.
        QCOMPARE(
            configOf(store, QStringLiteral("llama-fp8"), QStringLiteral("optimizer.lr")), QStringLiteral("0.0003"));
        QCOMPARE(
            configOf(store, QStringLiteral("llama-fp8"), QStringLiteral("optimizer.betas[1]")), QStringLiteral("0.95"));
        QCOMPARE(configOf(store, QStringLiteral("bf16aaa1"), QStringLiteral("precision")), QStringLiteral("bf16"));
        QCOMPARE(configOf(store, QStringLiteral("bf16aaa1"), QStringLiteral("_wandb")), QStringLiteral("<none>"));
        // Precision and recipe inferred from the config; versions; the group.
        const auto fp8 = store.run(QStringLiteral("llama-fp8"));
        QCOMPARE(fp8->precision, QStringLiteral("fp8"));
        QCOMPARE(fp8->recipe, QStringLiteral("mxfp8"));
        QCOMPARE(fp8->group, QStringLiteral("llama-sweep"));
        QCOMPARE(store.run(QStringLiteral("bf16aaa1"))->precision, QStringLiteral("bf16"));
        QVERIFY(!versionOf(store, QStringLiteral("llama-fp8"), QStringLiteral("python")).isEmpty());
        QVERIFY(!versionOf(store, QStringLiteral("llama-fp8"), QStringLiteral("wandb")).isEmpty());
        // Media and text said once each, never series.
        const QStringList problems = problemTexts(store);
        QCOMPARE(problems.filter(QStringLiteral("table-file")).size(), 1);
        QCOMPARE(problems.filter(QStringLiteral("not numbers")).size(), 3); // "note", one a run
        for (const RunInfo &r : store.runs()) {
            for (const SeriesInfo &s : store.series(r.id))
                QVERIFY2(!s.key.stat.startsWith(QLatin1String("samples")) && s.key.stat != QLatin1String("note"),
                    qPrintable(s.key.stat));
        }
        // files/output.log is the console the log holds: not read again, nor listed as a file left unread.
        // wandb/latest-run, a second way to the newest run's folder, is read as that folder and said as no loop.
        QVERIFY2(report.unrecognised.filter(QStringLiteral("files/")).size() == 1, // the table's media
            qPrintable(report.unrecognised.join(QLatin1Char(' '))));
        QCOMPARE(report.unreadable.size(), size_t(1));
        QCOMPARE(report.unreadable.front().first, QStringLiteral("wandb/latest-run"));
        QVERIFY2(report.unreadable.front().second.contains(QLatin1String("read here already"))
                && !report.unreadable.front().second.contains(QLatin1String("loop")),
            qPrintable(report.unreadable.front().second));
    }

    // A log cut at every byte of its last block: every complete record before the cut read (its history rows),
    // none after; where the read stops is the end of the last complete record.
    void cutAtEveryByteOfItsLastBlock()
    {
        if (const QString skip = wandbRuns(); !skip.isEmpty())
            QSKIP(qPrintable(skip));
        QFile source(theLog(m_wandb.path(), QStringLiteral("bf16aaa1")));
        QVERIFY(source.open(QIODevice::ReadOnly));
        const QByteArray whole = source.readAll();
        QVERIFY(whole.size() > kWandbLogBlockSize); // a last block after a whole one
        // The records and where they end, and which are history rows (one train/loss point each).
        std::vector<std::pair<int64_t, int64_t>> historyRecords; // start, end
        int64_t endOfLast = 0;
        std::vector<Problem> damage;
        int64_t previousEnd = kWandbLogHeaderSize;
        std::vector<int64_t> ends; // of every record
        QVERIFY(scanWandbLog(
            whole, kWandbLogHeaderSize,
            [&](int64_t offset, QByteArrayView payload) {
                // A history record is field 2 of Record: its tag byte 0x12 leads the payload after `num` (field 1).
                int64_t end = offset;
                int64_t at = offset, left = payload.size();
                while (left > 0) { // the record's end: its chunks' headers and payloads, past block trailers
                    const int64_t blockEnd = (at / kWandbLogBlockSize + 1) * kWandbLogBlockSize;
                    if (blockEnd - at < kWandbLogHeaderSize) {
                        at = blockEnd;
                        continue;
                    }
                    const int64_t n = std::min<int64_t>(left, blockEnd - at - kWandbLogHeaderSize);
                    at += kWandbLogHeaderSize + n;
                    left -= n;
                    end = at;
                }
                if (payload.size() == 0)
                    end = offset + kWandbLogHeaderSize;
                // A history row: Record's field 2 (tag 0x12) after its number (field 1, a varint).
                qsizetype i = 0;
                if (i < payload.size() && payload[i] == 0x08) {
                    for (++i; i < payload.size() && (uint8_t(payload[i]) & 0x80); ++i) { }
                    ++i;
                }
                if (i < payload.size() && payload[i] == 0x12 && payload.contains(QByteArrayView("train/loss")))
                    historyRecords.emplace_back(offset, end);
                previousEnd = end;
                ends.push_back(end);
                return true;
            },
            &endOfLast, &damage));
        QCOMPARE(endOfLast, int64_t(whole.size()));
        QCOMPARE(previousEnd, int64_t(whole.size()));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("run-x.wandb"));
        write(path, whole);
        const int64_t lastBlock = (int64_t(whole.size()) - 1) / kWandbLogBlockSize * kWandbLogBlockSize;
        // Each cut read on from the last record that ends before the last block (as a grown log is read), the
        // whole log from its start.
        int64_t readFrom = kWandbLogHeaderSize;
        for (const int64_t e : ends) {
            if (e <= lastBlock)
                readFrom = std::max(readFrom, e);
        }
        WandbImporter importer;
        for (int64_t cut = whole.size(); cut >= lastBlock; --cut) {
            QVERIFY(QFile::resize(path, cut));
            CollectingSink sink;
            const int64_t from = cut == whole.size() ? kWandbLogHeaderSize : readFrom;
            ReadPosition position;
            position.offset = from;
            const ReadPosition end = importer.read(path, position, sink);
            int64_t expectedRows = 0, expectedEnd = from;
            for (const auto &[start, stop] : historyRecords) {
                if (start >= from && stop <= cut) {
                    ++expectedRows;
                    expectedEnd = std::max(expectedEnd, stop);
                }
            }
            const auto &rows = sink.points[QStringLiteral("wandb:train/loss")];
            QVERIFY2(int64_t(rows.size()) == expectedRows,
                qPrintable(
                    QStringLiteral("cut at %1: %2 rows, %3 expected").arg(cut).arg(rows.size()).arg(expectedRows)));
            QVERIFY2(end.offset >= expectedEnd && end.offset <= cut,
                qPrintable(QStringLiteral("cut at %1: read to %2").arg(cut).arg(end.offset)));
            for (const auto &[offset, message] : sink.problems) // a cut is a log being written, not damage
                QVERIFY2(offset < 0, qPrintable(message));
        }
    }

    // A run still being written (its log growing record by record), read as it grows: each ingest reads on from
    // where the last stopped and ends up with what one read of the whole log gives.
    void runBeingWrittenFollowed()
    {
        if (const QString skip = wandbRuns(); !skip.isEmpty())
            QSKIP(qPrintable(skip));
        QFile source(theLog(m_wandb.path(), QStringLiteral("fp8aaaa1")));
        QVERIFY(source.open(QIODevice::ReadOnly));
        const QByteArray whole = source.readAll();
        QTemporaryDir dir;
        const QString log
            = dir.filePath(QStringLiteral("wandb/offline-run-20261205_000000-fp8aaaa1/run-fp8aaaa1.wandb"));
        RunStore store;
        QString error;
        QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
        const SeriesKey trainLoss {
            QString(), QString(), QStringLiteral("train/loss"), QStringLiteral("wandb"), QString()};
        const SeriesKey lmLoss {
            QString(), QString(), QStringLiteral("lm loss"), QStringLiteral("megatron-log"), QString()};
        // W&B writes a console line and its newline as two records: the offsets of the newlines' records (an
        // output_raw record, field 13, whose last field is its line, field 3, "\n").
        std::vector<int64_t> newlines;
        int64_t stop = 0;
        std::vector<Problem> damage;
        scanWandbLog(
            whole, kWandbLogHeaderSize,
            [&](int64_t offset, QByteArrayView payload) {
                if (payload.contains(QByteArrayView("\x6a", 1)) && payload.endsWith(QByteArrayView("\x1a\x01\n", 3)))
                    newlines.push_back(offset);
                return true;
            },
            &stop, &damage);
        QVERIFY(newlines.size() > 100);
        // Cuts inside a record, and between a line and its newline: what a writer between two writes leaves.
        const std::vector<int64_t> cuts {int64_t(double(whole.size()) * 0.2) - 3, newlines[newlines.size() * 2 / 5],
            int64_t(double(whole.size()) * 0.6) - 3, newlines[newlines.size() * 4 / 5], int64_t(whole.size())};
        int resumed = 0;
        for (const int64_t cut : cuts) {
            write(log, whole.left(qsizetype(cut)));
            const IngestReport r = store.ingest();
            QCOMPARE(r.filesFailed, 0);
            resumed += r.filesResumed;
        }
        QVERIFY2(resumed >= 3, qPrintable(QString::number(resumed))); // read on, not again from the start
        const auto run = store.run(QStringLiteral("llama-fp8"));
        QVERIFY(run);
        for (int64_t step = 0; step < 3000; step += 10)
            QCOMPARE(pointAt(store, QStringLiteral("llama-fp8"), trainLoss, step), loss(step, 0.01));
        // The console lines split between reads are read once, whole.
        for (int64_t step = 0; step < 3000; step += 10)
            QVERIFY(pointAt(store, QStringLiteral("llama-fp8"), lmLoss, step) > 0);
        QCOMPARE(configOf(store, QStringLiteral("llama-fp8"), QStringLiteral("fp8_format")), QStringLiteral("hybrid"));
        // The summary's mirror of the history rows read in a later read is no series of its own.
        QStringList summaryKeys;
        for (const SeriesInfo &s : store.series(run->id)) {
            if (s.key.source == QLatin1String("wandb-summary"))
                summaryKeys << s.key.stat;
        }
        QCOMPARE(summaryKeys, QStringList({QStringLiteral("eval/accuracy")}));
        QVERIFY2(problemTexts(store).filter(QStringLiteral("cut short")).isEmpty(),
            qPrintable(problemTexts(store).join(QLatin1Char('\n'))));
    }

    // A damaged chunk inside a real log: said at its offset, the records of the next blocks read on; a chunk
    // whose payload is no Record said and skipped; a file that is no W&B log said at offset 0.
    void damagedLogsSaid()
    {
        if (const QString skip = wandbRuns(); !skip.isEmpty())
            QSKIP(qPrintable(skip));
        QFile source(theLog(m_wandb.path(), QStringLiteral("fp8aaaa1")));
        QVERIFY(source.open(QIODevice::ReadOnly));
        QByteArray bytes = source.readAll();
        QVERIFY(bytes.size() > 3 * kWandbLogBlockSize);
        const qsizetype damageAt = qsizetype(kWandbLogBlockSize) + 1000; // inside the second block
        bytes[damageAt] = char(bytes[damageAt] ^ 0x5A);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("run-x.wandb"));
        write(path, bytes);
        CollectingSink sink;
        WandbImporter().read(path, {}, sink);
        const auto damage = std::find_if(sink.problems.begin(), sink.problems.end(),
            [](const auto &p) { return p.second.contains(QLatin1String("next block")); });
        QVERIFY(damage != sink.problems.end());
        const auto &[offset, message] = *damage;
        QVERIFY2(offset > kWandbLogBlockSize && offset <= damageAt, qPrintable(QString::number(offset)));
        QVERIFY2(message.contains(QLatin1String("checksum")) || message.contains(QLatin1String("past the end"))
                || message.contains(QLatin1String("never begun")) || message.contains(QLatin1String("unknown type")),
            qPrintable(message));
        const auto &rows = sink.points[QStringLiteral("wandb:train/loss")];
        QVERIFY(rows.count(0) == 1 && rows.count(2990) == 1); // before the damage and blocks after it
        QVERIFY(rows.size() > 250 && rows.size() < 300); // a block's worth lost

        LogWriter w;
        w.add(QByteArray("\xff\xff\xff", 3)); // no protobuf
        write(path, w.bytes());
        CollectingSink junk;
        WandbImporter().read(path, {}, junk);
        QCOMPARE(junk.problems.size(), size_t(1));
        QCOMPARE(junk.problems.front().first, int64_t(kWandbLogHeaderSize));
        QVERIFY(junk.problems.front().second.contains(QLatin1String("no W&B Record")));

        write(path, QByteArray(":W&B\xe1\xbe\x01rest", 11));
        CollectingSink other;
        WandbImporter().read(path, {}, other);
        QCOMPARE(other.problems.size(), size_t(1));
        QVERIFY(other.problems.front().second.contains(QLatin1String("version 1")));
    }

    // Hostile records within bounds: a _step past int64_t's range (a row's step then follows the last), a
    // console line that never ends (a carriage return first, then 3 MiB without one: dropped, not kept), a
    // history row of 20,000 media objects (checked in time linear in its keys).
    void hostileRecordsWithinBounds()
    {
        LogWriter w;
        w.add(historyRecord({{"_step", "5"}, {"loss", "1.5"}}));
        w.add(historyRecord({{"_step", "1e300"}, {"loss", "2.5"}}));
        w.add(historyRecord({{"_step", "-Infinity"}, {"loss", "3.5"}}));
        w.add(consoleRecord("\r"));
        for (int i = 0; i < 100; ++i)
            w.add(consoleRecord(QByteArray(30000, 'A')));
        w.add(consoleRecord("\n iteration        9/      10 | lm loss: 4.000000E+00 |\n"));
        QByteArray media;
        for (int i = 0; i < 20000; ++i) {
            const QByteArray key = "img" + QByteArray::number(i);
            media += field(1, field(2, key) + field(2, "_type") + field(16, "\"image-file\""));
            media += field(1, field(2, key) + field(2, "width") + field(16, "64"));
        }
        w.add(field(
            2, media + field(1, field(2, "_step") + field(16, "20")) + field(1, field(2, "acc") + field(16, "0.5"))));
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("run-x.wandb"));
        write(path, w.bytes());
        CollectingSink sink;
        QElapsedTimer clock;
        clock.start();
        WandbImporter().read(path, {}, sink);
        const auto &loss = sink.points[QStringLiteral("wandb:loss")];
        QCOMPARE(loss.size(), size_t(3));
        QCOMPARE(loss.at(5), 1.5);
        QCOMPARE(loss.at(6), 2.5); // the step past int64_t's range: the next after 5
        QCOMPARE(loss.at(7), 3.5);
        QCOMPARE(sink.points[QStringLiteral("wandb:acc")].at(20), 0.5);
        QCOMPARE(sink.points[QStringLiteral("megatron-log:lm loss")].at(9), 4.0); // the line after the endless one
        for (const QString &name : sink.names)
            QVERIFY2(!name.contains(QLatin1String("img")), qPrintable(name));
        QVERIFY2(clock.elapsed() < 60000, qPrintable(QString::number(clock.elapsed()))); // not quadratic
    }

    // W&B runs named by their names, their ids where two share a name, their paths where two share that: the
    // opened folder's own run too, never an empty name.
    void runsNamedApart()
    {
        QTemporaryDir dir;
        const QString exp = dir.filePath(QStringLiteral("exp"));
        write(exp + QStringLiteral("/train.log"), " iteration        1/      10 | lm loss: 4.000000E+00 |\n");
        const auto log = [&](const QString &folder, const QByteArray &id, const QByteArray &name) {
            LogWriter w;
            w.add(field(17, field(1, id) + field(8, name)));
            write(exp + QLatin1Char('/') + folder + QStringLiteral("/run-") + QString::fromLatin1(id)
                    + QStringLiteral(".wandb"),
                w.bytes());
        };
        log(QStringLiteral("wandb/offline-run-1-exp"), "exp", "exp"); // its name and id the opened folder's
        log(QStringLiteral("wandb/offline-run-2-ab12"), "ab12", "same");
        log(QStringLiteral("wandb/offline-run-3-cd34"), "cd34", "same");
        log(QStringLiteral("wandb/offline-run-4-ef56"), "ef56", "alone");
        const FolderScan scan = scanFolder(exp);
        QStringList names;
        for (const ScannedFile &f : scan.files)
            names << f.run;
        names.sort();
        QCOMPARE(names,
            QStringList({QStringLiteral("ab12"), QStringLiteral("alone"), QStringLiteral("cd34"),
                QStringLiteral("exp (top level)"), QStringLiteral("wandb/offline-run-1-exp")}));
    }

    // MLflow's SQLite store and file store as MLflow 3 writes them: each run named, its experiment its group,
    // every step (NaN and infinity as such), params as config, tags, notes, precision inferred; a deleted run
    // left out; a run still logging (more steps in the SQLite store, a line appended in the file store) followed.
    void realMlflowStores()
    {
        QTemporaryDir dir;
        if (const QString skip = runWriter(QStringLiteral("mlflow"), dir.path()); !skip.isEmpty())
            QSKIP(qPrintable(skip));
        RunStore store;
        QString error;
        QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
        const IngestReport report = store.ingest();
        QCOMPARE(report.filesFailed, 0);
        QStringList names;
        for (const RunInfo &r : store.runs())
            names << r.name + QLatin1Char('@') + r.group;
        QCOMPARE(names,
            QStringList({QStringLiteral("bf16-ref@llama"), QStringLiteral("fp8-mx@llama"),
                QStringLiteral("fs-bf16@llama-fs"), QStringLiteral("fs-fp8@llama-fs")}));
        for (const QString &run : {QStringLiteral("fp8-mx"), QStringLiteral("fs-fp8")}) {
            const SeriesKey trainLoss {
                QString(), QString(), QStringLiteral("train/loss"), QStringLiteral("mlflow"), QString()};
            const SeriesKey gradNorm {
                QString(), QString(), QStringLiteral("grad_norm"), QStringLiteral("mlflow"), QString()};
            for (int64_t step = 0; step < 1000; step += 10)
                QCOMPARE(pointAt(store, run, trainLoss, step), loss(step, 0.01));
            QVERIFY(std::isnan(pointAt(store, run, gradNorm, 30)));
            QCOMPARE(pointAt(store, run, gradNorm, 40), INFINITY);
            QCOMPARE(pointAt(store, run, gradNorm, 50), 1.05);
            QCOMPARE(configOf(store, run, QStringLiteral("lr")), QStringLiteral("0.0003"));
            QCOMPARE(configOf(store, run, QStringLiteral("tag.team")), QStringLiteral("numerics"));
            QCOMPARE(configOf(store, run, QStringLiteral("mlflow.runName")), QStringLiteral("<none>"));
            const auto r = store.run(run);
            QCOMPARE(r->precision, QStringLiteral("fp8"));
            QCOMPARE(r->notes, run + QStringLiteral(" notes"));
        }
        QCOMPARE(store.run(QStringLiteral("fs-bf16"))->precision, QStringLiteral("bf16"));
        {
            // Each FP8 run's baseline: the only BF16 run of its experiment (two are open).
            Catalog catalog;
            QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
            for (const auto &[run, baseline] : {std::pair(QStringLiteral("fp8-mx"), QStringLiteral("bf16-ref")),
                     std::pair(QStringLiteral("fs-fp8"), QStringLiteral("fs-bf16"))}) {
                const Pairing p = catalog.pairing(catalog.findRun(run)->ref);
                QCOMPARE(basisName(p.basis), QStringLiteral("group"));
                QCOMPARE(catalog.run(p.baseline)->name, baseline);
                QVERIFY2(p.reason.contains(QLatin1String("the only one of its group")), qPrintable(p.reason));
            }
        }
        QVERIFY(!store.run(QStringLiteral("discarded")));
        QCOMPARE(problemTexts(store).filter(QStringLiteral("deleted")).size(), 2); // one a store

        // Still logging: ten more steps in the SQLite store; a line appended to a file-store metric.
        QVERIFY(runWriter(QStringLiteral("more"), dir.path()).isEmpty());
        QDirIterator it(dir.path() + QStringLiteral("/mlruns"), {QStringLiteral("train")}, QDir::Dirs,
            QDirIterator::Subdirectories);
        QString fsMetric;
        while (it.hasNext()) {
            const QString d = it.next();
            if (mlflowRunName(QFileInfo(d).absolutePath() + QStringLiteral("/../meta.yaml")).name
                == QLatin1String("fs-fp8"))
                fsMetric = d + QStringLiteral("/loss");
        }
        QVERIFY(QFile::exists(fsMetric));
        write(fsMetric, QByteArrayLiteral("1796478401394 0.25 5000\n"), true);
        const IngestReport again = store.ingest();
        QCOMPARE(again.filesFailed, 0);
        const SeriesKey trainLoss {
            QString(), QString(), QStringLiteral("train/loss"), QStringLiteral("mlflow"), QString()};
        QCOMPARE(pointAt(store, QStringLiteral("fp8-mx"), trainLoss, 1090), loss(1090, 0.01));
        QCOMPARE(pointAt(store, QStringLiteral("fs-fp8"), trainLoss, 5000), 0.25);

        // The experiment renamed: its runs' group follows.
        const QString experimentMeta = QFileInfo(fsMetric).absolutePath() + QStringLiteral("/../../../meta.yaml");
        QFile meta(experimentMeta);
        QVERIFY(meta.open(QIODevice::ReadOnly));
        QByteArray text = meta.readAll();
        meta.close();
        QVERIFY(text.contains("name: llama-fs"));
        write(experimentMeta, text.replace("name: llama-fs", "name: llama-fs-renamed"));
        QCOMPARE(store.ingest().filesFailed, 0);
        QCOMPARE(store.run(QStringLiteral("fs-fp8"))->group, QStringLiteral("llama-fs-renamed"));
    }

    // Foreign and damaged MLflow files: an SQLite file with other tables said and not read; a metric file's
    // unreadable line said with its line; the runs named by their short id where two share a name.
    void mlflowHostileAndClashing()
    {
        QTemporaryDir dir;
        const QString run1 = dir.filePath(QStringLiteral("mlruns/1/aaaaaaaa11112222/"));
        const QString run2 = dir.filePath(QStringLiteral("mlruns/1/bbbbbbbb33334444/"));
        write(dir.filePath(QStringLiteral("mlruns/1/meta.yaml")),
            "artifact_location: file:///x\nexperiment_id: '1'\nlifecycle_stage: active\nname: sweep\n");
        for (const QString &run : {run1, run2}) {
            const QString id = QFileInfo(run.chopped(1)).fileName();
            write(run + QStringLiteral("meta.yaml"),
                QStringLiteral("experiment_id: '1'\nlifecycle_stage: active\nrun_id: %1\nrun_name: same\nstatus: 1\n")
                    .arg(id)
                    .toUtf8());
            write(run + QStringLiteral("metrics/loss"), "1 2.5 0\n2 oops 10\n3 2.25 20\n");
            write(run + QStringLiteral("params/precision"), "bf16");
        }
        {
            // An SQLite file of another program.
            sqlite3 *db = nullptr;
            QCOMPARE(
                sqlite3_open(QFile::encodeName(dir.filePath(QStringLiteral("other.db"))).constData(), &db), SQLITE_OK);
            QCOMPARE(sqlite3_exec(db, "CREATE TABLE runs(x); INSERT INTO runs VALUES(1);", nullptr, nullptr, nullptr),
                SQLITE_OK);
            sqlite3_close(db);
        }
        RunStore store;
        QString error;
        QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
        store.ingest();
        QStringList names;
        for (const RunInfo &r : store.runs())
            names << r.name;
        QCOMPARE(names, QStringList({QStringLiteral("aaaaaaaa"), QStringLiteral("bbbbbbbb")}));
        const SeriesKey lossKey {QString(), QString(), QStringLiteral("loss"), QStringLiteral("mlflow"), QString()};
        QCOMPARE(pointAt(store, QStringLiteral("aaaaaaaa"), lossKey, 20), 2.25);
        QCOMPARE(pointAt(store, QStringLiteral("aaaaaaaa"), lossKey, 10), -3e300); // the unreadable line
        const QStringList problems = problemTexts(store);
        QCOMPARE(problems.filter(QStringLiteral("meta.yaml:0: metrics/loss, line 2: unreadable: 2 oops 10")).size(), 2);
        QCOMPARE(problems.filter(QStringLiteral("other.db:0: an SQLite file that is no MLflow store")).size(), 1);
    }
};

FP8SCOPE_TEST_APPLESS_MAIN(TestLoggers)
#include "tst_loggers.moc"
