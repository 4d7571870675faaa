#include "dumpnames.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QSet>

#include <algorithm>

namespace fp8scope {

std::optional<TeDumpPath> parseTeDumpPath(const QString &path)
{
    static const QRegularExpression re(QStringLiteral("^(.*)/tensor_dumps/rank_(\\d+)/iter_(\\d+)/([^/]+)\\.pt$"));
    const auto m = re.match(QDir::fromNativeSeparators(path));
    if (!m.hasMatch())
        return std::nullopt;
    TeDumpPath p;
    p.logDir = m.captured(1);
    p.rank = m.captured(2).toInt();
    p.iteration = m.captured(3).toLongLong();
    p.stem = m.captured(4);
    return p;
}

QString sanitizeDumpName(const QString &name)
{
    QString out = name;
    for (QChar &c : out) {
        if (QStringLiteral("/\\:*?\"<>|. ").contains(c))
            c = QLatin1Char('_');
    }
    return out;
}

namespace {

QFileInfoList inspectLogs(const QString &logDir)
{
    QStringList folders {logDir + QStringLiteral("/nvdlfw_inspect_logs")};
    const QDir dir(logDir);
    for (const QString &sub : dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot))
        folders << dir.filePath(sub) + QStringLiteral("/nvdlfw_inspect_logs");
    QFileInfoList out;
    for (const QString &folder : folders)
        out << QDir(folder).entryInfoList({QStringLiteral("*.log")}, QDir::Files, QDir::Name);
    return out;
}

} // namespace

QString inspectLogSignature(const QString &logDir)
{
    QString out;
    for (const QFileInfo &f : inspectLogs(logDir))
        out += QStringLiteral("%1:%2:%3;").arg(f.filePath()).arg(f.size()).arg(f.lastModified().toMSecsSinceEpoch());
    return out;
}

QStringList inspectLogLayerNames(const QString &logDir)
{
    static const QRegularExpression assigned(QStringLiteral("Assigned layer name: (\\S+)"));
    static const QRegularExpression layer(QStringLiteral("LAYER=([^:\\s]+):"));
    QSet<QString> names;
    constexpr qint64 kMaxBytes = qint64(64) << 20; // of each log: the names come first
    {
        for (const QFileInfo &info : inspectLogs(logDir)) {
            QFile f(info.filePath());
            if (!f.open(QIODevice::ReadOnly))
                continue;
            qint64 read = 0;
            while (!f.atEnd() && read < kMaxBytes) {
                const QByteArray line = f.readLine(1 << 16);
                read += line.size();
                if (!line.contains("Assigned layer name") && !line.contains("LAYER="))
                    continue;
                const QString text = QString::fromUtf8(line);
                for (const auto *re : {&assigned, &layer}) {
                    const auto m = re->match(text);
                    if (m.hasMatch())
                        names.insert(m.captured(1));
                }
            }
        }
    }
    QStringList out(names.begin(), names.end());
    std::sort(out.begin(), out.end(),
        [](const QString &a, const QString &b) { return a.size() != b.size() ? a.size() > b.size() : a < b; });
    return out;
}

ResolvedDumpName resolveDumpStem(const QString &stem, const QStringList &layers)
{
    // The tensors the debug tool names (its `tensors` config and the GEMM outputs).
    static const QStringList tensors {QStringLiteral("activation"), QStringLiteral("weight"),
        QStringLiteral("gradient"), QStringLiteral("output"), QStringLiteral("wgrad"), QStringLiteral("dgrad")};
    ResolvedDumpName best;
    for (const QString &layer : layers) { // longest first
        const QString prefix = sanitizeDumpName(layer) + QLatin1Char('_');
        if (stem.size() > prefix.size() && stem.startsWith(prefix)) {
            best.layer = layer;
            best.tensor = stem.mid(prefix.size());
            best.resolved = true;
            return best;
        }
    }
    best.layer = stem;
    for (const QString &t : tensors) {
        if (stem.size() > t.size() + 1 && stem.endsWith(QLatin1Char('_') + t)) {
            best.layer = stem.chopped(t.size() + 1);
            best.tensor = t;
            break;
        }
    }
    return best;
}

} // namespace fp8scope
