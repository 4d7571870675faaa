// The colour ramp of every heatmap (the heatmap view's, the report's): dark blue to yellow through
// viridis' stops, perceptually even and readable in grey print.
#pragma once

#include "qcp.h"

namespace fp8scope {

inline QCPColorGradient heatGradient()
{
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(68, 1, 84));
    g.setColorStopAt(0.25, QColor(59, 82, 139));
    g.setColorStopAt(0.5, QColor(33, 145, 140));
    g.setColorStopAt(0.75, QColor(94, 201, 98));
    g.setColorStopAt(1.0, QColor(253, 231, 37));
    return g;
}

} // namespace fp8scope
