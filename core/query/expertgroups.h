// A layer x step matrix with its mixture-of-experts GEMMs' experts grouped: one row per GEMM holding the reduction
// the request asks for (the worst expert, the mean, one expert), the expert each value is from kept beside it; or
// one GEMM's experts alone (its experts map). Plain functions over a Heatmap, so the stores' rows, the ranks' union
// and a comparison's differences group the same way.
#pragma once

#include "core/query/querytypes.h"

namespace fp8scope {

// Whether a stored layer's row belongs in the matrix the request asks for (every row, or one GEMM's experts).
bool matrixKeepsLayer(const QString &layer, const MatrixRequest &request);

// Groups h's expert rows as request.experts says (nothing for All or an experts map; a matrix with no experts
// stays as it is, rowExperts empty). h's layers are in depth order; a GEMM's row takes its first expert's place.
void groupExperts(Heatmap *h, const MatrixRequest &request);

} // namespace fp8scope
