"""Writes files with the real libraries whose formats fp8scope reads (test-only oracle).

usage: write_formats.py OUTDIR
  OUTDIR/tb/events.out.tfevents.*   torch.utils.tensorboard (tensorboard package): scalars `loss`
                                    (simple_value) and `lr` (new-style scalar tensor) at steps 0..9,
                                    a histogram `w` at step 3, a text summary `args` at step 0
  OUTDIR/scalars/                   add_scalars("losses", {"train": 2 - step/10, "val": 3 - step/10}) at steps
                                    0..4: one writer per key in scalars/losses_train/ and scalars/losses_val/
  OUTDIR/dumps/iter_000050.safetensors   safetensors package: `layers.0.fc1.weight` float32 [4, 8],
                                    `layers.1.fc2.weight` bfloat16 [2, 16], and as DeepSeek-V3 stores FP8
                                    weights, `layers.2.fc3.weight` float8_e4m3fn [300, 130] with its 128x128
                                    block decode scales `layers.2.fc3.weight_scale_inv` float32 [3, 2]
  ORACLEDIR/fc3_values.npy          (when given) torch's dequantization of that weight: codes as float32
                                    times their block's scale
"""
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file
from torch.utils.tensorboard import SummaryWriter

out = sys.argv[1]
os.makedirs(os.path.join(out, "tb"), exist_ok=True)
os.makedirs(os.path.join(out, "dumps"), exist_ok=True)

w = SummaryWriter(os.path.join(out, "tb"))
for step in range(10):
    w.add_scalar("loss", 1.0 / (step + 1), step)
    w.add_scalar("lr", 0.5 * step, step, new_style=True)
w.add_histogram("w", np.array([-2.0, -1.0, 0.5, 3.0], dtype=np.float64), 3)
w.add_text("args", "lr=0.1 fp8=hybrid", 0)
w.close()

w = SummaryWriter(os.path.join(out, "scalars"))
for step in range(5):
    w.add_scalars("losses", {"train": 2.0 - step / 10, "val": 3.0 - step / 10}, step)
w.close()

gen = torch.Generator().manual_seed(5)
master = torch.randn(300, 130, generator=gen) * torch.logspace(-3, 1, 130)
scale_inv = torch.empty(3, 2)
codes = torch.empty(300, 130, dtype=torch.float8_e4m3fn)
for i in range(3):
    for j in range(2):
        block = master[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128]
        scale_inv[i, j] = block.abs().max() / 448.0
        codes[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128] = (block / scale_inv[i, j]).to(torch.float8_e4m3fn)
save_file(
    {
        "layers.0.fc1.weight": torch.arange(32, dtype=torch.float32).reshape(4, 8),
        "layers.1.fc2.weight": torch.ones(2, 16, dtype=torch.bfloat16),
        "layers.2.fc3.weight": codes,
        "layers.2.fc3.weight_scale_inv": scale_inv,
    },
    os.path.join(out, "dumps", "iter_000050.safetensors"),
)
if len(sys.argv) > 2:
    expanded = scale_inv.repeat_interleave(128, 0)[:300].repeat_interleave(128, 1)[:, :130]
    np.save(os.path.join(sys.argv[2], "fc3_values.npy"), (codes.to(torch.float32) * expanded).numpy())
