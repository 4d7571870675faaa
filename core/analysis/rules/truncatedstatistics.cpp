#include "core/analysis/rules.h"

#include <set>

namespace fp8scope::analysis::rules {

// A statistic the TE log prints too small to read (0.0000 for most layers): said once per statistic, not read
// as zero.
void truncatedStatistics(const PairInputs &in, const TriageOptions &, Comparison &c)
{
    std::set<QString> truncated;
    for (const SeriesPoints &s : in.finish.risk) {
        if (isTruncated(s))
            truncated.insert(s.series.stat);
    }
    for (const QString &stat : truncated) {
        Finding f;
        f.kind = FindingKind::TruncatedStatistic;
        f.stat = stat;
        f.summary = QStringLiteral("%1 is printed with four decimals and reads 0.0000 for most layers: too small to "
                                   "read from this log (the TensorBoard writer has it at full precision)")
                        .arg(stat);
        c.findings.push_back(f);
    }
}

} // namespace fp8scope::analysis::rules
