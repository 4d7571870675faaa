#include "auditcommand.h"

#include "app/common/commandline.h"
#include "core/analysis/auditcalibration.h"
#include "core/audit/checkpointaudit.h"
#include "core/query/catalog.h"
#include "core/session/foldersession.h"
#include "folderargs.h"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QJsonDocument>
#include <QTextStream>

#include <cmath>

namespace fp8scope::cli {

namespace {

QString num(double v)
{
    return std::isfinite(v) ? QString::number(v, 'g', 3) : QStringLiteral("-");
}

void printAudit(QTextStream &out, const AuditResult &r)
{
    out << "checkpoint  " << r.checkpoint << " (" << r.files.size() << (r.files.size() == 1 ? " file" : " files")
        << ")\n";
    out << "config      "
        << (r.config.method.isEmpty()
                   ? QStringLiteral("none found")
                   : QStringLiteral("%1, weights %2%3")
                         .arg(r.config.method,
                             r.config.weightStrategy.isEmpty() ? QStringLiteral("?") : r.config.weightStrategy,
                             r.config.staticActivations
                                 ? (*r.config.staticActivations ? QStringLiteral(", static activation scales")
                                                                : QStringLiteral(", dynamic activation scales"))
                                 : QString()))
        << '\n';
    if (!r.references.isEmpty())
        out << "reference   " << r.references.join(QStringLiteral(", ")) << '\n';
    out << '\n';
    int quantized = 0;
    for (const AuditLayer &l : r.layers)
        quantized += l.quantized;
    out << r.layers.size() << " layers, " << quantized << " quantized; " << r.findings.size()
        << (r.findings.size() == 1 ? " finding\n" : " findings\n");
    for (const AuditFinding &f : r.findings) {
        out << "  " << auditSeverityName(f.severity).leftJustified(9) << auditKindName(f.kind).leftJustified(21)
            << f.layer;
        if (!f.trainingLayer.isEmpty())
            out << "  (training: " << f.trainingLayer << ')';
        out << "\n      " << f.evidence << '\n';
    }
    out << '\n'
        << QStringLiteral("%1 %2 %3 %4 %5 %6 %7 %8\n")
               .arg(QStringLiteral("layer"), -44)
               .arg(QStringLiteral("dtype"), -8)
               .arg(QStringLiteral("scale"), -18)
               .arg(QStringLiteral("scale min..max"), -20)
               .arg(QStringLiteral("amax"), -9)
               .arg(QStringLiteral("rel.err"), -9)
               .arg(QStringLiteral("fresh"), -9)
               .arg(QStringLiteral("status"));
    for (const AuditLayer &l : r.layers) {
        if (!l.quantized && l.findings.isEmpty())
            continue;
        out << QStringLiteral("%1 %2 %3 %4 %5 %6 %7 %8\n")
                   .arg(l.name, -44)
                   .arg(l.dtype, -8)
                   .arg(l.scaleLayout.isEmpty() ? QStringLiteral("-") : l.scaleLayout, -18)
                   .arg(QStringLiteral("%1..%2").arg(num(l.scaleMin), num(l.scaleMax)), -20)
                   .arg(num(l.amax), -9)
                   .arg(num(l.relError), -9)
                   .arg(num(l.freshRelError), -9)
                   .arg(l.status());
    }
    if (!r.unmapped.isEmpty())
        out << "\nno training name for: " << r.unmapped.join(QStringLiteral(", ")) << '\n';
    if (!r.unmatched.isEmpty())
        out << "not in the references: " << r.unmatched.join(QStringLiteral(", ")) << '\n';
    for (const Problem &p : r.problems)
        out << "problem: " << p.toString() << '\n';
}

} // namespace

int runAudit(const QStringList &args)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    if (const int rc = parseCommand(parser, *cliCommand(u"audit"), args))
        return rc < 0 ? 0 : rc;
    AuditOptions options;
    options.references = parser.values(QStringLiteral("reference"));
    options.mappingFile = parser.value(QStringLiteral("mapping"));
    bool ok = false;
    options.threads = parser.value(QStringLiteral("threads")).toInt(&ok);
    if (!ok || options.threads < 0) {
        err << "fp8scope-cli audit: --threads takes a number of threads\n";
        return 2;
    }
    Problem problem;
    auto result = auditCheckpoint(parser.positionalArguments().front(), options, &problem);
    if (!result) {
        err << "fp8scope-cli audit: " << problem.toString() << '\n';
        return 1;
    }
    // The training run, by the same rules as the triage's: the layers it trained in BF16 (its config), its
    // activations' amax near the end and its activation dumps, for the static input scales.
    if (parser.isSet(QStringLiteral("run"))) {
        FolderSession session;
        if (!openAndIngest(parser.value(QStringLiteral("run")), &session, err))
            return 1;
        const Catalog &catalog = session.catalog();
        std::optional<Run> chosen;
        for (const Run &r : catalog.runs(false)) {
            if (!chosen || (chosen->precision == QLatin1String("bf16") && r.precision != QLatin1String("bf16")))
                chosen = r;
        }
        if (!chosen) {
            err << "fp8scope-cli audit: no run in " << parser.value(QStringLiteral("run")) << '\n';
            return 1;
        }
        const RunCalibration c = auditAgainstRun(catalog, chosen->ref, chosen->label(), *result);
        if (c.late.statistic.isEmpty() && c.dumpsCast == 0)
            err << "fp8scope-cli audit: run " << chosen->label()
                << " logs no amax of its activations and dumped none of the layers with a static input scale: the "
                   "input scales are not checked against it\n";
    }
    if (parser.isSet(QStringLiteral("json")))
        out << QJsonDocument(auditToJson(*result)).toJson(QJsonDocument::Indented);
    else
        printAudit(out, *result);
    return result->findings.empty() ? 0 : 1;
}

} // namespace fp8scope::cli
