// The live triage's incremental evaluation: a Catalog that keeps its points (Catalog::setKeepPoints) reads
// only what came after what it kept, and reads again what a rewrite replaced (a restart's log repeating
// steps, a log truncated and written again, a file gone); the store counts those rewrites
// (RunStore::dataRewrites) and nothing else; analysis::IncrementalTriage gives what triage() gives on the
// same data at every stage of a run being written, computing again only the pairs whose runs changed.
#include "core/analysis/incrementaltriage.h"
#include "core/demo/scenarios.h"
#include "core/store/pointchunks.h"
#include "storeaccess.h"
#include "testmain.h"

#include "../scenarioreplay.h"

#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <map>

using namespace fp8scope;
using namespace fp8scope::analysis;

namespace {

bool sameValues(const StepSeries &a, const StepSeries &b)
{
    if (a.steps != b.steps || a.values.size() != b.values.size())
        return false;
    for (size_t i = 0; i < a.values.size(); ++i) {
        if (std::memcmp(&a.values[i], &b.values[i], sizeof(double)) != 0
            && !(std::isnan(a.values[i]) && std::isnan(b.values[i])))
            return false;
    }
    return true;
}

// Every series of every run reads the same through `kept` as through a catalog opened now; the number of
// series compared.
int compareAll(const Catalog &kept, const QString &folder, quint64 serial)
{
    Catalog fresh;
    QString error;
    if (!fresh.open(folder, serial, &error)) {
        qWarning("%s", qPrintable(error));
        return -1;
    }
    int n = 0;
    for (const Run &r : fresh.runs(false)) {
        for (const Series &s : fresh.series(r.ref)) {
            if (!sameValues(kept.stepSeries(s), fresh.stepSeries(s))) {
                qWarning("%s %s %s %s differs", qPrintable(r.name), qPrintable(s.layer), qPrintable(s.tensor),
                    qPrintable(s.stat));
                return -1;
            }
            ++n;
        }
    }
    return n;
}

bool sameComparison(const Comparison &a, const Comparison &b)
{
    if (a.run != b.run || a.baseline != b.baseline || a.verdict != b.verdict || a.departure != b.departure
        || a.lead != b.lead || a.findings.size() != b.findings.size())
        return false;
    for (size_t i = 0; i < a.findings.size(); ++i) {
        const Finding &x = a.findings[i], &y = b.findings[i];
        if (findingIdentity(x) != findingIdentity(y) || x.severity != y.severity || x.step != y.step
            || x.lastStep != y.lastStep || x.summary != y.summary || x.evidence != y.evidence)
            return false;
    }
    return true;
}

bool sameCheck(const RunCheck &a, const RunCheck &b)
{
    if (a.run != b.run || a.verdict != b.verdict || a.departure != b.departure
        || a.findings.size() != b.findings.size())
        return false;
    for (size_t i = 0; i < a.findings.size(); ++i) {
        if (findingIdentity(a.findings[i]) != findingIdentity(b.findings[i])
            || a.findings[i].summary != b.findings[i].summary || a.findings[i].evidence != b.findings[i].evidence)
            return false;
    }
    return true;
}

bool ingest(Catalog &c, quint64 serial)
{
    const IngestReport r = CatalogTestAccess::storeOf(c, serial)->ingest();
    c.refresh();
    if (!r.errors.isEmpty())
        qWarning("%s", qPrintable(r.errors.join(QLatin1Char('\n'))));
    return r.errors.isEmpty();
}

// The triage of a folder read whole, in a catalog of its own (nullopt: it could not be read).
std::optional<TriageResult> triageWhole(const QString &folder)
{
    QString error;
    const quint64 serial = Catalog::newStoreSerial();
    Catalog whole;
    if (!whole.open(folder, serial, &error) || !ingest(whole, serial)) {
        qWarning("%s: %s", qPrintable(folder), qPrintable(error));
        return std::nullopt;
    }
    return triage(whole, TriageOptions {});
}

// A scenario's FP8 run written into a folder as the test says (writeThrough), read by a catalog that keeps its
// points and triaged incrementally.
struct WrittenRun {
    WrittenRun(const QString &scenario, const QString &live, const ScenarioPlan &plan)
        : writer(scenario, live, plan, 0, 0)
        , folder(live)
    {
    }
    bool start(QString *error)
    {
        if (!writer.start(error, false) || !kept.open(folder, serial, error))
            return false;
        kept.setKeepPoints(true);
        return true;
    }
    // Written through `step` and read: the triage then (nullopt: the store could not read it).
    std::optional<TriageResult> through(int64_t step)
    {
        writer.writeThrough(step);
        if (!ingest(kept, serial))
            return std::nullopt;
        return engine.update(kept);
    }
    ScenarioReplay writer;
    QString folder;
    quint64 serial = Catalog::newStoreSerial();
    Catalog kept;
    IncrementalTriage engine;
};

// The run's Megatron log (the file holding "lm loss" lines).
QString megatronLogOf(const QString &runFolder)
{
    QDirIterator it(runFolder, {QStringLiteral("*.log")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        QFile f(path);
        if (f.open(QIODevice::ReadOnly) && f.readAll().contains("lm loss:"))
            return path;
    }
    return {};
}

// A restart's log: the lines of `log` from iteration `from` to `to`, their loss 1 % higher.
QByteArray restartLines(const QString &log, int64_t from, int64_t to)
{
    QFile f(log);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    static const QRegularExpression iteration(QStringLiteral("iteration\\s+(\\d+)/"));
    static const QRegularExpression loss(QStringLiteral("lm loss: ([0-9.Ee+-]+)"));
    QByteArray out;
    for (const QByteArray &raw : f.readAll().split('\n')) {
        QString line = QString::fromLatin1(raw);
        const auto m = iteration.match(line);
        if (!m.hasMatch() || m.captured(1).toLongLong() < from || m.captured(1).toLongLong() > to)
            continue;
        const auto l = loss.match(line);
        if (!l.hasMatch())
            continue;
        line.replace(l.capturedStart(1), l.capturedLength(1), QString::number(l.captured(1).toDouble() * 1.01, 'E', 6));
        out += line.toLatin1() + '\n';
    }
    return out;
}

} // namespace

class TestIncrementalTriage : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // The writer counts a merge that writes at or before a series' last step, and no other.
    void writerCountsRewrites()
    {
        QTemporaryDir dir;
        Database db;
        QString error;
        QVERIFY2(db.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        QVERIFY(db.exec("CREATE TABLE point_chunks(series_id INTEGER NOT NULL, first_step INTEGER NOT NULL, "
                        "last_step INTEGER NOT NULL, n INTEGER NOT NULL, min REAL, max REAL, data TEXT NOT NULL, "
                        "nonfinite_step INTEGER, PRIMARY KEY(series_id, first_step)) WITHOUT ROWID",
            &error));
        pointchunks::Writer w(db);
        std::vector<pointchunks::Point> p;
        for (int64_t s = 0; s < 100; ++s)
            p.push_back({s, double(s), NAN});
        QVERIFY(w.merge(1, p));
        QVERIFY(w.merge(1, {{100, 1, NAN}, {101, 2, NAN}})); // after the last: appended (its last chunk rewritten)
        QVERIFY(w.merge(2, {{5, 1, NAN}})); // another series' first
        QCOMPARE(w.rewrites(), 0);
        QVERIFY(w.merge(1, {{101, 3, NAN}})); // the last step again
        QCOMPARE(w.rewrites(), 1);
        QVERIFY(w.merge(1, {{50, 3, NAN}, {200, 1, NAN}})); // one before the end, one after
        QCOMPARE(w.rewrites(), 2);
    }

    // What a kept catalog reads equals a fresh read at every stage: appends, a restart's log repeating steps,
    // a log truncated and written again, a file deleted. What it kept is not read again while the store says
    // nothing was rewritten (a chunk removed behind its back stays in what it kept), and is once it says so.
    void keptPointsFollowTheStore()
    {
        QTemporaryDir dir;
        const QString scenario = dir.filePath(QStringLiteral("scenario")), live = dir.filePath(QStringLiteral("live"));
        ScenarioPlan plan;
        QString error;
        QVERIFY2(generateScenario(scenario, Scenario::MidRunInstability, 3, &plan, &error), qPrintable(error));
        ScenarioReplay writer(scenario, live, plan, 0, 0);
        QVERIFY2(writer.start(&error, false), qPrintable(error));
        QVERIFY(writer.writeThrough(plan.steps / 4));

        const quint64 serial = Catalog::newStoreSerial();
        Catalog kept;
        QVERIFY2(kept.open(live, serial, &error), qPrintable(error));
        kept.setKeepPoints(true);
        QVERIFY(ingest(kept, serial));
        const int64_t rewrites0 = CatalogTestAccess::storeOf(kept, serial)->dataRewrites();
        QVERIFY(rewrites0 >= 0);
        const int n = compareAll(kept, live, serial);
        QVERIFY2(n > 10, "the scenario's series");

        // Appends: no rewrite counted, every series still the same.
        for (int quarter = 2; quarter <= 3; ++quarter) {
            writer.writeThrough(plan.steps * quarter / 4);
            QVERIFY(ingest(kept, serial));
            QCOMPARE(CatalogTestAccess::storeOf(kept, serial)->dataRewrites(), rewrites0);
            QCOMPARE(compareAll(kept, live, serial), n);
        }

        // Kept means not read again: a chunk removed without a rewrite said stays in what was kept.
        const auto run = kept.findRun(plan.run);
        QVERIFY(run);
        const auto loss = kept.chooseSeries(run->ref, {.stat = QStringLiteral("lm loss")});
        QVERIFY(loss);
        const size_t before = kept.stepSeries(*loss).size();
        Database &db = RunStoreTestAccess::db(*CatalogTestAccess::storeOf(kept, serial));
        const QByteArray remove = "DELETE FROM point_chunks WHERE series_id=" + QByteArray::number(loss->id)
            + " AND first_step=(SELECT MIN(first_step) FROM point_chunks WHERE series_id="
            + QByteArray::number(loss->id) + ")";
        QVERIFY(db.exec(remove.constData(), &error));
        QCOMPARE(kept.stepSeries(*loss).size(), before);
        QVERIFY(compareAll(kept, live, serial) < 0);
        QVERIFY(db.exec("UPDATE meta SET value=value+1 WHERE key='data_rewrites'", &error));
        QVERIFY(kept.stepSeries(*loss).size() < before);
        QCOMPARE(compareAll(kept, live, serial), n);

        // A restart's log repeating steps of the first: the shared series' points replaced, a rewrite.
        const QString log = megatronLogOf(live + QLatin1Char('/') + plan.run);
        QVERIFY(!log.isEmpty());
        const int64_t a = plan.steps / 2, b = plan.steps * 5 / 8;
        const QByteArray restart = restartLines(log, a, b);
        QVERIFY(restart.count('\n') > 3);
        const QString restartLog = QFileInfo(log).absolutePath() + QStringLiteral("/restart.log");
        {
            QFile f(restartLog);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(restart);
        }
        QVERIFY(ingest(kept, serial));
        QVERIFY(CatalogTestAccess::storeOf(kept, serial)->dataRewrites() > rewrites0 + 1);
        // The restart's log is read after the log it resumed (by their first steps), which it rewinds: one
        // series more, the rewind.
        QCOMPARE(compareAll(kept, live, serial), n + 1);
        QVERIFY(kept.chooseSeries(run->ref, {.stat = QStringLiteral("rewind")}));
        {
            // The restart's values are the loss's now: one series, its points replaced.
            Catalog fresh;
            QVERIFY(fresh.open(live, serial, &error));
            const auto l = fresh.chooseSeries(run->ref, {.stat = QStringLiteral("lm loss")});
            QVERIFY(l);
            const StepSeries s = fresh.stepSeries(*l);
            const StepSeries k = kept.stepSeries(*l);
            QVERIFY(sameValues(s, k));
        }

        // The log truncated and written again (a restarted job overwriting it), then the restart's log gone.
        {
            QFile f(log);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QList<QByteArray> lines = f.readAll().split('\n');
            f.close();
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            for (qsizetype i = 0; i < lines.size() / 3; ++i)
                f.write(lines[i] + '\n');
        }
        int64_t r = CatalogTestAccess::storeOf(kept, serial)->dataRewrites();
        QVERIFY(ingest(kept, serial));
        QVERIFY(CatalogTestAccess::storeOf(kept, serial)->dataRewrites() > r);
        QCOMPARE(compareAll(kept, live, serial), n);
        r = CatalogTestAccess::storeOf(kept, serial)->dataRewrites();
        QVERIFY(QFile::remove(restartLog));
        QVERIFY(ingest(kept, serial));
        QVERIFY(CatalogTestAccess::storeOf(kept, serial)->dataRewrites() > r);
        QCOMPARE(compareAll(kept, live, serial), n);

        // Off forgets what was kept: reads are the store's again.
        kept.setKeepPoints(false);
        QVERIFY(db.exec(remove.constData(), &error));
        QCOMPARE(compareAll(kept, live, serial), n);
    }

    // While the run is written, the suspect layer's onset is the one the complete run shows: around the loss's
    // departure, where CI's window first told of it (writer at 3550 of seed 2) at 3300 against the complete
    // run's 3250 (an early level read off a fifth of what was written, its noise and threshold moving with
    // each new point).
    void liveOnsetIsTheCompleteRunsOnset()
    {
        QTemporaryDir dir;
        const QString scenario = dir.filePath(QStringLiteral("scenario")), live = dir.filePath(QStringLiteral("live"));
        ScenarioPlan plan;
        QString error;
        QVERIFY2(generateScenario(scenario, Scenario::MidRunInstability, 2, &plan, &error), qPrintable(error));
        const auto critical = [&](const TriageResult &r) -> std::optional<int64_t> {
            for (const Comparison &c : r.comparisons) {
                for (const Finding &f : c.findings) {
                    if (f.kind == analysis::FindingKind::LayerSignal && f.severity == analysis::Severity::Critical)
                        return f.layer == plan.layer ? f.step : std::optional<int64_t>(-1);
                }
            }
            return std::nullopt;
        };
        const std::optional<TriageResult> whole = triageWhole(scenario);
        QVERIFY(whole);
        const std::optional<int64_t> onset = critical(*whole);
        QVERIFY(onset && *onset > 0);
        WrittenRun written(scenario, live, plan);
        QVERIFY2(written.start(&error), qPrintable(error));
        int told = 0;
        for (int64_t step = *plan.departureStep - 150; step <= *plan.departureStep + 50; step += 10) {
            const std::optional<TriageResult> r = written.through(step);
            QVERIFY(r);
            const std::optional<int64_t> now = critical(*r);
            if (!now)
                continue;
            QVERIFY2(*now == *onset,
                qPrintable(QStringLiteral("written through %1: %2 against %3").arg(step).arg(*now).arg(*onset)));
            ++told;
        }
        QVERIFY(told >= 10);
    }

    // Scenarios not tuned on, replayed a twentieth of their steps at a time: a healthy pair raises no layer
    // signal while written; a mid-run instability's critical layer signal, told up to a twentieth of the steps
    // after the planted departure, names the planted layer at the onset the complete run finds for that
    // statistic. Seeds 21-22 here;
    // FP8SCOPE_LIVE_SEEDS=21-40 for the figures docs/TRIAGE.md quotes.
    void liveAgreesWithTheCompleteRun()
    {
        int first = 21, last = 22;
        const QStringList range = qEnvironmentVariable("FP8SCOPE_LIVE_SEEDS").split(QLatin1Char('-'));
        if (range.size() == 2 && range[0].toInt() > 0 && range[1].toInt() >= range[0].toInt()) {
            first = range[0].toInt();
            last = range[1].toInt();
        }
        int healthyStages = 0, told = 0, found = 0;
        QStringList wrong;
        for (const Scenario scenario : {Scenario::None, Scenario::MidRunInstability}) {
            for (int seed = first; seed <= last; ++seed) {
                QTemporaryDir dir;
                const QString whole = dir.filePath(QStringLiteral("whole")),
                              live = dir.filePath(QStringLiteral("live"));
                ScenarioPlan plan;
                QString error;
                QVERIFY2(generateScenario(whole, scenario, uint64_t(seed), &plan, &error), qPrintable(error));
                // The complete run's onset of each statistic with a layer signal (its severity aside: where the
                // complete run misses the departure, as seed 48's, its signals are information).
                std::map<std::tuple<QString, QString, QString>, int64_t> onsets;
                const std::optional<TriageResult> complete = triageWhole(whole);
                QVERIFY(complete);
                for (const Comparison &c : complete->comparisons) {
                    for (const Finding &f : c.findings) {
                        if (f.kind == analysis::FindingKind::LayerSignal && f.step)
                            onsets.try_emplace({f.layer, f.tensor, f.stat}, *f.step);
                    }
                }
                WrittenRun written(whole, live, plan);
                QVERIFY2(written.start(&error), qPrintable(error));
                bool seen = false;
                const int64_t stride = std::max<int64_t>(1, plan.steps / 20);
                for (int64_t step = stride; step <= plan.steps; step += stride) {
                    const std::optional<TriageResult> r = written.through(step);
                    QVERIFY(r);
                    if (scenario == Scenario::None)
                        ++healthyStages;
                    for (const Comparison &c : r->comparisons) {
                        for (const Finding &f : c.findings) {
                            if (f.kind != analysis::FindingKind::LayerSignal || f.severity == analysis::Severity::Info)
                                continue;
                            const QString where = QStringLiteral("%1 seed %2 through %3: %4 %5 at %6")
                                                      .arg(scenarioName(scenario))
                                                      .arg(seed)
                                                      .arg(step)
                                                      .arg(f.layer, f.stat)
                                                      .arg(f.step.value_or(-1));
                            if (scenario == Scenario::None) {
                                wrong << where;
                            } else if (f.severity == analysis::Severity::Critical && plan.departureStep
                                && step < *plan.departureStep + stride) {
                                ++told;
                                seen = true;
                                const auto complete = onsets.find({f.layer, f.tensor, f.stat});
                                const int64_t onset = complete == onsets.end() ? -1 : complete->second;
                                if (f.layer != plan.layer || f.step != onset)
                                    wrong << where + QStringLiteral(" (complete: %1)").arg(onset);
                            }
                        }
                    }
                }
                found += seen ? 1 : 0;
            }
        }
        qInfo("seeds %d-%d: healthy pairs %d stages, no layer signal expected; mid-run instabilities: planted layer "
              "told live in %d of %d, %d stages with a critical one, %d told otherwise",
            first, last, healthyStages, found, last - first + 1, told, int(wrong.size()));
        QVERIFY2(wrong.isEmpty(), qPrintable(wrong.join(QStringLiteral(" | "))));
        QVERIFY(healthyStages >= 20 * (last - first + 1));
        QCOMPARE(found, last - first + 1);
    }

    // At every stage of the scenario being written, the incremental triage equals triage() computed whole in
    // a fresh catalog; only the pairs whose runs changed are computed again; the planted layer is found.
    void equalsTheWholeTriageWhileWritten()
    {
        QTemporaryDir dir;
        const QString scenario = dir.filePath(QStringLiteral("scenario")), live = dir.filePath(QStringLiteral("live"));
        ScenarioPlan plan;
        QString error;
        QVERIFY2(generateScenario(scenario, Scenario::MidRunInstability, 5, &plan, &error), qPrintable(error));
        ScenarioReplay writer(scenario, live, plan, 0, 0);
        QVERIFY2(writer.start(&error, false), qPrintable(error));

        const quint64 serial = Catalog::newStoreSerial();
        Catalog kept;
        QVERIFY2(kept.open(live, serial, &error), qPrintable(error));
        kept.setKeepPoints(true);
        IncrementalTriage engine;
        QCOMPARE(engine.options().live, true);
        bool more = true, found = false, rewound = false;
        int stages = 0;
        int64_t lastRewrites = -1;
        for (int64_t step = plan.steps / 10; more; step += plan.steps / 10) {
            more = writer.writeThrough(step);
            QVERIFY(ingest(kept, serial));
            const TriageResult now = engine.update(kept);
            Catalog fresh;
            QVERIFY(fresh.open(live, serial, &error));
            const TriageResult whole = triage(fresh, engine.options());
            QCOMPARE(now.comparisons.size(), whole.comparisons.size());
            QCOMPARE(now.runs.size(), whole.runs.size());
            for (size_t i = 0; i < now.comparisons.size(); ++i)
                QVERIFY2(sameComparison(now.comparisons[i], whole.comparisons[i]), qPrintable(QString::number(step)));
            for (size_t i = 0; i < now.runs.size(); ++i)
                QVERIFY(sameCheck(now.runs[i], whole.runs[i]));
            QCOMPARE(engine.computed() + engine.reused(), int(now.comparisons.size() + now.runs.size()));
            const int64_t rewrites = CatalogTestAccess::storeOf(kept, serial)->dataRewrites();
            if (stages > 0 && rewrites == lastRewrites) {
                // Only the run grew: its pair is computed again, the baseline checked alone is not.
                QCOMPARE(engine.computed(), 1);
                QCOMPARE(engine.reused(), int(now.runs.size()));
            } else if (stages > 0) {
                // The scenario's resume repeats steps in its log: a rewrite of the store, every pair again.
                rewound = true;
            }
            lastRewrites = rewrites;
            for (const Comparison &c : now.comparisons) {
                for (const Finding &f : c.findings)
                    found = found || (f.kind == analysis::FindingKind::LayerSignal && f.layer == plan.layer);
            }
            ++stages;
        }
        QVERIFY(stages >= 10);
        QVERIFY(rewound); // the resume was written and read as one, and the results still agree
        QVERIFY2(found, qPrintable(plan.layer));
        // Nothing new: an update computes nothing.
        QVERIFY(ingest(kept, serial));
        (void)engine.update(kept);
        QCOMPARE(engine.computed(), 0);
        QVERIFY(engine.reused() >= 2);
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestIncrementalTriage)
#include "tst_incrementaltriage.moc"
