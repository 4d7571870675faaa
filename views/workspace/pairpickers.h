// The two run pickers of a comparison of a run with a baseline (the Comparison tab, the triage wizard): both
// list the workspace's runs by the name every view gives them; a pair not given is the pairing's first.
#pragma once

#include "core/query/querytypes.h"

#include <utility>

class QComboBox;

namespace fp8scope {

class Workspace;

// The pairing's first (baseline, run), else the first two runs, else invalid refs.
std::pair<RunRef, RunRef> defaultPair(const Workspace &workspace);

struct PairPickers {
    QComboBox *baseline = nullptr;
    QComboBox *run = nullptr;

    // Lists the workspace's runs in both (their signals blocked).
    void fill(const Workspace &workspace) const;
    // Shows (baseline, run) in them (signals blocked): invalid refs, the default pair. Returns the pair shown.
    std::pair<RunRef, RunRef> show(const Workspace &workspace, RunRef baselineRun, RunRef runRun) const;
    RunRef baselineRun() const;
    RunRef runRun() const;
};

} // namespace fp8scope
