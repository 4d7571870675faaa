#include "expertgroups.h"

#include "core/formats/expertnames.h"
#include "core/formats/layerorder.h"

#include <QHash>

#include <cmath>
#include <map>

namespace fp8scope {

QString expertRowsName(ExpertRows rows)
{
    switch (rows) {
    case ExpertRows::All: return QStringLiteral("all");
    case ExpertRows::Max: return QStringLiteral("max");
    case ExpertRows::Mean: return QStringLiteral("mean");
    case ExpertRows::One: return QStringLiteral("one");
    }
    return {};
}

std::optional<ExpertRows> expertRowsFromName(const QString &name)
{
    for (ExpertRows r : {ExpertRows::All, ExpertRows::Max, ExpertRows::Mean, ExpertRows::One}) {
        if (expertRowsName(r) == name)
            return r;
    }
    return std::nullopt;
}

bool matrixKeepsLayer(const QString &layer, const MatrixRequest &request)
{
    if (request.expertsOf.isEmpty())
        return true;
    const auto e = expertOf(layer);
    return e && e->gemm == request.expertsOf;
}

QString expertReductionText(ExpertRows rows, int expert)
{
    return rows == ExpertRows::Max ? QStringLiteral("worst expert")
        : rows == ExpertRows::Mean ? QStringLiteral("mean of experts")
                                   : expertLabel(expert);
}

void assembleGrouped(Heatmap *h, const std::vector<LayerRow> &dense, const std::vector<ExpertGroupRow> &groups,
    ExpertRows rows, int rank)
{
    // The rows in depth order: a layer by its name, a GEMM where its first expert is.
    struct Row {
        QString key;
        const LayerRow *dense = nullptr;
        const ExpertGroupRow *group = nullptr;
    };
    std::vector<Row> order;
    std::vector<int64_t> steps;
    for (const LayerRow &r : dense) {
        order.push_back({r.layer, &r, nullptr});
        for (const auto &p : r.points)
            steps.push_back(p.first);
    }
    for (const ExpertGroupRow &g : groups) {
        order.push_back({g.layers.value(0, g.gemm), nullptr, &g});
        steps.insert(steps.end(), g.steps.begin(), g.steps.end());
    }
    std::stable_sort(order.begin(), order.end(), [](const Row &a, const Row &b) { return layerLess(a.key, b.key); });
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    const size_t columns = steps.size();
    h->layers.clear();
    h->steps = steps;
    h->values.assign(order.size() * columns, NAN);
    h->cellExperts.assign(h->values.size(), -1);
    h->rowExperts.assign(order.size(), 0);
    h->rowLayers.assign(order.size(), {});
    h->nonFinite.clear();
    for (size_t y = 0; y < order.size(); ++y) {
        double *out = h->values.data() + y * columns;
        int *from = h->cellExperts.data() + y * columns;
        size_t col = 0;
        if (order[y].dense) {
            h->layers << order[y].dense->layer;
            for (const auto &[step, value] : order[y].dense->points) {
                while (steps[col] < step)
                    ++col;
                if (!std::isfinite(value))
                    h->nonFinite.push_back({qsizetype(y), col, value, rank});
                else
                    out[col] = value;
            }
            continue;
        }
        const ExpertGroupRow &g = *order[y].group;
        h->layers << g.gemm;
        h->rowExperts[y] = int(g.experts.size());
        h->rowLayers[y] = g.layers;
        std::vector<size_t> at(g.steps.size());
        for (size_t c = 0; c < g.steps.size(); ++c) {
            while (steps[col] < g.steps[c])
                ++col;
            at[c] = col;
            out[col] = rows == ExpertRows::Mean ? g.mean[c] : g.worst[c];
            from[col] = rows == ExpertRows::Mean ? -1 : g.which[c];
        }
        for (const ExpertGroupRow::NotFinite &b : g.notFinite) {
            const size_t c = at[b.column];
            out[c] = NAN;
            from[c] = b.expert;
            h->nonFinite.push_back({qsizetype(y), c, b.value, rank, b.expert});
        }
    }
    h->expertReduction = expertReductionText(rows, 0);
}

void groupExperts(Heatmap *h, const MatrixRequest &request)
{
    if (!request.expertsOf.isEmpty()) {
        h->expertsOf = request.expertsOf;
        return;
    }
    if (request.experts == ExpertRows::All || !h->rowExperts.empty())
        return;
    // Each row's GEMM, and the rows of each GEMM in the order they come.
    struct Group {
        QString gemm;
        std::vector<std::pair<int, qsizetype>> members; // (expert, row)
        qsizetype denseRow = -1; // a row of no experts
    };
    std::vector<Group> groups;
    QHash<QString, size_t> groupOf;
    bool anyExperts = false;
    for (qsizetype row = 0; row < h->layers.size(); ++row) {
        const auto e = expertOf(h->layers.at(row));
        if (!e) {
            groups.push_back({QString(), {}, row});
            continue;
        }
        anyExperts = true;
        auto it = groupOf.find(e->gemm);
        if (it == groupOf.end()) {
            it = groupOf.insert(e->gemm, groups.size());
            groups.push_back({e->gemm, {}, -1});
        }
        groups[*it].members.emplace_back(e->expert, row);
    }
    if (!anyExperts)
        return;
    const size_t columns = h->steps.size();
    // The cells whose logged value was not finite, by (row, column).
    QHash<quint64, size_t> badCell;
    for (size_t i = 0; i < h->nonFinite.size(); ++i)
        badCell.insert(quint64(h->nonFinite[i].layer) * columns + h->nonFinite[i].step, i);
    const bool withRanks = h->ranks.size() == h->values.size() && !h->ranks.empty();
    QStringList layers;
    std::vector<double> values(groups.size() * columns, NAN);
    std::vector<int> ranks(withRanks ? values.size() : 0, -1);
    std::vector<int> cellExperts(values.size(), -1);
    std::vector<int> rowExperts(groups.size(), 0);
    std::vector<QStringList> rowLayers(groups.size());
    std::vector<Heatmap::NonFiniteCell> nonFinite;
    for (size_t g = 0; g < groups.size(); ++g) {
        const Group &group = groups[g];
        double *out = values.data() + g * columns;
        if (group.denseRow >= 0) {
            layers << h->layers.at(group.denseRow);
            const size_t from = size_t(group.denseRow) * columns;
            std::copy(h->values.begin() + qsizetype(from), h->values.begin() + qsizetype(from + columns), out);
            if (withRanks)
                std::copy(h->ranks.begin() + qsizetype(from), h->ranks.begin() + qsizetype(from + columns),
                    ranks.begin() + qsizetype(g * columns));
            for (size_t c = 0; c < columns; ++c) {
                if (const auto bad = badCell.constFind(quint64(group.denseRow) * columns + c); bad != badCell.cend()) {
                    Heatmap::NonFiniteCell cell = h->nonFinite[*bad];
                    cell.layer = qsizetype(g);
                    nonFinite.push_back(cell);
                }
            }
            continue;
        }
        layers << group.gemm;
        rowExperts[g] = int(group.members.size());
        std::vector<std::pair<int, qsizetype>> members = group.members;
        std::sort(members.begin(), members.end());
        for (const auto &[expert, row] : members)
            rowLayers[g] << h->layers.at(row);
        if (request.experts == ExpertRows::One) {
            // The chosen expert alone (a GEMM without it: an empty row).
            std::erase_if(members, [&](const auto &m) { return m.first != request.expert; });
        }
        for (size_t c = 0; c < columns; ++c) {
            // A value that was not finite on any expert makes the cell a mark (the lowest expert that logged one).
            const Heatmap::NonFiniteCell *bad = nullptr;
            int badExpert = -1;
            double best = NAN, sum = 0;
            int from = -1, rank = -1, n = 0;
            for (const auto &[expert, row] : members) {
                const size_t i = size_t(row) * columns + c;
                if (!badCell.isEmpty()) {
                    if (const auto b = badCell.constFind(quint64(row) * columns + c); b != badCell.cend()) {
                        if (!bad) {
                            bad = &h->nonFinite[*b];
                            badExpert = expert;
                        }
                        continue;
                    }
                }
                const double v = h->values[i];
                if (std::isnan(v))
                    continue;
                ++n;
                sum += v;
                if (std::isnan(best) || v > best) {
                    best = v;
                    from = expert;
                    rank = withRanks ? h->ranks[i] : -1;
                }
            }
            const size_t at = g * columns + c;
            if (bad) {
                Heatmap::NonFiniteCell cell = *bad;
                cell.layer = qsizetype(g);
                cell.step = c;
                cell.expert = badExpert;
                nonFinite.push_back(cell);
                cellExperts[at] = badExpert;
                if (withRanks)
                    ranks[at] = bad->rank;
                continue;
            }
            if (n == 0)
                continue;
            if (request.experts == ExpertRows::Mean) {
                out[c] = sum / n; // a mean is no one expert's, however many had a value (as the stored rows say)
                cellExperts[at] = -1;
                if (withRanks)
                    ranks[at] = n == 1 ? rank : -1;
            } else {
                out[c] = best;
                cellExperts[at] = from;
                if (withRanks)
                    ranks[at] = rank;
            }
        }
    }
    h->layers = layers;
    h->values = std::move(values);
    h->ranks = std::move(ranks);
    h->nonFinite = std::move(nonFinite);
    h->cellExperts = std::move(cellExperts);
    h->rowExperts = std::move(rowExperts);
    h->rowLayers = std::move(rowLayers);
    h->expertReduction = expertReductionText(request.experts, request.expert);
}

} // namespace fp8scope
