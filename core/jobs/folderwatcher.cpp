#include "folderwatcher.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QTimer>

#include <algorithm>

namespace fp8scope {

FolderWatcher::FolderWatcher(QObject *parent)
    : QObject(parent)
    , m_poll(new QTimer(this))
    , m_throttle(new QTimer(this))
{
    m_throttle->setSingleShot(true);
    connect(m_throttle, &QTimer::timeout, this, &FolderWatcher::fire);
    connect(m_poll, &QTimer::timeout, this, &FolderWatcher::onPoll);
}

FolderWatcher::~FolderWatcher() = default;

void FolderWatcher::setOptions(const Options &options)
{
    m_options = options;
    m_options.minIntervalMs = std::max(0, m_options.minIntervalMs);
    m_options.pollIntervalMs = std::max(0, m_options.pollIntervalMs);
    m_options.maxWatchedFiles = std::max(0, m_options.maxWatchedFiles);
    watch(QStringList(m_folders));
}

void FolderWatcher::watch(const QStringList &folders)
{
    m_throttle->stop();
    m_poll->stop();
    delete m_fs;
    m_fs = nullptr;
    m_folders.clear();
    for (const QString &f : folders)
        m_folders << QFileInfo(f).absoluteFilePath();
    m_last.clear();
    m_fileNotified = false;
    m_sinceFired.invalidate();
    if (m_folders.isEmpty())
        return;
    QStringList dirs;
    m_last = snapshot(&dirs);
    if (m_options.notify) {
        m_fs = new QFileSystemWatcher(this);
        connect(m_fs, &QFileSystemWatcher::fileChanged, this, &FolderWatcher::onFileNotified);
        // A folder's entries changed: a file added, removed or renamed, or a hidden one written (told only if
        // the snapshot differs).
        connect(m_fs, &QFileSystemWatcher::directoryChanged, this, &FolderWatcher::schedule);
        updateWatches(m_last, dirs);
    }
    if (m_options.pollIntervalMs > 0)
        m_poll->start(m_options.pollIntervalMs);
}

int FolderWatcher::notifiedPaths() const
{
    return m_fs ? int(m_fs->files().size() + m_fs->directories().size()) : 0;
}

FolderWatcher::Snapshot FolderWatcher::snapshot(QStringList *dirs) const
{
    Snapshot files;
    for (const QString &folder : m_folders) {
        if (!QFileInfo(folder).isDir())
            continue;
        dirs->append(folder);
        const QDir root(folder);
        QDirIterator it(folder, QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QFileInfo fi = it.nextFileInfo();
            // Any hidden part of the path leaves it out (the store's .fp8scope/, editors' swap files).
            const QString rel = root.relativeFilePath(fi.filePath());
            bool hidden = false;
            for (const QStringView part : QStringView(rel).split(QLatin1Char('/')))
                hidden = hidden || part.startsWith(QLatin1Char('.'));
            if (hidden)
                continue;
            if (fi.isDir()) {
                dirs->append(fi.filePath());
                files.insert(fi.filePath(), {-2, 0}); // a new folder is a change, even empty
            } else
                files.insert(fi.filePath(), {fi.size(), fi.lastModified().toMSecsSinceEpoch()});
        }
    }
    return files;
}

void FolderWatcher::updateWatches(const Snapshot &files, const QStringList &dirs)
{
    if (!m_fs)
        return;
    QStringList wanted = dirs;
    QStringList names;
    for (auto it = files.constBegin(); it != files.constEnd(); ++it) {
        if (it->size != -2)
            names << it.key();
    }
    std::sort(names.begin(), names.end());
    if (names.size() > m_options.maxWatchedFiles)
        names.resize(m_options.maxWatchedFiles);
    wanted << names;
    const QStringList have = m_fs->files() + m_fs->directories();
    QStringList gone;
    for (const QString &p : have) {
        if (!wanted.contains(p))
            gone << p;
    }
    if (!gone.isEmpty())
        m_fs->removePaths(gone);
    QStringList added;
    for (const QString &p : wanted) {
        if (!have.contains(p))
            added << p;
    }
    if (!added.isEmpty())
        m_fs->addPaths(added); // those it cannot watch are left to the poll
}

void FolderWatcher::onFileNotified()
{
    m_fileNotified = true;
    schedule();
}

void FolderWatcher::onPoll()
{
    if (m_throttle->isActive())
        return; // a signal is coming anyway
    QStringList dirs;
    if (snapshot(&dirs) != m_last)
        schedule();
}

void FolderWatcher::schedule()
{
    if (m_throttle->isActive())
        return;
    const qint64 since = m_sinceFired.isValid() ? m_sinceFired.elapsed() : m_options.minIntervalMs;
    m_throttle->start(int(std::max<qint64>(0, m_options.minIntervalMs - since)));
}

void FolderWatcher::fire()
{
    QStringList dirs;
    Snapshot now = snapshot(&dirs);
    bool sameFiles = now.size() == m_last.size();
    for (auto it = now.constBegin(); sameFiles && it != now.constEnd(); ++it)
        sameFiles = m_last.contains(it.key());
    if (!sameFiles || (m_fs && m_fs->directories().size() != dirs.size()))
        updateWatches(now, dirs);
    // A replaced file (written anew and renamed over the old one) is no longer watched: watch it again.
    else if (m_fs
        && m_fs->files().size() < std::min<qsizetype>(now.size() - dirs.size() + 1, m_options.maxWatchedFiles))
        updateWatches(now, dirs);
    const bool differs = now != m_last;
    m_last = std::move(now);
    const bool told = differs || m_fileNotified;
    m_fileNotified = false;
    // A watched file's notification is a change even when size and time agree (a rewrite to the same size
    // within a millisecond); a folder's is one only when what it holds differs.
    if (!told)
        return;
    m_sinceFired.start();
    Q_EMIT changed();
}

} // namespace fp8scope
