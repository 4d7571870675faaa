"""Writes files with the real libraries whose formats fp8scope reads (test-only oracle).

usage: write_formats.py OUTDIR
  OUTDIR/tb/events.out.tfevents.*   torch.utils.tensorboard (tensorboard package): scalars `loss`
                                    (simple_value) and `lr` (new-style scalar tensor) at steps 0..9,
                                    a histogram `w` at step 3, a text summary `args` at step 0
  OUTDIR/dumps/iter_000050.safetensors   safetensors package: `layers.0.fc1.weight` float32 [4, 8] and
                                    `layers.1.fc2.weight` bfloat16 [2, 16]
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

save_file(
    {
        "layers.0.fc1.weight": torch.arange(32, dtype=torch.float32).reshape(4, 8),
        "layers.1.fc2.weight": torch.ones(2, 16, dtype=torch.bfloat16),
    },
    os.path.join(out, "dumps", "iter_000050.safetensors"),
)
