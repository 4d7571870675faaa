#include "democommand.h"

#include "app/common/commandline.h"

#include "core/demo/demogenerator.h"
#include "core/demo/scenarios.h"

#include <QCommandLineParser>
#include <QTextStream>

namespace fp8scope::cli {

int runDemo(const QStringList &args)
{
    QCommandLineParser parser;
    const QString seedOpt = QStringLiteral("seed");
    const QString layersOpt = QStringLiteral("layers");
    const QString stepsOpt = QStringLiteral("steps");
    const QString scenarioOpt = QStringLiteral("scenario");
    QTextStream err(stderr);
    if (const int rc = parseCommand(parser, *cliCommand(u"demo"), args))
        return rc < 0 ? 0 : rc;
    if (!parser.isSet(scenarioOpt)
        && (parser.isSet(QStringLiteral("experts")) || parser.isSet(QStringLiteral("all-experts")))) {
        err << "fp8scope-cli demo: --experts and --all-experts go with --scenario\n";
        return 2;
    }
    if (parser.isSet(scenarioOpt)) {
        const std::optional<Scenario> scenario = scenarioFromName(parser.value(scenarioOpt));
        bool ok = false;
        const uint64_t seed = parser.value(seedOpt).toULongLong(&ok);
        if (!scenario || !ok) {
            err << "fp8scope-cli demo: --scenario is early-divergence, mid-run-instability, loss-spikes, "
                   "downstream-gap or none, and --seed a number\n";
            return 2;
        }
        if (parser.isSet(layersOpt) || parser.isSet(stepsOpt)) {
            err << "fp8scope-cli demo: a scenario draws its layers and steps from its seed (no --layers, --steps)\n";
            return 2;
        }
        ScenarioVariant variant;
        if (parser.isSet(QStringLiteral("experts"))) {
            variant.experts = parser.value(QStringLiteral("experts")).toInt(&ok);
            if (!ok || variant.experts < 2 || variant.experts > 512) {
                err << "fp8scope-cli demo: --experts takes 2..512\n";
                return 2;
            }
        }
        variant.allExperts = parser.isSet(QStringLiteral("all-experts"));
        if (variant.allExperts && variant.experts == 0) {
            err << "fp8scope-cli demo: --all-experts needs --experts\n";
            return 2;
        }
        ScenarioPlan plan;
        QString error;
        if (!generateScenario(parser.positionalArguments().front(), *scenario, seed, &plan, &error, variant)) {
            err << "fp8scope-cli: " << error << '\n';
            return 1;
        }
        QTextStream out(stdout);
        out << "scenario " << scenarioName(*scenario) << " (seed " << seed << ", " << plan.steps
            << " steps) written to " << parser.positionalArguments().front();
        if (plan.departureStep)
            out << ": FP8 departs at step " << *plan.departureStep;
        if (!plan.layer.isEmpty())
            out << ", " << plan.layer << ' ' << plan.tensor << " moves from step " << *plan.onsetStep;
        if (!plan.keys.isEmpty())
            out << ", suspect " << plan.keys.join(QStringLiteral(", "));
        if (!plan.tasks.isEmpty())
            out << ": weaker tasks " << plan.tasks.join(QStringLiteral(", "));
        out << '\n';
        return 0;
    }
    DemoOptions o;
    bool ok1 = false, ok2 = false, ok3 = false;
    o.seed = parser.value(seedOpt).toULongLong(&ok1);
    o.layers = parser.value(layersOpt).toInt(&ok2);
    o.steps = parser.value(stepsOpt).toInt(&ok3);
    if (!ok1 || !ok2 || !ok3 || o.layers < 4 || o.layers > 200 || o.steps < 500 || o.steps > 1000000) {
        err << "fp8scope-cli demo: --seed is a number, --layers 4..200, --steps 500..1000000\n";
        return 2;
    }
    DemoPlan plan;
    QString error;
    if (!generateDemo(parser.positionalArguments().front(), o, &plan, &error)) {
        err << "fp8scope-cli: " << error << '\n';
        return 1;
    }
    QTextStream(stdout) << "demo written to " << parser.positionalArguments().front() << ": FP8 departs at step "
                        << plan.departureStep << ", " << plan.plantedLayerName << " activation underflows from step "
                        << plan.underflowStart << ", weaker tasks " << plan.weakTasks.join(QStringLiteral(", "))
                        << '\n';
    return 0;
}

} // namespace fp8scope::cli
