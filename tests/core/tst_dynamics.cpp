// Issue 41: triage on real training dynamics. Early divergence or mid-run instability is judged by whether
// the run tracked its baseline through the loss's initial fall (core/analysis/departureclass.h), not only by
// how far into the plan it parts: built from W&B-style history exports (irregular steps, a learning-rate
// column, a long plan in the config), and on the real public exports where ../shared is present.
#include "core/analysis/departureclass.h"
#include "core/analysis/triage.h"
#include "core/query/catalog.h"
#include "core/store/runstore.h"
#include "folderfixture.h"
#include "testmain.h"

#include <QDirIterator>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <random>

using namespace fp8scope;
using namespace fp8scope::analysis;
using fp8scope::testing::write;

namespace {

// A pretraining loss: from about 3.8 it falls steeply over the first hundreds of steps, then slowly for the
// rest of a long plan.
double lossAt(int64_t step)
{
    const double t = double(step);
    return 1.0 + 2.8 * std::exp(-t / 60.0) + 0.35 * std::pow(1.0 + t / 500.0, -0.5);
}

// Warm-up to 2500 steps, then a cosine decay over the plan.
double lrAt(int64_t step, int64_t planned)
{
    if (step < 2500)
        return 3e-5 * double(step) / 2500.0;
    return 1.5e-5 * (1.0 + std::cos(M_PI * double(step - 2500) / double(planned - 2500)));
}

// A W&B history export (`_step,train/loss,train/learning_rate`) sampled at irregular steps to `last`, the
// loss times (1 + gap(step)), with the same data noise in every run of a seed.
QByteArray history(int64_t last, int64_t planned, const std::function<double(int64_t)> &gap, uint32_t seed)
{
    std::mt19937 rng {seed};
    std::uniform_int_distribution<int> stride(40, 160);
    std::normal_distribution<double> noise(0.0, 0.006);
    QByteArray out = "_step,train/loss,train/learning_rate\n";
    for (int64_t step = 8; step <= last; step += stride(rng)) {
        const double loss = lossAt(step) * (1.0 + noise(rng)) * (1.0 + gap(step));
        out += QByteArray::number(step) + ',' + QByteArray::number(loss, 'g', 8) + ','
            + QByteArray::number(lrAt(step, planned), 'g', 6) + '\n';
    }
    return out;
}

// A folder of two runs, bf16/ and fp8/, each its own history export and config (a 182,314-step plan with a
// 2,500-step warm-up, as the real exports' runs had), triaged: the verdict and the departure finding.
std::pair<Comparison, QJsonObject> triagePair(const std::function<double(int64_t)> &gap, int64_t last = 40000)
{
    QTemporaryDir dir;
    const int64_t planned = 182314;
    const QByteArray config = "num_train_steps: 182314\nnum_warmup_steps: 2500\n";
    write(dir.path() + QStringLiteral("/bf16/history_aaaa1111.csv"),
        history(
            last, planned, [](int64_t) { return 0.0; }, 7));
    write(dir.path() + QStringLiteral("/bf16/config.yaml"), config + "precision: bf16\n");
    write(dir.path() + QStringLiteral("/fp8/history_bbbb2222.csv"), history(last, planned, gap, 7));
    write(dir.path() + QStringLiteral("/fp8/config.yaml"), config + "precision: fp8\nfp8_recipe: blockwise\n");
    QString error;
    {
        RunStore store;
        if (!store.open(dir.path(), &error))
            qFatal("%s", qPrintable(error));
        store.ingest();
    }
    Catalog catalog;
    if (!catalog.open(dir.path(), &error))
        qFatal("%s", qPrintable(error));
    const auto b = catalog.findRun(QStringLiteral("bf16")), r = catalog.findRun(QStringLiteral("fp8"));
    if (!b || !r)
        qFatal("the two runs are not there");
    Comparison c = compareRuns(catalog, b->ref, r->ref);
    QJsonObject cls;
    for (const Finding &f : c.findings) {
        if (f.kind == FindingKind::LossDeparture)
            cls = f.evidence.value(QStringLiteral("class")).toObject();
    }
    return {c, cls};
}

} // namespace

class TestDynamics : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // The rule on its own, one clause at a time.
    void theRuleClauseByClause()
    {
        StepSeries loss;
        for (int64_t s = 0; s <= 20000; s += 100) {
            loss.steps.push_back(s);
            loss.values.push_back(lossAt(s));
        }
        // Tracked through the fall, past the warm-up, at 5 % of the plan: mid-run.
        DepartureClass c = classifyDeparture(loss, 10000, 200000, 2500);
        QVERIFY2(!c.early, qPrintable(c.why));
        QVERIFY2(
            c.why.contains(QLatin1String("tracked its baseline through the loss's initial fall")), qPrintable(c.why));
        // Parts at its first points: never tracked.
        c = classifyDeparture(loss, 500, 200000, 2500);
        QVERIFY(c.early);
        QVERIFY2(c.why.contains(QLatin1String("never tracked")), qPrintable(c.why));
        // During the warm-up.
        c = classifyDeparture(loss, 2000, 200000, 2500);
        QVERIFY(c.early);
        QVERIFY2(c.why.contains(QLatin1String("warm-up")), qPrintable(c.why));
        // No warm-up known, while the loss still falls: the fall was not made yet.
        StepSeries fine;
        for (int64_t s = 0; s <= 20000; s += 10) {
            fine.steps.push_back(s);
            fine.values.push_back(lossAt(s));
        }
        c = classifyDeparture(fine, 150, 200000, std::nullopt);
        QVERIFY(c.early);
        QVERIFY2(c.why.contains(QLatin1String("initial fall")), qPrintable(c.why));
        // From a tenth of the plan on, mid-run whatever the loss did.
        c = classifyDeparture(fine, 150, 1000, std::nullopt);
        QVERIFY(!c.early);
        // A learning rate's warm-up end: where it first reaches 98 % of its highest value so far.
        StepSeries lr;
        for (int64_t s = 0; s <= 10000; s += 100) {
            lr.steps.push_back(s);
            lr.values.push_back(lrAt(s, 200000));
        }
        QCOMPARE(warmupEndOf(lr, 10000), std::optional<int64_t>(2500));
        QCOMPARE(warmupEndOf(lr, 1000), std::optional<int64_t>(1000)); // still rising: the last so far
    }

    // The real case's shape: the FP8 run tracks its baseline through the whole fall of the loss, then parts
    // slowly (1 % growing to 6 %) from step 15,000 of a 182,314-step plan (8 %): mid-run instability, not early
    // divergence, and the finding says why.
    void tracksThenPartsLateInALongPlanIsMidRun()
    {
        const auto [c, cls]
            = triagePair([](int64_t s) { return s < 15000 ? 0.0 : 0.01 + 0.05 * double(s - 15000) / 25000.0; });
        QVERIFY(c.departure);
        QVERIFY2(*c.departure > 14000 && *c.departure < 20000, qPrintable(QString::number(*c.departure)));
        QCOMPARE(c.plannedSteps, int64_t(182314));
        QCOMPARE(c.verdict, Verdict::MidRunInstability);
        QCOMPARE(cls.value(QStringLiteral("early")).toBool(), false);
        QVERIFY(cls.value(QStringLiteral("fraction_of_plan")).toDouble() < 0.10);
        // The learning rate's first sample at its top, sampled every 40 to 160 steps: 2,500 to 2,660.
        const double warm = cls.value(QStringLiteral("warmup_end")).toDouble();
        QVERIFY2(warm >= 2450 && warm <= 2660, qPrintable(QString::number(warm)));
        QVERIFY(cls.value(QStringLiteral("fall_made")).toDouble() > 0.9);
        QVERIFY2(cls.value(QStringLiteral("why")).toString().contains(QLatin1String("tracked its baseline")),
            qPrintable(cls.value(QStringLiteral("why")).toString()));
    }

    // A run that never tracks: 4 % above its baseline from its first steps, through the fall: early divergence.
    void neverTracksIsEarly()
    {
        const auto [c, cls] = triagePair([](int64_t s) { return s < 100 ? 0.0 : 0.04; });
        QVERIFY(c.departure);
        QCOMPARE(c.verdict, Verdict::EarlyDivergence);
        QCOMPARE(cls.value(QStringLiteral("early")).toBool(), true);
    }

    // The real public exports (two FP8 block-scaling runs of a 7B model, their config's 182,314-step plan and
    // 2,500-step warm-up): FL4 parts from FL2 at about step 14,800, 8 % of the plan, after the loss's fall.
    void realExportsPartMidRun()
    {
        const QString real = QDir(QString::fromLocal8Bit(qgetenv("FP8SCOPE_SOURCE_DIR")))
                                 .absoluteFilePath(QStringLiteral("../shared/fixtures/real/wandb_csv"));
        if (!QFileInfo(real).isDir())
            QSKIP("../shared/fixtures/real is absent");
        QTemporaryDir dir;
        const QByteArray config = "num_train_steps: 182314\nnum_warmup_steps: 2500\n";
        for (const auto &[run, file] : {std::pair(QStringLiteral("fl2"), QStringLiteral("history_98xg86yz.csv")),
                 std::pair(QStringLiteral("fl4"), QStringLiteral("history_ww9z3vy4.csv"))}) {
            QFile in(real + QLatin1Char('/') + file);
            QVERIFY(in.open(QIODevice::ReadOnly));
            write(dir.path() + QLatin1Char('/') + run + QLatin1Char('/') + file, in.readAll());
            write(dir.path() + QLatin1Char('/') + run + QStringLiteral("/config.yaml"), config);
        }
        RunStore store;
        QString error;
        QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
        store.ingest();
        Catalog catalog;
        QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
        const auto b = catalog.findRun(QStringLiteral("fl2")), r = catalog.findRun(QStringLiteral("fl4"));
        QVERIFY(b && r);
        const Comparison c = compareRuns(catalog, b->ref, r->ref);
        QVERIFY(c.departure);
        QCOMPARE(c.plannedSteps, int64_t(182314));
        QVERIFY(double(*c.departure) < 0.10 * 182314);
        QCOMPARE(c.verdict, Verdict::MidRunInstability);
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestDynamics)
#include "tst_dynamics.moc"
