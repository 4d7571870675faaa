// The window on a run that is still being written: a replay (tests/scenarioreplay.h) writes a scenario's FP8
// run line by line at ~50 steps a second while the window has its folder open. The curve's last point follows
// the writer within a second; a zoomed curve stays zoomed, one at the end follows it; the heatmap gains columns;
// the run list shows the newest step; the live triage's notice of the planted layer comes before the writer
// reaches the departure, at the onset the engine finds on the complete data, and opens the finding. A log
// truncated and rewritten is read again without duplicated or lost points; a run that stops writing is marked.
#include "app/gui/mainwindow.h"
#include "core/analysis/triage.h"
#include "core/storeaccess.h"
#include "guitest.h"
#include "scenarioreplay.h"
#include "testmain.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/models/runlistmodel.h"
#include "views/plotting/qcp.h"
#include "views/triage/findingnotice.h"
#include "views/triage/livetriage.h"
#include "views/triage/triagewizard.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QAction>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTest>

using namespace fp8scope;

namespace {

// Under a sanitizer everything runs a few times slower: the writer too, and the one second the curve has.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kSlowdown = 3;
#else
constexpr int kSlowdown = 1;
#endif

// The FP8 run's curve in the window: its last step (-1 when not drawn).
double lastCurveStep(const MainWindow &w, RunRef run)
{
    for (const CurveView::RunCurve &c : w.curves()->curves()) {
        if (c.run == run && !c.steps.empty())
            return c.steps.back();
    }
    return -1;
}

QByteArray megatronLog(int64_t from, int64_t to, double offset)
{
    QByteArray out;
    for (int64_t step = from; step <= to; step += 10)
        out += " iteration " + QByteArray::number(step).rightJustified(8, ' ')
            + "/    4000 | lm loss: " + QByteArray::number(2.0 + 1000.0 / double(step + 100) + offset, 'E', 6) + " |\n";
    return out;
}

bool writeFile(const QString &path, const QByteArray &bytes, QIODevice::OpenMode mode)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(mode) && f.write(bytes) == bytes.size();
}

} // namespace

class TestLive : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { guitest::keepSettingsIn(m_settings); }
    void windowFollowsARunBeingWritten();
    void healthyRunRaisesNoNotice();
    void rewrittenLogIsReadAgain();
    void stoppedRunIsMarked();
    void followCanBeTurnedOff();

private:
    std::unique_ptr<MainWindow> openWindow(const QString &folder)
    {
        auto w = std::make_unique<MainWindow>(BackendChoice::Cpu, nullptr);
        w->resize(1400, 900);
        w->show();
        if (!QTest::qWaitForWindowExposed(w.get()))
            return nullptr;
        QSignalSpy ready(w.get(), &MainWindow::ready);
        w->openFolders({folder});
        if (!ready.wait(60000))
            return nullptr;
        w->curves()->setStatistic(QStringLiteral("lm loss"));
        return w;
    }
    QTemporaryDir m_settings;
};

void TestLive::windowFollowsARunBeingWritten()
{
    QTemporaryDir tmp;
    const QString scenario = tmp.filePath(QStringLiteral("scenario"));
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(scenario, Scenario::MidRunInstability, 2, &plan, &error), qPrintable(error));
    QVERIFY(plan.departureStep && plan.onsetStep && !plan.layer.isEmpty());
    // The engine on the complete data: the departure, the lead, and the steps the FP8 run logs its loss at.
    std::optional<int64_t> departure, lead;
    std::vector<int64_t> logged;
    {
        Catalog catalog;
        QVERIFY2(catalog.open(scenario, &error), qPrintable(error));
        CatalogTestAccess::storeOf(catalog, catalog.stores().front().serial)->ingest();
        catalog.refresh();
        const auto base = catalog.findRun(plan.baseline), run = catalog.findRun(plan.run);
        QVERIFY(base && run);
        const analysis::Comparison c = analysis::compareRuns(catalog, base->ref, run->ref);
        departure = c.departure;
        lead = c.lead;
        const auto loss = catalog.chooseSeries(run->ref, {.stat = QStringLiteral("lm loss")});
        QVERIFY(loss);
        for (const SeriesPoint &p : catalog.points(*loss))
            logged.push_back(p.step);
    }
    QVERIFY(departure && lead);
    const QString live = tmp.filePath(QStringLiteral("live"));
    // About 50 steps a second (a real run writes a step every second or so).
    ScenarioReplay writer(scenario, live, plan, 5, 100 * kSlowdown);
    QVERIFY2(writer.start(&error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(writer.step() >= 300, 20000);
    auto w = openWindow(live);
    QVERIFY(w);
    Workspace *ws = w->workspace();
    const RunRef fp8 = ws->findRun(plan.run);
    QVERIFY(fp8.isValid());
    const int row = ws->indexOf(fp8);

    // The curve's last point follows the writer within a second, five times over.
    qint64 worst = 0;
    for (int i = 0; i < 5; ++i) {
        const int64_t written = writer.step();
        const auto it = std::upper_bound(logged.begin(), logged.end(), written);
        QVERIFY(it != logged.begin());
        const double expected = double(*std::prev(it));
        QElapsedTimer t;
        t.start();
        QTRY_VERIFY_WITH_TIMEOUT(lastCurveStep(*w, fp8) >= expected, 1000 * kSlowdown);
        worst = std::max(worst, t.elapsed());
        QTest::qWait(300);
    }
    qInfo("the curve showed the step written within %lld ms (worst of five)", worst);
    QVERIFY(w->curves()->isFollowingEnd());

    // The run list: the newest step, and when it arrived.
    const QAbstractItemModel *runs = w->runTable()->model();
    const qlonglong listed
        = runs->index(row, RunListModel::LatestStepColumn).data().toString().remove(QLatin1Char(',')).toLongLong();
    QVERIFY2(listed > 300, qPrintable(runs->index(row, RunListModel::LatestStepColumn).data().toString()));
    QVERIFY(runs->index(row, RunListModel::AdvancedColumn).data().toString().endsWith(QLatin1String("ago")));

    // The heatmap grows columns.
    QCOMPARE(w->heatmap()->run(), fp8);
    const size_t columns = w->heatmap()->heatmap().steps.size();
    QTRY_VERIFY_WITH_TIMEOUT(w->heatmap()->heatmap().steps.size() > columns, 5000);

    // Zoomed in on the start, it stays there while the run grows; reset, it follows the end again.
    QCustomPlot *plot = w->curves()->plot();
    plot->xAxis->setRange(100, 400);
    QSignalSpy rebuilt(w->curves(), &CurveView::rebuilt);
    QTRY_VERIFY_WITH_TIMEOUT(rebuilt.count() >= 3, 5000);
    QCOMPARE(plot->xAxis->range().lower, 100.0);
    QCOMPARE(plot->xAxis->range().upper, 400.0);
    QVERIFY(!w->curves()->isFollowingEnd());
    // Reset: the whole again (the finished baseline's steps hold the written run's), the run's curve growing in it.
    w->curves()->resetZoom();
    const QCPRange whole = plot->xAxis->range();
    QVERIFY(whole.lower <= 100 && whole.upper > 400);
    const double drawn = lastCurveStep(*w, fp8);
    QTRY_VERIFY_WITH_TIMEOUT(lastCurveStep(*w, fp8) > drawn, 5000);
    QCOMPARE(plot->xAxis->range(), whole);
    QVERIFY(w->curves()->isFollowingEnd());

    // The notice of the planted layer, before the departure, at the complete data's onset.
    const LiveTriage *triage = w->liveTriage();
    const auto critical = [&]() -> const LiveTriage::Notice * {
        for (const LiveTriage::Notice &n : triage->notices()) {
            if (n.finding.severity == analysis::Severity::Critical)
                return &n;
        }
        return nullptr;
    };
    QTRY_VERIFY_WITH_TIMEOUT(critical() || writer.done(), 120000 * kSlowdown);
    const int64_t writtenAt = writer.step();
    const LiveTriage::Notice *n = critical();
    QVERIFY2(n, "no critical notice while the run was written");
    QCOMPARE(n->finding.kind, analysis::FindingKind::LayerSignal);
    QCOMPARE(n->finding.layer, plan.layer);
    QVERIFY(n->finding.step);
    const int64_t plantedLead = *plan.departureStep - *plan.onsetStep;
    const int64_t statedLead = *departure - *n->finding.step; // its onset against the departure to come
    qInfo("notice at writer step %lld (departure %lld): onset %lld, lead %lld against %lld on the complete data",
        (long long)writtenAt, (long long)*departure, (long long)*n->finding.step, (long long)statedLead,
        (long long)*lead);
    QVERIFY2(writtenAt < *plan.departureStep, qPrintable(QString::number(writtenAt)));
    // Incrementally: the pair of the growing run computed again, the baseline checked alone kept.
    QVERIFY(w->liveTriage()->pairsComputed() > 0);
    QVERIFY(w->liveTriage()->pairsReused() > 0);
    QVERIFY2(std::abs(statedLead - *lead) <= plantedLead / 10,
        qPrintable(QStringLiteral("%1 against %2").arg(statedLead).arg(*lead)));
    FindingNotice *bar = w->findingNotice();
    QVERIFY(bar->isVisible());
    QVERIFY(bar->text().contains(plan.layer));
    QVERIFY(bar->text().contains(QStringLiteral("since step %1").arg(*n->finding.step)));
    // Open: the finding in the triage wizard, its layer selected.
    QTest::mouseClick(bar->openButton(), Qt::LeftButton);
    QVERIFY(!bar->isVisible());
    QVERIFY(w->triage() && w->triage()->isVisible());
    QCOMPARE(w->triage()->run(), fp8);
    QCOMPARE(w->selection()->layer(), plan.layer);
    writer.stop();
}

void TestLive::healthyRunRaisesNoNotice()
{
    QTemporaryDir tmp;
    const QString scenario = tmp.filePath(QStringLiteral("scenario"));
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(scenario, Scenario::None, 2, &plan, &error), qPrintable(error));
    const QString live = tmp.filePath(QStringLiteral("live"));
    ScenarioReplay writer(scenario, live, plan, 40, 50 * kSlowdown);
    QVERIFY2(writer.start(&error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(writer.step() >= 200, 20000);
    auto w = openWindow(live);
    QVERIFY(w);
    QTRY_VERIFY_WITH_TIMEOUT(writer.done(), 120000 * kSlowdown);
    const int before = w->liveTriage()->evaluations();
    QTRY_VERIFY_WITH_TIMEOUT(w->liveTriage()->evaluations() > before && !w->liveTriage()->isEvaluating(), 10000);
    QVERIFY(w->liveTriage()->evaluations() > 3);
    QStringList said;
    for (const LiveTriage::Notice &n : w->liveTriage()->notices())
        said << n.text();
    QVERIFY2(said.isEmpty(), qPrintable(said.join(QLatin1Char('\n'))));
    QVERIFY(!w->findingNotice()->isVisible());
}

void TestLive::rewrittenLogIsReadAgain()
{
    QTemporaryDir tmp;
    const QString log = tmp.filePath(QStringLiteral("run/train.log"));
    QVERIFY(writeFile(log, megatronLog(10, 2000, 0), QIODevice::WriteOnly));
    Workspace ws;
    QSignalSpy loaded(&ws, &Workspace::loaded);
    ws.open({tmp.filePath(QStringLiteral("run"))});
    QVERIFY(loaded.wait(30000));
    QCOMPARE(ws.runCount(), 1);
    const RunRef run = ws.runAt(0);
    const auto points = [&] {
        const auto s = ws.catalog().chooseSeries(run, {.stat = QStringLiteral("lm loss")});
        return s ? ws.catalog().points(*s) : std::vector<SeriesPoint>();
    };
    QCOMPARE(int(points().size()), 200);
    QSignalSpy appended(&ws, &Workspace::dataAppended);
    // A restarted job overwrites its log: fewer steps, other values.
    QVERIFY(writeFile(log, megatronLog(10, 1500, 1.0), QIODevice::WriteOnly | QIODevice::Truncate));
    QTRY_VERIFY_WITH_TIMEOUT(int(points().size()) == 150, 10000);
    std::vector<SeriesPoint> p = points();
    QCOMPARE(p.front().step, int64_t(10));
    QCOMPARE(p.back().step, int64_t(1500));
    QVERIFY(std::abs(p.front().value - (2.0 + 1000.0 / 110.0 + 1.0)) < 1e-5);
    // The GUI thread's catalog can read the committed points before the follow job's result comes back.
    QTRY_VERIFY_WITH_TIMEOUT(appended.count() >= 1, 10000);
    // And goes on writing it: appended, each step once.
    QVERIFY(writeFile(log, megatronLog(1510, 3000, 1.0), QIODevice::Append));
    QTRY_VERIFY_WITH_TIMEOUT(int(points().size()) == 300, 10000);
    p = points();
    for (size_t i = 1; i < p.size(); ++i)
        QCOMPARE(p[i].step, p[i - 1].step + 10);
    // The run's newest step follows once the follow job is back (the catalog can read the points before).
    QTRY_COMPARE_WITH_TIMEOUT(ws.runs().front().latestStep, int64_t(3000), 10000);
    // Replaced by a rename (a job that writes its log anew beside the old one): read again too.
    QVERIFY(writeFile(log + QStringLiteral(".new"), megatronLog(10, 500, 2.0), QIODevice::WriteOnly));
    QVERIFY(QFile::remove(log));
    QVERIFY(QFile::rename(log + QStringLiteral(".new"), log));
    QTRY_VERIFY_WITH_TIMEOUT(int(points().size()) == 50, 10000);
    QVERIFY(std::abs(points().front().value - (2.0 + 1000.0 / 110.0 + 2.0)) < 1e-5);
}

void TestLive::stoppedRunIsMarked()
{
    QTemporaryDir tmp;
    const QString log = tmp.filePath(QStringLiteral("run/train.log"));
    QVERIFY(writeFile(log, megatronLog(10, 200, 0), QIODevice::WriteOnly));
    auto w = openWindow(tmp.filePath(QStringLiteral("run")));
    QVERIFY(w);
    w->workspace()->setStalledAfterMs(300);
    const QAbstractItemModel *runs = w->runTable()->model();
    const auto advanced = [&] { return runs->index(0, RunListModel::AdvancedColumn).data().toString(); };
    QVERIFY(advanced().isEmpty()); // not advanced since it was opened
    for (int64_t step = 210; step <= 400; step += 10) {
        QVERIFY(writeFile(log, megatronLog(step, step, 0), QIODevice::Append));
        QTest::qWait(60);
    }
    QTRY_VERIFY_WITH_TIMEOUT(advanced().endsWith(QLatin1String("ago")), 5000);
    QVERIFY(!advanced().startsWith(QLatin1String("stopped")));
    // Ten of its usual gaps (a few hundred ms each) without a step: stopped.
    QTRY_VERIFY_WITH_TIMEOUT(advanced().startsWith(QLatin1String("stopped")), 15000);
    QCOMPARE(runs->index(0, RunListModel::LatestStepColumn).data().toString(), QStringLiteral("400"));
}

// View > Follow Folders off: what the run writes is not read (the newest step stays); on again: what was
// written meanwhile is read at once.
void TestLive::followCanBeTurnedOff()
{
    QTemporaryDir tmp;
    const QString log = tmp.filePath(QStringLiteral("run/train.log"));
    QVERIFY(writeFile(log, megatronLog(10, 200, 0), QIODevice::WriteOnly));
    auto w = openWindow(tmp.filePath(QStringLiteral("run")));
    QVERIFY(w);
    auto *follow = w->findChild<QAction *>(QStringLiteral("followFolders"));
    QVERIFY(follow);
    QVERIFY(follow->isCheckable() && follow->isChecked());
    QVERIFY(w->workspace()->isFollowing());
    QVERIFY(writeFile(log, megatronLog(210, 300, 0), QIODevice::Append));
    QTRY_COMPARE_WITH_TIMEOUT(w->workspace()->runs().front().latestStep, int64_t(300), 5000 * kSlowdown);

    follow->setChecked(false);
    QVERIFY(!w->workspace()->isFollowing());
    QVERIFY(!w->liveTriage()->isEnabled());
    QVERIFY(writeFile(log, megatronLog(310, 400, 0), QIODevice::Append));
    QTest::qWait(1500 * kSlowdown); // more than the watcher's poll and throttle
    QCOMPARE(w->workspace()->runs().front().latestStep, int64_t(300));

    follow->setChecked(true);
    QVERIFY(w->liveTriage()->isEnabled());
    QTRY_COMPARE_WITH_TIMEOUT(w->workspace()->runs().front().latestStep, int64_t(400), 5000 * kSlowdown);
}

FP8SCOPE_TEST_GUI_MAIN(TestLive)
#include "tst_live.moc"
