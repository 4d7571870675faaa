// A session over opened run folders: what the window and every CLI command do to a folder besides reading it.
// It opens the folders' stores (creating or migrating them) into its catalog, reads their files in (ingest: new
// and grown files, the same call whether a folder is opened or followed), throws a store away to read the
// folder again (rebuild), recomputes a dump and keeps its results, keeps a user's review of a finding. Reads go
// through catalog(); nothing above core reaches a store but through here (docs/ARCHITECTURE.md). Used on one
// thread, like a Catalog: a worker thread opens its own session over the same folders and serials.
#pragma once

#include "core/query/catalog.h"
#include "core/recompute/recomputeplan.h"
#include "core/records/records.h"

#include <QString>

#include <optional>
#include <vector>

namespace fp8scope {

class FolderSession
{
public:
    FolderSession();
    ~FolderSession();
    FolderSession(FolderSession &&) noexcept;
    FolderSession &operator=(FolderSession &&) noexcept;

    // Opens the store of `folder` under `serial` (Catalog::newStoreSerial() by default); false with *error set.
    [[nodiscard]] bool open(const QString &folder, quint64 serial, QString *error);
    [[nodiscard]] bool open(const QString &folder, QString *error)
    {
        return open(folder, Catalog::newStoreSerial(), error);
    }
    void close();

    // Throws the folder's store away and makes a new, empty one, carrying the reviews of findings over
    // (RunStore::rebuild; *carried: how many); an open session's next ingest reads the folder again.
    [[nodiscard]] static bool rebuild(const QString &folder, QString *error, int *carried = nullptr);

    const Catalog &catalog() const { return m_catalog; }
    Catalog &catalog() { return m_catalog; }

    // What an ingest of one opened folder did.
    struct FolderIngest {
        quint64 serial = 0;
        QString folder; // absolute
        IngestReport report;
    };
    // Reads every opened folder's files that are new or changed since the last ingest (grown logs from where
    // it stopped), folder by folder in the order opened; progress may stop it between files. The catalog
    // forgets what it worked out from the stores when any of them changed (IngestReport::changed()).
    std::vector<FolderIngest> ingest(const IngestProgress &progress = {});
    // Whether any folder's store took something.
    static bool changed(const std::vector<FolderIngest> &ingested);
    // What an ingest could not read (a file's name or permission), the files it failed on (a store error
    // with the file it stopped at) and the files in no format it reads (skipped; not a model folder, which the
    // checkpoint audit reads), as problems of those files.
    static std::vector<ProblemEntry> problemsOf(const FolderIngest &ingested);
    // Where a problem is in its file, as its reader would look for it: "line 12", "line 12, byte 4096";
    // "record 12, byte 4096" in a W&B log (a binary file of records, whose problems count records);
    // "byte 4096"; "" where the file as a whole is meant.
    static QString placeOf(const ProblemEntry &problem);
    // Whether the problems of a file count records rather than lines (a W&B log): its bytes, not its lines,
    // show where.
    static bool countsRecords(const QString &path);

    // Where the store of an opened folder lives ("" when not open here).
    QString storePath(quint64 serial) const { return m_catalog.storePath(serial); }

    // Recomputes an indexed dump under the recipes and keeps the results as recomputed series of its run
    // (core/recompute/dumprecompute.h); nullopt with *error when its folder is not open here or the dump
    // could not be read or stored.
    std::optional<std::vector<TensorMetrics>> recompute(const Dump &dump, MetricsBackend &backend,
        const std::vector<Recipe> &recipes, QString *error, const MetricsEngine::Progress &progress = {});
    // Keeps a result computed elsewhere (a rank of a recompute spread over MPI) in the store of `serial`.
    [[nodiscard]] bool storeDumpResult(quint64 serial, const DumpRef &ref, const DumpResult &result, QString *error);

    // Keeps a recipe what-if of one of the run's dumps (analysis::whatIfRecord).
    [[nodiscard]] bool storeWhatIf(RunRef run, const StoredWhatIf &w, QString *error);
    // Keeps the user's review of a finding of `run` against its baseline, named as Catalog::baselineKey()
    // names it, replacing the finding's earlier review.
    [[nodiscard]] bool storeReview(
        RunRef run, const std::pair<QString, QString> &baselineKey, const FindingReview &review, QString *error);

    // Keeps the user's word on the final candidate among `baseline`'s attempts in the baseline's store (an empty
    // candidate takes it back).
    [[nodiscard]] bool storeCandidateChoice(RunRef baseline, const CandidateChoice &choice, QString *error);

private:
    Catalog m_catalog;
};

} // namespace fp8scope
