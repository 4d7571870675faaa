#include "tableimporters.h"

#include "linereader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstring>
#include <limits>
#include <optional>

namespace fp8scope {

namespace {

const QStringList &stepNames()
{
    static const QStringList n {QStringLiteral("step"), QStringLiteral("_step"), QStringLiteral("iteration"),
        QStringLiteral("global_step"), QStringLiteral("iter"), QStringLiteral("trainer/global_step")};
    return n;
}

// The header of a CSV file (line 1), needed when resuming a grown file.
QStringList csvHeader(const QString &path)
{
    QFile f(path);
    QStringList fields;
    if (f.open(QIODevice::ReadOnly))
        CsvImporter::splitRecord(QString::fromUtf8(f.readLine(kMaxLine)).trimmed(), &fields);
    return fields;
}

std::optional<double> numberOf(const QJsonValue &v)
{
    if (v.isDouble())
        return v.toDouble();
    if (v.isString()) {
        const QString s = v.toString();
        if (s == QLatin1String("NaN"))
            return std::numeric_limits<double>::quiet_NaN();
        if (s == QLatin1String("Infinity"))
            return std::numeric_limits<double>::infinity();
        if (s == QLatin1String("-Infinity"))
            return -std::numeric_limits<double>::infinity();
    }
    return std::nullopt;
}

// A CSV cell as a number: any the C locale reads, and the words for non-finite values writers use.
std::optional<double> csvNumber(const QString &cell)
{
    bool ok = false;
    const double v = cell.toDouble(&ok);
    if (ok)
        return v;
    const QString w = cell.trimmed().toLower();
    if (w == QLatin1String("nan") || w == QLatin1String("-nan"))
        return std::numeric_limits<double>::quiet_NaN();
    if (w == QLatin1String("inf") || w == QLatin1String("+inf") || w == QLatin1String("infinity")
        || w == QLatin1String("+infinity"))
        return std::numeric_limits<double>::infinity();
    if (w == QLatin1String("-inf") || w == QLatin1String("-infinity"))
        return -std::numeric_limits<double>::infinity();
    return std::nullopt;
}

// Nested objects ({"train": {"tps": 1.0}}) are series named by their path ("train/tps").
void pointsOf(const QJsonObject &o, const QString &prefix, const QString &skip, int64_t step, const QString &source,
    IngestSink &sink, int depth)
{
    for (auto it = o.begin(); it != o.end(); ++it) {
        const QString name = prefix + it.key();
        if (name == skip)
            continue;
        if (it.value().isObject()) {
            if (depth < 8)
                pointsOf(it.value().toObject(), name + QLatin1Char('/'), skip, step, source, sink, depth + 1);
        } else if (const auto v = numberOf(it.value())) {
            sink.point({QString(), QString(), name, source, QString()}, step, *v);
        }
    }
}

} // namespace

QByteArray quoteNonFinite(const QByteArray &line)
{
    if (!line.contains("NaN") && !line.contains("Infinity"))
        return line;
    QByteArray out;
    out.reserve(line.size() + 16);
    bool inString = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (inString) {
            out += c;
            if (c == '\\' && i + 1 < line.size())
                out += line[++i];
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
            out += c;
            continue;
        }
        bool matched = false;
        for (const char *word : {"-Infinity", "Infinity", "NaN"}) {
            const qsizetype n = qsizetype(qstrlen(word));
            if (i + n <= line.size() && std::memcmp(line.constData() + i, word, size_t(n)) == 0) {
                out += '"';
                out += word;
                out += '"';
                i += n - 1;
                matched = true;
                break;
            }
        }
        if (!matched)
            out += c;
    }
    return out;
}

QString runOfHistoryExport(const QString &path)
{
    const QFileInfo info(path);
    const QString stem = info.completeBaseName();
    if (!stem.startsWith(QLatin1String("history_")))
        return {};
    const QStringList exports
        = info.dir().entryList({QStringLiteral("history_*.csv"), QStringLiteral("history_*.csv.*")}, QDir::Files);
    return exports.size() > 1 ? stem : QString();
}

int stepColumn(const QStringList &names)
{
    for (const QString &s : stepNames()) {
        const qsizetype i = names.indexOf(s);
        if (i >= 0)
            return int(i);
    }
    return -1;
}

bool CsvImporter::splitRecord(const QString &line, QStringList *fields)
{
    fields->clear();
    QString cur;
    bool quoted = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const QChar c = line.at(i);
        if (quoted) {
            if (c == QLatin1Char('"')) {
                if (i + 1 < line.size() && line.at(i + 1) == QLatin1Char('"')) {
                    cur += c;
                    ++i;
                } else {
                    quoted = false;
                }
            } else {
                cur += c;
            }
        } else if (c == QLatin1Char('"')) {
            quoted = true;
        } else if (c == QLatin1Char(',')) {
            fields->append(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    fields->append(cur);
    return !quoted;
}

bool CsvImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    if (!fileName.endsWith(QLatin1String(".csv")))
        return false;
    QStringList header;
    splitRecord(QString::fromUtf8(head.left(head.indexOf('\n'))).trimmed(), &header);
    return stepColumn(header) >= 0;
}

ReadPosition CsvImporter::read(const QString &path, const ReadPosition &from, IngestSink &sink)
{
    QStringList header = from.line > 0 ? csvHeader(path) : QStringList();
    int stepCol = stepColumn(header);
    int runCol = int(header.indexOf(QStringLiteral("run")));
    const QString fileRun = runOfHistoryExport(path);
    if (!fileRun.isEmpty())
        sink.useRun(fileRun);
    const QString source = QStringLiteral("csv");
    QStringList fields;
    return readLines(path, from, sink, [&](const TextLine &l) {
        if (l.number == 1) {
            splitRecord(l.text.trimmed(), &header);
            stepCol = stepColumn(header);
            runCol = int(header.indexOf(QStringLiteral("run")));
            if (stepCol < 0)
                sink.problem(1, 0, QStringLiteral("CSV header has no step column (step, _step, iteration, ...)"));
            return true;
        }
        if (stepCol < 0 || l.text.trimmed().isEmpty())
            return true;
        if (!splitRecord(l.text, &fields) || fields.size() != header.size()) {
            if (!l.complete)
                return false;
            sink.problem(l.number, l.offset,
                QStringLiteral("expected %1 fields, found %2").arg(header.size()).arg(fields.size()));
            return true;
        }
        bool ok = false;
        const int64_t step = int64_t(fields.at(stepCol).toDouble(&ok));
        if (!ok) {
            sink.problem(l.number, l.offset, QStringLiteral("step '%1' is not a number").arg(fields.at(stepCol)));
            return true;
        }
        if (runCol >= 0)
            sink.useRun(fields.at(runCol));
        for (qsizetype c = 0; c < fields.size(); ++c) {
            if (c == stepCol || c == runCol || fields.at(c).isEmpty())
                continue;
            // A non-finite value (pandas and W&B write nan, NaN, inf, -inf, Infinity) is kept as what it is: the
            // views mark it and the triage reads it as a step that blew up (docs/STORE.md).
            const std::optional<double> v = csvNumber(fields.at(c));
            if (v)
                sink.point({QString(), QString(), header.at(c), source, QString()}, step, *v);
            else
                sink.problem(l.number, l.offset,
                    QStringLiteral("'%1' in column '%2' is not a number").arg(fields.at(c), header.at(c)));
        }
        return true;
    });
}

bool JsonlImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    return (fileName.endsWith(QLatin1String(".jsonl")) || fileName.endsWith(QLatin1String(".ndjson")))
        && head.trimmed().startsWith('{');
}

ReadPosition JsonlImporter::read(const QString &path, const ReadPosition &from, IngestSink &sink)
{
    const QString source = QStringLiteral("jsonl");
    return readLines(path, from, sink, [&](const TextLine &l) {
        if (l.text.trimmed().isEmpty())
            return true;
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(quoteNonFinite(l.text.toUtf8()), &err);
        if (err.error != QJsonParseError::NoError || !doc.isObject()) {
            if (!l.complete)
                return false;
            sink.problem(l.number, l.offset,
                err.error != QJsonParseError::NoError ? QStringLiteral("invalid JSON: %1").arg(err.errorString())
                                                      : QStringLiteral("expected one JSON object per line"));
            return true;
        }
        const QJsonObject o = doc.object();
        const int stepKey = stepColumn(o.keys());
        if (stepKey < 0 || !o.value(o.keys().at(stepKey)).isDouble()) {
            sink.problem(l.number, l.offset, QStringLiteral("no numeric step (step, _step, iteration, ...)"));
            return true;
        }
        const QString stepName = o.keys().at(stepKey);
        if (o.value(QStringLiteral("run")).isString())
            sink.useRun(o.value(QStringLiteral("run")).toString());
        const int64_t step = int64_t(o.value(stepName).toDouble());
        pointsOf(o, QString(), stepName, step, source, sink, 0);
        return true;
    });
}

} // namespace fp8scope
