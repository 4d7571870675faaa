// RunStore's part that keeps triage results (schema version 6, docs/STORE.md): what core/analysis computed,
// with the stamp that says whether it still holds; and the user's reviews of their findings (version 7).
#include "runstore.h"

#include <QDateTime>

namespace fp8scope {

namespace {

std::optional<int64_t> optionalInt(const Statement &s, int col)
{
    return s.isNull(col) ? std::nullopt : std::optional<int64_t>(s.int64(col));
}

Statement &bindOptional(Statement &s, int i, const std::optional<int64_t> &v)
{
    return v ? s.bind(i, *v) : s.bindNull(i);
}

} // namespace

int64_t RunStore::dataGeneration() const
{
    Statement s = prepare("SELECT value FROM meta WHERE key='data_generation'");
    const int64_t generation = s.next() ? s.int64(0) : -1;
    ok(s);
    return generation;
}

int64_t RunStore::dataRewrites() const
{
    Statement s = prepare("SELECT value FROM meta WHERE key='data_rewrites'");
    const int64_t rewrites = s.next() ? s.int64(0) : -1;
    ok(s);
    return rewrites;
}

bool RunStore::beginRead() const
{
    return m_db.exec("BEGIN");
}

void RunStore::endRead() const
{
    if (!m_db.exec("COMMIT"))
        (void)m_db.exec("ROLLBACK");
}

std::optional<StoredTriage> RunStore::triageResult(
    int64_t runId, const QString &baselineFolder, const QString &baselineName) const
{
    Statement r = prepare("SELECT id, verdict, departure_step, lead_steps, planned_steps, stamp FROM triage_results "
                          "WHERE run_id=? AND baseline_folder=? AND baseline_name=?");
    r.bind(1, runId).bind(2, baselineFolder).bind(3, baselineName);
    if (!r.next()) {
        ok(r);
        return std::nullopt;
    }
    StoredTriage out {.baselineFolder = baselineFolder,
        .baselineName = baselineName,
        .verdict = r.text(1),
        .departure = optionalInt(r, 2),
        .lead = optionalInt(r, 3),
        .planned = optionalInt(r, 4),
        .stamp = r.text(5)};
    const int64_t id = r.int64(0);
    r.reset();
    Statement f = prepare("SELECT kind, severity, runs, layer, tensor, stat, key, task, first_step, last_step, "
                          "summary, evidence, suggestion FROM findings WHERE result_id=? ORDER BY rank");
    f.bind(1, id);
    while (f.next()) {
        out.findings.push_back({.kind = f.text(0),
            .severity = f.text(1),
            .runs = f.text(2),
            .layer = f.text(3),
            .tensor = f.text(4),
            .stat = f.text(5),
            .key = f.text(6),
            .task = f.text(7),
            .firstStep = optionalInt(f, 8),
            .lastStep = optionalInt(f, 9),
            .summary = f.text(10),
            .evidence = f.text(11),
            .suggestion = f.text(12)});
    }
    // A read that failed part-way is no result: the caller computes it again.
    if (!ok(f))
        return std::nullopt;
    return out;
}

bool RunStore::storeTriageResult(int64_t runId, const StoredTriage &result, QString *error)
{
    Transaction t(m_db);
    if (!t.isActive()) {
        *error = m_db.lastError();
        return false;
    }
    // The old result's findings go with it (ON DELETE CASCADE).
    Statement del = prepare("DELETE FROM triage_results WHERE run_id=? AND baseline_folder=? AND baseline_name=?");
    if (!del.bind(1, runId).bind(2, result.baselineFolder).bind(3, result.baselineName).exec()) {
        *error = del.error();
        return false;
    }
    Statement ins = prepare("INSERT INTO triage_results(run_id, baseline_folder, baseline_name, verdict, "
                            "departure_step, lead_steps, planned_steps, stamp) VALUES(?,?,?,?,?,?,?,?)");
    ins.bind(1, runId).bind(2, result.baselineFolder).bind(3, result.baselineName).bind(4, result.verdict);
    bindOptional(ins, 5, result.departure);
    bindOptional(ins, 6, result.lead);
    bindOptional(ins, 7, result.planned);
    if (!ins.bind(8, result.stamp).exec()) {
        *error = ins.error();
        return false;
    }
    const int64_t id = m_db.lastInsertId();
    Statement f
        = prepare("INSERT INTO findings(result_id, rank, kind, severity, runs, layer, tensor, stat, key, task, "
                  "first_step, last_step, summary, evidence, suggestion) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    int64_t rank = 0;
    for (const StoredFinding &x : result.findings) {
        f.bind(1, id).bind(2, rank++).bind(3, x.kind).bind(4, x.severity).bind(5, x.runs).bind(6, x.layer);
        f.bind(7, x.tensor).bind(8, x.stat).bind(9, x.key).bind(10, x.task);
        bindOptional(f, 11, x.firstStep);
        bindOptional(f, 12, x.lastStep);
        if (!f.bind(13, x.summary).bind(14, x.evidence).bind(15, x.suggestion).exec()) {
            *error = f.error();
            return false;
        }
    }
    return t.commit(error);
}

std::vector<FindingReview> RunStore::findingReviews(
    int64_t runId, const QString &baselineFolder, const QString &baselineName) const
{
    std::vector<FindingReview> out;
    Statement s = prepare("SELECT finding, state, note, reviewed_at FROM finding_reviews WHERE run_id=? AND "
                          "baseline_folder=? AND baseline_name=? ORDER BY finding");
    s.bind(1, runId).bind(2, baselineFolder).bind(3, baselineName);
    while (s.next()) {
        // A state this fp8scope does not know (a newer one wrote it) is read as open: the finding is not hidden.
        out.push_back({s.text(0), reviewStateNamed(s.text(1)).value_or(ReviewState::Open), s.text(2), s.text(3)});
    }
    ok(s);
    return out;
}

std::optional<CandidateChoice> RunStore::candidateChoice(const QString &baselineName) const
{
    Statement s = prepare("SELECT candidate, state, note, chosen_at FROM candidate_choices WHERE baseline_name=?");
    s.bind(1, baselineName);
    if (s.next()) {
        const std::optional<CandidateSource> source = candidateSourceNamed(s.text(1));
        if (source == CandidateSource::Confirmed || source == CandidateSource::Chosen)
            return CandidateChoice {s.text(0), *source, s.text(2), s.text(3)};
        return std::nullopt; // a word this fp8scope does not know: the rule's candidate stands
    }
    ok(s);
    return std::nullopt;
}

bool RunStore::storeCandidateChoice(const QString &baselineName, const CandidateChoice &choice, QString *error)
{
    if (choice.candidate.isEmpty()) {
        Statement s = prepare("DELETE FROM candidate_choices WHERE baseline_name=?");
        s.bind(1, baselineName);
        if (!s.exec()) {
            *error = s.error();
            return false;
        }
        return true;
    }
    if (choice.state != CandidateSource::Confirmed && choice.state != CandidateSource::Chosen) {
        *error = QStringLiteral("a candidate is confirmed or chosen, not '%1'").arg(candidateSourceName(choice.state));
        return false;
    }
    Statement s = prepare("INSERT OR REPLACE INTO candidate_choices(baseline_name, candidate, state, note, chosen_at) "
                          "VALUES(?,?,?,?,?)");
    s.bind(1, baselineName).bind(2, choice.candidate).bind(3, candidateSourceName(choice.state)).bind(4, choice.note);
    s.bind(5, QDateTime::currentDateTimeUtc().toString(Qt::ISODate));
    if (!s.exec()) {
        *error = s.error();
        return false;
    }
    return true;
}

std::optional<StoredWhatIf> RunStore::whatIf(int64_t runId, const QString &dump, const QString &recipes) const
{
    Statement s = prepare("SELECT step, file_size, file_mtime, result, computed_at FROM what_ifs WHERE run_id=? AND "
                          "dump=? AND recipes=?");
    s.bind(1, runId).bind(2, dump).bind(3, recipes);
    if (s.next())
        return StoredWhatIf {dump, s.int64(0), recipes, s.int64(1), s.int64(2), s.text(3), s.text(4)};
    ok(s);
    return std::nullopt;
}

std::vector<StoredWhatIf> RunStore::whatIfs(int64_t runId) const
{
    Statement s = prepare("SELECT dump, step, recipes, file_size, file_mtime, result, computed_at FROM what_ifs WHERE "
                          "run_id=?");
    s.bind(1, runId);
    std::vector<StoredWhatIf> out;
    while (s.next())
        out.push_back({s.text(0), s.int64(1), s.text(2), s.int64(3), s.int64(4), s.text(5), s.text(6)});
    ok(s);
    return out;
}

bool RunStore::storeWhatIf(int64_t runId, const StoredWhatIf &w, QString *error)
{
    Statement s = prepare("INSERT OR REPLACE INTO what_ifs(run_id, dump, step, recipes, file_size, file_mtime, "
                          "result, computed_at) VALUES(?,?,?,?,?,?,?,?)");
    s.bind(1, runId).bind(2, w.dump).bind(3, w.step).bind(4, w.recipes).bind(5, w.fileSize).bind(6, w.fileMtime);
    s.bind(7, w.result).bind(8, QDateTime::currentDateTimeUtc().toString(Qt::ISODate));
    if (!s.exec()) {
        *error = s.error();
        return false;
    }
    return true;
}

bool RunStore::storeFindingReview(int64_t runId, const QString &baselineFolder, const QString &baselineName,
    const FindingReview &review, QString *error)
{
    Statement s = prepare("INSERT OR REPLACE INTO finding_reviews(run_id, baseline_folder, baseline_name, finding, "
                          "state, note, reviewed_at) VALUES(?,?,?,?,?,?,?)");
    s.bind(1, runId)
        .bind(2, baselineFolder)
        .bind(3, baselineName)
        .bind(4, review.finding)
        .bind(5, reviewStateName(review.state));
    s.bind(6, review.note).bind(7, QDateTime::currentDateTimeUtc().toString(Qt::ISODate));
    if (!s.exec()) {
        *error = s.error();
        return false;
    }
    return true;
}

} // namespace fp8scope
