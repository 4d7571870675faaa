#include "expertrows.h"

#include <QDataStream>
#include <QIODevice>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fp8scope {

namespace {

constexpr quint32 kMagic = 0x45585031; // "EXP1"

} // namespace

ExpertGroupRow reduceExperts(const QString &gemm, std::vector<std::pair<int32_t, QString>> experts,
    const std::vector<const std::vector<std::pair<int64_t, double>> *> &points)
{
    ExpertGroupRow row;
    row.gemm = gemm;
    // In expert order, each with its points.
    std::vector<size_t> order(experts.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return experts[a].first < experts[b].first; });
    for (size_t i : order) {
        row.experts.push_back(experts[i].first);
        row.layers << experts[i].second;
    }
    for (const auto *p : points) {
        for (const auto &pt : *p)
            row.steps.push_back(pt.first);
    }
    std::sort(row.steps.begin(), row.steps.end());
    row.steps.erase(std::unique(row.steps.begin(), row.steps.end()), row.steps.end());
    const size_t n = row.steps.size();
    row.worst.assign(n, NAN);
    row.which.assign(n, -1);
    row.mean.assign(n, NAN);
    std::vector<double> sum(n, 0.0);
    std::vector<int32_t> count(n, 0), badExpert(n, -1);
    std::vector<double> badValue(n, 0.0);
    for (size_t i : order) {
        const int32_t expert = experts[i].first;
        size_t col = 0;
        for (const auto &[step, value] : *points[i]) {
            while (row.steps[col] < step)
                ++col; // both ascending
            if (!std::isfinite(value)) {
                if (badExpert[col] < 0) {
                    badExpert[col] = expert;
                    badValue[col] = value;
                }
                continue;
            }
            sum[col] += value;
            ++count[col];
            if (row.which[col] < 0 || value > row.worst[col]) {
                row.worst[col] = value;
                row.which[col] = expert;
            }
        }
    }
    for (size_t c = 0; c < n; ++c) {
        if (count[c] > 0)
            row.mean[c] = sum[c] / count[c];
        if (badExpert[c] >= 0)
            row.notFinite.push_back({uint32_t(c), badValue[c], badExpert[c]});
    }
    return row;
}

QByteArray encodeExpertRows(const std::vector<ExpertGroupRow> &rows)
{
    QByteArray out;
    QDataStream s(&out, QIODevice::WriteOnly);
    s.setVersion(QDataStream::Qt_6_0);
    s << kMagic << quint32(rows.size());
    for (const ExpertGroupRow &r : rows) {
        s << r.gemm << r.layers << quint32(r.experts.size());
        for (int32_t e : r.experts)
            s << qint32(e);
        s << quint32(r.steps.size());
        for (size_t c = 0; c < r.steps.size(); ++c)
            s << qint64(r.steps[c]) << r.worst[c] << qint32(r.which[c]) << r.mean[c];
        s << quint32(r.notFinite.size());
        for (const auto &b : r.notFinite)
            s << quint32(b.column) << b.value << qint32(b.expert);
    }
    return out;
}

bool decodeExpertRows(const QByteArray &bytes, std::vector<ExpertGroupRow> *rows)
{
    QDataStream s(bytes);
    s.setVersion(QDataStream::Qt_6_0);
    quint32 magic = 0, n = 0;
    s >> magic >> n;
    if (magic != kMagic || s.status() != QDataStream::Ok)
        return false;
    rows->clear();
    for (quint32 i = 0; i < n && s.status() == QDataStream::Ok; ++i) {
        ExpertGroupRow r;
        quint32 experts = 0, steps = 0, bad = 0;
        s >> r.gemm >> r.layers >> experts;
        if (s.status() != QDataStream::Ok || experts > quint32(bytes.size()))
            return false;
        for (quint32 k = 0; k < experts; ++k) {
            qint32 e = 0;
            s >> e;
            r.experts.push_back(e);
        }
        s >> steps;
        if (s.status() != QDataStream::Ok || steps > quint32(bytes.size()))
            return false;
        r.steps.resize(steps);
        r.worst.resize(steps);
        r.which.resize(steps);
        r.mean.resize(steps);
        for (quint32 c = 0; c < steps; ++c) {
            qint64 step = 0;
            qint32 which = 0;
            s >> step >> r.worst[c] >> which >> r.mean[c];
            r.steps[c] = step;
            r.which[c] = which;
        }
        s >> bad;
        if (s.status() != QDataStream::Ok || bad > steps)
            return false;
        for (quint32 k = 0; k < bad; ++k) {
            quint32 column = 0;
            double value = 0;
            qint32 expert = 0;
            s >> column >> value >> expert;
            if (column >= steps)
                return false;
            r.notFinite.push_back({column, value, expert});
        }
        rows->push_back(std::move(r));
    }
    return s.status() == QDataStream::Ok && rows->size() == n;
}

} // namespace fp8scope
