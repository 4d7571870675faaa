#include "folderscanner.h"

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
        QStringLiteral("nvdlfw_inspect_statistics_logs")};
    static const QRegularExpression rank(QStringLiteral("^(global)?rank[-_]?\\d+$"));
    const QString name = folder.toLower();
    return parts.contains(name) || rank.match(name).hasMatch();
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
        // so do subfolders that are all parts of one run (logs/ and tensorboard/).
        const bool allParts
            = std::all_of(subfolders.begin(), subfolders.end(), [](const auto &sub) { return isPartName(sub.first); });
        const bool isGroup
            = !ownFiles && ((subfolders.size() >= 2 && !allParts) || (!manifests.empty() && !subfolders.empty()));
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

FolderScan scanFolder(const QString &folder)
{
    FolderScan scan;
    const QDir root(folder);
    QDirIterator it(folder, QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    QStringList paths;
    while (it.hasNext()) {
        const QString p = it.next();
        // Hidden files and folders (our store among them) are not part of the run; the iterator leaves
        // them out already, this says so.
        const QString rel = root.relativeFilePath(p);
        if (rel.split(QLatin1Char('/')).first().startsWith(QLatin1Char('.')))
            continue;
        const QFileInfo info = it.fileInfo();
        if (info.isFile())
            paths << p;
        else if (info.isDir())
            reportNamesNotUtf8(root, p, &scan.unreadable);
        else if (info.isSymLink() && !info.exists())
            scan.unreadable.emplace_back(
                rel, QStringLiteral("a link to %1, which does not exist").arg(info.symLinkTarget()));
        else
            // A device, a pipe or a socket (a link to /dev/zero): an endless stream, never read.
            scan.unreadable.emplace_back(rel,
                info.isSymLink()
                    ? QStringLiteral("a link to %1, which is not a regular file; not read").arg(info.symLinkTarget())
                    : QStringLiteral("not a regular file (a device, a pipe or a socket); not read"));
    }
    reportNamesNotUtf8(root, QDir(folder).absolutePath(), &scan.unreadable);
    std::sort(paths.begin(), paths.end());
    for (const QString &p : paths) {
        QFile f(p);
        const QString rel = root.relativeFilePath(p);
        if (!f.open(QIODevice::ReadOnly)) {
            scan.unreadable.emplace_back(rel, QStringLiteral("cannot open: %1").arg(f.errorString()));
            continue;
        }
        QByteArray head = f.read(kHeadBytes);
        const QString lower = p.toLower();
        if ((lower.endsWith(QLatin1String(".csv")) || lower.endsWith(QLatin1String(".jsonl")))
            && !head.contains('\n')) {
            // A header line longer than the head: read on to its end.
            while (head.size() < kMaxHeaderLine && !head.contains('\n')) {
                const QByteArray more = f.read(64 * 1024);
                if (more.isEmpty())
                    break;
                head += more;
            }
        }
        Importer *imp = importerFor(QFileInfo(p).fileName(), head);
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
