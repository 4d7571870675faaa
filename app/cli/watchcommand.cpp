#include "watchcommand.h"

#include "app/common/commandline.h"
#include "core/analysis/incrementaltriage.h"
#include "core/jobs/folderwatcher.h"
#include "core/query/catalog.h"
#include "core/session/foldersession.h"
#include "folderargs.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextStream>
#include <QTimer>

#include <atomic>
#include <cmath>
#include <csignal>

namespace fp8scope::cli {

using namespace fp8scope::analysis;

namespace {

std::atomic<int> g_stopSignal {0};

extern "C" void onStopSignal(int signal)
{
    g_stopSignal.store(signal);
}

int rank(Severity s)
{
    return s == Severity::Critical ? 2 : s == Severity::Warning ? 1 : 0;
}

} // namespace

int runWatch(const QStringList &args)
{
    QCommandLineParser parser;
    if (const int rc = parseCommand(parser, *cliCommand(u"watch"), args))
        return rc < 0 ? 0 : rc;
    QTextStream out(stdout);
    QTextStream err(stderr);
    if (parser.isSet(QStringLiteral("baseline")) != parser.isSet(QStringLiteral("run"))) {
        err << "fp8scope-cli watch: --baseline and --run go together\n";
        return 2;
    }
    bool ok = false;
    const double interval = parser.value(QStringLiteral("interval")).toDouble(&ok);
    if (!ok || !std::isfinite(interval) || interval < 0.05 || interval > 3600) {
        err << "fp8scope-cli watch: --interval is a number of seconds from 0.05 to 3600\n";
        return 2;
    }
    int failOn = 3; // never
    if (parser.isSet(QStringLiteral("fail-on"))) {
        const QString v = parser.value(QStringLiteral("fail-on"));
        if (v != QLatin1String("warning") && v != QLatin1String("critical")) {
            err << "fp8scope-cli watch: --fail-on is warning or critical\n";
            return 2;
        }
        failOn = v == QLatin1String("warning") ? 1 : 2;
    }
    const bool json = parser.isSet(QStringLiteral("json"));
    FolderSession session;
    Catalog &catalog = session.catalog();
    // Each point is read once: a new batch reads only what was written since.
    catalog.setKeepPoints(true);
    QString error;
    if (!session.open(parser.positionalArguments().front(), &error)) {
        err << "fp8scope-cli: " << error << '\n';
        return 1;
    }
    // A change notification reads the folder at once (at most four times a second); the interval is the poll
    // for filesystems that send none.
    FolderWatcher watcher;
    watcher.setOptions({.minIntervalMs = 250, .pollIntervalMs = 0, .notify = true});
    bool notified = false;
    QObject::connect(&watcher, &FolderWatcher::changed, [&notified] { notified = true; });
    watcher.watch({parser.positionalArguments().front()});
    g_stopSignal.store(0);
    std::signal(SIGINT, onStopSignal);
    std::signal(SIGTERM, onStopSignal);

    // What was printed: a finding's identity within its pair, and the severity it was printed at. It holds one
    // entry a distinct finding, however long the watch runs.
    QHash<QString, int> printed;
    // Pairs whose runs did not change keep their results.
    IncrementalTriage engine(TriageOptions {.live = true});
    QElapsedTimer clock;
    bool first = true;
    bool saidMissing = false;
    while (g_stopSignal.load() == 0) {
        clock.start();
        const std::vector<FolderSession::FolderIngest> ingested = session.ingest();
        for (const FolderSession::FolderIngest &f : ingested) {
            for (const QString &e : f.report.errors)
                err << "fp8scope-cli: " << e << '\n';
        }
        const bool changed = FolderSession::changed(ingested) || first;
        first = false;
        if (changed) {
            std::vector<Comparison> comparisons;
            if (parser.isSet(QStringLiteral("run"))) {
                const auto baseline = catalog.findRun(parser.value(QStringLiteral("baseline")));
                const auto run = catalog.findRun(parser.value(QStringLiteral("run")));
                if (baseline && run) {
                    comparisons.push_back(engine.compare(catalog, baseline->ref, run->ref));
                } else if (!saidMissing) {
                    // Not an error: the run may not have written its first line yet.
                    err << "fp8scope-cli watch: no run '"
                        << (baseline ? parser.value(QStringLiteral("run")) : parser.value(QStringLiteral("baseline")))
                        << "' yet; waiting for it\n";
                    saidMissing = true;
                }
            } else {
                comparisons = engine.update(catalog).comparisons;
            }
            for (const Comparison &c : comparisons) {
                const QString runName = nameOf(catalog, c.run);
                const QString baseName = nameOf(catalog, c.baseline);
                // A finding a review dismissed is neither printed nor failed on.
                const std::vector<FindingReview> reviews = catalog.findingReviews(c.run, c.baseline);
                for (const Finding &f : c.findings) {
                    if (isDismissed(reviews, f))
                        continue;
                    // A static finding (a config or version difference known at the start, an eval) is said
                    // once, as information: a watcher fails only on a change in the run.
                    const bool change = findingKindInfo(f.kind).change;
                    const int severity = change ? rank(f.severity) : 0;
                    const QString key = runName + QLatin1Char('\n') + baseName + QLatin1Char('\n') + findingIdentity(f);
                    const auto it = printed.constFind(key);
                    if (it != printed.constEnd() && (!change || *it >= severity))
                        continue;
                    printed.insert(key, severity);
                    if (json) {
                        QJsonObject o = findingJson(f);
                        o.insert(QStringLiteral("run"), runName);
                        o.insert(QStringLiteral("baseline"), baseName);
                        o.insert(QStringLiteral("time"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate));
                        if (!change) {
                            o.insert(QStringLiteral("static"), true);
                            o.insert(QStringLiteral("severity"), severityName(Severity::Info));
                        }
                        out << QJsonDocument(o).toJson(QJsonDocument::Compact) << '\n';
                    } else {
                        out << runName << " against " << baseName << ": "
                            << (change ? severityName(f.severity) : QStringLiteral("info (static)")) << " "
                            << findingKindName(f.kind)
                            << (f.layer.isEmpty() ? QString() : QStringLiteral(" ") + f.layer) << ": " << f.summary
                            << '\n';
                    }
                    out.flush();
                    if (change && severity >= failOn)
                        return 3;
                }
            }
        }
        // Wait out the interval in small steps, so that a signal ends the watch promptly and a change
        // notification cuts it short.
        notified = false;
        while (g_stopSignal.load() == 0 && !notified && clock.elapsed() < qint64(interval * 1000)) {
            QEventLoop wait;
            QTimer::singleShot(50, &wait, &QEventLoop::quit);
            wait.exec();
        }
    }
    err << "fp8scope-cli watch: stopped\n";
    return 0;
}

} // namespace fp8scope::cli
