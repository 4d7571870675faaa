#include "core/analysis/rules.h"

#include <QJsonArray>

#include <algorithm>

namespace fp8scope::analysis::rules {

// The rewinds of a run's log (the "rewind" series of its Megatron log, else of its statistics logs: at the
// step a resume went back to, the last step printed before it). The steps in between were trained twice; the store
// holds the values of the second time, as the training went on from them.
std::optional<Finding> restartFinding(const RunInputs &run)
{
    const std::optional<StepSeries> &r = run.rewind;
    if (!r)
        return std::nullopt;
    Finding f;
    f.kind = FindingKind::Restart;
    f.severity = Severity::Info;
    f.stat = QStringLiteral("rewind");
    f.step = r->steps.front();
    f.lastStep = r->steps.back();
    QJsonArray list;
    QStringList text;
    int64_t repeated = 0;
    for (size_t i = 0; i < r->size(); ++i) {
        const int64_t resumedAt = r->steps[i], crashedAt = int64_t(r->values[i]);
        repeated += std::max<int64_t>(0, crashedAt - resumedAt);
        list.append(QJsonObject {{QStringLiteral("last_step_before"), double(crashedAt)},
            {QStringLiteral("resumed_from"), double(resumedAt)}});
        // A statistics log whose counter started again is placed after the steps before it: no step repeats.
        text << (resumedAt <= crashedAt ? QStringLiteral("goes from step %1 back to %2").arg(crashedAt).arg(resumedAt)
                                        : QStringLiteral("starts its steps again after step %1 (placed from step %2)")
                                              .arg(crashedAt)
                                              .arg(resumedAt));
    }
    f.summary = QStringLiteral("%1 (%2): the log %3; the steps trained again are read as the resumed run "
                               "printed them")
                    .arg(run.name())
                    .arg(r->size() == 1 ? QStringLiteral("a crash and a resume")
                                        : QStringLiteral("%1 resumes").arg(r->size()),
                        text.join(QStringLiteral(", ")));
    f.evidence = {{QStringLiteral("rewinds"), list}, {QStringLiteral("steps_repeated"), double(repeated)}};
    return f;
}

void restarts(const PairInputs &in, const TriageOptions &, Comparison &c)
{
    for (const RunInputs *r : {&in.run, &in.baseline}) {
        if (const auto f = restartFinding(*r))
            c.findings.push_back(*f);
    }
}

void runRestarts(const RunInputs &in, const TriageOptions &, RunCheck &r)
{
    if (const auto f = restartFinding(in))
        r.findings.push_back(*f);
}

} // namespace fp8scope::analysis::rules
