// Precompiled once for the tests of core (tests/CMakeLists.txt): Qt Test, the Qt Core and standard headers they
// include most, and core's common ones (cmake/pch/core.h). Only headers that never change here.
#include "cmake/pch/core.h"

#include <QDirIterator>
#include <QElapsedTimer>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <random>
