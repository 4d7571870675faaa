// The run store's schema: the tables of every version and the migrations between them, run in order when a
// store is opened (docs/STORE.md documents the current version).
#pragma once

// Only core/query, core/session and core/recompute read or write a store (their targets link
// fp8scope_store, which defines this); everything above them goes through Catalog and FolderSession.
#ifndef FP8SCOPE_STORE_ACCESS
#error                                                                                                                 \
    "core/store is private to core: read runs through core/query's Catalog, write through core/session's FolderSession (docs/ARCHITECTURE.md)"
#endif

#include "database.h"

#include <QString>

namespace fp8scope::schema {

constexpr int kVersion = 18;

// Brings the store at `path` (open in `db`) to kVersion in one transaction; false with *error set when it
// cannot (a store newer than this fp8scope, a failed statement).
[[nodiscard]] bool migrate(Database &db, const QString &path, QString *error);

} // namespace fp8scope::schema
