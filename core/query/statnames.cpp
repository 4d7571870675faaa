#include "statnames.h"

#include <QHash>
#include <QRegularExpression>

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

} // namespace fp8scope
