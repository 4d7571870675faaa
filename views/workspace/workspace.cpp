#include "workspace.h"

#include <QRegularExpression>

#include "core/formats/shortnames.h"
#include "core/jobs/folderwatcher.h"
#include "core/session/foldersession.h"

#include <QDir>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QPointer>
#include <QRegularExpression>

#include <atomic>
#include <mutex>

Q_DECLARE_METATYPE(fp8scope::Outcome<bool>)
Q_DECLARE_METATYPE(std::vector<fp8scope::ProblemEntry>)

Q_LOGGING_CATEGORY(lcWorkspace, "fp8scope.views.workspace")

namespace fp8scope {

namespace {

// Each folder read into its store (the load's job and the follow's): the value says whether any store took
// something; the problems are the folders that would not open (no path: said, not kept) and the files the
// ingest could not read or failed on. `progress`: said in the status bar, file by file.
Outcome<bool> ingestFolders(const QStringList &folders, JobContext &ctx, bool progress)
{
    Outcome<bool> out;
    FolderSession session;
    for (const QString &folder : folders) {
        QString error;
        if (!session.open(folder, &error))
            out.problems.push_back({.message = error, .storeError = true});
    }
    const std::vector<FolderSession::FolderIngest> ingested
        = session.ingest([&](int done, int total, const QString &file) {
              if (progress)
                  ctx.setProgress(done, total, QObject::tr("Reading %1").arg(QFileInfo(file).fileName()));
              return !ctx.isCancelled();
          });
    out.value = FolderSession::changed(ingested);
    for (const FolderSession::FolderIngest &f : ingested) {
        for (ProblemEntry &p : FolderSession::problemsOf(f))
            out.problems.push_back(std::move(p));
    }
    return out;
}

// Each run's label shortened by what it shares with the others' (legends, the run list).
void assignShortLabels(std::vector<WorkspaceRun> &runs)
{
    QStringList labels;
    for (const WorkspaceRun &r : runs)
        labels << r.run.label();
    const QStringList shortLabels = distinctShortNames(labels, Workspace::kShortLabelChars);
    for (size_t i = 0; i < runs.size(); ++i)
        runs[i].shortLabel = shortLabels[qsizetype(i)];
}

// What a load or follow job gave back, its own failure (an exception, a store that would not open) a problem.
Outcome<bool> outcomeOf(const JobResult &r)
{
    Outcome<bool> out = r.value.value<Outcome<bool>>();
    if (!r.error.isEmpty())
        out.problems.push_back({.message = r.error, .storeError = true});
    return out;
}

} // namespace

// Lives on the job queue's worker thread: only jobs touch the backend.
struct Workspace::BackendHolder {
    std::mutex mutex; // guards choice/factory, which the GUI thread may change between jobs
    BackendChoice choice = BackendChoice::Auto;
    CudaFactory factory = nullptr;
    bool dirty = true;
    std::unique_ptr<MetricsBackend> backend;
    QString status;
    QString error;

    MetricsBackend *get()
    {
        std::lock_guard lock(mutex);
        if (dirty) {
            BackendSelection s = selectBackend(choice, 0, factory);
            backend = std::move(s.backend);
            status = s.status;
            error = s.error;
            dirty = false;
        }
        return backend.get();
    }
};

// Lives on the query queue's worker thread: a Catalog over the folders the request was made for, with
// their serials, reopened when those change.
struct Workspace::QueryCatalog {
    Catalog catalog;
    std::vector<std::pair<quint64, QString>> opened;
    // While the folders are followed, what the analysis read is kept: the live triage reads only what came
    // since (Catalog::setKeepPoints).
    std::atomic<bool> keepPoints {true};

    const Catalog *get(const std::vector<std::pair<quint64, QString>> &stores, QString *error)
    {
        if (catalog.keepsPoints() != keepPoints.load())
            catalog.setKeepPoints(keepPoints.load());
        if (stores != opened) {
            catalog.close();
            opened.clear();
            for (const auto &[serial, folder] : stores) {
                if (!catalog.open(folder, serial, error))
                    return nullptr;
            }
            opened = stores;
        }
        return &catalog;
    }
};

QColor runColour(int index)
{
    // Okabe-Ito's eight, then four of Paul Tol's muted set that stand apart from them.
    static const QColor colours[]
        = {QColor(0x00, 0x72, 0xB2), QColor(0xD5, 0x5E, 0x00), QColor(0x00, 0x9E, 0x73), QColor(0xCC, 0x79, 0xA7),
            QColor(0xE6, 0x9F, 0x00), QColor(0x56, 0xB4, 0xE9), QColor(0x7F, 0x7F, 0x7F), QColor(0xF0, 0xE4, 0x42),
            QColor(0x88, 0x22, 0x55), QColor(0x44, 0xAA, 0x99), QColor(0x33, 0x22, 0x88), QColor(0x99, 0x99, 0x33)};
    return colours[size_t(index) % std::size(colours)];
}

Qt::PenStyle runLineStyle(int index)
{
    static const Qt::PenStyle styles[] = {Qt::SolidLine, Qt::DashLine, Qt::DotLine, Qt::DashDotLine};
    return styles[size_t(index) / kRunColours % std::size(styles)];
}

Workspace::Workspace(QObject *parent)
    : QObject(parent)
    , m_backend(std::make_shared<BackendHolder>())
    , m_queryCatalog(std::make_shared<QueryCatalog>())
    , m_jobs(std::make_unique<JobQueue>())
    , m_queries(std::make_unique<JobQueue>())
    , m_watcher(new FolderWatcher(this))
{
    connect(m_watcher, &FolderWatcher::changed, this, &Workspace::followNow);
    qRegisterMetaType<TensorMetrics>();
    qRegisterMetaType<Heatmap>();
    qRegisterMetaType<RunRef>();
    // Store errors the GUI thread's reads meet (curves, the statistics table) reach the problems panel: met
    // inside a read (a paint, a model's data()), so noted from the event loop after it.
    m_catalog.setStoreErrorHandler([this](const ProblemEntry &problem) {
        QMetaObject::invokeMethod(
            this, [this, problem] { noteStoreErrors({problem}); }, Qt::QueuedConnection);
    });
}

Workspace::~Workspace()
{
    // Join the workers before the stores close.
    m_queries.reset();
    m_jobs.reset();
}

std::optional<Dump> Workspace::dumpNearest(
    const std::vector<Dump> &dumps, const QString &layer, const QString &tensor, int64_t step)
{
    std::optional<Dump> pick;
    if (layer.isEmpty())
        return pick;
    int64_t best = std::numeric_limits<int64_t>::max();
    for (const Dump &d : dumps) {
        if (d.record.layer != layer || (d.record.tensor != tensor && !tensor.isEmpty()))
            continue;
        const int64_t distance = std::abs(d.record.step - step);
        if (distance < best) {
            best = distance;
            pick = d;
        }
    }
    return pick;
}

QString Workspace::newSlot(const QString &kind)
{
    static std::atomic<quint64> next {1};
    return kind + QLatin1Char('#') + QString::number(next.fetch_add(1));
}

quint64 Workspace::query(
    const QString &slot, Query work, QObject *receiver, std::function<void(const QVariant &value)> done)
{
    std::vector<std::pair<quint64, QString>> stores;
    for (int i = 0; i < m_folders.size() && i < int(m_serials.size()); ++i)
        stores.emplace_back(m_serials[size_t(i)], m_folders[i]);
    auto holder = m_queryCatalog;
    // The query thread's store errors come back with the value, for the problems panel.
    QPointer<Workspace> self(this);
    return m_queries->submit({QString(), slot,
                                 [holder, stores, work](JobContext &ctx) -> QVariant {
                                     QString error;
                                     const Catalog *catalog = holder->get(stores, &error);
                                     if (!catalog) {
                                         ctx.setError(error);
                                         return {};
                                     }
                                     // The store errors this query meets, handed back with its value.
                                     std::vector<ProblemEntry> met;
                                     holder->catalog.setStoreErrorHandler(
                                         [&met](const ProblemEntry &p) { met.push_back(p); });
                                     const std::unique_ptr<Catalog, void (*)(Catalog *)> unset(
                                         &holder->catalog, [](Catalog *c) { c->setStoreErrorHandler({}); });
                                     QVariant value = work(*catalog);
                                     return QVariantList {value, QVariant::fromValue(met)};
                                 }},
        receiver, [done, self](const JobResult &r) {
            const QVariantList both = r.value.toList();
            if (self && both.size() == 2)
                self->noteStoreErrors(both.at(1).value<std::vector<ProblemEntry>>());
            done(both.value(0));
        });
}

void Workspace::setBackend(BackendChoice choice, CudaFactory cudaFactory)
{
    {
        std::lock_guard lock(m_backend->mutex);
        m_backend->choice = choice;
        m_backend->factory = cudaFactory;
        m_backend->dirty = true;
    }
    ensureBackendJob();
}

void Workspace::ensureBackendJob()
{
    auto holder = m_backend;
    m_jobs->submit({QString(), QStringLiteral("backend"),
                       [holder](JobContext &) -> QVariant {
                           holder->get();
                           return holder->error.isEmpty() ? holder->status : holder->error;
                       }},
        this, [this](const JobResult &r) {
            m_backendStatus = r.value.toString();
            Q_EMIT backendStatusChanged(m_backendStatus);
        });
}

void Workspace::close()
{
    if (m_loadTicket)
        m_jobs->cancel(m_loadTicket);
    m_loadTicket = 0;
    m_watcher->watch({});
    if (m_followTicket)
        m_jobs->cancel(m_followTicket);
    m_followTicket = 0;
    m_followPending = false;
    m_advanceGaps.clear();
    // The query thread's connections belong to the folders being closed.
    auto holder = m_queryCatalog;
    m_queries->submit({QString(), QStringLiteral("close"),
                          [holder](JobContext &) -> QVariant {
                              holder->catalog.close();
                              holder->opened.clear();
                              return {};
                          }},
        this, [](const JobResult &) {});
    m_runs.clear();
    m_catalog.close();
    m_problems.clear();
    m_layers.clear();
    m_folders.clear();
    m_serials.clear();
    m_demo = false;
    Q_EMIT changed(Closed, {});
    Q_EMIT closed();
}

void Workspace::reload()
{
    const QStringList folders = m_folders;
    const bool demo = m_demo;
    open(folders);
    m_demo = demo;
}

bool Workspace::rebuild(QString *error)
{
    const QStringList folders = m_folders;
    const bool demo = m_demo;
    close();
    for (const QString &f : folders) {
        if (!FolderSession::rebuild(f, error))
            return false;
    }
    open(folders);
    m_demo = demo;
    return true;
}

void Workspace::open(const QStringList &folders)
{
    close();
    for (const QString &f : folders) {
        m_folders << QFileInfo(f).absoluteFilePath();
        m_serials.push_back(Catalog::newStoreSerial());
    }
    Q_EMIT loadingStarted();
    const QStringList list = m_folders;
    m_loadTicket = m_jobs->submit(
        {QString(), QStringLiteral("load"),
            [list](JobContext &ctx) -> QVariant { return QVariant::fromValue(ingestFolders(list, ctx, true)); }},
        this, [this](const JobResult &r) { finishLoad(outcomeOf(r).problems); });
}

void Workspace::openDemo(const QString &dir, const DemoOptions &options)
{
    close();
    m_demo = true;
    m_folders << QFileInfo(dir).absoluteFilePath();
    m_serials.push_back(Catalog::newStoreSerial());
    Q_EMIT loadingStarted();
    const QString out = m_folders.front();
    m_loadTicket = m_jobs->submit({QString(), QStringLiteral("load"),
                                      [out, options](JobContext &ctx) -> QVariant {
                                          Outcome<bool> result;
                                          QString error;
                                          // planted.json is written last: its presence marks a complete pair.
                                          if (!QFileInfo::exists(out + QStringLiteral("/planted.json"))) {
                                              ctx.setProgress(0, 2, QObject::tr("Generating the demo run pair"));
                                              if (!generateDemo(out, options, nullptr, &error)) {
                                                  result.problems.push_back({.message = error, .storeError = true});
                                                  return QVariant::fromValue(result);
                                              }
                                          }
                                          ctx.setProgress(1, 2, QObject::tr("Reading the demo run pair"));
                                          FolderSession session;
                                          if (!session.open(out, &error)) {
                                              result.problems.push_back({.message = error, .storeError = true});
                                              return QVariant::fromValue(result);
                                          }
                                          const std::vector<FolderSession::FolderIngest> ingested = session.ingest(
                                              [&](int, int, const QString &) { return !ctx.isCancelled(); });
                                          ctx.setProgress(2, 2);
                                          result.value = FolderSession::changed(ingested);
                                          result.problems = FolderSession::problemsOf(ingested.front());
                                          return QVariant::fromValue(result);
                                      }},
        this, [this](const JobResult &r) { finishLoad(outcomeOf(r).problems); });
}

void Workspace::finishLoad(std::vector<ProblemEntry> problems)
{
    m_loadTicket = 0;
    std::vector<ProblemEntry> unreadable;
    for (ProblemEntry &p : problems) {
        if (p.path.isEmpty()) { // the load's own failure (a store that would not open): said only
            Q_EMIT message(p.message);
            continue;
        }
        if (p.storeError)
            Q_EMIT message(QDir(p.path).dirName() + QStringLiteral(": ") + p.message);
        unreadable.push_back(std::move(p));
    }
    for (int i = 0; i < m_folders.size(); ++i) {
        QString error;
        if (!m_catalog.open(m_folders[i], m_serials[size_t(i)], &error)) {
            qCWarning(lcWorkspace) << error;
            Q_EMIT message(error);
            m_problems.push_back({.path = m_folders[i], .message = error, .storeError = true});
        }
    }
    for (const Run &r : m_catalog.runs())
        m_runs.push_back({r, runColour(int(m_runs.size())), runLineStyle(int(m_runs.size())), true, QString(),
            m_catalog.pairing(r.ref), keyVersionsText(m_catalog.versions(r.ref))});
    assignShortLabels(m_runs);
    readLatestSteps(m_runs);
    m_layers = m_catalog.layerTensors();
    for (ProblemEntry &p : m_catalog.problems())
        m_problems.push_back(std::move(p));
    for (ProblemEntry &p : unreadable)
        m_problems.push_back(std::move(p));
    if (m_following)
        m_watcher->watch(m_folders);
    Q_EMIT changed(Loaded, {});
    Q_EMIT loaded();
}

void Workspace::setFollowing(bool on)
{
    if (m_following == on)
        return;
    m_following = on;
    m_queryCatalog->keepPoints.store(on);
    m_watcher->watch(on && !m_loadTicket ? m_folders : QStringList());
    Q_EMIT changed(Following, {});
    Q_EMIT followingChanged(on);
    if (on)
        followNow(); // what was written while it was off
}

void Workspace::followNow()
{
    if (m_folders.isEmpty() || m_loadTicket || !m_following)
        return; // a load reads everything anyway
    if (m_followTicket) {
        m_followPending = true;
        return;
    }
    const QStringList list = m_folders;
    // No progress of its own: a few small reads a second are not worth the status bar's attention.
    m_followTicket = m_jobs->submit(
        {QString(), QStringLiteral("follow"),
            [list](JobContext &ctx) -> QVariant { return QVariant::fromValue(ingestFolders(list, ctx, false)); }},
        this, [this](const JobResult &r) {
            m_followTicket = 0;
            const Outcome<bool> outcome = outcomeOf(r);
            finishFollow(outcome.value.value_or(false), outcome.problems);
            if (m_followPending) {
                m_followPending = false;
                followNow();
            }
        });
}

void Workspace::finishFollow(bool storesChanged, std::vector<ProblemEntry> problems)
{
    // A file that fails again on every change is one problem, said once.
    bool added = false;
    for (ProblemEntry &p : problems) {
        bool known = false;
        for (const ProblemEntry &q : m_problems)
            known = known || (q.path == p.path && q.message == p.message);
        if (known)
            continue;
        Q_EMIT message(p.path.isEmpty() ? p.message : QDir(p.path).dirName() + QStringLiteral(": ") + p.message);
        m_problems.push_back(std::move(p));
        added = true;
    }
    if (added) {
        Q_EMIT changed(Problems, {});
        Q_EMIT problemsAdded();
    }
    if (!storesChanged)
        return;
    m_catalog.refresh();
    const std::vector<Run> now = m_catalog.runs(false);
    bool sameRuns = now.size() == m_runs.size();
    for (size_t i = 0; sameRuns && i < now.size(); ++i)
        sameRuns = now[i].ref == m_runs[i].run.ref;
    const std::vector<LayerTensors> layers = m_catalog.layerTensors();
    bool sameLayers = layers.size() == m_layers.size();
    for (size_t i = 0; sameLayers && i < layers.size(); ++i)
        sameLayers = layers[i].layer == m_layers[i].layer && layers[i].tensors == m_layers[i].tensors;
    const QDateTime stamp = QDateTime::currentDateTimeUtc();
    const auto noteAdvance = [&](const WorkspaceRun &before, WorkspaceRun &after) {
        if (after.latestStep <= before.latestStep)
            return;
        if (before.advanced.isValid()) {
            std::vector<qint64> &gaps = m_advanceGaps[after.run.ref];
            gaps.push_back(before.advanced.msecsTo(stamp));
            if (gaps.size() > 16)
                gaps.erase(gaps.begin());
        }
        after.advanced = stamp;
    };
    if (!sameRuns || !sameLayers) {
        // A new run (a rank, a restart) or a new layer: the runs again, each known run keeping its colour and
        // visibility, a new one taking the first colour no run has.
        std::vector<WorkspaceRun> runs;
        std::vector<int> used;
        for (const Run &r : m_catalog.runs()) {
            WorkspaceRun w {
                r, {}, {}, true, QString(), m_catalog.pairing(r.ref), keyVersionsText(m_catalog.versions(r.ref))};
            if (const WorkspaceRun *old = run(r.ref)) {
                w.colour = old->colour;
                w.lineStyle = old->lineStyle;
                w.visible = old->visible;
                w.latestStep = old->latestStep;
                w.advanced = old->advanced;
                used.push_back(indexOf(r.ref));
            }
            runs.push_back(std::move(w));
        }
        int next = 0;
        for (WorkspaceRun &w : runs) {
            if (w.colour.isValid())
                continue;
            while (std::find(used.begin(), used.end(), next) != used.end())
                ++next;
            w.colour = runColour(next);
            w.lineStyle = runLineStyle(next);
            used.push_back(next);
        }
        assignShortLabels(runs);
        const std::vector<WorkspaceRun> before = runs;
        readLatestSteps(runs);
        for (size_t i = 0; i < runs.size(); ++i)
            noteAdvance(before[i], runs[i]);
        m_runs = std::move(runs);
        m_layers = layers;
        Q_EMIT changed(Loaded, {});
        Q_EMIT loaded();
        Q_EMIT changed(Appended, {});
        Q_EMIT dataAppended();
        return;
    }
    const std::vector<WorkspaceRun> before = m_runs;
    readLatestSteps(m_runs);
    for (size_t i = 0; i < m_runs.size(); ++i) {
        noteAdvance(before[i], m_runs[i]);
        if (m_runs[i].latestStep != before[i].latestStep || m_runs[i].run.pointCount != before[i].run.pointCount) {
            Q_EMIT changed(Statistics, m_runs[i].run.ref);
            Q_EMIT statisticsChanged(m_runs[i].run.ref);
        }
    }
    Q_EMIT changed(Appended, {});
    Q_EMIT dataAppended();
}

void Workspace::readLatestSteps(std::vector<WorkspaceRun> &runs) const
{
    for (WorkspaceRun &r : runs) {
        int64_t latest = -1, points = 0;
        for (const Series &s : m_catalog.series(r.run.ref)) {
            points += s.points;
            if (s.axis == SeriesAxis::Step && s.points > 0)
                latest = std::max(latest, s.lastStep);
        }
        r.latestStep = latest;
        // The points of its series, as the store counts them: what tells a rewritten log from an unchanged one.
        r.run.pointCount = points;
    }
}

qint64 Workspace::stallThresholdMs(RunRef ref) const
{
    const WorkspaceRun *r = run(ref);
    if (!r || !r->advanced.isValid() || !m_following)
        return -1;
    qint64 usual = 0;
    if (const auto it = m_advanceGaps.find(ref); it != m_advanceGaps.end() && !it->second.empty()) {
        std::vector<qint64> gaps = it->second;
        std::nth_element(gaps.begin(), gaps.begin() + qsizetype(gaps.size() / 2), gaps.end());
        usual = gaps[gaps.size() / 2];
    }
    return std::max(m_stalledAfterMs, 10 * usual);
}

bool Workspace::isStalled(RunRef ref, const QDateTime &now) const
{
    const qint64 threshold = stallThresholdMs(ref);
    return threshold >= 0 && run(ref)->advanced.msecsTo(now) > threshold;
}

void Workspace::noteStoreErrors(const std::vector<ProblemEntry> &errors)
{
    bool added = false;
    for (const ProblemEntry &p : errors) {
        bool known = false;
        for (const ProblemEntry &q : m_problems)
            known = known || q.message == p.message;
        if (known)
            continue;
        m_problems.push_back(p);
        Q_EMIT message(p.message);
        added = true;
    }
    if (added) {
        Q_EMIT changed(Problems, {});
        Q_EMIT problemsAdded();
    }
}

QString Workspace::inRunNames(QString text) const
{
    // Longest names first: one run's name may begin another's.
    std::vector<std::pair<QString, QString>> names;
    for (const WorkspaceRun &r : m_runs) {
        const QString shown = runName(r.run.ref);
        for (const QString &own : {r.run.name, r.run.label()}) {
            if (!own.isEmpty() && own != shown)
                names.emplace_back(own, shown);
        }
    }
    std::sort(names.begin(), names.end(), [](const auto &a, const auto &b) { return a.first.size() > b.first.size(); });
    for (const auto &[own, shown] : names) {
        // As a whole word before "'s" ("bf16's band"); anywhere as a whole word where the name reads as a folder's
        // (it has a '_', '-' or '.' and is not short), never inside another word or a path.
        const QString escaped = QRegularExpression::escape(own);
        const bool folderLike = own.size() >= 6 && own.contains(QRegularExpression(QStringLiteral("[_.-]")));
        const QRegularExpression word(folderLike ? QStringLiteral("(?<![\\w./-])%1(?![\\w/-]|\\.\\w)").arg(escaped)
                                                 : QStringLiteral("(?<![\\w./-])%1(?='s)").arg(escaped));
        text.replace(word, shown);
    }
    return text;
}

QString Workspace::runName(RunRef ref) const
{
    const WorkspaceRun *r = run(ref);
    return !r ? QString() : r->shortLabel.isEmpty() ? r->run.label() : r->shortLabel;
}

const WorkspaceRun *Workspace::run(RunRef ref) const
{
    const int i = indexOf(ref);
    return i < 0 ? nullptr : &m_runs[size_t(i)];
}

int Workspace::indexOf(RunRef ref) const
{
    for (size_t i = 0; i < m_runs.size(); ++i) {
        if (m_runs[i].run.ref == ref)
            return int(i);
    }
    return -1;
}

RunRef Workspace::findRun(const QString &name) const
{
    for (const WorkspaceRun &r : m_runs) {
        if (r.run.name == name || r.run.displayName == name)
            return r.run.ref;
    }
    return {};
}

void Workspace::setRunVisible(RunRef ref, bool visible)
{
    const int i = indexOf(ref);
    if (i < 0 || m_runs[size_t(i)].visible == visible)
        return;
    m_runs[size_t(i)].visible = visible;
    Q_EMIT changed(Visibility, ref);
    Q_EMIT runVisibilityChanged(ref);
}

RunRef Workspace::baselineOf(RunRef ref) const
{
    const WorkspaceRun *r = run(ref);
    return r ? r->pairing.baseline : RunRef();
}

QString Workspace::folderOfStore(quint64 serial) const
{
    for (int i = 0; i < m_folders.size() && i < int(m_serials.size()); ++i) {
        if (m_serials[size_t(i)] == serial)
            return m_folders[i];
    }
    return {};
}

quint64 Workspace::recompute(
    const Dump &dump, const Recipe &recipe, const QString &slot, QObject *receiver, RecomputeDone done)
{
    const QString folder = folderOfStore(dump.run.store);
    if (folder.isEmpty()) {
        done(std::nullopt, tr("the dump's folder is no longer open"));
        return 0;
    }
    auto holder = m_backend;
    const RunRef run = dump.run;
    const QString key = folder + QLatin1Char('|') + dump.file + QLatin1Char('|') + dump.record.dataset
        + QLatin1Char('|') + recipe.name() + QLatin1Char('|') + formatName(recipe.format);
    return m_jobs->submit({key, slot,
                              [holder, folder, dump, recipe](JobContext &ctx) -> QVariant {
                                  MetricsBackend *backend = holder->get();
                                  if (!backend) {
                                      ctx.setError(holder->error);
                                      return {};
                                  }
                                  FolderSession session; // this thread's own connection
                                  QString error;
                                  if (!session.open(folder, dump.run.store, &error)) {
                                      ctx.setError(error);
                                      return {};
                                  }
                                  auto result = session.recompute(
                                      dump, *backend, {recipe}, &error, [&](int64_t doneElements, int64_t total) {
                                          ctx.setProgress(doneElements, total,
                                              QObject::tr("Recomputing %1 (%2)").arg(dump.record.layer, recipe.name()));
                                          return !ctx.isCancelled();
                                      });
                                  if (!result) {
                                      ctx.setError(error);
                                      return {};
                                  }
                                  TensorMetrics m = result->front();
                                  m.backend = holder->status;
                                  return QVariant::fromValue(m);
                              }},
        receiver, [this, run, done](const JobResult &r) {
            if (!r.error.isEmpty() || !r.value.isValid()) {
                done(std::nullopt, r.error.isEmpty() ? tr("cancelled") : r.error);
                return;
            }
            // Stored in the folder it was computed for: announced only while that folder's runs are open
            // (a ref of a closed folder's store matches no run of a new one).
            if (this->run(run)) {
                Q_EMIT changed(Statistics, run);
                Q_EMIT statisticsChanged(run);
            }
            done(r.value.value<TensorMetrics>(), QString());
        });
}

quint64 Workspace::longQuery(const QString &slot, LongQuery work, QObject *receiver,
    std::function<void(const QVariant &value, const QString &error)> done)
{
    std::vector<std::pair<quint64, QString>> stores;
    for (int i = 0; i < m_folders.size() && i < int(m_serials.size()); ++i)
        stores.emplace_back(m_serials[size_t(i)], m_folders[i]);
    auto holder = m_backend;
    return m_jobs->submit({QString(), slot,
                              [holder, stores, work](JobContext &ctx) -> QVariant {
                                  Catalog catalog; // this thread's own connections, under the workspace's serials
                                  for (const auto &[serial, folder] : stores) {
                                      QString error;
                                      if (!catalog.open(folder, serial, &error)) {
                                          ctx.setError(error);
                                          return {};
                                      }
                                  }
                                  return work(catalog, holder->get(), ctx);
                              }},
        receiver, [done](const JobResult &r) {
            if (!r.error.isEmpty() || !r.value.isValid()) {
                done({}, r.error.isEmpty() ? tr("cancelled") : r.error);
                return;
            }
            done(r.value, QString());
        });
}

quint64 Workspace::whatIf(
    const Dump &dump, const std::vector<Recipe> &recipes, const QString &slot, QObject *receiver, WhatIfDone done)
{
    const QString spec = dump.spec();
    const QString layer = dump.record.layer;
    auto holder = m_backend;
    return m_jobs->submit(
        {QStringLiteral("what-if|") + spec, slot,
            [holder, spec, recipes, layer](JobContext &ctx) -> QVariant {
                MetricsBackend *backend = holder->get();
                if (!backend) {
                    ctx.setError(holder->error);
                    return {};
                }
                Problem problem;
                auto reader = openTensor(spec, &problem);
                std::optional<WhatIfResult> result;
                if (reader) {
                    result
                        = computeWhatIf(*reader, recipes, *backend, &problem, [&](int64_t doneElements, int64_t total) {
                              ctx.setProgress(doneElements, total, QObject::tr("Recipe what-if on %1").arg(layer));
                              return !ctx.isCancelled();
                          });
                }
                if (!result) {
                    ctx.setError(problem.toString());
                    return {};
                }
                return QVariant::fromValue(*result);
            }},
        receiver, [done](const JobResult &r) {
            if (!r.error.isEmpty() || !r.value.isValid()) {
                done(std::nullopt, r.error.isEmpty() ? tr("cancelled") : r.error);
                return;
            }
            done(r.value.value<WhatIfResult>(), QString());
        });
}

void Workspace::storeWhatIf(
    RunRef run, const StoredWhatIf &w, QObject *receiver, std::function<void(const QString &error)> done)
{
    const QString folder = folderOfStore(run.store);
    if (folder.isEmpty() || !this->run(run)) {
        done(tr("the run is no longer open"));
        return;
    }
    storeWrite(
        folder, run.store, QStringLiteral("what-if|%1|%2|%3").arg(folder).arg(run.id).arg(w.dump),
        [run, w](FolderSession &session, QString *error) { return session.storeWhatIf(run, w, error); }, receiver,
        std::move(done), [] {});
}

void Workspace::storeReview(RunRef run, RunRef baseline, const FindingReview &review, QObject *receiver,
    std::function<void(const QString &error)> done)
{
    const QString folder = folderOfStore(run.store);
    const auto [baselineFolder, baselineName] = catalog().baselineKey(run, baseline);
    if (folder.isEmpty() || !this->run(run) || (baseline.isValid() && baselineName.isEmpty())) {
        done(tr("the run or its baseline is no longer open"));
        return;
    }
    storeWrite(
        folder, run.store, QStringLiteral("review|%1|%2|%3").arg(folder).arg(run.id).arg(review.finding),
        [run, baselineFolder, baselineName, review](FolderSession &session, QString *error) {
            return session.storeReview(run, {baselineFolder, baselineName}, review, error);
        },
        receiver, std::move(done),
        [this, run] {
            if (this->run(run)) {
                Q_EMIT changed(Reviews, run);
                Q_EMIT reviewsChanged(run);
            }
        });
}

void Workspace::storeCandidateChoice(
    RunRef baseline, const CandidateChoice &choice, QObject *receiver, std::function<void(const QString &error)> done)
{
    const QString folder = folderOfStore(baseline.store);
    if (folder.isEmpty() || !this->run(baseline)) {
        done(tr("the baseline is no longer open"));
        return;
    }
    storeWrite(
        folder, baseline.store, QStringLiteral("candidate|%1|%2").arg(folder).arg(baseline.id),
        [baseline, choice](
            FolderSession &session, QString *error) { return session.storeCandidateChoice(baseline, choice, error); },
        receiver, std::move(done),
        [this, baseline] {
            if (this->run(baseline))
                Q_EMIT changed(Reviews, baseline);
        });
}

void Workspace::storeWrite(const QString &folder, quint64 store, const QString &key,
    std::function<bool(FolderSession &session, QString *error)> write, QObject *receiver,
    std::function<void(const QString &error)> done, std::function<void()> kept)
{
    m_jobs->submit({QString(), key,
                       [folder, store, write](JobContext &ctx) -> QVariant {
                           FolderSession session; // this thread's own connection
                           QString error;
                           if (!session.open(folder, store, &error) || !write(session, &error)) {
                               ctx.setError(error);
                               return {};
                           }
                           return true;
                       }},
        receiver, [done, kept](const JobResult &r) {
            if (!r.error.isEmpty() || !r.value.isValid()) {
                done(r.error.isEmpty() ? tr("cancelled") : r.error);
                return;
            }
            kept();
            done(QString());
        });
}

} // namespace fp8scope
