"""Writes PyTorch .pt files with torch.save for the tools/pt2safetensors.py test (test-only).

usage: write_pt.py OUTDIR
  OUTDIR/run/iter_000100.pt   a nested checkpoint: a state dict (float32 with -0, a subnormal, inf and NaN;
                              float64; bfloat16; a tied weight; int64 and bool tensors), a plain int,
                              two views of one buffer and a float8_e4m3fn tensor
  OUTDIR/expected/NAME.bin    the bytes each kept tensor must have in the safetensors file
  OUTDIR/expected/names.txt   the kept names, one per line, and OUTDIR/expected/NAME.shape ("4x8")
  OUTDIR/legacy.pt            one float16 tensor in the legacy (non-zip) serialization
  OUTDIR/nothing.pt           {"x": 1}: no tensor at all
  OUTDIR/evil.pt              a pickle whose load would create OUTDIR/pwned (through open)
Exit code 3 means torch or safetensors is not importable.
"""
import collections
import os
import sys

try:
    import torch
    import safetensors  # noqa: F401 - the tool under test needs it
except Exception as exc:  # noqa: BLE001 - any import failure means "no oracle"
    print(f"torch or safetensors unavailable: {exc}")
    sys.exit(3)

out = sys.argv[1]
os.makedirs(os.path.join(out, "run"), exist_ok=True)
os.makedirs(os.path.join(out, "expected"), exist_ok=True)

fc1 = torch.arange(32, dtype=torch.float32).reshape(4, 8) / 7
fc1[0, 0] = -0.0
fc1[0, 1] = 1e-45
fc1[0, 2] = float("inf")
fc1[0, 3] = float("nan")
bias = torch.tensor([0.1, -1e-3, 3.0, 1e300, 2.0**-130, 0.0, -7.25, 1 / 3], dtype=torch.float64)
emb = (torch.arange(15, dtype=torch.float32).reshape(3, 5) * 1.37 - 9).to(torch.bfloat16)
model = collections.OrderedDict()
model["layers.0.fc1.weight"] = fc1
model["layers.0.fc1.bias"] = bias
model["emb.weight"] = emb
model["head.weight"] = emb  # tied: the same tensor twice
model["steps"] = torch.tensor(7)
model["mask"] = torch.ones(3, dtype=torch.bool)
buffer = torch.arange(100, dtype=torch.float32).reshape(10, 10)
f8 = torch.tensor([0.5, -448.0, 3.0, 1e-3]).to(torch.float8_e4m3fn)
torch.save({"model": model, "iteration": 100, "views": [buffer[:2], buffer[5:]], "f8": f8},
           os.path.join(out, "run", "iter_000100.pt"))

expected = {
    "model.layers.0.fc1.weight": fc1,
    "model.layers.0.fc1.bias": bias.to(torch.float32),
    "model.emb.weight": emb,
    "model.head.weight": emb,
    "views.0": buffer[:2],
    "views.1": buffer[5:],
    "f8": f8,
}
with open(os.path.join(out, "expected", "names.txt"), "w") as names:
    for name, t in expected.items():
        names.write(name + "\n")
        t = t.contiguous()
        with open(os.path.join(out, "expected", name + ".bin"), "wb") as f:
            f.write(t.view(torch.uint8).numpy().tobytes())
        with open(os.path.join(out, "expected", name + ".shape"), "w") as f:
            f.write("x".join(str(d) for d in t.shape))

torch.save(torch.tensor([[1.5, -2.0, 65504.0]], dtype=torch.float16), os.path.join(out, "legacy.pt"),
           _use_new_zipfile_serialization=False)
torch.save({"x": 1}, os.path.join(out, "nothing.pt"))


class Evil:
    def __reduce__(self):
        return (open, (os.path.join(out, "pwned"), "w"))


torch.save({"evil": Evil()}, os.path.join(out, "evil.pt"))
