// fp8scope-cli watch against a run that is still being written: a writer replays a scenario's FP8 run line by
// line, step by step (the baseline, a finished run, is there from the start), while the watcher follows the
// folder. On a mid-run instability it must exit 3 on the critical layer signal before the writer reaches the
// departure, naming the planted layer at the onset the engine finds on the complete data; on a healthy pair it
// must raise no warning and stop cleanly on SIGTERM.
#include "core/analysis/triage.h"
#include "core/demo/demogenerator.h"
#include "core/demo/scenarios.h"
#include "core/query/catalog.h"
#include "core/storeaccess.h"
#include "scenarioreplay.h"
#include "testmain.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <cmath>
#include <csignal>
#include <thread>

using namespace fp8scope;

namespace {

QString cli()
{
    return qEnvironmentVariable("FP8SCOPE_CLI");
}

// The first layer signal of the complete data's triage (its onset step), the engine's reference.
std::optional<int64_t> completeOnset(const QString &folder, const QString &layer)
{
    Catalog catalog;
    QString error;
    if (!catalog.open(folder, &error))
        return std::nullopt;
    CatalogTestAccess::storeOf(catalog, catalog.stores().front().serial)->ingest();
    catalog.refresh();
    for (const analysis::Comparison &c : analysis::triage(catalog).comparisons) {
        for (const analysis::Finding &f : c.findings) {
            if (f.kind == analysis::FindingKind::LayerSignal && f.layer == layer)
                return f.step;
        }
    }
    return std::nullopt;
}

// Watches `folder` with --json and --fail-on `level` for four seconds: true when it was still watching then and
// stopped cleanly (exit 0) on SIGTERM; *out gets what it printed.
bool watchesWithoutFailing(const QString &folder, const QString &level, QByteArray *out)
{
    QProcess watch;
    watch.start(cli(),
        {QStringLiteral("watch"), folder, QStringLiteral("--interval"), QStringLiteral("0.25"),
            QStringLiteral("--json"), QStringLiteral("--fail-on"), level});
    if (!watch.waitForStarted())
        return false;
    const bool ended = watch.waitForFinished(4000);
    if (!ended)
        ::kill(pid_t(watch.processId()), SIGTERM);
    const bool stopped = ended || watch.waitForFinished(10000);
    *out = watch.readAllStandardOutput();
    if (ended || !stopped || watch.exitCode() != 0) {
        qWarning("the watcher %s with %d: %s", ended ? "ended" : "stopped", watch.exitCode(), out->constData());
        return false;
    }
    return true;
}

} // namespace

class TestWatch : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QVERIFY2(QFileInfo(cli()).isExecutable(), "FP8SCOPE_CLI names no executable"); }

    void warnsBeforeTheDeparture_data()
    {
        QTest::addColumn<quint64>("seed");
        QTest::newRow("seed 2") << quint64(2);
        QTest::newRow("seed 5") << quint64(5);
    }

    void warnsBeforeTheDeparture()
    {
        QFETCH(quint64, seed);
        QTemporaryDir tmp;
        const QString scenario = tmp.filePath(QStringLiteral("scenario"));
        ScenarioPlan plan;
        QString error;
        QVERIFY2(generateScenario(scenario, Scenario::MidRunInstability, seed, &plan, &error), qPrintable(error));
        QVERIFY(plan.departureStep && !plan.layer.isEmpty() && plan.onsetStep);
        const std::optional<int64_t> reference = completeOnset(scenario, plan.layer);
        QVERIFY2(reference, "the engine finds no layer signal on the complete data");
        const QString live = tmp.filePath(QStringLiteral("live"));
        // About 100 steps a second: a 5000-step run in 50 s (a real one writes a step every second or so; the
        // watcher's latency, an ingest and a triage, is a fraction of a second).
        ScenarioReplay writer(scenario, live, plan, 5, 50);
        QVERIFY2(writer.start(&error), qPrintable(error));
        QProcess watch;
        watch.start(cli(),
            {QStringLiteral("watch"), live, QStringLiteral("--interval"), QStringLiteral("0.25"),
                QStringLiteral("--json"), QStringLiteral("--fail-on"), QStringLiteral("critical")});
        QVERIFY(watch.waitForStarted());
        QVERIFY2(watch.waitForFinished(120000), "the watcher did not stop on the planted instability");
        const int64_t writtenTo = writer.step();
        writer.stop();
        const QString out = QString::fromUtf8(watch.readAllStandardOutput());
        QCOMPARE(watch.exitCode(), 3);
        // One JSON object a line; the last is the critical layer signal of the planted layer.
        const QStringList lines = out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QVERIFY(!lines.isEmpty());
        for (const QString &l : lines)
            QVERIFY2(QJsonDocument::fromJson(l.toUtf8()).isObject(), qPrintable(l));
        const QJsonObject last = QJsonDocument::fromJson(lines.back().toUtf8()).object();
        QCOMPARE(last.value(QStringLiteral("kind")).toString(), QStringLiteral("layer-signal"));
        QCOMPARE(last.value(QStringLiteral("severity")).toString(), QStringLiteral("critical"));
        QCOMPARE(last.value(QStringLiteral("layer")).toString(), plan.layer);
        QCOMPARE(last.value(QStringLiteral("run")).toString(), plan.run);
        qInfo("seed %llu: onset %lld (complete data %lld), departure %lld, the watcher stopped with the writer at %lld",
            seed, (long long)last.value(QStringLiteral("step")).toDouble(), (long long)*reference,
            (long long)*plan.departureStep, (long long)writtenTo);
        QVERIFY2(writtenTo < *plan.departureStep,
            qPrintable(QStringLiteral("stopped with the writer at step %1, the departure is at %2")
                           .arg(writtenTo)
                           .arg(*plan.departureStep)));
        // Its onset is the one the engine finds on the complete data, within a tenth of the planted lead.
        const int64_t onset = int64_t(last.value(QStringLiteral("step")).toDouble());
        const int64_t plantedLead = *plan.departureStep - *plan.onsetStep;
        QVERIFY2(std::abs(onset - *reference) <= plantedLead / 10,
            qPrintable(QStringLiteral("live onset %1, complete %2, planted lead %3")
                           .arg(onset)
                           .arg(*reference)
                           .arg(plantedLead)));
        // Each finding was printed once.
        QSet<QString> seen;
        for (const QString &l : lines) {
            const QJsonObject o = QJsonDocument::fromJson(l.toUtf8()).object();
            const QString key = o.value(QStringLiteral("kind")).toString() + o.value(QStringLiteral("layer")).toString()
                + o.value(QStringLiteral("tensor")).toString() + o.value(QStringLiteral("stat")).toString()
                + o.value(QStringLiteral("key")).toString() + o.value(QStringLiteral("severity")).toString();
            QVERIFY2(!seen.contains(key), qPrintable(l));
            seen.insert(key);
        }
    }

    void healthyRunRaisesNoWarning()
    {
        QTemporaryDir tmp;
        const QString scenario = tmp.filePath(QStringLiteral("scenario"));
        ScenarioPlan plan;
        QString error;
        QVERIFY2(generateScenario(scenario, Scenario::None, 2, &plan, &error), qPrintable(error));
        const QString live = tmp.filePath(QStringLiteral("live"));
        ScenarioReplay writer(scenario, live, plan, 40, 50);
        QVERIFY2(writer.start(&error), qPrintable(error));
        QProcess watch;
        watch.start(cli(),
            {QStringLiteral("watch"), live, QStringLiteral("--interval"), QStringLiteral("0.25"),
                QStringLiteral("--fail-on"), QStringLiteral("critical")});
        QVERIFY(watch.waitForStarted());
        // It runs as long as the run is written, and after.
        QTRY_VERIFY_WITH_TIMEOUT(writer.done() || watch.state() != QProcess::Running, 120000);
        // (A failure message must not read the output: the checks below read it once.)
        QVERIFY2(watch.state() == QProcess::Running,
            qPrintable(QStringLiteral("exit %1 at step %2").arg(watch.exitCode()).arg(writer.step())));
        const bool ended = watch.waitForFinished(1500);
        QVERIFY2(!ended, qPrintable(QStringLiteral("exit %1").arg(watch.exitCode())));
        ::kill(pid_t(watch.processId()), SIGTERM);
        QVERIFY(watch.waitForFinished(10000));
        QCOMPARE(watch.exitStatus(), QProcess::NormalExit);
        QCOMPARE(watch.exitCode(), 0);
        const QString out = QString::fromUtf8(watch.readAllStandardOutput());
        // No warning either: a healthy pair has nothing to look at (its FP8 run skips iterations at a few loss
        // spikes of its own, which are no more than the baseline's beyond chance).
        QVERIFY2(!out.contains(QStringLiteral(": critical ")), qPrintable(out));
        QVERIFY2(!out.contains(QStringLiteral(": warning ")), qPrintable(out));
        QVERIFY2(!out.contains(QStringLiteral("layer-signal")), qPrintable(out));
        QVERIFY(QString::fromUtf8(watch.readAllStandardError()).contains(QStringLiteral("stopped")));
    }

    // A static difference known at the start (FP8 parameters gathered in FP8: normal for native FP8, a
    // suspect class of key) is said once, as information, and never fails a watch: a job script would kill a
    // healthy training.
    void staticDifferenceDoesNotFailTheWatch()
    {
        QTemporaryDir tmp;
        const auto run = [&](const QString &name, const QByteArray &config, double offset) {
            QDir().mkpath(tmp.filePath(name));
            QFile csv(tmp.filePath(name + QStringLiteral("/metrics.csv")));
            if (!csv.open(QIODevice::WriteOnly))
                return false;
            csv.write("step,loss\n");
            for (int step = 1; step <= 400; ++step)
                csv.write(QByteArray::number(step) + ','
                    + QByteArray::number(3.0 + 7.0 / (1.0 + 0.02 * step) + 0.01 * std::sin(step * 1.7) + offset, 'f', 5)
                    + '\n');
            QFile yaml(tmp.filePath(name + QStringLiteral("/config.yaml")));
            return yaml.open(QIODevice::WriteOnly) && yaml.write(config) == config.size();
        };
        QVERIFY(run(QStringLiteral("gpt_bf16"), "num_layers: 12\nbf16: true\n", 0.0));
        QVERIFY(run(QStringLiteral("gpt_fp8"), "num_layers: 12\nfp8: hybrid\nfp8_param_gather: true\n", 0.001));
        QByteArray out;
        QVERIFY(watchesWithoutFailing(tmp.path(), QStringLiteral("warning"), &out));
        bool said = false;
        for (const QByteArray &line : out.split('\n')) {
            const QJsonObject o = QJsonDocument::fromJson(line).object();
            if (o.value(QStringLiteral("key")).toString().endsWith(QLatin1String("fp8_param_gather"))) {
                QVERIFY(!said); // once
                said = true;
                QCOMPARE(o.value(QStringLiteral("static")).toBool(), true);
                QCOMPARE(o.value(QStringLiteral("severity")).toString(), QStringLiteral("info"));
            }
        }
        QVERIFY(said);
    }

    // A finding dismissed in a review (the wizard keeps it in the store) is neither printed nor failed on.
    void dismissedFindingsDoNotFailTheWatch()
    {
        QTemporaryDir tmp;
        DemoPlan plan;
        QString error;
        QVERIFY2(generateDemo(tmp.path(), {}, &plan, &error), qPrintable(error));
        {
            Catalog catalog;
            QVERIFY2(catalog.open(tmp.path(), &error), qPrintable(error));
            CatalogTestAccess::storeOf(catalog, catalog.stores().front().serial)->ingest();
            catalog.refresh();
            const std::vector<analysis::Comparison> comparisons = analysis::triage(catalog).comparisons;
            QCOMPARE(int(comparisons.size()), 1);
            const analysis::Comparison &c = comparisons.front();
            const auto [folder, name] = catalog.baselineKey(c.run, c.baseline);
            int dismissed = 0;
            for (const analysis::Finding &f : c.findings) {
                if (f.severity != analysis::Severity::Critical)
                    continue;
                QVERIFY2(CatalogTestAccess::store(catalog, c.run)
                             ->storeFindingReview(c.run.id, folder, name,
                                 {analysis::findingIdentity(f), ReviewState::Dismissed, QString(), {}}, &error),
                    qPrintable(error));
                ++dismissed;
            }
            QVERIFY(dismissed >= 2); // the departure and the planted layer's first signal
        }
        QByteArray json;
        QVERIFY(watchesWithoutFailing(tmp.path(), QStringLiteral("critical"), &json));
        const QString out = QString::fromUtf8(json);
        QVERIFY2(!out.contains(QLatin1String("\"critical\"")), qPrintable(out));
        QVERIFY2(!out.contains(QLatin1String("loss-departure")), qPrintable(out));
        QVERIFY2(out.contains(QLatin1String("layer-signal")), qPrintable(out)); // the others are still said
    }

    void usageErrors()
    {
        QProcess p;
        p.start(
            cli(), {QStringLiteral("watch"), QStringLiteral("."), QStringLiteral("--interval"), QStringLiteral("0")});
        QVERIFY(p.waitForFinished());
        QCOMPARE(p.exitCode(), 2);
        p.start(
            cli(), {QStringLiteral("watch"), QStringLiteral("."), QStringLiteral("--fail-on"), QStringLiteral("info")});
        QVERIFY(p.waitForFinished());
        QCOMPARE(p.exitCode(), 2);
        p.start(cli(), {QStringLiteral("watch"), QStringLiteral("."), QStringLiteral("--run"), QStringLiteral("x")});
        QVERIFY(p.waitForFinished());
        QCOMPARE(p.exitCode(), 2);
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestWatch)
#include "tst_watch.moc"
