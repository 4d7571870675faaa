#include "ingest.h"

#include "logstreams.h"
#include "pointchunks.h"
#include "runinference.h"

#include "core/importers/compressedfile.h"
#include "core/importers/folderscanner.h"

#include <sqlite3.h>

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QRegularExpression>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <set>

#include <signal.h>

namespace fp8scope {

namespace {

QString seriesCacheKey(int64_t run, const SeriesKey &k)
{
    return QString::number(run) + QChar(0x1f) + k.layer + QChar(0x1f) + k.tensor + QChar(0x1f) + k.stat + QChar(0x1f)
        + k.source + QChar(0x1f) + k.recipe;
}

// What the store held was replaced or removed (schema version 9): readers that keep what they read read it
// again.
bool noteRewrite(Database &db, QString *error)
{
    return db.exec("UPDATE meta SET value=value+1 WHERE key='data_rewrites'", error);
}

// Writes one file's records inside the ingest transaction. A statement that fails counts as a failure (the
// file's transaction then rolls back) and keeps its message for the report.
class FileSink : public IngestSink
{
public:
    // `scan` names the runs of the folders that useRunFolder() finds (none without it).
    FileSink(Database &db, int64_t fileId, const QString &defaultRun, const FolderScan *scan = nullptr,
        const QString &filePath = QString())
        : m_db(db)
        , m_fileId(fileId)
        , m_scan(scan)
        , m_filePath(filePath)
        , m_fileDir(filePath.contains(QLatin1Char('/')) ? filePath.section(QLatin1Char('/'), 0, -2) : QString())
    {
        m_findSeries = db.prepare(
            "SELECT id FROM series WHERE run_id=? AND layer=? AND tensor=? AND stat=? AND source=? AND recipe=?");
        m_insertSeries
            = db.prepare("INSERT INTO series(run_id, layer, tensor, stat, source, recipe) VALUES(?,?,?,?,?,?)");
        m_defaultRunName = defaultRun;
    }

    int64_t runId(const QString &name)
    {
        const auto it = m_runs.find(name);
        if (it != m_runs.end())
            return it.value();
        Statement ins = m_db.prepare("INSERT OR IGNORE INTO runs(name) VALUES(?)");
        check(ins.bind(1, name).exec(), ins);
        Statement sel = m_db.prepare("SELECT id FROM runs WHERE name=?");
        sel.bind(1, name);
        const int64_t id = sel.next() ? sel.int64(0) : 0;
        check(id != 0, sel);
        m_runs.insert(name, id);
        return id;
    }

    // The folder's run is made when something is written to it: a folder whose files each name their own run (W&B
    // history exports) is no run of its own.
    void useRun(const QString &name) override
    {
        m_run = name.isEmpty() ? 0 : runId(name);
        if (m_run != 0)
            m_named.insert(m_run);
    }

    bool useExistingRun(const QString &name) override
    {
        Statement s = m_db.prepare("SELECT id FROM runs WHERE name=?");
        s.bind(1, name);
        if (!s.next())
            return false;
        m_run = s.int64(0);
        m_runs.insert(name, m_run);
        m_named.insert(m_run);
        return true;
    }

    // The run the file's records go to now (the folder's, made now where none was chosen).
    int64_t run()
    {
        if (m_run == 0)
            m_run = runId(m_defaultRunName);
        return m_run;
    }

    // The run the file is counted to: the folder's where anything went to it, else one it named (the oldest); 0
    // for a file that wrote to no run (a W&B configs.json none of whose runs is open here), which makes none.
    int64_t fileRun() const
    {
        if (const auto it = m_runs.constFind(m_defaultRunName); it != m_runs.cend())
            return it.value();
        return m_named.empty() ? 0 : *m_named.begin();
    }

    bool useRunFolder(const QString &folder) override
    {
        if (!m_scan)
            return false;
        const auto it = m_scan->runOfFolder.find(m_fileDir.isEmpty() ? folder : m_fileDir + QLatin1Char('/') + folder);
        if (it == m_scan->runOfFolder.end())
            return false;
        m_run = runId(it.value());
        m_named.insert(m_run);
        return true;
    }

    // The handle is a slot of this sink (dense, so a point finds its series' buffer without a lookup).
    int64_t series(const SeriesKey &key) override
    {
        const QString ck = seriesCacheKey(run(), key);
        auto it = m_series.find(ck);
        if (it != m_series.end())
            return it.value();
        m_findSeries.bind(1, run())
            .bind(2, key.layer)
            .bind(3, key.tensor)
            .bind(4, key.stat)
            .bind(5, key.source)
            .bind(6, key.recipe);
        int64_t id = 0;
        if (m_findSeries.next()) {
            id = m_findSeries.int64(0);
        } else if (check(!m_findSeries.failed(), m_findSeries)) {
            m_insertSeries.bind(1, run())
                .bind(2, key.layer)
                .bind(3, key.tensor)
                .bind(4, key.stat)
                .bind(5, key.source)
                .bind(6, key.recipe);
            if (check(m_insertSeries.exec(), m_insertSeries))
                id = m_db.lastInsertId();
        }
        m_findSeries.reset();
        if (id != 0 && m_fileId != 0) {
            // Which files wrote to the series: what a deleted or rewritten file wrote can then go.
            if (!m_linkFile.isValid())
                m_linkFile = m_db.prepare("INSERT OR IGNORE INTO series_files(series_id, file_id) VALUES(?,?)");
            check(m_linkFile.bind(1, id).bind(2, m_fileId).exec(), m_linkFile);
        }
        const int64_t slot = int64_t(m_slots.size());
        m_slots.push_back({id, {}, true, {}});
        m_series.insert(ck, slot);
        return slot;
    }

    void point(int64_t series, int64_t step, double value, double wallTime) override
    {
        Slot &slot = m_slots[size_t(series)];
        slot.sorted = slot.sorted && (slot.points.empty() || slot.points.back().step <= step);
        slot.points.push_back({step, value, wallTime});
        if (++m_buffered >= kBatch)
            flushPoints();
    }

    // Each series' buffered points go to its chunks in step order; of equal steps the later wins, as it
    // would one by one. The chunks are written on a second thread while the importer parses on (the
    // connection is serialized; that thread only touches point_chunks, a WITHOUT ROWID table, so it never
    // moves last_insert_rowid under series()). Logs arrive in step order, so sorting is the exception.
    void flushPoints()
    {
        waitForWriter();
        std::vector<Slot> batch;
        batch.reserve(m_slots.size());
        for (Slot &slot : m_slots) {
            // The buffer the previous batch used comes back (empty, its capacity kept) for the next one.
            batch.push_back({slot.id, std::move(slot.points), slot.sorted, {}});
            slot.points = std::move(slot.spare);
            slot.points.clear();
            slot.spare = {};
            slot.sorted = true;
        }
        m_buffered = 0;
        m_writer = std::async(std::launch::async, [this, batch = std::move(batch)]() mutable {
            WriteCount c;
            c.batch = std::move(batch);
            for (Slot &slot : c.batch) {
                if (slot.points.empty() || slot.id == 0)
                    continue; // a series whose row failed is already counted
                if (!slot.sorted)
                    std::stable_sort(slot.points.begin(), slot.points.end(),
                        [](const pointchunks::Point &a, const pointchunks::Point &b) { return a.step < b.step; });
                c.points += int64_t(slot.points.size());
                if (!m_chunks.merge(slot.id, slot.points)) {
                    ++c.failures;
                    if (c.error.isEmpty())
                        c.error = m_db.lastError();
                }
            }
            return c;
        });
    }

    void waitForWriter()
    {
        if (!m_writer.valid())
            return;
        WriteCount c = m_writer.get();
        points += c.points;
        failures += c.failures;
        if (!c.error.isEmpty() && error.isEmpty())
            error = c.error;
        for (size_t i = 0; i < c.batch.size(); ++i)
            m_slots[i].spare = std::move(c.batch[i].points);
    }

    void finish()
    {
        flushPoints();
        waitForWriter();
        for (const ProblemClass &c : std::as_const(m_problemClasses)) {
            if (c.more == 0)
                continue;
            Statement u = m_db.prepare("UPDATE problems SET message=? WHERE id=?");
            const QString more
                = c.more == 1 ? QStringLiteral("1 more line") : QStringLiteral("%1 more lines").arg(c.more);
            const QString said = c.lastLine > 0
                ? QStringLiteral("%1 (and %2 like it, the last at line %3)").arg(c.first, more).arg(c.lastLine)
                : QStringLiteral("%1 (and %2 like it)").arg(c.first, more);
            check(u.bind(1, said).bind(2, c.row).exec(), u);
        }
        if (m_chunks.rewrites() > 0) {
            QString e;
            if (!noteRewrite(m_db, &e)) {
                ++failures;
                if (error.isEmpty())
                    error = e;
            }
        }
    }

    ~FileSink() override { waitForWriter(); }

    void eval(const EvalRecord &e) override
    {
        if (!m_insertEval.isValid())
            m_insertEval = m_db.prepare("INSERT OR REPLACE INTO evals(run_id, file_id, task, metric, inference, "
                                        "settings, value, stderr) VALUES(?,?,?,?,?,?,?,?)");
        m_insertEval.bind(1, run())
            .bind(2, m_fileId)
            .bind(3, e.task)
            .bind(4, e.metric)
            .bind(5, e.inference)
            .bind(6, e.settings)
            .bind(7, e.value)
            .bind(8, e.stderrValue);
        check(m_insertEval.exec(), m_insertEval);
    }

    void config(const QString &key, const QString &value) override
    {
        keyValue(
            m_insertConfig, "INSERT OR REPLACE INTO configs(run_id, file_id, key, value) VALUES(?,?,?,?)", key, value);
    }

    void version(const QString &package, const QString &version) override
    {
        keyValue(m_insertVersion, "INSERT OR REPLACE INTO versions(run_id, file_id, package, version) VALUES(?,?,?,?)",
            package, version);
    }

    void runInfo(const QString &field, const QString &value) override
    {
        static const std::map<QString, const char *> columns {
            {QStringLiteral("display_name"), "UPDATE runs SET display_name=? WHERE id=?"},
            {QStringLiteral("precision"), "UPDATE runs SET precision=? WHERE id=?"},
            {QStringLiteral("recipe"), "UPDATE runs SET recipe=? WHERE id=?"},
            {QStringLiteral("baseline"), "UPDATE runs SET baseline=? WHERE id=?"},
            {QStringLiteral("inference_precision"), "UPDATE runs SET inference_precision=? WHERE id=?"},
            {QStringLiteral("notes"), "UPDATE runs SET notes=? WHERE id=?"},
            {QStringLiteral("group"), "UPDATE runs SET run_group=? WHERE id=?"},
            {QStringLiteral("loss_gap_bar"), "UPDATE runs SET loss_gap_bar=? WHERE id=?"},
            {QStringLiteral("parent"), "UPDATE runs SET parent=? WHERE id=?"},
            {QStringLiteral("inference_checkpoint"), "UPDATE runs SET inference_checkpoint=? WHERE id=?"},
            {QStringLiteral("inference_reference"), "UPDATE runs SET inference_reference=? WHERE id=?"}};
        if (field == QLatin1String("manifest_key")) {
            // The manifest that says what follows: this file, under this key; a run's own fp8scope.json stays its
            // manifest whatever workspace manifest also names it.
            Statement s = m_db.prepare("UPDATE runs SET manifest=?1, manifest_key=?2 WHERE id=?3 AND (?2='' OR "
                                       "manifest='' OR manifest_key<>'')");
            check(s.bind(1, m_filePath).bind(2, value).bind(3, run()).exec(), s);
            return;
        }
        const auto it = columns.find(field);
        if (it == columns.end())
            return;
        Statement s = m_db.prepare(it->second);
        check(s.bind(1, value).bind(2, run()).exec(), s);
    }

    void dump(const DumpRecord &d) override
    {
        Statement s
            = m_db.prepare("INSERT OR REPLACE INTO dumps(run_id, file_id, dataset, layer, tensor, step, dtype, shape) "
                           "VALUES(?,?,?,?,?,?,?,?)");
        s.bind(1, run())
            .bind(2, m_fileId)
            .bind(3, d.dataset)
            .bind(4, d.layer)
            .bind(5, d.tensor)
            .bind(6, d.step)
            .bind(7, d.dtype)
            .bind(8, d.shape);
        check(s.exec(), s);
    }

    // A class of problems (the same message but for what it quotes and its numbers: "unknown statistic name
    // '...'" on 500,000 lines) is one problem: the first, with a count and the last line added at finish().
    void problem(int64_t line, int64_t offset, const QString &message) override
    {
        const QString cls = problemClass(message);
        const auto seen = m_problemClasses.find(cls);
        if (seen != m_problemClasses.end()) {
            ++seen->more;
            seen->lastLine = line;
            return;
        }
        if (!m_insertProblem.isValid())
            m_insertProblem = m_db.prepare("INSERT INTO problems(file_id, line, offset, message) VALUES(?,?,?,?)");
        m_insertProblem.bind(1, m_fileId).bind(2, line).bind(3, offset).bind(4, message);
        if (check(m_insertProblem.exec(), m_insertProblem))
            m_problemClasses.insert(cls, {m_db.lastInsertId(), message, 0, line});
        ++problems;
    }

    // Read once per file, from what the run's Megatron logs (read before its statistics logs) stored.
    std::vector<int64_t> resumePoints() override
    {
        if (m_resumePoints)
            return *m_resumePoints;
        m_resumePoints.emplace();
        waitForWriter(); // the connection is the writer thread's while it runs
        Statement find = m_db.prepare("SELECT id FROM series WHERE run_id=? AND layer='' AND tensor='' AND "
                                      "stat='rewind' AND source='megatron-log' AND recipe=''");
        std::vector<pointchunks::Point> rewinds;
        if (find.bind(1, run()).next()
            && !pointchunks::read(m_db, find.int64(0), std::numeric_limits<int64_t>::min(),
                std::numeric_limits<int64_t>::max(), &rewinds)) {
            ++failures;
            if (error.isEmpty())
                error = m_db.lastError();
        }
        for (const pointchunks::Point &p : rewinds)
            m_resumePoints->push_back(p.step);
        return *m_resumePoints;
    }

    int64_t points = 0;
    int64_t failures = 0;
    int problems = 0;
    QString error; // the first failure's message

private:
    std::optional<std::vector<int64_t>> m_resumePoints;

    // A (run, file, key, value) row, through a statement prepared on first use.
    void keyValue(Statement &insert, const char *sql, const QString &key, const QString &value)
    {
        if (!insert.isValid())
            insert = m_db.prepare(sql);
        insert.bind(1, run()).bind(2, m_fileId).bind(3, key).bind(4, value);
        check(insert.exec(), insert);
    }

    bool check(bool ok, const Statement &s)
    {
        if (!ok) {
            ++failures;
            if (error.isEmpty())
                error = s.error();
        }
        return ok;
    }

    // A problem's class: its message with what it quotes and its numbers left out.
    static QString problemClass(const QString &message)
    {
        QString out;
        out.reserve(message.size());
        bool quoted = false;
        for (qsizetype i = 0; i < message.size(); ++i) {
            const QChar c = message.at(i);
            // A quote opens after a space or a bracket (not the apostrophe of "file's") and closes anywhere.
            if (c == QLatin1Char('\'') && (quoted || i == 0 || !message.at(i - 1).isLetterOrNumber())) {
                quoted = !quoted;
                out += c;
            } else if (quoted) {
                continue;
            } else if (c.isDigit()) {
                if (out.isEmpty() || out.back() != QLatin1Char('#'))
                    out += QLatin1Char('#');
            } else {
                out += c;
            }
        }
        return out;
    }
    struct ProblemClass {
        int64_t row; // the problem stored for the class
        QString first;
        int64_t more;
        int64_t lastLine;
    };
    QHash<QString, ProblemClass> m_problemClasses;

    Database &m_db;
    int64_t m_fileId;
    const FolderScan *m_scan;
    QString m_filePath; // the file's, relative to the opened folder
    QString m_fileDir; // its folder's
    QString m_defaultRunName;
    std::set<int64_t> m_named; // the runs the file named (useRun, useRunFolder)
    int64_t m_run = 0;
    QHash<QString, int64_t> m_runs;
    QHash<QString, int64_t> m_series;
    Statement m_findSeries, m_insertSeries, m_linkFile, m_insertConfig, m_insertVersion, m_insertEval, m_insertProblem;
    pointchunks::Writer m_chunks {m_db};
    struct Slot {
        int64_t id; // series id in the store (0 when its row could not be written)
        std::vector<pointchunks::Point> points; // buffered until the next flush
        bool sorted;
        std::vector<pointchunks::Point> spare; // the buffer being written, back once it is
    };
    struct WriteCount {
        int64_t points = 0;
        int64_t failures = 0;
        QString error;
        std::vector<Slot> batch;
    };
    // Half a million points a batch: two batches in flight stay well under the memory budget.
    static constexpr size_t kBatch = 1 << 19;
    std::vector<Slot> m_slots;
    size_t m_buffered = 0;
    std::future<WriteCount> m_writer;
};

// Runs a statement that takes one id; false (with the message kept) on failure.
bool execWithId(Database &db, const char *sql, int64_t id, QString *error)
{
    Statement s = db.prepare(sql, error);
    if (s.bind(1, id).exec())
        return true;
    *error = s.error();
    return false;
}

// Runs that hold nothing any more (what their files wrote went with the files: deleted, rewritten, or now
// another run's): they go. A run may hold series without files of its own (a long CSV's run column, a W&B
// export named after its run), so "nothing" is no files, series, evals, configs, versions or dumps.
void dropRunsLeftEmpty(Database &db, const std::set<QString> &movedFrom, IngestReport *report)
{
    // A store written when the folder was divided differently: a run whose files all went to other runs
    // held what those files said, mixed (before fp8scope recorded which file wrote what); it goes, with all of it.
    for (const QString &name : movedFrom) {
        Statement find
            = db.prepare("SELECT id FROM runs WHERE name=? AND NOT EXISTS (SELECT 1 FROM files WHERE run_id=runs.id)");
        find.bind(1, name);
        if (!find.next())
            continue;
        const int64_t id = find.int64(0);
        find.reset();
        Transaction t(db);
        QString error;
        bool ok = t.isActive();
        for (const char *sql : {"DELETE FROM point_chunks WHERE series_id IN (SELECT id FROM series WHERE run_id=?)",
                 "DELETE FROM series_files WHERE series_id IN (SELECT id FROM series WHERE run_id=?)",
                 "DELETE FROM series WHERE run_id=?", "DELETE FROM evals WHERE run_id=?",
                 "DELETE FROM configs WHERE run_id=?", "DELETE FROM versions WHERE run_id=?",
                 "DELETE FROM dumps WHERE run_id=?", "DELETE FROM runs WHERE id=?"})
            ok = ok && execWithId(db, sql, id, &error);
        ok = ok && noteRewrite(db, &error);
        if (!ok || !t.commit(&error))
            report->errors << QStringLiteral("run %1 left without files: %2").arg(name, error);
    }
    // A run left with nothing any file wrote goes, with what only the store held of it: the metrics recomputed
    // from its dumps (series no file wrote) and its triage results.
    Statement find = db.prepare("SELECT id, name FROM runs r WHERE NOT EXISTS (SELECT 1 FROM files WHERE run_id=r.id) "
                                "AND NOT EXISTS (SELECT 1 FROM series s JOIN series_files sf ON sf.series_id=s.id "
                                "WHERE s.run_id=r.id) "
                                "AND NOT EXISTS (SELECT 1 FROM evals WHERE run_id=r.id) "
                                "AND NOT EXISTS (SELECT 1 FROM configs WHERE run_id=r.id) "
                                "AND NOT EXISTS (SELECT 1 FROM versions WHERE run_id=r.id) "
                                "AND NOT EXISTS (SELECT 1 FROM dumps WHERE run_id=r.id)");
    std::vector<std::pair<int64_t, QString>> empty;
    while (find.next())
        empty.emplace_back(find.int64(0), find.text(1));
    if (find.failed())
        report->errors << QStringLiteral("runs left without files: %1").arg(find.error());
    find.reset();
    for (const auto &[id, name] : empty) {
        Transaction t(db);
        QString error;
        bool ok = t.isActive();
        for (const char *sql : {"DELETE FROM point_chunks WHERE series_id IN (SELECT id FROM series WHERE run_id=?)",
                 "DELETE FROM series WHERE run_id=?", "DELETE FROM runs WHERE id=?"})
            ok = ok && execWithId(db, sql, id, &error);
        ok = ok && noteRewrite(db, &error);
        if (!ok || !t.commit(&error))
            report->errors << QStringLiteral("run %1 left without files: %2").arg(name, error);
    }
}

// A files row's size that says: what this file wrote was dropped (another file's rewrite or deletion took
// series they shared); read it again from the start, dropping nothing.
constexpr int64_t kReadAgain = -2;

// Drops the points a file wrote (inside the caller's transaction): series only it wrote go; series it
// shared with other files lose all their points and those files are marked to be read again (kReadAgain),
// since the points of one file cannot be told from another's.
bool dropPoints(Database &db, int64_t fileId, bool shared, QString *error)
{
    std::vector<int64_t> sole, others;
    Statement series
        = db.prepare("SELECT sf.series_id, (SELECT COUNT(*) FROM series_files o WHERE "
                     "o.series_id=sf.series_id AND o.file_id<>sf.file_id) FROM series_files sf WHERE sf.file_id=?",
            error);
    series.bind(1, fileId);
    while (series.next())
        (series.int64(1) == 0 ? sole : others).push_back(series.int64(0));
    if (series.failed()) {
        *error = series.error();
        return false;
    }
    series.reset();
    if (!shared)
        others.clear();
    for (int64_t id : others) {
        Statement mark = db.prepare("UPDATE files SET size=?, mtime=-1, consumed=0, lines=0, head_hash='' WHERE id IN "
                                    "(SELECT file_id FROM series_files WHERE series_id=? AND file_id<>?)",
            error);
        if (!mark.bind(1, kReadAgain).bind(2, id).bind(3, fileId).exec()) {
            *error = mark.error();
            return false;
        }
        if (!execWithId(db, "DELETE FROM point_chunks WHERE series_id=?", id, error))
            return false;
    }
    for (int64_t id : sole) {
        if (!execWithId(db, "DELETE FROM point_chunks WHERE series_id=?", id, error)
            || !execWithId(db, "DELETE FROM series_files WHERE series_id=?", id, error)
            || !execWithId(db, "DELETE FROM series WHERE id=?", id, error))
            return false;
    }
    return !shared || execWithId(db, "DELETE FROM series_files WHERE file_id=?", fileId, error);
}

// Drops what a file wrote: its points (dropPoints; with `shared` false, for a file read again because
// another's change took their shared series, only the series it alone wrote: the shared series hold the
// other file's new points already, and what it reads now may differ from before, as a log's steps are placed
// after where the log before it in its stream ended), evals, configs, versions, dumps and problems.
bool dropContributions(Database &db, int64_t fileId, bool shared, QString *error)
{
    if (!noteRewrite(db, error) || !dropPoints(db, fileId, shared, error))
        return false;
    for (const char *sql : {"DELETE FROM problems WHERE file_id=?", "DELETE FROM evals WHERE file_id=?",
             "DELETE FROM configs WHERE file_id=?", "DELETE FROM versions WHERE file_id=?",
             "DELETE FROM dumps WHERE file_id=?"}) {
        if (!execWithId(db, sql, fileId, error))
            return false;
    }
    return true;
}

QByteArray windowHash(const QString &path, qint64 from, qint64 len)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly) || !f.seek(from))
        return {};
    return QCryptographicHash::hash(f.read(len), QCryptographicHash::Sha256).toHex();
}

constexpr qint64 kTailBytes = 4096;

// A log's StepPlacement as the files row keeps it (files.steps): seven numbers (six before version 13), and an
// eighth for a log of rows that read one (W&B's history).
QString stepsText(const StepPlacement &s)
{
    const QString rows = s.lastRow >= 0 ? QStringLiteral(" %1").arg(s.lastRow) : QString();
    return QStringLiteral("%1 %2 %3 %4 %5 %6 %7")
               .arg(s.shift)
               .arg(s.lastPrinted)
               .arg(s.lastPlaced)
               .arg(s.stride)
               .arg(s.segmentStart)
               .arg(s.continuesEarlierLog ? 1 : 0)
               .arg(s.badSince)
        + rows;
}

StepPlacement stepsFrom(const QString &text)
{
    StepPlacement s;
    const QStringList n = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (n.size() < 6 || n.size() > 8)
        return s; // a row written before version 11, or a file read whole
    s.shift = n[0].toLongLong();
    s.lastPrinted = n[1].toLongLong();
    s.lastPlaced = n[2].toLongLong();
    s.stride = n[3].toLongLong();
    s.segmentStart = n[4].toLongLong();
    s.continuesEarlierLog = n[5] == QLatin1String("1");
    s.badSince = n.size() >= 7 ? n[6].toLongLong() : -1;
    s.lastRow = n.size() >= 8 ? n[7].toLongLong() : -1;
    return s;
}

// Where a log stands in its stream (orderLogStreams): the log whose steps it continues (itself a copy's
// reference where that one was a copy of another rank's), and whether that one's steps ended elsewhere in this
// pass than they did before (then this one is read again whole, from where they end now).
struct StreamLink {
    QString before;
    bool beforeChanged = false;
};

// The steps state a log left: of the log itself, or of the rank log it is a copy of.
StepPlacement stepsOfFile(Database &db, const QString &relativePath)
{
    Statement q = db.prepare("SELECT steps, same_as FROM files WHERE path=?");
    if (!q.bind(1, relativePath).next())
        return {};
    const QString sameAs = q.text(1);
    const StepPlacement own = stepsFrom(q.text(0));
    q.reset();
    return sameAs.isEmpty() ? own : stepsOfFile(db, sameAs);
}

// Reads one scanned file into the store, in one transaction. Returns false when it could not be read
// (the reason is in the report). *stepsChanged says whether the log's steps now end elsewhere than they did.
void ingestFile(Database &db, const ScannedFile &f, const FolderScan &scan, IngestReport &report,
    std::set<QString> *movedFrom, const StreamLink &link = {}, bool *stepsChanged = nullptr)
{
    const auto fail = [&](const QString &error) {
        ++report.filesFailed;
        report.errors << QStringLiteral("%1: %2").arg(f.relativePath, error);
    };
    int64_t size = 0, mtime = 0;
    f.importer->stamp(f.absolutePath, &size, &mtime);
    Statement q = db.prepare(
        "SELECT f.id, f.size, f.mtime, f.head_len, f.head_hash, f.consumed, f.lines, f.importer, "
        "COALESCE(f.folder_run, r.name), f.tail_len, f.tail_hash, f.pending_tail, f.steps, f.same_as FROM files f "
        "LEFT JOIN runs r ON "
        "r.id=f.run_id "
        "WHERE f.path=?");
    q.bind(1, f.relativePath);
    int64_t fileId = 0;
    ReadPosition from;
    bool resume = false;
    bool dropped = false; // what it wrote is gone already (kReadAgain)
    QString oldSteps;
    if (q.next()) {
        fileId = q.int64(0);
        const int64_t oldSize = q.int64(1);
        dropped = oldSize == kReadAgain;
        // A file now in another run (the folder's runs were divided differently when it was read) is read
        // again, as a rewritten file.
        const bool sameRun = q.text(8) == f.run;
        if (!sameRun)
            movedFrom->insert(q.text(8));
        // Unchanged, unless its last line waited for a newline (it may be read now that the file has settled).
        const bool pendingTail = q.int64(11) != 0;
        oldSteps = q.text(12);
        // A rank's log kept as another's copy that is no longer one (that one changed) is read now, whole.
        const bool wasCopy = !q.text(13).isEmpty();
        if (sameRun && oldSize == size && q.int64(2) == mtime && q.text(7) == f.importer->name() && !pendingTail
            && !link.beforeChanged && !wasCopy) {
            ++report.filesUnchanged;
            return;
        }
        // A grown log is read on from where the last ingest stopped, when its first bytes and the last bytes
        // read then are unchanged (a rewrite that kept its first 4 KiB is read again). A compressed log is read
        // again whole: its offsets are of what it decompresses to.
        const int64_t consumed = q.int64(5), tailLen = q.int64(9);
        resume = sameRun && !link.beforeChanged && !wasCopy && f.importer->resumable()
            && compressionOf(f.absolutePath) == Compression::None && size >= oldSize && q.text(7) == f.importer->name()
            && windowHash(f.absolutePath, 0, q.int64(3)) == q.text(4).toLatin1()
            && windowHash(f.absolutePath, consumed - tailLen, tailLen) == q.text(10).toLatin1();
        if (resume)
            from = {consumed, q.int64(6), false, stepsFrom(oldSteps)};
    } else if (q.failed()) {
        fail(q.error());
        return;
    }
    q.reset();
    if (!resume && !link.before.isEmpty()) {
        from.steps = stepsOfFile(db, link.before);
        from.steps.continuesEarlierLog = true;
    }
    Transaction t(db);
    if (!t.isActive()) {
        if (db.isBusy())
            report.busy = true; // said once, by the caller
        else
            fail(db.lastError());
        return;
    }
    QString error;
    const qint64 headLen = std::min<qint64>(size, kHeadBytes);
    const QString hash = QString::fromLatin1(windowHash(f.absolutePath, 0, headLen));
    bool ok = true;
    if (fileId == 0) {
        Statement ins
            = db.prepare("INSERT INTO files(path, importer, size, mtime, head_len, head_hash, consumed, lines) "
                         "VALUES(?,?,0,0,0,'',0,0)");
        ok = ins.bind(1, f.relativePath).bind(2, f.importer->name()).exec();
        if (!ok)
            error = ins.error();
        fileId = db.lastInsertId();
    } else if (!resume) {
        // A rewritten file (or one whose shared series another file's change took): what it wrote goes first.
        ok = dropContributions(db, fileId, !dropped, &error);
    } else {
        // The last line may have been reported as incomplete; it is read again.
        Statement d = db.prepare("DELETE FROM problems WHERE file_id=? AND line>?");
        ok = d.bind(1, fileId).bind(2, from.line).exec();
        if (!ok)
            error = d.error();
    }
    if (!ok) {
        fail(error);
        return;
    }
    FileSink sink(db, fileId, f.run, &scan, f.relativePath);
    ReadPosition end;
    // One file's failure (memory running out on a hostile file, a library throwing) rolls back that file
    // only: the others are read, and the report says which failed and why.
    try {
        end = f.importer->read(f.absolutePath, from, sink);
        sink.finish();
    } catch (const std::bad_alloc &) {
        fail(QStringLiteral("out of memory while reading it; not read"));
        return;
    } catch (const std::exception &e) {
        fail(QStringLiteral("not read: %1").arg(QString::fromLocal8Bit(e.what())));
        return;
    }
    const int64_t tailLen = std::min<int64_t>(end.offset, kTailBytes);
    Statement upd = db.prepare(
        "UPDATE files SET run_id=?, importer=?, size=?, mtime=?, head_len=?, head_hash=?, "
        "consumed=?, lines=?, tail_len=?, tail_hash=?, pending_tail=?, same_as='', steps=?, folder_run=? WHERE id=?");
    if (const int64_t run = sink.fileRun(); run != 0)
        upd.bind(1, run);
    else
        upd.bindNull(1);
    upd.bind(2, f.importer->name())
        .bind(3, size)
        .bind(4, mtime)
        .bind(5, int64_t(headLen))
        .bind(6, hash)
        .bind(7, end.offset)
        .bind(8, end.line)
        .bind(9, tailLen)
        .bind(10, QString::fromLatin1(windowHash(f.absolutePath, end.offset - tailLen, tailLen)))
        .bind(11, int64_t(end.pendingTail ? 1 : 0))
        .bind(12, stepsText(end.steps))
        .bind(13, f.run)
        .bind(14, fileId);
    if (sink.failures > 0) {
        fail(sink.error);
        return;
    }
    if (!upd.exec()) {
        fail(upd.error());
        return;
    }
    if (!t.commit(&error)) {
        fail(error);
        return;
    }
    if (stepsChanged)
        *stepsChanged = stepsText(end.steps) != oldSteps;
    resume ? ++report.filesResumed : ++report.filesRead;
    report.pointsWritten += sink.points;
    report.problems += sink.problems;
}

// Files found to be copies of another rank's log: kept as such (same_as), with nothing of their own, all in
// one transaction (a commit per file would cost more than reading them).
void ingestCopies(
    Database &db, const std::vector<std::pair<const ScannedFile *, QString>> &copies, IngestReport &report)
{
    if (copies.empty())
        return;
    Transaction t(db);
    if (!t.isActive()) {
        if (db.isBusy())
            report.busy = true;
        else
            report.errors << QStringLiteral("rank copies: %1").arg(db.lastError());
        return;
    }
    // What the store holds of the files, in one query (a statement per file would cost more than the comparison).
    struct Row {
        int64_t id, size, mtime;
        QString sameAs, run;
    };
    QHash<QString, Row> rows;
    Statement q = db.prepare(
        "SELECT f.path, f.id, f.size, f.mtime, f.same_as, COALESCE(f.folder_run, r.name) FROM files f LEFT JOIN runs r "
        "ON r.id=f.run_id");
    while (q.next())
        rows.insert(q.text(0), {q.int64(1), q.int64(2), q.int64(3), q.text(4), q.text(5)});
    QString error;
    if (q.failed())
        error = q.error();
    q.reset();
    Statement ins = db.prepare("INSERT INTO files(path, run_id, importer, size, mtime, head_len, head_hash, consumed, "
                               "lines, tail_len, tail_hash, pending_tail, same_as) VALUES(?, (SELECT id FROM runs "
                               "WHERE name=?), ?, ?, ?, 0, '', ?, 0, 0, '', 0, ?)");
    Statement upd = db.prepare("UPDATE files SET run_id=(SELECT id FROM runs WHERE name=?), importer=?, size=?, "
                               "mtime=?, head_len=0, head_hash='', consumed=?, lines=0, tail_len=0, tail_hash='', "
                               "pending_tail=0, same_as=?, steps='' WHERE id=?");
    int read = 0;
    for (const auto &[f, sameAs] : copies) {
        if (!error.isEmpty())
            break;
        const auto row = rows.constFind(f->relativePath);
        if (row == rows.constEnd()) {
            if (!ins.bind(1, f->relativePath)
                     .bind(2, f->run)
                     .bind(3, f->importer->name())
                     .bind(4, int64_t(f->size))
                     .bind(5, int64_t(f->mtime))
                     .bind(6, int64_t(f->size))
                     .bind(7, sameAs)
                     .exec())
                error = ins.error();
            ++read;
            continue;
        }
        if (row->size == f->size && row->mtime == f->mtime && row->sameAs == sameAs && row->run == f->run) {
            ++report.filesUnchanged;
            continue;
        }
        // A copy that changed, or a file read before as a rank of its own: what it wrote goes first.
        if (!dropContributions(db, row->id, row->size != kReadAgain, &error))
            break;
        if (!upd.bind(1, f->run)
                 .bind(2, f->importer->name())
                 .bind(3, int64_t(f->size))
                 .bind(4, int64_t(f->mtime))
                 .bind(5, int64_t(f->size))
                 .bind(6, sameAs)
                 .bind(7, row->id)
                 .exec()) {
            error = upd.error();
            break;
        }
        ++read;
    }
    if (error.isEmpty() && !t.commit(&error))
        error = error.isEmpty() ? db.lastError() : error;
    if (!error.isEmpty()) {
        report.filesFailed += int(copies.size());
        report.errors << QStringLiteral("rank copies (%1 files): %2").arg(copies.size()).arg(error);
        return;
    }
    report.filesRead += read;
}

// Marks a stored file to be read again after this pass (kReadAgain), what it wrote dropped, and with it the
// points of the series it shares (their other files are marked too: dropPoints); false when the store does
// not hold it or it is marked already.
bool readAgainLater(Database &db, const QString &relativePath, IngestReport &report)
{
    Statement q = db.prepare("SELECT id, size FROM files WHERE path=?");
    if (!q.bind(1, relativePath).next() || q.int64(1) == kReadAgain)
        return false;
    const int64_t id = q.int64(0);
    q.reset();
    Transaction t(db);
    QString error;
    Statement mark = db.prepare("UPDATE files SET size=?, mtime=-1, consumed=0, lines=0, head_hash='' WHERE id=?");
    if (t.isActive() && dropContributions(db, id, true, &error) && mark.bind(1, kReadAgain).bind(2, id).exec()
        && t.commit(&error))
        return true;
    report.errors << QStringLiteral("%1: %2").arg(relativePath, error.isEmpty() ? db.lastError() : error);
    return false;
}

// Files the store holds that the folder no longer does: what they wrote goes, each in one transaction.
void dropDeletedFiles(Database &db, const FolderScan &scan, IngestReport &report)
{
    std::set<QString> present;
    for (const ScannedFile &f : scan.files)
        present.insert(f.relativePath);
    for (const auto &[path, why] : scan.unreadable)
        present.insert(path); // still there, only not readable now: what it wrote stays
    Statement all = db.prepare("SELECT id, path FROM files");
    std::vector<std::pair<int64_t, QString>> gone;
    while (all.next()) {
        if (!present.count(all.text(1)))
            gone.emplace_back(all.int64(0), all.text(1));
    }
    if (all.failed())
        report.errors << QStringLiteral("files of the store: %1").arg(all.error());
    all.reset();
    for (const auto &[id, path] : gone) {
        Transaction t(db);
        QString error;
        const bool ok = t.isActive() && dropContributions(db, id, true, &error)
            && execWithId(db, "DELETE FROM files WHERE id=?", id, &error) && t.commit(&error);
        if (ok)
            ++report.filesDeleted;
        else
            report.errors << QStringLiteral("%1 (deleted): %2").arg(path, error.isEmpty() ? db.lastError() : error);
    }
}

} // namespace

namespace {

QString writerPath(const QString &storePath)
{
    return storePath + QStringLiteral("-writer");
}

// Says who writes to the store while an ingest runs (for another fp8scope that finds it busy).
class WriterMark
{
public:
    explicit WriterMark(const QString &storePath)
        : m_path(writerPath(storePath))
    {
        QFile f(m_path);
        if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            f.write(QStringLiteral("%1\n%2 ingest (pid %1) since %3\n")
                        .arg(QCoreApplication::applicationPid())
                        .arg(QCoreApplication::applicationName().isEmpty() ? QStringLiteral("fp8scope")
                                                                           : QCoreApplication::applicationName(),
                            QDateTime::currentDateTime().toString(Qt::ISODate))
                        .toUtf8());
    }
    ~WriterMark() { QFile::remove(m_path); }

private:
    QString m_path;
};

} // namespace

QString readWriter(const QString &storePath)
{
    QFile f(writerPath(storePath));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    const QList<QByteArray> lines = f.read(4096).split('\n');
    bool ok = false;
    const pid_t pid = pid_t(lines.value(0).toLongLong(&ok));
    if (!ok || pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH))
        return {}; // a writer that is gone (killed) left its mark
    return QString::fromUtf8(lines.value(1)).trimmed();
}

IngestReport ingestFolder(Database &db, const QString &folder, const QString &storePath, const IngestProgress &progress)
{
    IngestReport report;
    {
        // Another fp8scope writing to the store (an ingest of the same folder): say who, and read nothing.
        Transaction probe(db);
        if (!probe.isActive()) {
            report.busy = db.isBusy();
            report.errors << (report.busy
                    ? describeStoreError(SQLITE_BUSY, QString(), storePath, folder, readWriter(storePath))
                    : describeStoreError(db.lastErrorCode(), db.lastError(), storePath, folder));
            return report;
        }
    }
    const WriterMark mark(storePath);
    const FolderScan scan = scanFolder(folder, {.findRankCopies = true});
    report.unrecognised = scan.unrecognised;
    report.unreadable = scan.unreadable;
    dropDeletedFiles(db, scan, report);
    std::set<QString> movedFrom;
    int done = 0;
    const int total = int(scan.files.size());
    bool stopped = false;
    std::vector<std::pair<const ScannedFile *, QString>> copied;
    // Logs are read in their streams' order (a resumed job's log after the one it resumed), each from where
    // the one before it in its stream left its steps.
    const LogStreams streams = orderLogStreams(scan);
    QHash<QString, QString> copyOf; // this pass's rank copies, to the file read in their place
    QHash<QString, QString> runOf; // each file's run
    for (const ScannedFile &f : scan.files)
        runOf.insert(f.relativePath, f.run);
    std::set<QString> stepsMoved; // logs whose steps end elsewhere than before this pass
    const auto linkOf = [&](const ScannedFile &f) {
        StreamLink link;
        link.before = streams.before.value(f.relativePath);
        link.beforeChanged = !link.before.isEmpty() && stepsMoved.count(link.before) > 0;
        link.before = copyOf.value(link.before, link.before);
        return link;
    };
    const auto read = [&](const ScannedFile &f) {
        const StreamLink link = linkOf(f);
        // The log before it in its stream grew: its steps end elsewhere, and this log's placed steps may move.
        // The series they share hold both logs' points, which cannot be told apart, so both are read again, in
        // order, after this pass (the earlier one's later steps must not replace this one's).
        if (link.beforeChanged && readAgainLater(db, f.relativePath, report))
            return;
        bool moved = false;
        ingestFile(db, f, scan, report, &movedFrom, link, &moved);
        if (moved)
            stepsMoved.insert(f.relativePath);
    };
    for (const ScannedFile *f : streams.order) {
        if (progress && !progress(done, total, f->relativePath)) {
            stopped = true;
            break;
        }
        ++done;
        // A copy's steps are those of the log it copies (its stream's next log starts from them).
        // A rank's log that repeats one read before it in its run (the scan compared them) is kept as its copy,
        // nothing of it stored (files.same_as), all in one transaction.
        if (!f->sameAs.isEmpty() && runOf.value(f->sameAs) == f->run) {
            copyOf.insert(f->relativePath, f->sameAs);
            if (stepsMoved.count(f->sameAs))
                stepsMoved.insert(f->relativePath);
            copied.emplace_back(f, f->sameAs);
        } else {
            read(*f);
        }
        if (report.busy) {
            stopped = true;
            break;
        }
    }
    if (!report.busy)
        ingestCopies(db, copied, report);
    // A rewrite or deletion can take series a file read earlier in this pass shared: read those again.
    if (!stopped) {
        std::set<QString> again;
        Statement marked = db.prepare("SELECT path FROM files WHERE size=?");
        marked.bind(1, kReadAgain);
        while (marked.next())
            again.insert(marked.text(0));
        marked.reset();
        for (const ScannedFile *f : streams.order) {
            if (again.count(f->relativePath))
                read(*f);
        }
    }
    if (report.busy) {
        report.errors << describeStoreError(SQLITE_BUSY, QString(), storePath, folder, readWriter(storePath));
        return report;
    }
    dropRunsLeftEmpty(db, movedFrom, &report);
    QString error;
    // The folder that is each run's, as the scan divided the folder (Run Settings write its fp8scope.json there).
    {
        Transaction t(db);
        Statement put = db.prepare("UPDATE runs SET folder=? WHERE name=? AND folder IS NOT ?1");
        for (auto it = scan.runOfFolder.cbegin(); it != scan.runOfFolder.cend() && t.isActive(); ++it) {
            if (!put.bind(1, it.key()).bind(2, it.value()).exec()) {
                report.errors << QStringLiteral("the runs' folders: %1").arg(put.error());
                break;
            }
            put.reset();
        }
        // Where the records of a run no folder is alone come from: the folder of the first file (by path) that
        // wrote one of its series, with the trailing '/' ("" for the opened folder).
        const char *const filesFolder
            = "(SELECT rtrim(f.path, replace(f.path, '/', '')) FROM series s JOIN series_files sf ON "
              "sf.series_id=s.id JOIN files f ON f.id=sf.file_id WHERE s.run_id=runs.id ORDER BY f.path LIMIT 1)";
        if (t.isActive()
            && !db.exec(QStringLiteral("UPDATE runs SET files_folder=%1 WHERE files_folder IS NOT %1")
                            .arg(QLatin1String(filesFolder))
                            .toUtf8()
                            .constData(),
                &error))
            report.errors << QStringLiteral("the runs' files: %1").arg(error);
        if (t.isActive() && !t.commit(&error))
            report.errors << QStringLiteral("the runs' folders: %1").arg(error);
        error.clear();
    }
    if (!inferRunsFromConfigs(db, &error))
        report.errors << QStringLiteral("run precision and recipe from configs: %1").arg(error);
    return report;
}

bool writeRecomputed(Database &db, int64_t runId, const DumpRecord &d, const RecomputedStats &byRecipe, QString *error)
{
    Transaction t(db);
    if (!t.isActive()) {
        *error = db.lastError();
        return false;
    }
    Statement run = db.prepare("SELECT name FROM runs WHERE id=?");
    run.bind(1, runId);
    if (!run.next()) {
        *error = run.failed() ? run.error() : QStringLiteral("no run %1").arg(runId);
        return false;
    }
    FileSink sink(db, 0, run.text(0));
    for (const auto &[recipe, stats] : byRecipe) {
        for (const auto &[stat, value] : stats)
            sink.point(
                sink.series({d.layer, d.tensor, stat, QStringLiteral("recomputed"), recipe}), d.step, value, NAN);
    }
    sink.finish();
    if (sink.failures > 0) {
        *error = sink.error;
        return false;
    }
    // What the triage read has changed (schema version 6).
    return db.exec("UPDATE meta SET value=value+1 WHERE key='data_generation'", error) && t.commit(error);
}

} // namespace fp8scope
