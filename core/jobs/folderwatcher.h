// Tells when the files under one or more folders change: a line appended to a log, a new file (a new rank, a
// new dump, a restart's log), a file removed, truncated or replaced. Change notification (QFileSystemWatcher:
// inotify on Linux) gives the fast path; a poll of every file's size and modification time gives the slow one,
// for the network filesystems (NFS, Lustre) where a change made on another machine sends no notification.
// Both always run: a folder cannot say which kind it is. Hidden files and folders (the store in .fp8scope/
// among them) are not watched, as the folder scanner does not read them; otherwise the store's own writes
// would look like changes of the run.
//
// changed() is throttled: at most once per minimum interval, the first change after a quiet spell at once
// (on the next turn of the event loop, so that a burst of notifications makes one signal).
#pragma once

#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QObject>
#include <QStringList>

class QFileSystemWatcher;
class QTimer;

namespace fp8scope {

class FolderWatcher : public QObject
{
    Q_OBJECT
public:
    struct Options {
        int minIntervalMs = 250; // changed() at most this often: a few times a second
        int pollIntervalMs = 2000; // the fallback's period (0: no polling)
        bool notify = true; // false: polling only (what a network filesystem gets)
        int maxWatchedFiles = 4096; // beyond these, files are left to the poll (inotify watches are limited)
    };

    explicit FolderWatcher(QObject *parent = nullptr);
    ~FolderWatcher() override;

    void setOptions(const Options &options);
    Options options() const { return m_options; }
    // Starts watching these folders (replacing those watched); an empty list stops.
    void watch(const QStringList &folders);
    QStringList folders() const { return m_folders; }
    // How many files and folders change notification covers now (0: only the poll).
    int notifiedPaths() const;

Q_SIGNALS:
    // Something under the folders changed since the last signal.
    void changed();

private:
    struct FileState {
        qint64 size = -1;
        qint64 modified = 0; // ms since the epoch
        bool operator==(const FileState &o) const { return size == o.size && modified == o.modified; }
    };
    using Snapshot = QHash<QString, FileState>;
    Snapshot snapshot(QStringList *dirs) const;
    void onFileNotified();
    void onPoll();
    void fire();
    void schedule();
    void updateWatches(const Snapshot &files, const QStringList &dirs);

    Options m_options;
    QStringList m_folders;
    QFileSystemWatcher *m_fs = nullptr;
    QTimer *m_poll;
    QTimer *m_throttle;
    QElapsedTimer m_sinceFired;
    Snapshot m_last; // the files as the last signal (or the start) saw them
    bool m_fileNotified = false; // a watched file itself changed (a rewrite may change neither size nor time)
};

} // namespace fp8scope
