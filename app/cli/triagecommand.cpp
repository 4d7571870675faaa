#include "triagecommand.h"

#include "app/common/commandline.h"
#include "folderargs.h"

#include "core/analysis/triage.h"
#include "core/session/foldersession.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextStream>

#include <cmath>

namespace fp8scope::cli {

using namespace analysis;

namespace {

QJsonValue step(const std::optional<int64_t> &s)
{
    return s ? QJsonValue(double(*s)) : QJsonValue(QJsonValue::Null);
}

void printFindings(QTextStream &out, const std::vector<Finding> &findings)
{
    for (const Finding &f : findings)
        out << "  [" << severityName(f.severity) << "] " << findingKindName(f.kind) << ": " << f.summary << '\n';
}

// The engine's next steps (none for a healthy verdict; a dismissed finding gives none).
void printNextSteps(QTextStream &out, const Comparison &c)
{
    if (c.nextSteps.empty())
        return;
    out << "  what to try next, one change at a time:\n";
    int n = 0;
    for (const NextStep &s : c.nextSteps) {
        out << "    " << ++n << ". " << QString(s.action).replace(QLatin1Char('\n'), QStringLiteral("\n       "))
            << '\n';
        if (!s.config.isEmpty())
            out << "       " << QString(s.config).trimmed().replace(QLatin1Char('\n'), QStringLiteral("\n       "))
                << '\n';
    }
}

QJsonValue number(double v)
{
    return std::isfinite(v) ? QJsonValue(v) : QJsonValue(QJsonValue::Null);
}

QString csvNumber(double v)
{
    return std::isfinite(v) ? QString::number(v, 'g', 9) : QString();
}

} // namespace

int runTriage(const QStringList &args)
{
    QCommandLineParser parser;
    const QString baselineOpt = QStringLiteral("baseline");
    const QString runOpt = QStringLiteral("run");
    const QString jsonOpt = QStringLiteral("json");
    if (const int rc = parseCommand(parser, *cliCommand(u"triage"), args))
        return rc < 0 ? 0 : rc;
    QTextStream err(stderr);
    if (parser.isSet(baselineOpt) != parser.isSet(runOpt)) {
        err << "fp8scope-cli triage: --baseline and --run go together\n";
        return 2;
    }
    FolderSession session;
    if (!openAndIngest(parser.positionalArguments().front(), &session, err))
        return 1;
    Catalog &catalog = session.catalog();
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
            comparisons.append(comparisonJson(catalog, c));
        for (const RunCheck &r : result.runs)
            runs.append(runCheckJson(catalog, r));
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
        if (c.comparability.level == ComparabilityLevel::WithCare)
            out << "  " << c.comparability.text << '\n';
        printFindings(out, c.findings);
        printNextSteps(out, c);
    }
    for (const RunCheck &r : result.runs) {
        out << nameOf(catalog, r.run) << " (no baseline): " << verdictName(r.verdict);
        if (r.departure)
            out << ", leaves its course at step " << *r.departure;
        out << '\n';
        printFindings(out, r.findings);
        printNextSteps(out, comparisonOf(catalog, r));
    }
    if (result.comparisons.empty() && result.runs.empty())
        out << "no run with a loss to triage\n";
    return 0;
}

int runCompare(const QStringList &args)
{
    QCommandLineParser parser;
    const QString baselineOpt = QStringLiteral("baseline");
    const QString runOpt = QStringLiteral("run");
    const QString statOpt = QStringLiteral("stat");
    const QString csvOpt = QStringLiteral("csv");
    const QString jsonOpt = QStringLiteral("json");
    if (const int rc = parseCommand(parser, *cliCommand(u"compare"), args))
        return rc < 0 ? 0 : rc;
    QTextStream err(stderr);
    if (!parser.isSet(runOpt)) {
        err << "fp8scope-cli compare: --run is required\n";
        return 2;
    }
    if (parser.isSet(csvOpt) && parser.isSet(jsonOpt)) {
        err << "fp8scope-cli compare: --csv or --json, not both\n";
        return 2;
    }
    FolderSession session;
    if (!openAndIngest(parser.positionalArguments().front(), &session, err))
        return 1;
    Catalog &catalog = session.catalog();
    const auto run = catalog.findRun(parser.value(runOpt));
    if (!run) {
        err << "fp8scope-cli: no run '" << parser.value(runOpt) << "'\n";
        return 1;
    }
    std::optional<Run> baseline;
    if (parser.isSet(baselineOpt)) {
        baseline = catalog.findRun(parser.value(baselineOpt));
        if (!baseline) {
            err << "fp8scope-cli: no run '" << parser.value(baselineOpt) << "'\n";
            return 1;
        }
    } else {
        const Pairing p = catalog.pairing(run->ref);
        baseline = p.baseline.isValid() ? catalog.run(p.baseline) : std::nullopt;
        if (!baseline) {
            err << "fp8scope-cli compare: " << run->name << " has no baseline; name one with --baseline\n";
            return 1;
        }
    }
    const StatComparison c = compareStatistic(catalog, baseline->ref, run->ref, parser.value(statOpt));
    if (!c.found) {
        err << "fp8scope-cli compare: " << (c.baselineSource.isEmpty() ? baseline->name : run->name) << " has no '"
            << c.stat << "' series\n";
        return 1;
    }
    const Departure &d = c.departure;
    const Departure::Trace &t = d.trace;
    const auto at = [&](const std::vector<double> &v, size_t i) { return i < v.size() ? v[i] : NAN; };
    QTextStream out(stdout);
    if (parser.isSet(csvOpt)) {
        // The first column is what the runs were aligned on: step, or consumed samples (tokens) when their
        // batch sizes differ.
        out << QString(c.axis).replace(QLatin1Char(' '), QLatin1Char('_'))
            << ",baseline,run,difference,smoothed,edge\n";
        for (size_t i = 0; i < t.steps.size(); ++i)
            out << t.steps[i] << ',' << csvNumber(t.baseline[i]) << ',' << csvNumber(t.run[i]) << ','
                << csvNumber(t.difference[i]) << ',' << csvNumber(at(t.smoothed, i)) << ',' << csvNumber(at(t.edge, i))
                << '\n';
        return 0;
    }
    if (parser.isSet(jsonOpt)) {
        QJsonArray points;
        for (size_t i = 0; i < t.steps.size(); ++i)
            points.append(QJsonObject {{QStringLiteral("step"), double(t.steps[i])},
                {QStringLiteral("baseline"), number(t.baseline[i])}, {QStringLiteral("run"), number(t.run[i])},
                {QStringLiteral("difference"), number(t.difference[i])},
                {QStringLiteral("smoothed"), number(at(t.smoothed, i))},
                {QStringLiteral("edge"), number(at(t.edge, i))}});
        const QJsonObject departure {{QStringLiteral("step"), step(d.step)},
            {QStringLiteral("low"), d.step ? QJsonValue(double(d.low)) : QJsonValue(QJsonValue::Null)},
            {QStringLiteral("high"), d.step ? QJsonValue(double(d.high)) : QJsonValue(QJsonValue::Null)},
            {QStringLiteral("offset"), number(d.offset)}, {QStringLiteral("noise"), number(d.noise)},
            {QStringLiteral("band"), number(d.band)}, {QStringLiteral("window"), d.window},
            {QStringLiteral("gap_at_end"), number(d.gapAtEnd)}, {QStringLiteral("points"), double(d.points)},
            {QStringLiteral("relative_tolerance"), c.options.relativeTolerance},
            {QStringLiteral("absolute_tolerance"), c.options.absoluteTolerance}};
        out << QJsonDocument(
            QJsonObject {{QStringLiteral("version"), 1}, {QStringLiteral("baseline"), baseline->name},
                {QStringLiteral("run"), run->name}, {QStringLiteral("stat"), c.stat},
                {QStringLiteral("baseline_source"), c.baselineSource}, {QStringLiteral("run_source"), c.runSource},
                {QStringLiteral("interval_means"), c.intervalMeans}, {QStringLiteral("aligned_on"), c.axis},
                {QStringLiteral("departure"), departure}, {QStringLiteral("points"), points}})
                   .toJson(QJsonDocument::Indented);
        return 0;
    }
    out << c.stat << " of " << run->name << " against " << baseline->name << ": " << d.points << " aligned steps";
    if (c.intervalMeans)
        out << " (interval means)";
    if (c.axis != QLatin1String("step"))
        out << ", aligned on " << c.axis << " (other batch sizes); the departure in " << run->name << "'s steps";
    out << '\n';
    out << "  noise of the difference " << QString::number(d.noise, 'g', 3) << ", band "
        << QString::number(d.band, 'g', 3) << " (running median of " << d.window << " points), tolerance "
        << QString::number(100 * c.options.relativeTolerance, 'g', 3) << " % or "
        << QString::number(c.options.absoluteTolerance, 'g', 3) << '\n';
    if (d.step)
        out << "  departs at step " << *d.step << " (between " << d.low << " and " << d.high << "), "
            << QString::number(d.gapAtEnd, 'g', 3) << " higher at the end\n";
    else
        out << "  no departure: offset " << QString::number(d.offset, 'g', 3) << ", "
            << QString::number(d.gapAtEnd, 'g', 3) << " at the end\n";
    // At most 40 rows, evenly spaced, the departure's step among them; --csv prints them all.
    std::vector<size_t> rows;
    const size_t n = t.steps.size();
    for (size_t k = 0; k < std::min<size_t>(n, 40); ++k)
        rows.push_back(n <= 40 ? k : k * (n - 1) / 39);
    if (d.step) {
        if (c.axis == QLatin1String("step")) {
            const auto it = std::lower_bound(t.steps.begin(), t.steps.end(), *d.step);
            rows.push_back(size_t(it - t.steps.begin()));
        }
        std::sort(rows.begin(), rows.end());
        rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    }
    out << QStringLiteral("  %1 %2 %3 %4 %5 %6\n")
               .arg(c.axis == QLatin1String("step") ? QStringLiteral("step") : QStringLiteral("samples"), 10)
               .arg(QStringLiteral("baseline"), 12)
               .arg(QStringLiteral("run"), 12)
               .arg(QStringLiteral("difference"), 12)
               .arg(QStringLiteral("smoothed"), 12)
               .arg(QStringLiteral("edge"), 12);
    for (size_t i : rows) {
        if (i >= n)
            continue;
        const bool outside = i < t.smoothed.size() && t.smoothed[i] > t.edge[i];
        out << QStringLiteral("  %1 %2 %3 %4 %5 %6%7\n")
                   .arg(t.steps[i], 10)
                   .arg(t.baseline[i], 12, 'g', 6)
                   .arg(t.run[i], 12, 'g', 6)
                   .arg(t.difference[i], 12, 'g', 4)
                   .arg(at(t.smoothed, i), 12, 'g', 4)
                   .arg(at(t.edge, i), 12, 'g', 4)
                   .arg(outside ? QStringLiteral(" above") : QString());
    }
    return 0;
}

} // namespace fp8scope::cli
