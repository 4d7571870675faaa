// The triage engine end to end: scenario pairs written by the scenario generator (fp8scope-cli demo
// --scenario), read into a store, triaged, and judged against their planted.json by the acceptance rules of
// issue 21 (docs/TRIAGE.md quotes the counts this test prints); and the real public fixtures of
// ../shared/fixtures/real, whose verdicts docs/TRIAGE.md explains.
#include "core/analysis/attempts.h"
#include "core/analysis/comparetables.h"
#include "core/analysis/comparisondata.h"
#include "core/analysis/storedwhatif.h"
#include "core/analysis/triage.h"
#include "core/analysis/triageinputs.h"
#include "core/demo/demogenerator.h"
#include "core/demo/scenarios.h"
#include "core/numerics/cpubackend.h"
#include "core/query/catalog.h"
#include "core/report/triagereport.h"
#include "core/store/runstore.h"
#include "core/storeaccess.h"

#include "attemptsfolder.h"
#include "blowuprun.h"
#include "testmain.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <random>

using namespace fp8scope;
using namespace fp8scope::analysis;

namespace {

constexpr int kSeeds = 20;

QString sharedFixtures()
{
    return QDir(qEnvironmentVariable("FP8SCOPE_SOURCE_DIR", QStringLiteral(".")))
        .absoluteFilePath(QStringLiteral("../shared/fixtures/real"));
}

// Copies a folder tree (the shared fixtures stay untouched: a store would land beside them).
bool copyTree(const QString &from, const QString &to)
{
    QDir().mkpath(to);
    const QDir src(from);
    for (const QFileInfo &fi : src.entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QString target = to + QLatin1Char('/') + fi.fileName();
        if (fi.isDir() ? !copyTree(fi.absoluteFilePath(), target) : !QFile::copy(fi.absoluteFilePath(), target))
            return false;
    }
    return true;
}

bool openAndTriage(const QString &folder, Catalog *catalog, TriageResult *result, QString *error)
{
    if (!testing::openAndIngest(folder, catalog, error))
        return false;
    *result = triage(*catalog);
    return true;
}

QString runNameOf(const Catalog &catalog, RunRef ref)
{
    for (const Run &r : catalog.runs()) {
        if (r.ref == ref)
            return r.name;
    }
    return {};
}

// "--tp-comm-overlap", "MODEL_ARGS.--tp-comm-overlap" and "tp_comm_overlap" name the same flag.
QString flagName(const QString &key)
{
    QString k = key.section(QLatin1Char('.'), -1);
    while (k.startsWith(QLatin1Char('-')))
        k.remove(0, 1);
    return k.replace(QLatin1Char('_'), QLatin1Char('-')).toLower();
}

// Why a comparison does not match what was planted ("" when it does), by the acceptance rules.
QString judge(const QJsonObject &planted, const Comparison &c)
{
    QStringList wrong;
    const QString scenario = planted.value(QStringLiteral("scenario")).toString();
    if (verdictName(c.verdict) != scenario)
        wrong << QStringLiteral("verdict %1").arg(verdictName(c.verdict));
    const double planned = planted.value(QStringLiteral("planned_steps")).toDouble();
    const QJsonValue dep = planted.value(QStringLiteral("departure_step"));
    if (dep.isNull() && c.departure)
        wrong << QStringLiteral("a departure at %1 where none was planted").arg(*c.departure);
    if (!dep.isNull()) {
        if (!c.departure)
            wrong << QStringLiteral("no departure (planted at %1)").arg(dep.toDouble());
        else if (std::abs(double(*c.departure) - dep.toDouble()) > 0.05 * planned)
            wrong << QStringLiteral("departure %1 (planted at %2)").arg(*c.departure).arg(dep.toDouble());
    }
    if (scenario == QLatin1String("mid-run-instability")) {
        const auto first = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::LayerSignal; });
        if (first == c.findings.end())
            wrong << QStringLiteral("no layer signal");
        else if (first->layer != planted.value(QStringLiteral("layer")).toString()
            || first->tensor != planted.value(QStringLiteral("tensor")).toString())
            wrong << QStringLiteral("first layer signal %1 %2").arg(first->layer, first->tensor);
    }
    if (scenario == QLatin1String("mid-run-instability")) {
        // The suggestion: the planted layer kept in BF16 as a TE debug config; Megatron's first/last-layer
        // flags only when the suspects are such layers (the planted one is the first suspect).
        const auto dep = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::LossDeparture; });
        const QString layer = planted.value(QStringLiteral("layer")).toString();
        const int layers = planted.value(QStringLiteral("layers")).toInt();
        static const QRegularExpression index(QStringLiteral("(?:^|\\.)(?:layers?|blocks?|h)\\.(\\d+)(?:\\.|$)"));
        const int at = index.match(layer).captured(1).toInt();
        if (dep != c.findings.end()) {
            // The step's action and the config it applies (the YAML apart, as Copy copies it).
            const auto step = std::find_if(c.nextSteps.begin(), c.nextSteps.end(),
                [](const analysis::NextStep &n) { return n.kind == analysis::FindingKind::LossDeparture; });
            const QString config = step == c.nextSteps.end() ? QString() : step->config;
            if (!dep->suggestion.contains(layer) || !config.contains(QRegularExpression::escape(layer))
                || !config.contains(QLatin1String("DisableQuantizationLayer")))
                wrong << QStringLiteral("no BF16 config for %1").arg(layer);
            if (dep->suggestion.contains(QLatin1String("--first-last-layers-bf16")) && at > 1 && at < layers - 2)
                wrong << QStringLiteral("first/last-layer flags for layer %1 of %2").arg(at).arg(layers);
        }
    }
    if (scenario == QLatin1String("early-divergence")) {
        for (const QJsonValue &k : planted.value(QStringLiteral("keys")).toArray()) {
            const bool named = std::any_of(c.findings.begin(), c.findings.end(), [&](const Finding &f) {
                return (f.kind == analysis::FindingKind::ConfigDifference
                           || f.kind == analysis::FindingKind::VersionDifference)
                    && f.severity == Severity::Warning && flagName(f.key) == flagName(k.toString());
            });
            if (!named)
                wrong << QStringLiteral("%1 not named").arg(k.toString());
        }
    }
    if (scenario == QLatin1String("downstream-gap")) {
        QStringList found;
        for (const Finding &f : c.findings) {
            if (f.kind == analysis::FindingKind::EvalGap && !found.contains(f.task))
                found << f.task;
        }
        found.sort();
        QStringList want;
        for (const QJsonValue &t : planted.value(QStringLiteral("tasks")).toArray())
            want << t.toString();
        want.sort();
        if (found != want)
            wrong << QStringLiteral("gap tasks %1 (planted %2)")
                         .arg(found.join(QLatin1Char(',')), want.join(QLatin1Char(',')));
    }
    // An inference export in the run's folder: its planted fault found on its layer, and in a downstream gap the
    // first thing to try is its re-export; a clean one gives no audit finding.
    const QJsonObject exported = planted.value(QStringLiteral("inference_export")).toObject();
    if (!exported.isEmpty()) {
        const QString fault = exported.value(QStringLiteral("fault")).toString();
        const QString layer = exported.value(QStringLiteral("layer")).toString();
        QStringList audited;
        bool found = false;
        for (const Finding &f : c.findings) {
            if (f.kind != analysis::FindingKind::CheckpointAudit)
                continue;
            const QString at = f.evidence.value(QStringLiteral("inference_layer")).toString();
            audited << f.key + QLatin1Char(' ') + at;
            found = found || (f.key == fault && at == layer);
        }
        if (fault.isEmpty() && !audited.isEmpty())
            wrong << QStringLiteral("audit findings on a clean export: %1").arg(audited.join(QLatin1Char(',')));
        if (!fault.isEmpty() && (!found || audited.size() != 1))
            wrong << QStringLiteral("export fault %1 on %2 planted, found %3")
                         .arg(
                             fault, layer, audited.isEmpty() ? QStringLiteral("none") : audited.join(QLatin1Char(',')));
        if (!fault.isEmpty() && scenario == QLatin1String("downstream-gap")
            && (c.nextSteps.empty() || c.nextSteps.front().kind != analysis::FindingKind::CheckpointAudit
                || !c.nextSteps.front().action.contains(layer)))
            wrong << QStringLiteral("the first next step is not the re-export of %1").arg(layer);
    }
    // A crash and resume in the run's log: said, with where it went back from and to (the restart is not part
    // of the acceptance rules, but it must be right when there).
    const QJsonObject restart = planted.value(QStringLiteral("restart")).toObject();
    const auto said = std::find_if(c.findings.begin(), c.findings.end(),
        [](const Finding &f) { return f.kind == analysis::FindingKind::Restart; });
    if (restart.isEmpty() != (said == c.findings.end()))
        wrong << QStringLiteral("restart %1")
                     .arg(restart.isEmpty() ? QStringLiteral("said") : QStringLiteral("not said"));
    if (!restart.isEmpty() && said != c.findings.end()) {
        const QJsonObject r = said->evidence.value(QStringLiteral("rewinds")).toArray().first().toObject();
        if (r.value(QStringLiteral("resumed_from")) != restart.value(QStringLiteral("resumed_from"))
            || r.value(QStringLiteral("last_step_before")) != restart.value(QStringLiteral("crash_step")))
            wrong << QStringLiteral("restart %1 -> %2")
                         .arg(r.value(QStringLiteral("last_step_before")).toDouble())
                         .arg(r.value(QStringLiteral("resumed_from")).toDouble());
    }
    if (scenario == QLatin1String("none")) {
        // A healthy pair: nothing to look at, neither critical nor a warning.
        for (const Finding &f : c.findings) {
            if (f.severity != Severity::Info)
                wrong << QStringLiteral("%1 %2").arg(severityName(f.severity), findingKindName(f.kind));
        }
    }
    return wrong.join(QStringLiteral("; "));
}

} // namespace

class TestTriage : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void scenarios_data();
    void scenarios();
    void scenarioIsDeterministic();
    void scenarioCli();
    void storedFindings();
    void reviewsSurviveARebuild();
    void compareCli();
    void alignsOnConsumedSamples();
    void skippedIterationsAgainstTheBaseline();
    void recipeWhatIfOnADump();
    void auditOfAnExportCalibratedTheUsualWay();
    void recipeWhatIfOnTransformerEngineDumps();
    void adviceStartsFromTheRunsRecipe();
    void reviewsApplyToTheNextSteps();
    void notableEvalDropsAndOneSign();
    void storedAnswersFollowTheExport();
    void storedAnswersFollowTheRules();
    void oneAnswerBothWays();
    void auditFindsTheRunsOwnExport();
    void aRunOnItsOwnAsAComparison();
    void severalRunsOfOneBaseline();
    void attemptsOfOneBaseline();
    void changeGroups();
    void realFixtures();
    void oneExpertOrAllExperts_data();
    void oneExpertOrAllExperts();
    void precisionOfTheLayers();
};

void TestTriage::scenarios_data()
{
    QTest::addColumn<int>("scenario");
    for (Scenario s : {Scenario::EarlyDivergence, Scenario::MidRunInstability, Scenario::LossSpikes,
             Scenario::DownstreamGap, Scenario::None})
        QTest::newRow(qPrintable(scenarioName(s))) << int(s);
}

void TestTriage::scenarios()
{
    QFETCH(int, scenario);
    const Scenario s = Scenario(scenario);
    int right = 0;
    QStringList failures;
    // FP8SCOPE_TRIAGE_SEEDS=21-60 judges the held-out seeds instead (counted, not asserted: docs/TRIAGE.md).
    int first = 1, last = kSeeds;
    const QStringList range = qEnvironmentVariable("FP8SCOPE_TRIAGE_SEEDS").split(QLatin1Char('-'));
    const bool heldOut = range.size() == 2 && range[0].toInt() > 0 && range[1].toInt() >= range[0].toInt();
    if (heldOut) {
        first = range[0].toInt();
        last = range[1].toInt();
    }
    for (int seed = first; seed <= last; ++seed) {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        ScenarioPlan plan;
        QString error;
        QVERIFY2(generateScenario(dir.path(), s, uint64_t(seed), &plan, &error), qPrintable(error));
        QFile f(dir.filePath(QStringLiteral("planted.json")));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject planted = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(planted.value(QStringLiteral("scenario")).toString(), scenarioName(s));
        Catalog catalog;
        TriageResult result;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        // The FP8 run pairs with its baseline by config and name alone (no manifests): one comparison.
        QCOMPARE(int(result.comparisons.size()), 1);
        const Comparison &c = result.comparisons.front();
        QCOMPARE(runNameOf(catalog, c.baseline), planted.value(QStringLiteral("baseline")).toString());
        QCOMPARE(runNameOf(catalog, c.run), planted.value(QStringLiteral("run")).toString());
        const QString why = judge(planted, c);
        if (why.isEmpty())
            ++right;
        else
            failures << QStringLiteral("seed %1: %2").arg(seed).arg(why);
    }
    // The table docs/TRIAGE.md quotes.
    qInfo("%s: %d of %d right%s", qPrintable(scenarioName(s)), right, last - first + 1,
        failures.isEmpty() ? "" : qPrintable(QStringLiteral(" (%1)").arg(failures.join(QStringLiteral(" | ")))));
    if (!heldOut)
        QVERIFY2(right >= kSeeds - 1, qPrintable(failures.join(QLatin1Char('\n'))));
}

void TestTriage::scenarioIsDeterministic()
{
    // The same seed writes the same files; another seed another run (steps, names or values differ).
    QTemporaryDir a, b, c;
    ScenarioPlan pa, pb, pc;
    QString error;
    QVERIFY(generateScenario(a.path(), Scenario::MidRunInstability, 7, &pa, &error));
    QVERIFY(generateScenario(b.path(), Scenario::MidRunInstability, 7, &pb, &error));
    QVERIFY(generateScenario(c.path(), Scenario::MidRunInstability, 8, &pc, &error));
    QCOMPARE(pa.layer, pb.layer);
    QCOMPARE(pa.departureStep, pb.departureStep);
    const auto read = [](const QString &path) {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
    };
    QCOMPARE(read(a.filePath(QStringLiteral("planted.json"))), read(b.filePath(QStringLiteral("planted.json"))));
    QVERIFY(read(a.filePath(QStringLiteral("planted.json"))) != read(c.filePath(QStringLiteral("planted.json"))));
    QVERIFY(pa.onsetStep && pa.departureStep && *pa.onsetStep < *pa.departureStep);
}

void TestTriage::scenarioCli()
{
    // fp8scope-cli demo --scenario writes the pair; fp8scope-cli triage --json reads it as the spec prints it.
    const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
    QVERIFY(!cli.isEmpty());
    QTemporaryDir dir;
    QProcess demo;
    demo.start(cli,
        {QStringLiteral("demo"), dir.path(), QStringLiteral("--scenario"), QStringLiteral("early-divergence"),
            QStringLiteral("--seed"), QStringLiteral("3")});
    QVERIFY(demo.waitForFinished(120000));
    QCOMPARE(demo.exitCode(), 0);
    QVERIFY(QString::fromUtf8(demo.readAllStandardOutput()).contains(QLatin1String("early-divergence")));
    QProcess bad;
    bad.start(cli,
        {QStringLiteral("demo"), dir.path() + QStringLiteral("/x"), QStringLiteral("--scenario"),
            QStringLiteral("sideways")});
    QVERIFY(bad.waitForFinished(60000));
    QCOMPARE(bad.exitCode(), 2);
    QVERIFY(QString::fromUtf8(bad.readAllStandardError()).contains(QLatin1String("--scenario is early-divergence")));

    QProcess tri;
    tri.start(cli, {QStringLiteral("triage"), dir.path(), QStringLiteral("--json")});
    QVERIFY(tri.waitForFinished(120000));
    QCOMPARE(tri.exitCode(), 0);
    const QJsonObject doc = QJsonDocument::fromJson(tri.readAllStandardOutput()).object();
    QCOMPARE(doc.value(QStringLiteral("version")).toInt(), 1);
    const QJsonArray comparisons = doc.value(QStringLiteral("comparisons")).toArray();
    QCOMPARE(comparisons.size(), 1);
    const QJsonObject c = comparisons.first().toObject();
    QCOMPARE(c.value(QStringLiteral("verdict")).toString(), QStringLiteral("early-divergence"));
    QVERIFY(c.value(QStringLiteral("departure_step")).isDouble());
    QVERIFY(c.contains(QStringLiteral("lead_steps")));
    const QJsonArray findings = c.value(QStringLiteral("findings")).toArray();
    QVERIFY(!findings.isEmpty());
    const QJsonObject first = findings.first().toObject();
    QCOMPARE(first.value(QStringLiteral("kind")).toString(), QStringLiteral("loss-departure"));
    QCOMPARE(first.value(QStringLiteral("severity")).toString(), QStringLiteral("critical"));
    QVERIFY(first.value(QStringLiteral("evidence")).toObject().contains(QStringLiteral("noise")));
    QVERIFY(!first.value(QStringLiteral("suggestion")).toString().isEmpty());
    for (const QJsonValue &v : findings) {
        const QJsonObject f = v.toObject();
        for (const QString &k : f.keys())
            QVERIFY2(
                QStringList({QStringLiteral("kind"), QStringLiteral("severity"), QStringLiteral("layer"),
                                QStringLiteral("tensor"), QStringLiteral("stat"), QStringLiteral("step"),
                                QStringLiteral("last_step"), QStringLiteral("key"), QStringLiteral("task"),
                                QStringLiteral("summary"), QStringLiteral("evidence"), QStringLiteral("suggestion")})
                    .contains(k),
                qPrintable(k));
        QVERIFY(!f.value(QStringLiteral("summary")).toString().isEmpty());
    }
    for (const QJsonValue &v : doc.value(QStringLiteral("runs")).toArray()) {
        const QJsonObject r = v.toObject();
        QVERIFY(r.contains(QStringLiteral("run")) && r.contains(QStringLiteral("verdict"))
            && r.contains(QStringLiteral("departure_step")) && r.contains(QStringLiteral("findings")));
    }
}

// Findings are stored with the stamp of the data they came from: read back while it holds, computed again
// once the files change (a rewritten log, a deleted run, a recomputed metric) or the options do.
// The reviews of findings are the one thing in a store no file holds: a rebuild reads them first and carries
// them into the new store by run name, and the next ingest gives them back to the runs (with their new ids),
// state, note and time unchanged. A store too damaged to read is rebuilt all the same, with nothing to carry.
void TestTriage::reviewsSurviveARebuild()
{
    QTemporaryDir dir;
    QString error;
    ScenarioPlan plan;
    QVERIFY2(generateScenario(dir.path(), Scenario::MidRunInstability, 4, &plan, &error), qPrintable(error));
    TriageResult result;
    std::vector<FindingReview> before;
    {
        Catalog catalog;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        const Comparison &c = result.comparisons.front();
        const auto [folder, name] = catalog.baselineKey(c.run, c.baseline);
        RunStore *store = CatalogTestAccess::store(catalog, c.run);
        QVERIFY2(store->storeFindingReview(c.run.id, folder, name,
                     {findingIdentity(c.findings.front()), ReviewState::Dismissed, QStringLiteral("a distractor"),
                         QString()},
                     &error),
            qPrintable(error));
        QVERIFY2(store->storeFindingReview(c.run.id, QString(), QString(),
                     {findingIdentity(c.findings.back()), ReviewState::Confirmed, QString(), QString()}, &error),
            qPrintable(error));
        before = catalog.findingReviews(c.run, c.baseline);
        QCOMPARE(before.size(), size_t(1));
    }
    RunStore fresh;
    int carried = -1;
    QVERIFY2(fresh.rebuild(dir.path(), &error, &carried), qPrintable(error));
    QCOMPARE(carried, 2);
    QCOMPARE(fresh.carriedReviews(), 2); // until the runs are ingested again
    QVERIFY(fresh.ingest().errors.isEmpty());
    QCOMPARE(fresh.carriedReviews(), 0);
    {
        Catalog catalog;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        const Comparison &c = result.comparisons.front();
        QCOMPARE(runNameOf(catalog, c.run), plan.run);
        const std::vector<FindingReview> after = catalog.findingReviews(c.run, c.baseline);
        QCOMPARE(after.size(), size_t(1));
        QCOMPARE(after.front().finding, before.front().finding);
        QCOMPARE(after.front().state, ReviewState::Dismissed);
        QCOMPARE(after.front().note, QStringLiteral("a distractor"));
        QCOMPARE(after.front().reviewedAt, before.front().reviewedAt);
        QCOMPARE(catalog.findingReviews(c.run, {}).size(), size_t(1));
        QCOMPARE(catalog.findingReviews(c.run, {}).front().state, ReviewState::Confirmed);
    }
    // A review of a run the folder no longer has stays carried (kept, not thrown away) through a rebuild.
    QVERIFY(QDir(dir.filePath(plan.run)).removeRecursively());
    {
        RunStore again;
        QVERIFY2(again.rebuild(dir.path(), &error, &carried), qPrintable(error));
        QCOMPARE(carried, 2);
        QVERIFY(again.ingest().errors.isEmpty());
        QCOMPARE(again.carriedReviews(), 2);
    }
    // A store that is not a database: rebuilt all the same, nothing carried.
    const QString path = RunStore::storePathFor(dir.path());
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QByteArray(8192, 'x'));
    }
    RunStore damaged;
    QVERIFY2(damaged.rebuild(dir.path(), &error, &carried), qPrintable(error));
    QCOMPARE(carried, 0);
    QVERIFY(damaged.ingest().errors.isEmpty());
}

void TestTriage::storedFindings()
{
    QTemporaryDir dir;
    QString error;
    ScenarioPlan plan;
    QVERIFY2(generateScenario(dir.path(), Scenario::MidRunInstability, 3, &plan, &error), qPrintable(error));
    const auto findingsJson = [](const std::vector<Finding> &fs) {
        QJsonArray a;
        for (const Finding &f : fs)
            a.append(findingJson(f));
        return a;
    };
    const auto ingest = [](Catalog &c) {
        const IngestReport report = CatalogTestAccess::storeOf(c, c.stores().front().serial)->ingest();
        c.refresh();
        return report.errors.isEmpty();
    };
    Catalog catalog;
    QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
    QVERIFY(ingest(catalog));
    QStringList errors;
    const TriageResult first = triageStored(catalog, {}, &errors);
    QVERIFY2(errors.isEmpty(), qPrintable(errors.join(QLatin1Char('\n'))));
    QCOMPARE(int(first.comparisons.size()), 1);
    const Comparison &c1 = first.comparisons.front();
    QVERIFY(!c1.fromStore);
    QCOMPARE(c1.verdict, Verdict::MidRunInstability);
    QVERIFY(c1.departure);
    // What is stored reads back as it was computed, in order, evidence and step ranges included.
    const TriageResult second = triageStored(catalog, {}, &errors);
    QCOMPARE(int(second.comparisons.size()), 1);
    const Comparison &c2 = second.comparisons.front();
    QVERIFY(c2.fromStore);
    QCOMPARE(c2.verdict, c1.verdict);
    QCOMPARE(c2.departure, c1.departure);
    QCOMPARE(c2.lead, c1.lead);
    QCOMPARE(c2.plannedSteps, c1.plannedSteps);
    QCOMPARE(findingsJson(c2.findings), findingsJson(c1.findings));
    QCOMPARE(int(c2.findings.size()), int(c1.findings.size()));
    for (size_t i = 0; i < c1.findings.size(); ++i)
        QCOMPARE(c2.findings[i].lastStep, c1.findings[i].lastStep);
    QCOMPARE(int(second.runs.size()), int(first.runs.size()));
    for (const RunCheck &r : second.runs)
        QVERIFY(r.fromStore);
    // ... by another connection too (the next process).
    {
        Catalog other;
        QVERIFY2(other.open(dir.path(), &error), qPrintable(error));
        QVERIFY(ingest(other)); // nothing changed: the stamp still holds
        const TriageResult again = triageStored(other, {}, &errors);
        QVERIFY(again.comparisons.front().fromStore);
        QCOMPARE(findingsJson(again.comparisons.front().findings), findingsJson(c1.findings));
    }
    // Other options: computed again.
    TriageOptions stricter;
    stricter.departure.noiseSigmas = 6;
    QVERIFY(!compareRunsStored(catalog, c1.baseline, c1.run, stricter).fromStore);
    QVERIFY(!compareRunsStored(catalog, c1.baseline, c1.run).fromStore); // the default's result was replaced
    QVERIFY(compareRunsStored(catalog, c1.baseline, c1.run).fromStore);
    // A user's review of a finding is kept by the finding's identity; it is not data: no generation moves, the
    // stored result still holds.
    const QString identity = findingIdentity(c1.findings.front());
    const auto [reviewFolder, reviewName] = catalog.baselineKey(c1.run, c1.baseline);
    QCOMPARE(reviewName, runNameOf(catalog, c1.baseline));
    const int64_t beforeReview = catalog.dataGeneration(c1.run.store);
    QVERIFY2(CatalogTestAccess::store(catalog, c1.run)
                 ->storeFindingReview(c1.run.id, reviewFolder, reviewName,
                     {identity, ReviewState::Confirmed, QStringLiteral("seen it"), QString()}, &error),
        qPrintable(error));
    QVERIFY2(CatalogTestAccess::store(catalog, c1.run)
                 ->storeFindingReview(c1.run.id, reviewFolder, reviewName,
                     {identity, ReviewState::Dismissed, QStringLiteral("a distractor"), QString()}, &error),
        qPrintable(error));
    // States are typed: a name this fp8scope does not know (a newer one wrote it) reads as open, never hidden.
    QCOMPARE(reviewStateNamed(QStringLiteral("later")), std::optional<ReviewState>());
    QCOMPARE(reviewStateNamed(QStringLiteral("dismissed")), std::optional<ReviewState>(ReviewState::Dismissed));
    QCOMPARE(catalog.dataGeneration(c1.run.store), beforeReview);
    QVERIFY(compareRunsStored(catalog, c1.baseline, c1.run).fromStore);
    const auto reviewsOf = [&](RunRef run, RunRef base) { return catalog.findingReviews(run, base); };
    QCOMPARE(reviewsOf(c1.run, c1.baseline).size(), size_t(1)); // replaced, not added
    QCOMPARE(reviewsOf(c1.run, c1.baseline).front().state, ReviewState::Dismissed);
    QCOMPARE(reviewsOf(c1.run, c1.baseline).front().note, QStringLiteral("a distractor"));
    QVERIFY(reviewsOf(c1.run, {}).empty()); // the run checked alone has its own
    // A recomputed metric moves the data generation.
    const int64_t generation = catalog.dataGeneration(c1.run.store);
    QVERIFY(generation >= 0);
    QVERIFY2(CatalogTestAccess::store(catalog, c1.run)
                 ->storeRecomputed(c1.run.id,
                     {.layer = QStringLiteral("layers.0"), .tensor = QStringLiteral("activation"), .step = 10},
                     QStringLiteral("current"), {{QStringLiteral("mse"), 0.5}}, &error),
        qPrintable(error));
    QVERIFY(catalog.dataGeneration(c1.run.store) > generation);
    QVERIFY(!compareRunsStored(catalog, c1.baseline, c1.run).fromStore);
    // The result computed again keeps the review.
    QCOMPARE(reviewsOf(c1.run, c1.baseline).size(), size_t(1));
    // The FP8 run's log rewritten with the baseline's loss: the stored departure no longer holds.
    QVERIFY(QFileInfo::exists(dir.filePath(plan.run + QStringLiteral("/stdout.log"))));
    const QString runLog = dir.filePath(plan.run + QStringLiteral("/stdout.log"));
    QVERIFY(QFile::remove(runLog));
    QVERIFY(QFile::copy(dir.filePath(plan.baseline + QStringLiteral("/stdout.log")), runLog));
    QVERIFY(ingest(catalog));
    const TriageResult rewritten = triageStored(catalog, {}, &errors);
    QCOMPARE(int(rewritten.comparisons.size()), 1);
    QVERIFY(!rewritten.comparisons.front().fromStore);
    QVERIFY(!rewritten.comparisons.front().departure);
    // A run that goes takes its results with it.
    const RunRef gone = rewritten.comparisons.front().run;
    const RunRef baseline = rewritten.comparisons.front().baseline;
    QVERIFY(catalog.storedTriage(gone, baseline));
    QVERIFY(QDir(dir.filePath(plan.run)).removeRecursively());
    QVERIFY(ingest(catalog));
    QVERIFY(!catalog.run(gone));
    QVERIFY(
        !CatalogTestAccess::store(catalog, baseline)->triageResult(gone.id, QString(), runNameOf(catalog, baseline)));
    QVERIFY(CatalogTestAccess::store(catalog, baseline)
                ->findingReviews(gone.id, QString(), runNameOf(catalog, baseline))
                .empty());
    QVERIFY(triageStored(catalog).comparisons.empty());
}

// fp8scope-cli compare: the aligned loss, its difference, band and departure, as the triage found it; the grad
// norm by its source's name; CSV with one row per aligned step; mistakes said.
void TestTriage::compareCli()
{
    const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
    QVERIFY(!cli.isEmpty());
    QTemporaryDir dir;
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(dir.path(), Scenario::MidRunInstability, 5, &plan, &error), qPrintable(error));
    const auto run = [&](const QStringList &args, int *code) {
        QProcess p;
        p.start(cli, QStringList {QStringLiteral("compare"), dir.path()} + args);
        if (!p.waitForFinished(120000))
            return QByteArray("timeout");
        *code = p.exitCode();
        return QByteArray(p.readAllStandardOutput() + p.readAllStandardError());
    };
    int code = -1;
    const QJsonObject doc
        = QJsonDocument::fromJson(run({QStringLiteral("--run"), plan.run, QStringLiteral("--json")}, &code)).object();
    QCOMPARE(code, 0);
    QCOMPARE(doc.value(QStringLiteral("baseline")).toString(), plan.baseline); // the run's pairing
    QCOMPARE(doc.value(QStringLiteral("stat")).toString(), QStringLiteral("lm loss"));
    const QJsonObject dep = doc.value(QStringLiteral("departure")).toObject();
    Catalog catalog;
    TriageResult result;
    QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
    QCOMPARE(int(result.comparisons.size()), 1);
    QVERIFY(result.comparisons.front().departure);
    QCOMPARE(int64_t(dep.value(QStringLiteral("step")).toDouble()), *result.comparisons.front().departure);
    const QJsonArray points = doc.value(QStringLiteral("points")).toArray();
    QCOMPARE(points.size(), dep.value(QStringLiteral("points")).toInt());
    // The last point is the smoothed gap at the end, above the edge (the run stays above).
    const QJsonObject last = points.last().toObject();
    QCOMPARE(last.value(QStringLiteral("smoothed")).toDouble(), dep.value(QStringLiteral("gap_at_end")).toDouble());
    QVERIFY(last.value(QStringLiteral("smoothed")).toDouble() > last.value(QStringLiteral("edge")).toDouble());
    for (const QJsonValue &v : points) {
        const QJsonObject p = v.toObject();
        QVERIFY(qAbs(p.value(QStringLiteral("run")).toDouble() - p.value(QStringLiteral("baseline")).toDouble()
                    - p.value(QStringLiteral("difference")).toDouble())
            < 1e-9);
    }
    const QByteArray csv = run({QStringLiteral("--run"), plan.run, QStringLiteral("--baseline"), plan.baseline,
                                   QStringLiteral("--stat"), QStringLiteral("grad-norm"), QStringLiteral("--csv")},
        &code);
    QCOMPARE(code, 0);
    const QList<QByteArray> lines = csv.trimmed().split('\n');
    QCOMPARE(lines.front(), QByteArray("step,baseline,run,difference,smoothed,edge"));
    QVERIFY(lines.size() > 20);
    QCOMPARE(lines.at(1).split(',').size(), 6);
    const QByteArray text = run({QStringLiteral("--run"), plan.run}, &code);
    QCOMPARE(code, 0);
    QVERIFY2(text.contains(QByteArray("departs at step " + QByteArray::number(*result.comparisons.front().departure))),
        text.constData());
    QVERIFY(run({QStringLiteral("--run"), plan.run, QStringLiteral("--stat"), QStringLiteral("nonsense")}, &code)
                .contains("has no 'nonsense' series"));
    QCOMPARE(code, 1);
    QVERIFY(run({QStringLiteral("--run"), plan.baseline}, &code).contains("has no baseline"));
    QCOMPARE(code, 1);
    run({}, &code);
    QCOMPARE(code, 2);
}

// Two runs with other global batch sizes: the FP8 run takes half the baseline's samples per step, so at the
// same step its loss is higher although at the same consumed samples it is the same. Compared on samples:
// no departure; the same logs without their consumed samples can only be compared on step, and depart.
void TestTriage::alignsOnConsumedSamples()
{
    const auto log = [](int64_t batch, int64_t steps, uint32_t seed, bool withSamples) {
        std::mt19937 rng(seed);
        std::normal_distribution<double> noise(0.0, 0.01);
        QByteArray out;
        for (int64_t step = 10; step <= steps; step += 10) {
            const double samples = double(batch * step);
            const double loss = 2.0 + 8.0 * std::pow(1.0 + samples / 20000.0, -0.5) + noise(rng);
            out += " iteration " + QByteArray::number(step).rightJustified(8, ' ') + "/"
                + QByteArray::number(steps).rightJustified(8, ' ') + " |"
                + (withSamples ? " consumed samples: " + QByteArray::number(batch * step) + " |" : QByteArray())
                + " lm loss: " + QByteArray::number(loss, 'E', 6) + " |\n";
        }
        return out;
    };
    for (const bool withSamples : {true, false}) {
        QTemporaryDir dir;
        const auto write = [&](const QString &name, const QByteArray &bytes) {
            QDir().mkpath(QFileInfo(dir.filePath(name)).absolutePath());
            QFile f(dir.filePath(name));
            return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
        };
        QVERIFY(write(QStringLiteral("fp8scope-workspace.json"),
            R"({"runs": {"bf16": {"precision": "bf16"}, "fp8": {"precision": "fp8", "baseline": "bf16"}}})"));
        QVERIFY(write(QStringLiteral("bf16/train.log"), log(256, 2000, 1, withSamples)));
        QVERIFY(write(QStringLiteral("fp8/train.log"), log(128, 4000, 2, withSamples)));
        Catalog catalog;
        TriageResult result;
        QString error;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        QCOMPARE(int(result.comparisons.size()), 1);
        const Comparison &c = result.comparisons.front();
        const StatComparison loss = compareStatistic(catalog, c.baseline, c.run, QStringLiteral("lm loss"));
        if (withSamples) {
            QCOMPARE(loss.axis, QStringLiteral("consumed samples"));
            QVERIFY2(!c.departure, qPrintable(QString::number(c.departure.value_or(-1))));
            QCOMPARE(c.verdict, Verdict::None);
            // The trace is on the axis: the baseline's 200 points, at its consumed samples (256 per step).
            QCOMPARE(loss.departure.trace.steps.front(), int64_t(2560));
            QCOMPARE(int(loss.departure.points), 200);
        } else {
            QCOMPARE(loss.axis, QStringLiteral("step"));
            QVERIFY(c.departure);
        }
    }
}

// Skipped iterations after the start-up, against the baseline: away from the run's loss spikes and more often
// than the baseline's, a warning; as often as the baseline's, or each at one of the run's own loss spikes (that
// spike's symptom), information only.
void TestTriage::skippedIterationsAgainstTheBaseline()
{
    // A Megatron log of 4000 steps every 10, the skips in the intervals ending at `skipsAt`, a loss spike of 1.0
    // at each of `spikesAt`.
    const auto log = [](uint32_t seed, const std::vector<int64_t> &skipsAt, const std::vector<int64_t> &spikesAt) {
        std::mt19937 rng(seed);
        std::normal_distribution<double> noise(0.0, 0.01);
        QByteArray out;
        for (int64_t step = 10; step <= 4000; step += 10) {
            double loss = 2.0 + 8.0 * std::pow(1.0 + double(step) / 100.0, -0.5) + noise(rng);
            if (std::find(spikesAt.begin(), spikesAt.end(), step) != spikesAt.end())
                loss += 1.0;
            const int skipped = std::find(skipsAt.begin(), skipsAt.end(), step) != skipsAt.end() ? 2 : 0;
            out += " iteration " + QByteArray::number(step).rightJustified(8, ' ')
                + "/    4000 | lm loss: " + QByteArray::number(loss, 'E', 6) + " | number of skipped iterations: "
                + QByteArray::number(skipped).rightJustified(3) + " | number of nan iterations:   0 |\n";
        }
        return out;
    };
    const std::vector<int64_t> six {700, 1300, 1900, 2500, 3100, 3700};
    const std::vector<int64_t> sixElse {900, 1500, 2100, 2700, 3300, 3900};
    struct Case {
        const char *name;
        std::vector<int64_t> runSkips, runSpikes, baseSkips;
        Severity want;
        int atSpikes;
    };
    const Case cases[] = {
        {"away from spikes, the baseline never skips", six, {}, {}, Severity::Warning, 0},
        {"as often as the baseline", six, {}, sixElse, Severity::Info, 0},
        {"at the run's own spikes", {700, 1900, 3100, 3700}, {700, 1900, 3100, 3700}, {}, Severity::Info, 4},
    };
    for (const Case &k : cases) {
        QTemporaryDir dir;
        const auto write = [&](const QString &name, const QByteArray &bytes) {
            QDir().mkpath(QFileInfo(dir.filePath(name)).absolutePath());
            QFile f(dir.filePath(name));
            return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
        };
        QVERIFY(write(QStringLiteral("fp8scope-workspace.json"),
            R"({"runs": {"bf16": {"precision": "bf16"}, "fp8": {"precision": "fp8", "baseline": "bf16"}}})"));
        QVERIFY(write(QStringLiteral("bf16/train.log"), log(1, k.baseSkips, {})));
        QVERIFY(write(QStringLiteral("fp8/train.log"), log(2, k.runSkips, k.runSpikes)));
        Catalog catalog;
        TriageResult result;
        QString error;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        QCOMPARE(int(result.comparisons.size()), 1);
        const Comparison &c = result.comparisons.front();
        const auto f = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::SkippedIterations; });
        QVERIFY2(f != c.findings.end(), k.name);
        QVERIFY2(f->severity == k.want, qPrintable(QString::fromLatin1(k.name) + QStringLiteral(": ") + f->summary));
        QCOMPARE(f->evidence.value(QStringLiteral("skipped_after_start")).toDouble(), 2.0 * double(k.runSkips.size()));
        QCOMPARE(f->evidence.value(QStringLiteral("intervals_at_spikes")).toInt(), k.atSpikes);
    }
}

// The demo pair dumps its planted layer's activation near the onset: the first suspect's what-if names the
// dump nearest its onset and, until it is recomputed, how to get the table; after `fp8scope-cli recompute`
// under four recipes the table holds each recipe's metrics at that step and names the one with the least MSE.
void TestTriage::recipeWhatIfOnADump()
{
    QTemporaryDir dir;
    DemoPlan plan;
    QString error;
    QVERIFY2(generateDemo(dir.path(), {}, &plan, &error), qPrintable(error));
    const auto whatIf = [](const Comparison &c) {
        const auto it = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::RecipeWhatIf; });
        return it == c.findings.end() ? std::optional<Finding>() : std::optional<Finding>(*it);
    };
    int64_t onset = 0;
    {
        Catalog catalog;
        TriageResult result;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        QCOMPARE(int(result.comparisons.size()), 1);
        const Comparison &c = result.comparisons.front();
        const auto first = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::LayerSignal; });
        QVERIFY(first != c.findings.end());
        QCOMPARE(first->layer, plan.plantedLayerName);
        onset = *first->step;
        const auto w = whatIf(c);
        QVERIFY(w);
        QCOMPARE(w->layer, plan.plantedLayerName);
        QCOMPARE(w->tensor, plan.plantedTensor);
        // The dump that shows the damage: at or after the onset, where the suspect's statistic is furthest from
        // its early level; not the one nearest the onset (where nothing is wrong yet).
        QVERIFY(c.evidence);
        QCOMPARE(*w->step, c.evidence->dump.record.step);
        QVERIFY(*w->step >= onset);
        const auto series
            = catalog.chooseSeries(c.run, {.stat = first->stat, .layer = first->layer, .tensor = first->tensor});
        QVERIFY(series);
        const double chosen = catalog.valueAt(*series, *w->step)->value;
        int64_t nearest = 0;
        for (const QString &st : plan.dumpSteps) {
            const int64_t step = st.toLongLong();
            if (nearest == 0 || std::abs(step - onset) < std::abs(nearest - onset))
                nearest = step;
            if (step >= onset && step <= *c.departure + (*c.departure - onset))
                QVERIFY2(catalog.valueAt(*series, step)->value <= chosen, qPrintable(st));
        }
        QVERIFY2(chosen > 10 * catalog.valueAt(*series, nearest)->value + 1.0,
            qPrintable(QStringLiteral("%1 at the evidence dump %2, %3 at the dump %4 nearest the onset")
                           .arg(chosen)
                           .arg(*w->step)
                           .arg(catalog.valueAt(*series, nearest)->value)
                           .arg(nearest)));
        QVERIFY2(c.evidence->why.contains(QLatin1String("furthest")), qPrintable(c.evidence->why));
        // Not computed yet: the finding says how to get it, and the general recipe advice stays meanwhile.
        QVERIFY(w->evidence.value(QStringLiteral("recipes")).toObject().isEmpty());
        QVERIFY2(w->suggestion.contains(QLatin1String("--what-if")), qPrintable(w->suggestion));
        QVERIFY(!c.nextSteps.empty());
        QVERIFY2(c.nextSteps.front().action.contains(QLatin1String("a block recipe")),
            qPrintable(c.nextSteps.front().action));
    }
    // The stored triage computes the what-if of the evidence dump once and stores it.
    Catalog catalog;
    QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
    const TriageResult result = triageStored(catalog);
    QCOMPARE(int(result.comparisons.size()), 1);
    const auto w = whatIf(result.comparisons.front());
    QVERIFY(w);
    const QJsonObject recipes = w->evidence.value(QStringLiteral("recipes")).toObject();
    // The recipes a run could use for a forward activation under hybrid: E4M3, never E5M2.
    QCOMPARE(recipes.keys(),
        QStringList({QStringLiteral("bf16"), QStringLiteral("block1x128"), QStringLiteral("current"),
            QStringLiteral("delayed"), QStringLiteral("mxfp8"), QStringLiteral("nvfp4")}));
    // BF16 damages nothing (it is the reference) and is never the best: the FP8 recipe that damages the fewest values
    // is, and on the planted layer (outliers of varied size over a small bulk) that is a block recipe, which keeps
    // the bulk that per-tensor current scaling flushes.
    QCOMPARE(recipes.value(QStringLiteral("bf16")).toObject().value(QStringLiteral("damage%")).toDouble(), 0.0);
    const QString best = w->evidence.value(QStringLiteral("best")).toString();
    QVERIFY2(best == QLatin1String("mxfp8") || best == QLatin1String("block1x128"), qPrintable(best));
    const double damage = recipes.value(best).toObject().value(QStringLiteral("damage%")).toDouble();
    for (const QString &r : recipes.keys()) {
        const QJsonObject o = recipes.value(r).toObject();
        QVERIFY(o.contains(QStringLiteral("mse")) && o.contains(QStringLiteral("mean_rel_error%")));
        if (r != QLatin1String("bf16"))
            QVERIFY2(o.value(QStringLiteral("damage%")).toDouble() >= damage, qPrintable(r));
    }
    QVERIFY2(
        recipes.value(QStringLiteral("current")).toObject().value(QStringLiteral("damage%")).toDouble() > 5 * damage,
        QJsonDocument(recipes).toJson().constData());
    // Named first, with the flag that selects it.
    QVERIFY2(w->suggestion.startsWith(best + QLatin1Char(' ')), qPrintable(w->suggestion));
    QVERIFY2(w->suggestion.contains(QLatin1String("--fp8-recipe")), qPrintable(w->suggestion));
    const Comparison &c = result.comparisons.front();
    QVERIFY(c.whatIfBest);
    QCOMPARE(c.whatIf[*c.whatIfBest].recipe, best);
    // The next steps carry the what-if's suggestion and not the general advice beside it, which would contradict it.
    QVERIFY(std::any_of(c.nextSteps.begin(), c.nextSteps.end(),
        [&](const NextStep &n) { return n.kind == FindingKind::RecipeWhatIf && n.action.startsWith(best); }));
    for (const NextStep &n : c.nextSteps) {
        QVERIFY2(!n.action.contains(QLatin1String("a block recipe")), qPrintable(n.action));
        QVERIFY2(!n.action.contains(QLatin1String("does not help")), qPrintable(n.action));
    }
    // Stored: the triage read back from the store names the same best, without computing it again.
    const auto stored = storedWhatIfOf(catalog, c.evidence->dump);
    QVERIFY(stored);
    const Comparison again = compareRunsStored(catalog, c.baseline, c.run);
    QVERIFY(again.fromStore); // stamped with the generation the what-if it stored moved to
    QVERIFY(again.whatIfBest);
    QCOMPARE(again.whatIf[*again.whatIfBest].recipe, best);
}

// The checkpoint audit on exports written with torch and safetensors as calibrators write them (compressed-tensors,
// per-tensor weights, a static input_scale of the late activation amax / 448 from the training run's Transformer
// Engine statistics, write_checkpoints.py): max calibration, whether of the amax as printed or unrounded, stored in
// float32 or bfloat16, or of a late step below the window's largest, is no finding; a scale 40 times too small is a
// critical one; a layer the run trained in BF16 (Megatron's --first-last-layers-bf16) quantized is found by
// `fp8scope-cli audit --run` as by the triage's own audit of the run folder, finding for finding.
void TestTriage::auditOfAnExportCalibratedTheUsualWay()
{
    const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
    QVERIFY(!cli.isEmpty());
    const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        QSKIP("no test Python (packaging/install-deps.sh --python-venv build/venv makes one)");
    QTemporaryDir dir;
    QProcess write;
    write.start(python,
        {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/write_checkpoints.py"),
            dir.path()});
    QVERIFY(write.waitForFinished(300000));
    QVERIFY2(write.exitCode() == 0, write.readAllStandardError().constData());
    // layer -> "kind severity" of the audit's findings, as `fp8scope-cli audit EXPORT --run RUN --json` gives them.
    const auto audit = [&](const QString &exportDir, const QString &run, int *code, QJsonArray *layers = nullptr) {
        QProcess p;
        p.start(cli,
            {QStringLiteral("audit"), dir.filePath(exportDir), QStringLiteral("--run"), dir.filePath(run),
                QStringLiteral("--json")});
        p.waitForFinished(300000);
        *code = p.exitCode();
        const QJsonObject doc = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        if (layers)
            *layers = doc.value(QStringLiteral("layers")).toArray();
        QMap<QString, QString> out;
        for (const QJsonValue &v : doc.value(QStringLiteral("findings")).toArray()) {
            const QJsonObject f = v.toObject();
            out.insert(f.value(QStringLiteral("layer")).toString(),
                f.value(QStringLiteral("kind")).toString() + QLatin1Char(' ')
                    + f.value(QStringLiteral("severity")).toString());
        }
        return out;
    };
    int code = -1;
    QJsonArray layers;
    QMap<QString, QString> found
        = audit(QStringLiteral("ct_max_calibrated"), QStringLiteral("training_run"), &code, &layers);
    QVERIFY2(found.isEmpty(), qPrintable(QStringList(found.keys()).join(QLatin1Char(' '))));
    QCOMPARE(code, 0);
    // The rule was applied: every quantized layer against its module's late amax, some of them a hair above the range
    // the scale gives (the printed four decimals, the scale's bfloat16, the last step's amax below the largest).
    int checked = 0, aHairAbove = 0;
    for (const QJsonValue &v : layers) {
        const QJsonObject l = v.toObject();
        if (!l.contains(QStringLiteral("input_scale")))
            continue;
        QVERIFY2(l.contains(QStringLiteral("training_activation_amax")),
            qPrintable(l.value(QStringLiteral("layer")).toString()));
        ++checked;
        aHairAbove += l.value(QStringLiteral("training_activation_amax")).toDouble()
                > l.value(QStringLiteral("input_scale")).toDouble() * 448
            ? 1
            : 0;
    }
    QCOMPARE(checked, 14);
    QVERIFY2(aHairAbove >= 3, qPrintable(QString::number(aHairAbove)));

    found = audit(QStringLiteral("ct_calibration_40x"), QStringLiteral("training_run"), &code);
    QCOMPARE(found.size(), 1);
    QCOMPARE(found.value(QStringLiteral("model.layers.0.self_attn.o_proj")),
        QStringLiteral("calibration-mismatch critical"));
    QCOMPARE(code, 1);

    // Layer 1 trained in BF16: quantized in the export, each of its seven modules is a precision mismatch.
    found = audit(QStringLiteral("ct_max_calibrated"), QStringLiteral("training_run_bf16_last"), &code);
    QCOMPARE(found.size(), 7);
    for (auto it = found.cbegin(); it != found.cend(); ++it) {
        QVERIFY2(it.key().startsWith(QLatin1String("model.layers.1.")), qPrintable(it.key()));
        QCOMPARE(it.value(), QStringLiteral("precision-mismatch warning"));
    }
    QVERIFY(audit(QStringLiteral("ct_max_calibrated_bf16_last"), QStringLiteral("training_run_bf16_last"), &code)
                .isEmpty());
    QCOMPARE(code, 0);

    // The triage's audit of the run folder holding that export: the same findings.
    QDir(dir.filePath(QStringLiteral("ct_max_calibrated")))
        .rename(dir.filePath(QStringLiteral("ct_max_calibrated")),
            dir.filePath(QStringLiteral("training_run_bf16_last/export")));
    const QMap<QString, QString> cliFindings
        = audit(QStringLiteral("training_run_bf16_last/export"), QStringLiteral("training_run_bf16_last"), &code);
    QCOMPARE(cliFindings.size(), 7);
    Catalog catalog;
    QString error;
    QVERIFY2(testing::openAndIngest(dir.filePath(QStringLiteral("training_run_bf16_last")), &catalog, &error),
        qPrintable(error));
    const std::vector<Run> runs = catalog.runs(false);
    QCOMPARE(int(runs.size()), 1);
    const std::optional<AuditResult> triageAudit
        = analysis::auditOfRun(catalog, runs.front().ref, analysis::TriageOptions {}.audit);
    QVERIFY(triageAudit);
    QMap<QString, QString> triageFindings;
    for (const AuditFinding &f : triageAudit->findings)
        triageFindings.insert(f.layer, auditKindName(f.kind) + QLatin1Char(' ') + auditSeverityName(f.severity));
    QCOMPARE(triageFindings, cliFindings);
}

// The same what-if when the FP8 run's dumps are Transformer Engine DumpTensors .pt files (the demo's HDF5
// dumps rewritten by real torch in the test venv under sanitized file names, which the run's nvdlfw_inspect
// log resolves): the engine finds the planted layer's dump among them and recomputes from it.
void TestTriage::recipeWhatIfOnTransformerEngineDumps()
{
    const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
    QVERIFY(!cli.isEmpty());
    const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        QSKIP("no test Python (packaging/install-deps.sh --python-venv build/venv makes one)");
    QTemporaryDir dir;
    DemoPlan plan;
    QString error;
    QVERIFY2(generateDemo(dir.path(), {}, &plan, &error), qPrintable(error));
    QProcess convert;
    convert.start(python,
        {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/dumps_to_te.py"),
            dir.filePath(QStringLiteral("fp8"))});
    QVERIFY(convert.waitForFinished(600000));
    if (convert.exitCode() == 3)
        QSKIP("torch or h5py is not importable in the test Python");
    QVERIFY2(convert.exitCode() == 0, convert.readAllStandardError().constData());
    const auto whatIf = [](const Comparison &c) {
        const auto it = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::RecipeWhatIf; });
        return it == c.findings.end() ? std::optional<Finding>() : std::optional<Finding>(*it);
    };
    {
        Catalog catalog;
        TriageResult result;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        QCOMPARE(int(result.comparisons.size()), 1);
        const auto w = whatIf(result.comparisons.front());
        QVERIFY(w);
        QCOMPARE(w->layer, plan.plantedLayerName);
        const QString dump = w->evidence.value(QStringLiteral("dump")).toString();
        QVERIFY2(dump.contains(QLatin1String("tensor_dumps/rank_0/iter_")) && dump.endsWith(QLatin1String(".pt")),
            qPrintable(dump));
        QCOMPARE(w->evidence.value(QStringLiteral("dataset")).toString(), QStringLiteral("high_precision"));
    }
    QProcess recompute;
    recompute.start(cli,
        {QStringLiteral("recompute"), dir.path(), QStringLiteral("--recipe"), QStringLiteral("current"),
            QStringLiteral("--recipe"), QStringLiteral("mxfp8"), QStringLiteral("--backend"), QStringLiteral("cpu")});
    QVERIFY(recompute.waitForFinished(300000));
    QVERIFY2(recompute.exitCode() == 0, recompute.readAllStandardError().constData());
    Catalog catalog;
    QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
    const TriageResult result = triageStored(catalog);
    const auto w = whatIf(result.comparisons.front());
    QVERIFY(w);
    // The what-if computed from the .pt dump over the recipes the run could use (the recomputed series of two
    // recipes do not stand in for it).
    QCOMPARE(w->evidence.value(QStringLiteral("recipes")).toObject().keys(),
        QStringList({QStringLiteral("bf16"), QStringLiteral("block1x128"), QStringLiteral("current"),
            QStringLiteral("delayed"), QStringLiteral("mxfp8"), QStringLiteral("nvfp4")}));
    QVERIFY(w->evidence.value(QStringLiteral("best")).isString());
}

// A workspace with two FP8 runs of one baseline: one comparison each, both against it, each with its own
// verdict (the copy of the faulty run departs as it does; the baseline's own loss, copied as a third run,
// does not), and the baseline checked on its own.
namespace {

// The demo pair, with the FP8 run's manifest naming `recipe` (the demo's own is current scaling).
bool demoWithRecipe(const QString &folder, const QString &recipe, DemoPlan *plan, QString *error)
{
    if (!generateDemo(folder, {}, plan, error))
        return false;
    QFile manifest(folder + QStringLiteral("/fp8/fp8scope.json"));
    if (!manifest.open(QIODevice::ReadOnly))
        return false;
    QJsonObject o = QJsonDocument::fromJson(manifest.readAll()).object();
    manifest.close();
    o.insert(QStringLiteral("recipe"), recipe);
    if (!manifest.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    manifest.write(QJsonDocument(o).toJson());
    return true;
}

QString allActions(const Comparison &c)
{
    QStringList out;
    for (const NextStep &n : c.nextSteps)
        out << n.action;
    return out.join(QLatin1Char('\n'));
}

} // namespace

// What to try next starts from the run's own recipe: the demo's FP8 run uses current scaling, so no step
// proposes current scaling "instead of delayed"; the same pair said to use delayed scaling is told to try
// current scaling.
void TestTriage::adviceStartsFromTheRunsRecipe()
{
    for (const QString &recipe : {QStringLiteral("current"), QStringLiteral("delayed"), QStringLiteral("mxfp8")}) {
        QTemporaryDir dir;
        DemoPlan plan;
        QString error;
        QVERIFY2(demoWithRecipe(dir.path(), recipe, &plan, &error), qPrintable(error));
        Catalog catalog;
        TriageResult result;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        QCOMPARE(int(result.comparisons.size()), 1);
        const Comparison &c = result.comparisons.front();
        QCOMPARE(c.verdict, Verdict::MidRunInstability);
        QVERIFY(!c.nextSteps.empty());
        QCOMPARE(c.nextSteps.front().kind, FindingKind::LossDeparture);
        const QString first = c.nextSteps.front().action;
        QVERIFY2(first.contains(plan.plantedLayerName), qPrintable(first)); // the BF16 fallback of the suspect
        if (recipe == QLatin1String("current")) {
            QVERIFY2(!first.contains(QLatin1String("current scaling (")), qPrintable(first));
            QVERIFY2(!first.contains(QLatin1String("instead of delayed")), qPrintable(first));
            QVERIFY2(first.contains(QLatin1String("a block recipe")), qPrintable(first));
            QVERIFY2(first.contains(QLatin1String("the run's per-tensor current scaling")), qPrintable(first));
        } else if (recipe == QLatin1String("delayed")) {
            QVERIFY2(first.contains(QLatin1String("current scaling (--fp8-recipe tensorwise)")), qPrintable(first));
            QVERIFY2(first.contains(QLatin1String("the run's delayed scaling")), qPrintable(first));
        } else {
            QVERIFY2(!first.contains(QLatin1String("--fp8-recipe mxfp8")), qPrintable(first));
            QVERIFY2(first.contains(QLatin1String("blockwise")), qPrintable(first));
        }
        // The departure finding says the same, as the JSON, the store and watch print it.
        const auto dep = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == FindingKind::LossDeparture; });
        QVERIFY(dep != c.findings.end());
        QCOMPARE(dep->suggestion, first);
    }
}

// A finding a review dismissed gives no next step, in the engine's comparison and in the report's "What to try
// next"; the others stay.
void TestTriage::reviewsApplyToTheNextSteps()
{
    QTemporaryDir dir;
    DemoPlan plan;
    QString error;
    QVERIFY2(generateDemo(dir.path(), {}, &plan, &error), qPrintable(error));
    Catalog catalog;
    TriageResult result;
    QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
    QCOMPARE(int(result.comparisons.size()), 1);
    Comparison c = result.comparisons.front();
    QVERIFY(allActions(c).contains(plan.plantedLayerName));
    const auto signal = std::find_if(c.findings.begin(), c.findings.end(),
        [](const Finding &f) { return f.kind == FindingKind::LayerSignal && f.severity == Severity::Critical; });
    QVERIFY(signal != c.findings.end());
    QCOMPARE(signal->layer, plan.plantedLayerName);
    const auto reportNext = [&]() {
        CpuBackend backend(1);
        report::TriageReportOptions o;
        o.hashFiles = false;
        QString e;
        const std::optional<report::Document> doc
            = report::buildTriageReport(catalog, c.baseline, c.run, &backend, o, &e);
        QStringList text;
        if (!doc)
            return QString(QStringLiteral("no report: ") + e);
        for (const report::Section &s : doc->sections) {
            if (s.title != QLatin1String("What to try next"))
                continue;
            for (const report::Block &b : s.blocks) {
                if (const auto *p = std::get_if<report::Paragraph>(&b))
                    text << p->text;
            }
        }
        return text.join(QLatin1Char('\n'));
    };
    QVERIFY(reportNext().contains(plan.plantedLayerName));
    // Dismiss every layer signal of the planted layer.
    const auto [folder, name] = catalog.baselineKey(c.run, c.baseline);
    for (const Finding &f : c.findings) {
        if (f.kind == FindingKind::LayerSignal && f.layer == plan.plantedLayerName)
            QVERIFY2(CatalogTestAccess::store(catalog, c.run)
                         ->storeFindingReview(c.run.id, folder, name,
                             {findingIdentity(f), ReviewState::Dismissed, QStringLiteral("a known layer"), {}}, &error),
                qPrintable(error));
    }
    finishComparison(catalog, &c);
    QVERIFY(!c.nextSteps.empty()); // the recipe change is still there
    QVERIFY2(!allActions(c).contains(plan.plantedLayerName), qPrintable(allActions(c)));
    const QString next = reportNext();
    QVERIFY2(!next.contains(plan.plantedLayerName), qPrintable(next));
    QVERIFY2(next.contains(QLatin1String("block recipe")), qPrintable(next));
    // The stored triage applies them too when it reads a result back.
    const Comparison stored = compareRunsStored(catalog, c.baseline, c.run);
    QVERIFY(!allActions(stored).contains(plan.plantedLayerName));
}

// A stored comparison carries the audit a fresh one does (`fp8scope-cli attempts` answers the same JSON on every
// run of the folder), and its stamp covers the export's files: the demo's inverted scale fixed in place (a
// re-export), the stored triage is computed again and the checkpoint-audit finding is gone.
void TestTriage::storedAnswersFollowTheExport()
{
    const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
    QVERIFY(!cli.isEmpty());
    QTemporaryDir dir;
    DemoPlan plan;
    QString error;
    QVERIFY2(generateDemo(dir.path(), {}, &plan, &error), qPrintable(error));
    const auto attempts = [&]() {
        QProcess p;
        p.start(cli, {QStringLiteral("attempts"), dir.path(), QStringLiteral("--json")});
        p.waitForFinished(300000);
        return p.readAllStandardOutput();
    };
    const QByteArray first = attempts();
    QVERIFY2(first.contains("\"audit_findings\": 1"), first.constData());
    QCOMPARE(attempts(), first);
    QCOMPARE(attempts(), first);
    const auto auditFindings = [](const Comparison &c) {
        return std::count_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == FindingKind::CheckpointAudit; });
    };
    {
        Catalog catalog;
        QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
        const Comparison c = triageStored(catalog).comparisons.front();
        QVERIFY(c.fromStore); // stored by the CLI above
        QCOMPARE(auditFindings(c), 1);
        QVERIFY(c.audit);
        QCOMPARE(int(c.audit->findings.size()), 1);
    }
    // The re-export: the inverted weight_scale of the one faulty layer written the right way round, in place.
    const QString file = dir.filePath(QStringLiteral("fp8/inference/model.safetensors"));
    {
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QByteArray len = f.read(8);
        quint64 n = 0;
        for (int i = 7; i >= 0; --i)
            n = (n << 8) | quint8(len[i]);
        const QJsonObject header = QJsonDocument::fromJson(f.read(qint64(n))).object();
        const QJsonObject scale
            = header.value(QStringLiteral("model.layers.11.self_attn.o_proj.weight_scale")).toObject();
        QCOMPARE(scale.value(QStringLiteral("dtype")).toString(), QStringLiteral("F32"));
        const QJsonArray at = scale.value(QStringLiteral("data_offsets")).toArray();
        const qint64 begin = 8 + qint64(n) + at[0].toInteger(), end = 8 + qint64(n) + at[1].toInteger();
        QVERIFY(f.seek(begin));
        QByteArray values = f.read(end - begin);
        auto *v = reinterpret_cast<float *>(values.data());
        for (qsizetype i = 0; i < values.size() / 4; ++i)
            v[i] = 1.0f / v[i];
        QVERIFY(f.seek(begin));
        QCOMPARE(f.write(values), values.size());
        QVERIFY(f.setFileTime(QDateTime::currentDateTime().addSecs(5), QFileDevice::FileModificationTime));
    }
    Catalog catalog;
    QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
    const Comparison c = triageStored(catalog).comparisons.front();
    QVERIFY(!c.fromStore); // the export changed: computed again
    QCOMPARE(auditFindings(c), 0);
    QVERIFY(c.audit);
    QVERIFY(c.audit->findings.empty());
    QVERIFY(triageStored(catalog).comparisons.front().fromStore); // and stored with it
    QVERIFY(!attempts().contains("\"audit_findings\": 1"));
}

// The stamp covers the rules: their sources' digest (written at build time, checked here against the sources) and
// every threshold of the options, the checkpoint audit's among them; no revision is moved by hand.
void TestTriage::storedAnswersFollowTheRules()
{
    const QString source = qEnvironmentVariable("FP8SCOPE_SOURCE_DIR");
    QVERIFY(!source.isEmpty());
    QByteArray text;
    const QStringList files = analysis::rulesDigestFiles();
    QVERIFY(files.contains(QStringLiteral("analysis/rules/lossdeparture.cpp")));
    QVERIFY(files.contains(QStringLiteral("audit/checkpointaudit.cpp")));
    for (const QString &f : files) {
        QFile file(source + QStringLiteral("/core/") + f);
        QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(f));
        text += f.toUtf8() + '\n' + QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256).toHex() + '\n';
    }
    QCOMPARE(analysis::rulesDigest(),
        QString::fromLatin1(QCryptographicHash::hash(text, QCryptographicHash::Sha256).toHex().left(16)));

    QTemporaryDir dir;
    DemoPlan plan;
    QString error;
    QVERIFY2(generateDemo(dir.path(), {}, &plan, &error), qPrintable(error));
    Catalog catalog;
    QVERIFY2(testing::openAndIngest(dir.path(), &catalog, &error), qPrintable(error));
    QCOMPARE(int(triageStored(catalog).comparisons.size()), 1);
    const Comparison first = triageStored(catalog).comparisons.front();
    const QString stamp = triageStamp(catalog, first.baseline, first.run, {});
    QVERIFY2(
        stamp.startsWith(QStringLiteral("rules ") + analysis::rulesDigest() + QLatin1Char(';')), qPrintable(stamp));
    QVERIFY(first.fromStore); // stored by the line above

    // Every threshold moves the stamp: the triage's own and each of the audit's.
    const auto moved
        = [&](const TriageOptions &o) { return triageStamp(catalog, first.baseline, first.run, o) != stamp; };
    for (double TriageOptions::*field : {&TriageOptions::earlyFraction, &TriageOptions::lossGapBar,
             &TriageOptions::evalSigmas, &TriageOptions::evalNotableSigmas, &TriageOptions::spikeAlpha}) {
        TriageOptions o;
        o.*field *= 1.5;
        QVERIFY(moved(o));
    }
    constexpr size_t kThresholds = sizeof(AuditThresholds) / sizeof(double);
    QCOMPARE(int(kThresholds), 13);
    for (size_t i = 0; i < kThresholds; ++i) {
        TriageOptions o;
        double values[kThresholds];
        std::memcpy(values, &o.audit, sizeof values);
        values[i] = values[i] * 1.5 + 1;
        std::memcpy(&o.audit, values, sizeof values);
        QVERIFY2(moved(o), qPrintable(QStringLiteral("audit threshold %1").arg(i)));
    }

    // The audit judges by the options' thresholds: the demo's inverted scale is no finding where they allow it, and
    // the stored result follows the options each way.
    const auto auditFindings = [](const Comparison &c) {
        return std::count_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == FindingKind::CheckpointAudit; });
    };
    QCOMPARE(auditFindings(first), 1);
    TriageOptions lenient;
    lenient.audit.grossError = lenient.audit.mismatchFactor = lenient.audit.invertedLog2Gap = 1e9;
    const Comparison judged = triageStored(catalog, lenient).comparisons.front();
    QVERIFY(!judged.fromStore);
    QVERIFY(judged.audit);
    QVERIFY(judged.audit->thresholds == lenient.audit);
    QCOMPARE(auditFindings(judged), 0);
    QVERIFY(triageStored(catalog, lenient).comparisons.front().fromStore);
    const Comparison again = triageStored(catalog).comparisons.front();
    QVERIFY(!again.fromStore);
    QCOMPARE(auditFindings(again), 1);
}

namespace {

// Every field of a comparison a front end shows, as JSON: what the CLI prints and the rest (the plan, the suspects,
// the comparability rows, the evidence dump, the recipe what-if and its best, the checkpoint audit).
QJsonObject everyField(const Catalog &catalog, const Comparison &c)
{
    QJsonObject o = comparisonJson(catalog, c);
    const auto number = [](double v) { return std::isfinite(v) ? QJsonValue(v) : QJsonValue(QStringLiteral("nan")); };
    o.insert(QStringLiteral("planned_steps"), double(c.plannedSteps));
    o.insert(QStringLiteral("suspects"), findingsJson(c.suspects));
    QJsonArray rows;
    for (const analysis::ComparabilityRow &r : c.comparability.rows)
        rows.append(QJsonArray {r.key, r.baseline, r.run, r.aspect});
    o.insert(QStringLiteral("comparability_rows"), rows);
    if (c.evidence) {
        const analysis::EvidenceDump &e = *c.evidence;
        o.insert(QStringLiteral("evidence"),
            QJsonObject {{QStringLiteral("dump"),
                             QString(QDir(catalog.run(c.run)->folder).relativeFilePath(e.dump.path) + QLatin1Char(':')
                                 + e.dump.record.dataset)},
                {QStringLiteral("step"), double(e.dump.record.step)}, {QStringLiteral("stat"), e.stat},
                {QStringLiteral("onset"), double(e.onset)},
                {QStringLiteral("value"), e.value ? number(*e.value) : QJsonValue()},
                {QStringLiteral("early"), e.early ? number(*e.early) : QJsonValue()},
                {QStringLiteral("after_onset"), e.afterOnset}, {QStringLiteral("why"), e.why}});
    }
    QJsonArray whatIf;
    for (const WhatIfScore &w : c.whatIf)
        whatIf.append(QJsonArray {
            w.recipe, number(w.mse), number(w.underflowPct), number(w.damagePct), number(w.meanRelErrorPct)});
    o.insert(QStringLiteral("what_if"), whatIf);
    o.insert(QStringLiteral("what_if_best"), c.whatIfBest ? QJsonValue(double(*c.whatIfBest)) : QJsonValue());
    o.insert(QStringLiteral("audit"), c.audit ? QJsonValue(auditToJson(*c.audit)) : QJsonValue());
    return o;
}

// The fields of two objects that differ, each as "key: a | b" (compact, cut at 400 characters).
QStringList differences(const QJsonObject &a, const QJsonObject &b)
{
    QStringList keys = a.keys() + b.keys();
    keys.removeDuplicates();
    QStringList out;
    const auto text = [](const QJsonValue &v) {
        const QJsonDocument d = v.isObject() ? QJsonDocument(v.toObject())
            : v.isArray()                    ? QJsonDocument(v.toArray())
                                             : QJsonDocument(QJsonArray {v});
        return QString::fromUtf8(d.toJson(QJsonDocument::Compact)).left(400);
    };
    for (const QString &k : keys) {
        if (a.value(k) != b.value(k))
            out << k + QStringLiteral(": ") + text(a.value(k)) + QStringLiteral(" | ") + text(b.value(k));
    }
    return out;
}

} // namespace

// One answer on every path: each pair of the demo, a scenario of every class and the emulator's runs is triaged
// through the CLI (which stores it; the same JSON on a second run), then computed fresh as the window computes it
// (computeComparison) and read back from the store in this process: field by field the same, and the CLI's JSON is
// the fresh one's.
void TestTriage::oneAnswerBothWays()
{
    const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
    const QString source = qEnvironmentVariable("FP8SCOPE_SOURCE_DIR");
    QVERIFY(!cli.isEmpty() && !source.isEmpty());
    QTemporaryDir root;
    QString error;
    QStringList folders;
    {
        const QString demo = root.filePath(QStringLiteral("demo"));
        DemoPlan plan;
        QVERIFY2(generateDemo(demo, {}, &plan, &error), qPrintable(error));
        folders << demo;
    }
    for (Scenario s : {Scenario::EarlyDivergence, Scenario::MidRunInstability, Scenario::LossSpikes,
             Scenario::DownstreamGap, Scenario::None}) {
        const QString dir = root.filePath(scenarioName(s));
        ScenarioPlan plan;
        QVERIFY2(generateScenario(dir, s, 1, &plan, &error), qPrintable(error));
        folders << dir;
    }
    for (const QString &emulated : {QStringLiteral("runs"), QStringLiteral("high-lr")}) {
        const QDir from(source + QStringLiteral("/tests/fixtures/emulated/") + emulated);
        const QString to = root.filePath(QStringLiteral("emulated-") + emulated);
        QDirIterator it(from.path(), QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString f = it.next();
            const QString dst = to + QLatin1Char('/') + from.relativeFilePath(f);
            QVERIFY(QDir().mkpath(QFileInfo(dst).absolutePath()));
            QVERIFY(QFile::copy(f, dst));
        }
        folders << to;
    }
    int pairs = 0;
    for (const QString &folder : folders) {
        const auto triage = [&]() {
            QProcess p;
            p.start(cli, {QStringLiteral("triage"), folder, QStringLiteral("--json")});
            p.waitForFinished(600000);
            return p.readAllStandardOutput();
        };
        const QByteArray first = triage();
        QCOMPARE(triage(), first);
        const QJsonObject printed = QJsonDocument::fromJson(first).object();
        QVERIFY2(!printed.isEmpty(), qPrintable(folder));
        Catalog catalog;
        QVERIFY2(testing::openAndIngest(folder, &catalog, &error), qPrintable(error));
        QHash<QString, QJsonObject> cliComparisons;
        for (const QJsonValue &v : printed.value(QStringLiteral("comparisons")).toArray())
            cliComparisons.insert(v[QStringLiteral("run")].toString(), v.toObject());
        QHash<QString, QJsonObject> cliRuns;
        for (const QJsonValue &v : printed.value(QStringLiteral("runs")).toArray())
            cliRuns.insert(v[QStringLiteral("run")].toString(), v.toObject());
        for (const analysis::TriageTarget &t : analysis::triageTargets(catalog)) {
            const QString name = runNameOf(catalog, t.run);
            const QString where = QFileInfo(folder).fileName() + QLatin1Char('/') + name;
            if (!t.baseline.isValid()) {
                const RunCheck fresh = analysis::checkRun(catalog, t.run);
                const RunCheck stored = analysis::checkRunStored(catalog, t.run);
                QVERIFY2(stored.fromStore, qPrintable(where));
                const QStringList diff = differences(runCheckJson(catalog, fresh), runCheckJson(catalog, stored));
                QVERIFY2(diff.isEmpty(), qPrintable(where + QStringLiteral(": ") + diff.join(QLatin1Char('\n'))));
                QVERIFY2(cliRuns.value(name) == runCheckJson(catalog, fresh), qPrintable(where));
                continue;
            }
            const Comparison fresh = computeComparison(catalog, t.baseline, t.run, {}).comparison;
            const Comparison stored = compareRunsStored(catalog, t.baseline, t.run);
            QVERIFY2(!fresh.fromStore && stored.fromStore, qPrintable(where));
            const QStringList diff = differences(everyField(catalog, fresh), everyField(catalog, stored));
            QVERIFY2(diff.isEmpty(), qPrintable(where + QStringLiteral(": ") + diff.join(QLatin1Char('\n'))));
            const QStringList printedDiff = differences(cliComparisons.value(name), comparisonJson(catalog, fresh));
            QVERIFY2(printedDiff.isEmpty(),
                qPrintable(where + QStringLiteral(" (CLI): ") + printedDiff.join(QLatin1Char('\n'))));
            ++pairs;
        }
    }
    QVERIFY2(pairs >= 12, qPrintable(QString::number(pairs))); // the demo's 1, 5 scenarios, 6 emulated
}

// Two runs of a workspace, each with its own inference export, their settings in a workspace manifest at the top: each
// run's audit reads its own export (the run's folder, not the manifest's, is searched); a checkpoint the manifest
// names is relative to the manifest.
void TestTriage::auditFindsTheRunsOwnExport()
{
    QTemporaryDir dir;
    const QString ws = dir.filePath(QStringLiteral("ws"));
    const auto write = [](const QString &path, const QByteArray &bytes) {
        QDir().mkpath(QFileInfo(path).absolutePath());
        QFile f(path);
        return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
    };
    for (const QString &run : {QStringLiteral("fp8a"), QStringLiteral("fp8b")}) {
        QVERIFY(write(ws + QLatin1Char('/') + run + QStringLiteral("/metrics.csv"), "step,loss\n1,3.0\n2,2.9\n"));
        QVERIFY(write(ws + QLatin1Char('/') + run + QStringLiteral("/export/config.json"),
            R"({"quantization_config": {"quant_method": "fp8"}})"));
        QVERIFY(write(ws + QLatin1Char('/') + run + QStringLiteral("/export/model.safetensors"),
            QByteArray(run.size() * 8, 'x')));
    }
    QVERIFY(write(ws + QStringLiteral("/fp8scope-workspace.json"),
        R"({"runs": {"fp8a": {"precision": "fp8"}, "fp8b": {"precision": "fp8", "inference_checkpoint": "fp8a/export"}}})"));
    Catalog catalog;
    QString error;
    QVERIFY2(testing::openAndIngest(ws, &catalog, &error), qPrintable(error));
    const auto a = catalog.findRun(QStringLiteral("fp8a"));
    const auto b = catalog.findRun(QStringLiteral("fp8b"));
    QVERIFY(a && b);
    QCOMPARE(a->manifest, QStringLiteral("fp8scope-workspace.json"));
    QCOMPARE(a->manifestKey, QStringLiteral("fp8a"));
    QCOMPARE(analysis::auditStampOfRun(catalog, a->ref), auditFilesStamp(ws + QStringLiteral("/fp8a/export"), {}));
    // fp8b's manifest names fp8a's export, relative to the manifest's folder.
    QCOMPARE(analysis::auditStampOfRun(catalog, b->ref), auditFilesStamp(ws + QStringLiteral("/fp8a/export"), {}));
}

// Evaluation gaps: z has the difference's sign (negative where the run is below); the demo's weak tasks, 2-2.5
// standard errors below under BF16 inference, are said as notable drops (information) below the 3 a gap needs.
void TestTriage::notableEvalDropsAndOneSign()
{
    QTemporaryDir dir;
    DemoPlan plan;
    QString error;
    QVERIFY2(generateDemo(dir.path(), {}, &plan, &error), qPrintable(error));
    Catalog catalog;
    TriageResult result;
    QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
    const Comparison &c = result.comparisons.front();
    const std::vector<analysis::EvalRow> rows = evalTable(catalog, c.baseline, c.run);
    QVERIFY(!rows.empty());
    for (const analysis::EvalRow &r : rows) {
        if (r.standardError > 0 && r.difference != 0)
            QCOMPARE(r.z > 0, r.difference > 0);
        QCOMPARE(r.significant, r.standardError > 0 && r.z <= -TriageOptions {}.evalSigmas);
    }
    QStringList dropped;
    for (const Finding &f : c.findings) {
        if (f.kind == FindingKind::EvalDrop) {
            QCOMPARE(f.severity, Severity::Info);
            QVERIFY(f.evidence.value(QStringLiteral("z")).toDouble() <= -TriageOptions {}.evalNotableSigmas);
            QVERIFY(f.evidence.value(QStringLiteral("z")).toDouble() > -TriageOptions {}.evalSigmas);
            dropped << f.task;
        }
    }
    dropped.sort();
    QStringList weak = plan.weakTasks;
    weak.sort();
    QCOMPARE(dropped, weak);
}

// A run without a baseline is shown as a comparison with an invalid baseline (the wizard and the report
// display it): its verdict, findings and next steps.
void TestTriage::aRunOnItsOwnAsAComparison()
{
    QTemporaryDir dir;
    QVERIFY(testdata::writeBlowUpRun(dir.filePath(QStringLiteral("blowup"))));
    Catalog catalog;
    TriageResult result;
    QString error;
    QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
    QCOMPARE(int(result.runs.size()), 1);
    const Comparison c = comparisonOf(catalog, result.runs.front());
    QVERIFY(!c.baseline.isValid());
    QCOMPARE(c.run, result.runs.front().run);
    QVERIFY(c.verdict != Verdict::None);
    QVERIFY(std::any_of(c.findings.begin(), c.findings.end(),
        [](const Finding &f) { return f.kind == FindingKind::RunBlowUp && f.severity == Severity::Critical; }));
    QVERIFY(!c.nextSteps.empty());
    QCOMPARE(c.comparability.level, ComparabilityLevel::Unknown);
}

void TestTriage::severalRunsOfOneBaseline()
{
    QTemporaryDir dir;
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(dir.path(), Scenario::MidRunInstability, 3, &plan, &error), qPrintable(error));
    QVERIFY(copyTree(dir.filePath(plan.run), dir.filePath(plan.run + QStringLiteral("-again"))));
    // A second FP8 run whose loss is the baseline's: its config and versions are the FP8 run's.
    const QString same = dir.filePath(plan.run + QStringLiteral("-healthy"));
    QVERIFY(QDir().mkpath(same));
    for (const QString &f : QDir(dir.filePath(plan.run)).entryList(QDir::Files))
        QVERIFY(QFile::copy(dir.filePath(plan.run + QLatin1Char('/') + f), same + QLatin1Char('/') + f));
    QVERIFY(QFile::remove(same + QStringLiteral("/stdout.log")));
    QVERIFY(
        QFile::copy(dir.filePath(plan.baseline + QStringLiteral("/stdout.log")), same + QStringLiteral("/stdout.log")));
    Catalog catalog;
    TriageResult result;
    QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
    QCOMPARE(int(result.comparisons.size()), 3);
    std::map<QString, const Comparison *> byRun;
    for (const Comparison &c : result.comparisons) {
        QCOMPARE(runNameOf(catalog, c.baseline), plan.baseline);
        byRun[runNameOf(catalog, c.run)] = &c;
    }
    QCOMPARE(byRun.at(plan.run)->verdict, Verdict::MidRunInstability);
    QCOMPARE(byRun.at(plan.run + QStringLiteral("-again"))->verdict, Verdict::MidRunInstability);
    QCOMPARE(byRun.at(plan.run + QStringLiteral("-again"))->departure, byRun.at(plan.run)->departure);
    QVERIFY(!byRun.at(plan.run + QStringLiteral("-healthy"))->departure);
    QCOMPARE(int(result.runs.size()), 1);
    QCOMPARE(runNameOf(catalog, result.runs.front().run), plan.baseline);
}

// One baseline, three attempts derived from each other: the planted mid-run instability (fp8, MXFP8); a recipe
// change that fixes it (fp8-b-current: current scaling, the loss the baseline's); an attempt whose fp8scope.json
// names fp8 as its parent and that changes the recipe and deterministic mode at once, still unstable.
void TestTriage::attemptsOfOneBaseline()
{
    QTemporaryDir dir;
    ScenarioPlan plan;
    QString error;
    QVERIFY2(testing::writeAttemptsFolder(dir.path(), &plan, &error), qPrintable(error));
    Catalog catalog;
    TriageResult result;
    QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
    QCOMPARE(int(result.comparisons.size()), 4);
    const AttemptsResult a = attemptsOf(catalog, result.comparisons.front().baseline, result.comparisons);
    QCOMPARE(a.baselineName, plan.baseline);
    QCOMPARE(int(a.attempts.size()), 4);
    const Attempt &first = a.attempts[0], &fixed = a.attempts[1], &two = a.attempts[2], &fallback = a.attempts[3];
    QCOMPARE(first.name, QStringLiteral("fp8"));
    QCOMPARE(first.verdict, Verdict::MidRunInstability);
    QVERIFY(!first.parent.isValid());
    QVERIFY(first.fixesParent.isEmpty());
    // Against the baseline: the FP8 settings (the recipe), paths and names left out.
    QVERIFY(std::any_of(first.changes.begin(), first.changes.end(), [](const AttemptChange &c) {
        return c.group == QLatin1String("precision and recipe") && c.to == QLatin1String("mxfp8");
    }));
    QVERIFY(std::none_of(first.changes.begin(), first.changes.end(),
        [](const AttemptChange &c) { return c.key.contains(QLatin1String("save")); }));
    QVERIFY(std::isfinite(first.endGap) && first.endGap > first.endEdge);

    QCOMPARE(fixed.name, QStringLiteral("fp8-b-current"));
    QCOMPARE(fixed.parentName, QStringLiteral("fp8"));
    QCOMPARE(fixed.parentSource, QStringLiteral("closest earlier attempt"));
    QCOMPARE(fixed.groupsFromParent, QStringList {QStringLiteral("precision and recipe")});
    QVERIFY(!fixed.severalAtOnce);
    QCOMPARE(fixed.verdict, Verdict::None);
    QCOMPARE(fixed.fixesParent, QStringLiteral("fixed"));
    QVERIFY(std::abs(fixed.endGap) < fixed.endEdge);

    QCOMPARE(two.name, QStringLiteral("fp8-c-two"));
    QCOMPARE(two.parentName, QStringLiteral("fp8"));
    QCOMPARE(two.parentSource, QStringLiteral("fp8scope.json"));
    QCOMPARE(two.groupsFromParent.size(), 2);
    QVERIFY(two.groupsFromParent.contains(QStringLiteral("deterministic mode")));
    QVERIFY(two.severalAtOnce);
    QCOMPARE(two.fixesParent, QStringLiteral("no"));

    // The BF16 fallback: one change from fp8, the same class departing later: a partial fix.
    QCOMPARE(fallback.name, QStringLiteral("fp8-d-fallback"));
    QCOMPARE(fallback.parentName, QStringLiteral("fp8"));
    QCOMPARE(fallback.groupsFromParent, QStringList {QStringLiteral("BF16 fallback layers")});
    QCOMPARE(fallback.verdict, Verdict::MidRunInstability);
    QVERIFY2(fallback.departure && *fallback.departure > *first.departure + 300,
        qPrintable(QString::number(fallback.departure.value_or(-1))));
    QCOMPARE(fallback.fixesParent, QStringLiteral("partly"));
    QCOMPARE(fallback.bf16Layers, 2);
    // From the baseline, going to FP8 is one change: fp8 is not several at once.
    QVERIFY(!first.severalAtOnce);

    QCOMPARE(a.candidate, std::optional<size_t>(1));

    // fp8's first next step suggests blockwise scaling or its suspects in BF16: two attempts tried the recipe (one
    // fixed it), the third the BF16 layers.
    const auto fp8 = std::find_if(result.comparisons.begin(), result.comparisons.end(),
        [&](const Comparison &c) { return runNameOf(catalog, c.run) == QLatin1String("fp8"); });
    QVERIFY(fp8 != result.comparisons.end() && !fp8->nextSteps.empty());
    QVERIFY2(
        fp8->nextSteps.front().action.contains(QLatin1String("blockwise")), qPrintable(fp8->nextSteps.front().action));
    const std::vector<TriedBy> tried = triedBy(catalog, fp8->nextSteps.front(), a, fp8->run);
    QCOMPARE(int(tried.size()), 3);
    QCOMPARE(tried[2].name, QStringLiteral("fp8-d-fallback"));
    QVERIFY(!tried[2].fixed);
    QCOMPARE(tried[0].name, QStringLiteral("fp8-b-current"));
    QVERIFY(tried[0].fixed);
    QVERIFY2(tried[0].text().contains(QLatin1String("mxfp8 -> blockwise"))
            && tried[0].text().contains(QLatin1String("fixed it")),
        qPrintable(tried[0].text()));
    QCOMPARE(tried[1].name, QStringLiteral("fp8-c-two"));
    QVERIFY(!tried[1].fixed);
    QVERIFY2(tried[1].text().contains(QLatin1String("1 other change(s) at once"))
            && tried[1].text().contains(QLatin1String("did not fix it")),
        qPrintable(tried[1].text()));
    // Matched by what the step proposes, typed, not by its words: the step proposes blockwise (the run's recipe is
    // mxfp8) and its suspects in BF16; the same proposals under other words are tried by the same attempts.
    const std::vector<Proposal> &proposed = fp8->nextSteps.front().proposals;
    QVERIFY(std::any_of(proposed.begin(), proposed.end(),
        [](const Proposal &p) { return p.kind == Proposal::Kind::Recipe && p.recipe == QLatin1String("blockwise"); }));
    QVERIFY(std::any_of(proposed.begin(), proposed.end(),
        [](const Proposal &p) { return p.kind == Proposal::Kind::Bf16Layers && !p.layers.isEmpty(); }));
    NextStep reworded = fp8->nextSteps.front();
    reworded.action = QStringLiteral("try something else");
    QCOMPARE(int(triedBy(catalog, reworded, a, fp8->run).size()), 3);
    // A step that proposes nothing an attempt changed is tried by none, whatever its words say.
    NextStep other = fp8->nextSteps.front();
    other.proposals = {{.kind = Proposal::Kind::ConfigValue, .key = QStringLiteral("lr")}};
    QVERIFY(triedBy(catalog, other, a, fp8->run).empty());
    other.proposals = {{.kind = Proposal::Kind::Recipe, .recipe = QStringLiteral("nvfp4")}};
    QVERIFY(triedBy(catalog, other, a, fp8->run).empty());
    // The BF16 layers proposed: the fallback attempt tried them (and only partly fixed it).
    other.proposals = {{.kind = Proposal::Kind::Bf16Layers}};
    const std::vector<TriedBy> layers = triedBy(catalog, other, a, fp8->run);
    QCOMPARE(int(layers.size()), 1);
    QCOMPARE(layers[0].name, QStringLiteral("fp8-d-fallback"));
    QVERIFY(!layers[0].fixed);
    const QJsonObject json = attemptsJson(a);
    QCOMPARE(json.value(QStringLiteral("candidate")).toString(), QStringLiteral("fp8-b-current"));
    const QJsonObject j2 = json.value(QStringLiteral("attempts")).toArray().at(2).toObject();
    for (const char *key : {"run", "parent", "changes", "verdict", "departure_step", "end_gap", "candidate"})
        QVERIFY2(j2.contains(QLatin1String(key)), key);
    QCOMPARE(j2.value(QStringLiteral("several_at_once")).toBool(), true);
    const QJsonObject change = j2.value(QStringLiteral("changes")).toArray().first().toObject();
    for (const char *key : {"key", "baseline", "attempt", "group"})
        QVERIFY2(change.contains(QLatin1String(key)), key);

    // The command line: the same, as JSON.
    QProcess cli;
    const QString cliProgram = qEnvironmentVariable("FP8SCOPE_CLI");
    if (cliProgram.isEmpty())
        return; // the rest needs the CLI (FP8SCOPE_CLI)
    cli.start(cliProgram, {QStringLiteral("attempts"), dir.path(), QStringLiteral("--json")});
    QVERIFY(cli.waitForFinished(120000));
    QCOMPARE(cli.exitCode(), 0);
    const QJsonArray baselines
        = QJsonDocument::fromJson(cli.readAllStandardOutput()).object().value(QStringLiteral("baselines")).toArray();
    QCOMPARE(baselines.size(), 1);
    QCOMPARE(
        baselines.first().toObject().value(QStringLiteral("candidate")).toString(), QStringLiteral("fp8-b-current"));
}

void TestTriage::changeGroups()
{
    // Keys that make one change together share a group; any other key is its own.
    QCOMPARE(
        changeGroup(QStringLiteral("MODEL_ARGS.--deterministic-mode"), false), QStringLiteral("deterministic mode"));
    QCOMPARE(changeGroup(QStringLiteral("env.NCCL_ALGO"), false), QStringLiteral("deterministic mode"));
    QCOMPARE(changeGroup(QStringLiteral("env.NVTE_ALLOW_NONDETERMINISTIC_ALGO"), false),
        QStringLiteral("deterministic mode"));
    QCOMPARE(changeGroup(QStringLiteral("MODEL_ARGS.--tensor-model-parallel-size"), false),
        QStringLiteral("parallel layout"));
    QCOMPARE(changeGroup(QStringLiteral("MODEL_ARGS.--sequence-parallel"), false), QStringLiteral("parallel layout"));
    QCOMPARE(changeGroup(QStringLiteral("MODEL_ARGS.--fp8-recipe"), false), QStringLiteral("precision and recipe"));
    QCOMPARE(changeGroup(QStringLiteral("MODEL_ARGS.--fp8-margin"), false), QStringLiteral("precision and recipe"));
    QCOMPARE(changeGroup(QStringLiteral("MODEL_ARGS.--num-layers-at-start-in-bf16"), false),
        QStringLiteral("BF16 fallback layers"));
    QCOMPARE(changeGroup(QStringLiteral("MODEL_ARGS.--first-last-layers-bf16"), false),
        QStringLiteral("BF16 fallback layers"));
    QCOMPARE(changeGroup(QStringLiteral("MODEL_ARGS.--fp8-param-gather"), false), QStringLiteral("FP8 parameters"));
    QCOMPARE(changeGroup(QStringLiteral("MODEL_ARGS.--lr"), false), QStringLiteral("lr"));
    QCOMPARE(changeGroup(QStringLiteral("transformer-engine"), true), QStringLiteral("version of transformer-engine"));
}

void TestTriage::realFixtures()
{
    if (!QFileInfo::exists(sharedFixtures()))
        QSKIP("../shared/fixtures/real is absent");
    QTemporaryDir dir;
    // The Megatron golden values: the FP8 run against its FP16 baseline (the config pairs them). Their losses
    // agree (Megatron's CI holds them to that): no departure, no spikes, verdict none; the differences of the
    // two model configs are named.
    {
        const QString folder = dir.filePath(QStringLiteral("golden"));
        QVERIFY(copyTree(sharedFixtures() + QStringLiteral("/megatron_golden_values"), folder));
        Catalog catalog;
        TriageResult result;
        QString error;
        QVERIFY2(openAndTriage(folder, &catalog, &result, &error), qPrintable(error));
        QCOMPARE(int(result.comparisons.size()), 1);
        const Comparison &c = result.comparisons.front();
        QVERIFY(runNameOf(catalog, c.run).endsWith(QLatin1String("fp8_no_model_parallel")));
        QVERIFY(runNameOf(catalog, c.baseline).endsWith(QLatin1String("bf16_baseline")));
        QCOMPARE(c.verdict, Verdict::None);
        QVERIFY(!c.departure);
        QVERIFY(std::any_of(c.findings.begin(), c.findings.end(), [](const Finding &f) {
            return f.kind == analysis::FindingKind::ConfigDifference
                && f.key.endsWith(QLatin1String("--transformer-impl"));
        }));
        QVERIFY(std::none_of(
            c.findings.begin(), c.findings.end(), [](const Finding &f) { return f.severity == Severity::Critical; }));
        // A healthy pair gets no fix list; Transformer Engine's implementation is a prerequisite of FP8 (context,
        // never to be undone), and the FP16 baseline on the local implementation makes it a comparison with care.
        QVERIFY(c.nextSteps.empty());
        // As attempts: the one FP8 attempt is the candidate, and it changed more than the precision at once (the
        // FP16 baseline also differs in deterministic mode's fused-attention switch, query-key layer scaling and
        // the softmax in FP32): the warning says so.
        const AttemptsResult attempts = attemptsOf(catalog, c.baseline, result.comparisons);
        QCOMPARE(int(attempts.attempts.size()), 1);
        const Attempt &a = attempts.attempts.front();
        QCOMPARE(attempts.candidate, std::optional<size_t>(0));
        QCOMPARE(a.verdict, Verdict::None);
        QVERIFY(std::abs(a.endGap) < a.endEdge);
        QVERIFY(a.severalAtOnce);
        for (const char *group : {"precision and recipe", "deterministic mode", "apply_query_key_layer_scaling",
                 "attention_softmax_in_fp32"})
            QVERIFY2(a.groupsFromParent.contains(QLatin1String(group)), qPrintable(a.groupsFromParent.join(u',')));
        for (const AttemptChange &change : a.changes) {
            if (change.key.endsWith(QLatin1String("--transformer-impl")))
                QCOMPARE(change.group, QStringLiteral("precision and recipe"));
        }
        for (const Finding &f : c.findings) {
            // No difference of this healthy pair is proposed to be undone.
            if (f.kind == FindingKind::ConfigDifference)
                QVERIFY2(f.suggestion.isEmpty(), qPrintable(f.key + QStringLiteral(": ") + f.suggestion));
            if (f.key.endsWith(QLatin1String("--transformer-impl"))) {
                QVERIFY2(f.suggestion.isEmpty(), qPrintable(f.suggestion));
                QVERIFY2(f.summary.contains(QLatin1String("not a suspect")), qPrintable(f.summary));
                QCOMPARE(f.severity, Severity::Info);
            }
        }
        QCOMPARE(c.comparability.level, ComparabilityLevel::WithCare);
        QStringList aspects;
        for (const ComparabilityRow &r : c.comparability.rows)
            aspects << r.aspect;
        QVERIFY2(aspects.contains(QStringLiteral("precision family")), qPrintable(aspects.join(QLatin1Char(','))));
        QVERIFY2(aspects.contains(QStringLiteral("implementation")), qPrintable(aspects.join(QLatin1Char(','))));
        QVERIFY(c.comparability.text.startsWith(QLatin1String("Compared with care")));
        // The attempts say the same caveat as the comparison (one pair, one answer on every view).
        QCOMPARE(a.comparability, ComparabilityLevel::WithCare);
        QCOMPARE(a.comparabilityText, c.comparability.text);
        QCOMPARE(attemptsJson(attempts)
                     .value(QStringLiteral("attempts"))
                     .toArray()
                     .at(0)
                     .toObject()
                     .value(QStringLiteral("comparability"))
                     .toString(),
            QStringLiteral("with-care"));
        // ... and so do the CLI's text and the report's table, which print the verdict with it.
        QCOMPARE(comparabilityCaveat(a), QStringLiteral(", compared with care"));
    }
    // The W&B pair: two FP8 runs (first/last 2 and 4 layers in BF16), neither a baseline: each is checked on
    // its own (no blow-up, no sustained rise), and compared with each other on request they agree.
    {
        const QString folder = dir.filePath(QStringLiteral("wandb"));
        QVERIFY(copyTree(sharedFixtures() + QStringLiteral("/wandb_csv"), folder));
        Catalog catalog;
        TriageResult result;
        QString error;
        QVERIFY2(openAndTriage(folder, &catalog, &result, &error), qPrintable(error));
        QCOMPARE(int(result.comparisons.size()), 0);
        QCOMPARE(int(result.runs.size()), 2);
        for (const RunCheck &r : result.runs) {
            QCOMPARE(r.verdict, Verdict::None);
            QVERIFY(!r.departure);
        }
        const auto fl4 = catalog.findRun(QStringLiteral("history_ww9z3vy4"));
        const auto fl2 = catalog.findRun(QStringLiteral("history_98xg86yz"));
        QVERIFY(fl4 && fl2);
        const Comparison c = compareRuns(catalog, fl4->ref, fl2->ref);
        QCOMPARE(c.verdict, Verdict::None);
        QVERIFY(!c.departure);
    }
    // The Megatron stdout log (an FP16 GPT-2 run): checked alone, a healthy start; the loss scaler's skipped
    // iterations of the first steps are said, not counted against it.
    {
        const QString folder = dir.filePath(QStringLiteral("stdout"));
        QVERIFY(copyTree(sharedFixtures() + QStringLiteral("/megatron_stdout"), folder));
        Catalog catalog;
        TriageResult result;
        QString error;
        QVERIFY2(openAndTriage(folder, &catalog, &result, &error), qPrintable(error));
        QCOMPARE(int(result.comparisons.size()), 0);
        QCOMPARE(int(result.runs.size()), 1);
        const RunCheck &r = result.runs.front();
        QCOMPARE(r.verdict, Verdict::None);
        QVERIFY(!r.departure);
        const auto skipped = std::find_if(r.findings.begin(), r.findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::SkippedIterations; });
        QVERIFY(skipped != r.findings.end());
        QCOMPARE(skipped->severity, Severity::Info);
        QVERIFY(skipped->evidence.value(QStringLiteral("skipped")).toDouble() > 0);
    }
}

// A mixture-of-experts run (experts named as Transformer Engine's GroupedLinear names them): the triage names the
// expert that moved first and says whether one expert moved (its routing or its scale) or every expert of the GEMM
// (the GEMM, kept in BF16 whole by a pattern of all its experts), over seeds it was not written for.
void TestTriage::oneExpertOrAllExperts_data()
{
    QTest::addColumn<int>("seed");
    QTest::addColumn<bool>("all");
    for (int seed : {3, 11, 19}) {
        QTest::addRow("one expert, seed %d", seed) << seed << false;
        QTest::addRow("all experts, seed %d", seed) << seed << true;
    }
}

void TestTriage::oneExpertOrAllExperts()
{
    QFETCH(int, seed);
    QFETCH(bool, all);
    QTemporaryDir dir;
    QString error;
    ScenarioPlan plan;
    QVERIFY2(generateScenario(dir.path(), Scenario::MidRunInstability, uint64_t(seed), &plan, &error,
                 {.experts = 8, .layers = 6, .allExperts = all}),
        qPrintable(error));
    QCOMPARE(plan.expert >= 0, !all);
    Catalog catalog;
    TriageResult result;
    QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
    const auto c = std::find_if(result.comparisons.begin(), result.comparisons.end(),
        [&](const Comparison &x) { return runNameOf(catalog, x.run) == plan.run; });
    QVERIFY(c != result.comparisons.end());
    QCOMPARE(c->verdict, analysis::Verdict::MidRunInstability);
    const auto first = std::find_if(c->findings.begin(), c->findings.end(),
        [](const Finding &f) { return f.kind == analysis::FindingKind::LayerSignal; });
    QVERIFY(first != c->findings.end());
    QCOMPARE(first->tensor, plan.tensor);
    QCOMPARE(first->evidence.value(QStringLiteral("gemm")).toString(), plan.gemm);
    QCOMPARE(first->evidence.value(QStringLiteral("experts")).toInt(), 8);
    const QString scope = first->evidence.value(QStringLiteral("expert_scope")).toString();
    if (all) {
        QCOMPARE(scope, QStringLiteral("all"));
        QVERIFY2(first->summary.contains(QStringLiteral("the GEMM moved")), qPrintable(first->summary));
        QVERIFY(first->summary.contains(plan.gemm));
        QVERIFY(!first->summary.contains(QStringLiteral("load-balancing loss rose")));
    } else {
        QCOMPARE(scope, QStringLiteral("one"));
        QCOMPARE(first->layer, plan.layer);
        QCOMPARE(first->evidence.value(QStringLiteral("expert")).toInt(), plan.expert);
        QVERIFY2(first->summary.contains(QStringLiteral("expert %1 of %2").arg(plan.expert).arg(plan.gemm)),
            qPrintable(first->summary));
        QVERIFY(first->summary.contains(QStringLiteral("one expert of 8")));
        // The router's loss rose with it (Megatron's load_balancing_loss): the expert was overloaded.
        QVERIFY2(first->summary.contains(QStringLiteral("load-balancing loss rose")), qPrintable(first->summary));
        QVERIFY(first->evidence.value(QStringLiteral("router_loss_after")).toDouble()
            > first->evidence.value(QStringLiteral("router_loss_before")).toDouble() * 1.1);
        // ... and the next step says to balance the router as well as the precision.
        const auto next = std::find_if(c->nextSteps.begin(), c->nextSteps.end(),
            [](const analysis::NextStep &n) { return n.kind == analysis::FindingKind::LossDeparture; });
        QVERIFY(next != c->nextSteps.end());
        QVERIFY2(next->action.contains(QStringLiteral("balance the router")), qPrintable(next->action));
    }
    // One finding for the GEMM's statistic, not one per expert.
    const auto same = std::count_if(c->findings.begin(), c->findings.end(), [&](const Finding &f) {
        return f.kind == analysis::FindingKind::LayerSignal && f.tensor == first->tensor && f.stat == first->stat
            && f.evidence.value(QStringLiteral("gemm")) == first->evidence.value(QStringLiteral("gemm"));
    });
    QCOMPARE(int(same), 1);
    // The next step keeps the expert, or every expert of the GEMM, in BF16.
    const auto step = std::find_if(c->nextSteps.begin(), c->nextSteps.end(),
        [](const analysis::NextStep &n) { return n.kind == analysis::FindingKind::LossDeparture; });
    QVERIFY(step != c->nextSteps.end());
    static const QRegularExpression patternLine(QStringLiteral("layer_name_regex_pattern: (\\S+)"));
    bool covers = false;
    for (auto m = patternLine.globalMatch(step->config); m.hasNext();) {
        const QRegularExpression re(QRegularExpression::anchoredPattern(m.next().captured(1)));
        const int moved = all ? 0 : plan.expert;
        const bool planted = re.match(plan.gemm + QStringLiteral(".gemm_%1").arg(moved)).hasMatch();
        const bool another = re.match(plan.gemm + QStringLiteral(".gemm_%1").arg((moved + 1) % 8)).hasMatch();
        covers = covers || (planted && another == all);
    }
    QVERIFY2(covers, qPrintable(step->config));
    // The report's heatmap: a row per GEMM (the worst expert), the suspect's GEMM row marked.
    CpuBackend backend(1);
    report::TriageReportOptions o;
    o.hashFiles = false;
    const std::optional<report::Document> doc
        = report::buildTriageReport(catalog, c->baseline, c->run, &backend, o, &error);
    QVERIFY2(doc, qPrintable(error));
    const report::HeatmapFigure *heat = nullptr;
    for (const report::Section &s : doc->sections) {
        for (const report::Block &b : s.blocks) {
            if (const auto *f = std::get_if<report::Figure>(&b))
                heat = heat ? heat : std::get_if<report::HeatmapFigure>(&f->content);
        }
    }
    QVERIFY(heat);
    QCOMPARE(heat->layers.size(), 6 * 4);
    QVERIFY(heat->scaleLabel.contains(QStringLiteral("worst expert")));
    QVERIFY(
        std::any_of(heat->flagged.begin(), heat->flagged.end(), [&](const auto &f) { return f.first == plan.gemm; }));
}

// A layer the run kept in BF16 (a Transformer Engine debug config in its folder) is never named as an FP8 suspect,
// nor proposed for a BF16 fallback; a GEMM the run switched to high precision by itself (AutoswitchGemm's log and
// the thresholds of its config) is a finding of its own, at the step it switched.
void TestTriage::precisionOfTheLayers()
{
    for (const bool autoswitch : {false, true}) {
        QTemporaryDir dir;
        QString error;
        ScenarioPlan plan;
        QVERIFY2(generateScenario(dir.path(), Scenario::MidRunInstability, 3, &plan, &error), qPrintable(error));
        const QString runDir = dir.filePath(plan.run);
        const QString pattern = QRegularExpression::escape(plan.layer);
        QByteArray yaml;
        if (!autoswitch) {
            yaml = "keep_bf16:\n  enabled: True\n  layers:\n    layer_name_regex_pattern: '" + pattern.toUtf8()
                + "'\n  transformer_engine:\n    DisableQuantizationLayer:\n      enabled: True\n";
        } else {
            yaml = "switch:\n  enabled: True\n  layers:\n    layer_name_regex_pattern: '" + pattern.toUtf8()
                + "'\n  transformer_engine:\n    AutoswitchGemm:\n      enabled: True\n      underflow_threshold_pct: "
                  "20.0\n";
            // Its log: the fprop GEMM's underflow passes 20 % from the onset on.
            QByteArray log;
            for (int64_t step = 0; step <= plan.steps; step += 50)
                log += "2026-12-05 10:00:00,000 - INFO - " + plan.layer.toUtf8() + "_fprop_" + plan.tensor.toUtf8()
                    + "_underflow_pct \t\t\t\t iteration=" + QByteArray::number(step).rightJustified(6, '0')
                    + " \t\t\t\t value=" + QByteArray::number(step >= *plan.onsetStep ? 31.5 : 2.0, 'f', 8) + '\n';
            QDir().mkpath(runDir + QStringLiteral("/nvdlfw_inspect_autoswitchgemm_logs"));
            QFile f(runDir + QStringLiteral("/nvdlfw_inspect_autoswitchgemm_logs/nvdlfw_inspect_globalrank-0.log"));
            QVERIFY(f.open(QIODevice::WriteOnly) && f.write(log) == log.size());
        }
        QFile config(runDir + QStringLiteral("/fp8_debug.yaml"));
        QVERIFY(config.open(QIODevice::WriteOnly) && config.write(yaml) == yaml.size());
        config.close();
        Catalog catalog;
        TriageResult result;
        QVERIFY2(openAndTriage(dir.path(), &catalog, &result, &error), qPrintable(error));
        const auto c = std::find_if(result.comparisons.begin(), result.comparisons.end(),
            [&](const Comparison &x) { return runNameOf(catalog, x.run) == plan.run; });
        QVERIFY(c != result.comparisons.end());
        const auto step = std::find_if(c->nextSteps.begin(), c->nextSteps.end(),
            [](const analysis::NextStep &n) { return n.kind == analysis::FindingKind::LossDeparture; });
        if (!autoswitch) {
            for (const Finding &f : c->findings)
                QVERIFY2(f.kind != analysis::FindingKind::LayerSignal || f.layer != plan.layer, qPrintable(f.summary));
            QVERIFY(step == c->nextSteps.end() || !step->config.contains(pattern));
            QVERIFY(step == c->nextSteps.end() || !step->action.contains(plan.layer));
            continue;
        }
        const auto sw = std::find_if(c->findings.begin(), c->findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::PrecisionSwitch; });
        QVERIFY(sw != c->findings.end());
        QCOMPARE(sw->layer, plan.layer);
        QCOMPARE(sw->stat, QStringLiteral("fprop"));
        QCOMPARE(*sw->step, (*plan.onsetStep + 49) / 50 * 50);
        QCOMPARE(sw->severity, Severity::Warning); // before the departure
        QVERIFY(sw->summary.contains(QStringLiteral("found this GEMM fragile")));
        // Only its fprop switched: the layer stays a suspect, its FP8 statistics moved first.
        const auto first = std::find_if(c->findings.begin(), c->findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::LayerSignal; });
        QVERIFY(first != c->findings.end());
        QCOMPARE(first->layer, plan.layer);
    }
}

FP8SCOPE_TEST_GUILESS_MAIN(TestTriage)
#include "tst_triage.moc"
