// fp8scope-cli triage: every FP8 run of a folder against its baseline, and the runs without one on their own
// (core/analysis/triage.h), as a short report or as JSON; and fp8scope-cli compare.
#pragma once

#include <QStringList>

namespace fp8scope::cli {

int runTriage(const QStringList &args);
// fp8scope-cli compare: one statistic of a run against its baseline, aligned, with the band and the departure.
int runCompare(const QStringList &args);

} // namespace fp8scope::cli
