#include "schema.h"

#include "pointchunks.h"

#include <vector>

namespace fp8scope::schema {

namespace {

// Version 1. Every statistic is a series keyed by (run, layer, tensor, stat, source, recipe); empty text
// stands for "none" so that the key stays unique.
const char *const kSchemaV1 = R"(
CREATE TABLE runs(
    id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, display_name TEXT, precision TEXT, recipe TEXT,
    baseline TEXT, inference_precision TEXT, notes TEXT);
CREATE TABLE files(
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, run_id INTEGER REFERENCES runs(id), importer TEXT NOT NULL,
    size INTEGER NOT NULL, mtime INTEGER NOT NULL, head_len INTEGER NOT NULL, head_hash TEXT NOT NULL,
    consumed INTEGER NOT NULL, lines INTEGER NOT NULL);
CREATE TABLE series(
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), layer TEXT NOT NULL, tensor TEXT NOT NULL,
    stat TEXT NOT NULL, source TEXT NOT NULL, recipe TEXT NOT NULL,
    UNIQUE(run_id, stat, tensor, layer, source, recipe));
CREATE TABLE points(
    series_id INTEGER NOT NULL, step INTEGER NOT NULL, value REAL, wall_time REAL,
    PRIMARY KEY(series_id, step)) WITHOUT ROWID;
CREATE TABLE evals(
    run_id INTEGER NOT NULL REFERENCES runs(id), file_id INTEGER REFERENCES files(id), task TEXT NOT NULL,
    metric TEXT NOT NULL, inference TEXT NOT NULL, value REAL, stderr REAL,
    PRIMARY KEY(run_id, task, metric, inference));
CREATE TABLE configs(
    run_id INTEGER NOT NULL REFERENCES runs(id), file_id INTEGER REFERENCES files(id), key TEXT NOT NULL,
    value TEXT, PRIMARY KEY(run_id, key));
CREATE TABLE dumps(
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), file_id INTEGER NOT NULL REFERENCES files(id),
    dataset TEXT NOT NULL, layer TEXT, tensor TEXT, step INTEGER, dtype TEXT, shape TEXT,
    UNIQUE(file_id, dataset));
CREATE TABLE problems(
    id INTEGER PRIMARY KEY, file_id INTEGER REFERENCES files(id), line INTEGER, offset INTEGER, message TEXT NOT NULL);
CREATE INDEX problems_file ON problems(file_id, line);
)";

// Version 2: min/max summaries of consecutive runs of kBlockPoints points, for screen-resolution queries.
const char *const kSchemaV2 = R"(
CREATE TABLE point_blocks(
    series_id INTEGER NOT NULL, first_step INTEGER NOT NULL, last_step INTEGER NOT NULL, n INTEGER NOT NULL,
    min REAL, max REAL, PRIMARY KEY(series_id, first_step)) WITHOUT ROWID;
)";

// Version 3: points kept in chunks (core/store/pointchunks.h); the chunk rows carry the min/max summaries
// that version 2 kept in point_blocks. `points` becomes a view with the version 1 columns.
const char *const kSchemaV3Create = R"(
CREATE TABLE point_chunks(
    series_id INTEGER NOT NULL, first_step INTEGER NOT NULL, last_step INTEGER NOT NULL, n INTEGER NOT NULL,
    min REAL, max REAL, data TEXT NOT NULL, PRIMARY KEY(series_id, first_step)) WITHOUT ROWID;
-- The summaries without the data: what long-range queries scan.
CREATE INDEX point_chunks_summary ON point_chunks(series_id, first_step, last_step, n, min, max);
)";
const char *const kSchemaV3Finish = R"(
DROP TABLE points;
DROP TABLE point_blocks;
CREATE VIEW points(series_id, step, value, wall_time) AS
    SELECT c.series_id, json_extract(e.value, '$[0]'), json_extract(e.value, '$[1]'), json_extract(e.value, '$[2]')
    FROM point_chunks c, json_each(c.data) e;
)";

// Version 4: the package versions a run recorded (pip freeze files, version lines of its logs); evals keyed
// by their file too, with the inference settings they were run under, so that two results of one run with
// other inference settings (or of two checkpoints) both stay. Files whose importers now read more (the
// Megatron log's arguments block, lm-eval's inference settings) are read again on the next ingest.
const char *const kSchemaV4 = R"(
CREATE TABLE versions(
    run_id INTEGER NOT NULL REFERENCES runs(id), file_id INTEGER REFERENCES files(id), package TEXT NOT NULL,
    version TEXT NOT NULL, PRIMARY KEY(run_id, package));
CREATE TABLE evals_v4(
    run_id INTEGER NOT NULL REFERENCES runs(id), file_id INTEGER NOT NULL REFERENCES files(id), task TEXT NOT NULL,
    metric TEXT NOT NULL, inference TEXT NOT NULL, settings TEXT NOT NULL DEFAULT '', value REAL, stderr REAL,
    PRIMARY KEY(run_id, task, metric, inference, file_id));
INSERT INTO evals_v4(run_id, file_id, task, metric, inference, value, stderr)
    SELECT run_id, file_id, task, metric, inference, value, stderr FROM evals WHERE file_id IS NOT NULL;
DROP TABLE evals;
ALTER TABLE evals_v4 RENAME TO evals;
UPDATE files SET size=-1, mtime=-1, consumed=0, lines=0 WHERE importer IN ('megatron-log', 'lm-eval');
)";

// Version 5: which files wrote to which series (so that what a deleted or rewritten file wrote can go), and a
// hash of the last bytes read of each file (so that a rewrite that keeps the first 4 KiB is not resumed).
// Every file is read again on the next ingest (size -2: read again, its points kept), which records what
// each wrote.
const char *const kSchemaV5 = R"(
CREATE TABLE series_files(
    series_id INTEGER NOT NULL, file_id INTEGER NOT NULL, PRIMARY KEY(series_id, file_id)) WITHOUT ROWID;
CREATE INDEX series_files_file ON series_files(file_id);
ALTER TABLE files ADD COLUMN tail_len INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN tail_hash TEXT NOT NULL DEFAULT '';
UPDATE files SET size=-2, mtime=-1, consumed=0, lines=0, head_hash='';
)";

// Version 6: the triage's results (core/analysis/triage.h), one row per comparison of a run with a baseline
// (baseline_name '' for a run checked alone; baseline_folder '' when the baseline is in this store, else its
// folder) with its findings in order, and the stamp of the data and engine they were computed from. The
// data's part of the stamp is meta.data_generation, which every change to the files read or to the runs
// moves (the triggers below; a recomputed metric moves it in RunStore::storeRecomputed). A run that goes
// takes its results with it. The Megatron logs are read again: their rewinds (a resume in the same log) are
// now kept.
const char *const kSchemaV6 = R"(
INSERT OR IGNORE INTO meta(key, value) VALUES('data_generation', '0');
UPDATE files SET size=-1, mtime=-1, consumed=0, lines=0 WHERE importer='megatron-log';
CREATE TABLE triage_results(
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    baseline_folder TEXT NOT NULL, baseline_name TEXT NOT NULL, verdict TEXT NOT NULL, departure_step INTEGER,
    lead_steps INTEGER, planned_steps INTEGER, stamp TEXT NOT NULL, UNIQUE(run_id, baseline_folder, baseline_name));
CREATE TABLE findings(
    result_id INTEGER NOT NULL REFERENCES triage_results(id) ON DELETE CASCADE, rank INTEGER NOT NULL,
    kind TEXT NOT NULL, severity TEXT NOT NULL, runs TEXT NOT NULL, layer TEXT, tensor TEXT, stat TEXT, key TEXT,
    task TEXT, first_step INTEGER, last_step INTEGER, summary TEXT NOT NULL, evidence TEXT NOT NULL,
    suggestion TEXT, PRIMARY KEY(result_id, rank)) WITHOUT ROWID;
CREATE TRIGGER files_added AFTER INSERT ON files
    BEGIN UPDATE meta SET value=value+1 WHERE key='data_generation'; END;
CREATE TRIGGER files_changed AFTER UPDATE ON files
    BEGIN UPDATE meta SET value=value+1 WHERE key='data_generation'; END;
CREATE TRIGGER files_removed AFTER DELETE ON files
    BEGIN UPDATE meta SET value=value+1 WHERE key='data_generation'; END;
CREATE TRIGGER runs_added AFTER INSERT ON runs
    BEGIN UPDATE meta SET value=value+1 WHERE key='data_generation'; END;
CREATE TRIGGER runs_changed AFTER UPDATE ON runs
    WHEN old.name IS NOT new.name OR old.display_name IS NOT new.display_name OR old.precision IS NOT new.precision
        OR old.recipe IS NOT new.recipe OR old.baseline IS NOT new.baseline
        OR old.inference_precision IS NOT new.inference_precision OR old.notes IS NOT new.notes
    BEGIN UPDATE meta SET value=value+1 WHERE key='data_generation'; END;
CREATE TRIGGER runs_removed AFTER DELETE ON runs
    BEGIN UPDATE meta SET value=value+1 WHERE key='data_generation'; END;
)";

// Version 7: the user's review of triage findings (the wizard's summary): per run, baseline and finding (its
// identity: kind, layer, tensor, statistic, key and task, not its rank or steps, so that a review outlives the
// result being computed again), a state (open, confirmed, dismissed) and a note. A review is not data the
// results are computed from: it moves no data generation.
const char *const kSchemaV7 = R"(
CREATE TABLE finding_reviews(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, baseline_folder TEXT NOT NULL,
    baseline_name TEXT NOT NULL, finding TEXT NOT NULL, state TEXT NOT NULL, note TEXT NOT NULL,
    reviewed_at TEXT NOT NULL, PRIMARY KEY(run_id, baseline_folder, baseline_name, finding)) WITHOUT ROWID;
)";

// Version 8: the reviews a rebuild carries over until the runs they review are ingested again (their ids are
// new then), by run name; what no run of the folder takes any more stays here, never lost.
const char *const kSchemaV8 = R"(
CREATE TABLE carried_reviews(
    run_name TEXT NOT NULL, baseline_folder TEXT NOT NULL, baseline_name TEXT NOT NULL, finding TEXT NOT NULL,
    state TEXT NOT NULL, note TEXT NOT NULL, reviewed_at TEXT NOT NULL,
    PRIMARY KEY(run_name, baseline_folder, baseline_name, finding)) WITHOUT ROWID;
)";

// Version 9: a count of the times what the store held was replaced or removed (a file rewritten or gone, a
// run left empty, points written again at steps a series had): between two equal counts the store's series
// only grew at their ends, so a reader that keeps what it read (Catalog::setKeepPoints) reads only what
// came after (RunStore::dataRewrites).
const char *const kSchemaV9 = R"(
INSERT OR IGNORE INTO meta(key, value) VALUES('data_rewrites', '0');
)";

// Version 10 (issue 40): a file whose last line had no newline when it was read (a log still being written)
// left that line for the next ingest (pending_tail); a rank's statistics log whose lines are another rank's
// (a reduction group) stores nothing of its own and names that file (same_as, its path). The line logs are
// read again: a fragment of a last line read before may be stored.
const char *const kSchemaV10 = R"(
ALTER TABLE files ADD COLUMN pending_tail INTEGER NOT NULL DEFAULT 0;
ALTER TABLE files ADD COLUMN same_as TEXT NOT NULL DEFAULT '';
UPDATE files SET size=-1, mtime=-1, consumed=0, lines=0, head_hash='', tail_hash=''
    WHERE importer IN ('te-debug', 'csv', 'jsonl', 'megatron-log');
)";

// Version 11 (issue 40): where each log's steps ended (files.steps: a restarted step counter's shift, the last
// step printed and stored, the stride, where the current stretch began), carried to the next read of a grown
// log and to the next log of its stream. The statistics and Megatron logs are read again, so that restarts in
// them are seen and placed.
const char *const kSchemaV11 = R"(
ALTER TABLE files ADD COLUMN steps TEXT NOT NULL DEFAULT '';
UPDATE files SET size=-1, mtime=-1, consumed=0, lines=0, head_hash='', tail_hash=''
    WHERE importer IN ('te-debug', 'megatron-log');
)";

// Version 12 (issue 44): the user's word on a baseline's final candidate among its attempts (confirmed, or another
// attempt chosen), by the baseline's name, so that a rebuild carries it over as it is. Not data the results are
// computed from: it moves no data generation.
const char *const kSchemaV12 = R"(
CREATE TABLE candidate_choices(
    baseline_name TEXT NOT NULL PRIMARY KEY, candidate TEXT NOT NULL, state TEXT NOT NULL, note TEXT NOT NULL,
    chosen_at TEXT NOT NULL) WITHOUT ROWID;
)";

// Version 13 (issue 54): each chunk says the step of its first point that is not finite (NaN or +-inf; null when
// all are), with an index of the chunks that have one, so that the first non-finite value of a run is found
// without reading its points. The chunks written before are filled from their data. The Megatron logs (a loss
// printed as 0 over an interval whose iterations were all skipped is no loss) and the CSVs (non-finite cells
// are kept) are read again.
const char *const kSchemaV13Fill = R"(
UPDATE point_chunks SET nonfinite_step = (
    SELECT MIN(json_extract(e.value, '$[0]')) FROM json_each(point_chunks.data) e
    WHERE json_type(e.value, '$[1]') = 'null' OR abs(json_extract(e.value, '$[1]')) > 1.7976931348623157e308)
    WHERE instr(data, 'null') > 0 OR instr(data, 'e999') > 0;
CREATE INDEX point_chunks_nonfinite ON point_chunks(series_id, last_step) WHERE nonfinite_step IS NOT NULL;
UPDATE files SET size=-1, mtime=-1, consumed=0, lines=0, head_hash='', tail_hash=''
    WHERE importer IN ('megatron-log', 'csv');
)";

// Version 14 (issue 54): the loss gap a run accepts as a baseline (runs.loss_gap_bar, from its manifest); the
// manifests are read again to fill it, and the Megatron logs, whose "iteration N/ M" now gives train_iters.
const char *const kSchemaV14Reread = R"(
UPDATE files SET size=-1, mtime=-1, consumed=0, lines=0, head_hash='', tail_hash=''
    WHERE importer IN ('megatron-log', 'manifest', 'workspace-manifest');
)";

// Version 15 (issue 55): the recipe what-if of a dump, computed once for a set of candidate recipes and read by
// every front end (the wizard, the report, `fp8scope-cli stats --what-if`, the triage's next steps): its rows as
// JSON (each recipe's metrics and block census), with the dump file's size and modification time when it was
// computed, so that a rewritten dump is computed again. A what-if stored moves the data generation: the triage
// results that name a best recipe are computed again from it.
const char *const kSchemaV15 = R"(
CREATE TABLE what_ifs(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, dump TEXT NOT NULL, step INTEGER NOT NULL,
    recipes TEXT NOT NULL, file_size INTEGER NOT NULL, file_mtime INTEGER NOT NULL, result TEXT NOT NULL,
    computed_at TEXT NOT NULL, PRIMARY KEY(run_id, dump, recipes)) WITHOUT ROWID;
CREATE TRIGGER what_ifs_added AFTER INSERT ON what_ifs
    BEGIN UPDATE meta SET value=value+1 WHERE key='data_generation'; END;
CREATE TRIGGER what_ifs_changed AFTER UPDATE ON what_ifs
    BEGIN UPDATE meta SET value=value+1 WHERE key='data_generation'; END;
)";

// Version 16 (issue 56): the run a file belongs to in the folder's division (files.folder_run; run_id is the run it
// wrote to, NULL for none, so a folder whose files each name their own run is no run itself), and what a run's
// manifest says beyond the columns above, read once at ingest (runs.parent, inference_checkpoint,
// inference_reference, and the manifest file that said it, relative to the store's folder, with the key it is under
// in a workspace manifest), and the folder that is the run's (runs.folder, relative to the store's folder; NULL for a
// run no folder is alone) and the folder of the first file that wrote its records (runs.files_folder, where a
// workspace manifest keyed by a run no folder is alone goes), which the ingest writes. The manifests and configs are
// read again to fill them, and the tables (a W&B history export, a table's run column: the folder's empty run an
// older ingest made for them goes once they are read into their own runs).
// Version 17: each mixture-of-experts GEMM's experts reduced step by step (core/store/expertrows.h), with the
// fingerprint of the experts' chunks they were made from and the data generation they were last found fresh at.
const char *const kSchemaV17 = R"(
CREATE TABLE expert_rows(
    run_id INTEGER NOT NULL, stat TEXT NOT NULL, tensor TEXT NOT NULL, source TEXT NOT NULL, recipe TEXT NOT NULL,
    fingerprint TEXT NOT NULL, generation INTEGER NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY(run_id, stat, tensor, source, recipe));
)";

// Version 18: the group a run belongs to, as the logger that wrote it keeps it (a W&B run's group, an MLflow run's
// experiment); "" for none.
const char *const kSchemaV18 = R"(
ALTER TABLE runs ADD COLUMN run_group TEXT NOT NULL DEFAULT '';
)";

const char *const kSchemaV16 = R"(
ALTER TABLE files ADD COLUMN folder_run TEXT;
ALTER TABLE runs ADD COLUMN parent TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN inference_checkpoint TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN inference_reference TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN manifest TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN manifest_key TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN folder TEXT;
ALTER TABLE runs ADD COLUMN files_folder TEXT;
UPDATE files SET size=-1, mtime=-1, consumed=0, lines=0, head_hash='', tail_hash=''
    WHERE importer IN ('manifest', 'workspace-manifest', 'config-json', 'csv', 'jsonl');
)";

// Whether `table` has `column`; false with *error set when the question failed.
bool hasColumn(Database &db, const char *table, const char *column, bool *has, QString *error)
{
    Statement s = db.prepare("SELECT COUNT(*) FROM pragma_table_info(?) WHERE name=?", error);
    s.bind(1, QString::fromLatin1(table)).bind(2, QString::fromLatin1(column));
    *has = s.next() && s.int64(0) > 0;
    if (s.failed()) {
        *error = s.error();
        return false;
    }
    s.reset();
    return true;
}

bool addLossGapBarColumn(Database &db, QString *error)
{
    bool has = false;
    return hasColumn(db, "runs", "loss_gap_bar", &has, error)
        && (has || db.exec("ALTER TABLE runs ADD COLUMN loss_gap_bar TEXT", error));
}

// The column version 13 adds; version 3's conversion adds it first, since its writer fills it.
bool addNonFiniteColumn(Database &db, QString *error)
{
    bool has = false;
    return hasColumn(db, "point_chunks", "nonfinite_step", &has, error)
        && (has || db.exec("ALTER TABLE point_chunks ADD COLUMN nonfinite_step INTEGER", error));
}

// Version 3's conversion: every series' points into chunks, then the view in place of the table.
bool pointsToChunks(Database &db, QString *error)
{
    if (!db.exec(kSchemaV3Create, error) || !addNonFiniteColumn(db, error))
        return false;
    Statement all = db.prepare("SELECT series_id, step, value, wall_time FROM points ORDER BY series_id, step", error);
    pointchunks::Writer writer(db);
    std::vector<pointchunks::Point> group;
    int64_t series = -1;
    auto flush = [&] {
        const bool ok = group.empty() || writer.merge(series, group);
        group.clear();
        return ok;
    };
    while (all.next()) {
        if (all.int64(0) != series) {
            if (!flush()) {
                *error = db.lastError();
                return false;
            }
            series = all.int64(0);
        }
        group.push_back({all.int64(1), all.real(2), all.real(3)});
    }
    if (all.failed()) {
        *error = all.error();
        return false;
    }
    all.reset();
    if (!flush()) {
        *error = db.lastError();
        return false;
    }
    return db.exec(kSchemaV3Finish, error);
}

} // namespace

bool migrate(Database &db, const QString &path, QString *error)
{
    if (!db.exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)", error))
        return false;
    Statement s = db.prepare("SELECT value FROM meta WHERE key='schema_version'", error);
    const bool stamped = s.next();
    const QString stamp = stamped ? s.text(0) : QString();
    if (s.failed()) {
        *error = s.error(); // RunStore::openFile says what it means, and what to do
        return false;
    }
    s.reset(); // a pending read would block the DROP TABLE of a migration
    bool isNumber = false;
    const int version = stamped ? stamp.toInt(&isNumber) : 0;
    Statement tables = db.prepare("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='runs'", error);
    const bool hasRuns = tables.next() && tables.int64(0) > 0;
    tables.reset();
    if ((stamped && (!isNumber || version < 1)) || (!stamped && hasRuns)) {
        // Not a version fp8scope wrote: creating version 1's tables again would fail with "table runs already
        // exists", which says nothing.
        *error = QStringLiteral("%1: the store's schema version is %2, which no fp8scope wrote; rebuild it with "
                                "`fp8scope-cli ingest --rebuild` (it is a cache of the run's files)")
                     .arg(path, stamped ? QStringLiteral("'%1'").arg(stamp) : QStringLiteral("missing"));
        return false;
    }
    if (version > kVersion) {
        *error = QStringLiteral("%1: store schema %2 is newer than this fp8scope (%3)")
                     .arg(path)
                     .arg(version)
                     .arg(kVersion);
        return false;
    }
    if (version == kVersion)
        return true;
    Transaction t(db);
    if (!t.isActive()) {
        *error = QStringLiteral("%1: %2").arg(path, db.lastError());
        return false;
    }
    // Migrations run in order; version 1 is the first schema.
    const bool ok = (version >= 1 || db.exec(kSchemaV1, error)) && (version >= 2 || db.exec(kSchemaV2, error))
        && (version >= 3 || pointsToChunks(db, error)) && (version >= 4 || db.exec(kSchemaV4, error))
        && (version >= 5 || db.exec(kSchemaV5, error)) && (version >= 6 || db.exec(kSchemaV6, error))
        && (version >= 7 || db.exec(kSchemaV7, error)) && (version >= 8 || db.exec(kSchemaV8, error))
        && (version >= 9 || db.exec(kSchemaV9, error)) && (version >= 10 || db.exec(kSchemaV10, error))
        && (version >= 11 || db.exec(kSchemaV11, error)) && (version >= 12 || db.exec(kSchemaV12, error))
        && (version >= 13 || (addNonFiniteColumn(db, error) && db.exec(kSchemaV13Fill, error)))
        && (version >= 14 || (addLossGapBarColumn(db, error) && db.exec(kSchemaV14Reread, error)))
        && (version >= 15 || db.exec(kSchemaV15, error)) && (version >= 16 || db.exec(kSchemaV16, error))
        && (version >= 17 || db.exec(kSchemaV17, error)) && (version >= 18 || db.exec(kSchemaV18, error));
    if (!ok)
        return false;
    Statement set = db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)", error);
    if (!set.bind(1, QString::number(kVersion)).exec()) {
        *error = set.error();
        return false;
    }
    return t.commit(error);
}

} // namespace fp8scope::schema
