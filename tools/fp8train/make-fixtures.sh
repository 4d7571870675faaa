#!/usr/bin/env bash
# Generates the emulator's runs (issue 41), committed as tests/fixtures/emulated: under runs/, a BF16 baseline
# and one FP8 run per fault; under high-lr/, a BF16 baseline and an FP8 run with delayed scaling, both at four
# times the learning rate. Each 1,200 steps of the tiny GPT (tools/fp8train/fp8train.py) with statistics every
# 10 steps, gzip-compressed; one torch thread each, so that a run is the same from one machine to the next as
# far as torch's CPU kernels are. The text trained on is docs/*.md as checked out: after the docs change, the
# runs regenerated differ from the committed ones (the same faults, judged by the same test).
# Usage: tools/fp8train/make-fixtures.sh OUTDIR [PYTHON [SEED]]
#   PYTHON: the test venv's (build/venv/bin/python); SEED: 1 for the committed runs (tst_dynamics emulatedRuns),
#   others for emulatedFreshSeeds. To regenerate the committed runs:
#   rm -rf tests/fixtures/emulated && tools/fp8train/make-fixtures.sh tests/fixtures/emulated
set -euo pipefail
out="$1"
py="${2:-build/venv/bin/python}"
seed="${3:-1}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out/runs" "$out/high-lr"
run() {
    local name="$1"; shift
    rm -rf "${out:?}/$name"
    "$py" "$here/fp8train.py" --out "$out/$name" --steps 1200 --stat-interval 10 --seed "$seed" --threads 1 "$@"
    if [ -f "$out/$name/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log" ]; then
        gzip -9 -n "$out/$name/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"
    fi
}
run runs/bf16 --precision bf16 &
run runs/fp8_healthy --precision fp8 --fault none
wait
run runs/fp8_stale_scale --precision fp8 --recipe delayed --fault stale-scale --fault-step 400 --fault-layer 3 &
run runs/fp8_e4m3_grad --precision fp8 --fault e4m3-grad --fault-step 400 --fault-layer 3
wait
run runs/fp8_early_feature --precision fp8 --fault early-feature &
run runs/fp8_wrong_inference --precision fp8 --fault wrong-inference
wait
run high-lr/bf16 --precision bf16 --lr 0.012 &
run high-lr/fp8 --precision fp8 --recipe delayed --lr 0.012
wait
