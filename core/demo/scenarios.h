// Triage scenarios: BF16/FP8 run pairs in the real formats (Megatron stdout logs, Transformer Engine
// statistics logs, lm-eval results, YAML configs, pip freeze files) with one fault planted at seeded, varied
// places, distractors included, and the truth in planted.json. They exist to test the triage engine on runs
// it was not tuned on: the noise, log intervals, run lengths, layer names and models change with the seed.
//   early-divergence     the FP8 run departs within the first few percent of its steps; one suspect config
//                        key (FP8 parameter gather, CPU offloading, overlapped TP communication, ...) is set
//                        in the FP8 run only; layers degrade only after the departure.
//   mid-run-instability  one layer's tensor statistic (underflows%, or amax growth) moves hundreds of steps
//                        before the loss departs, mid-run; other layers degrade only after it.
//   loss-spikes          the FP8 run spikes several times as often as the baseline and skips iterations; the
//                        losses otherwise agree.
//   downstream-gap       the losses agree; BF16 inference of the FP8 run scores lower on one to three tasks,
//                        FP8 inference closer; at most seeds the run's folder holds an inference export with
//                        one planted fault (an inverted or missing scale, stale weights, a quantized module the
//                        config ignores) and the BF16 weights it was made from.
//   none                 a healthy pair: a small offset, the same spikes, evals within their noise; at some
//                        seeds a clean inference export.
// Distractors in every scenario: first and last layers constantly noisier, a harmless version difference,
// the FP8 run's log restarted from a checkpoint (a second log that rewinds some steps), and a config key that
// differs harmlessly (an experiment name, a path).
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

namespace fp8scope {

enum class Scenario { EarlyDivergence, MidRunInstability, LossSpikes, DownstreamGap, None };
QString scenarioName(Scenario s);
std::optional<Scenario> scenarioFromName(const QString &name);

struct ScenarioPlan {
    Scenario scenario = Scenario::None;
    uint64_t seed = 0;
    int64_t steps = 0; // planned
    QString baseline; // the two run folders' names (they vary with the seed: "bf16", "gpt3_800m-fp8", ...)
    QString run;
    std::optional<int64_t> departureStep;
    QString layer; // mid-run instability: the layer, tensor and statistic that move first
    QString tensor;
    QString stat;
    std::optional<int64_t> onsetStep;
    QStringList keys; // early divergence: the suspect config keys set in the FP8 run only
    QStringList tasks; // downstream gap: the weaker tasks
    // An inference export in the run's folder (<run>/inference, its BF16 weights in <run>/inference-bf16): most
    // downstream gaps with one planted fault, some healthy pairs clean.
    bool exportWritten = false;
    QString exportFault; // the audit finding kind it gives ("inverted-scale", ...); empty: clean
    QString exportLayer; // the inference module it is on
    // A mixture-of-experts run (ScenarioVariant::experts): the GEMM of the planted layer signal and its expert (-1:
    // every expert of the GEMM moved; plan.layer is then the GEMM).
    QString gemm;
    int expert = -1;
};

// A variant of what the seed draws: a mixture-of-experts model whose MLP GEMMs are Transformer Engine
// GroupedLinear modules of `experts` experts each (`decoder.layers.<l>.mlp.experts.linear_fc1.gemm_<e>`, as TE
// names them), at most `layers` layers; a mid-run instability is planted on one expert of a GEMM or, with
// allExperts, on every expert of it; both runs log Megatron's load_balancing_loss, which the FP8 run's rises where
// one expert is overloaded. experts 0: the dense model the seed draws, unchanged.
struct ScenarioVariant {
    int experts = 0;
    int layers = 8;
    bool allExperts = false;
};

// Writes the pair under outDir/<baseline> and outDir/<run>, planted.json and README.md; false with *error on an I/O
// failure.
bool generateScenario(const QString &outDir, Scenario scenario, uint64_t seed, ScenarioPlan *plan, QString *error,
    const ScenarioVariant &variant = {});

} // namespace fp8scope
