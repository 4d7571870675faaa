// What the window has open: one or more folders, read through one query-layer Catalog (core/query), and the
// runs they hold, known by their RunRef, with the colour and visibility every view uses for a run and the
// baseline each is paired with. Opening ingests each folder in the job queue; recomputation of tensor dumps
// runs in the same queue, whose single worker thread owns the metrics backend (and so the CUDA context).
// Reads too large for the GUI thread run on a second queue with a Catalog of its own over the same folders.
// The open folders are followed while they are written (core/jobs/folderwatcher.h): what they gain is ingested
// in the job queue, a few times a second at most, and the views are told which runs grew.
#pragma once

#include "core/demo/demogenerator.h"
#include "core/jobs/jobqueue.h"
#include "core/numerics/backendselect.h"
#include "core/numerics/blockcensus.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/tensormetrics.h"
#include "core/numerics/whatif.h"
#include "core/query/catalog.h"

#include <QColor>
#include <QDateTime>
#include <QObject>
#include <QStringList>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

Q_DECLARE_METATYPE(fp8scope::TensorMetrics)
Q_DECLARE_METATYPE(fp8scope::BlockCensus)

namespace fp8scope {

class FolderSession;
class FolderWatcher;

struct WorkspaceRun {
    Run run;
    QColor colour;
    Qt::PenStyle lineStyle = Qt::SolidLine; // past the twelfth run, colours repeat with another line style
    bool visible = true;
    // The label shortened by what it shares with the other runs' (core/formats/shortnames.h): legends and the
    // run list show it, their tooltips the whole label.
    QString shortLabel;
    Pairing pairing;
    QString versions; // the key frameworks' versions it recorded ("transformer-engine 1.7.0, torch 2.3.0")
    // How far it is: its newest step of any series (-1: none), and when that last moved while the folder was
    // followed (invalid: not since it was opened).
    int64_t latestStep = -1;
    QDateTime advanced;
};

class Workspace : public QObject
{
    Q_OBJECT
public:
    // What changed, for changed(): a view connects once and reacts to the parts it shows.
    enum Part {
        Loaded = 1, // the runs, layers and problems are ready (a load, a reload, a run or layer that appeared)
        Closed = 2, // the folders were closed: no runs
        Visibility = 4, // a run shown or hidden (the run)
        Statistics = 8, // a run's stored data changed: a followed log grew, a recompute was stored (the run)
        Appended = 16, // a followed folder's new data is in (after its runs' Statistics)
        Problems = 32, // problems() grew after Loaded
        Reviews = 64, // a review of a finding was kept (the run)
        Following = 128, // following turned on or off
    };
    Q_DECLARE_FLAGS(Parts, Part)

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
    // Reads the open folders again (a manifest written, a file changed), as they were opened (the demo stays
    // the demo).
    void reload();
    // Throws the stores of the open folders away and reads the folders again (a damaged store: the store is a
    // cache of the run's files); false with *error when a store could not be removed.
    bool rebuild(QString *error);
    QStringList folders() const { return m_folders; }
    bool isLoading() const { return m_loadTicket != 0; }
    bool isDemo() const { return m_demo; }

    // The GUI thread's reads. Its runs are those loaded last; the stores behind it may have more.
    const Catalog &catalog() const { return m_catalog; }

    // The runs, in the order of the folders and, within one, by name (the order of their colours).
    const std::vector<WorkspaceRun> &runs() const { return m_runs; }
    // The longest a run's short label is before its middle gives way to an ellipsis (where the names stay apart).
    static constexpr int kShortLabelChars = 24;
    int runCount() const { return int(m_runs.size()); }
    // nullptr for a run that is not open (a closed folder's run, an invalid ref).
    const WorkspaceRun *run(RunRef ref) const;
    // The one name every view gives a run: its short label (what sets it apart from the other runs open), its
    // whole label where it has none; "" for a run not open. Tooltips give the whole label.
    QString runName(RunRef ref) const;
    // A finding's text (the analysis names runs by their folder) with each open run's name written as its
    // runName, so a view's words match its run list: "NAME's" always ("bf16's band" reads "BF16 baseline's
    // band"), a folder-like name (6 characters or more with a '_', '-' or '.') wherever it is a whole word.
    QString inRunNames(QString text) const;
    int indexOf(RunRef ref) const; // -1 when not open
    RunRef runAt(int index) const
    {
        return index >= 0 && index < runCount() ? m_runs[size_t(index)].run.ref : RunRef();
    }
    RunRef findRun(const QString &name) const; // by name or display name
    void setRunVisible(RunRef ref, bool visible);
    // The baseline the run is paired with (invalid when none).
    RunRef baselineOf(RunRef ref) const;

    // Following: the open folders are watched and what they gain is read in (on by default). A change that adds a
    // run or a layer reloads the runs (loaded()); new points of known series emit statisticsChanged(run) for each
    // run that grew, then dataAppended(). While following, the query thread's catalog keeps the points the
    // analysis read, so that the live triage reads only those written since (Catalog::setKeepPoints).
    void setFollowing(bool on);
    bool isFollowing() const { return m_following; }
    FolderWatcher *watcher() const { return m_watcher; }
    // Reads what the folders gained now, without waiting for the watcher (a test, a user's Reload of one file).
    void followNow();
    // A run that advanced while followed and has written no new step for this long (two minutes by default) and
    // for ten of its usual intervals between advances has stopped writing. Takes effect for the run list at the
    // runs' next change.
    void setStalledAfterMs(qint64 ms) { m_stalledAfterMs = ms; }
    bool isStalled(RunRef ref, const QDateTime &now = QDateTime::currentDateTimeUtc()) const;
    // How long a run may go without a new step before it counts as stopped (-1: it cannot stop: not followed,
    // or not advanced since it was opened).
    qint64 stallThresholdMs(RunRef ref) const;

    const std::vector<ProblemEntry> &problems() const { return m_problems; }
    // Adds store errors reads met (this thread's Catalog's, handed over as they are met, and those a query
    // brought back) to problems(): a damaged page found while drawing is said, not drawn as a gap. Emits
    // problemsAdded() when one was new.
    void noteStoreErrors(const std::vector<ProblemEntry> &errors);
    // Every distinct layer over all runs, in depth order, with its tensor kinds (series or dumps).
    const std::vector<LayerTensors> &layerTensors() const { return m_layers; }

    JobQueue &jobs() { return *m_jobs; }

    // A request slot of its own for one view instance ("heatmap#3"), so that two views of one kind (the
    // two heatmaps of a comparison) never replace each other's requests.
    static QString newSlot(const QString &kind);
    // Of a run's dumps, the one of `layer` (and `tensor`, unless empty) nearest `step` (a checkpoint's, of no
    // step, too): what the histogram and the block map show for a selection. Nothing without a layer.
    static std::optional<Dump> dumpNearest(
        const std::vector<Dump> &dumps, const QString &layer, const QString &tensor, int64_t step);

    // Store reads too large for the GUI thread (a layer x step matrix can hold millions of values) run on
    // a second queue with its own Catalog over the same folders and serials, so they never wait behind a
    // recomputation. The newest query of a slot replaces older ones; done runs on receiver's thread with the
    // work's value.
    using Query = std::function<QVariant(const Catalog &catalog)>;
    quint64 query(const QString &slot, Query work, QObject *receiver, std::function<void(const QVariant &value)> done);
    JobQueue &queries() { return *m_queries; }

    // Recomputes one dump under one recipe in the job queue (a newer request of the same slot replaces an
    // older one); stores the statistics, emits statisticsChanged(run) and calls done on receiver's thread.
    using RecomputeDone = std::function<void(const std::optional<TensorMetrics> &metrics, const QString &error)>;
    quint64 recompute(
        const Dump &dump, const Recipe &recipe, const QString &slot, QObject *receiver, RecomputeDone done);

    // A long read of the stores that needs the metrics backend (a report: it recomputes dumps), on the job
    // queue, whose progress and Cancel the status bar shows; the work gets its own Catalog over the open
    // folders (the RunRefs of this workspace hold there), the backend (nullptr when none could be made) and the
    // job's context. done gets the value or what failed ("cancelled" included), on receiver's thread.
    using LongQuery = std::function<QVariant(const Catalog &catalog, MetricsBackend *backend, JobContext &ctx)>;
    quint64 longQuery(const QString &slot, LongQuery work, QObject *receiver,
        std::function<void(const QVariant &value, const QString &error)> done);

    // Keeps a what-if in the run's store (the stores' one writer); done("") once kept, else done(what failed).
    void storeWhatIf(
        RunRef run, const StoredWhatIf &w, QObject *receiver, std::function<void(const QString &error)> done);
    // The recipe what-if of one dump (core/numerics/whatif.h): every recipe's metrics in one pass of the metrics
    // engine and each block recipe's census, in one job on the job queue (a newer request of the slot replaces
    // an older one); not stored here (storeWhatIf keeps it). done gets the result or what failed, on receiver's
    // thread.
    using WhatIfDone = std::function<void(const std::optional<WhatIfResult> &result, const QString &error)>;
    quint64 whatIf(
        const Dump &dump, const std::vector<Recipe> &recipes, const QString &slot, QObject *receiver, WhatIfDone done);

    // Keeps a user's review of a finding of `run` against `baseline` (invalid: the run checked alone) in the
    // run's store, on the job queue (the stores' one writer); a newer review of the same finding replaces one
    // still queued. done gets "" or what failed; reviewsChanged(run) follows a kept one.
    void storeReview(RunRef run, RunRef baseline, const FindingReview &review, QObject *receiver,
        std::function<void(const QString &error)> done);
    // Keeps the user's word on the final candidate among `baseline`'s attempts (an empty candidate takes it back)
    // in the baseline's store, on the job queue; changed(Reviews, baseline) follows a kept one.
    void storeCandidateChoice(RunRef baseline, const CandidateChoice &choice, QObject *receiver,
        std::function<void(const QString &error)> done);

Q_SIGNALS:
    // Every change as one signal, before its own signal below (the views follow this one; the window and the
    // tests the others). `run` is the run concerned for Visibility, Statistics and Reviews, else invalid.
    void changed(fp8scope::Workspace::Parts parts, fp8scope::RunRef run);
    void reviewsChanged(fp8scope::RunRef run);
    void loadingStarted();
    void loaded(); // runs, stores and problems are ready (also after a failed or cancelled load)
    void closed();
    void runVisibilityChanged(fp8scope::RunRef run);
    void statisticsChanged(fp8scope::RunRef run);
    void backendStatusChanged(const QString &status);
    void message(const QString &text); // for the status bar: what failed or finished
    void problemsAdded(); // problems() grew after loaded()
    // A followed folder's new data is in (the runs that grew had statisticsChanged first).
    void dataAppended();
    void followingChanged(bool on); // setFollowing: whether runs can stop (stallThresholdMs) changed with it

private:
    // The opened folder whose store has that serial; empty when it is not open.
    QString folderOfStore(quint64 serial) const;
    // A user's word written into a store on the job queue (the stores' one writer), through a FolderSession of
    // the job's own; `kept` runs on this thread once it is, then done("") (or done(what failed)).
    void storeWrite(const QString &folder, quint64 store, const QString &key,
        std::function<bool(FolderSession &session, QString *error)> write, QObject *receiver,
        std::function<void(const QString &error)> done, std::function<void()> kept);
    // A load's or follow's problems are said in the status bar and kept for the panel.
    void finishLoad(std::vector<ProblemEntry> problems);
    void finishFollow(bool storesChanged, std::vector<ProblemEntry> problems);
    // Each run's newest step, by the series the GUI thread's catalog lists.
    void readLatestSteps(std::vector<WorkspaceRun> &runs) const;
    void ensureBackendJob();

    struct BackendHolder;
    struct QueryCatalog;
    std::shared_ptr<BackendHolder> m_backend;
    std::shared_ptr<QueryCatalog> m_queryCatalog;
    std::unique_ptr<JobQueue> m_jobs;
    std::unique_ptr<JobQueue> m_queries;
    QString m_backendStatus;
    QStringList m_folders;
    std::vector<quint64> m_serials; // one per folder, given when it was opened
    Catalog m_catalog;
    std::vector<WorkspaceRun> m_runs;
    std::vector<ProblemEntry> m_problems;
    std::vector<LayerTensors> m_layers;
    quint64 m_loadTicket = 0;
    bool m_demo = false;
    FolderWatcher *m_watcher;
    bool m_following = true;
    quint64 m_followTicket = 0; // the follow ingest running
    bool m_followPending = false; // a change came while it ran
    qint64 m_stalledAfterMs = 120'000;
    std::map<RunRef, std::vector<qint64>> m_advanceGaps; // ms between a run's recent advances
};

// The colour of the i-th run: twelve distinct ones (Okabe-Ito's eight, distinguishable for colour-blind
// readers, first), then the same again with the next line style.
constexpr int kRunColours = 12;
QColor runColour(int index);
Qt::PenStyle runLineStyle(int index);

} // namespace fp8scope

Q_DECLARE_OPERATORS_FOR_FLAGS(fp8scope::Workspace::Parts)
