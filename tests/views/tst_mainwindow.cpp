// Drives the real window (offscreen) on a generated BF16/FP8 run pair: open, the layer tree, a heatmap
// click reaching the histogram and the statistics table, the smoothing slider, a recompute under another
// recipe, a corrupt log in the problems panel, export, drag and drop, settings and the demo.
#include "app/gui/appsettings.h"
#include "app/gui/mainwindow.h"
#include "core/demo/demogenerator.h"
#include "core/store/runstore.h"
#include "guitest.h"
#include "testmain.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/histogram/histogramview.h"
#include "views/models/layertreemodel.h"
#include "views/models/problemsmodel.h"
#include "views/models/runlistmodel.h"
#include "views/models/statstablemodel.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QAbstractItemModelTester>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProcess>
#include <QProgressBar>
#include <QSignalSpy>
#include <QSlider>
#include <QSortFilterProxyModel>
#include <QStackedWidget>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QTreeView>

#include <cmath>
#include <memory>

using namespace fp8scope;

namespace {

bool copyTree(const QString &from, const QString &to)
{
    QDir().mkpath(to);
    for (const QFileInfo &fi : QDir(from).entryInfoList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden)) {
        if (fi.fileName() == QLatin1String(".fp8scope"))
            continue;
        const QString target = to + QLatin1Char('/') + fi.fileName();
        if (fi.isDir() ? !copyTree(fi.filePath(), target) : !QFile::copy(fi.filePath(), target))
            return false;
    }
    return true;
}

bool appendTo(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    return f.open(QIODevice::Append) && f.write(bytes) == bytes.size();
}

// Rows of the statistics table as (stat, step, source, recipe) strings.
QStringList tableRows(QTableView *table)
{
    QStringList rows;
    auto *m = table->model();
    for (int r = 0; r < m->rowCount(); ++r) {
        rows << m->index(r, StatsTableModel::StatColumn).data().toString() + QLatin1Char('|')
                + m->index(r, StatsTableModel::StepColumn).data().toString() + QLatin1Char('|')
                + m->index(r, StatsTableModel::SourceColumn).data().toString() + QLatin1Char('|')
                + m->index(r, StatsTableModel::RecipeColumn).data().toString();
    }
    return rows;
}

} // namespace

class TestMainWindow : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void opensFolderWithRunsTreeAndBackend();
    void layerTreeSelectsLayerAndFilters();
    void heatmapClickDrivesHistogramAndTable();
    void heatmapColoursAndScreenResolution();
    void smoothingSliderFollowsFormula();
    void zoomRefetchesVisibleRange();
    void curveClickSetsStepAndSamplesAxis();
    void hidingARunRemovesItsCurve();
    void recomputeWithAnotherRecipe();
    void exportsPlotsAndCsv();
    void corruptLogShowsInProblemsPanel();
    void problemsPanelSaysWhyItIsEmpty();
    void dropOpensFolder();
    void longSeriesDrawsBucketsUntilZoomedIn();
    void cancelStopsLoadingAndKeepsWhatWasRead();
    void settingsPersist();
    void demoOpensWithSyntheticTitle();
    void fp8CheckpointFolder();
    void heatmapPicksARunWithLayerStatistics();
    void longRunNamesKeepPrecisionInView();
    void histogramRecipeFollowsTheRun();
    void singlePointsAndCheckpointColumns();
    void recomputeFinishingAfterClose();
    void heatmapCellsSitAtTheirRealSteps();
    void guiAndCliChooseTheSameSeries();
    void heatmapViewDrawsAHandedSource();
    void twoHeatmapsDoNotCancelEachOther();
    void rebuildStoreReadsTheFolderAgain();
    void storeErrorsMetWhileDrawingReachTheProblemsPanel();
    void cleanupTestCase();

private:
    void openAndWait(const QStringList &folders);

    QTemporaryDir m_tmp;
    QString m_pair;
    DemoPlan m_plan;
    std::unique_ptr<MainWindow> m_window;
    std::vector<std::unique_ptr<QAbstractItemModelTester>> m_testers;
};

void TestMainWindow::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    m_pair = m_tmp.filePath(QStringLiteral("pair"));
    QString error;
    QVERIFY2(guitest::generatePair(m_pair, 3, 4, 1200, &m_plan, &error), qPrintable(error));
    m_window = std::make_unique<MainWindow>(BackendChoice::Cpu, nullptr);
    m_window->resize(1400, 900);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
}

void TestMainWindow::openAndWait(const QStringList &folders)
{
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    m_window->openFolders(folders);
    QVERIFY(ready.wait(60000));
}

void TestMainWindow::opensFolderWithRunsTreeAndBackend()
{
    openAndWait({m_pair});
    Workspace *ws = m_window->workspace();
    QCOMPARE(ws->runCount(), 2);
    QCOMPARE(m_window->runTable()->model()->rowCount(), 2);
    const RunRef fp8 = ws->findRun(QStringLiteral("fp8"));
    QVERIFY(fp8.isValid());
    QCOMPARE(ws->run(fp8)->run.precision, QStringLiteral("fp8"));
    QCOMPARE(ws->baselineOf(fp8), ws->findRun(QStringLiteral("bf16")));
    QVERIFY(ws->runs()[0].colour != ws->runs()[1].colour);
    QVERIFY(m_window->windowTitle().contains(QStringLiteral("pair")));
    // Every model passes Qt's model checks, also through the changes the later tests make.
    for (QAbstractItemModel *m : {m_window->runTable()->model(), m_window->layerTree()->model(),
             m_window->statsTable()->model(), m_window->problemsTable()->model()})
        m_testers.push_back(
            std::make_unique<QAbstractItemModelTester>(m, QAbstractItemModelTester::FailureReportingMode::QtTest));
    // The tree: decoder > layers > 0..3 in depth order, each layer's gemms with their tensors.
    auto *tree = m_window->layerTree();
    const QModelIndex decoder = tree->model()->index(0, 0);
    QCOMPARE(decoder.data().toString(), QStringLiteral("decoder"));
    const QModelIndex layers = tree->model()->index(0, 0, decoder);
    QCOMPARE(tree->model()->rowCount(layers), 4);
    for (int i = 0; i < 4; ++i)
        QCOMPARE(tree->model()->index(i, 0, layers).data().toString(), QString::number(i));
    // The curve view shows lm loss for both runs; the backend says where recomputation runs.
    QCOMPARE(m_window->curves()->statistic(), QStringLiteral("lm loss"));
    QCOMPARE(m_window->curves()->curves().size(), size_t(2));
    QTRY_VERIFY(m_window->backendStatus().contains(QStringLiteral("CPU")));
    // Nothing selected yet: the histogram says how to get one. A layer without dumps is named; so is the
    // next one (the message once stayed on the first layer, and was empty before any selection).
    HistogramView *hist = m_window->histogram();
    QVERIFY2(hist->statusText().startsWith(QStringLiteral("Select a layer")), qPrintable(hist->statusText()));
    Selection *sel = m_window->selection();
    QVERIFY(sel->layer().isEmpty());
    const RunRef run0 = sel->run();
    const qint64 step0 = sel->step();
    const RunRef fp8Run = ws->findRun(QStringLiteral("fp8"));
    for (const QString &layer : {QStringLiteral("decoder.layers.0.self_attention.linear_qkv"),
             QStringLiteral("decoder.layers.1.self_attention.linear_proj")}) {
        sel->set(fp8Run, layer, QStringLiteral("activation"), 100);
        QVERIFY(!hist->dump());
        QCOMPARE(hist->statusText(), QStringLiteral("No tensor dump of %1 activation in this run.").arg(layer));
    }
    sel->set(run0, QString(), QString(), step0); // back to the state after opening
    QCOMPARE(hist->statusText().left(14), QStringLiteral("Select a layer"));
}

void TestMainWindow::layerTreeSelectsLayerAndFilters()
{
    auto *tree = m_window->layerTree();
    auto *proxy = qobject_cast<QSortFilterProxyModel *>(tree->model());
    auto *model = qobject_cast<LayerTreeModel *>(proxy->sourceModel());
    const QModelIndex target = proxy->mapFromSource(model->find(m_plan.plantedLayerName, QStringLiteral("weight")));
    QVERIFY(target.isValid());
    for (QModelIndex p = target.parent(); p.isValid(); p = p.parent())
        tree->expand(p); // as the user opens the branches
    tree->scrollTo(target);
    QTest::mouseClick(tree->viewport(), Qt::LeftButton, {}, tree->visualRect(target).center());
    QCOMPARE(m_window->selection()->layer(), m_plan.plantedLayerName);
    QCOMPARE(m_window->selection()->tensor(), QStringLiteral("weight"));

    // The filter keeps matching layers and their ancestors only.
    auto *filter = m_window->findChild<QLineEdit *>(QStringLiteral("layerFilter"));
    QVERIFY(filter);
    QTest::keyClicks(filter, QStringLiteral("layers.1.mlp"));
    const QModelIndex decoder = proxy->index(0, 0);
    const QModelIndex layers = proxy->index(0, 0, decoder);
    QCOMPARE(proxy->rowCount(layers), 1);
    QCOMPARE(proxy->index(0, 0, layers).data().toString(), QStringLiteral("1"));
    filter->clear();
    QCOMPARE(proxy->rowCount(proxy->index(0, 0, proxy->index(0, 0))), 4);
}

void TestMainWindow::heatmapClickDrivesHistogramAndTable()
{
    HeatmapView *heat = m_window->heatmap();
    Workspace *ws = m_window->workspace();
    QCOMPARE(heat->run(), ws->findRun(QStringLiteral("fp8")));
    heat->setTensor(QStringLiteral("activation"));
    heat->setStatistic(QStringLiteral("underflows%"));
    QTRY_VERIFY(!heat->isLoading()); // the matrix is read off the GUI thread
    const Heatmap &h = heat->heatmap();
    QCOMPARE(h.layers.size(), 16); // 4 layers x 4 GEMMs, depth order
    QVERIFY(h.layers.front().startsWith(QStringLiteral("decoder.layers.0.")));
    QVERIFY(h.layers.back().startsWith(QStringLiteral("decoder.layers.3.")));
    const int row = int(h.layers.indexOf(m_plan.plantedLayerName));
    QVERIFY(row >= 0);
    // The column nearest the last dump step.
    const int64_t dumpStep = m_plan.dumpSteps.last().toLongLong();
    int col = 0;
    for (size_t i = 0; i < h.steps.size(); ++i) {
        if (std::abs(h.steps[i] - dumpStep) < std::abs(h.steps[size_t(col)] - dumpStep))
            col = int(i);
    }
    const QPointF centre = heat->cellCentre(row, col);
    QVERIFY(heat->toolTipAt(centre).contains(m_plan.plantedLayerName));
    QTest::mouseClick(heat->plot(), Qt::LeftButton, {}, centre.toPoint());
    Selection *sel = m_window->selection();
    QCOMPARE(sel->layer(), m_plan.plantedLayerName);
    QCOMPARE(sel->tensor(), QStringLiteral("activation"));
    QCOMPARE(sel->step(), h.steps[size_t(col)]);
    QCOMPARE(sel->run(), heat->run());
    // The clicked layer is named on the heatmap's axis, marked, whether or not its row had a name before.
    const auto ticker = heat->plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticker);
    QVERIFY(ticker->ticks().contains(row));
    QVERIFY2(ticker->ticks().value(row).startsWith(QStringLiteral("\u25B6 ")), qPrintable(ticker->ticks().value(row)));
    QVERIFY(m_plan.plantedLayerName.endsWith(ticker->ticks().value(row).mid(2)));
    int marked = 0;
    for (const QString &label : ticker->ticks())
        marked += label.startsWith(QStringLiteral("\u25B6 "));
    QCOMPARE(marked, 1);
    // The step is marked by the dashed cursor, which follows a step picked elsewhere.
    QVERIFY(heat->stepCursor()->visible());
    QCOMPARE(heat->stepCursor()->point1->coords().x(), double(sel->step()));
    // Light on the colour ramp, dark on the threshold view's grey.
    QVERIFY(heat->stepCursor()->pen().color().lightness() > 200);
    heat->setThreshold(true, 2.0);
    QVERIFY(heat->stepCursor()->pen().color().lightness() < 100);
    heat->setThreshold(false, 2.0);
    // The histogram shows the nearest dump of that layer and tensor, once computed.
    HistogramView *hist = m_window->histogram();
    QVERIFY(hist->dump().has_value());
    QCOMPARE(hist->dump()->record.layer, m_plan.plantedLayerName);
    QCOMPARE(hist->dump()->record.tensor, QStringLiteral("activation"));
    QCOMPARE(hist->dump()->record.step, dumpStep);
    QTRY_VERIFY_WITH_TIMEOUT(hist->metrics().has_value(), 30000);
    QVERIFY(hist->metrics()->numel == 64 * 256);
    QVERIFY(hist->statusText().contains(m_plan.plantedLayerName));
    QVERIFY2(!hist->statusText().contains(QLatin1String("far from the selected step")), qPrintable(hist->statusText()));
    {
        // A step far past every dump: the nearest dump is shown, and said to be far from the step selected.
        const int64_t selected = sel->step();
        sel->setStep(selected * 10 + 100000);
        QTRY_VERIFY2_WITH_TIMEOUT(
            hist->metrics().has_value() && hist->statusText().contains(QLatin1String("far from the selected step")),
            qPrintable(hist->statusText()), 30000);
        sel->setStep(selected);
        QTRY_VERIFY_WITH_TIMEOUT(hist->dump() && hist->dump()->record.step == dumpStep && hist->metrics().has_value()
                && !hist->statusText().contains(QLatin1String("far from the selected step")),
            30000);
    }
    const auto *bars = qobject_cast<QCPBars *>(hist->plot()->plottable(0));
    QVERIFY(bars && bars->data()->size() > 0);
    // The table lists the layer's logged statistics at the clicked step, and the run's loss.
    const QStringList rows = tableRows(m_window->statsTable());
    const QString step = QString::number(h.steps[size_t(col)]);
    QVERIFY2(rows.contains(QStringLiteral("underflows%|") + step + QStringLiteral("|te-debug rank 0|")),
        qPrintable(rows.join(QLatin1Char('\n'))));
    bool loss = false;
    for (const QString &r : rows)
        loss = loss || r.startsWith(QStringLiteral("lm loss|"));
    QVERIFY(loss);
    // The curve view's cursor follows the step.
    QVERIFY(m_window->curves()->toolTipAt(double(sel->step())).contains(QStringLiteral("step")));
    // So does the heatmap's, for a step picked elsewhere.
    sel->setStep(h.steps[size_t(col / 2)]);
    QCOMPARE(heat->stepCursor()->point2->coords().x(), double(h.steps[size_t(col / 2)]));
    sel->setStep(h.steps[size_t(col)]);
    QTRY_VERIFY_WITH_TIMEOUT(hist->metrics().has_value(), 30000);
}

void TestMainWindow::heatmapColoursAndScreenResolution()
{
    HeatmapView *heat = m_window->heatmap();
    const Heatmap saved = heat->heatmap();
    auto *map = qobject_cast<QCPColorMap *>(heat->plot()->plottable(0));
    QVERIFY(map);
    // More steps than pixels: each drawn column holds the largest value of its steps, so one hot cell
    // among 20,000 still shows; the colour range spans the full matrix.
    Heatmap h;
    h.layers << QStringLiteral("a") << QStringLiteral("b");
    for (int s = 0; s < 20000; ++s)
        h.steps.push_back(s);
    h.values.assign(2 * 20000, 1.0);
    h.values[20000 + 12345] = 50.0;
    h.values[7] = -3.0;
    heat->setHeatmap(h);
    QVERIFY(map->data()->keySize() < 20000);
    QVERIFY(map->data()->keySize() <= heat->plot()->axisRect()->width());
    double rowMax = -1;
    for (int c = 0; c < map->data()->keySize(); ++c)
        rowMax = std::max(rowMax, map->data()->cell(c, 1));
    QCOMPARE(rowMax, 50.0);
    QCOMPARE(map->dataRange().lower, -3.0);
    QCOMPARE(map->dataRange().upper, 50.0);
    // Tooltips and clicks still read the exact cell.
    QVERIFY(heat->toolTipAt(heat->cellCentre(1, 12345)).contains(QStringLiteral("step 12345")));
    // Threshold colouring: below the threshold grey, above it red.
    heat->setThreshold(true, 10.0);
    QCPColorGradient g = map->gradient(); // color() is not const (it caches its lookup table)
    const QColor below = QColor::fromRgb(g.color(5.0, map->dataRange()));
    const QColor above = QColor::fromRgb(g.color(20.0, map->dataRange()));
    QVERIFY(std::abs(below.red() - below.green()) < 10 && std::abs(below.green() - below.blue()) < 10);
    QVERIFY(above.red() > 150 && above.green() < 160 && above.blue() < 140);
    heat->setThreshold(false, 10.0);
    heat->setLogColour(true);
    QCOMPARE(map->dataScaleType(), QCPAxis::stLogarithmic);
    QVERIFY(map->dataRange().lower > 0); // only positive values set a log range
    heat->setLogColour(false);

    // Too many layers to name them all: the row holding the largest value is named anyway, and so is the
    // selected layer (marked); an even matrix has no such row.
    Heatmap tall;
    for (int y = 0; y < 60; ++y)
        tall.layers << QStringLiteral("decoder.layers.%1.mlp").arg(y);
    tall.steps = {10, 20, 30};
    tall.values.assign(60 * 3, 0.0);
    tall.values[37 * 3 + 1] = 5.0;
    tall.values[3 * 3 + 2] = std::nan("");
    const auto ticks = [heat] {
        const auto ticker = heat->plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>();
        return ticker ? ticker->ticks() : QMap<double, QString>();
    };
    heat->setHeatmap(tall);
    QVERIFY2(ticks().size() < 30, qPrintable(QString::number(ticks().size()))); // not every row has a name
    QCOMPARE(ticks().value(37), QStringLiteral("37.mlp"));
    QVERIFY(!ticks().contains(36) && !ticks().contains(38));
    Selection *sel = m_window->selection();
    const QString selectedBefore = sel->layer();
    sel->setLayer(tall.layers[12]);
    QCOMPARE(ticks().value(37), QStringLiteral("37.mlp"));
    QCOMPARE(ticks().value(12), QStringLiteral("\u25B6 12.mlp"));
    sel->setLayer(tall.layers[37]);
    QCOMPARE(ticks().value(37), QStringLiteral("\u25B6 37.mlp"));
    tall.values[37 * 3 + 1] = 0.0;
    heat->setHeatmap(tall);
    sel->setLayer(selectedBefore);
    QVERIFY(!ticks().contains(37));
    heat->setHeatmap(saved);
}

void TestMainWindow::smoothingSliderFollowsFormula()
{
    CurveView *curves = m_window->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    auto *kind = curves->findChild<QComboBox *>(QStringLiteral("curveSmoothing"));
    auto *slider = curves->findChild<QSlider *>(QStringLiteral("curveSmoothingStrength"));
    QVERIFY(kind && slider);
    kind->setCurrentIndex(kind->findData(int(Smoothing::Ema)));
    auto plotted = [&]() {
        QVector<double> out;
        const auto &c = curves->curves().front();
        for (auto it = c.smoothed->data()->constBegin(); it != c.smoothed->data()->constEnd(); ++it)
            out << it->value;
        return out;
    };
    slider->setValue(20);
    const QVector<double> before = plotted();
    QTest::keyClick(slider, Qt::Key_PageUp); // the user moves the slider by a page
    const double w = slider->value() / 100.0;
    QVERIFY(slider->value() > 20);
    const QVector<double> after = plotted();
    const auto &c = curves->curves().front();
    QCOMPARE(after.size(), qsizetype(c.values.size()));
    QVERIFY(!c.bucketed);
    // Debiased EMA, written out: a_i = w a_{i-1} + (1-w) x_i, shown a_i / (1 - w^(i+1)).
    double a = 0, wk = 1;
    bool changed = false;
    for (qsizetype i = 0; i < after.size(); ++i) {
        a = w * a + (1 - w) * c.values[size_t(i)];
        wk *= w;
        QVERIFY2(std::abs(after[i] - a / (1 - wk)) <= 1e-12 * std::abs(after[i]), qPrintable(QString::number(i)));
        changed = changed || after[i] != before[i];
    }
    QVERIFY(changed);
    // The raw series stays drawn, faint, behind.
    QVERIFY(c.raw && c.raw->data()->size() == after.size());
    QVERIFY(c.raw->pen().color().alpha() < 255);
}

void TestMainWindow::zoomRefetchesVisibleRange()
{
    CurveView *curves = m_window->curves();
    QCustomPlot *plot = curves->plot();
    plot->xAxis->setRange(200, 400);
    curves->refetchNow();
    for (const auto &c : curves->curves()) {
        QVERIFY(!c.steps.empty());
        QVERIFY(c.steps.front() >= 200 - 0.05 * 200 - 2 && c.steps.back() <= 400 + 0.05 * 200 + 2);
    }
    auto *logY = curves->findChild<QCheckBox *>(QStringLiteral("curveLogY"));
    logY->setChecked(true);
    QCOMPARE(plot->yAxis->scaleType(), QCPAxis::stLogarithmic);
    logY->setChecked(false);
    curves->resetZoom();
    for (const auto &c : curves->curves()) {
        QVERIFY(c.steps.back() >= 790); // the whole run again
        QVERIFY(plot->xAxis->range().contains(c.steps.front()) && plot->xAxis->range().contains(c.steps.back()));
    }
}

void TestMainWindow::curveClickSetsStepAndSamplesAxis()
{
    CurveView *curves = m_window->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    curves->resetZoom();
    QCustomPlot *plot = curves->plot();
    const auto &c = curves->curves().front();
    const double target = c.steps[c.steps.size() / 3];
    const QPoint at(int(std::lround(plot->xAxis->coordToPixel(target))), plot->axisRect()->center().y());
    const RunRef run = m_window->selection()->run();
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    // The nearest logged step to the click (within a pixel of the target).
    QVERIFY(std::abs(double(m_window->selection()->step()) - target)
        <= std::abs(plot->xAxis->pixelToCoord(at.x() + 1) - plot->xAxis->pixelToCoord(at.x())) + 1);
    QCOMPARE(m_window->selection()->run(), run);
    // x by consumed samples: each point sits at the run's consumed samples of its step.
    curves->setXBySamples(true);
    const auto &d = curves->curves().front();
    const Catalog &catalog = m_window->workspace()->catalog();
    const auto samples = catalog.chooseSeries(d.run, {.stat = QStringLiteral("consumed samples")});
    QVERIFY(samples);
    const auto raw = d.raw ? d.raw : d.low;
    for (size_t i : {size_t(0), d.steps.size() / 2, d.steps.size() - 1}) {
        const auto p = catalog.valueAt(*samples, int64_t(std::lround(d.steps[i])));
        QVERIFY(p && p->step == int64_t(d.steps[i])); // logged at the same steps
        QCOMPARE((raw->data()->constBegin() + qsizetype(i))->key, p->value);
    }
    QVERIFY(plot->xAxis->label().contains(QStringLiteral("samples")));
    curves->setXBySamples(false);
}

void TestMainWindow::hidingARunRemovesItsCurve()
{
    auto *model = m_window->runTable()->model();
    const int bf16 = m_window->workspace()->indexOf(m_window->workspace()->findRun(QStringLiteral("bf16")));
    QVERIFY(model->setData(model->index(bf16, 0), Qt::Unchecked, Qt::CheckStateRole));
    QCOMPARE(m_window->curves()->curves().size(), size_t(1));
    QCOMPARE(m_window->curves()->curves().front().run, m_window->workspace()->findRun(QStringLiteral("fp8")));
    QVERIFY(model->setData(model->index(bf16, 0), Qt::Checked, Qt::CheckStateRole));
    QCOMPARE(m_window->curves()->curves().size(), size_t(2));
}

void TestMainWindow::recomputeWithAnotherRecipe()
{
    HistogramView *hist = m_window->histogram();
    QTRY_VERIFY(hist->metrics().has_value());
    const double before = hist->metrics()->mse;
    auto *recipe = hist->findChild<QComboBox *>(QStringLiteral("histogramRecipe"));
    QVERIFY(recipe);
    recipe->setCurrentIndex(recipe->findText(QStringLiteral("mxfp8")));
    QTRY_VERIFY_WITH_TIMEOUT(hist->metrics().has_value() && hist->metrics()->recipe == QLatin1String("mxfp8"), 30000);
    QVERIFY(hist->metrics()->blocks == 64 * 256 / 32);
    QVERIFY(hist->metrics()->mse != before);
    // Before/after scaling: the bars are the input's or the scaled values' binades.
    auto *bars = qobject_cast<QCPBars *>(hist->plot()->plottable(0));
    auto binsOf = [](const auto &hist) {
        int n = 0;
        for (auto v : hist)
            n += v != 0;
        return n;
    };
    hist->setAfterScaling(false);
    QCOMPARE(bars->data()->size(), binsOf(hist->metrics()->histIn));
    QCOMPARE(bars->data()->constBegin()->key,
        fp8math::histBinLog2(int(
            std::find_if(hist->metrics()->histIn.begin(), hist->metrics()->histIn.end(), [](auto v) { return v != 0; })
            - hist->metrics()->histIn.begin()))
            + 0.5);
    hist->setAfterScaling(true);
    QCOMPARE(bars->data()->size(), binsOf(hist->metrics()->histScaled));
    // The new statistics arrive in the table, as recomputed under mxfp8 at the dump's step.
    const QString step = QString::number(hist->dump()->record.step);
    QTRY_VERIFY(tableRows(m_window->statsTable())
                    .contains(QStringLiteral("mse|") + step + QStringLiteral("|recomputed|mxfp8")));
    // Another format of the same recipe is a separate result.
    auto *format = hist->findChild<QComboBox *>(QStringLiteral("histogramFormat"));
    format->setCurrentIndex(format->findData(QStringLiteral("e5m2")));
    QTRY_VERIFY_WITH_TIMEOUT(hist->metrics().has_value() && hist->metrics()->format == Format::E5M2, 30000);
    QTRY_VERIFY(tableRows(m_window->statsTable())
                    .contains(QStringLiteral("mse|") + step + QStringLiteral("|recomputed|mxfp8 e5m2")));
    // Delayed scaling takes the dump's amax history, and the status line says which amax made the scale.
    recipe->setCurrentIndex(recipe->findText(QStringLiteral("delayed")));
    QTRY_VERIFY_WITH_TIMEOUT(hist->metrics().has_value() && hist->metrics()->recipe == QLatin1String("delayed"), 30000);
    QVERIFY2(hist->metrics()->delayedScaleSource.startsWith(QLatin1String("amax ")),
        qPrintable(hist->metrics()->delayedScaleSource));
    QVERIFY2(hist->statusText().contains(
                 QStringLiteral("Delayed scale %1 from amax ").arg(hist->metrics()->scale, 0, 'g', 6)),
        qPrintable(hist->statusText()));
}

void TestMainWindow::exportsPlotsAndCsv()
{
    const QString dir = m_tmp.filePath(QStringLiteral("export"));
    QDir().mkpath(dir);
    QString error;
    const std::pair<QString, QByteArray> kinds[] = {{QStringLiteral("png"), QByteArray("\x89PNG")},
        {QStringLiteral("pdf"), QByteArray("%PDF")}, {QStringLiteral("svg"), QByteArray("<?xml")}};
    for (PlotView *view :
        std::initializer_list<PlotView *> {m_window->curves(), m_window->heatmap(), m_window->histogram()}) {
        for (const auto &[suffix, magic] : kinds) {
            const QString path = dir + QLatin1Char('/') + view->objectName() + QLatin1Char('.') + suffix;
            QVERIFY2(view->exportPlot(path, &error), qPrintable(error));
            QFile f(path);
            QVERIFY(f.open(QIODevice::ReadOnly));
            QVERIFY2(f.read(magic.size()) == magic, qPrintable(path));
        }
    }
    QVERIFY(!m_window->curves()->exportPlot(dir + QStringLiteral("/x.bmp"), &error));
    QVERIFY(error.contains(QStringLiteral(".png")));
    // The curves' CSV: a header and one line per plotted point of every run.
    const QString csvPath = dir + QStringLiteral("/curves.csv");
    QVERIFY2(m_window->curves()->exportCsv(csvPath, &error), qPrintable(error));
    QFile f(csvPath);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
    size_t points = 0;
    for (const auto &c : m_window->curves()->curves())
        points += c.steps.size();
    QCOMPARE(size_t(lines.size()), points + 1);
    // The header names the statistic and the x axis; the numbers read back as the values drawn, in their
    // shortest form.
    const QString stat = m_window->curves()->statistic();
    QCOMPARE(
        QString::fromUtf8(lines.front()), QStringLiteral("run,step,x: step,%1,%1 min,%1 max,%1 smoothed").arg(stat));
    const QList<QByteArray> first = lines.at(1).split(',');
    const auto &curve = m_window->curves()->curves().front();
    QCOMPARE(first.at(3).toDouble(), curve.values.front());
    QCOMPARE(first.at(3), QString::number(curve.values.front(), 'g', QLocale::FloatingPointShortest).toUtf8());
    for (const QByteArray &line : lines.mid(1, 50)) {
        for (const QByteArray &f : line.split(',').mid(2))
            QVERIFY2(f.size() <= 24, f.constData()); // no 10.537520000000001
    }
    // The heatmap's CSV: one line per layer.
    const QString heatCsv = m_window->heatmap()->csv();
    QCOMPARE(heatCsv.trimmed().split(QLatin1Char('\n')).size(), m_window->heatmap()->heatmap().layers.size() + 1);
}

void TestMainWindow::corruptLogShowsInProblemsPanel()
{
    const QString broken = m_tmp.filePath(QStringLiteral("broken"));
    QVERIFY(copyTree(m_pair, broken));
    const QString log = broken + QStringLiteral("/fp8/logs/train.out");
    QVERIFY(QFileInfo::exists(log));
    QVERIFY(appendTo(log, " iteration     1201/    1200 | lm loss: 1.0E+01x | grad norm: oops |\n"));
    openAndWait({broken});
    auto *problems = m_window->problemsTable()->model();
    QVERIFY(problems->rowCount() >= 1);
    int row = -1;
    for (int r = 0; r < problems->rowCount(); ++r) {
        if (problems->index(r, 0).data().toString() == QLatin1String("train.out"))
            row = r;
    }
    QVERIFY(row >= 0);
    QVERIFY(problems->index(row, 1).data().toString().startsWith(QStringLiteral("line ")));
    // The table shows (not the empty line), and the tab counts the problems.
    QCOMPARE(m_window->findChild<QStackedWidget *>(QStringLiteral("problemsPane"))->currentWidget(),
        static_cast<QWidget *>(m_window->problemsTable()));
    // The demo's README.md and planted.json are listed as skipped, counted apart.
    const int skipped = qobject_cast<ProblemsModel *>(problems)->skippedCount();
    QCOMPARE(skipped, 2);
    QCOMPARE(m_window->findChild<QDockWidget *>(QStringLiteral("problemsDock"))->windowTitle(),
        QStringLiteral("Problems (%1, %2 skipped)").arg(problems->rowCount() - skipped).arg(skipped));
    // The rest still shows.
    QCOMPARE(m_window->workspace()->runCount(), 2);
    QVERIFY(!m_window->heatmap()->heatmap().layers.isEmpty());
    QCOMPARE(m_window->curves()->curves().size(), size_t(2));
    // Double-clicking the problem shows the line.
    auto *table = m_window->problemsTable();
    m_window->findChild<QDockWidget *>(QStringLiteral("problemsDock"))->raise(); // the user opens the tab
    QTRY_VERIFY(table->isVisible());
    const QModelIndex index = problems->index(row, 2);
    table->scrollTo(index);
    QSignalSpy doubleClicked(table, &QAbstractItemView::doubleClicked);
    const QPoint at = table->visualRect(index).center();
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, at); // a double click's first press
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(doubleClicked.count(), 1);
    QDialog *dialog = nullptr;
    QTRY_VERIFY((dialog = m_window->findChild<QDialog *>(QStringLiteral("problemLineDialog"))) != nullptr);
    auto *text = dialog->findChild<QPlainTextEdit *>(QStringLiteral("problemLineText"));
    QVERIFY(text->toPlainText().contains(QStringLiteral("grad norm: oops")));
    dialog->close();
}

void TestMainWindow::problemsPanelSaysWhyItIsEmpty()
{
    // A folder read without a problem, and holding nothing but what is read: the panel says so (not an empty
    // table), and the tab has no count; with no folder open it says that instead.
    const QString clean = m_pair + QStringLiteral("/bf16");
    openAndWait({clean});
    QCOMPARE(m_window->problemsTable()->model()->rowCount(), 0);
    auto *pane = m_window->findChild<QStackedWidget *>(QStringLiteral("problemsPane"));
    auto *none = m_window->findChild<QLabel *>(QStringLiteral("noProblems"));
    QVERIFY(pane && none);
    QCOMPARE(pane->currentWidget(), static_cast<QWidget *>(none));
    QVERIFY2(none->text().startsWith(QStringLiteral("No problems")), qPrintable(none->text()));
    QVERIFY(none->text().contains(QFileInfo(clean).absoluteFilePath()) || none->text().contains(clean));
    QCOMPARE(
        m_window->findChild<QDockWidget *>(QStringLiteral("problemsDock"))->windowTitle(), QStringLiteral("Problems"));
    m_window->workspace()->close();
    QTRY_COMPARE(none->text(), QStringLiteral("No folder is open."));
    QCOMPARE(pane->currentWidget(), static_cast<QWidget *>(none));
}

void TestMainWindow::dropOpensFolder()
{
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(m_pair)});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_window.get(), &enter);
    QVERIFY(enter.isAccepted());
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_window.get(), &drop);
    QVERIFY(ready.wait(60000));
    QCOMPARE(m_window->workspace()->folders(), QStringList {QFileInfo(m_pair).absoluteFilePath()});
    // Nothing failed; the demo's README.md and planted.json are listed as left out.
    auto *problems = qobject_cast<ProblemsModel *>(m_window->problemsTable()->model());
    QCOMPARE(problems->rowCount(), 2);
    QCOMPARE(problems->skippedCount(), 2);
}

void TestMainWindow::longSeriesDrawsBucketsUntilZoomedIn()
{
    const QString dir = m_tmp.filePath(QStringLiteral("long"));
    QDir().mkpath(dir);
    QByteArray csv = "step,lm loss\n";
    for (int i = 0; i < 20000; ++i)
        csv += QByteArray::number(i) + ',' + QByteArray::number(i == 12345 ? 99.0 : 3.0 + (i % 7) * 0.01) + '\n';
    QFile f(dir + QStringLiteral("/history_long.csv"));
    QVERIFY(f.open(QIODevice::WriteOnly) && f.write(csv) == csv.size());
    f.close();
    openAndWait({dir});
    CurveView *curves = m_window->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QCOMPARE(curves->curves().size(), size_t(1));
    const auto &all = curves->curves().front();
    // More points than pixels: min/max buckets, no more than the plot is wide, the spike kept.
    QVERIFY(all.bucketed);
    // (the axis rect can narrow by a few pixels once the new tick labels are laid out)
    QVERIFY(all.steps.size() <= size_t(1.1 * std::max(100, curves->plot()->axisRect()->width())));
    QVERIFY(all.steps.size() < 20000 / 10);
    QCOMPARE(*std::max_element(all.maxs.begin(), all.maxs.end()), 99.0);
    QVERIFY(all.low && all.high);
    // Zoomed in to fewer points than pixels: every point, as logged.
    curves->plot()->xAxis->setRange(12300, 12400);
    curves->refetchNow();
    const auto &zoomed = curves->curves().front();
    QVERIFY(!zoomed.bucketed);
    QVERIFY(zoomed.steps.size() >= 101);
    const auto spike = std::find(zoomed.steps.begin(), zoomed.steps.end(), 12345.0);
    QVERIFY(spike != zoomed.steps.end());
    QCOMPARE(zoomed.values[size_t(spike - zoomed.steps.begin())], 99.0);
    openAndWait({m_pair});
}

void TestMainWindow::cancelStopsLoadingAndKeepsWhatWasRead()
{
    // 40 files of 40,000 points: seconds of ingest, committed file by file.
    const QString dir = m_tmp.filePath(QStringLiteral("many"));
    QDir().mkpath(dir);
    for (int f = 0; f < 40; ++f) {
        QByteArray csv = "step,metric_" + QByteArray::number(f) + "\n";
        for (int i = 0; i < 40000; ++i)
            csv += QByteArray::number(i) + ",1.5\n";
        QFile out(dir + QStringLiteral("/part_%1.csv").arg(f, 2, 10, QLatin1Char('0')));
        QVERIFY(out.open(QIODevice::WriteOnly) && out.write(csv) == csv.size());
    }
    auto *progress = m_window->findChild<QProgressBar *>(QStringLiteral("jobProgress"));
    auto *cancel = m_window->findChild<QToolButton *>(QStringLiteral("cancelJob"));
    QVERIFY(progress && cancel);
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    m_window->openFolders({dir});
    QTRY_VERIFY(cancel->isVisible() && progress->value() > 0); // reading, one file or more done
    QTest::mouseClick(cancel, Qt::LeftButton);
    QVERIFY(ready.wait(60000));
    // What was committed before the cancel opens; the rest was never read.
    QCOMPARE(m_window->workspace()->runCount(), 1);
    const int64_t series = int64_t(
        m_window->workspace()->catalog().seriesAt(m_window->workspace()->runAt(0), QString(), QString()).size());
    QVERIFY2(series >= 1 && series < 40, qPrintable(QString::number(series)));
    QTRY_VERIFY(!cancel->isVisible());
    openAndWait({m_pair});
}

void TestMainWindow::settingsPersist()
{
    CurveView *curves = m_window->curves();
    curves->setSmoothing(Smoothing::Gaussian, 0.33);
    curves->setLogY(true);
    m_window->close(); // saves
    AppSettings s;
    QCOMPARE(s.recentFolders().front(), QFileInfo(m_pair).absoluteFilePath());
    QVERIFY(s.recentFolders().contains(QFileInfo(m_tmp.filePath(QStringLiteral("broken"))).absoluteFilePath()));
    QVERIFY(!s.windowState().isEmpty());
    MainWindow second(BackendChoice::Cpu, nullptr);
    QCOMPARE(second.curves()->smoothingKind(), Smoothing::Gaussian);
    QCOMPARE(second.curves()->smoothingStrength(), 0.33);
    QVERIFY(second.curves()->logY());
    auto *recent = second.findChild<QMenu *>(QStringLiteral("recentMenu"));
    QVERIFY(recent && recent->actions().size() >= 2);
    QCOMPARE(recent->actions().front()->text(), QFileInfo(m_pair).absoluteFilePath());
}

void TestMainWindow::demoOpensWithSyntheticTitle()
{
    MainWindow window(BackendChoice::Cpu, nullptr);
    window.show();
    QSignalSpy ready(&window, &MainWindow::ready);
    DemoOptions small; // the default pair takes long under the sanitizers; the path is the same
    small.layers = 4;
    small.steps = 600;
    window.openDemo(small);
    QVERIFY(ready.wait(120000));
    QVERIFY(window.windowTitle().contains(QStringLiteral("demo (synthetic data)")));
    QCOMPARE(window.workspace()->runCount(), 2);
    QVERIFY(QFileInfo(window.workspace()->folders().front())
                .absoluteFilePath()
                .startsWith(QFileInfo(m_tmp.filePath(QStringLiteral("cache"))).absoluteFilePath()));
}

void TestMainWindow::fp8CheckpointFolder()
{
    // A folder holding an FP8 checkpoint as DeepSeek-V3 writes one: an E4M3 weight with 128x128 block
    // decode scales beside it, and no logs, so no step anywhere. Picking the weight shows its histogram in
    // model units, says how it was decoded, and the table lists what was recomputed.
    QTemporaryDir dir;
    const QString folder = dir.filePath(QStringLiteral("ckpt"));
    QVERIFY(QDir().mkpath(folder));
    QByteArray codes(256 * 256, '\0');
    for (int i = 0; i < codes.size(); ++i)
        codes[i] = char(i % 0x7F); // up to 0x7E (448), no NaN
    const float grid[4] = {0.5f, 0.25f, 0.125f, 2.0f};
    const QByteArray json = QByteArrayLiteral(
        R"({"model.w.weight":{"dtype":"F8_E4M3","shape":[256,256],"data_offsets":[0,65536]},)"
        R"("model.w.weight_scale_inv":{"dtype":"F32","shape":[2,2],"data_offsets":[65536,65552]}})");
    QByteArray file(8, '\0');
    for (int i = 0; i < 8; ++i)
        file[i] = char((quint64(json.size()) >> (8 * i)) & 0xFF);
    file += json + codes + QByteArray(reinterpret_cast<const char *>(grid), 16);
    QVERIFY(appendTo(folder + QStringLiteral("/model.safetensors"), file));
    openAndWait({folder});
    Workspace *ws = m_window->workspace();
    QCOMPARE(ws->runCount(), 1);
    HistogramView *hist = m_window->histogram();
    hist->setRecipe(QStringLiteral("current"), QStringLiteral("e4m3"));
    Selection *sel = m_window->selection();
    sel->set(ws->runAt(0), QStringLiteral("model.w"), QStringLiteral("weight"), -1);
    QVERIFY(hist->dump().has_value());
    QTRY_VERIFY_WITH_TIMEOUT(
        hist->statusText().contains(QLatin1String("Dump: E4M3 codes x scale_inv (128x128 "
                                                  "blocks) from tensor 'model.w.weight_scale_inv'.")),
        30000);
    QVERIFY2(hist->statusText().startsWith(QStringLiteral("model.w / weight \u2014 current (E4M3)")),
        qPrintable(hist->statusText()));
    // No step selected: the table shows each statistic's latest value, here the checkpoint's (step -1).
    QTRY_VERIFY(tableRows(m_window->statsTable()).contains(QStringLiteral("cur_amax|-1|recomputed|current")));
    auto *m = m_window->statsTable()->model();
    for (int r = 0; r < m->rowCount(); ++r) {
        if (m->index(r, StatsTableModel::StatColumn).data().toString() == QLatin1String("cur_amax"))
            QCOMPARE(m->index(r, StatsTableModel::ValueColumn).data(StatsTableModel::SortValueRole).toDouble(), 896.0);
    }
    // The recomputed statistics are listed at once (the folder had none when it was opened). The curve is
    // of one point with no step: marked, and the axis says it is a checkpoint's.
    HeatmapView *heat = m_window->heatmap();
    heat->setStatistic(QStringLiteral("cur_amax"));
    QCOMPARE(heat->statistic(), QStringLiteral("cur_amax"));
    QTRY_COMPARE(heat->heatmap().layers, QStringList {QStringLiteral("model.w")});
    CurveView *curves = m_window->curves();
    curves->setStatistic(QStringLiteral("tensor:cur_amax"));
    QCOMPARE(curves->statistic(), QStringLiteral("tensor:cur_amax"));
    QCOMPARE(curves->plot()->xAxis->label(), QStringLiteral("checkpoint (no step)"));
    QCOMPARE(curves->plot()->xAxis->range().center(), -1.0);
    QVERIFY(curves->plot()->yAxis->range().contains(896.0));
}

void TestMainWindow::heatmapPicksARunWithLayerStatistics()
{
    // A folder of runs where the first (by name) has only a loss curve: the heatmap opens on the run that
    // has per-layer statistics, and says so in words on a run without them instead of drawing empty axes.
    QTemporaryDir dir;
    QVERIFY(
        QDir(dir.path()).mkpath(QStringLiteral("a_loss_only")) && QDir(dir.path()).mkpath(QStringLiteral("b_layers")));
    QVERIFY(appendTo(dir.filePath(QStringLiteral("a_loss_only/metrics.csv")), "step,loss\n1,2.5\n2,2.4\n"));
    QByteArray te;
    for (int it = 0; it < 3; ++it) {
        for (int layer = 0; layer < 2; ++layer)
            te += QStringLiteral("2026-01-15 23:06:41,584 - INFO - layers.%1.fc1_activation_underflows% \t "
                                 "iteration=%2 \t value=%3\n")
                      .arg(layer)
                      .arg(it * 10, 6, 10, QLatin1Char('0'))
                      .arg(0.5 * (layer + it))
                      .toUtf8();
    }
    QVERIFY(appendTo(dir.filePath(QStringLiteral("b_layers/nvdlfw_inspect_globalrank-0.log")), te));
    // Its own training log makes it a run of its own (a subfolder of statistics only is a part of its
    // folder's run).
    QVERIFY(appendTo(dir.filePath(QStringLiteral("b_layers/metrics.csv")), "step,loss\n1,2.6\n2,2.5\n"));
    openAndWait({dir.path()});
    Workspace *ws = m_window->workspace();
    QCOMPARE(ws->runCount(), 2);
    HeatmapView *heat = m_window->heatmap();
    QCOMPARE(heat->run(), ws->findRun(QStringLiteral("b_layers")));
    QTRY_COMPARE(heat->heatmap().layers.size(), 2);
    QCOMPARE(heat->heatmap().steps.size(), size_t(3));
    QCOMPARE(heat->message(), QString());
    // The pickers, filled after the window was shown, are as wide as a box that holds just their text
    // needs (they kept the width of an empty box and cut "underflows%" to "underflo").
    // settingsPersist closed the window and an earlier test raised the Problems tab.
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    m_window->findChild<QDockWidget *>(QStringLiteral("heatmapDock"))->raise();
    QTRY_VERIFY(heat->isVisible());
    for (const char *name : {"heatmapStatistic", "heatmapTensor"}) {
        auto *box = heat->findChild<QComboBox *>(QLatin1String(name));
        QVERIFY(box && !box->currentText().isEmpty());
        QComboBox fits;
        fits.setFont(box->font());
        fits.addItem(box->currentText());
        QTRY_VERIFY2(box->width() >= fits.sizeHint().width(),
            qPrintable(QStringLiteral("%1: %2 px for '%3', which needs %4")
                           .arg(QLatin1String(name))
                           .arg(box->width())
                           .arg(box->currentText())
                           .arg(fits.sizeHint().width())));
    }
    m_window->selection()->set(ws->findRun(QStringLiteral("a_loss_only")), QString(), QString(), -1);
    QCOMPARE(heat->run(), ws->findRun(QStringLiteral("a_loss_only")));
    QTRY_VERIFY2(heat->message().startsWith(QStringLiteral("a_loss_only has no per-layer statistics.")),
        qPrintable(heat->message()));
    QVERIFY(heat->heatmap().layers.isEmpty());
    // Neither run has tensor dumps: the histogram says so rather than asking for a layer.
    QVERIFY2(m_window->histogram()->statusText().startsWith(QStringLiteral("This run holds no tensor dumps")),
        qPrintable(m_window->histogram()->statusText()));
}

void TestMainWindow::longRunNamesKeepPrecisionInView()
{
    // Run folders named as cluster jobs are: the run list elides the names in the middle so that the
    // precision column stays in view, and the tooltip gives the whole name.
    QTemporaryDir dir;
    const QString longName = QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp1_pp1_fp8_no_model_parallel");
    for (const QString &run : {longName, QStringLiteral("bf16")}) {
        QVERIFY(QDir(dir.path()).mkpath(run));
        QVERIFY(appendTo(dir.filePath(run + QStringLiteral("/metrics.csv")), "step,loss\n1,2.5\n"));
    }
    openAndWait({dir.path()});
    QTableView *runs = m_window->runTable();
    QVERIFY(runs->columnWidth(RunListModel::NameColumn) < runs->fontMetrics().horizontalAdvance(longName));
    QVERIFY2(
        runs->columnViewportPosition(RunListModel::PrecisionColumn) + runs->columnWidth(RunListModel::PrecisionColumn)
            <= runs->viewport()->width(),
        qPrintable(QString::number(runs->columnViewportPosition(RunListModel::PrecisionColumn))));
    const int row = m_window->workspace()->indexOf(m_window->workspace()->findRun(longName));
    QVERIFY(runs->model()->index(row, RunListModel::NameColumn).data(Qt::ToolTipRole).toString().startsWith(longName));
}

void TestMainWindow::histogramRecipeFollowsTheRun()
{
    // The histogram computes under the recipe the selected run trained with (its manifest's, or its
    // config's: blockwise scaling is 128x128 tiles for weights, 1x128 blocks otherwise); a recipe chosen in
    // the box holds while the run stays selected.
    QTemporaryDir dir;
    std::vector<float> values(64 * 64);
    for (size_t i = 0; i < values.size(); ++i)
        values[i] = std::sin(float(i)) * float(1 + i % 7);
    const QByteArray json
        = QByteArrayLiteral(R"({"model.a.weight":{"dtype":"F32","shape":[64,64],"data_offsets":[0,16384]},)"
                            R"("model.b.weight":{"dtype":"F32","shape":[64,64],"data_offsets":[16384,32768]}})");
    QByteArray file(8, '\0');
    for (int i = 0; i < 8; ++i)
        file[i] = char((quint64(json.size()) >> (8 * i)) & 0xFF);
    const QByteArray data(reinterpret_cast<const char *>(values.data()), qsizetype(values.size() * 4));
    file += json + data + data;
    for (const char *run : {"mx", "blk"}) {
        QVERIFY(QDir(dir.path()).mkpath(QLatin1String(run)));
        QVERIFY(appendTo(dir.filePath(QLatin1String(run) + QStringLiteral("/model.safetensors")), file));
    }
    QVERIFY(appendTo(dir.filePath(QStringLiteral("mx/fp8scope.json")), R"({"precision": "fp8", "recipe": "mxfp8"})"));
    QVERIFY(appendTo(dir.filePath(QStringLiteral("blk/config.json")),
        R"({"fp8_config": {"fp8_format": "E4M3", "fp8_recipe": "transformer_engine.common.recipe.Float8BlockScaling"}})"));
    openAndWait({dir.path()});
    Workspace *ws = m_window->workspace();
    QCOMPARE(ws->runCount(), 2);
    const RunRef mx = ws->findRun(QStringLiteral("mx"));
    const RunRef blk = ws->findRun(QStringLiteral("blk"));
    QCOMPARE(ws->run(blk)->run.recipe, QStringLiteral("blockwise"));
    HistogramView *hist = m_window->histogram();
    auto *box = hist->findChild<QComboBox *>(QStringLiteral("histogramRecipe"));
    QVERIFY(box);
    Selection *sel = m_window->selection();
    sel->set(mx, QStringLiteral("model.a"), QStringLiteral("weight"), -1);
    QCOMPARE(box->currentText(), QStringLiteral("mxfp8"));
    QTRY_VERIFY_WITH_TIMEOUT(hist->metrics().has_value(), 30000);
    QCOMPARE(hist->metrics()->blocks, int64_t(64 * 64 / 32));
    // The user's choice holds within the run.
    hist->setRecipe(QStringLiteral("nvfp4"));
    QTRY_VERIFY_WITH_TIMEOUT(!hist->isComputing() && hist->metrics().has_value(), 30000);
    sel->set(mx, QStringLiteral("model.b"), QStringLiteral("weight"), -1);
    QCOMPARE(box->currentText(), QStringLiteral("nvfp4"));
    QTRY_VERIFY_WITH_TIMEOUT(!hist->isComputing() && hist->metrics().has_value(), 30000);
    sel->set(blk, QStringLiteral("model.a"), QStringLiteral("weight"), -1);
    QCOMPARE(box->currentText(), QStringLiteral("block128x128"));
    QTRY_VERIFY_WITH_TIMEOUT(hist->metrics().has_value() && hist->metrics()->blocks == 1, 30000);
    sel->set(blk, QStringLiteral("model.a"), QStringLiteral("activation"), -1);
    QCOMPARE(box->currentText(), QStringLiteral("block1x128"));
    sel->set(mx, QStringLiteral("model.a"), QStringLiteral("weight"), -1);
    QCOMPARE(box->currentText(), QStringLiteral("mxfp8"));
    QTRY_VERIFY_WITH_TIMEOUT(!hist->isComputing() && hist->metrics().has_value(), 30000);

    // The heatmap of what was recomputed: model.a under mxfp8 and nvfp4, model.b under nvfp4. It shows the
    // run's recipe, one row per layer, and its recipe picker switches.
    HeatmapView *heat = m_window->heatmap();
    heat->setRun(blk);
    heat->setRun(mx); // the pickers list what the store holds now
    heat->setStatistic(QStringLiteral("mse"));
    heat->setTensor(QStringLiteral("weight"));
    auto *recipes = heat->findChild<QComboBox *>(QStringLiteral("heatmapRecipe"));
    QVERIFY(recipes);
    QTRY_COMPARE(heat->heatmap().recipe, QStringLiteral("mxfp8"));
    QCOMPARE(heat->heatmap().layers, QStringList {QStringLiteral("model.a")});
    QTRY_VERIFY(!recipes->isHidden()); // the tool bar lays out a control shown by the data on its next pass
    QCOMPARE(recipes->count(), 2);
    recipes->setCurrentIndex(recipes->findText(QStringLiteral("nvfp4")));
    QTRY_COMPARE(heat->heatmap().recipe, QStringLiteral("nvfp4"));
    QCOMPARE(heat->heatmap().layers, (QStringList {QStringLiteral("model.a"), QStringLiteral("model.b")}));
    QCOMPARE(recipes->currentText(), QStringLiteral("nvfp4"));

    // The curve of a recomputed statistic shows the run's recipe, and says so in the legend.
    openAndWait({dir.path()});
    sel->set(ws->findRun(QStringLiteral("mx")), QStringLiteral("model.a"), QStringLiteral("weight"), -1);
    CurveView *curves = m_window->curves();
    curves->setStatistic(QStringLiteral("tensor:mse"));
    QStringList names;
    for (int i = 0; i < curves->plot()->graphCount(); ++i)
        names << curves->plot()->graph(i)->name();
    QVERIFY2(names.contains(QStringLiteral("mx (mxfp8)")), qPrintable(names.join(QLatin1String(", "))));
}

void TestMainWindow::singlePointsAndCheckpointColumns()
{
    // A series of one point is marked (a line of one point draws nothing) and its flat y range is widened so
    // the ticks differ; one heatmap column or row is drawn centred on its step or layer, and a checkpoint's
    // column (step -1) is named as such.
    QTemporaryDir dir;
    QVERIFY(appendTo(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n5,0.0033051\n"));
    openAndWait({dir.path()});
    CurveView *curves = m_window->curves();
    curves->setStatistic(QStringLiteral("loss"));
    QCustomPlot *cp = curves->plot();
    bool marked = false;
    for (int i = 0; i < cp->graphCount(); ++i)
        marked = marked || cp->graph(i)->scatterStyle().shape() == QCPScatterStyle::ssDisc;
    QVERIFY(marked);
    QVERIFY(cp->legend->visible());
    QVERIFY2(cp->yAxis->range().size() > 0.0033051 * 0.1, qPrintable(QString::number(cp->yAxis->range().size())));
    QVERIFY(cp->yAxis->range().contains(0.0033051));
    QCOMPARE(cp->xAxis->range().center(), 5.0);
    QCOMPARE(cp->xAxis->label(), QStringLiteral("step"));

    HeatmapView *heat = m_window->heatmap();
    Heatmap h;
    h.layers = {QStringLiteral("model.w")};
    h.steps = {-1};
    h.values = {3.0};
    heat->setHeatmap(h);
    QCustomPlot *hp = heat->plot();
    QCOMPARE(hp->xAxis->range().center(), -1.0);
    QCOMPARE(hp->xAxis->label(), QStringLiteral("checkpoint (no step)"));
    QVERIFY(!hp->xAxis->tickLabels()); // the ticks around -1 mean nothing
    QCPColorMap *map = nullptr;
    for (int i = 0; i < hp->plottableCount() && !map; ++i)
        map = qobject_cast<QCPColorMap *>(hp->plottable(i));
    QVERIFY(map);
    // One cell per pixel column over the checkpoint's one cell, centred on it: [-1.5, -0.5] edge to edge.
    const auto edges = [&] {
        const QCPRange r = map->data()->keyRange();
        const double half = (r.upper - r.lower) / (2.0 * (map->data()->keySize() - 1));
        return std::make_pair(r.lower - half, r.upper + half);
    };
    QCOMPARE(edges().first, -1.5);
    QCOMPARE(edges().second, -0.5);
    QCOMPARE(heat->drawnValueAt(heat->cellCentre(0, 0)), 3.0);
    QCOMPARE(map->data()->valueRange().lower, -0.5);
    QCOMPARE(map->data()->valueRange().upper, 0.5);
    h.steps = {10, 20, 30};
    h.values = {1.0, 2.0, 3.0};
    heat->setHeatmap(h);
    QCOMPARE(hp->xAxis->label(), QStringLiteral("step"));
    QVERIFY(hp->xAxis->tickLabels());
    QCOMPARE(edges().first, 5.0); // half way to the neighbour on either side
    QCOMPARE(edges().second, 35.0);
}

void TestMainWindow::recomputeFinishingAfterClose()
{
    // A recompute that finishes after its folder was closed (another opened meanwhile) must not announce
    // new statistics for a run index of the old folder: the views would read a run that is gone (this
    // crashed the curve view when the second folder had fewer runs).
    openAndWait({m_pair});
    Workspace *ws = m_window->workspace();
    const RunRef fp8 = ws->findRun(QStringLiteral("fp8"));
    QVERIFY(fp8.isValid());
    const auto dumps = ws->catalog().dumps(fp8);
    QVERIFY(!dumps.empty());
    QString error;
    const auto recipe = Recipe::parse(QStringLiteral("current"), std::nullopt, &error);
    QVERIFY2(recipe, qPrintable(error));
    bool finished = false;
    ws->recompute(dumps.front(), *recipe, QStringLiteral("test"), this,
        [&](const std::optional<TensorMetrics> &, const QString &) { finished = true; });
    QSignalSpy announced(ws, &Workspace::statisticsChanged);
    QTemporaryDir dir;
    QVERIFY(appendTo(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n1,2.0\n"));
    openAndWait({dir.path()}); // closes the pair while the recompute runs
    QCOMPARE(ws->runCount(), 1);
    QTRY_VERIFY_WITH_TIMEOUT(finished, 30000);
    QCOMPARE(announced.count(), 0);
}

void TestMainWindow::heatmapCellsSitAtTheirRealSteps()
{
    // Statistics logged at uneven steps (a log interval that changes): each cell is drawn at its real step,
    // and a click selects the step drawn under the pointer (cells were placed by column index while the axis
    // and cursor used steps, so step 100 was drawn at 750 and a click at 100 picked step 0).
    QTemporaryDir dir;
    const std::vector<int> steps {0, 10, 20, 100, 1000};
    QByteArray te;
    for (int step : steps) {
        for (int layer = 0; layer < 6; ++layer)
            te += QStringLiteral("2026-01-15 23:06:41,584 - INFO - layers.%1.fc2_activation_underflows% \t "
                                 "iteration=%2 \t value=%3\n")
                      .arg(layer)
                      .arg(step, 6, 10, QLatin1Char('0'))
                      .arg(layer + step / 10.0, 0, 'f', 4)
                      .toUtf8();
    }
    QVERIFY(appendTo(dir.filePath(QStringLiteral("nvdlfw_inspect_globalrank-0.log")), te));
    openAndWait({dir.path()});
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    m_window->findChild<QDockWidget *>(QStringLiteral("heatmapDock"))->raise();
    HeatmapView *heat = m_window->heatmap();
    QTRY_VERIFY(heat->isVisible());
    QTRY_COMPARE(heat->heatmap().steps, (std::vector<int64_t> {0, 10, 20, 100, 1000}));
    const Heatmap &h = heat->heatmap();
    QCustomPlot *plot = heat->plot();
    Selection *sel = m_window->selection();
    for (int col = 0; col < int(h.steps.size()); ++col) {
        const QPointF centre = heat->cellCentre(2, col);
        // The cell's centre is where its step is on the axis, and what is drawn there is its value.
        QVERIFY(std::abs(plot->xAxis->pixelToCoord(centre.x()) - double(h.steps[size_t(col)]))
            <= std::abs(plot->xAxis->pixelToCoord(1) - plot->xAxis->pixelToCoord(0)));
        QCOMPARE(heat->drawnValueAt(centre), h.at(2, size_t(col)));
    }
    // Clicks: at step 100 itself, and at 600, past half way from 100 to 1000 (so in 1000's cell).
    for (const auto &[x, want] : {std::pair<double, int64_t> {100.0, 100}, {600.0, 1000}, {14.0, 10}}) {
        const QPoint at(int(std::lround(plot->xAxis->coordToPixel(x))), int(std::lround(plot->yAxis->coordToPixel(2))));
        QTest::mouseClick(plot, Qt::LeftButton, {}, at);
        QCOMPARE(sel->step(), want);
        QCOMPARE(sel->layer(), h.layers[2]);
        const size_t col = size_t(h.nearestColumn(double(want)));
        QCOMPARE(heat->drawnValueAt(at), h.at(2, col));
        QVERIFY(heat->toolTipAt(at).contains(QStringLiteral("step %1").arg(want)));
        QCOMPARE(heat->stepCursor()->point1->coords().x(), double(want)); // the cursor sits on the drawn cell
    }
}

void TestMainWindow::guiAndCliChooseTheSameSeries()
{
    // One run, lm loss from two loggers: the Megatron log's (every tenth step) and a W&B export's
    // train/loss (every step). The curve view and `fp8scope-cli series` draw the same one, by the query
    // layer's one policy; the source picker offers both and a choice holds.
    QTemporaryDir dir;
    QByteArray log, csv = "_step,train/loss\n";
    for (int s = 1; s <= 300; ++s) {
        csv += QByteArray::number(s) + ',' + QByteArray::number(8.0 + std::sin(s * 0.1), 'g', 10) + '\n';
        if (s % 10 == 0)
            log += " iteration " + QByteArray::number(s)
                + "/ 300 | lm loss: " + QByteArray::number(9.0 - s * 1e-3, 'E', 6) + " |\n";
    }
    QVERIFY(appendTo(dir.filePath(QStringLiteral("train.out")), log));
    QVERIFY(appendTo(dir.filePath(QStringLiteral("history.csv")), csv));
    openAndWait({dir.path()});
    CurveView *curves = m_window->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    curves->resetZoom();
    QCOMPARE(curves->curves().size(), size_t(1));
    const auto &c = curves->curves().front();
    QCOMPARE(c.series.source, QStringLiteral("csv"));
    auto *sourceBox = curves->findChild<QComboBox *>(QStringLiteral("curveSource"));
    QVERIFY(sourceBox);
    QTRY_VERIFY(!sourceBox->isHidden()); // laid out by its tool bar on the next pass
    QCOMPARE(sourceBox->count(), 3); // Auto, csv, megatron-log
    // The CLI, asked the same, prints the same series' points.
    QProcess cli;
    cli.start(qEnvironmentVariable("FP8SCOPE_CLI"),
        {QStringLiteral("series"), dir.path(), QStringLiteral("--run"), QFileInfo(dir.path()).fileName(),
            QStringLiteral("--stat"), QStringLiteral("lm loss"), QStringLiteral("--csv")});
    QVERIFY(cli.waitForFinished(60000));
    QCOMPARE(cli.exitCode(), 0);
    QVERIFY2(cli.readAllStandardError().contains("from csv (also megatron-log"), "the CLI names its choice");
    const QList<QByteArray> lines = cli.readAllStandardOutput().trimmed().split('\n');
    QCOMPARE(qsizetype(c.steps.size()), lines.size() - 1);
    QVERIFY(!c.bucketed);
    for (size_t i = 0; i < c.steps.size(); ++i) {
        const QList<QByteArray> row = lines[qsizetype(i) + 1].split(',');
        QCOMPARE(row[0].toLongLong(), qint64(c.steps[i]));
        QCOMPARE(row[1].toDouble(), c.values[i]);
    }
    // Choosing the log's source draws it, with its own points.
    curves->setDataSource(QStringLiteral("megatron-log"));
    QCOMPARE(curves->curves().front().series.source, QStringLiteral("megatron-log"));
    QCOMPARE(curves->curves().front().steps.size(), size_t(30));
    curves->setDataSource(QString());
}

namespace {

// A source of one made-up run and one matrix, as a comparison hands the view its differences.
class FixedHeatmapSource : public HeatmapSource
{
public:
    explicit FixedHeatmapSource(Heatmap h)
        : m_heatmap(std::move(h))
    {
    }
    std::vector<RunChoice> runs() const override { return {{RunRef {999, 1}, QStringLiteral("fp8 - bf16")}}; }
    RunRef preferredRun() const override { return {999, 1}; }
    std::vector<std::pair<QString, QString>> statistics(RunRef) const override
    {
        return {{QStringLiteral("underflows%"), QStringLiteral("activation")}};
    }
    quint64 load(RunRef run, const MatrixRequest &request, const QString &, QObject *receiver,
        std::function<void(const Heatmap &)> done) override
    {
        requests.push_back({run, request.stat});
        QMetaObject::invokeMethod(
            receiver, [done, h = m_heatmap] { done(h); }, Qt::QueuedConnection);
        return ++m_ticket;
    }
    void cancel(quint64) override { }
    QString noStatisticsText(RunRef) const override { return QStringLiteral("none"); }
    std::vector<std::pair<RunRef, QString>> requests;

private:
    Heatmap m_heatmap;
    quint64 m_ticket = 0;
};

} // namespace

void TestMainWindow::heatmapViewDrawsAHandedSource()
{
    // The ordinary heatmap view draws what it is handed (a comparison's difference matrix), not the store.
    Heatmap h;
    h.layers = {QStringLiteral("a"), QStringLiteral("b")};
    h.steps = {5, 50};
    h.values = {1.0, -2.0, 3.0, 4.0};
    h.source = QStringLiteral("difference");
    h.sources = {h.source};
    FixedHeatmapSource source(h);
    Selection selection;
    HeatmapView view(&source, &selection);
    view.resize(600, 400);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTRY_COMPARE(view.heatmap().values, h.values);
    QCOMPARE(view.run(), (RunRef {999, 1}));
    QCOMPARE(view.statistic(), QStringLiteral("underflows%"));
    QVERIFY(!source.requests.empty() && source.requests.back().first == (RunRef {999, 1}));
    QCOMPARE(view.drawnValueAt(view.cellCentre(0, 1)), -2.0);
    QTest::mouseClick(view.plot(), Qt::LeftButton, {}, view.cellCentre(1, 1).toPoint());
    QCOMPARE(selection.layer(), QStringLiteral("b"));
    QCOMPARE(selection.step(), 50);
}

void TestMainWindow::twoHeatmapsDoNotCancelEachOther()
{
    // A comparison shows two heatmaps of one workspace: each view's request has a slot of its own, so the
    // second view's load does not replace the first's (with one slot per kind, the first never arrived).
    openAndWait({m_pair});
    Workspace *ws = m_window->workspace();
    HeatmapView first(ws, m_window->selection());
    HeatmapView second(ws, m_window->selection());
    QTRY_VERIFY(!first.isLoading() && !second.isLoading());
    first.setRun(ws->findRun(QStringLiteral("fp8")));
    second.setRun(ws->findRun(QStringLiteral("fp8")));
    QCOMPARE(first.statistic(), QStringLiteral("underflows%"));
    first.setStatistic(QStringLiteral("mse"));
    second.setStatistic(QStringLiteral("scale_inv_max"));
    QVERIFY(first.isLoading() && second.isLoading()); // both asked, back to back
    QTRY_VERIFY_WITH_TIMEOUT(!first.isLoading() && !second.isLoading(), 20000);
    QCOMPARE(first.heatmap().layers.size(), 16);
    QCOMPARE(second.heatmap().layers.size(), 16);
    QVERIFY(first.heatmap().values != second.heatmap().values);
}

void TestMainWindow::rebuildStoreReadsTheFolderAgain()
{
    // File > Rebuild Store: the store is thrown away and the folder read again; what only it held (metrics
    // recomputed from dumps, which earlier tests computed) is gone, everything the files say is back.
    openAndWait({m_pair});
    Workspace *ws = m_window->workspace();
    const auto recomputed = [&] {
        int n = 0;
        for (const WorkspaceRun &r : ws->runs()) {
            for (const Series &s : ws->catalog().series(r.run.ref))
                n += s.isRecomputed();
        }
        return n;
    };
    QVERIFY(recomputed() > 0);
    const int64_t points = ws->run(ws->findRun(QStringLiteral("fp8")))->run.pointCount;
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    QString error;
    QVERIFY2(ws->rebuild(&error), qPrintable(error));
    QVERIFY(ready.wait(60000));
    QCOMPARE(ws->runCount(), 2);
    QCOMPARE(recomputed(), 0);
    QVERIFY(ws->run(ws->findRun(QStringLiteral("fp8")))->run.pointCount < points);
    QCOMPARE(m_window->curves()->curves().size(), size_t(2));
    auto *action = m_window->findChild<QAction *>(QStringLiteral("rebuildStore"));
    QVERIFY(action && action->isEnabled());
    // With nothing open there is nothing to rebuild, add to or report on.
    auto *report = m_window->findChild<QAction *>(QStringLiteral("exportReport"));
    QVERIFY(report && report->isEnabled());
    ws->close();
    QVERIFY(!action->isEnabled());
    QVERIFY(!report->isEnabled());
    QVERIFY(!m_window->findChild<QAction *>(QStringLiteral("addFolder"))->isEnabled());
    openAndWait({m_pair});
    QVERIFY(action->isEnabled());
}

void TestMainWindow::storeErrorsMetWhileDrawingReachTheProblemsPanel()
{
    // A store damaged after it was opened (here a table dropped by another connection): the read that meets
    // it answers what it can, and the error reaches the problems panel with the store's path.
    QTemporaryDir dir;
    QVERIFY(appendTo(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n1,2.0\n2,1.5\n"));
    openAndWait({dir.path()});
    Workspace *ws = m_window->workspace();
    {
        Database db;
        QString error;
        QVERIFY(db.open(RunStore::storePathFor(dir.path()), &error));
        QVERIFY(db.exec("DROP TABLE dumps", &error));
    }
    QSignalSpy added(ws, &Workspace::problemsAdded);
    QVERIFY(ws->catalog().dumps(ws->runAt(0)).empty());
    QVERIFY(added.wait(5000));
    auto *problems = m_window->problemsTable()->model();
    bool shown = false;
    for (int r = 0; r < problems->rowCount(); ++r)
        shown = shown
            || problems->index(r, ProblemsModel::MessageColumn)
                   .data()
                   .toString()
                   .contains(QLatin1String("no such table: dumps"));
    QVERIFY(shown);
}

void TestMainWindow::cleanupTestCase()
{
    m_testers.clear();
    m_window.reset();
}

FP8SCOPE_TEST_GUI_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
