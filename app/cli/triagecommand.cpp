#include "triagecommand.h"

#include "core/analysis/triage.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextStream>

namespace fp8scope::cli {

using namespace analysis;

namespace {

QString nameOf(const Catalog &catalog, RunRef ref)
{
    const auto r = catalog.run(ref);
    return r ? r->name : QString();
}

QJsonValue step(const std::optional<int64_t> &s)
{
    return s ? QJsonValue(double(*s)) : QJsonValue(QJsonValue::Null);
}

QJsonArray findingsJson(const std::vector<Finding> &findings)
{
    QJsonArray out;
    for (const Finding &f : findings)
        out.append(findingJson(f));
    return out;
}

void printFindings(QTextStream &out, const std::vector<Finding> &findings)
{
    for (const Finding &f : findings) {
        out << "  [" << severityName(f.severity) << "] " << f.kind << ": " << f.summary << '\n';
        if (!f.suggestion.isEmpty())
            out << "      try: " << QString(f.suggestion).replace(QLatin1Char('\n'), QStringLiteral("\n           "))
                << '\n';
    }
}

} // namespace

int runTriage(const QStringList &args)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "Compare every FP8 run with its baseline and say what went wrong: early divergence, mid-run instability, "
        "loss spikes or a downstream gap, with the evidence and what to try next (docs/TRIAGE.md)."));
    parser.addHelpOption();
    parser.addPositionalArgument(QStringLiteral("folder"), QStringLiteral("run folder or workspace"));
    const QCommandLineOption baselineOpt(
        QStringLiteral("baseline"), QStringLiteral("the baseline run (with --run)"), QStringLiteral("run"));
    const QCommandLineOption runOpt(
        QStringLiteral("run"), QStringLiteral("the run to compare (with --baseline)"), QStringLiteral("run"));
    const QCommandLineOption jsonOpt(QStringLiteral("json"), QStringLiteral("print JSON"));
    parser.addOptions({baselineOpt, runOpt, jsonOpt});
    QTextStream err(stderr);
    if (!parser.parse(args)) {
        err << "fp8scope-cli: " << parser.errorText() << '\n';
        return 2;
    }
    if (parser.isSet(QStringLiteral("help"))) {
        QTextStream(stdout) << parser.helpText();
        return 0;
    }
    if (parser.positionalArguments().size() != 1) {
        err << "fp8scope-cli: expected one FOLDER\n";
        return 2;
    }
    if (parser.isSet(baselineOpt) != parser.isSet(runOpt)) {
        err << "fp8scope-cli triage: --baseline and --run go together\n";
        return 2;
    }
    Catalog catalog;
    QString error;
    if (!catalog.open(parser.positionalArguments().front(), &error)) {
        err << "fp8scope-cli: " << error << '\n';
        return 1;
    }
    // The folder as it is now: files added or grown since the last ingest are read first.
    const IngestReport ingested = catalog.storeOf(catalog.stores().front().serial)->ingest();
    for (const QString &e : ingested.errors)
        err << "fp8scope-cli: " << e << '\n';
    catalog.refresh();
    TriageResult result;
    QStringList storeErrors; // results computed but not stored: they are printed all the same
    if (parser.isSet(runOpt)) {
        const auto baseline = catalog.findRun(parser.value(baselineOpt));
        const auto run = catalog.findRun(parser.value(runOpt));
        if (!baseline || !run) {
            err << "fp8scope-cli: no run '" << (baseline ? parser.value(runOpt) : parser.value(baselineOpt)) << "'\n";
            return 1;
        }
        result.comparisons.push_back(compareRunsStored(catalog, baseline->ref, run->ref, {}, &storeErrors));
    } else {
        result = triageStored(catalog, {}, &storeErrors);
    }
    for (const QString &e : storeErrors)
        err << "fp8scope-cli: " << e << '\n';
    QTextStream out(stdout);
    if (parser.isSet(jsonOpt)) {
        QJsonArray comparisons, runs;
        for (const Comparison &c : result.comparisons)
            comparisons.append(QJsonObject {{QStringLiteral("baseline"), nameOf(catalog, c.baseline)},
                {QStringLiteral("run"), nameOf(catalog, c.run)}, {QStringLiteral("verdict"), verdictName(c.verdict)},
                {QStringLiteral("departure_step"), step(c.departure)}, {QStringLiteral("lead_steps"), step(c.lead)},
                {QStringLiteral("findings"), findingsJson(c.findings)}});
        for (const RunCheck &r : result.runs)
            runs.append(QJsonObject {{QStringLiteral("run"), nameOf(catalog, r.run)},
                {QStringLiteral("verdict"), verdictName(r.verdict)},
                {QStringLiteral("departure_step"), step(r.departure)},
                {QStringLiteral("findings"), findingsJson(r.findings)}});
        out << QJsonDocument(QJsonObject {{QStringLiteral("version"), 1}, {QStringLiteral("comparisons"), comparisons},
                                 {QStringLiteral("runs"), runs}})
                   .toJson(QJsonDocument::Indented);
        return 0;
    }
    for (const Comparison &c : result.comparisons) {
        out << nameOf(catalog, c.run) << " against " << nameOf(catalog, c.baseline) << ": " << verdictName(c.verdict);
        if (c.departure)
            out << ", departs at step " << *c.departure << " of " << c.plannedSteps;
        if (c.lead)
            out << ", the first layer signal " << *c.lead << " steps before";
        out << '\n';
        printFindings(out, c.findings);
    }
    for (const RunCheck &r : result.runs) {
        out << nameOf(catalog, r.run) << " (no baseline): " << verdictName(r.verdict);
        if (r.departure)
            out << ", leaves its course at step " << *r.departure;
        out << '\n';
        printFindings(out, r.findings);
    }
    if (result.comparisons.empty() && result.runs.empty())
        out << "no run with a loss to triage\n";
    return 0;
}

} // namespace fp8scope::cli
