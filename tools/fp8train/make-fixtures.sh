#!/usr/bin/env bash
# Generates the emulator's runs: a BF16 baseline and one FP8 run per fault, each 1,200 steps of the tiny GPT
# (tools/fp8train/fp8train.py), the statistics logs gzip-compressed. To be committed as tests/fixtures/emulated
# once every fault shows its dynamics (issue 41).
# Usage: tools/fp8train/make-fixtures.sh OUTDIR [PYTHON]   (PYTHON: the test venv's, build/venv/bin/python)
set -euo pipefail
out="$1"
py="${2:-build/venv/bin/python}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out"
run() {
    local name="$1"; shift
    rm -rf "$out/$name"
    "$py" "$here/fp8train.py" --out "$out/$name" --steps 1200 --stat-interval 20 --seed 1 --threads 1 "$@"
    if [ -f "$out/$name/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log" ]; then
        gzip -9 -n "$out/$name/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"
    fi
}
run bf16 --precision bf16 &
run fp8_healthy --precision fp8 --fault none
wait
run fp8_stale_scale --precision fp8 --recipe delayed --fault stale-scale --fault-step 150 --fault-layer 3 &
run fp8_e4m3_grad --precision fp8 --fault e4m3-grad --fault-step 400 --fault-layer 3
wait
run fp8_early_feature --precision fp8 --fault early-feature &
run fp8_wrong_inference --precision fp8 --fault wrong-inference
wait
run fp8_high_lr --precision fp8 --fault high-lr
