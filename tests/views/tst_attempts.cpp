// The window's Attempts tab: one baseline and three attempts derived from each other (the planted mid-run
// instability, a recipe change that fixes it, an attempt that changes two things at once); the table, the
// candidate, the warning, the plot, and a double-click that opens an attempt's comparison.
#include "app/gui/mainwindow.h"
#include "attemptsfolder.h"
#include "core/demo/scenarios.h"
#include "guitest.h"
#include "testmain.h"
#include "views/attempts/attemptschart.h"
#include "views/attempts/attemptsview.h"
#include "views/compare/compareview.h"
#include "views/plotting/qcp.h"
#include "views/triage/triagewizard.h"
#include "views/workspace/workspace.h"

#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTest>

using namespace fp8scope;

class TestAttempts : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void tableAndPlot();
    void doubleClickOpensTheComparison();
    void wizardSaysWhatWasTried();
    void candidateChosenAndKept();
    void parentSetInTheWindow();

private:
    QTemporaryDir m_tmp;
    ScenarioPlan m_plan;
    std::unique_ptr<MainWindow> m_window;
};

void TestAttempts::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    const QString dir = m_tmp.filePath(QStringLiteral("path"));
    QString error;
    QVERIFY2(testing::writeAttemptsFolder(dir, &m_plan, &error), qPrintable(error));
    m_window = std::make_unique<MainWindow>(BackendChoice::Cpu, nullptr);
    m_window->resize(1600, 1000);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    m_window->openFolders({dir});
    QVERIFY(ready.wait(120000));
}

void TestAttempts::tableAndPlot()
{
    AttemptsView *view = m_window->attempts();
    auto *tabs = m_window->findChild<QTabWidget *>(QStringLiteral("viewTabs"));
    QVERIFY(tabs);
    tabs->setCurrentWidget(view);
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->attempts().attempts.size() == 4, 60000);
    QAbstractItemModel *model = view->table()->model();
    QCOMPARE(model->rowCount(), 4);
    const auto cell = [&](int row, const char *header) {
        for (int c = 0; c < model->columnCount(); ++c) {
            if (model->headerData(c, Qt::Horizontal).toString() == QLatin1String(header))
                return model->index(row, c).data().toString();
        }
        return QStringLiteral("(no column %1)").arg(QLatin1String(header));
    };
    QCOMPARE(cell(0, "Attempt"), QStringLiteral("fp8"));
    QCOMPARE(cell(0, "Verdict"), QStringLiteral("mid-run-instability"));
    QCOMPARE(cell(1, "Attempt"), QStringLiteral("fp8-b-current"));
    QCOMPARE(cell(1, "Parent"), QStringLiteral("fp8"));
    QCOMPARE(cell(1, "Changed from parent"), QStringLiteral("precision and recipe"));
    QCOMPARE(cell(1, "Fixes parent"), QStringLiteral("fixed"));
    QCOMPARE(cell(1, "Candidate"), QStringLiteral("candidate"));
    QVERIFY2(
        cell(2, "Changed from parent").startsWith(QStringLiteral("⚠")), qPrintable(cell(2, "Changed from parent")));
    QCOMPARE(cell(2, "Fixes parent"), QStringLiteral("no"));
    QCOMPARE(cell(3, "Fixes parent"), QStringLiteral("partly"));
    // The plot: every attempt's gap, the candidate highlighted; selecting another highlights it.
    AttemptsChart *chart = view->chart();
    QCOMPARE(chart->highlighted(), 1);
    QCOMPARE(chart->attemptGraphs(), 4);
    // FP8SCOPE_SHOT=FILE.png saves the tab as it stands (tests/screenshots.sh: docs/GUI.md's picture).
    if (!qEnvironmentVariableIsEmpty("FP8SCOPE_SHOT")) {
        view->table()->resizeColumnsToContents();
        QTest::qWait(200);
        chart->plot()->replot(QCustomPlot::rpImmediateRefresh);
        QVERIFY(view->grab().save(qEnvironmentVariable("FP8SCOPE_SHOT")));
    }
    // A healthy attempt's verdict says what "none" means, as its "Fixes parent" column does.
    bool healthyShown = false;
    for (int i = 0; i < model->rowCount(); ++i) {
        if (view->attempts().attempts[size_t(i)].verdict == analysis::Verdict::None) {
            QCOMPARE(model->index(i, 3).data().toString(), QStringLiteral("none (healthy)"));
            healthyShown = true;
        }
    }
    QVERIFY(healthyShown);
    view->table()->setCurrentIndex(model->index(0, 0));
    QCOMPARE(chart->highlighted(), 0);
    QVERIFY(chart->csv().count(QLatin1Char('\n')) > 3);
}

void TestAttempts::doubleClickOpensTheComparison()
{
    AttemptsView *view = m_window->attempts();
    QTableView *table = view->table();
    const QModelIndex second = table->model()->index(1, 0);
    // The wizard left at its last step on another pair.
    m_window->showTriage(view->attempts().baseline, view->attempts().attempts[0].run);
    QVERIFY(m_window->triage());
    m_window->triage()->setStep(TriageWizard::NextStep);
    m_window->triage()->close();
    QSignalSpy requested(view, &AttemptsView::comparisonRequested);
    // As a user's double-click reaches the view: a click, then the second press as a double-click.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(second).center());
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(second).center());
    QCOMPARE(requested.count(), 1);
    CompareView *compare = m_window->compare();
    QTRY_VERIFY(compare->isVisible());
    QCOMPARE(compare->run(), view->attempts().attempts[1].run);
    QCOMPARE(compare->baseline(), view->attempts().baseline);
    // Triage then answers for that pair, from its first step.
    m_window->showTriage();
    TriageWizard *w = m_window->triage();
    QCOMPARE(w->run(), view->attempts().attempts[1].run);
    QCOMPARE(w->baseline(), view->attempts().baseline);
    QCOMPARE(w->step(), TriageWizard::RunsStep);
    w->close();
}

// The triage wizard's "what to try next" for fp8: its first suggestion (blockwise scaling) was tried by both other
// attempts; each is said with its outcome.
void TestAttempts::wizardSaysWhatWasTried()
{
    const analysis::AttemptsResult &a = m_window->attempts()->attempts();
    QCOMPARE(a.attempts.front().name, QStringLiteral("fp8"));
    m_window->showTriage(a.baseline, a.attempts.front().run);
    TriageWizard *w = m_window->triage();
    QVERIFY(w);
    QTRY_VERIFY_WITH_TIMEOUT(!w->isComputing() && w->comparison(), 60000);
    w->setStep(TriageWizard::NextStep);
    const QString text = w->nextText();
    QVERIFY2(text.contains(QLatin1String("-> tried in fp8-b-current (")) && text.contains(QLatin1String("fixed it")),
        qPrintable(text));
    QVERIFY2(text.contains(QLatin1String("-> tried in fp8-c-two (")), qPrintable(text));
    w->close();
}

// The user chooses another candidate than the rule's: kept in the baseline's store, it outlives a rebuild of the
// store; taken back, the rule's candidate returns.
void TestAttempts::candidateChosenAndKept()
{
    AttemptsView *view = m_window->attempts();
    m_window->findChild<QTabWidget *>(QStringLiteral("viewTabs"))->setCurrentWidget(view);
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->attempts().attempts.size() == 4, 60000);
    QCOMPARE(view->attempts().candidateSource, CandidateSource::Rule);
    const auto candidate = [view] {
        const analysis::AttemptsResult &r = view->attempts();
        return r.candidate ? r.attempts[*r.candidate].name : QString();
    };
    QCOMPARE(candidate(), QStringLiteral("fp8-b-current"));
    view->chooseCandidate(3);
    QTRY_COMPARE_WITH_TIMEOUT(candidate(), QStringLiteral("fp8-d-fallback"), 60000);
    QCOMPARE(view->attempts().candidateSource, CandidateSource::Chosen);
    QAbstractItemModel *model = view->table()->model();
    const int column = model->columnCount() - 1;
    QCOMPARE(model->index(3, column).data().toString(), QStringLiteral("your choice"));
    QCOMPARE(model->index(1, column).data().toString(), QStringLiteral("the rule's"));
    // The store thrown away and read again: the choice stays.
    QString error;
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    QVERIFY2(m_window->workspace()->rebuild(&error), qPrintable(error));
    QVERIFY(ready.wait(120000));
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->attempts().attempts.size() == 4, 60000);
    QCOMPARE(candidate(), QStringLiteral("fp8-d-fallback"));
    const Catalog &catalog = m_window->workspace()->catalog();
    const std::optional<CandidateChoice> kept = catalog.candidateChoice(view->attempts().baseline);
    QVERIFY(kept);
    QCOMPARE(kept->candidate, QStringLiteral("fp8-d-fallback"));
    QCOMPARE(kept->state, CandidateSource::Chosen);
    // Taken back: the rule's.
    view->chooseCandidate(-1);
    QTRY_COMPARE_WITH_TIMEOUT(view->attempts().candidateSource, CandidateSource::Rule, 60000);
    QCOMPARE(candidate(), QStringLiteral("fp8-b-current"));
}

// The user names fp8-d-fallback's parent (fp8-b-current): it is written into its fp8scope.json, and from that
// parent two things changed at once (the recipe back to MXFP8 and the BF16 fallback); cleared, the closest
// earlier attempt (fp8) is its parent again.
void TestAttempts::parentSetInTheWindow()
{
    AttemptsView *view = m_window->attempts();
    m_window->findChild<QTabWidget *>(QStringLiteral("viewTabs"))->setCurrentWidget(view);
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->attempts().attempts.size() == 4, 60000);
    const RunRef fallback = view->attempts().attempts[3].run;
    QCOMPARE(view->attempts().attempts[3].parentName, QStringLiteral("fp8"));
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    QString error;
    QVERIFY2(m_window->setRunParent(fallback, QStringLiteral("fp8-b-current"), &error), qPrintable(error));
    QVERIFY(ready.wait(120000));
    QFile manifest(m_tmp.filePath(QStringLiteral("path/fp8-d-fallback/fp8scope.json")));
    QVERIFY(manifest.open(QIODevice::ReadOnly));
    QVERIFY(manifest.readAll().contains("\"parent\": \"fp8-b-current\""));
    manifest.close();
    const auto fallbackAttempt = [view]() -> const analysis::Attempt * {
        for (const analysis::Attempt &a : view->attempts().attempts) {
            if (a.name == QLatin1String("fp8-d-fallback"))
                return &a;
        }
        return nullptr;
    };
    QTRY_VERIFY_WITH_TIMEOUT(
        !view->isComputing() && fallbackAttempt() && fallbackAttempt()->parentName == QLatin1String("fp8-b-current"),
        60000);
    QCOMPARE(fallbackAttempt()->parentSource, QStringLiteral("fp8scope.json"));
    QVERIFY(fallbackAttempt()->severalAtOnce);
    QVERIFY(m_window->setRunParent(fallbackAttempt()->run, QString(), &error));
    QVERIFY(ready.wait(120000));
    QTRY_VERIFY_WITH_TIMEOUT(
        !view->isComputing() && fallbackAttempt() && fallbackAttempt()->parentName == QLatin1String("fp8"), 60000);
    QCOMPARE(fallbackAttempt()->parentSource, QStringLiteral("closest earlier attempt"));
}

FP8SCOPE_TEST_GUI_MAIN(TestAttempts)

#include "tst_attempts.moc"
