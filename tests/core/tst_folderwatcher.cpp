// FolderWatcher (core/jobs/folderwatcher.h): a change under a watched folder is told, by notification at once
// and by the poll where notification is off (a network filesystem); changes are throttled to the minimum
// interval; hidden files (the store's .fp8scope/) are not watched; new files and folders, replaced and removed
// files are followed.
#include "core/jobs/folderwatcher.h"
#include "testmain.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace fp8scope;

namespace {

bool append(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    return f.open(QIODevice::Append) && f.write(bytes) == bytes.size();
}

} // namespace

class TestFolderWatcher : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void notificationTellsAtOnce()
    {
        QTemporaryDir dir;
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 1\n"));
        FolderWatcher w;
        w.setOptions({.minIntervalMs = 50, .pollIntervalMs = 0, .notify = true});
        w.watch({dir.path()});
        QVERIFY(w.notifiedPaths() >= 2); // the folder and its file
        QSignalSpy spy(&w, &FolderWatcher::changed);
        QElapsedTimer t;
        t.start();
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 2\n"));
        QVERIFY(spy.wait(2000));
        qInfo("notified %lld ms after the append", t.elapsed());
        // No poll runs: only the notification can have told.
        QVERIFY(t.elapsed() < 1000);
    }

    void pollTellsWithoutNotification()
    {
        QTemporaryDir dir;
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 1\n"));
        FolderWatcher w;
        w.setOptions({.minIntervalMs = 50, .pollIntervalMs = 100, .notify = false});
        w.watch({dir.path()});
        QCOMPARE(w.notifiedPaths(), 0);
        QSignalSpy spy(&w, &FolderWatcher::changed);
        QTest::qWait(300);
        QCOMPARE(spy.count(), 0); // nothing changed: nothing told
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 2\n"));
        QVERIFY(spy.wait(2000));
        // A new file in a new folder, found by the poll too.
        spy.clear();
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("rank_1")));
        QVERIFY(append(dir.filePath(QStringLiteral("rank_1/train.log")), "iteration 1\n"));
        QVERIFY(spy.wait(2000));
    }

    void hiddenFilesAreNotWatched()
    {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral(".fp8scope")));
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 1\n"));
        FolderWatcher w;
        w.setOptions({.minIntervalMs = 20, .pollIntervalMs = 50, .notify = true});
        w.watch({dir.path()});
        QSignalSpy spy(&w, &FolderWatcher::changed);
        // The store's writes (and an editor's swap file) are not the run's.
        for (int i = 0; i < 5; ++i) {
            QVERIFY(append(dir.filePath(QStringLiteral(".fp8scope/store.sqlite")), "page"));
            QVERIFY(append(dir.filePath(QStringLiteral(".train.log.swp")), "x"));
            QTest::qWait(40);
        }
        QTest::qWait(200);
        QCOMPARE(spy.count(), 0);
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 2\n"));
        QVERIFY(spy.wait(2000));
    }

    void throttled()
    {
        QTemporaryDir dir;
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), ""));
        FolderWatcher w;
        w.setOptions({.minIntervalMs = 250, .pollIntervalMs = 0, .notify = true});
        w.watch({dir.path()});
        QSignalSpy spy(&w, &FolderWatcher::changed);
        // A line every 5 ms for a second: 200 appends, told at most once per 250 ms (the first at once).
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 1000) {
            QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration\n"));
            QTest::qWait(5);
        }
        QTest::qWait(400);
        qInfo("%lld signals for the appends of one second", qlonglong(spy.count()));
        QVERIFY(spy.count() >= 2);
        QVERIFY(spy.count() <= 6);
    }

    void followsNewReplacedAndRemovedFiles()
    {
        QTemporaryDir dir;
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 1\n"));
        FolderWatcher w;
        w.setOptions({.minIntervalMs = 20, .pollIntervalMs = 0, .notify = true});
        w.watch({dir.path()});
        QSignalSpy spy(&w, &FolderWatcher::changed);
        // A new rank's folder and log; then an append to that log, which only its own watch can tell.
        QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("rank_1")));
        QVERIFY(spy.wait(2000));
        QVERIFY(append(dir.filePath(QStringLiteral("rank_1/train.log")), "iteration 1\n"));
        QVERIFY(spy.wait(2000));
        QTest::qWait(100);
        spy.clear();
        QVERIFY(append(dir.filePath(QStringLiteral("rank_1/train.log")), "iteration 2\n"));
        QVERIFY(spy.wait(2000));
        // Replaced: written anew beside it and renamed over it (a restarted job's log); then appended to.
        QTest::qWait(100);
        spy.clear();
        QVERIFY(append(dir.filePath(QStringLiteral("train.log.new")), "iteration 1 again\n"));
        QVERIFY(QFile::remove(dir.filePath(QStringLiteral("train.log"))));
        QVERIFY(
            QFile::rename(dir.filePath(QStringLiteral("train.log.new")), dir.filePath(QStringLiteral("train.log"))));
        QVERIFY(spy.wait(2000));
        QTest::qWait(100);
        spy.clear();
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 2\n"));
        QVERIFY(spy.wait(2000));
        // Truncated in place.
        QTest::qWait(100);
        spy.clear();
        {
            QFile f(dir.filePath(QStringLiteral("train.log")));
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        }
        QVERIFY(spy.wait(2000));
        // Removed.
        QTest::qWait(100);
        spy.clear();
        QVERIFY(QFile::remove(dir.filePath(QStringLiteral("rank_1/train.log"))));
        QVERIFY(spy.wait(2000));
        // Stopped: nothing more.
        w.watch({});
        QTest::qWait(50);
        spy.clear();
        QVERIFY(append(dir.filePath(QStringLiteral("train.log")), "iteration 3\n"));
        QTest::qWait(300);
        QCOMPARE(spy.count(), 0);
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestFolderWatcher)
#include "tst_folderwatcher.moc"
