#include "folderscanner.h"

#include "compressedfile.h"
#include "importers.h"
#include "linereader.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSet>

#include <dirent.h>

#include <algorithm>
#include <map>

namespace fp8scope {

namespace {

bool isWorkspaceManifest(const ScannedFile &f)
{
    return f.importer->name() == QLatin1String("workspace-manifest");
}

// Names of the subfolders training jobs write the parts of one run into (Megatron's logs/ and tensorboard/,
// dumps/, a rank's own folder): a folder whose subfolders all have such names is one run, not a group.
bool isPartName(const QString &folder)
{
    static const QSet<QString> parts {QStringLiteral("logs"), QStringLiteral("log"), QStringLiteral("tensorboard"),
        QStringLiteral("tb"), QStringLiteral("tb_logs"), QStringLiteral("events"), QStringLiteral("dumps"),
        QStringLiteral("dump"), QStringLiteral("tensors"), QStringLiteral("tensor_dumps"),
        QStringLiteral("checkpoints"), QStringLiteral("checkpoint"), QStringLiteral("ckpt"), QStringLiteral("ckpts"),
        QStringLiteral("wandb"), QStringLiteral("config"), QStringLiteral("configs"), QStringLiteral("metrics"),
        QStringLiteral("stats"), QStringLiteral("statistics"), QStringLiteral("results"), QStringLiteral("eval"),
        QStringLiteral("evals"), QStringLiteral("evaluation"), QStringLiteral("nvdlfw_inspect_logs"),
        QStringLiteral("nvdlfw_inspect_statistics_logs"), QStringLiteral("lightning_logs"), QStringLiteral("mlruns")};
    static const QRegularExpression rank(QStringLiteral("^(global)?rank[-_]?\\d+$"));
    const QString name = folder.toLower();
    // TE's debug tool writes each feature's logs into a folder of its own (nvdlfw_inspect_logs,
    // nvdlfw_inspect_statistics_logs, nvdlfw_inspect_autoswitchgemm_logs, ...).
    return parts.contains(name) || rank.match(name).hasMatch() || name.startsWith(QLatin1String("nvdlfw_inspect"));
}

// Decides whether `dir` (relative to the opened folder, "" for itself), holding the files `under`, is one
// run or a group of runs, and records the run folder of each file in `runFolder`.
class Grouper
{
public:
    Grouper(const std::vector<ScannedFile> &files, std::vector<QString> *runFolder)
        : m_files(files)
        , m_runFolder(runFolder)
    {
    }

    // Returns whether `dir` is a group.
    bool group(const QString &dir, const std::vector<size_t> &under)
    {
        bool ownFiles = false;
        std::vector<size_t> manifests;
        std::map<QString, std::vector<size_t>> subfolders;
        for (size_t i : under) {
            const QString rel = dir.isEmpty() ? m_files[i].relativePath : m_files[i].relativePath.mid(dir.size() + 1);
            const qsizetype slash = rel.indexOf(QLatin1Char('/'));
            if (slash < 0) {
                if (isWorkspaceManifest(m_files[i]))
                    manifests.push_back(i);
                else
                    ownFiles = true;
                continue;
            }
            subfolders[rel.left(slash)].push_back(i);
        }
        // A workspace manifest says so even for one run folder; files of the folder's own say otherwise, and
        // so do subfolders that are all parts of one run (logs/ and tensorboard/). Subfolders of other names are
        // runs when two of them hold the same kind of record (two training logs, two metrics tables); subfolders
        // that hold different kinds (logs/ the training log, te_debug/ the statistics, lightning_logs/ a metrics
        // table beside tensorboard/) are the parts of one run, whatever they are called.
        const bool allParts
            = std::all_of(subfolders.begin(), subfolders.end(), [](const auto &sub) { return isPartName(sub.first); });
        const bool isGroup = !ownFiles
            && ((subfolders.size() >= 2 && !allParts && shareAKind(subfolders))
                || (!manifests.empty() && !subfolders.empty()));
        if (!isGroup) {
            for (size_t i : under)
                (*m_runFolder)[i] = dir;
            return false;
        }
        for (const auto &[name, files] : subfolders)
            group(dir.isEmpty() ? name : dir + QLatin1Char('/') + name, files);
        // The manifest names its runs itself (IngestSink::useRunFolder); its file needs a run that exists.
        const QString firstRun = (*m_runFolder)[subfolders.begin()->second.front()];
        for (size_t i : manifests)
            (*m_runFolder)[i] = firstRun;
        return true;
    }

private:
    // Whether two of the subfolders hold files of one importer (configs and package lists aside: every part of
    // a run may have its own), or two hold a training record (a log, a metrics table, TensorBoard events, golden
    // values): runs of different loggers. A subfolder of statistics, dumps or evaluations only is a part.
    bool shareAKind(const std::map<QString, std::vector<size_t>> &subfolders) const
    {
        static const QSet<QString> records {QStringLiteral("megatron-log"), QStringLiteral("csv"),
            QStringLiteral("jsonl"), QStringLiteral("tensorboard"), QStringLiteral("golden-values")};
        QHash<QString, int> holders;
        int recordHolders = 0;
        for (const auto &[name, files] : subfolders) {
            QSet<QString> kinds;
            for (size_t i : files) {
                const QString kind = m_files[i].importer->name();
                if (kind != QLatin1String("config-json") && kind != QLatin1String("config-yaml")
                    && kind != QLatin1String("versions"))
                    kinds.insert(kind);
            }
            bool record = false;
            for (const QString &k : std::as_const(kinds)) {
                if (++holders[k] >= 2)
                    return true;
                record = record || records.contains(k);
            }
            if (record && ++recordHolders >= 2)
                return true;
        }
        return false;
    }

    const std::vector<ScannedFile> &m_files;
    std::vector<QString> *m_runFolder;
};

// Qt lists no entry whose name is not valid UTF-8 (it could not open it either): the folder's raw entries
// name them, so that they are reported instead of silently left out. Shown with the bad bytes as \xNN.
void reportNamesNotUtf8(const QDir &root, const QString &dir, std::vector<std::pair<QString, QString>> *out)
{
    DIR *d = opendir(QFile::encodeName(dir).constData());
    if (!d)
        return;
    while (const dirent *e = readdir(d)) {
        const QByteArray name(e->d_name);
        if (isValidUtf8(name) || name.startsWith('.'))
            continue;
        QString shown;
        for (qsizetype i = 0; i < name.size();) {
            qsizetype n = 1;
            while (n <= 4 && i + n <= name.size() && !isValidUtf8(name.mid(i, n)))
                ++n;
            if (n <= 4 && i + n <= name.size()) {
                shown += QString::fromUtf8(name.mid(i, n));
                i += n;
            } else {
                shown += QStringLiteral("\\x")
                    + QString::number(uchar(name[i]), 16).toUpper().rightJustified(2, QLatin1Char('0'));
                ++i;
            }
        }
        const bool folder = e->d_type == DT_DIR;
        out->emplace_back(root.relativeFilePath(dir + QLatin1Char('/') + shown),
            folder ? QStringLiteral("the folder's name is not valid UTF-8, so nothing in it is read; rename it")
                   : QStringLiteral("the file's name is not valid UTF-8, so it is not read; rename it"));
    }
    closedir(d);
}

} // namespace

namespace {

// Every file under `dir` (its path as reached, through links), following links to folders once each (a
// link back to a folder already walked is reported, not walked again); what is not a regular file or a
// link to one is reported.
void walk(const QDir &root, const QString &dir, QSet<QString> *visited, QStringList *paths, FolderScan *scan)
{
    const QFileInfoList entries
        = QDir(dir).entryInfoList(QDir::AllEntries | QDir::System | QDir::NoDotAndDotDot, QDir::Name);
    for (const QFileInfo &info : entries) {
        const QString p = info.filePath();
        const QString rel = root.relativeFilePath(p);
        if (info.isSymLink() && !info.exists()) {
            scan->unreadable.emplace_back(
                rel, QStringLiteral("a link to %1, which does not exist").arg(info.symLinkTarget()));
        } else if (info.isDir()) {
            const QString canonical = info.canonicalFilePath();
            if (visited->contains(canonical)) {
                scan->unreadable.emplace_back(rel,
                    QStringLiteral("a link to %1, a folder already read here (a loop); not read twice")
                        .arg(info.symLinkTarget()));
                continue;
            }
            visited->insert(canonical);
            reportNamesNotUtf8(root, p, &scan->unreadable);
            walk(root, p, visited, paths, scan);
        } else if (info.isFile()) {
            *paths << p;
        } else {
            // A device, a pipe or a socket (or a link to one, /dev/zero): an endless stream, never read.
            scan->unreadable.emplace_back(rel,
                info.isSymLink()
                    ? QStringLiteral("a link to %1, which is not a regular file; not read").arg(info.symLinkTarget())
                    : QStringLiteral("not a regular file (a device, a pipe or a socket); not read"));
        }
    }
}

// Names of text logs whose format shows only in their lines, which may start after pages of other output
// (a Slurm job prints its environment first): recognised from a longer head when the first 4 KiB say nothing.
bool isTextLogName(const QString &name)
{
    const QString n = name.toLower();
    return n.endsWith(QLatin1String(".log")) || n.endsWith(QLatin1String(".txt")) || n.endsWith(QLatin1String(".out"))
        || n.endsWith(QLatin1String(".err"));
}

constexpr qint64 kLongHeadBytes = qint64(1) << 20;

// Paths in natural order: numbers compared as numbers (rank_2 before rank_10), so that a rank's log is read
// after the lower ranks' (the first of a reduction group is the one read).
bool naturalLess(const QString &a, const QString &b)
{
    qsizetype i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].isDigit() && b[j].isDigit()) {
            qsizetype ie = i, je = j;
            while (ie < a.size() && a[ie].isDigit())
                ++ie;
            while (je < b.size() && b[je].isDigit())
                ++je;
            const QStringView na = QStringView(a).mid(i, ie - i), nb = QStringView(b).mid(j, je - j);
            // Longer digit strings (without leading zeros) are larger.
            qsizetype za = 0, zb = 0;
            while (za + 1 < na.size() && na[za] == QLatin1Char('0'))
                ++za;
            while (zb + 1 < nb.size() && nb[zb] == QLatin1Char('0'))
                ++zb;
            const QStringView ta = na.mid(za), tb = nb.mid(zb);
            if (ta.size() != tb.size())
                return ta.size() < tb.size();
            if (const int c = ta.compare(tb); c != 0)
                return c < 0;
            i = ie;
            j = je;
            continue;
        }
        if (a[i] != b[j])
            return a[i] < b[j];
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j;
}

} // namespace

FolderScan scanFolder(const QString &folder)
{
    FolderScan scan;
    const QDir root(folder);
    QStringList paths;
    QSet<QString> visited {QFileInfo(folder).canonicalFilePath()};
    walk(root, QDir(folder).absolutePath(), &visited, &paths, &scan);
    reportNamesNotUtf8(root, QDir(folder).absolutePath(), &scan.unreadable);
    std::sort(paths.begin(), paths.end(), naturalLess);
    for (const QString &p : paths) {
        QFile f(p);
        const QString rel = root.relativeFilePath(p);
        if (!f.open(QIODevice::ReadOnly)) {
            scan.unreadable.emplace_back(rel, QStringLiteral("cannot open: %1").arg(f.errorString()));
            continue;
        }
        // A compressed file is recognised by what it decompresses to, under its name without the suffix, by
        // the importers that read lines (they read it decompressed).
        const bool compressed = compressionOf(p) != Compression::None;
        const QString name = withoutCompressionSuffix(QFileInfo(p).fileName());
        QByteArray head = compressed ? readContentHead(p, kHeadBytes) : f.read(kHeadBytes);
        const QString lower = name.toLower();
        if ((lower.endsWith(QLatin1String(".csv")) || lower.endsWith(QLatin1String(".jsonl")))
            && !head.contains('\n')) {
            // A header line longer than the head: read on to its end.
            if (compressed)
                head = readContentHead(p, kMaxHeaderLine);
            while (!compressed && head.size() < kMaxHeaderLine && !head.contains('\n')) {
                const QByteArray more = f.read(64 * 1024);
                if (more.isEmpty())
                    break;
                head += more;
            }
        }
        Importer *imp = importerFor(name, head);
        if (!imp && isTextLogName(name) && head.size() == kHeadBytes)
            imp = importerFor(name, compressed ? readContentHead(p, kLongHeadBytes) : head + f.read(kLongHeadBytes));
        if (imp && compressed && !imp->resumable())
            imp = nullptr; // a compressed file of a format read whole (JSON, TensorBoard, tensors): not read
        if (!imp) {
            scan.unrecognised << rel;
            continue;
        }
        scan.files.push_back({rel, p, QString(), imp, head});
    }
    if (scan.files.empty())
        return scan;

    std::vector<size_t> all(scan.files.size());
    for (size_t i = 0; i < all.size(); ++i)
        all[i] = i;
    std::vector<QString> runFolder(scan.files.size());
    scan.workspace = Grouper(scan.files, &runFolder).group(QString(), all);

    // Names: the folder's own name, unless two run folders share it.
    const QString opened = QFileInfo(QDir(folder).absolutePath()).fileName();
    auto leaf = [&](const QString &dir) { return dir.isEmpty() ? opened : dir.section(QLatin1Char('/'), -1); };
    QHash<QString, int> leafCount;
    for (const QString &dir : runFolder) {
        if (!scan.runOfFolder.contains(dir)) {
            scan.runOfFolder.insert(dir, QString());
            ++leafCount[leaf(dir)];
        }
    }
    for (auto r = scan.runOfFolder.begin(); r != scan.runOfFolder.end(); ++r)
        r.value() = leafCount.value(leaf(r.key())) > 1 ? r.key() : leaf(r.key());
    for (size_t i = 0; i < scan.files.size(); ++i)
        scan.files[i].run = scan.runOfFolder.value(runFolder[i]);
    return scan;
}

} // namespace fp8scope
