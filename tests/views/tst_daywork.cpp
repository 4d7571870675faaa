// The window for a day's work at 1366x768 and 1920x1080 (issue 58): stacked plots that keep a readable height
// and share their axes' edges, values the Statistics panel shows whole, names that cover no data, tables whose
// columns are all in view, charts with the room to draw, docks that keep their share as the window shrinks, a run
// checked on its own, one name a run in every view, one focus state (tst_layout), a screenshot tour that ends on
// every kind of folder, what needs runs waiting for them, and (testmain.h) no plot painted at no size.
#include "app/gui/mainwindow.h"
#include "app/gui/screenshotter.h"
#include "attemptsfolder.h"
#include "core/demo/scenarios.h"
#include "guitest.h"
#include "testmain.h"
#include "views/attempts/attemptschart.h"
#include "views/attempts/attemptsview.h"
#include "views/compare/auditchart.h"
#include "views/compare/compareview.h"
#include "views/compare/evalchart.h"
#include "views/curves/curvestack.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/histogram/histogramview.h"
#include "views/models/runlistmodel.h"
#include "views/models/statstablemodel.h"
#include "views/models/tableexport.h"
#include "views/plotting/legendplacement.h"
#include "views/plotting/qcp.h"
#include "views/triage/triagewizard.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"
#include "windowtest.h"

#include <QAction>
#include <QDockWidget>
#include <QHeaderView>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QToolButton>

#include <cmath>
#include <set>

using namespace fp8scope;
using guitest::openWindow;
using guitest::writeFile;

namespace {

QByteArray lossCsv(int points, int stride, double offset)
{
    QByteArray csv = "step,lm loss,grad norm,learning rate\n";
    for (int i = 1; i <= points; ++i) {
        const int step = i * stride;
        const double loss = 2.6 + offset + 7.4 * std::exp(-step / 400.0) + 0.03 * std::sin(step * 0.37);
        csv += QByteArray::number(step) + ',' + QByteArray::number(loss, 'g', 8) + ','
            + QByteArray::number(1.0 + 0.2 * std::cos(step * 0.01), 'g', 6) + ','
            + QByteArray::number(3e-4 * std::min(1.0, step / 500.0), 'g', 6) + '\n';
    }
    return csv;
}

// Whether every column of a table is in view, none past its right edge (no horizontal scrolling).
void checkColumnsInView(QTableView *table)
{
    QTRY_VERIFY(table->model() && table->model()->columnCount() > 0);
    QTest::qWait(20); // the fit is queued
    const int width = table->viewport()->width();
    for (int c = 0; c < table->model()->columnCount(); ++c) {
        if (table->isColumnHidden(c))
            continue;
        const int right = table->columnViewportPosition(c) + table->columnWidth(c);
        const int least = std::min(kLeastColumnWidth, table->horizontalHeader()->sectionSizeHint(c));
        QVERIFY2(right <= width + 1 && table->columnWidth(c) >= least,
            qPrintable(QStringLiteral("%1: column %2 (%3) ends at %4 of %5")
                           .arg(table->objectName())
                           .arg(c)
                           .arg(table->model()->headerData(c, Qt::Horizontal).toString())
                           .arg(right)
                           .arg(width)));
    }
}

// Every plot at one pixel for one x, the axis rectangles sharing both edges.
void checkSharedEdges(const QList<QCustomPlot *> &plots, double x)
{
    for (QCustomPlot *p : plots)
        p->replot(QCustomPlot::rpImmediateRefresh);
    // A plot's replot may change another's margin (queued): once more, then compare.
    QTest::qWait(20);
    for (QCustomPlot *p : plots)
        p->replot(QCustomPlot::rpImmediateRefresh);
    const QRect first = plots.front()->axisRect()->rect();
    const double at = plots.front()->xAxis->coordToPixel(x);
    for (QCustomPlot *p : plots) {
        const QRect r = p->axisRect()->rect();
        QVERIFY2(r.left() == first.left() && r.right() == first.right(),
            qPrintable(QStringLiteral("%1: %2..%3, the first %4..%5")
                           .arg(p->objectName())
                           .arg(r.left())
                           .arg(r.right())
                           .arg(first.left())
                           .arg(first.right())));
        QVERIFY(std::abs(p->xAxis->coordToPixel(x) - at) < 1.0);
    }
}

} // namespace

class TestDayWork : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void stackScrollsAndSharesItsEdges_data() { sizes(); }
    void stackScrollsAndSharesItsEdges();
    void comparisonPlotsShareTheirEdges_data() { sizes(); }
    void comparisonPlotsShareTheirEdges();
    void statisticsShowWholeValues_data() { sizes(); }
    void statisticsShowWholeValues();
    void tickLabelsApart_data() { sizes(); }
    void tickLabelsApart();
    void namesCoverNoData_data() { sizes(); }
    void namesCoverNoData();
    void tablesShowEveryColumn_data() { sizes(); }
    void tablesShowEveryColumn();
    void attemptsInView_data() { sizes(); }
    void attemptsInView();
    void docksShrinkWithTheWindow();
    void aRunOnItsOwn_data() { sizes(); }
    void aRunOnItsOwn();
    void oneNameARun_data() { sizes(); }
    void oneNameARun();
    void tourEndsOnEveryFolder_data();
    void tourEndsOnEveryFolder();
    void actionsWaitForRuns();
    void histogramLabelsClearOfItsLines();

private:
    static void sizes()
    {
        QTest::addColumn<QSize>("size");
        QTest::newRow("1366x768") << QSize(1366, 768);
        QTest::newRow("1920x1080") << QSize(1920, 1080);
    }

    QTemporaryDir m_tmp;
    QString m_pair, m_lone, m_attempts, m_named, m_long;
    ScenarioPlan m_attemptsPlan;
};

void TestDayWork::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    QString error;
    m_pair = m_tmp.filePath(QStringLiteral("pair"));
    QVERIFY2(guitest::generatePair(m_pair, 5, 6, 1000, nullptr, &error), qPrintable(error));
    m_lone = m_tmp.filePath(QStringLiteral("lone"));
    QVERIFY(writeFile(m_lone + QStringLiteral("/only_run/wandb_export.csv"), lossCsv(300, 10, 0)));
    m_attempts = m_tmp.filePath(QStringLiteral("attempts"));
    QVERIFY2(testing::writeAttemptsFolder(m_attempts, &m_attemptsPlan, &error), qPrintable(error));
    // Two runs of 50,000 steps (five-digit step numbers on the x axis).
    m_long = m_tmp.filePath(QStringLiteral("long"));
    QVERIFY(writeFile(m_long + QStringLiteral("/run_a/wandb_export.csv"), lossCsv(500, 100, 0)));
    QVERIFY(writeFile(m_long + QStringLiteral("/run_b/wandb_export.csv"), lossCsv(500, 100, 0.05)));
    // Two runs of nanochat's kind: long names that differ in their middle only.
    m_named = m_tmp.filePath(QStringLiteral("named"));
    QVERIFY(writeFile(
        m_named + QStringLiteral("/d20_moe_fp8_expert_routing_retest/wandb_export.csv"), lossCsv(300, 10, 0)));
    QVERIFY(writeFile(
        m_named + QStringLiteral("/d20_moe_fp8_expert_gating_retest/wandb_export.csv"), lossCsv(300, 10, 0.05)));
}

void TestDayWork::stackScrollsAndSharesItsEdges()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_pair}, size);
    QVERIFY(w);
    CurveStack *stack = w->curveStack();
    w->curves()->setStatistic(QStringLiteral("lm loss"));
    auto *add = w->findChild<QToolButton *>(QStringLiteral("stackPlot"));
    QVERIFY(add);
    // Stack Plot until there is nothing left to add: it then disables, and no statistic is plotted twice.
    int clicks = 0;
    while (add->isEnabled() && clicks < 20) {
        add->click();
        ++clicks;
    }
    QVERIFY(!add->isEnabled());
    QVERIFY(stack->plots().size() >= 4 && stack->plots().size() <= CurveStack::kMaxPlots);
    QStringList shown;
    for (CurveView *p : stack->plots())
        shown << p->statistic();
    QCOMPARE(std::set<QString>(shown.begin(), shown.end()).size(), size_t(shown.size()));
    QCOMPARE(stack->addPlot(), nullptr); // nothing to add: nothing added
    // The window stays as it was; each plot keeps a readable height, the stack scrolls.
    QTest::qWait(50);
    QCOMPARE(w->size(), size);
    for (CurveView *p : stack->plots()) {
        QTRY_VERIFY2(!p->curves().empty(), qPrintable(p->statistic()));
        QVERIFY2(p->height() >= CurveStack::kStackedMinimumHeight, qPrintable(QString::number(p->height())));
        p->plot()->replot();
        QVERIFY2(p->plot()->axisRect()->rect().height() >= 60,
            qPrintable(QStringLiteral("%1: %2 of %3")
                           .arg(p->statistic())
                           .arg(p->plot()->axisRect()->rect().height())
                           .arg(p->plot()->height())));
    }
    // The first plot names the runs; those beneath, the same runs in the same colours, leave their height to data.
    stack->plots().front()->plot()->replot();
    QVERIFY(
        stack->plots().front()->plot()->legend->visible() || !directLabels(stack->plots().front()->plot()).isEmpty());
    for (qsizetype i = 1; i < stack->plots().size(); ++i) {
        QCustomPlot *p = stack->plots()[i]->plot();
        QVERIFY(!p->legend->visible() && directLabels(p).isEmpty());
    }
    auto *scroll = stack->findChild<QScrollArea *>(QStringLiteral("curveStackScroll"));
    QVERIFY(scroll);
    QVERIFY(scroll->verticalScrollBar()->maximum() > 0);
    // One x at one pixel in every plot.
    QList<QCustomPlot *> plots;
    for (CurveView *p : stack->plots())
        plots << p->plot();
    stack->plots().front()->plot()->xAxis->setRange(100, 900);
    checkSharedEdges(plots, 500);
    // Log y on one (tick labels of another width): still one edge.
    stack->plots()[1]->setLogY(true);
    checkSharedEdges(plots, 500);
    guitest::shoot(w.get(), QStringLiteral("19-stack-of-every-statistic.png"));
    // Removing them mends the stack: the first plot has the height again.
    while (stack->plots().size() > 1)
        stack->removePlot(stack->plots().back());
    QVERIFY(add->isEnabled());
    QTRY_VERIFY(stack->plots().front()->height() >= scroll->viewport()->height() - 4);
    QCOMPARE(scroll->verticalScrollBar()->maximum(), 0);
    // A stack kept in the settings with a statistic twice comes back once each.
    stack->setStackedStatistics(
        {QStringLiteral("grad norm"), QStringLiteral("grad norm"), QStringLiteral("learning rate")});
    QCOMPARE(stack->stackedStatistics(), (QStringList {QStringLiteral("grad norm"), QStringLiteral("learning rate")}));
    stack->setStackedStatistics({});
}

void TestDayWork::comparisonPlotsShareTheirEdges()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_pair}, size);
    QVERIFY(w);
    w->showComparison();
    CompareView *view = w->compare();
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->comparison(), 120000);
    QTRY_VERIFY(!view->overlay()->curves().empty() && !view->difference()->curves().empty());
    checkSharedEdges({view->overlay()->plot(), view->difference()->plot()}, 500);
    // The Layers tab's two maps, one above the other: one step at one pixel in both.
    view->tabs()->setCurrentIndex(CompareView::kLayersTab);
    QTRY_VERIFY_WITH_TIMEOUT(!view->baselineHeatmap()->isLoading() && !view->runHeatmap()->isLoading()
            && !view->baselineHeatmap()->heatmap().layers.isEmpty() && !view->runHeatmap()->heatmap().layers.isEmpty(),
        60000);
    QTest::qWait(50);
    checkSharedEdges({view->baselineHeatmap()->plot(), view->runHeatmap()->plot()}, 500);
    view->tabs()->setCurrentIndex(0);
    // The names of the difference: right of the axes, over none of its points.
    for (CurveView *v : {view->overlay(), view->difference()}) {
        QList<QRectF> rects;
        const QStringList labels = directLabels(v->plot(), &rects);
        for (const QRectF &r : rects) {
            QVERIFY(r.left() >= v->plot()->axisRect()->rect().right());
            QCOMPARE(pointsInside(v->plot(), r), 0);
        }
        if (labels.isEmpty() && v->plot()->legend->visible())
            QCOMPARE(pointsInside(v->plot(), legendRect(v->plot())), 0);
    }
}

void TestDayWork::statisticsShowWholeValues()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_pair}, size);
    QVERIFY(w);
    // A tensor selected: the recomputed statistics (cosine, amax) and the logged ones.
    const WorkspaceRun &fp8 = w->workspace()->runs().back();
    const auto &tensors = w->workspace()->layerTensors();
    QVERIFY(!tensors.empty());
    w->selection()->set(fp8.run.ref, tensors.front().layer, QStringLiteral("activation"), 500);
    QTableView *table = w->statsTable();
    QTRY_VERIFY_WITH_TIMEOUT(table->model()->rowCount() >= 4 && !w->histogram()->isComputing(), 60000);
    QTest::qWait(100);
    checkColumnsInView(table);
    const int value = StatsTableModel::ValueColumn;
    for (int r = 0; r < table->model()->rowCount(); ++r) {
        const QString text = table->model()->index(r, value).data().toString();
        // The text and the cell's margins (a few pixels each side) fit the column.
        QVERIFY2(table->fontMetrics().horizontalAdvance(text) + 8 <= table->columnWidth(value),
            qPrintable(QStringLiteral("%1 in %2 px").arg(text).arg(table->columnWidth(value))));
    }
}

void TestDayWork::namesCoverNoData()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_pair}, size);
    QVERIFY(w);
    // The Curves tab given little height (a laptop with the heatmap open): names at the lines' ends, over none
    // of their points, each apart from the others.
    CurveView *curves = w->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QTRY_VERIFY(!curves->curves().empty());
    for (int height : {220, 400}) {
        curves->setFixedHeight(height);
        QTRY_VERIFY(curves->height() == height);
        curves->refetchNow();
        curves->plot()->replot();
        QList<QRectF> rects;
        directLabels(curves->plot(), &rects);
        if (rects.isEmpty()) {
            QVERIFY(curves->plot()->legend->visible());
            QCOMPARE(pointsInside(curves->plot(), legendRect(curves->plot())), 0);
            QVERIFY(legendRect(curves->plot()).height() < curves->plot()->axisRect()->rect().height());
        }
        for (qsizetype i = 0; i < rects.size(); ++i) {
            QCOMPARE(pointsInside(curves->plot(), rects[i]), 0);
            QVERIFY(rects[i].left() >= curves->plot()->axisRect()->rect().right());
            if (i > 0)
                QVERIFY(!rects[i].intersects(rects[i - 1].adjusted(0, 0, 0, -0.5)));
        }
    }
}

void TestDayWork::tickLabelsApart()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_long}, size);
    QVERIFY(w);
    // Each x tick's label clear of the next one's, on the curves and the comparison's plots.
    const auto check = [](CurveView *v) {
        QCustomPlot *p = v->plot();
        p->replot(QCustomPlot::rpImmediateRefresh);
        const QVector<double> ticks = p->xAxis->tickVector();
        const QVector<QString> labels = p->xAxis->tickVectorLabels();
        QVERIFY(ticks.size() >= 2);
        const QFontMetrics fm(p->xAxis->tickLabelFont());
        for (qsizetype i = 1; i < ticks.size(); ++i) {
            const double apart = p->xAxis->coordToPixel(ticks[i]) - p->xAxis->coordToPixel(ticks[i - 1]);
            const double needed = (fm.horizontalAdvance(labels[i]) + fm.horizontalAdvance(labels[i - 1])) / 2.0 + 6;
            QVERIFY2(apart >= needed,
                qPrintable(QStringLiteral("%1: %2 and %3 %4 px apart, %5 needed")
                               .arg(v->objectName(), labels[i - 1], labels[i])
                               .arg(apart)
                               .arg(needed)));
        }
    };
    w->curves()->setStatistic(QStringLiteral("lm loss"));
    QTRY_VERIFY(!w->curves()->curves().empty());
    QTest::qWait(50);
    check(w->curves());
    w->showComparison();
    QTRY_VERIFY_WITH_TIMEOUT(!w->compare()->isComputing() && w->compare()->comparison(), 120000);
    QTRY_VERIFY(!w->compare()->overlay()->curves().empty());
    QTest::qWait(50);
    check(w->compare()->overlay());
    check(w->compare()->difference());
}

void TestDayWork::tablesShowEveryColumn()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_pair}, size);
    QVERIFY(w);
    w->showComparison();
    CompareView *view = w->compare();
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->comparison(), 120000);
    QTRY_VERIFY(view->findingsTable()->model()->rowCount() > 0);
    checkColumnsInView(view->findingsTable());
    // A cut summary is whole in its tooltip.
    const QAbstractItemModel *findings = view->findingsTable()->model();
    const int last = findings->columnCount() - 1;
    QVERIFY(
        findings->index(0, last).data(Qt::ToolTipRole).toString().contains(findings->index(0, last).data().toString()));
    // The Evals tab: its table, the chart's bars under its legend, the audit's table beside a chart of room.
    view->tabs()->setCurrentIndex(CompareView::kEvalsTab);
    QTest::qWait(100);
    QVERIFY(view->evalChart()->plot()->axisRect()->rect().height() >= 40);
    QVERIFY(view->auditChart()->width() >= 250);
    QVERIFY(view->evalTable()->height() >= 80);
    // The Layers tab: maps of room.
    view->tabs()->setCurrentIndex(CompareView::kLayersTab);
    QTRY_VERIFY(view->tabs()->width() >= view->splitter()->width() * 45 / 100);
    // The wizard's summary: every column in view, the review and the note among them.
    w->showTriage();
    TriageWizard *wizard = w->triage();
    QVERIFY(wizard);
    wizard->resize(std::min(size.width(), 1100), std::min(size.height(), 700));
    wizard->setStep(TriageWizard::SummaryStep);
    QTRY_VERIFY_WITH_TIMEOUT(!wizard->isComputing() && wizard->comparison(), 120000);
    QTRY_VERIFY(wizard->summaryTable()->model()->rowCount() > 0);
    checkColumnsInView(wizard->summaryTable());
    wizard->close();
}

void TestDayWork::attemptsInView()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_attempts}, size);
    QVERIFY(w);
    AttemptsView *view = w->attempts();
    auto *tabs = w->findChild<QTabWidget *>(QStringLiteral("viewTabs"));
    QVERIFY(tabs);
    tabs->setCurrentWidget(view);
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->attempts().attempts.size() == 4, 60000);
    checkColumnsInView(view->table());
    // The chart: its legend over none of its curves, its y title within its height.
    auto *chart = view->findChild<AttemptsChart *>();
    QVERIFY(chart);
    QTest::qWait(50);
    chart->plot()->replot();
    if (chart->plot()->legend->visible())
        QCOMPARE(pointsInside(chart->plot(), legendRect(chart->plot())), 0);
    QList<QRectF> rects;
    directLabels(chart->plot(), &rects);
    for (const QRectF &r : rects)
        QCOMPARE(pointsInside(chart->plot(), r), 0);
    QVERIFY(chart->plot()->fontMetrics().horizontalAdvance(chart->plot()->yAxis->label())
        <= chart->plot()->axisRect()->rect().height());
    // The attempts by the run list's names.
    std::set<QString> listed;
    for (const WorkspaceRun &r : w->workspace()->runs())
        listed.insert(w->workspace()->runName(r.run.ref));
    for (int r = 0; r < view->table()->model()->rowCount(); ++r)
        QVERIFY(listed.count(view->table()->model()->index(r, 0).data().toString()));
}

void TestDayWork::docksShrinkWithTheWindow()
{
    auto w = openWindow({m_pair}, QSize(1920, 1080));
    QVERIFY(w);
    auto *runs = w->findChild<QDockWidget *>(QStringLiteral("runsDock"));
    auto *histogram = w->findChild<QDockWidget *>(QStringLiteral("histogramDock"));
    QVERIFY(runs && histogram && !runs->isHidden() && !histogram->isHidden());
    QTest::qWait(50);
    const double runsShare = double(runs->width()) / 1920, histogramShare = double(histogram->width()) / 1920;
    const int centreBefore = w->centralWidget()->width();
    w->resize(1366, 768);
    QTRY_COMPARE(w->width(), 1366);
    QTest::qWait(50);
    // The docks keep their share (or their least width); the centre keeps its share too.
    QVERIFY2(histogram->width() <= std::max(int(histogramShare * 1366) + 12, histogram->minimumSizeHint().width() + 12),
        qPrintable(QStringLiteral("%1 of 1366 (%2 of 1920)").arg(histogram->width()).arg(histogramShare * 1920)));
    QVERIFY(runs->width() <= std::max(int(runsShare * 1366) + 12, runs->minimumSizeHint().width() + 12));
    QVERIFY2(w->centralWidget()->width() >= centreBefore * 1366 / 1920 - 24,
        qPrintable(QStringLiteral("%1 (%2 at 1920)").arg(w->centralWidget()->width()).arg(centreBefore)));
}

void TestDayWork::aRunOnItsOwn()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_lone}, size);
    QVERIFY(w);
    QCOMPARE(w->workspace()->runCount(), 1);
    w->showTriage();
    TriageWizard *wizard = w->triage();
    QVERIFY(wizard);
    wizard->setStep(TriageWizard::LossStep);
    QTRY_VERIFY_WITH_TIMEOUT(!wizard->isComputing() && wizard->comparison(), 120000);
    // Its loss drawn, and nothing said of a baseline it does not have.
    QTRY_VERIFY(!wizard->lossView()->curves().empty());
    const QString verdict = wizard->verdictText();
    QVERIFY2(verdict.contains(QLatin1String("on its own")), qPrintable(verdict));
    QVERIFY2(!verdict.contains(QLatin1String("the baseline")), qPrintable(verdict));
    wizard->close();
}

void TestDayWork::oneNameARun()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_named}, size);
    QVERIFY(w);
    QCOMPARE(w->workspace()->runCount(), 2);
    // The run list: two names apart as drawn (elided in the middle by a narrow column).
    QTableView *table = w->runTable();
    const int room = table->columnWidth(RunListModel::NameColumn) - 50;
    std::set<QString> drawn, names;
    for (const WorkspaceRun &r : w->workspace()->runs()) {
        const QString name = w->workspace()->runName(r.run.ref);
        names.insert(name);
        drawn.insert(table->fontMetrics().elidedText(name, Qt::ElideMiddle, room));
    }
    QCOMPARE(drawn.size(), size_t(2));
    for (int r = 0; r < table->model()->rowCount(); ++r)
        QVERIFY(names.count(table->model()->index(r, RunListModel::NameColumn).data().toString()));
    // The comparison's pickers and the wizard's say the same names, and so do the findings' words.
    w->showComparison();
    QTRY_VERIFY_WITH_TIMEOUT(!w->compare()->isComputing() && w->compare()->comparison(), 120000);
    const QAbstractItemModel *findings = w->compare()->findingsTable()->model();
    int named = 0;
    for (int r = 0; r < findings->rowCount(); ++r) {
        const QString summary = findings->index(r, findings->columnCount() - 1).data().toString();
        for (const WorkspaceRun &run : w->workspace()->runs()) {
            QVERIFY2(!summary.contains(run.run.name), qPrintable(summary));
            named += summary.contains(w->workspace()->runName(run.run.ref) + QStringLiteral("'s"));
        }
    }
    QVERIFY(named > 0);
    for (const char *picker : {"compareBaseline", "compareRun"}) {
        auto *box = w->compare()->findChild<QComboBox *>(QLatin1String(picker));
        QVERIFY(box && box->count() == 2);
        for (int i = 0; i < box->count(); ++i)
            QVERIFY2(names.count(box->itemText(i)), qPrintable(box->itemText(i)));
    }
    w->showTriage();
    QVERIFY(w->triage());
    for (QComboBox *box : w->triage()->findChildren<QComboBox *>()) {
        if (box->count() == 2 && box->itemData(0).canConvert<RunRef>()) {
            for (int i = 0; i < box->count(); ++i)
                QVERIFY2(names.count(box->itemText(i)), qPrintable(box->itemText(i)));
        }
    }
    w->triage()->close();
}

void TestDayWork::tourEndsOnEveryFolder_data()
{
    QTest::addColumn<QString>("folder");
    QTest::addColumn<QStringList>("expected");
    QTest::newRow("no folder") << QString() << QStringList {QStringLiteral("00-start-page.png")};
    QTest::newRow("one run") << QStringLiteral(
        "lone") << QStringList {QStringLiteral("01-workspace.png"), QStringLiteral("12-triage-summary.png")};
    QTest::newRow("a pair with layers") << QStringLiteral("pair")
                                        << QStringList {QStringLiteral("01-workspace.png"),
                                               QStringLiteral("02-hottest-cell.png"),
                                               QStringLiteral("06-comparison.png"),
                                               QStringLiteral("07-comparison-layers.png"),
                                               QStringLiteral("12-triage-summary.png")};
    QTest::newRow("attempts") << QStringLiteral(
        "attempts") << QStringList {QStringLiteral("06-comparison.png"), QStringLiteral("12-triage-summary.png")};
}

void TestDayWork::tourEndsOnEveryFolder()
{
    QFETCH(QString, folder);
    QFETCH(QStringList, expected);
    MainWindow w(BackendChoice::Cpu, nullptr);
    w.resize(1366, 768);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTemporaryDir out;
    const QString path = folder.isEmpty() ? QString() : m_tmp.filePath(folder);
    auto *shooter = new Screenshotter(
        &w, out.path(),
        [&w, path] {
            if (!path.isEmpty())
                w.openFolders({path});
        },
        path.isEmpty() ? Screenshotter::Tour::StartPage : Screenshotter::Tour::Folder);
    QSignalSpy finished(shooter, &Screenshotter::finished);
    QVERIFY(finished.wait(240000));
    QVERIFY(finished.first().first().toBool());
    const QStringList saved = QDir(out.path()).entryList({QStringLiteral("*.png")});
    for (const QString &name : expected)
        QVERIFY2(saved.contains(name), qPrintable(saved.join(QLatin1Char(','))));
    if (w.triage())
        w.triage()->close();
}

void TestDayWork::actionsWaitForRuns()
{
    MainWindow w(BackendChoice::Cpu, nullptr);
    w.resize(1366, 768);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QVERIFY(w.isStartPageShown());
    auto *triage = w.findChild<QAction *>(QStringLiteral("showTriage"));
    QVERIFY(triage);
    QAction *compare = nullptr;
    for (QAction *a : w.findChildren<QAction *>()) {
        if (a->iconText() == QLatin1String("Compare"))
            compare = a;
    }
    QVERIFY(compare);
    // No folder: nothing to compare or triage, and the buttons say so.
    QVERIFY(!compare->isEnabled() && !triage->isEnabled());
    QVERIFY(triage->toolTip().contains(QLatin1String("Open a folder")));
    // One run: a triage of it alone, no comparison.
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFolders({m_lone});
    QVERIFY(ready.wait(120000));
    QVERIFY(triage->isEnabled());
    QVERIFY(!compare->isEnabled());
    QVERIFY(compare->toolTip().contains(QLatin1String("two runs")));
    // Two: both.
    w.openFolders({m_pair});
    QVERIFY(ready.wait(120000));
    QTRY_VERIFY(compare->isEnabled() && triage->isEnabled());
}

void TestDayWork::histogramLabelsClearOfItsLines()
{
    auto w = openWindow({m_pair}, QSize(1366, 768));
    QVERIFY(w);
    // A cell of the heatmap the dumps hold (the window's first click), in FP8 (its range drawn).
    const Heatmap &h = w->heatmap()->heatmap();
    QVERIFY(!h.layers.isEmpty() && !h.steps.empty());
    size_t best = 0;
    for (size_t i = 0; i < h.values.size(); ++i) {
        if (std::isfinite(h.values[i]) && (!std::isfinite(h.values[best]) || h.values[i] > h.values[best]))
            best = i;
    }
    w->selection()->set(w->heatmap()->run(), h.layers[qsizetype(best / h.steps.size())], w->heatmap()->tensor(),
        h.steps[best % h.steps.size()]);
    w->histogram()->setRecipe(QStringLiteral("current"));
    QTRY_VERIFY_WITH_TIMEOUT(!w->histogram()->isComputing() && w->histogram()->plot()->itemCount() > 2, 30000);
    QTest::qWait(100);
    QCustomPlot *plot = w->histogram()->plot();
    QStringList texts;
    for (int i = 0; i < plot->itemCount(); ++i) {
        if (auto *t = qobject_cast<QCPItemText *>(plot->item(i)))
            texts << t->text();
    }
    plot->replot();
    // The region labels (underflow, saturation) lie above the axes: over no bar and no line's label.
    int regionLabels = 0;
    QList<QRectF> lineLabels;
    for (int i = 0; i < plot->itemCount(); ++i) {
        auto *t = qobject_cast<QCPItemText *>(plot->item(i));
        if (t && t->rotation() != 0)
            lineLabels << QRectF(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition()).normalized();
    }
    for (int i = 0; i < plot->itemCount(); ++i) {
        auto *t = qobject_cast<QCPItemText *>(plot->item(i));
        if (!t || t->rotation() != 0
            || !(t->text().startsWith(QLatin1String("underflow")) || t->text().startsWith(QLatin1String("saturation"))))
            continue;
        ++regionLabels;
        const QRectF r(t->topLeft->pixelPosition(), t->bottomRight->pixelPosition());
        QVERIFY2(r.normalized().bottom() <= plot->axisRect()->rect().top() + 1, qPrintable(t->text()));
        for (const QRectF &l : lineLabels)
            QVERIFY2(!r.normalized().intersects(l), qPrintable(t->text()));
    }
    QVERIFY2(regionLabels == 2, qPrintable(texts.join(QLatin1Char('|'))));
}

FP8SCOPE_TEST_GUI_MAIN(TestDayWork)
#include "tst_daywork.moc"
