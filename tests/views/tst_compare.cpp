// The comparison view (issue 23) on triage scenarios it was not built on: the departure marker at the
// engine's step, the difference strip equal to run - baseline as the runs logged them, a finding that moves
// the shared selection, the evaluation table marking the planted tasks and no others, the config table's
// suspects first, and other pickers redrawing every part.
#include "app/gui/mainwindow.h"
#include "core/analysis/triage.h"
#include "core/demo/scenarios.h"
#include "guitest.h"
#include "views/compare/compareview.h"
#include "views/compare/evalchart.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/models/tableexport.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QAction>
#include <QComboBox>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

using namespace fp8scope;

class TestCompare : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void departureAndDifferenceOnAMidRunInstability();
    void findingMovesTheSelection();
    void suspectLayerIsMarked();
    void evaluationTableMarksThePlantedTasks();
    void otherPickersRedraw();
    void stateSurvivesAReopen();

private:
    // A new window with both scenarios open.
    bool openWindow();
    // The comparison of `run` against `baseline` (by folder name), once computed.
    const ComparisonData *compare(const QString &baseline, const QString &run);

    QTemporaryDir m_tmp;
    ScenarioPlan m_mid, m_gap;
    std::unique_ptr<MainWindow> m_window;
};

void TestCompare::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    QString error;
    QVERIFY2(generateScenario(m_tmp.filePath(QStringLiteral("mid")), Scenario::MidRunInstability, 11, &m_mid, &error),
        qPrintable(error));
    QVERIFY2(generateScenario(m_tmp.filePath(QStringLiteral("gap")), Scenario::DownstreamGap, 12, &m_gap, &error),
        qPrintable(error));
    QVERIFY(openWindow());
    QCOMPARE(m_window->workspace()->runCount(), 4);
    m_window->showComparison();
}

bool TestCompare::openWindow()
{
    m_window = std::make_unique<MainWindow>(BackendChoice::Cpu, nullptr);
    m_window->resize(1600, 1000);
    m_window->show();
    if (!QTest::qWaitForWindowExposed(m_window.get()))
        return false;
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    m_window->openFolders({m_tmp.filePath(QStringLiteral("mid")), m_tmp.filePath(QStringLiteral("gap"))});
    return ready.wait(120000);
}

const ComparisonData *TestCompare::compare(const QString &baseline, const QString &run)
{
    Workspace *ws = m_window->workspace();
    CompareView *view = m_window->compare();
    RunRef b, r;
    for (const WorkspaceRun &w : ws->runs()) {
        if (w.run.name == baseline && (!b.isValid()))
            b = w.run.ref;
        if (w.run.name == run && (!r.isValid()))
            r = w.run.ref;
    }
    if (!b.isValid() || !r.isValid())
        return nullptr;
    view->setPair(b, r);
    if (!QTest::qWaitFor(
            [&] {
                return !view->isComputing() && view->comparison() && view->comparison()->run == r
                    && view->comparison()->baseline == b;
            },
            120000))
        return nullptr;
    QTest::qWait(20);
    return view->comparison();
}

void TestCompare::departureAndDifferenceOnAMidRunInstability()
{
    const ComparisonData *d = compare(m_mid.baseline, m_mid.run);
    QVERIFY(d);
    CompareView *view = m_window->compare();
    // The engine's departure, computed here again, is where the marker stands.
    const analysis::Comparison engine = analysis::compareRuns(m_window->workspace()->catalog(), d->baseline, d->run);
    QCOMPARE(analysis::verdictName(engine.verdict), QStringLiteral("mid-run-instability"));
    QVERIFY(engine.departure.has_value());
    QVERIFY(d->statistic.departure.step.has_value());
    QCOMPARE(*d->statistic.departure.step, *engine.departure);
    QCOMPARE(view->departureMarkerX(), view->overlay()->plotX(d->run, double(*engine.departure)));
    QVERIFY(view->status().contains(QString::number(*engine.departure)));
    // The overlay draws both runs; the strip their difference and the band's edge.
    QCOMPARE(view->overlay()->curves().size(), size_t(2));
    QVERIFY(view->difference()->curves().size() >= 1);
    const auto &strip = view->difference()->curves().front();
    QCOMPARE(strip.run, d->run);
    QVERIFY(!strip.bucketed || strip.values.size() > 10);
    // At sampled steps of the strip, its value is run - baseline as the two logs have them at that step.
    const Catalog &catalog = m_window->workspace()->catalog();
    const auto baseSeries = catalog.chooseSeries(d->baseline, {.stat = QStringLiteral("lm loss")});
    const auto runSeries = catalog.chooseSeries(d->run, {.stat = QStringLiteral("lm loss")});
    QVERIFY(baseSeries && runSeries);
    view->difference()->plot()->xAxis->setRange(
        double(*engine.departure) - 200, double(*engine.departure) + 200); // single points, not buckets
    view->difference()->refetchNow();
    const auto &zoomed = view->difference()->curves().front();
    QVERIFY(!zoomed.bucketed);
    // The two logs' intervals differ: at a step of the sparser log, the denser one's value is the mean of its
    // points in the same window (s - interval, s], both being means over their log intervals (Megatron's).
    const auto basePoints = catalog.points(*baseSeries);
    const auto runPoints = catalog.points(*runSeries);
    const bool runSparser = runPoints.size() <= basePoints.size();
    const auto &sparse = runSparser ? runPoints : basePoints;
    const auto &dense = runSparser ? basePoints : runPoints;
    int checked = 0;
    for (size_t i = 0; i < zoomed.steps.size(); i += std::max<size_t>(1, zoomed.steps.size() / 12)) {
        const int64_t step = int64_t(zoomed.steps[i]);
        const auto at
            = std::find_if(sparse.begin(), sparse.end(), [&](const SeriesPoint &p) { return p.step == step; });
        QVERIFY2(at != sparse.end() && at != sparse.begin(), qPrintable(QString::number(step)));
        const int64_t from = (at - 1)->step;
        double sum = 0;
        int n = 0;
        for (const SeriesPoint &p : dense) {
            if (p.step > from && p.step <= step) {
                sum += p.value;
                ++n;
            }
        }
        QVERIFY(n > 0);
        const double expected = runSparser ? at->value - sum / n : sum / n - at->value;
        QVERIFY2(std::abs(zoomed.values[i] - expected) <= 1e-9 * std::max(1.0, std::abs(at->value)),
            qPrintable(QStringLiteral("step %1: %2 vs %3").arg(step).arg(zoomed.values[i]).arg(expected)));
        ++checked;
    }
    QVERIFY2(checked >= 5, qPrintable(QString::number(checked)));
}

void TestCompare::findingMovesTheSelection()
{
    const ComparisonData *d = compare(m_mid.baseline, m_mid.run);
    QVERIFY(d);
    QTableView *findings = m_window->compare()->findingsTable();
    int row = -1;
    for (int i = 0; i < findings->model()->rowCount(); ++i) {
        if (findings->model()->index(i, 1).data().toString() == QLatin1String("layer-signal")
            && findings->model()->index(i, 2).data().toString() == m_mid.layer && row < 0)
            row = i;
    }
    QVERIFY2(row >= 0, qPrintable(m_mid.layer));
    const qint64 step = findings->model()->index(row, 3).data().toLongLong();
    findings->scrollTo(findings->model()->index(row, 0));
    const QRect cell = findings->visualRect(findings->model()->index(row, 4));
    QTest::mouseClick(findings->viewport(), Qt::LeftButton, {}, cell.center());
    Selection *sel = m_window->selection();
    QCOMPARE(sel->layer(), m_mid.layer);
    QCOMPARE(sel->step(), step);
    QCOMPARE(sel->run(), d->run);
    QVERIFY(!sel->tensor().isEmpty());
}

void TestCompare::suspectLayerIsMarked()
{
    const ComparisonData *d = compare(m_mid.baseline, m_mid.run);
    QVERIFY(d);
    m_window->selection()->set(d->run, QString(), QString(), -1); // no layer selected: the flag shows
    HeatmapView *heat = m_window->compare()->runHeatmap();
    QCOMPARE(heat->run(), d->run);
    // The first suspect's statistic (it may be one that moves with the planted one) of the planted tensor.
    const analysis::Finding *first = nullptr;
    for (const analysis::Finding &f : d->comparison.findings) {
        if (f.kind == QLatin1String("layer-signal") && !first)
            first = &f;
    }
    QVERIFY(first);
    QCOMPARE(first->layer, m_mid.layer);
    QCOMPARE(heat->statistic(), first->stat);
    QCOMPARE(heat->tensor(), m_mid.tensor);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading() && !heat->heatmap().layers.isEmpty(), 60000);
    const int row = int(heat->heatmap().layers.indexOf(m_mid.layer));
    QVERIFY2(row >= 0, qPrintable(m_mid.layer));
    const auto ticker = heat->plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    const QString label = ticker->ticks().value(row);
    // Flagged, with the onset the engine found.
    QVERIFY2(label.startsWith(QStringLiteral("\u26A0 ")), qPrintable(label));
    QVERIFY2(label.contains(QStringLiteral("onset %1").arg(*first->step)), qPrintable(label));
    int flagged = 0;
    for (const QString &t : ticker->ticks())
        flagged += t.startsWith(QStringLiteral("\u26A0 ")) ? 1 : 0;
    QVERIFY(flagged <= 3); // the suspects, not every layer
    QCOMPARE(m_window->compare()->baselineHeatmap()->run(), d->baseline);
}

void TestCompare::evaluationTableMarksThePlantedTasks()
{
    const ComparisonData *d = compare(m_gap.baseline, m_gap.run);
    QVERIFY(d);
    QTableView *evals = m_window->compare()->evalTable();
    QVERIFY(evals->model()->rowCount() > 0);
    std::set<QString> significant, all;
    for (int i = 0; i < evals->model()->rowCount(); ++i) {
        const QString task = evals->model()->index(i, 0).data().toString();
        all.insert(task);
        if (!evals->model()->index(i, 8).data().toString().isEmpty())
            significant.insert(task);
    }
    const std::set<QString> planted(m_gap.tasks.begin(), m_gap.tasks.end());
    QCOMPARE(significant, planted);
    QVERIFY(all.size() > planted.size()); // other tasks are listed, not marked
    // The engine's eval findings name the same tasks.
    std::set<QString> found;
    for (const analysis::Finding &f : d->comparison.findings) {
        if (f.kind == QLatin1String("eval-gap"))
            found.insert(f.task);
    }
    QCOMPARE(found, planted);
    // The table exports every digit of its scores.
    const QString csv = tableText(evals->model(), {}, true);
    QVERIFY(csv.startsWith(QStringLiteral("Task,Metric,Inference,Baseline,Run,Difference,")));
    QCOMPARE(csv.count(QLatin1Char('\n')), evals->model()->rowCount() + 1);
    const analysis::EvalRow &first = d->evals.front();
    QVERIFY2(
        csv.contains(QLatin1Char(',') + QString::number(first.baseline, 'g', QLocale::FloatingPointShortest)
            + QLatin1Char(',') + QString::number(first.run, 'g', QLocale::FloatingPointShortest) + QLatin1Char(',')),
        qPrintable(csv.left(300)));
    QVERIFY(evals->findChild<QAction *>(QStringLiteral("compareEvalsExport")));
    // The bar chart beside it: a pair of bars per row, the significant drops in their own series.
    EvalChart *chart = m_window->compare()->evalChart();
    QCOMPARE(chart->rows().size(), d->evals.size());
    int drops = -1, bars = 0;
    for (int i = 0; i < chart->plot()->plottableCount(); ++i) {
        if (auto *b = qobject_cast<QCPBars *>(chart->plot()->plottable(i))) {
            bars += b->data()->size();
            if (b->name().endsWith(QStringLiteral("significant drop")))
                drops = b->data()->size();
        }
    }
    int significantRows = 0;
    for (const analysis::EvalRow &e : d->evals)
        significantRows += e.significant ? 1 : 0;
    QCOMPARE(drops, significantRows);
    QCOMPARE(bars, int(2 * d->evals.size()));
    QVERIFY(chart->csv().count(QStringLiteral(",yes\n")) == significantRows);
}

void TestCompare::otherPickersRedraw()
{
    const ComparisonData *mid = compare(m_mid.baseline, m_mid.run);
    QVERIFY(mid);
    const RunRef midRun = mid->run, midBaseline = mid->baseline;
    const size_t midFindings = mid->comparison.findings.size();
    const ComparisonData *gap = compare(m_gap.baseline, m_gap.run);
    QVERIFY(gap);
    QVERIFY(gap->run != midRun);
    const RunRef gapRun = gap->run, gapBaseline = gap->baseline;
    CompareView *view = m_window->compare();
    // Every part follows: the overlay's runs, the strip, the tables.
    std::set<RunRef> drawn;
    for (const auto &c : view->overlay()->curves())
        drawn.insert(c.run);
    QCOMPARE(drawn, (std::set<RunRef> {gap->baseline, gap->run}));
    QCOMPARE(view->difference()->curves().front().run, gap->run);
    QCOMPARE(view->findingsTable()->model()->rowCount(), int(gap->comparison.findings.size()));
    QVERIFY(view->evalTable()->model()->rowCount() > 0);
    // Back to the first pair: drawn at once from what the view computed.
    view->setPair(midBaseline, midRun);
    QVERIFY(!view->isComputing());
    QVERIFY(view->comparison() && view->comparison()->run == midRun);
    QCOMPARE(view->findingsTable()->model()->rowCount(), int(midFindings));
    // The pickers, as a user turns them: the gap pair again.
    auto *baselineBox = view->findChild<QComboBox *>(QStringLiteral("compareBaseline"));
    auto *runBox = view->findChild<QComboBox *>(QStringLiteral("compareRun"));
    QVERIFY(baselineBox && runBox);
    baselineBox->setCurrentIndex(baselineBox->findData(QVariant::fromValue(gapBaseline)));
    runBox->setCurrentIndex(runBox->findData(QVariant::fromValue(gapRun)));
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->comparison() && view->comparison()->run == gapRun
            && view->comparison()->baseline == gapBaseline,
        60000);
    QVERIFY(view->statistic() == QLatin1String("lm loss"));
    // A comparison of a run with itself is refused in words.
    view->setPair(gapRun, gapRun);
    QVERIFY(!view->comparison());
    QVERIFY(view->status().contains(QStringLiteral("two different runs")));
    QVERIFY(view->overlay()->curves().empty());
}

void TestCompare::stateSurvivesAReopen()
{
    QVERIFY(compare(m_mid.baseline, m_mid.run));
    CompareView *view = m_window->compare();
    view->setStatistic(QStringLiteral("grad norm"));
    QCOMPARE(view->statistic(), QStringLiteral("grad norm"));
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->comparison()->stat == QLatin1String("grad norm"), 60000);
    view->splitter()->setSizes({700, 300});
    const QList<int> sizes = view->splitter()->sizes();
    m_window->close(); // saves the settings
    QVERIFY(openWindow());
    m_window->showComparison();
    CompareView *again = m_window->compare();
    QTRY_VERIFY_WITH_TIMEOUT(again->comparison() && !again->isComputing(), 60000);
    QCOMPARE(again->statistic(), QStringLiteral("grad norm"));
    QCOMPARE(again->comparison()->stat, QStringLiteral("grad norm"));
    QCOMPARE(again->splitter()->sizes(), sizes);
}

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
