#include "folderscanner.h"

#include "compressedfile.h"
#include "importers.h"
#include "linereader.h"
#include "mlflowimporters.h"
#include "rankcopies.h"
#include "wandbimporter.h"

#include "core/tensors/safetensorsreader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSet>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>

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
            // A run of a group is the deepest folder that holds all its files alone (group/run/... is "run", not
            // "group"), so that a manifest can name it by its own folder; the division stays as decided here.
            const QString folder = dir.isEmpty() ? dir : soleFolder(dir, under);
            for (size_t i : under)
                (*m_runFolder)[i] = folder;
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
    // Below `dir`, while its files all lie in one subfolder not named as a part of a run (logs/, rank_3/, ...): that
    // subfolder.
    QString soleFolder(QString dir, const std::vector<size_t> &under) const
    {
        for (;;) {
            QString sole;
            for (size_t i : under) {
                const QString rel = m_files[i].relativePath.mid(dir.size() + 1);
                const qsizetype slash = rel.indexOf(QLatin1Char('/'));
                const QString sub = slash < 0 ? QString() : rel.left(slash);
                if (sub.isEmpty() || isWorkspaceManifest(m_files[i]) || (!sole.isEmpty() && sub != sole))
                    return dir;
                sole = sub;
            }
            if (sole.isEmpty() || isPartName(sole))
                return dir;
            dir += QLatin1Char('/') + sole;
        }
    }

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

// A name that is not valid UTF-8, shown with its bad bytes as \xNN.
QString shownName(const QByteArray &name)
{
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
    return shown;
}

// A file found by walk(): its path as reached (through links), and relative to the opened folder.
struct Found {
    QString path;
    QString relative;
};

using FolderIds = std::set<std::pair<dev_t, ino_t>>;

// Every file under `dir` (its path as reached, through links), from one listing of each folder (the listing is
// what a folder of 1000 ranks' folders costs): hidden entries are left out; links to folders are followed once
// each (a folder already walked, by its device and inode, is reported as a loop and not walked again); names
// that are not valid UTF-8 (no Qt call can open them), dangling links and what is not a regular file (a pipe,
// a device, a socket: an endless stream) are reported.
void walk(const QString &dir, const QString &relDir, FolderIds *visited, std::vector<Found> *found, FolderScan *scan)
{
    const auto relOf = [&](const QString &name) { return relDir.isEmpty() ? name : relDir + QLatin1Char('/') + name; };
    DIR *d = opendir(QFile::encodeName(dir).constData());
    if (!d) {
        if (!relDir.isEmpty())
            scan->unreadable.emplace_back(
                relDir, QStringLiteral("cannot list the folder: %1").arg(QString::fromLocal8Bit(std::strerror(errno))));
        return;
    }
    struct Entry {
        QByteArray raw;
        QString name;
        unsigned char type;
    };
    std::vector<Entry> entries;
    while (const dirent *e = readdir(d)) {
        const QByteArray raw(e->d_name);
        if (raw.startsWith('.'))
            continue;
        if (!isValidUtf8(raw)) {
            scan->unreadable.emplace_back(relOf(shownName(raw)),
                e->d_type == DT_DIR
                    ? QStringLiteral("the folder's name is not valid UTF-8, so nothing in it is read; rename it")
                    : QStringLiteral("the file's name is not valid UTF-8, so it is not read; rename it"));
            continue;
        }
        entries.push_back({raw, QString::fromUtf8(raw), e->d_type});
    }
    // A model below the opened folder (an inference checkpoint the triage audits, or the BF16 weights it is
    // checked against; core/audit) is listed as skipped, not read as the run's configs and dumps; its listing
    // decides it (no second one).
    if (!relDir.isEmpty()) {
        QStringList names;
        for (const auto &e : entries)
            names << e.name;
        if (modelFolderKind(dir, names) != ModelFolder::None) {
            closedir(d);
            scan->unrecognised << relDir + QLatin1Char('/');
            return;
        }
    }
    // Links last: a folder reached both itself and through a link beside it (W&B's wandb/latest-run) is read as
    // itself.
    std::stable_partition(entries.begin(), entries.end(), [](const Entry &e) { return e.type != DT_LNK; });
    // What is not a regular file is looked at relative to the folder (open while its entries are: no walk of
    // the whole path per entry).
    const int folder = dirfd(d);
    for (const auto &[raw, name, type] : entries) {
        const QString p = dir + QLatin1Char('/') + name;
        const QString rel = relOf(name);
        if (type == DT_REG) {
            found->push_back({p, rel});
            continue;
        }
        struct stat st;
        const bool link = type == DT_LNK
            || (type == DT_UNKNOWN && fstatat(folder, raw.constData(), &st, AT_SYMLINK_NOFOLLOW) == 0
                && S_ISLNK(st.st_mode));
        const auto target = [&] { return QFileInfo(p).symLinkTarget(); };
        if (fstatat(folder, raw.constData(), &st, 0) != 0) {
            scan->unreadable.emplace_back(rel,
                link ? QStringLiteral("a link to %1, which does not exist").arg(target())
                     : QStringLiteral("cannot read: %1").arg(QString::fromLocal8Bit(std::strerror(errno))));
        } else if (S_ISDIR(st.st_mode)) {
            if (visited->insert({st.st_dev, st.st_ino}).second) {
                walk(p, rel, visited, found, scan);
            } else {
                // A loop where the link leads to a folder it is in (as reached, through links); else a second way
                // to a folder read already (W&B's latest-run).
                bool loop = false;
                for (QString up = dir; !loop && !up.isEmpty(); up = up.section(QLatin1Char('/'), 0, -2)) {
                    struct stat a;
                    loop = ::stat(QFile::encodeName(up).constData(), &a) == 0 && a.st_dev == st.st_dev
                        && a.st_ino == st.st_ino;
                }
                scan->unreadable.emplace_back(rel,
                    loop ? QStringLiteral("a link to %1, a folder already read here (a loop); not read twice")
                               .arg(target())
                         : QStringLiteral("a link to %1, a folder read here already; not read twice").arg(target()));
            }
        } else if (S_ISREG(st.st_mode)) {
            found->push_back({p, rel});
        } else {
            scan->unreadable.emplace_back(rel,
                link ? QStringLiteral("a link to %1, which is not a regular file; not read").arg(target())
                     : QStringLiteral("not a regular file (a device, a pipe or a socket); not read"));
        }
    }
    closedir(d);
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

// A file read with the system's calls: the scan opens thousands, and reads most only to their first 4 KiB.
class RawFile
{
public:
    RawFile() = default;
    RawFile(const RawFile &) = delete;
    RawFile &operator=(const RawFile &) = delete;
    ~RawFile()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    bool open(const QString &path)
    {
        m_fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (m_fd < 0 || fstat(m_fd, &st) != 0) {
            m_error = QString::fromLocal8Bit(std::strerror(errno));
            return false;
        }
        m_size = st.st_size;
        m_mtime = qint64(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
        return true;
    }
    qint64 size() const { return m_size; }
    qint64 mtime() const { return m_mtime; } // as QFileInfo::lastModified() gives it, in ms since the epoch
    QString error() const { return m_error; }
    // Up to `max` bytes from where the last read stopped (fewer at the end, or on an error).
    QByteArray read(qint64 max)
    {
        QByteArray out(max, Qt::Uninitialized);
        out.resize(fill(out.data(), max));
        return out;
    }
    // The whole file into *out, its capacity kept; false when it reads short (it changed). Reads go on after
    // the head.
    bool readAll(QByteArray *out)
    {
        out->resize(m_size);
        const bool ok = m_size > 0 && ::lseek(m_fd, 0, SEEK_SET) == 0 && fill(out->data(), m_size) == m_size;
        // On, as if only the head had been read; from the start again when it failed.
        ::lseek(m_fd, ok ? std::min(kHeadBytes, m_size) : 0, SEEK_SET);
        return ok;
    }

private:
    qint64 fill(char *to, qint64 max)
    {
        qint64 got = 0;
        while (got < max) {
            const ssize_t n = ::read(m_fd, to + got, size_t(max - got));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += n;
        }
        return got;
    }
    int m_fd = -1;
    qint64 m_size = 0;
    qint64 m_mtime = 0;
    QString m_error;
};

} // namespace

FolderScan scanFolder(const QString &folder, const ScanOptions &options)
{
    FolderScan scan;
    std::vector<Found> found;
    FolderIds visited;
    struct stat st;
    if (stat(QFile::encodeName(folder).constData(), &st) == 0)
        visited.insert({st.st_dev, st.st_ino});
    walk(QDir(folder).absolutePath(), QString(), &visited, &found, &scan);
    std::sort(
        found.begin(), found.end(), [](const Found &a, const Found &b) { return naturalLess(a.relative, b.relative); });
    RankCopies copies;
    QByteArray whole; // a rank's log read whole (its capacity kept from file to file)
    for (const auto &[p, rel] : found) {
        RawFile f;
        if (!f.open(p)) {
            scan.unreadable.emplace_back(rel, QStringLiteral("cannot open: %1").arg(f.error()));
            continue;
        }
        // A compressed file is recognised by what it decompresses to, under its name without the suffix, by
        // the importers that read lines (they read it decompressed).
        const bool compressed = compressionOf(p) != Compression::None;
        const QString name = withoutCompressionSuffix(QFileInfo(p).fileName());
        // A rank's log the size of one of its group's first members may be its copy: read whole, once, for both
        // its head and the comparison.
        const QString group = options.findRankCopies ? RankCopies::groupOf(rel) : QString();
        const bool readWhole = !compressed && copies.mayCopy(group, f.size()) && f.readAll(&whole);
        QByteArray head = compressed ? readContentHead(p, kHeadBytes)
            : readWhole ? QByteArray::fromRawData(whole.constData(), std::min<qsizetype>(whole.size(), kHeadBytes))
                        : f.read(kHeadBytes);
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
        QString sameAs;
        if (!group.isEmpty() && imp->name() == QLatin1String("te-debug")) {
            if (readWhole)
                sameAs = copies.copyOf(group, whole);
            if (sameAs.isEmpty())
                copies.addReference(group, p, rel, f.size());
        }
        scan.files.push_back({rel, p, QString(), imp, sameAs, f.size(), f.mtime()});
    }
    if (scan.files.empty())
        return scan;

    // A logger's run folder (the folder of a W&B run-<id>.wandb, an MLflow file-store run's folder) is a run of its
    // own, wherever it sits (wandb/ and mlruns/<experiment>/ hold runs side by side): its files are that run's. A
    // W&B run's files/ copies of what its log holds (the console, the config, the summary, the metadata) are read
    // through the log, not again (nor listed as files left unread); an MLflow run's metrics/, params/ and tags/ are
    // read with its meta.yaml, and its experiment's meta.yaml with it. The other files are divided as always.
    std::map<QString, size_t> loggerFolders; // folder -> the file its run is read from
    std::vector<bool> keep(scan.files.size(), true);
    for (size_t i = 0; i < scan.files.size(); ++i) {
        const QString kind = scan.files[i].importer->name();
        if (kind == QLatin1String("mlflow-experiment"))
            keep[i] = false;
        if (kind != QLatin1String("wandb") && kind != QLatin1String("mlflow-run"))
            continue;
        const QString &rel = scan.files[i].relativePath;
        const qsizetype slash = rel.lastIndexOf(QLatin1Char('/'));
        loggerFolders.emplace(slash < 0 ? QString() : rel.left(slash), i);
    }
    const auto loggerFolderOf = [&](const QString &rel) {
        const QString *found = nullptr;
        for (const auto &[folder, log] : loggerFolders) {
            if ((folder.isEmpty() || (rel.startsWith(folder) && rel.at(folder.size()) == QLatin1Char('/')))
                && (!found || folder.size() > found->size()))
                found = &folder;
        }
        return found;
    };
    std::vector<QString> runFolder(scan.files.size());
    std::vector<size_t> others;
    for (size_t i = 0; i < scan.files.size(); ++i) {
        if (!keep[i])
            continue;
        const QString &rel = scan.files[i].relativePath;
        const QString *loggerFolder = loggerFolderOf(rel);
        if (!loggerFolder) {
            others.push_back(i);
            continue;
        }
        static const QSet<QString> copies {QStringLiteral("output.log"), QStringLiteral("config.yaml"),
            QStringLiteral("wandb-summary.json"), QStringLiteral("wandb-metadata.json"),
            QStringLiteral("wandb-history.jsonl"), QStringLiteral("wandb-events.jsonl")};
        const QString within = loggerFolder->isEmpty() ? rel : rel.mid(loggerFolder->size() + 1);
        const bool wandb = scan.files[loggerFolders.at(*loggerFolder)].importer->name() == QLatin1String("wandb");
        if (wandb && within.startsWith(QLatin1String("files/")) && copies.contains(within.mid(6))) {
            keep[i] = false;
            continue;
        }
        runFolder[i] = *loggerFolder;
    }
    // What an MLflow run's meta.yaml reads is no file left unread.
    scan.unrecognised.removeIf([&](const QString &rel) {
        const QString *folder = loggerFolderOf(rel);
        if (!folder || scan.files[loggerFolders.at(*folder)].importer->name() != QLatin1String("mlflow-run"))
            return false;
        const QString within = folder->isEmpty() ? rel : rel.mid(folder->size() + 1);
        return within.startsWith(QLatin1String("metrics/")) || within.startsWith(QLatin1String("params/"))
            || within.startsWith(QLatin1String("tags/"));
    });
    if (!others.empty())
        scan.workspace = Grouper(scan.files, &runFolder).group(QString(), others);

    // Names: the folder's own name, unless two run folders share it; a logger's run its name (its id where two
    // share it, its folder's path where two share that).
    const QString opened = QFileInfo(QDir(folder).absolutePath()).fileName();
    auto leaf = [&](const QString &dir) { return dir.isEmpty() ? opened : dir.section(QLatin1Char('/'), -1); };
    QHash<QString, LoggedRunName> loggedNames;
    for (const auto &[dir, log] : loggerFolders) {
        const ScannedFile &f = scan.files[log];
        loggedNames.insert(dir,
            f.importer->name() == QLatin1String("wandb") ? wandbRunName(f.absolutePath)
                                                         : mlflowRunName(f.absolutePath));
    }
    const auto nameOf = [&](const QString &dir, int choice) {
        const auto w = loggedNames.constFind(dir);
        if (w != loggedNames.cend() && choice == 0 && !w->name.isEmpty())
            return w->name;
        if (w != loggedNames.cend() && choice <= 1 && !w->id.isEmpty())
            return w->id;
        // The opened folder's own run, beside a subfolder of its name: named apart.
        return choice <= 1 ? leaf(dir) : dir.isEmpty() ? opened + QStringLiteral(" (top level)") : dir;
    };
    QHash<QString, int> choice; // 0: its own name, 1: its id, 2: its path
    for (size_t i = 0; i < scan.files.size(); ++i) {
        if (keep[i])
            choice.insert(runFolder[i], 0);
    }
    for (int round = 0; round < 2; ++round) {
        QHash<QString, int> count;
        for (auto c = choice.cbegin(); c != choice.cend(); ++c)
            ++count[nameOf(c.key(), c.value())];
        for (auto c = choice.begin(); c != choice.end(); ++c) {
            if (count.value(nameOf(c.key(), c.value())) > 1)
                c.value() = std::max(c.value(), round + 1);
        }
    }
    for (auto c = choice.cbegin(); c != choice.cend(); ++c)
        scan.runOfFolder.insert(c.key(), nameOf(c.key(), c.value()));
    scan.workspace = scan.workspace || scan.runOfFolder.size() > 1;
    for (size_t i = 0; i < scan.files.size(); ++i)
        scan.files[i].run = scan.runOfFolder.value(runFolder[i]);
    std::vector<ScannedFile> read;
    for (size_t i = 0; i < scan.files.size(); ++i) {
        if (keep[i])
            read.push_back(std::move(scan.files[i]));
    }
    scan.files = std::move(read);
    return scan;
}

} // namespace fp8scope
