#!/usr/bin/env bash
# Saves PNG screenshots of the main window in a few states, at 1366x768 (a laptop) and 1920x1080, into
# OUTDIR/1366x768 and OUTDIR/1920x1080: under Xvfb (a real X server), fp8scope shows its start page, then
# opens the demo run pair (generated once into the user cache) and walks through the states
# app/gui/screenshotter.cpp lists. Settings come from a fresh folder so the default layout is shown.
# Usage: tests/screenshots.sh OUTDIR [BUILD_DIR]   (BUILD_DIR defaults to build/default)
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 OUTDIR [BUILD_DIR]" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1"
build="${2:-$here/build/default}"
app="$build/app/fp8scope"
if [ ! -x "$app" ]; then
    echo "screenshots.sh: $app not built (cmake --workflow --preset build)" >&2
    exit 1
fi
command -v xvfb-run >/dev/null || { echo "screenshots.sh: xvfb-run missing (packaging/install-deps.sh)" >&2; exit 1; }
for size in 1366x768 1920x1080; do
    mkdir -p "$out/$size"
    config="$(mktemp -d)"
    # The screen is the size named; the window fills it (-qwindowgeometry), as a maximised window would.
    XDG_CONFIG_HOME="$config" QT_QPA_PLATFORM=xcb timeout 300 \
        xvfb-run -a -s "-screen 0 ${size}x24" "$app" --demo --screenshots "$out/$size" -qwindowgeometry "$size+0+0"
    rm -rf "$config"
done
# The Attempts tab on a baseline with four attempts (tests/attemptsfolder.h), as its GUI test shows it (a window
# of 1600x1000, offscreen).
if [ -x "$build/tests/tst_attempts" ]; then
    QT_QPA_PLATFORM=offscreen FP8SCOPE_SHOT="$out/1920x1080/14-attempts.png" \
        "$build/tests/tst_attempts" tableAndPlot >/dev/null
fi
# Eight runs of one model (Megatron's functional-test variants' names) and plots stacked on one x axis, as the
# window's layout test shows them (tst_layout, offscreen) at both sizes.
if [ -x "$build/tests/tst_layout" ]; then
    QT_QPA_PLATFORM=offscreen FP8SCOPE_SHOT_DIR="$out" \
        "$build/tests/tst_layout" eightRunsStayApartAndKeepALegend plotsStackOnOneXAxis >/dev/null
fi
# A mixture-of-experts run (24 GEMM rows of 8-expert GroupedLinear GEMMs, its last layer in BF16): the grouped
# heatmap and one GEMM's experts map, as the experts' GUI test shows them (tst_expertsview, offscreen, 1366x768).
if [ -x "$build/tests/tst_expertsview" ]; then
    QT_QPA_PLATFORM=offscreen FP8SCOPE_SHOT_DIR="$out" "$build/tests/tst_expertsview" groupedHeatmapAndExpertsMap >/dev/null
fi
