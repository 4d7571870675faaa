// What the window shows with no folder open: open a folder, one of the recent folders, or the demo, and
// that a folder can be dropped on the window. The window hides its docks while it is shown.
#pragma once

#include <QWidget>

class QListWidget;

namespace fp8scope {

class StartPage : public QWidget
{
    Q_OBJECT
public:
    explicit StartPage(QWidget *parent = nullptr);

    // The recent folders, newest first; those missing on disk are listed greyed out, and cannot be opened.
    void setRecentFolders(const QStringList &folders);

Q_SIGNALS:
    void openFolderRequested();
    void openRecentRequested(const QString &folder);
    void demoRequested();

private:
    QListWidget *m_recent;
};

} // namespace fp8scope
