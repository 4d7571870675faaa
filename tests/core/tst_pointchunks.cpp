// The store's chunked points: the codec (exact round trip, NaN and infinities, garbage refused), merging
// (replacement of equal steps, growth of the last chunk, insertion in the middle), queries that cross chunk
// edges, the `points` view, and the migration of a version 2 store.
#include "core/store/pointchunks.h"
#include "core/store/runstore.h"
#include "storeaccess.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sqlite3.h>

using namespace fp8scope;
using pointchunks::Point;

namespace {

// Every chunk of a series: (first_step, last_step, n) and the points decoded.
struct Chunks {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> rows;
    std::vector<Point> points;
};

Chunks chunksOf(Database &db, int64_t series)
{
    Chunks c;
    Statement s
        = db.prepare("SELECT first_step, last_step, n, data FROM point_chunks WHERE series_id=? ORDER BY first_step");
    s.bind(1, series);
    while (s.next()) {
        c.rows.emplace_back(s.int64(0), s.int64(1), s.int64(2));
        const size_t before = c.points.size();
        if (!pointchunks::decode(s.utf8(3), &c.points) || c.points.size() - before != size_t(s.int64(2)))
            c.points.push_back({-1, NAN, NAN}); // marks a broken chunk for the checks below
    }
    return c;
}

bool same(double a, double b)
{
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

} // namespace

class TestPointChunks : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void codecRoundTrips();
    void codecRefusesGarbage();
    void mergeReplacesGrowsAndInserts();
    void queriesAcrossChunkEdges();
    void migratesVersion2Store();
};

void TestPointChunks::codecRoundTrips()
{
    std::mt19937_64 rng(11);
    std::vector<Point> pts;
    for (int i = 0; i < 64; ++i) {
        const uint64_t bits = rng();
        double v;
        std::memcpy(&v, &bits, sizeof v); // any bit pattern, subnormals included
        if (!std::isfinite(v))
            v = 1.0 / (i + 1);
        pts.push_back({int64_t(i) * 37 - 1000, v, i % 3 ? NAN : double(i) * 1e9 + 0.25});
    }
    pts[5].value = NAN;
    pts[6].value = INFINITY;
    pts[7].value = -INFINITY;
    pts[8].value = -0.0;
    pts[9].value = std::numeric_limits<double>::denorm_min();
    pts[10].step = std::numeric_limits<int64_t>::max();
    std::string text;
    pointchunks::encode(pts.data(), pts.size(), &text);
    std::vector<Point> back;
    QVERIFY(pointchunks::decode(text, &back));
    QCOMPARE(back.size(), pts.size());
    for (size_t i = 0; i < pts.size(); ++i) {
        QCOMPARE(back[i].step, pts[i].step);
        QVERIFY2(same(back[i].value, pts[i].value) && std::signbit(back[i].value) == std::signbit(pts[i].value),
            qPrintable(QString::number(i)));
        QVERIFY(same(back[i].wall, pts[i].wall));
    }
    // What sqlite3 users see through the view's JSON functions: valid JSON.
    sqlite3 *db = nullptr;
    QCOMPARE(sqlite3_open(":memory:", &db), SQLITE_OK);
    sqlite3_stmt *st = nullptr;
    QCOMPARE(sqlite3_prepare_v2(db, "SELECT json_valid(?), json_array_length(?)", -1, &st, nullptr), SQLITE_OK);
    sqlite3_bind_text(st, 1, text.data(), int(text.size()), SQLITE_STATIC);
    sqlite3_bind_text(st, 2, text.data(), int(text.size()), SQLITE_STATIC);
    QCOMPARE(sqlite3_step(st), SQLITE_ROW);
    QCOMPARE(sqlite3_column_int(st, 0), 1);
    QCOMPARE(sqlite3_column_int(st, 1), 64);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

void TestPointChunks::codecRefusesGarbage()
{
    std::vector<Point> out;
    for (const char *bad : {"", "[", "[[1,2]", "[[1]]", "[[x,2]]", "[[1,2,3,4]]", "[[1,2]]x", "[1,2]", "[[1,nul]]"})
        QVERIFY2(!pointchunks::decode(bad, &out), bad);
    QVERIFY(pointchunks::decode("[]", &out));
    // Out of double range, as a hand-edited store might hold: overflow is infinite, underflow zero.
    out.clear();
    QVERIFY(pointchunks::decode("[[1,1e-999],[2,-1e-999],[3,-2e400]]", &out));
    QCOMPARE(out.size(), size_t(3));
    QCOMPARE(out[0].value, 0.0);
    QVERIFY(out[1].value == 0.0 && std::signbit(out[1].value));
    QCOMPARE(out[2].value, -INFINITY);
}

void TestPointChunks::mergeReplacesGrowsAndInserts()
{
    QTemporaryDir dir;
    RunStore store;
    QString error;
    QVERIFY(store.openFile(dir.filePath(QStringLiteral("s.sqlite")), dir.path(), &error));
    Database &db = RunStoreTestAccess::db(store);
    pointchunks::Writer w(db);
    std::vector<Point> a;
    for (int s = 0; s < 100; ++s)
        a.push_back({s * 10, double(s), NAN});
    QVERIFY(w.merge(7, a));
    Chunks c = chunksOf(db, 7);
    QCOMPARE(c.rows.size(), size_t(2)); // 64 + 36
    QCOMPARE(std::get<2>(c.rows[0]), int64_t(64));
    // Growth: the short last chunk is filled before a new one starts.
    std::vector<Point> b;
    for (int s = 100; s < 130; ++s)
        b.push_back({s * 10, double(s), NAN});
    QVERIFY(w.merge(7, b));
    c = chunksOf(db, 7);
    QCOMPARE(c.rows.size(), size_t(3)); // 64 + 64 + 2
    QCOMPARE(std::get<2>(c.rows[1]), int64_t(64));
    QCOMPARE(std::get<2>(c.rows[2]), int64_t(2));
    // Replacement and insertion in the middle; of equal new steps the last wins.
    QVERIFY(w.merge(7, {{5, -1.0, NAN}, {500, 42.0, NAN}, {500, 43.0, 9.5}}));
    c = chunksOf(db, 7);
    QCOMPARE(c.points.size(), size_t(131));
    for (size_t i = 1; i < c.points.size(); ++i)
        QVERIFY(c.points[i].step > c.points[i - 1].step);
    for (size_t i = 0; i + 1 < c.rows.size(); ++i)
        QVERIFY(std::get<1>(c.rows[i]) < std::get<0>(c.rows[i + 1])); // chunks do not overlap
    auto at = [&](int64_t step) {
        for (const Point &p : c.points) {
            if (p.step == step)
                return p;
        }
        return Point {-1, NAN, NAN};
    };
    QCOMPARE(at(5).value, -1.0);
    QCOMPARE(at(500).value, 43.0);
    QCOMPARE(at(500).wall, 9.5);
    QCOMPARE(at(490).value, 49.0);
    // Other series are untouched.
    QVERIFY(chunksOf(db, 8).rows.empty());
}

void TestPointChunks::queriesAcrossChunkEdges()
{
    QTemporaryDir dir;
    QFile f(dir.filePath(QStringLiteral("history_x.csv")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    QByteArray csv = "step,loss\n";
    for (int s = 0; s < 1000; ++s)
        csv += QByteArray::number(s * 2) + ',' + QByteArray::number(s % 97 == 0 ? NAN : double(s)) + '\n';
    f.write(csv);
    f.close();
    RunStore store;
    QString error;
    QVERIFY(store.open(dir.path(), &error));
    store.ingest();
    const auto run = store.runs().front();
    const auto series = store.findSeries(run.id, {{}, {}, QStringLiteral("loss"), {}, {}});
    QCOMPARE(series.size(), size_t(1));
    QCOMPARE(series.front().points, 1000);
    QCOMPARE(series.front().firstStep, 0);
    QCOMPARE(series.front().lastStep, 1998);
    // A range starting and ending inside chunks: exactly its points.
    const auto pts = store.points(series.front().id, 127, 261, 0);
    QCOMPARE(pts.size(), size_t((260 - 128) / 2 + 1));
    QCOMPARE(pts.front().step, 128);
    QCOMPARE(pts.back().step, 260);
    // valueAt: the last point at or before, the first point when before all.
    QCOMPARE(store.valueAt(series.front().id, 129)->step, 128);
    QCOMPARE(store.valueAt(series.front().id, 129)->value, 64.0);
    QCOMPARE(store.valueAt(series.front().id, -5)->step, 0);
    QCOMPARE(store.valueAt(series.front().id, 99999)->step, 1998);
    // Buckets over part of the range: every point counted once, min/max exact.
    const auto buckets = store.points(series.front().id, 100, 1900, 7);
    int64_t n = 0;
    double mx = -1;
    for (const auto &b : buckets) {
        n += b.count;
        mx = std::max(mx, b.max);
    }
    QCOMPARE(n, int64_t(901));
    QCOMPARE(mx, 950.0);
    // The view sqlite3 users query.
    Statement v = RunStoreTestAccess::db(store).prepare("SELECT COUNT(*), SUM(value IS NULL), MAX(step) FROM points");
    QVERIFY(v.next());
    QCOMPARE(v.int64(0), int64_t(1000));
    QCOMPARE(v.int64(1), int64_t(11)); // s % 97 == 0 for s < 1000
    QCOMPARE(v.int64(2), int64_t(1998));
}

void TestPointChunks::migratesVersion2Store()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("old.sqlite"));
    {
        // A version 2 store as an earlier fp8scope wrote it: points one per row, 64-point summary blocks.
        Database db;
        QString error;
        QVERIFY(db.open(path, &error));
        QVERIFY(db.exec(R"(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
INSERT INTO meta VALUES('schema_version', '2');
CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, display_name TEXT, precision TEXT, recipe TEXT,
    baseline TEXT, inference_precision TEXT, notes TEXT);
CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, run_id INTEGER REFERENCES runs(id),
    importer TEXT NOT NULL, size INTEGER NOT NULL, mtime INTEGER NOT NULL, head_len INTEGER NOT NULL,
    head_hash TEXT NOT NULL, consumed INTEGER NOT NULL, lines INTEGER NOT NULL);
CREATE TABLE series(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), layer TEXT NOT NULL,
    tensor TEXT NOT NULL, stat TEXT NOT NULL, source TEXT NOT NULL, recipe TEXT NOT NULL,
    UNIQUE(run_id, stat, tensor, layer, source, recipe));
CREATE TABLE points(series_id INTEGER NOT NULL, step INTEGER NOT NULL, value REAL, wall_time REAL,
    PRIMARY KEY(series_id, step)) WITHOUT ROWID;
CREATE TABLE evals(run_id INTEGER NOT NULL REFERENCES runs(id), file_id INTEGER REFERENCES files(id),
    task TEXT NOT NULL, metric TEXT NOT NULL, inference TEXT NOT NULL, value REAL, stderr REAL,
    PRIMARY KEY(run_id, task, metric, inference));
CREATE TABLE configs(run_id INTEGER NOT NULL REFERENCES runs(id), file_id INTEGER REFERENCES files(id),
    key TEXT NOT NULL, value TEXT, PRIMARY KEY(run_id, key));
CREATE TABLE dumps(id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
    file_id INTEGER NOT NULL REFERENCES files(id), dataset TEXT NOT NULL, layer TEXT, tensor TEXT, step INTEGER,
    dtype TEXT, shape TEXT, UNIQUE(file_id, dataset));
CREATE TABLE problems(id INTEGER PRIMARY KEY, file_id INTEGER REFERENCES files(id), line INTEGER, offset INTEGER,
    message TEXT NOT NULL);
CREATE INDEX problems_file ON problems(file_id, line);
CREATE TABLE point_blocks(series_id INTEGER NOT NULL, first_step INTEGER NOT NULL, last_step INTEGER NOT NULL,
    n INTEGER NOT NULL, min REAL, max REAL, PRIMARY KEY(series_id, first_step)) WITHOUT ROWID;
INSERT INTO runs(id, name) VALUES(1, 'r');
INSERT INTO series VALUES(1, 1, '', '', 'loss', 'csv', ''), (2, 1, 'l.0', 'activation', 'mse', 'te', '');
)",
            &error));
        Statement ins = db.prepare("INSERT INTO points VALUES(?,?,?,?)");
        for (int s = 0; s < 150; ++s) {
            QVERIFY(ins.bind(1, int64_t(1)).bind(2, int64_t(s)).bind(3, s == 3 ? NAN : s * 0.5).bind(4, NAN).exec());
            QVERIFY(ins.bind(1, int64_t(2)).bind(2, int64_t(s * 4)).bind(3, double(s)).bind(4, 100.0 + s).exec());
        }
    }
    RunStore store;
    QString error;
    QVERIFY2(store.openFile(path, dir.path(), &error), qPrintable(error));
    const auto loss = store.points(1, 0, 1000, 0);
    QCOMPARE(loss.size(), size_t(150));
    QVERIFY(std::isnan(loss[3].value));
    QCOMPARE(loss[149].value, 74.5);
    const auto mse = store.points(2, 0, 10000, 0);
    QCOMPARE(mse.size(), size_t(150));
    QCOMPARE(mse[10].step, 40);
    QCOMPARE(store.runs().front().pointCount, 300);
    Statement v = RunStoreTestAccess::db(store).prepare(
        "SELECT step, value, wall_time FROM points WHERE series_id=2 AND step=40");
    QVERIFY(v.next());
    QCOMPARE(v.real(2), 110.0);
    Statement tables = RunStoreTestAccess::db(store).prepare(
        "SELECT COUNT(*) FROM sqlite_master WHERE name IN ('point_blocks') OR (name='points' AND type='table')");
    QVERIFY(tables.next());
    QCOMPARE(tables.int64(0), int64_t(0)); // the old tables are gone; `points` is the view
}

QTEST_APPLESS_MAIN(TestPointChunks)
#include "tst_pointchunks.moc"
