// What a comparison carries beside its findings, made once in core for every front end: the suspects, the
// evidence dump, the what-if, the comparability verdict and the next steps (docs/TRIAGE.md, "What to try
// next").
#include "comparetables.h"
#include "storedwhatif.h"
#include "triageinputs.h"
#include "triagerules.h"

#include "core/formats/expertnames.h"
#include "core/query/pairing.h"

#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fp8scope::analysis {

QString normalizedKey(const QString &key)
{
    QString k = key.section(QLatin1Char('.'), -1).toLower();
    while (k.startsWith(QLatin1Char('-')))
        k.remove(0, 1);
    k.replace(QLatin1Char('-'), QLatin1Char('_'));
    return k;
}

namespace {

// How far a value is from the early level in the statistic's risky direction (larger: more damage).
double damage(const QString &stat, double value, double early)
{
    static const QStringList down {QStringLiteral("cosine"), QStringLiteral("sqnr_db")};
    static const QStringList either {QStringLiteral("scale_inv_min"), QStringLiteral("scale_inv_max")};
    if (down.contains(stat))
        return early - value;
    if (either.contains(stat))
        return std::abs(value - early);
    return value - early;
}

// What to change in the recipe for a mid-run instability, from the recipe the run uses: never the one it
// already uses.
QString recipeAdvice(const QString &runRecipe)
{
    const QString family = recipeFamily(runRecipe);
    if (family == QLatin1String("delayed"))
        return QStringLiteral("current scaling (--fp8-recipe tensorwise) or a block recipe (mxfp8, blockwise) instead "
                              "of the run's delayed scaling: a stale amax history scales a layer whose range moved "
                              "with last steps' values");
    if (family == QLatin1String("current"))
        return QStringLiteral("a block recipe (--fp8-recipe mxfp8 or blockwise) instead of the run's per-tensor "
                              "current scaling: a scale per block of 32 or 128 values follows a layer whose values "
                              "span more binades than one scale can hold");
    if (family == QLatin1String("mxfp8"))
        return QStringLiteral("blockwise scaling (--fp8-recipe blockwise: FP32 scales per 1x128 and 128x128 block) "
                              "instead of MXFP8's power-of-two scales, or BF16 for the suspect layers below");
    if (family == QLatin1String("nvfp4"))
        return QStringLiteral("MXFP8 (--fp8-recipe mxfp8) for the suspect layers or the whole run instead of NVFP4's "
                              "four bits");
    if (family == QLatin1String("blockwise"))
        return {}; // the finest FP8 recipe already: BF16 for the suspects is what is left
    return QStringLiteral("the run's recipe is not recorded (no manifest or --fp8-recipe): find it, then a finer one "
                          "(delayed -> current -> mxfp8 or blockwise)");
}

// The recipes finer than the run's, in the order recipeAdvice names them (none where it is not recorded).
std::vector<Proposal> finerRecipes(const QString &runRecipe)
{
    const QString family = recipeFamily(runRecipe);
    QStringList to;
    if (family == QLatin1String("delayed"))
        to = {QStringLiteral("current"), QStringLiteral("mxfp8"), QStringLiteral("blockwise")};
    else if (family == QLatin1String("current"))
        to = {QStringLiteral("mxfp8"), QStringLiteral("blockwise")};
    else if (family == QLatin1String("mxfp8"))
        to = {QStringLiteral("blockwise")};
    else if (family == QLatin1String("nvfp4"))
        to = {QStringLiteral("mxfp8")};
    std::vector<Proposal> out;
    for (const QString &r : to)
        out.push_back({.kind = Proposal::Kind::Recipe, .recipe = r});
    return out;
}

Proposal configValue(const QString &key, const QString &value = {})
{
    return {.kind = Proposal::Kind::ConfigValue, .key = key, .value = value};
}

// What a finding's own suggestion proposes: a key back to the baseline's value, the what-if's best recipe, the
// layer a blow-up began in kept in BF16.
std::vector<Proposal> proposalsOf(const Finding &f)
{
    switch (f.kind) {
    case FindingKind::ConfigDifference:
    case FindingKind::VersionDifference:
        if (!f.key.isEmpty())
            return {configValue(f.key, f.evidence.value(QStringLiteral("baseline")).toString())};
        break;
    case FindingKind::RecipeWhatIf:
        if (f.evidence.value(QStringLiteral("best_is_runs")).toBool() && !f.layer.isEmpty())
            return {{.kind = Proposal::Kind::Bf16Layers, .layers = {f.layer}}};
        if (const QString best = recipeFamily(f.evidence.value(QStringLiteral("best")).toString()); !best.isEmpty())
            return {{.kind = Proposal::Kind::Recipe, .recipe = best}};
        break;
    case FindingKind::FirstNonFinite:
        if (!f.layer.isEmpty())
            return {{.kind = Proposal::Kind::Bf16Layers, .layers = {f.layer}}, configValue(QStringLiteral("lr"))};
        break;
    default: break;
    }
    return {};
}

NextStep stepOf(const Finding &f, const QString &action, std::vector<Proposal> proposals = {})
{
    if (action == f.suggestion && proposals.empty())
        proposals = proposalsOf(f);
    return {f.kind, findingIdentity(f), f.summary, action, QString(), std::move(proposals)};
}

// The peak learning rate and its warm-up: what a spike's or a run's own departure proposes to lower or lengthen.
std::vector<Proposal> learningRate()
{
    return {configValue(QStringLiteral("lr")), configValue(QStringLiteral("lr_warmup_iters")),
        configValue(QStringLiteral("lr_warmup_fraction"))};
}

} // namespace

QString recipeFamily(const QString &recipe)
{
    const QString r = recipe.section(QLatin1Char(':'), 0, 0).trimmed().toLower();
    if (r.isEmpty())
        return {};
    if (r.startsWith(QLatin1String("delayed")))
        return QStringLiteral("delayed");
    // Transformer Engine's recipe classes too (Float8CurrentScaling, MXFP8BlockScaling, Float8BlockScaling).
    if (r.startsWith(QLatin1String("current")) || r == QLatin1String("tensorwise")
        || r.contains(QLatin1String("currentscaling")))
        return QStringLiteral("current");
    if (r.startsWith(QLatin1String("mxfp8")))
        return QStringLiteral("mxfp8");
    if (r.startsWith(QLatin1String("block")) || r == QLatin1String("float8blockscaling"))
        return QStringLiteral("blockwise");
    if (r.startsWith(QLatin1String("nvfp4")))
        return QStringLiteral("nvfp4");
    if (isReferenceRecipe(r))
        return QStringLiteral("bf16");
    return r;
}

bool sameRecipe(const QString &a, const QString &b)
{
    return !a.isEmpty() && recipeFamily(a) == recipeFamily(b);
}

std::optional<int64_t> evidenceWindowEnd(const Comparison &c, int64_t onset)
{
    if (!c.departure)
        return std::nullopt;
    const int64_t lead = std::max<int64_t>(*c.departure - onset, 0);
    return *c.departure + std::max<int64_t>(lead, c.plannedSteps / 10);
}

std::optional<EvidenceDump> pickEvidenceDump(
    const FinishInputs &in, const Finding &suspect, std::optional<int64_t> windowEnd)
{
    if (!suspect.step)
        return std::nullopt;
    const int64_t onset = *suspect.step;
    // The series the suspect was found on: of its source where its evidence names one.
    const QString source = suspect.evidence.value(QStringLiteral("source")).toString();
    const StepSeries *series = nullptr;
    for (const SeriesPoints &s : in.risk) {
        if (s.series.layer != suspect.layer || s.series.tensor != suspect.tensor || s.series.stat != suspect.stat)
            continue;
        if (!series || s.series.source == source)
            series = &s.points;
        if (s.series.source == source)
            break;
    }
    const double early = suspect.evidence.value(QStringLiteral("early")).toDouble(NAN);
    std::optional<EvidenceDump> best;
    double bestDamage = -INFINITY;
    std::optional<Dump> nearest;
    for (const Dump &d : in.dumps) {
        if (d.record.layer != suspect.layer || d.record.tensor != suspect.tensor)
            continue;
        if (!nearest || std::abs(d.record.step - onset) < std::abs(nearest->record.step - onset))
            nearest = d;
        if (d.record.step < onset || (windowEnd && d.record.step > *windowEnd))
            continue;
        std::optional<double> value;
        if (series) {
            if (const auto v = valueAtStep(*series, d.record.step); v && std::isfinite(*v))
                value = v;
        }
        // Without a logged value at the dump, the later dump (more time for the damage) wins a tie.
        const double dmg = value && std::isfinite(early) ? damage(suspect.stat, *value, early) : -1e300;
        if (!best || dmg > bestDamage || (dmg == bestDamage && d.record.step > best->dump.record.step)) {
            best = EvidenceDump {
                d, suspect.stat, onset, value, std::isfinite(early) ? std::optional(early) : std::nullopt, true, {}};
            bestDamage = dmg;
        }
    }
    if (best) {
        best->why = best->value && best->early
            ? QStringLiteral("the dump at or after the onset at %1 where %2 is furthest from its early level: %3 "
                             "against %4")
                  .arg(onset)
                  .arg(suspect.stat)
                  .arg(*best->value, 0, 'g', 4)
                  .arg(*best->early, 0, 'g', 4)
            : QStringLiteral("the latest dump at or after the onset at %1 (%2 is not logged at the dumps' steps)")
                  .arg(onset)
                  .arg(suspect.stat);
        return best;
    }
    if (!nearest)
        return std::nullopt;
    EvidenceDump e {*nearest, suspect.stat, onset, std::nullopt,
        std::isfinite(early) ? std::optional(early) : std::nullopt, false, {}};
    e.why = QStringLiteral("no dump at or after the onset at %1%2: the nearest, from before the damage")
                .arg(onset)
                .arg(windowEnd ? QStringLiteral(" within the departure window (to %1)").arg(*windowEnd) : QString());
    return e;
}

std::optional<EvidenceDump> chooseEvidenceDump(
    const Catalog &catalog, RunRef run, const Finding &suspect, std::optional<int64_t> windowEnd)
{
    FinishInputs in;
    in.dumps = catalog.dumps(run);
    if (auto s = suspectSeries(catalog, run, suspect))
        in.risk.push_back(std::move(*s));
    return pickEvidenceDump(in, suspect, windowEnd);
}

WhatIfTable storedWhatIf(const FinishInputs &in, const Dump &dump)
{
    // The stored what-if of the dump, its candidates' every statistic; else the metrics recomputed from it at
    // exactly its step, of the recipes a what-if of that tensor weighs (none in a format the run could not use
    // for it).
    if (const auto stored = in.whatIfs.find(whatIfDumpKey(dump)); stored != in.whatIfs.end())
        return stored->second;
    std::set<QString> candidates;
    for (const Recipe &r : whatIfCandidates(dump.record.tensor, in.fp8Format))
        candidates.insert(whatIfLabel(r));
    WhatIfTable table;
    for (const SeriesPoints &s : in.recomputed) {
        if (s.series.layer != dump.record.layer || s.series.tensor != dump.record.tensor
            || !candidates.count(s.series.recipe))
            continue;
        const auto it = std::lower_bound(s.points.steps.begin(), s.points.steps.end(), dump.record.step);
        if (it == s.points.steps.end() || *it != dump.record.step)
            continue;
        const double v = s.points.values[size_t(it - s.points.steps.begin())];
        if (std::isfinite(v))
            table[s.series.recipe][s.series.stat] = v;
    }
    return table;
}

std::vector<WhatIfScore> whatIfScores(const WhatIfTable &table)
{
    std::vector<WhatIfScore> out;
    const auto value = [](const std::map<QString, double> &stats, const char *name) {
        const auto it = stats.find(QLatin1String(name));
        return it == stats.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
    };
    for (const auto &[recipe, stats] : table)
        out.push_back({recipe, value(stats, "mse"), value(stats, "underflows%"), value(stats, "damage%"),
            value(stats, "mean_rel_error%")});
    return out;
}

QString comparabilityAspect(const QString &key)
{
    // By the key's last part, in snake case: Megatron's arguments, its command line in a YAML, NeMo's and
    // Hugging Face's names for the same settings.
    static const std::set<QString> shape {QStringLiteral("num_layers"), QStringLiteral("hidden_size"),
        QStringLiteral("ffn_hidden_size"), QStringLiteral("num_attention_heads"), QStringLiteral("num_query_groups"),
        QStringLiteral("kv_channels"), QStringLiteral("seq_length"), QStringLiteral("encoder_seq_length"),
        QStringLiteral("max_position_embeddings"), QStringLiteral("vocab_size"), QStringLiteral("padded_vocab_size"),
        QStringLiteral("num_experts"), QStringLiteral("num_hidden_layers"), QStringLiteral("intermediate_size"),
        QStringLiteral("max_seq_len")};
    static const std::set<QString> data {QStringLiteral("data_path"), QStringLiteral("train_data_path"),
        QStringLiteral("valid_data_path"), QStringLiteral("tokenizer_type"), QStringLiteral("tokenizer_model"),
        QStringLiteral("vocab_file"), QStringLiteral("merge_file"), QStringLiteral("split"), QStringLiteral("seed"),
        QStringLiteral("dataset"), QStringLiteral("data_seed"), QStringLiteral("tokenizer")};
    static const std::set<QString> plan {QStringLiteral("train_iters"), QStringLiteral("train_samples"),
        QStringLiteral("global_batch_size"), QStringLiteral("micro_batch_size"), QStringLiteral("lr"),
        QStringLiteral("min_lr"), QStringLiteral("lr_decay_style"), QStringLiteral("lr_decay_iters"),
        QStringLiteral("lr_warmup_iters"), QStringLiteral("lr_warmup_fraction"), QStringLiteral("weight_decay"),
        QStringLiteral("clip_grad"), QStringLiteral("adam_beta1"), QStringLiteral("adam_beta2"),
        QStringLiteral("optimizer"), QStringLiteral("max_steps"), QStringLiteral("learning_rate")};
    const QString k = normalizedKey(key);
    return shape.count(k)                        ? QStringLiteral("model shape")
        : data.count(k)                          ? QStringLiteral("data")
        : plan.count(k)                          ? QStringLiteral("plan")
        : k == QLatin1String("transformer_impl") ? QStringLiteral("implementation")
                                                 : QString();
}

Comparability comparabilityOf(const std::optional<Run> &b, const std::optional<Run> &r, const ConfigTable &config)
{
    Comparability out;
    std::set<QString> aspects;
    // The precision family: the baseline trains in high precision, the run in a low one; BF16 and FP16 are
    // both baselines, but FP16 scales its loss and BF16 does not: said, with care.
    if (b && r) {
        const QString bp = b->precision.toLower(), rp = r->precision.toLower();
        const PrecisionClass bc = precisionClass(b->precision, b->name), rc = precisionClass(r->precision, r->name);
        if (bc != PrecisionClass::Baseline || rc != PrecisionClass::LowPrecision
            || (bp == QLatin1String("fp16") || bp == QLatin1String("float16") || bp == QLatin1String("half"))) {
            out.rows.push_back({QStringLiteral("precision"), bp.isEmpty() ? QStringLiteral("(unknown)") : bp,
                rp.isEmpty() ? QStringLiteral("(unknown)") : rp, QStringLiteral("precision family")});
            aspects.insert(QStringLiteral("precision family"));
        }
    }
    int differing = 0;
    std::vector<ComparabilityRow> others; // the differences that change none of the aspects, listed after
    for (const ConfigRow &c : config.rows) {
        if (!c.differs || c.version)
            continue;
        ++differing;
        const QString aspect = comparabilityAspect(c.key);
        if (aspect.isEmpty()) {
            others.push_back({c.key, c.baseline, c.run, QString()});
            continue;
        }
        aspects.insert(aspect);
        out.rows.push_back({c.key, c.baseline, c.run, aspect});
    }
    const size_t changing = out.rows.size();
    out.rows.insert(out.rows.end(), others.begin(), others.end());
    const QStringList list(aspects.begin(), aspects.end());
    if (!config.haveBoth && aspects.empty()) {
        out.level = ComparabilityLevel::Unknown;
        out.text = QStringLiteral("One of the runs has no config: whether they train the same model on the same data "
                                  "to the same plan cannot be told.");
    } else if (aspects.empty()) {
        out.level = ComparabilityLevel::Comparable;
        out.text = QStringLiteral("Comparable: the model shape, the data, the plan, the precision family and the "
                                  "implementation agree (%1 config key(s) differ, none of them these).")
                       .arg(differing);
    } else {
        out.level = ComparabilityLevel::WithCare;
        out.text = QStringLiteral("Compared with care: %1 difference(s) change %2, which a loss comparison does not "
                                  "account for.")
                       .arg(changing)
                       .arg(list.join(QStringLiteral(", ")));
        if (!config.haveBoth)
            out.text += QStringLiteral(" One of the runs has no config: its other settings cannot be told.");
    }
    return out;
}

bool isDismissed(const std::vector<FindingReview> &reviews, const Finding &f)
{
    const QString identity = findingIdentity(f);
    return std::any_of(reviews.begin(), reviews.end(),
        [&](const FindingReview &r) { return r.finding == identity && r.state == ReviewState::Dismissed; });
}

Comparison comparisonOf(const Catalog &catalog, const RunCheck &check)
{
    Comparison c;
    c.run = check.run;
    c.verdict = check.verdict;
    c.departure = check.departure;
    c.findings = check.findings;
    c.fromStore = check.fromStore;
    finishComparison(catalog, &c);
    return c;
}

void finishComparison(const Catalog &catalog, Comparison *c, const TriageOptions &)
{
    finish(gatherFinish(catalog, *c), c);
}

void finish(const FinishInputs &in, Comparison *cp)
{
    Comparison &c = *cp;
    const bool alone = !c.baseline.isValid();
    // The suspects: layer signals weighed as causes (before the departure, or live), in the layer-signal rule's
    // order (damage before range before scale, then by where half the change was made: docs/TRIAGE.md).
    // The first non-finite value of a blow-up, where a layer logged it, comes first: it is where the blow-up
    // began.
    c.suspects.clear();
    for (const Finding &f : c.findings) {
        if (isNonFiniteSuspect(f))
            c.suspects.push_back(f);
    }
    for (const Finding &f : c.findings) {
        if (isSignalSuspect(f))
            c.suspects.push_back(f);
    }
    c.evidence.reset();
    c.whatIf.clear();
    c.whatIfBest.reset();
    if (!c.suspects.empty() && c.suspects.front().step) {
        c.evidence = pickEvidenceDump(in, c.suspects.front(), evidenceWindowEnd(c, *c.suspects.front().step));
        if (c.evidence) {
            c.whatIf = whatIfScores(storedWhatIf(in, c.evidence->dump));
            c.whatIfBest = bestWhatIfRecipe(c.whatIf);
        }
    }
    // The what-if finding says what the what-if says now (a what-if stored since the findings were made).
    for (Finding &f : c.findings) {
        if (f.kind != FindingKind::RecipeWhatIf || !c.evidence
            || f.evidence.value(QStringLiteral("dump")).toString() != c.evidence->dump.file
            || f.layer != c.evidence->dump.record.layer || f.tensor != c.evidence->dump.record.tensor)
            continue;
        if (auto w = recipeWhatIfFinding(in, *c.evidence, in.run ? in.run->recipe : QString()))
            f = std::move(*w);
    }
    c.comparability = alone ? Comparability {ComparabilityLevel::Unknown, {},
                          QStringLiteral("Checked on its own: no baseline to compare it with.")}
                            : comparabilityOf(in.baseline, in.run, in.config);

    // The next steps, one change at a time, the most important first; none for a healthy verdict but a loss gap over
    // the bar the baseline accepts. A finding a
    // review dismissed gives none.
    const auto open = [&](const Finding &f) { return !isDismissed(in.reviews, f); };
    const QString runRecipe = in.run ? in.run->recipe : QString();
    const Finding *departure = nullptr;
    for (const Finding &f : c.findings) {
        if ((f.kind == FindingKind::LossDeparture || f.kind == FindingKind::RunBlowUp) && !departure && f.step)
            departure = &f;
    }
    std::vector<NextStep> steps;
    QString verdictAction;
    const PrecisionClass precision = in.run ? precisionClass(in.run->precision, in.run->name) : PrecisionClass::Unknown;
    // A run on its own that leaves its course: what large runs do after a blow-up, whatever their precision;
    // the FP8 part only where the run trains in FP8 (or may: its precision is not recorded).
    const bool aloneDeparts
        = alone && (c.verdict == Verdict::EarlyDivergence || c.verdict == Verdict::MidRunInstability);
    if (aloneDeparts) {
        verdictAction = departure && departure->step
            ? QStringLiteral("resume from a checkpoint before step %1 with a lower peak learning rate, or skip the "
                             "batches around step %1")
                  .arg(*departure->step)
            : QStringLiteral("resume from the last checkpoint before the loss left its course with a lower peak "
                             "learning rate, or skip the batches there");
        if (precision == PrecisionClass::LowPrecision)
            verdictAction += QStringLiteral("; then a BF16 run of the same steps tells a precision problem from the "
                                            "training's own (open both: fp8scope compares them)");
        else if (precision == PrecisionClass::Unknown)
            verdictAction += QStringLiteral("; if it trains in FP8, a BF16 run of the same steps tells a precision "
                                            "problem from the training's own (its precision is not recorded)");
        if (departure && open(*departure))
            steps.push_back(stepOf(*departure, verdictAction, learningRate()));
    }
    switch (aloneDeparts ? Verdict::None : c.verdict) {
    case Verdict::None: {
        // Healthy, but FP8 costs more at the end than the baseline accepts: what lowers FP8's cost, one change at a
        // time, or a bar the user sets higher.
        if (aloneDeparts)
            break;
        for (const Finding &f : c.findings) {
            if (f.kind != FindingKind::LossGap || f.severity != Severity::Warning || !open(f))
                continue;
            QStringList parts;
            std::vector<Proposal> proposals;
            if (precision != PrecisionClass::Baseline) {
                if (const QString recipe = recipeAdvice(runRecipe); !recipe.isEmpty()) {
                    parts << recipe;
                    proposals = finerRecipes(runRecipe);
                }
                parts << QStringLiteral("keep the first and last layers in BF16 (Megatron --first-last-layers-bf16 "
                                        "--num-layers-at-start-in-bf16 2 --num-layers-at-end-in-bf16 2)");
                proposals.push_back({.kind = Proposal::Kind::Bf16Layers});
            }
            parts << QStringLiteral("or accept the cost: set loss_gap_bar in the baseline's fp8scope.json (or its "
                                    "run settings) to the gap you accept");
            steps.push_back(stepOf(f,
                QStringLiteral("FP8 costs more than the accepted gap; one change at a time: ")
                    + parts.join(QStringLiteral("; ")),
                std::move(proposals)));
        }
        break;
    }
    case Verdict::EarlyDivergence: {
        QStringList named;
        std::vector<const Finding *> keys;
        for (const Finding &g : c.findings) {
            if ((g.kind == FindingKind::ConfigDifference || g.kind == FindingKind::VersionDifference)
                && g.severity == Severity::Warning && open(g)) {
                named << g.key;
                keys.push_back(&g);
            }
        }
        verdictAction = named.isEmpty()
            ? QStringLiteral("early divergence is usually software: compare the versions and the FP8 settings with "
                             "the baseline's and undo the most recent change first")
            : QStringLiteral("undo one of these at a time, the first first: %1").arg(named.join(QStringLiteral(", ")));
        if (departure && open(*departure)) {
            std::vector<Proposal> undo;
            for (const Finding *g : keys)
                undo.push_back(configValue(g->key, g->evidence.value(QStringLiteral("baseline")).toString()));
            steps.push_back(stepOf(*departure, verdictAction, std::move(undo)));
        }
        for (const Finding *g : keys) {
            if (!g->suggestion.isEmpty())
                steps.push_back(stepOf(*g, g->suggestion));
        }
        break;
    }
    case Verdict::MidRunInstability: {
        QStringList parts;
        QString config; // the debug config that keeps the suspects in BF16, as it pastes
        // A run that trains in high precision has no recipe to change.
        // The what-if on the first suspect's dump, where it has one, says which recipe (or none) helps it: its
        // advice stands in for the family's general one, never beside it.
        // A suspect that is every expert of a mixture-of-experts GEMM keeps the GEMM in BF16, all its experts.
        QStringList layers;
        std::map<QString, QString> patternOf; // a GEMM's: the expression its experts match
        for (const Finding &s : c.suspects) {
            QString layer = s.layer;
            if (s.evidence.value(QStringLiteral("expert_scope")).toString() == QLatin1String("all")) {
                layer = s.evidence.value(QStringLiteral("gemm")).toString();
                patternOf[layer] = s.evidence.value(QStringLiteral("experts_pattern")).toString();
            }
            // A layer in BF16 for the whole run already is no BF16 fallback to propose.
            if (open(s) && !layers.contains(layer) && layers.size() < 4
                && !in.precision.highPrecisionThroughout(s.layer))
                layers << layer;
        }
        // Measured: an open what-if on an open suspect names the best recipe (one not yet computed says how to
        // compute it, and the general advice stays until it is).
        // (A suspect that is a GEMM's every expert is listed by its GEMM; its what-if is one expert's.)
        const auto listed = [&](const QString &layer) {
            const auto e = expertOf(layer);
            return layers.contains(layer) || (e && layers.contains(e->gemm));
        };
        const bool measured = std::any_of(c.findings.begin(), c.findings.end(), [&](const Finding &f) {
            return f.kind == FindingKind::RecipeWhatIf && open(f) && listed(f.layer)
                && f.evidence.value(QStringLiteral("best")).isString();
        });
        const QString recipe = precision == PrecisionClass::Baseline || measured ? QString() : recipeAdvice(runRecipe);
        std::vector<Proposal> proposals;
        if (!recipe.isEmpty()) {
            parts << recipe;
            proposals = finerRecipes(runRecipe);
        }
        if (!layers.isEmpty()) {
            int lastIndex = in.lastLayerIndex;
            for (const Finding &f : c.suspects)
                lastIndex = std::max(lastIndex, f.evidence.value(QStringLiteral("deepest_layer")).toInt(-1));
            QString teConfig;
            bool edge = lastIndex > 0;
            for (const QString &layer : layers) {
                const int i = layerIndex(layer);
                edge = edge && (i <= 1 || i >= lastIndex - 1);
                teConfig
                    += QStringLiteral("bf16_%1:\n  enabled: True\n  layers:\n    layer_name_regex_pattern: %2\n"
                                      "  transformer_engine:\n    DisableQuantizationLayer:\n      enabled: True\n")
                           .arg(QString(layer).replace(QLatin1Char('.'), QLatin1Char('_')),
                               patternOf.count(layer) ? patternOf[layer] : QRegularExpression::escape(layer));
            }
            QStringList named;
            for (const QString &layer : layers)
                named << (patternOf.count(layer) ? QStringLiteral("every expert of %1").arg(layer) : layer);
            QString bf16 = QStringLiteral("keep %1 in BF16 with the Transformer Engine debug config below (on "
                                          "versions without DisableQuantizationLayer its older name is "
                                          "DisableFP8Layer)")
                               .arg(named.join(QStringLiteral(", ")));
            config = teConfig;
            proposals.push_back({.kind = Proposal::Kind::Bf16Layers, .layers = layers});
            if (edge)
                bf16 += QStringLiteral("; the suspects are first or last layers: Megatron --first-last-layers-bf16 "
                                       "--num-layers-at-start-in-bf16 2 --num-layers-at-end-in-bf16 2");
            parts << bf16;
        }
        // One expert that moved as the router's load-balancing loss rose: the router overloads it; balancing the
        // router is a change of its own, beside the precision's.
        for (const Finding &f : c.suspects) {
            const double before = f.evidence.value(QStringLiteral("router_loss_before")).toDouble(NAN);
            const double after = f.evidence.value(QStringLiteral("router_loss_after")).toDouble(NAN);
            if (open(f) && f.evidence.value(QStringLiteral("expert_scope")).toString() == QLatin1String("one")
                && after > before * 1.1) {
                parts << QStringLiteral("balance the router, which overloads expert %1 of %2 (Megatron: a larger "
                                        "--moe-aux-loss-coeff, or a capacity factor, moe_expert_capacity_factor, "
                                        "that caps an expert's tokens)")
                             .arg(f.evidence.value(QStringLiteral("expert")).toInt())
                             .arg(f.evidence.value(QStringLiteral("gemm")).toString());
                break;
            }
        }
        verdictAction = parts.isEmpty()
            ? QStringLiteral("find the layers whose statistics moved before the departure (log Transformer Engine's "
                             "statistics: underflows%, overflows%, scale_inv) and keep them in BF16")
            : QStringLiteral("one change at a time: ") + parts.join(QStringLiteral("; or "));
        if (departure && open(*departure)) {
            steps.push_back(stepOf(*departure, verdictAction, std::move(proposals)));
            steps.back().config = config;
        }
        // The what-if acts on a suspect: not on one whose signals were all dismissed.
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::RecipeWhatIf && !f.suggestion.isEmpty() && open(f) && listed(f.layer))
                steps.push_back(stepOf(f, f.suggestion));
        }
        break;
    }
    case Verdict::LossSpikes: {
        for (const Finding &f : c.findings) {
            if (f.kind != FindingKind::LossSpikes || !open(f) || f.severity == Severity::Info)
                continue;
            verdictAction = QStringLiteral("lower the peak learning rate or lengthen its warm-up");
            std::vector<Proposal> proposals = learningRate();
            if (recipeFamily(runRecipe) == QLatin1String("delayed")) {
                verdictAction += QStringLiteral(", or current scaling instead of the run's delayed scaling (a "
                                                "stale amax history lets a spike saturate)");
                proposals.push_back({.kind = Proposal::Kind::Recipe, .recipe = QStringLiteral("current")});
            }
            verdictAction += QStringLiteral(" (one change at a time)");
            steps.push_back(stepOf(f, verdictAction, std::move(proposals)));
            break;
        }
        break;
    }
    case Verdict::NotComparable: {
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::NoCommonLoss && open(f))
                steps.push_back(stepOf(f, f.suggestion));
        }
        break;
    }
    case Verdict::DownstreamGap: {
        // What the audit of the inference checkpoint found comes first: it names the layer and what to re-export.
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::CheckpointAudit && open(f) && !f.suggestion.isEmpty())
                steps.push_back(stepOf(f, f.suggestion));
        }
        for (const Finding &f : c.findings) {
            if ((f.kind == FindingKind::InferencePrecision || f.kind == FindingKind::EvalGap) && open(f)
                && !f.suggestion.isEmpty() && std::none_of(steps.begin(), steps.end(), [&](const NextStep &s) {
                       return s.kind == f.kind && s.action == f.suggestion;
                   }))
                steps.push_back(stepOf(f, f.suggestion));
        }
        break;
    }
    }
    // Where a blow-up began: resume before it, with that layer in BF16 (right after the verdict's own step).
    if (c.verdict != Verdict::None) {
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::FirstNonFinite && f.severity != Severity::Info && open(f)
                && !f.suggestion.isEmpty()) {
                steps.insert(steps.begin() + qsizetype(std::min<size_t>(1, steps.size())), stepOf(f, f.suggestion));
                break;
            }
        }
    }
    // Skipped iterations that are a warning, for any verdict but a healthy one.
    if (c.verdict != Verdict::None) {
        for (const Finding &f : c.findings) {
            if (f.kind == FindingKind::SkippedIterations && f.severity == Severity::Warning && open(f)
                && !f.suggestion.isEmpty())
                steps.push_back(stepOf(f, f.suggestion));
        }
    }
    // The departure finding says the verdict's action, as the JSON and the store print it.
    for (Finding &f : c.findings) {
        if ((f.kind == FindingKind::LossDeparture || f.kind == FindingKind::RunBlowUp) && &f == departure)
            f.suggestion = verdictAction;
    }
    c.nextSteps = std::move(steps);
}

} // namespace fp8scope::analysis
