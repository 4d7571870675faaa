#include "jsonimporters.h"

#include "tableimporters.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <cmath>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace fp8scope {

namespace {

constexpr qint64 kMaxJson = qint64(256) << 20;

// Parses the whole file; reports a problem (with the byte offset of a syntax error) on failure.
bool loadJson(const QString &path, IngestSink &sink, QJsonDocument *doc, ReadPosition *end)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        sink.problem(0, -1, QStringLiteral("cannot open: %1").arg(f.errorString()));
        return false;
    }
    // Read bounded: a name that is a symlink to /dev/zero or a pipe has no size and never ends.
    const QByteArray bytes = f.read(kMaxJson + 1);
    if (bytes.size() > kMaxJson) {
        sink.problem(0, -1, QStringLiteral("JSON file larger than %1 MiB; not read").arg(kMaxJson >> 20));
        return false;
    }
    QJsonParseError err;
    *doc = QJsonDocument::fromJson(bytes, &err);
    end->offset = bytes.size();
    if (err.error != QJsonParseError::NoError) {
        // Qt may place an error at the end one byte past it.
        const qsizetype at = std::min<qsizetype>(err.offset, bytes.size());
        const int64_t line = 1 + bytes.left(at).count('\n');
        // An error with nothing but white space after it: the file stops before its JSON does.
        const bool cutShort = bytes.mid(at).trimmed().isEmpty();
        sink.problem(line, at,
            cutShort ? QStringLiteral("the file ends before its JSON does (cut short while it was written or copied?): "
                                      "%1 at byte %2 of %3")
                           .arg(err.errorString())
                           .arg(at)
                           .arg(bytes.size())
                     : QStringLiteral("invalid JSON: %1").arg(err.errorString()));
        return false;
    }
    return true;
}

bool isJsonName(const QString &fileName)
{
    return fileName.endsWith(QLatin1String(".json"));
}

double numberOrNan(const QJsonValue &v)
{
    return v.isDouble() ? v.toDouble() : NAN;
}

} // namespace

QString shortestNumber(double v)
{
    for (int precision = 1; precision < 17; ++precision) {
        const QString text = QString::number(v, 'g', precision);
        if (text.toDouble() == v)
            return text;
    }
    return QString::number(v, 'g', 17);
}

void flattenConfig(const QString &prefix, const QJsonValue &v, IngestSink &sink, ConfigBudget &budget, int depth)
{
    if (budget.tooManyKeys)
        return;
    if (depth > kMaxConfigDepth) {
        budget.tooDeep = true;
        return;
    }
    if (v.isObject()) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end() && !budget.tooManyKeys; ++it)
            flattenConfig(prefix.isEmpty() ? it.key() : prefix + QLatin1Char('.') + it.key(), it.value(), sink, budget,
                depth + 1);
        return;
    }
    if (v.isArray()) {
        const QJsonArray a = v.toArray();
        for (qsizetype i = 0; i < a.size() && !budget.tooManyKeys; ++i)
            flattenConfig(prefix + QStringLiteral("[%1]").arg(i), a.at(i), sink, budget, depth + 1);
        return;
    }
    if (v.isUndefined() || !budget.take())
        return;
    if (v.isBool())
        sink.config(prefix, v.toBool() ? QStringLiteral("true") : QStringLiteral("false"));
    else if (v.isDouble())
        sink.config(prefix, shortestNumber(v.toDouble()));
    else if (v.isString())
        sink.config(prefix, v.toString());
    else if (v.isNull())
        sink.config(prefix, QStringLiteral("null"));
}

void reportConfigBudget(const ConfigBudget &budget, IngestSink &sink)
{
    if (budget.tooManyKeys)
        sink.problem(0, -1,
            QStringLiteral("more than %1 config keys (aliases that expand without end?); the rest are not read")
                .arg(kMaxConfigKeys));
    if (budget.tooDeep)
        sink.problem(0, -1, QStringLiteral("values nested deeper than %1 levels are not read").arg(kMaxConfigDepth));
}

bool GoldenValuesImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    return isJsonName(fileName) && head.contains("\"start_step\"") && head.contains("\"values\"");
}

ReadPosition GoldenValuesImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    QJsonDocument doc;
    ReadPosition end;
    if (!loadJson(path, sink, &doc, &end))
        return end;
    if (!doc.isObject()) {
        sink.problem(1, 0, QStringLiteral("golden values: expected an object of metrics"));
        return end;
    }
    const QString source = QStringLiteral("golden:") + QFileInfo(path).completeBaseName();
    const QJsonObject metrics = doc.object();
    for (auto it = metrics.begin(); it != metrics.end(); ++it) {
        const QJsonObject m = it.value().toObject();
        const QJsonValue values = m.value(QStringLiteral("values"));
        const SeriesKey key {QString(), QString(), it.key(), source, QString()};
        if (values.isArray()) {
            if (!m.value(QStringLiteral("start_step")).isDouble()
                || !m.value(QStringLiteral("step_interval")).isDouble()) {
                sink.problem(0, -1, QStringLiteral("golden values: '%1' lacks start_step/step_interval").arg(it.key()));
                continue;
            }
            const int64_t start = int64_t(m.value(QStringLiteral("start_step")).toDouble());
            const int64_t interval = int64_t(m.value(QStringLiteral("step_interval")).toDouble());
            const QJsonArray a = values.toArray();
            for (qsizetype i = 0; i < a.size(); ++i) {
                // "nan" strings stand for steps without a value.
                const double v = a.at(i).isDouble() ? a.at(i).toDouble() : NAN;
                sink.point(key, start + i * interval, v);
            }
        } else if (values.isObject()) {
            const QJsonObject o = values.toObject();
            for (auto v = o.begin(); v != o.end(); ++v) {
                bool ok = false;
                const int64_t step = v.key().toLongLong(&ok);
                if (!ok) {
                    sink.problem(0, -1,
                        QStringLiteral("golden values: step '%1' of '%2' is not a number").arg(v.key(), it.key()));
                    continue;
                }
                sink.point(key, step, numberOrNan(v.value()));
            }
        } else {
            sink.problem(0, -1, QStringLiteral("golden values: '%1' has no values list or object").arg(it.key()));
        }
    }
    return end;
}

namespace {

// A precision as the inference settings spell it, in fp8scope's words ("bfloat16" and "torch.bfloat16" are
// bf16); "" for "auto" and other values that do not name one.
QString precisionWord(QString v)
{
    v = v.trimmed().toLower();
    if (v.startsWith(QLatin1String("torch.")))
        v = v.mid(6);
    if (v == QLatin1String("bfloat16") || v == QLatin1String("bf16"))
        return QStringLiteral("bf16");
    if (v == QLatin1String("float16") || v == QLatin1String("half") || v == QLatin1String("fp16"))
        return QStringLiteral("fp16");
    if (v == QLatin1String("float32") || v == QLatin1String("float") || v == QLatin1String("fp32"))
        return QStringLiteral("fp32");
    if (v.startsWith(QLatin1String("fp8")) || v.startsWith(QLatin1String("float8")))
        return QStringLiteral("fp8");
    if (v.contains(QLatin1String("nvfp4")) || v.contains(QLatin1String("fp4")))
        return QStringLiteral("nvfp4");
    if (v.contains(QLatin1String("mxfp8")))
        return QStringLiteral("mxfp8");
    return {};
}

// The precision words of a file name ("results_fp8_inference.json" says fp8), or "" when it names none or
// several.
QString precisionInName(const QString &name)
{
    static const QRegularExpression sep(QStringLiteral("[^a-z0-9]+"));
    QString found;
    for (const QString &w : name.toLower().split(sep, Qt::SkipEmptyParts)) {
        const QString p = w == QLatin1String("baseline") ? QString() : precisionWord(w);
        if (p.isEmpty())
            continue;
        if (!found.isEmpty() && found != p)
            return {};
        found = p;
    }
    return found;
}

} // namespace

QString inferenceSetting(const QJsonObject &root, const QFileInfo &file, QString *settings)
{
    // model_args is "a=b,c=d" in results files written from the command line and an object from Python.
    const QJsonObject config = root.value(QStringLiteral("config")).toObject();
    std::vector<std::pair<QString, QString>> args;
    const QJsonValue modelArgs = config.value(QStringLiteral("model_args"));
    if (modelArgs.isObject()) {
        const QJsonObject o = modelArgs.toObject();
        for (auto it = o.begin(); it != o.end(); ++it)
            args.emplace_back(
                it.key(), it.value().isString() ? it.value().toString() : it.value().toVariant().toString());
    } else {
        for (const QString &part : modelArgs.toString().split(QLatin1Char(','), Qt::SkipEmptyParts))
            args.emplace_back(
                part.section(QLatin1Char('='), 0, 0).trimmed(), part.section(QLatin1Char('='), 1).trimmed());
    }
    QString weights, quantization, kv;
    QStringList used;
    for (const auto &[key, value] : args) {
        const QString k = key.toLower();
        if (k == QLatin1String("dtype") || k == QLatin1String("precision") || k == QLatin1String("torch_dtype")) {
            weights = precisionWord(value);
            used << key + QLatin1Char('=') + value;
        } else if (k == QLatin1String("quantization") || k == QLatin1String("quantize")) {
            quantization = precisionWord(value).isEmpty() ? value.toLower() : precisionWord(value);
            used << key + QLatin1Char('=') + value;
        } else if (k == QLatin1String("kv_cache_dtype")) {
            kv = precisionWord(value);
            used << key + QLatin1Char('=') + value;
        } else if (k == QLatin1String("load_in_8bit") || k == QLatin1String("load_in_4bit")) {
            if (value.toLower() == QLatin1String("true")) {
                quantization = k == QLatin1String("load_in_8bit") ? QStringLiteral("int8") : QStringLiteral("int4");
                used << key + QLatin1Char('=') + value;
            }
        }
    }
    const QString modelDtype = config.value(QStringLiteral("model_dtype")).toString();
    if (weights.isEmpty() && !precisionWord(modelDtype).isEmpty()) {
        weights = precisionWord(modelDtype);
        used << QStringLiteral("model_dtype=") + modelDtype;
    }
    QString primary = quantization.isEmpty() || quantization == QLatin1String("none") ? weights : quantization;
    if (primary.isEmpty()) {
        // The file's name, or its folder's when that is an evaluation folder ("eval_fp8/results.json").
        primary = precisionInName(file.completeBaseName());
        if (!primary.isEmpty())
            used << QStringLiteral("file name ") + file.fileName();
        const QString folder = file.dir().dirName();
        const QString f = folder.toLower();
        if (primary.isEmpty()
            && (f.contains(QLatin1String("eval")) || f.contains(QLatin1String("infer"))
                || f.contains(QLatin1String("result")))) {
            primary = precisionInName(folder);
            if (!primary.isEmpty())
                used << QStringLiteral("folder name ") + folder;
        }
    }
    *settings = used.join(QStringLiteral(", "));
    if (!kv.isEmpty() && kv != primary)
        return (primary.isEmpty() ? QString() : primary + QLatin1Char(' ')) + QStringLiteral("kv-") + kv;
    return primary;
}

bool LmEvalImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    return isJsonName(fileName) && head.contains("\"results\"")
        && (head.contains("\"versions\"") || head.contains("_stderr") || head.contains("\"n-shot\"")
            || head.contains("\"config\"") || head.contains("\"acc"));
}

ReadPosition LmEvalImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    QJsonDocument doc;
    ReadPosition end;
    if (!loadJson(path, sink, &doc, &end))
        return end;
    const QJsonObject root = doc.object();
    const QJsonValue results = root.value(QStringLiteral("results"));
    if (!results.isObject()) {
        sink.problem(1, 0, QStringLiteral("lm-eval: no \"results\" object"));
        return end;
    }
    QString settings;
    const QString inference = inferenceSetting(root, QFileInfo(path), &settings);
    const QJsonObject tasks = results.toObject();
    for (auto t = tasks.begin(); t != tasks.end(); ++t) {
        const QJsonObject metrics = t.value().toObject();
        for (auto m = metrics.begin(); m != metrics.end(); ++m) {
            const QString key = m.key();
            // v0.4: "acc,none"; v0.3: "acc". Stderr entries are read with their metric.
            const QString metric = key.section(QLatin1Char(','), 0, 0);
            const QString filter = key.contains(QLatin1Char(',')) ? key.section(QLatin1Char(','), 1) : QString();
            if (metric.endsWith(QLatin1String("_stderr")) || !m.value().isDouble())
                continue;
            const QString stderrKey = filter.isEmpty() ? QString(metric + QStringLiteral("_stderr"))
                                                       : QString(metric + QStringLiteral("_stderr,") + filter);
            const QString name = filter.isEmpty() || filter == QLatin1String("none")
                ? metric
                : QString(metric + QLatin1Char(',') + filter);
            sink.eval({.task = t.key(),
                .metric = name,
                .value = m.value().toDouble(),
                .stderrValue = numberOrNan(metrics.value(stderrKey)),
                .inference = inference,
                .settings = settings});
        }
    }
    return end;
}

bool ManifestImporter::recognises(const QString &fileName, const QByteArray &) const
{
    return fileName == QLatin1String("fp8scope.json");
}

namespace {

const QStringList &manifestFields()
{
    // Every field a reader of fp8scope.json takes: the ingest's, the attempts' ("parent"), the checkpoint audit's
    // ("inference_checkpoint", "inference_reference").
    static const QStringList fields {QStringLiteral("name"), QStringLiteral("precision"), QStringLiteral("recipe"),
        QStringLiteral("baseline"), QStringLiteral("inference_precision"), QStringLiteral("notes"),
        QStringLiteral("loss_gap_bar"), QStringLiteral("parent"), QStringLiteral("inference_checkpoint"),
        QStringLiteral("inference_reference")};
    return fields;
}

// The fields of one run's manifest object; `where` prefixes the problems ("manifest", "workspace manifest 'fp8'"),
// `key` is the object's key under "runs" of a workspace manifest ("" for a run's own fp8scope.json). The run
// records where its manifest is (a window's Run Settings and Set the Parent write there).
void readManifestFields(const QJsonObject &o, const QString &where, const QString &key, IngestSink &sink)
{
    sink.runInfo(QStringLiteral("manifest_key"), key);
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (!manifestFields().contains(it.key())) {
            sink.problem(0, -1, QStringLiteral("%1: unknown field '%2'").arg(where, it.key()));
            continue;
        }
        if (it.key() == QLatin1String("loss_gap_bar")) {
            // The loss gap at the end a baseline accepts: a number (or a string holding one) at least 0; "" unsets.
            bool ok = it.value().isDouble();
            double v = it.value().toDouble();
            if (it.value().isString()) {
                if (it.value().toString().trimmed().isEmpty()) {
                    sink.runInfo(it.key(), QString());
                    continue;
                }
                v = it.value().toString().trimmed().toDouble(&ok);
            }
            if (!ok || !std::isfinite(v) || v < 0) {
                sink.problem(0, -1, QStringLiteral("%1: 'loss_gap_bar' must be a number at least 0").arg(where));
                continue;
            }
            sink.runInfo(it.key(), QString::number(v, 'g', 17));
            continue;
        }
        if (it.key() == QLatin1String("inference_reference") && it.value().isArray()) {
            // The references: a path or a list of them (kept one per line).
            QStringList paths;
            for (const QJsonValue &v : it.value().toArray()) {
                if (!v.isString()) {
                    paths.clear();
                    break;
                }
                paths << v.toString();
            }
            if (paths.isEmpty())
                sink.problem(
                    0, -1, QStringLiteral("%1: 'inference_reference' must be a path or a list of paths").arg(where));
            else
                sink.runInfo(it.key(), paths.join(QLatin1Char('\n')));
            continue;
        }
        if (!it.value().isString()) {
            sink.problem(0, -1, QStringLiteral("%1: '%2' must be a string").arg(where, it.key()));
            continue;
        }
        sink.runInfo(
            it.key() == QLatin1String("name") ? QStringLiteral("display_name") : it.key(), it.value().toString());
    }
}

} // namespace

ReadPosition ManifestImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    QJsonDocument doc;
    ReadPosition end;
    if (!loadJson(path, sink, &doc, &end))
        return end;
    if (!doc.isObject()) {
        sink.problem(1, 0, QStringLiteral("manifest: expected an object"));
        return end;
    }
    readManifestFields(doc.object(), QStringLiteral("manifest"), QString(), sink);
    return end;
}

bool WorkspaceManifestImporter::recognises(const QString &fileName, const QByteArray &) const
{
    return fileName == QLatin1String(kFileName);
}

namespace {

// The runs W&B history exports beside `path` name (history_<run id>.csv, several of them: each file its own run).
QStringList historyRunsBeside(const QString &path)
{
    const QDir dir = QFileInfo(path).absoluteDir();
    QStringList runs;
    for (const QString &f :
        dir.entryList({QStringLiteral("history_*.csv"), QStringLiteral("history_*.csv.*")}, QDir::Files)) {
        const QString run = runOfHistoryExport(dir.filePath(f));
        if (!run.isEmpty() && !runs.contains(run))
            runs << run;
    }
    return runs;
}

} // namespace

ReadPosition WorkspaceManifestImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    QJsonDocument doc;
    ReadPosition end;
    if (!loadJson(path, sink, &doc, &end))
        return end;
    const QJsonValue runs = doc.object().value(QLatin1String("runs"));
    if (!doc.isObject() || !runs.isObject()) {
        sink.problem(1, 0, QStringLiteral("workspace manifest: expected {\"runs\": {\"<run folder>\": {...}}}"));
        return end;
    }
    const QDir root = QFileInfo(path).absoluteDir();
    const QJsonObject o = runs.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) {
        const QString where = QStringLiteral("workspace manifest '%1'").arg(it.key());
        // A run named by its file beside the manifest (a W&B history export among several): that run.
        if (it.value().isObject() && historyRunsBeside(path).contains(it.key())) {
            sink.useRun(it.key());
            readManifestFields(it.value().toObject(), where, it.key(), sink);
            continue;
        }
        // A run the other files made (a table's run column, read before the manifests): that run.
        if (it.value().isObject() && !root.exists(it.key()) && sink.useExistingRun(it.key())) {
            readManifestFields(it.value().toObject(), where, it.key(), sink);
            continue;
        }
        // Otherwise a run is a folder beside the manifest; anything else would invent a run.
        if (it.key().isEmpty() || it.key().contains(QLatin1Char('/')) || it.key().startsWith(QLatin1Char('.'))
            || !root.exists(it.key())) {
            sink.problem(0, -1,
                QStringLiteral("%1: no such run (a folder beside the manifest, or a W&B history file's run)")
                    .arg(where));
            continue;
        }
        if (!it.value().isObject()) {
            sink.problem(0, -1, QStringLiteral("%1: expected an object").arg(where));
            continue;
        }
        if (!sink.useRunFolder(it.key())) {
            sink.problem(0, -1,
                QStringLiteral("%1: not a run folder (it holds no file fp8scope reads, or several runs)").arg(where));
            continue;
        }
        readManifestFields(it.value().toObject(), where, it.key(), sink);
    }
    sink.useRun(QString());
    return end;
}

bool JsonConfigImporter::recognises(const QString &fileName, const QByteArray &) const
{
    return isJsonName(fileName) && fileName.contains(QLatin1String("config"), Qt::CaseInsensitive);
}

namespace {

// A W&B export's configs.json beside its history files: one config per run, keyed by the run's id or its display
// name. A key that names a history file's run (history_<id>, or <id>) is that run's config; the others name no run
// open here (W&B names the history files by id), said once as a problem. Never a run of the folder's own.
void readRunConfigs(const QJsonObject &o, const QStringList &runs, IngestSink &sink)
{
    QStringList unmatched;
    for (auto it = o.begin(); it != o.end(); ++it) {
        const QString run = runs.contains(it.key())                ? it.key()
            : runs.contains(QStringLiteral("history_") + it.key()) ? QStringLiteral("history_") + it.key()
                                                                   : QString();
        if (run.isEmpty() || !it.value().isObject()) {
            unmatched << it.key();
            continue;
        }
        sink.useRun(run);
        ConfigBudget budget;
        flattenConfig(QString(), it.value(), sink, budget, 0);
        reportConfigBudget(budget, sink);
    }
    if (!unmatched.isEmpty())
        sink.problem(0, -1,
            QStringLiteral("the configs of W&B runs %1 name none of the runs of their history files (%2: W&B names "
                           "those by run id), so they are not read; set each run's precision and recipe in Run "
                           "Settings, or in an fp8scope-workspace.json beside them under the run's full name "
                           "(history_<id>)")
                .arg(QStringLiteral("'") + unmatched.join(QStringLiteral("', '")) + QStringLiteral("'"),
                    runs.join(QStringLiteral(", "))));
}

} // namespace

ReadPosition JsonConfigImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    QJsonDocument doc;
    ReadPosition end;
    if (!loadJson(path, sink, &doc, &end))
        return end;
    // W&B's export of several runs beside their history files: each config to its run, where one is named.
    if (QFileInfo(path).fileName() == QLatin1String("configs.json") && doc.isObject()) {
        if (const QStringList runs = historyRunsBeside(path); !runs.isEmpty()) {
            readRunConfigs(doc.object(), runs, sink);
            return end;
        }
    }
    ConfigBudget budget;
    flattenConfig(QString(), doc.isObject() ? QJsonValue(doc.object()) : QJsonValue(doc.array()), sink, budget, 0);
    reportConfigBudget(budget, sink);
    return end;
}

} // namespace fp8scope
