// The plain records the store keeps and the layers above it pass on: a series' point, a stored triage result
// and its findings, a user's review of a finding, what an ingest did, a problem and an operation's outcome
// with its problems. Data only; core/store writes and reads
// them, core/query and core/session hand them out, so that nothing above the store includes a store header.
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace fp8scope {

// One point, or one bucket of several: min/max of the values and the step range they span.
struct SeriesPoint {
    int64_t step = 0;
    int64_t lastStep = 0;
    double value = 0; // the point's value; for a bucket, its min (draw the bucket from min to max)
    double min = 0;
    double max = 0;
    int64_t count = 1;
};

// A triage finding as stored (core/analysis/triage.h says what the fields mean).
struct StoredFinding {
    QString kind;
    QString severity;
    QString runs; // the run names it concerns, as a JSON array
    QString layer, tensor, stat, key, task;
    std::optional<int64_t> firstStep, lastStep;
    QString summary;
    QString evidence; // a JSON object
    QString suggestion;
};

// Where a baseline's final candidate comes from (core/analysis/attempts): none; the rule's; the rule's, confirmed
// by the user; another attempt, chosen by the user. Typed end to end; the store and the JSON write its name.
enum class CandidateSource { None, Rule, Confirmed, Chosen };
inline QString candidateSourceName(CandidateSource s)
{
    switch (s) {
    case CandidateSource::None: return {};
    case CandidateSource::Rule: return QStringLiteral("rule");
    case CandidateSource::Confirmed: return QStringLiteral("confirmed");
    case CandidateSource::Chosen: return QStringLiteral("chosen");
    }
    return {};
}
inline std::optional<CandidateSource> candidateSourceNamed(const QString &name)
{
    for (CandidateSource s :
        {CandidateSource::None, CandidateSource::Rule, CandidateSource::Confirmed, CandidateSource::Chosen}) {
        if (candidateSourceName(s) == name)
            return s;
    }
    return std::nullopt;
}

// The user's word on a baseline's final candidate (core/analysis/attempts): the rule's candidate confirmed, or
// another attempt chosen over it; kept in the baseline's store by the baseline's name.
struct CandidateChoice {
    QString candidate; // the attempt's run name
    CandidateSource state = CandidateSource::Chosen; // Confirmed or Chosen
    QString note;
    QString chosenAt; // ISO 8601, UTC; set when stored
};

// A user's review of a finding: open (not reviewed, or reopened), confirmed, dismissed. Typed end to end; the
// store writes its name.
enum class ReviewState { Open, Confirmed, Dismissed };
inline QString reviewStateName(ReviewState s)
{
    switch (s) {
    case ReviewState::Open: return QStringLiteral("open");
    case ReviewState::Confirmed: return QStringLiteral("confirmed");
    case ReviewState::Dismissed: return QStringLiteral("dismissed");
    }
    return {};
}
inline std::optional<ReviewState> reviewStateNamed(const QString &name)
{
    for (ReviewState s : {ReviewState::Open, ReviewState::Confirmed, ReviewState::Dismissed}) {
        if (reviewStateName(s) == name)
            return s;
    }
    return std::nullopt;
}

// A recipe what-if kept in the store (core/analysis/storedwhatif.h, schema 15 what_ifs): the dump (Dump::spec()), its
// step, the candidate recipes' labels joined by commas, the dump file's size and modification time (ms since the epoch)
// when it was computed, and the result as JSON.
struct StoredWhatIf {
    QString dump;
    int64_t step = -1;
    QString recipes;
    int64_t fileSize = -1;
    int64_t fileMtime = -1;
    QString result;
    QString computedAt; // ISO 8601, UTC; set when stored
};

// A user's review of a finding: its identity (analysis::findingIdentity), its state and a note.
struct FindingReview {
    QString finding;
    ReviewState state = ReviewState::Open;
    QString note;
    QString reviewedAt; // ISO 8601, UTC; set when stored
};

// One comparison of a run with a baseline (baselineName "" for a run checked alone), as stored with the stamp
// of the data and engine it was computed from.
struct StoredTriage {
    QString baselineFolder; // "" when the baseline is in this store
    QString baselineName;
    QString verdict;
    std::optional<int64_t> departure, lead, planned;
    QString stamp;
    std::vector<StoredFinding> findings; // most important first
};

// What one ingest of a folder did.
struct IngestReport {
    int filesRead = 0;
    int filesUnchanged = 0;
    int filesResumed = 0;
    int filesFailed = 0;
    int filesDeleted = 0; // in the store, no longer in the folder: what they wrote is gone
    int64_t pointsWritten = 0;
    int problems = 0;
    QStringList unrecognised; // relative paths of files no importer reads
    std::vector<std::pair<QString, QString>> unreadable; // (relative path, why): bad names, no permission
    QStringList errors; // store errors (a failed statement or commit), with the file they stopped
    bool busy = false; // another fp8scope was writing to the store: the ingest stopped (errors say who)

    // Whether the store took anything (a file read, resumed or gone, a point written): what the live views,
    // the live triage and `fp8scope-cli watch` wait for before they read again.
    bool changed() const { return filesRead > 0 || filesResumed > 0 || filesDeleted > 0 || pointsWritten > 0; }
};

// Said file by file; false stops the ingest between files (what is committed stays).
using IngestProgress = std::function<bool(int done, int total, const QString &file)>;

// A problem met reading a run folder or its store, typed: where (a file and a line or byte offset in it, or the
// store), and what. The problems panel, `fp8scope-cli ingest` and the store errors of reads all carry these.
struct ProblemEntry {
    QString path; // absolute; the store file for store errors; "" for a problem of no file (a folder not opened)
    int64_t line = 0;
    int64_t offset = -1;
    QString message;
    bool storeError = false; // a failed read or write of the store itself, not of an input file
    bool skipped = false; // a file in no format fp8scope reads, left out (said, so that no gap is silent)
};

// What an operation that can half-succeed gives back: what it did, and the problems it met on the way (a folder
// that would not open beside others that did, files it could not read). An operation that did nothing has no
// value, and says why in its problems.
template <class T> struct Outcome {
    std::optional<T> value;
    std::vector<ProblemEntry> problems;
};

} // namespace fp8scope
