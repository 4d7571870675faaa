#!/usr/bin/env bash
# Saves PNG screenshots of the main window in a few states into OUTDIR: under Xvfb (a real X server),
# fp8scope opens the demo run pair (generated once into the user cache) and walks through the states
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
mkdir -p "$out"
config="$(mktemp -d)"
trap 'rm -rf "$config"' EXIT
XDG_CONFIG_HOME="$config" QT_QPA_PLATFORM=xcb timeout 300 \
    xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --demo --screenshots "$out"
