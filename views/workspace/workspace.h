// What the window has open: one or more folders, each with its run store, and the runs they hold, with the
// colour and visibility every view uses for a run. Opening ingests each folder in the job queue (the GUI
// thread only reads the stores afterwards, through its own connections); recomputation of tensor dumps
// runs in the same queue, whose single worker thread owns the metrics backend (and so the CUDA context).
#pragma once

#include "core/demo/demogenerator.h"
#include "core/jobs/jobqueue.h"
#include "core/numerics/backendselect.h"
#include "core/numerics/tensormetrics.h"
#include "core/store/dumprecompute.h"
#include "core/store/runstore.h"

#include <QColor>
#include <QObject>
#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

Q_DECLARE_METATYPE(fp8scope::TensorMetrics)
Q_DECLARE_METATYPE(fp8scope::Heatmap)

namespace fp8scope {

struct WorkspaceRun {
    int source = 0; // index into folders()
    RunInfo info;
    QColor colour;
    bool visible = true;
};

struct WorkspaceProblem {
    QString path; // absolute
    qint64 line = 0;
    qint64 offset = -1;
    QString message;
};

class Workspace : public QObject
{
    Q_OBJECT
public:
    explicit Workspace(QObject *parent = nullptr);
    ~Workspace() override;

    // Where recomputation runs; the executable passes the CUDA factory when it has one. Takes effect for
    // the next backend selection (made lazily by the first job that needs it).
    void setBackend(BackendChoice choice, CudaFactory cudaFactory);
    QString backendStatus() const { return m_backendStatus; }

    // Closes what is open, then ingests each folder off the GUI thread and loads its runs (loaded()).
    void open(const QStringList &folders);
    // Generates the demo pair into `dir` unless a complete one is there, then opens it.
    void openDemo(const QString &dir, const DemoOptions &options);
    void close();
    QStringList folders() const { return m_folders; }
    bool isLoading() const { return m_loadTicket != 0; }
    bool isDemo() const { return m_demo; }

    int runCount() const { return int(m_runs.size()); }
    const WorkspaceRun &run(int index) const { return m_runs[size_t(index)]; }
    int runIndex(const QString &name) const; // -1 when absent
    void setRunVisible(int index, bool visible);
    RunStore &store(int run) const { return *m_stores[size_t(m_runs[size_t(run)].source)]; }
    // The baseline a run names (manifest) or, for an FP8 run next to exactly one BF16 run, that run; -1.
    int baselineOf(int run) const;

    const std::vector<WorkspaceProblem> &problems() const { return m_problems; }
    // Every distinct layer over all runs, in depth order, with its tensor kinds (series or dumps).
    std::vector<std::pair<QString, QStringList>> layerTensors() const;

    JobQueue &jobs() { return *m_jobs; }

    // Store reads too large for the GUI thread (a layer x step matrix can hold millions of values) run on
    // a second queue, with its own connection per folder, so they never wait behind a recomputation. The
    // newest query of a slot replaces older ones; done runs on receiver's thread with the work's value.
    using Query = std::function<QVariant(RunStore &store)>;
    quint64 query(
        int run, const QString &slot, Query work, QObject *receiver, std::function<void(const QVariant &value)> done);
    JobQueue &queries() { return *m_queries; }

    // Recomputes one dump under one recipe in the job queue (a newer request of the same slot replaces an
    // older one); stores the statistics, emits statisticsChanged(run) and calls done on receiver's thread.
    using RecomputeDone = std::function<void(const std::optional<TensorMetrics> &metrics, const QString &error)>;
    quint64 recompute(
        int run, const DumpRef &dump, const Recipe &recipe, const QString &slot, QObject *receiver, RecomputeDone done);

Q_SIGNALS:
    void loadingStarted();
    void loaded(); // runs, stores and problems are ready (also after a failed or cancelled load)
    void closed();
    void runVisibilityChanged(int run);
    void statisticsChanged(int run);
    void backendStatusChanged(const QString &status);
    void message(const QString &text); // for the status bar: what failed or finished

private:
    void finishLoad(const QStringList &errors);
    void ensureBackendJob();

    struct BackendHolder;
    struct QueryStores;
    std::shared_ptr<BackendHolder> m_backend;
    std::shared_ptr<QueryStores> m_queryStores;
    std::unique_ptr<JobQueue> m_jobs;
    std::unique_ptr<JobQueue> m_queries;
    QString m_backendStatus;
    QStringList m_folders;
    std::vector<std::unique_ptr<RunStore>> m_stores;
    std::vector<WorkspaceRun> m_runs;
    std::vector<WorkspaceProblem> m_problems;
    quint64 m_loadTicket = 0;
    // Counts close(): a recompute that finishes after its folders were closed names a run index of theirs.
    quint64 m_generation = 0;
    bool m_demo = false;
};

// The colour of the i-th run (Okabe-Ito, distinguishable for colour-blind readers).
QColor runColour(int index);

} // namespace fp8scope
