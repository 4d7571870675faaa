// The triage through the store: results read back while their stamp holds, computed and stored otherwise.
#include "rulesdigest.h"
#include "storedwhatif.h"
#include "triage.h"
#include "triageinputs.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonDocument>

namespace fp8scope::analysis {

namespace {

QString number(double v)
{
    return QString::number(v, 'g', 17);
}

// Every option that changes a result, as text.
QString optionsText(const TriageOptions &o)
{
    const DepartureOptions &d = o.departure;
    const DepartureOptions &g = o.gradNormDeparture;
    const SpikeOptions &s = o.spikes;
    const OnsetOptions &n = o.onset;
    return QStringList {number(d.relativeTolerance), number(d.absoluteTolerance), number(d.noiseSigmas),
               number(d.stayFraction), number(d.minPoints), number(g.relativeTolerance), number(g.absoluteTolerance),
               number(g.noiseSigmas), number(g.stayFraction), number(g.minPoints), number(s.sigmas), number(s.relative),
               number(s.halfWidth), number(s.recoverSigmas), number(n.earlyFraction), number(n.sigmas),
               number(n.relative), number(n.absolute), number(n.stayFraction), number(n.minPoints),
               number(o.earlyFraction), number(o.evalSigmas), number(o.evalNotableSigmas), number(o.spikeAlpha),
               number(double(o.minSpikes)), number(o.lossGapBar), o.audit.text()}
               .join(QLatin1Char(','))
        + (o.live ? QStringLiteral(",live") : QString());
}

Severity severityNamed(const QString &name)
{
    return name == QLatin1String("critical") ? Severity::Critical
        : name == QLatin1String("warning")   ? Severity::Warning
                                             : Severity::Info;
}

Verdict verdictNamed(const QString &name)
{
    for (Verdict v : {Verdict::None, Verdict::EarlyDivergence, Verdict::MidRunInstability, Verdict::LossSpikes,
             Verdict::DownstreamGap, Verdict::NotComparable}) {
        if (verdictName(v) == name)
            return v;
    }
    return Verdict::None;
}

QString runNames(const Catalog &catalog, std::initializer_list<RunRef> refs)
{
    QJsonArray names;
    for (RunRef r : refs) {
        if (const auto run = r.isValid() ? catalog.run(r) : std::nullopt)
            names.append(run->name);
    }
    return QString::fromUtf8(QJsonDocument(names).toJson(QJsonDocument::Compact));
}

std::vector<StoredFinding> toStored(const std::vector<Finding> &findings, const QString &runs)
{
    std::vector<StoredFinding> out;
    for (const Finding &f : findings) {
        out.push_back({.kind = findingKindName(f.kind),
            .severity = severityName(f.severity),
            .runs = runs,
            .layer = f.layer,
            .tensor = f.tensor,
            .stat = f.stat,
            .key = f.key,
            .task = f.task,
            .firstStep = f.step,
            .lastStep = f.lastStep,
            .summary = f.summary,
            .evidence = QString::fromUtf8(QJsonDocument(f.evidence).toJson(QJsonDocument::Compact)),
            .suggestion = f.suggestion});
    }
    return out;
}

std::vector<Finding> fromStored(const std::vector<StoredFinding> &findings)
{
    std::vector<Finding> out;
    for (const StoredFinding &f : findings) {
        const std::optional<FindingKind> kind = findingKindNamed(f.kind);
        if (!kind)
            continue; // a kind this engine does not know (the stamp's engine version keeps this rare)
        out.push_back({.kind = *kind,
            .severity = severityNamed(f.severity),
            .layer = f.layer,
            .tensor = f.tensor,
            .stat = f.stat,
            .key = f.key,
            .task = f.task,
            .step = f.firstStep,
            .lastStep = f.lastStep,
            .summary = f.summary,
            .evidence = QJsonDocument::fromJson(f.evidence.toUtf8()).object(),
            .suggestion = f.suggestion});
    }
    return out;
}

void store(Catalog &catalog, RunRef run, RunRef baseline, const StoredTriage &result, QStringList *errors)
{
    QString error;
    if (!catalog.storeTriage(run, baseline, result, &error) && errors) {
        const auto r = catalog.run(run);
        errors->append(QStringLiteral("the triage of %1 was not stored: %2").arg(r ? r->name : QString(), error));
    }
}

} // namespace

QString rulesDigest()
{
    return QStringLiteral(FP8SCOPE_RULES_DIGEST);
}

QStringList rulesDigestFiles()
{
    return QStringLiteral(FP8SCOPE_RULES_FILES).split(QLatin1Char(','), Qt::SkipEmptyParts);
}

QString triageStamp(const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options)
{
    const QByteArray hash
        = QCryptographicHash::hash(optionsText(options).toUtf8(), QCryptographicHash::Sha1).toHex().left(12);
    QString stamp = QStringLiteral("rules %1; options %2; data %3")
                        .arg(rulesDigest())
                        .arg(QString::fromLatin1(hash))
                        .arg(catalog.dataGeneration(run.store));
    if (baseline.isValid() && baseline.store != run.store)
        stamp += QStringLiteral(" and %1").arg(catalog.dataGeneration(baseline.store));
    // The files read beside the store: the inference checkpoint the run's folder holds, and its references.
    if (baseline.isValid()) {
        if (const QString audit = auditStampOfRun(catalog, run); !audit.isEmpty())
            stamp += QStringLiteral("; audit %1")
                         .arg(QString::fromLatin1(
                             QCryptographicHash::hash(audit.toUtf8(), QCryptographicHash::Sha1).toHex().left(12)));
    }
    return stamp;
}

Comparison compareRunsStored(
    Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options, QStringList *errors)
{
    const QString stamp = triageStamp(catalog, baseline, run, options);
    if (const auto stored = catalog.storedTriage(run, baseline); stored && stored->stamp == stamp) {
        Comparison c {.baseline = baseline,
            .run = run,
            .verdict = verdictNamed(stored->verdict),
            .departure = stored->departure,
            .lead = stored->lead,
            .plannedSteps = stored->planned.value_or(0),
            .findings = fromStored(stored->findings),
            .fromStore = true};
        // The audit its findings came from (read once while the checkpoint's files hold, as the stamp says they
        // do): a stored comparison carries what a fresh one does.
        c.audit = auditOfRun(catalog, run, options.audit);
        finishComparison(catalog, &c, options);
        return c;
    }
    const int64_t generation = catalog.dataGeneration(run.store);
    Comparison c = compareRuns(catalog, baseline, run, options);
    // The what-if of the evidence dump, computed once and stored: the findings and next steps name its best recipe.
    // Storing it moves the run's data generation by one; the result is stamped with the new one only when nothing
    // else moved it meanwhile (a live ingest, another process), else with the one it was computed from.
    bool whatIfStored = false;
    if (QString error; !ensureWhatIf(catalog, &c, options, &error, &whatIfStored) && errors)
        errors->append(QStringLiteral("the recipe what-if was not computed: %1").arg(error));
    const QString computedFrom = whatIfStored && catalog.dataGeneration(run.store) == generation + 1
        ? triageStamp(catalog, baseline, run, options)
        : stamp;
    store(catalog, run, baseline,
        {.verdict = verdictName(c.verdict),
            .departure = c.departure,
            .lead = c.lead,
            .planned = c.plannedSteps,
            .stamp = computedFrom,
            .findings = toStored(c.findings, runNames(catalog, {baseline, run}))},
        errors);
    return c;
}

RunCheck checkRunStored(Catalog &catalog, RunRef run, const TriageOptions &options, QStringList *errors)
{
    const QString stamp = triageStamp(catalog, {}, run, options);
    if (const auto stored = catalog.storedTriage(run, {}); stored && stored->stamp == stamp) {
        return {.run = run,
            .verdict = verdictNamed(stored->verdict),
            .departure = stored->departure,
            .findings = fromStored(stored->findings),
            .fromStore = true};
    }
    RunCheck r = checkRun(catalog, run, options);
    store(catalog, run, {},
        {.verdict = verdictName(r.verdict),
            .departure = r.departure,
            .stamp = stamp,
            .findings = toStored(r.findings, runNames(catalog, {run}))},
        errors);
    return r;
}

TriageResult triageStored(Catalog &catalog, const TriageOptions &options, QStringList *errors)
{
    TriageResult out;
    for (const TriageTarget &t : triageTargets(catalog)) {
        if (t.baseline.isValid())
            out.comparisons.push_back(compareRunsStored(catalog, t.baseline, t.run, options, errors));
        else
            out.runs.push_back(checkRunStored(catalog, t.run, options, errors));
    }
    return out;
}

} // namespace fp8scope::analysis
