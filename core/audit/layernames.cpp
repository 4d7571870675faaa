#include "layernames.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

namespace fp8scope {

namespace {

// "model.layers.N." or "layers.N." (some exports drop the "model." prefix); the rest follows.
const QRegularExpression &layerPattern()
{
    static const QRegularExpression re(QStringLiteral(R"(^(?:model\.)?(?:language_model\.)?layers\.(\d+)\.(.+)$)"));
    return re;
}

TrainingName parseTrainingName(const QString &text)
{
    static const QRegularExpression part(QStringLiteral(R"(^(.+?)\s*\((q|k|v|gate|up)\)$)"));
    const QRegularExpressionMatch m = part.match(text.trimmed());
    if (m.hasMatch())
        return {m.captured(1), m.captured(2)};
    return {text.trimmed(), {}};
}

} // namespace

std::optional<TrainingName> trainingNameOf(const QString &inferenceModule, bool gated)
{
    QString name = inferenceModule;
    if (name == QLatin1String("lm_head") || name == QLatin1String("model.lm_head"))
        return TrainingName {QStringLiteral("output_layer"), {}};
    if (name == QLatin1String("model.embed_tokens") || name == QLatin1String("embed_tokens"))
        return TrainingName {QStringLiteral("embedding.word_embeddings"), {}};
    const QRegularExpressionMatch m = layerPattern().match(name);
    if (!m.hasMatch())
        return std::nullopt;
    const QString layer = QStringLiteral("decoder.layers.") + m.captured(1) + QLatin1Char('.');
    const QString rest = m.captured(2);
    static const QRegularExpression qkv(QStringLiteral(R"(^self_attn\.(q|k|v)_proj$)"));
    if (const auto q = qkv.match(rest); q.hasMatch())
        return TrainingName {layer + QStringLiteral("self_attention.linear_qkv"), q.captured(1)};
    if (rest == QLatin1String("self_attn.qkv_proj"))
        return TrainingName {layer + QStringLiteral("self_attention.linear_qkv"), {}};
    if (rest == QLatin1String("self_attn.o_proj") || rest == QLatin1String("self_attn.dense"))
        return TrainingName {layer + QStringLiteral("self_attention.linear_proj"), {}};
    if (rest == QLatin1String("mlp.gate_proj"))
        return TrainingName {layer + QStringLiteral("mlp.linear_fc1"), QStringLiteral("gate")};
    if (rest == QLatin1String("mlp.up_proj"))
        return TrainingName {layer + QStringLiteral("mlp.linear_fc1"), gated ? QStringLiteral("up") : QString()};
    if (rest == QLatin1String("mlp.gate_up_proj"))
        return TrainingName {layer + QStringLiteral("mlp.linear_fc1"), {}};
    if (rest == QLatin1String("mlp.down_proj"))
        return TrainingName {layer + QStringLiteral("mlp.linear_fc2"), {}};
    // Mixtral (w1 gate, w3 up, w2 down) and Qwen-MoE style experts.
    static const QRegularExpression expert(
        QStringLiteral(R"(^(?:block_sparse_moe|mlp)\.experts\.(\d+)\.(w1|w2|w3|gate_proj|up_proj|down_proj)$)"));
    if (const auto e = expert.match(rest); e.hasMatch()) {
        const QString base = layer + QStringLiteral("mlp.experts.local_experts.") + e.captured(1) + QLatin1Char('.');
        const QString w = e.captured(2);
        if (w == QLatin1String("w2") || w == QLatin1String("down_proj"))
            return TrainingName {base + QStringLiteral("linear_fc2"), {}};
        const bool gate = w == QLatin1String("w1") || w == QLatin1String("gate_proj");
        return TrainingName {base + QStringLiteral("linear_fc1"), gate ? QStringLiteral("gate") : QStringLiteral("up")};
    }
    return std::nullopt;
}

bool readNameMapping(const QString &path, QHash<QString, TrainingName> *mapping, Problem *problem)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *problem = {path, -1, QStringLiteral("cannot read the name mapping: %1").arg(f.errorString())};
        return false;
    }
    const QByteArray bytes = f.readAll();
    if (bytes.trimmed().startsWith('{')) {
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
        if (error.error != QJsonParseError::NoError) {
            *problem = {path, error.offset, QStringLiteral("not a JSON object: %1").arg(error.errorString())};
            return false;
        }
        const QJsonObject o = doc.object();
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (!it.value().isString()) {
                *problem = {path, -1, QStringLiteral("the mapping of '%1' is not a string").arg(it.key())};
                return false;
            }
            mapping->insert(it.key(), parseTrainingName(it.value().toString()));
        }
        return true;
    }
    const QList<QByteArray> lines = bytes.split('\n');
    qint64 offset = 0;
    for (int i = 0; i < lines.size(); ++i) {
        QString line = QString::fromUtf8(lines[i]);
        const qint64 at = offset;
        offset += lines[i].size() + 1;
        if (const int hash = line.indexOf(QLatin1Char('#')); hash >= 0)
            line.truncate(hash);
        line = line.trimmed();
        if (line.isEmpty())
            continue;
        static const QRegularExpression split(QStringLiteral(R"(^(\S+)\s+(.+)$)"));
        const QRegularExpressionMatch m = split.match(line);
        if (!m.hasMatch()) {
            *problem = {path, at, QStringLiteral("line %1: expected an inference name and a training name").arg(i + 1)};
            return false;
        }
        mapping->insert(m.captured(1), parseTrainingName(m.captured(2)));
    }
    return true;
}

} // namespace fp8scope
