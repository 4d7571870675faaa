#include "clijob.h"

#include <QEventLoop>
#include <QTextStream>

#include <cstdio>

#include <unistd.h>

namespace fp8scope::cli {

QString runJob(const std::function<void(JobContext &)> &work)
{
    QString error;
    JobQueue queue;
    QEventLoop loop;
    QTextStream err(stderr);
    const bool tty = isatty(fileno(stderr)) != 0;
    JobQueue::Request request;
    request.work = [&work](JobContext &ctx) -> QVariant {
        work(ctx);
        return {};
    };
    queue.submit(
        std::move(request), &loop,
        [&loop, &error](const JobResult &r) {
            error = r.error;
            loop.quit();
        },
        [&err, tty](const JobProgress &p) {
            if (tty && p.total > 0)
                err << "\r\033[K" << p.done << '/' << p.total << ' ' << p.message << Qt::flush;
        });
    loop.exec();
    if (tty)
        err << "\r\033[K" << Qt::flush;
    return error;
}

} // namespace fp8scope::cli
