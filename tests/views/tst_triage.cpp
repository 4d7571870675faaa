// The triage wizard (views/triage), offscreen: driven through a scenario of each class of
// `fp8scope-cli demo --scenario`, and through the demo pair for what needs tensor dumps (the histogram of the
// first suspect, the recipe what-if, checked against `fp8scope-cli stats --what-if`), and a review that
// survives reopening the folder.
#include "app/gui/mainwindow.h"
#include "blowuppair.h"
#include "blowuprun.h"
#include "core/analysis/triage.h"
#include "core/demo/scenarios.h"
#include "core/jobs/jobqueue.h"
#include "core/report/triagereport.h"
#include "guitest.h"
#include "testmain.h"
#include "views/compare/compareview.h"
#include "views/compare/evalchart.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/histogram/histogramview.h"
#include "views/plotting/qcp.h"
#include "views/triage/triagewizard.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTableView>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <set>

using namespace fp8scope;

// Holds a job queue with a job that waits until release() (or the hold's end: a failed check lets the queue go).
class QueueHold
{
public:
    QueueHold(JobQueue &queue, QObject *receiver)
        : m_released(std::make_shared<std::atomic<bool>>(false))
    {
        queue.submit({QString(), QStringLiteral("test-hold"),
                         [released = m_released](JobContext &) -> QVariant {
                             while (!*released)
                                 QThread::msleep(5);
                             return true;
                         }},
            receiver, [](const JobResult &) {});
    }
    QueueHold(const QueueHold &) = delete;
    QueueHold &operator=(const QueueHold &) = delete;
    ~QueueHold() { release(); }
    void release() { *m_released = true; }

private:
    std::shared_ptr<std::atomic<bool>> m_released;
};

class TestTriageWizard : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void eachScenarioClass_data();
    void eachScenarioClass();
    void firstSuspectDrivesTheViews();
    void whatIfEqualsTheCli();
    void dismissedFindingSurvivesAReopen();
    void exportReportFromTheSummary();
    void dismissedSuspectLeavesTheNextSteps();
    void aRunOnItsOwn();
    void aBlowUpOpensOnItsFirstNonFiniteValue();

private:
    // Opens `folder` in the window and the wizard on its pair, once computed.
    TriageWizard *openTriage(const QString &folder);

    QTemporaryDir m_tmp;
    QString m_demo;
    DemoPlan m_plan;
    std::unique_ptr<MainWindow> m_window;
};

void TestTriageWizard::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    m_demo = m_tmp.filePath(QStringLiteral("demo"));
    QString error;
    QVERIFY2(guitest::generatePair(m_demo, 5, 6, 1000, &m_plan, &error), qPrintable(error));
    m_window = std::make_unique<MainWindow>(BackendChoice::Cpu, nullptr);
    m_window->resize(1400, 900);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
}

TriageWizard *TestTriageWizard::openTriage(const QString &folder)
{
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    m_window->openFolders({folder});
    if (!ready.wait(120000))
        return nullptr;
    // Offered on the status bar: the folder holds a BF16/FP8 pair.
    if (!m_window->triageOffer()->isVisibleTo(m_window.get()))
        return nullptr;
    // The toolbar's Triage button opens it (the Tools menu's action, Ctrl+T).
    auto *bar = m_window->findChild<QToolBar *>(QStringLiteral("mainToolBar"));
    QAction *action = m_window->findChild<QAction *>(QStringLiteral("showTriage"));
    if (!bar || !action || !bar->actions().contains(action))
        return nullptr;
    auto *button = qobject_cast<QToolButton *>(bar->widgetForAction(action));
    if (!button)
        return nullptr;
    button->click();
    TriageWizard *w = m_window->triage();
    if (!w || !w->isVisible())
        return nullptr;
    if (!QTest::qWaitFor(
            [&] { return !w->isComputing() && w->comparison() && w->comparison()->run == w->run(); }, 120000))
        return nullptr;
    return w;
}

void TestTriageWizard::eachScenarioClass_data()
{
    QTest::addColumn<int>("scenario");
    for (Scenario s : {Scenario::EarlyDivergence, Scenario::MidRunInstability, Scenario::LossSpikes,
             Scenario::DownstreamGap, Scenario::None})
        QTest::newRow(qPrintable(scenarioName(s))) << int(s);
}

void TestTriageWizard::eachScenarioClass()
{
    QFETCH(int, scenario);
    const Scenario s = Scenario(scenario);
    const QString dir = m_tmp.filePath(scenarioName(s));
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(dir, s, 2, &plan, &error), qPrintable(error));
    TriageWizard *w = openTriage(dir);
    QVERIFY(w);
    const Catalog &catalog = m_window->workspace()->catalog();
    QCOMPARE(catalog.run(w->run())->name, plan.run);
    QCOMPARE(catalog.run(w->baseline())->name, plan.baseline);
    // The verdict shown is the engine's, computed here again; on this seed, the planted class.
    const analysis::Comparison engine = analysis::compareRuns(catalog, w->baseline(), w->run());
    QCOMPARE(w->comparison()->comparison.verdict, engine.verdict);
    QCOMPARE(analysis::verdictName(engine.verdict), scenarioName(s));
    w->setStep(TriageWizard::LossStep);
    QVERIFY2(w->verdictText().contains(QStringLiteral("Verdict: %1.").arg(analysis::verdictName(engine.verdict))),
        qPrintable(w->verdictText()));
    // The loss overlay beside the verdict: both runs and the baseline's band, the departure marked.
    QTRY_VERIFY_WITH_TIMEOUT(w->lossView()->curves().size() == 3, 30000);
    if (engine.departure) {
        // The departure step is a link: following it selects the step in every view.
        const QString link = QStringLiteral("href=\"step:%1\"").arg(*engine.departure);
        QVERIFY2(w->verdictText().contains(link), qPrintable(w->verdictText()));
        w->followLink(QStringLiteral("step:%1").arg(*engine.departure));
        QCOMPARE(m_window->selection()->step(), qint64(*engine.departure));
    }
    // The scenarios share their model, data and plan: comparable.
    QVERIFY2(w->comparabilityText().startsWith(QStringLiteral("Comparable")), qPrintable(w->comparabilityText()));
    // The keys that differ are listed, each changing none of the aspects: the count the text gives is the table's.
    {
        static const QRegularExpression count(QStringLiteral("\\((\\d+) config key\\(s\\) differ"));
        const QRegularExpressionMatch m = count.match(w->comparabilityText());
        QVERIFY2(m.hasMatch(), qPrintable(w->comparabilityText()));
        auto *table = w->findChild<QTableView *>(QStringLiteral("triageComparability"));
        QVERIFY(table);
        QCOMPARE(table->model()->rowCount(), m.captured(1).toInt());
        for (int i = 0; i < table->model()->rowCount(); ++i)
            QCOMPARE(table->model()->index(i, 3).data().toString(), QStringLiteral("none of these"));
    }
    // The class step's evidence.
    w->setStep(TriageWizard::ClassStep);
    QAbstractItemModel *table = w->classTable()->model();
    const auto column = [&](int c) {
        QStringList out;
        for (int i = 0; i < table->rowCount(); ++i)
            out << table->index(i, c).data().toString();
        return out;
    };
    switch (s) {
    case Scenario::EarlyDivergence:
        QVERIFY(w->classTitle().contains(QStringLiteral("Early divergence")));
        // The planted key, as its config spells it (a Megatron flag under its section: MODEL_ARGS.--flag).
        for (const QString &key : plan.keys)
            QVERIFY2(column(1).contains(key)
                    || !column(1)
                            .filter(
                                QRegularExpression(QStringLiteral("(^|\\.)%1$").arg(QRegularExpression::escape(key))))
                            .isEmpty(),
                qPrintable(column(1).join(QLatin1Char(','))));
        QCOMPARE(w->evidence(), nullptr); // a config table needs no plot
        break;
    case Scenario::MidRunInstability:
        QVERIFY(w->classTitle().contains(QStringLiteral("Mid-run instability")));
        QCOMPARE(column(0).value(0), plan.layer);
        QCOMPARE(column(1).value(0), plan.tensor);
        // Its lead: the departure minus its onset.
        QCOMPARE(table->index(0, 4).data(Qt::UserRole).toLongLong(),
            *engine.departure - table->index(0, 3).data(Qt::UserRole).toLongLong());
        // The first suspect shown on entering the step: its curve on top of the other layers', its heatmap
        // row marked, the histogram of its nearest dump (the scenarios have none: it says so).
        QCOMPARE(w->evidence(), w->layerCurves()->parentWidget());
        QCOMPARE(m_window->selection()->layer(), plan.layer);
        QTRY_VERIFY_WITH_TIMEOUT(w->layerCurves()->curves().size() > 1, 30000);
        QCOMPARE(w->layerCurves()->curves().back().series.layer, plan.layer);
        QVERIFY(w->heatmap()->flaggedLayers().size() >= 1);
        QCOMPARE(w->heatmap()->flaggedLayers().front().first, plan.layer);
        QTRY_VERIFY_WITH_TIMEOUT(!w->heatmap()->isLoading() && !w->heatmap()->heatmap().layers.empty(), 30000);
        break;
    case Scenario::LossSpikes: {
        QVERIFY(w->classTitle().contains(QStringLiteral("Loss spikes")));
        const size_t spikes = w->comparison()->runSpikes.spikes.size() + w->comparison()->baselineSpikes.spikes.size();
        QCOMPARE(size_t(table->rowCount()), spikes);
        QVERIFY(w->comparison()->runSpikes.spikes.size() > w->comparison()->baselineSpikes.spikes.size());
        QVERIFY2(w->classTitle().contains(QStringLiteral("per 1000")), qPrintable(w->classTitle()));
        // The spikes side by side on the overlay, each marked.
        QCOMPARE(w->evidence(), static_cast<QWidget *>(w->findChild<CurveView *>(QStringLiteral("triageSpikeView"))));
        {
            CurveView *spikeView = w->findChild<CurveView *>(QStringLiteral("triageSpikeView"));
            QTRY_VERIFY_WITH_TIMEOUT(spikeView->curves().size() == 3, 30000);
            const auto marked = std::count_if(spikeView->marks().begin(), spikeView->marks().end(),
                [](const CurveView::Mark &m) { return m.kind == CurveSource::Event::Spike; });
            QCOMPARE(size_t(marked), spikes);
        }
        break;
    }
    case Scenario::DownstreamGap: {
        QVERIFY(w->classTitle().contains(QStringLiteral("Downstream gap")));
        std::set<QString> significant;
        for (int i = 0; i < table->rowCount(); ++i) {
            if (!table->index(i, 7).data().toString().isEmpty())
                significant.insert(table->index(i, 0).data().toString());
        }
        QCOMPARE(significant, std::set<QString>(plan.tasks.begin(), plan.tasks.end()));
        // Significant drops first.
        QVERIFY(!table->index(0, 7).data().toString().isEmpty());
        QCOMPARE(w->evidence(), static_cast<QWidget *>(w->evalChart()));
        QCOMPARE(w->evalChart()->rows().size(), size_t(table->rowCount()));
        break;
    }
    case Scenario::None:
        QVERIFY(w->classTitle().contains(QStringLiteral("No problem found")));
        QCOMPARE(table->rowCount(), 0);
        QCOMPARE(w->evidence(), nullptr);
        break;
    }
    // The summary lists every finding of the engine, open until reviewed.
    w->setStep(TriageWizard::SummaryStep);
    QCOMPARE(w->summaryTable()->model()->rowCount(), int(engine.findings.size()));
    for (int i = 0; i < w->summaryTable()->model()->rowCount(); ++i)
        QCOMPARE(w->summaryTable()->model()->index(i, TriageWizard::kReviewColumn).data().toString(),
            QStringLiteral("open"));
    // Back and Next walk the steps.
    w->setStep(TriageWizard::RunsStep);
    QPushButton *back = nullptr, *forward = nullptr;
    for (QPushButton *b : w->findChildren<QPushButton *>()) {
        back = b->text() == QLatin1String("&Back") ? b : back;
        forward = b->text() == QLatin1String("&Next") ? b : forward;
    }
    QVERIFY(back && forward);
    QVERIFY(!back->isEnabled());
    forward->click();
    forward->click();
    QCOMPARE(w->step(), TriageWizard::ClassStep);
    back->click();
    QCOMPARE(w->step(), TriageWizard::LossStep);
    w->close();
}

void TestTriageWizard::firstSuspectDrivesTheViews()
{
    TriageWizard *w = openTriage(m_demo);
    QVERIFY(w);
    QCOMPARE(analysis::verdictName(w->comparison()->comparison.verdict), QStringLiteral("mid-run-instability"));
    w->setStep(TriageWizard::ClassStep);
    QTableView *table = w->classTable();
    QCOMPARE(table->model()->index(0, 0).data().toString(), m_plan.plantedLayerName);
    QCOMPARE(table->model()->index(0, 1).data().toString(), m_plan.plantedTensor);
    // Shown on entering the step, in the wizard's own views: the suspect's histogram loads its nearest dump
    // (recomputed in the job queue), its curve is drawn over the other layers', its heatmap row is marked.
    QTRY_VERIFY_WITH_TIMEOUT(w->histogram()->dump() && w->histogram()->metrics().has_value(), 60000);
    QCOMPARE(w->histogram()->dump()->record.layer, m_plan.plantedLayerName);
    QCOMPARE(w->histogram()->dump()->record.tensor, m_plan.plantedTensor);
    size_t withTensor = 0;
    for (const LayerTensors &l : m_window->workspace()->catalog().layerTensors({w->run()}))
        withTensor += l.tensors.contains(m_plan.plantedTensor) ? 1 : 0;
    QVERIFY(withTensor > 1);
    QTRY_VERIFY_WITH_TIMEOUT(w->layerCurves()->curves().size() == withTensor, 30000);
    QCOMPARE(w->layerCurves()->curves().back().series.layer, m_plan.plantedLayerName);
    QCOMPARE(w->layerCurves()->source()->runColour(w->layerCurves()->curves().back().run),
        m_window->workspace()->run(w->run())->colour);
    QVERIFY(w->layerCurves()->source()->runColour(w->layerCurves()->curves().front().run)
        != m_window->workspace()->run(w->run())->colour);
    QCOMPARE(w->heatmap()->flaggedLayers().front().first, m_plan.plantedLayerName);
    // Hidden (another step shown), the wizard's views read nothing; shown again, they catch up.
    const QString other = w->layerCurves()->curves().front().series.layer;
    QVERIFY(other != m_plan.plantedLayerName);
    w->setStep(TriageWizard::NextStep);
    m_window->selection()->setLayer(other);
    QTest::qWait(150);
    QCOMPARE(w->layerCurves()->curves().back().series.layer, m_plan.plantedLayerName);
    w->setStep(TriageWizard::ClassStep);
    QTRY_COMPARE_WITH_TIMEOUT(w->layerCurves()->curves().back().series.layer, other, 10000);
    m_window->selection()->setLayer(m_plan.plantedLayerName);
    QTRY_COMPARE_WITH_TIMEOUT(w->layerCurves()->curves().back().series.layer, m_plan.plantedLayerName, 10000);
    // A finding of the summary leads back to its evidence: the suspect's row, made current.
    w->setStep(TriageWizard::SummaryStep);
    QAbstractItemModel *summary = w->summaryTable()->model();
    int signalRow = -1;
    for (int i = summary->rowCount() - 1; i >= 0; --i) {
        if (summary->index(i, 1).data().toString() == QLatin1String("layer-signal")
            && summary->index(i, 2).data().toString() == m_plan.plantedLayerName)
            signalRow = i;
    }
    QVERIFY(signalRow >= 0);
    table->setCurrentIndex({});
    Q_EMIT w->summaryTable()->activated(summary->index(signalRow, 1));
    QCOMPARE(w->step(), TriageWizard::ClassStep);
    QCOMPARE(table->currentIndex().siblingAtColumn(0).data().toString(), m_plan.plantedLayerName);
    // A click on the first suspect selects its layer, tensor and onset: the histogram loads its nearest dump.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(table->model()->index(0, 0)).center());
    QCOMPARE(m_window->selection()->layer(), m_plan.plantedLayerName);
    QCOMPARE(m_window->selection()->tensor(), m_plan.plantedTensor);
    // The step selected is the engine's evidence dump (the one that shows the damage), after the onset.
    const auto &evidence = w->comparison()->comparison.evidence;
    QVERIFY(evidence);
    QCOMPARE(m_window->selection()->step(), evidence->dump.record.step);
    QVERIFY(m_window->selection()->step() >= table->model()->index(0, 3).data(Qt::UserRole).toLongLong());
    QVERIFY2(w->classTitle().contains(QStringLiteral("shows its dump at step %1").arg(evidence->dump.record.step)),
        qPrintable(w->classTitle()));
    HistogramView *hist = m_window->histogram();
    QTRY_VERIFY_WITH_TIMEOUT(hist->dump() && hist->metrics().has_value(), 60000);
    QCOMPARE(hist->dump()->record.layer, m_plan.plantedLayerName);
    QCOMPARE(hist->dump()->record.tensor, m_plan.plantedTensor);
    QCOMPARE(hist->dump()->record.step, evidence->dump.record.step);
    // The wizard's heatmap keeps every layer's row after the histogram's recompute was stored.
    QTRY_VERIFY_WITH_TIMEOUT(!w->heatmap()->isLoading() && !w->histogram()->isComputing(), 60000);
    QTest::qWait(300);
    QTRY_VERIFY_WITH_TIMEOUT(!w->heatmap()->isLoading(), 60000);
    QVERIFY2(w->heatmap()->heatmap().layers.size() > 1,
        qPrintable(w->heatmap()->heatmap().layers.join(QLatin1Char(',')) + QStringLiteral(" source ")
            + w->heatmap()->heatmap().source));
    // Drawn at the size it is shown at: a column of the map per pixel of the axis rect, whatever size the view
    // had when its matrix arrived (hidden behind another step: none).
    w->heatmap()->plot()->replot();
    const auto *map = qobject_cast<QCPColorMap *>(w->heatmap()->plot()->plottable(0));
    QVERIFY(map);
    QCOMPARE(map->data()->keySize(), std::max(w->heatmap()->plot()->axisRect()->width(), 1));
    QVERIFY(w->heatmap()->plot()->axisRect()->width() > 1);
    // What to try next names the suspect layer in the BF16 fallback config, ready to paste.
    w->setStep(TriageWizard::NextStep);
    QVERIFY2(w->nextText().contains(QStringLiteral("DisableQuantizationLayer")), qPrintable(w->nextText()));
    QVERIFY(w->nextText().contains(m_plan.plantedLayerName));
    QString pattern = m_plan.plantedLayerName;
    pattern.replace(QLatin1Char('.'), QStringLiteral("\\."));
    QVERIFY2(w->nextText().contains(QStringLiteral("layer_name_regex_pattern: ") + pattern), qPrintable(w->nextText()));
    // Copy puts the config alone on the clipboard, as it pastes: the YAML, no prose.
    auto *copy = w->findChild<QPushButton *>(QStringLiteral("triageCopyNext"));
    QVERIFY(copy && copy->isEnabled());
    QGuiApplication::clipboard()->clear();
    copy->click();
    const QString copied = QGuiApplication::clipboard()->text();
    QVERIFY2(copied.startsWith(QLatin1String("bf16_")) && copied.contains(QLatin1String("DisableQuantizationLayer:")),
        qPrintable(copied));
    QVERIFY2(copied.contains(QStringLiteral("layer_name_regex_pattern: ") + pattern), qPrintable(copied));
    for (const QString &line : copied.split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
        // Every line a YAML key, or a key and its value: nothing else.
        QVERIFY2(
            QRegularExpression(QStringLiteral("^ *[A-Za-z0-9_]+:( .+)?$")).match(line).hasMatch(), qPrintable(line));
    }
    QVERIFY(!copied.contains(QLatin1String("one change")));
}

void TestTriageWizard::whatIfEqualsTheCli()
{
    TriageWizard *w = m_window->triage();
    QVERIFY(w && w->comparison());
    QTRY_VERIFY_WITH_TIMEOUT(!w->isComputingWhatIf(), 120000);
    QVERIFY(w->whatIfDump().contains(m_plan.plantedLayerName));
    QProcess cli;
    cli.start(qEnvironmentVariable("FP8SCOPE_CLI"),
        {QStringLiteral("stats"), w->whatIfDump(), QStringLiteral("--what-if"), QStringLiteral("--json")});
    QVERIFY2(
        cli.waitForFinished(120000) && cli.exitCode() == 0, qPrintable(QString::fromUtf8(cli.readAllStandardError())));
    const QJsonArray rows
        = QJsonDocument::fromJson(cli.readAllStandardOutput()).object().value(QStringLiteral("what_if")).toArray();
    QAbstractItemModel *table = w->whatIfTable()->model();
    QCOMPARE(table->rowCount(), int(rows.size()));
    int blockRows = 0;
    double clippingOrUnderflow = 0;
    // The recipes an activation could be trained in under the hybrid format: none in E5M2.
    QCOMPARE(rows.size(), 6);
    const auto close = [](double a, double b) {
        return (std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b));
    };
    for (int i = 0; i < table->rowCount(); ++i) {
        const QJsonObject r = rows.at(i).toObject();
        QCOMPARE(table->index(i, 0).data().toString(), r.value(QStringLiteral("recipe")).toString());
        QCOMPARE(table->index(i, 1).data().toString().toLower(), r.value(QStringLiteral("format")).toString());
        QVERIFY2(r.value(QStringLiteral("format")).toString() != QLatin1String("e5m2"),
            qPrintable(r.value(QStringLiteral("recipe")).toString()));
        const char *keys[]
            = {"damage_pct", "mean_rel_error_pct", "underflow_pct", "saturation_pct", "mse", "sqnr_db", "cosine"};
        for (int k = 0; k < 7; ++k) {
            const double shown = table->index(i, 2 + k).data(Qt::UserRole).toDouble();
            const QJsonValue v = r.value(QLatin1String(keys[k]));
            // JSON has no infinity: a non-finite value (BF16's SQNR) is written as null.
            const double expected = v.isDouble() ? v.toDouble() : NAN;
            QVERIFY2(v.isDouble() ? close(shown, expected) : !std::isfinite(shown),
                qPrintable(QStringLiteral("%1 %2: %3 vs %4")
                               .arg(r.value(QStringLiteral("recipe")).toString(), QLatin1String(keys[k]))
                               .arg(shown)
                               .arg(expected)));
        }
        // The block census of block recipes, as the CLI counts it.
        const QJsonObject census = r.value(QStringLiteral("block_census")).toObject();
        if (census.isEmpty()) {
            QCOMPARE(table->index(i, TriageWizard::kBlocksColumn).data().toString(), QStringLiteral("-"));
            continue;
        }
        ++blockRows;
        const double blocks = census.value(QStringLiteral("blocks")).toDouble();
        QVERIFY(blocks > 0);
        QCOMPARE(table->index(i, TriageWizard::kBlocksColumn).data(Qt::UserRole).toDouble(), blocks);
        const char *counts[] = {"clipping_blocks", "underflowing_blocks", "flushed_blocks"};
        for (int k = 0; k < 3; ++k) {
            const double pct = census.value(QLatin1String(counts[k])).toDouble() / blocks * 100.0;
            QVERIFY2(close(table->index(i, TriageWizard::kBlocksColumn + 1 + k).data(Qt::UserRole).toDouble(), pct),
                qPrintable(QStringLiteral("%1 %2").arg(
                    r.value(QStringLiteral("recipe")).toString(), QLatin1String(counts[k]))));
            clippingOrUnderflow += k < 2 ? pct : 0.0;
        }
    }
    QCOMPARE(blockRows, 3); // mxfp8, block1x128, nvfp4
    QVERIFY(clippingOrUnderflow > 0); // some recipe loses blocks on the planted dump (NVFP4)
    // One best recipe on every path: the table's bold row, the CLI's, the what-if finding's, the next step's and the
    // report's highlighted row; on the demo's planted layer a block recipe, which keeps the bulk that per-tensor
    // scaling flushes (the least MSE, current's, is not the best).
    int bold = -1;
    for (int i = 0; i < table->rowCount(); ++i) {
        if (table->index(i, 0).data(Qt::FontRole).value<QFont>().bold())
            bold = i;
    }
    QVERIFY(bold >= 0);
    const QString boldRecipe = table->index(bold, 0).data().toString();
    QVERIFY2(
        boldRecipe == QLatin1String("mxfp8") || boldRecipe.startsWith(QLatin1String("block")), qPrintable(boldRecipe));
    QProcess cliBest;
    cliBest.start(qEnvironmentVariable("FP8SCOPE_CLI"),
        {QStringLiteral("stats"), w->whatIfDump(), QStringLiteral("--what-if"), QStringLiteral("--json")});
    QVERIFY(cliBest.waitForFinished(120000) && cliBest.exitCode() == 0);
    QCOMPARE(QJsonDocument::fromJson(cliBest.readAllStandardOutput()).object().value(QStringLiteral("best")).toString(),
        boldRecipe);
    // The advice, once the wizard's what-if is stored and the findings are finished again.
    QTRY_VERIFY_WITH_TIMEOUT(!w->isComputingWhatIf(), 60000);
    const analysis::Comparison &c = w->comparison()->comparison;
    const auto whatIf = std::find_if(c.findings.begin(), c.findings.end(),
        [](const analysis::Finding &f) { return f.kind == analysis::FindingKind::RecipeWhatIf; });
    QVERIFY(whatIf != c.findings.end());
    QCOMPARE(whatIf->evidence.value(QStringLiteral("best")).toString(), boldRecipe);
    QVERIFY2(whatIf->suggestion.startsWith(boldRecipe + QLatin1Char(' ')), qPrintable(whatIf->suggestion));
    bool advised = false;
    for (const analysis::NextStep &ns : c.nextSteps) {
        // Never a recipe change that contradicts the what-if, nor "a recipe change does not help".
        QVERIFY2(!ns.action.contains(QLatin1String("does not help")), qPrintable(ns.action));
        QVERIFY2(!ns.action.contains(QLatin1String("a block recipe (")), qPrintable(ns.action));
        advised = advised || ns.action.startsWith(boldRecipe + QLatin1Char(' '));
    }
    QVERIFY(advised);
    QVERIFY(w->nextText().contains(boldRecipe + QStringLiteral(" quantizes this tensor best")));
    // The report reads the stored what-if: its highlighted row is the same recipe.
    QString error;
    const auto doc
        = report::buildTriageReport(m_window->workspace()->catalog(), w->baseline(), w->run(), nullptr, {}, &error);
    QVERIFY2(doc, qPrintable(error));
    const report::Table *whatIfTable = nullptr;
    for (const report::Section &section : doc->sections) {
        for (const report::Block &b : section.blocks) {
            if (section.title == QLatin1String("Recipe what-if") && std::holds_alternative<report::Table>(b))
                whatIfTable = &std::get<report::Table>(b);
        }
    }
    QVERIFY(whatIfTable);
    QCOMPARE(whatIfTable->highlighted.size(), size_t(1));
    QCOMPARE(whatIfTable->rows[whatIfTable->highlighted.front()].front(), boldRecipe);
}

void TestTriageWizard::dismissedFindingSurvivesAReopen()
{
    TriageWizard *w = openTriage(m_demo);
    QVERIFY(w);
    w->setStep(TriageWizard::SummaryStep);
    QAbstractItemModel *summary = w->summaryTable()->model();
    QVERIFY(summary->rowCount() > 2);
    // The config difference is a distractor: dismissed, with a note.
    int row = -1;
    for (int i = 0; i < summary->rowCount(); ++i) {
        if (summary->index(i, 1).data().toString() == QLatin1String("config-difference"))
            row = i;
    }
    QVERIFY(row >= 0);
    const QString identity = analysis::findingIdentity(w->comparison()->comparison.findings[size_t(row)]);
    // The comparison is finished again with the review on the query queue, not on this thread: while that queue is
    // held, the review is kept but not yet said.
    QueueHold hold(m_window->workspace()->queries(), this);
    QSignalSpy stored(w, &TriageWizard::reviewStored);
    w->setReview(row, QStringLiteral("dismissed"), QStringLiteral("the demo's harmless difference"));
    QVERIFY(!stored.wait(2000));
    hold.release();
    QVERIFY(stored.wait(30000));
    QCOMPARE(stored.count(), 1);
    QCOMPARE(stored.front().front().toString(), QString());
    // Reopened: the folder is read again and the comparison computed again; the review is still there.
    w->close();
    w = openTriage(m_demo);
    QVERIFY(w);
    summary = w->summaryTable()->model();
    int again = -1;
    for (int i = 0; i < summary->rowCount(); ++i) {
        if (analysis::findingIdentity(w->comparison()->comparison.findings[size_t(i)]) == identity)
            again = i;
    }
    QVERIFY(again >= 0);
    QCOMPARE(summary->index(again, TriageWizard::kReviewColumn).data().toString(), QStringLiteral("dismissed"));
    QCOMPARE(summary->index(again, TriageWizard::kNoteColumn).data().toString(),
        QStringLiteral("the demo's harmless difference"));
    // The others stay open; the store holds exactly the one review.
    const auto reviews = m_window->workspace()->catalog().findingReviews(w->run(), w->baseline());
    QCOMPARE(reviews.size(), size_t(1));
    QCOMPARE(reviews.front().finding, identity);
    QVERIFY(!reviews.front().reviewedAt.isEmpty());
    // The report's Review table names the finding as a reader knows it, not by the store's key.
    QString error;
    const auto doc
        = report::buildTriageReport(m_window->workspace()->catalog(), w->baseline(), w->run(), nullptr, {}, &error);
    QVERIFY2(doc, qPrintable(error));
    const report::Table *reviewTable = nullptr;
    for (const report::Section &section : doc->sections) {
        for (const report::Block &b : section.blocks) {
            if (section.title == QLatin1String("Review") && std::holds_alternative<report::Table>(b))
                reviewTable = &std::get<report::Table>(b);
        }
    }
    QVERIFY(reviewTable && reviewTable->rows.size() == 1);
    const QString named = reviewTable->rows.front().value(0);
    const analysis::Finding &reviewed = w->comparison()->comparison.findings[size_t(again)];
    QVERIFY2(!named.contains(QLatin1Char('|')), qPrintable(named));
    QCOMPARE(named, QStringLiteral("%1: %2").arg(analysis::findingKindName(reviewed.kind), reviewed.summary));
    // A state that is none of the three is refused with a reason.
    QSignalSpy refused(w, &TriageWizard::reviewStored);
    w->setReview(again, QStringLiteral("maybe"), QString());
    QVERIFY(refused.wait(30000));
    QVERIFY(refused.front().front().toString().contains(QStringLiteral("open, confirmed or dismissed")));
}

// The summary's Export Report... asks for the pair's report (the window then asks where: the dialog is
// dismissed here); the window writes it as a job, with the wizard's pair, and says so.
void TestTriageWizard::exportReportFromTheSummary()
{
    TriageWizard *w = openTriage(m_demo);
    QVERIFY(w);
    QVERIFY(m_window->findChild<QAction *>(QStringLiteral("exportReport"))->isEnabled());
    w->setStep(TriageWizard::SummaryStep);
    auto *button = w->findChild<QPushButton *>(QStringLiteral("triageExportReport"));
    QVERIFY(button && button->isVisible());
    QSignalSpy asked(w, &TriageWizard::reportRequested);
    QTimer::singleShot(300, [] {
        if (QWidget *dialog = QApplication::activeModalWidget())
            dialog->close();
    });
    button->click();
    QCOMPARE(asked.count(), 1);
    QCOMPARE(asked.front().at(0).value<RunRef>(), w->baseline());
    QCOMPARE(asked.front().at(1).value<RunRef>(), w->run());
    const QString path = m_tmp.filePath(QStringLiteral("from-the-window.pdf"));
    // The document is built on the job queue and painted here; its file work (the bookmarks, the file put in
    // place) runs on the query queue: while that queue is held, the report is not written.
    QueueHold hold(m_window->workspace()->queries(), this);
    QSignalSpy exported(m_window.get(), &MainWindow::reportExported);
    m_window->exportReport({}, {}, path); // the wizard's pair
    QVERIFY(!exported.wait(5000));
    QVERIFY(!QFileInfo::exists(path));
    hold.release();
    QVERIFY(exported.wait(120000));
    QVERIFY(!QFileInfo::exists(path + QStringLiteral(".draft")) && !QFileInfo::exists(path + QStringLiteral(".part")));
    QCOMPARE(exported.front().at(0).toString(), path);
    QCOMPARE(exported.front().at(1).toString(), QString());
    QFile pdf(path);
    QVERIFY(pdf.open(QIODevice::ReadOnly));
    const QByteArray bytes = pdf.readAll();
    QVERIFY(bytes.startsWith("%PDF-"));
    QVERIFY(bytes.contains("/Outlines"));
    QVERIFY(bytes.size() > 20000);
    QVERIFY(m_window->statusBar()->currentMessage().contains(QStringLiteral("Triage report written")));
}

// A suspect dismissed in the summary leaves What to try next at once (the engine's next steps made again with
// the review), and stays out when the wizard is opened again.
void TestTriageWizard::dismissedSuspectLeavesTheNextSteps()
{
    TriageWizard *w = openTriage(m_demo);
    QVERIFY(w);
    QVERIFY2(w->nextText().contains(m_plan.plantedLayerName), qPrintable(w->nextText()));
    // Reviewed while the what-if may still be computing.
    w->setStep(TriageWizard::SummaryStep);
    QAbstractItemModel *summary = w->summaryTable()->model();
    for (int i = 0; i < summary->rowCount(); ++i) {
        if (summary->index(i, 1).data().toString() != QLatin1String("layer-signal")
            || summary->index(i, 2).data().toString() != m_plan.plantedLayerName)
            continue;
        QSignalSpy stored(w, &TriageWizard::reviewStored);
        w->setReview(i, QStringLiteral("dismissed"), QStringLiteral("known"));
        QVERIFY(stored.wait(30000));
        QCOMPARE(stored.front().front().toString(), QString());
    }
    QVERIFY2(!w->nextText().contains(m_plan.plantedLayerName), qPrintable(w->nextText()));
    QVERIFY(!w->nextText().isEmpty());
    // The what-if of the same comparison still comes in (a review does not drop it).
    QTRY_VERIFY_WITH_TIMEOUT(!w->isComputing(), 120000);
    w->close();
    w = openTriage(m_demo);
    QVERIFY(w);
    QVERIFY2(!w->nextText().contains(m_plan.plantedLayerName), qPrintable(w->nextText()));
    // Opened again for the other tests: the reviews undone.
    summary = w->summaryTable()->model();
    for (int i = 0; i < summary->rowCount(); ++i) {
        if (summary->index(i, TriageWizard::kReviewColumn).data().toString() != QLatin1String("dismissed"))
            continue;
        QSignalSpy stored(w, &TriageWizard::reviewStored);
        w->setReview(i, QStringLiteral("open"), QString());
        QVERIFY(stored.wait(30000));
    }
    w->close();
}

// A folder with one run and no baseline: the window offers its check, and the wizard shows the run on its own
// (its verdict, its blow-up and what to try), not an empty plot.
void TestTriageWizard::aRunOnItsOwn()
{
    QVERIFY(testdata::writeBlowUpRun(m_tmp.filePath(QStringLiteral("alone/blowup"))));
    TriageWizard *w = openTriage(m_tmp.filePath(QStringLiteral("alone")));
    QVERIFY(w);
    QVERIFY(!w->baseline().isValid());
    QVERIFY(w->run().isValid());
    const analysis::Comparison &c = w->comparison()->comparison;
    QVERIFY(c.verdict != analysis::Verdict::None);
    QVERIFY2(w->verdictText().contains(QLatin1String("Checked on its own")), qPrintable(w->verdictText()));
    w->setStep(TriageWizard::SummaryStep);
    QAbstractItemModel *summary = w->summaryTable()->model();
    bool blowUp = false;
    for (int i = 0; i < summary->rowCount(); ++i)
        blowUp = blowUp
            || (summary->index(i, 1).data().toString() == QLatin1String("run-blow-up")
                && summary->index(i, 0).data().toString() == QLatin1String("critical"));
    QVERIFY(blowUp);
    QVERIFY(w->classTable()->model()->rowCount() > 0);
    QVERIFY2(!w->nextText().startsWith(QLatin1String("Nothing")), qPrintable(w->nextText()));
    w->close();
}

// Issue 54: a pair whose FP8 run blows up (8 pipeline ranks, rank 5's layer 11 gradient inf before the rest): the
// comparison says the blow-up and its first non-finite value, never "stays within the band"; the wizard's class
// step opens on that value, its heatmap of every rank with the non-finite cells marked (never coloured).
void TestTriageWizard::aBlowUpOpensOnItsFirstNonFiniteValue()
{
    const QString folder = m_tmp.filePath(QStringLiteral("blowup"));
    testdata::writeBlowUpPair(folder, 200000, 6000);
    TriageWizard *w = openTriage(folder);
    QVERIFY(w);
    QCOMPARE(analysis::verdictName(w->comparison()->comparison.verdict), QStringLiteral("mid-run-instability"));
    m_window->showComparison();
    m_window->compare()->setPair(w->baseline(), w->run());
    QTRY_VERIFY2_WITH_TIMEOUT(m_window->compare()->status().contains(QLatin1String("blows up at step 6000")),
        qPrintable(m_window->compare()->status()), 30000);
    QVERIFY2(m_window->compare()->status().contains(QLatin1String("decoder.layers.11.mlp.linear_fc1 gradient")),
        qPrintable(m_window->compare()->status()));
    QVERIFY(!m_window->compare()->status().contains(QLatin1String("stays within")));
    // The loss step says the blow-up, never that the losses agree.
    w->setStep(TriageWizard::LossStep);
    QVERIFY2(w->verdictText().contains(QLatin1String("It blows up at step")), qPrintable(w->verdictText()));
    QVERIFY2(!w->verdictText().contains(QLatin1String("losses agree")), qPrintable(w->verdictText()));
    w->setStep(TriageWizard::ClassStep);
    QTableView *table = w->classTable();
    QCOMPARE(table->model()->index(0, 0).data().toString(), QStringLiteral("decoder.layers.11.mlp.linear_fc1"));
    QCOMPARE(table->model()->index(0, 1).data().toString(), QStringLiteral("gradient"));
    QCOMPARE(table->model()->index(0, 3).data().toLongLong(), 5980);
    QVERIFY2(w->classTitle().contains(QLatin1String("first non-finite value")), qPrintable(w->classTitle()));
    HeatmapView *heat = w->heatmap();
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading() && !heat->heatmap().nonFinite.empty(), 30000);
    QCOMPARE(heat->tensor(), QStringLiteral("gradient"));
    QCOMPARE(heat->heatmap().source, kRanksMax);
    QCOMPARE(size_t(heat->nonFiniteMarks()->dataCount()), heat->heatmap().nonFinite.size());
    // Hovering the first marked cell says what was logged and which rank logged it.
    const Heatmap &h = heat->heatmap();
    const qsizetype row = h.layers.indexOf(QStringLiteral("decoder.layers.11.mlp.linear_fc1"));
    const auto column = size_t(std::find(h.steps.begin(), h.steps.end(), int64_t(5980)) - h.steps.begin());
    QVERIFY(row >= 0 && column < h.steps.size());
    const QString tip = heat->toolTipAt(heat->cellCentre(int(row), int(column)));
    QVERIFY2(tip.contains(QLatin1String("inf (not finite)")) && tip.contains(QLatin1String("rank 5")), qPrintable(tip));
    w->close();
}

FP8SCOPE_TEST_GUI_MAIN(TestTriageWizard)
#include "tst_triage.moc"
