#include "core/analysis/rules.h"

#include "core/formats/expertnames.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <tuple>

namespace fp8scope::analysis::rules {

namespace {

struct Signal {
    Series series;
    Onset onset;
    size_t peers = 0; // the layers it was measured against (0: on its own)
};

// A statistic's early level: the median of its first finite points, as many as findOnset takes.
double earlyLevel(const StepSeries &s, const OnsetOptions &options)
{
    std::vector<double> early;
    const size_t m = earlyPoints(s, options);
    for (size_t i = 0; i < s.size() && early.size() < m; ++i) {
        if (std::isfinite(s.values[i]))
            early.push_back(s.values[i]);
    }
    return median(early);
}

// What a layer does that its peers (the other layers' same tensor and statistic) do not: each point divided
// by the peers' median change since their early levels at that step. A drift all layers share (amaxes that
// grow as training goes on, gradients that shrink) is the training's, not a layer's, and cancels; one layer
// that moves alone hardly moves the median. Groups of fewer than 4 layers are left as they are.
// A group's normalisation: the peers' median change at each step of the union of their steps, and where each
// member's points fall among those steps (slots[m], in the order of `members`).
struct PeerFactors {
    std::vector<double> factor;
    std::vector<std::vector<uint32_t>> slots;
    std::vector<double> early;
};

// The series are read, not changed: each member's points are divided by the factors when its onset is looked
// for (a scratch copy at a time), so the gathered inputs stay as read.
void normalizeByPeers(const std::vector<const StepSeries *> &series, const std::vector<size_t> &members,
    const OnsetOptions &options, std::vector<size_t> *peers, PeerFactors *out)
{
    if (members.size() < 4)
        return;
    // The steps any member has, and where each member's points fall among them (the same steps for all, as a
    // TE statistics log writes them, need no search).
    std::vector<int64_t> steps = series[members.front()]->steps, merged;
    for (size_t m : members) {
        const std::vector<int64_t> &own = series[m]->steps;
        if (own == steps)
            continue;
        merged.clear();
        std::set_union(steps.begin(), steps.end(), own.begin(), own.end(), std::back_inserter(merged));
        steps.swap(merged);
    }
    std::vector<std::vector<uint32_t>> &slots = out->slots;
    slots.assign(members.size(), {});
    for (size_t m = 0; m < members.size(); ++m) {
        const StepSeries &s = *series[members[m]];
        std::vector<uint32_t> &slot = slots[m];
        slot.resize(s.size());
        // Both ascending: one walk along the union.
        size_t k = 0;
        for (size_t i = 0; i < s.size(); ++i) {
            while (steps[k] < s.steps[i])
                ++k;
            slot[i] = uint32_t(k);
        }
    }
    // The peers' median change at each step where at least half of them (and 3) have a point: each member's
    // ratio to its early level, gathered a block of steps at a time (the block's ratios of all members fit in
    // the cache; laying out all steps at once scattered every write across the whole run).
    std::vector<double> &early = out->early;
    early.assign(members.size(), 0.0);
    for (size_t m = 0; m < members.size(); ++m)
        early[m] = earlyLevel(*series[members[m]], options);
    const auto usable = [](double v) { return std::isfinite(v) && v >= 0; };
    constexpr size_t kBlock = 512;
    const size_t M = members.size();
    std::vector<double> &factor = out->factor;
    factor.assign(steps.size(), std::numeric_limits<double>::quiet_NaN());
    std::vector<double> block(kBlock * M);
    std::vector<uint32_t> filled(kBlock);
    std::vector<size_t> cursor(M, 0);
    for (size_t k0 = 0; k0 < steps.size(); k0 += kBlock) {
        const size_t k1 = std::min(steps.size(), k0 + kBlock);
        std::fill(filled.begin(), filled.end(), 0);
        for (size_t m = 0; m < M; ++m) {
            const StepSeries &s = *series[members[m]];
            size_t &i = cursor[m];
            for (; i < s.size() && slots[m][i] < k1; ++i) {
                if (early[m] > 0 && usable(s.values[i])) {
                    const size_t k = slots[m][i] - k0;
                    block[k * M + filled[k]++] = s.values[i] / early[m];
                }
            }
        }
        for (size_t k = 0; k < k1 - k0; ++k) {
            const size_t n = filled[k];
            if (n * 2 >= M && n >= 3) {
                // The median in place (the block is scratch; every value in it is finite).
                double *v = block.data() + k * M;
                std::nth_element(v, v + n / 2, v + n);
                factor[k0 + k] = n % 2 == 1 ? v[n / 2] : 0.5 * (*std::max_element(v, v + n / 2) + v[n / 2]);
            }
        }
    }
    for (size_t m = 0; m < members.size(); ++m) {
        if (early[m] > 0)
            (*peers)[members[m]] = members.size() - 1;
    }
}

// A member's points divided by its group's factors, into `scratch` (reused: no allocation per series).
void normalized(const StepSeries &s, const PeerFactors &g, size_t m, StepSeries *scratch)
{
    scratch->steps.assign(s.steps.begin(), s.steps.end());
    scratch->values.assign(s.values.begin(), s.values.end());
    if (!(g.early[m] > 0))
        return;
    const std::vector<uint32_t> &slot = g.slots[m];
    for (size_t i = 0; i < s.size(); ++i) {
        const double f = g.factor[slot[i]];
        if (f > 0)
            scratch->values[i] /= f;
    }
}

// The median of a run-level series before and after a step, over a window of a twentieth of the planned steps
// (at least 3 points each side): nullopt without the series or enough points.
std::optional<std::pair<double, double>> routerRise(
    const std::optional<StepSeries> &router, int64_t at, std::optional<int64_t> planned)
{
    if (!router || router->size() < 6)
        return std::nullopt;
    const int64_t window = std::max<int64_t>(1, planned.value_or(router->steps.back()) / 20);
    std::vector<double> before, after;
    for (size_t i = 0; i < router->size(); ++i) {
        const int64_t step = router->steps[i];
        const double v = router->values[i];
        if (!std::isfinite(v))
            continue;
        if (step < at && step >= at - window)
            before.push_back(v);
        else if (step >= at && step < at + window)
            after.push_back(v);
    }
    if (before.size() < 3 || after.size() < 3)
        return std::nullopt;
    return std::make_pair(median(before), median(after));
}

// The layer signals of a run: every risk statistic's sustained change against its peers. Truncated statistics
// are left to their own rule.
std::vector<Signal> signalsOf(const std::vector<SeriesPoints> &risk, const OnsetOptions &base)
{
    std::vector<const Series *> kept;
    std::vector<const StepSeries *> points;
    std::vector<Direction> directions;
    std::map<std::tuple<QString, QString, QString>, std::vector<size_t>> groups; // tensor, stat, source
    for (const SeriesPoints &sp : risk) {
        const Series &s = sp.series;
        const auto direction = riskDirection(s.stat);
        if (s.layer.isEmpty() || s.points < 8 || !direction || isTruncated(sp))
            continue;
        groups[{s.tensor, s.stat, s.source}].push_back(kept.size());
        kept.push_back(&s);
        points.push_back(&sp.points);
        directions.push_back(*direction);
    }
    std::vector<size_t> peers(kept.size(), 0);
    // Each series' group and its place in it (groups of fewer than 4 keep their own values).
    std::vector<PeerFactors> factors;
    factors.reserve(groups.size());
    std::vector<std::pair<const PeerFactors *, size_t>> memberOf(kept.size(), {nullptr, 0});
    for (const auto &[key, members] : groups) {
        if (members.size() < 4)
            continue;
        factors.emplace_back();
        normalizeByPeers(points, members, base, &peers, &factors.back());
        for (size_t m = 0; m < members.size(); ++m)
            memberOf[members[m]] = {&factors.back(), m};
    }
    std::vector<Signal> out;
    StepSeries scratch;
    for (size_t i = 0; i < kept.size(); ++i) {
        OnsetOptions o = base;
        // The TE statistics log prints four decimals: a change smaller than that is not one.
        if (kept[i]->source.startsWith(QLatin1String("te-debug")))
            o.absolute = std::max(o.absolute, 2e-4);
        const StepSeries *p = points[i];
        if (memberOf[i].first) {
            normalized(*p, *memberOf[i].first, memberOf[i].second, &scratch);
            p = &scratch;
        }
        const Onset onset = findOnset(*p, directions[i], o);
        if (onset.step)
            out.push_back({*kept[i], onset, peers[i]});
    }
    return out;
}

} // namespace

bool isTruncated(const SeriesPoints &s)
{
    static const QStringList neverZero {QStringLiteral("mse"), QStringLiteral("scale_inv_min"),
        QStringLiteral("scale_inv_max"), QStringLiteral("cur_amax"), QStringLiteral("relative_error")};
    return neverZero.contains(s.series.stat) && looksTruncated(s.points.values);
}

// Layer signals: each risk statistic against its peers, most suspect first; the first 12 reported, those before
// the departure (or, live, before any) the causes.
void layerSignals(const PairInputs &in, const TriageOptions &options, Comparison &c)
{
    // Layer signals: what moved first.
    OnsetOptions onset = options.onset;
    if (options.live)
        onset.plannedSteps = c.plannedSteps;
    std::vector<Signal> signals = signalsOf(in.finish.risk, onset);
    // A GEMM that ran in high precision when its statistic moved is no FP8 suspect there (a layer Megatron or a
    // Transformer Engine debug config kept in BF16, a GEMM the run switched itself).
    std::erase_if(
        signals, [&](const Signal &s) { return in.finish.precision.highPrecision(s.series.layer, *s.onset.step); });
    // The suspect first: what began to move before the loss departed (all, without a departure), then what
    // measures damage before what measures range and what only follows a scale, then what moved first, by
    // where it had made half its change (a slow drift of learning leaves its early level long before it has
    // moved far; a broken mechanism moves at once), not what moved most (a consequence can move further than
    // its cause); then the earlier onset, then the larger change.
    const auto before = [&](const Signal &s) { return !c.departure || *s.onset.step <= *c.departure; };
    std::stable_sort(signals.begin(), signals.end(), [&](const Signal &a, const Signal &b) {
        const auto key = [&](const Signal &s) {
            return std::make_tuple(!before(s), int(statKind(s.series.stat)), s.onset.halfway.value_or(*s.onset.step),
                *s.onset.step, -s.onset.size);
        };
        return key(a) < key(b);
    });
    // A mixture-of-experts GEMM's experts: one finding per GEMM, tensor and statistic, the most suspect expert's,
    // saying whether one expert moved (its routing or its scale) or all of them (the GEMM).
    struct ExpertScope {
        ExpertName name;
        int total = 0; // the GEMM's experts with this statistic
        QList<int> moved; // those with a signal, most suspect first
    };
    std::map<size_t, ExpertScope> scopes; // by the kept signal's index
    {
        std::map<std::tuple<QString, QString, QString, QString>, std::set<int>> experts; // gemm, tensor, stat, source
        for (const SeriesPoints &sp : in.finish.risk) {
            if (const auto e = expertOf(sp.series.layer))
                experts[{e->gemm, sp.series.tensor, sp.series.stat, sp.series.source}].insert(e->expert);
        }
        std::map<std::tuple<QString, QString, QString, QString>, size_t> first;
        std::vector<Signal> kept;
        for (const Signal &s : signals) {
            const auto e = expertOf(s.series.layer);
            if (!e) {
                kept.push_back(s);
                continue;
            }
            const auto key = std::make_tuple(e->gemm, s.series.tensor, s.series.stat, s.series.source);
            const auto at = first.find(key);
            if (at == first.end()) {
                first[key] = kept.size();
                scopes[kept.size()] = {*e, int(experts[key].size()), {e->expert}};
                kept.push_back(s);
            } else if (!scopes[at->second].moved.contains(e->expert) && before(s) == before(kept[at->second])) {
                // Experts that moved with the first: causes with a cause, consequences with a consequence (an
                // expert that follows the loss's departure is not part of what moved before it).
                scopes[at->second].moved << e->expert;
            }
        }
        signals.swap(kept);
    }
    for (size_t i = 0; i < signals.size() && i < 12; ++i) {
        const Signal &s = signals[i];
        Finding f;
        f.kind = FindingKind::LayerSignal;
        const bool beforeDeparture = c.departure ? *s.onset.step <= *c.departure : options.live;
        f.severity = beforeDeparture && i == 0 ? Severity::Critical
            : beforeDeparture                  ? Severity::Warning
                                               : Severity::Info;
        f.layer = s.series.layer;
        f.tensor = s.series.tensor;
        f.stat = s.series.stat;
        f.step = s.onset.step;
        const QString when = !c.departure ? (options.live ? QStringLiteral("while the loss has not departed (yet)")
                                                          : QStringLiteral("(the loss does not depart)"))
            : beforeDeparture
            ? QStringLiteral("%1 steps before the loss departs").arg(*c.departure - *s.onset.step)
            : QStringLiteral("%1 steps after the loss departs: a consequence").arg(*s.onset.step - *c.departure);
        f.summary = QStringLiteral("%1 of %2 %3 leaves its early level %4 at step %5, %6")
                        .arg(s.series.stat, s.series.layer, s.series.tensor)
                        .arg(s.onset.early, 0, 'g', 3)
                        .arg(*s.onset.step)
                        .arg(when);
        const auto scope = scopes.find(i);
        QString expertScope;
        QJsonObject expertEvidence;
        if (scope != scopes.end()) {
            const ExpertScope &x = scope->second;
            const int moved = int(x.moved.size());
            // All: every expert, or all but a few of many (an expert no token reached logs nothing to move).
            // All: at least three quarters and two of them (a GEMM of one expert moved whole).
            const int allOf = std::max(std::min(2, x.total), (3 * x.total + 3) / 4);
            expertScope = moved == 1 && x.total > 1 ? QStringLiteral("one")
                : moved >= allOf                    ? QStringLiteral("all")
                                                    : QStringLiteral("some");
            QStringList movedNames;
            for (int e : x.moved)
                movedNames << QString::number(e);
            if (expertScope == QLatin1String("all"))
                f.summary = QStringLiteral("%1 of %2 experts of %3 %4 leaves its early level (the first, expert "
                                           "%5, at step %6, %7): the GEMM moved, not one expert")
                                .arg(s.series.stat,
                                    moved == x.total ? QStringLiteral("all %1").arg(x.total)
                                                     : QStringLiteral("%1 of the %2").arg(moved).arg(x.total),
                                    x.name.gemm, s.series.tensor)
                                .arg(x.name.expert)
                                .arg(*s.onset.step)
                                .arg(when);
            else if (expertScope == QLatin1String("one")) {
                f.summary = QStringLiteral("%1 of expert %2 of %3 %4 leaves its early level %5 at step %6, %7; one "
                                           "expert of %8 moved (its routing or its scale), not the GEMM")
                                .arg(s.series.stat)
                                .arg(x.name.expert)
                                .arg(x.name.gemm, s.series.tensor)
                                .arg(s.onset.early, 0, 'g', 3)
                                .arg(*s.onset.step)
                                .arg(when)
                                .arg(x.total);
                // The router's loss around the onset: a rise says the router sent that expert more than its share.
                if (const auto rise = routerRise(in.run.routerLoss, *s.onset.step, c.plannedSteps)) {
                    expertEvidence.insert(QStringLiteral("router_loss_before"), rise->first);
                    expertEvidence.insert(QStringLiteral("router_loss_after"), rise->second);
                    if (rise->second > rise->first * 1.1)
                        f.summary += QStringLiteral("; the router's load-balancing loss rose from %1 to %2 after it: "
                                                    "the router overloads experts")
                                         .arg(rise->first, 0, 'g', 3)
                                         .arg(rise->second, 0, 'g', 3);
                }
            } else
                f.summary += QStringLiteral("; %1 of the %2 experts of %3 moved (experts %4)")
                                 .arg(moved)
                                 .arg(x.total)
                                 .arg(x.name.gemm, movedNames.join(QStringLiteral(", ")));
            const QJsonObject scopeEvidence {{QStringLiteral("gemm"), x.name.gemm},
                {QStringLiteral("expert"), x.name.expert}, {QStringLiteral("experts"), x.total},
                {QStringLiteral("experts_moved"), QJsonArray::fromStringList(movedNames)},
                {QStringLiteral("expert_scope"), expertScope},
                {QStringLiteral("experts_pattern"), expertsPattern(s.series.layer)}};
            for (auto it = scopeEvidence.begin(); it != scopeEvidence.end(); ++it)
                expertEvidence.insert(it.key(), it.value());
        }
        f.evidence = {{QStringLiteral("onset"), double(*s.onset.step)}, {QStringLiteral("early"), s.onset.early},
            {QStringLiteral("late"), s.onset.late}, {QStringLiteral("threshold"), s.onset.threshold},
            {QStringLiteral("halfway"), double(s.onset.halfway.value_or(*s.onset.step))},
            {QStringLiteral("size"), s.onset.size}, {QStringLiteral("source"), s.series.source},
            {QStringLiteral("peers"), double(s.peers)},
            {QStringLiteral("measures"),
                std::array {QStringLiteral("damage"), QStringLiteral("range"),
                    QStringLiteral("scale")}[size_t(statKind(s.series.stat))]},
            // The deepest layer the run has statistics or dumps of: whether a suspect is a first or last layer.
            {QStringLiteral("deepest_layer"), double(in.finish.lastLayerIndex)},
            {QStringLiteral("lead_steps"),
                c.departure ? QJsonValue(double(*c.departure - *s.onset.step)) : QJsonValue()}};
        for (auto it = expertEvidence.begin(); it != expertEvidence.end(); ++it)
            f.evidence.insert(it.key(), it.value());
        c.findings.push_back(f);
    }
    if (c.departure && !signals.empty() && *signals.front().onset.step <= *c.departure)
        c.lead = *c.departure - *signals.front().onset.step;
}

} // namespace fp8scope::analysis::rules

namespace fp8scope::analysis::rules {

// The run's own switches of a GEMM to high precision (AutoswitchGemm, core/query/precisionmap.h): where the run
// found a GEMM fragile, and when; a suspect the next steps can keep in BF16 for good.
void precisionSwitches(const PairInputs &in, const TriageOptions &, Comparison &c)
{
    int said = 0;
    for (const LayerPrecision &l : in.finish.precision.layers) {
        for (const PrecisionSpan &s : l.spans) {
            if (!s.automatic || said >= 12)
                continue;
            ++said;
            Finding f;
            f.kind = FindingKind::PrecisionSwitch;
            const bool before = c.departure && s.from <= *c.departure;
            f.severity = before ? Severity::Warning : Severity::Info;
            f.layer = l.layer;
            f.stat = s.gemms.join(QLatin1Char('+'));
            f.step = s.from;
            if (s.to != std::numeric_limits<int64_t>::max())
                f.lastStep = s.to;
            f.summary
                = QStringLiteral("the run switched %1 of %2 to high precision at step %3%4 (%5): it found this "
                                 "GEMM fragile there")
                      .arg(s.gemms.join(QStringLiteral(", ")), l.layer)
                      .arg(s.from)
                      .arg(s.to == std::numeric_limits<int64_t>::max() ? QString()
                                                                       : QStringLiteral(" until step %1").arg(s.to))
                      .arg(s.source);
            f.evidence
                = {{QStringLiteral("source"), s.source}, {QStringLiteral("gemms"), QJsonArray::fromStringList(s.gemms)},
                    {QStringLiteral("from"), double(s.from)},
                    {QStringLiteral("to"),
                        s.to == std::numeric_limits<int64_t>::max() ? QJsonValue() : QJsonValue(double(s.to))},
                    {QStringLiteral("before_departure"), before}};
            f.suggestion = QStringLiteral("keep %1 in BF16 from the start (DisableQuantizationGEMM for %2 in the "
                                          "Transformer Engine debug config), so that the run does not depend on the "
                                          "switch")
                               .arg(l.layer, s.gemms.join(QStringLiteral(", ")));
            c.findings.push_back(f);
        }
    }
}

} // namespace fp8scope::analysis::rules
