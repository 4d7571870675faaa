#include "expertnames.h"

#include <QRegularExpression>

namespace fp8scope {

std::optional<ExpertName> expertOf(const QString &layer)
{
    // Cheap refusals first: almost every layer of a dense run has none of these words.
    const bool gemmSuffix = layer.contains(QLatin1String(".gemm_"));
    if (!gemmSuffix && !layer.contains(QLatin1String("experts")))
        return std::nullopt;
    if (gemmSuffix) {
        // Transformer Engine's GroupedLinear: `self.name + f".gemm_{i}"` (transformer_engine/pytorch/module/
        // grouped_linear.py), whatever the module is called.
        static const QRegularExpression te(QStringLiteral(R"(^(.+)\.gemm_(\d+)$)"));
        if (const auto m = te.match(layer); m.hasMatch())
            return ExpertName {m.captured(1), m.captured(2).toInt(),
                QRegularExpression::escape(m.captured(1)) + QStringLiteral(R"(\.gemm_\d+)")};
        return std::nullopt;
    }
    // Megatron's SequentialMLP: one module per expert under local_experts.
    static const QRegularExpression local(QStringLiteral(R"(^(.*\.experts)\.local_experts\.(\d+)\.(.+)$)"));
    if (const auto m = local.match(layer); m.hasMatch())
        return ExpertName {m.captured(1) + QLatin1Char('.') + m.captured(3), m.captured(2).toInt(),
            QRegularExpression::escape(m.captured(1)) + QStringLiteral(R"(\.local_experts\.\d+\.)")
                + QRegularExpression::escape(m.captured(3))};
    // Megatron's TEGroupedMLP: one parameter per expert, weight<i>.
    static const QRegularExpression grouped(QStringLiteral(R"(^(.*\.experts\.[^.]+)\.weight(\d+)$)"));
    if (const auto m = grouped.match(layer); m.hasMatch())
        return ExpertName {m.captured(1), m.captured(2).toInt(),
            QRegularExpression::escape(m.captured(1)) + QStringLiteral(R"(\.weight\d+)")};
    // Hugging Face: experts.<i>.<projection>.
    static const QRegularExpression hf(QStringLiteral(R"(^(.*\bexperts)\.(\d+)\.(.+)$)"));
    if (const auto m = hf.match(layer); m.hasMatch())
        return ExpertName {m.captured(1) + QLatin1Char('.') + m.captured(3), m.captured(2).toInt(),
            QRegularExpression::escape(m.captured(1)) + QStringLiteral(R"(\.\d+\.)")
                + QRegularExpression::escape(m.captured(3))};
    return std::nullopt;
}

QString expertLabel(int expert)
{
    return QStringLiteral("expert %1").arg(expert);
}

} // namespace fp8scope
