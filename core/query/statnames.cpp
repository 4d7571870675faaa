#include "statnames.h"

#include <QHash>
#include <QRegularExpression>
#include <QVersionNumber>

namespace fp8scope {

namespace {

// Normalized name (lower case, '-' and '_' as spaces, one space between words, logger prefixes dropped)
// -> canonical name. Units differ between loggers for timings ("iteration-time" is seconds, "elapsed time
// per iteration (ms)" milliseconds), so timings are not merged.
const QHash<QString, QString> &vocabulary()
{
    static const QHash<QString, QString> v = [] {
        QHash<QString, QString> h;
        const auto add = [&](const char *canonical, std::initializer_list<const char *> names) {
            for (const char *n : names)
                h.insert(QString::fromLatin1(n), QString::fromLatin1(canonical));
        };
        add("lm loss", {"lm loss", "loss", "train loss", "training loss", "reduced train loss", "lm loss train"});
        add("grad norm", {"grad norm", "gradient norm", "grad norm total", "global grad norm"});
        add("learning rate", {"learning rate", "lr"});
        add("loss scale", {"loss scale"});
        add("params norm", {"params norm", "param norm", "parameter norm"});
        add("num zeros", {"num zeros", "number of zeros"});
        add("validation loss",
            {"validation loss", "validation lm loss", "validation lm loss value", "lm loss validation"});
        add("validation ppl",
            {"validation ppl", "validation lm loss ppl", "lm loss validation ppl", "validation perplexity"});
        add("skipped iterations", {"skipped iterations", "number of skipped iterations"});
        add("nan iterations", {"nan iterations", "number of nan iterations"});
        add("consumed samples", {"consumed samples", "consumed train samples"});
        add("consumed tokens", {"consumed tokens", "consumed train tokens"});
        add("batch size", {"batch size", "global batch size"});
        return h;
    }();
    return v;
}

} // namespace

CanonicalStat canonicalStat(const QString &sourceName)
{
    CanonicalStat out;
    QString s = sourceName.trimmed();
    static const QRegularExpression vsSamples(
        QStringLiteral("\\s+vs\\.?\\s+samples$"), QRegularExpression::CaseInsensitiveOption);
    const QRegularExpressionMatch m = vsSamples.match(s);
    if (m.hasMatch()) {
        out.axis = SeriesAxis::Samples;
        s.truncate(m.capturedStart());
    }
    QString key = s.toLower();
    // Logger prefixes: W&B's and TensorBoard's "train/", "val/" (validation) and their long forms.
    for (const char *prefix : {"train/", "training/", "trainer/"}) {
        if (key.startsWith(QLatin1String(prefix))) {
            key = key.mid(qsizetype(qstrlen(prefix)));
            break;
        }
    }
    for (const char *prefix : {"val/", "valid/", "validation/", "eval/"}) {
        if (key.startsWith(QLatin1String(prefix))) {
            key = QStringLiteral("validation ") + key.mid(qsizetype(qstrlen(prefix)));
            break;
        }
    }
    key.replace(QLatin1Char('-'), QLatin1Char(' ')).replace(QLatin1Char('_'), QLatin1Char(' '));
    key = key.simplified();
    const auto it = vocabulary().find(key);
    out.name = it != vocabulary().end() ? it.value() : s;
    return out;
}

QString teStatisticCaveat(const QString &stat, const QString &recipe, const QString &teVersion, bool severalRanks)
{
    qsizetype suffix = 0;
    const QVersionNumber v = QVersionNumber::fromString(teVersion, &suffix);
    if (v.isNull())
        return {};
    QString base = stat;
    if (base.endsWith(QLatin1String("_columnwise")))
        base.chop(11);
    const QString te = QStringLiteral("Transformer Engine %1").arg(teVersion);
    if (base.endsWith(QLatin1String("underflows%"))) {
        if (v < QVersionNumber(2, 7))
            return QStringLiteral("%1 counted as underflows the elements equal to zero, not the non-zero elements "
                                  "flushed to zero (as from 2.7): a tensor of many zeros shows underflows that are "
                                  "not there")
                .arg(te);
        if (v < QVersionNumber(2, 8))
            return QStringLiteral("%1 did not count -0 as zero: underflows% can be too low, even negative (fixed in "
                                  "2.8)")
                .arg(te);
        return {};
    }
    const QString r = recipe.toLower();
    if (base.endsWith(QLatin1String("scale_inv_min"))
        && (r.contains(QLatin1String("mxfp8")) || r.contains(QLatin1String("nvfp4"))) && v < QVersionNumber(2, 17))
        return QStringLiteral("%1 logged scale_inv_min as 0 where MXFP8/NVFP4 scales were padded (fixed in 2.17): a "
                              "0 is padding, not a zero scale")
            .arg(te);
    if (base == QLatin1String("std") && severalRanks)
        return QStringLiteral("std combined across ranks had a sign error on some Transformer Engine versions (this "
                              "run: %1): check it against one rank's own values")
            .arg(teVersion);
    return {};
}

QString tensorRecipe(const QString &runRecipe, const QString &tensor)
{
    if (runRecipe != QLatin1String("blockwise"))
        return runRecipe;
    return tensor.startsWith(QLatin1String("weight")) ? QStringLiteral("block128x128") : QStringLiteral("block1x128");
}

int rankOfSource(const QString &source)
{
    static const QLatin1StringView prefix("te-debug rank ");
    if (!source.startsWith(prefix))
        return -1;
    bool ok = false;
    const int r = source.mid(prefix.size()).toInt(&ok);
    return ok ? r : -1;
}

} // namespace fp8scope
