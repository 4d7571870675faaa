// The comparison view (issue 23) on triage scenarios it was not built on: the departure marker at the
// engine's step, the difference strip equal to run - baseline as the runs logged them, a finding that moves
// the shared selection, the evaluation table marking the planted tasks and no others, the config table's
// suspects first, and other pickers redrawing every part.
#include "app/gui/mainwindow.h"
#include "core/analysis/triage.h"
#include "core/demo/demogenerator.h"
#include "core/demo/scenarios.h"
#include "core/numerics/recipe.h"
#include "guitest.h"
#include "testmain.h"
#include "views/compare/auditchart.h"
#include "views/compare/compareview.h"
#include "views/compare/evalchart.h"
#include "views/compare/layerdifference.h"
#include "views/curves/curvesource.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/models/tableexport.h"
#include "views/plotting/legendplacement.h"
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
#include <random>
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
    void overlayMarksBandSpikesAndRestarts();
    void tokensAxisPlacesRunsBySequenceLength();
    void pyramidBucketsEqualAScan();
    void combinedHeatmapMatchesLayersAndSteps();
    void layerViewComparesAStatisticBothRunsHave();
    void auditOfTheInferenceExport();
    void auditChartSaysWhyItIsEmpty();

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
    // The downstream gap's run folder holds its inference export, with an inverted scale in layer 1's o_proj.
    // Beside it the BF16 weights it was made from, which the audit finds as its reference.
    const QString gapRun = m_tmp.filePath(QStringLiteral("gap/") + m_gap.run);
    QVERIFY2(writeInferenceExport(gapRun + QStringLiteral("/inference"),
                 {.layers = 4,
                     .faultLayer = 1,
                     .fault = ExportFault::InvertedScale,
                     .seed = 5,
                     .referenceDir = gapRun + QStringLiteral("/inference-bf16")},
                 &error),
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
    // The overlay draws both runs and the baseline's band; the strip their difference and the band's edge.
    QCOMPARE(view->overlay()->curves().size(), size_t(3));
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
        if (f.kind == analysis::FindingKind::LayerSignal && !first)
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
        if (f.kind == analysis::FindingKind::EvalGap)
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
    for (const auto &c : view->overlay()->curves()) {
        if (c.run.id >= 0) // not the baseline's band
            drawn.insert(c.run);
    }
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
    view->setLayerMode(CompareView::LayerMode::Ratio);
    const QList<int> sizes = view->splitter()->sizes();
    m_window->close(); // saves the settings
    QVERIFY(openWindow());
    m_window->showComparison();
    CompareView *again = m_window->compare();
    QTRY_VERIFY_WITH_TIMEOUT(again->comparison() && !again->isComputing(), 60000);
    QCOMPARE(again->statistic(), QStringLiteral("grad norm"));
    QCOMPARE(again->comparison()->stat, QStringLiteral("grad norm"));
    QCOMPARE(again->splitter()->sizes(), sizes);
    QCOMPARE(again->layerMode(), CompareView::LayerMode::Ratio);
    QVERIFY(!again->differenceHeatmap()->isHidden() && again->runHeatmap()->isHidden());
}

void TestCompare::overlayMarksBandSpikesAndRestarts()
{
    const ComparisonData *d = compare(m_mid.baseline, m_mid.run);
    QVERIFY(d);
    CompareView *view = m_window->compare();
    CurveView *overlay = view->overlay();
    overlay->resetZoom();
    overlay->refetchNow();
    // The band: the baseline's running median (the departure's window) -/+ the edge, drawn as an envelope;
    // zoomed in, at each trace step exactly.
    const auto &t = d->statistic.departure.trace;
    QVERIFY(t.steps.size() > 50 && t.edge.size() == t.steps.size());
    const int64_t mid = t.steps[t.steps.size() / 2];
    overlay->plot()->xAxis->setRange(double(mid) - 150, double(mid) + 150);
    overlay->refetchNow();
    const CurveView::RunCurve *band = nullptr;
    for (const auto &c : overlay->curves())
        band = c.run.id < 0 ? &c : band;
    QVERIFY(band);
    QVERIFY(band->low && band->high); // an envelope, not a line
    const std::vector<double> centre = analysis::runningMedian(t.baseline, d->statistic.departure.window / 2);
    int checked = 0;
    for (size_t i = 0; i < band->steps.size(); ++i) {
        const auto at = std::find(t.steps.begin(), t.steps.end(), int64_t(band->steps[i]));
        QVERIFY(at != t.steps.end());
        const size_t k = size_t(at - t.steps.begin());
        QCOMPARE(band->mins[i], centre[k] - t.edge[k]);
        QCOMPARE(band->maxs[i], centre[k] + t.edge[k]);
        ++checked;
    }
    QVERIFY(checked >= 5);
    // The legend (runs, band, marks) never covers the curves: inside where no point is, else above the axes, else
    // the names at the lines' ends (views/plotting/legendplacement.h; tst_layout checks the rule).
    QCPLegend *legend = overlay->plot()->legend;
    overlay->plot()->replot();
    if (legend->visible()) {
        const QRectF r = legendRect(overlay->plot());
        QVERIFY(pointsInside(overlay->plot(), r) == 0 || r.bottom() <= overlay->plot()->axisRect()->top());
    } else {
        QVERIFY(!directLabels(overlay->plot()).isEmpty());
    }
    // Spikes of each run, as the engine finds them in its points, marked on it.
    overlay->resetZoom();
    overlay->refetchNow();
    const auto spikesOf = [&](RunRef run) {
        std::set<int64_t> out;
        for (const CurveView::Mark &m : overlay->marks()) {
            if (m.run == run && m.kind == CurveSource::Event::Spike)
                out.insert(m.step);
        }
        return out;
    };
    for (const auto &[run, points] :
        {std::pair(d->baseline, d->statistic.baselinePoints), std::pair(d->run, d->statistic.runPoints)}) {
        QVERIFY(points);
        std::set<int64_t> expected;
        for (const analysis::Spike &x : analysis::findSpikes(*points).spikes)
            expected.insert(x.step);
        QCOMPARE(spikesOf(run), expected);
    }
    QVERIFY(!spikesOf(d->run).empty() || !spikesOf(d->baseline).empty());
    // The runs' other events stay marked (the overlay's source adds the spikes to the workspace's events; the
    // restarts are tested with the curve view's).
    const WorkspaceCurveSource runs(m_window->workspace());
    for (RunRef run : {d->baseline, d->run}) {
        std::multiset<std::pair<qint64, int>> marked, expected;
        for (const CurveView::Mark &m : overlay->marks()) {
            if (m.run == run && m.kind != CurveSource::Event::Spike && m.kind != CurveSource::Event::NotFinite)
                marked.insert({m.step, int(m.kind)});
        }
        for (const CurveSource::Event &e : runs.events(run)) {
            if (e.kind != CurveSource::Event::NotFinite)
                expected.insert({e.step, int(e.kind)});
        }
        QCOMPARE(marked, expected);
    }
}

void TestCompare::tokensAxisPlacesRunsBySequenceLength()
{
    // The key forms configs name the sequence length by.
    const auto length = [](const QString &key, const QString &value) {
        return WorkspaceCurveSource::sequenceLength({ConfigEntry {key, value, QString()}});
    };
    QCOMPARE(length(QStringLiteral("MODEL_ARGS.--seq-length"), QStringLiteral("2048")), int64_t(2048));
    QCOMPARE(length(QStringLiteral("seq_length"), QStringLiteral(" 4096 ")), int64_t(4096));
    QCOMPARE(length(QStringLiteral("model.encoder_seq_length"), QStringLiteral("1024")), int64_t(1024));
    QCOMPARE(length(QStringLiteral("data.max_seq_len"), QStringLiteral("512")), int64_t(512));
    QCOMPARE(length(QStringLiteral("seq_length"), QStringLiteral("long")), int64_t(0));
    QCOMPARE(length(QStringLiteral("max_position_embeddings"), QStringLiteral("4096")), int64_t(0));
    QCOMPARE(length(QStringLiteral("seq_length"), QStringLiteral("-5")), int64_t(0));

    const ComparisonData *d = compare(m_mid.baseline, m_mid.run);
    QVERIFY(d);
    CompareView *view = m_window->compare();
    CurveView *overlay = view->overlay();
    const Catalog &catalog = m_window->workspace()->catalog();
    const WorkspaceCurveSource runs(m_window->workspace());
    overlay->setXAxis(CurveView::XAxis::Tokens);
    overlay->refetchNow();
    view->difference()->refetchNow();
    QCOMPARE(overlay->plot()->xAxis->label(), QStringLiteral("consumed tokens"));
    // The strip follows the overlay's axis.
    QCOMPARE(view->difference()->xAxis(), CurveView::XAxis::Tokens);
    QVERIFY(overlay->note().isEmpty());
    int checked = 0;
    for (const auto &c : overlay->curves()) {
        if (c.run.id < 0)
            continue;
        const int64_t seq = WorkspaceCurveSource::sequenceLength(catalog.configs(c.run));
        QVERIFY(seq > 0);
        const auto samples = runs.stepSamples(c.run);
        QVERIFY(samples.size() >= 2);
        // At a logged step, x is its consumed samples times the sequence length.
        for (size_t i = 0; i < c.steps.size(); i += std::max<size_t>(1, c.steps.size() / 7)) {
            const auto at
                = std::find_if(samples.begin(), samples.end(), [&](const auto &p) { return p.first == c.steps[i]; });
            if (at == samples.end())
                continue;
            QCOMPARE(c.xs[qsizetype(i)], at->second * double(seq));
            ++checked;
        }
    }
    QVERIFY2(checked >= 4, qPrintable(QString::number(checked)));
    // The departure marker stands at the departure's tokens.
    QCOMPARE(view->departureMarkerX(), overlay->plotX(d->run, double(*d->statistic.departure.step)));
    QVERIFY(view->departureMarkerX() > double(*d->statistic.departure.step) * 1000);
    overlay->setXAxis(CurveView::XAxis::Steps);
    QCOMPARE(view->difference()->xAxis(), CurveView::XAxis::Steps);
}

void TestCompare::pyramidBucketsEqualAScan()
{
    // Lengths around the block sizes, NaN and infinite values among them, ranges of every shape.
    std::mt19937_64 rng(7);
    for (size_t n :
        {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65), size_t(4095), size_t(4097), size_t(300000)}) {
        std::vector<double> values(n);
        std::vector<int64_t> steps(n);
        std::normal_distribution<double> normal;
        for (size_t i = 0; i < n; ++i) {
            steps[i] = int64_t(i) * 10;
            values[i] = i % 997 == 5 ? NAN : (i % 1499 == 7 ? INFINITY : normal(rng));
        }
        const MinMaxPyramid pyramid(values);
        QVERIFY(n < 2 * MinMaxPyramid::kFan || pyramid.levels() >= 1);
        for (int trial = 0; trial < 200 && n > 0; ++trial) {
            size_t lo = size_t(rng() % n), hi = size_t(rng() % (n + 1));
            if (lo > hi)
                std::swap(lo, hi);
            double mn = INFINITY, mx = -INFINITY;
            for (size_t i = lo; i < hi; ++i) {
                if (std::isfinite(values[i])) {
                    mn = std::min(mn, values[i]);
                    mx = std::max(mx, values[i]);
                }
            }
            const auto [pmn, pmx] = pyramid.range(values, lo, hi);
            QVERIFY2(pmn == mn && pmx == mx, qPrintable(QStringLiteral("n %1 [%2, %3)").arg(n).arg(lo).arg(hi)));
        }
        // Whole buckets as the curve view asks for them: the same as without the pyramid.
        for (int resolution : {0, 7, 500}) {
            const PointRange range {
                .from = n > 0 ? steps[n / 7] : 0, .to = n > 0 ? steps[n - 1 - n / 9] : 0, .resolution = resolution};
            const auto plain = bucketSeries(steps, values, range);
            const auto fast = bucketSeries(steps, values, range, &pyramid);
            QCOMPARE(fast.size(), plain.size());
            for (size_t i = 0; i < plain.size(); ++i) {
                QCOMPARE(fast[i].step, plain[i].step);
                QCOMPARE(fast[i].lastStep, plain[i].lastStep);
                QCOMPARE(fast[i].count, plain[i].count);
                QVERIFY((std::isnan(fast[i].min) && std::isnan(plain[i].min)) || fast[i].min == plain[i].min);
                QVERIFY((std::isnan(fast[i].max) && std::isnan(plain[i].max)) || fast[i].max == plain[i].max);
            }
        }
    }
}

void TestCompare::combinedHeatmapMatchesLayersAndSteps()
{
    // The baseline logs every 20 steps and lacks layer b; the run logs every 10 and has one layer more.
    Heatmap base, run;
    base.layers = {QStringLiteral("a"), QStringLiteral("c")};
    base.steps = {0, 20, 40, 60};
    base.values = {1, 2, 0, 4, /* c */ 10, 20, 30, NAN};
    run.layers = {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")};
    run.steps = {0, 10, 20, 30, 40, 60, 80};
    run.values = {3, 3, 5, 5, 7, 9, 9, /* b */ 1, 1, 1, 1, 1, 1, 1, /* c */ 11, 11, 22, 22, 33, 44, 44};
    const Heatmap d = combineHeatmaps(base, run, LayerCombination::Difference);
    QCOMPARE(d.layers, (QStringList {QStringLiteral("a"), QStringLiteral("c")}));
    QCOMPARE(d.steps, run.steps);
    // Steps 10 and 30 lie half the baseline's interval from its steps: matched to the nearest; 80 lies
    // further: a gap.
    const double a[] = {3 - 1, 3 - 1, 5 - 2, 5 - 2, 7 - 0, 9 - 4, NAN};
    const double c[] = {1, 1, 2, 2, 3, NAN, NAN};
    for (size_t j = 0; j < run.steps.size(); ++j) {
        QVERIFY2((std::isnan(a[j]) && std::isnan(d.at(0, j))) || d.at(0, j) == a[j], qPrintable(QString::number(j)));
        QVERIFY2((std::isnan(c[j]) && std::isnan(d.at(1, j))) || d.at(1, j) == c[j], qPrintable(QString::number(j)));
    }
    // A ratio leaves out a baseline of 0.
    const Heatmap r = combineHeatmaps(base, run, LayerCombination::Ratio);
    QCOMPARE(r.at(0, 0), 3.0);
    QCOMPARE(r.at(0, 2), 2.5);
    QVERIFY(std::isnan(r.at(0, 4)));
    QCOMPARE(r.at(1, 4), 1.1);
}

void TestCompare::layerViewComparesAStatisticBothRunsHave()
{
    // The demo pair logs Transformer Engine's precision-independent statistics in both runs.
    const QString dir = m_tmp.filePath(QStringLiteral("demo"));
    DemoPlan plan;
    QString error;
    QVERIFY2(guitest::generatePair(dir, 5, 6, 1000, &plan, &error), qPrintable(error));
    MainWindow window(BackendChoice::Cpu, nullptr);
    window.resize(1600, 1000);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QSignalSpy ready(&window, &MainWindow::ready);
    window.openFolders({dir});
    QVERIFY(ready.wait(120000));
    window.showComparison();
    CompareView *view = window.compare();
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->comparison(), 120000);
    const ComparisonData *d = view->comparison();
    const Catalog &catalog = window.workspace()->catalog();
    QCOMPARE(catalog.run(d->run)->name, QStringLiteral("fp8"));
    // The engine's first suspect is an FP8-only statistic (underflows%); the layer view opens both runs on the
    // first layer signal that both have (dynamic_range: the bulk shrinks, the outliers stay; here a
    // consequence), on one colour scale, the planted layer flagged.
    HeatmapView *base = view->baselineHeatmap(), *run = view->runHeatmap(), *diff = view->differenceHeatmap();
    QTRY_VERIFY_WITH_TIMEOUT(!base->isLoading() && !run->isLoading() && !run->heatmap().layers.isEmpty()
            && !base->heatmap().layers.isEmpty(),
        60000);
    const analysis::Finding *first = nullptr, *shared = nullptr;
    std::set<QString> baseStats;
    for (const auto &[st, t] : catalog.layerStatistics(d->baseline))
        baseStats.insert(st + QLatin1Char('/') + t);
    for (bool leads : {true, false}) {
        for (const analysis::Finding &f : d->comparison.findings) {
            if (f.kind != analysis::FindingKind::LayerSignal || (f.severity == analysis::Severity::Info) == leads)
                continue;
            first = first ? first : &f;
            if (!shared && baseStats.count(f.stat + QLatin1Char('/') + f.tensor))
                shared = &f;
        }
    }
    QVERIFY(first && shared);
    QCOMPARE(first->stat, QStringLiteral("underflows%"));
    QVERIFY(!baseStats.count(QStringLiteral("underflows%/activation")));
    QCOMPARE(shared->layer, plan.plantedLayerName);
    QCOMPARE(run->statistic(), shared->stat);
    QCOMPARE(base->statistic(), run->statistic());
    QCOMPARE(base->tensor(), QStringLiteral("activation"));
    QCOMPARE(run->tensor(), QStringLiteral("activation"));
    QCOMPARE(base->scaleLabel(), run->scaleLabel());
    const auto flagged = [](HeatmapView *h, const QString &layer) {
        const qsizetype row = h->heatmap().layers.indexOf(layer);
        const auto ticker = h->plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
        return row >= 0 && ticker && ticker->ticks().value(int(row)).startsWith(QStringLiteral("\u26A0 "));
    };
    window.selection()->set(d->run, QString(), QString(), -1);
    QVERIFY(flagged(run, plan.plantedLayerName));
    // As one heatmap: run − baseline, cell by cell, as the store has both. (Side by side first: an earlier
    // test's window saved another mode.)
    view->setLayerMode(CompareView::LayerMode::SideBySide);
    QVERIFY(diff->isHidden());
    view->setLayerMode(CompareView::LayerMode::Difference);
    QVERIFY(!diff->isHidden() && run->isHidden() && base->isHidden());
    QTRY_VERIFY_WITH_TIMEOUT(!diff->isLoading() && !diff->heatmap().layers.isEmpty(), 60000);
    QCOMPARE(diff->statistic(), shared->stat);
    const Heatmap b = catalog.matrix(d->baseline, {shared->stat, QStringLiteral("activation")});
    const Heatmap r = catalog.matrix(d->run, {shared->stat, QStringLiteral("activation")});
    const Heatmap &shown = diff->heatmap();
    QCOMPARE(shown.layers, r.layers);
    QCOMPARE(shown.steps, r.steps);
    QCOMPARE(b.steps, r.steps);
    int checked = 0;
    for (qsizetype i = 0; i < shown.layers.size(); ++i) {
        const qsizetype bi = b.layers.indexOf(shown.layers.at(i));
        QVERIFY(bi >= 0);
        for (size_t j = 0; j < shown.steps.size(); j += 7) {
            QCOMPARE(shown.at(i, j), r.at(i, j) - b.at(bi, j));
            ++checked;
        }
    }
    QVERIFY(checked > 50);
    QVERIFY(flagged(diff, plan.plantedLayerName));
    // On a diverging ramp centred on 0.
    const auto colourRange = [](HeatmapView *h) {
        for (int i = 0; i < h->plot()->plottableCount(); ++i) {
            if (auto *map = qobject_cast<QCPColorMap *>(h->plot()->plottable(i)))
                return map->dataRange();
        }
        return QCPRange(NAN, NAN);
    };
    QVERIFY(diff->diverging());
    QCOMPARE(colourRange(diff).lower, -colourRange(diff).upper);
    QVERIFY(colourRange(diff).upper > 0);
    // The planted activation drifts small in the FP8 run only: at the end its dynamic range is wider than the
    // baseline's by more than any other layer's.
    const qsizetype planted = shown.layers.indexOf(plan.plantedLayerName);
    QVERIFY(planted >= 0);
    const size_t last = shown.steps.size() - 1;
    for (qsizetype i = 0; i < shown.layers.size(); ++i)
        QVERIFY2(i == planted || shown.at(i, last) < shown.at(planted, last), qPrintable(shown.layers.at(i)));
    // ... or run / baseline.
    view->setLayerMode(CompareView::LayerMode::Ratio);
    QTRY_VERIFY_WITH_TIMEOUT(!diff->isLoading() && diff->heatmap().values.size() == shown.values.size()
            && diff->heatmap().at(0, 0) == r.at(0, 0) / b.at(b.layers.indexOf(r.layers.at(0)), 0),
        60000);
    QCOMPARE(colourRange(diff).lower + colourRange(diff).upper, 2.0); // centred on 1
    const auto *picker = diff->findChild<QComboBox *>(QStringLiteral("heatmapRun"));
    QVERIFY(picker && picker->currentText().contains(QStringLiteral(" / ")));
    // A statistic picked in one layer view is shown in the others.
    view->setLayerMode(CompareView::LayerMode::SideBySide);
    auto *stat = run->findChild<QComboBox *>(QStringLiteral("heatmapStatistic"));
    QVERIFY(stat);
    const int std = stat->findText(QStringLiteral("std"));
    QVERIFY(std >= 0);
    stat->setCurrentIndex(std);
    Q_EMIT stat->activated(std);
    QCOMPARE(base->statistic(), QStringLiteral("std"));
    QCOMPARE(diff->statistic(), QStringLiteral("std"));
    // The baseline's dumps sit at the FP8 run's dump steps, so the same recipe can be recomputed on both.
    std::set<int64_t> baseSteps, runSteps;
    for (const Dump &x : catalog.dumps(d->baseline))
        baseSteps.insert(x.record.step);
    for (const Dump &x : catalog.dumps(d->run))
        runSteps.insert(x.record.step);
    QVERIFY(!runSteps.empty());
    QCOMPARE(baseSteps, runSteps);
    // Recomputed under one recipe from both runs' dumps, the BF16 baseline has underflows% too: the combined
    // map compares the two recomputations, not the FP8 run's logged values with the baseline's recomputed.
    Workspace *ws = window.workspace();
    QString recipeError;
    const Recipe current = *Recipe::parse(QStringLiteral("current"), fp8math::Format::E4M3, &recipeError);
    int pending = 0, failed = 0, slot = 0;
    for (RunRef r : {d->baseline, d->run}) {
        for (const Dump &x : catalog.dumps(r)) {
            ++pending;
            ws->recompute(x, current, QStringLiteral("test-%1").arg(slot++), this,
                [&](const std::optional<TensorMetrics> &m, const QString &) {
                    --pending;
                    failed += m ? 0 : 1;
                });
        }
    }
    QTRY_VERIFY_WITH_TIMEOUT(pending == 0, 120000);
    QCOMPARE(failed, 0);
    view->setLayerMode(CompareView::LayerMode::Difference);
    QTRY_VERIFY_WITH_TIMEOUT(
        diff->findChild<QComboBox *>(QStringLiteral("heatmapStatistic"))->findText(QStringLiteral("underflows%")) >= 0,
        30000);
    diff->setTensor(QStringLiteral("activation"));
    diff->setStatistic(QStringLiteral("underflows%"));
    QTRY_VERIFY_WITH_TIMEOUT(!diff->isLoading() && diff->heatmap().source == QLatin1String("recomputed"), 30000);
    const Heatmap &both = diff->heatmap();
    QCOMPARE(both.recipe, QStringLiteral("current"));
    QCOMPARE(both.steps, std::vector<int64_t>(runSteps.begin(), runSteps.end()));
    const MatrixRequest recomputed {QStringLiteral("underflows%"), QStringLiteral("activation"),
        QStringLiteral("recomputed"), QStringLiteral("current")};
    const Heatmap rb = catalog.matrix(d->baseline, recomputed), rr = catalog.matrix(d->run, recomputed);
    QCOMPARE(both.layers, rr.layers);
    for (qsizetype i = 0; i < both.layers.size(); ++i) {
        for (size_t j = 0; j < both.steps.size(); ++j)
            QCOMPARE(both.at(i, j), rr.at(i, j) - rb.at(rb.layers.indexOf(both.layers.at(i)), j));
    }
}

void TestCompare::auditOfTheInferenceExport()
{
    // The gap's run folder holds an inference export: the comparison audits it, the downstream gap's next steps
    // start with what to re-export, the Evals tab lists its layers, and a click on one selects it.
    const ComparisonData *d = compare(m_gap.baseline, m_gap.run);
    QVERIFY(d);
    QCOMPARE(analysis::verdictName(d->comparison.verdict), QStringLiteral("downstream-gap"));
    QVERIFY(d->comparison.audit);
    QVERIFY(!d->comparison.nextSteps.empty());
    QCOMPARE(d->comparison.nextSteps.front().kind, analysis::FindingKind::CheckpointAudit);
    QVERIFY2(d->comparison.nextSteps.front().action.contains(QLatin1String("model.layers.1.self_attn.o_proj")),
        qPrintable(d->comparison.nextSteps.front().action));
    CompareView *view = m_window->compare();
    view->tabs()->setCurrentIndex(CompareView::kEvalsTab);
    QTableView *table = view->auditTable();
    QAbstractItemModel *model = table->model();
    QCOMPARE(model->rowCount(), 4 * 6); // q, k, v, o, up, down a layer; lm_head stays BF16
    int faulty = -1;
    for (int r = 0; r < model->rowCount(); ++r) {
        if (model->index(r, model->columnCount() - 1).data().toString() != QLatin1String("ok")) {
            QCOMPARE(faulty, -1);
            faulty = r;
        }
    }
    QCOMPARE(faulty, 0); // the layers with a finding come first
    QCOMPARE(model->index(faulty, 0).data().toString(), QStringLiteral("model.layers.1.self_attn.o_proj"));
    QCOMPARE(model->index(faulty, model->columnCount() - 1).data().toString(), QStringLiteral("inverted-scale"));
    QTRY_VERIFY(table->isVisible());
    table->scrollTo(model->index(faulty, 0));
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(model->index(faulty, 0)).center());
    QCOMPARE(m_window->selection()->layer(), QStringLiteral("decoder.layers.1.self_attention.linear_proj"));

    // The plot beside the table: every quantized layer a point, against the reference found beside the export.
    AuditChart *chart = view->auditChart();
    QCOMPARE(int(chart->layers().size()), 4 * 6);
    QVERIFY(!d->comparison.audit->references.isEmpty());
    chart->setMeasure(AuditChart::Measure::WeightError);
    std::vector<AuditChart::Series> series = chart->series();
    QCOMPARE(int(series.size()), 3);
    int faultyAt = -1;
    for (size_t i = 0; i < chart->layers().size(); ++i) {
        const double error = series[0].values[i], fresh = series[1].values[i];
        QVERIFY2(std::isfinite(error) && std::isfinite(fresh), qPrintable(chart->layers()[i].name));
        if (chart->layers()[i].name == QLatin1String("model.layers.1.self_attn.o_proj")) {
            faultyAt = int(i);
            QVERIFY2(error > 10 * series[2].values[i], qPrintable(QString::number(error)));
        } else {
            QVERIFY2(error < series[2].values[i], qPrintable(chart->layers()[i].name));
        }
    }
    QVERIFY(faultyAt >= 0);
    // The scale ratio: 1 for the sound scales, about the scale squared for the inverted one.
    chart->setMeasure(AuditChart::Measure::ScaleRatio);
    series = chart->series();
    for (size_t i = 0; i < chart->layers().size(); ++i) {
        const double ratio = series[0].values[i];
        if (int(i) == faultyAt)
            QVERIFY2(ratio > 1e4, qPrintable(QString::number(ratio)));
        else
            QVERIFY2(ratio > 0.9 && ratio < 1.1, qPrintable(QString::number(ratio)));
    }
    const QStringList csv = chart->csv().trimmed().split(QLatin1Char('\n'));
    QCOMPARE(csv.size(), 1 + 4 * 6);
    QVERIFY(csv[1 + faultyAt].startsWith(
        QLatin1String("model.layers.1.self_attn.o_proj,decoder.layers.1.self_attention.linear_proj,")));
    QVERIFY(csv[1 + faultyAt].endsWith(QLatin1String(",\"inverted-scale\"")));
    // A click on another layer's column selects it: the table's row and the shared selection follow.
    QTRY_VERIFY(chart->isVisible());
    int other = faultyAt == 0 ? 1 : 0;
    QCustomPlot *plot = chart->plot();
    plot->replot();
    const QPoint at(int(plot->xAxis->coordToPixel(other)), plot->axisRect()->rect().center().y());
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    const QString otherName = chart->layers()[size_t(other)].name;
    QCOMPARE(model->index(table->currentIndex().row(), 0).data().toString(), otherName);
    QCOMPARE(m_window->selection()->layer(), chart->layers()[size_t(other)].training->module);
}

FP8SCOPE_TEST_GUI_MAIN(TestCompare)
// A chart with nothing to plot says why in place of its axes (no log ticks over no points), its message wrapped
// to the chart's width: narrow as the Evals tab makes it at 1366 x 768, a line never runs past it.
void TestCompare::auditChartSaysWhyItIsEmpty()
{
    AuditChart chart;
    chart.resize(280, 260);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.setAudit(std::nullopt);
    const auto said = [&] { return chart.message().split(QLatin1Char('\n')).join(QLatin1Char(' ')).simplified(); };
    QCOMPARE(said(), QStringLiteral("No inference checkpoint in the run's folder"));
    QVERIFY(!chart.plot()->xAxis->visible() && !chart.plot()->yAxis->visible());
    // A checkpoint without reference weights: the long reason, in lines that fit.
    AuditResult audit;
    audit.checkpoint = QStringLiteral("/runs/fp8/inference");
    AuditLayer layer;
    layer.name = QStringLiteral("model.layers.0.mlp.down_proj");
    layer.quantized = true;
    layer.amax = 0.5;
    audit.layers.push_back(layer);
    chart.setAudit(audit);
    chart.setMeasure(AuditChart::Measure::WeightError);
    const QStringList lines = chart.message().split(QLatin1Char('\n'));
    QVERIFY2(lines.size() >= 3, qPrintable(chart.message()));
    QCOMPARE(said(),
        QStringLiteral("Nothing to compare with: no reference weights (an unquantized model folder beside the export, "
                       "or inference_reference in fp8scope.json)"));
    // Centred on the axes, which take the plot's width (an empty legend held them to their 50-pixel minimum,
    // the message running off the chart's left edge).
    const auto axesWide = [&] {
        chart.plot()->replot();
        return chart.plot()->axisRect()->outerRect().width() >= chart.plot()->width() * 9 / 10;
    };
    QVERIFY2(axesWide(), qPrintable(QString::number(chart.plot()->axisRect()->outerRect().width())));
    const QFontMetricsF metrics(chart.plot()->font(), chart.plot());
    for (const QString &line : lines)
        QVERIFY2(metrics.horizontalAdvance(line) <= chart.plot()->width(), qPrintable(line));
    // Wider, the same text in fewer lines.
    chart.resize(900, 260);
    QTRY_VERIFY(chart.message().count(QLatin1Char('\n')) < lines.size() - 1);
    // Points to plot: the axes again, no message.
    chart.setMeasure(AuditChart::Measure::WeightAmax);
    QCOMPARE(chart.message(), QString());
    QVERIFY(chart.plot()->xAxis->visible() && chart.plot()->yAxis->visible());
    QVERIFY(chart.plot()->legend->visible() && axesWide());
}

#include "tst_compare.moc"
