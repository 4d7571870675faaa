"""Second oracle for the FP8 casts: PyTorch's CPU float8 conversions.

Writes OUT/inputs.f32 (float32 values) and OUT/<format>.u8 (the codes torch produces). torch casts do not
saturate, so inputs are clamped to +-fmax first, which makes round-to-nearest-even plus clamping equal to
the saturating cast fp8scope implements. Exit code 3 means torch is not importable.
"""
import os
import sys

try:
    import numpy as np
    import torch
except Exception as exc:  # noqa: BLE001 - any import failure means "no oracle"
    print(f"torch unavailable: {exc}")
    sys.exit(3)

out = sys.argv[1]
rng = np.random.default_rng(20261130)
n = 1 << 20
exps = rng.uniform(-30.0, 20.0, n)
vals = (rng.standard_normal(n) * np.exp2(exps)).astype(np.float32)
# Exact ties and boundaries: multiples of small powers of two, zeros, subnormals, inf.
vals[: 1 << 16] = (rng.integers(-4096, 4096, 1 << 16) * np.exp2(rng.integers(-20, 6, 1 << 16))).astype(np.float32)
vals[1 << 16 : (1 << 16) + 64] = np.array([0.0, -0.0, np.inf, -np.inf] * 16, dtype=np.float32)
vals[(1 << 16) + 64 : (1 << 16) + 1064] = (rng.standard_normal(1000) * 1e-42).astype(np.float32)
vals.tofile(os.path.join(out, "inputs.f32"))
x = torch.from_numpy(vals)
formats = {
    "e4m3": (torch.float8_e4m3fn, 448.0),
    "e5m2": (torch.float8_e5m2, 57344.0),
    "e4m3fnuz": (torch.float8_e4m3fnuz, 240.0),
    "e5m2fnuz": (torch.float8_e5m2fnuz, 57344.0),
}
for name, (dtype, fmax) in formats.items():
    codes = torch.clamp(x, -fmax, fmax).to(dtype).view(torch.uint8).numpy()
    codes.tofile(os.path.join(out, name + ".u8"))
print(f"torch {torch.__version__}: {n} values")
