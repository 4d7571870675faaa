// The triage engine's pure rules, without a store: the table of finding kinds, the best recipe of a what-if
// (BF16 the reference, never a candidate), what a config key is to a comparison (context keys never suspects)
// and the comparability aspects of keys.
#include "core/analysis/findingkind.h"
#include "core/analysis/rules.h"
#include "core/analysis/storedwhatif.h"
#include "core/analysis/triage.h"
#include "core/analysis/triageinputs.h"
#include "core/analysis/triagerules.h"
#include "core/numerics/blockmap.h"
#include "core/numerics/whatif.h"
#include "memoryreader.h"

#include "testmain.h"

#include <QTest>

#include <cmath>
#include <functional>
#include <random>
#include <set>

using namespace fp8scope;
using namespace fp8scope::analysis;

namespace {

Run runNamed(const QString &name, const QString &precision, const QString &recipe)
{
    Run r;
    r.ref = {1, name == QLatin1String("bf16") ? 1 : 2};
    r.name = name;
    r.precision = precision;
    r.recipe = recipe;
    return r;
}

ConfigRow row(const QString &key, const QString &baseline, const QString &run)
{
    return {key, baseline, run, baseline != run, false, classifyConfigKey(key)};
}

// A pair as the gathering would give it, made by hand: no store. `departs` plants a departure at step 600 of
// 1000 planned (mid-run).
PairInputs pair(const QString &recipe, bool departs)
{
    PairInputs in;
    const Run b = runNamed(QStringLiteral("bf16"), QStringLiteral("bf16"), QString());
    const Run r = runNamed(QStringLiteral("fp8"), QStringLiteral("fp8"), recipe);
    in.baseline.ref = b.ref;
    in.baseline.info = b;
    in.run.ref = r.ref;
    in.run.info = r;
    in.run.configuredSteps = 1000;
    in.finish.baseline = b;
    in.finish.run = r;
    in.finish.config.haveBoth = true;
    in.finish.config.rows = {row(QStringLiteral("MODEL_ARGS.--transformer-impl"), QStringLiteral("local"),
                                 QStringLiteral("transformer_engine")),
        row(QStringLiteral("--tensor-model-parallel-size"), QStringLiteral("1"), QStringLiteral("2")),
        row(QStringLiteral("--fp8-param-gather"), QStringLiteral("(unset)"), QStringLiteral("true"))};
    in.loss.found = true;
    in.loss.stat = QStringLiteral("lm loss");
    if (departs) {
        in.loss.departure.step = 600;
        in.loss.departure.low = 580;
        in.loss.departure.high = 620;
        in.loss.departure.gapAtEnd = 0.3;
    }
    return in;
}

// A layer series of the FP8 run, every 10 steps to 1000: `level` plus what `change` adds at each step, with a
// little noise.
SeriesPoints layerSeries(const QString &layer, const QString &tensor, const QString &stat,
    const std::function<double(int64_t)> &change, double level, uint32_t seed)
{
    SeriesPoints sp;
    sp.series.layer = layer;
    sp.series.tensor = tensor;
    sp.series.stat = stat;
    sp.series.source = QStringLiteral("te-debug rank 0");
    std::mt19937 rng {seed};
    std::normal_distribution<double> noise(0.0, 0.02 * level);
    for (int64_t step = 0; step <= 1000; step += 10) {
        sp.points.steps.push_back(step);
        sp.points.values.push_back(std::max(0.0, level + change(step) + noise(rng)));
    }
    sp.series.points = int64_t(sp.points.size());
    return sp;
}

QString actions(const Comparison &c)
{
    QStringList out;
    for (const NextStep &n : c.nextSteps)
        out << n.action;
    return out.join(QLatin1Char('\n'));
}

} // namespace

class TestTriageRules : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // A block-scaled layer's what-if names its worst blocks and where they lie, and the same blocks with FP32
    // scales: one outlier block under MXFP8 (isolated) against a band of rows NVFP4's tensor scale flushes.
    void whatIfNamesTheWorstBlocks()
    {
        const int64_t rows = 256, cols = 512;
        std::mt19937 gen(2);
        std::normal_distribution<float> d(0.0f, 0.01f);
        std::vector<float> x(size_t(rows * cols));
        for (float &v : x)
            v = d(gen);
        x[size_t(37 * cols + 300)] = 5000.0f;
        for (int64_t r = 100; r < 116; ++r)
            for (int64_t c = 0; c < cols; ++c)
                x[size_t(r * cols + c)] *= 1e-9f;
        const auto mapOf = [&](const char *name) {
            QString error;
            Problem problem;
            MemoryReader reader(DType::F32, {rows, cols},
                QByteArray(reinterpret_cast<const char *>(x.data()), qsizetype(x.size() * 4)));
            const std::optional<Recipe> recipe = Recipe::parse(QLatin1String(name), std::nullopt, &error);
            if (!recipe)
                qFatal("%s", qPrintable(error));
            return *computeBlockMap(reader, *recipe, &problem, 1);
        };
        const BlockMap mx = mapOf("mxfp8");
        const BlockMap mx32 = mapOf("block1x32-fp32");
        const BlockMap nv = mapOf("nvfp4");
        FinishInputs in;
        Dump dump;
        dump.file = QStringLiteral("dumps/iter_000100.h5");
        dump.record.dataset = QStringLiteral("/iter_000100/layer/activation");
        dump.record.layer = QStringLiteral("layer");
        dump.record.tensor = QStringLiteral("activation");
        dump.record.step = 100;
        in.dumps = {dump};
        const QString key = whatIfDumpKey(dump);
        in.whatIfs[key]
            = {{QStringLiteral("mxfp8"), {{QStringLiteral("damage%"), 0.01}, {QStringLiteral("mse"), 1e-6}}},
                {QStringLiteral("nvfp4"), {{QStringLiteral("damage%"), 5.0}, {QStringLiteral("mse"), 1e-5}}}};
        in.blockEvidence[key] = {{QStringLiteral("mxfp8"), blockEvidence(mx, &mx32).toJson()},
            {QStringLiteral("nvfp4"), blockEvidence(nv, nullptr).toJson()}};
        EvidenceDump evidence;
        evidence.dump = dump;
        evidence.stat = QStringLiteral("underflows%");
        evidence.onset = 90;
        const std::optional<Finding> f = recipeWhatIfFinding(in, evidence, QStringLiteral("mxfp8"));
        QVERIFY(f);
        // The run's own recipe first: its one outlier block, named; then NVFP4's band.
        const qsizetype mine = f->summary.indexOf(QLatin1String("mxfp8's blocks: 1 of 4096 1x32 blocks flagged"));
        const qsizetype band = f->summary.indexOf(QLatin1String("nvfp4's blocks:"));
        QVERIFY2(mine > 0 && band > mine, qPrintable(f->summary));
        QVERIFY(f->summary.contains(QLatin1String("isolated (the worst at block (37, 9)")));
        QVERIFY(f->summary.contains(QLatin1String("a band of rows (block rows 100-115)")));
        QVERIFY(f->summary.contains(QLatin1String("with FP32 scales on the same blocks")));
        const QJsonObject blocks = f->evidence.value(QLatin1String("blocks")).toObject();
        QCOMPARE(blocks.value(QLatin1String("mxfp8")).toObject().value(QLatin1String("pattern")).toString(),
            QStringLiteral("isolated"));
        QCOMPARE(blocks.value(QLatin1String("nvfp4")).toObject().value(QLatin1String("pattern")).toString(),
            QStringLiteral("row-band"));
        // Read back, the evidence says the same.
        const std::optional<BlockEvidence> back = BlockEvidence::fromJson(blockEvidence(mx, &mx32).toJson());
        QVERIFY(back && back->fp32);
        QCOMPARE(back->sentence(), blockEvidence(mx, &mx32).sentence());
    }

    void findingKindsRoundTrip()
    {
        std::set<QString> names;
        for (int k = 0; k <= int(FindingKind::CheckpointAudit); ++k) {
            const auto kind = FindingKind(k);
            const QString name = findingKindName(kind);
            QVERIFY(!name.isEmpty());
            QVERIFY2(names.insert(name).second, qPrintable(name));
            QCOMPARE(findingKindNamed(name), std::optional(kind));
            QCOMPARE(findingKindInfo(kind).kind, kind);
        }
        QCOMPARE(findingKindNamed(QStringLiteral("no-such-kind")), std::nullopt);
        // The loss first, then the suspects; what only describes after.
        QVERIFY(findingKindInfo(FindingKind::LossDeparture).rank < findingKindInfo(FindingKind::ConfigDifference).rank);
        QVERIFY(findingKindInfo(FindingKind::LayerSignal).rank < findingKindInfo(FindingKind::EvalGap).rank);
        QVERIFY(findingKindInfo(FindingKind::EvalGap).rank < findingKindInfo(FindingKind::EvalDrop).rank);
        // What a watcher fails on: changes in the run, never a static difference or an evaluation.
        for (FindingKind k : {FindingKind::LossDeparture, FindingKind::RunBlowUp, FindingKind::LayerSignal,
                 FindingKind::LossSpikes, FindingKind::SkippedIterations, FindingKind::GradNormDeparture})
            QVERIFY2(findingKindInfo(k).change, qPrintable(findingKindName(k)));
        for (FindingKind k : {FindingKind::ConfigDifference, FindingKind::VersionDifference, FindingKind::EvalGap,
                 FindingKind::EvalDrop, FindingKind::InferencePrecision, FindingKind::RecipeWhatIf,
                 FindingKind::TruncatedStatistic, FindingKind::Restart})
            QVERIFY2(!findingKindInfo(k).change, qPrintable(findingKindName(k)));
        QCOMPARE(findingKindInfo(FindingKind::LayerSignal).step, FindingStep::Class);
        QCOMPARE(findingKindInfo(FindingKind::RecipeWhatIf).step, FindingStep::Next);
        QCOMPARE(findingKindInfo(FindingKind::ConfigDifference).step, FindingStep::Runs);
    }

    void bestRecipeIsNeverTheReference()
    {
        // BF16 quantizes nothing: MSE 0, the least of all; it is the reference, not a candidate.
        std::vector<WhatIfScore> scores {{QStringLiteral("bf16"), 0.0, 0.0, 0.0, 0.0},
            {QStringLiteral("current"), 5.7e-11, 8.36, 8.36, 20.0}, {QStringLiteral("delayed"), 3.2e-5, 9.1, 9.1, 22.0},
            {QStringLiteral("mxfp8"), 1.5e-11, 0.57, 0.57, 3.0}};
        QCOMPARE(bestWhatIfRecipe(scores), std::optional<size_t>(3));
        // Damage decides before MSE: the outliers' MSE does not (current has the least MSE, and flushes 13 %).
        scores = {{QStringLiteral("current"), 0.13, 13.5, 13.5, 26.7}, {QStringLiteral("mxfp8"), 0.25, 0.61, 0.61, 3.4},
            {QStringLiteral("block1x128"), 0.25, 2.26, 2.26, 6.6}};
        QCOMPARE(bestWhatIfRecipe(scores), std::optional<size_t>(1));
        // Damages within the tie band go on to the bulk's error; beyond it, the least damage wins.
        scores
            = {{QStringLiteral("mxfp8"), 1e-3, 1.0, 1.0, 5.0}, {QStringLiteral("block1x128"), 2e-3, 1.05, 1.05, 4.0}};
        QCOMPARE(bestWhatIfRecipe(scores), std::optional<size_t>(1));
        scores[1].damagePct = 1.2;
        QCOMPARE(bestWhatIfRecipe(scores), std::optional<size_t>(0));
        // Equal damage and error: the least MSE; a recipe with nothing to rank by is no candidate.
        scores = {{QStringLiteral("block1x128"), 2e-11, 0.2, 0.2, 1.0}, {QStringLiteral("mxfp8"), 1e-11, 0.2, 0.2, 1.0},
            {QStringLiteral("current"), NAN, NAN, NAN, NAN}};
        QCOMPARE(bestWhatIfRecipe(scores), std::optional<size_t>(1));
        QCOMPARE(bestWhatIfRecipe({{QStringLiteral("bf16"), 0.0, 0.0, 0.0, 0.0}}), std::nullopt);
        QCOMPARE(bestWhatIfRecipe({}), std::nullopt);
        QVERIFY(isReferenceRecipe(QStringLiteral("bf16")));
        QVERIFY(isReferenceRecipe(QStringLiteral("BF16")));
        QVERIFY(!isReferenceRecipe(QStringLiteral("block128x128")));
        QVERIFY(whatIfCriterion().contains(QLatin1String("BF16")));
    }

    void contextKeysAreNeverSuspects_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<int>("expected");
        QTest::newRow("transformer-impl") << QStringLiteral("MODEL_ARGS.--transformer-impl") << int(KeyClass::Context);
        QTest::newRow("tp") << QStringLiteral("--tensor-model-parallel-size") << int(KeyClass::Context);
        QTest::newRow("pp") << QStringLiteral("pipeline_model_parallel_size") << int(KeyClass::Context);
        QTest::newRow("sp") << QStringLiteral("MODEL_ARGS.--sequence-parallel") << int(KeyClass::Context);
        QTest::newRow("ep") << QStringLiteral("expert_model_parallel_size") << int(KeyClass::Context);
        QTest::newRow("fp8 param gather") << QStringLiteral("--fp8-param-gather") << int(KeyClass::Suspect);
        QTest::newRow("tp comm overlap") << QStringLiteral("--tp-comm-overlap") << int(KeyClass::Suspect);
        QTest::newRow("recipe") << QStringLiteral("--fp8-recipe") << int(KeyClass::Expected);
        QTest::newRow("save") << QStringLiteral("--save") << int(KeyClass::Incidental);
        QTest::newRow("layers") << QStringLiteral("num_layers") << int(KeyClass::Other);
    }

    void contextKeysAreNeverSuspects()
    {
        QFETCH(QString, key);
        QFETCH(int, expected);
        QCOMPARE(int(classifyConfigKey(key)), expected);
        QCOMPARE(contextReason(key).isEmpty(), expected != int(KeyClass::Context));
    }

    void comparabilityAspects()
    {
        QCOMPARE(comparabilityAspect(QStringLiteral("MODEL_ARGS.--num-layers")), QStringLiteral("model shape"));
        QCOMPARE(comparabilityAspect(QStringLiteral("hidden_size")), QStringLiteral("model shape"));
        QCOMPARE(comparabilityAspect(QStringLiteral("DATA_ARGS.--data-path")), QStringLiteral("data"));
        QCOMPARE(comparabilityAspect(QStringLiteral("--global-batch-size")), QStringLiteral("plan"));
        QCOMPARE(comparabilityAspect(QStringLiteral("train_iters")), QStringLiteral("plan"));
        QCOMPARE(
            comparabilityAspect(QStringLiteral("MODEL_ARGS.--transformer-impl")), QStringLiteral("implementation"));
        QCOMPARE(comparabilityAspect(QStringLiteral("--fp8-format")), QString());
        QCOMPARE(comparabilityAspect(QStringLiteral("wandb_exp_name")), QString());
    }

    void registryListsEachRuleOnce()
    {
        std::set<QString> names;
        for (const PairRule &r : pairRules()) {
            QVERIFY(r.apply && r.what && *r.what);
            QVERIFY2(names.insert(QString::fromLatin1(r.name)).second, r.name);
        }
        for (const char *expected : {"loss-departure", "layer-signals", "recipe-what-if", "config-differences",
                 "eval-gaps", "skipped-iterations"})
            QVERIFY2(names.count(QString::fromLatin1(expected)), expected);
        // The what-if reads the layer signals, which read the departure: the registry keeps that order.
        const auto at = [](const char *name) {
            for (size_t i = 0; i < pairRules().size(); ++i) {
                if (QLatin1String(pairRules()[i].name) == QLatin1String(name))
                    return int(i);
            }
            return -1;
        };
        QVERIFY(at("loss-departure") < at("layer-signals"));
        QVERIFY(at("layer-signals") < at("recipe-what-if"));
        QVERIFY(!runRules().empty());
    }

    // A healthy pair (no departure) with a prerequisite of FP8, a parallel layout and a native-FP8 key that
    // differ: the findings say them, the next steps are none, and no text says to undo the context keys.
    void healthyPairHasNoFixList()
    {
        const Comparison c = comparePair(pair(QStringLiteral("current"), false));
        QCOMPARE(c.verdict, Verdict::None);
        QVERIFY(c.nextSteps.empty());
        int context = 0;
        for (const Finding &f : c.findings) {
            if (f.kind != FindingKind::ConfigDifference)
                continue;
            if (f.key.contains(QLatin1String("transformer-impl")) || f.key.contains(QLatin1String("parallel"))) {
                ++context;
                QCOMPARE(f.severity, Severity::Info);
                QVERIFY2(f.suggestion.isEmpty(), qPrintable(f.suggestion));
                QVERIFY2(f.summary.contains(QLatin1String("context, not a suspect")), qPrintable(f.summary));
            }
        }
        QCOMPARE(context, 2);
        QCOMPARE(c.comparability.level, ComparabilityLevel::WithCare); // the implementation differs
        // The FP8 feature the run uses (issue 54): context in a healthy pair, never "set it back and run again".
        const auto gather = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.key == QLatin1String("--fp8-param-gather"); });
        QVERIFY(gather != c.findings.end());
        QCOMPARE(gather->severity, Severity::Info);
        QVERIFY2(gather->suggestion.isEmpty(), qPrintable(gather->suggestion));
        QVERIFY2(gather->summary.contains(QLatin1String("context")), qPrintable(gather->summary));
    }

    // A mid-run instability: the advice starts from the run's own recipe and never proposes it.
    void midRunAdviceFromTheRunsRecipe_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<QString>("proposed");
        QTest::addColumn<QString>("notProposed");
        QTest::newRow("delayed") << QStringLiteral("delayed")
                                 << QStringLiteral("current scaling (--fp8-recipe tensorwise)")
                                 << QStringLiteral("blockwise scaling (");
        QTest::newRow("current") << QStringLiteral("current") << QStringLiteral("a block recipe")
                                 << QStringLiteral("current scaling (");
        QTest::newRow("mxfp8") << QStringLiteral("mxfp8") << QStringLiteral("blockwise scaling")
                               << QStringLiteral("--fp8-recipe mxfp8");
        QTest::newRow("blockwise") << QStringLiteral("blockwise") << QString() << QStringLiteral("--fp8-recipe");
        QTest::newRow("unknown") << QString() << QStringLiteral("is not recorded")
                                 << QStringLiteral("instead of the run's");
    }

    void midRunAdviceFromTheRunsRecipe()
    {
        QFETCH(QString, recipe);
        QFETCH(QString, proposed);
        QFETCH(QString, notProposed);
        const Comparison c = comparePair(pair(recipe, true));
        QCOMPARE(c.verdict, Verdict::MidRunInstability);
        QVERIFY(!c.nextSteps.empty());
        QCOMPARE(c.nextSteps.front().kind, FindingKind::LossDeparture);
        const QString text = actions(c);
        if (!proposed.isEmpty())
            QVERIFY2(text.contains(proposed), qPrintable(text));
        QVERIFY2(!text.contains(notProposed), qPrintable(text));
        // A mid-run verdict does not ask to undo config keys.
        QVERIFY2(!text.contains(QLatin1String("set ")), qPrintable(text));
    }

    // A downstream gap in a run folder whose inference checkpoint has an inverted scale: the audit's finding comes
    // first, on the training layer, and the first next step says what to re-export.
    void checkpointAuditLeadsTheDownstreamGap()
    {
        PairInputs in = pair(QStringLiteral("current"), false);
        analysis::EvalRow e;
        e.task = QStringLiteral("arc");
        e.metric = QStringLiteral("acc");
        e.inference = QStringLiteral("fp8");
        e.baseline = 0.60;
        e.run = 0.50;
        e.difference = -0.10;
        e.standardError = 0.01;
        e.z = -10;
        e.significant = true;
        in.evals = {e};
        Comparison c = comparePair(in);
        QCOMPARE(c.verdict, Verdict::DownstreamGap);
        QVERIFY(std::none_of(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == FindingKind::CheckpointAudit; }));

        AuditResult audit;
        audit.checkpoint = QStringLiteral("/runs/fp8/export");
        audit.findings.push_back(
            {AuditKind::InvertedScale, AuditSeverity::Critical, QStringLiteral("model.layers.0.self_attn.q_proj"),
                QStringLiteral("decoder.layers.0.self_attention.linear_qkv (q)"),
                QStringLiteral("dequantized as codes x weight_scale ...")});
        audit.findings.push_back(
            {AuditKind::CalibrationMismatch, AuditSeverity::Warning, QStringLiteral("model.layers.1.mlp.down_proj"),
                QStringLiteral("decoder.layers.1.mlp.linear_fc2"), QStringLiteral("input_scale ...")});
        in.audit = audit;
        c = comparePair(in);
        QCOMPARE(c.verdict, Verdict::DownstreamGap);
        QCOMPARE(c.findings.front().kind, FindingKind::CheckpointAudit);
        QCOMPARE(c.findings.front().severity, Severity::Critical);
        QCOMPARE(c.findings.front().layer, QStringLiteral("decoder.layers.0.self_attention.linear_qkv (q)"));
        QCOMPARE(c.findings.front().key, QStringLiteral("inverted-scale"));
        QVERIFY(c.findings.front().summary.contains(QLatin1String("model.layers.0.self_attn.q_proj")));
        QVERIFY(c.nextSteps.size() >= 3);
        QCOMPARE(c.nextSteps[0].kind, FindingKind::CheckpointAudit);
        QVERIFY2(c.nextSteps[0].action.startsWith(QLatin1String("re-export model.layers.0.self_attn.q_proj's weight "
                                                                "scale as the decode scale")),
            qPrintable(c.nextSteps[0].action));
        QCOMPARE(c.nextSteps[1].kind, FindingKind::CheckpointAudit);
        QVERIFY(c.nextSteps[1].action.startsWith(QLatin1String("calibrate model.layers.1.mlp.down_proj's static")));
        QCOMPARE(c.nextSteps[2].kind, FindingKind::EvalGap);
    }

    // Eval rows made by hand: a drop of 4 standard errors is a gap (the verdict), one of 2.5 a notable drop.
    void evalGapsAndDrops()
    {
        PairInputs in = pair(QStringLiteral("current"), false);
        const auto eval = [](const QString &task, double base, double run, double se) {
            analysis::EvalRow e;
            e.task = task;
            e.metric = QStringLiteral("acc");
            e.inference = QStringLiteral("bf16");
            e.baseline = base;
            e.run = run;
            e.difference = run - base;
            e.standardError = se;
            e.z = e.difference / se;
            e.significant = e.z <= -3;
            return e;
        };
        in.evals = {eval(QStringLiteral("arc"), 0.60, 0.56, 0.01), eval(QStringLiteral("hellaswag"), 0.50, 0.475, 0.01),
            eval(QStringLiteral("piqa"), 0.70, 0.705, 0.01)};
        const Comparison c = comparePair(in);
        QCOMPARE(c.verdict, Verdict::DownstreamGap);
        QStringList gaps, drops;
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::EvalGap)
                gaps << f.task;
            if (f.kind == FindingKind::EvalDrop) {
                drops << f.task;
                QCOMPARE(f.severity, Severity::Info);
            }
        }
        QCOMPARE(gaps, QStringList {QStringLiteral("arc")});
        QCOMPARE(drops, QStringList {QStringLiteral("hellaswag")});
        QVERIFY(!c.nextSteps.empty());
        QCOMPARE(c.nextSteps.front().kind, FindingKind::EvalGap);
    }

    // The suspect among the layer signals before the departure (600): a statistic that measures damage before one
    // that only follows a scale, though the scale moved first; and of two damage statistics, the one that moved
    // at once (a gradient's underflow stepping at 450) before a slow drift that left its early level sooner
    // (an activation's underflow creeping from step 100, half its change made only at about 700).
    void suspectIsDamageBeforeScaleAndAStepBeforeADrift()
    {
        PairInputs in = pair(QStringLiteral("delayed"), true);
        in.finish.risk
            = {layerSeries(
                   QStringLiteral("decoder.layers.2.mlp.linear_fc1"), QStringLiteral("weight"),
                   QStringLiteral("scale_inv_max"), [](int64_t s) { return s >= 200 ? 0.004 : 0.0; }, 0.01, 1),
                layerSeries(
                    QStringLiteral("decoder.layers.1.mlp.linear_fc2"), QStringLiteral("activation"),
                    QStringLiteral("underflows%"), [](int64_t s) { return s > 100 ? 0.004 * double(s - 100) : 0.0; },
                    0.05, 2),
                layerSeries(
                    QStringLiteral("decoder.layers.5.mlp.linear_fc2"), QStringLiteral("gradient"),
                    QStringLiteral("underflows%"), [](int64_t s) { return s >= 450 ? 2.0 : 0.0; }, 0.05, 3)};
        const Comparison c = comparePair(in);
        QStringList order;
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::LayerSignal)
                order << f.layer + QLatin1Char(' ') + f.tensor + QLatin1Char(' ') + f.stat;
        }
        QCOMPARE(order,
            (QStringList {QStringLiteral("decoder.layers.5.mlp.linear_fc2 gradient underflows%"),
                QStringLiteral("decoder.layers.1.mlp.linear_fc2 activation underflows%"),
                QStringLiteral("decoder.layers.2.mlp.linear_fc1 weight scale_inv_max")}));
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::LayerSignal && f.stat == QLatin1String("scale_inv_max"))
                QCOMPARE(f.evidence.value(QStringLiteral("measures")).toString(), QStringLiteral("scale"));
        }
    }

    // A gap under FP8 inference only: the FP8 path is the suspect (its advice is not "evaluate in FP8"), and BF16
    // inference of the same checkpoint is named the closer one, though it has no drop at all.
    void evalGapUnderFp8InferenceOnly()
    {
        PairInputs in = pair(QStringLiteral("current"), false);
        const auto eval = [](const QString &inference, double run) {
            analysis::EvalRow e;
            e.task = QStringLiteral("arc");
            e.metric = QStringLiteral("acc");
            e.inference = inference;
            e.baseline = 0.60;
            e.run = run;
            e.difference = run - 0.60;
            e.standardError = 0.01;
            e.z = e.difference / 0.01;
            e.significant = e.z <= -3;
            return e;
        };
        in.evals = {eval(QStringLiteral("bf16"), 0.605), eval(QStringLiteral("fp8"), 0.40)};
        const Comparison c = comparePair(in);
        QCOMPARE(c.verdict, Verdict::DownstreamGap);
        const Finding *gap = nullptr, *precision = nullptr;
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::EvalGap)
                gap = &f;
            if (f.kind == FindingKind::InferencePrecision)
                precision = &f;
        }
        QVERIFY(gap && precision);
        QCOMPARE(gap->evidence.value(QStringLiteral("inference")).toString(), QStringLiteral("fp8"));
        QVERIFY2(gap->suggestion.contains(QStringLiteral("FP8 inference path")), qPrintable(gap->suggestion));
        QCOMPARE(precision->evidence.value(QStringLiteral("lower")).toString(), QStringLiteral("fp8"));
        QCOMPARE(precision->evidence.value(QStringLiteral("closer")).toString(), QStringLiteral("bf16"));
    }

    void dismissedIsByIdentity()
    {
        Finding f;
        f.kind = FindingKind::LayerSignal;
        f.layer = QStringLiteral("decoder.layers.0.mlp.linear_fc1");
        f.tensor = QStringLiteral("activation");
        f.stat = QStringLiteral("underflows%");
        Finding other = f;
        other.layer = QStringLiteral("decoder.layers.1.mlp.linear_fc1");
        const std::vector<FindingReview> reviews {{findingIdentity(f), ReviewState::Dismissed, {}, {}},
            {findingIdentity(other), ReviewState::Confirmed, {}, {}}};
        QVERIFY(isDismissed(reviews, f));
        QVERIFY(!isDismissed(reviews, other));
        QVERIFY(findingIdentity(f).startsWith(QLatin1String("layer-signal|")));
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestTriageRules)
#include "tst_triagerules.moc"
