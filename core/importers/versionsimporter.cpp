#include "versionsimporter.h"

#include "linereader.h"

#include <QFileInfo>
#include <QRegularExpression>

namespace fp8scope {

namespace {

const QRegularExpression &freezeLine()
{
    // name[extras]==version, optionally followed by pip's environment markers or hashes.
    static const QRegularExpression re(
        QStringLiteral("^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\\[[^\\]]*\\])?\\s*===?\\s*([0-9A-Za-z][0-9A-Za-z.+!_-]*)"));
    return re;
}

const QRegularExpression &listLine()
{
    // `pip list`: "name   version" (and an optional location column).
    static const QRegularExpression re(
        QStringLiteral("^([A-Za-z0-9][A-Za-z0-9._-]*)\\s+([0-9][0-9A-Za-z.+!_-]*)(?:\\s+\\S.*)?$"));
    return re;
}

bool versionsName(const QString &fileName)
{
    const QString n = fileName.toLower();
    if (!n.endsWith(QLatin1String(".txt")) && !n.endsWith(QLatin1String(".lock")) && !n.contains(QLatin1Char('.')))
        return false;
    return n.contains(QLatin1String("freeze")) || n.startsWith(QLatin1String("requirements"))
        || n.startsWith(QLatin1String("pip_list")) || n.startsWith(QLatin1String("pip-list"))
        || n == QLatin1String("versions.txt");
}

} // namespace

QString normalizePackage(const QString &name)
{
    static const QRegularExpression runs(QStringLiteral("[-_.]+"));
    QString n = name.trimmed().toLower();
    n.replace(runs, QStringLiteral("-"));
    n.replace(QLatin1Char(' '), QLatin1Char('-'));
    if (n == QLatin1String("pytorch"))
        return QStringLiteral("torch");
    if (n == QLatin1String("transformerengine") || n.startsWith(QLatin1String("transformer-engine")))
        return QStringLiteral("transformer-engine");
    if (n == QLatin1String("mcore") || n == QLatin1String("megatron-core") || n == QLatin1String("megatroncore"))
        return QStringLiteral("megatron-core");
    if (n == QLatin1String("nemo") || n == QLatin1String("nemo-toolkit"))
        return QStringLiteral("nemo-toolkit");
    static const QRegularExpression nvidiaWheel(QStringLiteral("^nvidia-(cudnn|nccl|cuda-runtime)-cu\\d+$"));
    const QRegularExpressionMatch m = nvidiaWheel.match(n);
    if (m.hasMatch())
        return m.captured(1) == QLatin1String("cuda-runtime") ? QStringLiteral("cuda") : m.captured(1);
    return n;
}

std::optional<std::pair<QString, QString>> versionFromLine(QStringView line)
{
    static const QRegularExpression re(
        QStringLiteral("(?:^|[^A-Za-z0-9_-])(transformer[ _-]?engine|megatron[ _-]?core|mcore|nemo(?:[ _-]toolkit)?|"
                       "torch|pytorch|cuda|cudnn|nccl|apex|flash[ _-]?attn)\\s+version\\s*[:=]?\\s*v?"
                       "([0-9]+(?:\\.[0-9A-Za-z+_-]+)+)"),
        QRegularExpression::CaseInsensitiveOption);
    if (line.size() > 4096)
        return std::nullopt;
    const QRegularExpressionMatch m = re.match(line);
    if (!m.hasMatch())
        return std::nullopt;
    QString package = normalizePackage(m.captured(1));
    // nvidia-smi's banner: the CUDA version the driver supports, not the toolkit the run was built with.
    if (package == QLatin1String("cuda") && line.contains(QLatin1String("Driver Version")))
        package = QStringLiteral("cuda-driver");
    return std::make_pair(package, m.captured(2));
}

bool VersionsImporter::recognises(const QString &fileName, const QByteArray &head) const
{
    if (versionsName(fileName))
        return true;
    // Another .txt whose lines are mostly name==version.
    if (!fileName.toLower().endsWith(QLatin1String(".txt")))
        return false;
    int pinned = 0, other = 0;
    for (const QByteArray &raw : head.split('\n')) {
        const QString l = QString::fromUtf8(raw).trimmed();
        if (l.isEmpty() || l.startsWith(QLatin1Char('#')))
            continue;
        (freezeLine().match(l).hasMatch() ? pinned : other)++;
    }
    return pinned >= 3 && pinned >= 4 * other;
}

ReadPosition VersionsImporter::read(const QString &path, const ReadPosition &, IngestSink &sink)
{
    int found = 0;
    bool table = false; // after pip list's "Package  Version" header and its dashes
    const ReadPosition end = readLines(path, {}, sink, [&](const TextLine &l) {
        const QString line = l.text.trimmed();
        if (line.isEmpty() || line.startsWith(QLatin1Char('#')) || line.startsWith(QLatin1Char('-'))
            || line.contains(QLatin1String(" @ ")))
            return true; // comments, options (-e, -r), dash rules, packages installed from a URL or path
        if (line.startsWith(QLatin1String("Package")) && line.contains(QLatin1String("Version"))) {
            table = true;
            return true;
        }
        QRegularExpressionMatch m = freezeLine().match(line);
        if (!m.hasMatch() && table)
            m = listLine().match(line);
        if (m.hasMatch()) {
            sink.version(normalizePackage(m.captured(1)), m.captured(2));
            ++found;
        } else if (const auto v = versionFromLine(line)) {
            sink.version(v->first, v->second);
            ++found;
        }
        return true;
    });
    if (found == 0)
        sink.problem(0, -1,
            QStringLiteral("%1: no pinned package versions (name==version lines)").arg(QFileInfo(path).fileName()));
    return end;
}

} // namespace fp8scope
