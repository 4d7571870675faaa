#include "workspace.h"

#include <QDir>
#include <QFileInfo>
#include <QLoggingCategory>

#include <map>
#include <mutex>

Q_LOGGING_CATEGORY(lcWorkspace, "fp8scope.views.workspace")

namespace fp8scope {

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

// Lives on the query queue's worker thread: one read connection per folder.
struct Workspace::QueryStores {
    std::map<QString, std::unique_ptr<RunStore>> stores;

    RunStore *get(const QString &folder, QString *error)
    {
        auto &s = stores[folder];
        if (!s) {
            auto store = std::make_unique<RunStore>();
            if (!store->open(folder, error))
                return nullptr;
            s = std::move(store);
        }
        return s.get();
    }
};

QColor runColour(int index)
{
    static const QColor colours[]
        = {QColor(0x00, 0x72, 0xB2), QColor(0xD5, 0x5E, 0x00), QColor(0x00, 0x9E, 0x73), QColor(0xCC, 0x79, 0xA7),
            QColor(0xE6, 0x9F, 0x00), QColor(0x56, 0xB4, 0xE9), QColor(0x7F, 0x7F, 0x7F), QColor(0xF0, 0xE4, 0x42)};
    return colours[size_t(index) % std::size(colours)];
}

Workspace::Workspace(QObject *parent)
    : QObject(parent)
    , m_backend(std::make_shared<BackendHolder>())
    , m_queryStores(std::make_shared<QueryStores>())
    , m_jobs(std::make_unique<JobQueue>())
    , m_queries(std::make_unique<JobQueue>())
{
    qRegisterMetaType<TensorMetrics>();
    qRegisterMetaType<Heatmap>();
}

Workspace::~Workspace()
{
    // Join the workers before the stores close.
    m_queries.reset();
    m_jobs.reset();
}

quint64 Workspace::query(
    int run, const QString &slot, Query work, QObject *receiver, std::function<void(const QVariant &value)> done)
{
    const QString folder = m_folders[m_runs[size_t(run)].source];
    auto stores = m_queryStores;
    return m_queries->submit({QString(), slot,
                                 [stores, folder, work](JobContext &ctx) -> QVariant {
                                     QString error;
                                     RunStore *store = stores->get(folder, &error);
                                     if (!store) {
                                         ctx.setError(error);
                                         return {};
                                     }
                                     return work(*store);
                                 }},
        receiver, [done](const JobResult &r) { done(r.value); });
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
    // The query thread's connections belong to the folders being closed.
    auto stores = m_queryStores;
    m_queries->submit({QString(), QStringLiteral("close"),
                          [stores](JobContext &) -> QVariant {
                              stores->stores.clear();
                              return {};
                          }},
        this, [](const JobResult &) {});
    m_runs.clear();
    m_stores.clear();
    m_problems.clear();
    m_folders.clear();
    m_demo = false;
    ++m_generation;
    Q_EMIT closed();
}

void Workspace::open(const QStringList &folders)
{
    close();
    for (const QString &f : folders)
        m_folders << QFileInfo(f).absoluteFilePath();
    Q_EMIT loadingStarted();
    const QStringList list = m_folders;
    m_loadTicket = m_jobs->submit(
        {QString(), QStringLiteral("load"),
            [list](JobContext &ctx) -> QVariant {
                QStringList errors;
                for (int i = 0; i < list.size() && !ctx.isCancelled(); ++i) {
                    RunStore store;
                    QString error;
                    if (!store.open(list[i], &error)) {
                        errors << error;
                        continue;
                    }
                    store.ingest([&](int done, int total, const QString &file) {
                        ctx.setProgress(done, total, QObject::tr("Reading %1").arg(QFileInfo(file).fileName()));
                        return !ctx.isCancelled();
                    });
                }
                return errors;
            }},
        this, [this](const JobResult &r) { finishLoad(r.value.toStringList() << r.error); });
}

void Workspace::openDemo(const QString &dir, const DemoOptions &options)
{
    close();
    m_demo = true;
    m_folders << QFileInfo(dir).absoluteFilePath();
    Q_EMIT loadingStarted();
    const QString out = m_folders.front();
    m_loadTicket = m_jobs->submit({QString(), QStringLiteral("load"),
                                      [out, options](JobContext &ctx) -> QVariant {
                                          // planted.json is written last: its presence marks a complete pair.
                                          if (!QFileInfo::exists(out + QStringLiteral("/planted.json"))) {
                                              ctx.setProgress(0, 2, QObject::tr("Generating the demo run pair"));
                                              QString error;
                                              if (!generateDemo(out, options, nullptr, &error))
                                                  return QStringList {error};
                                          }
                                          ctx.setProgress(1, 2, QObject::tr("Reading the demo run pair"));
                                          RunStore store;
                                          QString error;
                                          if (!store.open(out, &error))
                                              return QStringList {error};
                                          store.ingest([&](int, int, const QString &) { return !ctx.isCancelled(); });
                                          ctx.setProgress(2, 2);
                                          return QStringList();
                                      }},
        this, [this](const JobResult &r) { finishLoad(r.value.toStringList() << r.error); });
}

void Workspace::finishLoad(const QStringList &errors)
{
    m_loadTicket = 0;
    for (const QString &e : errors) {
        if (!e.isEmpty())
            Q_EMIT message(e);
    }
    for (int i = 0; i < m_folders.size(); ++i) {
        auto store = std::make_unique<RunStore>();
        QString error;
        if (!store->open(m_folders[i], &error)) {
            qCWarning(lcWorkspace) << error;
            Q_EMIT message(error);
            m_stores.push_back(nullptr);
            continue;
        }
        for (const RunInfo &r : store->runs())
            m_runs.push_back({i, r, runColour(int(m_runs.size())), true});
        const QDir dir(m_folders[i]);
        for (const ProblemRecord &p : store->problems())
            m_problems.push_back({dir.absoluteFilePath(p.file), p.line, p.offset, p.message});
        m_stores.push_back(std::move(store));
    }
    Q_EMIT loaded();
}

int Workspace::runIndex(const QString &name) const
{
    for (size_t i = 0; i < m_runs.size(); ++i) {
        if (m_runs[i].info.name == name)
            return int(i);
    }
    return -1;
}

void Workspace::setRunVisible(int index, bool visible)
{
    if (index < 0 || index >= runCount() || m_runs[size_t(index)].visible == visible)
        return;
    m_runs[size_t(index)].visible = visible;
    Q_EMIT runVisibilityChanged(index);
}

int Workspace::baselineOf(int run) const
{
    const RunInfo &info = m_runs[size_t(run)].info;
    if (!info.baseline.isEmpty())
        return runIndex(info.baseline);
    if (info.precision == QLatin1String("bf16"))
        return -1;
    int found = -1;
    for (int i = 0; i < runCount(); ++i) {
        if (m_runs[size_t(i)].info.precision == QLatin1String("bf16")) {
            if (found >= 0)
                return -1;
            found = i;
        }
    }
    return found;
}

std::vector<std::pair<QString, QStringList>> Workspace::layerTensors() const
{
    QHash<QString, QStringList> tensors;
    for (int i = 0; i < runCount(); ++i) {
        Statement s = store(i).database().prepare(
            "SELECT DISTINCT layer, tensor FROM series WHERE run_id=?1 AND layer<>'' "
            "UNION SELECT DISTINCT layer, tensor FROM dumps WHERE run_id=?1 AND layer<>''");
        s.bind(1, m_runs[size_t(i)].info.id);
        while (s.next()) {
            const QString tensor = s.text(1);
            QStringList &list = tensors[s.text(0)];
            if (!tensor.isEmpty() && !tensor.endsWith(QLatin1String("_fp8")) && !list.contains(tensor))
                list << tensor;
        }
    }
    std::vector<std::pair<QString, QStringList>> out;
    for (auto it = tensors.cbegin(); it != tensors.cend(); ++it) {
        QStringList t = it.value();
        t.sort();
        out.emplace_back(it.key(), t);
    }
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return layerLess(a.first, b.first); });
    return out;
}

quint64 Workspace::recompute(
    int run, const DumpRef &dump, const Recipe &recipe, const QString &slot, QObject *receiver, RecomputeDone done)
{
    const QString folder = m_folders[m_runs[size_t(run)].source];
    const quint64 generation = m_generation;
    auto holder = m_backend;
    const QString key = folder + QLatin1Char('|') + dump.file + QLatin1Char('|') + dump.dump.dataset + QLatin1Char('|')
        + recipe.name() + QLatin1Char('|') + formatName(recipe.format);
    return m_jobs->submit({key, slot,
                              [holder, folder, dump, recipe](JobContext &ctx) -> QVariant {
                                  MetricsBackend *backend = holder->get();
                                  if (!backend) {
                                      ctx.setError(holder->error);
                                      return {};
                                  }
                                  RunStore store; // this thread's own connection
                                  QString error;
                                  if (!store.open(folder, &error)) {
                                      ctx.setError(error);
                                      return {};
                                  }
                                  auto result = recomputeDump(store, *backend, dump, {recipe}, &error,
                                      [&](int64_t doneElements, int64_t total) {
                                          ctx.setProgress(doneElements, total,
                                              QObject::tr("Recomputing %1 (%2)").arg(dump.dump.layer, recipe.name()));
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
        receiver, [this, run, generation, done](const JobResult &r) {
            if (!r.error.isEmpty() || !r.value.isValid()) {
                done(std::nullopt, r.error.isEmpty() ? tr("cancelled") : r.error);
                return;
            }
            // Stored in the folder it was computed for; the run index means something only while that is open.
            if (generation == m_generation)
                Q_EMIT statisticsChanged(run);
            done(r.value.value<TensorMetrics>(), QString());
        });
}

} // namespace fp8scope
