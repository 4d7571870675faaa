#!/usr/bin/env bash
# Runs a test under the sanitizers and runs it once more only when LeakSanitizer's own stop-the-world tracer
# crashed at process exit ("Tracer caught signal 11" after every test function passed;
# google/sanitizers#1353). Any other failure, a real leak or memory error among them, fails at once.
set -uo pipefail
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && grep -q "Tracer caught signal" "$log" && ! grep -q "^FAIL!" "$log" \
    && ! grep -q "ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer: detected memory leaks" "$log"; then
    echo "lsan-retry.sh: LeakSanitizer's tracer crashed at exit (google/sanitizers#1353); running once more"
    "$@"
    exit $?
fi
exit "$rc"
