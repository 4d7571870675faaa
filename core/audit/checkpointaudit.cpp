#include "checkpointaudit.h"

#include "auditkernels.h"
#include "core/formats/fp8math.h"
#include "core/formats/layerorder.h"
#include "core/tensors/fp8decode.h"
#include "core/tensors/safetensorsreader.h"
#include "core/tensors/teextrastate.h"
#include "core/tensors/tensorreader.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cstring>
#include <mutex>
#include <thread>

namespace fp8scope {

namespace {

using fp8math::Format;

// The elements of a reference tensor the fresh quantization is computed on: whole rows spread evenly, about
// kFreshElements in all (every row of a smaller tensor; at least one row).
constexpr int64_t kFreshElements = int64_t(1) << 17;

QJsonObject readJsonObject(const QString &path, Problem *problem)
{
    QFile f(path);
    if (!f.exists())
        return {};
    if (!f.open(QIODevice::ReadOnly)) {
        *problem = {path, -1, QStringLiteral("cannot read: %1").arg(f.errorString())};
        return {};
    }
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject()) {
        *problem = {path, error.offset, QStringLiteral("not a JSON object: %1").arg(error.errorString())};
        return {};
    }
    return doc.object();
}

QStringList stringsOf(const QJsonValue &v)
{
    QStringList out;
    for (const QJsonValue &e : v.toArray())
        out << e.toString();
    return out;
}

// The block shape [rows, cols] of a JSON array, or 0x0.
std::pair<int64_t, int64_t> blockOf(const QJsonValue &v)
{
    const QJsonArray a = v.toArray();
    if (a.size() != 2 || a[0].toInteger() <= 0 || a[1].toInteger() <= 0)
        return {0, 0};
    return {a[0].toInteger(), a[1].toInteger()};
}

// `config` is config.json's object (read once by the caller, who also takes the heads from it).
QuantConfig readQuantConfig(const QString &dir, const QJsonObject &config, std::vector<Problem> *problems)
{
    QuantConfig c;
    Problem problem;
    const QString configPath = QDir(dir).filePath(QStringLiteral("config.json"));
    const QJsonObject q = config.value(QStringLiteral("quantization_config")).toObject();
    if (!q.isEmpty()) {
        c.source = configPath;
        c.method = q.value(QStringLiteral("quant_method")).toString();
        c.ignore = stringsOf(q.value(QStringLiteral("ignore")));
        c.ignore += stringsOf(q.value(QStringLiteral("ignored_layers")));
        c.ignore += stringsOf(q.value(QStringLiteral("modules_to_not_convert")));
        c.ignore += stringsOf(q.value(QStringLiteral("exclude_modules")));
        // The fp8 method (DeepSeek-V3, Hugging Face's fine-grained FP8, vLLM's fp8).
        if (const auto [r, k] = blockOf(q.value(QStringLiteral("weight_block_size"))); r > 0) {
            c.weightStrategy = QStringLiteral("block");
            c.blockRows = r;
            c.blockCols = k;
        }
        const QString scheme = q.value(QStringLiteral("activation_scheme")).toString();
        if (!scheme.isEmpty())
            c.staticActivations = scheme == QLatin1String("static");
        // compressed-tensors: the first group that quantizes weights to 8-bit floats.
        const QJsonObject groups = q.value(QStringLiteral("config_groups")).toObject();
        for (auto it = groups.begin(); it != groups.end(); ++it) {
            const QJsonObject g = it.value().toObject();
            const QJsonObject w = g.value(QStringLiteral("weights")).toObject();
            if (w.value(QStringLiteral("type")).toString() != QLatin1String("float"))
                continue;
            c.weightStrategy = w.value(QStringLiteral("strategy")).toString();
            if (const auto [r, k] = blockOf(w.value(QStringLiteral("block_structure"))); r > 0) {
                c.blockRows = r;
                c.blockCols = k;
            }
            const QJsonValue in = g.value(QStringLiteral("input_activations"));
            if (in.isObject())
                c.staticActivations = !in.toObject().value(QStringLiteral("dynamic")).toBool(true);
            break;
        }
        if (q.value(QStringLiteral("kv_cache_scheme")).isObject())
            c.kvCacheFp8 = true;
        if (q.value(QStringLiteral("kv_cache_quant_algo")).toString().contains(QLatin1String("FP8")))
            c.kvCacheFp8 = true;
    }
    // TensorRT Model Optimizer's own file.
    const QString modelOptPath = QDir(dir).filePath(QStringLiteral("hf_quant_config.json"));
    problem = {};
    const QJsonObject modelOpt = readJsonObject(modelOptPath, &problem);
    if (!problem.message.isEmpty())
        problems->push_back(problem);
    const QJsonObject mq = modelOpt.value(QStringLiteral("quantization")).toObject();
    if (!mq.isEmpty()) {
        c.source = modelOptPath;
        if (c.method.isEmpty())
            c.method = QStringLiteral("modelopt");
        const QString algo = mq.value(QStringLiteral("quant_algo")).toString();
        if (algo == QLatin1String("FP8"))
            c.weightStrategy = QStringLiteral("tensor");
        else if (algo == QLatin1String("FP8_PER_CHANNEL_PER_TOKEN"))
            c.weightStrategy = QStringLiteral("channel");
        if (algo.startsWith(QLatin1String("FP8")) && !c.staticActivations)
            c.staticActivations = algo == QLatin1String("FP8");
        c.ignore += stringsOf(mq.value(QStringLiteral("exclude_modules")));
        if (mq.value(QStringLiteral("kv_cache_quant_algo")).toString().contains(QLatin1String("FP8")))
            c.kvCacheFp8 = true;
    }
    c.ignore.removeDuplicates();
    return c;
}

struct Located {
    QString file;
    SafetensorsEntry entry;
};

// The shards of an export: those model.safetensors.index.json names, else every .safetensors file.
QStringList shardsOf(const QString &path, std::vector<Problem> *problems)
{
    const QFileInfo info(path);
    if (info.isFile())
        return {info.absoluteFilePath()};
    const QDir dir(path);
    QStringList shards;
    const QStringList indexes = dir.entryList({QStringLiteral("*.safetensors.index.json")}, QDir::Files, QDir::Name);
    for (const QString &indexName : indexes) {
        Problem problem;
        const QJsonObject index = readJsonObject(dir.filePath(indexName), &problem);
        if (!problem.message.isEmpty()) {
            problems->push_back(problem);
            continue;
        }
        const QJsonObject map = index.value(QStringLiteral("weight_map")).toObject();
        for (auto it = map.begin(); it != map.end(); ++it) {
            const QString shard = dir.filePath(it.value().toString());
            if (!shards.contains(shard))
                shards << shard;
        }
        for (const QString &shard : std::as_const(shards)) {
            if (!QFileInfo::exists(shard))
                problems->push_back({dir.filePath(indexName), -1,
                    QStringLiteral("names the shard %1, which is missing").arg(QFileInfo(shard).fileName())});
        }
    }
    if (shards.isEmpty()) {
        for (const QString &f : dir.entryList({QStringLiteral("*.safetensors")}, QDir::Files, QDir::Name))
            shards << dir.filePath(f);
    }
    shards.sort();
    shards.erase(std::remove_if(shards.begin(), shards.end(), [](const QString &s) { return !QFileInfo::exists(s); }),
        shards.end());
    return shards;
}

bool isFp8Dtype(const QString &d)
{
    return d == QLatin1String("F8_E4M3") || d == QLatin1String("F8_E5M2");
}

// A tensor of a reference: a safetensors name or a name in any file openTensor reads.
struct RefIndex {
    QHash<QString, QString> specs; // tensor name -> "FILE:NAME"
    // Transformer Engine's FP8 state of the training checkpoint's modules, and the file it is from.
    QHash<QString, TeExtraState> te;
    QString teFile;
};

void indexReference(const QString &path, RefIndex *index, QStringList *files, std::vector<Problem> *problems)
{
    const QFileInfo info(path);
    QStringList candidates;
    if (info.isDir()) {
        candidates = shardsOf(path, problems);
        const QDir dir(path);
        for (const QString &f : dir.entryList(
                 {QStringLiteral("*.pt"), QStringLiteral("*.pth"), QStringLiteral("*.h5"), QStringLiteral("*.hdf5")},
                 QDir::Files, QDir::Name))
            candidates << dir.filePath(f);
    } else if (info.isFile()) {
        candidates << info.absoluteFilePath();
    } else {
        problems->push_back({path, -1, QStringLiteral("the reference does not exist")});
        return;
    }
    for (const QString &file : std::as_const(candidates)) {
        Problem problem;
        const QStringList names = listTensors(file, &problem);
        if (!problem.message.isEmpty()) {
            problems->push_back(problem);
            continue;
        }
        *files << file;
        for (const QString &name : names) {
            if (!index->specs.contains(name))
                index->specs.insert(name, file + QLatin1Char(':') + name);
        }
        // A training checkpoint: its modules' FP8 state (the first file that has any).
        if (index->te.isEmpty() && (file.endsWith(QLatin1String(".pt")) || file.endsWith(QLatin1String(".pth")))) {
            QHash<QString, TeExtraState> states;
            if (!readTeExtraStates(file, &states, problems, &problem)) {
                problems->push_back(problem);
            } else if (!states.isEmpty()) {
                index->te = states;
                index->teFile = file;
            }
        }
    }
}

// The precision each audited layer's training module had, from the training checkpoint's FP8 state: a module
// with delayed-scaling state trained in FP8; an empty one in BF16 only where others kept state (a stateless
// recipe, current scaling or blocks, keeps none anywhere). Its input's amax history is kept for the
// calibration rule.
void applyTrainingState(AuditResult &result, const RefIndex &refs)
{
    bool anyState = false;
    for (const TeExtraState &s : refs.te)
        anyState = anyState || !s.empty;
    if (!anyState)
        return;
    const QString file = QFileInfo(refs.teFile).fileName();
    for (AuditLayer &l : result.layers) {
        if (!l.training)
            continue;
        const auto it = refs.te.constFind(l.training->module);
        if (it == refs.te.cend())
            continue;
        l.trainingPrecision = it->empty ? QStringLiteral("bf16")
                                        : QStringLiteral("fp8 (%1)").arg(it->recipe.section(QLatin1Char('.'), -1));
        l.checkpointActivationAmax = it->historyAmax(0);
        const QString training = l.training->text();
        const bool weight2d = l.shape.size() == 2;
        if (l.quantized && it->empty) {
            l.findings << AuditKind::PrecisionMismatch;
            result.findings.push_back({AuditKind::PrecisionMismatch, AuditSeverity::Warning, l.name, training,
                QStringLiteral("stored as %1 for inference, but %2 kept no FP8 state for %3 where other modules kept "
                               "delayed-scaling state: it trained in BF16, and FP8 inference quantizes a layer that "
                               "never saw FP8")
                    .arg(l.dtype, file, l.training->module)});
        } else if (!l.quantized && !it->empty && weight2d) {
            l.findings << AuditKind::PrecisionMismatch;
            result.findings.push_back({AuditKind::PrecisionMismatch, AuditSeverity::Warning, l.name, training,
                QStringLiteral("stored as %1 for inference, but %2 holds FP8 state for %3 (%4): it trained in FP8 and "
                               "is served in higher precision, so inference differs from training")
                    .arg(l.dtype, file, l.training->module, it->recipe.section(QLatin1Char('.'), -1))});
        }
    }
}

// Rows [first, first + count) of the reference tensor that make one inference layer (a fused module's part
// is one or several ranges).
struct RowRange {
    int64_t first = 0;
    int64_t count = 0;
};

// The model's attention heads, for the rows of q, k and v in a fused linear_qkv (Megatron's layout: per
// query group, its query heads, then its key head, then its value head).
struct Heads {
    int64_t heads = 0;
    int64_t groups = 0;
    int64_t dim = 0;
};

Heads headsOf(const QJsonObject &config)
{
    Heads h;
    h.heads = config.value(QStringLiteral("num_attention_heads")).toInteger();
    h.groups = config.value(QStringLiteral("num_key_value_heads")).toInteger(h.heads);
    const int64_t hidden = config.value(QStringLiteral("hidden_size")).toInteger();
    h.dim = config.value(QStringLiteral("head_dim")).toInteger(h.heads > 0 ? hidden / h.heads : 0);
    return h;
}

std::vector<RowRange> partRows(const QString &part, int64_t fusedRows, int64_t rows, const Heads &heads, QString *why)
{
    if (part.isEmpty()) {
        if (fusedRows != rows) {
            *why = QStringLiteral("the reference has %1 rows, the layer %2").arg(fusedRows).arg(rows);
            return {};
        }
        return {{0, rows}};
    }
    if (part == QLatin1String("gate") || part == QLatin1String("up")) {
        if (fusedRows != 2 * rows) {
            *why = QStringLiteral("the fused reference has %1 rows, not twice the layer's %2").arg(fusedRows).arg(rows);
            return {};
        }
        return {{part == QLatin1String("gate") ? 0 : rows, rows}};
    }
    if (heads.heads <= 0 || heads.groups <= 0 || heads.dim <= 0 || heads.heads % heads.groups != 0) {
        *why = QStringLiteral("config.json does not give the attention heads that split linear_qkv");
        return {};
    }
    const int64_t perGroup = heads.heads / heads.groups;
    const int64_t stride = (perGroup + 2) * heads.dim;
    if (fusedRows != heads.groups * stride) {
        *why = QStringLiteral("the fused reference has %1 rows, not the %2 the heads give")
                   .arg(fusedRows)
                   .arg(heads.groups * stride);
        return {};
    }
    std::vector<RowRange> ranges;
    for (int64_t g = 0; g < heads.groups; ++g) {
        const int64_t base = g * stride;
        if (part == QLatin1String("q"))
            ranges.push_back({base, perGroup * heads.dim});
        else if (part == QLatin1String("k"))
            ranges.push_back({base + perGroup * heads.dim, heads.dim});
        else
            ranges.push_back({base + (perGroup + 1) * heads.dim, heads.dim});
    }
    int64_t total = 0;
    for (const RowRange &r : ranges)
        total += r.count;
    if (total != rows) {
        *why = QStringLiteral("the %1 part of the reference has %2 rows, the layer %3").arg(part).arg(total).arg(rows);
        return {};
    }
    return ranges;
}

// What the audit of one quantized layer needs, resolved before the streaming.
struct LayerJob {
    size_t layer = 0;
    QString codesSpec;
    Format format = Format::E4M3;
    std::vector<float> scales; // decode scales, gridRows x gridCols
    int64_t blockRows = 1, blockCols = 1, gridCols = 1;
    QString refSpec; // empty: no reference
    std::vector<RowRange> refRows;
};

// Streams one quantized layer (and its reference) a band of rows at a time: the amaxes of the weight as
// dequantized both ways, and against the reference the error sums; the error of a fresh quantization of the
// reference under the same scales on rows spread evenly over it (about kFreshElements): an estimate of the
// denominator of the mismatch rule that spares the cast of every element.
bool streamLayer(const LayerJob &job, AuditLayer &layer, int64_t *bytes, Problem *problem)
{
    auto codes = openTensor(job.codesSpec, problem, QStringLiteral("none"));
    if (!codes)
        return false;
    std::unique_ptr<TensorReader> ref;
    if (!job.refSpec.isEmpty()) {
        ref = openTensor(job.refSpec, problem);
        if (!ref)
            return false;
    }
    const int64_t rows = codes->info().rows;
    const int64_t cols = codes->info().cols;
    float table[256];
    for (int c = 0; c < 256; ++c)
        table[c] = fp8math::decodeCode(uint32_t(c), job.format);
    const uint8_t limit = job.format == Format::E5M2 ? 0x7C : 0x7F;
    const int64_t freshRows = std::max<int64_t>(1, kFreshElements / std::max<int64_t>(cols, 1));
    const int64_t freshStride = std::max<int64_t>(1, rows / freshRows);
    const bool e5m2 = job.format == Format::E5M2;
    const DType refType = ref ? ref->info().dtype : DType::F32;
    // Bands of about 64 KiB of codes: read into a buffer that stays in the L2 cache for the pass over it.
    const int64_t band = std::max<int64_t>(1, (int64_t(64) << 10) / std::max<int64_t>(cols, 1));
    std::vector<char> refRaw;
    std::vector<float> refValues, rowValues;
    std::vector<uint8_t> codeBytes;
    auditkernels::SegmentSums sums;
    double freshErrSq = 0, freshRefSq = 0;
    double amax = 0, invAmax = 0;
    std::vector<RowRange> ranges = job.refRows;
    if (ranges.empty())
        ranges.push_back({0, rows});
    int64_t row = 0;
    for (const RowRange &range : ranges) {
        for (int64_t off = 0; off < range.count; off += band) {
            const int64_t n = std::min(band, range.count - off);
            codeBytes.resize(size_t(n * cols));
            if (!codes->read(row * cols, n * cols, codeBytes.data(), problem))
                return false;
            *bytes += n * cols;
            if (ref) {
                refRaw.resize(size_t(n * cols) * size_t(dtypeSize(refType)));
                if (!ref->read((range.first + off) * cols, n * cols, refRaw.data(), problem))
                    return false;
                *bytes += int64_t(refRaw.size());
                if (refType != DType::F32 && refType != DType::BF16) {
                    refValues.resize(size_t(n * cols));
                    widenToFloat(refRaw.data(), refType, size_t(n * cols), refValues.data());
                }
            }
            for (int64_t r = 0; r < n; ++r) {
                const int64_t at = row + r;
                const float *scaleRow = job.scales.data() + (at / job.blockRows) * job.gridCols;
                const uint8_t *c = codeBytes.data() + r * cols;
                if (!ref) {
                    for (int64_t k0 = 0; k0 < cols; k0 += job.blockCols) {
                        const int64_t len = std::min(job.blockCols, cols - k0);
                        const double v = table[auditkernels::maxMagnitudeCode(c + k0, len, limit)];
                        const double scale = scaleRow[k0 / job.blockCols];
                        amax = std::max(amax, v * scale);
                        invAmax = std::max(invAmax, v / scale);
                    }
                    continue;
                }
                // The reference as stored (float32, bfloat16) or widened to float32 (the other dtypes).
                const char *refRow = refRaw.data() + size_t(r * cols) * size_t(dtypeSize(refType));
                const float *x
                    = refValues.empty() ? reinterpret_cast<const float *>(refRow) : refValues.data() + r * cols;
                const bool fresh = at % freshStride == 0;
                if (fresh && refType == DType::BF16) {
                    rowValues.resize(size_t(cols));
                    widenToFloat(refRow, DType::BF16, size_t(cols), rowValues.data());
                    x = rowValues.data();
                }
                for (int64_t k0 = 0; k0 < cols; k0 += job.blockCols) {
                    const int64_t len = std::min(job.blockCols, cols - k0);
                    const float scale = scaleRow[k0 / job.blockCols];
                    if (refType == DType::BF16)
                        auditkernels::addSegment(c + k0, e5m2, reinterpret_cast<const uint16_t *>(refRow) + k0, len,
                            scale, 1.0f / scale, sums);
                    else
                        auditkernels::addSegment(c + k0, e5m2, x + k0, len, scale, 1.0f / scale, sums);
                    if (!fresh)
                        continue;
                    const float encode = 1.0f / scale;
                    for (int64_t k = k0; k < k0 + len; ++k) {
                        if (!(std::abs(x[k]) <= FLT_MAX))
                            continue;
                        const uint32_t code = fp8math::castToCode(x[k] * encode, job.format);
                        const double f = double(fp8math::decodeCode(code, job.format)) * scale;
                        freshErrSq += (f - x[k]) * (f - x[k]);
                        freshRefSq += double(x[k]) * x[k];
                    }
                }
            }
            row += n;
        }
    }
    if (!ref) {
        layer.amax = amax;
        layer.invertedAmax = invAmax;
        return true;
    }
    layer.amax = sums.deqAmax;
    layer.invertedAmax = sums.invAmax;
    if (sums.refSq > 0) {
        layer.reference = job.refSpec;
        layer.relError = std::sqrt(sums.errSq / sums.refSq);
        layer.invertedRelError = std::sqrt(sums.invErrSq / sums.refSq);
        layer.freshRelError = freshRefSq > 0 ? std::sqrt(freshErrSq / freshRefSq) : 0.0;
        layer.cosine = sums.deqSq > 0 ? sums.dot / std::sqrt(sums.deqSq * sums.refSq) : 0.0;
        layer.referenceAmax = sums.refAmax;
    }
    return true;
}

QString number(double v)
{
    return QString::number(v, 'g', 3);
}

QString percent(double v)
{
    return QString::number(100.0 * v, 'g', 3) + QLatin1String(" %");
}

// The rules over a streamed layer (docs/TRIAGE.md).
void judgeStreamed(AuditLayer &l, std::vector<AuditFinding> &findings, const AuditThresholds &t)
{
    const QString training = l.training ? l.training->text() : QString();
    const QString scale = l.scaleName.isEmpty() ? QStringLiteral("the scale") : l.scaleName;
    if (!l.reference.isEmpty() && !std::isnan(l.relError)) {
        if (l.relError > t.grossError && l.invertedRelError * t.invertedGain < l.relError) {
            l.findings << AuditKind::InvertedScale;
            findings.push_back({AuditKind::InvertedScale, AuditSeverity::Critical, l.name, training,
                QStringLiteral("dequantized as codes x %1, the weight's amax is %2 against the reference's %3, a "
                               "factor of %4 (the scale squared is %5); codes / %1 is %6 off the reference, what "
                               "quantization explains: %1 holds the encode scale (Transformer Engine's scale) where "
                               "the decode scale (scale_inv) belongs")
                    .arg(scale, number(l.amax), number(l.referenceAmax), number(l.amax / l.referenceAmax),
                        number(l.scaleMax * l.scaleMax), percent(l.invertedRelError))});
            return;
        }
        const double explained = std::max(l.freshRelError, 1e-6);
        if (l.relError > t.mismatchFactor * explained) {
            l.findings << AuditKind::WeightMismatch;
            findings.push_back({AuditKind::WeightMismatch,
                l.relError > 0.2 ? AuditSeverity::Critical : AuditSeverity::Warning, l.name, training,
                QStringLiteral("the dequantized weight is %1 off the reference %2 (cosine %3), %4 times the %5 a "
                               "fresh quantization of the reference under the same scales gives: not the weights "
                               "the reference holds (a stale or another checkpoint)")
                    .arg(percent(l.relError), l.reference, QString::number(l.cosine, 'f', 4),
                        number(l.relError / explained), percent(l.freshRelError))});
        }
        return;
    }
    // No reference: the magnitudes alone.
    const double lo = std::exp2(t.plausibleLog2Min);
    const double hi = std::exp2(t.plausibleLog2Max);
    const auto plausible = [&](double a) { return a >= lo && a <= hi; };
    if (l.amax > 0 && l.invertedAmax > 0 && !plausible(l.amax) && plausible(l.invertedAmax)
        && std::abs(std::log2(l.amax) - std::log2(l.invertedAmax)) >= t.invertedLog2Gap) {
        l.findings << AuditKind::InvertedScale;
        findings.push_back({AuditKind::InvertedScale, AuditSeverity::Warning, l.name, training,
            QStringLiteral("the weight dequantized as codes x %1 reaches %2, outside what weights hold (%3 to %4); "
                           "codes / %1 reaches %5: %1 looks like the encode scale (no reference to confirm it)")
                .arg(scale, number(l.amax), number(lo), number(hi), number(l.invertedAmax))});
    }
}

bool badValue(float v)
{
    return !std::isfinite(v) || !(v > 0.0f);
}

// Most severe first, then in the order found (stable).
void sortFindings(AuditResult &result)
{
    std::stable_sort(result.findings.begin(), result.findings.end(), [](const AuditFinding &a, const AuditFinding &b) {
        return (a.severity == AuditSeverity::Critical) > (b.severity == AuditSeverity::Critical);
    });
}

} // namespace

bool QuantConfig::ignores(const QString &module) const
{
    for (const QString &pattern : ignore) {
        if (pattern.startsWith(QLatin1String("re:"))) {
            const QRegularExpression re(QRegularExpression::anchoredPattern(pattern.mid(3)));
            if (re.isValid() && re.match(module).hasMatch())
                return true;
        } else if (pattern.contains(QLatin1Char('*')) || pattern.contains(QLatin1Char('?'))) {
            const QRegularExpression re(QRegularExpression::wildcardToRegularExpression(
                pattern, QRegularExpression::UnanchoredWildcardConversion));
            if (QRegularExpression(QRegularExpression::anchoredPattern(re.pattern())).match(module).hasMatch())
                return true;
        } else if (module == pattern || module.endsWith(QLatin1Char('.') + pattern)) {
            return true;
        }
    }
    return false;
}

std::optional<AuditResult> auditCheckpoint(
    const QString &path, const AuditOptions &options, Problem *problem, const std::function<void(int, int)> &progress)
{
    AuditResult result;
    result.checkpoint = path;
    result.thresholds = options.thresholds;
    const QString dir = QFileInfo(path).isDir() ? path : QFileInfo(path).absolutePath();
    result.files = shardsOf(path, &result.problems);
    if (result.files.isEmpty()) {
        *problem = {path, -1, QStringLiteral("no safetensors file to audit")};
        return std::nullopt;
    }
    Problem configProblem;
    const QJsonObject modelConfig = readJsonObject(QDir(dir).filePath(QStringLiteral("config.json")), &configProblem);
    if (!configProblem.message.isEmpty())
        result.problems.push_back(configProblem);
    result.config = readQuantConfig(dir, modelConfig, &result.problems);
    const Heads heads = headsOf(modelConfig);

    // Every tensor of every shard.
    QHash<QString, Located> tensors;
    for (const QString &file : std::as_const(result.files)) {
        std::vector<SafetensorsEntry> entries;
        qint64 dataStart = 0;
        Problem p;
        if (!SafetensorsReader::entries(file, &entries, &dataStart, &p)) {
            if (result.files.size() == 1) {
                *problem = p;
                return std::nullopt;
            }
            result.problems.push_back(p);
            continue;
        }
        for (SafetensorsEntry &e : entries) {
            const QString name = e.name;
            tensors.insert(name, {file, std::move(e)});
        }
    }

    QHash<QString, TrainingName> mapping;
    if (!options.mappingFile.isEmpty()) {
        Problem p;
        if (!readNameMapping(options.mappingFile, &mapping, &p)) {
            *problem = p;
            return std::nullopt;
        }
    }

    RefIndex refs;
    for (const QString &r : options.references)
        indexReference(r, &refs, &result.references, &result.problems);

    // The layers: 2-D weights, in name order.
    QStringList weightNames;
    for (auto it = tensors.cbegin(); it != tensors.cend(); ++it) {
        if (it.key().endsWith(QLatin1String(".weight")) && it->entry.shape.size() >= 2)
            weightNames << it.key();
    }
    // The model's order: layer numbers as numbers (the table, the JSON and the plot list the layers so).
    std::sort(weightNames.begin(), weightNames.end(), layerLess);
    bool gated = false;
    for (const QString &w : std::as_const(weightNames))
        gated = gated || w.contains(QLatin1String("gate_proj")) || w.contains(QLatin1String(".w1."));

    std::vector<LayerJob> jobs;
    const auto entryOf = [&](const QString &name) -> const Located * {
        const auto it = tensors.constFind(name);
        return it == tensors.cend() ? nullptr : &*it;
    };
    const auto readSmall = [&](const Located &t, int64_t limit, std::vector<float> *values, Problem *p) {
        auto reader = openTensor(t.file + QLatin1Char(':') + t.entry.name, p, QStringLiteral("none"));
        return reader && readDecodeScales(*reader, limit, values, p);
    };
    for (const QString &weightName : std::as_const(weightNames)) {
        const Located &w = *entryOf(weightName);
        AuditLayer l;
        l.name = weightName.chopped(int(qstrlen(".weight")));
        l.file = w.file;
        l.dtype = w.entry.dtypeName;
        l.shape = w.entry.shape;
        l.quantized = isFp8Dtype(w.entry.dtypeName);
        if (const auto it = mapping.constFind(l.name); it != mapping.cend())
            l.training = *it;
        else
            l.training = trainingNameOf(l.name, gated);
        const QString training = l.training ? l.training->text() : QString();
        const auto add = [&](AuditKind kind, AuditSeverity severity, const QString &evidence) {
            l.findings << kind;
            result.findings.push_back({kind, severity, l.name, training, evidence});
        };
        int64_t rows = 1;
        for (size_t i = 0; i + 1 < l.shape.size(); ++i)
            rows *= l.shape[i];
        const int64_t cols = l.shape.back();

        // Inference precision against the config.
        const bool excluded = result.config.ignores(l.name);
        if (l.quantized && excluded)
            add(AuditKind::PrecisionMismatch, AuditSeverity::Warning,
                QStringLiteral("stored as %1 though %2 excludes the module from quantization: the layer that trained "
                               "(and was meant to run) in higher precision is quantized anyway")
                    .arg(l.dtype, QFileInfo(result.config.source).fileName()));

        // The input (activation) scale and the KV cache's.
        if (const Located *in = entryOf(l.name + QStringLiteral(".input_scale"))) {
            std::vector<float> v;
            Problem p;
            if (!readSmall(*in, 1, &v, &p)) {
                add(AuditKind::InvalidScale, AuditSeverity::Critical, QStringLiteral("input_scale: %1").arg(p.message));
            } else if (v.size() == 1 && badValue(v[0])) {
                add(AuditKind::InvalidScale, AuditSeverity::Critical,
                    QStringLiteral("input_scale is %1").arg(double(v[0])));
            } else if (v.size() == 1) {
                l.inputScale = v[0];
            }
        } else if (l.quantized && result.config.staticActivations.value_or(false) && !excluded) {
            add(AuditKind::MissingScale, AuditSeverity::Critical,
                QStringLiteral("%1 says activations are quantized with static scales, and the layer has no "
                               "input_scale: inference would run with 1.0")
                    .arg(QFileInfo(result.config.source).fileName()));
        }
        for (const char *kv : {"k_scale", "v_scale"}) {
            const QString name = l.name + QLatin1Char('.') + QLatin1String(kv);
            if (const Located *t = entryOf(name)) {
                std::vector<float> v;
                Problem p;
                if (!readSmall(*t, 1, &v, &p) || (v.size() == 1 && badValue(v[0])))
                    add(AuditKind::InvalidScale, AuditSeverity::Critical,
                        QStringLiteral("%1 is %2")
                            .arg(QLatin1String(kv),
                                p.message.isEmpty() ? QString::number(double(v.empty() ? NAN : v[0])) : p.message));
            }
        }

        if (!l.quantized) {
            result.layers.push_back(std::move(l));
            continue;
        }
        const Located *scale = nullptr;
        for (const char *suffix : {".weight_scale_inv", ".weight_scale"}) {
            if ((scale = entryOf(l.name + QLatin1String(suffix)))) {
                l.scaleName = QLatin1String(suffix + 1);
                break;
            }
        }
        if (!scale) {
            add(AuditKind::MissingScale, AuditSeverity::Critical,
                QStringLiteral("a %1 weight %2 without weight_scale or weight_scale_inv beside it: read with a scale "
                               "of 1.0, its values are the raw codes (up to %3)")
                    .arg(l.dtype, QStringLiteral("[%1, %2]").arg(rows).arg(cols),
                        l.dtype == QLatin1String("F8_E4M3") ? QStringLiteral("448") : QStringLiteral("57344")));
            result.layers.push_back(std::move(l));
            continue;
        }
        std::vector<float> values;
        Problem p;
        if (!readSmall(*scale, rows * cols, &values, &p)) {
            add(AuditKind::InvalidScale, AuditSeverity::Critical, QStringLiteral("%1: %2").arg(l.scaleName, p.message));
            result.layers.push_back(std::move(l));
            continue;
        }
        // The grid: one value, one per row ([rows] or [rows, 1]), or a 2-D grid of blocks.
        int64_t gridRows = 1, gridCols = 1;
        const std::vector<int64_t> &dims = scale->entry.shape;
        if (values.size() == 1) {
        } else if ((dims.size() == 1 && dims[0] == rows) || (dims.size() == 2 && dims[0] == rows && dims[1] == 1)) {
            gridRows = rows;
        } else if (dims.size() == 2) {
            gridRows = dims[0];
            gridCols = dims[1];
        } else {
            gridRows = -1;
        }
        const auto block = gridRows > 0 ? scaleBlockShape(rows, cols, gridRows, gridCols) : std::nullopt;
        if (!block) {
            add(AuditKind::InvalidScale, AuditSeverity::Critical,
                QStringLiteral("%1 has shape [%2], which fits no layout on the [%3, %4] weight (one value, one per "
                               "row, or a grid of blocks)")
                    .arg(l.scaleName,
                        [&] {
                            QStringList s;
                            for (int64_t d : dims)
                                s << QString::number(d);
                            return s.join(QStringLiteral(", "));
                        }())
                    .arg(rows)
                    .arg(cols));
            result.layers.push_back(std::move(l));
            continue;
        }
        Fp8DecodeScale shape;
        shape.blockRows = block->first;
        shape.blockCols = block->second;
        shape.gridRows = gridRows;
        shape.gridCols = gridCols;
        l.scaleLayout = shape.shapeText(rows, cols);
        // The layout the config states.
        const QString &strategy = result.config.weightStrategy;
        const bool perTensor = values.size() == 1;
        const bool perRow = !perTensor && gridCols == 1 && block->first == 1;
        QString stated;
        if (strategy == QLatin1String("tensor") && !perTensor)
            stated = QStringLiteral("one scale per tensor");
        else if (strategy == QLatin1String("channel") && !perRow)
            stated = QStringLiteral("one scale per output channel");
        else if (strategy == QLatin1String("block") && result.config.blockRows > 0
            && (block->first != result.config.blockRows || block->second != result.config.blockCols))
            stated = QStringLiteral("%1x%2 blocks").arg(result.config.blockRows).arg(result.config.blockCols);
        if (!stated.isEmpty())
            add(AuditKind::InvalidScale, AuditSeverity::Critical,
                QStringLiteral("%1 is laid out as %2, but %3 states %4: a loader would read the scales on the wrong "
                               "grid")
                    .arg(l.scaleName, l.scaleLayout, QFileInfo(result.config.source).fileName(), stated));
        int bad = 0;
        double lo = INFINITY, hi = 0;
        for (float v : values) {
            if (badValue(v)) {
                ++bad;
                continue;
            }
            lo = std::min(lo, double(v));
            hi = std::max(hi, double(v));
        }
        if (hi > 0) {
            l.scaleMin = lo;
            l.scaleMax = hi;
        }
        if (bad > 0) {
            add(AuditKind::InvalidScale, AuditSeverity::Critical,
                QStringLiteral("%1 of the %2 values of %3 are not finite and positive (the first: %4)")
                    .arg(bad)
                    .arg(values.size())
                    .arg(l.scaleName)
                    .arg(double(*std::find_if(values.begin(), values.end(), badValue))));
            result.layers.push_back(std::move(l));
            continue;
        }
        LayerJob job;
        job.layer = result.layers.size();
        job.codesSpec = w.file + QLatin1Char(':') + weightName;
        job.format = l.dtype == QLatin1String("F8_E5M2") ? Format::E5M2 : Format::E4M3;
        job.scales = std::move(values);
        job.blockRows = block->first;
        job.blockCols = block->second;
        job.gridCols = gridCols;
        // The reference: the same name, else the training module (its part of a fused one).
        if (!refs.specs.isEmpty()) {
            QString refName = weightName;
            QString part;
            if (!refs.specs.contains(refName) && l.training) {
                for (const QString &prefix : {QString(), QStringLiteral("module."), QStringLiteral("model.")}) {
                    if (refs.specs.contains(prefix + l.training->module + QStringLiteral(".weight"))) {
                        refName = prefix + l.training->module + QStringLiteral(".weight");
                        part = l.training->part;
                        break;
                    }
                }
            }
            if (const auto it = refs.specs.constFind(refName); it != refs.specs.cend()) {
                Problem rp;
                auto reader = openTensor(*it, &rp);
                QString why;
                if (!reader) {
                    result.problems.push_back(rp);
                } else if (reader->info().cols != cols) {
                    add(AuditKind::WeightMismatch, AuditSeverity::Critical,
                        QStringLiteral("the reference %1 has %2 columns, the layer %3")
                            .arg(*it)
                            .arg(reader->info().cols)
                            .arg(cols));
                } else if (auto ranges = partRows(part, reader->info().rows, rows, heads, &why); !ranges.empty()) {
                    job.refSpec = *it;
                    job.refRows = std::move(ranges);
                } else {
                    add(AuditKind::WeightMismatch, AuditSeverity::Critical,
                        QStringLiteral("against %1: %2").arg(*it, why));
                }
            } else {
                result.unmatched << l.name;
            }
        }
        if (!l.training)
            result.unmapped << l.name;
        jobs.push_back(std::move(job));
        result.layers.push_back(std::move(l));
    }

    // Stream the weights, a layer to a thread.
    std::atomic<size_t> next {0};
    std::atomic<int> done {0};
    std::atomic<int64_t> bytes {0};
    std::mutex mutex;
    std::vector<std::pair<size_t, Problem>> failures;
    const int threads = std::max(1,
        std::min<int>(
            int(jobs.size()), options.threads > 0 ? options.threads : int(std::thread::hardware_concurrency())));
    const auto work = [&] {
        for (size_t i = next++; i < jobs.size(); i = next++) {
            Problem p;
            int64_t read = 0;
            AuditLayer &layer = result.layers[jobs[i].layer];
            if (!streamLayer(jobs[i], layer, &read, &p)) {
                const std::lock_guard lock(mutex);
                failures.push_back({jobs[i].layer, p});
            }
            bytes += read;
            const int n = ++done;
            if (progress) {
                const std::lock_guard lock(mutex);
                progress(n, int(jobs.size()));
            }
        }
    };
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (std::thread &t : pool)
        t.join();
    result.bytesRead = bytes;
    std::sort(failures.begin(), failures.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    for (const auto &[layer, p] : failures)
        result.problems.push_back(p);
    for (const LayerJob &job : jobs) {
        judgeStreamed(result.layers[job.layer], result.findings, result.thresholds);
    }
    applyTrainingState(result, refs);
    const bool historyAmax = std::any_of(
        result.layers.begin(), result.layers.end(), [](const AuditLayer &l) { return l.checkpointActivationAmax > 0; });
    if (!options.activationAmax.isEmpty() || historyAmax)
        checkCalibration(result, options.activationAmax, options.activationSource);
    else
        sortFindings(result);
    return result;
}

double AuditLayer::activationOverRange() const
{
    if (!inputScale || !(*inputScale > 0) || !(trainingActivationAmax > 0))
        return NAN;
    return trainingActivationAmax / (*inputScale * double(fp8math::formatSpec(Format::E4M3).maxFinite));
}

double AuditLayer::leastActivationOverRange() const
{
    if (!inputScale || !(*inputScale > 0) || !(trainingActivationLeast > 0))
        return NAN;
    return trainingActivationLeast / (*inputScale * double(fp8math::formatSpec(Format::E4M3).maxFinite));
}

void checkCalibration(AuditResult &result, const QHash<QString, ActivationAmax> &activationAmax, const QString &source)
{
    const AuditThresholds &t = result.thresholds;
    const double fmax = double(fp8math::formatSpec(Format::E4M3).maxFinite);
    // Applied again (the triage applies it to an audit that may have applied it with a checkpoint's history): what
    // an earlier pass found is taken back first.
    std::erase_if(result.findings, [](const AuditFinding &f) { return f.kind == AuditKind::CalibrationMismatch; });
    for (AuditLayer &l : result.layers) {
        l.findings.removeAll(AuditKind::CalibrationMismatch);
        if (!l.inputScale || !l.training)
            continue;
        // The amax: the statistics' over the run's last tenth, else the dump's, else the training checkpoint's
        // amax history of the module's input.
        QString from = source;
        const auto it = activationAmax.constFind(l.training->module);
        if (it != activationAmax.cend() && it->largest > 0) {
            l.trainingActivationAmax = it->largest;
            l.trainingActivationLeast = it->least > 0 ? std::min(it->least, it->largest) : it->largest;
            l.trainingActivationSteps = std::max(1, it->steps);
        } else if (l.dumpAmax > 0) {
            l.trainingActivationAmax = l.trainingActivationLeast = l.dumpAmax;
            l.trainingActivationSteps = 1;
            from = QStringLiteral("the activation dump of step %1").arg(l.calibrationStep);
        } else if (l.checkpointActivationAmax > 0) {
            l.trainingActivationAmax = l.trainingActivationLeast = l.checkpointActivationAmax;
            l.trainingActivationSteps = 1;
            from = QStringLiteral("the largest input amax of the training checkpoint's delayed-scaling history");
        } else {
            continue;
        }
        const double range = *l.inputScale * fmax;
        const double ratio = l.activationOverRange();
        const double leastRatio = l.leastActivationOverRange();
        const bool measured = !std::isnan(l.dumpFlushedPct);
        // Above the range by more than the scale's storage and the printed amax can tell apart.
        const bool beyond
            = l.trainingActivationLeast > range * (1 + t.calibrationRelTolerance) + t.calibrationPrintedTolerance;
        const bool saturates = beyond && (!measured || l.dumpSaturatedPct >= t.calibrationSaturatedPct);
        // What the scale does to the run's own activations, where a dump has them.
        const QString onDump = measured
            ? QStringLiteral("; cast with it, the activation dump of step %1 (%2) saturates %3 and flushes %4 of its "
                             "elements to zero, where the run's own scaling (%5) flushed %6")
                  .arg(QString::number(l.calibrationStep), l.calibrationDump, percent(l.dumpSaturatedPct / 100),
                      percent(l.dumpFlushedPct / 100), l.calibrationRecipe, percent(l.dumpRecipeFlushedPct / 100))
            : QString();
        AuditSeverity severity = AuditSeverity::Warning;
        QString evidence;
        if (saturates) {
            severity = leastRatio > t.calibrationCritical
                    || (measured && l.dumpSaturatedPct >= t.calibrationSaturatedCriticalPct)
                ? AuditSeverity::Critical
                : AuditSeverity::Warning;
            const QString reached = l.trainingActivationSteps > 1
                ? QStringLiteral("every one of the last %1 logged steps of the training run reached above it (their "
                                 "activation amax from %2 to %3, %4): the least at %5 times the range, the largest "
                                 "at %6")
                      .arg(QString::number(l.trainingActivationSteps), number(l.trainingActivationLeast),
                          number(l.trainingActivationAmax), from, number(leastRatio), number(ratio))
                : QStringLiteral("the training run's activations reached %1 near its end (%2): %3 times the range")
                      .arg(number(l.trainingActivationAmax), from, number(ratio));
            evidence = QStringLiteral("input_scale %1 represents activations up to %2 (x %3); %4, so their largest "
                                      "values saturate (calibrated on other data, or on another checkpoint)%5")
                           .arg(number(*l.inputScale), number(range), number(fmax), reached, onDump);
        } else if (ratio <= 1.0
            && (measured ? l.dumpFlushedPct - l.dumpRecipeFlushedPct > t.calibrationFlushExcess
                         : ratio * t.calibrationUnused < 1.0)) {
            severity = AuditSeverity::Warning;
            evidence
                = QStringLiteral("input_scale %1 represents activations up to %2 (x %3), %4 times what the "
                                 "training run's activations reached near its end (%5, %6): the range is spent "
                                 "above them, and activations below %7 flush to zero%8")
                      .arg(number(*l.inputScale), number(range), number(fmax), number(1.0 / ratio),
                          number(l.trainingActivationAmax), from,
                          number(*l.inputScale * double(fp8math::formatSpec(Format::E4M3).minSubnormal) / 2), onDump);
        } else {
            continue;
        }
        l.findings << AuditKind::CalibrationMismatch;
        result.findings.push_back({AuditKind::CalibrationMismatch, severity, l.name, l.training->text(), evidence});
    }
    sortFindings(result);
}

Bf16Layers bf16TrainedLayers(const std::vector<std::pair<QString, QString>> &config)
{
    // The last component of a key, without its dashes, '-' as '_': "MODEL_ARGS.--num-layers" -> "num_layers".
    QHash<QString, QString> values;
    for (const auto &[key, value] : config) {
        QString k = key.section(QLatin1Char('.'), -1);
        while (k.startsWith(QLatin1Char('-')))
            k.remove(0, 1);
        values.insert(k.replace(QLatin1Char('-'), QLatin1Char('_')).toLower(), value.trimmed());
    }
    const QString on = values.value(QStringLiteral("first_last_layers_bf16")).toLower();
    if (on != QLatin1String("true") && on != QLatin1String("1"))
        return {};
    bool ok = false;
    const int layers = values.value(QStringLiteral("num_layers")).toInt(&ok);
    if (!ok || layers <= 0)
        return {};
    const auto count = [&](const char *key) {
        bool given = false;
        const int n = values.value(QLatin1String(key)).toInt(&given);
        return given ? std::clamp(n, 0, layers) : 1;
    };
    const int start = count("num_layers_at_start_in_bf16");
    const int end = count("num_layers_at_end_in_bf16");
    Bf16Layers b;
    for (int i = 0; i < layers; ++i) {
        if (i < start || i >= layers - end)
            b.layers.push_back(i);
    }
    b.source = QStringLiteral("--first-last-layers-bf16: the first %1 and the last %2 of %3 layers")
                   .arg(start)
                   .arg(end)
                   .arg(layers);
    return b;
}

void checkTrainingPrecision(AuditResult &result, const Bf16Layers &bf16)
{
    if (bf16.layers.empty())
        return;
    static const QRegularExpression index(QStringLiteral(R"(^decoder\.layers\.(\d+)\.)"));
    for (AuditLayer &l : result.layers) {
        if (!l.quantized || !l.training)
            continue;
        const QRegularExpressionMatch m = index.match(l.training->module);
        if (!m.hasMatch() || !std::binary_search(bf16.layers.begin(), bf16.layers.end(), m.captured(1).toInt())
            || l.findings.contains(AuditKind::PrecisionMismatch)) // said already (its checkpoint's state)
            continue;
        l.findings << AuditKind::PrecisionMismatch;
        result.findings.push_back({AuditKind::PrecisionMismatch, AuditSeverity::Warning, l.name, l.training->text(),
            QStringLiteral("stored as %1 for inference, but its layer trained in BF16 (%2): FP8 inference of a layer "
                           "that never saw FP8 in training")
                .arg(l.dtype, bf16.source)});
    }
    sortFindings(result);
}

std::vector<const AuditLayer *> auditRows(const AuditResult &result)
{
    std::vector<const AuditLayer *> rows;
    for (const AuditLayer &l : result.layers) {
        if (l.quantized || !l.findings.isEmpty())
            rows.push_back(&l);
    }
    std::stable_partition(rows.begin(), rows.end(), [](const AuditLayer *l) { return !l->findings.isEmpty(); });
    return rows;
}

QString auditFilesStamp(const QString &checkpoint, const QStringList &references)
{
    QString stamp;
    for (const QString &path : QStringList {checkpoint} + references) {
        const QFileInfo info(path);
        const QFileInfoList files
            = info.isDir() ? QDir(path).entryInfoList(QDir::Files, QDir::Name) : QFileInfoList {info};
        stamp += path + QLatin1Char('|');
        for (const QFileInfo &f : files)
            stamp += QStringLiteral("%1:%2:%3;")
                         .arg(f.fileName())
                         .arg(f.size())
                         .arg(f.lastModified().toMSecsSinceEpoch());
    }
    return stamp;
}

QString auditKindName(AuditKind kind)
{
    switch (kind) {
    case AuditKind::MissingScale: return QStringLiteral("missing-scale");
    case AuditKind::InvalidScale: return QStringLiteral("invalid-scale");
    case AuditKind::InvertedScale: return QStringLiteral("inverted-scale");
    case AuditKind::WeightMismatch: return QStringLiteral("weight-mismatch");
    case AuditKind::CalibrationMismatch: return QStringLiteral("calibration-mismatch");
    case AuditKind::PrecisionMismatch: return QStringLiteral("precision-mismatch");
    }
    return {};
}

QString AuditLayer::status() const
{
    QStringList names;
    for (AuditKind k : findings)
        names << auditKindName(k);
    return names.isEmpty() ? QStringLiteral("ok") : names.join(QLatin1Char(','));
}

QString auditSeverityName(AuditSeverity severity)
{
    return severity == AuditSeverity::Critical ? QStringLiteral("critical") : QStringLiteral("warning");
}

QString AuditThresholds::text() const
{
    QStringList out;
    for (double v : {grossError, invertedGain, mismatchFactor, calibrationRelTolerance, calibrationPrintedTolerance,
             calibrationSaturatedPct, calibrationSaturatedCriticalPct, calibrationCritical, calibrationUnused,
             calibrationFlushExcess, plausibleLog2Min, plausibleLog2Max, invertedLog2Gap})
        out << QString::number(v, 'g', 17);
    return out.join(QLatin1Char(','));
}

std::optional<AuditResult> cachedAudit(
    const QString &checkpoint, const QStringList &references, Problem *problem, const AuditThresholds &thresholds)
{
    // The stamp: every file of the checkpoint's folder and of each reference with its size and time, and the
    // thresholds judged by.
    const QString stamp = auditFilesStamp(checkpoint, references) + QLatin1Char('|') + thresholds.text();
    static std::mutex mutex;
    static QHash<QString, std::pair<QString, AuditResult>> cache;
    {
        const std::lock_guard lock(mutex);
        if (const auto it = cache.constFind(checkpoint); it != cache.cend() && it->first == stamp)
            return it->second;
    }
    AuditOptions options;
    options.references = references;
    options.thresholds = thresholds;
    std::optional<AuditResult> result = auditCheckpoint(checkpoint, options, problem);
    if (result) {
        const std::lock_guard lock(mutex);
        if (cache.size() >= 8)
            cache.clear();
        cache.insert(checkpoint, {stamp, *result});
    }
    return result;
}

namespace {

// The model folders of one kind at most two levels below the run folder.
QStringList modelFoldersBelow(const QDir &run, ModelFolder kind)
{
    const auto isKind
        = [kind](const QDir &d) { return modelFolderKind(d.absolutePath(), d.entryList(QDir::Files)) == kind; };
    QStringList found;
    for (const QString &sub : run.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        const QDir d(run.filePath(sub));
        if (isKind(d)) {
            found << d.absolutePath();
            continue;
        }
        for (const QString &subsub : d.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
            if (isKind(QDir(d.filePath(subsub))))
                found << QDir(d.filePath(subsub)).absolutePath();
        }
    }
    return found;
}

} // namespace

QString findInferenceCheckpoint(const QString &runFolder, const QString &named)
{
    const QDir run(runFolder);
    if (!named.isEmpty())
        return QDir::cleanPath(run.absoluteFilePath(named));
    const QStringList found = modelFoldersBelow(run, ModelFolder::Quantized);
    return found.size() == 1 ? found.front() : QString();
}

QStringList findInferenceReferences(const QString &runFolder, const QStringList &named)
{
    const QDir run(runFolder);
    QStringList paths = named;
    paths.removeAll(QString());
    if (!paths.isEmpty()) {
        for (QString &p : paths)
            p = QDir::cleanPath(run.absoluteFilePath(p));
        return paths;
    }
    const QStringList found = modelFoldersBelow(run, ModelFolder::Unquantized);
    return found.size() == 1 ? found : QStringList();
}

QJsonObject auditToJson(const AuditResult &r)
{
    const auto num = [](double v) { return std::isfinite(v) ? QJsonValue(v) : QJsonValue(QJsonValue::Null); };
    QJsonArray findings;
    for (const AuditFinding &f : r.findings) {
        QJsonObject o {{QStringLiteral("kind"), auditKindName(f.kind)},
            {QStringLiteral("severity"), auditSeverityName(f.severity)}, {QStringLiteral("layer"), f.layer},
            {QStringLiteral("evidence"), f.evidence}};
        o.insert(
            QStringLiteral("training_layer"), f.trainingLayer.isEmpty() ? QJsonValue() : QJsonValue(f.trainingLayer));
        findings.append(o);
    }
    QJsonArray layers;
    for (const AuditLayer &l : r.layers) {
        QJsonArray shape;
        for (int64_t d : l.shape)
            shape.append(qint64(d));
        QJsonObject o {{QStringLiteral("layer"), l.name}, {QStringLiteral("dtype"), l.dtype},
            {QStringLiteral("shape"), shape}, {QStringLiteral("quantized"), l.quantized},
            {QStringLiteral("status"), l.status()}, {QStringLiteral("file"), QFileInfo(l.file).fileName()}};
        o.insert(QStringLiteral("training_layer"), l.training ? QJsonValue(l.training->text()) : QJsonValue());
        if (l.quantized) {
            o.insert(QStringLiteral("scale_name"), l.scaleName);
            o.insert(QStringLiteral("scale_layout"), l.scaleLayout);
            o.insert(QStringLiteral("scale_min"), num(l.scaleMin));
            o.insert(QStringLiteral("scale_max"), num(l.scaleMax));
            o.insert(QStringLiteral("amax"), num(l.amax));
            o.insert(QStringLiteral("amax_if_divided"), num(l.invertedAmax));
        }
        if (l.inputScale)
            o.insert(QStringLiteral("input_scale"), *l.inputScale);
        if (std::isfinite(l.trainingActivationAmax)) {
            o.insert(QStringLiteral("training_activation_amax"), l.trainingActivationAmax);
            o.insert(QStringLiteral("training_activation_least"), l.trainingActivationLeast);
            o.insert(QStringLiteral("training_activation_steps"), l.trainingActivationSteps);
        }
        if (!l.trainingPrecision.isEmpty())
            o.insert(QStringLiteral("training_precision"), l.trainingPrecision);
        if (!std::isnan(l.dumpFlushedPct))
            o.insert(QStringLiteral("calibration_dump"),
                QJsonObject {{QStringLiteral("file"), l.calibrationDump},
                    {QStringLiteral("step"), qint64(l.calibrationStep)}, {QStringLiteral("amax"), num(l.dumpAmax)},
                    {QStringLiteral("saturated_pct"), num(l.dumpSaturatedPct)},
                    {QStringLiteral("flushed_pct"), num(l.dumpFlushedPct)},
                    {QStringLiteral("recipe"), l.calibrationRecipe},
                    {QStringLiteral("recipe_flushed_pct"), num(l.dumpRecipeFlushedPct)}});
        if (!l.reference.isEmpty()) {
            o.insert(QStringLiteral("reference"), l.reference);
            o.insert(QStringLiteral("relative_error"), num(l.relError));
            o.insert(QStringLiteral("relative_error_if_divided"), num(l.invertedRelError));
            o.insert(QStringLiteral("fresh_relative_error"), num(l.freshRelError));
            o.insert(QStringLiteral("cosine"), num(l.cosine));
            o.insert(QStringLiteral("reference_amax"), num(l.referenceAmax));
        }
        layers.append(o);
    }
    QJsonArray problems;
    for (const Problem &p : r.problems)
        problems.append(p.toString());
    QJsonObject config {{QStringLiteral("method"), r.config.method},
        {QStringLiteral("weights"), r.config.weightStrategy},
        {QStringLiteral("ignore"), QJsonArray::fromStringList(r.config.ignore)},
        {QStringLiteral("source"), r.config.source}};
    if (r.config.staticActivations)
        config.insert(QStringLiteral("static_activations"), *r.config.staticActivations);
    return {{QStringLiteral("checkpoint"), r.checkpoint}, {QStringLiteral("config"), config},
        {QStringLiteral("files"), QJsonArray::fromStringList(r.files)},
        {QStringLiteral("references"), QJsonArray::fromStringList(r.references)},
        {QStringLiteral("findings"), findings}, {QStringLiteral("layers"), layers},
        {QStringLiteral("unmapped"), QJsonArray::fromStringList(r.unmapped)},
        {QStringLiteral("unmatched"), QJsonArray::fromStringList(r.unmatched)}, {QStringLiteral("problems"), problems}};
}

} // namespace fp8scope
