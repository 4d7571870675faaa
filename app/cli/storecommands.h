// fp8scope-cli ingest / runs / series / heatmap / recompute: the run store from the command line.
#pragma once

#include <QStringList>

namespace fp8scope::cli {

int runIngest(const QStringList &args);
int runRuns(const QStringList &args);
int runSeries(const QStringList &args);
int runHeatmap(const QStringList &args);
int runLayers(const QStringList &args);
int runRecompute(const QStringList &args);

} // namespace fp8scope::cli
