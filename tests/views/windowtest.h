// The window's tests that open folders: a main window of `size`, shown, the folders opened and drawn.
#pragma once

#include "app/gui/mainwindow.h"

#include <QSignalSpy>
#include <QTest>

#include <memory>

namespace fp8scope::guitest {

// The window once ready (every view has drawn the folders), or nullptr when it was not in two minutes.
inline std::unique_ptr<MainWindow> openWindow(const QStringList &folders, QSize size)
{
    auto w = std::make_unique<MainWindow>(BackendChoice::Cpu, nullptr);
    w->resize(size);
    w->show();
    if (!QTest::qWaitForWindowExposed(w.get()))
        return nullptr;
    QSignalSpy ready(w.get(), &MainWindow::ready);
    w->openFolders(folders);
    if (!ready.wait(120000))
        return nullptr;
    QTest::qWait(50);
    return w;
}

} // namespace fp8scope::guitest
