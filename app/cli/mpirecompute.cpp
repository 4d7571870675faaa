#include "mpirecompute.h"

#include "app/cudafactory.h"
#include "core/query/catalog.h"
#include "core/recompute/recomputeplan.h"
#include "core/session/foldersession.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSysInfo>
#include <QTextStream>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <thread>

namespace fp8scope::cli {

namespace {

constexpr int kTagResult = 1; // a DumpResult
constexpr int kTagDone = 2; // a rank's summary: it sends nothing after

// What a rank says when its share is done.
struct RankSummary {
    int rank = 0;
    QString host, backend;
    int dumps = 0, failed = 0;
    double seconds = 0;
    int64_t bytesRead = 0;

    QByteArray encode() const
    {
        QJsonObject o {{QStringLiteral("rank"), rank}, {QStringLiteral("host"), host},
            {QStringLiteral("backend"), backend}, {QStringLiteral("dumps"), dumps}, {QStringLiteral("failed"), failed},
            {QStringLiteral("seconds"), seconds}, {QStringLiteral("bytes_read"), qint64(bytesRead)}};
        return QJsonDocument(o).toJson(QJsonDocument::Compact);
    }
    static RankSummary decode(const QByteArray &bytes)
    {
        const QJsonObject o = QJsonDocument::fromJson(bytes).object();
        return {o.value(QStringLiteral("rank")).toInt(), o.value(QStringLiteral("host")).toString(),
            o.value(QStringLiteral("backend")).toString(), o.value(QStringLiteral("dumps")).toInt(),
            o.value(QStringLiteral("failed")).toInt(), o.value(QStringLiteral("seconds")).toDouble(),
            int64_t(o.value(QStringLiteral("bytes_read")).toDouble())};
    }
    QJsonObject json() const { return QJsonDocument::fromJson(encode()).object(); }
};

// Rank 0's side: what came in, stored as it comes, and the progress over all ranks.
class Merger
{
public:
    Merger(FolderSession &session, const std::vector<RecomputeItem> &work, bool json)
        : m_session(session)
        , m_work(work)
        , m_received(work.size(), false)
        , m_json(json)
    {
        m_progress.start();
    }

    void take(const DumpResult &r, int fromRank)
    {
        if (r.index >= m_work.size() || m_received[r.index]) {
            m_errors << QStringLiteral("rank %1 sent a result for dump %2, which it was not given")
                            .arg(fromRank)
                            .arg(r.index);
            return;
        }
        m_received[r.index] = true;
        const RecomputeItem &w = m_work[r.index];
        QString error;
        QElapsedTimer t;
        t.start();
        if (m_session.storeDumpResult(m_session.catalog().stores().front().serial, w.ref, r, &error)) {
            m_mergeSeconds += double(t.nsecsElapsed()) * 1e-9;
            for (const auto &recipe : r.recipes)
                m_mergeResults += int64_t(recipe.second.size());
            ++m_stored;
        } else {
            m_failed.push_back({r.index, QStringLiteral("rank %1: %2").arg(fromRank).arg(error)});
        }
        ++m_done;
        // A few lines a second; the first and the last always.
        if (!m_json && (m_done == 1 || m_progress.elapsed() >= 250 || m_done == m_work.size())) {
            m_progress.restart();
            QTextStream(stderr) << "recompute: " << m_done << "/" << m_work.size() << " dumps (rank " << fromRank
                                << ": " << w.ref.dump.layer << '/' << w.ref.dump.tensor << ")\n";
        }
    }

    // Receives one message if one is waiting (block: waits for one); false when none was.
    bool receive(bool block, std::vector<RankSummary> *summaries)
    {
        MPI_Status status;
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
        // Waiting polls every millisecond rather than in MPI_Probe, which spins: a spinning rank 0 takes the
        // core (or the hyperthread sibling) a rank still computing needs.
        while (!flag && block) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
        }
        if (!flag)
            return false;
        int n = 0;
        MPI_Get_count(&status, MPI_BYTE, &n);
        QByteArray bytes(n, Qt::Uninitialized);
        MPI_Recv(bytes.data(), n, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (status.MPI_TAG == kTagDone) {
            summaries->push_back(RankSummary::decode(bytes));
        } else if (const auto r = decodeResult(bytes)) {
            take(*r, status.MPI_SOURCE);
        } else {
            m_errors << QStringLiteral("rank %1 sent %2 bytes that are not a result").arg(status.MPI_SOURCE).arg(n);
        }
        return true;
    }

    struct Missing {
        size_t index;
        QString why;
    };
    // What the store lacks after the run: failed, and what no rank sent.
    std::vector<Missing> missing() const
    {
        std::vector<Missing> out = m_failed;
        for (size_t i = 0; i < m_work.size(); ++i) {
            if (!m_received[i])
                out.push_back({i, QStringLiteral("no rank sent its result")});
        }
        std::sort(out.begin(), out.end(), [](const Missing &a, const Missing &b) { return a.index < b.index; });
        return out;
    }
    int stored() const { return m_stored; }
    double mergeSeconds() const { return m_mergeSeconds; }
    int64_t mergeResults() const { return m_mergeResults; }
    const QStringList &errors() const { return m_errors; }

private:
    FolderSession &m_session;
    const std::vector<RecomputeItem> &m_work;
    std::vector<bool> m_received;
    std::vector<Missing> m_failed;
    QStringList m_errors;
    bool m_json;
    size_t m_done = 0;
    int m_stored = 0;
    double m_mergeSeconds = 0;
    int64_t m_mergeResults = 0;
    QElapsedTimer m_progress;
};

// Waits for a nonblocking operation, polling every millisecond: MPI's blocking calls spin, and a waiting rank
// (the others while rank 0 ingests, a rank done early at the end) would take a core from one still working.
void await(MPI_Request *request)
{
    int done = 0;
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    while (!done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        MPI_Test(request, &done, MPI_STATUS_IGNORE);
    }
}

// A rank's messages to rank 0, sent without waiting: rank 0 takes them between its own dumps, and a blocking
// send whose shared-memory queue is full spins until it does (seen: the sending rank's share 30 % slower).
class Sender
{
public:
    void send(QByteArray bytes, int tag)
    {
        m_pending.push_back({std::move(bytes), MPI_REQUEST_NULL});
        Pending &p = m_pending.back();
        MPI_Isend(p.bytes.constData(), int(p.bytes.size()), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &p.request);
        // Those done go (their buffers with them).
        while (!m_pending.empty()) {
            int done = 0;
            MPI_Test(&m_pending.front().request, &done, MPI_STATUS_IGNORE);
            if (!done)
                break;
            m_pending.pop_front();
        }
    }
    void flush()
    {
        for (Pending &p : m_pending)
            await(&p.request);
        m_pending.clear();
    }

private:
    struct Pending {
        QByteArray bytes;
        MPI_Request request;
    };
    std::deque<Pending> m_pending; // a deque: the buffers stay where MPI was given them
};

QByteArray broadcast(int rank, const QByteArray &bytes)
{
    quint64 n = quint64(bytes.size());
    MPI_Request request;
    MPI_Ibcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD, &request);
    await(&request);
    QByteArray out = rank == 0 ? bytes : QByteArray(qsizetype(n), Qt::Uninitialized);
    // MPI counts are ints: large work lists go in pieces.
    for (quint64 at = 0; at < n;) {
        const int piece = int(std::min<quint64>(n - at, 1u << 30));
        MPI_Ibcast(out.data() + at, piece, MPI_BYTE, 0, MPI_COMM_WORLD, &request);
        await(&request);
        at += quint64(piece);
    }
    return out;
}

int finish(int code)
{
    // Every rank here before MPI_Finalize, which would spin in its own barrier.
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    await(&request);
    MPI_Finalize();
    return code;
}

} // namespace

int runRecomputeMpi(const MpiRecomputeOptions &options)
{
    QTextStream err(stderr);
    QTextStream out(stdout);
    int already = 0;
    MPI_Init(nullptr, nullptr);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // The node's ranks: they share its GPUs and CPU threads out.
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int localRank = 0, localSize = 1;
    MPI_Comm_rank(node, &localRank);
    MPI_Comm_size(node, &localSize);
    MPI_Comm_free(&node);
    QElapsedTimer clock;
    clock.start();

    std::vector<Recipe> recipes;
    QString error;
    for (const QString &n : options.recipes) {
        auto r = Recipe::parse(n, std::nullopt, &error);
        if (!r) {
            if (rank == 0)
                err << "fp8scope-cli: " << error << '\n';
            return finish(2);
        }
        recipes.push_back(*r);
    }

    // Rank 0 alone opens the store: it ingests (the dump index must be current) and makes the work.
    FolderSession session;
    const Catalog &catalog = session.catalog();
    RecomputeBroadcast plan;
    if (rank == 0) {
        plan.folder = QFileInfo(options.folder).absoluteFilePath();
        plan.recipes = options.recipes;
        if (!session.open(options.folder, &error)) {
            plan.error = error;
        } else {
            for (const FolderSession::FolderIngest &f : session.ingest()) {
                for (const QString &e : f.report.errors)
                    err << "fp8scope-cli: " << e << '\n';
            }
            plan.folder = catalog.stores().front().folder;
            plan.work = recomputeWork(catalog, recipes, !options.all, &already);
            if (plan.work.empty() && already == 0)
                plan.error = QStringLiteral("no tensor dumps indexed in %1").arg(options.folder);
        }
    }
    const auto received = decodeBroadcast(broadcast(rank, rank == 0 ? encodeBroadcast(plan) : QByteArray()));
    if (!received) {
        err << "fp8scope-cli: rank " << rank << ": the work rank 0 sent could not be read\n";
        err.flush();
        MPI_Abort(MPI_COMM_WORLD, 1); // the others would wait for this rank's results
        return 1;
    }
    if (!received->error.isEmpty()) {
        if (rank == 0)
            err << "fp8scope-cli: " << received->error << '\n';
        return finish(1);
    }
    const std::vector<RecomputeItem> &work = received->work;
    const std::vector<size_t> mine = splitByFile(work, size)[size_t(rank)];

    RankSummary summary {.rank = rank, .host = QSysInfo::machineHostName()};
    QElapsedTimer working; // the rank's share: from the work received to its last result sent
    working.start();
    const int threads = options.threads > 0
        ? options.threads
        : std::max(1, int(std::thread::hardware_concurrency()) / std::max(1, localSize));
#ifdef FP8SCOPE_HAVE_CUDA
    CudaBackend::setPreferredDevice(localRank);
#endif
    BackendSelection selection
        = mine.empty() ? BackendSelection {} : selectBackend(options.backend, threads, cudaFactory());
    summary.backend = mine.empty() ? QStringLiteral("none (no files)") : selection.status;

    std::vector<RankSummary> summaries;
    Sender sender;
    std::unique_ptr<Merger> merger;
    if (rank == 0)
        merger = std::make_unique<Merger>(session, work, options.json);
    for (size_t index : mine) {
        DumpResult r;
        if (!selection.backend) {
            r.error = selection.error.isEmpty() ? QStringLiteral("no metrics backend") : selection.error;
        } else {
            r = computeDump(received->folder, *selection.backend, work[index].ref, recipes, {}, threads);
        }
        r.index = uint32_t(index);
        ++summary.dumps;
        summary.failed += r.error.isEmpty() ? 0 : 1;
        summary.bytesRead += r.bytesRead;
        if (rank == 0) {
            merger->take(r, 0);
            while (merger->receive(false, &summaries)) { }
        } else {
            sender.send(encodeResult(r), kTagResult);
        }
    }
    summary.seconds = double(working.nsecsElapsed()) * 1e-9;
    if (rank != 0) {
        sender.send(summary.encode(), kTagDone);
        sender.flush();
        return finish(0);
    }
    summaries.push_back(summary);
    while (int(summaries.size()) < size)
        merger->receive(true, &summaries);
    std::sort(
        summaries.begin(), summaries.end(), [](const RankSummary &a, const RankSummary &b) { return a.rank < b.rank; });

    const auto missing = merger->missing();
    for (const QString &e : merger->errors())
        err << "fp8scope-cli: " << e << '\n';
    if (options.json) {
        QJsonArray ranks, gaps;
        for (const RankSummary &s : summaries)
            ranks.append(s.json());
        for (const auto &m : missing) {
            const DumpRef &d = work[m.index].ref;
            gaps.append(QJsonObject {{QStringLiteral("file"), d.file}, {QStringLiteral("dataset"), d.dump.dataset},
                {QStringLiteral("layer"), d.dump.layer}, {QStringLiteral("tensor"), d.dump.tensor},
                {QStringLiteral("step"), qint64(d.dump.step)}, {QStringLiteral("error"), m.why}});
        }
        QJsonObject o {{QStringLiteral("ranks"), ranks}, {QStringLiteral("dumps"), qint64(work.size()) + already},
            {QStringLiteral("already_stored"), already}, {QStringLiteral("recomputed"), merger->stored()},
            {QStringLiteral("missing"), gaps}, {QStringLiteral("recipes"), QJsonArray::fromStringList(options.recipes)},
            {QStringLiteral("merge_seconds"), merger->mergeSeconds()},
            {QStringLiteral("merge_results"), qint64(merger->mergeResults())},
            {QStringLiteral("seconds"), double(clock.nsecsElapsed()) * 1e-9}};
        out << QJsonDocument(o).toJson(QJsonDocument::Indented);
    } else {
        for (const auto &m : missing) {
            const DumpRef &d = work[m.index].ref;
            err << "fp8scope-cli: missing " << d.file
                << (d.dump.dataset.isEmpty() ? QString() : QLatin1Char(':') + d.dump.dataset) << " (" << d.dump.layer
                << ' ' << d.dump.tensor << " step " << d.dump.step << "): " << m.why << '\n';
        }
        for (const RankSummary &s : summaries) {
            out << "rank " << s.rank << " (" << s.host << ", " << s.backend << "): " << s.dumps << " dumps, "
                << s.failed << " failed, " << QString::number(double(s.bytesRead) / 1048576.0, 'f', 1) << " MiB read, "
                << QString::number(s.seconds, 'f', 2) << " s\n";
        }
        out << "recomputed " << merger->stored() << " of " << work.size() << " dumps x " << recipes.size()
            << " recipe(s) on " << size << " rank(s)";
        if (already > 0)
            out << "; " << already << " already in the store";
        out << '\n';
    }
    out.flush();
    return finish(missing.empty() && merger->errors().isEmpty() ? 0 : 1);
}

} // namespace fp8scope::cli
