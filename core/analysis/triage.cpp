#include "triage.h"

#include "departureclass.h"

#include "comparetables.h"
#include "rules.h"
#include "triagerules.h"

#include "core/query/pairing.h"
#include "core/query/statnames.h"

#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <limits>

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

int severityRank(Severity s)
{
    return s == Severity::Critical ? 0 : s == Severity::Warning ? 1 : 2;
}

// Most important first: severity, then kind; layer signals keep their rule's order (stable).
void rank(std::vector<Finding> *findings)
{
    std::stable_sort(findings->begin(), findings->end(), [](const Finding &a, const Finding &b) {
        if (severityRank(a.severity) != severityRank(b.severity))
            return severityRank(a.severity) < severityRank(b.severity);
        return findingKindInfo(a.kind).rank < findingKindInfo(b.kind).rank;
    });
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
    case Verdict::NotComparable: return QStringLiteral("not-comparable");
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
    static const QStringList prerequisite {
        QStringLiteral("transformer_impl"), QStringLiteral("use_te"), QStringLiteral("use_transformer_engine")};
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

} // namespace

QString joinedKey(const QString &key)
{
    static const QRegularExpression sep(QStringLiteral("[^a-z0-9]+"));
    return key.section(QLatin1Char('.'), -1).toLower().split(sep, Qt::SkipEmptyParts).join(QLatin1Char('_'));
}

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
    QJsonObject o {{QStringLiteral("kind"), findingKindName(f.kind)},
        {QStringLiteral("severity"), severityName(f.severity)}, {QStringLiteral("summary"), f.summary}};
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
    if (f.lastStep)
        o.insert(QStringLiteral("last_step"), double(*f.lastStep));
    if (!f.evidence.isEmpty())
        o.insert(QStringLiteral("evidence"), f.evidence);
    put("suggestion", f.suggestion);
    return o;
}

namespace {

DepartureClassOptions departureClassOptions(const TriageOptions &options)
{
    DepartureClassOptions o;
    o.earlyFraction = options.earlyFraction;
    return o;
}

// A gradual cost: the departure finding says where the gap crossed the band, as information; the loss-gap
// finding says it grew from the start; the layers that moved have no break to explain.
void sayGradual(const GapGrowth &g, int64_t crossed, std::vector<Finding> *findings)
{
    const QString how = QStringLiteral("the gap grew gradually from the start (from %1 to %2 by step %3, at %4 per "
                                       "1,000 steps, and %5 after it): FP8's cost, not a break after tracking")
                            .arg(g.atFrom, 0, 'g', 3)
                            .arg(g.atDeparture, 0, 'g', 3)
                            .arg(crossed)
                            .arg(1000.0 * g.rateBefore, 0, 'g', 3)
                            .arg(1000.0 * g.rateAfter, 0, 'g', 3);
    const QJsonObject evidence {{QStringLiteral("at_from"), g.atFrom}, {QStringLiteral("at_departure"), g.atDeparture},
        {QStringLiteral("at_end"), g.atEnd}, {QStringLiteral("rate_before"), g.rateBefore},
        {QStringLiteral("rate_after"), g.rateAfter}, {QStringLiteral("noise"), g.noise},
        {QStringLiteral("crossed_band_at"), double(crossed)}};
    for (Finding &f : *findings) {
        if (f.kind == FindingKind::LossDeparture) {
            f.severity = Severity::Info;
            f.summary += QStringLiteral("; %1").arg(how);
            f.evidence.insert(QStringLiteral("gradual"), evidence);
        } else if (f.kind == FindingKind::LossGap) {
            f.summary += QStringLiteral("; %1").arg(how);
            f.evidence.insert(QStringLiteral("gradual"), evidence);
        } else if (f.kind == FindingKind::LayerSignal && f.severity != Severity::Info) {
            f.severity = Severity::Info;
            f.summary += QStringLiteral(" (the loss's gap grew gradually: no break for it to explain)");
        }
    }
}

// Two recoveries or more from a blow-up: "spikes requiring repeated recovery attempts".
bool repeatedRecoveries(const std::vector<Finding> &findings)
{
    return std::any_of(findings.begin(), findings.end(),
        [](const Finding &f) { return f.kind == FindingKind::Recoveries && f.severity == Severity::Warning; });
}

// The departure's finding says which it is and why (its summary, and the evidence under "class").
void sayClass(const DepartureClass &dc, FindingKind kind, int64_t departure, std::vector<Finding> *findings)
{
    for (Finding &f : *findings) {
        if (f.kind != kind || f.step != departure)
            continue;
        f.summary
            += QStringLiteral("; %1: %2")
                   .arg(dc.early ? QStringLiteral("early divergence") : QStringLiteral("mid-run instability"), dc.why);
        QJsonObject e = dc.evidence;
        e.insert(QStringLiteral("early"), dc.early);
        e.insert(QStringLiteral("why"), dc.why);
        f.evidence.insert(QStringLiteral("class"), e);
        return;
    }
}

} // namespace

Comparison comparePair(const PairInputs &in, const TriageOptions &options)
{
    Comparison c;
    c.baseline = in.baseline.ref;
    c.run = in.run.ref;
    int64_t last = 0;
    for (const std::optional<StepSeries> *p : {&in.loss.baselinePoints, &in.loss.runPoints}) {
        if (*p && !(*p)->empty())
            last = std::max(last, (*p)->steps.back());
    }
    c.plannedSteps = std::max(in.run.plannedSteps(last), in.baseline.plannedSteps(last));
    for (const PairRule &rule : pairRules())
        rule.apply(in, options, c);
    // The verdict, in this order: a departure (early or later in the plan), spikes, an eval gap, none.
    const auto has = [&](FindingKind kind) {
        return std::any_of(c.findings.begin(), c.findings.end(), [&](const Finding &f) { return f.kind == kind; });
    };
    if (c.departure) {
        // Early or mid-run: judged on the baseline's loss (did the run track it through its fall?), at the step
        // the baseline stands where the run parts (their batch sizes may differ).
        const StepSeries baseLoss = in.loss.baselinePoints ? finitePoints(*in.loss.baselinePoints) : StepSeries();
        const int64_t at = in.loss.baselineStep.value_or(*c.departure);
        std::optional<int64_t> warmup = in.baseline.warmupEnd(at);
        if (!warmup)
            warmup = in.run.warmupEnd(*c.departure);
        // Tracking: which aligned points before the departure lay within the band (on the step axis; on consumed
        // samples the points are the run's own, and every one before the departure counts).
        std::optional<Tracking> tracking;
        const Departure::Trace &trace = in.loss.departure.trace;
        if (in.loss.axis == QLatin1String("step") && trace.edge.size() == trace.steps.size()
            && trace.smoothed.size() == trace.steps.size()) {
            tracking.emplace();
            tracking->steps = trace.steps;
            for (size_t i = 0; i < trace.steps.size(); ++i)
                tracking->inBand.push_back(std::abs(trace.smoothed[i]) <= trace.edge[i]);
        }
        const DepartureClass dc = classifyDeparture(
            baseLoss, at, c.plannedSteps, warmup, departureClassOptions(options), tracking ? &*tracking : nullptr);
        c.verdict = dc.early ? Verdict::EarlyDivergence : Verdict::MidRunInstability;
        // Said by the finding the departure is: the blow-up where it came first.
        const bool blewUpFirst = in.run.blowUp && in.run.blowUp->step == *c.departure;
        // A gap that grew gradually from the start, rather than breaking away after tracking, is FP8's cost: the
        // loss-gap finding weighs it against the bar; not an instability.
        // (Never for a run that blew up: a blow-up is never a cost.) From where tracking counts, else (a departure
        // late in the plan, clause 2) from the warm-up's end.
        const int64_t growthFrom = int64_t(dc.evidence.value(QStringLiteral("tracked_from"))
                                               .toDouble(dc.evidence.value(QStringLiteral("warmup_end")).toDouble(0)));
        const GapGrowth growth = tracking && !dc.early && !blewUpFirst && !in.run.blowUp
            ? gapGrowth(in.loss.departure, growthFrom, *c.departure)
            : GapGrowth {};
        if (growth.gradual) {
            sayGradual(growth, *c.departure, &c.findings);
            c.verdict = Verdict::None;
            c.departure.reset();
        } else {
            sayClass(dc, blewUpFirst ? FindingKind::RunBlowUp : FindingKind::LossDeparture, *c.departure, &c.findings);
        }
    } else if (has(FindingKind::LossSpikes) || repeatedRecoveries(c.findings)) {
        c.verdict = Verdict::LossSpikes;
    } else if (has(FindingKind::EvalGap)) {
        c.verdict = Verdict::DownstreamGap;
    } else if (has(FindingKind::NoCommonLoss)) {
        c.verdict = Verdict::NotComparable;
    }
    // A healthy pair: a feature the run uses that its baseline does not (FP8 parameters, their gather) is what the
    // run is, not a suspect to set back; said as context.
    if (c.verdict == Verdict::None) {
        for (Finding &f : c.findings) {
            if ((f.kind != FindingKind::ConfigDifference && f.kind != FindingKind::VersionDifference)
                || f.severity != Severity::Warning)
                continue;
            f.severity = Severity::Info;
            f.suggestion.clear();
            f.summary += QStringLiteral(" (a healthy verdict: context, nothing to set back)");
            f.evidence.insert(QStringLiteral("context"), QStringLiteral("healthy pair"));
        }
    }
    rank(&c.findings);
    finish(in.finish, &c);
    c.audit = in.audit;
    return c;
}

RunCheck checkRunInputs(const RunInputs &in, const TriageOptions &options)
{
    RunCheck r;
    r.run = in.ref;
    if (!in.loss)
        return r;
    for (const RunRule &rule : runRules())
        rule.apply(in, options, r);
    // The verdict: a blow-up early or later in the plan; else spikes that needed repeated recovery.
    if (r.departure) {
        const StepSeries finite = finitePoints(*in.loss);
        const DepartureClass dc = classifyDeparture(finite, *r.departure,
            in.plannedSteps(finite.empty() ? in.loss->steps.back() : finite.steps.back()), in.warmupEnd(*r.departure),
            departureClassOptions(options));
        r.verdict = dc.early ? Verdict::EarlyDivergence : Verdict::MidRunInstability;
        sayClass(dc, FindingKind::RunBlowUp, *r.departure, &r.findings);
    } else if (std::any_of(r.findings.begin(), r.findings.end(),
                   [](const Finding &f) {
                       return f.kind == FindingKind::LossSpikes && f.severity == Severity::Warning;
                   })
        || repeatedRecoveries(r.findings)) {
        r.verdict = Verdict::LossSpikes;
    }
    rank(&r.findings);
    return r;
}

Comparison compareRuns(
    const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options, StatComparison *lossOut)
{
    const PairInputs in = gatherPair(catalog, baseline, run, options);
    Comparison c = comparePair(in, options);
    if (lossOut)
        *lossOut = in.loss;
    return c;
}

RunCheck checkRun(const Catalog &catalog, RunRef run, const TriageOptions &options)
{
    return checkRunInputs(gatherRun(catalog, run, options.live), options);
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
