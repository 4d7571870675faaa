#include "expertnames.h"

#include <QRegularExpression>

namespace fp8scope {

namespace {

// The experts of Megatron's SequentialMLP (one module per expert under local_experts), of its TEGroupedMLP's weights
// (weight<i>), and of Hugging Face models (experts.<i>.<projection>).
const QRegularExpression &localExperts()
{
    static const QRegularExpression re(QStringLiteral(R"(^(.*\.experts)\.local_experts\.([1-9]\d{0,8}|0)\.(.+)$)"));
    return re;
}

const QRegularExpression &weightExperts()
{
    static const QRegularExpression re(QStringLiteral(R"(^(.*\.experts\.[^.]+)\.weight([1-9]\d{0,8}|0)$)"));
    return re;
}

const QRegularExpression &hfExperts()
{
    static const QRegularExpression re(QStringLiteral(R"(^(.*\bexperts)\.([1-9]\d{0,8}|0)\.(.+)$)"));
    return re;
}

// Transformer Engine's GroupedLinear: `self.name + f".gemm_{i}"` (transformer_engine/pytorch/module/
// grouped_linear.py), whatever the module is called; read by hand, as every layer of every matrix is asked. The
// position of ".gemm_", or -1.
qsizetype teGemmAt(const QString &layer)
{
    // An index of at most 9 digits and no leading zero (gemm_01 is not gemm_1's twin): one number, one expert.
    const qsizetype at = layer.lastIndexOf(QLatin1String(".gemm_"));
    const qsizetype digits = at + 6;
    if (at <= 0 || digits >= layer.size() || layer.size() - digits > 9
        || (layer.at(digits) == QLatin1Char('0') && layer.size() - digits > 1))
        return -1;
    for (qsizetype i = digits; i < layer.size(); ++i) {
        if (layer.at(i) < QLatin1Char('0') || layer.at(i) > QLatin1Char('9'))
            return -1;
    }
    return at;
}

} // namespace

std::optional<ExpertName> expertOf(const QString &layer)
{
    // Cheap refusals first: almost every layer of a dense run has none of these words.
    if (const qsizetype at = teGemmAt(layer); at > 0)
        return ExpertName {layer.left(at), QStringView(layer).mid(at + 6).toInt()};
    if (!layer.contains(QLatin1String("experts")))
        return std::nullopt;
    if (const auto m = localExperts().match(layer); m.hasMatch())
        return ExpertName {m.captured(1) + QLatin1Char('.') + m.captured(3), m.captured(2).toInt()};
    if (const auto m = weightExperts().match(layer); m.hasMatch())
        return ExpertName {m.captured(1), m.captured(2).toInt()};
    if (const auto m = hfExperts().match(layer); m.hasMatch())
        return ExpertName {m.captured(1) + QLatin1Char('.') + m.captured(3), m.captured(2).toInt()};
    return std::nullopt;
}

QString expertsPattern(const QString &layer)
{
    const auto esc = [](const QString &s) { return QRegularExpression::escape(s); };
    if (const qsizetype at = teGemmAt(layer); at > 0)
        return esc(layer.left(at)) + QStringLiteral(R"(\.gemm_\d+)");
    if (const auto m = localExperts().match(layer); m.hasMatch())
        return esc(m.captured(1)) + QStringLiteral(R"(\.local_experts\.\d+\.)") + esc(m.captured(3));
    if (const auto m = weightExperts().match(layer); m.hasMatch())
        return esc(m.captured(1)) + QStringLiteral(R"(\.weight\d+)");
    if (const auto m = hfExperts().match(layer); m.hasMatch())
        return esc(m.captured(1)) + QStringLiteral(R"(\.\d+\.)") + esc(m.captured(3));
    return {};
}

QString expertLabel(int expert)
{
    return QStringLiteral("expert %1").arg(expert);
}

} // namespace fp8scope
