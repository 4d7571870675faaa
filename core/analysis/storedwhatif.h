// The recipe what-if of a run's dump, computed once for its candidate recipes (whatIfCandidates: the formats the
// run uses for that tensor) and kept in the run's store: the triage's next steps, the wizard's table and the report
// read the same result, so that they name the same best recipe; `fp8scope-cli stats DUMP --what-if` (a dump, no
// store) computes it by the same functions, the same candidates for the format its --fp8-format names.
#pragma once

#include "core/numerics/whatif.h"
#include "core/query/catalog.h"

#include <functional>
#include <map>
#include <optional>

namespace fp8scope::analysis {

struct Comparison;
struct FinishInputs;
struct TriageOptions;

// A stored what-if's dump: its file relative to the store's folder, and its dataset ("file:dataset").
QString whatIfDumpKey(const Dump &dump);
// The FP8 format the run trains in, from its config (Megatron's --fp8-format, Transformer Engine's and NeMo's
// fp8_format): "hybrid", "e4m3" or "e5m2"; empty when not recorded (the candidates take hybrid then).
QString runFp8Format(const Catalog &catalog, RunRef run);
std::vector<Recipe> whatIfCandidatesOf(const Catalog &catalog, const Dump &dump);
// The stored what-if of the dump for its candidates, when the dump file is as it was when it was computed.
std::optional<WhatIfResult> storedWhatIfOf(const Catalog &catalog, const Dump &dump);
// The stored what-if, or one computed now (with `backend`, the CPU's when null) and stored; nullopt with
// *problem set when the dump cannot be read. *stored (optional) says whether one was stored now; a store that
// cannot be written leaves the result computed, its error in *problem's message with the result returned.
std::optional<WhatIfResult> whatIfOf(Catalog &catalog, const Dump &dump, MetricsBackend *backend, Problem *problem,
    const MetricsEngine::Progress &progress = {}, bool *stored = nullptr);
// The dump file's size and modification time (ms) now; -1, -1 when it is gone.
std::pair<int64_t, int64_t> whatIfFileStamp(const Dump &dump);
// What the store keeps of a what-if of `dump` over `candidates`, with the dump file's size and time `stamp` as they
// were when it was read (whatIfFileStamp before the computation: a dump rewritten meanwhile is computed again).
StoredWhatIf whatIfRecord(const Dump &dump, const std::vector<Recipe> &candidates, const WhatIfResult &result,
    std::pair<int64_t, int64_t> stamp);
// A what-if as the triage's rules read it: recipe label -> statistic -> value.
std::map<QString, std::map<QString, double>> whatIfTableOf(const WhatIfResult &result);
// The run's stored what-ifs of its dumps as they are now, into in->whatIfs (in->dumps read first).
void gatherWhatIfs(const Catalog &catalog, RunRef run, FinishInputs *in);
// Stores the what-if of the comparison's evidence dump where none is stored (*stored says whether it did), and
// finishes the comparison again under `options` (its what-if finding and next steps read it); false with *error when it
// could not be computed or stored.
bool ensureWhatIf(
    Catalog &catalog, Comparison *c, const TriageOptions &options, QString *error, bool *stored = nullptr);

} // namespace fp8scope::analysis
