// How the store keeps a series' points: in chunks of up to kChunkPoints consecutive steps, one row each in
// `point_chunks` with the chunk's step range, count and min/max (what screen-resolution queries read) and
// its points as a JSON array of [step, value] or [step, value, wall_time] (a `points` view unpacks them for
// sqlite3 users). One row per 64 points instead of one per point is what makes ingest fast: SQLite's cost
// is per row. NaN is stored as null, +-inf as +-1e999.
#pragma once

// Only core/query, core/session and core/recompute read or write a store (their targets link
// fp8scope_store, which defines this); everything above them goes through Catalog and FolderSession.
#ifndef FP8SCOPE_STORE_ACCESS
#error                                                                                                                 \
    "core/store is private to core: read runs through core/query's Catalog, write through core/session's FolderSession (docs/ARCHITECTURE.md)"
#endif

#include "database.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fp8scope::pointchunks {

constexpr int kChunkPoints = 64;

struct Point {
    int64_t step = 0;
    double value = 0;
    double wall = 0; // NaN when not recorded
};

void encode(const Point *points, size_t n, std::string *out);
// Appends the points of one chunk; false on text that is not a chunk this store wrote.
[[nodiscard]] bool decode(std::string_view text, std::vector<Point> *out);

// Writes points into series' chunks with its statements prepared once (an ingest calls it per series and
// batch).
class Writer
{
public:
    explicit Writer(Database &db);
    // Writes `points` (sorted by step; of equal steps the last wins) into the series, replacing the points
    // of the same steps: the chunks from the first new step on are read, merged and written again, and so
    // is a last chunk that is not yet full (so a growing log does not leave a trail of short chunks).
    [[nodiscard]] bool merge(int64_t series, const std::vector<Point> &points);
    // How many merges wrote points at or before a step the series had: they replaced or came between points
    // it held (a restart's log that repeats steps, a recompute of an earlier dump), rather than only adding
    // after its last.
    int64_t rewrites() const { return m_rewrites; }

private:
    Statement m_last, m_firstOverlap, m_suffix, m_delete, m_insert;
    std::vector<Point> m_fresh, m_old, m_merged;
    std::string m_text;
    int64_t m_rewrites = 0;
};

// The first_step of the chunk holding `step` (the last chunk starting at or before it), or `step` itself.
int64_t firstChunkFor(Database &db, int64_t series, int64_t step);

// Every point of a series with from <= step <= to, in step order.
[[nodiscard]] bool read(Database &db, int64_t series, int64_t from, int64_t to, std::vector<Point> *out);

} // namespace fp8scope::pointchunks
