#include "triageinputs.h"

#include "storedwhatif.h"

#include "auditcalibration.h"

#include "departureclass.h"

#include <QDir>
#include <QFileInfo>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace fp8scope::analysis {

namespace {

std::optional<StepSeries> runSeries(const Catalog &catalog, RunRef run, const QString &stat, const QString &source = {})
{
    const auto s = catalog.chooseSeries(run, {.stat = stat, .source = source});
    if (!s)
        return std::nullopt;
    StepSeries out = catalog.stepSeries(*s);
    if (out.empty())
        return std::nullopt;
    return out;
}

// The first value of the config keys (the last part of a nested key: trainer.max_steps; hyphens and
// underscores alike) that is a whole number of steps, at least `minimum`.
std::optional<int64_t> configuredWhole(const Catalog &catalog, RunRef run, const QStringList &keys, double minimum = 0)
{
    for (const ConfigEntry &c : catalog.configs(run)) {
        QString k = c.key.section(QLatin1Char('.'), -1).toLower();
        while (k.startsWith(QLatin1Char('-')))
            k.remove(0, 1);
        k.replace(QLatin1Char('-'), QLatin1Char('_'));
        bool ok = false;
        const double v = c.value.trimmed().toDouble(&ok);
        if (ok && v >= minimum && v <= 1e15 && v == std::floor(v) && keys.contains(k))
            return int64_t(v);
    }
    return std::nullopt;
}

std::optional<int64_t> configuredSteps(const Catalog &catalog, RunRef run)
{
    // The keys trainers write the planned steps under; the learning-rate decay's length only where none of
    // them is there.
    static const QStringList keys {QStringLiteral("train_iters"), QStringLiteral("max_steps"),
        QStringLiteral("num_train_steps"), QStringLiteral("total_steps"), QStringLiteral("train_steps"),
        QStringLiteral("max_iters"), QStringLiteral("total_iters")};
    static const QStringList decay {QStringLiteral("lr_decay_iters"), QStringLiteral("lr_decay_steps")};
    if (const auto planned = configuredWhole(catalog, run, keys, 1))
        return planned;
    return configuredWhole(catalog, run, decay, 1);
}

bool isWhatIfStat(const QString &stat)
{
    return stat == QLatin1String("mse") || stat == QLatin1String("underflows%") || stat == QLatin1String("overflows%")
        || stat == QLatin1String("sqnr_db") || stat == QLatin1String("damage%")
        || stat == QLatin1String("mean_rel_error%");
}

// The run's recomputed what-if statistics and its layer series of a risk statistic; the deepest layer it has
// statistics or dumps of.
void gatherSeries(const Catalog &catalog, RunRef run, FinishInputs *out)
{
    for (const Dump &d : out->dumps)
        out->lastLayerIndex = std::max(out->lastLayerIndex, layerIndex(d.record.layer));
    QString last;
    for (const Series &s : catalog.series(run)) {
        if (s.layer.isEmpty())
            continue;
        if (s.layer != last) {
            out->lastLayerIndex = std::max(out->lastLayerIndex, layerIndex(s.layer));
            last = s.layer;
        }
        if (s.isRecomputed() && isWhatIfStat(s.stat))
            out->recomputed.push_back({s, catalog.stepSeries(s)});
        if (s.points >= 8 && riskDirection(s.stat))
            out->risk.push_back({s, catalog.stepSeries(s)});
    }
}

void gatherFinishCommon(const Catalog &catalog, RunRef baseline, RunRef run, FinishInputs *out)
{
    out->run = catalog.run(run);
    if (baseline.isValid()) {
        out->baseline = catalog.run(baseline);
        out->config = configTable(catalog, baseline, run);
    }
    out->dumps = catalog.dumps(run);
    out->precision = precisionMap(catalog, run);
    gatherWhatIfs(catalog, run, out);
    out->fp8Format = runFp8Format(catalog, run);
    out->reviews = catalog.findingReviews(run, baseline);
}

} // namespace

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

StatKind statKind(const QString &stat)
{
    if (stat.startsWith(QLatin1String("scale_inv")) || stat == QLatin1String("cur_amax"))
        return StatKind::Scale;
    if (stat == QLatin1String("dynamic_range") || stat.startsWith(QLatin1String("max_blockwise_dynamic_range")))
        return StatKind::Range;
    return StatKind::Damage;
}

int layerIndex(const QString &layer)
{
    static const QRegularExpression re(QStringLiteral("(?:^|\\.)(?:layers?|blocks?|h)\\.(\\d+)(?:\\.|$)"));
    const QRegularExpressionMatch m = re.match(layer);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

std::optional<double> valueAtStep(const StepSeries &s, int64_t step)
{
    if (s.empty())
        return std::nullopt;
    const auto it = std::upper_bound(s.steps.begin(), s.steps.end(), step);
    const size_t i = it == s.steps.begin() ? 0 : size_t(it - s.steps.begin()) - 1;
    return s.values[i];
}

namespace {

// The non-finite values of a run (nonfinite.h), and what came before the first of them.
void gatherNonFinite(const Catalog &catalog, RunRef run, bool live, RunInputs *in)
{
    if (!in->loss)
        return;
    // Followed live, a run that scales its loss dynamically skips steps by design while its scaler settles: its
    // blow-up needs three intervals in a row, so that a watcher does not stop a healthy job on its warm-up.
    const bool dynamic = scalesLossDynamically(in->lossScale ? &*in->lossScale : nullptr);
    in->blowUp = blowUpOf(&*in->loss, in->gradNorm ? &*in->gradNorm : nullptr, live && dynamic ? 3 : 2);
    if (in->blowUp) {
        in->nonFiniteFrom = nonFiniteSearchFrom(*in->blowUp, *in->loss);
    } else if (live) {
        // Not (yet) in the loss: what turned since its last non-finite loss is what a watcher must see first.
        const auto last = lastNonFiniteBefore(*in->loss, std::numeric_limits<int64_t>::max());
        in->nonFiniteFrom = last ? *last + 1 : std::numeric_limits<int64_t>::min();
    } else {
        return;
    }
    in->nonFinite = orderNonFinite(catalog.firstNonFinite(run, *in->nonFiniteFrom));
    if (in->nonFinite.empty())
        return;
    const NonFinitePoint &first = in->nonFinite.front();
    // What came before it: its own tensor's overflows% or amax rising over the twenty log intervals before, or
    // the loss scale cut.
    const int64_t interval = std::max<int64_t>(1, medianInterval(*in->loss));
    const int64_t since = first.step - 20 * interval;
    if (!first.series.layer.isEmpty()) {
        for (const QString &stat : {QStringLiteral("overflows%"), QStringLiteral("cur_amax")}) {
            const auto s = catalog.chooseSeries(run,
                {.stat = stat,
                    .layer = first.series.layer,
                    .tensor = first.series.tensor,
                    .source = first.series.source});
            if (!s)
                continue;
            if (auto p = precursorIn(stat, catalog.stepSeries(*s), since, first.step)) {
                in->precursor = p;
                return;
            }
        }
    }
    if (in->lossScale)
        in->precursor = precursorIn(QStringLiteral("loss scale"), *in->lossScale, since, first.step + 1);
}

// A run's inputs; its loss as read already (a pair's loss comparison reads both) or read here.
RunInputs gatherRunWithLoss(
    const Catalog &catalog, RunRef run, const std::optional<std::optional<StepSeries>> &loss, bool live)
{
    RunInputs in;
    in.ref = run;
    if (!run.isValid())
        return in;
    in.info = catalog.run(run);
    in.loss = loss ? *loss : runSeries(catalog, run, QStringLiteral("lm loss"));
    in.skipped = runSeries(catalog, run, QStringLiteral("number of skipped iterations"));
    in.nan = runSeries(catalog, run, QStringLiteral("number of nan iterations"));
    // The Megatron log's rewinds where it has any: they say where the training resumed, and the statistics
    // logs' restarts were placed by them.
    in.rewind = runSeries(catalog, run, QStringLiteral("rewind"), QStringLiteral("megatron-log"));
    if (!in.rewind)
        in.rewind = runSeries(catalog, run, QStringLiteral("rewind"));
    in.configuredSteps = configuredSteps(catalog, run);
    in.learningRate = runSeries(catalog, run, QStringLiteral("learning rate"));
    in.configuredWarmup = configuredWhole(catalog, run,
        {QStringLiteral("lr_warmup_iters"), QStringLiteral("lr_warmup_steps"), QStringLiteral("warmup_steps"),
            QStringLiteral("num_warmup_steps"), QStringLiteral("warmup_iters")});
    in.gradNorm = runSeries(catalog, run, QStringLiteral("grad norm"));
    in.lossScale = runSeries(catalog, run, QStringLiteral("loss scale"));
    for (const char *router : {"load_balancing_loss", "seq_load_balancing_loss", "global_load_balancing_loss"}) {
        if (!in.routerLoss)
            in.routerLoss = runSeries(catalog, run, QLatin1String(router));
    }
    in.rewoundBlowUps = runSeries(catalog, run, QStringLiteral("rewound blow-up"));
    gatherNonFinite(catalog, run, live, &in);
    return in;
}

} // namespace

std::optional<int64_t> RunInputs::warmupEnd(int64_t until) const
{
    if (learningRate) {
        if (const auto end = warmupEndOf(*learningRate, until))
            return end;
    }
    return configuredWarmup;
}

RunInputs gatherRun(const Catalog &catalog, RunRef run, bool live)
{
    return gatherRunWithLoss(catalog, run, std::nullopt, live);
}

std::optional<SeriesPoints> suspectSeries(const Catalog &catalog, RunRef run, const Finding &suspect)
{
    const QString source = suspect.evidence.value(QStringLiteral("source")).toString();
    auto s = catalog.chooseSeries(
        run, {.stat = suspect.stat, .layer = suspect.layer, .tensor = suspect.tensor, .source = source});
    if (!s)
        s = catalog.chooseSeries(run, {.stat = suspect.stat, .layer = suspect.layer, .tensor = suspect.tensor});
    if (!s)
        return std::nullopt;
    return SeriesPoints {*s, catalog.stepSeries(*s)};
}

namespace {

// The run's folder: the folder that is the run's (as the ingest divided the opened folder), else its own
// fp8scope.json's, else its path under the opened folder, or that folder.
QString runFolderOf(const Run &r)
{
    if (r.ownFolder)
        return QDir(r.folder).absoluteFilePath(*r.ownFolder);
    if (!r.manifest.isEmpty() && r.manifestKey.isEmpty())
        return QFileInfo(QDir(r.folder).filePath(r.manifest)).absolutePath();
    const QString dir = QDir(r.folder).filePath(r.name);
    return QFileInfo(dir).isDir() ? dir : r.folder;
}

// The folder the manifest's paths are relative to: its own (a run's fp8scope.json, or a workspace manifest).
QString manifestFolderOf(const Run &r)
{
    return r.manifest.isEmpty() ? runFolderOf(r) : QFileInfo(QDir(r.folder).filePath(r.manifest)).absolutePath();
}

// The checkpoint and references of the run: what its manifest named (read at ingest, relative to the manifest),
// else what the run's folder holds.
QString checkpointOf(const Run &r)
{
    return r.inferenceCheckpoint.isEmpty() ? findInferenceCheckpoint(runFolderOf(r))
                                           : findInferenceCheckpoint(manifestFolderOf(r), r.inferenceCheckpoint);
}

QStringList referencesOf(const Run &r)
{
    const QStringList named = r.inferenceReference.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    return named.isEmpty() ? findInferenceReferences(runFolderOf(r))
                           : findInferenceReferences(manifestFolderOf(r), named);
}

} // namespace

QString auditStampOfRun(const Catalog &catalog, RunRef run)
{
    const std::optional<Run> r = catalog.run(run);
    if (!r)
        return {};
    const QString checkpoint = checkpointOf(*r);
    return checkpoint.isEmpty() ? QString() : auditFilesStamp(checkpoint, referencesOf(*r));
}

std::optional<AuditResult> auditOfRun(const Catalog &catalog, RunRef run, const AuditThresholds &thresholds)
{
    const std::optional<Run> r = catalog.run(run);
    if (!r)
        return std::nullopt;
    const QString checkpoint = checkpointOf(*r);
    if (checkpoint.isEmpty())
        return std::nullopt;
    Problem problem;
    std::optional<AuditResult> result = cachedAudit(checkpoint, referencesOf(*r), &problem, thresholds);
    if (result) {
        auditAgainstRun(catalog, run, r->label(), *result);
    } else {
        // Unreadable: said as the audit's own problem, so that the triage says why it has no audit.
        result = AuditResult {};
        result->checkpoint = checkpoint;
        result->thresholds = thresholds;
        result->problems.push_back(problem);
    }
    return result;
}

PairInputs gatherPair(const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options)
{
    PairInputs in;
    // The loss comparison reads both runs' losses: the runs' own inputs take them from it.
    in.loss = compareStatistic(catalog, baseline, run, QStringLiteral("lm loss"), options);
    in.baseline = gatherRunWithLoss(catalog, baseline, in.loss.baselinePoints, false);
    in.run = gatherRunWithLoss(catalog, run, in.loss.runPoints, options.live);
    in.grad = compareStatistic(catalog, baseline, run, QStringLiteral("grad norm"), options);
    in.evals = evalTable(catalog, baseline, run, options);
    gatherFinishCommon(catalog, baseline, run, &in.finish);
    gatherSeries(catalog, run, &in.finish);
    in.audit = auditOfRun(catalog, run, options.audit);
    return in;
}

FinishInputs gatherFinish(const Catalog &catalog, const Comparison &c)
{
    FinishInputs in;
    gatherFinishCommon(catalog, c.baseline, c.run, &in);
    // The evidence is the first suspect's: its own series and the recomputed statistics of its layer and
    // tensor, read only where it has a dump (a result read back stays a few reads).
    const Finding *first = nullptr; // the first suspect (finish() keeps the layer-signal rule's order)
    for (const Finding &f : c.findings) {
        if ((f.kind == FindingKind::FirstNonFinite || f.kind == FindingKind::LayerSignal)
            && f.severity != Severity::Info && f.step && !f.layer.isEmpty()) {
            first = &f;
            break;
        }
    }
    if (!first)
        return in;
    const bool dumped = std::any_of(in.dumps.begin(), in.dumps.end(),
        [&](const Dump &d) { return d.record.layer == first->layer && d.record.tensor == first->tensor; });
    if (!dumped)
        return in;
    if (auto s = suspectSeries(catalog, c.run, *first))
        in.risk.push_back(std::move(*s));
    for (const Series &r : catalog.seriesAt(c.run, first->layer, first->tensor)) {
        if (r.isRecomputed() && isWhatIfStat(r.stat))
            in.recomputed.push_back({r, catalog.stepSeries(r)});
    }
    return in;
}

} // namespace fp8scope::analysis
