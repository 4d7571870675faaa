#include "auditcalibration.h"

#include "core/formats/fp8math.h"
#include "core/numerics/cpubackend.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/recipe.h"
#include "core/query/catalog.h"
#include "core/tensors/tensorreader.h"

#include <QDateTime>
#include <QFileInfo>
#include <QHash>

#include <limits>
#include <mutex>

namespace fp8scope {

namespace {

struct DumpFigures {
    double saturatedPct = NAN, flushedPct = NAN, recipeFlushedPct = NAN, amax = NAN;
};

// The run's own scaling of its activations, as the dump's recipe names it (a scalar FP8 recipe: current or
// delayed, with the dump's amax history); current scaling where nothing says or another kind of recipe was
// used (the comparison is of flushing under one scale a tensor).
Recipe runScaling(const QString &recipe, const TensorReader &reader)
{
    QString error;
    std::optional<Recipe> r = Recipe::parse(recipe, fp8math::Format::E4M3, &error);
    if (r && r->kind == RecipeKind::Delayed) {
        r->amaxHistory = reader.amaxHistory();
        if (!r->amaxHistory.empty())
            return *r;
    }
    if (r && r->kind == RecipeKind::Current)
        return *r;
    return *Recipe::parse(QStringLiteral("current"), fp8math::Format::E4M3, &error);
}

// The dump cast with the static scale (encode 1 / inputScale: a delayed recipe whose one-entry history is the
// range inputScale x 448 represents) and with the run's scaling.
std::optional<DumpFigures> castDump(const Dump &dump, double inputScale, const QString &recipe, Problem *problem)
{
    auto reader = openTensor(dump.spec(), problem);
    if (!reader)
        return std::nullopt;
    Recipe fixed;
    fixed.kind = RecipeKind::Delayed;
    fixed.format = fp8math::Format::E4M3;
    fixed.historyLength = 1;
    fixed.amaxHistory = {float(inputScale * double(fp8math::formatSpec(fp8math::Format::E4M3).maxFinite))};
    const Recipe own = runScaling(recipe, *reader);
    CpuBackend backend(2);
    MetricsEngine engine(backend);
    const auto metrics = engine.compute(*reader, {fixed, own}, problem);
    if (!metrics)
        return std::nullopt;
    return DumpFigures {
        (*metrics)[0].saturationPct, (*metrics)[0].underflowPct, (*metrics)[1].underflowPct, (*metrics)[0].amax};
}

// castDump, once while the dump's file holds.
std::optional<DumpFigures> cachedCast(const Dump &dump, double inputScale, const QString &recipe, Problem *problem)
{
    const QFileInfo info(dump.path);
    const QString key = QStringLiteral("%1|%2|%3|%4|%5")
                            .arg(dump.spec())
                            .arg(info.size())
                            .arg(info.lastModified().toMSecsSinceEpoch())
                            .arg(inputScale, 0, 'g', 17)
                            .arg(recipe);
    static std::mutex mutex;
    static QHash<QString, DumpFigures> cache;
    {
        const std::lock_guard lock(mutex);
        if (const auto it = cache.constFind(key); it != cache.cend())
            return *it;
    }
    const std::optional<DumpFigures> figures = castDump(dump, inputScale, recipe, problem);
    if (figures) {
        const std::lock_guard lock(mutex);
        if (cache.size() >= 256)
            cache.clear();
        cache.insert(key, *figures);
    }
    return figures;
}

} // namespace

RunCalibration calibrateAgainstRun(const Catalog &catalog, RunRef run, const QString &runLabel, AuditResult &result)
{
    RunCalibration c;
    const std::optional<Run> r = catalog.run(run);
    const QString recipe = r && !r->recipe.isEmpty() ? r->recipe : QStringLiteral("current");
    // A module's dump is cast once for every inference layer it feeds (q, k and v share linear_qkv's input)
    // that has the same input scale.
    QHash<QString, std::optional<DumpFigures>> done;
    for (AuditLayer &l : result.layers) {
        if (!l.inputScale || !(*l.inputScale > 0) || !l.training)
            continue;
        const std::optional<Dump> dump = catalog.nearestDump(
            run, l.training->module, QStringLiteral("activation"), std::numeric_limits<int64_t>::max());
        if (!dump)
            continue;
        const QString key = l.training->module + QLatin1Char('|') + QString::number(*l.inputScale, 'g', 17);
        if (!done.contains(key)) {
            Problem problem;
            done.insert(key, cachedCast(*dump, *l.inputScale, recipe, &problem));
            if (!done.value(key))
                c.problems.push_back(problem);
            else
                ++c.dumpsCast;
        }
        const std::optional<DumpFigures> &f = done.value(key);
        if (!f)
            continue;
        l.calibrationDump = dump->file;
        l.calibrationStep = dump->record.step;
        l.calibrationRecipe = recipe;
        l.dumpSaturatedPct = f->saturatedPct;
        l.dumpFlushedPct = f->flushedPct;
        l.dumpRecipeFlushedPct = f->recipeFlushedPct;
        l.dumpAmax = f->amax;
    }
    for (const Problem &p : c.problems)
        result.problems.push_back(p);
    c.late = lateAmax(catalog, run, QStringLiteral("activation"));
    QHash<QString, ActivationAmax> amax;
    for (auto it = c.late.byLayer.cbegin(); it != c.late.byLayer.cend(); ++it)
        amax.insert(it.key(),
            {it.value(), c.late.leastByLayer.value(it.key(), it.value()), c.late.stepsByLayer.value(it.key(), 1)});
    checkCalibration(result, amax,
        c.late.statistic.isEmpty() ? QString()
                                   : QStringLiteral("run %1, %2 of activation, steps %3-%4")
                                         .arg(runLabel, c.late.statistic)
                                         .arg(c.late.firstStep)
                                         .arg(c.late.lastStep));
    return c;
}

RunCalibration auditAgainstRun(const Catalog &catalog, RunRef run, const QString &runLabel, AuditResult &result)
{
    std::vector<std::pair<QString, QString>> config;
    for (const ConfigEntry &e : catalog.configs(run))
        config.emplace_back(e.key, e.value);
    checkTrainingPrecision(result, bf16TrainedLayers(config));
    return calibrateAgainstRun(catalog, run, runLabel, result);
}

} // namespace fp8scope
