// Precompiled for views/ (views/CMakeLists.txt): QCustomPlot's header (about 4 s of each plot's translation
// unit), through the one way views include it, and the Qt Widgets and standard headers views include most.
#include "views/plotting/qcp.h"

#include <QAbstractItemModel>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QTimer>
#include <QVBoxLayout>
#include <QWidget>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <vector>
