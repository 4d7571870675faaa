#!/usr/bin/env bash
# Saves PNG screenshots of the main window in a few states, at 1366x768 (a laptop) and 1920x1080, into
# OUTDIR/1366x768 and OUTDIR/1920x1080: under Xvfb (a real X server), fp8scope shows its start page, then
# opens the demo run pair (generated once into the user cache) and walks through the states
# app/gui/screenshotter.cpp lists. Settings come from a fresh folder so the default layout is shown.
# Then the tour of a folder (Screenshotter's Folder tour: the window, its hottest cell, the comparison and its
# layers, the triage's summary, as far as the folder has them) on three kinds of folder, into
# OUTDIR/<size>/<kind>/: Megatron's weekly golden values and a W&B history export (../shared/fixtures/real,
# copied first: the store is written beside the runs; skipped without ../shared), and a mixture-of-experts run
# pair (fp8scope-cli demo --scenario mid-run-instability --experts 8).
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
# The folders of the folder tours, in a scratch folder of their own.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
folders=()
real="$here/../shared/fixtures/real"
if [ -d "$real" ]; then
    cp -r "$real/megatron_golden_values" "$scratch/weekly"
    cp -r "$real/wandb_csv" "$scratch/wandb"
    chmod -R u+w "$scratch"
    folders+=(weekly wandb)
fi
if "$build/app/fp8scope-cli" demo --scenario mid-run-instability --seed 4 --experts 8 "$scratch/moe" >/dev/null; then
    folders+=(moe)
fi
# One tour: the screen is the size named; the window fills it (-qwindowgeometry), as a maximised window would;
# settings from a fresh folder (the default layout).
tour() {
    local size="$1" dir="$2"
    shift 2
    mkdir -p "$dir"
    local config
    config="$(mktemp -d)"
    XDG_CONFIG_HOME="$config" QT_QPA_PLATFORM=xcb timeout 400 \
        xvfb-run -a -s "-screen 0 ${size}x24" "$app" "$@" --screenshots "$dir" -qwindowgeometry "$size+0+0"
    rm -rf "$config"
}
for size in 1366x768 1920x1080; do
    tour "$size" "$out/$size" --demo
    for kind in "${folders[@]}"; do
        tour "$size" "$out/$size/$kind" "$scratch/$kind"
        rm -f "$out/$size/$kind/00-start-page.png" # the same start page as the demo's
    done
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
# Every statistic stacked (scrolled, the axes on one edge, Stack Plot disabled), at both sizes (tst_daywork).
if [ -x "$build/tests/tst_daywork" ]; then
    QT_QPA_PLATFORM=offscreen FP8SCOPE_SHOT_DIR="$out" "$build/tests/tst_daywork" stackScrollsAndSharesItsEdges >/dev/null
fi
# A mixture-of-experts run (24 GEMM rows of 8-expert GroupedLinear GEMMs, its last layer in BF16): the grouped
# The Blocks tab: a dump's block map with its outlier block listed first, then that block's values
# (tst_blocksview, offscreen, 1366x768).
if [ -x "$build/tests/tst_blocksview" ]; then
    QT_QPA_PLATFORM=offscreen FP8SCOPE_SHOT_DIR="$out" "$build/tests/tst_blocksview" mapsTheSelectedDump clickAndListSelect >/dev/null
fi
# heatmap and one GEMM's experts map, as the experts' GUI test shows them (tst_expertsview, offscreen, 1366x768).
if [ -x "$build/tests/tst_expertsview" ]; then
    QT_QPA_PLATFORM=offscreen FP8SCOPE_SHOT_DIR="$out" "$build/tests/tst_expertsview" groupedHeatmapAndExpertsMap >/dev/null
fi
