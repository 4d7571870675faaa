// The job queue: delivery on the requester's thread, progress, cancel, coalescing of identical requests,
// replacement within a slot, receivers that die, work that fails. The work here is plain CPU work.
#include "core/jobs/jobqueue.h"

#include <QSignalSpy>
#include <QTest>
#include <QThread>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

using namespace fp8scope;

namespace {

// Blocks the worker until released, so tests can queue behind a running job deterministically.
struct Gate {
    std::atomic<bool> open {false};
    std::atomic<bool> entered {false};
    void wait()
    {
        entered = true;
        while (!open)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
};

JobQueue::Request request(const QString &key, const QString &slot, JobQueue::Work work)
{
    return {key, slot, std::move(work)};
}

} // namespace

class TestJobQueue : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void deliversOnRequesterThreadWithValue();
    void progressIsThrottledAndOrdered();
    void cancelStopsRunningWork();
    void cancelQueuedNeverRuns();
    void cancelAfterFinishingDeliversNothing();
    void stopRunningDeliversCancelledResult();
    void identicalRequestsCoalesce();
    void newerRequestInSlotReplacesQueuedOne();
    void replacedRunningResultIsDropped();
    void deadReceiverGetsNothing();
    void failingWorkReportsError();
};

void TestJobQueue::deliversOnRequesterThreadWithValue()
{
    JobQueue queue;
    QObject receiver;
    QThread *workThread = nullptr;
    QThread *deliveryThread = nullptr;
    JobResult got;
    int calls = 0;
    queue.submit(request({}, {},
                     [&](JobContext &) {
                         workThread = QThread::currentThread();
                         return QVariant(42);
                     }),
        &receiver, [&](const JobResult &r) {
            deliveryThread = QThread::currentThread();
            got = r;
            ++calls;
        });
    QTRY_COMPARE(calls, 1);
    QCOMPARE(got.value.toInt(), 42);
    QVERIFY(!got.cancelled);
    QVERIFY(got.error.isEmpty());
    QCOMPARE(deliveryThread, QThread::currentThread());
    QVERIFY(workThread != QThread::currentThread());
    QTRY_VERIFY(!queue.isBusy());
}

void TestJobQueue::progressIsThrottledAndOrdered()
{
    JobQueue queue;
    QObject receiver;
    std::vector<JobProgress> seen;
    bool done = false;
    QSignalSpy busy(&queue, &JobQueue::busyChanged);
    queue.submit(
        request({}, {},
            [](JobContext &ctx) {
                for (int i = 0; i <= 100000; ++i)
                    ctx.setProgress(i, 100000, QStringLiteral("step"));
                return QVariant();
            }),
        &receiver, [&](const JobResult &) { done = true; }, [&](const JobProgress &p) { seen.push_back(p); });
    QTRY_VERIFY(done);
    // The first and the last always pass; a tight loop of 100001 updates is throttled to a handful.
    QVERIFY(seen.size() >= 2);
    QVERIFY(seen.size() < 100);
    QCOMPARE(seen.front().done, 0);
    QCOMPARE(seen.back().done, 100000);
    QCOMPARE(seen.back().total, 100000);
    QCOMPARE(seen.back().message, QStringLiteral("step"));
    for (size_t i = 1; i < seen.size(); ++i)
        QVERIFY(seen[i].done >= seen[i - 1].done);
    QTRY_COMPARE(busy.count(), 2);
    QCOMPARE(busy.at(0).at(0).toBool(), true);
    QCOMPARE(busy.at(1).at(0).toBool(), false);
}

void TestJobQueue::cancelStopsRunningWork()
{
    JobQueue queue;
    QObject receiver;
    std::atomic<bool> started {false};
    std::atomic<bool> sawCancel {false};
    bool delivered = false;
    const quint64 t = queue.submit(request({}, {},
                                       [&](JobContext &ctx) {
                                           started = true;
                                           while (!ctx.isCancelled())
                                               std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                           sawCancel = true;
                                           return QVariant();
                                       }),
        &receiver, [&](const JobResult &) { delivered = true; });
    QTRY_VERIFY(started);
    queue.cancel(t);
    QTRY_VERIFY(sawCancel);
    QTRY_VERIFY(!queue.isBusy());
    QTest::qWait(50);
    QVERIFY(!delivered); // a cancelled ticket gets no result
}

void TestJobQueue::stopRunningDeliversCancelledResult()
{
    JobQueue queue;
    QObject receiver;
    std::atomic<bool> started {false};
    std::atomic<bool> secondRan {false};
    std::optional<JobResult> result;
    queue.submit(request({}, {},
                     [&](JobContext &ctx) {
                         started = true;
                         int partial = 0;
                         while (!ctx.isCancelled()) {
                             ++partial;
                             std::this_thread::sleep_for(std::chrono::milliseconds(1));
                         }
                         return QVariant(partial);
                     }),
        &receiver, [&](const JobResult &r) { result = r; });
    queue.submit(request({}, {},
                     [&](JobContext &) {
                         secondRan = true;
                         return QVariant();
                     }),
        &receiver, [](const JobResult &) {});
    QTRY_VERIFY(started);
    queue.stopRunning();
    QTRY_VERIFY(result.has_value());
    QVERIFY(result->cancelled);
    QVERIFY(result->value.toInt() > 0); // what the job had done comes back
    QTRY_VERIFY(secondRan); // only the running job stops
}

void TestJobQueue::cancelAfterFinishingDeliversNothing()
{
    // The job finishes and its result is posted to the receiver's thread; a cancel before that thread gets to
    // it still keeps it from the requester (a view that asked again in between would take the old result).
    JobQueue queue;
    QObject receiver;
    std::atomic<bool> done {false};
    int results = 0;
    const quint64 ticket = queue.submit(request({}, {},
                                            [&](JobContext &) {
                                                done = true;
                                                return QVariant(7);
                                            }),
        &receiver, [&](const JobResult &) { ++results; });
    // Wait without processing events, so the posted result stays queued.
    for (int i = 0; i < 500 && (queue.isBusy() || !done); ++i)
        QThread::msleep(2);
    QVERIFY(done && !queue.isBusy());
    queue.cancel(ticket);
    QTest::qWait(50);
    QCOMPARE(results, 0);
    // An uncancelled one is delivered as ever.
    queue.submit(request({}, {}, [](JobContext &) { return QVariant(8); }), &receiver,
        [&](const JobResult &r) { results += r.value.toInt(); });
    QTRY_COMPARE(results, 8);
}

void TestJobQueue::cancelQueuedNeverRuns()
{
    JobQueue queue;
    QObject receiver;
    Gate gate;
    std::atomic<int> ran {0};
    int results = 0;
    queue.submit(request({}, {},
                     [&](JobContext &) {
                         gate.wait();
                         return QVariant();
                     }),
        &receiver, [&](const JobResult &) { ++results; });
    QTRY_VERIFY(gate.entered);
    const quint64 second = queue.submit(request({}, {},
                                            [&](JobContext &) {
                                                ++ran;
                                                return QVariant();
                                            }),
        &receiver, [&](const JobResult &) { ++results; });
    QCOMPARE(queue.queuedJobs(), 1);
    queue.cancel(second);
    QCOMPARE(queue.queuedJobs(), 0);
    gate.open = true;
    QTRY_COMPARE(results, 1);
    QTRY_VERIFY(!queue.isBusy());
    QCOMPARE(ran.load(), 0);
}

void TestJobQueue::identicalRequestsCoalesce()
{
    JobQueue queue;
    QObject a, b, c;
    Gate gate;
    std::atomic<int> runs {0};
    std::vector<JobResult> results;
    auto collect = [&](const JobResult &r) { results.push_back(r); };
    queue.submit(request({}, {},
                     [&](JobContext &) {
                         gate.wait();
                         return QVariant();
                     }),
        &a, collect);
    QTRY_VERIFY(gate.entered);
    auto work = [&](JobContext &) {
        ++runs;
        return QVariant(QStringLiteral("metrics"));
    };
    const quint64 t1 = queue.submit(request(QStringLiteral("t.h5:/x|current"), {}, work), &a, collect);
    const quint64 t2 = queue.submit(request(QStringLiteral("t.h5:/x|current"), {}, work), &b, collect);
    const quint64 t3 = queue.submit(request(QStringLiteral("t.h5:/x|mxfp8"), {}, work), &c, collect);
    QCOMPARE(queue.queuedJobs(), 2); // the two identical requests share one job
    QVERIFY(t1 != t2);
    gate.open = true;
    QTRY_COMPARE(results.size(), size_t(4));
    QCOMPARE(runs.load(), 2);
    int sharedValues = 0;
    for (const JobResult &r : results) {
        if (r.ticket == t1 || r.ticket == t2 || r.ticket == t3) {
            QCOMPARE(r.value.toString(), QStringLiteral("metrics"));
            ++sharedValues;
        }
    }
    QCOMPARE(sharedValues, 3);
}

void TestJobQueue::newerRequestInSlotReplacesQueuedOne()
{
    JobQueue queue;
    QObject view;
    Gate gate;
    std::vector<int> ranSteps;
    std::vector<JobResult> results;
    queue.submit(request({}, {},
                     [&](JobContext &) {
                         gate.wait();
                         return QVariant();
                     }),
        &view, [](const JobResult &) {});
    QTRY_VERIFY(gate.entered);
    for (int step : {100, 200, 300}) {
        queue.submit(request({}, QStringLiteral("histogram"),
                         [&ranSteps, step](JobContext &) {
                             ranSteps.push_back(step);
                             return QVariant(step);
                         }),
            &view, [&](const JobResult &r) { results.push_back(r); });
    }
    QCOMPARE(queue.queuedJobs(), 1); // only the newest of the slot waits
    gate.open = true;
    QTRY_COMPARE(results.size(), size_t(1));
    QTRY_VERIFY(!queue.isBusy());
    QCOMPARE(ranSteps, std::vector<int>({300}));
    QCOMPARE(results.front().value.toInt(), 300);
}

void TestJobQueue::replacedRunningResultIsDropped()
{
    JobQueue queue;
    QObject view;
    Gate gate;
    std::vector<int> delivered;
    queue.submit(request({}, QStringLiteral("heatmap"),
                     [&](JobContext &) {
                         gate.wait();
                         return QVariant(1);
                     }),
        &view, [&](const JobResult &r) { delivered.push_back(r.value.toInt()); });
    QTRY_VERIFY(gate.entered);
    queue.submit(request({}, QStringLiteral("heatmap"), [](JobContext &) { return QVariant(2); }), &view,
        [&](const JobResult &r) { delivered.push_back(r.value.toInt()); });
    gate.open = true;
    QTRY_VERIFY(!queue.isBusy());
    QTest::qWait(20);
    QCOMPARE(delivered, std::vector<int>({2})); // the stale result of the first request is not drawn
}

void TestJobQueue::deadReceiverGetsNothing()
{
    JobQueue queue;
    Gate gate;
    int delivered = 0;
    auto *receiver = new QObject;
    queue.submit(request({}, {},
                     [&](JobContext &) {
                         gate.wait();
                         return QVariant();
                     }),
        receiver, [&](const JobResult &) { ++delivered; });
    QTRY_VERIFY(gate.entered);
    delete receiver;
    gate.open = true;
    QTRY_VERIFY(!queue.isBusy());
    QTest::qWait(20);
    QCOMPARE(delivered, 0);
}

void TestJobQueue::failingWorkReportsError()
{
    JobQueue queue;
    QObject receiver;
    std::vector<JobResult> results;
    queue.submit(request({}, {},
                     [](JobContext &ctx) {
                         ctx.setError(QStringLiteral("dump.h5: dataset not found"));
                         return QVariant();
                     }),
        &receiver, [&](const JobResult &r) { results.push_back(r); });
    queue.submit(request({}, {}, [](JobContext &) -> QVariant { throw std::runtime_error("out of memory"); }),
        &receiver, [&](const JobResult &r) { results.push_back(r); });
    QTRY_COMPARE(results.size(), size_t(2));
    QCOMPARE(results[0].error, QStringLiteral("dump.h5: dataset not found"));
    QCOMPARE(results[1].error, QStringLiteral("out of memory"));
}

QTEST_GUILESS_MAIN(TestJobQueue)
#include "tst_jobqueue.moc"
