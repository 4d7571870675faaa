// `fp8scope-cli recompute FOLDER --mpi`: the recompute spread over the ranks of mpirun or srun
// (core/recompute/recomputeplan.h has the work, the split and the bytes that travel). Rank 0 ingests the
// folder, makes the work (the dumps not yet recomputed under every recipe, or all with --all) and sends it to
// every rank; each rank computes its share of the files on its backend (its node-local device when there is
// a GPU, CPU threads shared out among the node's ranks otherwise) and sends each dump's results to rank 0,
// which alone writes the store, says the progress over all ranks and what is missing, and exits non-zero
// when anything is. Built only with Open MPI found (FP8SCOPE_HAVE_MPI).
#pragma once

#include "core/numerics/backendselect.h"

#include <QString>
#include <QStringList>

namespace fp8scope::cli {

struct MpiRecomputeOptions {
    QString folder;
    QStringList recipes;
    BackendChoice backend = BackendChoice::Auto;
    int threads = 0; // per rank; 0: the node's hardware threads shared out among its ranks
    bool all = false; // recompute what the store holds already too
    bool json = false;
};

int runRecomputeMpi(const MpiRecomputeOptions &options);

} // namespace fp8scope::cli
