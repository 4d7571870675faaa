#include "triage.h"

#include "comparetables.h"
#include "triagerules.h"

#include "core/query/pairing.h"
#include "core/query/statnames.h"

#include <QJsonArray>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>

namespace fp8scope::analysis {

namespace {

std::optional<StepSeries> runSeries(const Catalog &catalog, RunRef run, const QString &stat, QString *source = nullptr)
{
    const auto s = catalog.chooseSeries(run, {.stat = stat});
    if (!s)
        return std::nullopt;
    if (source)
        *source = s->source;
    StepSeries out = catalog.stepSeries(*s);
    if (out.empty())
        return std::nullopt;
    return out;
}

// Where `run` leaves `baseline`'s band for good; the spikes either recovered from are neither for nor against.
Departure departureOf(const StepSeries &baseline, const StepSeries &run, bool intervalMeans,
    const DepartureOptions &departure, const SpikeOptions &spikes)
{
    std::vector<std::pair<int64_t, int64_t>> spikeRanges = recoveredSpikeRanges(findSpikes(baseline, spikes));
    for (const auto &r : recoveredSpikeRanges(findSpikes(run, spikes)))
        spikeRanges.push_back(r);
    return findDeparture(align(baseline, run, intervalMeans), departure, spikeRanges);
}

// Whether two runs' consumed samples (or tokens) per step differ by more than 1 %: other batch sizes.
bool batchesDiffer(const StepSeries &a, const StepSeries &b)
{
    const auto rate = [](const StepSeries &s) {
        const StepSeries f = finitePoints(s);
        return f.size() < 2 || f.steps.back() == f.steps.front()
            ? std::numeric_limits<double>::quiet_NaN()
            : (f.values.back() - f.values.front()) / double(f.steps.back() - f.steps.front());
    };
    const double ra = rate(a), rb = rate(b);
    return ra > 0 && rb > 0 && std::abs(ra - rb) > 0.01 * std::max(ra, rb);
}

// A series with its steps replaced by the run's consumed samples at them (interpolated between the logged
// points; points outside them left out).
StepSeries onAxis(const StepSeries &s, const StepSeries &axisIn)
{
    const StepSeries axis = finitePoints(axisIn);
    StepSeries out;
    if (axis.size() < 2)
        return out;
    for (size_t i = 0; i < s.size(); ++i) {
        const auto it = std::lower_bound(axis.steps.begin(), axis.steps.end(), s.steps[i]);
        if (it == axis.steps.end())
            break;
        const size_t j = size_t(it - axis.steps.begin());
        double x = axis.values[j];
        if (*it != s.steps[i]) {
            if (j == 0)
                continue;
            const double t = double(s.steps[i] - axis.steps[j - 1]) / double(axis.steps[j] - axis.steps[j - 1]);
            x = axis.values[j - 1] + t * (axis.values[j] - axis.values[j - 1]);
        }
        const int64_t key = int64_t(std::llround(x));
        if (!out.steps.empty() && key <= out.steps.back())
            continue; // consumed samples only grow; a repeat (a rewind's leftovers) is left out
        out.steps.push_back(key);
        out.values.push_back(s.values[i]);
    }
    return out;
}

// The step at which a run had consumed `x` samples (interpolated); nullopt outside what it logged.
std::optional<int64_t> stepAt(const StepSeries &axisIn, int64_t x)
{
    const StepSeries axis = finitePoints(axisIn);
    const auto it = std::lower_bound(axis.values.begin(), axis.values.end(), double(x));
    if (it == axis.values.end())
        return axis.size() > 0 ? std::optional<int64_t>(axis.steps.back()) : std::nullopt;
    const size_t j = size_t(it - axis.values.begin());
    if (j == 0 || *it == double(x))
        return axis.steps[j];
    const double t = (double(x) - axis.values[j - 1]) / (axis.values[j] - axis.values[j - 1]);
    return int64_t(std::llround(double(axis.steps[j - 1]) + t * double(axis.steps[j] - axis.steps[j - 1])));
}

// The planned steps of a run: its config's train iterations, else the last step it logged.
int64_t plannedSteps(const Catalog &catalog, RunRef run, int64_t lastStep)
{
    static const QStringList keys {QStringLiteral("train_iters"), QStringLiteral("--train-iters"),
        QStringLiteral("train-iters"), QStringLiteral("max_steps"), QStringLiteral("num_train_steps"),
        QStringLiteral("total_steps")};
    for (const ConfigEntry &c : catalog.configs(run)) {
        const QString k = c.key.section(QLatin1Char('.'), -1).toLower();
        bool ok = false;
        const int64_t v = c.value.toLongLong(&ok);
        if (keys.contains(k) && ok && v > 0)
            return v;
    }
    return lastStep;
}

QString runName(const Catalog &catalog, RunRef ref)
{
    const auto r = catalog.run(ref);
    return r ? r->name : QString();
}

// The direction in which a tensor statistic carries risk, or nullopt for statistics the triage does not read
// (min, max, mean, std, norms of healthy training move for reasons of their own).
std::optional<Direction> riskDirection(const QString &stat)
{
    static const std::map<QString, Direction> directions {{QStringLiteral("underflows%"), Direction::Up},
        {QStringLiteral("overflows%"), Direction::Up}, {QStringLiteral("mse"), Direction::Up},
        {QStringLiteral("cur_amax"), Direction::Up}, {QStringLiteral("dynamic_range"), Direction::Up},
        {QStringLiteral("relative_error"), Direction::Up}, {QStringLiteral("cosine"), Direction::Down},
        {QStringLiteral("sqnr_db"), Direction::Down}, {QStringLiteral("scale_inv_min"), Direction::Either},
        {QStringLiteral("scale_inv_max"), Direction::Either}};
    const auto it = directions.find(stat);
    if (it != directions.end())
        return it->second;
    if (stat.startsWith(QLatin1String("max_blockwise_dynamic_range")))
        return Direction::Up;
    return std::nullopt;
}

int severityRank(Severity s)
{
    return s == Severity::Critical ? 0 : s == Severity::Warning ? 1 : 2;
}

// Most important first: severity, then kind; layer signals keep their onset order (stable).
void rank(std::vector<Finding> *findings)
{
    std::stable_sort(findings->begin(), findings->end(), [](const Finding &a, const Finding &b) {
        if (severityRank(a.severity) != severityRank(b.severity))
            return severityRank(a.severity) < severityRank(b.severity);
        return findingKindInfo(a.kind).rank < findingKindInfo(b.kind).rank;
    });
}

// The median step between a series' points (1 when it has fewer than two).
int64_t medianInterval(const StepSeries &s)
{
    std::vector<double> gaps;
    for (size_t i = 1; i < s.size(); ++i)
        gaps.push_back(double(s.steps[i] - s.steps[i - 1]));
    return gaps.empty() ? 1 : std::max<int64_t>(1, int64_t(median(gaps)));
}

// The spikes of `a` that `b` has no spike within `tolerance` steps of.
size_t unmatchedSpikes(const SpikeReport &a, const SpikeReport &b, int64_t tolerance)
{
    size_t n = 0;
    for (const Spike &x : a.spikes) {
        const bool matched = std::any_of(
            b.spikes.begin(), b.spikes.end(), [&](const Spike &y) { return std::abs(y.step - x.step) <= tolerance; });
        n += matched ? 0 : 1;
    }
    return n;
}

struct Signal {
    Series series;
    Onset onset;
    size_t peers = 0; // the layers it was measured against (0: on its own)
};

// A statistic's early level: the median of its first share of the finite points (at least 5), as findOnset
// takes it.
double earlyLevel(const StepSeries &s, double fraction)
{
    std::vector<double> early;
    const size_t m = std::max<size_t>(5, size_t(std::ceil(fraction * double(s.size()))));
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
void normalizeByPeers(
    std::vector<StepSeries> *series, const std::vector<size_t> &members, double fraction, std::vector<size_t> *peers)
{
    if (members.size() < 4)
        return;
    // The steps any member has, and where each member's points fall among them (the same steps for all, as a
    // TE statistics log writes them, need no search).
    std::vector<int64_t> steps = (*series)[members.front()].steps, merged;
    for (size_t m : members) {
        const std::vector<int64_t> &own = (*series)[m].steps;
        if (own == steps)
            continue;
        merged.clear();
        std::set_union(steps.begin(), steps.end(), own.begin(), own.end(), std::back_inserter(merged));
        steps.swap(merged);
    }
    std::vector<std::vector<uint32_t>> slots(members.size());
    for (size_t m = 0; m < members.size(); ++m) {
        const StepSeries &s = (*series)[members[m]];
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
    std::vector<double> early(members.size());
    for (size_t m = 0; m < members.size(); ++m)
        early[m] = earlyLevel((*series)[members[m]], fraction);
    const auto usable = [](double v) { return std::isfinite(v) && v >= 0; };
    constexpr size_t kBlock = 512;
    const size_t M = members.size();
    std::vector<double> factor(steps.size(), std::numeric_limits<double>::quiet_NaN());
    std::vector<double> block(kBlock * M);
    std::vector<uint32_t> filled(kBlock);
    std::vector<size_t> cursor(M, 0);
    for (size_t k0 = 0; k0 < steps.size(); k0 += kBlock) {
        const size_t k1 = std::min(steps.size(), k0 + kBlock);
        std::fill(filled.begin(), filled.end(), 0);
        for (size_t m = 0; m < M; ++m) {
            const StepSeries &s = (*series)[members[m]];
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
        if (!(early[m] > 0))
            continue;
        StepSeries &s = (*series)[members[m]];
        for (size_t i = 0; i < s.size(); ++i) {
            const double f = factor[slots[m][i]];
            if (f > 0)
                s.values[i] /= f;
        }
        (*peers)[members[m]] = members.size() - 1;
    }
}

// The layer signals of a run: every risk statistic's sustained change against its peers, earliest first
// (what moved first is the suspect, not what moved most). Truncated statistics are reported once per
// statistic.
std::vector<Signal> layerSignals(
    const Catalog &catalog, RunRef run, const OnsetOptions &base, std::set<QString> *truncated)
{
    std::vector<Series> kept;
    std::vector<StepSeries> points;
    std::vector<Direction> directions;
    std::map<std::tuple<QString, QString, QString>, std::vector<size_t>> groups; // tensor, stat, source
    for (const Series &s : catalog.series(run)) {
        if (s.layer.isEmpty() || s.points < 8)
            continue;
        const auto direction = riskDirection(s.stat);
        if (!direction)
            continue;
        StepSeries p = catalog.stepSeries(s);
        // A statistic that cannot be exactly zero (an MSE, a scale, an amax) reading 0.0000 was printed too
        // small for the log's four decimals; underflows% and overflows% of 0 are real.
        static const QStringList neverZero {QStringLiteral("mse"), QStringLiteral("scale_inv_min"),
            QStringLiteral("scale_inv_max"), QStringLiteral("cur_amax"), QStringLiteral("relative_error")};
        if (neverZero.contains(s.stat) && looksTruncated(p.values)) {
            truncated->insert(s.stat);
            continue;
        }
        groups[{s.tensor, s.stat, s.source}].push_back(kept.size());
        kept.push_back(s);
        points.push_back(std::move(p));
        directions.push_back(*direction);
    }
    std::vector<size_t> peers(kept.size(), 0);
    for (const auto &[key, members] : groups)
        normalizeByPeers(&points, members, base.earlyFraction, &peers);
    std::vector<Signal> out;
    for (size_t i = 0; i < kept.size(); ++i) {
        OnsetOptions o = base;
        // The TE statistics log prints four decimals: a change smaller than that is not one.
        if (kept[i].source.startsWith(QLatin1String("te-debug")))
            o.absolute = std::max(o.absolute, 2e-4);
        const Onset onset = findOnset(points[i], directions[i], o);
        if (onset.step)
            out.push_back({kept[i], onset, peers[i]});
    }
    std::stable_sort(out.begin(), out.end(), [](const Signal &a, const Signal &b) {
        if (*a.onset.step != *b.onset.step)
            return *a.onset.step < *b.onset.step;
        return a.onset.size > b.onset.size;
    });
    return out;
}

// Skipped and NaN iterations (Megatron's counts per log interval), after the start-up steps (those of the
// first steps are an FP16 loss scaler finding its scale).
struct SkipCounts {
    double total = 0, late = 0, nan = 0;
    size_t lateIntervals = 0; // log intervals after the start-up with a skip: one spike's skips come in one or two
    std::vector<int64_t> lateSteps; // their steps
    size_t atSpikes = 0; // of those, the intervals at one of the run's own loss spikes
    int64_t lateSpan = 0; // the steps after the start-up the counts cover
    std::optional<int64_t> first, last;
};

SkipCounts countSkips(const Catalog &catalog, RunRef run, int64_t startUp)
{
    SkipCounts c;
    if (const auto skipped = runSeries(catalog, run, QStringLiteral("number of skipped iterations"))) {
        for (size_t i = 0; i < skipped->size(); ++i) {
            const double v = skipped->values[i];
            if (skipped->steps[i] > startUp)
                c.lateSpan = std::max(c.lateSpan, skipped->steps[i] - startUp);
            if (!(v > 0))
                continue;
            c.total += v;
            if (!c.first)
                c.first = skipped->steps[i];
            c.last = skipped->steps[i];
            if (skipped->steps[i] > startUp) {
                c.late += v;
                ++c.lateIntervals;
                c.lateSteps.push_back(skipped->steps[i]);
            }
        }
    }
    if (const auto nans = runSeries(catalog, run, QStringLiteral("number of nan iterations"))) {
        for (double v : nans->values)
            c.nan += v > 0 ? v : 0.0;
    }
    return c;
}

// Counts the skip intervals of `c` that fall at one of the run's own loss spikes (within two log intervals of
// its start): the skips are that spike's symptom, and the spike test has weighed the spike already.
void countSkipsAtSpikes(const Catalog &catalog, RunRef run, const SpikeOptions &options, SkipCounts *c)
{
    const auto loss = runSeries(catalog, run, QStringLiteral("lm loss"));
    if (!loss || c->lateSteps.empty())
        return;
    const SpikeReport spikes = findSpikes(*loss, options);
    const int64_t tolerance = 2 * std::max<int64_t>(1, medianInterval(*loss));
    for (int64_t step : c->lateSteps) {
        bool at = false;
        for (const Spike &sp : spikes.spikes)
            at = at || std::abs(step - sp.step) <= tolerance;
        c->atSpikes += at ? 1 : 0;
    }
}

// The finding: checked alone, any skip after the start-up or any NaN iteration is a warning (steps whose
// gradients were not finite). Against a baseline, a skip at one of the run's own loss spikes is that spike's
// symptom, which the spike test weighs against the baseline's spikes: counted once, there. The skips elsewhere
// after the start-up are a warning when their intervals outnumber the baseline's (also those away from its
// spikes) beyond chance, by the same test at the same significance; otherwise they are said (info). NaN
// iterations stay a warning either way.
std::optional<Finding> skippedIterations(
    const Catalog &catalog, RunRef run, int64_t planned, RunRef baseline = {}, const TriageOptions &options = {})
{
    const int64_t startUp = std::max<int64_t>(100, planned / 20);
    const SkipCounts c = countSkips(catalog, run, startUp);
    if (c.total <= 0 && c.nan <= 0)
        return std::nullopt;
    Finding f;
    f.kind = FindingKind::SkippedIterations;
    f.stat = QStringLiteral("number of skipped iterations");
    f.step = c.first;
    f.lastStep = c.last;
    std::optional<SkipCounts> base;
    double p = -1;
    bool moreOften = c.late > 0;
    SkipCounts own = c;
    size_t elsewhere = c.lateIntervals, baseElsewhere = 0;
    if (baseline.isValid() && c.late > 0) {
        base = countSkips(catalog, baseline, startUp);
        countSkipsAtSpikes(catalog, run, options.spikes, &own);
        countSkipsAtSpikes(catalog, baseline, options.spikes, &*base);
        elsewhere = own.lateIntervals - own.atSpikes;
        baseElsewhere = base->lateIntervals - base->atSpikes;
        const size_t span = size_t(std::max<int64_t>(c.lateSpan, 1)),
                     baseSpan = size_t(std::max<int64_t>(base->lateSpan, 1));
        p = spikeRateP(elsewhere, span, baseElsewhere, baseSpan);
        moreOften = spikesMoreOften(elsewhere, span, baseElsewhere, baseSpan, options.spikeAlpha, options.minSpikes);
    }
    f.severity = moreOften || c.nan > 0 ? Severity::Warning : Severity::Info;
    if (c.late <= 0 && c.nan <= 0) {
        f.summary = QStringLiteral("%1 iterations skipped, all by step %2: the loss scaler finding its scale")
                        .arg(c.total)
                        .arg(*c.last);
    } else if (base && !moreOften && c.nan <= 0) {
        f.summary = QStringLiteral("%1 iterations skipped after step %2 in %3 log intervals, %4 of them at the "
                                   "run's own loss spikes (weighed with the spikes); elsewhere %5 against %6 of the "
                                   "baseline's: not more often beyond chance (p = %7)")
                        .arg(c.late)
                        .arg(startUp)
                        .arg(c.lateIntervals)
                        .arg(own.atSpikes)
                        .arg(elsewhere)
                        .arg(baseElsewhere)
                        .arg(p, 0, 'g', 2);
    } else {
        f.summary = QStringLiteral("%1 iterations skipped (%2 after step %3), %4 NaN: steps whose gradients were not "
                                   "finite")
                        .arg(c.total)
                        .arg(c.late)
                        .arg(startUp)
                        .arg(c.nan);
        if (base)
            f.summary += QStringLiteral("; away from its loss spikes in %1 log intervals against %2 of the "
                                        "baseline's (p = %3)")
                             .arg(elsewhere)
                             .arg(baseElsewhere)
                             .arg(p, 0, 'g', 2);
    }
    f.evidence = {{QStringLiteral("skipped"), c.total}, {QStringLiteral("skipped_after_start"), c.late},
        {QStringLiteral("intervals_after_start"), double(c.lateIntervals)},
        {QStringLiteral("intervals_at_spikes"), base ? QJsonValue(double(own.atSpikes)) : QJsonValue()},
        {QStringLiteral("nan"), c.nan}, {QStringLiteral("start_steps"), double(startUp)},
        {QStringLiteral("first"), c.first ? QJsonValue(double(*c.first)) : QJsonValue()},
        {QStringLiteral("last"), c.last ? QJsonValue(double(*c.last)) : QJsonValue()},
        {QStringLiteral("baseline_intervals_elsewhere"), base ? QJsonValue(double(baseElsewhere)) : QJsonValue()},
        {QStringLiteral("p"), p >= 0 ? QJsonValue(p) : QJsonValue()}};
    if (f.severity == Severity::Warning)
        f.suggestion = QStringLiteral("find the layers whose statistics overflow near those steps (overflows%, "
                                      "cur_amax) and keep them in BF16, or lower the learning rate");
    return f;
}

// The rewinds of a run's log (the Megatron importer's "rewind" series: at the step a resume went back to,
// the last step printed before it). The steps in between were trained twice; the store holds the
// values of the second time, as the training went on from them.
std::optional<Finding> rewinds(const Catalog &catalog, RunRef run)
{
    const auto r = runSeries(catalog, run, QStringLiteral("rewind"));
    if (!r)
        return std::nullopt;
    Finding f;
    f.kind = FindingKind::Restart;
    f.severity = Severity::Info;
    f.stat = QStringLiteral("rewind");
    f.step = r->steps.front();
    f.lastStep = r->steps.back();
    QJsonArray list;
    QStringList text;
    int64_t repeated = 0;
    for (size_t i = 0; i < r->size(); ++i) {
        const int64_t resumedAt = r->steps[i], crashedAt = int64_t(r->values[i]);
        repeated += std::max<int64_t>(0, crashedAt - resumedAt);
        list.append(QJsonObject {{QStringLiteral("last_step_before"), double(crashedAt)},
            {QStringLiteral("resumed_from"), double(resumedAt)}});
        text << QStringLiteral("from step %1 back to %2").arg(crashedAt).arg(resumedAt);
    }
    f.summary = QStringLiteral("%1 (%2): the log goes %3; the steps trained again are read as the resumed run "
                               "printed them")
                    .arg(runName(catalog, run))
                    .arg(r->size() == 1 ? QStringLiteral("a crash and a resume")
                                        : QStringLiteral("%1 resumes").arg(r->size()),
                        text.join(QStringLiteral(", ")));
    f.evidence = {{QStringLiteral("rewinds"), list}, {QStringLiteral("steps_repeated"), double(repeated)}};
    return f;
}

// The recipe what-if on the evidence dump of the first suspect (chooseEvidenceDump: the dump that shows the
// damage): the metrics recomputed from it under each recipe (`fp8scope-cli recompute`, the wizard's what-if
// job), side by side, and the FP8 recipe that quantizes it best (whatif.h's criterion; BF16 is the reference,
// never a candidate); a dump not yet recomputed says how to get the table. None without a dump of that layer
// and tensor.
std::optional<Finding> recipeWhatIf(const Catalog &catalog, const EvidenceDump &evidence, const QString &runRecipe)
{
    const Dump &dump = evidence.dump;
    const int64_t step = dump.record.step;
    Finding f;
    f.kind = FindingKind::RecipeWhatIf;
    f.severity = Severity::Info;
    f.layer = dump.record.layer;
    f.tensor = dump.record.tensor;
    f.step = step;
    // recipe -> statistic -> value, of the series recomputed from dumps at exactly that step.
    const std::vector<WhatIfScore> scores = storedWhatIf(catalog, evidence);
    std::map<QString, std::map<QString, double>> table;
    static const QStringList shown {
        QStringLiteral("mse"), QStringLiteral("underflows%"), QStringLiteral("overflows%"), QStringLiteral("sqnr_db")};
    for (const Series &s : catalog.seriesAt(dump.run, f.layer, f.tensor)) {
        if (!s.isRecomputed() || !shown.contains(s.stat))
            continue;
        const auto p = catalog.valueAt(s, step);
        if (p && p->step == step && std::isfinite(p->value))
            table[s.recipe][s.stat] = p->value;
    }
    QJsonObject recipes;
    for (const auto &[recipe, stats] : table) {
        QJsonObject o;
        for (const auto &[stat, v] : stats)
            o.insert(stat, v);
        recipes.insert(recipe, o);
    }
    const std::optional<size_t> best = bestWhatIfRecipe(scores);
    f.evidence = {{QStringLiteral("dump"), dump.file}, {QStringLiteral("dataset"), dump.record.dataset},
        {QStringLiteral("step"), double(step)}, {QStringLiteral("onset"), double(evidence.onset)},
        {QStringLiteral("chosen_because"), evidence.why}, {QStringLiteral("recipes"), recipes},
        {QStringLiteral("best"), best ? QJsonValue(scores[*best].recipe) : QJsonValue()},
        {QStringLiteral("criterion"), whatIfCriterion()}};
    if (table.empty()) {
        f.summary = QStringLiteral("%1 %2 was dumped at step %3 (%4); its metrics under other recipes are not "
                                   "computed yet")
                        .arg(f.layer, f.tensor)
                        .arg(step)
                        .arg(evidence.why);
        f.suggestion = QStringLiteral("fp8scope-cli recompute FOLDER --recipe delayed --recipe current --recipe "
                                      "mxfp8 --recipe block1x128, then triage again for the what-if table");
        return f;
    }
    QStringList parts;
    for (const auto &[recipe, stats] : table) {
        const auto mse = stats.find(QStringLiteral("mse"));
        const auto under = stats.find(QStringLiteral("underflows%"));
        parts << QStringLiteral("%1: mse %2%3")
                     .arg(recipe)
                     .arg(mse == stats.end() ? QStringLiteral("-") : QString::number(mse->second, 'g', 3))
                     .arg(under == stats.end() ? QString()
                                               : QStringLiteral(", underflows %1 %").arg(under->second, 0, 'g', 3));
    }
    f.summary = QStringLiteral("on the dump of %1 %2 at step %3 (%4): %5")
                    .arg(f.layer, f.tensor)
                    .arg(step)
                    .arg(evidence.why)
                    .arg(parts.join(QStringLiteral("; ")));
    if (best) {
        const QString name = scores[*best].recipe;
        f.suggestion = sameRecipe(name, runRecipe)
            ? QStringLiteral("%1, the run's own recipe, already quantizes this tensor best of the FP8 recipes tried "
                             "(%2): a recipe change does not help it; keep the layer in BF16 instead")
                  .arg(name, whatIfCriterion())
            : QStringLiteral("%1 quantizes this tensor best of the FP8 recipes tried (%2): try it for this run (one "
                             "change at a time)")
                  .arg(name, whatIfCriterion());
    }
    return f;
}

} // namespace

QString verdictName(Verdict v)
{
    switch (v) {
    case Verdict::None: return QStringLiteral("none");
    case Verdict::EarlyDivergence: return QStringLiteral("early-divergence");
    case Verdict::MidRunInstability: return QStringLiteral("mid-run-instability");
    case Verdict::LossSpikes: return QStringLiteral("loss-spikes");
    case Verdict::DownstreamGap: return QStringLiteral("downstream-gap");
    }
    return {};
}

QString severityName(Severity s)
{
    switch (s) {
    case Severity::Info: return QStringLiteral("info");
    case Severity::Warning: return QStringLiteral("warning");
    case Severity::Critical: return QStringLiteral("critical");
    }
    return {};
}

namespace {

// A prerequisite of FP8 training (Transformer Engine's implementation) or the parallel layout, by the key's
// last part in snake case; "" for any other key.
QString contextOf(const QString &joined)
{
    static const QStringList prerequisite {QStringLiteral("transformer_impl"), QStringLiteral("use_te"),
        QStringLiteral("use_transformer_engine")};
    static const QStringList layout {QStringLiteral("sequence_parallel"), QStringLiteral("use_distributed_optimizer"),
        QStringLiteral("num_layers_per_virtual_pipeline_stage"), QStringLiteral("decoder_first_pipeline_num_layers"),
        QStringLiteral("decoder_last_pipeline_num_layers"), QStringLiteral("tp"), QStringLiteral("pp"),
        QStringLiteral("cp"), QStringLiteral("ep")};
    if (prerequisite.contains(joined))
        return QStringLiteral("a prerequisite of FP8 training");
    if (layout.contains(joined) || joined.endsWith(QLatin1String("_parallel_size")))
        return QStringLiteral("the parallel layout");
    return {};
}

QString joinedKey(const QString &key)
{
    static const QRegularExpression sep(QStringLiteral("[^a-z0-9]+"));
    return key.section(QLatin1Char('.'), -1).toLower().split(sep, Qt::SkipEmptyParts).join(QLatin1Char('_'));
}

} // namespace

QString contextReason(const QString &key)
{
    return contextOf(joinedKey(key));
}

KeyClass classifyConfigKey(const QString &key)
{
    const QString joined = joinedKey(key);
    if (!contextOf(joined).isEmpty())
        return KeyClass::Context;
    // Features the field names as causes of early divergence (FIELD.md): FP8 parameters and their gather,
    // CPU offloading, overlapped parameter gather or TP communication, the amax reduction group.
    for (const char *suspect : {"fp8_param", "primary_weights_in_fp8", "fp8_weight", "cpu_offload", "offload",
             "overlap_param_gather", "tp_comm_overlap", "overlap_grad_reduce", "amax_reduction", "reduce_amax",
             "fp8_dpa", "fp8_mha", "fp8_dot_product_attention", "fp8_multi_head_attention", "fp8_all_gather",
             "fp8_allgather", "delay_wgrad", "fp8_wgrad"}) {
        if (joined.contains(QLatin1String(suspect)))
            return KeyClass::Suspect;
    }
    if (isPairingNeutralKey(key)) {
        // Precision, recipe and FP8 settings are what the comparison is about; paths and names are incidental.
        static const QRegularExpression incidental(QStringLiteral(
            "(^|_)(save|load|dir|path|name|wandb|tensorboard|log|checkpoint|output|timestamp|date|job|host|exp)(_|$)"));
        return incidental.match(joined).hasMatch() ? KeyClass::Incidental : KeyClass::Expected;
    }
    return KeyClass::Other;
}

QString findingIdentity(const Finding &f)
{
    return QStringList {findingKindName(f.kind), f.layer, f.tensor, f.stat, f.key, f.task}.join(QLatin1Char('|'));
}

QJsonObject findingJson(const Finding &f)
{
    QJsonObject o {{QStringLiteral("kind"), findingKindName(f.kind)}, {QStringLiteral("severity"), severityName(f.severity)},
        {QStringLiteral("summary"), f.summary}};
    const auto put = [&](const char *name, const QString &v) {
        if (!v.isEmpty())
            o.insert(QLatin1String(name), v);
    };
    put("layer", f.layer);
    put("tensor", f.tensor);
    put("stat", f.stat);
    put("key", f.key);
    put("task", f.task);
    if (f.step)
        o.insert(QStringLiteral("step"), double(*f.step));
    if (!f.evidence.isEmpty())
        o.insert(QStringLiteral("evidence"), f.evidence);
    put("suggestion", f.suggestion);
    return o;
}

Comparison compareRuns(
    const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options, StatComparison *lossOut)
{
    Comparison c;
    c.baseline = baseline;
    c.run = run;
    const QString baseName = runName(catalog, baseline);
    StatComparison lossHere;
    StatComparison &loss = lossOut ? *lossOut : lossHere;
    loss = compareStatistic(catalog, baseline, run, QStringLiteral("lm loss"), options);
    const std::optional<StepSeries> &baseLoss = loss.baselinePoints, &runLoss = loss.runPoints;
    int64_t last = 0;
    for (const std::optional<StepSeries> *s : {&baseLoss, &runLoss}) { // by pointer: the series are long
        if (*s && !(*s)->empty())
            last = std::max(last, (*s)->steps.back());
    }
    c.plannedSteps = std::max(plannedSteps(catalog, run, last), plannedSteps(catalog, baseline, last));

    // The loss: where the run leaves the baseline's band for good.
    Departure departure;
    std::optional<int64_t> baselineDeparture; // the baseline's step at the same consumed samples
    QString axis = QStringLiteral("step");
    if (loss.found) {
        departure = loss.departure;
        baselineDeparture = loss.baselineStep;
        axis = loss.axis;
        c.departure = departure.step;
        if (departure.step) {
            Finding f;
            f.kind = FindingKind::LossDeparture;
            f.severity = Severity::Critical;
            f.stat = QStringLiteral("lm loss");
            f.step = departure.step;
            f.summary = QStringLiteral("the loss leaves %1's band at step %2 (between %3 and %4) and stays above it; "
                                       "%5 higher at the end")
                            .arg(baseName)
                            .arg(*departure.step)
                            .arg(departure.low)
                            .arg(departure.high)
                            .arg(departure.gapAtEnd, 0, 'g', 3);
            f.evidence = {{QStringLiteral("step"), double(*departure.step)},
                {QStringLiteral("low"), double(departure.low)}, {QStringLiteral("high"), double(departure.high)},
                {QStringLiteral("offset_before"), departure.offset}, {QStringLiteral("noise"), departure.noise},
                {QStringLiteral("band"), departure.band}, {QStringLiteral("gap_at_end"), departure.gapAtEnd},
                {QStringLiteral("points"), double(departure.points)},
                {QStringLiteral("planned_steps"), double(c.plannedSteps)}, {QStringLiteral("aligned_on"), axis}};
            c.findings.push_back(f);
        }
    }

    // The grad norm: a departure of its own, before the loss's an early warning, after it a consequence.
    if (const StatComparison grad = compareStatistic(catalog, baseline, run, QStringLiteral("grad norm"), options);
        grad.departure.step) {
        const Departure &g = grad.departure;
        Finding f;
        f.kind = FindingKind::GradNormDeparture;
        f.severity = Severity::Warning;
        f.stat = QStringLiteral("grad norm");
        f.step = g.step;
        const QString when = !c.departure ? QStringLiteral("while the loss does not depart")
            : *g.step <= *c.departure ? QStringLiteral("%1 steps before the loss departs").arg(*c.departure - *g.step)
                                      : QStringLiteral("%1 steps after the loss departs").arg(*g.step - *c.departure);
        f.summary = QStringLiteral("the grad norm leaves %1's band at step %2 (between %3 and %4), %5; %6 higher at "
                                   "the end")
                        .arg(baseName)
                        .arg(*g.step)
                        .arg(g.low)
                        .arg(g.high)
                        .arg(when)
                        .arg(g.gapAtEnd, 0, 'g', 3);
        f.evidence = {{QStringLiteral("step"), double(*g.step)}, {QStringLiteral("low"), double(g.low)},
            {QStringLiteral("high"), double(g.high)}, {QStringLiteral("offset_before"), g.offset},
            {QStringLiteral("noise"), g.noise}, {QStringLiteral("band"), g.band},
            {QStringLiteral("gap_at_end"), g.gapAtEnd}, {QStringLiteral("points"), double(g.points)},
            {QStringLiteral("relative_tolerance"), grad.options.relativeTolerance},
            {QStringLiteral("lead_steps"), c.departure ? QJsonValue(double(*c.departure - *g.step)) : QJsonValue()}};
        c.findings.push_back(f);
    }

    // Spikes, before the departure (after it the loss has left its course anyway).
    if (baseLoss && runLoss) {
        const auto before = [&](const StepSeries &s, const std::optional<int64_t> &end) {
            if (!end)
                return s;
            StepSeries out;
            for (size_t i = 0; i < s.size() && s.steps[i] < *end; ++i) {
                out.steps.push_back(s.steps[i]);
                out.values.push_back(s.values[i]);
            }
            return out;
        };
        const SpikeReport sb = findSpikes(before(*baseLoss, baselineDeparture), options.spikes);
        const SpikeReport sr = findSpikes(before(*runLoss, departure.step), options.spikes);
        // Spikes both runs have at the same steps are the data's (the same batches in the same order), not the
        // precision's: the test compares the spikes only one of them has. The exposure is the steps a run's
        // points cover, not their number: runs logged at other intervals see the same spikes in more or fewer
        // points.
        const int64_t tolerance = 2 * std::max(medianInterval(*baseLoss), medianInterval(*runLoss));
        const size_t runOnly = unmatchedSpikes(sr, sb, tolerance), baseOnly = unmatchedSpikes(sb, sr, tolerance);
        const size_t shared = sr.spikes.size() - runOnly;
        const size_t runSpan = size_t(std::max<int64_t>(sr.span, 1)), baseSpan = size_t(std::max<int64_t>(sb.span, 1));
        const double p = spikeRateP(runOnly, runSpan, baseOnly, baseSpan);
        if (spikesMoreOften(runOnly, runSpan, baseOnly, baseSpan, options.spikeAlpha, options.minSpikes)) {
            Finding f;
            f.kind = FindingKind::LossSpikes;
            f.severity = Severity::Warning;
            f.stat = QStringLiteral("lm loss");
            f.step = sr.spikes.front().step;
            f.lastStep = sr.spikes.back().step;
            QJsonArray steps;
            size_t recovered = 0;
            for (const Spike &s : sr.spikes) {
                if (steps.size() < 20)
                    steps.append(double(s.step));
                recovered += s.recoveredAt ? 1 : 0;
            }
            f.summary = QStringLiteral("%1 loss spikes of its own in %2 steps against %3 of %4's own in %5 steps "
                                       "(p = %6; %7 more at the same steps in both); %8 of %9 recovered")
                            .arg(runOnly)
                            .arg(runSpan)
                            .arg(baseOnly)
                            .arg(baseName)
                            .arg(baseSpan)
                            .arg(p, 0, 'g', 2)
                            .arg(shared)
                            .arg(recovered)
                            .arg(sr.spikes.size());
            f.evidence = {{QStringLiteral("spikes"), double(sr.spikes.size())},
                {QStringLiteral("baseline_spikes"), double(sb.spikes.size())},
                {QStringLiteral("own_spikes"), double(runOnly)},
                {QStringLiteral("baseline_own_spikes"), double(baseOnly)},
                {QStringLiteral("shared_spikes"), double(shared)},
                {QStringLiteral("match_tolerance_steps"), double(tolerance)},
                {QStringLiteral("points"), double(sr.points)}, {QStringLiteral("baseline_points"), double(sb.points)},
                {QStringLiteral("steps_covered"), double(runSpan)},
                {QStringLiteral("baseline_steps_covered"), double(baseSpan)}, {QStringLiteral("p"), p},
                {QStringLiteral("recovered"), double(recovered)}, {QStringLiteral("steps"), steps}};
            f.suggestion = QStringLiteral("lower the peak learning rate or lengthen its warm-up, or try current "
                                          "scaling instead of delayed (one change at a time)");
            c.findings.push_back(f);
        }
    }

    // Config and version differences, off the comparison's table.
    const ConfigTable config = configTable(catalog, baseline, run);
    for (const ConfigRow &row : config.rows) {
        if (!row.differs)
            continue;
        Finding f;
        f.key = row.key;
        if (row.version) {
            f.kind = FindingKind::VersionDifference;
            f.severity = row.keyClass == KeyClass::Suspect ? Severity::Warning : Severity::Info;
            f.summary = QStringLiteral("%1 %2 here, %3 in %4").arg(row.key, row.run, row.baseline, baseName);
            f.evidence = {{QStringLiteral("run"), row.run}, {QStringLiteral("baseline"), row.baseline}};
            f.suggestion = QStringLiteral("run with %1 %2, as %3 did").arg(row.key, row.baseline, baseName);
        } else {
            if (!config.haveBoth
                || (row.keyClass != KeyClass::Suspect && row.keyClass != KeyClass::Other
                    && row.keyClass != KeyClass::Context))
                continue;
            f.kind = FindingKind::ConfigDifference;
            f.severity = row.keyClass == KeyClass::Suspect ? Severity::Warning : Severity::Info;
            f.evidence = {{QStringLiteral("run"), row.run}, {QStringLiteral("baseline"), row.baseline},
                {QStringLiteral("class"), keyClassName(row.keyClass)}};
            if (row.keyClass == KeyClass::Context) {
                // A prerequisite of FP8 or the parallel layout: context, never a suspect to undo.
                f.summary = QStringLiteral("%1 is %2 here and %3 in %4 (%5: context, not a suspect)")
                                .arg(row.key, row.run, row.baseline, baseName, contextReason(row.key));
            } else {
                f.summary = QStringLiteral("%1 is %2 here and %3 in %4").arg(row.key, row.run, row.baseline, baseName);
                f.suggestion = QStringLiteral("set %1 back to %2 (as in %3) and run again")
                                   .arg(row.key, row.baseline, baseName);
            }
        }
        c.findings.push_back(f);
    }

    // Layer signals: what moved first.
    std::set<QString> truncated;
    OnsetOptions onset = options.onset;
    if (options.live)
        onset.plannedSteps = c.plannedSteps;
    const std::vector<Signal> signals = layerSignals(catalog, run, onset, &truncated);
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
        f.evidence = {{QStringLiteral("onset"), double(*s.onset.step)}, {QStringLiteral("early"), s.onset.early},
            {QStringLiteral("late"), s.onset.late}, {QStringLiteral("threshold"), s.onset.threshold},
            {QStringLiteral("size"), s.onset.size}, {QStringLiteral("source"), s.series.source},
            {QStringLiteral("peers"), double(s.peers)},
            {QStringLiteral("lead_steps"),
                c.departure ? QJsonValue(double(*c.departure - *s.onset.step)) : QJsonValue()}};
        c.findings.push_back(f);
    }
    if (c.departure && !signals.empty() && *signals.front().onset.step <= *c.departure)
        c.lead = *c.departure - *signals.front().onset.step;
    // The first suspect's what-if on the dump that shows its damage.
    for (const Finding &f : c.findings) {
        if (f.kind != FindingKind::LayerSignal || f.severity == Severity::Info)
            continue;
        if (const auto evidence = chooseEvidenceDump(catalog, run, f, evidenceWindowEnd(c, *f.step))) {
            const auto r = catalog.run(run);
            if (const auto w = recipeWhatIf(catalog, *evidence, r ? r->recipe : QString()))
                c.findings.push_back(*w);
        }
        break;
    }
    for (const QString &stat : truncated) {
        Finding f;
        f.kind = FindingKind::TruncatedStatistic;
        f.stat = stat;
        f.summary = QStringLiteral("%1 is printed with four decimals and reads 0.0000 for most layers: too small to "
                                   "read from this log (the TensorBoard writer has it at full precision)")
                        .arg(stat);
        c.findings.push_back(f);
    }

    // Evals: per task, the largest drop, per inference setting of the run; beyond evalSigmas a gap, beyond
    // evalNotableSigmas a notable drop (information). z is the difference (run - baseline) in standard errors:
    // negative below the baseline, as the difference's sign.
    std::map<QString, std::map<QString, std::pair<double, EvalRow>>> gaps; // inference -> task -> (drop, row)
    std::map<QString, std::map<QString, double>> diffs; // inference -> task -> baseline - run of that metric
    for (const EvalRow &row : evalTable(catalog, baseline, run, options)) {
        if (!(row.standardError > 0))
            continue;
        auto &slot = gaps[row.inference][row.task];
        if (-row.z > slot.first) {
            slot = {-row.z, row};
            diffs[row.inference][row.task] = row.baseline - row.run;
        }
    }
    std::set<QString> gapTasks;
    for (const auto &[inference, tasks] : gaps) {
        for (const auto &[task, best] : tasks) {
            if (best.first < options.evalNotableSigmas)
                continue;
            const bool gap = best.first >= options.evalSigmas;
            if (gap)
                gapTasks.insert(task);
            Finding f;
            f.kind = gap ? FindingKind::EvalGap : FindingKind::EvalDrop;
            f.severity = gap ? Severity::Warning : Severity::Info;
            f.task = task;
            f.key = best.second.metric;
            const double baseValue = best.second.baseline;
            f.summary = QStringLiteral("%1 %2: %3 against %4's %5 (%6 standard errors below%7)%8")
                            .arg(task, best.second.metric)
                            .arg(best.second.run, 0, 'g', 4)
                            .arg(baseName)
                            .arg(baseValue, 0, 'g', 4)
                            .arg(best.first, 0, 'f', 1)
                            .arg(inference.isEmpty() ? QString() : QStringLiteral(", %1 inference").arg(inference))
                            .arg(gap ? QString()
                                     : QStringLiteral(": a notable drop, below the %1 standard errors a gap needs over "
                                                      "this many tasks")
                                           .arg(options.evalSigmas, 0, 'g', 3));
            f.evidence = {{QStringLiteral("run"), best.second.run}, {QStringLiteral("baseline"), baseValue},
                {QStringLiteral("difference"), best.second.difference}, {QStringLiteral("z"), best.second.z},
                {QStringLiteral("metric"), best.second.metric}, {QStringLiteral("inference"), inference},
                {QStringLiteral("threshold"), gap ? options.evalSigmas : options.evalNotableSigmas}};
            if (gap)
                f.suggestion
                    = QStringLiteral("evaluate in the precision the model was trained in (FP8 inference) and check "
                                     "that the checkpoint carries its FP8 scales");
            c.findings.push_back(f);
        }
    }
    // The inference precision: a gap that narrows under another inference setting of the same run.
    if (gaps.size() >= 2 && !gapTasks.empty()) {
        for (const auto &[a, aTasks] : diffs) {
            for (const auto &[b, bTasks] : diffs) {
                if (a == b)
                    continue;
                QStringList narrower;
                for (const QString &task : gapTasks) {
                    const auto x = aTasks.find(task);
                    const auto y = bTasks.find(task);
                    if (x != aTasks.end() && y != bTasks.end() && y->second < x->second)
                        narrower << task;
                }
                if (narrower.size() == int(gapTasks.size())) {
                    Finding f;
                    f.kind = FindingKind::InferencePrecision;
                    f.severity = Severity::Warning;
                    f.summary
                        = QStringLiteral("%1 inference of this run scores lower on %2; %3 inference is closer to %4")
                              .arg(a.isEmpty() ? QStringLiteral("the first") : a, narrower.join(QStringLiteral(", ")),
                                  b.isEmpty() ? QStringLiteral("the other") : b, baseName);
                    f.evidence = {{QStringLiteral("lower"), a}, {QStringLiteral("closer"), b},
                        {QStringLiteral("tasks"), QJsonArray::fromStringList(narrower)}};
                    f.suggestion
                        = QStringLiteral("serve the model with %1 inference, or export the FP8 scales with the "
                                         "checkpoint for %2")
                              .arg(b, a);
                    c.findings.push_back(f);
                }
            }
        }
    }

    if (const auto skipped = skippedIterations(catalog, run, c.plannedSteps, baseline, options))
        c.findings.push_back(*skipped);
    for (RunRef r : {run, baseline}) {
        if (const auto restart = rewinds(catalog, r))
            c.findings.push_back(*restart);
    }

    // The verdict.
    const bool spikes = std::any_of(
        c.findings.begin(), c.findings.end(), [](const Finding &f) { return f.kind == FindingKind::LossSpikes; });
    if (c.departure) {
        c.verdict = double(*c.departure) < options.earlyFraction * double(std::max<int64_t>(c.plannedSteps, 1))
            ? Verdict::EarlyDivergence
            : Verdict::MidRunInstability;
    } else if (spikes) {
        c.verdict = Verdict::LossSpikes;
    } else if (!gapTasks.empty()) {
        c.verdict = Verdict::DownstreamGap;
    }

    rank(&c.findings);
    finishComparison(catalog, &c, options);
    return c;
}

RunCheck checkRun(const Catalog &catalog, RunRef run, const TriageOptions &options)
{
    RunCheck r;
    r.run = run;
    const auto loss = runSeries(catalog, run, QStringLiteral("lm loss"));
    if (!loss)
        return r;
    size_t nan = 0;
    for (double v : loss->values)
        nan += std::isfinite(v) ? 0 : 1;
    const StepSeries f = finitePoints(*loss);
    if (nan > 0) {
        Finding n;
        n.kind = FindingKind::RunBlowUp;
        n.severity = Severity::Critical;
        n.stat = QStringLiteral("lm loss");
        n.summary = QStringLiteral("%1 loss values are NaN or infinite").arg(nan);
        n.evidence = {{QStringLiteral("nan_points"), double(nan)}};
        r.findings.push_back(n);
    }
    if (f.size() >= 8) {
        // A sustained rise: the smoothed loss stays above its running minimum by more than 5 % (and the noise).
        const int h = std::clamp(int(f.size() / 50), 2, 50);
        const std::vector<double> smooth = runningMedian(f.values, h);
        const double noise = stepNoise(f.values);
        std::vector<bool> exceed(f.size());
        double low = smooth.front();
        for (size_t i = 0; i < f.size(); ++i) {
            low = std::min(low, smooth[i]);
            exceed[i] = smooth[i] > low + std::max(0.05 * std::abs(low), 6.0 * (std::isfinite(noise) ? noise : 0.0));
        }
        size_t at = size_t(-1);
        size_t count = 0;
        for (size_t i = f.size(); i-- > 0;) {
            count += exceed[i] ? 1 : 0;
            if (exceed[i] && double(count) / double(f.size() - i) >= 0.9 && f.size() - i >= size_t(std::max(3, h)))
                at = i;
        }
        if (at != size_t(-1)) {
            r.departure = f.steps[at];
            Finding b;
            b.kind = FindingKind::RunBlowUp;
            b.severity = Severity::Critical;
            b.stat = QStringLiteral("lm loss");
            b.step = r.departure;
            b.summary
                = QStringLiteral("the loss rises from step %1 and stays above its lowest level").arg(*r.departure);
            b.evidence = {{QStringLiteral("step"), double(*r.departure)}, {QStringLiteral("noise"), noise}};
            r.findings.push_back(b);
            r.verdict
                = double(*r.departure) < options.earlyFraction * double(plannedSteps(catalog, run, f.steps.back()))
                ? Verdict::EarlyDivergence
                : Verdict::MidRunInstability;
        }
        // Spikes that recover are part of training; a run needs repeated recovery when several never come
        // back (after the blow-up above, they are its consequence).
        const SpikeReport s = findSpikes(f, options.spikes);
        size_t unrecovered = 0;
        for (const Spike &x : s.spikes)
            unrecovered += x.recoveredAt ? 0 : 1;
        if (s.spikes.size() >= 3) {
            Finding sp;
            sp.kind = FindingKind::LossSpikes;
            sp.severity = unrecovered >= 2 ? Severity::Warning : Severity::Info;
            sp.stat = QStringLiteral("lm loss");
            sp.step = s.spikes.front().step;
            sp.lastStep = s.spikes.back().step;
            size_t recovered = 0;
            QJsonArray steps;
            for (const Spike &x : s.spikes) {
                recovered += x.recoveredAt ? 1 : 0;
                if (steps.size() < 20)
                    steps.append(double(x.step));
            }
            sp.summary = QStringLiteral("%1 loss spikes in %2 points; %3 recovered")
                             .arg(s.spikes.size())
                             .arg(s.points)
                             .arg(recovered);
            sp.evidence
                = {{QStringLiteral("spikes"), double(s.spikes.size())}, {QStringLiteral("points"), double(s.points)},
                    {QStringLiteral("recovered"), double(recovered)}, {QStringLiteral("steps"), steps}};
            r.findings.push_back(sp);
            if (r.verdict == Verdict::None && unrecovered >= 2)
                r.verdict = Verdict::LossSpikes;
        }
    }
    if (const auto skipped = skippedIterations(catalog, run, plannedSteps(catalog, run, loss->steps.back())))
        r.findings.push_back(*skipped);
    if (const auto restart = rewinds(catalog, run))
        r.findings.push_back(*restart);
    rank(&r.findings);
    return r;
}

StatComparison compareStatistic(
    const Catalog &catalog, RunRef baseline, RunRef run, const QString &stat, const TriageOptions &options)
{
    StatComparison out;
    out.stat = canonicalStat(stat).name;
    out.baselinePoints = runSeries(catalog, baseline, out.stat, &out.baselineSource);
    out.runPoints = runSeries(catalog, run, out.stat, &out.runSource);
    const std::optional<StepSeries> &b = out.baselinePoints, &r = out.runPoints;
    if (!b || !r)
        return out;
    out.found = true;
    // Megatron prints the mean loss of each log interval (and the grad norm of its last step: not a mean).
    out.intervalMeans = out.stat == QLatin1String("lm loss") && out.baselineSource == QLatin1String("megatron-log")
        && out.runSource == QLatin1String("megatron-log");
    out.options = out.stat == QLatin1String("grad norm") ? options.gradNormDeparture : options.departure;
    // Runs with other batch sizes are compared at the same consumed samples (or tokens), not the same step.
    for (const QString &axis : {QStringLiteral("consumed samples"), QStringLiteral("consumed tokens")}) {
        const auto bx = runSeries(catalog, baseline, axis);
        const auto rx = runSeries(catalog, run, axis);
        if (!bx || !rx || !batchesDiffer(*bx, *rx))
            continue;
        const StepSeries bs = onAxis(*b, *bx), rs = onAxis(*r, *rx);
        if (bs.size() < 2 || rs.size() < 2)
            break;
        out.axis = axis;
        out.departure = departureOf(bs, rs, out.intervalMeans, out.options, options.spikes);
        // Said in the run's steps (and the baseline's, where it stands at the same consumed samples).
        if (out.departure.step) {
            const int64_t at = *out.departure.step;
            out.departure.step = stepAt(*rx, at);
            out.departure.low = *stepAt(*rx, out.departure.low);
            out.departure.high = *stepAt(*rx, out.departure.high);
            out.baselineStep = stepAt(*bx, at);
        }
        return out;
    }
    out.departure = departureOf(*b, *r, out.intervalMeans, out.options, options.spikes);
    out.baselineStep = out.departure.step;
    return out;
}

std::vector<TriageTarget> triageTargets(const Catalog &catalog)
{
    std::vector<TriageTarget> out;
    for (const Run &r : catalog.runs(false)) {
        const Pairing p = catalog.pairing(r.ref);
        if (p.baseline.isValid())
            out.push_back({p.baseline, r.ref});
        else if (catalog.chooseSeries(r.ref, {.stat = QStringLiteral("lm loss")}))
            out.push_back({{}, r.ref});
    }
    return out;
}

TriageResult triage(const Catalog &catalog, const TriageOptions &options)
{
    TriageResult out;
    for (const TriageTarget &t : triageTargets(catalog)) {
        if (t.baseline.isValid())
            out.comparisons.push_back(compareRuns(catalog, t.baseline, t.run, options));
        else
            out.runs.push_back(checkRun(catalog, t.run, options));
    }
    return out;
}

} // namespace fp8scope::analysis
