#include "recipe.h"

#include <QRegularExpression>
#include <QStringList>

#include <algorithm>
#include <cmath>

namespace fp8scope {

QString Recipe::name() const
{
    switch (kind) {
    case RecipeKind::Delayed: {
        // Only the options that differ from Transformer Engine's defaults.
        QStringList options;
        if (margin != 0)
            options << QStringLiteral("margin=%1").arg(margin);
        if (historyLength != 1024)
            options << QStringLiteral("history=%1").arg(historyLength);
        if (reduce != AmaxReduce::Max)
            options << QStringLiteral("reduce=most_recent");
        return options.isEmpty() ? QStringLiteral("delayed")
                                 : QStringLiteral("delayed:") + options.join(QLatin1Char(','));
    }
    case RecipeKind::Current: return pow2 ? QStringLiteral("current-pow2") : QStringLiteral("current");
    case RecipeKind::MxFp8:
        return QStringLiteral("mxfp8") + (blockRows > 1 ? QStringLiteral("-col") : QString())
            + (ocpRule ? QStringLiteral("-ocp") : QString());
    case RecipeKind::Block:
        return QStringLiteral("block%1x%2").arg(blockRows).arg(blockCols)
            + (pow2 ? QString() : QStringLiteral("-fp32"));
    case RecipeKind::NvFp4: return QStringLiteral("nvfp4");
    case RecipeKind::Bf16: return QStringLiteral("bf16");
    }
    return {};
}

namespace {

// The amax that delayed scaling reduces the history to, from the newest `used` entries (up to the history
// length); nullopt without a history.
struct ReducedAmax {
    float amax;
    size_t used;
};

std::optional<ReducedAmax> reducedAmax(const Recipe &r)
{
    const size_t n = std::min(r.amaxHistory.size(), size_t(std::max(r.historyLength, 1)));
    if (n == 0)
        return std::nullopt;
    float reduced = r.amaxHistory.front();
    if (r.reduce == AmaxReduce::Max) {
        for (size_t i = 0; i < n; ++i) {
            const float a = r.amaxHistory[i];
            if (a != a) { // NaN poisons the max, as torch.max would
                reduced = a;
                break;
            }
            reduced = std::max(reduced, a);
        }
    }
    return ReducedAmax {reduced, n};
}

} // namespace

float Recipe::delayedScale() const
{
    const std::optional<ReducedAmax> reduced = reducedAmax(*this);
    if (!reduced)
        return previousScale;
    return fp8math::delayedScale(fp8math::formatSpec(format).maxFinite, reduced->amax, margin, previousScale);
}

QString Recipe::delayedScaleSource() const
{
    const std::optional<ReducedAmax> reduced = reducedAmax(*this);
    const QString previous = QString::number(double(previousScale), 'g', 6);
    if (!reduced)
        return QStringLiteral("no amax history (none stored with the tensor, none given): the previous scale %1 "
                              "is kept, as at a run's first step")
            .arg(previous);
    const QString from = reduce == AmaxReduce::Max
        ? QStringLiteral("max of the newest %1 of %2 history entries").arg(reduced->used).arg(amaxHistory.size())
        : QStringLiteral("newest of %1 history entries").arg(amaxHistory.size());
    const QString amax = QString::number(double(reduced->amax), 'g', 6);
    // With a NaN previous scale, delayedScale returns NaN exactly when it keeps the previous one.
    const float formed = fp8math::delayedScale(fp8math::formatSpec(format).maxFinite, reduced->amax, margin, NAN);
    if (std::isnan(formed))
        return QStringLiteral("amax %1 (%2) cannot form a scale: the previous scale %3 is kept")
            .arg(amax, from, previous);
    return QStringLiteral("amax %1 (%2), margin %3").arg(amax, from).arg(margin);
}

std::optional<Recipe> Recipe::parse(const QString &text, std::optional<Format> format, QString *error)
{
    const qsizetype colon = text.indexOf(QLatin1Char(':'));
    const QString head = (colon < 0 ? text : text.left(colon)).trimmed().toLower();
    const QStringList options
        = colon < 0 ? QStringList() : text.mid(colon + 1).split(QLatin1Char(','), Qt::SkipEmptyParts);
    Recipe r;
    if (head == QLatin1String("delayed")) {
        r.kind = RecipeKind::Delayed;
    } else if (head == QLatin1String("current") || head == QLatin1String("current-pow2")) {
        r.kind = RecipeKind::Current;
        r.pow2 = head.endsWith(QLatin1String("pow2"));
    } else if (head.startsWith(QLatin1String("mxfp8"))) {
        r.kind = RecipeKind::MxFp8;
        const QStringList parts = head.split(QLatin1Char('-'));
        r.blockCols = 32;
        for (qsizetype i = 1; i < parts.size(); ++i) {
            if (parts[i] == QLatin1String("col")) {
                r.blockRows = 32;
                r.blockCols = 1;
            } else if (parts[i] == QLatin1String("ocp")) {
                r.ocpRule = true;
            } else if (parts[i] != QLatin1String("te")) {
                *error = QStringLiteral("unknown MXFP8 variant '%1' (col, ocp, te)").arg(parts[i]);
                return std::nullopt;
            }
        }
    } else if (head.startsWith(QLatin1String("block"))) {
        // blockRxC[-pow2|-fp32]: Transformer Engine's 1x128 and 128x128, or any block shape the what-if per
        // block compares (block1x32-fp32: MXFP8's blocks with FP32 scales). R and C are powers of two up to
        // 128, so that no block or tile crosses the engine's chunks (128-row bands, 128-element runs).
        static const QRegularExpression shape(QStringLiteral("^block(\\d{1,3})x(\\d{1,3})(-pow2|-fp32)?$"));
        const QRegularExpressionMatch m = shape.match(head);
        const int rows = m.hasMatch() ? m.captured(1).toInt() : 0;
        const int cols = m.hasMatch() ? m.captured(2).toInt() : 0;
        const auto powerOfTwo = [](int v) { return v >= 1 && v <= 128 && (v & (v - 1)) == 0; };
        if (!powerOfTwo(rows) || !powerOfTwo(cols)) {
            *error = QStringLiteral("unknown block recipe '%1' (blockRxC[-pow2|-fp32], R and C powers of two up to "
                                    "128: block1x128, block128x128)")
                         .arg(head);
            return std::nullopt;
        }
        r.kind = RecipeKind::Block;
        r.pow2 = m.captured(3) != QLatin1String("-fp32");
        r.blockRows = rows;
        r.blockCols = cols;
    } else if (head == QLatin1String("nvfp4")) {
        r.kind = RecipeKind::NvFp4;
        r.format = Format::E2M1;
        r.blockCols = 16;
    } else if (head == QLatin1String("bf16")) {
        r.kind = RecipeKind::Bf16;
        r.format = Format::BF16;
    } else {
        *error = QStringLiteral("unknown recipe '%1' (delayed, current, current-pow2, mxfp8[-col][-ocp], "
                                "block1x128, block128x128[-fp32], nvfp4, bf16)")
                     .arg(head);
        return std::nullopt;
    }
    for (const QString &opt : options) {
        const QString key = opt.section(QLatin1Char('='), 0, 0).trimmed().toLower();
        const QString value = opt.section(QLatin1Char('='), 1).trimmed();
        bool ok = true;
        if (r.kind == RecipeKind::Delayed && key == QLatin1String("margin")) {
            r.margin = value.toInt(&ok);
            ok = ok && r.margin >= -126 && r.margin <= 126;
        } else if (r.kind == RecipeKind::Delayed && key == QLatin1String("history")) {
            r.historyLength = value.toInt(&ok);
            ok = ok && r.historyLength >= 1;
        } else if (r.kind == RecipeKind::Delayed && key == QLatin1String("reduce")) {
            ok = value == QLatin1String("max") || value == QLatin1String("most_recent");
            r.reduce = value == QLatin1String("max") ? AmaxReduce::Max : AmaxReduce::MostRecent;
        } else if (r.kind == RecipeKind::Current && key == QLatin1String("pow2")) {
            r.pow2 = true;
        } else {
            *error = QStringLiteral("recipe '%1' has no option '%2'").arg(head, opt);
            return std::nullopt;
        }
        if (!ok) {
            *error = QStringLiteral("bad value in recipe option '%1'").arg(opt);
            return std::nullopt;
        }
    }
    if (format) {
        if (*format == Format::E8M0) {
            *error = QStringLiteral("e8m0 is a scale format, not an element format");
            return std::nullopt;
        }
        const bool fourBit = *format == Format::E2M1;
        if (r.kind == RecipeKind::NvFp4 && !fourBit) {
            *error = QStringLiteral("nvfp4 uses e2m1 elements");
            return std::nullopt;
        }
        if (r.kind == RecipeKind::Bf16 && *format != Format::BF16) {
            *error = QStringLiteral("bf16 takes no FP8 format");
            return std::nullopt;
        }
        if (r.kind != RecipeKind::NvFp4 && r.kind != RecipeKind::Bf16 && (fourBit || *format == Format::BF16)) {
            *error = QStringLiteral("recipe %1 takes an FP8 format (e4m3, e5m2, e4m3fnuz, e5m2fnuz)").arg(head);
            return std::nullopt;
        }
        r.format = *format;
    }
    return r;
}

std::vector<Recipe> Recipe::whatIfSet()
{
    std::vector<Recipe> out;
    const char *names[]
        = {"delayed", "current", "current-pow2", "mxfp8", "mxfp8-ocp", "mxfp8-col", "block1x128", "block128x128"};
    QString error;
    for (Format f : {Format::E4M3, Format::E5M2}) {
        for (const char *n : names)
            out.push_back(*parse(QString::fromLatin1(n), f, &error));
    }
    out.push_back(*parse(QStringLiteral("nvfp4"), std::nullopt, &error));
    out.push_back(*parse(QStringLiteral("bf16"), std::nullopt, &error));
    return out;
}

} // namespace fp8scope
