#include "comparetables.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fp8scope::analysis {

namespace {

int classRank(KeyClass c)
{
    switch (c) {
    case KeyClass::Suspect: return 0;
    case KeyClass::Other: return 1;
    case KeyClass::Context: return 2;
    case KeyClass::Incidental: return 3;
    case KeyClass::Expected: return 4;
    }
    return 4;
}

} // namespace

ConfigTable configTable(const Catalog &catalog, RunRef baseline, RunRef run)
{
    ConfigTable t;
    std::map<QString, QString> base, mine;
    for (const ConfigEntry &e : catalog.configs(baseline))
        base[e.key] = e.value;
    for (const ConfigEntry &e : catalog.configs(run))
        mine[e.key] = e.value;
    t.haveBoth = !base.empty() && !mine.empty();
    std::set<QString> keys;
    for (const auto &[k, v] : base)
        keys.insert(k);
    for (const auto &[k, v] : mine)
        keys.insert(k);
    const QString unset = QStringLiteral("(unset)");
    for (const QString &k : keys) {
        const auto b = base.find(k);
        const auto r = mine.find(k);
        ConfigRow row {k, b == base.end() ? unset : b->second, r == mine.end() ? unset : r->second};
        row.differs = row.baseline != row.run;
        row.keyClass = classifyConfigKey(k);
        t.rows.push_back(row);
    }
    std::stable_sort(t.rows.begin(), t.rows.end(), [](const ConfigRow &a, const ConfigRow &b) {
        if (a.differs != b.differs)
            return a.differs;
        return a.differs && classRank(a.keyClass) < classRank(b.keyClass);
    });
    // Versions of the packages both recorded, after the keys.
    std::map<QString, QString> baseVersions, runVersions;
    for (const VersionEntry &v : catalog.versions(baseline))
        baseVersions[v.package] = v.version;
    for (const VersionEntry &v : catalog.versions(run))
        runVersions[v.package] = v.version;
    const QStringList key = keyPackages();
    for (const auto &[package, version] : runVersions) {
        const auto b = baseVersions.find(package);
        if (b == baseVersions.end())
            continue;
        ConfigRow row {package, b->second, version, b->second != version, true,
            key.contains(package) ? KeyClass::Suspect : KeyClass::Incidental};
        t.rows.push_back(row);
    }
    return t;
}

std::vector<EvalRow> evalTable(const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options)
{
    const std::vector<Eval> base = catalog.evals(baseline);
    std::vector<EvalRow> rows;
    for (const Eval &r : catalog.evals(run)) {
        for (const Eval &b : base) {
            if (b.task != r.task || b.metric != r.metric || !std::isfinite(b.value) || !std::isfinite(r.value))
                continue;
            EvalRow row {r.task, r.metric, r.inference, b.value, r.value, r.value - b.value};
            const bool anyError = std::isfinite(b.stderrValue) || std::isfinite(r.stderrValue);
            row.standardError = anyError
                ? std::sqrt((std::isfinite(b.stderrValue) ? b.stderrValue * b.stderrValue : 0.0)
                    + (std::isfinite(r.stderrValue) ? r.stderrValue * r.stderrValue : 0.0))
                : NAN;
            row.z = row.standardError > 0 ? (r.value - b.value) / row.standardError : NAN;
            row.significant = row.standardError > 0 && row.z <= -options.evalSigmas;
            rows.push_back(row);
        }
    }
    std::stable_sort(rows.begin(), rows.end(), [](const EvalRow &a, const EvalRow &b) {
        return std::tie(a.task, a.metric, a.inference) < std::tie(b.task, b.metric, b.inference);
    });
    return rows;
}

QString keyClassName(KeyClass c)
{
    switch (c) {
    case KeyClass::Expected: return QStringLiteral("expected for FP8");
    case KeyClass::Incidental: return QStringLiteral("incidental");
    case KeyClass::Suspect: return QStringLiteral("suspect");
    case KeyClass::Other: return QStringLiteral("other");
    case KeyClass::Context: return QStringLiteral("context");
    }
    return {};
}

} // namespace fp8scope::analysis
