#include "attemptscommand.h"

#include "app/common/commandline.h"
#include "folderargs.h"

#include "core/analysis/attempts.h"
#include "core/session/foldersession.h"

#include <QCommandLineParser>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextStream>

#include <cmath>
#include <set>

namespace fp8scope::cli {

using namespace analysis;

namespace {

void printAttempts(QTextStream &out, const AttemptsResult &r)
{
    out << "baseline " << r.baselineName << ": " << r.attempts.size() << " attempt(s)\n";
    for (size_t i = 0; i < r.attempts.size(); ++i) {
        const Attempt &a = r.attempts[i];
        out << (r.candidate == i ? "* " : "  ") << a.name << ": " << verdictName(a.verdict) + comparabilityCaveat(a);
        if (a.departure)
            out << " at step " << *a.departure;
        if (std::isfinite(a.endGap))
            out << ", end gap " << QString::number(a.endGap, 'g', 3) << " (the band allows "
                << QString::number(a.endEdge, 'g', 3) << ")";
        for (auto it = a.evalGaps.cbegin(); it != a.evalGaps.cend(); ++it)
            out << ", " << it.value() << " eval gap(s)"
                << (it.key().isEmpty() ? QString() : QStringLiteral(" (%1)").arg(it.key()));
        if (a.auditFindings > 0)
            out << ", " << a.auditFindings << " inference checkpoint finding(s)";
        out << '\n';
        out << "    from "
            << (a.parentName.isEmpty() ? r.baselineName + QStringLiteral(" (the baseline)") : a.parentName) << ": "
            << (a.groupsFromParent.isEmpty() ? QStringLiteral("nothing")
                                             : a.groupsFromParent.join(QStringLiteral(", ")));
        if (!a.fixesParent.isEmpty())
            out << "; fixes its parent's problem: " << a.fixesParent;
        out << '\n';
        if (a.severalAtOnce)
            out << "    warning: " << a.groupsFromParent.size()
                << " changes at once: which of them did what cannot be told apart\n";
    }
    out << "candidate: " << (r.candidate ? r.attempts[*r.candidate].name : QStringLiteral("none"));
    if (r.candidateSource == CandidateSource::Chosen)
        out << " (chosen by the user; the rule's: "
            << (r.ruleCandidate ? r.attempts[*r.ruleCandidate].name : QStringLiteral("none")) << ")\n";
    else
        out << " ("
            << (r.candidateSource == CandidateSource::Confirmed ? QStringLiteral("confirmed by the user: ") : QString())
            << candidateRule() << ")\n";
}

} // namespace

int runAttempts(const QStringList &args)
{
    QCommandLineParser parser;
    if (const int rc = parseCommand(parser, *cliCommand(u"attempts"), args))
        return rc < 0 ? 0 : rc;
    QTextStream err(stderr);
    FolderSession session;
    if (!openAndIngest(parser.positionalArguments().front(), &session, err))
        return 1;
    Catalog &catalog = session.catalog();
    QStringList storeErrors;
    const TriageResult triage = triageStored(catalog, {}, &storeErrors);
    for (const QString &e : storeErrors)
        err << "fp8scope-cli: " << e << '\n';
    // The baselines: the one asked for, or every baseline some attempt is compared with.
    std::vector<RunRef> baselines;
    if (parser.isSet(QStringLiteral("baseline"))) {
        const auto b = catalog.findRun(parser.value(QStringLiteral("baseline")));
        if (!b) {
            err << "fp8scope-cli: no run '" << parser.value(QStringLiteral("baseline")) << "'\n";
            return 1;
        }
        baselines.push_back(b->ref);
    } else {
        for (const Comparison &c : triage.comparisons) {
            if (c.baseline.isValid() && std::find(baselines.begin(), baselines.end(), c.baseline) == baselines.end())
                baselines.push_back(c.baseline);
        }
    }
    QTextStream out(stdout);
    QJsonArray all;
    for (const RunRef &b : baselines) {
        const AttemptsResult r = attemptsOf(catalog, b, triage.comparisons);
        if (parser.isSet(QStringLiteral("json")))
            all.append(attemptsJson(r));
        else
            printAttempts(out, r);
    }
    if (parser.isSet(QStringLiteral("json")))
        out << QJsonDocument(QJsonObject {{QStringLiteral("version"), 1}, {QStringLiteral("baselines"), all}})
                   .toJson(QJsonDocument::Indented);
    else if (baselines.empty())
        out << "no FP8 run compared with a baseline\n";
    return 0;
}

} // namespace fp8scope::cli
