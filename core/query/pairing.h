// Which run an FP8 run is compared with: the baseline its manifest names; else the one high-precision
// (BF16) run open; else the BF16 run whose config differs least from its own (precision keys and run-specific
// paths aside); else the one whose name is the same but for its precision words. The rule is written down
// in docs/ARCHITECTURE.md ("Baseline pairing") with the keys it ignores.
#pragma once

#include "querytypes.h"

#include <functional>
#include <map>
#include <vector>

namespace fp8scope {

enum class PrecisionClass { Unknown, Baseline, LowPrecision };

// bf16/fp16/fp32 train baselines; fp8, mxfp8, nvfp4, fp4 are what gets compared with them. An empty
// precision is guessed from the name's words ("..._bf16_baseline", "fp8_run"); Unknown when none says.
PrecisionClass precisionClass(const QString &precision, const QString &name);

struct PairingInput {
    Run run;
    std::map<QString, QString> configs; // key -> value
    // The steps its loss covers (first > last: it has none): of several baselines that fit equally by config,
    // the one covering most of the run's steps is the comparable one (a short retest is not the baseline of a
    // long run).
    int64_t firstStep = 1;
    int64_t lastStep = 0;
};

// Whether a config key is expected to differ between a baseline and its FP8 twin (precision, recipe and
// FP8 settings, output paths and names), and so does not count as a difference.
bool isPairingNeutralKey(const QString &key);

// Keys whose values differ between two configs (present in one only counts), neutral keys aside.
int configDifferences(const std::map<QString, QString> &a, const std::map<QString, QString> &b);

// The pairing of runs[index] among runs. `stepsOf(i)`, when given, reads runs[i]'s loss steps (first, last) on
// demand instead of the fields: only a tie of several baselines needs them.
Pairing pairRun(const std::vector<PairingInput> &runs, size_t index,
    const std::function<std::pair<int64_t, int64_t>(size_t)> &stepsOf = {});

} // namespace fp8scope
