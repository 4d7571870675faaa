#include "pointchunks.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

namespace fp8scope::pointchunks {

namespace {

void appendNumber(double v, std::string *out)
{
    if (std::isnan(v)) {
        out->append("null");
    } else if (std::isinf(v)) {
        out->append(v > 0 ? "1e999" : "-1e999");
    } else {
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, v); // shortest text that reads back exactly
        out->append(buf, r.ptr);
    }
}

void appendInteger(int64_t v, std::string *out)
{
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, r.ptr);
}

// A tiny reader for exactly what encode() writes.
struct Reader {
    const char *p;
    const char *end;

    bool eat(char c)
    {
        if (p < end && *p == c) {
            ++p;
            return true;
        }
        return false;
    }
    bool integer(int64_t *v)
    {
        const auto r = std::from_chars(p, end, *v);
        if (r.ec != std::errc())
            return false;
        p = r.ptr;
        return true;
    }
    bool number(double *v)
    {
        if (end - p >= 4 && std::string_view(p, 4) == "null") {
            p += 4;
            *v = NAN;
            return true;
        }
        const auto r = std::from_chars(p, end, *v);
        if (r.ec == std::errc::result_out_of_range && r.ptr != p) {
            // encode writes infinities as +-1e999; a hand-edited store may also hold a tiny 1e-999.
            const std::string_view token(p, size_t(r.ptr - p));
            const size_t e = token.find_first_of("eE");
            const bool tiny = e != std::string_view::npos && e + 1 < token.size() && token[e + 1] == '-';
            const bool negative = *p == '-';
            *v = tiny ? (negative ? -0.0 : 0.0) : (negative ? -INFINITY : INFINITY);
        } else if (r.ec != std::errc()) {
            return false;
        }
        p = r.ptr;
        return true;
    }
};

} // namespace

void encode(const Point *points, size_t n, std::string *out)
{
    out->clear();
    out->push_back('[');
    for (size_t i = 0; i < n; ++i) {
        if (i)
            out->push_back(',');
        out->push_back('[');
        appendInteger(points[i].step, out);
        out->push_back(',');
        appendNumber(points[i].value, out);
        if (!std::isnan(points[i].wall)) {
            out->push_back(',');
            appendNumber(points[i].wall, out);
        }
        out->push_back(']');
    }
    out->push_back(']');
}

bool decode(std::string_view text, std::vector<Point> *out)
{
    Reader r {text.data(), text.data() + text.size()};
    if (!r.eat('['))
        return false;
    if (r.eat(']'))
        return r.p == r.end;
    do {
        Point pt {0, 0, NAN};
        if (!r.eat('[') || !r.integer(&pt.step) || !r.eat(',') || !r.number(&pt.value))
            return false;
        if (r.eat(',') && !r.number(&pt.wall))
            return false;
        if (!r.eat(']'))
            return false;
        out->push_back(pt);
    } while (r.eat(','));
    return r.eat(']') && r.p == r.end;
}

int64_t firstChunkFor(Database &db, int64_t series, int64_t step)
{
    Statement s = db.prepare("SELECT MAX(first_step) FROM point_chunks WHERE series_id=? AND first_step<=?");
    s.bind(1, series).bind(2, step);
    return s.next() && !s.isNull(0) ? s.int64(0) : step;
}

bool read(Database &db, int64_t series, int64_t from, int64_t to, std::vector<Point> *out)
{
    if (from > to)
        return true;
    Statement s = db.prepare("SELECT data FROM point_chunks WHERE series_id=? AND first_step BETWEEN ? AND ? "
                             "AND last_step>=? ORDER BY first_step");
    s.bind(1, series).bind(2, firstChunkFor(db, series, from)).bind(3, to).bind(4, from);
    std::vector<Point> chunk;
    while (s.next()) {
        chunk.clear();
        if (!decode(s.utf8(0), &chunk))
            return false;
        for (const Point &p : chunk) {
            if (p.step >= from && p.step <= to)
                out->push_back(p);
        }
    }
    return !s.failed();
}

Writer::Writer(Database &db)
    : m_last(db.prepare(
        "SELECT first_step, last_step, n FROM point_chunks WHERE series_id=? ORDER BY first_step DESC LIMIT 1"))
    , m_firstOverlap(db.prepare("SELECT MIN(first_step) FROM point_chunks WHERE series_id=? AND last_step>=?"))
    , m_suffix(db.prepare("SELECT data FROM point_chunks WHERE series_id=? AND first_step>=? ORDER BY first_step"))
    , m_delete(db.prepare("DELETE FROM point_chunks WHERE series_id=? AND first_step>=?"))
    , m_insert(
          db.prepare("INSERT INTO point_chunks(series_id, first_step, last_step, n, min, max, data, nonfinite_step) "
                     "VALUES(?,?,?,?,?,?,?,?)"))
{
}

bool Writer::merge(int64_t series, const std::vector<Point> &points)
{
    if (points.empty())
        return true;
    // Of equal steps the last given wins (points arrive stably sorted).
    m_fresh.clear();
    for (const Point &p : points) {
        if (!m_fresh.empty() && m_fresh.back().step == p.step)
            m_fresh.back() = p;
        else
            m_fresh.push_back(p);
    }
    // The suffix of chunks to rewrite: those reaching the first new step, and a last chunk not yet full.
    m_old.clear();
    m_last.bind(1, series);
    const bool haveLast = m_last.next();
    if (!haveLast && m_last.failed()) {
        m_last.reset();
        return false;
    }
    const int64_t lastFirst = haveLast ? m_last.int64(0) : 0;
    const bool overlaps = haveLast && m_last.int64(1) >= m_fresh.front().step;
    const bool rewrite = overlaps || (haveLast && m_last.int64(2) < kChunkPoints);
    if (overlaps)
        ++m_rewrites;
    m_last.reset();
    if (rewrite) {
        m_firstOverlap.bind(1, series).bind(2, m_fresh.front().step);
        int64_t from = lastFirst;
        if (m_firstOverlap.next() && !m_firstOverlap.isNull(0))
            from = std::min(from, m_firstOverlap.int64(0));
        m_firstOverlap.reset();
        m_suffix.bind(1, series).bind(2, from);
        bool ok = true;
        while (ok && m_suffix.next())
            ok = decode(m_suffix.utf8(0), &m_old);
        ok = ok && !m_suffix.failed();
        m_suffix.reset();
        if (!ok || !m_delete.bind(1, series).bind(2, from).exec())
            return false;
    }
    const std::vector<Point> *merged = &m_fresh;
    if (!m_old.empty()) {
        m_merged.clear();
        size_t i = 0, j = 0;
        while (i < m_old.size() || j < m_fresh.size()) {
            if (j == m_fresh.size() || (i < m_old.size() && m_old[i].step < m_fresh[j].step)) {
                m_merged.push_back(m_old[i++]);
            } else {
                if (i < m_old.size() && m_old[i].step == m_fresh[j].step)
                    ++i; // replaced
                m_merged.push_back(m_fresh[j++]);
            }
        }
        merged = &m_merged;
    }
    for (size_t at = 0; at < merged->size(); at += kChunkPoints) {
        const size_t n = std::min<size_t>(kChunkPoints, merged->size() - at);
        const Point *chunk = merged->data() + at;
        double lo = NAN, hi = NAN;
        std::optional<int64_t> nonFinite;
        for (size_t k = 0; k < n; ++k) {
            const double v = chunk[k].value;
            if (!std::isnan(v)) {
                lo = std::isnan(lo) ? v : std::min(lo, v);
                hi = std::isnan(hi) ? v : std::max(hi, v);
            }
            if (!std::isfinite(v) && !nonFinite)
                nonFinite = chunk[k].step;
        }
        encode(chunk, n, &m_text);
        m_insert.bind(1, series)
            .bind(2, chunk[0].step)
            .bind(3, chunk[n - 1].step)
            .bind(4, int64_t(n))
            .bind(5, lo)
            .bind(6, hi)
            .bindUtf8(7, m_text);
        if (nonFinite)
            m_insert.bind(8, *nonFinite);
        else
            m_insert.bindNull(8);
        if (!m_insert.exec())
            return false;
    }
    return true;
}

} // namespace fp8scope::pointchunks
