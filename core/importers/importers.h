// The registry of importers (the one place a new format is added) and the choice of importer for a file.
#pragma once

#include "importer.h"

#include <memory>
#include <vector>

namespace fp8scope {

const std::vector<std::unique_ptr<Importer>> &allImporters();

// The first importer that recognises the file (name and first bytes), or null.
Importer *importerFor(const QString &fileName, const QByteArray &head);

} // namespace fp8scope
