#include "scenarios.h"

#include "demogenerator.h"
#include "demoutil.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace fp8scope {

namespace {

// How a model names its layers' GEMMs in the Transformer Engine statistics log.
struct NameStyle {
    const char *prefix; // %1: the layer index
    const char *gemms[4];
};
const NameStyle kStyles[] = {
    {"decoder.layers.%1.",
        {"self_attention.linear_qkv", "self_attention.linear_proj", "mlp.linear_fc1", "mlp.linear_fc2"}},
    {"model.encoder.layers.%1.",
        {"self_attention.layernorm_qkv", "self_attention.proj", "layernorm_mlp.fc1", "layernorm_mlp.fc2"}},
    {"model.layers.%1.", {"self_attn.q_proj", "self_attn.o_proj", "mlp.up_proj", "mlp.down_proj"}},
    {"transformer.h.%1.", {"attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"}},
    {"blocks.%1.", {"attn.qkv", "attn.out", "ffn.w1", "ffn.w2"}},
};
const char *const kTensors[] = {"activation", "weight", "gradient"};
const char *const kTaskPool[] = {"arc_easy", "arc_challenge", "hellaswag", "winogrande", "piqa", "boolq", "openbookqa",
    "lambada_openai", "sciq", "copa", "race", "mmlu"};

// A feature the field names as a cause of early divergence: its YAML flag and its arguments-block name.
struct Suspect {
    const char *flag;
    const char *argument;
};
const Suspect kSuspects[] = {{"--fp8-param-gather", "fp8_param_gather"}, {"--cpu-offloading", "cpu_offloading"},
    {"--tp-comm-overlap", "tp_comm_overlap"}, {"--overlap-param-gather", "overlap_param_gather"},
    {"--fp8-dot-product-attention", "fp8_dot_product_attention"}};

QByteArray num(double v, int decimals)
{
    return QByteArray::number(v, 'f', decimals);
}

template <typename T> const T &pick(Rng &rng, const std::vector<T> &v)
{
    return v[size_t(rng.below(int64_t(v.size())))];
}

// Everything a seed varies besides the fault.
struct Shape {
    int64_t steps = 0;
    int baseInterval = 10, runInterval = 10; // Megatron log intervals of the two runs
    int statInterval = 25; // Transformer Engine statistics
    int saveInterval = 250;
    double noise = 0.05; // per-step loss noise
    double shared = 0.5; // the share of its variance the two runs have in common (same data order)
    double floor = 2.0, amplitude = 8.0, power = 0.4, warm = 100;
    double sharedSpikeRate = 0, ownSpikeRate = 0;
    int layers = 12;
    int style = 0;
    std::vector<int> gemms;
    bool argumentsBlock = false; // the config in the stdout arguments block instead of a YAML file
    bool timestamps = false; // "[2026-...] " before each log line
    bool tensorStats = false; // cur_amax and dynamic_range logged too
    int globalBatch = 256;
    QString recipe; // delayed, tensorwise, mxfp8
    QString baseName, runName;
    int experts = 0; // ScenarioVariant::experts
    int64_t overloadAt = -1; // the FP8 run's load_balancing_loss rises from here (-1: never)
};

Shape drawShape(Rng &rng)
{
    Shape s;
    s.steps = pick(rng, std::vector<int64_t> {2000, 2500, 3000, 4000, 5000, 6000});
    s.baseInterval = pick(rng, std::vector<int> {5, 10, 10, 20});
    s.runInterval = rng.uniform() < 0.7 ? s.baseInterval : pick(rng, std::vector<int> {5, 10, 20});
    // 50 to 150 statistics points whatever the length.
    s.statInterval = pick(rng, std::vector<int> {10, 20, 25, 50, 100});
    while (s.steps / s.statInterval > 150)
        s.statInterval *= 2;
    while (s.steps / s.statInterval < 50)
        s.statInterval /= 2;
    s.saveInterval = pick(rng, std::vector<int> {100, 200, 250, 500});
    s.noise = rng.between(0.03, 0.12);
    s.shared = rng.between(0.2, 0.9);
    s.floor = rng.between(1.6, 2.8);
    s.amplitude = rng.between(5.0, 9.0);
    s.power = rng.between(0.3, 0.6);
    s.warm = double(s.steps) * rng.between(0.01, 0.04);
    // Spikes per step: a few over the run in each run (data the two share, and their own).
    s.sharedSpikeRate = rng.between(1.0, 3.0) / double(s.steps);
    s.ownSpikeRate = rng.between(1.0, 3.0) / double(s.steps);
    s.style = int(rng.below(int64_t(std::size(kStyles))));
    s.layers = int(6 + rng.below(19));
    const int nGemms = int(2 + rng.below(3));
    std::vector<int> all {0, 1, 2, 3};
    for (int i = 3; i > 0; --i)
        std::swap(all[size_t(i)], all[size_t(rng.below(i + 1))]);
    s.gemms.assign(all.begin(), all.begin() + nGemms);
    std::sort(s.gemms.begin(), s.gemms.end());
    // At most about 48 layer GEMMs, so that a scenario stays small.
    while (s.layers * nGemms > 48)
        --s.layers;
    s.argumentsBlock = rng.uniform() < 0.4;
    s.timestamps = rng.uniform() < 0.4;
    s.tensorStats = rng.uniform() < 0.6;
    s.globalBatch = pick(rng, std::vector<int> {128, 256, 512});
    s.recipe = pick(
        rng, std::vector<QString> {QStringLiteral("delayed"), QStringLiteral("tensorwise"), QStringLiteral("mxfp8")});
    const QString model = pick(rng,
        std::vector<QString> {QStringLiteral("gpt-1.3b"), QStringLiteral("llama-tiny"), QStringLiteral("mixtral-s"),
            QStringLiteral("nemotron-2b"), QStringLiteral("gpt3_800m")});
    switch (rng.below(3)) {
    case 0:
        s.baseName = model + QStringLiteral("-bf16");
        s.runName = model + QStringLiteral("-fp8");
        break;
    case 1:
        s.baseName = model + QStringLiteral("_baseline");
        s.runName = model + QStringLiteral("_fp8_") + s.recipe;
        break;
    default:
        s.baseName = QStringLiteral("bf16");
        s.runName = QStringLiteral("fp8");
        break;
    }
    return s;
}

// An expert of a GroupedLinear MLP GEMM (gemm 2 or 3 of a mixture-of-experts shape), as Transformer Engine names it.
QString expertName(const Shape &s, int layer, int gemm, int expert)
{
    return QString::fromLatin1(kStyles[s.style].prefix).arg(layer) + QLatin1String("mlp.experts.")
        + QLatin1String(gemm == 2 ? "linear_fc1" : "linear_fc2") + QStringLiteral(".gemm_%1").arg(expert);
}

bool isExpertGemm(const Shape &s, int gemm)
{
    return s.experts > 0 && gemm >= 2;
}

// A layer's GEMM; of a mixture-of-experts MLP, its first expert.
QString layerName(const Shape &s, int layer, int gemm)
{
    if (isExpertGemm(s, gemm))
        return expertName(s, layer, gemm, 0);
    return QString::fromLatin1(kStyles[s.style].prefix).arg(layer) + QLatin1String(kStyles[s.style].gemms[gemm]);
}

// A run's loss at every step, with what the log prints of it.
struct Track {
    std::vector<int64_t> spikes; // where the run's own spikes start
    std::vector<double> loss; // per step, index = step
    std::vector<double> firstPass; // per step, what the run printed before it crashed and resumed
    std::vector<double> gradNorm;
    std::vector<int> skipped;
};

double meanLoss(const Shape &s, int64_t step)
{
    const double decay = s.floor + s.amplitude * std::pow((double(step) + s.warm) / s.warm, -s.power);
    if (double(step) >= s.warm)
        return decay;
    const double start = 10.8;
    return start - (start - (s.floor + s.amplitude * std::pow(2.0, -s.power))) * double(step) / s.warm;
}

// The loss gap of a fault from `from` on: it opens within `tau` steps and stays open.
double gapAt(int64_t step, std::optional<int64_t> from, double size, double tau, double slope)
{
    if (!from || step <= *from)
        return 0.0;
    const double t = double(step - *from);
    return size * (1.0 - std::exp(-t / tau)) + slope * t;
}

struct Fault {
    std::optional<int64_t> departure;
    double gap = 0, tau = 1, slope = 0;
    int runSpikes = 0; // the FP8 run's own spikes over the run, on top of the baseline's rate
    double spikeFactorAfter = 1.0; // after the departure
    double offset = 0; // a constant offset that is no departure
};

// Spikes: a jump that decays geometrically, some shared by both runs (the data), some a run's own.
// `rate` per step at random, and `extra` more at uniformly drawn steps (a planted excess of a known size).
std::vector<double> spikeTrain(const Shape &s, double rate, std::optional<int64_t> after, double factorAfter, Rng &rng,
    std::vector<int> *skipped, std::vector<int64_t> *at = nullptr, int extra = 0)
{
    std::vector<double> out(size_t(s.steps) + 1, 0.0);
    std::vector<bool> planted(size_t(s.steps) + 1, false);
    const int64_t first = int64_t(2 * s.warm) + 1;
    for (int i = 0; i < extra && first < s.steps; ++i)
        planted[size_t(first + rng.below(s.steps - first + 1))] = true;
    double level = 0;
    double decay = 0.9;
    for (int64_t t = 1; t <= s.steps; ++t) {
        const double r = after && t > *after ? rate * factorAfter : rate;
        if (double(t) > 2 * s.warm && (rng.uniform() < r || planted[size_t(t)])) {
            // A loss spike: a jump of 15 to 60 % that takes tens of steps to come back.
            level += rng.between(0.15, 0.6) * meanLoss(s, t);
            if (at)
                at->push_back(t);
            decay = rng.between(0.9, 0.98);
            if (skipped && rng.uniform() < 0.5)
                (*skipped)[size_t(t)] += int(1 + rng.below(3));
        }
        out[size_t(t)] = level;
        level *= decay;
    }
    return out;
}

Track lossTrack(const Shape &s, const Fault &f, bool fp8, const std::vector<double> &sharedNoise,
    const std::vector<double> &sharedSpikes, Rng &rng)
{
    Track t;
    const size_t n = size_t(s.steps) + 1;
    t.skipped.assign(n, 0);
    const double rate = s.ownSpikeRate;
    const std::vector<double> own = spikeTrain(s, rate, fp8 ? f.departure : std::nullopt,
        fp8 ? f.spikeFactorAfter : 1.0, rng, fp8 ? &t.skipped : nullptr, &t.spikes, fp8 ? f.runSpikes : 0);
    t.loss.resize(n);
    t.firstPass.resize(n);
    t.gradNorm.resize(n);
    const double ownSigma = s.noise * std::sqrt(1.0 - s.shared);
    for (size_t i = 0; i < n; ++i) {
        const int64_t step = int64_t(i);
        double l = meanLoss(s, step) + sharedNoise[i] + sharedSpikes[i] + own[i] + ownSigma * rng.normal();
        if (fp8)
            l += f.offset + gapAt(step, f.departure, f.gap, f.tau, f.slope);
        t.loss[i] = l;
        // Before a crash the run printed other draws of the same steps (non-deterministic kernels).
        t.firstPass[i] = l + ownSigma * rng.normal();
        const double gap = fp8 ? gapAt(step, f.departure, f.gap, f.tau, f.slope) : 0.0;
        t.gradNorm[i] = 0.35 + 2.0 * std::exp(-double(step) / (3 * s.warm)) + 3.0 * (sharedSpikes[i] + own[i])
            + 4.0 * gap + 0.05 * std::abs(rng.normal());
    }
    return t;
}

struct Restart {
    int64_t crash = 0; // the last step printed before the crash
    int64_t resume = 0; // the checkpoint it resumed from
};

QByteArray logLine(const Shape &s, const QByteArray &text, int64_t step)
{
    if (!s.timestamps)
        return text + '\n';
    const int64_t seconds = step * 2;
    return "[2026-11-29 " + QByteArray::number(10 + seconds / 3600 % 14).rightJustified(2, '0') + ':'
        + QByteArray::number(seconds / 60 % 60).rightJustified(2, '0') + ':'
        + QByteArray::number(seconds % 60).rightJustified(2, '0') + "] " + text + '\n';
}

QByteArray argumentsBlock(const std::vector<std::pair<QByteArray, QByteArray>> &args)
{
    QByteArray out = "------------------------ arguments ------------------------\n";
    for (const auto &[k, v] : args)
        out += "  " + k + ' ' + QByteArray(std::max<qsizetype>(2, 48 - k.size()), '.') + ' ' + v + '\n';
    return out + "-------------------- end of arguments ---------------------\n";
}

QByteArray megatronLog(const Shape &s, const Track &t, int interval, const std::optional<Restart> &restart,
    const QByteArray &arguments, bool fp8)
{
    QByteArray out
        = "using world size: 8, data-parallel size: 8, context-parallel size: 1, tensor-model-parallel size: 1\n";
    out += arguments;
    out += fp8 ? QByteArray("> building GPT model with Transformer Engine FP8 (recipe " + s.recipe.toUtf8() + ") ...\n")
               : QByteArray("> building GPT model ...\n");
    // From firstPassFrom on, the values the run printed before a crash made it redo those steps.
    const auto lines = [&](int64_t from, int64_t to, int64_t firstPassFrom) {
        for (int64_t step = from; step <= to; ++step) {
            if (step % interval != 0)
                continue;
            double sum = 0;
            int counted = 0, skipped = 0;
            for (int64_t i = step - interval + 1; i <= step; ++i) {
                skipped += t.skipped[size_t(i)];
                if (t.skipped[size_t(i)] == 0) {
                    sum += i >= firstPassFrom ? t.firstPass[size_t(i)] : t.loss[size_t(i)];
                    ++counted;
                }
            }
            const double lr = 3e-4 * std::min(1.0, double(step) / s.warm)
                * (0.1 + 0.45 * (1.0 + std::cos(3.14159265358979 * double(step) / double(s.steps))));
            QByteArray l = "iteration " + QByteArray::number(step).rightJustified(8) + "/"
                + QByteArray::number(s.steps).rightJustified(8) + " | consumed samples: "
                + QByteArray::number(step * s.globalBatch).rightJustified(12) + " | elapsed time per iteration (ms): "
                + num(fp8 ? 790.0 + 40.0 * std::sin(double(step)) : 1080.0 + 40.0 * std::cos(double(step)), 1)
                + " | learning rate: " + QByteArray::number(lr, 'E', 6)
                + " | global batch size: " + QByteArray::number(s.globalBatch).rightJustified(5);
            if (counted > 0) {
                l += " | lm loss: " + QByteArray::number(sum / counted, 'E', 6);
                if (s.experts > 0) {
                    // Megatron's MoE auxiliary loss (megatron/core/transformer/moe/moe_logging.py), near 1 when the
                    // router balances; an overloaded expert raises it.
                    const double overload = fp8 && s.overloadAt >= 0 && step > s.overloadAt
                        ? 0.4 * std::min(1.0, double(step - s.overloadAt) / (0.02 * double(s.steps)))
                        : 0.0;
                    l += " | load_balancing_loss: "
                        + QByteArray::number(1.02 + 0.01 * std::sin(0.37 * double(step)) + overload, 'E', 6);
                }
                l += " | loss scale: 1.0 | grad norm: " + num(t.gradNorm[size_t(step)], 3);
            } else
                l += " | loss scale: 1.0";
            l += " | number of skipped iterations: " + QByteArray::number(std::min(skipped, interval)).rightJustified(3)
                + " | number of nan iterations:   0 |";
            out += logLine(s, l, step);
        }
    };
    if (restart) {
        lines(1, restart->crash, restart->resume + 1);
        out += "[rank0]: RuntimeError: NCCL communicator was aborted on rank 3\n"
               "srun: error: node-17: task 3: Exited with exit code 1\n";
        out += "using world size: 8, data-parallel size: 8, context-parallel size: 1, tensor-model-parallel size: 1\n";
        out += arguments;
        out += " loading checkpoint from /checkpoints/" + (fp8 ? s.runName : s.baseName).toUtf8() + " at iteration "
            + QByteArray::number(restart->resume) + "\n  successfully loaded checkpoint from /checkpoints/"
            + (fp8 ? s.runName : s.baseName).toUtf8() + " [ t 1/1, p 1/1 ] at iteration "
            + QByteArray::number(restart->resume) + '\n';
        lines(restart->resume + 1, s.steps, s.steps + 1);
    } else {
        lines(1, s.steps, s.steps + 1);
    }
    return out;
}

// One statistic series of the FP8 run: a level, a drift the run shares with other layers, noise, and what
// the scenario plants on it.
struct StatSeries {
    QString layer;
    QString tensor;
    QString stat;
    double level = 0;
    double noise = 0.03; // relative
    double drift = 0; // log-change over the run
    int decimals = 4;
    // Multiplicative changes: from `at`, ramping over `ramp` steps to `factor` (and additive points for
    // percentages).
    struct Change {
        int64_t at = 0;
        double ramp = 1;
        double factor = 1;
        double add = 0;
        int64_t until = -1; // a transient ends here (-1: it stays)
    };
    std::vector<Change> changes;
};

double rampAt(const StatSeries::Change &c, int64_t step)
{
    if (step <= c.at || (c.until >= 0 && step > c.until))
        return 0.0;
    return std::min(1.0, double(step - c.at) / c.ramp);
}

QByteArray teLine(const QString &name, int64_t step, double value, int64_t second)
{
    return "2026-11-29 " + QByteArray::number(10 + second / 3600 % 14).rightJustified(2, '0') + ':'
        + QByteArray::number(second / 60 % 60).rightJustified(2, '0') + ':'
        + QByteArray::number(second % 60).rightJustified(2, '0') + ",123 - INFO - " + name.toUtf8()
        + " \t\t\t\t iteration=" + QByteArray::number(step).rightJustified(6, '0') + " \t\t\t\t value=" + num(value, 4)
        + '\n';
}

// Lm-eval results: tasks with acc (and acc_norm for some), their standard errors, and the inference setting.
QByteArray evalJson(const QStringList &tasks, const std::map<QString, double> &acc, const std::map<QString, double> &se,
    const QString &dtype, const QString &model)
{
    QJsonObject results;
    QJsonObject versions;
    for (const QString &t : tasks) {
        results.insert(t,
            QJsonObject {{QStringLiteral("acc,none"), acc.at(t)}, {QStringLiteral("acc_stderr,none"), se.at(t)},
                {QStringLiteral("alias"), t}});
        versions.insert(t, 1.0);
    }
    const QJsonObject doc {{QStringLiteral("results"), results}, {QStringLiteral("versions"), versions},
        {QStringLiteral("config"),
            QJsonObject {{QStringLiteral("model"), QStringLiteral("hf")},
                {QStringLiteral("model_args"),
                    QStringLiteral("pretrained=/checkpoints/%1/hf,dtype=%2").arg(model, dtype)},
                {QStringLiteral("batch_size"), 16}}}};
    return QJsonDocument(doc).toJson(QJsonDocument::Indented);
}

} // namespace

QString scenarioName(Scenario s)
{
    switch (s) {
    case Scenario::EarlyDivergence: return QStringLiteral("early-divergence");
    case Scenario::MidRunInstability: return QStringLiteral("mid-run-instability");
    case Scenario::LossSpikes: return QStringLiteral("loss-spikes");
    case Scenario::DownstreamGap: return QStringLiteral("downstream-gap");
    case Scenario::None: return QStringLiteral("none");
    }
    return {};
}

std::optional<Scenario> scenarioFromName(const QString &name)
{
    for (Scenario s : {Scenario::EarlyDivergence, Scenario::MidRunInstability, Scenario::LossSpikes,
             Scenario::DownstreamGap, Scenario::None}) {
        if (scenarioName(s) == name)
            return s;
    }
    return std::nullopt;
}

bool generateScenario(const QString &outDir, Scenario scenario, uint64_t seed, ScenarioPlan *planOut, QString *error,
    const ScenarioVariant &variant)
{
    // Each scenario draws from its own stream, so that seed 3 of two scenarios are unrelated runs.
    Rng rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(scenario) * 0x632BE59BD9B4E019ull + 17);
    Shape s = drawShape(rng);
    if (variant.experts > 0) {
        // Megatron's names, every GEMM of the layer, the MLP's as experts.
        s.experts = variant.experts;
        s.style = 0;
        s.gemms = {0, 1, 2, 3};
        s.layers = std::max(3, std::min(s.layers, variant.layers));
    }
    ScenarioPlan plan;
    plan.scenario = scenario;
    plan.seed = seed;
    plan.steps = s.steps;
    plan.baseline = s.baseName;
    plan.run = s.runName;

    // The fault on the loss.
    Fault f;
    f.offset = rng.between(-0.002, 0.004); // FP8 runs sit a little above or on their baseline
    const double steps = double(s.steps);
    if (scenario == Scenario::EarlyDivergence) {
        const int64_t lo = std::max<int64_t>(int64_t(0.01 * steps), 3 * std::max(s.baseInterval, s.runInterval));
        const int64_t hi = std::max<int64_t>(lo + 1, int64_t(0.06 * steps));
        f.departure = lo + rng.below(hi - lo);
        f.gap = rng.between(0.12, 0.5);
        f.tau = steps * rng.between(0.005, 0.02);
        f.slope = rng.between(0.0, 0.3) / steps;
    } else if (scenario == Scenario::MidRunInstability) {
        f.departure = int64_t(steps * rng.between(0.35, 0.75));
        f.gap = rng.between(0.05, 0.3);
        f.tau = steps * rng.between(0.005, 0.03);
        f.slope = rng.between(0.0, 0.5) / steps;
        f.spikeFactorAfter = rng.between(1.0, 4.0);
    } else if (scenario == Scenario::LossSpikes) {
        f.runSpikes = int(10 + rng.below(15)); // several times the baseline's two to six
    }
    plan.departureStep = f.departure;

    // The losses: shared noise and data spikes, then each run's own.
    std::vector<double> sharedNoise(size_t(s.steps) + 1);
    const double sharedSigma = s.noise * std::sqrt(s.shared);
    for (double &v : sharedNoise)
        v = sharedSigma * rng.normal();
    std::vector<int64_t> sharedSpikeSteps;
    const std::vector<double> sharedSpikes
        = spikeTrain(s, s.sharedSpikeRate, std::nullopt, 1.0, rng, nullptr, &sharedSpikeSteps);
    const Track base = lossTrack(s, Fault {}, false, sharedNoise, sharedSpikes, rng);
    const Track run = lossTrack(s, f, true, sharedNoise, sharedSpikes, rng);
    // The FP8 run crashed once and resumed from its last checkpoint, in the same log (half the seeds).
    std::optional<Restart> restart;
    if (rng.uniform() < 0.5) {
        const int64_t crash = int64_t(steps * rng.between(0.2, 0.85)) / s.runInterval * s.runInterval;
        const int64_t resume = (crash - 1) / s.saveInterval * s.saveInterval;
        if (resume > 0 && resume < crash)
            restart = Restart {crash, resume};
    }

    // Configs: what any two runs share, the FP8 settings, incidental differences, and the suspect.
    const int heads = pick(rng, std::vector<int> {16, 32});
    const int hidden = pick(rng, std::vector<int> {1024, 2048, 4096});
    std::vector<std::pair<QByteArray, QByteArray>> common {{"num-layers", QByteArray::number(s.layers)},
        {"hidden-size", QByteArray::number(hidden)}, {"num-attention-heads", QByteArray::number(heads)},
        {"seq-length", "4096"}, {"global-batch-size", QByteArray::number(s.globalBatch)}, {"micro-batch-size", "2"},
        {"lr", "0.0003"}, {"min-lr", "3e-05"}, {"lr-warmup-iters", QByteArray::number(qint64(s.warm))},
        {"train-iters", QByteArray::number(s.steps)}, {"seed", "1234"}, {"bf16", "true"},
        {"transformer-impl", "transformer_engine"}, {"use-distributed-optimizer", "true"}, {"log-interval", "10"},
        {"save-interval", QByteArray::number(s.saveInterval)}};
    std::vector<std::pair<QByteArray, QByteArray>> baseArgs = common, runArgs = common;
    for (auto &[k, v] : baseArgs) {
        if (k == "log-interval")
            v = QByteArray::number(s.baseInterval);
    }
    for (auto &[k, v] : runArgs) {
        if (k == "log-interval")
            v = QByteArray::number(s.runInterval);
    }
    baseArgs.push_back({"save", "/checkpoints/" + s.baseName.toUtf8()});
    runArgs.push_back({"save", "/checkpoints/" + s.runName.toUtf8()});
    baseArgs.push_back({"wandb-exp-name", s.baseName.toUtf8() + "-" + QByteArray::number(qulonglong(seed))});
    runArgs.push_back({"wandb-exp-name", s.runName.toUtf8() + "-" + QByteArray::number(qulonglong(seed))});
    runArgs.push_back({"fp8-format", rng.uniform() < 0.7 ? "hybrid" : "e4m3"});
    runArgs.push_back({"fp8-recipe", s.recipe.toUtf8()});
    if (s.recipe == QLatin1String("delayed")) {
        runArgs.push_back({"fp8-amax-history-len", "1024"});
        runArgs.push_back({"fp8-amax-compute-algo", "max"});
    }
    std::optional<size_t> suspect;
    bool versionSuspect = false;
    if (scenario == Scenario::EarlyDivergence) {
        if (rng.uniform() < 0.25) {
            versionSuspect = true;
            plan.keys << QStringLiteral("transformer-engine");
        } else {
            suspect = size_t(rng.below(int64_t(std::size(kSuspects))));
            plan.keys << QString::fromLatin1(kSuspects[*suspect].flag);
            runArgs.push_back({QByteArray(kSuspects[*suspect].flag + 2), "true"});
        }
    }
    std::sort(baseArgs.begin(), baseArgs.end());
    std::sort(runArgs.begin(), runArgs.end());
    const auto yaml = [](const std::vector<std::pair<QByteArray, QByteArray>> &args) {
        QByteArray out = "MODEL_ARGS:\n";
        for (const auto &[k, v] : args)
            out += "  --" + k + ": " + v + '\n';
        return out;
    };
    const auto block = [](const std::vector<std::pair<QByteArray, QByteArray>> &args, bool fp8) {
        // The arguments block lists every argument, set or not, with underscores.
        std::vector<std::pair<QByteArray, QByteArray>> all;
        for (const auto &[k, v] : args)
            all.push_back({QByteArray(k).replace('-', '_'), v == "true" ? QByteArray("True") : v});
        const auto has = [&](const QByteArray &k) {
            return std::any_of(all.begin(), all.end(), [&](const auto &p) { return p.first == k; });
        };
        if (!has("fp8"))
            all.push_back({"fp8", fp8 ? QByteArray("hybrid") : QByteArray("None")});
        for (const Suspect &x : kSuspects) {
            if (!has(x.argument))
                all.push_back({x.argument, "False"});
        }
        for (const char *k : {"fp8_format", "fp8_recipe", "fp8_amax_history_len", "fp8_amax_compute_algo"}) {
            if (!has(k))
                all.push_back({k, "None"});
        }
        std::sort(all.begin(), all.end());
        return argumentsBlock(all);
    };
    const QString baseDir = outDir + QLatin1Char('/') + s.baseName;
    const QString runDir = outDir + QLatin1Char('/') + s.runName;
    const QByteArray baseArgumentsText = s.argumentsBlock ? block(baseArgs, false) : QByteArray();
    const QByteArray runArgumentsText = s.argumentsBlock ? block(runArgs, true) : QByteArray();
    if (!s.argumentsBlock
        && (!writeDemoFile(baseDir + QStringLiteral("/config.yaml"), yaml(baseArgs), error)
            || !writeDemoFile(runDir + QStringLiteral("/config.yaml"), yaml(runArgs), error)))
        return false;
    const QString logName = pick(rng,
        std::vector<QString> {QStringLiteral("logs/train.out"), QStringLiteral("slurm-%1.out").arg(4411000 + seed),
            QStringLiteral("stdout.log")});
    // Written once the layer signals are planted (a mixture-of-experts run's router loss follows its overloaded
    // expert); drawing nothing, so the order changes no seed.
    const auto writeLogs = [&] {
        return writeDemoFile(baseDir + QLatin1Char('/') + logName,
                   megatronLog(s, base, s.baseInterval, std::nullopt, baseArgumentsText, false), error)
            && writeDemoFile(runDir + QLatin1Char('/') + logName,
                megatronLog(s, run, s.runInterval, restart, runArgumentsText, true), error);
    };

    // Versions: a harmless difference in every scenario, the framework's in some early divergences.
    const auto freeze = [&](bool fp8) {
        QByteArray out = "numpy==" + QByteArray(fp8 ? "1.26.4" : "1.26.3") + "\npackaging==24.1\n";
        out += "torch==2.5.1+cu124\n";
        out += "transformer_engine==" + QByteArray(fp8 && versionSuspect ? "2.2.0+c55e4a2" : "2.1.0+8eb1712") + '\n';
        out += "megatron-core==0.11.0\ntqdm==" + QByteArray(fp8 ? "4.67.1" : "4.66.5") + "\nwandb==0.18.7\n";
        return out;
    };
    if (!writeDemoFile(baseDir + QStringLiteral("/pip_freeze.txt"), freeze(false), error)
        || !writeDemoFile(runDir + QStringLiteral("/pip_freeze.txt"), freeze(true), error))
        return false;

    // Transformer Engine statistics of the FP8 run.
    std::vector<StatSeries> series;
    std::map<QString, double> commonDrift; // per tensor and statistic: how all layers move together
    const auto driftOf = [&](const QString &tensor, const QString &stat) {
        const QString key = tensor + QLatin1Char('/') + stat;
        if (!commonDrift.count(key))
            commonDrift[key] = rng.between(-0.35, 0.35);
        return commonDrift[key] + rng.between(-0.08, 0.08);
    };
    const int lastLayer = s.layers - 1;
    for (int layer = 0; layer < s.layers; ++layer) {
        const bool edge = layer == 0 || layer == lastLayer;
        for (int gemm : s.gemms) {
            const int experts = isExpertGemm(s, gemm) ? s.experts : 1;
            for (int expert = 0; expert < experts; ++expert) {
                for (int ti = 0; ti < 3; ++ti) {
                    const QString tensor = QLatin1String(kTensors[ti]);
                    const double amax = (ti == 0          ? 4.0
                                                : ti == 1 ? 0.25
                                                          : 0.004)
                        * std::exp(0.4 * rng.normal()) * (edge ? rng.between(2.0, 4.0) : 1.0);
                    const double underflows = (ti == 0          ? rng.between(0.3, 2.0)
                                                      : ti == 1 ? rng.between(0.05, 0.5)
                                                                : rng.between(2.0, 12.0))
                        * (edge ? rng.between(1.8, 3.0) : 1.0);
                    const double mse
                        = (ti == 0 ? rng.between(1e-3, 1e-2) : 1e-7) * (edge ? rng.between(3.0, 5.0) : 1.0);
                    const double scale = amax / (ti == 2 ? 57344.0 : 448.0);
                    const double noise = rng.between(0.02, 0.06) * (edge ? 2.0 : 1.0);
                    const QString name
                        = isExpertGemm(s, gemm) ? expertName(s, layer, gemm, expert) : layerName(s, layer, gemm);
                    const auto add = [&](const char *stat, double level, double n) {
                        series.push_back(
                            {name, tensor, QLatin1String(stat), level, n, driftOf(tensor, QLatin1String(stat)), 4, {}});
                    };
                    add("underflows%", underflows, noise);
                    add("scale_inv_min", scale * 0.97, noise);
                    add("scale_inv_max", scale * 1.03, noise);
                    add("mse", mse, noise * 1.5);
                    if (s.tensorStats) {
                        add("cur_amax", amax, noise);
                        add("dynamic_range", 14.0 + 6.0 * rng.uniform() + (edge ? 3.0 : 0.0), noise * 0.3);
                        add("std", ti == 0 ? 0.8 : ti == 1 ? 0.02 : 1e-4, noise);
                    }
                }
            }
        }
    }
    const auto find = [&](const QString &layer, const QString &tensor, const QString &stat) -> StatSeries * {
        for (StatSeries &x : series) {
            if (x.layer == layer && x.tensor == tensor && x.stat == stat)
                return &x;
        }
        return nullptr;
    };
    const auto plantOn = [&](const QString &layer, const QString &tensor, int64_t at, double ramp, bool shrink,
                             double size, int64_t until) {
        // A tensor that drifts small underflows more, its scale falls; one whose outliers grow saturates
        // the scale: its amax and scale rise, and its small values underflow more against the larger scale.
        for (const char *stat : {"underflows%", "scale_inv_min", "scale_inv_max", "mse", "cur_amax", "dynamic_range"}) {
            StatSeries *x = find(layer, tensor, QLatin1String(stat));
            if (!x)
                continue;
            StatSeries::Change c {at, ramp, 1.0, 0.0, until};
            const QLatin1String st(stat);
            if (st == QLatin1String("underflows%"))
                c.add = std::max(3.0 * x->level, size * 8.0);
            else if (st.startsWith(QLatin1String("scale_inv")) || st == QLatin1String("cur_amax"))
                c.factor = shrink ? 1.0 / (1.0 + size) : 1.0 + 2.0 * size;
            else if (st == QLatin1String("mse"))
                c.factor = 1.0 + size;
            else
                c.add = std::log2(1.0 + size * 2.0);
            x->changes.push_back(c);
        }
    };
    // Layers that degrade after the departure: consequences.
    if (f.departure) {
        const int k = int(3 + rng.below(4));
        for (int i = 0; i < k; ++i) {
            const int layer = int(rng.below(s.layers));
            const int gemm = s.gemms[size_t(rng.below(int64_t(s.gemms.size())))];
            const int64_t at = *f.departure + int64_t(steps * rng.between(0.02, 0.1));
            plantOn(layerName(s, layer, gemm), QLatin1String(kTensors[rng.below(3)]), at, steps * 0.03,
                rng.uniform() < 0.5, rng.between(0.5, 2.0), -1);
        }
    }
    // Transients that pass: a few hundred steps of change in a layer, then back.
    const int transients = int(rng.below(3));
    for (int i = 0; i < transients; ++i) {
        const int64_t at = int64_t(steps * rng.between(0.25, 0.7));
        plantOn(layerName(s, int(rng.below(s.layers)), s.gemms.front()), QLatin1String(kTensors[rng.below(3)]), at,
            steps * 0.005, rng.uniform() < 0.5, rng.between(0.5, 1.5), at + int64_t(steps * rng.between(0.01, 0.04)));
    }
    if (scenario == Scenario::MidRunInstability) {
        // The first and last layers are the usual suspects: half the seeds plant there.
        const double u = rng.uniform();
        const int layer = u < 0.3 ? 0 : u < 0.5 ? lastLayer : int(1 + rng.below(std::max(1, s.layers - 2)));
        const int gemm = s.gemms[size_t(rng.below(int64_t(s.gemms.size())))];
        const double t = rng.uniform();
        plan.tensor = QLatin1String(t < 0.5 ? "activation" : t < 0.85 ? "gradient" : "weight");
        plan.layer = layerName(s, layer, gemm);
        const bool shrink = rng.uniform() < 0.5;
        plan.stat = shrink ? QStringLiteral("underflows%") : QStringLiteral("scale_inv_max");
        const int64_t lead = int64_t(steps * rng.between(0.05, 0.15));
        plan.onsetStep = std::max<int64_t>(int64_t(steps * 0.3), *f.departure - lead);
        // In the order GCC evaluated the arguments of the one call this was before (the last first): the scenarios
        // of every seed stay as they were.
        const double size = rng.between(1.0, 3.0);
        const double ramp = steps * rng.between(0.01, 0.05);
        if (s.experts > 0) {
            // On an MLP GEMM's experts: one of them (overloaded by the router), or all.
            const int expertGemm = 2 + int(rng.below(2));
            plan.gemm = expertName(s, layer, expertGemm, 0).chopped(QStringLiteral(".gemm_0").size());
            if (variant.allExperts) {
                plan.layer = plan.gemm;
                for (int e = 0; e < s.experts; ++e)
                    plantOn(expertName(s, layer, expertGemm, e), plan.tensor, *plan.onsetStep, ramp, shrink, size, -1);
            } else {
                plan.expert = int(rng.below(s.experts));
                plan.layer = expertName(s, layer, expertGemm, plan.expert);
                plantOn(plan.layer, plan.tensor, *plan.onsetStep, ramp, shrink, size, -1);
                s.overloadAt = *plan.onsetStep;
            }
        } else {
            plantOn(plan.layer, plan.tensor, *plan.onsetStep, ramp, shrink, size, -1);
        }
    }
    QByteArray te;
    te.reserve(qsizetype(series.size()) * qsizetype(s.steps / s.statInterval + 1) * 130);
    for (int64_t step = 0; step <= s.steps; step += s.statInterval) {
        for (StatSeries &x : series) {
            double v = x.level * std::exp(x.drift * double(step) / steps + x.noise * rng.normal());
            for (const StatSeries::Change &c : x.changes) {
                const double r = rampAt(c, step);
                v = v * (1.0 + (c.factor - 1.0) * r) + c.add * r;
            }
            if (x.stat == QLatin1String("underflows%"))
                v = std::min(v, 100.0);
            te += teLine(x.layer + QLatin1Char('_') + x.tensor + QLatin1Char('_') + x.stat, step, v, step * 2);
        }
    }
    if (!writeDemoFile(
            runDir + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"), te,
            error)
        || !writeLogs())
        return false;

    // Evals, where the scenario has them: the downstream gap and most healthy pairs.
    const bool evals = scenario == Scenario::DownstreamGap || scenario == Scenario::None || rng.uniform() < 0.5;
    if (evals && scenario != Scenario::EarlyDivergence && scenario != Scenario::MidRunInstability) {
        std::vector<QString> pool;
        for (const char *t : kTaskPool)
            pool.push_back(QLatin1String(t));
        for (size_t i = pool.size() - 1; i > 0; --i)
            std::swap(pool[i], pool[size_t(rng.below(int64_t(i + 1)))]);
        const int n = int(4 + rng.below(5));
        QStringList tasks;
        for (int i = 0; i < n; ++i)
            tasks << pool[size_t(i)];
        tasks.sort();
        if (scenario == Scenario::DownstreamGap) {
            const int weak = int(1 + rng.below(3));
            for (int i = 0; i < weak; ++i)
                plan.tasks << pool[size_t(i)];
            plan.tasks.sort();
        }
        std::map<QString, double> baseAcc, runBf16, runFp8, baseSe, runSe, runFp8Se;
        const auto se = [](double p, double n) { return std::sqrt(p * (1.0 - p) / n); };
        for (const QString &t : tasks) {
            const double examples = pick(rng, std::vector<double> {500, 1000, 2000, 5000, 10000});
            const double b = rng.between(0.3, 0.85);
            baseAcc[t] = b;
            baseSe[t] = se(b, examples);
            const double combined = std::sqrt(2.0) * baseSe[t];
            // Healthy tasks differ by less than two combined standard errors; a weak one by four to eight.
            const double z = plan.tasks.contains(t) ? rng.between(4.0, 8.0) : std::clamp(0.7 * rng.normal(), -2.0, 2.0);
            runBf16[t] = b - z * combined;
            runSe[t] = se(runBf16[t], examples);
            runFp8[t] = b
                - (plan.tasks.contains(t) ? z * rng.between(0.0, 0.4) : std::clamp(0.7 * rng.normal(), -2.0, 2.0))
                    * combined;
            runFp8Se[t] = se(runFp8[t], examples);
        }
        const QString stamp
            = QStringLiteral("results_2026-11-30T0%1-12-44.%2.json").arg(rng.below(10)).arg(100000 + rng.below(900000));
        if (!writeDemoFile(baseDir + QStringLiteral("/eval/bf16/") + stamp,
                evalJson(tasks, baseAcc, baseSe, QStringLiteral("bfloat16"), s.baseName), error)
            || !writeDemoFile(runDir + QStringLiteral("/eval/bf16/") + stamp,
                evalJson(tasks, runBf16, runSe, QStringLiteral("bfloat16"), s.runName), error))
            return false;
        if ((scenario == Scenario::DownstreamGap || rng.uniform() < 0.5)
            && !writeDemoFile(runDir + QStringLiteral("/eval/fp8/") + stamp,
                evalJson(tasks, runFp8, runFp8Se, QStringLiteral("fp8"), s.runName), error))
            return false;
    }

    // An inference export in the run's folder with the BF16 weights it was made from beside it: in the downstream
    // gap (three seeds in four) with one planted fault of a kind the audit knows, at a layer drawn; in a healthy
    // pair (one seed in two) clean. A generator of its own: the rest of a scenario is the same with or without it.
    Rng exportRng(seed * 0xD1B54A32D192ED03ull + uint64_t(scenario) * 0x9E3779B97F4A7C15ull + 5);
    std::optional<ExportFault> exportFault;
    if (scenario == Scenario::DownstreamGap && exportRng.uniform() < 0.75)
        exportFault = pick(exportRng,
            std::vector<ExportFault> {ExportFault::InvertedScale, ExportFault::MissingScale, ExportFault::StaleWeights,
                ExportFault::QuantizedIgnored});
    else if (scenario == Scenario::None && exportRng.uniform() < 0.5)
        exportFault = ExportFault::None;
    if (exportFault) {
        const int faultLayer = int(exportRng.below(s.layers));
        if (!writeInferenceExport(runDir + QStringLiteral("/inference"),
                {.layers = s.layers,
                    .faultLayer = faultLayer,
                    .fault = *exportFault,
                    .seed = seed,
                    .referenceDir = runDir + QStringLiteral("/inference-bf16")},
                error))
            return false;
        plan.exportWritten = true;
        plan.exportFault = exportFaultKind(*exportFault);
        plan.exportLayer = exportFaultModule(*exportFault, faultLayer);
    }

    // The truth, for programs and for people.
    const auto stepArray = [](const std::vector<int64_t> &v) {
        QJsonArray a;
        for (int64_t x : v)
            a.append(double(x));
        return a;
    };
    QJsonObject planted {{QStringLiteral("scenario"), scenarioName(scenario)}, {QStringLiteral("seed"), double(seed)},
        {QStringLiteral("planned_steps"), double(s.steps)}, {QStringLiteral("baseline"), s.baseName},
        {QStringLiteral("run"), s.runName},
        {QStringLiteral("departure_step"), f.departure ? QJsonValue(double(*f.departure)) : QJsonValue()},
        {QStringLiteral("keys"), QJsonArray::fromStringList(plan.keys)},
        {QStringLiteral("tasks"), QJsonArray::fromStringList(plan.tasks)},
        {QStringLiteral("log_intervals"), QJsonArray {s.baseInterval, s.runInterval}},
        {QStringLiteral("stat_interval"), s.statInterval},
        {QStringLiteral("spikes"),
            QJsonObject {{QStringLiteral("shared"), stepArray(sharedSpikeSteps)},
                {QStringLiteral("baseline"), stepArray(base.spikes)}, {QStringLiteral("run"), stepArray(run.spikes)}}},
        {QStringLiteral("layers"), s.layers},
        {QStringLiteral("config"), s.argumentsBlock ? QStringLiteral("arguments block") : QStringLiteral("yaml")}};
    if (scenario == Scenario::MidRunInstability) {
        planted.insert(QStringLiteral("layer"), plan.layer);
        planted.insert(QStringLiteral("tensor"), plan.tensor);
        planted.insert(QStringLiteral("stat"), plan.stat);
        planted.insert(QStringLiteral("onset_step"), double(*plan.onsetStep));
        if (s.experts > 0) {
            planted.insert(QStringLiteral("gemm"), plan.gemm);
            planted.insert(QStringLiteral("expert"), plan.expert >= 0 ? QJsonValue(plan.expert) : QJsonValue());
        }
    }
    if (s.experts > 0)
        planted.insert(QStringLiteral("experts"), s.experts);
    if (plan.exportWritten)
        planted.insert(QStringLiteral("inference_export"),
            QJsonObject {{QStringLiteral("folder"), QString(s.runName + QStringLiteral("/inference"))},
                {QStringLiteral("reference"), QString(s.runName + QStringLiteral("/inference-bf16"))},
                {QStringLiteral("fault"), plan.exportFault.isEmpty() ? QJsonValue() : QJsonValue(plan.exportFault)},
                {QStringLiteral("layer"), plan.exportLayer.isEmpty() ? QJsonValue() : QJsonValue(plan.exportLayer)}});
    if (restart)
        planted.insert(QStringLiteral("restart"),
            QJsonObject {{QStringLiteral("crash_step"), double(restart->crash)},
                {QStringLiteral("resumed_from"), double(restart->resume)}});
    const QByteArray readme = "# fp8scope triage scenario: " + scenarioName(scenario).toUtf8() + " (seed "
        + QByteArray::number(qulonglong(seed))
        + ", synthetic)\n\nGenerated by `fp8scope-cli demo --scenario`; no model was trained. `" + s.baseName.toUtf8()
        + "/` is the BF16 baseline and `" + s.runName.toUtf8()
        + "/` the FP8 run, in the formats fp8scope reads (Megatron stdout logs, Transformer Engine statistics logs, "
          "lm-evaluation-harness results, configs, pip freeze), without manifests: the runs pair by their configs "
          "and names. `planted.json` says what was planted where. Distractors: first and last layers noisier than "
          "the rest, layer statistics that all drift together, transients that pass, a harmless version "
          "difference, paths and experiment names that differ, and (some seeds) a crash and a resume that "
          "rewinds the FP8 log to its last checkpoint.\n";
    if (!writeDemoFile(outDir + QStringLiteral("/README.md"), readme, error)
        || !writeDemoFile(
            outDir + QStringLiteral("/planted.json"), QJsonDocument(planted).toJson(QJsonDocument::Indented), error))
        return false;
    if (planOut)
        *planOut = plan;
    return true;
}

} // namespace fp8scope
