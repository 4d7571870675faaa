// Runs that blow up, written as Megatron-LM and Transformer Engine write them (issue 54): Megatron's training_log
// lines (an interval whose iterations were all skipped prints its loss as 0.000000E+00 and no grad norm), TE's
// statistics with nan and inf, one file a rank. The triage must call a blow-up a departure (early or mid-run by
// the tracking rule), name the first non-finite value (step, rank, layer, tensor), count the recoveries of a run
// that went back to a checkpoint, and leave a loss-scale warm-up's skipped steps alone.
#include "core/analysis/triage.h"
#include "core/query/catalog.h"
#include "core/report/triagereport.h"
#include "core/store/runstore.h"
#include "core/storeaccess.h"

#include "blowuppair.h"
#include "testmain.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <functional>
#include <random>
#include <thread>

using namespace fp8scope;
using namespace fp8scope::analysis;
using namespace fp8scope::testdata;

namespace {

const Finding *findingOf(const std::vector<Finding> &findings, FindingKind kind)
{
    for (const Finding &f : findings) {
        if (f.kind == kind)
            return &f;
    }
    return nullptr;
}

QString describe(const std::vector<Finding> &findings)
{
    QStringList out;
    for (const Finding &f : findings)
        out << QStringLiteral("%1 %2: %3").arg(severityName(f.severity), findingKindName(f.kind), f.summary);
    return out.join(QLatin1Char('\n'));
}

// A pair of Megatron logs in `dir` (bf16/ the baseline of fp8/), read and triaged: its one comparison.
std::optional<Comparison> triagedPair(const QString &dir, const QByteArray &baselineLog, const QByteArray &runLog)
{
    writeWorkspace(dir);
    Catalog catalog;
    QString error;
    if (!writeFile(dir + QStringLiteral("/bf16/train.log"), baselineLog)
        || !writeFile(dir + QStringLiteral("/fp8/train.log"), runLog) || !testing::openAndIngest(dir, &catalog, &error))
        return std::nullopt;
    const TriageResult result = triage(catalog);
    if (result.comparisons.size() != 1)
        return std::nullopt;
    return result.comparisons.front();
}

} // namespace

class TestBlowUp : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // Megatron's skipped interval is a gap, not a point at 0; TE's nan and inf are kept as they are; the store
    // finds the first non-finite value of each series from a step on.
    void nonFiniteStepsAreData()
    {
        QTemporaryDir dir;
        QByteArray log;
        std::mt19937 rng(1);
        for (int64_t step = 10; step <= 100; step += 10)
            log += megatronLine(step, 1000, lossAt(step, rng), 1.0, step == 50 ? kInterval : 0, 0);
        // Versions before 2024 printed no loss at all for such an interval.
        log += " iteration      110/    1000 | loss scale: 1.0 | number of skipped iterations:  10 | number of nan "
               "iterations:   0 |\n";
        QVERIFY(writeFile(dir.filePath(QStringLiteral("run/train.log")), log));
        writeTeStats(dir.filePath(QStringLiteral("run")), 1, 100,
            [](int, int l, const QByteArray &t, const QByteArray &s, int64_t step) {
                return l == 1 && t == "gradient" && s == "overflows%" && step >= 70 ? (step == 70 ? INFINITY : NAN)
                                                                                    : 0.25;
            });
        Catalog catalog;
        QString error;
        QVERIFY2(testing::openAndIngest(dir.path(), &catalog, &error), qPrintable(error));
        const std::vector<Run> runs = catalog.runs();
        QCOMPARE(int(runs.size()), 1);
        const auto loss = catalog.chooseSeries(runs.front().ref, {.stat = QStringLiteral("lm loss")});
        QVERIFY(loss);
        const StepSeries s = catalog.stepSeries(*loss);
        QCOMPARE(int(s.size()), 11);
        for (size_t i = 0; i < s.size(); ++i) {
            const bool gap = s.steps[i] == 50 || s.steps[i] == 110;
            QVERIFY2(gap ? std::isnan(s.values[i]) : s.values[i] > 2.0,
                qPrintable(QStringLiteral("step %1: %2").arg(s.steps[i]).arg(s.values[i])));
        }
        // The first non-finite value of each series, from step 0 and from step 60 on.
        std::vector<NonFinitePoint> all = catalog.firstNonFinite(runs.front().ref);
        std::sort(all.begin(), all.end(), [](const auto &a, const auto &b) { return a.step < b.step; });
        QCOMPARE(int(all.size()), 2);
        QCOMPARE(all[0].series.stat, QStringLiteral("lm loss"));
        QCOMPARE(all[0].step, int64_t(50));
        QCOMPARE(all[1].series.layer, QStringLiteral("decoder.layers.1.mlp.linear_fc1"));
        QCOMPARE(all[1].series.tensor, QStringLiteral("gradient"));
        QCOMPARE(all[1].series.stat, QStringLiteral("overflows%"));
        QCOMPARE(all[1].step, int64_t(70));
        QVERIFY(std::isinf(all[1].value) && all[1].value > 0);
        std::vector<NonFinitePoint> late = catalog.firstNonFinite(runs.front().ref, 80);
        std::sort(late.begin(), late.end(), [](const auto &a, const auto &b) { return a.step < b.step; });
        QCOMPARE(int(late.size()), 2);
        QCOMPARE(late[0].step, int64_t(80)); // the gradient's nan after its inf
        QVERIFY(std::isnan(late[0].value));
        QCOMPARE(late[1].step, int64_t(110)); // the old Megatron's loss-less line
    }

    // An FP8 run of 8 pipeline ranks tracks its baseline, then rank 5's layer 11 gradient turns inf one interval
    // before every rank's gradients turn nan, and from the next interval on every update is skipped.
    void blowUpAfterTracking_data()
    {
        QTest::addColumn<int64_t>("planned");
        QTest::addColumn<int64_t>("blowUp");
        QTest::addColumn<QString>("verdict");
        // 3 % of a long plan: mid-run by tracking (it stayed within the band after the loss's fall), not by the plan.
        QTest::newRow("mid-run") << int64_t(200000) << int64_t(6000) << QStringLiteral("mid-run-instability");
        QTest::newRow("in the first steps") << int64_t(20000) << int64_t(60) << QStringLiteral("early-divergence");
    }
    void blowUpAfterTracking()
    {
        QFETCH(int64_t, planned);
        QFETCH(int64_t, blowUp);
        QFETCH(QString, verdict);
        QTemporaryDir dir;
        const int64_t turnsAt = blowUp - 2 * kInterval;
        writeBlowUpPair(dir.path(), planned, blowUp);
        Catalog catalog;
        QString error;
        QVERIFY2(testing::openAndIngest(dir.path(), &catalog, &error), qPrintable(error));
        const TriageResult result = triage(catalog);
        QCOMPARE(int(result.comparisons.size()), 1);
        const Comparison &c = result.comparisons.front();
        qInfo("%s", qPrintable(describe(c.findings)));
        QVERIFY2(verdictName(c.verdict) == verdict,
            qPrintable(verdictName(c.verdict) + QLatin1Char('\n') + describe(c.findings)));
        QCOMPARE(c.departure, std::optional<int64_t>(blowUp));
        const Finding *b = findingOf(c.findings, FindingKind::RunBlowUp);
        QVERIFY2(b, qPrintable(describe(c.findings)));
        QCOMPARE(b->severity, Severity::Critical);
        QCOMPARE(b->step, std::optional<int64_t>(blowUp));
        QVERIFY2(b->evidence.contains(QStringLiteral("class")), qPrintable(b->summary));
        const QString why
            = b->evidence.value(QStringLiteral("class")).toObject().value(QStringLiteral("why")).toString();
        QVERIFY2(why.contains(verdict == QLatin1String("mid-run-instability") ? QLatin1String("it tracked its baseline")
                                                                              : QLatin1String("never tracked")),
            qPrintable(why));
        const Finding *first = findingOf(c.findings, FindingKind::FirstNonFinite);
        QVERIFY2(first, qPrintable(describe(c.findings)));
        QCOMPARE(first->severity, Severity::Critical);
        QCOMPARE(first->step, std::optional<int64_t>(turnsAt));
        QCOMPARE(first->layer, QStringLiteral("decoder.layers.11.mlp.linear_fc1"));
        QCOMPARE(first->tensor, QStringLiteral("gradient"));
        QCOMPARE(first->evidence.value(QStringLiteral("rank")).toInt(), 5);
        QCOMPARE(first->evidence.value(QStringLiteral("value")).toString(), QStringLiteral("inf"));
        // Its precursor: its overflows% rose over the intervals before (the underflows% that turned with it is the
        // same tensor at the same step, named after it).
        QVERIFY2(first->evidence.value(QStringLiteral("before")).toObject().value(QStringLiteral("stat")).toString()
                == QStringLiteral("overflows%"),
            qPrintable(first->summary));
        // The first suspect of the verdict; the loss's own departure does not stand before it.
        QVERIFY(!c.suspects.empty());
        QCOMPARE(c.suspects.front().kind, FindingKind::FirstNonFinite);
        // Its heatmap across ranks marks the cells that were not finite, each with its rank: rank 5's layer 11 first.
        const Heatmap h = catalog.matrix(
            c.run, {.stat = QStringLiteral("overflows%"), .tensor = QStringLiteral("gradient"), .source = kRanksMax});
        QCOMPARE(h.source, kRanksMax);
        QCOMPARE(h.layers.size(), 16);
        const qsizetype row = h.layers.indexOf(QStringLiteral("decoder.layers.11.mlp.linear_fc1"));
        QVERIFY(row >= 0);
        size_t firstColumn = h.steps.size(), marked = 0;
        for (const Heatmap::NonFiniteCell &cell : h.nonFinite) {
            QVERIFY(std::isnan(h.at(cell.layer, cell.step))); // a mark, never a colour
            if (h.steps[cell.step] == turnsAt) {
                QCOMPARE(cell.layer, row); // only rank 5's layer 11 at the first step
                QCOMPARE(cell.rank, 5);
                QVERIFY(std::isinf(cell.value));
            }
            firstColumn = std::min(firstColumn, cell.step);
            ++marked;
        }
        QCOMPARE(h.steps[firstColumn], turnsAt);
        // Every layer from the next interval to the end (42 intervals), and layer 11 one more before.
        QCOMPARE(marked, size_t(16 * 42 + 1));
        // The report says the blow-up where the loss would have been judged against the band, and has the first
        // non-finite value; never that the loss stays within the band.
        report::TriageReportOptions options;
        options.hashFiles = false;
        const std::optional<report::Document> doc
            = report::buildTriageReport(catalog, c.baseline, c.run, nullptr, options, &error);
        QVERIFY2(doc, qPrintable(error));
        const QString text = report::documentText(*doc).join(QLatin1Char('\n'));
        QVERIFY2(text.contains(QStringLiteral("Blow-up at step %1").arg(blowUp)), qPrintable(text.left(2000)));
        QVERIFY(text.contains(QStringLiteral("The run blows up at step %1").arg(blowUp)));
        QVERIFY(text.contains(QLatin1String("the first non-finite value: decoder.layers.11.mlp.linear_fc1")));
        QVERIFY2(!text.contains(QLatin1String("stays within the baseline's band")), qPrintable(text.left(3000)));
        // No point at 0: the skipped intervals' losses are no losses (NaN), never 0 below the baseline's.
        const auto fp8 = catalog.findRun(QStringLiteral("fp8"));
        QVERIFY(fp8);
        const auto loss = catalog.chooseSeries(fp8->ref, {.stat = QStringLiteral("lm loss")});
        QVERIFY(loss);
        const StepSeries s = catalog.stepSeries(*loss);
        for (size_t i = 0; i < s.size(); ++i)
            QVERIFY2(s.steps[i] < blowUp ? s.values[i] > 1.0 : std::isnan(s.values[i]),
                qPrintable(QStringLiteral("step %1: %2").arg(s.steps[i]).arg(s.values[i])));
    }

    // A healthy FP16-style pair whose run skips the first iterations while the loss scaler finds its scale (one
    // whole interval, then part of the next): not a divergence, nothing to look at.
    void warmUpSkipsAreNotABlowUp()
    {
        QTemporaryDir dir;
        std::mt19937 rng(1);
        QByteArray log;
        for (int64_t step = kInterval; step <= 4000; step += kInterval) {
            const int skipped = step == 10 ? kInterval : step == 20 ? 3 : 0;
            log += megatronLine(step, 4000, lossAt(step, rng), 1.2, skipped, 0, step <= 20 ? 65536.0 : 32768.0);
        }
        const std::optional<Comparison> pair = triagedPair(dir.path(), megatronLog(1, 4000, 4000, std::nullopt), log);
        QVERIFY(pair);
        const Comparison &c = *pair;
        QVERIFY2(
            c.verdict == Verdict::None, qPrintable(verdictName(c.verdict) + QLatin1Char('\n') + describe(c.findings)));
        QVERIFY(!c.departure);
        QVERIFY(!findingOf(c.findings, FindingKind::RunBlowUp));
        QVERIFY(!findingOf(c.findings, FindingKind::FirstNonFinite));
        for (const Finding &f : c.findings)
            QVERIFY2(f.severity == Severity::Info, qPrintable(describe(c.findings)));
    }

    // Followed live, an FP16 run whose log so far ends in its loss scaler's warm-up (two whole intervals skipped,
    // its loss scale halving): not a blow-up, nothing critical for a watcher to stop the job on.
    void liveWarmUpIsNotABlowUp()
    {
        QTemporaryDir dir;
        writeWorkspace(dir.path());
        QVERIFY(writeFile(dir.filePath(QStringLiteral("bf16/train.log")), megatronLog(1, 4000, 4000, std::nullopt)));
        QByteArray log;
        log += megatronLine(10, 4000, 0, 0, kInterval, 0, 65536.0);
        log += megatronLine(20, 4000, 0, 0, kInterval, 0, 16384.0);
        QVERIFY(writeFile(dir.filePath(QStringLiteral("fp8/train.log")), log));
        Catalog catalog;
        QString error;
        QVERIFY2(testing::openAndIngest(dir.path(), &catalog, &error), qPrintable(error));
        const auto b = catalog.findRun(QStringLiteral("bf16")), r = catalog.findRun(QStringLiteral("fp8"));
        QVERIFY(b && r);
        const Comparison live = compareRuns(catalog, b->ref, r->ref, TriageOptions {.live = true});
        QVERIFY2(!findingOf(live.findings, FindingKind::RunBlowUp), qPrintable(describe(live.findings)));
        for (const Finding &f : live.findings)
            QVERIFY2(f.severity != Severity::Critical, qPrintable(describe(live.findings)));
        // The same two intervals in a finished log that ends there: the run never came back, a blow-up.
        const Comparison done = compareRuns(catalog, b->ref, r->ref);
        QVERIFY2(findingOf(done.findings, FindingKind::RunBlowUp), qPrintable(describe(done.findings)));
    }

    // A run that blows up twice and recovers each time by going back to a checkpoint: two recoveries, said, and
    // the verdict of spikes that need repeated recovery; no departure, since it came back.
    void recoveriesByRewinding()
    {
        QTemporaryDir dir;
        std::mt19937 rng(1);
        QByteArray log;
        const auto stretch = [&](int64_t from, int64_t to, std::optional<int64_t> badFrom) {
            for (int64_t step = from; step <= to; step += kInterval) {
                const bool bad = badFrom && step >= *badFrom;
                log += megatronLine(step, 4000, lossAt(step, rng), 1.2, bad ? kInterval : 0, bad ? kInterval : 0);
            }
        };
        stretch(10, 1300, 1250);
        log += " successfully loaded checkpoint from /ckpt at iteration 1000\n";
        stretch(1010, 2600, 2550);
        log += " successfully loaded checkpoint from /ckpt at iteration 2400\n";
        stretch(2410, 4000, std::nullopt);
        const std::optional<Comparison> pair = triagedPair(dir.path(), megatronLog(1, 4000, 4000, std::nullopt), log);
        QVERIFY(pair);
        const Comparison &c = *pair;
        const Finding *r = findingOf(c.findings, FindingKind::Recoveries);
        QVERIFY2(r, qPrintable(describe(c.findings)));
        QCOMPARE(r->evidence.value(QStringLiteral("count")).toInt(), 2);
        const QJsonArray list = r->evidence.value(QStringLiteral("recoveries")).toArray();
        QCOMPARE(list.at(0).toObject().value(QStringLiteral("blew_up_at")).toInt(), 1250);
        QCOMPARE(list.at(0).toObject().value(QStringLiteral("resumed_from")).toInt(), 1000);
        QCOMPARE(list.at(1).toObject().value(QStringLiteral("blew_up_at")).toInt(), 2550);
        QCOMPARE(list.at(1).toObject().value(QStringLiteral("resumed_from")).toInt(), 2400);
        QCOMPARE(r->severity, Severity::Warning);
        QVERIFY2(c.verdict == Verdict::LossSpikes,
            qPrintable(verdictName(c.verdict) + QLatin1Char('\n') + describe(c.findings)));
        QVERIFY(!findingOf(c.findings, FindingKind::RunBlowUp));
    }

    // The same blow-up in a run with no baseline: checked on its own, the same blow-up, the same first value.
    void aRunOnItsOwn()
    {
        QTemporaryDir dir;
        const int64_t blowUp = 6000, last = blowUp + 400;
        QVERIFY(writeFile(dir.filePath(QStringLiteral("fp8/train.log")), megatronLog(1, 20000, last, blowUp)));
        writeTeStats(dir.filePath(QStringLiteral("fp8")), 8, last, blowUpStats(2, 4, blowUp - 20, blowUp - 10));
        Catalog catalog;
        QString error;
        QVERIFY2(testing::openAndIngest(dir.path(), &catalog, &error), qPrintable(error));
        const TriageResult result = triage(catalog);
        QCOMPARE(int(result.runs.size()), 1);
        const RunCheck &r = result.runs.front();
        QVERIFY2(r.verdict == Verdict::MidRunInstability,
            qPrintable(verdictName(r.verdict) + QLatin1Char('\n') + describe(r.findings)));
        QCOMPARE(r.departure, std::optional<int64_t>(blowUp));
        const Finding *first = findingOf(r.findings, FindingKind::FirstNonFinite);
        QVERIFY2(first, qPrintable(describe(r.findings)));
        QCOMPARE(first->layer, QStringLiteral("decoder.layers.4.mlp.linear_fc1"));
        QCOMPARE(first->evidence.value(QStringLiteral("rank")).toInt(), 2);
        QCOMPARE(first->step, std::optional<int64_t>(blowUp - 20));
        // The CLI's JSON carries it.
        const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
        QVERIFY(!cli.isEmpty());
        QProcess p;
        p.start(cli, {QStringLiteral("triage"), dir.path(), QStringLiteral("--json")});
        QVERIFY(p.waitForFinished(60000));
        const QByteArray out = p.readAllStandardOutput();
        QVERIFY2(
            out.contains("\"first-non-finite\"") && out.contains("decoder.layers.4.mlp.linear_fc1"), out.constData());
    }

    // Followed live: the FP8 run is written interval by interval (every rank's statistics, then Megatron's line a
    // little later, as a real job prints them); rank 3's gradient turns inf four intervals before the loss shows
    // anything (a second and more at this pace: room for a loaded machine's ingest and triage). `fp8scope-cli watch
    // --fail-on critical` must exit on that first non-finite value, naming it, while the writer has not reached the
    // blow-up.
    void watchStopsOnTheFirstNonFinite()
    {
        const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
        QVERIFY(!cli.isEmpty());
        QTemporaryDir dir;
        writeWorkspace(dir.path());
        const int64_t planned = 4000, blowUp = 800, last = 1200;
        QVERIFY(writeFile(dir.filePath(QStringLiteral("bf16/train.log")), megatronLog(1, planned, last, std::nullopt)));
        const QString fp8 = dir.filePath(QStringLiteral("fp8"));
        // No rise before it: the first non-finite value alone must stop the watch.
        const StatValue stats = blowUpStats(3, 7, blowUp - 4 * kInterval, blowUp - kInterval, false);
        const QByteArray fullLog = megatronLog(2, planned, last, blowUp);
        const QList<QByteArray> lines = fullLog.split('\n');
        // The first 30 intervals are there when the watch starts.
        const int64_t startAt = 300;
        QByteArray head;
        for (int64_t step = kInterval; step <= startAt; step += kInterval)
            head += lines[int(step / kInterval - 1)] + '\n';
        QVERIFY(writeFile(fp8 + QStringLiteral("/train.log"), head));
        writeTeStats(fp8, 4, startAt, stats);
        std::atomic<int64_t> written {startAt};
        std::atomic<bool> stop {false};
        std::thread writer([&] {
            for (int64_t step = startAt + kInterval; step <= last && !stop; step += kInterval) {
                for (int rank = 0; rank < 4; ++rank)
                    writeFile(teLogPath(fp8, rank), teLines(rank, step, stats), true);
                std::this_thread::sleep_for(std::chrono::milliseconds(60));
                writeFile(fp8 + QStringLiteral("/train.log"), lines[int(step / kInterval - 1)] + '\n', true);
                written = step;
                std::this_thread::sleep_for(std::chrono::milliseconds(240));
            }
        });
        QProcess watch;
        watch.start(cli,
            {QStringLiteral("watch"), dir.path(), QStringLiteral("--interval"), QStringLiteral("0.1"),
                QStringLiteral("--json"), QStringLiteral("--fail-on"), QStringLiteral("critical")});
        QVERIFY(watch.waitForStarted());
        const bool ended = watch.waitForFinished(120000);
        const int64_t at = written;
        stop = true;
        writer.join();
        if (!ended) {
            ::kill(pid_t(watch.processId()), SIGTERM);
            watch.waitForFinished(10000);
        }
        const QByteArray out = watch.readAllStandardOutput();
        QVERIFY2(ended, out.constData());
        QCOMPARE(watch.exitCode(), 3);
        const QList<QByteArray> printed = out.trimmed().split('\n');
        const QJsonObject lastFinding = QJsonDocument::fromJson(printed.back()).object();
        QVERIFY2(lastFinding.value(QStringLiteral("kind")).toString() == QStringLiteral("first-non-finite"),
            out.constData());
        QCOMPARE(lastFinding.value(QStringLiteral("severity")).toString(), QStringLiteral("critical"));
        QCOMPARE(
            lastFinding.value(QStringLiteral("layer")).toString(), QStringLiteral("decoder.layers.7.mlp.linear_fc1"));
        QCOMPARE(int64_t(lastFinding.value(QStringLiteral("step")).toDouble()), blowUp - 4 * kInterval);
        QCOMPARE(lastFinding.value(QStringLiteral("evidence")).toObject().value(QStringLiteral("rank")).toInt(), 3);
        qInfo("the watch stopped with the writer at step %lld; the loss shows the blow-up at %lld", (long long)at,
            (long long)blowUp);
        QVERIFY2(at < blowUp, qPrintable(QStringLiteral("the writer was at step %1").arg(at)));
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestBlowUp)
#include "tst_blowup.moc"
