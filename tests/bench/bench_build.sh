#!/usr/bin/env bash
# The clean build's wall time: `cmake --workflow --preset build` (configure, then build everything: the
# product, the tests and the benchmarks) from a fresh clone, without ccache, of this checkout's HEAD and of a
# reference revision, alternating, ROUNDS times each; prints each build and the medians' ratio
# (reference / HEAD: above 1 is faster). Measures on the machine it runs on (CI's kind: 2 cores).
# Usage: tests/bench/bench_build.sh REFERENCE_REV [ROUNDS] [WORKDIR]
set -euo pipefail
ref=${1:?usage: bench_build.sh REFERENCE_REV [ROUNDS] [WORKDIR]}
rounds=${2:-1}
repo=$(git -C "$(dirname "$0")/../.." rev-parse --show-toplevel)
work=${3:-$(mktemp -d)}
head=$(git -C "$repo" rev-parse --short HEAD)
ref=$(git -C "$repo" rev-parse --short "$ref")
declare -A times
build() { # name rev
    local dir=$work/$1
    rm -rf "$dir"
    git clone -q --no-checkout "$repo" "$dir"
    git -C "$dir" checkout -q "$2"
    local start end
    start=$(date +%s.%N)
    (cd "$dir" && CCACHE_DISABLE=1 cmake --workflow --preset build > "$work/$1.log" 2>&1) \
        || { echo "bench_build: the build of $2 failed; see $work/$1.log" >&2; exit 1; }
    end=$(date +%s.%N)
    times[$1]+="$(echo "$end - $start" | bc) "
    rm -rf "$dir"
}
for ((i = 1; i <= rounds; i++)); do
    build reference "$ref"
    build head "$head"
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mref=$(echo "${times[reference]}" | median)
mhead=$(echo "${times[head]}" | median)
printf '%-28s %-12s %s\n' "clean build (nproc $(nproc))" "median s" "each s"
printf '%-28s %-12.0f %s\n' "reference $ref" "$mref" "${times[reference]}"
printf '%-28s %-12.0f %s\n' "HEAD $head" "$mhead" "${times[head]}"
printf 'ratio reference / HEAD: %.2f\n' "$(echo "$mref / $mhead" | bc -l)"
