// Inference (Hugging Face) module names against training (Megatron / Transformer Engine) ones: the families
// fp8scope knows (Llama, Mistral, Qwen, Nemotron-style GPT, Mixtral-style experts), with the fused modules of
// training (linear_qkv holds q, k and v; linear_fc1 holds gate and up) named by their part.
#pragma once

#include "core/tensors/problem.h"

#include <QHash>
#include <QString>

#include <optional>

namespace fp8scope {

struct TrainingName {
    QString module; // decoder.layers.3.mlp.linear_fc1
    QString part; // "q", "k", "v", "gate" or "up" inside a fused module; empty for a whole module

    QString text() const { return part.isEmpty() ? module : module + QLatin1String(" (") + part + QLatin1Char(')'); }
};

// The training module of an inference module (without ".weight"). `gated`: the model's MLP has a gate
// projection (its up_proj is then the second half of linear_fc1; without one, up_proj is linear_fc1 whole).
std::optional<TrainingName> trainingNameOf(const QString &inferenceModule, bool gated);

// A user's mapping: a JSON object {"inference module": "training module", ...}, or lines of two names
// separated by white space ('#' starts a comment). A training name may end in " (q)" and so on to name a part.
// False with *problem (file and line or offset) on a malformed file.
bool readNameMapping(const QString &path, QHash<QString, TrainingName> *mapping, Problem *problem);

} // namespace fp8scope
