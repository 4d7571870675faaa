// The audit of an inference checkpoint's FP8 weights and scales, the first thing to check for a downstream
// gap ("does inference use the intended scaling factors and weights?"): every quantized layer of a Hugging
// Face style safetensors export (one file or shards with model.safetensors.index.json), its scales read in
// the layout the quantization config states (per tensor, per channel, 128x128 blocks), checked on their own
// and, given a reference (the BF16/FP32 weights it was made from, or a training checkpoint), against it.
// Every tensor is streamed a band of rows at a time; no model is loaded whole. docs/TRIAGE.md states the
// rules and their thresholds, docs/NUMERICS.md the scale conventions.
#pragma once

#include "core/tensors/problem.h"
#include "layernames.h"

#include <QHash>
#include <QJsonObject>
#include <QStringList>

#include <cmath>
#include <functional>
#include <optional>
#include <vector>

namespace fp8scope {

// What the checkpoint's quantization config says (config.json's quantization_config, hf_quant_config.json).
struct QuantConfig {
    QString method; // "compressed-tensors", "fp8", "modelopt", ...; empty when there is no config
    QString weightStrategy; // "tensor", "channel", "block" or empty (not stated)
    int64_t blockRows = 0; // weight_block_size / block_structure, 0 when not stated
    int64_t blockCols = 0;
    std::optional<bool> staticActivations; // input scales calibrated offline (static) or computed (dynamic)
    bool kvCacheFp8 = false;
    QStringList ignore; // modules left unquantized: names, "re:" regular expressions or globs
    QString source; // the file it came from

    bool ignores(const QString &module) const;
};

// What an audit finding is, typed end to end; its name (auditKindName) is what the JSON and the CLI print.
enum class AuditKind {
    MissingScale,
    InvalidScale,
    InvertedScale,
    WeightMismatch,
    CalibrationMismatch,
    PrecisionMismatch
};
QString auditKindName(AuditKind kind); // missing-scale, invalid-scale, inverted-scale, weight-mismatch, ...
enum class AuditSeverity { Warning, Critical };
QString auditSeverityName(AuditSeverity severity); // warning, critical

// A layer of the checkpoint: a 2-D (or larger) NAME.weight and the scales beside it.
struct AuditLayer {
    QString name; // inference module, without ".weight"
    std::optional<TrainingName> training;
    QString file; // the shard holding the weight
    QString dtype; // as the file spells it
    std::vector<int64_t> shape;
    bool quantized = false; // FP8 codes
    QString scaleName; // "weight_scale" or "weight_scale_inv"; empty when there is none
    QString scaleLayout; // "per tensor", "per row", "128x128 blocks", ... ; empty when unread
    double scaleMin = NAN; // over the finite, positive decode scales
    double scaleMax = NAN;
    std::optional<double> inputScale;
    double trainingActivationAmax = NAN; // what the training run's activations reached near its end
    // The least that a step of that late window reached (its spread; the same as the largest where one value is
    // known), and how many steps the window has (1: one value).
    double trainingActivationLeast = NAN;
    int trainingActivationSteps = 0;
    // What a training checkpoint's Transformer Engine state says of the training module (core/tensors/
    // teextrastate.h): "fp8" with its recipe's class, "bf16" (no FP8 state where other modules kept some),
    // empty when it says nothing; and the largest input amax of its forward history (NaN without one).
    QString trainingPrecision;
    double checkpointActivationAmax = NAN;
    // The training run's activation dump nearest its end cast with the static input scale (NaN without one):
    // the per cent of its elements that saturate and that flush to zero, the per cent the run's own scaling
    // flushed of it, and its amax (core/analysis/auditcalibration).
    QString calibrationDump; // the dump's file, relative to the run's store folder
    int64_t calibrationStep = -1;
    QString calibrationRecipe; // the run's own scaling it is compared with
    double dumpSaturatedPct = NAN;
    double dumpFlushedPct = NAN;
    double dumpRecipeFlushedPct = NAN;
    double dumpAmax = NAN;
    // Against the reference (NaN without one): relative errors (rms of the difference over the rms of the
    // reference) of the weight as dequantized, as dequantized dividing by the scale instead (the other
    // convention), and of a fresh quantization of the reference under the same scales.
    QString reference; // the reference tensor compared with, "FILE:NAME"
    double relError = NAN;
    double invertedRelError = NAN;
    double freshRelError = NAN;
    double cosine = NAN;
    double amax = NAN; // of the dequantized weight
    double invertedAmax = NAN; // of the codes divided by the scales
    double referenceAmax = NAN;
    QList<AuditKind> findings; // the kinds found on this layer; empty: ok

    QString status() const; // "ok", or the kinds' names joined by commas
    // The dequantized weight's amax over the reference's: 1 for a sound scale, about the scale squared (or
    // its inverse) for one stored in the other convention. NaN without a reference.
    double weightAmaxRatio() const { return referenceAmax > 0 ? amax / referenceAmax : NAN; }
    // The activation amax the training run reached near its end over the range the static input scale gives
    // (input_scale x 448, E4M3's largest): above 1 the largest activations saturate, far below 1 the small
    // ones flush. NaN without an input scale or the training's amax.
    double activationOverRange() const;
    // The least of the late window over that range: above 1 (beyond the tolerance) every late step saturates.
    double leastActivationOverRange() const;
};

struct AuditFinding {
    AuditKind kind = AuditKind::MissingScale;
    AuditSeverity severity = AuditSeverity::Warning;
    QString layer; // inference name
    QString trainingLayer; // empty when unmapped
    QString evidence;
};

// The rules' thresholds (docs/TRIAGE.md): data, so that an audit says what it was judged by (AuditResult) and the
// triage's stamp covers them (TriageOptions::audit).
struct AuditThresholds {
    // A dequantized weight more than this far from the reference (relative rms) ...
    double grossError = 0.5;
    // ... while dividing by the scale instead comes this many times closer: the scale is inverted.
    double invertedGain = 4.0;
    // A weight whose error against the reference is this many times a fresh quantization's: another weight.
    double mismatchFactor = 3.0;
    // A static input scale s represents activations up to s x 448 (E4M3). The training run's activations saturate
    // it when every step of the late window reached above that range by more than what the numbers can tell apart:
    // the scale's storage (calibrationRelTolerance, half a BF16 ulp, the coarsest dtype a scale is written in) and
    // the amax as Transformer Engine prints it (four decimals: calibrationPrintedTolerance). A scale calibrated on
    // any late step's activations, or on their maximum, is then no finding. Where the run dumped the layer's
    // activations, the dump cast with the scale must saturate at least calibrationSaturatedPct of its elements too.
    // Critical when the least late amax is more than calibrationCritical times the range or the dump saturates
    // calibrationSaturatedCriticalPct or more; a range calibrationUnused times larger than they reach leaves the
    // small ones to flush.
    double calibrationRelTolerance = 1.0 / 256;
    double calibrationPrintedTolerance = 5e-5;
    double calibrationSaturatedPct = 0.01;
    double calibrationSaturatedCriticalPct = 1.0;
    double calibrationCritical = 2.0;
    double calibrationUnused = 16.0;
    // Measured on the run's activation dump: the static scale flushes this many percentage points more of the
    // activations to zero than the run's own scaling did (the amax proxy above gives way to the measurement).
    double calibrationFlushExcess = 1.0;
    // Without a reference: the range of a plausible weight amax, and how far apart (in binades) the two
    // conventions must put it before the other one is believed.
    double plausibleLog2Min = -8.0;
    double plausibleLog2Max = 8.0;
    double invertedLog2Gap = 4.0;

    // Every threshold, in the order above, as text (the triage's stamp hashes it).
    QString text() const;
    bool operator==(const AuditThresholds &) const = default;
};

struct AuditResult {
    QString checkpoint;
    QuantConfig config;
    QStringList files; // the shards read
    QStringList references; // the reference files read
    std::vector<AuditLayer> layers;
    std::vector<AuditFinding> findings;
    QStringList unmapped; // quantized layers with no training name
    QStringList unmatched; // quantized layers the references did not hold (given references)
    std::vector<Problem> problems; // what could not be read; the audit goes on without it
    AuditThresholds thresholds; // what its rules judged by

    int64_t bytesRead = 0; // of weights and references (the benchmark's reference)
};

// What a training module's activations reached near the end of training (core/query/lateamax.h): the largest and the
// least amax of a step over the late window (both the one value where one is known), and the window's steps.
struct ActivationAmax {
    double largest = NAN;
    double least = NAN;
    int steps = 1;
};

struct AuditOptions {
    // safetensors files or folders, torch.save checkpoints (their Transformer Engine modules' FP8 state read too),
    // HDF5 dumps
    QStringList references;
    QString mappingFile; // inference name -> training name (layernames.h)
    // The training run's activation amax near its end, per training module (core/query/lateamax.h), for the
    // calibration rule; empty: the rule is not checked. `activationSource` says where it came from.
    QHash<QString, ActivationAmax> activationAmax;
    QString activationSource;
    AuditThresholds thresholds;
    int threads = 0; // 0: one per hardware thread
};

// The audit of the export in `dir` (a folder, or one .safetensors file). Nothing when the checkpoint itself
// cannot be read (no safetensors, a header that lies): *problem says where.
std::optional<AuditResult> auditCheckpoint(const QString &dir, const AuditOptions &options, Problem *problem,
    const std::function<void(int, int)> &progress = {});

// The calibration rule over an audit already made: each layer's static input_scale against the amax its training
// module's activations reached (`activationAmax`, core/query/lateamax.h; `source` says where from in the
// evidence; a layer without one takes its dump's amax), and where the layer's dump figures are filled in
// (core/analysis/auditcalibration) against what that scale saturates and flushes of the run's own activations.
// auditCheckpoint applies it when its options carry amaxes; the triage and the CLI apply it to an audit made. The
// thresholds are the result's own (AuditResult::thresholds).
void checkCalibration(AuditResult &result, const QHash<QString, ActivationAmax> &activationAmax, const QString &source);

// The layers a Megatron run kept in BF16 while the rest trained in FP8 (--first-last-layers-bf16 with
// --num-layers-at-start-in-bf16 and --num-layers-at-end-in-bf16, each 1 unless given; the layer count from
// --num-layers), from a run's config entries (key, value) as any of its files name them ("MODEL_ARGS.--num-layers",
// "num_layers", ...): the transformer layer indices, and the flags in words. Empty when the run does not say.
struct Bf16Layers {
    std::vector<int> layers;
    QString source; // "--first-last-layers-bf16: the first 1 and the last 1 of 12 layers"
};
Bf16Layers bf16TrainedLayers(const std::vector<std::pair<QString, QString>> &config);

// The precision rule from the training side: a layer quantized in the export whose training module is one of
// the layers the run trained in BF16 (precision-mismatch, warning).
void checkTrainingPrecision(AuditResult &result, const Bf16Layers &bf16);

// auditCheckpoint against the references given (files or folders), read once while the checkpoint's and the
// references' files keep their sizes and times (the live triage gathers a pair again at every follow; a
// checkpoint of gigabytes is streamed once).
std::optional<AuditResult> cachedAudit(
    const QString &checkpoint, const QStringList &references, Problem *problem, const AuditThresholds &thresholds = {});
// What cachedAudit keys a checkpoint's audit by: every file of the checkpoint and of each reference (a folder's files,
// or the file) with its size and modification time. A stored result that read an audit carries it in its stamp.
QString auditFilesStamp(const QString &checkpoint, const QStringList &references);

// The inference checkpoint a run folder holds: `named` (what its manifest names under "inference_checkpoint", as
// the ingest read it; relative to the folder), else the one subfolder (at most two levels down) with *.safetensors
// beside a config.json that has a quantization_config, or an hf_quant_config.json. Empty when there is none (or
// more than one subfolder qualifies: the manifest must say which).
QString findInferenceCheckpoint(const QString &runFolder, const QString &named = {});

// The references the run folder's checkpoint is audited against: `named` (the manifest's "inference_reference", a
// path or a list, relative to the folder), else the one unquantized model folder (at most two levels down: a
// config.json naming its architectures beside *.safetensors, the BF16 weights the export was made from). Empty
// when there is none (or more than one qualifies and nothing says which).
QStringList findInferenceReferences(const QString &runFolder, const QStringList &named = {});

// The layers a front end lists: the quantized ones and any with a finding, those with a finding first (each
// group in layer order).
std::vector<const AuditLayer *> auditRows(const AuditResult &result);

// The audit as the CLI's --json writes it: findings, layers, unmapped, problems.
QJsonObject auditToJson(const AuditResult &result);

} // namespace fp8scope
