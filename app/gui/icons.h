// The window's icons, drawn from the SVGs of resources/ (compiled in by resources/fp8scope.qrc). They are
// rendered here with QSvgRenderer at the usual sizes, so they do not depend on Qt's SVG icon plugin being found.
#pragma once

#include <QIcon>

namespace fp8scope {

// The application's icon (resources/icons/fp8scope.svg).
QIcon applicationIcon();
// A toolbar action's icon: "open-folder", "compare", "triage", "report" (resources/icons/actions/).
QIcon actionIcon(const QString &name);

} // namespace fp8scope
