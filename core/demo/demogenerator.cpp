#include "demogenerator.h"

#include "demoutil.h"

#include "core/formats/fp8math.h"
#include "core/numerics/cpubackend.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/tensormetrics.h"
#include "core/tensors/hdf5dumpwriter.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <tuple>
#include <vector>

namespace fp8scope {

namespace {

constexpr int kGlobalBatch = 256;
const char *const kGemms[]
    = {"self_attention.linear_qkv", "self_attention.linear_proj", "mlp.linear_fc1", "mlp.linear_fc2"};
const char *const kTensors[] = {"activation", "weight", "gradient"};
const char *const kTasks[] = {"arc_easy", "arc_challenge", "hellaswag", "winogrande", "piqa", "boolq"};

QString layerName(int layer, const char *gemm)
{
    return QStringLiteral("decoder.layers.%1.%2").arg(layer).arg(QLatin1String(gemm));
}

// A safetensors file of the given tensors (name, dtype as the format spells it, shape, bytes), in name order.
struct StTensor {
    QString name;
    const char *dtype;
    std::vector<int64_t> shape;
    QByteArray bytes;
};

QByteArray safetensorsFile(std::vector<StTensor> tensors)
{
    std::sort(tensors.begin(), tensors.end(), [](const StTensor &a, const StTensor &b) { return a.name < b.name; });
    QJsonObject header;
    QByteArray data;
    for (const StTensor &t : tensors) {
        QJsonArray shape;
        for (int64_t d : t.shape)
            shape.append(qint64(d));
        header.insert(t.name,
            QJsonObject {{QStringLiteral("dtype"), QLatin1String(t.dtype)}, {QStringLiteral("shape"), shape},
                {QStringLiteral("data_offsets"),
                    QJsonArray {qint64(data.size()), qint64(data.size() + t.bytes.size())}}});
        data += t.bytes;
    }
    QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (json.size() % 8)
        json += ' ';
    QByteArray file(8, '\0');
    for (int i = 0; i < 8; ++i)
        file[i] = char((quint64(json.size()) >> (8 * i)) & 0xFF);
    return file + json + data;
}

// The FP8 run's inference export as compressed-tensors writes one (E4M3 weights, one decode scale per output
// channel, activations quantized dynamically, lm_head left in BF16), Nemotron-style names (no gate), with the
// planted fault: `faultLayer`'s o_proj carries its encode scales (448 / amax) where the decode scales belong.
// The export's safetensors and the BF16 weights it was made from (Hugging Face names both).
struct InferenceFiles {
    QByteArray quantized, reference;
};

QByteArray bf16Bytes(const std::vector<float> &w)
{
    QByteArray out(qsizetype(w.size() * 2), '\0');
    for (size_t i = 0; i < w.size(); ++i) {
        const uint16_t h = uint16_t(fp8math::floatBits(w[i]) >> 16);
        std::memcpy(out.data() + 2 * i, &h, 2);
    }
    return out;
}

InferenceFiles inferenceExport(const InferenceExport &o, Rng &rng)
{
    constexpr int hidden = 64;
    std::vector<StTensor> tensors, reference;
    const auto quantized = [&](const QString &module, int rows, int cols, ExportFault fault) {
        QByteArray codes(rows * cols, '\0');
        QByteArray scales(rows * 4, '\0');
        std::vector<float> w(size_t(rows * cols)), q(size_t(rows * cols));
        for (int r = 0; r < rows; ++r) {
            const double std = 0.02 * (0.5 + rng.uniform());
            float amax = 0;
            for (int c = 0; c < cols; ++c) {
                // The weights as trained: BF16; what is quantized, the same or (stale) other weights.
                const float v = float(std * rng.normal());
                const size_t i = size_t(r * cols + c);
                w[i] = std::bit_cast<float>(fp8math::floatBits(v) & 0xFFFF0000u);
                q[i] = fault == ExportFault::StaleWeights ? w[i] + float(0.3 * std * rng.normal()) : w[i];
                amax = std::max(amax, std::abs(q[i]));
            }
            const float s = amax / 448.0f;
            for (int c = 0; c < cols; ++c)
                codes[r * cols + c] = char(fp8math::castToCode(q[size_t(r * cols + c)] / s, fp8math::Format::E4M3));
            const float stored = fault == ExportFault::InvertedScale ? 1.0f / s : s;
            std::memcpy(scales.data() + 4 * r, &stored, 4);
        }
        tensors.push_back({module + QStringLiteral(".weight"), "F8_E4M3", {rows, cols}, codes});
        if (fault != ExportFault::MissingScale)
            tensors.push_back({module + QStringLiteral(".weight_scale"), "F32", {rows, 1}, scales});
        reference.push_back({module + QStringLiteral(".weight"), "BF16", {rows, cols}, bf16Bytes(w)});
    };
    for (int l = 0; l < o.layers; ++l) {
        const QString p = QStringLiteral("model.layers.%1.").arg(l);
        const auto at = [&](const QString &module) {
            return exportFaultModule(o.fault, o.faultLayer) == p + module ? o.fault : ExportFault::None;
        };
        for (const auto &[module, rows, cols] :
            std::vector<std::tuple<QString, int, int>> {{QStringLiteral("self_attn.q_proj"), hidden, hidden},
                {QStringLiteral("self_attn.k_proj"), hidden / 2, hidden},
                {QStringLiteral("self_attn.v_proj"), hidden / 2, hidden},
                {QStringLiteral("self_attn.o_proj"), hidden, hidden},
                {QStringLiteral("mlp.up_proj"), 2 * hidden, hidden},
                {QStringLiteral("mlp.down_proj"), hidden, 2 * hidden}})
            quantized(p + module, rows, cols, at(module));
    }
    if (o.fault == ExportFault::QuantizedIgnored) {
        quantized(QStringLiteral("lm_head"), 128, hidden, ExportFault::None);
    } else {
        std::vector<float> head(size_t(128 * hidden));
        for (float &v : head)
            v = float(0.02 * rng.normal());
        tensors.push_back({QStringLiteral("lm_head.weight"), "BF16", {128, hidden}, bf16Bytes(head)});
        reference.push_back({QStringLiteral("lm_head.weight"), "BF16", {128, hidden}, bf16Bytes(head)});
    }
    return {safetensorsFile(std::move(tensors)), safetensorsFile(std::move(reference))};
}

QByteArray num(double v, int decimals)
{
    return QByteArray::number(v, 'f', decimals);
}

// The training loss both runs share: warm-up, then a power-law decay towards an entropy floor.
double baseLoss(int64_t step, int steps)
{
    const double warm = std::max(1.0, steps * 0.03);
    const double t = double(step) + 50.0;
    const double decay = 1.85 + 9.0 * std::pow(t / 50.0, -0.45);
    return step < warm ? 10.9 - (10.9 - decay) * (double(step) / warm) * 0.6 : decay;
}

struct LossTrack {
    std::vector<double> loss;
    std::vector<int> skipped;
    std::vector<double> gradNorm;
};

LossTrack lossTrack(const DemoOptions &o, const DemoPlan &plan, bool fp8, Rng &rng)
{
    LossTrack t;
    t.loss.resize(size_t(o.steps) + 1);
    t.skipped.assign(size_t(o.steps) + 1, 0);
    t.gradNorm.resize(size_t(o.steps) + 1);
    double spike = 0.0;
    const double spikeRate = fp8 ? 0.0035 : 0.0025;
    // The FP8 run has one spike that needs repeated recovery: three bursts 40 steps apart.
    const int64_t recurring = int64_t(o.steps * 0.3) + rng.below(int64_t(o.steps * 0.1));
    for (int64_t s = 0; s <= o.steps; ++s) {
        if (rng.uniform() < spikeRate && s > o.steps / 20)
            spike += 0.4 + 1.2 * rng.uniform();
        if (fp8 && (s == recurring || s == recurring + 40 || s == recurring + 80)) {
            spike += 1.5;
            t.skipped[size_t(s)] = 3;
        }
        double l = baseLoss(s, o.steps) + spike + 0.02 * rng.normal();
        if (fp8 && s >= plan.departureStep)
            l += 0.0009 * double(s - plan.departureStep) + 0.05;
        t.loss[size_t(s)] = l;
        t.gradNorm[size_t(s)] = 0.9 + 4.0 * spike + 0.05 * std::abs(rng.normal());
        spike *= 0.86;
    }
    return t;
}

QByteArray megatronLog(const DemoOptions &o, const LossTrack &t, bool fp8)
{
    QByteArray out = "using world size: 8, data-parallel size: 8, tensor-model-parallel size: 1\n"
                     "> building GPT model ...\n";
    out += fp8 ? "> FP8 training enabled: format hybrid, recipe Float8CurrentScaling\n" : "> BF16 training\n";
    int skippedInInterval = 0;
    for (int64_t s = 1; s <= o.steps; ++s) {
        skippedInInterval += t.skipped[size_t(s)];
        if (s % 10 != 0)
            continue;
        const double lr = 3e-4 * std::min(1.0, double(s) / (o.steps * 0.03))
            * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(std::numbers::pi * double(s) / o.steps)));
        out += " iteration " + QByteArray::number(s).rightJustified(8) + "/"
            + QByteArray::number(o.steps).rightJustified(8) + " | consumed samples: "
            + QByteArray::number(s * kGlobalBatch).rightJustified(12) + " | elapsed time per iteration (ms): "
            + num(fp8 ? 812.4 : 1093.7, 1) + " | learning rate: " + QByteArray::number(lr, 'E', 3)
            + " | global batch size: " + QByteArray::number(kGlobalBatch).rightJustified(5);
        if (skippedInInterval < 10)
            out += " | lm loss: " + QByteArray::number(t.loss[size_t(s)], 'E', 6)
                + " | loss scale: 1.0 | grad norm: " + num(t.gradNorm[size_t(s)], 3);
        else
            out += " | loss scale: 1.0";
        out += " | number of skipped iterations: " + QByteArray::number(skippedInInterval).rightJustified(3)
            + " | number of nan iterations:   0 |\n";
        skippedInInterval = 0;
        if (s % 500 == 0) {
            const double v = t.loss[size_t(s)] + 0.03;
            out += " validation loss at iteration " + QByteArray::number(s)
                + " | lm loss value: " + QByteArray::number(v, 'E', 6)
                + " | lm loss PPL: " + QByteArray::number(std::exp(v), 'E', 6) + " | \n";
        }
    }
    return out;
}

// One tensor of a run at a step, drawn so that its statistics tell the planted story: the FP8 run's planted
// activation drifts small; the baseline's (fp8 false) does not.
std::vector<float> drawTensor(const DemoOptions &o, const DemoPlan &plan, int layer, int gemm, int tensor, int64_t step,
    Rng &rng, size_t n, bool fp8 = true)
{
    std::vector<float> x(n);
    const bool edge = layer == 0 || layer == o.layers - 1;
    const bool planted = fp8 && layer == plan.plantedLayer && gemm == 3 && tensor == 0;
    double bulk = tensor == 1 ? 0.02 : (tensor == 2 ? 1e-4 : 1.0);
    // The planted tensor's range widens until the loss departs, then stays: its outliers grow and its bulk drifts
    // small, by e^4.75 each, so its underflow reaches about 15 % (a real block-scaled run's worst FC2 activation
    // sat at 15-19 % while the other layers stayed near 0.01 %) and its amax, which both precisions log, rises.
    double outlier = tensor == 1 ? 0.1 : (tensor == 2 ? 5e-4 : 6.0);
    if (planted && step > plan.underflowStart) {
        const double widen = std::exp(4.75
            * std::min(1.0, double(step - plan.underflowStart) / double(plan.departureStep - plan.underflowStart)));
        bulk /= widen;
        outlier *= widen;
    }
    for (size_t i = 0; i < n; ++i) {
        double v = rng.normal() * bulk;
        if (edge) {
            // First and last layers: heavier tails, so quantization costs more there.
            const double w = std::abs(rng.normal()) + 0.15;
            v /= w;
        }
        // One value in 512 an outlier: the first at the tensor's largest, the others of sizes of their own (real
        // outliers vary), log-uniform over the three binades below it.
        if (i % 512 == 0)
            v = (rng.uniform() < 0.5 ? -1.0 : 1.0) * outlier * (i == 0 ? 1.0 : std::exp2(-3.0 * rng.uniform()));
        x[i] = float(v);
    }
    return x;
}

// LogTensorStats' statistics of a tensor, as the high-precision tensor has them.
struct PlainStats {
    double amax = 0, dynamicRange = 0, std = 0, l1 = 0, l2 = 0;
};

PlainStats plainStats(const std::vector<float> &x)
{
    PlainStats p;
    double sum = 0, squares = 0, amin = INFINITY;
    for (float f : x) {
        const double v = f, a = std::abs(v);
        p.amax = std::max(p.amax, a);
        if (a > 0)
            amin = std::min(amin, a);
        sum += v;
        squares += v * v;
        p.l1 += a;
    }
    const double n = double(std::max<size_t>(1, x.size())), mean = sum / n;
    p.std = std::sqrt(std::max(0.0, squares / n - mean * mean));
    p.l2 = std::sqrt(squares);
    p.dynamicRange = std::isfinite(amin) && p.amax > 0 ? std::log2(p.amax) - std::log2(amin) : 0;
    return p;
}

QByteArray teLine(const QString &layer, const char *tensor, const char *stat, int64_t step, double value)
{
    return "2026-11-30 12:00:00,000 - INFO - " + layer.toUtf8() + '_' + tensor + '_' + stat + " \t\t\t\t iteration="
        + QByteArray::number(step).rightJustified(6, '0') + " \t\t\t\t value=" + num(value, 4) + '\n';
}

QByteArray evalJson(const QStringList &tasks, const std::vector<double> &acc, const QString &dtype)
{
    QJsonObject results;
    for (qsizetype i = 0; i < tasks.size(); ++i)
        results.insert(tasks.at(i),
            QJsonObject {{QStringLiteral("acc,none"), acc[size_t(i)]}, {QStringLiteral("acc_stderr,none"), 0.0125},
                {QStringLiteral("alias"), tasks.at(i)}});
    QJsonObject versions;
    for (const QString &t : tasks)
        versions.insert(t, 1.0);
    QJsonObject doc {{QStringLiteral("results"), results}, {QStringLiteral("versions"), versions},
        {QStringLiteral("config"),
            QJsonObject {{QStringLiteral("model"), QStringLiteral("hf")},
                {QStringLiteral("model_args"), QString(QStringLiteral("pretrained=./checkpoint,dtype=") + dtype)}}}};
    return QJsonDocument(doc).toJson(QJsonDocument::Indented);
}

} // namespace

DemoPlan planDemo(const DemoOptions &o)
{
    Rng rng(o.seed * 0x9E3779B97F4A7C15ull + 17);
    DemoPlan p;
    p.departureStep = (int64_t(o.steps * 0.45) + rng.below(int64_t(o.steps * 0.2))) / 10 * 10;
    p.underflowStart = p.departureStep - std::min<int64_t>(300, p.departureStep / 2);
    p.plantedLayer = o.layers - 2 - int(rng.below(std::max(1, std::min(3, o.layers - 2))));
    p.plantedLayerName = layerName(p.plantedLayer, kGemms[3]);
    p.plantedTensor = QStringLiteral("activation");
    QStringList tasks;
    for (const char *t : kTasks)
        tasks << QString::fromLatin1(t);
    const int a = int(rng.below(tasks.size()));
    int b = int(rng.below(tasks.size() - 1));
    if (b >= a)
        ++b;
    p.weakTasks = {tasks.at(std::min(a, b)), tasks.at(std::max(a, b))};
    for (int64_t s : {p.underflowStart - 100, p.underflowStart + 100, p.departureStep - 100, p.departureStep})
        p.dumpSteps << QString::number(std::max<int64_t>(0, s / 10 * 10));
    return p;
}

QString exportFaultKind(ExportFault fault)
{
    switch (fault) {
    case ExportFault::None: return {};
    case ExportFault::InvertedScale: return QStringLiteral("inverted-scale");
    case ExportFault::MissingScale: return QStringLiteral("missing-scale");
    case ExportFault::StaleWeights: return QStringLiteral("weight-mismatch");
    case ExportFault::QuantizedIgnored: return QStringLiteral("precision-mismatch");
    }
    return {};
}

QString exportFaultModule(ExportFault fault, int faultLayer)
{
    switch (fault) {
    case ExportFault::None: return {};
    case ExportFault::InvertedScale:
    case ExportFault::MissingScale: return QStringLiteral("model.layers.%1.self_attn.o_proj").arg(faultLayer);
    case ExportFault::StaleWeights: return QStringLiteral("model.layers.%1.mlp.down_proj").arg(faultLayer);
    case ExportFault::QuantizedIgnored: return QStringLiteral("lm_head");
    }
    return {};
}

bool writeInferenceExport(const QString &dir, const InferenceExport &o, QString *error)
{
    Rng rng(o.seed * 7919 + 17);
    const QByteArray model = R"({"architectures": ["NemotronForCausalLM"], "model_type": "nemotron", "hidden_size": )"
                             R"(64, "num_hidden_layers": )"
        + QByteArray::number(o.layers) + R"(, "num_attention_heads": 4, "num_key_value_heads": 2)";
    const QByteArray config = model
        + R"(, "quantization_config": {"quant_method": )"
          R"("compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": )"
          R"({"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "dynamic": )"
          R"(false}, "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": true}}}}})"
          "\n";
    const InferenceFiles files = inferenceExport(o, rng);
    return writeDemoFile(dir + QStringLiteral("/config.json"), config, error)
        && writeDemoFile(dir + QStringLiteral("/model.safetensors"), files.quantized, error)
        && (o.referenceDir.isEmpty()
            || (writeDemoFile(o.referenceDir + QStringLiteral("/config.json"), model + "}\n", error)
                && writeDemoFile(o.referenceDir + QStringLiteral("/model.safetensors"), files.reference, error)));
}

bool generateDemo(const QString &outDir, const DemoOptions &o, DemoPlan *planOut, QString *error)
{
    const DemoPlan plan = planDemo(o);
    if (planOut)
        *planOut = plan;
    QDir().mkpath(outDir);
    Rng rng(o.seed);

    // Losses and Megatron stdout logs.
    for (bool fp8 : {false, true}) {
        const LossTrack t = lossTrack(o, plan, fp8, rng);
        const QString run = outDir + (fp8 ? QStringLiteral("/fp8") : QStringLiteral("/bf16"));
        if (!writeDemoFile(run + QStringLiteral("/logs/train.out"), megatronLog(o, t, fp8), error))
            return false;
    }

    // Transformer Engine statistics, computed from drawn tensors by the numerics engine: LogTensorStats'
    // precision-independent ones (amax, dynamic range, std, norms) for both runs, as a BF16 baseline run with
    // the debug API enabled logs them, and LogFp8TensorStats' for the FP8 run only. The baseline's tensors
    // come from a generator of their own, so the FP8 run's are the same whether or not it is written.
    CpuBackend backend(1);
    QString recipeError;
    const Recipe current = *Recipe::parse(QStringLiteral("current"), fp8math::Format::E4M3, &recipeError);
    Rng baselineRng(o.seed * 0x2545F4914F6CDD1Dull + 0xB16);
    for (bool fp8 : {true, false}) {
        Rng &r = fp8 ? rng : baselineRng;
        QByteArray te;
        constexpr size_t kElems = 2048;
        for (int64_t step = 0; step <= o.steps; step += o.statInterval) {
            for (int layer = 0; layer < o.layers; ++layer) {
                for (int g = 0; g < 4; ++g) {
                    for (int k = 0; k < 3; ++k) {
                        const std::vector<float> x = drawTensor(o, plan, layer, g, k, step, r, kElems, fp8);
                        const QString name = layerName(layer, kGemms[g]);
                        const PlainStats p = plainStats(x);
                        if (fp8) {
                            const ChunkView view {DType::F32, x.data(), 1, int64_t(x.size())};
                            const fp8math::QuantPlan qp = MetricsEngine::planFor(current, backend.amax(view));
                            fp8math::MetricSums sums;
                            backend.accumulate(view, qp, sums);
                            const TensorMetrics m = TensorMetrics::fromSums(
                                sums, current, qp.tensorScale, qp.tensorScaleInv, backend.name());
                            te += teLine(name, kTensors[k], "underflows%", step, m.underflowPct);
                            te += teLine(name, kTensors[k], "overflows%", step, m.saturationPct);
                            te += teLine(name, kTensors[k], "mse", step, m.mse * 1e4); // 4 decimals: scaled
                            te += teLine(name, kTensors[k], "scale_inv_min", step, qp.tensorScaleInv);
                            te += teLine(name, kTensors[k], "scale_inv_max", step, qp.tensorScaleInv);
                        }
                        te += teLine(name, kTensors[k], "cur_amax", step, p.amax);
                        te += teLine(name, kTensors[k], "dynamic_range", step, p.dynamicRange);
                        te += teLine(name, kTensors[k], "std", step, p.std);
                        te += teLine(name, kTensors[k], "l1_norm", step, p.l1);
                        te += teLine(name, kTensors[k], "l2_norm", step, p.l2);
                    }
                }
            }
        }
        if (!writeDemoFile(outDir + (fp8 ? QStringLiteral("/fp8") : QStringLiteral("/bf16"))
                    + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"),
                te, error))
            return false;
    }

    // Tensor dumps around the planted story (first, planted, a middle and the last layer): the FP8 run's, and
    // the baseline's at the same steps, so that the same recipe can be recomputed on both.
    for (bool fp8 : {true, false}) {
        Rng &r = fp8 ? rng : baselineRng;
        const QString dumps = outDir + (fp8 ? QStringLiteral("/fp8/dumps") : QStringLiteral("/bf16/dumps"));
        QDir().mkpath(dumps);
        for (const QString &stepText : plan.dumpSteps) {
            const int64_t step = stepText.toLongLong();
            Problem problem;
            auto writer = Hdf5DumpWriter::create(
                dumps + QStringLiteral("/iter_%1.h5").arg(step, 6, 10, QLatin1Char('0')), &problem);
            if (!writer) {
                *error = problem.toString();
                return false;
            }
            writer->setRootAttribute("precision", fp8 ? QStringLiteral("fp8") : QStringLiteral("bf16"));
            if (fp8)
                writer->setRootAttribute("recipe", QStringLiteral("current"));
            // Small models can name one layer twice (the planted one may be the middle one).
            std::vector<int> dumpLayers;
            for (int layer : {0, plan.plantedLayer, o.layers / 2, o.layers - 1}) {
                if (std::find(dumpLayers.begin(), dumpLayers.end(), layer) == dumpLayers.end())
                    dumpLayers.push_back(layer);
            }
            for (int layer : dumpLayers) {
                for (int k = 0; k < 3; ++k) {
                    std::vector<float> x = drawTensor(o, plan, layer, 3, k, step, r, 64 * 256, fp8);
                    std::vector<uint16_t> bf(x.size());
                    for (size_t i = 0; i < x.size(); ++i)
                        bf[i] = uint16_t(fp8math::castToCode(x[i], fp8math::Format::BF16));
                    const float amax = std::abs(*std::max_element(
                        x.begin(), x.end(), [](float a, float b) { return std::abs(a) < std::abs(b); }));
                    // What the FP8 run trained with: current scaling, so scale_inv = amax / fmax(E4M3). The
                    // baseline trained in BF16: no recipe, no scales.
                    const DumpTensorAttributes attrs = fp8
                        ? DumpTensorAttributes {QStringLiteral("current"), QStringLiteral("E4M3"),
                            {amax, amax * 1.1f, amax * 0.9f}, {amax / 448.0f}}
                        : DumpTensorAttributes {};
                    const QString path = QStringLiteral("/iter_%1/%2/%3")
                                             .arg(step, 6, 10, QLatin1Char('0'))
                                             .arg(layerName(layer, kGemms[3]), QLatin1String(kTensors[k]));
                    if (!writer->writeTensor(path, DType::BF16, {64, 256}, bf.data(), attrs, &problem)) {
                        *error = problem.toString();
                        return false;
                    }
                }
            }
        }
    }

    // Downstream evals: the FP8 run scores lower on two tasks with BF16 inference, closer with FP8 inference.
    QStringList tasks;
    for (const char *t : kTasks)
        tasks << QString::fromLatin1(t);
    std::vector<double> base, fp8Bf16, fp8Fp8;
    for (const QString &t : tasks) {
        const double b = 0.45 + 0.3 * rng.uniform();
        const bool weak = plan.weakTasks.contains(t);
        const double gap = weak ? 0.035 + 0.02 * rng.uniform() : 0.004 * (rng.uniform() - 0.5);
        base.push_back(b);
        fp8Bf16.push_back(b - gap);
        fp8Fp8.push_back(b - (weak ? gap * 0.3 : gap));
    }
    if (!writeDemoFile(outDir + QStringLiteral("/bf16/eval/results_bf16_inference.json"),
            evalJson(tasks, base, QStringLiteral("bfloat16")), error)
        || !writeDemoFile(outDir + QStringLiteral("/fp8/eval/results_bf16_inference.json"),
            evalJson(tasks, fp8Bf16, QStringLiteral("bfloat16")), error)
        || !writeDemoFile(outDir + QStringLiteral("/fp8/eval/results_fp8_inference.json"),
            evalJson(tasks, fp8Fp8, QStringLiteral("fp8")), error))
        return false;

    // The FP8 run's inference export, with a planted scale fault in the last layer (the usual suspect).
    const int exportFault = o.layers - 1;
    // Beside it, the BF16 weights it was made from, which the audit checks it against.
    if (!writeInferenceExport(outDir + QStringLiteral("/fp8/inference"),
            {.layers = o.layers,
                .faultLayer = exportFault,
                .fault = ExportFault::InvertedScale,
                .seed = o.seed,
                .referenceDir = outDir + QStringLiteral("/fp8/inference-bf16")},
            error))
        return false;

    // Configs (the FP8 settings and one recently enabled option differ) and manifests.
    const QByteArray common = "MODEL_ARGS:\n  --num-layers: " + QByteArray::number(o.layers)
        + "\n  --hidden-size: 2048\n  --global-batch-size: " + QByteArray::number(kGlobalBatch) + "\n  --train-iters: "
        + QByteArray::number(o.steps) + "\n  --bf16: true\n  --transformer-impl: transformer_engine\n";
    if (!writeDemoFile(outDir + QStringLiteral("/bf16/config.yaml"), common, error)
        || !writeDemoFile(outDir + QStringLiteral("/fp8/config.yaml"),
            common + "  --fp8-format: hybrid\n  --fp8-recipe: tensorwise\n  --overlap-param-gather: true\n", error)
        || !writeDemoFile(outDir + QStringLiteral("/bf16/fp8scope.json"),
            R"({"name": "BF16 baseline", "precision": "bf16", "notes": "synthetic demo data"})"
            "\n",
            error)
        || !writeDemoFile(outDir + QStringLiteral("/fp8/fp8scope.json"),
            R"({"name": "FP8 run", "precision": "fp8", "recipe": "current", "baseline": "bf16", "inference_precision": "bf16", "notes": "synthetic demo data"})"
            "\n",
            error)
        // The workspace manifest pairs the two runs (the FP8 run and its BF16 baseline).
        || !writeDemoFile(outDir + QStringLiteral("/fp8scope-workspace.json"),
            R"({"runs": {"fp8": {"precision": "fp8", "baseline": "bf16"}, "bf16": {"precision": "bf16"}}})"
            "\n",
            error))
        return false;

    const QJsonObject planted {{QStringLiteral("seed"), double(o.seed)},
        {QStringLiteral("departure_step"), double(plan.departureStep)},
        {QStringLiteral("underflow_start_step"), double(plan.underflowStart)},
        {QStringLiteral("layer"), plan.plantedLayerName}, {QStringLiteral("tensor"), plan.plantedTensor},
        {QStringLiteral("weak_tasks"), QJsonArray::fromStringList(plan.weakTasks)},
        {QStringLiteral("inverted_scale"), QStringLiteral("model.layers.%1.self_attn.o_proj").arg(exportFault)},
        {QStringLiteral("dump_steps"), QJsonArray::fromStringList(plan.dumpSteps)}};
    const QByteArray readme = "# fp8scope demo (synthetic data)\n\n"
                              "Everything here was generated by `fp8scope-cli demo` (seed "
        + QByteArray::number(qulonglong(o.seed))
        + "); no model was trained. Two runs, `bf16/` (the baseline) and `fp8/`, in the "
          "formats fp8scope reads: Megatron stdout logs (`logs/train.out`), Transformer Engine debug statistics "
          "(`rank_0/nvdlfw_inspect_statistics_logs/`, computed by fp8scope's numerics from tensors drawn at those "
          "steps: LogTensorStats' `cur_amax`, `dynamic_range`, `std`, `l1_norm` and `l2_norm` for both runs, "
          "LogFp8TensorStats' for the FP8 run; `mse` is printed x 1e4), HDF5 tensor dumps of both runs at the same "
          "steps (`dumps/`), lm-evaluation-harness results (`eval/`), the FP8 run's inference export "
          "(`fp8/inference/`: compressed-tensors safetensors, E4M3 weights with per-channel scales), configs and "
          "manifests.\n\n"
          "## Planted\n\n"
          "- The FP8 loss departs from the BF16 loss at step "
        + QByteArray::number(plan.departureStep)
        + " and keeps rising.\n"
          "- From step "
        + QByteArray::number(plan.underflowStart) + " the input activation of `" + plan.plantedLayerName.toUtf8()
        + "` drifts small and underflows more and more.\n"
          "- The first and last layers show larger quantization error (heavier tails) than the middle ones.\n"
          "- The FP8 run has a few more loss spikes, one of which recurs three times (skipped iterations).\n"
          "- Downstream, the FP8 run scores lower on "
        + plan.weakTasks.join(QStringLiteral(" and ")).toUtf8()
        + " with BF16 inference, and closer to BF16 with FP8 inference.\n"
          "- The inference export's `model.layers."
        + QByteArray::number(exportFault)
        + ".self_attn.o_proj.weight_scale` holds the encode scales (448 / amax) where the decode scales belong "
          "(`fp8scope-cli audit fp8/inference`).\n\n"
          "`planted.json` holds the same facts for programs.\n";
    return writeDemoFile(outDir + QStringLiteral("/README.md"), readme, error)
        && writeDemoFile(
            outDir + QStringLiteral("/planted.json"), QJsonDocument(planted).toJson(QJsonDocument::Indented), error);
}

} // namespace fp8scope
