#include "core/analysis/rules.h"

#include <QJsonArray>

#include <map>
#include <set>

namespace fp8scope::analysis::rules {

namespace {

struct Drops {
    std::map<QString, std::map<QString, std::pair<double, EvalRow>>> gaps; // inference -> task -> (drop, row)
    std::map<QString, std::map<QString, double>> diffs; // inference -> task -> baseline - run of that metric
};

// Per inference setting and task, the largest drop in standard errors (of the rows that have one).
Drops dropsOf(const std::vector<EvalRow> &evals)
{
    Drops d;
    for (const EvalRow &row : evals) {
        if (!(row.standardError > 0))
            continue;
        // Every task of every inference setting, with its largest drop (negative: none), so that a setting
        // without a drop is there to be the closer one.
        auto &tasks = d.gaps[row.inference];
        const auto seen = tasks.find(row.task);
        if (seen == tasks.end() || -row.z > seen->second.first) {
            tasks[row.task] = {-row.z, row};
            d.diffs[row.inference][row.task] = row.baseline - row.run;
        }
    }
    return d;
}

} // namespace

// Evals: per task, the largest drop, per inference setting of the run; beyond evalSigmas a gap, beyond
// evalNotableSigmas a notable drop (information). z is the difference (run - baseline) in standard errors:
// negative below the baseline, as the difference's sign.
void evalGaps(const PairInputs &in, const TriageOptions &options, Comparison &c)
{
    const Drops drops = dropsOf(in.evals);
    for (const auto &[inference, tasks] : drops.gaps) {
        for (const auto &[task, best] : tasks) {
            if (best.first < options.evalNotableSigmas)
                continue;
            const bool gap = best.first >= options.evalSigmas;
            Finding f;
            f.kind = gap ? FindingKind::EvalGap : FindingKind::EvalDrop;
            f.severity = gap ? Severity::Warning : Severity::Info;
            f.task = task;
            f.key = best.second.metric;
            const double baseValue = best.second.baseline;
            f.summary = QStringLiteral("%1 %2: %3 against %4's %5 (%6 standard errors below%7)%8")
                            .arg(task, best.second.metric)
                            .arg(best.second.run, 0, 'g', 4)
                            .arg(in.baseline.name())
                            .arg(baseValue, 0, 'g', 4)
                            .arg(best.first, 0, 'f', 1)
                            .arg(inference.isEmpty() ? QString() : QStringLiteral(", %1 inference").arg(inference))
                            .arg(gap ? QString()
                                     : QStringLiteral(": a notable drop, below the %1 standard errors a gap needs over "
                                                      "this many tasks")
                                           .arg(options.evalSigmas, 0, 'g', 3));
            f.evidence = {{QStringLiteral("run"), best.second.run}, {QStringLiteral("baseline"), baseValue},
                {QStringLiteral("difference"), best.second.difference}, {QStringLiteral("z"), best.second.z},
                {QStringLiteral("metric"), best.second.metric}, {QStringLiteral("inference"), inference},
                {QStringLiteral("threshold"), gap ? options.evalSigmas : options.evalNotableSigmas}};
            // The advice follows the inference the gap is under: under FP8 inference the FP8 path is the suspect
            // (BF16 inference of the same checkpoint is its control); under another, the precision it was served in.
            if (gap && inference.contains(QLatin1String("fp8"), Qt::CaseInsensitive))
                f.suggestion = QStringLiteral("check the FP8 inference path: the scales exported with the checkpoint "
                                              "against the training's, and which weights it quantizes; evaluate the "
                                              "same checkpoint with BF16 inference as the control");
            else if (gap)
                f.suggestion
                    = QStringLiteral("evaluate in the precision the model was trained in (FP8 inference) and check "
                                     "that the checkpoint carries its FP8 scales");
            c.findings.push_back(f);
        }
    }
}

// The inference precision: a gap that narrows under another inference setting of the same run.
void inferencePrecision(const PairInputs &in, const TriageOptions &options, Comparison &c)
{
    const Drops drops = dropsOf(in.evals);
    const auto &gaps = drops.gaps;
    const auto &diffs = drops.diffs;
    std::set<QString> gapTasks;
    for (const auto &[inference, tasks] : gaps) {
        for (const auto &[task, best] : tasks) {
            if (best.first >= options.evalSigmas)
                gapTasks.insert(task);
        }
    }
    if (gaps.size() >= 2 && !gapTasks.empty()) {
        for (const auto &[a, aTasks] : diffs) {
            for (const auto &[b, bTasks] : diffs) {
                if (a == b)
                    continue;
                QStringList narrower;
                for (const QString &task : gapTasks) {
                    const auto x = aTasks.find(task);
                    const auto y = bTasks.find(task);
                    if (x != aTasks.end() && y != bTasks.end() && y->second < x->second)
                        narrower << task;
                }
                if (narrower.size() == int(gapTasks.size())) {
                    Finding f;
                    f.kind = FindingKind::InferencePrecision;
                    f.severity = Severity::Warning;
                    f.summary
                        = QStringLiteral("%1 inference of this run scores lower on %2; %3 inference is closer to %4")
                              .arg(a.isEmpty() ? QStringLiteral("the first") : a, narrower.join(QStringLiteral(", ")),
                                  b.isEmpty() ? QStringLiteral("the other") : b, in.baseline.name());
                    f.evidence = {{QStringLiteral("lower"), a}, {QStringLiteral("closer"), b},
                        {QStringLiteral("tasks"), QJsonArray::fromStringList(narrower)}};
                    f.suggestion
                        = QStringLiteral("serve the model with %1 inference, or export the FP8 scales with the "
                                         "checkpoint for %2")
                              .arg(b, a);
                    c.findings.push_back(f);
                }
            }
        }
    }
}

} // namespace fp8scope::analysis::rules
