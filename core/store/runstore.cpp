#include "runstore.h"

#include "pointchunks.h"

#include "core/importers/folderscanner.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>

#include <algorithm>
#include <cmath>
#include <future>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace fp8scope {

namespace {

constexpr int kSchemaVersion = 3;
using pointchunks::kChunkPoints;

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

QString seriesCacheKey(int64_t run, const SeriesKey &k)
{
    return QString::number(run) + QChar(0x1f) + k.layer + QChar(0x1f) + k.tensor + QChar(0x1f) + k.stat + QChar(0x1f)
        + k.source + QChar(0x1f) + k.recipe;
}

QByteArray headHash(const QString &path, qint64 len)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QCryptographicHash::hash(f.read(len), QCryptographicHash::Sha256).toHex();
}

// Writes one file's records inside the ingest transaction.
class FileSink : public IngestSink
{
public:
    // `scan` names the runs of the folders that useRunFolder() finds (none without it).
    FileSink(Database &db, int64_t fileId, const QString &defaultRun, const FolderScan *scan = nullptr,
        const QString &fileDir = QString())
        : m_db(db)
        , m_fileId(fileId)
        , m_scan(scan)
        , m_fileDir(fileDir)
    {
        m_findSeries = db.prepare(
            "SELECT id FROM series WHERE run_id=? AND layer=? AND tensor=? AND stat=? AND source=? AND recipe=?");
        m_insertSeries
            = db.prepare("INSERT INTO series(run_id, layer, tensor, stat, source, recipe) VALUES(?,?,?,?,?,?)");
        m_defaultRun = runId(defaultRun);
        m_run = m_defaultRun;
    }

    int64_t runId(const QString &name)
    {
        const auto it = m_runs.find(name);
        if (it != m_runs.end())
            return it.value();
        Statement ins = m_db.prepare("INSERT OR IGNORE INTO runs(name) VALUES(?)");
        ins.bind(1, name).exec();
        Statement sel = m_db.prepare("SELECT id FROM runs WHERE name=?");
        sel.bind(1, name);
        const int64_t id = sel.next() ? sel.int64(0) : 0;
        m_runs.insert(name, id);
        return id;
    }

    void useRun(const QString &name) override { m_run = name.isEmpty() ? m_defaultRun : runId(name); }

    bool useRunFolder(const QString &folder) override
    {
        if (!m_scan)
            return false;
        const auto it = m_scan->runOfFolder.find(m_fileDir.isEmpty() ? folder : m_fileDir + QLatin1Char('/') + folder);
        if (it == m_scan->runOfFolder.end())
            return false;
        m_run = runId(it.value());
        return true;
    }

    // The handle is a slot of this sink (dense, so a point finds its series' buffer without a lookup).
    int64_t series(const SeriesKey &key) override
    {
        const QString ck = seriesCacheKey(m_run, key);
        auto it = m_series.find(ck);
        if (it != m_series.end())
            return it.value();
        m_findSeries.bind(1, m_run)
            .bind(2, key.layer)
            .bind(3, key.tensor)
            .bind(4, key.stat)
            .bind(5, key.source)
            .bind(6, key.recipe);
        int64_t id = 0;
        if (m_findSeries.next()) {
            id = m_findSeries.int64(0);
        } else {
            m_insertSeries.bind(1, m_run)
                .bind(2, key.layer)
                .bind(3, key.tensor)
                .bind(4, key.stat)
                .bind(5, key.source)
                .bind(6, key.recipe);
            if (!m_insertSeries.exec())
                ++failures;
            id = m_db.lastInsertId();
        }
        m_findSeries.reset();
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
                if (slot.points.empty())
                    continue;
                if (!slot.sorted)
                    std::stable_sort(slot.points.begin(), slot.points.end(),
                        [](const pointchunks::Point &a, const pointchunks::Point &b) { return a.step < b.step; });
                c.points += int64_t(slot.points.size());
                if (!m_chunks.merge(slot.id, slot.points))
                    ++c.failures;
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
        for (size_t i = 0; i < c.batch.size(); ++i)
            m_slots[i].spare = std::move(c.batch[i].points);
    }

    void finish()
    {
        flushPoints();
        waitForWriter();
    }

    ~FileSink() override { waitForWriter(); }

    void eval(const EvalRecord &e) override
    {
        Statement s
            = m_db.prepare("INSERT OR REPLACE INTO evals(run_id, file_id, task, metric, inference, value, stderr) "
                           "VALUES(?,?,?,?,?,?,?)");
        s.bind(1, m_run)
            .bind(2, m_fileId)
            .bind(3, e.task)
            .bind(4, e.metric)
            .bind(5, e.inference)
            .bind(6, e.value)
            .bind(7, e.stderrValue);
        s.exec();
    }

    void config(const QString &key, const QString &value) override
    {
        if (!m_insertConfig.isValid())
            m_insertConfig
                = m_db.prepare("INSERT OR REPLACE INTO configs(run_id, file_id, key, value) VALUES(?,?,?,?)");
        m_insertConfig.bind(1, m_run).bind(2, m_fileId).bind(3, key).bind(4, value);
        m_insertConfig.exec();
    }

    void runInfo(const QString &field, const QString &value) override
    {
        static const std::map<QString, const char *> columns {
            {QStringLiteral("display_name"), "UPDATE runs SET display_name=? WHERE id=?"},
            {QStringLiteral("precision"), "UPDATE runs SET precision=? WHERE id=?"},
            {QStringLiteral("recipe"), "UPDATE runs SET recipe=? WHERE id=?"},
            {QStringLiteral("baseline"), "UPDATE runs SET baseline=? WHERE id=?"},
            {QStringLiteral("inference_precision"), "UPDATE runs SET inference_precision=? WHERE id=?"},
            {QStringLiteral("notes"), "UPDATE runs SET notes=? WHERE id=?"}};
        const auto it = columns.find(field);
        if (it == columns.end())
            return;
        Statement s = m_db.prepare(it->second);
        s.bind(1, value).bind(2, m_run).exec();
    }

    void dump(const DumpRecord &d) override
    {
        Statement s
            = m_db.prepare("INSERT OR REPLACE INTO dumps(run_id, file_id, dataset, layer, tensor, step, dtype, shape) "
                           "VALUES(?,?,?,?,?,?,?,?)");
        s.bind(1, m_run)
            .bind(2, m_fileId)
            .bind(3, d.dataset)
            .bind(4, d.layer)
            .bind(5, d.tensor)
            .bind(6, d.step)
            .bind(7, d.dtype)
            .bind(8, d.shape)
            .exec();
    }

    void problem(int64_t line, int64_t offset, const QString &message) override
    {
        // A garbage file can report a problem on every line: one prepared statement for them all.
        if (!m_insertProblem.isValid())
            m_insertProblem = m_db.prepare("INSERT INTO problems(file_id, line, offset, message) VALUES(?,?,?,?)");
        m_insertProblem.bind(1, m_fileId).bind(2, line).bind(3, offset).bind(4, message).exec();
        ++problems;
    }

    int64_t points = 0;
    int64_t failures = 0;
    int problems = 0;

private:
    Database &m_db;
    int64_t m_fileId;
    const FolderScan *m_scan;
    QString m_fileDir; // relative to the opened folder
    int64_t m_defaultRun = 0;
    int64_t m_run = 0;
    QHash<QString, int64_t> m_runs;
    QHash<QString, int64_t> m_series;
    Statement m_findSeries, m_insertSeries, m_insertConfig, m_insertProblem;
    pointchunks::Writer m_chunks {m_db};
    struct Slot {
        int64_t id; // series id in the store
        std::vector<pointchunks::Point> points; // buffered until the next flush
        bool sorted;
        std::vector<pointchunks::Point> spare; // the buffer being written, back once it is
    };
    struct WriteCount {
        int64_t points = 0;
        int64_t failures = 0;
        std::vector<Slot> batch;
    };
    // Half a million points a batch: two batches in flight stay well under the memory budget.
    static constexpr size_t kBatch = 1 << 19;
    std::vector<Slot> m_slots;
    size_t m_buffered = 0;
    std::future<WriteCount> m_writer;
};

} // namespace

bool layerLess(const QString &a, const QString &b)
{
    qsizetype i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a.at(i).isDigit() && b.at(j).isDigit()) {
            qsizetype ie = i, je = j;
            while (ie < a.size() && a.at(ie).isDigit())
                ++ie;
            while (je < b.size() && b.at(je).isDigit())
                ++je;
            const qulonglong x = a.mid(i, ie - i).toULongLong();
            const qulonglong y = b.mid(j, je - j).toULongLong();
            if (x != y)
                return x < y;
            i = ie;
            j = je;
        } else {
            if (a.at(i) != b.at(j))
                return a.at(i) < b.at(j);
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

QString RunStore::storePathFor(const QString &folder)
{
    const QString inside = QDir(folder).absoluteFilePath(QStringLiteral(".fp8scope"));
    if (QDir().mkpath(inside) && QFileInfo(inside).isWritable())
        return inside + QStringLiteral("/store.sqlite");
    const QString key = QString::fromLatin1(
        QCryptographicHash::hash(QDir(folder).absolutePath().toUtf8(), QCryptographicHash::Sha1).toHex().left(16));
    const QString cache
        = QStandardPaths::writableLocation(QStandardPaths::CacheLocation) + QStringLiteral("/stores/") + key;
    QDir().mkpath(cache);
    return cache + QStringLiteral("/store.sqlite");
}

bool RunStore::open(const QString &folder, QString *error)
{
    if (!QFileInfo(folder).isDir()) {
        *error = QStringLiteral("%1: not a folder").arg(folder);
        return false;
    }
    return openFile(storePathFor(folder), folder, error);
}

bool RunStore::openFile(const QString &storePath, const QString &folder, QString *error)
{
    m_path = storePath;
    m_folder = QDir(folder).absolutePath();
    return m_db.open(storePath, error) && migrate(error);
}

bool RunStore::migrate(QString *error)
{
    if (!m_db.exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)", error))
        return false;
    Statement s = m_db.prepare("SELECT value FROM meta WHERE key='schema_version'");
    const int version = s.next() ? s.text(0).toInt() : 0;
    s.reset(); // a pending read would block the DROP TABLE of a migration
    if (version > kSchemaVersion) {
        *error = QStringLiteral("%1: store schema %2 is newer than this fp8scope (%3)")
                     .arg(m_path)
                     .arg(version)
                     .arg(kSchemaVersion);
        return false;
    }
    if (version == kSchemaVersion)
        return true;
    Transaction t(m_db);
    // Migrations run in order; version 1 is the first schema.
    if (version < 1 && !m_db.exec(kSchemaV1, error))
        return false;
    if (version < 2 && !m_db.exec(kSchemaV2, error))
        return false;
    if (version < 3) {
        // Every series' points into chunks, then the view in place of the table.
        if (!m_db.exec(kSchemaV3Create, error))
            return false;
        Statement all = m_db.prepare("SELECT series_id, step, value, wall_time FROM points ORDER BY series_id, step");
        pointchunks::Writer writer(m_db);
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
                    *error = m_db.lastError();
                    return false;
                }
                series = all.int64(0);
            }
            group.push_back({all.int64(1), all.real(2), all.real(3)});
        }
        all.reset();
        if (!flush() || !m_db.exec(kSchemaV3Finish, error)) {
            if (error->isEmpty())
                *error = m_db.lastError();
            return false;
        }
    }
    Statement set = m_db.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)");
    set.bind(1, QString::number(kSchemaVersion)).exec();
    return t.commit(error);
}

IngestReport RunStore::ingest(const Progress &progress)
{
    IngestReport report;
    const FolderScan scan = scanFolder(m_folder);
    report.unrecognised = scan.unrecognised;
    std::set<QString> movedFrom;
    int done = 0;
    const int total = int(scan.files.size());
    for (const ScannedFile &f : scan.files) {
        if (progress && !progress(done, total, f.relativePath))
            break;
        ++done;
        const QFileInfo info(f.absolutePath);
        const int64_t size = info.size();
        const int64_t mtime = info.lastModified().toMSecsSinceEpoch();
        Statement q = m_db.prepare("SELECT f.id, f.size, f.mtime, f.head_len, f.head_hash, f.consumed, f.lines, "
                                   "f.importer, r.name FROM files f LEFT JOIN runs r ON r.id=f.run_id WHERE f.path=?");
        q.bind(1, f.relativePath);
        int64_t fileId = 0;
        ReadPosition from;
        bool resume = false;
        if (q.next()) {
            fileId = q.int64(0);
            const int64_t oldSize = q.int64(1);
            // A file now in another run (the folder's runs were divided differently when it was read) is
            // read again, as a rewritten file.
            const bool sameRun = q.text(8) == f.run;
            if (!sameRun)
                movedFrom.insert(q.text(8));
            if (sameRun && oldSize == size && q.int64(2) == mtime && q.text(7) == f.importer->name()) {
                ++report.filesUnchanged;
                continue;
            }
            resume = sameRun && f.importer->resumable() && size >= oldSize && q.text(7) == f.importer->name()
                && headHash(f.absolutePath, q.int64(3)) == q.text(4).toLatin1();
            if (resume)
                from = {q.int64(5), q.int64(6)};
        }
        q.reset();
        Transaction t(m_db);
        if (!t.isActive()) {
            ++report.filesFailed;
            continue;
        }
        const qint64 headLen = std::min<qint64>(size, kHeadBytes);
        const QString hash = QString::fromLatin1(headHash(f.absolutePath, headLen));
        if (fileId == 0) {
            Statement ins
                = m_db.prepare("INSERT INTO files(path, importer, size, mtime, head_len, head_hash, consumed, lines) "
                               "VALUES(?,?,0,0,0,'',0,0)");
            ins.bind(1, f.relativePath).bind(2, f.importer->name()).exec();
            fileId = m_db.lastInsertId();
        } else if (!resume) {
            // A rewritten file: what it contributed before, other than points (re-keyed below), goes.
            for (const char *sql : {"DELETE FROM problems WHERE file_id=?", "DELETE FROM evals WHERE file_id=?",
                     "DELETE FROM configs WHERE file_id=?", "DELETE FROM dumps WHERE file_id=?"}) {
                Statement d = m_db.prepare(sql);
                d.bind(1, fileId).exec();
            }
        } else {
            // The last line may have been reported as incomplete; it is read again.
            Statement d = m_db.prepare("DELETE FROM problems WHERE file_id=? AND line>?");
            d.bind(1, fileId).bind(2, from.line).exec();
        }
        const qsizetype slash = f.relativePath.lastIndexOf(QLatin1Char('/'));
        FileSink sink(m_db, fileId, f.run, &scan, slash < 0 ? QString() : f.relativePath.left(slash));
        const ReadPosition end = f.importer->read(f.absolutePath, from, sink);
        sink.finish();
        Statement upd = m_db.prepare("UPDATE files SET run_id=?, importer=?, size=?, mtime=?, head_len=?, head_hash=?, "
                                     "consumed=?, lines=? WHERE id=?");
        upd.bind(1, sink.runId(f.run))
            .bind(2, f.importer->name())
            .bind(3, size)
            .bind(4, mtime)
            .bind(5, int64_t(headLen))
            .bind(6, hash)
            .bind(7, end.offset)
            .bind(8, end.line)
            .bind(9, fileId);
        QString error;
        if (sink.failures > 0 || !upd.exec() || !t.commit(&error)) {
            ++report.filesFailed;
            continue;
        }
        resume ? ++report.filesResumed : ++report.filesRead;
        report.pointsWritten += sink.points;
        report.problems += sink.problems;
    }
    dropRunsLeftEmpty(movedFrom);
    inferFromConfigs();
    return report;
}

void RunStore::dropRunsLeftEmpty(const std::set<QString> &names)
{
    // A run whose files all went to other runs held what those files said, mixed: it goes, with all of it.
    for (const QString &name : names) {
        Statement find = m_db.prepare(
            "SELECT id FROM runs WHERE name=? AND NOT EXISTS (SELECT 1 FROM files WHERE run_id=runs.id)");
        find.bind(1, name);
        if (!find.next())
            continue;
        const int64_t id = find.int64(0);
        find.reset();
        Transaction t(m_db);
        for (const char *sql : {"DELETE FROM point_chunks WHERE series_id IN (SELECT id FROM series WHERE run_id=?)",
                 "DELETE FROM series WHERE run_id=?", "DELETE FROM evals WHERE run_id=?",
                 "DELETE FROM configs WHERE run_id=?", "DELETE FROM dumps WHERE run_id=?",
                 "DELETE FROM runs WHERE id=?"}) {
            Statement d = m_db.prepare(sql);
            d.bind(1, id).exec();
        }
        t.commit();
    }
}

namespace {

// The scaling recipe a config value names, in fp8scope's recipe names where one fits: Transformer Engine's
// recipe classes (`transformer_engine.common.recipe.MXFP8BlockScaling`), Megatron's `--fp8-recipe` and
// NeMo's `fp8_recipe` (delayed, tensorwise, mxfp8, blockwise). Another value is kept as it is written.
QString recipeNamed(const QString &value)
{
    const QString v = value.section(QLatin1Char('.'), -1).toLower();
    if (v.isEmpty() || v == QLatin1String("null") || v == QLatin1String("none"))
        return {};
    if (v.contains(QLatin1String("delayed")))
        return QStringLiteral("delayed");
    if (v.contains(QLatin1String("currentscaling")) || v == QLatin1String("tensorwise")
        || v == QLatin1String("current"))
        return QStringLiteral("current");
    if (v.contains(QLatin1String("mxfp8")))
        return QStringLiteral("mxfp8");
    if (v.contains(QLatin1String("nvfp4")))
        return QStringLiteral("nvfp4");
    // Float8BlockScaling: 1x128 blocks for activations and gradients, 128x128 for weights.
    if (v.contains(QLatin1String("float8blockscaling")) || v == QLatin1String("blockwise"))
        return QStringLiteral("blockwise");
    return value.section(QLatin1Char('.'), -1);
}

} // namespace

QString tensorRecipe(const QString &runRecipe, const QString &tensor)
{
    if (runRecipe != QLatin1String("blockwise"))
        return runRecipe;
    return tensor.startsWith(QLatin1String("weight")) ? QStringLiteral("block128x128") : QStringLiteral("block1x128");
}

void RunStore::inferFromConfigs()
{
    // Runs without a manifest: the training precision and scaling recipe from the flags their configs
    // record. An FP8 run whose config names no recipe but sets an amax history ran delayed scaling,
    // Megatron's and NeMo's default.
    Statement runs = m_db.prepare("SELECT id, COALESCE(precision, ''), COALESCE(recipe, '') FROM runs WHERE "
                                  "precision IS NULL OR precision='' OR recipe IS NULL OR recipe=''");
    std::vector<std::tuple<int64_t, QString, QString>> todo;
    while (runs.next())
        todo.emplace_back(runs.int64(0), runs.text(1), runs.text(2));
    for (const auto &[id, storedPrecision, storedRecipe] : todo) {
        QString precision;
        QString recipe;
        bool amaxHistory = false;
        for (const auto &[key, value] : configs(id)) {
            const QString k = key.section(QLatin1Char('.'), -1).toLower();
            const bool on
                = value == QLatin1String("true") || value == QLatin1String("True") || value == QLatin1String("1");
            if ((k.contains(QLatin1String("fp8-format")) || k.contains(QLatin1String("fp8_format"))
                    || k == QLatin1String("--fp8"))
                && !value.isEmpty() && value != QLatin1String("null") && value != QLatin1String("false"))
                precision = QStringLiteral("fp8");
            else if (precision.isEmpty() && (k == QLatin1String("--bf16") || k == QLatin1String("bf16")) && on)
                precision = QStringLiteral("bf16");
            else if (precision.isEmpty() && (k == QLatin1String("--fp16") || k == QLatin1String("fp16")) && on)
                precision = QStringLiteral("fp16");
            if (k == QLatin1String("--fp8-recipe") || k == QLatin1String("fp8_recipe"))
                recipe = recipeNamed(value);
            if (k.contains(QLatin1String("amax-history-len")) || k.contains(QLatin1String("amax_history_len")))
                amaxHistory = true;
        }
        const QString runPrecision = storedPrecision.isEmpty() ? precision : storedPrecision;
        if (recipe.isEmpty() && amaxHistory && runPrecision == QLatin1String("fp8"))
            recipe = QStringLiteral("delayed");
        if (storedPrecision.isEmpty() && !precision.isEmpty()) {
            Statement u = m_db.prepare("UPDATE runs SET precision=? WHERE id=?");
            u.bind(1, precision).bind(2, id).exec();
        }
        if (storedRecipe.isEmpty() && !recipe.isEmpty()) {
            Statement u = m_db.prepare("UPDATE runs SET recipe=? WHERE id=?");
            u.bind(1, recipe).bind(2, id).exec();
        }
    }
}

std::vector<RunInfo> RunStore::runs() const
{
    std::vector<RunInfo> out;
    Statement s = const_cast<Database &>(m_db).prepare(
        "SELECT r.id, r.name, r.display_name, r.precision, r.recipe, r.baseline, r.inference_precision, r.notes, "
        "(SELECT COUNT(*) FROM series WHERE run_id=r.id), "
        "(SELECT COALESCE(SUM(c.n), 0) FROM point_chunks c JOIN series s ON c.series_id=s.id WHERE s.run_id=r.id) "
        "FROM runs r ORDER BY r.name");
    while (s.next())
        out.push_back({s.int64(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6), s.text(7),
            s.int64(8), s.int64(9)});
    return out;
}

std::optional<RunInfo> RunStore::run(const QString &name) const
{
    for (const RunInfo &r : runs()) {
        if (r.name == name || r.displayName == name)
            return r;
    }
    return std::nullopt;
}

std::vector<SeriesInfo> RunStore::series(int64_t runId) const
{
    return findSeries(runId, {});
}

std::vector<SeriesInfo> RunStore::findSeries(int64_t runId, const SeriesKey &key) const
{
    std::vector<SeriesInfo> out;
    Statement s = const_cast<Database &>(m_db).prepare(
        "SELECT s.id, s.layer, s.tensor, s.stat, s.source, s.recipe, COALESCE(SUM(c.n), 0), MIN(c.first_step), "
        "MAX(c.last_step) FROM series s LEFT JOIN point_chunks c ON c.series_id=s.id WHERE s.run_id=?1 "
        "AND (?2='' OR s.layer=?2) AND (?3='' OR s.tensor=?3) AND (?4='' OR s.stat=?4) AND (?5='' OR s.source=?5) "
        "AND (?6='' OR s.recipe=?6) GROUP BY s.id ORDER BY s.stat, s.tensor, s.layer, s.source");
    s.bind(1, runId).bind(2, key.layer).bind(3, key.tensor).bind(4, key.stat).bind(5, key.source).bind(6, key.recipe);
    while (s.next())
        out.push_back({s.int64(0), runId, {s.text(1), s.text(2), s.text(3), s.text(4), s.text(5)}, s.int64(6),
            s.int64(7), s.int64(8)});
    std::stable_sort(out.begin(), out.end(), [](const SeriesInfo &a, const SeriesInfo &b) {
        if (a.key.stat != b.key.stat || a.key.tensor != b.key.tensor)
            return false;
        return layerLess(a.key.layer, b.key.layer);
    });
    return out;
}

std::vector<SeriesInfo> RunStore::seriesAt(int64_t runId, const QString &layer, const QString &tensor) const
{
    std::vector<SeriesInfo> out;
    Statement s = const_cast<Database &>(m_db).prepare("SELECT id, stat, source, recipe FROM series WHERE run_id=? AND "
                                                       "layer=? AND tensor=? ORDER BY stat, source, recipe");
    s.bind(1, runId).bind(2, layer).bind(3, tensor);
    while (s.next())
        out.push_back({s.int64(0), runId, {layer, tensor, s.text(1), s.text(2), s.text(3)}, 0, 0, 0});
    return out;
}

std::optional<SeriesPoint> RunStore::valueAt(int64_t seriesId, int64_t step) const
{
    auto &db = const_cast<Database &>(m_db);
    Statement s = db.prepare(
        "SELECT data FROM point_chunks WHERE series_id=? AND first_step<=? ORDER BY first_step DESC LIMIT 1");
    s.bind(1, seriesId).bind(2, step);
    bool before = true;
    if (!s.next()) {
        // Every point lies after `step`: the first one.
        s = db.prepare("SELECT data FROM point_chunks WHERE series_id=? ORDER BY first_step LIMIT 1");
        s.bind(1, seriesId);
        if (!s.next())
            return std::nullopt;
        before = false;
    }
    std::vector<pointchunks::Point> chunk;
    if (!pointchunks::decode(s.utf8(0), &chunk) || chunk.empty())
        return std::nullopt;
    const pointchunks::Point *p = &chunk.front();
    if (before) {
        for (const auto &q : chunk) {
            if (q.step <= step)
                p = &q;
        }
    }
    return SeriesPoint {p->step, p->step, p->value, p->value, p->value, 1};
}

std::vector<SeriesPoint> RunStore::points(int64_t seriesId, int64_t from, int64_t to, int maxPoints) const
{
    std::vector<SeriesPoint> out;
    auto &db = const_cast<Database &>(m_db);
    if (from > to)
        return out;
    // Chunks do not overlap: those meeting [from, to] start at the last chunk starting at or before `from`.
    const int64_t start = pointchunks::firstChunkFor(db, seriesId, from);
    // How many points the range holds, from the chunk counts (exact but for the two edge chunks).
    Statement count = db.prepare("SELECT COALESCE(SUM(n), 0), MIN(first_step), MAX(last_step) FROM point_chunks "
                                 "WHERE series_id=? AND first_step BETWEEN ? AND ? AND last_step>=?");
    count.bind(1, seriesId).bind(2, start).bind(3, to).bind(4, from);
    count.next();
    const int64_t approx = count.int64(0);
    if (approx == 0)
        return out;
    if (maxPoints <= 0 || approx <= maxPoints) {
        // approx counts whole edge chunks, so it bounds the points in range: they all fit.
        std::vector<pointchunks::Point> pts;
        pointchunks::read(db, seriesId, from, to, &pts);
        out.reserve(pts.size());
        for (const auto &p : pts)
            out.push_back({p.step, p.step, p.value, p.value, p.value, 1});
        return out;
    }
    const int64_t lo = std::max(from, count.int64(1));
    const int64_t hi = std::min(to, count.int64(2));
    const double width = double(hi - lo + 1) / double(maxPoints);
    auto bucketOf = [&](int64_t step) { return std::min<int64_t>(maxPoints - 1, int64_t(double(step - lo) / width)); };
    std::vector<SeriesPoint> buckets(size_t(maxPoints), SeriesPoint {0, 0, NAN, NAN, NAN, 0});
    auto add = [&](int64_t first, int64_t last, double mn, double mx, int64_t n) {
        SeriesPoint &b = buckets[size_t(bucketOf(first))];
        if (b.count == 0) {
            b.step = first;
            b.value = mn;
        }
        b.lastStep = std::max(b.lastStep, last);
        b.min = std::isnan(b.min) ? mn : (std::isnan(mn) ? b.min : std::min(b.min, mn));
        b.max = std::isnan(b.max) ? mx : (std::isnan(mx) ? b.max : std::max(b.max, mx));
        b.count += n;
    };
    std::vector<pointchunks::Point> pts;
    auto addPoints = [&] {
        for (const auto &p : pts) {
            if (p.step >= from && p.step <= to)
                add(p.step, p.step, p.value, p.value, 1);
        }
    };
    if (approx / maxPoints >= 2 * kChunkPoints) {
        // Many points per bucket: chunks inside the range by their summaries (the covering index, no data;
        // a chunk spans at most half a bucket and counts in the bucket where it starts), the two edge chunks
        // point by point.
        Statement sums = db.prepare("SELECT first_step, last_step, n, min, max FROM point_chunks "
                                    "WHERE series_id=? AND first_step BETWEEN ? AND ? AND last_step>=?");
        sums.bind(1, seriesId).bind(2, start).bind(3, to).bind(4, from);
        std::vector<int64_t> edges;
        while (sums.next()) {
            if (sums.int64(0) >= from && sums.int64(1) <= to)
                add(sums.int64(0), sums.int64(1), sums.real(3), sums.real(4), sums.int64(2));
            else
                edges.push_back(sums.int64(0));
        }
        Statement edge = db.prepare("SELECT data FROM point_chunks WHERE series_id=? AND first_step=?");
        for (int64_t first : edges) {
            edge.bind(1, seriesId).bind(2, first);
            pts.clear();
            if (edge.next())
                pointchunks::decode(edge.utf8(0), &pts);
            edge.reset();
            addPoints();
        }
    } else {
        pointchunks::read(db, seriesId, from, to, &pts);
        addPoints();
    }
    for (SeriesPoint &b : buckets) {
        if (b.count > 0) {
            b.value = b.min;
            out.push_back(b);
        }
    }
    return out;
}

Heatmap RunStore::heatmap(
    int64_t runId, const QString &stat, const QString &tensor, const QString &source, const QString &recipe) const
{
    Heatmap h;
    auto &db = const_cast<Database &>(m_db);
    QString src = source;
    if (src.isEmpty()) {
        // Logged statistics first: recomputed ones cover a few dump steps.
        Statement first = db.prepare("SELECT source FROM series WHERE run_id=? AND stat=? AND tensor=? "
                                     "ORDER BY source='recomputed', source LIMIT 1");
        first.bind(1, runId).bind(2, stat).bind(3, tensor);
        if (first.next())
            src = first.text(0);
    }
    // One recipe: a layer recomputed under several has a series for each, and rows must not mix them.
    Statement recipes = db.prepare("SELECT recipe, COUNT(*) FROM series WHERE run_id=? AND stat=? AND tensor=? AND "
                                   "source=? AND layer<>'' GROUP BY recipe ORDER BY COUNT(*) DESC, recipe");
    recipes.bind(1, runId).bind(2, stat).bind(3, tensor).bind(4, src);
    while (recipes.next())
        h.recipes << recipes.text(0);
    QString runRecipe;
    Statement own = db.prepare("SELECT COALESCE(recipe, '') FROM runs WHERE id=?");
    own.bind(1, runId);
    if (own.next())
        runRecipe = tensorRecipe(own.text(0), tensor);
    h.source = src;
    h.recipe = h.recipes.contains(recipe) ? recipe
        : h.recipes.contains(runRecipe)   ? runRecipe
        : h.recipes.isEmpty()             ? QString()
                                          : h.recipes.front();
    Statement ids = db.prepare(
        "SELECT id, layer FROM series WHERE run_id=? AND stat=? AND tensor=? AND source=? AND recipe=? AND layer<>''");
    ids.bind(1, runId).bind(2, stat).bind(3, tensor).bind(4, src).bind(5, h.recipe);
    std::vector<std::pair<QString, int64_t>> layerSeries;
    while (ids.next())
        layerSeries.emplace_back(ids.text(1), ids.int64(0));
    std::sort(layerSeries.begin(), layerSeries.end(),
        [](const auto &a, const auto &b) { return layerLess(a.first, b.first); });
    std::vector<std::vector<std::pair<int64_t, double>>> rows(layerSeries.size());
    Statement chunks = db.prepare("SELECT data FROM point_chunks WHERE series_id=? ORDER BY first_step");
    std::vector<int64_t> steps;
    std::vector<pointchunks::Point> pts;
    for (size_t i = 0; i < layerSeries.size(); ++i) {
        h.layers << layerSeries[i].first;
        chunks.bind(1, layerSeries[i].second);
        while (chunks.next()) {
            pts.clear();
            pointchunks::decode(chunks.utf8(0), &pts);
            for (const auto &p : pts) {
                rows[i].emplace_back(p.step, p.value);
                steps.push_back(p.step);
            }
        }
        chunks.reset();
    }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    h.steps = std::move(steps);
    h.values.assign(size_t(h.layers.size()) * h.steps.size(), NAN);
    for (size_t i = 0; i < rows.size(); ++i) {
        size_t col = 0;
        for (const auto &[step, value] : rows[i]) {
            while (h.steps[col] < step)
                ++col; // both sorted
            h.values[i * h.steps.size() + col] = value;
        }
    }
    return h;
}

std::vector<EvalRecord> RunStore::evals(int64_t runId) const
{
    std::vector<EvalRecord> out;
    Statement s = const_cast<Database &>(m_db).prepare(
        "SELECT task, metric, value, stderr, inference FROM evals WHERE run_id=? ORDER BY task, metric, inference");
    s.bind(1, runId);
    while (s.next())
        out.push_back({s.text(0), s.text(1), s.real(2), s.real(3), s.text(4)});
    return out;
}

std::vector<std::pair<QString, QString>> RunStore::configs(int64_t runId) const
{
    std::vector<std::pair<QString, QString>> out;
    Statement s = const_cast<Database &>(m_db).prepare("SELECT key, value FROM configs WHERE run_id=? ORDER BY key");
    s.bind(1, runId);
    while (s.next())
        out.emplace_back(s.text(0), s.text(1));
    return out;
}

std::vector<ProblemRecord> RunStore::problems() const
{
    std::vector<ProblemRecord> out;
    Statement s = const_cast<Database &>(m_db).prepare("SELECT f.path, p.line, p.offset, p.message FROM problems p "
                                                       "JOIN files f ON f.id=p.file_id ORDER BY f.path, p.line");
    while (s.next())
        out.push_back({s.text(0), s.int64(1), s.isNull(2) ? -1 : s.int64(2), s.text(3)});
    return out;
}

std::vector<std::pair<QString, DumpRecord>> RunStore::dumps(int64_t runId) const
{
    std::vector<std::pair<QString, DumpRecord>> out;
    Statement s = const_cast<Database &>(m_db).prepare("SELECT f.path, d.dataset, d.layer, d.tensor, d.step, d.dtype, "
                                                       "d.shape FROM dumps d JOIN files f ON f.id=d.file_id "
                                                       "WHERE d.run_id=? ORDER BY d.step, d.layer, d.tensor");
    s.bind(1, runId);
    while (s.next())
        out.emplace_back(s.text(0), DumpRecord {s.text(1), s.text(2), s.text(3), s.int64(4), s.text(5), s.text(6)});
    return out;
}

bool RunStore::storeRecomputed(int64_t runId, const DumpRecord &d, const QString &recipe,
    const std::vector<std::pair<QString, double>> &stats, QString *error)
{
    Transaction t(m_db);
    Statement run = m_db.prepare("SELECT name FROM runs WHERE id=?");
    run.bind(1, runId);
    if (!run.next()) {
        *error = QStringLiteral("no run %1").arg(runId);
        return false;
    }
    FileSink sink(m_db, 0, run.text(0));
    for (const auto &[stat, value] : stats)
        sink.point(sink.series({d.layer, d.tensor, stat, QStringLiteral("recomputed"), recipe}), d.step, value, NAN);
    sink.finish();
    return sink.failures == 0 && t.commit(error);
}

} // namespace fp8scope
