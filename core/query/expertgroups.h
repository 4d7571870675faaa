// A layer x step matrix with its mixture-of-experts GEMMs' experts grouped: one row per GEMM holding the reduction
// the request asks for (the worst expert, the mean, one expert), the expert each value is from kept beside it; or
// one GEMM's experts alone (its experts map). Plain functions over a Heatmap, so the stores' rows, the ranks' union
// and a comparison's differences group the same way.
#pragma once

#include "core/query/querytypes.h"
#include "core/store/expertrows.h"
#include "core/store/runstore.h"

namespace fp8scope {

// Whether a stored layer's row belongs in the matrix the request asks for (every row, or one GEMM's experts).
bool matrixKeepsLayer(const QString &layer, const MatrixRequest &request);

// How a label says the reduction ("worst expert", "mean of experts", "expert 3").
QString expertReductionText(ExpertRows rows, int expert);

// Groups h's expert rows as request.experts says (nothing for All or an experts map; a matrix with no experts
// stays as it is, rowExperts empty). h's layers are in depth order; a GEMM's row takes its first expert's place.
void groupExperts(Heatmap *h, const MatrixRequest &request);

// The same matrix from the store's reduced rows (RunStore::expertRows) and the rows of the layers that are no
// experts' (`rank`: the rank of the source, for the marks of those rows): what groupExperts makes from every
// expert's points, read as a row per GEMM. For ExpertRows Max and Mean.
void assembleGrouped(Heatmap *h, const std::vector<LayerRow> &dense, const std::vector<ExpertGroupRow> &groups,
    ExpertRows rows, int rank);

} // namespace fp8scope
