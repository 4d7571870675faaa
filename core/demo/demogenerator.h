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
// the FP8 run's inference export; 5: outliers of varied size, as real ones are),
// so that a demo cached by an older build is generated again rather than shown without what is new.
constexpr int kDemoVersion = 5;

// Writes the pair under outDir (created); false with *error on an I/O failure.
bool generateDemo(const QString &outDir, const DemoOptions &o, DemoPlan *plan, QString *error);

// The fault an inference export is written with (writeInferenceExport), and the audit finding it gives.
enum class ExportFault {
    None,
    InvertedScale, // faultLayer's o_proj holds its encode scales where the decode scales belong: inverted-scale
    MissingScale, // faultLayer's o_proj without its weight_scale: missing-scale
    StaleWeights, // faultLayer's down_proj quantized from other weights (the reference's plus 30 % noise):
                  // weight-mismatch against the reference
    QuantizedIgnored, // lm_head, which the config ignores, stored in FP8: precision-mismatch
};
// The finding kind a fault gives ("inverted-scale", ...), and the inference module it is on.
QString exportFaultKind(ExportFault fault);
QString exportFaultModule(ExportFault fault, int faultLayer);

struct InferenceExport {
    int layers = 4;
    int faultLayer = -1;
    ExportFault fault = ExportFault::InvertedScale; // on faultLayer (QuantizedIgnored: lm_head)
    uint64_t seed = 1;
    QString referenceDir; // where the BF16 weights it was made from go (an unquantized model); empty: nowhere
};

// An FP8 inference export into `dir`, as compressed-tensors writes one (config.json with its
// quantization_config, one model.safetensors: E4M3 weights with per-channel decode scales, Nemotron-style names,
// lm_head ignored), with one planted fault, and the BF16 weights it was made from beside it where asked (the
// audit's reference: fp8/inference-bf16/ in the demo). The demo's FP8 run holds one (fp8/inference/); the
// downstream-gap and healthy triage scenarios hold one at some seeds; tests plant one in other run folders.
bool writeInferenceExport(const QString &dir, const InferenceExport &options, QString *error);

} // namespace fp8scope
