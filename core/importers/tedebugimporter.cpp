#include "tedebugimporter.h"

#include "linereader.h"

#include <QHash>
#include <QRegularExpression>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

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
    if (!splitKnown(rest, suffix, out) && !splitGeneral(name, out))
        return false;
    // AutoswitchGemm's <layer>_<gemm>_<tensor>_<stat>: the GEMM left at the end of the layer is the statistic's.
    for (const char *g : {"_fprop", "_dgrad", "_wgrad"}) {
        const QLatin1StringView gemm(g);
        if (out->layer.endsWith(gemm) && out->layer.size() > gemm.size()) {
            out->layer.chop(gemm.size());
            out->stat = gemm.mid(1) + QLatin1Char('_') + out->stat;
            break;
        }
    }
    return true;
}

namespace {

// The general shape, for statistics beyond LogTensorStats' and LogFp8TensorStats' own (TE's newer ones such
// as max_blockwise_dynamic_range_block_size_32_dims_1_max_over_orientations, a custom feature's
// percentage_greater_than_threshold, AutoswitchGemm's <gemm>_<tensor>_underflow_pct): the first tensor word
// after the layer's last dotted part ends the layer; what follows is the statistic (a recipe before it
// kept apart, a GEMM before the tensor made part of it: "fprop_underflow_pct").
bool splitAtTensor(const QString &name, TeStatName *out)
{
    static const QStringList gemms {QStringLiteral("dgrad"), QStringLiteral("wgrad")};
    const qsizetype lastDot = name.lastIndexOf(QLatin1Char('.'));
    const qsizetype from = lastDot < 0 ? 0 : lastDot + 1;
    qsizetype best = -1;
    QString tensor;
    for (const QString &t : tensors()) {
        const qsizetype at = name.indexOf(QLatin1Char('_') + t + QLatin1Char('_'), from);
        if (at > 0 && (best < 0 || at < best)) {
            best = at;
            tensor = t;
        }
    }
    if (best <= 0)
        return false;
    QString layer = name.left(best);
    QString stat = name.mid(best + tensor.size() + 2);
    // A GEMM before the tensor (AutoswitchGemm: <layer>_<gemm>_<tensor>_<stat>): the GEMM found as the tensor
    // (dgrad, wgrad) when another tensor follows it, or left at the end of the layer (fprop).
    if (gemms.contains(tensor)) {
        for (const QString &t : tensors()) {
            if (stat.startsWith(t + QLatin1Char('_')) && stat.size() > t.size() + 1) {
                stat = tensor + QLatin1Char('_') + stat.mid(t.size() + 1);
                tensor = t;
                break;
            }
        }
    }
    QString suffix;
    if (stat.endsWith(QLatin1String("_columnwise"))) {
        suffix = QStringLiteral("_columnwise");
        stat.chop(suffix.size());
    }
    QString recipe;
    for (const QString &r : recipes()) {
        if (stat.startsWith(r + QLatin1Char('_')) && stat.size() > r.size() + 1) {
            recipe = r;
            stat = stat.mid(r.size() + 1);
            break;
        }
    }
    if (stat.isEmpty() || layer.isEmpty())
        return false;
    *out = {layer, tensor, recipe, stat + suffix};
    return true;
}

} // namespace

bool TeDebugImporter::splitGeneral(const QString &name, TeStatName *out)
{
    return splitAtTensor(name, out);
}

bool TeDebugImporter::splitKnown(QString rest, const QString &suffix, TeStatName *out)
{
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

namespace {

qsizetype skipSpaces(QByteArrayView v, qsizetype i)
{
    while (i < v.size() && (v[i] == ' ' || v[i] == '\t'))
        ++i;
    return i;
}

} // namespace

namespace {

// Where `needle` starts in line at or after `from`, or -1. glibc's memmem (vectorised) is several times
// faster than QByteArrayView::indexOf on these ~150-byte lines, and this is the hottest loop of ingest.
template <size_t N> qsizetype find(QByteArrayView line, qsizetype from, const char (&needle)[N])
{
    const void *p = memmem(line.data() + from, size_t(line.size() - from), needle, N - 1);
    return p ? static_cast<const char *>(p) - line.data() : -1;
}

// The debug tool's iteration counter starts again at 0 after a resume unless the training sets an offset, in
// the same log or in a new timestamped one. A counter that goes back is a restart: the new stretch is placed
// after the earlier one, at the step the run's Megatron log resumed from (the latest resume after the earlier
// stretch began and no later than one stride past its end: the counter counts from there), else one stride
// after the earlier stretch's last step. Both stretches are kept, the restart is a point of the run-level
// "rewind" series (source "te-debug", as every rank restarts alike), and a note says how it was placed.
//
// A counter that goes back but not to where its stretch began is one the training set (an offset): the log
// went back to an earlier step, as a Megatron log does after a resume. Its steps are stored as printed; the
// repeated steps' later values replace the earlier ones, and the rewind is marked the same way.
void wentBack(StepPlacement &st, int64_t printed, const ByteLine &l, IngestSink &sink)
{
    const int64_t before = st.lastPlaced;
    const SeriesKey rewind {QString(), QString(), QStringLiteral("rewind"), QStringLiteral("te-debug"), QString()};
    if (printed > st.segmentStart - st.shift) {
        sink.point(rewind, printed + st.shift, double(before));
        sink.problem(l.number, l.offset,
            QStringLiteral("the iteration goes back (iteration=%1 after %2%3): a resume from an earlier step; the "
                           "steps trained again keep their later values")
                .arg(printed)
                .arg(st.lastPrinted)
                .arg(st.continuesEarlierLog ? QStringLiteral(" in the log before") : QString()));
        st.segmentStart = printed + st.shift;
        return;
    }
    const int64_t stride = std::max<int64_t>(st.stride, 1);
    std::optional<int64_t> resumedAt;
    for (const int64_t p : sink.resumePoints()) {
        if (p > st.segmentStart && p <= before + stride)
            resumedAt = p;
    }
    st.shift = resumedAt ? *resumedAt : before + stride - printed;
    const int64_t placed = printed + st.shift;
    sink.point(rewind, placed, double(before));
    sink.problem(l.number, l.offset,
        QStringLiteral("the iteration counter starts again (iteration=%1 after %2%3): a restart; the new steps are "
                       "stored from step %4, %5")
            .arg(printed)
            .arg(st.lastPrinted)
            .arg(st.continuesEarlierLog ? QStringLiteral(" in the log before") : QString())
            .arg(placed)
            .arg(resumedAt ? QStringLiteral("where the run's Megatron log resumed from its checkpoint")
                           : QStringLiteral("one stride after step %1, the last before it (no Megatron log of the "
                                            "run says where it resumed)")
                                 .arg(before)));
    st.segmentStart = placed;
}

} // namespace

ReadPosition TeDebugImporter::read(const QString &path, const ReadPosition &from, IngestSink &sink)
{
    const QString source = QStringLiteral("te-debug rank %1").arg(rankOf(path));
    // Statistic names repeat every iteration: split each once.
    QHash<QByteArray, int64_t> handles;
    StepPlacement st = from.steps;
    ReadPosition end = readByteLines(path, from, sink, [&](const ByteLine &l) {
        const QByteArrayView line = l.bytes;
        const qsizetype it = find(line, 0, "iteration=");
        const qsizetype val = it < 0 ? -1 : find(line, it, "value=");
        if (it < 0 || val < 0)
            return l.complete || line.trimmed().isEmpty(); // other lines of the log are not statistics
        // "<asctime> - <LEVEL> - <name> <ws> iteration=...": the name follows the last " - " before
        // iteration= (any level); a line without one holds the name alone, as the TE docs print it.
        // The usual level first (one vectorised search, the hot path of ingest), any other by scanning back.
        qsizetype nameStart = find(line, 0, " - INFO - ");
        if (nameStart >= 0 && nameStart + 10 <= it) {
            nameStart += 10;
        } else {
            nameStart = 0;
            for (qsizetype d = it - 3; d >= 0; --d) {
                if (line[d] == ' ' && line[d + 1] == '-' && line[d + 2] == ' ') {
                    nameStart = d + 3;
                    break;
                }
            }
        }
        const QByteArrayView name = line.sliced(nameStart, it - nameStart).trimmed();

        int64_t step = 0;
        const char *stepBegin = line.data() + it + 10;
        const auto [stepEnd, stepErr] = std::from_chars(stepBegin, line.data() + val, step);
        double value = 0;
        const qsizetype vStart = skipSpaces(line, val + 6);
        const char *valueEnd = line.data() + line.size();
        while (valueEnd > line.data() + vStart && (valueEnd[-1] == ' ' || valueEnd[-1] == '\t'))
            --valueEnd;
        const auto [vEnd, vErr] = std::from_chars(line.data() + vStart, valueEnd, value);
        const bool stepOk = stepErr == std::errc() && skipSpaces(line, stepEnd - line.data()) == val;
        const bool valueOk = vErr == std::errc() && vEnd == valueEnd && vEnd > line.data() + vStart;
        if (!stepOk || !valueOk) {
            if (!l.complete)
                return false; // still being written
            sink.problem(l.number, l.offset, QStringLiteral("unreadable statistic line"));
            return true;
        }
        if (step != st.lastPrinted || st.continuesEarlierLog) {
            // Every statistic of an iteration shares its step: the counter's checks run once per iteration.
            if (step < st.lastPrinted || (st.continuesEarlierLog && step == st.lastPrinted))
                wentBack(st, step, l, sink);
            else if (st.lastPrinted >= 0)
                st.stride = step - st.lastPrinted;
            if (st.segmentStart < 0)
                st.segmentStart = step + st.shift;
            st.continuesEarlierLog = false;
            st.lastPrinted = step;
            st.lastPlaced = step + st.shift;
        }
        auto h = handles.find(QByteArray::fromRawData(name.data(), name.size()));
        if (h == handles.end()) {
            // A damaged separator (a NUL in " - INFO - ") would leave the timestamp in the name: a layer
            // name has no spaces or control characters. Checked once per name, as names repeat.
            bool clean = !name.isEmpty();
            for (char c : name)
                clean = clean && uchar(c) > 0x20 && c != 0x7F;
            if (!clean) {
                sink.problem(l.number, l.offset,
                    QStringLiteral("no statistic name before 'iteration=' (expected '<time> - <LEVEL> - "
                                   "<layer>_<tensor>_<stat>')"));
                return true;
            }
            TeStatName n;
            const QString nameText = QString::fromUtf8(name);
            if (!splitName(nameText, &n)) {
                sink.problem(l.number, l.offset, QStringLiteral("unknown statistic name '%1'").arg(nameText));
                return true;
            }
            h = handles.insert(name.toByteArray(), sink.series({n.layer, n.tensor, n.stat, source, n.recipe}));
        }
        sink.point(h.value(), step + st.shift, value);
        return true;
    });
    end.steps = st;
    return end;
}

} // namespace fp8scope
