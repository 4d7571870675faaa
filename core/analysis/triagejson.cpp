// The triage as JSON: what `fp8scope-cli triage --json` prints, made here so that every front end and test reads the
// same fields the same way.
#include "triage.h"

#include <QJsonArray>

namespace fp8scope::analysis {

namespace {

QJsonValue step(const std::optional<int64_t> &s)
{
    return s ? QJsonValue(double(*s)) : QJsonValue(QJsonValue::Null);
}

QString nameOf(const Catalog &catalog, RunRef ref)
{
    const std::optional<Run> r = ref.isValid() ? catalog.run(ref) : std::nullopt;
    return r ? r->name : QString();
}

} // namespace

QJsonArray findingsJson(const std::vector<Finding> &findings)
{
    QJsonArray out;
    for (const Finding &f : findings)
        out.append(findingJson(f));
    return out;
}

QString proposalKindName(Proposal::Kind kind)
{
    switch (kind) {
    case Proposal::Kind::Recipe: return QStringLiteral("recipe");
    case Proposal::Kind::Bf16Layers: return QStringLiteral("bf16-layers");
    case Proposal::Kind::ConfigValue: return QStringLiteral("config-value");
    }
    return {};
}

QJsonArray nextStepsJson(const std::vector<NextStep> &steps)
{
    QJsonArray out;
    for (const NextStep &s : steps) {
        QJsonArray proposals;
        for (const Proposal &p : s.proposals) {
            QJsonObject o {{QStringLiteral("kind"), proposalKindName(p.kind)}};
            if (p.kind == Proposal::Kind::Recipe) {
                o.insert(QStringLiteral("recipe"), p.recipe);
            } else if (p.kind == Proposal::Kind::Bf16Layers) {
                o.insert(QStringLiteral("layers"), QJsonArray::fromStringList(p.layers));
            } else {
                o.insert(QStringLiteral("key"), p.key);
                o.insert(QStringLiteral("value"), p.value);
            }
            proposals.append(o);
        }
        out.append(
            QJsonObject {{QStringLiteral("kind"), findingKindName(s.kind)}, {QStringLiteral("finding"), s.finding},
                {QStringLiteral("what"), s.what}, {QStringLiteral("action"), s.action},
                {QStringLiteral("config"), s.config.isEmpty() ? QJsonValue() : QJsonValue(s.config)},
                {QStringLiteral("proposals"), proposals}});
    }
    return out;
}

QString comparabilityName(ComparabilityLevel l)
{
    switch (l) {
    case ComparabilityLevel::Comparable: return QStringLiteral("comparable");
    case ComparabilityLevel::WithCare: return QStringLiteral("with-care");
    case ComparabilityLevel::Unknown: return QStringLiteral("unknown");
    }
    return {};
}

QJsonObject comparisonJson(const Catalog &catalog, const Comparison &c)
{
    return QJsonObject {{QStringLiteral("baseline"), nameOf(catalog, c.baseline)},
        {QStringLiteral("run"), nameOf(catalog, c.run)}, {QStringLiteral("verdict"), verdictName(c.verdict)},
        {QStringLiteral("departure_step"), step(c.departure)}, {QStringLiteral("lead_steps"), step(c.lead)},
        {QStringLiteral("comparability"),
            QJsonObject {{QStringLiteral("level"), comparabilityName(c.comparability.level)},
                {QStringLiteral("text"), c.comparability.text}}},
        {QStringLiteral("findings"), findingsJson(c.findings)},
        {QStringLiteral("next_steps"), nextStepsJson(c.nextSteps)}};
}

QJsonObject runCheckJson(const Catalog &catalog, const RunCheck &r)
{
    return QJsonObject {{QStringLiteral("run"), nameOf(catalog, r.run)},
        {QStringLiteral("verdict"), verdictName(r.verdict)}, {QStringLiteral("departure_step"), step(r.departure)},
        {QStringLiteral("findings"), findingsJson(r.findings)},
        {QStringLiteral("next_steps"), nextStepsJson(comparisonOf(catalog, r).nextSteps)}};
}

} // namespace fp8scope::analysis
