#include "core/analysis/rules.h"

namespace fp8scope::analysis::rules {

// Config keys and key-package versions that differ, by the class of the key (classifyConfigKey).
void configDifferences(const PairInputs &in, const TriageOptions &, Comparison &c)
{
    // Config and version differences, off the comparison's table.
    const ConfigTable &config = in.finish.config;
    const QString baseName = in.baseline.name();
    for (const ConfigRow &row : config.rows) {
        if (!row.differs)
            continue;
        Finding f;
        f.key = row.key;
        if (row.version) {
            f.kind = FindingKind::VersionDifference;
            f.severity = row.keyClass == KeyClass::Suspect ? Severity::Warning : Severity::Info;
            f.summary = QStringLiteral("%1 %2 here, %3 in %4").arg(row.key, row.run, row.baseline, baseName);
            f.evidence = {{QStringLiteral("run"), row.run}, {QStringLiteral("baseline"), row.baseline}};
            // Only a key package's version is one to undo; others are said.
            if (f.severity == Severity::Warning)
                f.suggestion = QStringLiteral("run with %1 %2, as %3 did").arg(row.key, row.baseline, baseName);
        } else {
            if (!config.haveBoth
                || (row.keyClass != KeyClass::Suspect && row.keyClass != KeyClass::Other
                    && row.keyClass != KeyClass::Context))
                continue;
            f.kind = FindingKind::ConfigDifference;
            f.severity = row.keyClass == KeyClass::Suspect ? Severity::Warning : Severity::Info;
            f.evidence = {{QStringLiteral("run"), row.run}, {QStringLiteral("baseline"), row.baseline},
                {QStringLiteral("class"), keyClassName(row.keyClass)}};
            if (row.keyClass == KeyClass::Context) {
                // A prerequisite of FP8 or the parallel layout: context, never a suspect to undo.
                f.summary = QStringLiteral("%1 is %2 here and %3 in %4 (%5: context, not a suspect)")
                                .arg(row.key, row.run, row.baseline, baseName, contextReason(row.key));
            } else {
                f.summary = QStringLiteral("%1 is %2 here and %3 in %4").arg(row.key, row.run, row.baseline, baseName);
                // A suspect feature is one to undo (one at a time, when the verdict says so); another key is
                // said, not proposed.
                if (row.keyClass == KeyClass::Suspect)
                    f.suggestion = QStringLiteral("set %1 back to %2 (as in %3) and run again")
                                       .arg(row.key, row.baseline, baseName);
            }
        }
        c.findings.push_back(f);
    }
}

} // namespace fp8scope::analysis::rules
