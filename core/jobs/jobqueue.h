// The one way fp8scope runs long work (recompute, ingest, triage, report) off the requester's thread: a
// single worker thread (which therefore owns the CUDA context) takes jobs in order. Each request gets a
// ticket; work sees an atomic cancel flag and reports throttled progress; the result is delivered on the
// thread of the receiver the request named, and never after that receiver is gone, cancelled or replaced.
// Requests with the same key coalesce onto one job while it is queued or running; a request with the same
// slot as an older one (one view asking again) replaces it: the older one is dropped if it has not started
// and its result is never delivered if it has.
#pragma once

#include <QObject>
#include <QString>
#include <QVariant>

#include <functional>
#include <memory>

namespace fp8scope {

struct JobProgress {
    qint64 done = 0;
    qint64 total = 0;
    QString message;
};

struct JobResult {
    quint64 ticket = 0;
    bool cancelled = false;
    QString error; // non-empty when the work failed
    QVariant value;
};

class JobContext
{
public:
    bool isCancelled() const;
    // Throttled to a few updates a second; the first and the last (done == total) always pass.
    void setProgress(qint64 done, qint64 total, const QString &message = QString());
    void setError(const QString &message);

    struct Job; // internal to the queue

private:
    friend class JobQueue;
    JobContext(class JobQueue *queue, std::shared_ptr<Job> job);
    class JobQueue *m_queue;
    std::shared_ptr<Job> m_job;
};

class JobQueue : public QObject
{
    Q_OBJECT
public:
    using Work = std::function<QVariant(JobContext &)>;
    struct Request {
        QString key; // non-empty: identical requests share one job
        QString slot; // non-empty: replaces the previous request of the same slot
        Work work;
    };
    using Finished = std::function<void(const JobResult &)>;
    using ProgressCallback = std::function<void(const JobProgress &)>;

    explicit JobQueue(QObject *parent = nullptr);
    ~JobQueue() override; // cancels everything and joins the worker

    // Returns the ticket. onFinished and onProgress run on receiver's thread while receiver lives.
    quint64 submit(Request request, QObject *receiver, Finished onFinished, ProgressCallback onProgress = {});
    // The ticket's result will not be delivered; its job stops when no other request shares it.
    void cancel(quint64 ticket);

    // Stops the running job at its next cancellation check (a status bar's cancel button); unlike cancel(),
    // its requesters still receive its result, marked cancelled, so they can show what was done.
    void stopRunning();
    int queuedJobs() const; // waiting, not started
    bool isBusy() const; // a job queued or running

Q_SIGNALS:
    // Progress of the running job, throttled, on the queue's thread (for a status bar).
    void progressChanged(qint64 done, qint64 total, const QString &message);
    void busyChanged(bool busy);

private:
    friend class JobContext;
    struct Private;
    std::unique_ptr<Private> d;
    void run();
    void postProgress(const std::shared_ptr<JobContext::Job> &job, const JobProgress &p);
};

} // namespace fp8scope
