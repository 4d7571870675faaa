#include "megatronlogimporter.h"

#include "compressedfile.h"
#include "configlimits.h"
#include "linereader.h"
#include "versionsimporter.h"

#include <QRegularExpression>

#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace fp8scope {

namespace {

const QString kSource = QStringLiteral("megatron-log");

// One "key: value" field of a line.
struct Field {
    QString name;
    QStringView text;
    double value = 0;
};

// "key: value" fields after the first "|"-separated part; false if a field's value is not a number (*bad names
// it).
bool parseFields(QStringView rest, const QString &prefix, std::vector<Field> *out, QString *bad)
{
    for (QStringView field : rest.split(QLatin1Char('|'))) {
        field = field.trimmed();
        if (field.isEmpty())
            continue;
        const qsizetype colon = field.lastIndexOf(QLatin1Char(':'));
        if (colon <= 0) {
            *bad = field.toString();
            return false;
        }
        bool ok = false;
        const QStringView text = field.mid(colon + 1).trimmed();
        const double v = text.toDouble(&ok);
        if (!ok) {
            *bad = field.toString();
            return false;
        }
        out->push_back({prefix + field.left(colon).trimmed().toString(), text, v});
    }
    return true;
}

// A field that holds an interval's mean of a loss Megatron sums only over the iterations it did not skip ("lm
// loss", "mtp loss", "load_balancing_loss"; not "loss scale").
bool isIntervalLoss(const QString &name)
{
    return name.contains(QLatin1String("loss")) && !name.contains(QLatin1String("loss scale"));
}

// What a training line says about the step's health (docs/STORE.md, "Skipped and non-finite steps").
struct LineHealth {
    bool allSkipped = false; // every iteration of the interval skipped: its losses printed as 0 are no losses
    bool nonFinite = false; // a loss or the grad norm is nan or inf, or no loss was made
};

// Stores the fields of one line. Megatron's training_log divides each loss's sum over the interval by
// max(1, iterations not skipped): an interval whose iterations were all skipped prints its losses as
// 0.000000E+00, which is no loss; they are stored as NaN (a gap the views mark), as are nan and inf, which are
// named in *nonFinite.
LineHealth storeFields(const std::vector<Field> &fields, int64_t step, IngestSink &sink, QStringList *nonFinite)
{
    LineHealth h;
    double skipped = 0;
    bool hasLoss = false;
    for (const Field &f : fields) {
        if (f.name == QLatin1String("number of skipped iterations"))
            skipped = f.value;
        hasLoss = hasLoss || isIntervalLoss(f.name);
    }
    for (const Field &f : fields) {
        if (skipped > 0 && f.value == 0 && isIntervalLoss(f.name))
            h.allSkipped = true;
    }
    // Versions before 2024 printed a loss only when its mean was above 0: no loss at all on a line that
    // skipped iterations is the same interval. Its "lm loss" is no loss too, and stored as such.
    if (skipped > 0 && !hasLoss) {
        h.allSkipped = h.nonFinite = true;
        sink.point({QString(), QString(), QStringLiteral("lm loss"), kSource, QString()}, step,
            std::numeric_limits<double>::quiet_NaN());
    }
    for (const Field &f : fields) {
        double v = f.value;
        if (h.allSkipped && v == 0 && isIntervalLoss(f.name)) {
            v = std::numeric_limits<double>::quiet_NaN();
            h.nonFinite = true;
        } else if (!std::isfinite(v)) {
            nonFinite->append(QStringLiteral("%1 %2").arg(f.name, f.text.toString()));
            if (isIntervalLoss(f.name) || f.name.endsWith(QLatin1String("grad norm")))
                h.nonFinite = true;
        }
        sink.point({QString(), QString(), f.name, kSource, QString()}, step, v);
    }
    return h;
}

// A line whose values were not finite: said once per line, with the fields (the points are kept as NaN, and
// the curves and the triage read them as missing).
void reportNonFinite(IngestSink &sink, const TextLine &l, int64_t step, const QStringList &fields)
{
    if (!fields.isEmpty())
        sink.problem(l.number, l.offset,
            QStringLiteral("iteration %1: %2 (not a finite number)").arg(step).arg(fields.join(QStringLiteral(", "))));
}

// Where `marker` ("iteration ") starts in the line as a word followed by a number, wherever a launcher or
// logger put the Megatron text (" [2026-01-15 23:06:01] iteration 1/ ...", "0: iteration ..." from srun -l,
// "[default0]:iteration ..." from torchrun); -1 when it does not.
qsizetype markerAt(QStringView line, QLatin1StringView marker)
{
    for (qsizetype at = line.indexOf(marker); at >= 0; at = line.indexOf(marker, at + 1)) {
        if (at > 0 && line[at - 1].isLetterOrNumber())
            continue;
        qsizetype next = at + marker.size();
        while (next < line.size() && line[next] == QLatin1Char(' '))
            ++next;
        if (next < line.size() && line[next].isDigit())
            return at;
    }
    return -1;
}

// The line without what launchers put before it: timestamps and ranks in brackets ("[2026-01-15 ...]",
// "[default3]:", "[rank0]:") and srun -l's "12: ".
QStringView withoutLauncherPrefix(QStringView line)
{
    for (;;) {
        line = line.trimmed();
        if (line.startsWith(QLatin1Char('['))) {
            const qsizetype close = line.indexOf(QLatin1Char(']'));
            if (close < 0 || close > 64)
                return line;
            line = line.mid(close + 1);
            if (line.startsWith(QLatin1Char(':')))
                line = line.mid(1);
            continue;
        }
        qsizetype digits = 0;
        while (digits < line.size() && digits < 6 && line[digits].isDigit())
            ++digits;
        if (digits > 0 && digits < line.size() && line[digits] == QLatin1Char(':')) {
            line = line.mid(digits + 1);
            continue;
        }
        return line;
    }
}

// The iteration of a "successfully loaded checkpoint from ... at iteration N" line; nullopt for another line.
std::optional<int64_t> loadedIteration(QStringView line)
{
    static const QRegularExpression loaded(
        QStringLiteral("successfully loaded checkpoint from .* at iteration (\\d+)"));
    if (!line.contains(QLatin1String("successfully loaded checkpoint")))
        return std::nullopt;
    const QRegularExpressionMatch m = loaded.match(line);
    bool ok = false;
    const int64_t at = m.hasMatch() ? m.capturedView(1).toLongLong(&ok) : 0;
    return ok ? std::optional(at) : std::nullopt;
}

// The N of a line from "iteration N/ M |" on; nullopt when it is not a number.
std::optional<int64_t> iterationNumber(QStringView fromIteration)
{
    const QStringView head = fromIteration.mid(10, fromIteration.indexOf(QLatin1Char('|')) - 10).trimmed();
    bool ok = false;
    const int64_t step = head.left(head.indexOf(QLatin1Char('/'))).trimmed().toLongLong(&ok);
    return ok ? std::optional(step) : std::nullopt;
}

// The M of a line from "iteration N/ M |" on (the planned iterations, train_iters); nullopt when there is none.
std::optional<int64_t> plannedIterations(QStringView fromIteration)
{
    const QStringView head = fromIteration.mid(10, fromIteration.indexOf(QLatin1Char('|')) - 10).trimmed();
    const qsizetype slash = head.indexOf(QLatin1Char('/'));
    bool ok = false;
    const int64_t planned = slash < 0 ? 0 : head.mid(slash + 1).trimmed().toLongLong(&ok);
    return ok && planned > 0 ? std::optional(planned) : std::nullopt;
}

// Where a validation line ("validation loss at ...", "validation-<set> loss at ...") starts, or -1.
qsizetype validationAt(QStringView line)
{
    for (qsizetype at = line.indexOf(QLatin1String("validation")); at >= 0;
         at = line.indexOf(QLatin1String("validation"), at + 1)) {
        if (at > 0 && line[at - 1].isLetterOrNumber())
            continue;
        const qsizetype loss = line.indexOf(QLatin1String(" loss at iteration "), at);
        const qsizetype space = line.indexOf(QLatin1Char(' '), at);
        if (loss >= 0 && loss == space)
            return at;
    }
    return -1;
}

} // namespace

bool MegatronLogImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    // Slurm output files (.out) often start with pages of shell tracing: take them by name, since lines
    // that are not Megatron's are ignored anyway. Other text logs need a Megatron marker in their head.
    if (fileName.endsWith(QLatin1String(".out")))
        return true;
    const bool textName = fileName.endsWith(QLatin1String(".log")) || fileName.endsWith(QLatin1String(".txt"));
    return textName
        && (head.contains(" iteration ") || head.contains("using world size") || head.contains("Megatron")
            || head.contains("megatron") || head.contains("consumed samples"));
}

// Megatron prints its arguments once at start-up, between "--- arguments ---" and "--- end of arguments ---",
// one "  name ........ value" per line: the run's config when it has no YAML.
//
// A log whose iterations go back (a crash, then a resume from the last checkpoint in the same file) is read as the
// training saw it: the repeated steps' later values replace the earlier ones (the store keeps one value per
// step), and the rewind itself is kept as a point of the run-level series "rewind" at the first step trained again
// (the iteration of the checkpoint it loaded, when the log says "successfully loaded checkpoint from ... at
// iteration N"; else the first step printed after it), whose value is the last step printed before it. (Several
// ranks printing the same iteration do not go back.) A resume that loads the checkpoint of the last step printed
// repeats nothing, but is marked the same way: the training restarted. The last step printed is carried to the
// next read of a grown log and to the run's next log (a resumed job's launcher log, read after it as the ingest
// orders a run's logs by their first step), so a rewind across them is seen too.
MegatronLines::MegatronLines(IngestSink &sink, const StepPlacement &from)
    : m_sink(sink)
    , m_lastIteration(from.lastPlaced)
    , m_continuing(from.continuesEarlierLog)
    , m_badSince(from.badSince)
{
}

void MegatronLines::finish(StepPlacement *steps) const
{
    steps->lastPrinted = steps->lastPlaced = m_lastIteration;
    steps->continuesEarlierLog = m_continuing;
    steps->badSince = m_badSince;
}

bool MegatronLines::handle(const TextLine &l)
{
    static const QRegularExpression argument(QStringLiteral("^([A-Za-z_][A-Za-z0-9_]*) \\.{2,} ?(.*)$"));
    IngestSink &sink = m_sink;
    const SeriesKey rewind {QString(), QString(), QStringLiteral("rewind"), kSource, QString()};
    const SeriesKey rewoundBlowUp {QString(), QString(), QStringLiteral("rewound blow-up"), kSource, QString()};
    QStringView line = withoutLauncherPrefix(QStringView(l.text));
    QString bad;
    if (line.contains(QLatin1String("successfully loaded checkpoint"))) {
        if (const auto at = loadedIteration(line))
            m_loadedAt = at;
        return true;
    }
    // The training and validation lines wherever they start within the line. Validation lines name
    // their set: "validation loss at iteration N", "validation-<set> loss at iteration N" (several
    // validation sets) and "validation loss at iteration N on test set"; each set is a series of its own,
    // never the training loss.
    const qsizetype validation = validationAt(line);
    const qsizetype iteration = validation >= 0 ? -1 : markerAt(line, QLatin1StringView("iteration "));
    if (validation >= 0)
        line = line.mid(validation);
    else if (iteration > 0)
        line = line.mid(iteration);
    if (line.startsWith(QLatin1Char('-')) && line.endsWith(QLatin1Char('-'))
        && line.contains(QLatin1String(" arguments "))) {
        if (!l.complete)
            return false;
        m_inArguments = !line.contains(QLatin1String("end of arguments"));
        return true;
    }
    if (m_inArguments) {
        if (!l.complete)
            return false;
        const QRegularExpressionMatch m = argument.match(line);
        if (m.hasMatch()) {
            if (m_budget.take())
                sink.config(m.captured(1), m.captured(2).trimmed());
            else if (!std::exchange(m_saidTooMany, true))
                sink.problem(l.number, l.offset,
                    QStringLiteral("more than %1 arguments; the rest are not read").arg(kMaxConfigKeys));
        } else
            m_inArguments = false; // the block ended without its closing line
        return true;
    }
    if (line.startsWith(QLatin1String("iteration ")) && line.contains(QLatin1Char('|'))) {
        const qsizetype bar = line.indexOf(QLatin1Char('|'));
        const std::optional<int64_t> number = iterationNumber(line);
        if (!number || !line.endsWith(QLatin1Char('|'))) {
            if (!l.complete)
                return false;
            sink.problem(l.number, l.offset, QStringLiteral("unreadable iteration line"));
            return true;
        }
        const int64_t step = *number;
        // The plan every line prints ("iteration N/ M"): train_iters, for a log without its arguments block.
        if (!m_saidPlan) {
            if (const auto planned = plannedIterations(line); planned && l.complete) {
                sink.config(QStringLiteral("train_iters"), QString::number(*planned));
                m_saidPlan = true;
            }
        }
        // Back from the last step printed, or a checkpoint of an earlier step loaded since (a crash right
        // after a step was printed resumes by printing that step again).
        if (step < m_lastIteration || (m_continuing && step == m_lastIteration)
            || (m_loadedAt && m_lastIteration >= 0 && *m_loadedAt <= m_lastIteration)) {
            const int64_t resumed = m_loadedAt && *m_loadedAt <= step ? *m_loadedAt : step;
            sink.point(rewind, resumed, double(m_lastIteration));
            // The stretch it went back from had blown up: a recovery. Kept at the step the blow-up began,
            // since the steps trained again replace the stretch's own points.
            if (m_badSince >= 0)
                sink.point(rewoundBlowUp, m_badSince, double(resumed));
            m_badSince = -1;
        }
        m_continuing = false;
        m_lastIteration = step;
        m_loadedAt.reset();
        QStringList nonFinite;
        std::vector<Field> fields;
        const bool readable = parseFields(line.mid(bar + 1), QString(), &fields, &bad);
        const LineHealth health = storeFields(fields, step, sink, &nonFinite);
        if (!readable)
            sink.problem(l.number, l.offset, QStringLiteral("unreadable field '%1'").arg(bad));
        if (health.nonFinite || health.allSkipped) {
            if (m_badSince < 0)
                m_badSince = step;
        } else if (readable) {
            m_badSince = -1;
        }
        reportNonFinite(sink, l, step, nonFinite);
        return true;
    }
    if (validation >= 0) {
        static const QRegularExpression head(
            QStringLiteral("^validation(?:-(\\S+))? loss at iteration +(\\d+)(?: on (\\S+) set)? *\\|"));
        const QRegularExpressionMatch m = head.match(line);
        bool ok = false;
        const int64_t step = m.hasMatch() ? m.capturedView(2).toLongLong(&ok) : 0;
        if (!ok || !line.endsWith(QLatin1Char('|'))) {
            if (!l.complete)
                return false;
            sink.problem(l.number, l.offset, QStringLiteral("unreadable validation line"));
            return true;
        }
        // "validation lm loss", "validation-wiki lm loss", "test lm loss".
        const QString set = m.captured(3);
        const QString prefix = !set.isEmpty() && set != QLatin1String("validation") ? set + QLatin1Char(' ')
            : m.capturedView(1).isEmpty()                                           ? QStringLiteral("validation ")
                                          : QStringLiteral("validation-%1 ").arg(m.captured(1));
        QStringList nonFinite;
        std::vector<Field> fields;
        const bool readable = parseFields(line.mid(m.capturedLength(0)), prefix, &fields, &bad);
        storeFields(fields, step, sink, &nonFinite);
        if (!readable)
            sink.problem(l.number, l.offset, QStringLiteral("unreadable field '%1'").arg(bad));
        reportNonFinite(sink, l, step, nonFinite);
        return true;
    }
    if (line.contains(QLatin1String("version")) || line.contains(QLatin1String("Version"))) {
        if (const auto v = versionFromLine(line)) {
            if (!l.complete)
                return false;
            sink.version(v->first, v->second);
        }
    }
    return true;
}

ReadPosition MegatronLogImporter::read(const QString &path, const ReadPosition &from, IngestSink &sink)
{
    MegatronLines lines(sink, from.steps);
    ReadPosition end = readLines(path, from, sink, [&](const TextLine &l) { return lines.handle(l); });
    lines.finish(&end.steps);
    return end;
}

std::optional<int64_t> MegatronLogImporter::firstStep(const QString &path)
{
    DecompressedFile f(path);
    QString error;
    if (!f.open(&error))
        return std::nullopt;
    QByteArray pending;
    qint64 seen = 0;
    while (seen < kMaxStartSearch) {
        const QByteArray block = f.read(qint64(1) << 20);
        if (block.isEmpty())
            break;
        seen += block.size();
        pending += block;
        qsizetype start = 0;
        for (qsizetype nl = pending.indexOf('\n'); nl >= 0; start = nl + 1, nl = pending.indexOf('\n', start)) {
            const QString text = QString::fromUtf8(pending.constData() + start, nl - start);
            const QStringView line = withoutLauncherPrefix(text);
            if (const auto at = loadedIteration(line))
                return *at + 1;
            if (validationAt(line) >= 0)
                continue;
            const qsizetype it = markerAt(line, QLatin1StringView("iteration "));
            if (it < 0 || !line.mid(it).contains(QLatin1Char('|')))
                continue;
            if (const auto step = iterationNumber(line.mid(it)))
                return step;
        }
        pending.remove(0, start);
    }
    return std::nullopt;
}

} // namespace fp8scope
