// Precompiled once for the GUI tests (tests/CMakeLists.txt): Qt Test with its widget helpers, the views'
// precompiled headers (QCustomPlot and Qt Widgets: cmake/pch/views.h) and the widgets the tests drive.
#include "cmake/pch/views.h"

#include <QAbstractItemModelTester>
#include <QAction>
#include <QCheckBox>
#include <QDockWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QTreeView>
