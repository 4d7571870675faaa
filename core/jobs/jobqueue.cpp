#include "jobqueue.h"

#include <QMetaObject>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace fp8scope {

using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kProgressInterval = std::chrono::milliseconds(100);

struct Subscriber {
    quint64 ticket = 0;
    QString slot;
    QObject *receiver = nullptr;
    JobQueue::Finished onFinished;
    JobQueue::ProgressCallback onProgress;
};

} // namespace

struct JobContext::Job {
    QString key;
    JobQueue::Work work;
    std::atomic<bool> cancel {false};
    bool started = false; // guarded by the queue mutex
    std::vector<Subscriber> subscribers; // guarded by the queue mutex
    QString error; // written by the worker only
    Clock::time_point lastProgress {};
    bool anyProgress = false;
};

using Job = JobContext::Job;

// Results posted to their receivers and not delivered yet, by ticket: cancel() takes a ticket out, so a result
// that finished just before its cancel is not delivered after it (the posted call checks here first). Shared
// with the posted calls, which may run after the queue is gone.
struct PostedResults {
    std::mutex mutex;
    std::set<quint64> tickets;
};

struct JobQueue::Private {
    std::shared_ptr<PostedResults> posted = std::make_shared<PostedResults>();
    mutable std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::shared_ptr<Job>> queue;
    std::shared_ptr<Job> running;
    std::map<QString, quint64> slotTicket;
    std::set<QObject *> receivers; // those whose destroyed() we watch
    quint64 nextTicket = 0;
    bool stopping = false;
    bool busy = false;
    std::thread worker;

    // The job holding `ticket`, queued or running, or null.
    std::shared_ptr<Job> findTicket(quint64 ticket) const
    {
        auto has = [ticket](const std::shared_ptr<Job> &j) {
            for (const Subscriber &s : j->subscribers) {
                if (s.ticket == ticket)
                    return true;
            }
            return false;
        };
        if (running && has(running))
            return running;
        for (const auto &j : queue) {
            if (has(j))
                return j;
        }
        return nullptr;
    }

    // Drops a subscriber; a job nobody waits for any more is dequeued or cancelled.
    void dropTicket(quint64 ticket)
    {
        const auto job = findTicket(ticket);
        if (!job)
            return;
        auto &subs = job->subscribers;
        for (auto it = subs.begin(); it != subs.end(); ++it) {
            if (it->ticket == ticket) {
                if (!it->slot.isEmpty()) {
                    auto s = slotTicket.find(it->slot);
                    if (s != slotTicket.end() && s->second == ticket)
                        slotTicket.erase(s);
                }
                subs.erase(it);
                break;
            }
        }
        if (!subs.empty())
            return;
        job->cancel = true;
        if (!job->started) {
            for (auto it = queue.begin(); it != queue.end(); ++it) {
                if (*it == job) {
                    queue.erase(it);
                    break;
                }
            }
        }
    }
};

JobContext::JobContext(JobQueue *queue, std::shared_ptr<Job> job)
    : m_queue(queue)
    , m_job(std::move(job))
{
}

bool JobContext::isCancelled() const
{
    return m_job->cancel.load(std::memory_order_relaxed);
}

void JobContext::setProgress(qint64 done, qint64 total, const QString &message)
{
    const auto now = Clock::now();
    if (m_job->anyProgress && done < total && now - m_job->lastProgress < kProgressInterval)
        return;
    m_job->anyProgress = true;
    m_job->lastProgress = now;
    m_queue->postProgress(m_job, {done, total, message});
}

void JobContext::setError(const QString &message)
{
    m_job->error = message;
}

JobQueue::JobQueue(QObject *parent)
    : QObject(parent)
    , d(std::make_unique<Private>())
{
    d->worker = std::thread([this] { run(); });
}

JobQueue::~JobQueue()
{
    {
        std::lock_guard lock(d->mutex);
        d->stopping = true;
        for (const auto &j : d->queue)
            j->cancel = true;
        d->queue.clear();
        if (d->running)
            d->running->cancel = true;
    }
    d->wake.notify_all();
    d->worker.join();
}

quint64 JobQueue::submit(Request request, QObject *receiver, Finished onFinished, ProgressCallback onProgress)
{
    Q_ASSERT(receiver);
    bool becameBusy = false;
    bool connectNeeded = false;
    quint64 ticket;
    {
        std::lock_guard lock(d->mutex);
        connectNeeded = d->receivers.insert(receiver).second;
        ticket = ++d->nextTicket;
        if (!request.slot.isEmpty()) {
            auto s = d->slotTicket.find(request.slot);
            if (s != d->slotTicket.end())
                d->dropTicket(s->second);
            d->slotTicket[request.slot] = ticket;
        }
        Subscriber sub {ticket, request.slot, receiver, std::move(onFinished), std::move(onProgress)};
        std::shared_ptr<Job> target;
        if (!request.key.isEmpty()) {
            if (d->running && d->running->key == request.key && !d->running->cancel)
                target = d->running;
            for (const auto &j : d->queue) {
                if (!target && j->key == request.key)
                    target = j;
            }
        }
        if (!target) {
            target = std::make_shared<Job>();
            target->key = request.key;
            target->work = std::move(request.work);
            d->queue.push_back(target);
        }
        target->subscribers.push_back(std::move(sub));
        becameBusy = !d->busy;
        d->busy = true;
    }
    // A receiver that dies takes its subscriptions with it (run in the receiver's thread, before its
    // posted events are discarded, so that nothing is posted to it afterwards).
    if (connectNeeded) {
        connect(
            receiver, &QObject::destroyed, this,
            [this, receiver] {
                std::lock_guard lock(d->mutex);
                d->receivers.erase(receiver);
                std::vector<quint64> tickets;
                auto collect = [&](const std::shared_ptr<Job> &j) {
                    for (const Subscriber &s : j->subscribers) {
                        if (s.receiver == receiver)
                            tickets.push_back(s.ticket);
                    }
                };
                if (d->running)
                    collect(d->running);
                for (const auto &j : d->queue)
                    collect(j);
                for (quint64 t : tickets)
                    d->dropTicket(t);
            },
            Qt::DirectConnection);
    }
    d->wake.notify_one();
    if (becameBusy)
        Q_EMIT busyChanged(true);
    return ticket;
}

void JobQueue::cancel(quint64 ticket)
{
    std::lock_guard lock(d->mutex);
    d->dropTicket(ticket);
    std::lock_guard posted(d->posted->mutex);
    d->posted->tickets.erase(ticket);
}

void JobQueue::stopRunning()
{
    std::lock_guard lock(d->mutex);
    if (d->running)
        d->running->cancel = true;
}

int JobQueue::queuedJobs() const
{
    std::lock_guard lock(d->mutex);
    return int(d->queue.size());
}

bool JobQueue::isBusy() const
{
    std::lock_guard lock(d->mutex);
    return d->busy;
}

void JobQueue::postProgress(const std::shared_ptr<Job> &job, const JobProgress &p)
{
    std::lock_guard lock(d->mutex);
    for (const Subscriber &s : job->subscribers) {
        if (s.onProgress)
            QMetaObject::invokeMethod(
                s.receiver, [cb = s.onProgress, p] { cb(p); }, Qt::QueuedConnection);
    }
    QMetaObject::invokeMethod(
        this, [this, p] { Q_EMIT progressChanged(p.done, p.total, p.message); }, Qt::QueuedConnection);
}

void JobQueue::run()
{
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock lock(d->mutex);
            d->wake.wait(lock, [this] { return d->stopping || !d->queue.empty(); });
            if (d->stopping)
                return;
            job = d->queue.front();
            d->queue.pop_front();
            job->started = true;
            d->running = job;
        }
        JobContext ctx(this, job);
        QVariant value;
        if (!job->cancel) {
            try {
                value = job->work(ctx);
            } catch (const std::exception &e) {
                job->error = QString::fromLocal8Bit(e.what());
            }
        }
        bool idle = false;
        {
            std::lock_guard lock(d->mutex);
            d->running.reset();
            for (const Subscriber &s : job->subscribers) {
                JobResult r {s.ticket, job->cancel.load(), job->error, value};
                if (!s.slot.isEmpty()) {
                    auto it = d->slotTicket.find(s.slot);
                    if (it != d->slotTicket.end() && it->second == s.ticket)
                        d->slotTicket.erase(it);
                }
                {
                    std::lock_guard posted(d->posted->mutex);
                    d->posted->tickets.insert(s.ticket);
                }
                QMetaObject::invokeMethod(
                    s.receiver,
                    [cb = s.onFinished, r, posted = d->posted] {
                        {
                            std::lock_guard lock(posted->mutex);
                            if (posted->tickets.erase(r.ticket) == 0)
                                return; // cancelled after it finished
                        }
                        cb(r);
                    },
                    Qt::QueuedConnection);
            }
            job->subscribers.clear();
            idle = d->queue.empty();
            d->busy = !idle;
        }
        if (idle)
            QMetaObject::invokeMethod(
                this,
                [this] {
                    if (!isBusy())
                        Q_EMIT busyChanged(false);
                },
                Qt::QueuedConnection);
    }
}

} // namespace fp8scope
