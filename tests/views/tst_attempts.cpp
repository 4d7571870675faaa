// The window's Attempts tab: one baseline and three attempts derived from each other (the planted mid-run
// instability, a recipe change that fixes it, an attempt that changes two things at once); the table, the
// candidate, the warning, the plot, and a double-click that opens an attempt's comparison.
#include "app/gui/mainwindow.h"
#include "core/demo/scenarios.h"
#include "guitest.h"
#include "views/attempts/attemptschart.h"
#include "views/attempts/attemptsview.h"
#include "views/compare/compareview.h"

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

private:
    QTemporaryDir m_tmp;
    ScenarioPlan m_plan;
    std::unique_ptr<MainWindow> m_window;
};

namespace {

bool copyFolder(const QString &from, const QString &to)
{
    QDir().mkpath(to);
    for (const QFileInfo &f : QDir(from).entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QString target = to + QLatin1Char('/') + f.fileName();
        if (f.isDir() ? !copyFolder(f.filePath(), target) : !QFile::copy(f.filePath(), target))
            return false;
    }
    return true;
}

bool rewrite(const QString &path, const QByteArray &from, const QByteArray &to, const QByteArray &append = {})
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return false;
    QByteArray text = f.readAll();
    f.close();
    text.replace(from, to);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(text + append) >= 0;
}

} // namespace

void TestAttempts::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    const QString dir = m_tmp.filePath(QStringLiteral("path"));
    QString error;
    QVERIFY2(generateScenario(dir, Scenario::MidRunInstability, 3, &m_plan, &error), qPrintable(error));
    QCOMPARE(m_plan.run, QStringLiteral("fp8"));
    const QString run = dir + QStringLiteral("/fp8");
    for (const QString &name : {QStringLiteral("fp8-b-current"), QStringLiteral("fp8-c-two")}) {
        QVERIFY(copyFolder(run, dir + QLatin1Char('/') + name));
        QVERIFY(rewrite(dir + QLatin1Char('/') + name + QStringLiteral("/config.yaml"), "--fp8-recipe: mxfp8",
            "--fp8-recipe: tensorwise", name.endsWith(QLatin1String("two")) ? "  --deterministic-mode: true\n" : ""));
    }
    // The recipe change's loss is the baseline's; the two-change attempt names fp8 its parent.
    QVERIFY(QFile::remove(dir + QStringLiteral("/fp8-b-current/stdout.log")));
    QVERIFY(QFile::copy(dir + QStringLiteral("/bf16/stdout.log"), dir + QStringLiteral("/fp8-b-current/stdout.log")));
    QFile manifest(dir + QStringLiteral("/fp8-c-two/fp8scope.json"));
    QVERIFY(manifest.open(QIODevice::WriteOnly));
    manifest.write(R"({"parent": "fp8"})");
    manifest.close();
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
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->attempts().attempts.size() == 3, 60000);
    QAbstractItemModel *model = view->table()->model();
    QCOMPARE(model->rowCount(), 3);
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
    QCOMPARE(cell(1, "Changed from parent"), QStringLiteral("FP8 recipe"));
    QCOMPARE(cell(1, "Fixes parent"), QStringLiteral("fixed"));
    QCOMPARE(cell(1, "Candidate"), QStringLiteral("candidate"));
    QVERIFY2(
        cell(2, "Changed from parent").startsWith(QStringLiteral("⚠")), qPrintable(cell(2, "Changed from parent")));
    QCOMPARE(cell(2, "Fixes parent"), QStringLiteral("no"));
    // The plot: every attempt's gap, the candidate highlighted; selecting another highlights it.
    AttemptsChart *chart = view->chart();
    QCOMPARE(chart->highlighted(), 1);
    QCOMPARE(chart->attemptGraphs(), 3);
    view->table()->setCurrentIndex(model->index(0, 0));
    QCOMPARE(chart->highlighted(), 0);
    QVERIFY(chart->csv().count(QLatin1Char('\n')) > 3);
    if (!qEnvironmentVariableIsEmpty("FP8SCOPE_SHOT"))
        view->grab().save(qEnvironmentVariable("FP8SCOPE_SHOT"));
}

void TestAttempts::doubleClickOpensTheComparison()
{
    AttemptsView *view = m_window->attempts();
    QTableView *table = view->table();
    const QModelIndex second = table->model()->index(1, 0);
    QSignalSpy requested(view, &AttemptsView::comparisonRequested);
    // As a user's double-click reaches the view: a click, then the second press as a double-click.
    QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(second).center());
    QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, table->visualRect(second).center());
    QCOMPARE(requested.count(), 1);
    CompareView *compare = m_window->compare();
    QTRY_VERIFY(compare->isVisible());
    QCOMPARE(compare->run(), view->attempts().attempts[1].run);
    QCOMPARE(compare->baseline(), view->attempts().baseline);
}

QTEST_MAIN(TestAttempts)

#include "tst_attempts.moc"
