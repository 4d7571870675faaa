#include "storedwhatif.h"

#include "triagerules.h"

#include "core/numerics/cpubackend.h"
#include "core/tensors/tensorreader.h"

#include <QFileInfo>
#include <QJsonDocument>

namespace fp8scope::analysis {

std::pair<int64_t, int64_t> whatIfFileStamp(const Dump &dump)
{
    const QFileInfo info(dump.path);
    if (!info.exists())
        return {-1, -1};
    return {info.size(), info.lastModified().toMSecsSinceEpoch()};
}

namespace {

std::optional<WhatIfResult> parseFresh(const StoredWhatIf &w, const Dump &dump)
{
    const auto [size, mtime] = whatIfFileStamp(dump);
    if (size < 0 || w.fileSize != size || w.fileMtime != mtime)
        return std::nullopt;
    QString error;
    std::optional<WhatIfResult> r = whatIfFromJson(QJsonDocument::fromJson(w.result.toUtf8()).object(), &error);
    // One stored by an older fp8scope says less than a fresh one (no block evidence): computed again.
    if (r && !whatIfIsCurrent(*r))
        return std::nullopt;
    return r;
}

} // namespace

QString whatIfDumpKey(const Dump &dump)
{
    return dump.record.dataset.isEmpty() ? dump.file : dump.file + QLatin1Char(':') + dump.record.dataset;
}

QString runFp8Format(const Catalog &catalog, RunRef run)
{
    for (const ConfigEntry &c : catalog.configs(run)) {
        const QString k = normalizedKey(c.key);
        const QString v = c.value.trimmed().toLower().remove(QLatin1Char('"')).remove(QLatin1Char('\''));
        // NeMo's booleans: fp8_hybrid, fp8_e4m3.
        if ((k == QLatin1String("fp8_hybrid") || k == QLatin1String("fp8_e4m3"))
            && (v == QLatin1String("true") || v == QLatin1String("1")))
            return k.mid(4);
        if (k != QLatin1String("fp8_format") && k != QLatin1String("fp8"))
            continue;
        // Transformer Engine's Format enum prints as "Format.HYBRID".
        const QString name = v.section(QLatin1Char('.'), -1);
        if (name == QLatin1String("hybrid") || name == QLatin1String("e4m3") || name == QLatin1String("e5m2"))
            return name;
    }
    return {};
}

std::vector<Recipe> whatIfCandidatesOf(const Catalog &catalog, const Dump &dump)
{
    return whatIfCandidates(dump.record.tensor, runFp8Format(catalog, dump.run));
}

std::optional<WhatIfResult> storedWhatIfOf(const Catalog &catalog, const Dump &dump)
{
    const auto w
        = catalog.storedWhatIf(dump.run, whatIfDumpKey(dump), whatIfRecipesKey(whatIfCandidatesOf(catalog, dump)));
    return w ? parseFresh(*w, dump) : std::nullopt;
}

std::optional<WhatIfResult> whatIfOf(Catalog &catalog, const Dump &dump, MetricsBackend *backend, Problem *problem,
    const MetricsEngine::Progress &progress, bool *stored)
{
    if (stored)
        *stored = false;
    if (auto w = storedWhatIfOf(catalog, dump))
        return w;
    const auto stamp = whatIfFileStamp(dump);
    auto reader = openTensor(dump.spec(), problem);
    if (!reader)
        return std::nullopt;
    std::unique_ptr<MetricsBackend> cpu;
    if (!backend) {
        cpu = std::make_unique<CpuBackend>();
        backend = cpu.get();
    }
    const std::vector<Recipe> candidates = whatIfCandidatesOf(catalog, dump);
    auto result = computeWhatIf(*reader, candidates, *backend, problem, progress);
    if (!result)
        return std::nullopt;
    QString error;
    const StoredWhatIf w = whatIfRecord(dump, candidates, *result, stamp); // the file as it was when it was read
    if (!catalog.storeWhatIf(dump.run, w, &error))
        problem->message = QStringLiteral("the what-if was not stored: %1").arg(error);
    else if (stored)
        *stored = true;
    return result;
}

StoredWhatIf whatIfRecord(const Dump &dump, const std::vector<Recipe> &candidates, const WhatIfResult &result,
    std::pair<int64_t, int64_t> stamp)
{
    return {whatIfDumpKey(dump), dump.record.step, whatIfRecipesKey(candidates), stamp.first, stamp.second,
        QString::fromUtf8(QJsonDocument(whatIfToJson(result)).toJson(QJsonDocument::Compact)), {}};
}

std::map<QString, std::map<QString, double>> whatIfTableOf(const WhatIfResult &result)
{
    std::map<QString, std::map<QString, double>> table;
    for (const WhatIfRow &r : result.rows) {
        auto &row = table[whatIfLabel(r.recipe)];
        const TensorMetrics &m = r.metrics;
        for (const auto &[stat, v] :
            {std::pair {QStringLiteral("mse"), m.mse}, std::pair {QStringLiteral("underflows%"), m.underflowPct},
                std::pair {QStringLiteral("overflows%"), m.saturationPct},
                std::pair {QStringLiteral("damage%"), m.damagePct},
                std::pair {QStringLiteral("mean_rel_error%"), m.meanRelErrorPct},
                std::pair {QStringLiteral("sqnr_db"), m.sqnrDb}}) {
            if (std::isfinite(v))
                row[stat] = v;
        }
    }
    return table;
}

void gatherWhatIfs(const Catalog &catalog, RunRef run, FinishInputs *out)
{
    const std::vector<StoredWhatIf> stored = catalog.storedWhatIfs(run);
    if (stored.empty())
        return;
    const QString format = runFp8Format(catalog, run);
    for (const Dump &d : out->dumps) {
        const QString key = whatIfDumpKey(d);
        const QString recipes = whatIfRecipesKey(whatIfCandidates(d.record.tensor, format));
        for (const StoredWhatIf &w : stored) {
            if (w.dump != key || w.recipes != recipes || w.step != d.record.step)
                continue;
            if (const auto r = parseFresh(w, d)) {
                out->whatIfs[key] = whatIfTableOf(*r);
                for (const WhatIfRow &row : r->rows) {
                    if (row.blocks)
                        out->blockEvidence[key][whatIfLabel(row.recipe)] = row.blocks->toJson();
                }
            }
        }
    }
}

bool ensureWhatIf(Catalog &catalog, Comparison *c, const TriageOptions &options, QString *error, bool *stored)
{
    if (stored)
        *stored = false;
    if (!c->evidence || storedWhatIfOf(catalog, c->evidence->dump))
        return true;
    Problem problem;
    bool done = false;
    if (!whatIfOf(catalog, c->evidence->dump, nullptr, &problem, {}, &done) || !done) {
        *error = problem.toString();
        return false;
    }
    if (stored)
        *stored = true;
    finishComparison(catalog, c, options);
    return true;
}

} // namespace fp8scope::analysis
