#include "tedebugimporter.h"

#include "linereader.h"

#include <QRegularExpression>

namespace fp8scope {

namespace {

const QStringList &tensors()
{
    static const QStringList t {QStringLiteral("activation"), QStringLiteral("gradient"), QStringLiteral("weight"),
        QStringLiteral("output"), QStringLiteral("wgrad"), QStringLiteral("dgrad")};
    return t;
}

// Longest first, so that "scale_inv_min" wins over "min".
const QStringList &stats()
{
    static const QStringList s = [] {
        QStringList l {QStringLiteral("underflows%"), QStringLiteral("overflows%"), QStringLiteral("mse"),
            QStringLiteral("scale_inv_min"), QStringLiteral("scale_inv_max"), QStringLiteral("min"),
            QStringLiteral("max"), QStringLiteral("mean"), QStringLiteral("std"), QStringLiteral("l1_norm"),
            QStringLiteral("l2_norm"), QStringLiteral("cur_amax"), QStringLiteral("dynamic_range"),
            QStringLiteral("underflows_num"), QStringLiteral("overflows_num"), QStringLiteral("numel")};
        std::sort(l.begin(), l.end(), [](const QString &a, const QString &b) { return a.size() > b.size(); });
        return l;
    }();
    return s;
}

const QStringList &recipes()
{
    static const QStringList r {QStringLiteral("fp8_current_scaling"), QStringLiteral("fp8_delayed_scaling"),
        QStringLiteral("fp8_block_scaling"), QStringLiteral("mxfp8"), QStringLiteral("nvfp4")};
    return r;
}

int rankOf(const QString &path)
{
    static const QRegularExpression re(QStringLiteral("globalrank-(\\d+)"));
    const auto m = re.match(path);
    return m.hasMatch() ? m.captured(1).toInt() : 0;
}

} // namespace

bool TeDebugImporter::splitName(const QString &name, TeStatName *out)
{
    QString rest = name;
    QString suffix;
    if (rest.endsWith(QLatin1String("_columnwise"))) {
        suffix = QStringLiteral("_columnwise");
        rest.chop(suffix.size());
    }
    QString stat;
    for (const QString &s : stats()) {
        if (rest.size() > s.size() + 1 && rest.endsWith(s) && rest.at(rest.size() - s.size() - 1) == QLatin1Char('_')) {
            stat = s;
            rest.chop(s.size() + 1);
            break;
        }
    }
    if (stat.isEmpty())
        return false;
    QString recipe;
    for (const QString &r : recipes()) {
        if (rest.endsWith(QLatin1Char('_') + r)) {
            recipe = r;
            rest.chop(r.size() + 1);
            break;
        }
    }
    for (const QString &t : tensors()) {
        if (rest.size() > t.size() + 1 && rest.endsWith(QLatin1Char('_') + t)) {
            *out = {rest.left(rest.size() - t.size() - 1), t, recipe, stat + suffix};
            return true;
        }
    }
    return false;
}

bool TeDebugImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    return fileName.endsWith(QLatin1String(".log")) && head.contains("iteration=") && head.contains("value=");
}

ReadPosition TeDebugImporter::read(const QString &path, const ReadPosition &from, IngestSink &sink)
{
    const QString source = QStringLiteral("te-debug rank %1").arg(rankOf(path));
    return readLines(path, from, sink, [&](const TextLine &l) {
        const QStringView line(l.text);
        const qsizetype it = line.indexOf(QLatin1String("iteration="));
        const qsizetype val = line.indexOf(QLatin1String("value="));
        if (it < 0 || val < 0) {
            // The main debug log shares the folder layout; only statistic lines matter here.
            if (!line.trimmed().isEmpty() && !l.complete)
                return false;
            return true;
        }
        qsizetype nameStart = line.indexOf(QLatin1String(" - INFO - "));
        nameStart = nameStart < 0 ? 0 : nameStart + 9;
        const QStringView name = line.mid(nameStart, it - nameStart).trimmed();
        bool okStep = false, okValue = false;
        qsizetype stepEnd = it + 10;
        while (stepEnd < line.size() && line.at(stepEnd).isDigit())
            ++stepEnd;
        const int64_t step = line.mid(it + 10, stepEnd - it - 10).toLongLong(&okStep);
        const double value = line.mid(val + 6).trimmed().toDouble(&okValue);
        if (!okStep || !okValue || val < stepEnd) {
            if (!l.complete)
                return false; // still being written
            sink.problem(l.number, l.offset, QStringLiteral("unreadable statistic line"));
            return true;
        }
        TeStatName n;
        if (!splitName(name.toString(), &n)) {
            sink.problem(l.number, l.offset, QStringLiteral("unknown statistic name '%1'").arg(name));
            return true;
        }
        sink.point({n.layer, n.tensor, n.stat, source, n.recipe}, step, value);
        return true;
    });
}

} // namespace fp8scope
