// The natural order of layer names, which every list of layers follows (the store's, the catalog's, the audit's
// and its plot): digit runs compare as numbers ("layers.2" before "layers.10").
#pragma once

#include <QString>

namespace fp8scope {

// Names equal as numbers ("a01", "a1") are ordered by their text, so the order is total.
bool layerLess(const QString &a, const QString &b);

} // namespace fp8scope
