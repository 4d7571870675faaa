// The triage engine's pure rules, without a store: the table of finding kinds, the best recipe of a what-if
// (BF16 the reference, never a candidate), what a config key is to a comparison (context keys never suspects)
// and the comparability aspects of keys.
#include "core/analysis/findingkind.h"
#include "core/analysis/triage.h"
#include "core/numerics/whatif.h"

#include "testmain.h"

#include <QTest>

#include <cmath>
#include <set>

using namespace fp8scope;
using namespace fp8scope::analysis;

class TestTriageRules : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void findingKindsRoundTrip()
    {
        std::set<QString> names;
        for (int k = 0; k <= int(FindingKind::Restart); ++k) {
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
        std::vector<WhatIfScore> scores {{QStringLiteral("bf16"), 0.0, 0.0}, {QStringLiteral("current"), 5.7e-11, 8.36},
            {QStringLiteral("delayed"), 3.2e-5, 9.1}, {QStringLiteral("mxfp8"), 1.5e-11, 0.57}};
        QCOMPARE(bestWhatIfRecipe(scores), std::optional<size_t>(3));
        // Ties to the least underflow; a recipe without an MSE is no candidate.
        scores = {{QStringLiteral("block1x128"), 2e-11, 0.2}, {QStringLiteral("mxfp8"), 2e-11, 0.5},
            {QStringLiteral("current"), NAN, 0.0}};
        QCOMPARE(bestWhatIfRecipe(scores), std::optional<size_t>(0));
        QCOMPARE(bestWhatIfRecipe({{QStringLiteral("bf16"), 0.0, 0.0}}), std::nullopt);
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
        QCOMPARE(comparabilityAspect(QStringLiteral("MODEL_ARGS.--transformer-impl")), QStringLiteral("implementation"));
        QCOMPARE(comparabilityAspect(QStringLiteral("--fp8-format")), QString());
        QCOMPARE(comparabilityAspect(QStringLiteral("wandb_exp_name")), QString());
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
        const std::vector<FindingReview> reviews {{findingIdentity(f), QStringLiteral("dismissed"), {}, {}},
            {findingIdentity(other), QStringLiteral("confirmed"), {}, {}}};
        QVERIFY(isDismissed(reviews, f));
        QVERIFY(!isDismissed(reviews, other));
        QVERIFY(findingIdentity(f).startsWith(QLatin1String("layer-signal|")));
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestTriageRules)
#include "tst_triagerules.moc"
