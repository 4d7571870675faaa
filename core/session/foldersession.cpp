#include "foldersession.h"

#include "core/store/runstore.h"

#include <QDir>

namespace fp8scope {

FolderSession::FolderSession() = default;
FolderSession::~FolderSession() = default;
FolderSession::FolderSession(FolderSession &&) noexcept = default;
FolderSession &FolderSession::operator=(FolderSession &&) noexcept = default;

bool FolderSession::open(const QString &folder, quint64 serial, QString *error)
{
    return m_catalog.open(folder, serial, error);
}

void FolderSession::close()
{
    m_catalog.close();
}

bool FolderSession::rebuild(const QString &folder, QString *error, int *carried)
{
    RunStore store;
    return store.rebuild(folder, error, carried);
}

std::vector<FolderSession::FolderIngest> FolderSession::ingest(const IngestProgress &progress)
{
    std::vector<FolderIngest> out;
    bool stopped = false;
    for (const Catalog::StoreEntry &s : m_catalog.stores()) {
        if (stopped)
            break;
        RunStore *store = m_catalog.storeOf(s.serial);
        out.push_back({s.serial, s.folder, store->ingest([&](int done, int total, const QString &file) {
                           stopped = progress && !progress(done, total, file);
                           return !stopped;
                       })});
    }
    if (changed(out))
        m_catalog.refresh();
    return out;
}

bool FolderSession::changed(const std::vector<FolderIngest> &ingested)
{
    for (const FolderIngest &f : ingested) {
        if (f.report.changed())
            return true;
    }
    return false;
}

bool FolderSession::countsRecords(const QString &path)
{
    return path.endsWith(QLatin1String(".wandb"));
}

QString FolderSession::placeOf(const ProblemEntry &p)
{
    const QString byte = p.offset >= 0 ? QStringLiteral("byte %1").arg(p.offset) : QString();
    if (p.line <= 0)
        return byte;
    const QString unit = countsRecords(p.path) ? QStringLiteral("record") : QStringLiteral("line");
    return byte.isEmpty() ? QStringLiteral("%1 %2").arg(unit).arg(p.line)
                          : QStringLiteral("%1 %2, %3").arg(unit).arg(p.line).arg(byte);
}

std::vector<ProblemEntry> FolderSession::problemsOf(const FolderIngest &ingested)
{
    std::vector<ProblemEntry> out;
    const QDir folder(ingested.folder);
    for (const QString &e : ingested.report.errors) {
        out.push_back({.path = folder.absoluteFilePath(e.section(QStringLiteral(": "), 0, 0)),
            .message = e.section(QStringLiteral(": "), 1),
            .storeError = true});
    }
    for (const auto &[path, why] : ingested.report.unreadable)
        out.push_back({.path = folder.absoluteFilePath(path), .message = why});
    for (const QString &path : ingested.report.unrecognised) {
        // A model folder (listed with its '/') is no gap: the checkpoint audit reads it.
        if (path.endsWith(QLatin1Char('/')))
            continue;
        out.push_back({.path = folder.absoluteFilePath(path),
            .message = QStringLiteral("not read: in no format fp8scope reads"),
            .skipped = true});
    }
    return out;
}

std::optional<std::vector<TensorMetrics>> FolderSession::recompute(const Dump &dump, MetricsBackend &backend,
    const std::vector<Recipe> &recipes, QString *error, const MetricsEngine::Progress &progress)
{
    RunStore *store = m_catalog.storeOf(dump.run.store);
    if (!store) {
        *error = QStringLiteral("the dump's folder is not open");
        return std::nullopt;
    }
    return recomputeDump(*store, backend, {dump.run.id, dump.file, dump.record}, recipes, error, progress);
}

bool FolderSession::storeDumpResult(quint64 serial, const DumpRef &ref, const DumpResult &result, QString *error)
{
    RunStore *store = m_catalog.storeOf(serial);
    if (!store) {
        *error = QStringLiteral("the dump's folder is not open");
        return false;
    }
    return fp8scope::storeDumpResult(*store, ref, result, error);
}

bool FolderSession::storeReview(
    RunRef run, const std::pair<QString, QString> &baselineKey, const FindingReview &review, QString *error)
{
    RunStore *store = m_catalog.storeOf(run.store);
    if (!store) {
        *error = QStringLiteral("the run's folder is not open");
        return false;
    }
    return store->storeFindingReview(run.id, baselineKey.first, baselineKey.second, review, error);
}

bool FolderSession::storeWhatIf(RunRef run, const StoredWhatIf &w, QString *error)
{
    RunStore *store = m_catalog.storeOf(run.store);
    if (!store) {
        *error = QStringLiteral("the run's folder is not open");
        return false;
    }
    return store->storeWhatIf(run.id, w, error);
}

bool FolderSession::storeCandidateChoice(RunRef baseline, const CandidateChoice &choice, QString *error)
{
    RunStore *store = m_catalog.storeOf(baseline.store);
    const std::optional<Run> r = m_catalog.run(baseline);
    if (!store || !r) {
        *error = QStringLiteral("the baseline's folder is not open");
        return false;
    }
    return store->storeCandidateChoice(r->name, choice, error);
}

} // namespace fp8scope
