#include "runstore.h"

#include "core/formats/expertnames.h"
#include "pointchunks.h"
#include "schema.h"

#include <sqlite3.h>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QStandardPaths>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

namespace fp8scope {

using pointchunks::kChunkPoints;

namespace {

// A run from the first seventeen columns of a row: id, name, display_name, precision, recipe, baseline,
// inference_precision, notes, loss_gap_bar, parent, inference_checkpoint, inference_reference, manifest,
// manifest_key, folder, files_folder, run_group.
RunInfo runFromRow(const Statement &s)
{
    return {.id = s.int64(0),
        .name = s.text(1),
        .displayName = s.text(2),
        .precision = s.text(3),
        .recipe = s.text(4),
        .baseline = s.text(5),
        .inferencePrecision = s.text(6),
        .notes = s.text(7),
        .lossGapBar = s.text(8),
        .parent = s.text(9),
        .inferenceCheckpoint = s.text(10),
        .inferenceReference = s.text(11),
        .manifest = s.text(12),
        .manifestKey = s.text(13),
        .folder = s.isNull(14) ? std::nullopt : std::optional<QString>(s.text(14)),
        .filesFolder = s.isNull(15) ? std::nullopt : std::optional<QString>(s.text(15)),
        .group = s.text(16)};
}

} // namespace

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
    m_errors.clear();
    QString why;
    if (!m_db.open(storePath, &why) || !schema::migrate(m_db, storePath, &why) || !check(&why)) {
        *error = why.startsWith(storePath) ? why : describeStoreError(m_db.lastErrorCode(), why, storePath, m_folder);
        return false;
    }
    return true;
}

bool RunStore::check(QString *error)
{
    // Before a store is trusted: SQLite's quick check (every page's structure, not the index contents). A
    // store up to 64 MiB is checked whole (tens of milliseconds); a larger one in every table but the point
    // chunks (what says which files were read, which runs and series exist), whose pages are checked as they
    // are read (every failed read is reported, damage included). A whole check of a 200 MB store took 100 ms,
    // and every connection (the window opens several) would pay it.
    const bool whole = QFileInfo(m_path).size() <= (qint64(64) << 20);
    const QStringList tables = whole
        ? QStringList {QString()}
        : QStringList {QStringLiteral("meta"), QStringLiteral("runs"), QStringLiteral("files"),
            QStringLiteral("series"), QStringLiteral("series_files"), QStringLiteral("evals"),
            QStringLiteral("configs"), QStringLiteral("versions"), QStringLiteral("dumps"), QStringLiteral("problems")};
    for (const QString &table : tables) {
        const QByteArray sql
            = table.isEmpty() ? QByteArray("PRAGMA quick_check(1)") : "PRAGMA quick_check('" + table.toLatin1() + "')";
        Statement s = m_db.prepare(sql.constData());
        if (!s.next()) {
            *error = describeStoreError(s.errorCode(), s.error(), m_path, m_folder);
            return false;
        }
        if (s.text(0) != QLatin1String("ok")) {
            *error = describeStoreError(SQLITE_CORRUPT, s.text(0), m_path, m_folder);
            return false;
        }
    }
    return true;
}

bool RunStore::rebuild(
    const QString &folder, QString *error, int *carried, const std::function<void(int point)> &reached)
{
    const QString path = storePathFor(folder);
    const QString aside = path + QStringLiteral(".rebuild");
    const auto at = [&](int point) {
        if (reached)
            reached(point);
    };
    // The reviews, with the names of their runs (and those an earlier rebuild still carries). A store too
    // damaged to read has none to give: the rebuild goes on.
    struct Carried {
        QString run, baselineFolder, baselineName, finding, state, note, reviewedAt;
    };
    std::vector<Carried> reviews;
    std::vector<std::pair<QString, CandidateChoice>> choices; // and the words on candidates, by baseline name
    if (QFileInfo::exists(path)) {
        RunStore old;
        QString ignored;
        if (old.open(folder, &ignored)) {
            Statement c = old.prepare("SELECT baseline_name, candidate, state, note, chosen_at FROM candidate_choices");
            while (c.next())
                choices.push_back({c.text(0),
                    {c.text(1), candidateSourceNamed(c.text(2)).value_or(CandidateSource::Chosen), c.text(3),
                        c.text(4)}});
            for (const char *sql : {"SELECT r.name, f.baseline_folder, f.baseline_name, f.finding, f.state, f.note, "
                                    "f.reviewed_at FROM finding_reviews f JOIN runs r ON r.id=f.run_id",
                     "SELECT run_name, baseline_folder, baseline_name, finding, state, note, reviewed_at FROM "
                     "carried_reviews"}) {
                Statement s = old.prepare(sql);
                while (s.next())
                    reviews.push_back({s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.text(6)});
            }
            // Everything the old store holds into its main file: its -wal can go without losing a review.
            (void)old.m_db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        }
    }
    at(1);
    m_db.close(); // this object's own connection, if it had one
    for (const QString &f : QStringList {aside, aside + QStringLiteral("-wal"), aside + QStringLiteral("-shm")}) {
        if (QFileInfo::exists(f) && !QFile::remove(f)) { // what an earlier rebuild left
            *error = QStringLiteral("%1: cannot remove what an earlier rebuild left").arg(f);
            return false;
        }
    }
    at(2);
    if (!openFile(aside, folder, error))
        return false;
    at(3);
    {
        // Statements and the transaction end before the connection closes (an open statement keeps the file).
        Transaction t(m_db);
        Statement put = m_db.prepare("INSERT OR REPLACE INTO carried_reviews(run_name, baseline_folder, "
                                     "baseline_name, finding, state, note, reviewed_at) VALUES(?,?,?,?,?,?,?)",
            error);
        for (const Carried &c : reviews) {
            put.bind(1, c.run).bind(2, c.baselineFolder).bind(3, c.baselineName).bind(4, c.finding).bind(5, c.state);
            put.bind(6, c.note).bind(7, c.reviewedAt);
            if (!put.exec()) {
                *error = QStringLiteral("%1: the reviews of triage findings could not be carried over: %2")
                             .arg(m_path, put.error());
                return false;
            }
            put.reset();
        }
        Statement choice = m_db.prepare("INSERT OR REPLACE INTO candidate_choices(baseline_name, candidate, state, "
                                        "note, chosen_at) VALUES(?,?,?,?,?)",
            error);
        for (const auto &[baseline, c] : choices) {
            choice.bind(1, baseline)
                .bind(2, c.candidate)
                .bind(3, candidateSourceName(c.state))
                .bind(4, c.note)
                .bind(5, c.chosenAt);
            if (!choice.exec()) {
                *error = QStringLiteral("%1: the chosen candidates could not be carried over: %2")
                             .arg(m_path, choice.error());
                return false;
            }
            choice.reset();
        }
        at(4);
        if (!t.commit(error))
            return false;
    }
    at(5);
    m_db.close(); // the new store whole in its main file (the last connection checkpoints its -wal away)
    at(6);
    // The old store's -wal and -shm (emptied by the checkpoint above) must not outlive it: SQLite would read a
    // stale -wal into the new store.
    for (const QString &f : QStringList {path + QStringLiteral("-wal"), path + QStringLiteral("-shm")}) {
        if (QFileInfo::exists(f) && !QFile::remove(f)) {
            *error = QStringLiteral("%1: cannot remove the old store's journal").arg(f);
            return false;
        }
    }
    at(7);
    // One rename: the old store or the new one, never neither.
    if (std::rename(QFile::encodeName(aside).constData(), QFile::encodeName(path).constData()) != 0) {
        *error = QStringLiteral("%1: cannot put the rebuilt store in place: %2")
                     .arg(path, QString::fromLocal8Bit(std::strerror(errno)));
        return false;
    }
    at(8);
    if (!open(folder, error))
        return false;
    if (carried)
        *carried = int(reviews.size());
    return true;
}

int RunStore::carriedReviews() const
{
    Statement s = prepare("SELECT COUNT(*) FROM carried_reviews");
    return s.next() ? int(s.int64(0)) : 0;
}

IngestReport RunStore::ingest(const Progress &progress)
{
    IngestReport report = ingestFolder(m_db, m_folder, m_path, progress);
    // The experts of mixture-of-experts GEMMs reduced again where their points changed.
    if (QString experts; !refreshExpertRows(&experts))
        report.errors << QStringLiteral("%1: the experts' rows: %2").arg(m_path, experts);
    // Reviews a rebuild carried over go back to the runs of their names, now ingested with new ids.
    QString error;
    Transaction t(m_db);
    if (!m_db.exec("INSERT OR IGNORE INTO finding_reviews(run_id, baseline_folder, baseline_name, finding, state, "
                   "note, reviewed_at) SELECT r.id, c.baseline_folder, c.baseline_name, c.finding, c.state, c.note, "
                   "c.reviewed_at FROM carried_reviews c JOIN runs r ON r.name=c.run_name",
            &error)
        || !m_db.exec("DELETE FROM carried_reviews WHERE run_name IN (SELECT name FROM runs)", &error)
        || !t.commit(&error))
        report.errors << QStringLiteral("%1: the reviews carried over by a rebuild: %2").arg(m_path, error);
    return report;
}

bool RunStore::storeRecomputed(int64_t runId, const DumpRecord &d, const QString &recipe,
    const std::vector<std::pair<QString, double>> &stats, QString *error)
{
    return writeRecomputed(m_db, runId, d, {{recipe, stats}}, error);
}

bool RunStore::storeRecomputed(int64_t runId, const DumpRecord &d,
    const std::vector<std::pair<QString, std::vector<std::pair<QString, double>>>> &byRecipe, QString *error)
{
    return writeRecomputed(m_db, runId, d, byRecipe, error);
}

Statement RunStore::prepare(const char *sql) const
{
    return m_db.prepare(sql);
}

bool RunStore::ok(const Statement &s) const
{
    if (!s.failed())
        return true;
    const QString e
        = describeStoreError(s.errorCode(), s.error().isEmpty() ? QStringLiteral("statement failed") : s.error(),
            m_path, m_folder, isBusyCode(s.errorCode()) ? readWriter(m_path) : QString());
    recordError(e);
    return false;
}

void RunStore::recordError(const QString &error) const
{
    if (m_errors.contains(error))
        return;
    m_errors << error;
    if (m_errorHandler)
        m_errorHandler(error);
}

std::vector<RunInfo> RunStore::runs(bool withCounts) const
{
    std::vector<RunInfo> out;
    Statement s = prepare(withCounts
            ? "SELECT r.id, r.name, r.display_name, r.precision, r.recipe, r.baseline, r.inference_precision, r.notes, "
              "r.loss_gap_bar, r.parent, r.inference_checkpoint, r.inference_reference, r.manifest, r.manifest_key, "
              "r.folder, r.files_folder, r.run_group, "
              "(SELECT COUNT(*) FROM series WHERE run_id=r.id), "
              "(SELECT COALESCE(SUM(c.n), 0) FROM point_chunks c JOIN series s ON c.series_id=s.id WHERE "
              "s.run_id=r.id) "
              "FROM runs r ORDER BY r.name"
            : "SELECT r.id, r.name, r.display_name, r.precision, r.recipe, r.baseline, r.inference_precision, r.notes, "
              "r.loss_gap_bar, r.parent, r.inference_checkpoint, r.inference_reference, r.manifest, r.manifest_key, "
              "r.folder, r.files_folder, r.run_group, "
              "0, 0 FROM runs r ORDER BY r.name");
    while (s.next()) {
        RunInfo r = runFromRow(s);
        r.seriesCount = s.int64(17);
        r.pointCount = s.int64(18);
        out.push_back(std::move(r));
    }
    ok(s);
    return out;
}

std::optional<RunInfo> RunStore::runInfo(int64_t id) const
{
    Statement s = prepare("SELECT id, name, display_name, precision, recipe, baseline, inference_precision, notes, "
                          "loss_gap_bar, parent, inference_checkpoint, inference_reference, manifest, manifest_key, "
                          "folder, files_folder, run_group FROM runs WHERE id=?");
    s.bind(1, id);
    if (!s.next()) {
        ok(s);
        return std::nullopt;
    }
    return runFromRow(s);
}

std::optional<RunInfo> RunStore::run(const QString &name) const
{
    for (const RunInfo &r : runs()) {
        if (r.name == name || r.displayName == name)
            return r;
    }
    return std::nullopt;
}

std::vector<SeriesInfo> RunStore::findSeries(int64_t runId, const SeriesKey &key) const
{
    std::vector<SeriesInfo> out;
    Statement s = prepare(
        "SELECT s.id, s.layer, s.tensor, s.stat, s.source, s.recipe, COALESCE(SUM(c.n), 0), MIN(c.first_step), "
        "MAX(c.last_step) FROM series s LEFT JOIN point_chunks c ON c.series_id=s.id WHERE s.run_id=?1 "
        "AND (?2='' OR s.layer=?2) AND (?3='' OR s.tensor=?3) AND (?4='' OR s.stat=?4) AND (?5='' OR s.source=?5) "
        "AND (?6='' OR s.recipe=?6) GROUP BY s.id");
    s.bind(1, runId).bind(2, key.layer).bind(3, key.tensor).bind(4, key.stat).bind(5, key.source).bind(6, key.recipe);
    while (s.next())
        out.push_back({.id = s.int64(0),
            .runId = runId,
            .key
            = {.layer = s.text(1), .tensor = s.text(2), .stat = s.text(3), .source = s.text(4), .recipe = s.text(5)},
            .points = s.int64(6),
            .firstStep = s.int64(7),
            .lastStep = s.int64(8)});
    ok(s);
    // One total order: statistic, tensor, layer in natural order, source, recipe (ids are unique per key).
    std::sort(out.begin(), out.end(), [](const SeriesInfo &a, const SeriesInfo &b) {
        if (a.key.stat != b.key.stat)
            return a.key.stat < b.key.stat;
        if (a.key.tensor != b.key.tensor)
            return a.key.tensor < b.key.tensor;
        if (a.key.layer != b.key.layer)
            return layerLess(a.key.layer, b.key.layer);
        if (a.key.source != b.key.source)
            return a.key.source < b.key.source;
        return a.key.recipe < b.key.recipe;
    });
    return out;
}

std::vector<SeriesInfo> RunStore::seriesAt(int64_t runId, const QString &layer, const QString &tensor) const
{
    std::vector<SeriesInfo> out;
    Statement s
        = prepare("SELECT s.id, s.stat, s.source, s.recipe, COALESCE(SUM(c.n), 0), MIN(c.first_step), "
                  "MAX(c.last_step) FROM series s LEFT JOIN point_chunks c ON c.series_id=s.id "
                  "WHERE s.run_id=? AND s.layer=? AND s.tensor=? GROUP BY s.id ORDER BY s.stat, s.source, s.recipe");
    s.bind(1, runId).bind(2, layer).bind(3, tensor);
    while (s.next())
        out.push_back({.id = s.int64(0),
            .runId = runId,
            .key = {.layer = layer, .tensor = tensor, .stat = s.text(1), .source = s.text(2), .recipe = s.text(3)},
            .points = s.int64(4),
            .firstStep = s.int64(5),
            .lastStep = s.int64(6)});
    ok(s);
    return out;
}

std::vector<RunStore::LayerSource> RunStore::layerSources(
    int64_t runId, const QString &stat, const QString &tensor) const
{
    std::vector<LayerSource> out;
    Statement s = prepare("SELECT source, recipe, COUNT(*) FROM series WHERE run_id=? AND stat=? AND tensor=? AND "
                          "layer<>'' GROUP BY source, recipe ORDER BY source, recipe");
    s.bind(1, runId).bind(2, stat).bind(3, tensor);
    while (s.next())
        out.push_back({s.text(0), s.text(1), s.int64(2)});
    ok(s);
    return out;
}

std::vector<RunStore::NonFinite> RunStore::firstNonFinite(int64_t runId, int64_t from) const
{
    std::vector<NonFinite> out;
    Statement s = prepare(
        "SELECT s.id, s.layer, s.tensor, s.stat, s.source, s.recipe FROM series s WHERE s.run_id=?1 AND s.id IN "
        "(SELECT series_id FROM point_chunks WHERE nonfinite_step IS NOT NULL AND last_step>=?2)");
    s.bind(1, runId).bind(2, from);
    while (s.next())
        out.push_back({.series = {.id = s.int64(0),
                           .runId = runId,
                           .key = {.layer = s.text(1),
                               .tensor = s.text(2),
                               .stat = s.text(3),
                               .source = s.text(4),
                               .recipe = s.text(5)}}});
    if (!ok(s))
        return {};
    // The chunks of each that hold a non-finite value, from `from` on: the first holds it, unless its only
    // non-finite values lie before `from`.
    Statement c = prepare("SELECT data FROM point_chunks WHERE series_id=? AND nonfinite_step IS NOT NULL AND "
                          "last_step>=? ORDER BY last_step");
    std::vector<pointchunks::Point> chunk;
    std::vector<NonFinite> found;
    for (NonFinite &n : out) {
        c.bind(1, n.series.id).bind(2, from);
        bool done = false;
        while (!done && c.next()) {
            chunk.clear();
            if (!pointchunks::decode(c.utf8(0), &chunk)) {
                recordError(QStringLiteral("series %1: a damaged point chunk").arg(n.series.id));
                break;
            }
            for (const pointchunks::Point &p : chunk) {
                if (p.step >= from && !std::isfinite(p.value)) {
                    n.step = p.step;
                    n.value = p.value;
                    found.push_back(n);
                    done = true;
                    break;
                }
            }
        }
        ok(c);
        c.reset();
    }
    return found;
}

std::optional<SeriesPoint> RunStore::valueAt(int64_t seriesId, int64_t step) const
{
    Statement s
        = prepare("SELECT data FROM point_chunks WHERE series_id=? AND first_step<=? ORDER BY first_step DESC LIMIT 1");
    s.bind(1, seriesId).bind(2, step);
    bool before = true;
    if (!s.next()) {
        if (!ok(s))
            return std::nullopt;
        // Every point lies after `step`: the first one.
        s = prepare("SELECT data FROM point_chunks WHERE series_id=? ORDER BY first_step LIMIT 1");
        s.bind(1, seriesId);
        if (!s.next()) {
            ok(s);
            return std::nullopt;
        }
        before = false;
    }
    std::vector<pointchunks::Point> chunk;
    if (!pointchunks::decode(s.utf8(0), &chunk) || chunk.empty()) {
        recordError(QStringLiteral("series %1: a damaged point chunk").arg(seriesId));
        return std::nullopt;
    }
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
    if (from > to)
        return out;
    // Chunks do not overlap: those meeting [from, to] start at the last chunk starting at or before `from`.
    const int64_t start = pointchunks::firstChunkFor(m_db, seriesId, from);
    // How many points the range holds, from the chunk counts (exact but for the two edge chunks).
    Statement count = prepare("SELECT COALESCE(SUM(n), 0), MIN(first_step), MAX(last_step) FROM point_chunks "
                              "WHERE series_id=? AND first_step BETWEEN ? AND ? AND last_step>=?");
    count.bind(1, seriesId).bind(2, start).bind(3, to).bind(4, from);
    if (!count.next()) {
        ok(count);
        return out;
    }
    const int64_t approx = count.int64(0);
    if (approx == 0)
        return out;
    const auto damaged = [&] { recordError(QStringLiteral("series %1: a damaged point chunk").arg(seriesId)); };
    if (maxPoints <= 0 || approx <= maxPoints) {
        // approx counts whole edge chunks, so it bounds the points in range: they all fit.
        std::vector<pointchunks::Point> pts;
        if (!pointchunks::read(m_db, seriesId, from, to, &pts))
            damaged();
        out.reserve(pts.size());
        for (const auto &p : pts)
            out.push_back({p.step, p.step, p.value, p.value, p.value, 1});
        return out;
    }
    const int64_t lo = std::max(from, count.int64(1));
    const int64_t hi = std::min(to, count.int64(2));
    const double width = double(hi - lo + 1) / double(maxPoints);
    auto bucketOf
        = [&](int64_t step) { return std::clamp<int64_t>(int64_t(double(step - lo) / width), 0, maxPoints - 1); };
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
        Statement sums = prepare("SELECT first_step, last_step, n, min, max FROM point_chunks "
                                 "WHERE series_id=? AND first_step BETWEEN ? AND ? AND last_step>=?");
        sums.bind(1, seriesId).bind(2, start).bind(3, to).bind(4, from);
        std::vector<int64_t> edges;
        while (sums.next()) {
            if (sums.int64(0) >= from && sums.int64(1) <= to)
                add(sums.int64(0), sums.int64(1), sums.real(3), sums.real(4), sums.int64(2));
            else
                edges.push_back(sums.int64(0));
        }
        ok(sums);
        Statement edge = prepare("SELECT data FROM point_chunks WHERE series_id=? AND first_step=?");
        for (int64_t first : edges) {
            edge.bind(1, seriesId).bind(2, first);
            pts.clear();
            if (edge.next() && !pointchunks::decode(edge.utf8(0), &pts))
                damaged();
            ok(edge);
            edge.reset();
            addPoints();
        }
    } else {
        if (!pointchunks::read(m_db, seriesId, from, to, &pts))
            damaged();
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

std::vector<std::pair<QString, QString>> RunStore::layerTensors(int64_t runId) const
{
    std::vector<std::pair<QString, QString>> out;
    Statement s = prepare("SELECT DISTINCT layer, tensor FROM series WHERE run_id=?1 AND layer<>'' "
                          "UNION SELECT DISTINCT layer, tensor FROM dumps WHERE run_id=?1 AND layer<>''");
    s.bind(1, runId);
    while (s.next())
        out.emplace_back(s.text(0), s.text(1));
    ok(s);
    return out;
}

std::vector<std::pair<QString, QString>> RunStore::layerStatistics(int64_t runId) const
{
    std::vector<std::pair<QString, QString>> out;
    Statement s = prepare(
        "SELECT DISTINCT stat, tensor FROM series WHERE run_id=? AND layer<>'' AND tensor<>'' ORDER BY stat, tensor");
    s.bind(1, runId);
    while (s.next())
        out.emplace_back(s.text(0), s.text(1));
    ok(s);
    return out;
}

std::vector<LayerRow> RunStore::layerRows(int64_t runId, const QString &stat, const QString &tensor,
    const QString &source, const QString &recipe, const std::function<bool(const QString &)> &keep) const
{
    std::vector<std::pair<QString, int64_t>> layerSeries;
    Statement ids = prepare(
        "SELECT id, layer FROM series WHERE run_id=? AND stat=? AND tensor=? AND source=? AND recipe=? AND layer<>''");
    ids.bind(1, runId).bind(2, stat).bind(3, tensor).bind(4, source).bind(5, recipe);
    while (ids.next()) {
        QString layer = ids.text(1);
        if (!keep || keep(layer))
            layerSeries.emplace_back(std::move(layer), ids.int64(0));
    }
    ok(ids);
    std::sort(layerSeries.begin(), layerSeries.end(),
        [](const auto &a, const auto &b) { return layerLess(a.first, b.first); });
    std::vector<LayerRow> rows(layerSeries.size());
    Statement chunks = prepare("SELECT data FROM point_chunks WHERE series_id=? ORDER BY first_step");
    std::vector<pointchunks::Point> pts;
    for (size_t i = 0; i < layerSeries.size(); ++i) {
        rows[i].layer = layerSeries[i].first;
        chunks.bind(1, layerSeries[i].second);
        while (chunks.next()) {
            pts.clear();
            if (!pointchunks::decode(chunks.utf8(0), &pts))
                recordError(QStringLiteral("series %1: a damaged point chunk").arg(layerSeries[i].second));
            for (const auto &p : pts)
                rows[i].points.emplace_back(p.step, p.value);
        }
        ok(chunks);
        chunks.reset();
    }
    return rows;
}

QString RunStore::expertFingerprint(int64_t runId, const QString &stat, const QString &tensor, const QString &source,
    const QString &recipe, std::map<QString, std::vector<std::pair<int32_t, QString>>> *gemms) const
{
    // Each expert series' chunks: how many, their points, their last step and the sums of their smallest and largest
    // values, hashed in series order, with the count of the store's rewrites (a chunk written again over the same
    // steps moves it).
    Statement s = prepare("SELECT s.id, s.layer, COUNT(c.n), TOTAL(c.n), MAX(c.last_step), TOTAL(c.min), TOTAL(c.max) "
                          "FROM series s LEFT JOIN point_chunks c ON c.series_id=s.id WHERE s.run_id=? AND s.stat=? "
                          "AND s.tensor=? AND s.source=? AND s.recipe=? AND s.layer<>'' GROUP BY s.id ORDER BY s.id");
    s.bind(1, runId).bind(2, stat).bind(3, tensor).bind(4, source).bind(5, recipe);
    QCryptographicHash hash(QCryptographicHash::Sha1);
    const int64_t rewrites = dataRewrites();
    hash.addData(QByteArrayView(reinterpret_cast<const char *>(&rewrites), sizeof(rewrites)));
    int experts = 0;
    while (s.next()) {
        const QString layer = s.text(1);
        const auto e = expertOf(layer);
        if (!e)
            continue;
        ++experts;
        if (gemms)
            (*gemms)[e->gemm].emplace_back(e->expert, layer);
        const int64_t ids[] = {s.int64(0), s.int64(2), int64_t(s.real(3)), s.int64(4)};
        const double sums[] = {s.real(5), s.real(6)};
        hash.addData(QByteArrayView(reinterpret_cast<const char *>(ids), sizeof(ids)));
        hash.addData(QByteArrayView(reinterpret_cast<const char *>(sums), sizeof(sums)));
    }
    ok(s);
    return experts == 0 ? QString() : QString::fromLatin1(hash.result().toHex());
}

std::optional<std::vector<ExpertGroupRow>> RunStore::expertRows(
    int64_t runId, const QString &stat, const QString &tensor, const QString &source, const QString &recipe) const
{
    // Fresh while nothing the store holds of the files changed since the last ingest found them so (the data
    // generation moves with every file read again, every run changed).
    Statement s = prepare("SELECT data FROM expert_rows WHERE run_id=? AND stat=? AND tensor=? AND source=? AND "
                          "recipe=? AND generation=?");
    s.bind(1, runId).bind(2, stat).bind(3, tensor).bind(4, source).bind(5, recipe).bind(6, dataGeneration());
    if (!s.next()) {
        ok(s);
        return std::nullopt;
    }
    const std::string_view data = s.utf8(0);
    const QByteArray bytes(data.data(), qsizetype(data.size()));
    s.reset();
    std::vector<ExpertGroupRow> rows;
    if (!decodeExpertRows(bytes, &rows))
        return std::nullopt;
    return rows;
}

bool RunStore::refreshExpertRows(QString *error)
{
    // The (run, stat, tensor, source, recipe) whose layers may be experts' (their names say so); recomputed
    // statistics cover a few dump steps and are grouped from their points.
    struct Key {
        int64_t run;
        QString stat, tensor, source, recipe;
    };
    std::vector<Key> keys;
    {
        Statement s = prepare("SELECT DISTINCT run_id, stat, tensor, source, recipe FROM series WHERE layer<>'' AND "
                              "source<>'recomputed' AND (layer LIKE '%.gemm!_%' ESCAPE '!' OR layer LIKE "
                              "'%experts%')");
        while (s.next())
            keys.push_back({s.int64(0), s.text(1), s.text(2), s.text(3), s.text(4)});
        if (s.failed()) {
            *error = s.error();
            return false;
        }
    }
    // The generation the rows are fresh at, read before their points are: a writer that commits meanwhile moves it
    // past this, and the rows made from what was read before are not taken for fresh.
    const int64_t generation = dataGeneration();
    std::vector<std::pair<Key, std::pair<QString, QByteArray>>> fresh;
    std::vector<Key> unchanged;
    for (const Key &k : keys) {
        std::map<QString, std::vector<std::pair<int32_t, QString>>> gemms;
        const QString fingerprint = expertFingerprint(k.run, k.stat, k.tensor, k.source, k.recipe, &gemms);
        if (fingerprint.isEmpty())
            continue;
        Statement had = prepare(
            "SELECT fingerprint FROM expert_rows WHERE run_id=? AND stat=? AND tensor=? AND source=? AND recipe=?");
        had.bind(1, k.run).bind(2, k.stat).bind(3, k.tensor).bind(4, k.source).bind(5, k.recipe);
        if (had.next() && had.text(0) == fingerprint) {
            unchanged.push_back(k);
            continue;
        }
        had.reset();
        const std::vector<LayerRow> rows = layerRows(
            k.run, k.stat, k.tensor, k.source, k.recipe, [](const QString &l) { return expertOf(l).has_value(); });
        std::map<QString, const LayerRow *> byLayer;
        for (const LayerRow &r : rows)
            byLayer[r.layer] = &r;
        std::vector<ExpertGroupRow> groups;
        for (auto &[gemm, experts] : gemms) {
            std::vector<const std::vector<std::pair<int64_t, double>> *> points;
            for (const auto &[index, layer] : experts) {
                static const std::vector<std::pair<int64_t, double>> none;
                const auto at = byLayer.find(layer);
                points.push_back(at == byLayer.end() ? &none : &at->second->points);
            }
            groups.push_back(reduceExperts(gemm, experts, points));
        }
        fresh.push_back({k, {fingerprint, encodeExpertRows(groups)}});
    }
    Transaction t(m_db);
    // Runs that are gone take theirs with them.
    if (!m_db.exec("DELETE FROM expert_rows WHERE run_id NOT IN (SELECT id FROM runs)", error))
        return false;
    for (const auto &[k, made] : fresh) {
        Statement put = prepare("INSERT OR REPLACE INTO expert_rows(run_id, stat, tensor, source, recipe, fingerprint, "
                                "generation, data) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
        put.bind(1, k.run).bind(2, k.stat).bind(3, k.tensor).bind(4, k.source).bind(5, k.recipe).bind(6, made.first);
        put.bind(7, generation);
        put.bindUtf8(8, std::string_view(made.second.constData(), size_t(made.second.size())));
        if (!put.exec()) {
            *error = put.error();
            return false;
        }
    }
    for (const Key &k : unchanged) {
        Statement keep = prepare(
            "UPDATE expert_rows SET generation=? WHERE run_id=? AND stat=? AND tensor=? AND source=? AND recipe=?");
        keep.bind(1, generation).bind(2, k.run).bind(3, k.stat).bind(4, k.tensor).bind(5, k.source).bind(6, k.recipe);
        if (!keep.exec()) {
            *error = keep.error();
            return false;
        }
    }
    return t.commit(error);
}

std::vector<InputFileRow> RunStore::inputFiles(int64_t runId) const
{
    std::vector<InputFileRow> out;
    Statement s = prepare("SELECT path, importer, size FROM files WHERE run_id=? OR run_id IS NULL ORDER BY path");
    s.bind(1, runId);
    while (s.next())
        out.push_back({s.text(0), s.text(1), s.int64(2)});
    ok(s);
    return out;
}

std::vector<std::pair<QString, QString>> RunStore::rankCopies(int64_t runId) const
{
    std::vector<std::pair<QString, QString>> out;
    Statement s = prepare("SELECT path, same_as FROM files WHERE run_id=? AND same_as<>'' ORDER BY path");
    s.bind(1, runId);
    while (s.next())
        out.emplace_back(s.text(0), s.text(1));
    ok(s);
    return out;
}

std::vector<EvalRow> RunStore::evals(int64_t runId) const
{
    std::vector<EvalRow> out;
    Statement s
        = prepare("SELECT e.task, e.metric, e.value, e.stderr, e.inference, e.settings, f.path FROM evals e "
                  "LEFT JOIN files f ON f.id=e.file_id WHERE e.run_id=? ORDER BY e.task, e.metric, e.inference, "
                  "f.path");
    s.bind(1, runId);
    while (s.next())
        out.push_back({.eval = {.task = s.text(0),
                           .metric = s.text(1),
                           .value = s.real(2),
                           .stderrValue = s.real(3),
                           .inference = s.text(4),
                           .settings = s.text(5)},
            .file = s.text(6)});
    ok(s);
    return out;
}

std::vector<KeyValueRow> RunStore::keyValues(const char *sql, int64_t runId) const
{
    std::vector<KeyValueRow> out;
    Statement s = prepare(sql);
    s.bind(1, runId);
    while (s.next())
        out.push_back({s.text(0), s.text(1), s.text(2)});
    ok(s);
    return out;
}

std::vector<KeyValueRow> RunStore::configs(int64_t runId) const
{
    return keyValues("SELECT c.key, c.value, COALESCE(f.path, '') FROM configs c LEFT JOIN files f ON "
                     "f.id=c.file_id WHERE c.run_id=? ORDER BY c.key",
        runId);
}

std::vector<KeyValueRow> RunStore::versions(int64_t runId) const
{
    return keyValues("SELECT v.package, v.version, COALESCE(f.path, '') FROM versions v LEFT JOIN files f ON "
                     "f.id=v.file_id WHERE v.run_id=? ORDER BY v.package",
        runId);
}

std::vector<ProblemRecord> RunStore::problems() const
{
    std::vector<ProblemRecord> out;
    Statement s = prepare("SELECT f.path, p.line, p.offset, p.message FROM problems p "
                          "JOIN files f ON f.id=p.file_id ORDER BY f.path, p.line");
    while (s.next())
        out.push_back({s.text(0), s.int64(1), s.isNull(2) ? -1 : s.int64(2), s.text(3)});
    ok(s);
    return out;
}

std::vector<DumpRow> RunStore::dumps(int64_t runId) const
{
    std::vector<DumpRow> out;
    Statement s = prepare("SELECT f.path, d.dataset, d.layer, d.tensor, d.step, d.dtype, d.shape FROM dumps d "
                          "JOIN files f ON f.id=d.file_id WHERE d.run_id=? ORDER BY d.step, d.layer, d.tensor");
    s.bind(1, runId);
    while (s.next())
        out.push_back({s.text(0), DumpRecord {s.text(1), s.text(2), s.text(3), s.int64(4), s.text(5), s.text(6)}});
    ok(s);
    return out;
}

} // namespace fp8scope
