"""Rewrites a run folder's fp8scope-dump HDF5 files as Transformer Engine DumpTensors would have written
them, with real torch (test-only): RUN/tensor_dumps/rank_0/iter_<%06d>/<sanitized layer>_<kind>.pt holding
{"high_precision": the bfloat16 tensor}, and RUN/rank_0/nvdlfw_inspect_logs/nvdlfw_inspect_globalrank-0.log
naming the layers ("Assigned layer name: ..."). The HDF5 files are removed.

usage: dumps_to_te.py RUN
Exit code 3 means torch or h5py is not importable.
"""
import glob
import os
import sys

try:
    import h5py
    import torch
except Exception as exc:  # noqa: BLE001 - any import failure means "no oracle"
    print(f"torch or h5py unavailable: {exc}")
    sys.exit(3)

run = sys.argv[1]


def sanitize(name):
    return "".join("_" if c in '/\\:*?"<>|. ' else c for c in name)


layers = set()
files = sorted(glob.glob(os.path.join(run, "**", "*.h5"), recursive=True))
for path in files:
    with h5py.File(path, "r") as f:
        for it_name, it in f.items():
            step = int(it_name.split("_")[1])
            folder = os.path.join(run, "tensor_dumps", "rank_0", f"iter_{step:06d}")
            os.makedirs(folder, exist_ok=True)
            for layer, group in it.items():
                layers.add(layer)
                for kind, ds in group.items():
                    if kind.endswith("_fp8"):
                        continue
                    data = ds[()]
                    if ds.attrs.get("dtype", b"") in (b"bfloat16", "bfloat16"):
                        t = torch.from_numpy(data.view("int16")).view(torch.bfloat16)
                    else:
                        t = torch.from_numpy(data)
                    torch.save({"high_precision": t}, os.path.join(folder, f"{sanitize(layer)}_{kind}.pt"))
    os.remove(path)
logs = os.path.join(run, "rank_0", "nvdlfw_inspect_logs")
os.makedirs(logs, exist_ok=True)
with open(os.path.join(logs, "nvdlfw_inspect_globalrank-0.log"), "w") as log:
    for layer in sorted(layers):
        log.write(f"2026-01-15 23:06:31,201 - INFO - Assigned layer name: {layer}\n")
print(f"{len(files)} files, {len(layers)} layers")
