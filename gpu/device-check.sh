#!/usr/bin/env bash
# One prepared command for a borrowed GPU machine (H100/H200): builds if needed, runs the `gpu` tests and the
# GPU benchmark, prints a short table. Finishes in well under 5 minutes.
#
#   gpu/device-check.sh                  use build/device, configuring and building it there if needed
#                                        (needs the Debian packages of packaging/install-deps.sh and nvcc)
#   gpu/device-check.sh --bundle DIR     here, on a build machine: copy the test and benchmark binaries of
#                                        build/default with every shared library they load (glibc and the
#                                        loader included, the CUDA driver excluded) into DIR, to carry to a
#                                        GPU machine that lacks the packages
#   gpu/device-check.sh --from DIR       there: run the carried bundle (DIR, or DIR.tar.xz unpacked to DIR)
# Results also go to $OUT (when set) as device-check.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

bundle() {
    local dir=$1 src=${BUILD:-build/default}
    rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib"
    for exe in tst_cudabackend bench_gpu; do
        cp "$src/tests/$exe" "$dir/bin/"
        ldd "$src/tests/$exe" | awk '$3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
            case "$(basename "$lib")" in libcuda.so*|libnvidia*) continue ;; esac
            cp -L "$lib" "$dir/lib/"
        done
    done
    strip --strip-debug "$dir"/bin/* "$dir"/lib/* 2>/dev/null || true
    tar -C "$dir" -cJf "$dir.tar.xz" bin lib
    echo "bundle in $dir and $dir.tar.xz ($(du -sh "$dir.tar.xz" | cut -f1))"
}

run_checks() {
    local runner=("$@")
    local log=${OUT:-/tmp}/device-check.txt
    {
        echo "== device"
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader || true
        echo "== gpu tests (tst_cudabackend: CUDA vs CPU, every recipe x dtype x size)"
        local t0=$SECONDS
        local out=${OUT:-/tmp}/tst_cudabackend.txt
        if "${runner[@]}" tst_cudabackend >"$out" 2>&1; then
            if grep -q "^SKIP" "$out"; then echo "tst_cudabackend: SKIPPED: $(grep -m1 '^SKIP' "$out")"; else echo "tst_cudabackend: PASS ($((SECONDS - t0)) s, $(grep -c '^PASS' "$out") rows)"; fi
        else
            grep -E "^FAIL|Loc:|Actual|Expected" "$out" | head -20
            echo "tst_cudabackend: FAIL (full log: $out)"
        fi
        echo "== benchmark"
        "${runner[@]}" bench_gpu 1024 5 || echo "bench_gpu: FAIL"
    } 2>&1 | tee "$log"
}

case "${1:-}" in
--bundle)
    bundle "${2:?--bundle DIR}"
    ;;
--from)
    dir=${2:?--from DIR}
    if [[ ! -d $dir && -f $dir.tar.xz ]]; then
        mkdir -p "$dir" && tar -C "$dir" -xJf "$dir.tar.xz"
    fi
    dir=$(cd "$dir" && pwd)
    loader=$(ls "$dir"/lib/ld-linux-x86-64.so.* | head -1)
    run_in_bundle() {
        local exe=$1
        shift
        "$loader" --library-path "$dir/lib" "$dir/bin/$exe" "$@"
    }
    run_checks run_in_bundle
    ;;
*)
    build=${BUILD:-build/device}
    if [[ ! -x $build/tests/tst_cudabackend || ! -x $build/tests/bench_gpu ]]; then
        cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFP8SCOPE_CUDA=ON \
            -DCMAKE_CUDA_ARCHITECTURES=90-real >/dev/null
        cmake --build "$build" --target tst_cudabackend bench_gpu
    fi
    run_in_build() {
        local exe=$1
        shift
        "$build/tests/$exe" "$@"
    }
    run_checks run_in_build
    ;;
esac
