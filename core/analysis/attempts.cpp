#include "attempts.h"

#include "comparetables.h"
#include "triagerules.h"

#include "core/audit/checkpointaudit.h"
#include "core/formats/layerorder.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QSet>

#include <mutex>

#include <algorithm>
#include <cmath>

namespace fp8scope::analysis {

namespace {

std::vector<AttemptChange> changesBetween(const Catalog &catalog, RunRef from, RunRef to)
{
    std::vector<AttemptChange> out;
    for (const ConfigRow &r : configTable(catalog, from, to).rows) {
        // Incidental keys (paths, names) and versions of packages other than the key ones are no change.
        if (!r.differs || r.keyClass == KeyClass::Incidental)
            continue;
        const QString key = r.version ? QStringLiteral("version of %1").arg(r.key) : r.key;
        const auto [kind, group] = classifyChange(r.key, r.version);
        out.push_back({key, r.baseline, r.run, group, kind});
    }
    return out;
}

QStringList groupsOf(const std::vector<AttemptChange> &changes)
{
    QStringList groups;
    for (const AttemptChange &c : changes) {
        if (!groups.contains(c.group))
            groups << c.group;
    }
    return groups;
}

// Whether a verdict is a problem an attempt can fix (not healthy, and the runs comparable), for "fixed" and
// "partly".
bool problem(Verdict v)
{
    return v != Verdict::None && v != Verdict::NotComparable;
}

} // namespace

std::pair<ChangeKind, QString> classifyChange(const QString &key, bool version)
{
    if (version)
        return {ChangeKind::Version, QStringLiteral("version of %1").arg(key)};
    const QString j = joinedKey(key);
    static const QSet<QString> deterministicEnv {QStringLiteral("nccl_algo"), QStringLiteral("cublas_workspace_config"),
        QStringLiteral("nvte_allow_nondeterministic_algo"), QStringLiteral("torch_deterministic"),
        QStringLiteral("cudnn_deterministic"), QStringLiteral("nvte_fused_attn"), QStringLiteral("nvte_flash_attn")};
    if (j.contains(QLatin1String("deterministic")) || deterministicEnv.contains(j))
        return {ChangeKind::DeterministicMode, QStringLiteral("deterministic mode")};
    if (contextReason(key) == QLatin1String("the parallel layout"))
        return {ChangeKind::ParallelLayout, QStringLiteral("parallel layout")};
    if (j.contains(QLatin1String("in_bf16")) || j.contains(QLatin1String("layers_bf16")))
        return {ChangeKind::Bf16Layers, QStringLiteral("BF16 fallback layers")};
    if (j.contains(QLatin1String("fp8_param")) || j.contains(QLatin1String("primary_weights_in_fp8")))
        return {ChangeKind::Fp8Parameters, QStringLiteral("FP8 parameters")};
    static const QRegularExpression recipe(
        QStringLiteral("^(fp8|fp4|mxfp8|nvfp4)(_(recipe|format|margin|interval|amax_history_len|amax_compute_algo|"
                       "wgrad|dot_product_attention|multi_head_attention))?$|^(fp8_)?recipe$|^first_last_layers_fp8$"));
    // Going to FP8 (or another recipe) is one change: the precision flags, the recipe's settings and what FP8
    // needs (Transformer Engine's implementation).
    static const QSet<QString> precision {QStringLiteral("bf16"), QStringLiteral("fp16"), QStringLiteral("fp32"),
        QStringLiteral("params_dtype"), QStringLiteral("precision")};
    if (recipe.match(j).hasMatch() || precision.contains(j)
        || contextReason(key) == QLatin1String("a prerequisite of FP8 training"))
        return {ChangeKind::PrecisionAndRecipe, QStringLiteral("precision and recipe")};
    return {ChangeKind::Key, j.isEmpty() ? key : j};
}

QString changeGroup(const QString &key, bool version)
{
    return classifyChange(key, version).second;
}

QString comparabilityCaveat(const Attempt &a)
{
    return a.comparability == ComparabilityLevel::WithCare ? QStringLiteral(", compared with care") : QString();
}

bool Attempt::healthy() const
{
    return verdict == Verdict::None;
}

QString candidateRule()
{
    return QStringLiteral(
        "a healthy verdict, no significant evaluation gap and no inference checkpoint finding; of those, the "
        "smallest loss gap at the end against what the band allows there; then the fewest layers kept in BF16");
}

LossGap lossGapOf(const StatComparison &loss)
{
    LossGap g;
    if (!loss.found || loss.departure.trace.steps.empty())
        return g;
    const Departure::Trace &t = loss.departure.trace;
    g.endGap = loss.departure.gapAtEnd;
    g.endEdge = t.edge.empty() ? loss.departure.band : t.edge.back();
    const std::vector<double> &gap = t.smoothed.empty() ? t.difference : t.smoothed;
    const size_t n = t.steps.size(), stride = std::max<size_t>(1, (n + kTracePoints - 1) / kTracePoints);
    for (size_t i = 0; i < n; i += stride) {
        g.steps.push_back(t.steps[i]);
        g.gap.push_back(gap[i]);
        g.edge.push_back(t.edge.empty() ? g.endEdge : t.edge[i]);
    }
    return g;
}

AttemptsResult attemptsOf(const Catalog &catalog, RunRef baseline, const std::vector<Comparison> &comparisons,
    const std::vector<LossGap> *gaps)
{
    AttemptsResult result;
    result.baseline = baseline;
    if (const auto b = catalog.run(baseline))
        result.baselineName = b->name;
    std::vector<const Comparison *> of;
    for (const Comparison &c : comparisons) {
        if (c.baseline == baseline && c.run.isValid())
            of.push_back(&c);
    }
    for (const Comparison *c : of) {
        const std::optional<Run> r = catalog.run(c->run);
        if (!r)
            continue;
        Attempt a;
        a.run = c->run;
        a.name = r->name;
        a.verdict = c->verdict;
        a.comparability = c->comparability.level;
        a.comparabilityText = c->comparability.text;
        a.departure = c->departure;
        a.changes = changesBetween(catalog, baseline, c->run);
        LossGap computed;
        if (!gaps)
            computed = lossGapOf(compareStatistic(catalog, baseline, c->run, QStringLiteral("lm loss")));
        const LossGap &g = gaps ? (*gaps)[size_t(c - comparisons.data())] : computed;
        a.endGap = g.endGap;
        a.endEdge = g.endEdge;
        a.traceSteps = g.steps;
        a.traceGap = g.gap;
        a.traceEdge = g.edge;
        for (const Finding &f : c->findings) {
            if (f.kind == FindingKind::LossSpikes && f.severity != Severity::Info)
                a.spikes = true;
            if (f.kind == FindingKind::EvalGap)
                ++a.evalGaps[f.evidence.value(QStringLiteral("inference")).toString()];
        }
        if (c->audit)
            a.auditFindings = int(c->audit->findings.size());
        std::vector<std::pair<QString, QString>> config;
        for (const ConfigEntry &e : catalog.configs(c->run))
            config.emplace_back(e.key, e.value);
        a.bf16Layers = int(bf16TrainedLayers(config).layers.size());
        a.parentName = r->manifestParent; // as its manifest names it, read at ingest
        result.attempts.push_back(std::move(a));
    }
    std::sort(result.attempts.begin(), result.attempts.end(),
        [](const Attempt &x, const Attempt &y) { return layerLess(x.name, y.name); });
    // Parents: the one fp8scope.json names, else the earlier attempt (name order) from which the fewest groups
    // changed, the latest of equals; none where no earlier attempt is closer than the baseline itself.
    for (size_t i = 0; i < result.attempts.size(); ++i) {
        Attempt &a = result.attempts[i];
        std::optional<size_t> parent;
        if (!a.parentName.isEmpty()) {
            for (size_t j = 0; j < result.attempts.size(); ++j) {
                if (j != i && result.attempts[j].name == a.parentName)
                    parent = j;
            }
            a.parentSource = parent ? QStringLiteral("fp8scope.json") : QString();
        }
        if (!parent) {
            int best = int(groupsOf(a.changes).size());
            for (size_t j = 0; j < i; ++j) {
                const int n = int(groupsOf(changesBetween(catalog, result.attempts[j].run, a.run)).size());
                if (n <= best) {
                    best = n;
                    parent = j;
                }
            }
            if (parent)
                a.parentSource = QStringLiteral("closest earlier attempt");
        }
        if (parent) {
            const Attempt &p = result.attempts[*parent];
            a.parent = p.run;
            a.parentName = p.name;
            a.fromParent = changesBetween(catalog, p.run, a.run);
            if (problem(p.verdict)) {
                if (a.healthy())
                    a.fixesParent = QStringLiteral("fixed");
                else if (a.verdict == p.verdict && p.departure && (!a.departure || *a.departure > *p.departure))
                    a.fixesParent = QStringLiteral("partly");
                else
                    a.fixesParent = QStringLiteral("no");
            }
        } else {
            a.parentName.clear();
            a.fromParent = a.changes;
        }
        a.groupsFromParent = groupsOf(a.fromParent);
        a.severalAtOnce = a.groupsFromParent.size() > 1;
    }
    // The candidate: healthy, no eval gap, no audit finding; the smallest end gap against its edge; the fewest
    // BF16 layers.
    const auto score = [](const Attempt &a) {
        return std::isfinite(a.endGap) && a.endEdge > 0 ? std::abs(a.endGap) / a.endEdge : 1e300;
    };
    for (size_t i = 0; i < result.attempts.size(); ++i) {
        const Attempt &a = result.attempts[i];
        int gaps = 0;
        for (int n : a.evalGaps)
            gaps += n;
        if (!a.healthy() || gaps > 0 || a.auditFindings > 0)
            continue;
        if (!result.candidate)
            result.candidate = i;
        const Attempt &c = result.attempts[*result.candidate];
        if (score(a) < score(c) || (score(a) == score(c) && a.bf16Layers < c.bf16Layers))
            result.candidate = i;
    }
    result.ruleCandidate = result.candidate;
    result.candidateSource = result.candidate ? CandidateSource::Rule : CandidateSource::None;
    // The user's word (kept in the baseline's store) where it names one of the attempts.
    if (const std::optional<CandidateChoice> choice = catalog.candidateChoice(baseline)) {
        for (size_t i = 0; i < result.attempts.size(); ++i) {
            if (result.attempts[i].name != choice->candidate)
                continue;
            result.candidate = i;
            result.candidateSource = choice->state == CandidateSource::Confirmed && result.ruleCandidate == i
                ? CandidateSource::Confirmed
                : CandidateSource::Chosen;
            result.candidateNote = choice->note;
        }
    }
    return result;
}

std::vector<RunRef> baselinesWithAttempts(const Catalog &catalog)
{
    std::vector<RunRef> out;
    for (const Run &r : catalog.runs()) {
        const Pairing p = catalog.pairing(r.ref);
        if (p.baseline.isValid() && std::find(out.begin(), out.end(), p.baseline) == out.end())
            out.push_back(p.baseline);
    }
    return out;
}

AttemptsResult computeAttempts(const Catalog &catalog, RunRef baseline, const TriageOptions &options)
{
    // Pairs compared before, while their stamp holds (the tab is refreshed at every change of the folders).
    struct Cached {
        Comparison comparison;
        LossGap gap;
    };
    static std::mutex mutex;
    static QHash<QString, Cached> cache;
    std::vector<Comparison> comparisons;
    std::vector<LossGap> gaps;
    for (const Run &r : catalog.runs()) {
        if (r.ref == baseline || catalog.pairing(r.ref).baseline != baseline)
            continue;
        const QString key = QStringLiteral("%1|%2|%3|%4|%5")
                                .arg(catalog.run(baseline) ? catalog.run(baseline)->folder : QString())
                                .arg(baseline.id)
                                .arg(r.folder)
                                .arg(r.ref.id)
                                .arg(triageStamp(catalog, baseline, r.ref, options));
        {
            const std::lock_guard lock(mutex);
            if (const auto it = cache.constFind(key); it != cache.cend()) {
                // Another catalog over the same folders numbers its stores its own way: this one's refs.
                comparisons.push_back(it->comparison);
                comparisons.back().baseline = baseline;
                comparisons.back().run = r.ref;
                gaps.push_back(it->gap);
                continue;
            }
        }
        StatComparison loss;
        comparisons.push_back(compareRuns(catalog, baseline, r.ref, options, &loss));
        gaps.push_back(lossGapOf(loss));
        const std::lock_guard lock(mutex);
        if (cache.size() >= 256)
            cache.clear();
        cache.insert(key, {comparisons.back(), gaps.back()});
    }
    return attemptsOf(catalog, baseline, comparisons, &gaps);
}

QString TriedBy::text() const
{
    return QStringLiteral("tried in %1 (%2): %3").arg(name, change, outcome);
}

std::vector<TriedBy> triedBy(const Catalog &catalog, const NextStep &step, const AttemptsResult &attempts, RunRef run)
{
    std::vector<TriedBy> out;
    const auto self = std::find_if(
        attempts.attempts.begin(), attempts.attempts.end(), [run](const Attempt &a) { return a.run == run; });
    if (self == attempts.attempts.end())
        return out;
    // Whether a change from the run is one the step proposes (its typed proposals, never its words): a recipe of
    // the family proposed, BF16 fallback layers where it proposes layers in BF16, a key it proposes to set (to the
    // value proposed, where it names one).
    const auto proposes = [&](const AttemptChange &c) {
        return std::any_of(step.proposals.begin(), step.proposals.end(), [&](const Proposal &p) {
            switch (p.kind) {
            case Proposal::Kind::Recipe:
                return c.kind == ChangeKind::PrecisionAndRecipe && !c.to.isEmpty() && recipeFamily(c.to) == p.recipe;
            case Proposal::Kind::Bf16Layers: return c.kind == ChangeKind::Bf16Layers;
            case Proposal::Kind::ConfigValue:
                return joinedKey(c.key) == joinedKey(p.key) && (p.value.isEmpty() || c.to == p.value);
            }
            return false;
        });
    };
    for (const Attempt &o : attempts.attempts) {
        if (o.run == run)
            continue;
        const std::vector<AttemptChange> changes = changesBetween(catalog, run, o.run);
        const auto hit = std::find_if(changes.begin(), changes.end(), proposes);
        if (hit == changes.end())
            continue;
        TriedBy t;
        t.run = o.run;
        t.name = o.name;
        const int others = int(groupsOf(changes).size()) - 1;
        t.change = QStringLiteral("%1: %2 -> %3").arg(hit->key.section(QLatin1Char('.'), -1), hit->from, hit->to)
            + (others > 0 ? QStringLiteral(", with %1 other change(s) at once").arg(others) : QString());
        t.fixed = o.healthy() && !self->healthy();
        if (o.healthy())
            t.outcome
                = self->healthy() ? QStringLiteral("healthy, as this run") : QStringLiteral("healthy: it fixed it");
        else if (o.verdict != self->verdict)
            t.outcome = QStringLiteral("%1 (this run: %2): did not fix it")
                            .arg(verdictName(o.verdict), verdictName(self->verdict));
        else if (o.departure && self->departure && *o.departure > *self->departure)
            t.outcome = QStringLiteral("departs later (step %1, not %2): did not fix it")
                            .arg(*o.departure)
                            .arg(*self->departure);
        else if (o.departure && self->departure && *o.departure == *self->departure)
            t.outcome = QStringLiteral("%1 at the same step: did not fix it").arg(verdictName(o.verdict));
        else
            t.outcome = QStringLiteral("%1: did not fix it").arg(verdictName(o.verdict));
        out.push_back(std::move(t));
    }
    return out;
}

QJsonObject attemptsJson(const AttemptsResult &result)
{
    const auto changesJson = [](const std::vector<AttemptChange> &changes) {
        QJsonArray out;
        for (const AttemptChange &c : changes)
            out.append(QJsonObject {{QStringLiteral("key"), c.key}, {QStringLiteral("baseline"), c.from},
                {QStringLiteral("attempt"), c.to}, {QStringLiteral("group"), c.group}});
        return out;
    };
    const auto num = [](double v) { return std::isfinite(v) ? QJsonValue(v) : QJsonValue(QJsonValue::Null); };
    QJsonArray attempts;
    for (size_t i = 0; i < result.attempts.size(); ++i) {
        const Attempt &a = result.attempts[i];
        QJsonObject gaps;
        for (auto it = a.evalGaps.cbegin(); it != a.evalGaps.cend(); ++it)
            gaps.insert(it.key().isEmpty() ? QStringLiteral("unknown") : it.key(), it.value());
        attempts.append(QJsonObject {{QStringLiteral("run"), a.name},
            {QStringLiteral("parent"), a.parentName.isEmpty() ? QJsonValue() : QJsonValue(a.parentName)},
            {QStringLiteral("parent_source"), a.parentSource}, {QStringLiteral("changes"), changesJson(a.changes)},
            {QStringLiteral("changes_from_parent"), changesJson(a.fromParent)},
            {QStringLiteral("groups_from_parent"), QJsonArray::fromStringList(a.groupsFromParent)},
            {QStringLiteral("several_at_once"), a.severalAtOnce}, {QStringLiteral("verdict"), verdictName(a.verdict)},
            {QStringLiteral("comparability"), comparabilityName(a.comparability)},
            {QStringLiteral("departure_step"), a.departure ? QJsonValue(double(*a.departure)) : QJsonValue()},
            {QStringLiteral("end_gap"), num(a.endGap)}, {QStringLiteral("end_edge"), num(a.endEdge)},
            {QStringLiteral("spikes"), a.spikes}, {QStringLiteral("eval_gaps"), gaps},
            {QStringLiteral("audit_findings"), a.auditFindings < 0 ? QJsonValue() : QJsonValue(a.auditFindings)},
            {QStringLiteral("bf16_layers"), a.bf16Layers},
            {QStringLiteral("fixes_parent"), a.fixesParent.isEmpty() ? QJsonValue() : QJsonValue(a.fixesParent)},
            {QStringLiteral("candidate"), result.candidate == i}});
    }
    return QJsonObject {{QStringLiteral("baseline"), result.baselineName}, {QStringLiteral("attempts"), attempts},
        {QStringLiteral("candidate"),
            result.candidate ? QJsonValue(result.attempts[*result.candidate].name) : QJsonValue()},
        {QStringLiteral("candidate_rule"), candidateRule()},
        {QStringLiteral("candidate_source"), candidateSourceName(result.candidateSource)},
        {QStringLiteral("rule_candidate"),
            result.ruleCandidate ? QJsonValue(result.attempts[*result.ruleCandidate].name) : QJsonValue()}};
}

} // namespace fp8scope::analysis
