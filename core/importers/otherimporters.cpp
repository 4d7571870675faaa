#include "otherimporters.h"

#include "configlimits.h"
#include "jsonimporters.h"

#include "core/tensors/dumplayout.h"
#include "core/tensors/dumpnames.h"
#include "core/tensors/fp8decode.h"
#include "core/tensors/jaxdump.h"
#include "core/tensors/tensorreader.h"
#include "core/tensors/torchfile.h"

#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace fp8scope {

namespace {

void flattenYaml(const QString &prefix, const YAML::Node &n, IngestSink &sink, ConfigBudget &budget, int depth)
{
    if (budget.tooManyKeys)
        return;
    if (depth > kMaxConfigDepth) {
        budget.tooDeep = true;
        return;
    }
    switch (n.Type()) {
    case YAML::NodeType::Map:
        for (const auto &kv : n) {
            if (budget.tooManyKeys)
                return;
            flattenYaml((prefix.isEmpty() ? QString() : prefix + QLatin1Char('.'))
                    + QString::fromStdString(kv.first.as<std::string>()),
                kv.second, sink, budget, depth + 1);
        }
        break;
    case YAML::NodeType::Sequence:
        for (std::size_t i = 0; i < n.size() && !budget.tooManyKeys; ++i)
            flattenYaml(prefix + QStringLiteral("[%1]").arg(i), n[i], sink, budget, depth + 1);
        break;
    case YAML::NodeType::Scalar:
        if (budget.take())
            sink.config(prefix, QString::fromStdString(n.Scalar()));
        break;
    case YAML::NodeType::Null:
        if (budget.take())
            sink.config(prefix, QStringLiteral("null"));
        break;
    case YAML::NodeType::Undefined: break;
    }
}

} // namespace

int yamlNesting(const QByteArray &bytes)
{
    int depth = 0, deepest = 0;
    for (char c : bytes) {
        if (c == '[' || c == '{')
            deepest = std::max(deepest, ++depth);
        else if ((c == ']' || c == '}') && depth > 0)
            --depth;
    }
    std::vector<qsizetype> indents;
    for (qsizetype at = 0; at < bytes.size() && deepest <= kMaxConfigDepth;) {
        qsizetype lineEnd = bytes.indexOf('\n', at);
        if (lineEnd < 0)
            lineEnd = bytes.size();
        qsizetype i = at;
        while (i < lineEnd && (bytes[i] == ' ' || bytes[i] == '-'))
            ++i;
        if (i < lineEnd && bytes[i] != '#' && bytes[i] != '\r') {
            const qsizetype indent = i - at;
            while (!indents.empty() && indents.back() >= indent)
                indents.pop_back();
            indents.push_back(indent);
            deepest = std::max(deepest, int(indents.size()));
        }
        at = lineEnd + 1;
    }
    return deepest;
}

bool YamlConfigImporter::recognises(const QString &fileName, const QByteArray &) const
{
    return fileName.endsWith(QLatin1String(".yaml")) || fileName.endsWith(QLatin1String(".yml"));
}

ReadPosition YamlConfigImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    ReadPosition end {QFileInfo(path).size(), 0};
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        sink.problem(0, -1, QStringLiteral("cannot open: %1").arg(f.errorString()));
        return end;
    }
    // Read bounded: a name that is a symlink to /dev/zero or a pipe has no size and never ends.
    const QByteArray bytes = f.read(kMaxConfigBytes + 1);
    if (bytes.size() > kMaxConfigBytes) {
        sink.problem(0, -1, QStringLiteral("YAML file larger than %1 MiB; not read").arg(kMaxConfigBytes >> 20));
        return end;
    }
    const int deepest = yamlNesting(bytes);
    if (deepest > kMaxConfigDepth) {
        sink.problem(0, -1, QStringLiteral("YAML nested deeper than %1 levels; not read").arg(kMaxConfigDepth));
        return end;
    }
    try {
        const YAML::Node root = YAML::Load(bytes.toStdString());
        ConfigBudget budget;
        flattenYaml(QString(), root, sink, budget, 0);
        reportConfigBudget(budget, sink);
    } catch (const YAML::Exception &e) {
        sink.problem(e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? -1 : e.mark.pos,
            QStringLiteral("invalid YAML: %1").arg(QString::fromStdString(e.msg)));
    }
    return end;
}

bool TensorDumpImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    if (fileName.endsWith(QLatin1String(".h5")) || fileName.endsWith(QLatin1String(".hdf5")))
        return head.startsWith("\x89HDF\r\n\x1a\n");
    if (fileName.endsWith(QLatin1String(".npy")))
        return head.startsWith("\x93NUMPY");
    // .bin: a torch.save zip (pytorch_model.bin) or a Transformer Engine JAX inspect_array dump; not the
    // other binaries runs keep (Megatron's indexed datasets).
    if (fileName.endsWith(QLatin1String(".bin")))
        return head.startsWith("PK\x03\x04") || fileName.startsWith(QLatin1String("my_tensor_gpu"));
    return fileName.endsWith(QLatin1String(".safetensors")) || fileName.endsWith(QLatin1String(".pt"))
        || fileName.endsWith(QLatin1String(".pth"));
}

QStringList TensorDumpImporter::layerNames(const QString &logDir)
{
    const QString signature = inspectLogSignature(logDir);
    QMutexLocker lock(&m_mutex);
    auto found = m_layerNames.constFind(logDir);
    if (found == m_layerNames.constEnd() || found->first != signature)
        found = m_layerNames.insert(logDir, {signature, inspectLogLayerNames(logDir)});
    return found->second;
}

ReadPosition TensorDumpImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    ReadPosition end {QFileInfo(path).size(), 0};
    Problem problem;
    QStringList names;
    const bool torchFile = path.endsWith(QLatin1String(".pt")) || path.endsWith(QLatin1String(".pth"))
        || (path.endsWith(QLatin1String(".bin")) && !QFileInfo::exists(jaxMetaPath(path)));
    // A torch.save file is opened (its pickle interpreted) once: its entries say their dtype and shape.
    std::unique_ptr<TorchArchive> archive;
    if (torchFile) {
        archive = TorchArchive::open(path, &problem);
        if (archive) {
            for (const TorchEntry &e : archive->contents().tensors) {
                if (e.dtype)
                    names << e.name;
            }
            for (const TorchRefusal &r : archive->contents().refused)
                sink.problem(0, -1,
                    QStringLiteral("entry '%1' not read: %2")
                        .arg(r.name.isEmpty() ? QStringLiteral("(the whole file)") : r.name, r.why));
        }
    } else {
        names = listTensors(path, &problem);
    }
    if (!problem.message.isEmpty()) {
        sink.problem(0, problem.offset, problem.message);
        return end;
    }
    // DumpTensors: the layer and tensor from the file name, through the names the debug tool's log assigned;
    // the entries (high_precision, quantized) are what training had and what it quantized to.
    std::optional<ResolvedDumpName> teName;
    qint64 teIteration = -1;
    if (const auto te = torchFile ? parseTeDumpPath(path) : std::nullopt) {
        const QStringList layers = layerNames(te->logDir);
        teName = resolveDumpStem(te->stem, layers);
        teIteration = te->iteration;
        if (!teName->resolved)
            sink.problem(0, -1,
                layers.isEmpty()
                    ? QStringLiteral("no nvdlfw_inspect_logs beside tensor_dumps name the layers; '%1' is shown as "
                                     "the file name has it (dots became '_')")
                          .arg(teName->layer)
                    : QStringLiteral("'%1' is no layer the nvdlfw_inspect logs assign; shown as the file name has it "
                                     "(dots became '_')")
                          .arg(teName->layer));
    }
    static const QRegularExpression iterRe(QStringLiteral("iter(?:ation)?_?(\\d+)"));
    const auto fileIter = iterRe.match(QFileInfo(path).fileName());
    for (const QString &name : names) {
        // Decode scales beside an FP8 tensor belong to it; they are not a tensor to inspect.
        // (compressed-tensors keeps NVFP4 codes in NAME_packed, their scales in NAME_scale.)
        if (const QString owner = decodeScaleOwner(name);
            !owner.isEmpty() && (names.contains(owner) || names.contains(owner + QStringLiteral("_packed"))))
            continue;
        // So are a quantized checkpoint's activation scales, global scales and zero points.
        if (isQuantizationParameter(name))
            continue;
        // The stored dtype is indexed (FP8 codes stay codes here; recomputing reads their values).
        TensorInfo info;
        if (archive) {
            const auto &tensors = archive->contents().tensors;
            const auto e
                = std::find_if(tensors.begin(), tensors.end(), [&](const TorchEntry &t) { return t.name == name; });
            info.dtype = *e->dtype;
            info.shape = e->shape;
            finishTensorInfo(info);
        } else if (auto reader
            = openTensor(name.isEmpty() ? path : path + QLatin1Char(':') + name, &problem, QStringLiteral("none"))) {
            info = reader->info();
        } else {
            // HDF5 messages name the dataset already.
            sink.problem(0, problem.offset,
                problem.message.contains(name) ? problem.message : QStringLiteral("%1: %2").arg(name, problem.message));
            continue;
        }
        QStringList dims;
        for (int64_t d : info.shape)
            dims << QString::number(d);
        DumpRecord d;
        d.dataset = name;
        d.dtype = dtypeName(info.storedDtype);
        d.shape = dims.join(QLatin1Char('x'));
        QString error;
        if (teName) {
            d.step = teIteration;
            d.layer = teName->layer;
            const QString kind = teName->tensor.isEmpty() ? QStringLiteral("tensor") : teName->tensor;
            if (name == QLatin1String("high_precision"))
                d.tensor = kind;
            else if (name == QLatin1String("quantized"))
                d.tensor = kind + QStringLiteral("_fp8");
            else
                d.tensor = kind + QLatin1Char('.') + name;
        } else if (const auto p = parseDumpPath(name, &error)) {
            d.step = p->iteration;
            d.layer = p->layer;
            d.tensor = p->quantized ? p->tensorKind + QStringLiteral("_fp8") : p->tensorKind;
        } else {
            // safetensors/.npy: the tensor name is the layer; a step may sit in the file name.
            // (an inspect_array dump: its probe's name, from its metadata)
            const QString base = !name.isEmpty() ? name
                : !info.name.isEmpty()           ? info.name
                                                 : QFileInfo(path).completeBaseName();
            d.layer = base;
            for (const QString &kind :
                {QStringLiteral("weight"), QStringLiteral("bias"), QStringLiteral("weight_packed")}) {
                if (base.endsWith(QLatin1Char('.') + kind)) {
                    d.layer = base.left(base.size() - kind.size() - 1);
                    d.tensor = kind == QLatin1String("weight_packed") ? QStringLiteral("weight") : kind;
                }
            }
            // gpt-oss keeps an MXFP4 weight as NAME_blocks (its experts' stacked projections).
            if (info.storedDtype == DType::F4E2M1 && base.endsWith(QLatin1String("_blocks"))) {
                d.layer = base.chopped(7);
                d.tensor = QStringLiteral("weight");
            }
            d.step = fileIter.hasMatch() ? fileIter.captured(1).toLongLong() : -1;
        }
        sink.dump(d);
    }
    return end;
}

} // namespace fp8scope
