// The window as a new user meets it (issue 22): it fits 1280x720 with no control cut or pushed into an
// overflow menu and never resizes itself; with no folder it shows a start page; every empty state says why
// (a tensor statistic before a tensor is chosen, a folder of evaluation results only, a statistic that is
// all 0 as logged) and leaves no axes of what was drawn before; one name per run in every view; unticking
// a run hides it everywhere; the samples axis leaves out runs without sample counts, and says so; settings
// of a run made in the window survive a reopen; a second folder can be added.
#include "app/common/version.h"
#include "app/gui/aboutdialog.h"
#include "app/gui/appsettings.h"
#include "app/gui/icons.h"
#include "app/gui/mainwindow.h"
#include "app/gui/runsettingsdialog.h"
#include "app/gui/startpage.h"
#include "guitest.h"
#include "testmain.h"
#include "views/compare/compareview.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/histogram/histogramview.h"
#include "views/models/runlistmodel.h"
#include "views/models/statstablemodel.h"
#include "views/models/tableexport.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QAction>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QGuiApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QStatusBar>
#include <QStyleOptionComboBox>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolBar>
#include <QToolButton>
#include <QTreeView>

#include <functional>

#include <memory>

using namespace fp8scope;
using guitest::writeFile;

namespace {

// Whether a control shows all of its text: a label or button as wide as its text needs, a combo box whose
// edit field holds its current text.
QString cutText(QWidget *w)
{
    if (auto *label = qobject_cast<QLabel *>(w)) {
        if (!label->wordWrap() && label->fontMetrics().horizontalAdvance(label->text()) > label->contentsRect().width())
            return label->text();
    } else if (auto *button = qobject_cast<QAbstractButton *>(w)) {
        if (button->sizeHint().width() > button->width())
            return button->text();
    } else if (auto *box = qobject_cast<QComboBox *>(w)) {
        QStyleOptionComboBox opt;
        opt.initFrom(box);
        opt.editable = box->isEditable();
        opt.currentText = box->currentText();
        const QRect field = box->style()->subControlRect(QStyle::CC_ComboBox, &opt, QStyle::SC_ComboBoxEditField, box);
        if (box->fontMetrics().horizontalAdvance(box->currentText()) > field.width())
            return QStringLiteral("%1 (%2 px in a field of %3)")
                .arg(box->currentText())
                .arg(box->fontMetrics().horizontalAdvance(box->currentText()))
                .arg(field.width());
    }
    return {};
}

// The rows of a table's column as text.
// One iteration line of a Megatron training log, its other fields as a real one prints them.
QByteArray megatronLine(
    int it, int iterations, double loss, double lossScale, const QByteArray &gradNorm, int skipped = 0, int nan = 0)
{
    return " iteration " + QByteArray::number(it).rightJustified(8) + "/"
        + QByteArray::number(iterations).rightJustified(8) + " | consumed samples: "
        + QByteArray::number(it * 256).rightJustified(12) + " | elapsed time per iteration (ms): 812.4 | "
        + "learning rate: 3.000E-04 | global batch size:   256 | lm loss: " + QByteArray::number(loss, 'E', 6)
        + " | loss scale: " + QByteArray::number(lossScale, 'f', 1) + " | grad norm: " + gradNorm
        + " | number of skipped iterations: " + QByteArray::number(skipped).rightJustified(3)
        + " | number of nan iterations: " + QByteArray::number(nan).rightJustified(3) + " |\n";
}

QStringList column(QAbstractItemModel *model, int col, int role = Qt::DisplayRole)
{
    QStringList out;
    for (int r = 0; r < model->rowCount(); ++r)
        out << model->index(r, col).data(role).toString();
    return out;
}

QStringList comboItems(QComboBox *box)
{
    QStringList out;
    for (int i = 0; i < box->count(); ++i)
        out << box->itemText(i);
    return out;
}

QStringList legendNames(QCustomPlot *plot, bool withMarks = false)
{
    QStringList marks;
    for (const auto kind : CurveSource::kEventKinds)
        marks << CurveView::markName(kind);
    QStringList out;
    for (int i = 0; i < plot->legend->itemCount(); ++i) {
        if (auto *item = qobject_cast<QCPPlottableLegendItem *>(plot->legend->item(i))) {
            if (withMarks || !marks.contains(item->plottable()->name()))
                out << item->plottable()->name();
        }
    }
    return out;
}

} // namespace

class TestWindow : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void startPageWithoutAFolder();
    void fitsA1280x720Window_data();
    void fitsA1280x720Window();
    void tensorStatisticBeforeATensorIsChosen();
    void statisticThatIsAllZeroAsLogged();
    void evaluationOnlyFolderSaysWhatItHolds();
    void runNamesAreTheSameInEveryView();
    void untickingARunHidesItEverywhere();
    void samplesAxisLeavesOutRunsWithoutSamples();
    void runSettingsSurviveAReopen();
    void secondFolderAddsItsRuns();
    void statisticsTableCopiesEnoughDigits();
    void nvfp4ShowsE2M1();
    void shortSeriesAreNotSmoothed();
    void skippedNanAndLossScaleCutsAreMarked_data();
    void skippedNanAndLossScaleCutsAreMarked();
    void infiniteValuesLeaveTheAxisToTheFiniteOnes();
    void exportsSayWhatTheyShow();
    void transformerEngineDumpsOpen();
    void aboutListsVersionsAndCopiesThem();
    void toolbarActionsHaveIcons();
    void manifestPathsOpenTheirFolder();

private:
    std::unique_ptr<MainWindow> newWindow(QSize size = QSize(1280, 720));
    // A new window with the demo pair open, drawing the loss.
    std::unique_ptr<MainWindow> pairWindow();
    void openAndWait(MainWindow *w, const QStringList &folders);

    QTemporaryDir m_tmp;
    QString m_pair;
    QString m_evalOnly;
    QString m_noSamples;
    DemoPlan m_plan;
};

void TestWindow::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    m_pair = m_tmp.filePath(QStringLiteral("pair"));
    QString error;
    QVERIFY2(guitest::generatePair(m_pair, 5, 12, 600, &m_plan, &error), qPrintable(error));
    // A folder with only lm-eval results (v0.4 keys).
    m_evalOnly = m_tmp.filePath(QStringLiteral("evalonly"));
    QVERIFY(writeFile(m_evalOnly + QStringLiteral("/results_2026-11-30.json"),
        R"({"results": {"hellaswag": {"acc,none": 0.61234, "acc_stderr,none": 0.0048},
                        "arc_easy": {"acc,none": 0.7501, "acc_stderr,none": "N/A"}},
            "config": {"model": "hf", "model_args": "pretrained=ckpt,dtype=bfloat16"}})"));
    // A run that logs its loss against steps only (a W&B export), no consumed samples.
    m_noSamples = m_tmp.filePath(QStringLiteral("nosamples"));
    QByteArray csv = "step,lm loss\n";
    for (int s = 10; s <= 600; s += 10)
        csv += QByteArray::number(s) + ',' + QByteArray::number(11.0 - s / 100.0) + '\n';
    QVERIFY(writeFile(m_noSamples + QStringLiteral("/wandb_export.csv"), csv));
}

std::unique_ptr<MainWindow> TestWindow::newWindow(QSize size)
{
    auto w = std::make_unique<MainWindow>(BackendChoice::Cpu, nullptr);
    w->resize(size);
    w->show();
    if (!QTest::qWaitForWindowExposed(w.get()))
        return nullptr;
    return w;
}

std::unique_ptr<MainWindow> TestWindow::pairWindow()
{
    auto w = newWindow();
    if (!w)
        return nullptr;
    QSignalSpy ready(w.get(), &MainWindow::ready);
    w->openFolders({m_pair});
    if (!ready.wait(60000))
        return nullptr;
    w->curves()->setStatistic(QStringLiteral("lm loss"));
    return w;
}

void TestWindow::openAndWait(MainWindow *w, const QStringList &folders)
{
    QSignalSpy ready(w, &MainWindow::ready);
    w->openFolders(folders);
    QVERIFY(ready.wait(60000));
}

void TestWindow::startPageWithoutAFolder()
{
    AppSettings().addRecentFolder(m_pair);
    AppSettings().addRecentFolder(m_tmp.filePath(QStringLiteral("gone"))); // no longer there
    auto w = newWindow();
    QVERIFY(w);
    QVERIFY(w->isStartPageShown());
    StartPage *start = w->startPage();
    QVERIFY(start->isVisible());
    QVERIFY(!w->curves()->isVisible()); // no empty plots
    for (QDockWidget *dock : w->findChildren<QDockWidget *>())
        QVERIFY2(!dock->isVisible(), qPrintable(dock->objectName()));
    auto *open = start->findChild<QPushButton *>(QStringLiteral("startOpenFolder"));
    auto *demo = start->findChild<QPushButton *>(QStringLiteral("startDemo"));
    auto *recent = start->findChild<QListWidget *>(QStringLiteral("startRecent"));
    QVERIFY(open && open->isVisible() && demo && demo->isVisible() && recent && recent->isVisible());
    QCOMPARE(recent->count(), 2);
    QCOMPARE(recent->item(1)->text(), m_pair);
    QVERIFY(!(recent->item(0)->flags() & Qt::ItemIsEnabled)); // the folder that is gone
    // A recent folder opens from the page, and the views come back.
    QSignalSpy ready(w.get(), &MainWindow::ready);
    Q_EMIT recent->itemActivated(recent->item(1));
    QVERIFY(ready.wait(60000));
    QVERIFY(!w->isStartPageShown());
    QVERIFY(w->curves()->isVisible());
    QVERIFY(w->findChild<QDockWidget *>(QStringLiteral("histogramDock"))->isVisible());
    QCOMPARE(w->workspace()->runCount(), 2);
}

void TestWindow::fitsA1280x720Window_data()
{
    QTest::addColumn<QSize>("size");
    QTest::newRow("1280x720") << QSize(1280, 720);
    QTest::newRow("1366x768") << QSize(1366, 768);
    QTest::newRow("1920x1080") << QSize(1920, 1080);
}

void TestWindow::fitsA1280x720Window()
{
    QFETCH(QSize, size);
    auto w = newWindow(size);
    QVERIFY(w);
    openAndWait(w.get(), {m_pair});
    QTest::qWait(50);
    QCOMPARE(w->size(), size);
    const QSize least = w->minimumSizeHint().expandedTo(w->layout()->minimumSize());
    QVERIFY2(least.width() <= 1280 && least.height() <= 720,
        qPrintable(QStringLiteral("%1x%2").arg(least.width()).arg(least.height())));

    // Every dock in the window with room to show something (tabbed ones once raised).
    const QRect inside = w->rect();
    for (QDockWidget *dock : w->findChildren<QDockWidget *>()) {
        QVERIFY2(!dock->isHidden(), qPrintable(dock->objectName()));
        dock->raise();
        QTRY_VERIFY(dock->isVisible());
        const QRect g(dock->mapTo(w.get(), QPoint(0, 0)), dock->size());
        QVERIFY2(inside.contains(g), qPrintable(dock->objectName()));
        QVERIFY2(dock->width() >= 150 && dock->height() >= 100,
            qPrintable(QStringLiteral("%1 %2x%3").arg(dock->objectName()).arg(dock->width()).arg(dock->height())));
    }
    w->findChild<QDockWidget *>(QStringLiteral("heatmapDock"))->raise();
    QTest::qWait(20);

    // Every control of every plot in view, whole: none in the overflow menu, no text cut (the longest names
    // a user meets first: a tensor statistic, a recipe with a long name).
    w->selection()->set(
        w->workspace()->findRun(QStringLiteral("fp8")), m_plan.plantedLayerName, QStringLiteral("activation"), -1);
    w->curves()->setStatistic(QStringLiteral("tensor:underflows%"));
    QCOMPARE(w->curves()->statistic(), QStringLiteral("tensor:underflows%"));
    w->histogram()->setRecipe(QStringLiteral("block128x128"));
    QTRY_VERIFY_WITH_TIMEOUT(!w->histogram()->isComputing(), 60000);
    QTRY_VERIFY_WITH_TIMEOUT(!w->heatmap()->isLoading(), 60000);
    QTest::qWait(50); // the tool bars lay out the controls the data showed (a source picker)
    for (PlotView *view : {static_cast<PlotView *>(w->curves()), static_cast<PlotView *>(w->heatmap()),
             static_cast<PlotView *>(w->histogram())}) {
        QToolBar *bar = view->controlBar();
        auto *more = bar->findChild<QToolButton *>(QStringLiteral("qt_toolbar_ext_button"));
        QString widths;
        for (QAction *a : bar->actions()) {
            if (QWidget *c = bar->widgetForAction(a); c && a->isVisible())
                widths += QStringLiteral(" %1:%2").arg(c->objectName()).arg(c->sizeHint().width());
        }
        QVERIFY2(!more || !more->isVisible(),
            qPrintable(QStringLiteral("%1: controls overflow a bar %2 wide:%3")
                           .arg(view->objectName())
                           .arg(bar->width())
                           .arg(widths)));
        for (QAction *a : bar->actions()) {
            QWidget *control = bar->widgetForAction(a);
            if (!a->isVisible() || !control)
                continue;
            const QString name = view->objectName() + QLatin1Char('/') + control->objectName();
            QTRY_VERIFY2(control->isVisible(), qPrintable(name));
            QVERIFY2(bar->rect().contains(QRect(control->mapTo(bar, QPoint(0, 0)), control->size())), qPrintable(name));
            QVERIFY2(cutText(control).isEmpty(), qPrintable(name + QStringLiteral(": ") + cutText(control)));
            for (QWidget *child : control->findChildren<QWidget *>()) {
                if (child->isVisible())
                    QVERIFY2(cutText(child).isEmpty(), qPrintable(name + QStringLiteral(": ") + cutText(child)));
            }
        }
        // The plot has room to draw.
        QVERIFY2(view->plot()->height() >= 120 && view->plot()->width() >= 200,
            qPrintable(QStringLiteral("%1 %2x%3")
                           .arg(view->objectName())
                           .arg(view->plot()->width())
                           .arg(view->plot()->height())));
    }
    auto *backend = w->statusBar()->findChild<QLabel *>(QStringLiteral("backendStatus"));
    QVERIFY(backend && backend->isVisible());
    QVERIFY(QRect(backend->mapTo(w.get(), QPoint(0, 0)), backend->size()).right() <= inside.right());

    // Clicking a heatmap cell (the histogram computes, the statistics fill) leaves the window as it is.
    HeatmapView *heat = w->heatmap();
    heat->setStatistic(QStringLiteral("underflows%"));
    heat->setTensor(QStringLiteral("activation"));
    QTRY_VERIFY(!heat->isLoading());
    const Heatmap &h = heat->heatmap();
    QVERIFY(h.layers.size() >= 12);
    const int row = int(h.layers.indexOf(m_plan.plantedLayerName));
    QVERIFY(row >= 0);
    const QPointF centre = heat->cellCentre(row, int(h.steps.size()) - 1);
    QTest::mouseClick(heat->plot(), Qt::LeftButton, {}, centre.toPoint());
    QCOMPARE(w->selection()->layer(), m_plan.plantedLayerName);
    QTRY_VERIFY_WITH_TIMEOUT(!w->histogram()->isComputing(), 60000);
    QTest::qWait(100);
    QCOMPARE(w->size(), size);
    QVERIFY(w->histogram()->plot()->xAxis->tickLabels()); // it drew the tensor

    // Many layers in a short dock: the wheel zooms the layer axis, so that each row is tall enough to click.
    const double rowsBefore = heat->plot()->yAxis->range().size();
    QWheelEvent wheel(centre, heat->plot()->mapToGlobal(centre), QPoint(), QPoint(0, 120 * 4), Qt::NoButton,
        Qt::NoModifier, Qt::NoScrollPhase, false);
    QCoreApplication::sendEvent(heat->plot(), &wheel);
    const double rowsAfter = heat->plot()->yAxis->range().size();
    QVERIFY2(rowsAfter < rowsBefore * 0.8, qPrintable(QStringLiteral("%1 -> %2").arg(rowsBefore).arg(rowsAfter)));
    QVERIFY(rowsAfter >= 3 - 1e-9);
    heat->plot()->replot();
    QTRY_VERIFY(heat->plot()->yAxis->range().contains(row));
    const QPointF near = heat->cellCentre(row, 0);
    QTest::mouseClick(heat->plot(), Qt::LeftButton, {}, near.toPoint());
    QCOMPARE(w->selection()->layer(), h.layers[row]);

    // The comparison tab fits too: its pickers whole, both plots with room, the window as it was.
    w->showComparison();
    CompareView *compare = w->compare();
    QTRY_VERIFY_WITH_TIMEOUT(compare->comparison() && !compare->isComputing(), 60000);
    QTest::qWait(50);
    for (const char *name : {"compareBaseline", "compareRun", "compareStatistic"}) {
        auto *box = compare->findChild<QComboBox *>(QLatin1String(name));
        QVERIFY2(box && box->isVisible() && cutText(box).isEmpty(), name);
    }
    QVERIFY2(compare->overlay()->plot()->axisRect()->height() >= 80
            && compare->difference()->plot()->axisRect()->height() >= 50,
        qPrintable(QStringLiteral("%1 / %2")
                       .arg(compare->overlay()->plot()->axisRect()->height())
                       .arg(compare->difference()->plot()->axisRect()->height())));
    // Its tables' tabs are whole (no scroll arrows).
    auto *tabs = compare->findingsTable()->parentWidget()->parentWidget();
    QVERIFY(tabs);
    for (QToolButton *arrow : tabs->findChildren<QToolButton *>())
        QVERIFY2(!arrow->isVisible(), "the comparison's table tabs scroll");
    QVERIFY2(compare->findingsTable()->height() >= 100 && compare->findingsTable()->width() >= 150,
        qPrintable(
            QStringLiteral("%1x%2").arg(compare->findingsTable()->width()).arg(compare->findingsTable()->height())));
    QCOMPARE(w->size(), size);
}

void TestWindow::tensorStatisticBeforeATensorIsChosen()
{
    auto w = pairWindow();
    QVERIFY(w);
    CurveView *curves = w->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QVERIFY(!curves->curves().empty());
    QVERIFY(curves->message().isEmpty());
    QVERIFY(w->selection()->tensor().isEmpty());
    curves->setStatistic(QStringLiteral("tensor:mse"));
    QVERIFY(curves->curves().empty());
    QVERIFY2(curves->message().contains(QStringLiteral("choose a tensor")), qPrintable(curves->message()));
    // The loss's axes do not linger.
    QVERIFY(!curves->plot()->yAxis->tickLabels());
    QVERIFY(!curves->plot()->xAxis->tickLabels());
    QVERIFY(curves->plot()->legend->visible() == false);
    // Once a tensor is chosen the message goes.
    w->selection()->set(
        w->workspace()->findRun(QStringLiteral("fp8")), m_plan.plantedLayerName, QStringLiteral("activation"), -1);
    QVERIFY(!curves->curves().empty());
    QVERIFY(curves->message().isEmpty());
    QVERIFY(curves->plot()->yAxis->tickLabels());
}

void TestWindow::statisticThatIsAllZeroAsLogged()
{
    auto w = pairWindow();
    QVERIFY(w);
    // A Transformer Engine statistics log prints four decimals: an underflow of 0.00003 % reads 0.0000 at
    // every step and layer, while the MSE beside it does not.
    const QString dir = m_tmp.filePath(QStringLiteral("zeros"));
    QByteArray log;
    for (int it = 0; it <= 90; it += 10) {
        for (int layer = 0; layer < 3; ++layer) {
            for (const char *stat : {"underflows%", "mse"}) {
                log += "2026-11-30 12:00:00,000 - INFO - decoder.layers." + QByteArray::number(layer)
                    + ".mlp.linear_fc1_activation_" + stat
                    + " \t\t\t\t iteration=" + QByteArray::number(it).rightJustified(6, '0') + " \t\t\t\t value="
                    + (qstrcmp(stat, "mse") == 0 ? QByteArray::number(0.5 + 0.01 * it + layer, 'f', 4) : "0.0000")
                    + '\n';
            }
        }
    }
    QVERIFY(
        writeFile(dir + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"), log));
    // The run's Transformer Engine predates 2.7: what its underflows% counted is said over the map, once.
    QVERIFY(writeFile(dir + QStringLiteral("/requirements.txt"), "transformer_engine==2.6.0\ntorch==2.7.0\n"));
    openAndWait(w.get(), {dir});
    HeatmapView *heat = w->heatmap();
    heat->setTensor(QStringLiteral("activation"));
    heat->setStatistic(QStringLiteral("underflows%"));
    QTRY_VERIFY(!heat->isLoading());
    QCOMPARE(heat->heatmap().layers.size(), 3);
    QVERIFY2(heat->message().contains(QStringLiteral("is 0 as logged")), qPrintable(heat->message()));
    QVERIFY2(heat->caveat().contains(QStringLiteral("Transformer Engine 2.6.0 counted as underflows")),
        qPrintable(heat->caveat()));
    heat->setStatistic(QStringLiteral("mse"));
    QTRY_VERIFY(!heat->isLoading());
    QVERIFY2(heat->message().isEmpty(), qPrintable(heat->message()));
    QVERIFY2(heat->caveat().isEmpty(), qPrintable(heat->caveat()));
    w->selection()->set(
        w->workspace()->runAt(0), QStringLiteral("decoder.layers.1.mlp.linear_fc1"), QStringLiteral("activation"), -1);
    w->curves()->setStatistic(QStringLiteral("tensor:underflows%"));
    QCOMPARE(w->curves()->curves().size(), size_t(1));
    QVERIFY2(w->curves()->message().contains(QStringLiteral("four decimals")), qPrintable(w->curves()->message()));
    w->curves()->setStatistic(QStringLiteral("tensor:mse"));
    QCOMPARE(w->curves()->curves().size(), size_t(1));
    QVERIFY(w->curves()->message().isEmpty());
}

void TestWindow::evaluationOnlyFolderSaysWhatItHolds()
{
    auto w = pairWindow();
    QVERIFY(w);
    HeatmapView *heat = w->heatmap();
    QTRY_VERIFY(!heat->isLoading());
    QVERIFY(!heat->heatmap().values.empty());
    QVERIFY(!heat->scaleLabel().isEmpty());
    openAndWait(w.get(), {m_evalOnly});
    QCOMPARE(w->workspace()->runCount(), 1);
    CurveView *curves = w->curves();
    QVERIFY(curves->curves().empty());
    QVERIFY2(curves->message().contains(QStringLiteral("2 evaluation scores")), qPrintable(curves->message()));
    // Nothing of the pair lingers: no curves' axes, no heatmap matrix, ticks or colour scale.
    QVERIFY(!curves->plot()->yAxis->tickLabels());
    QTRY_VERIFY(!heat->isLoading());
    QVERIFY(heat->heatmap().values.empty());
    QVERIFY2(heat->message().contains(QStringLiteral("per-layer statistics")), qPrintable(heat->message()));
    QVERIFY(heat->scaleLabel().isEmpty());
    QVERIFY(!heat->plot()->yAxis->tickLabels());
    QVERIFY(!w->histogram()->plot()->xAxis->tickLabels());
    QVERIFY(!w->histogram()->plot()->yAxis->tickLabels());
    // The scores are listed, with all their digits.
    QTRY_VERIFY(w->statsTable()->model()->rowCount() >= 2);
    const QStringList stats = column(w->statsTable()->model(), StatsTableModel::StatColumn);
    QVERIFY2(stats.contains(QStringLiteral("hellaswag / acc")), qPrintable(stats.join(QLatin1Char(';'))));
    const int row = int(stats.indexOf(QStringLiteral("hellaswag / acc")));
    QCOMPARE(w->statsTable()->model()->index(row, StatsTableModel::ValueColumn).data().toString(),
        QLocale().toString(0.61234, 'g', 8));
    QCOMPARE(w->statsTable()->model()->index(row, StatsTableModel::ScopeColumn).data().toString(),
        QStringLiteral("evaluation"));
}

void TestWindow::runNamesAreTheSameInEveryView()
{
    auto w = pairWindow();
    QVERIFY(w);
    Workspace *ws = w->workspace();
    const RunRef fp8 = ws->findRun(QStringLiteral("fp8"));
    const RunRef bf16 = ws->findRun(QStringLiteral("bf16"));
    // The demo's manifests name them.
    const QString fp8Name = ws->run(fp8)->run.label(), bf16Name = ws->run(bf16)->run.label();
    QCOMPARE(fp8Name, QStringLiteral("FP8 run"));
    QCOMPARE(bf16Name, QStringLiteral("BF16 baseline"));
    auto *runs = w->runTable()->model();
    QCOMPARE(column(runs, RunListModel::NameColumn), (QStringList {bf16Name, fp8Name}));
    QVERIFY(column(runs, RunListModel::BaselineColumn).contains(bf16Name));
    QVERIFY(column(runs, RunListModel::NameColumn, Qt::ToolTipRole).at(1).contains(fp8Name));
    w->curves()->setStatistic(QStringLiteral("lm loss"));
    QCOMPARE(legendNames(w->curves()->plot()), (QStringList {bf16Name, fp8Name}));
    auto *heatRuns = w->heatmap()->findChild<QComboBox *>(QStringLiteral("heatmapRun"));
    QVERIFY(comboItems(heatRuns).contains(fp8Name));
    QVERIFY(w->curves()->toolTipAt(100).contains(fp8Name + QStringLiteral(": ")));
    const QString csv = w->curves()->csv();
    QVERIFY(csv.contains(QLatin1Char('\n') + fp8Name + QLatin1Char(',')));
    QVERIFY(csv.contains(QLatin1Char('\n') + bf16Name + QLatin1Char(',')));
    QVERIFY(!csv.contains(QStringLiteral("\nfp8,")));
    QVERIFY(w->curves()->title().contains(fp8Name));

    // Colours stay distinct for twelve runs, then the line style changes.
    QSet<QRgb> colours;
    for (int i = 0; i < kRunColours; ++i)
        colours.insert(runColour(i).rgb());
    QCOMPARE(colours.size(), kRunColours);
    QCOMPARE(runLineStyle(0), Qt::SolidLine);
    QVERIFY(runLineStyle(kRunColours) != Qt::SolidLine);
    QCOMPARE(runColour(kRunColours), runColour(0));
}

void TestWindow::untickingARunHidesItEverywhere()
{
    auto w = pairWindow();
    QVERIFY(w);
    Workspace *ws = w->workspace();
    const RunRef fp8 = ws->findRun(QStringLiteral("fp8"));
    const QString fp8Name = ws->run(fp8)->run.label();
    w->selection()->set(fp8, m_plan.plantedLayerName, QStringLiteral("activation"), -1);
    QCOMPARE(w->heatmap()->run(), fp8);
    auto *runs = w->runTable()->model();
    QVERIFY(runs->setData(runs->index(ws->indexOf(fp8), RunListModel::NameColumn), Qt::Unchecked, Qt::CheckStateRole));
    // Curves, legend, heatmap picker, the selection (histogram and statistics) and the CSV.
    w->curves()->setStatistic(QStringLiteral("lm loss"));
    for (const auto &c : w->curves()->curves())
        QVERIFY(c.run != fp8);
    QVERIFY(!legendNames(w->curves()->plot()).contains(fp8Name));
    QVERIFY(!w->curves()->csv().contains(fp8Name));
    auto *heatRuns = w->heatmap()->findChild<QComboBox *>(QStringLiteral("heatmapRun"));
    QVERIFY(!comboItems(heatRuns).contains(fp8Name));
    QVERIFY(w->heatmap()->run() != fp8);
    QVERIFY(w->selection()->run() != fp8);
    // The run list keeps it, unticked, to tick it back.
    QCOMPARE(column(runs, RunListModel::NameColumn).size(), 2);
    QVERIFY(runs->setData(runs->index(ws->indexOf(fp8), RunListModel::NameColumn), Qt::Checked, Qt::CheckStateRole));
    QVERIFY(comboItems(heatRuns).contains(fp8Name));
    QCOMPARE(w->curves()->curves().size(), size_t(2));
}

void TestWindow::samplesAxisLeavesOutRunsWithoutSamples()
{
    auto w = newWindow();
    QVERIFY(w);
    openAndWait(w.get(), {m_pair, m_noSamples});
    Workspace *ws = w->workspace();
    QCOMPARE(ws->runCount(), 3);
    CurveView *curves = w->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QCOMPARE(curves->curves().size(), size_t(3));
    QVERIFY(curves->note().isEmpty());
    curves->setXBySamples(true);
    QCOMPARE(curves->curves().size(), size_t(2)); // the pair, placed by their samples
    const QString loose = ws->run(ws->findRun(QStringLiteral("nosamples")))->run.label();
    QVERIFY2(curves->note().contains(loose), qPrintable(curves->note()));
    for (const auto &c : curves->curves())
        QVERIFY(c.xs.back() > c.steps.back() * 10); // samples, not steps
    curves->setXBySamples(false);
    QCOMPARE(curves->curves().size(), size_t(3));
    QVERIFY(curves->note().isEmpty());

    // A run that logs its batch size is placed by it: samples = steps x batch size, summed per interval.
    const QString batched = m_tmp.filePath(QStringLiteral("batched"));
    QByteArray csv = "step,lm loss,global batch size\n";
    for (int s = 10; s <= 100; s += 10)
        csv += QByteArray::number(s) + ',' + QByteArray::number(11.0 - s / 100.0) + ',' + (s <= 50 ? "128" : "256")
            + '\n';
    QVERIFY(writeFile(batched + QStringLiteral("/wandb_export.csv"), csv));
    openAndWait(w.get(), {batched});
    curves->setStatistic(QStringLiteral("lm loss"));
    curves->setXBySamples(true);
    QCOMPARE(curves->curves().size(), size_t(1));
    QVERIFY(curves->note().isEmpty());
    const auto &c = curves->curves().front();
    QCOMPARE(c.xs.front(), 10.0 * 128);
    QCOMPARE(c.xs.back(), 50.0 * 128 + 50.0 * 256);
}

void TestWindow::runSettingsSurviveAReopen()
{
    // A copy, so the other tests keep the demo's names.
    const QString pair = m_tmp.filePath(QStringLiteral("pair-settings"));
    QString error;
    QVERIFY2(guitest::generatePair(pair, 6, 2, 200, nullptr, &error), qPrintable(error));
    auto w = newWindow();
    QVERIFY(w);
    openAndWait(w.get(), {pair});
    Workspace *ws = w->workspace();
    RunRef fp8 = ws->findRun(QStringLiteral("fp8"));
    w->selection()->set(fp8, QString(), QString(), 100);
    RunManifest m {QStringLiteral("FP8 tuned amax"), QStringLiteral("mxfp8"), QStringLiteral("mxfp8"),
        QStringLiteral("bf16"), QStringLiteral("fp8"), QStringLiteral("second try"), QStringLiteral("0.02")};
    QSignalSpy ready(w.get(), &MainWindow::ready);
    QVERIFY2(w->setRunSettings(fp8, m, &error), qPrintable(error));
    QVERIFY(ready.wait(60000));
    fp8 = ws->findRun(QStringLiteral("fp8"));
    QCOMPARE(ws->run(fp8)->run.label(), m.name);
    QCOMPARE(ws->run(fp8)->run.precision, m.precision);
    QCOMPARE(ws->run(fp8)->run.inferencePrecision, m.inferencePrecision);
    QCOMPARE(ws->run(fp8)->run.lossGapBar, std::optional<double>(0.02)); // the accepted loss gap, as a baseline
    QCOMPARE(w->selection()->run(), fp8); // the selection stays on it
    QCOMPARE(w->selection()->step(), 100);
    auto *runs = w->runTable()->model();
    QVERIFY(column(runs, RunListModel::NameColumn).contains(m.name));
    QVERIFY(column(runs, RunListModel::PrecisionColumn).contains(m.precision));
    QVERIFY(legendNames(w->curves()->plot()).contains(m.name));
    // In the run's folder, for the next window (and the next person).
    QFile f(pair + QStringLiteral("/fp8/fp8scope.json"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject o2 = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(o2.value(QLatin1String("name")).toString(), m.name);
    QCOMPARE(o2.value(QLatin1String("notes")).toString(), m.notes);
    QCOMPARE(o2.value(QLatin1String("loss_gap_bar")).toDouble(), 0.02);
    w.reset();

    auto again = newWindow();
    QVERIFY(again);
    openAndWait(again.get(), {pair});
    const RunRef r = again->workspace()->findRun(m.name);
    QVERIFY(r.isValid());
    QCOMPARE(again->workspace()->run(r)->run.recipe, m.recipe);
    QCOMPARE(again->workspace()->run(r)->run.notes, m.notes);
    QVERIFY(column(again->runTable()->model(), RunListModel::NameColumn).contains(m.name));
    // Clearing the name gives the folder's name back.
    m.name.clear();
    QSignalSpy ready2(again.get(), &MainWindow::ready);
    QVERIFY2(again->setRunSettings(r, m, &error), qPrintable(error));
    QVERIFY(ready2.wait(60000));
    QVERIFY(again->workspace()->findRun(QStringLiteral("fp8")).isValid());
    QCOMPARE(again->workspace()->run(again->workspace()->findRun(QStringLiteral("fp8")))->run.label(),
        QStringLiteral("fp8"));
    // The dialog says the file the settings go to, and the key where it is a workspace manifest.
    const QString own = pair + QStringLiteral("/fp8/fp8scope.json");
    RunSettingsDialog folderRun(QStringLiteral("fp8"), m, {QStringLiteral("bf16")}, own, QString());
    const QString ownText = folderRun.findChild<QLabel *>(QStringLiteral("runSettingsWhere"))->text();
    QVERIFY2(ownText.contains(QDir::toNativeSeparators(own)), qPrintable(ownText));
    const QString workspaceFile = pair + QStringLiteral("/fp8scope-workspace.json");
    RunSettingsDialog fileRun(QStringLiteral("history_ab12"), m, {}, workspaceFile, QStringLiteral("history_ab12"));
    const QString keyText = fileRun.findChild<QLabel *>(QStringLiteral("runSettingsWhere"))->text();
    QVERIFY2(keyText.contains(QDir::toNativeSeparators(workspaceFile))
            && keyText.contains(QLatin1String("\"history_ab12\"")),
        qPrintable(keyText));
}

void TestWindow::secondFolderAddsItsRuns()
{
    auto w = pairWindow();
    QVERIFY(w);
    QCOMPARE(w->workspace()->runCount(), 2);
    QSignalSpy ready(w.get(), &MainWindow::ready);
    w->addFolders({m_noSamples});
    QVERIFY(ready.wait(60000));
    QCOMPARE(w->workspace()->folders().size(), 2);
    QCOMPARE(w->workspace()->runCount(), 3);
    // A run hidden before stays hidden.
    Workspace *ws = w->workspace();
    ws->setRunVisible(ws->findRun(QStringLiteral("bf16")), false);
    QSignalSpy again(w.get(), &MainWindow::ready);
    w->addFolders({m_evalOnly});
    QVERIFY(again.wait(60000));
    QCOMPARE(ws->runCount(), 4);
    QVERIFY(!ws->run(ws->findRun(QStringLiteral("bf16")))->visible);
    QVERIFY(ws->run(ws->findRun(QStringLiteral("fp8")))->visible);
    QVERIFY(w->windowTitle().contains(QStringLiteral("nosamples")));
    // Adding one already open changes nothing.
    w->addFolders({m_noSamples});
    QCOMPARE(w->workspace()->folders().size(), 3);
}

void TestWindow::statisticsTableCopiesEnoughDigits()
{
    auto w = pairWindow();
    QVERIFY(w);
    const RunRef fp8 = w->workspace()->findRun(QStringLiteral("fp8"));
    w->selection()->set(fp8, QString(), QString(), -1);
    auto *model = qobject_cast<StatsTableModel *>(w->statsTable()->model());
    QVERIFY(model && model->rowCount() > 0);
    // Eight significant digits on screen; the whole double in a copy.
    const QString all = tableText(model);
    QVERIFY(all.startsWith(QStringLiteral("Statistic\tRecipe\tValue\t")));
    QCOMPARE(all.count(QLatin1Char('\n')), model->rowCount() + 1);
    w->statsTable()->selectRow(0);
    auto *copy = w->statsTable()->findChild<QAction *>(QStringLiteral("statsTableCopy"));
    QVERIFY(copy);
    copy->trigger();
    const QString copied = QGuiApplication::clipboard()->text();
    QCOMPARE(copied.count(QLatin1Char('\n')), 2);
    const QStringList fields = copied.section(QLatin1Char('\n'), 1, 1).split(QLatin1Char('\t'));
    const QString shown = model->index(0, StatsTableModel::ValueColumn).data().toString();
    const double exact = fields.at(StatsTableModel::ValueColumn).toDouble();
    QCOMPARE(QString::number(exact, 'g', QLocale::FloatingPointShortest), fields.at(StatsTableModel::ValueColumn));
    QCOMPARE(QLocale().toString(exact, 'g', 8), shown);
    // A cosine of 0.9996 is not shown as 1.
    QCOMPARE(QLocale().toString(0.9996, 'g', 8), QLocale().toString(0.9996));
    QVERIFY(QLocale().toString(0.99999, 'g', 8) != QLocale().toString(1.0, 'g', 8));
    const QString csv = tableText(model, {}, true);
    QVERIFY(csv.startsWith(QStringLiteral("Statistic,Recipe,Value,")));
}

void TestWindow::nvfp4ShowsE2M1()
{
    auto w = newWindow();
    QVERIFY(w);
    HistogramView *hist = w->histogram();
    auto *format = hist->findChild<QComboBox *>(QStringLiteral("histogramFormat"));
    QVERIFY(format);
    hist->setRecipe(QStringLiteral("current"), QStringLiteral("e5m2"));
    QCOMPARE(format->currentText(), QStringLiteral("E5M2"));
    hist->setRecipe(QStringLiteral("nvfp4"));
    QCOMPARE(format->currentText(), QStringLiteral("E2M1"));
    QVERIFY(!format->isEnabled());
    hist->setRecipe(QStringLiteral("mxfp8"));
    QCOMPARE(format->currentText(), QStringLiteral("E5M2")); // the pick comes back
    QVERIFY(format->isEnabled());
    QCOMPARE(format->findText(QStringLiteral("E2M1")), -1);
}

void TestWindow::shortSeriesAreNotSmoothed()
{
    // Six points, the last a spike: smoothing would end below it and flatten it.
    const QString dir = m_tmp.filePath(QStringLiteral("short"));
    QVERIFY(writeFile(dir + QStringLiteral("/wandb_export.csv"),
        "step,lm loss\n100,3.2\n200,3.1\n300,3.0\n400,2.9\n500,2.8\n600,22.5\n"));
    auto w = newWindow();
    QVERIFY(w);
    openAndWait(w.get(), {dir});
    CurveView *curves = w->curves();
    curves->setSmoothing(Smoothing::Ema, 0.9);
    curves->setStatistic(QStringLiteral("lm loss"));
    QCOMPARE(curves->curves().size(), size_t(1));
    const auto &c = curves->curves().front();
    QVERIFY(c.raw);
    QCOMPARE(c.raw->pen().color().alpha(), 255); // drawn as logged
    QVERIFY(!c.smoothed->visible());
    QCOMPARE((c.raw->data()->constEnd() - 1)->value, 22.5);
    QVERIFY(curves->csv().contains(QStringLiteral(",22.5,22.5,22.5,22.5\n")));
    // The slider says its value.
    auto *value = curves->findChild<QLabel *>(QStringLiteral("curveSmoothingValue"));
    QVERIFY(value);
    QCOMPARE(value->text(), QStringLiteral("0.90"));
}

void TestWindow::skippedNanAndLossScaleCutsAreMarked_data()
{
    QTest::addColumn<int>("iterations");
    QTest::newRow("20 points") << 200;
    QTest::newRow("3000 points, read in buckets first") << 30000;
}

void TestWindow::skippedNanAndLossScaleCutsAreMarked()
{
    // A Megatron log whose loss scale is cut twice (each with a skipped iteration) and whose grad norm is nan
    // once.
    QFETCH(int, iterations);
    const QString dir = m_tmp.filePath(QStringLiteral("skips%1").arg(iterations));
    QByteArray log;
    double scale = 65536;
    // It crashes after iteration 170 and resumes from the checkpoint of iteration 160.
    bool resumed = false;
    for (int it = 10; it <= iterations; it += 10) {
        if (it == 180 && !resumed) {
            resumed = true;
            it = 170;
            log += "srun: error: node-17: task 3: Exited with exit code 1\n"
                   "  successfully loaded checkpoint from /checkpoints/run [ t 1/1, p 1/1 ] at iteration 160\n";
        }
        const bool cut = it == 50 || it == 120;
        if (cut)
            scale /= 2;
        log += megatronLine(it, iterations, 10.0 - it / 50.0, scale,
            it == 150 ? QByteArray("nan") : QByteArray("0.950"), cut ? 1 : 0, it == 150 ? 1 : 0);
    }
    QVERIFY(writeFile(dir + QStringLiteral("/logs/train.out"), log));
    auto w = newWindow();
    QVERIFY(w);
    openAndWait(w.get(), {dir});
    CurveView *curves = w->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QCOMPARE(curves->curves().size(), size_t(1));
    QStringList marks;
    for (const auto &m : curves->marks())
        marks << QStringLiteral("%1:%2").arg(m.step).arg(int(m.kind));
    QCOMPARE(marks,
        (QStringList {QStringLiteral("50:0"), QStringLiteral("50:2"), QStringLiteral("120:0"), QStringLiteral("120:2"),
            QStringLiteral("150:1"), QStringLiteral("160:%1").arg(int(CurveSource::Event::Restart))}));
    const auto &cut = curves->marks()[1];
    QCOMPARE(cut.value, 32768.0);
    QVERIFY(curves->toolTipAt(cut.x).contains(QStringLiteral("loss scale cut to 32768")));
    // The restart: at the checkpoint's step, after the log had reached 170.
    const auto &restart = curves->marks()[5];
    QCOMPARE(restart.value, 170.0);
    QVERIFY2(curves->toolTipAt(restart.x).contains(QStringLiteral("restarted here, after reaching step 170")),
        qPrintable(curves->toolTipAt(restart.x)));
    QVERIFY(legendNames(curves->plot(), true).contains(CurveView::markName(CurveSource::Event::Restart)));
    const QStringList legend = legendNames(curves->plot(), true);
    QVERIFY2(legend.contains(CurveView::markName(CurveSource::Event::LossScaleDrop)),
        qPrintable(legend.join(QLatin1Char(','))));
    // The grad norm's own nan point is marked where its curve has a gap (once zoomed in to single points).
    curves->setStatistic(QStringLiteral("grad norm"));
    curves->plot()->xAxis->setRange(100, 200);
    curves->refetchNow();
    QVERIFY(!curves->curves().front().bucketed);
    bool nanMarked = false;
    for (const auto &m : curves->marks())
        nanMarked = nanMarked || (m.step == 150 && m.kind == CurveSource::Event::NotFinite && std::isnan(m.value));
    QVERIFY(nanMarked);
}

// A statistic with an infinite value (a step that overflowed, drawn as a mark) gets the range of its finite values:
// QCustomPlot's own range of it was infinite, which the axis refused, keeping the statistic shown before.
void TestWindow::infiniteValuesLeaveTheAxisToTheFiniteOnes()
{
    const QString dir = m_tmp.filePath(QStringLiteral("overflow"));
    QByteArray log;
    for (int it = 10; it <= 200; it += 10) {
        log += megatronLine(it, 200, 10.0 - it / 50.0, 1.0,
            it == 100 ? QByteArray("inf") : QByteArray::number(0.9 + it / 2000.0, 'f', 3));
    }
    QVERIFY(writeFile(dir + QStringLiteral("/logs/train.out"), log));
    auto w = newWindow();
    QVERIFY(w);
    openAndWait(w.get(), {dir});
    CurveView *curves = w->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QVERIFY(curves->plot()->yAxis->range().contains(6.0));
    curves->setStatistic(QStringLiteral("grad norm"));
    const QCPRange y = curves->plot()->yAxis->range();
    QVERIFY2(y.lower > 0.8 && y.upper < 1.1 && y.contains(0.905) && y.contains(1.0),
        qPrintable(QStringLiteral("%1 .. %2").arg(y.lower).arg(y.upper)));
}

void TestWindow::exportsSayWhatTheyShow()
{
    auto w = pairWindow();
    QVERIFY(w);
    CurveView *curves = w->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QCOMPARE(curves->title(), QStringLiteral("lm loss — BF16 baseline, FP8 run — by step"));
    QCOMPARE(curves->defaultFileName(), QStringLiteral("lm-loss-bf16-baseline-fp8-run-by-step"));
    QCOMPARE(curves->plot()->yAxis->label(), QStringLiteral("lm loss"));
    QCOMPARE(curves->plot()->xAxis->label(), QStringLiteral("step"));
    // The written plot carries the title; the window's plot does not keep it.
    const int elements = curves->plot()->plotLayout()->elementCount();
    const QString svg = m_tmp.filePath(QStringLiteral("curves.svg"));
    QString error;
    QVERIFY2(curves->exportPlot(svg, &error), qPrintable(error));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray text = f.readAll();
    QVERIFY(text.contains("<title>lm loss — BF16 baseline, FP8 run — by step</title>"));
    QVERIFY2(text.count("BF16 baseline, FP8 run") >= 2, text.left(2000).constData()); // and the heading drawn
    QCOMPARE(curves->plot()->plotLayout()->elementCount(), elements);
    HeatmapView *heat = w->heatmap();
    heat->setStatistic(QStringLiteral("underflows%"));
    heat->setTensor(QStringLiteral("activation"));
    QTRY_VERIFY(!heat->isLoading());
    QVERIFY2(heat->defaultFileName().startsWith(QStringLiteral("underflowspct-activation")),
        qPrintable(heat->defaultFileName()));
    QVERIFY(heat->title().contains(QStringLiteral("FP8 run")));
    // The histogram's names the tensor, its step, the run and the recipe.
    w->selection()->set(w->workspace()->findRun(QStringLiteral("fp8")), m_plan.plantedLayerName,
        QStringLiteral("activation"), m_plan.dumpSteps.last().toLongLong());
    QTRY_VERIFY_WITH_TIMEOUT(w->histogram()->metrics().has_value() && !w->histogram()->isComputing(), 60000);
    const QString histTitle = w->histogram()->title();
    QVERIFY2(histTitle.startsWith(
                 QStringLiteral("log2|x| of ") + m_plan.plantedLayerName + QStringLiteral(" activation at step ")),
        qPrintable(histTitle));
    QVERIFY2(histTitle.contains(QStringLiteral("FP8 run")) && histTitle.contains(QStringLiteral("(E4M3)")),
        qPrintable(histTitle));
}

void TestWindow::transformerEngineDumpsOpen()
{
    // A DumpTensors folder as Transformer Engine writes it (.pt files, written by real torch in the test
    // venv): its layers in the tree under their real names, and the histogram of one of its dumps.
    const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        QSKIP("no test Python (packaging/install-deps.sh --python-venv build/venv makes one)");
    const QString out = m_tmp.filePath(QStringLiteral("te-dumps"));
    QProcess p;
    p.start(python,
        {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/write_torch_dumps.py"),
            out});
    QVERIFY(p.waitForFinished(600000));
    if (p.exitCode() == 3)
        QSKIP("torch is not importable in the test Python");
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    auto w = newWindow();
    QVERIFY(w);
    openAndWait(w.get(), {out + QStringLiteral("/run")});
    QStringList names;
    QAbstractItemModel *tree = w->layerTree()->model();
    std::function<void(const QModelIndex &)> walk = [&](const QModelIndex &parent) {
        for (int r = 0; r < tree->rowCount(parent); ++r) {
            const QModelIndex i = tree->index(r, 0, parent);
            names << i.data().toString();
            walk(i);
        }
    };
    walk({});
    const QString qkv = QStringLiteral("model.layers.0.self_attention.linear_qkv");
    QVERIFY2(
        names.join(QLatin1Char('|')).contains(QStringLiteral("linear_qkv")), qPrintable(names.join(QLatin1Char('|'))));
    QVERIFY2(!names.join(QLatin1Char('|')).contains(QStringLiteral("model_layers_0")),
        qPrintable(names.join(QLatin1Char('|'))));
    const RunRef run = w->workspace()->runAt(0);
    w->selection()->set(run, qkv, QStringLiteral("activation"), 20);
    QTRY_VERIFY_WITH_TIMEOUT(w->histogram()->metrics().has_value() && !w->histogram()->isComputing(), 60000);
    QVERIFY2(w->histogram()->title().contains(qkv + QStringLiteral(" activation at step 20")),
        qPrintable(w->histogram()->title()));
    QCOMPARE(w->histogram()->metrics()->numel, qint64(16 * 64));
}

void TestWindow::aboutListsVersionsAndCopiesThem()
{
    auto w = newWindow();
    QVERIFY(w);
    w->setCudaVersions({{QStringLiteral("CUDA runtime"), QStringLiteral("13.0 (test)")}});
    auto *about = w->findChild<QAction *>(QStringLiteral("showAbout"));
    QVERIFY(about);
    about->trigger();
    auto *dialog = w->findChild<AboutDialog *>(QStringLiteral("aboutDialog"));
    QVERIFY(dialog);
    QVERIFY(QTest::qWaitForWindowExposed(dialog));
    auto *title = dialog->findChild<QLabel *>(QStringLiteral("aboutTitle"));
    QVERIFY(title && title->text().contains(QStringLiteral("fp8scope ") + fp8scopeVersion()));
    if (!fp8scopeRevision().isEmpty())
        QVERIFY(title->text().contains(fp8scopeRevision()));
    auto *table = dialog->findChild<QTableWidget *>(QStringLiteral("aboutVersions"));
    QVERIFY(table);
    QMap<QString, QString> rows;
    for (int r = 0; r < table->rowCount(); ++r)
        rows.insert(table->item(r, 0)->text(), table->item(r, 1)->text());
    for (const ComponentVersion &c : libraryVersions())
        QCOMPARE(rows.value(c.component), c.version);
    QVERIFY(rows.value(QStringLiteral("Qt")).startsWith(QString::fromLatin1(qVersion())));
    QVERIFY(rows.contains(QStringLiteral("HDF5")) && rows.contains(QStringLiteral("SQLite")));
    QVERIFY(rows.value(QStringLiteral("CPU kernels")).contains(QStringLiteral("Highway")));
    QCOMPARE(rows.value(QStringLiteral("CUDA runtime")), QStringLiteral("13.0 (test)"));
    QCOMPARE(rows.value(QStringLiteral("Compute backend")), w->backendStatus());
    // Copy puts the same on the clipboard, for a bug report.
    auto *copy = dialog->findChild<QPushButton *>(QStringLiteral("copyVersions"));
    QVERIFY(copy);
    QGuiApplication::clipboard()->clear();
    copy->click();
    const QString text = QGuiApplication::clipboard()->text();
    QVERIFY2(text.startsWith(versionLine(QStringLiteral("fp8scope")) + QLatin1Char('\n')), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("\nSQLite: ") + rows.value(QStringLiteral("SQLite")) + QLatin1Char('\n')));
    QVERIFY(text.contains(QStringLiteral("\nCUDA runtime: 13.0 (test)\n")));
    QCOMPARE(dialog->versionsText(), text);
    // The backend chosen while the box is open: the box follows (the status is "selecting..." until then).
    QTRY_VERIFY_WITH_TIMEOUT(!w->backendStatus().contains(QStringLiteral("selecting")), 30000);
    const auto backendRow = [table] {
        for (int r = 0; r < table->rowCount(); ++r) {
            if (table->item(r, 0)->text() == QLatin1String("Compute backend"))
                return table->item(r, 1)->text();
        }
        return QString();
    };
    QCOMPARE(backendRow(), w->backendStatus());
    QVERIFY(dialog->versionsText().contains(QStringLiteral("Compute backend: ") + w->backendStatus()));
    dialog->close();
}

void TestWindow::toolbarActionsHaveIcons()
{
    // An icon that drew something: some pixel is not transparent.
    const auto drawn = [](const QIcon &icon, int size) {
        const QImage image = icon.pixmap(size, size).toImage();
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x)
                if (qAlpha(image.pixel(x, y)) > 0)
                    return true;
        return false;
    };
    QVERIFY(drawn(applicationIcon(), 256));
    QVERIFY(applicationIcon().availableSizes().contains(QSize(16, 16)));
    QVERIFY(!drawn(actionIcon(QStringLiteral("no-such-icon")), 16));
    auto w = newWindow();
    QVERIFY(w);
    auto *bar = w->findChild<QToolBar *>(QStringLiteral("mainToolBar"));
    QVERIFY(bar);
    QStringList names;
    for (QAction *a : bar->actions()) {
        names << a->objectName();
        QVERIFY2(drawn(a->icon(), 20), qPrintable(a->objectName()));
    }
    QCOMPARE(names,
        (QStringList {QStringLiteral("openFolder"), QStringLiteral("showComparison"), QStringLiteral("showTriage"),
            QStringLiteral("exportReport")}));
}

void TestWindow::manifestPathsOpenTheirFolder()
{
    const QString run = m_tmp.filePath(QStringLiteral("manifested"));
    QByteArray csv = "step,lm loss\n";
    for (int s = 10; s <= 200; s += 10)
        csv += QByteArray::number(s) + ',' + QByteArray::number(10.0 - s / 100.0) + '\n';
    QVERIFY(writeFile(run + QStringLiteral("/wandb_export.csv"), csv));
    QVERIFY(writeFile(run + QStringLiteral("/fp8scope.json"), R"({"precision": "bf16"})"));
    QVERIFY(writeFile(run + QStringLiteral("/notes.json"), "{}"));
    QCOMPARE(MainWindow::folderToOpen(run), run);
    QCOMPARE(MainWindow::folderToOpen(run + QStringLiteral("/fp8scope.json")), QFileInfo(run).absoluteFilePath());
    QVERIFY(MainWindow::folderToOpen(run + QStringLiteral("/notes.json")).isEmpty());
    QVERIFY(MainWindow::folderToOpen(run + QStringLiteral("/fp8scope-workspace.json")).isEmpty()); // not there
    // As a file manager hands it over: the manifest's path opens its folder.
    auto w = newWindow();
    QVERIFY(w);
    openAndWait(w.get(), {run + QStringLiteral("/fp8scope.json")});
    QCOMPARE(w->workspace()->folders(), QStringList {QFileInfo(run).absoluteFilePath()});
    QCOMPARE(w->workspace()->runCount(), 1);
}

FP8SCOPE_TEST_GUI_MAIN(TestWindow)
#include "tst_window.moc"
