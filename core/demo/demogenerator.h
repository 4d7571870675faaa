// Writes a synthetic BF16 + FP8 run pair, in the real formats the importers read, with problems planted
// at known places (seeded): the ground truth of the demo, the GUI tests and the triage tests. Core code
// (no widgets) so that `fp8scope-cli demo` and `fp8scope --demo` share it.
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>

namespace fp8scope {

struct DemoOptions {
    uint64_t seed = 1;
    int layers = 12;
    int steps = 3000;
    int statInterval = 25; // Transformer Engine statistics every this many steps
};

// Where the problems were planted (also written to planted.json and README.md).
struct DemoPlan {
    int64_t departureStep = 0; // FP8 loss leaves the BF16 loss from here on
    int64_t underflowStart = 0; // the planted activation starts to drift small
    int plantedLayer = 0;
    QString plantedLayerName; // e.g. decoder.layers.9.mlp.linear_fc2
    QString plantedTensor; // "activation"
    QStringList weakTasks; // lower with BF16 inference of the FP8 run
    QStringList dumpSteps;
};

DemoPlan planDemo(const DemoOptions &o);

// Moved whenever what the demo writes changes (2: both runs log LogTensorStats, the baseline is dumped too; 3:
// the FP8 run's inference export),
// so that a demo cached by an older build is generated again rather than shown without what is new.
constexpr int kDemoVersion = 4;

// Writes the pair under outDir (created); false with *error on an I/O failure.
bool generateDemo(const QString &outDir, const DemoOptions &o, DemoPlan *plan, QString *error);

// An FP8 inference export of `layers` layers into `dir`, as compressed-tensors writes one (config.json with its
// quantization_config, one model.safetensors: E4M3 weights with per-channel decode scales, Nemotron-style
// names), `faultLayer`'s o_proj carrying its encode scales where the decode scales belong (-1: none). The demo's
// FP8 run holds one (fp8/inference/); tests plant it in other run folders. With a referenceDir, the BF16 weights
// it was made from go there as an unquantized model (the audit's reference: fp8/inference-bf16/ in the demo).
bool writeInferenceExport(
    const QString &dir, int layers, int faultLayer, uint64_t seed, QString *error, const QString &referenceDir = {});

} // namespace fp8scope
