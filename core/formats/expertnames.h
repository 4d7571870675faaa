// The experts of a mixture-of-experts GEMM, as each writer names them: Transformer Engine's GroupedLinear logs
// each expert's GEMM as `<module>.gemm_<i>`; Megatron's SequentialMLP holds `<...>.experts.local_experts.<i>.<gemm>`
// and its TEGroupedMLP keeps expert i's weight as `<...>.experts.<gemm>.weight<i>`; Hugging Face models name
// `<...>.experts.<i>.<gemm>` (Mixtral's w1/w2/w3, Qwen-MoE's and DeepSeek's gate/up/down projections). Every view
// that shows a layer per row groups an expert GEMM's experts under one row named by the GEMM.
#pragma once

#include <QString>

#include <optional>

namespace fp8scope {

struct ExpertName {
    QString gemm; // the GEMM all the experts share ("decoder.layers.3.mlp.experts.linear_fc1")
    int expert = -1; // the expert's index within it
};

// The GEMM and the expert a layer name is of; nullopt for a layer that is not one expert's.
std::optional<ExpertName> expertOf(const QString &layer);

// A regular expression (Python's syntax too) that every expert of the layer's GEMM matches, whole; "" for a layer
// that is not one expert's.
QString expertsPattern(const QString &layer);

// How a row speaks of one expert: "expert 5".
QString expertLabel(int expert);

} // namespace fp8scope
