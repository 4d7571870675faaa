#!/usr/bin/env bash
# Makes docs/report/: the triage report of the demo pair (fp8scope-cli demo, seed 1: 12 layers, 3000 steps) as
# a PDF, and PNGs of its title page and of its layer suspects' first page (pdftoppm, poppler-utils). The demo
# is written under a fixed temporary folder, so the paths the report names are the same on every machine.
# Usage: tools/sample-report.sh [BUILD_DIR]   (BUILD_DIR defaults to build/default)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$here/build/default}"
cli="$build/app/fp8scope-cli"
[ -x "$cli" ] || { echo "sample-report.sh: $cli not built" >&2; exit 1; }
command -v pdftoppm >/dev/null || { echo "sample-report.sh: pdftoppm missing (packaging/install-deps.sh)" >&2; exit 1; }
work=/tmp/fp8scope-sample
rm -rf "$work"
mkdir -p "$work"
"$cli" demo "$work/demo" --seed 1 >/dev/null
out="$here/docs/report"
mkdir -p "$out"
# Written there too (the report names the command that made it), then copied.
listing="$("$cli" report "$work/demo" -o "$work/demo-report.pdf")"
cp "$work/demo-report.pdf" "$out/demo-report.pdf"
echo "$listing"
suspects="$(echo "$listing" | sed -n 's/^  p\. \([0-9]*\)  Layer suspects$/\1/p')"
pdftoppm -r 80 -png -f 1 -l 1 -singlefile "$out/demo-report.pdf" "$out/demo-report-page1"
pdftoppm -r 80 -png -f "${suspects:-3}" -l "${suspects:-3}" -singlefile "$out/demo-report.pdf" "$out/demo-report-suspects"
rm -rf "$work"
ls -l "$out"
