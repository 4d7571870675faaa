// Issue 41: triage on real training dynamics. Early divergence or mid-run instability is judged by whether
// the run tracked its baseline through the loss's initial fall (core/analysis/departureclass.h), not only by
// how far into the plan it parts: built from W&B-style history exports (irregular steps, a learning-rate
// column, a long plan in the config), and on the real public exports where ../shared is present. Spikes of an
// FP8 run's own of varied size and spacing against its baseline's (core/analysis/spikeexcess.h). And the
// emulator's runs (tools/fp8train: a tiny GPT trained for real through an emulated FP8 GEMM, with faults from
// real mechanisms), committed under tests/fixtures/emulated or generated afresh.
#include "core/analysis/departureclass.h"
#include "core/analysis/spikeexcess.h"
#include "core/analysis/triage.h"
#include "core/query/catalog.h"
#include "core/store/runstore.h"
#include "folderfixture.h"
#include "storeaccess.h"
#include "testmain.h"

#include <QDirIterator>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <array>
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

// A loss that keeps falling for the whole plan, as long pretraining runs' do: a steep start, then a power law
// that by step 5,000 has made less than 90 % of its fall to where it is at step 48,000.
double longFallAt(int64_t step)
{
    const double t = double(step);
    return 1.0 + 1.6 * std::exp(-t / 60.0) + 1.2 * std::pow(1.0 + t / 1000.0, -0.5);
}

// A W&B history export (`_step,train/loss,train/learning_rate`) sampled at irregular steps to `last`, the
// loss times (1 + gap(step)), with the same data noise in every run of a seed.
QByteArray history(int64_t last, int64_t planned, const std::function<double(int64_t)> &gap, uint32_t seed,
    double (*lossOf)(int64_t) = lossAt)
{
    std::mt19937 rng {seed};
    std::uniform_int_distribution<int> stride(40, 160);
    std::normal_distribution<double> noise(0.0, 0.006);
    QByteArray out = "_step,train/loss,train/learning_rate\n";
    for (int64_t step = 8; step <= last; step += stride(rng)) {
        const double loss = lossOf(step) * (1.0 + noise(rng)) * (1.0 + gap(step));
        out += QByteArray::number(step) + ',' + QByteArray::number(loss, 'g', 8) + ','
            + QByteArray::number(lrAt(step, planned), 'g', 6) + '\n';
    }
    return out;
}

// A folder of two runs, bf16/ and fp8/, each its own history export and config (a 182,314-step plan with a
// 2,500-step warm-up, as the real exports' runs had), triaged: the verdict and the departure finding.
std::pair<Comparison, QJsonObject> triagePair(
    const std::function<double(int64_t)> &gap, int64_t last = 40000, double (*lossOf)(int64_t) = lossAt)
{
    QTemporaryDir dir;
    const int64_t planned = 182314;
    const QByteArray config = "num_train_steps: 182314\nnum_warmup_steps: 2500\n";
    write(dir.path() + QStringLiteral("/bf16/history_aaaa1111.csv"),
        history(
            last, planned, [](int64_t) { return 0.0; }, 7, lossOf));
    write(dir.path() + QStringLiteral("/bf16/config.yaml"), config + "precision: bf16\n");
    write(dir.path() + QStringLiteral("/fp8/history_bbbb2222.csv"), history(last, planned, gap, 7, lossOf));
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

// Loss spikes as a run logs them: a jump of `size` times the loss that decays by `decay` a step.
struct PlannedSpike {
    int64_t step;
    double size, decay;
};

// A pair of losses with spikes of their own and of the data's (both runs have those at the same steps),
// logged every `interval` steps as the mean over the interval (Megatron's `lm loss`), from step 1 to `steps`.
struct SpikyPair {
    StepSeries baseline, run;
};

SpikyPair spikyPair(const std::vector<PlannedSpike> &shared, const std::vector<PlannedSpike> &baselineOwn,
    const std::vector<PlannedSpike> &runOwn, int interval, int64_t steps, uint32_t seed)
{
    std::mt19937 rng {seed};
    std::normal_distribution<double> normal(0.0, 1.0);
    const auto spikesAt = [&](const std::vector<PlannedSpike> &plan) {
        std::vector<double> out(size_t(steps) + 1, 0.0);
        for (const PlannedSpike &p : plan) {
            double level = p.size;
            for (int64_t t = p.step; t <= steps && level > 1e-5; ++t, level *= p.decay)
                out[size_t(t)] += level;
        }
        return out;
    };
    const std::vector<double> data = spikesAt(shared), ownB = spikesAt(baselineOwn), ownR = spikesAt(runOwn);
    SpikyPair pair;
    double sumB = 0, sumR = 0;
    for (int64_t t = 1; t <= steps; ++t) {
        const double mean = 2.0 + 2.5 * std::exp(-double(t) / 200.0) + 0.3 / std::sqrt(1.0 + double(t) / 1000.0);
        const double dataNoise = 0.006 * normal(rng); // the batch's: the same in both runs
        const double b = mean * (1.0 + dataNoise + 0.005 * normal(rng) + data[size_t(t)] + ownB[size_t(t)]);
        const double r = mean * (1.0 + dataNoise + 0.005 * normal(rng) + data[size_t(t)] + ownR[size_t(t)]);
        sumB += b;
        sumR += r;
        if (t % interval == 0) {
            pair.baseline.steps.push_back(t);
            pair.baseline.values.push_back(sumB / interval);
            pair.run.steps.push_back(t);
            pair.run.values.push_back(sumR / interval);
            sumB = sumR = 0;
        }
    }
    return pair;
}

// Spikes at random steps after the warm-up (`from`), of a size in [lo, hi), decaying over some tens of steps.
std::vector<PlannedSpike> randomSpikes(std::mt19937 &rng, int n, double lo, double hi, int64_t from, int64_t to,
    double decayLo = 0.85, double decayHi = 0.97)
{
    std::uniform_int_distribution<int64_t> at(from, to);
    std::uniform_real_distribution<double> size(lo, hi), decay(decayLo, decayHi);
    std::vector<PlannedSpike> out;
    for (int i = 0; i < n; ++i)
        out.push_back({at(rng), size(rng), decay(rng)});
    return out;
}

// The FP8 run's own spikes of case `k`: their size (small, medium, large) and spacing (at random, in bursts of
// three a few tens of steps apart, about evenly spaced) vary with it.
std::vector<PlannedSpike> ownSpikes(std::mt19937 &rng, int k, int n, int64_t from, int64_t to)
{
    const double sizes[3][2] = {{0.04, 0.10}, {0.10, 0.25}, {0.25, 0.6}};
    const double lo = sizes[k % 3][0], hi = sizes[k % 3][1];
    // Every other case's spikes are short: back within a few steps.
    const double decayLo = k % 2 == 1 ? 0.3 : 0.85, decayHi = k % 2 == 1 ? 0.7 : 0.97;
    std::uniform_real_distribution<double> size(lo, hi), decay(decayLo, decayHi);
    std::vector<PlannedSpike> out;
    switch ((k / 3) % 3) {
    case 0: return randomSpikes(rng, n, lo, hi, from, to, decayLo, decayHi);
    case 1: {
        std::uniform_int_distribution<int64_t> at(from, to - 200), gap(20, 60);
        for (int i = 0; i < n;) {
            int64_t t = at(rng);
            for (int j = 0; j < 3 && i < n; ++j, ++i, t += gap(rng))
                out.push_back({t, size(rng), decay(rng)});
        }
        return out;
    }
    default: {
        std::uniform_int_distribution<int64_t> jitter(-20, 20);
        for (int i = 0; i < n; ++i)
            out.push_back({from + (to - from) * (2 * i + 1) / (2 * n) + jitter(rng), size(rng), decay(rng)});
        return out;
    }
    }
}

// The emulator's runs (tools/fp8train) as committed under tests/fixtures/emulated, or as generated afresh:
// what each FP8 run's comparison with its baseline must say.
struct EmulatedCase {
    QString folder, baseline, run;
    Verdict verdict;
    int64_t departFrom = 0, departBy = 0; // the departure's interval lies in [departFrom, departBy] (0: none)
    QString culprit; // the layer named first, whose gradient underflow sets in before the departure
    QString key; // a config key the comparison names
    bool gapBf16 = false, gapFp8 = false; // an eval gap under BF16 and under FP8 inference
    // On fresh seeds, a run whose FP8 loss ends within 2 % of its baseline's may be said to part or not: the
    // emulated FP8 GEMM of this small model costs 0.5-1.2 % of the loss by the end of a healthy run, at the
    // edge of the engine's agreement band (0.5 %; real healthy FP8 runs stay within 0.25 %).
    bool marginal = false;
};

const std::vector<EmulatedCase> &emulatedCases()
{
    static const std::vector<EmulatedCase> cases {
        {QStringLiteral("runs"), QStringLiteral("bf16"), QStringLiteral("fp8_healthy"), Verdict::None, 0, 0, {}, {},
            false, false, true},
        {QStringLiteral("runs"), QStringLiteral("bf16"), QStringLiteral("fp8_e4m3_grad"), Verdict::None, 0, 0, {}, {},
            false, false, true},
        {QStringLiteral("runs"), QStringLiteral("bf16"), QStringLiteral("fp8_stale_scale"), Verdict::MidRunInstability,
            400, 700, QStringLiteral("decoder.layers.3.mlp.linear_fc2"), {}, true, true},
        {QStringLiteral("runs"), QStringLiteral("bf16"), QStringLiteral("fp8_early_feature"), Verdict::EarlyDivergence,
            1, 100, {}, QStringLiteral("fp8_wgrad_unscaled"), true, true},
        {QStringLiteral("runs"), QStringLiteral("bf16"), QStringLiteral("fp8_wrong_inference"), Verdict::DownstreamGap,
            0, 0, {}, {}, false, true},
        {QStringLiteral("high-lr"), QStringLiteral("bf16"), QStringLiteral("fp8"), Verdict::MidRunInstability, 130,
            1100, {}, {}, false, false, true},
    };
    return cases;
}

bool copyTree(const QString &from, const QString &to)
{
    QDirIterator it(from, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString file = it.next();
        const QString target = to + QLatin1Char('/') + QDir(from).relativeFilePath(file);
        if (!QDir().mkpath(QFileInfo(target).absolutePath()) || !QFile::copy(file, target))
            return false;
    }
    return true;
}

// Triages `root` (a copy of the emulator's output: runs/ and high-lr/) and checks every case; the failures in
// words (empty: all hold). `fresh`: runs of another seed, where the marginal cases may go either way.
QStringList checkEmulated(const QString &root, bool fresh = false)
{
    QStringList failures;
    for (const QString &folder : {QStringLiteral("runs"), QStringLiteral("high-lr")}) {
        const QString dir = root + QLatin1Char('/') + folder;
        QString error;
        {
            RunStore store;
            if (!store.open(dir, &error))
                return {error};
            store.ingest();
        }
        Catalog catalog;
        if (!catalog.open(dir, &error))
            return {error};
        for (const EmulatedCase &e : emulatedCases()) {
            if (e.folder != folder)
                continue;
            const auto b = catalog.findRun(e.baseline), r = catalog.findRun(e.run);
            if (!b || !r) {
                failures << QStringLiteral("%1/%2: not found").arg(folder, e.run);
                continue;
            }
            const Comparison c = compareRuns(catalog, b->ref, r->ref);
            const QString name = folder + QLatin1Char('/') + e.run;
            const auto fail = [&](const QString &why) { failures << name + QStringLiteral(": ") + why; };
            if (fresh && e.marginal) {
                // No departure, or a mid-run one that ends within 0.03 (2 % of the loss of about 1.5 these runs
                // end at).
                double gap = 0;
                for (const Finding &f : c.findings) {
                    if (f.kind == FindingKind::LossDeparture)
                        gap = f.evidence.value(QStringLiteral("gap_at_end")).toDouble();
                }
                if (c.verdict != Verdict::None && (c.verdict != Verdict::MidRunInstability || gap > 0.03))
                    fail(QStringLiteral("verdict %1, %2 higher at the end").arg(verdictName(c.verdict)).arg(gap));
                continue;
            }
            if (c.verdict != e.verdict)
                fail(QStringLiteral("verdict %1, not %2").arg(verdictName(c.verdict), verdictName(e.verdict)));
            const Finding *departure = nullptr, *firstSignal = nullptr, *gradient = nullptr;
            bool key = false, gap[2] = {false, false};
            for (const Finding &f : c.findings) {
                if (f.kind == FindingKind::LossDeparture)
                    departure = &f;
                if (f.kind == FindingKind::LayerSignal && !firstSignal)
                    firstSignal = &f;
                if (f.kind == FindingKind::LayerSignal && f.layer == e.culprit && f.tensor == QLatin1String("gradient")
                    && f.stat == QLatin1String("underflows%") && !gradient)
                    gradient = &f;
                if (f.kind == FindingKind::ConfigDifference && !e.key.isEmpty() && f.summary.contains(e.key))
                    key = true;
                if (f.kind == FindingKind::EvalGap) {
                    const QString inference = f.evidence.value(QStringLiteral("inference")).toString();
                    gap[inference == QLatin1String("fp8") ? 1 : 0] = true;
                }
            }
            if (e.departBy == 0 && c.departure)
                fail(QStringLiteral("departs at %1").arg(*c.departure));
            if (e.departBy > 0) {
                if (!departure || !c.departure) {
                    fail(QStringLiteral("no departure"));
                } else {
                    // The interval the finding states, within where the fault made the loss part.
                    const int64_t low = int64_t(departure->evidence.value(QStringLiteral("low")).toDouble(-1));
                    const int64_t high = int64_t(departure->evidence.value(QStringLiteral("high")).toDouble(-1));
                    if (low < e.departFrom || high > e.departBy || low > *c.departure || high < *c.departure)
                        fail(QStringLiteral("departure %1 in [%2, %3], not within [%4, %5]")
                                 .arg(*c.departure)
                                 .arg(low)
                                 .arg(high)
                                 .arg(e.departFrom)
                                 .arg(e.departBy));
                }
            }
            if (!e.culprit.isEmpty()) {
                // The layer whose mechanism was broken first (by its gradient's underflow, or, on some seeds, its
                // weights' as they decay unlearned: both from the fault), and its gradient underflow set in
                // before the departure.
                if (!firstSignal || firstSignal->layer != e.culprit)
                    fail(QStringLiteral("first layer signal %1, not of %2")
                             .arg(firstSignal ? firstSignal->summary : QStringLiteral("(none)"), e.culprit));
                if (!fresh && firstSignal != gradient)
                    fail(QStringLiteral("first layer signal %1, not its gradient's underflows%")
                             .arg(firstSignal ? firstSignal->summary : QStringLiteral("(none)")));
                if (!gradient || !c.departure || !gradient->step || *gradient->step > *c.departure)
                    fail(QStringLiteral("no gradient underflow of %1 before the departure").arg(e.culprit));
            }
            if (!e.key.isEmpty() && !key)
                fail(QStringLiteral("the config key %1 is not named").arg(e.key));
            if (gap[0] != e.gapBf16 || gap[1] != e.gapFp8)
                fail(QStringLiteral("eval gap under BF16 inference %1, under FP8 %2").arg(gap[0]).arg(gap[1]));
        }
    }
    return failures;
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
            c.why.contains(QLatin1String("it tracked its baseline: after the learning-rate warm-up (to step 2500)")),
            qPrintable(c.why));
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

    // Issue 54: a long plan (182,314 steps, warm-up 2,500) whose loss keeps falling for the whole log (a power
    // law: by step 5,000 it has made 88 % of its fall to step 48,000). The FP8 run tracks its baseline to step
    // 4,000, then parts near 5,000 (the gap grows to 3 % by step 12,000): tracking decides, mid-run; the loss's
    // fall, which the rule before issue 54 let veto it, only says from when tracking counts.
    void longPlanTrackedThenPartedIsMidRun()
    {
        const auto [c, cls] = triagePair(
            [](int64_t s) { return s < 4500 ? 0.0 : std::min(0.03, 0.004 + 0.03 * double(s - 4500) / 7500.0); }, 48000,
            longFallAt);
        QVERIFY(c.departure);
        QVERIFY2(*c.departure > 4000 && *c.departure < 6500, qPrintable(QString::number(*c.departure)));
        QVERIFY2(cls.value(QStringLiteral("fall_made")).toDouble() < 0.9,
            qPrintable(QString::number(cls.value(QStringLiteral("fall_made")).toDouble())));
        QCOMPARE(c.verdict, Verdict::MidRunInstability);
        QVERIFY2(cls.value(QStringLiteral("tracked_points")).toInt() >= 8,
            qPrintable(cls.value(QStringLiteral("why")).toString()));
        QVERIFY2(cls.value(QStringLiteral("why")).toString().startsWith(QLatin1String("it tracked its baseline")),
            qPrintable(cls.value(QStringLiteral("why")).toString()));
    }

    // The same plan and loss, an FP8 run that never tracks: 1 % above its baseline from the first steps and
    // growing. Early.
    void longPlanNeverTrackedIsEarly()
    {
        const auto [c, cls]
            = triagePair([](int64_t s) { return 0.01 + 0.03 * std::min(1.0, double(s) / 12000.0); }, 48000, longFallAt);
        QVERIFY(c.departure);
        QCOMPARE(c.verdict, Verdict::EarlyDivergence);
        QVERIFY2(cls.value(QStringLiteral("why")).toString().contains(QLatin1String("never tracked")),
            qPrintable(cls.value(QStringLiteral("why")).toString()));
    }

    // Issue 54: how big a gap is acceptable. A healthy FP8 run whose gap grows smoothly from the start, 0.002 to
    // 0.017 over 1,500 steps (the emulator's held-out case), is FP8's cost, said against the bar (the default
    // 0.01: over it; a baseline whose manifest accepts 0.02: within it), not an instability; the same end gap
    // reached in a break after tracking at +0.002 is one.
    void gradualCostIsNotABreak_data()
    {
        QTest::addColumn<bool>("gradual");
        QTest::addColumn<QString>("bar"); // the baseline's loss_gap_bar ("" for none)
        QTest::addColumn<QString>("verdict");
        QTest::addColumn<bool>("over");
        QTest::newRow("gradual, default bar") << true << QString() << QStringLiteral("none") << true;
        QTest::newRow("gradual, the baseline accepts 0.02")
            << true << QStringLiteral("0.02") << QStringLiteral("none") << false;
        QTest::newRow("a break after tracking") << false << QString() << QStringLiteral("mid-run-instability") << true;
    }
    void gradualCostIsNotABreak()
    {
        QFETCH(bool, gradual);
        QFETCH(QString, bar);
        QFETCH(QString, verdict);
        QFETCH(bool, over);
        QTemporaryDir dir;
        const auto csv = [&](const std::function<double(int64_t)> &gap, uint32_t own) {
            std::mt19937 data {7}, noise {own};
            std::normal_distribution<double> shared(0.0, 0.004), mine(0.0, 0.002);
            QByteArray out = "step,loss,lr\n";
            for (int64_t step = 10; step <= 1500; step += 10) {
                const double loss
                    = 2.0 + 1.5 * std::pow(1.0 + double(step) / 50.0, -0.5) + shared(data) + mine(noise) + gap(step);
                out += QByteArray::number(step) + ',' + QByteArray::number(loss, 'g', 8) + ','
                    + QByteArray::number(step < 100 ? 3e-4 * double(step) / 100.0 : 3e-4, 'g', 6) + '\n';
            }
            return out;
        };
        write(dir.path() + QStringLiteral("/fp8scope-workspace.json"),
            QStringLiteral(
                R"({"runs": {"bf16": {"precision": "bf16"%1}, "fp8": {"precision": "fp8", "recipe": "current", "baseline": "bf16"}}})")
                .arg(bar.isEmpty() ? QString() : QStringLiteral(", \"loss_gap_bar\": %1").arg(bar))
                .toUtf8());
        write(dir.path() + QStringLiteral("/bf16/metrics.csv"), csv([](int64_t) { return 0.0; }, 1));
        write(dir.path() + QStringLiteral("/fp8/metrics.csv"),
            csv(gradual ? std::function<double(int64_t)>([](int64_t s) { return 0.002 + 0.015 * double(s) / 1500.0; })
                        : std::function<double(int64_t)>([](int64_t s) { return s < 1000 ? 0.002 : 0.017; }),
                2));
        QString error;
        Catalog catalog;
        QVERIFY2(testing::openAndIngest(dir.path(), &catalog, &error), qPrintable(error));
        const auto b = catalog.findRun(QStringLiteral("bf16")), r = catalog.findRun(QStringLiteral("fp8"));
        QVERIFY(b && r);
        const Comparison c = compareRuns(catalog, b->ref, r->ref);
        QStringList said;
        const Finding *gap = nullptr;
        for (const Finding &f : c.findings) {
            said << findingKindName(f.kind) + QStringLiteral(": ") + f.summary;
            gap = f.kind == FindingKind::LossGap ? &f : gap;
        }
        QVERIFY2(verdictName(c.verdict) == verdict, qPrintable(said.join(QLatin1Char('\n'))));
        QVERIFY2(gap, qPrintable(said.join(QLatin1Char('\n'))));
        QCOMPARE(gap->evidence.value(QStringLiteral("over")).toBool(), over);
        QCOMPARE(gap->severity, over ? Severity::Warning : Severity::Info);
        QCOMPARE(gap->evidence.value(QStringLiteral("bar")).toDouble(), bar.isEmpty() ? 0.01 : bar.toDouble());
        QVERIFY2(std::abs(gap->evidence.value(QStringLiteral("gap_at_end")).toDouble() - 0.017) < 0.003,
            qPrintable(gap->summary));
        QCOMPARE(gap->evidence.contains(QStringLiteral("gradual")), gradual);
        if (gradual) {
            QVERIFY(!c.departure);
            // Over the bar: what lowers FP8's cost is the next step; within it, nothing to do.
            QCOMPARE(c.nextSteps.empty(), !over);
        }
    }

    // A gap with no step at all, growing from 0 by 1 % every 4,000 steps from step 15,000, sampled every 40 to
    // 160 steps with 0.6 % noise: found, with an interval around the step it is said at, within the first 2.5 %
    // of growth.
    void slowPartingIsFoundWithAnInterval()
    {
        const auto [c, cls] = triagePair([](int64_t s) { return s < 15000 ? 0.0 : 0.01 * double(s - 15000) / 4000.0; });
        QVERIFY(c.departure);
        QVERIFY2(*c.departure >= 15000 && *c.departure <= 25000, qPrintable(QString::number(*c.departure)));
        const Finding *f = nullptr;
        for (const Finding &x : c.findings)
            f = x.kind == FindingKind::LossDeparture ? &x : f;
        QVERIFY(f);
        const double low = f->evidence.value(QStringLiteral("low")).toDouble();
        const double high = f->evidence.value(QStringLiteral("high")).toDouble();
        QVERIFY2(low <= double(*c.departure) && double(*c.departure) <= high && low >= 14000 && high <= 26000,
            qPrintable(QStringLiteral("%1 in [%2, %3]").arg(*c.departure).arg(low).arg(high)));
        QCOMPARE(c.verdict, Verdict::MidRunInstability);
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
        // Decided by tracking (issue 54), not by the share of the plan.
        QJsonObject cls;
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::LossDeparture)
                cls = f.evidence.value(QStringLiteral("class")).toObject();
        }
        qInfo("departure %lld: %s", (long long)*c.departure, qPrintable(cls.value(QStringLiteral("why")).toString()));
        QVERIFY(cls.value(QStringLiteral("tracked_points")).toInt() >= 16);
    }

    // Spikes of the FP8 run's own, of varied size (4 to 60 % of the loss) and spacing (at random, in bursts, about
    // evenly), on top of the data's spikes that both runs have, logged every 1, 5 or 10 steps: found as an excess
    // in nearly every case; a run with no more spikes of its own than its baseline is not called spiky.
    void spikesOfTheirOwnOfVariedSizeAndSpacing()
    {
        const int cases = 90;
        int found = 0, falseAlarms = 0;
        QStringList missed;
        for (int k = 0; k < cases; ++k) {
            std::mt19937 rng {uint32_t(1000 + k)};
            const int interval = std::array {1, 5, 10}[size_t(k / 9) % 3];
            const int64_t steps = 4000;
            std::uniform_int_distribution<int> few(0, 2), shared(2, 6), many(5, 14);
            const std::vector<PlannedSpike> data = randomSpikes(rng, shared(rng), 0.10, 0.5, 400, steps - 50);
            const std::vector<PlannedSpike> baseOwn = randomSpikes(rng, few(rng), 0.10, 0.4, 400, steps - 50);
            const int n = many(rng);
            const std::vector<PlannedSpike> runOwn = ownSpikes(rng, k, n, 400, steps - 50);
            const SpikyPair spiky = spikyPair(data, baseOwn, runOwn, interval, steps, uint32_t(k));
            const SpikeExcess e = compareSpikes(spiky.run, spiky.baseline);
            if (e.more)
                ++found;
            else
                missed << QStringLiteral("case %1 (%2 own, interval %3): %4 own against %5, p %6")
                              .arg(k)
                              .arg(n)
                              .arg(interval)
                              .arg(e.runOnly)
                              .arg(e.baselineOnly)
                              .arg(e.p, 0, 'g', 2);
            // The control: the same data and baseline, the run with a few spikes of its own as the baseline has.
            const std::vector<PlannedSpike> controlOwn = randomSpikes(rng, few(rng), 0.10, 0.4, 400, steps - 50);
            const SpikyPair calm = spikyPair(data, baseOwn, controlOwn, interval, steps, uint32_t(k));
            if (compareSpikes(calm.run, calm.baseline).more)
                ++falseAlarms;
        }
        qInfo(
            "spike excess found in %d of %d runs, false alarms in %d of %d controls", found, cases, falseAlarms, cases);
        for (const QString &m : missed)
            qInfo("missed: %s", qPrintable(m));
        QVERIFY2(found >= cases * 2 / 3, qPrintable(QStringLiteral("found %1 of %2").arg(found).arg(cases)));
        QVERIFY2(falseAlarms <= cases / 20, qPrintable(QStringLiteral("%1 false alarms").arg(falseAlarms)));
    }

    // The emulator's committed runs (tools/fp8train/make-fixtures.sh, seed 1): a tiny GPT trained for real, in
    // BF16 and through an emulated FP8 GEMM, with faults from real mechanisms. Each FP8 run's class, departure
    // interval, culprit layer, named config key and eval gaps under BF16 and FP8 inference.
    void emulatedRuns()
    {
        const QString fixtures = QDir(QString::fromLocal8Bit(qgetenv("FP8SCOPE_SOURCE_DIR")))
                                     .absoluteFilePath(QStringLiteral("tests/fixtures/emulated"));
        QVERIFY2(QFileInfo(fixtures + QStringLiteral("/runs/bf16/logs/train.out")).isFile(), qPrintable(fixtures));
        QTemporaryDir dir;
        QVERIFY(copyTree(fixtures, dir.path()));
        const QStringList failures = checkEmulated(dir.path());
        QVERIFY2(failures.isEmpty(), qPrintable(failures.join(QLatin1Char('\n'))));
    }

    // The same on runs generated afresh (opt-in, about ten minutes a seed on two cores):
    // FP8SCOPE_EMULATOR_SEEDS=2-3 QTEST_FUNCTION_TIMEOUT=7200000 with FP8SCOPE_TEST_PYTHON a Python with torch.
    void emulatedFreshSeeds()
    {
        const QStringList range = qEnvironmentVariable("FP8SCOPE_EMULATOR_SEEDS").split(QLatin1Char('-'));
        const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
        if (range.size() != 2 || python.isEmpty())
            QSKIP("set FP8SCOPE_EMULATOR_SEEDS=FIRST-LAST and FP8SCOPE_TEST_PYTHON to run the emulator");
        // Qt Test stops a function after 5 minutes unless told otherwise; a seed takes about ten.
        const int seeds = range[1].toInt() - range[0].toInt() + 1;
        if (qEnvironmentVariableIntValue("QTEST_FUNCTION_TIMEOUT") < seeds * 1800 * 1000)
            QSKIP("set QTEST_FUNCTION_TIMEOUT to at least 1800000 ms a seed as well");
        const QString script = QDir(QString::fromLocal8Bit(qgetenv("FP8SCOPE_SOURCE_DIR")))
                                   .absoluteFilePath(QStringLiteral("tools/fp8train/make-fixtures.sh"));
        QStringList failures;
        for (int seed = range[0].toInt(); seed <= range[1].toInt(); ++seed) {
            QTemporaryDir dir;
            QProcess make;
            make.setProcessChannelMode(QProcess::ForwardedErrorChannel);
            make.start(QStringLiteral("bash"), {script, dir.path(), python, QString::number(seed)});
            QVERIFY2(make.waitForFinished(3600 * 1000) && make.exitCode() == 0, "make-fixtures.sh failed");
            for (const QString &f : checkEmulated(dir.path(), true))
                failures << QStringLiteral("seed %1: %2").arg(seed).arg(f);
        }
        QVERIFY2(failures.isEmpty(), qPrintable(failures.join(QLatin1Char('\n'))));
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestDynamics)
#include "tst_dynamics.moc"
