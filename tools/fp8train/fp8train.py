#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""fp8train: a tiny GPT trained for real on the CPU, in BF16 or through an emulated FP8 GEMM, writing what the
real tools write (issue 41). Test-only: it runs in the test venv (torch CPU); fp8scope never needs Python.

Every linear layer of an FP8 run goes through fp8_linear: its input and weight are cast to float8_e4m3fn with a
per-tensor scale (current scaling: from this step's amax; delayed scaling: from an amax history), the output
gradient to float8_e5m2, and the GEMMs run on the dequantized values, as Transformer Engine's do on the
quantized ones. Faults come from real mechanisms, never from editing logged numbers:

  none            a healthy FP8 run
  stale-scale     from --fault-step, one layer's gradient scale no longer follows its amax: it stays at the
                  initial 1.0 (as when the layer's FP8 metadata is lost on a resume and its amax history is no
                  longer updated). Its gradients, far below e5m2's normal range at that scale, underflow: the
                  layer (an mlp.linear_fc2 of --fault-layer) stops learning and the loss parts later
  e4m3-grad       one layer's gradients are cast to e4m3 (the forward format: 3 mantissa bits, less range than
                  e5m2) from --fault-step on, with current scaling: on this model a fault that does not bite
  early-feature   from step 0, every layer's weight gradient is computed from unscaled FP8 values (the config
                  key fp8_wgrad_unscaled names the feature): early divergence
  wrong-inference training is healthy; the FP8 evaluation uses weight scales read off by a factor of 4

A learning rate high enough to strain the run is --lr (the baseline needs the same): with delayed scaling the
FP8 run then parts from a BF16 baseline in mid-run.

It writes, under --out (one run folder):
  logs/train.out                         Megatron stdout: the arguments block and `iteration N/ M | ...` lines
  nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log
                                         LogTensorStats / LogFp8TensorStats lines every --stat-interval steps
  dumps/step_<N>/<layer>.<tensor>.pt     DumpTensors-style dumps (torch.save) at a few steps
  config.yaml, pip_freeze.txt            the run's settings, and the packages a real run of its kind lists
                                         (torch as installed; Transformer Engine and Megatron-core as named)
  eval/results_<precision>.json          lm-evaluation-harness layout, from the final weights under BF16 and
                                         FP8 inference (FP8 runs)

Usage: fp8train.py --out DIR [--precision bf16|fp8] [--recipe current|delayed] [--fault KIND]
                   [--fault-step N] [--fault-layer I] [--steps N] [--seed S]
"""

import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

E4M3_MAX = 448.0
E5M2_MAX = 57344.0


def corpus_bytes():
    """The training text: the project's own documentation (written here, GPL), as bytes."""
    here = os.path.dirname(os.path.abspath(__file__))
    docs = os.path.join(here, "..", "..", "docs")
    parts = []
    for name in sorted(os.listdir(docs)):
        if name.endswith(".md"):
            with open(os.path.join(docs, name), "rb") as f:
                parts.append(f.read())
    data = b"\n".join(parts)
    if len(data) < 100000:
        raise SystemExit("fp8train: too little text in docs/ to train on")
    return data


class Quantizer:
    """One tensor's FP8 cast: its format, its scaling and what it did (the statistics TE logs)."""

    def __init__(self, dtype, fmax, recipe, history=16):
        self.dtype, self.fmax, self.recipe = dtype, fmax, recipe
        self.history = []
        self.history_len = history
        self.frozen = False
        self.scale = 1.0
        self.stats = {}
        self.measure = True  # the statistics are computed only at the steps they are logged
        self.unscaled = False

    def __call__(self, x):
        amax = float(x.detach().abs().max())
        if self.unscaled:
            scale = 1.0
        elif self.recipe == "delayed":
            if not self.frozen:
                self.history = (self.history + [amax])[-self.history_len:]
            ref = max(self.history) if self.history else amax
            scale = self.fmax / ref if ref > 0 else 1.0
        else:
            scale = self.fmax / amax if amax > 0 else 1.0
        self.scale = scale
        xs = x.detach() * scale
        q = xs.clamp(-self.fmax, self.fmax).to(self.dtype).to(torch.float32) / scale
        if not self.measure:
            return q
        saturated = (xs.abs() > self.fmax)
        xf = x.detach().float()
        n = xf.numel()
        nonzero = int((xf != 0).sum())
        self.stats = {
            "underflows%": 100.0 * (nonzero - int((q != 0).sum())) / n,
            "overflows%": 100.0 * int(saturated.sum()) / n,
            "scale_inv_min": 1.0 / scale,
            "scale_inv_max": 1.0 / scale,
            "mse": float(((q - xf) ** 2).mean()),
        }
        return q


class Fp8Linear(torch.nn.Module):
    """A linear layer whose GEMMs run on FP8-cast values (fprop, dgrad and wgrad, as in Transformer Engine)."""

    def __init__(self, d_in, d_out, recipe):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(d_out, d_in) * (1.0 / math.sqrt(d_in)))
        self.fp8 = recipe is not None
        recipe = recipe or "current"
        self.q_act = Quantizer(torch.float8_e4m3fn, E4M3_MAX, recipe)
        self.q_weight = Quantizer(torch.float8_e4m3fn, E4M3_MAX, recipe)
        self.q_grad = Quantizer(torch.float8_e5m2, E5M2_MAX, recipe)
        self.wgrad_unscaled = False
        self.last_input = None

    def forward(self, x):
        if not self.fp8:
            self.last_input = x.detach()
            return F.linear(x.to(torch.bfloat16), self.weight.to(torch.bfloat16)).float()
        return _Fp8Gemm.apply(x, self.weight, self)


class _Fp8Gemm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, layer):
        flat = x.reshape(-1, x.shape[-1])
        xq = layer.q_act(flat)
        wq = layer.q_weight(w)
        layer.last_input = flat.detach()
        ctx.save_for_backward(xq, wq)
        ctx.layer = layer
        ctx.shape = x.shape
        return (xq @ wq.t()).reshape(*x.shape[:-1], w.shape[0])

    @staticmethod
    def backward(ctx, grad):
        xq, wq = ctx.saved_tensors
        layer = ctx.layer
        g = grad.reshape(-1, grad.shape[-1])
        gq = layer.q_grad(g)
        dx = (gq @ wq).reshape(ctx.shape)
        if layer.wgrad_unscaled:
            # The feature the early fault enables: the weight gradient from FP8 values cast without a scale.
            g8 = g.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).float()
            x8 = xq.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).float()
            dw = g8.t() @ x8
        else:
            dw = gq.t() @ xq
        return dx, dw, None


class Block(torch.nn.Module):
    def __init__(self, d, heads, recipe):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.heads = heads
        self.qkv = Fp8Linear(d, 3 * d, recipe)
        self.proj = Fp8Linear(d, d, recipe)
        self.fc1 = Fp8Linear(d, 4 * d, recipe)
        self.fc2 = Fp8Linear(4 * d, d, recipe)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        shape = (b, t, self.heads, d // self.heads)
        q, k, v = (z.reshape(shape).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    def gemms(self):
        # Megatron-core's names for these GEMMs.
        return [("self_attention.linear_qkv", self.qkv), ("self_attention.linear_proj", self.proj),
                ("mlp.linear_fc1", self.fc1), ("mlp.linear_fc2", self.fc2)]


class Gpt(torch.nn.Module):
    def __init__(self, layers, d, heads, context, recipe):
        super().__init__()
        self.embed = torch.nn.Embedding(256, d)
        self.pos = torch.nn.Parameter(torch.zeros(context, d))
        self.blocks = torch.nn.ModuleList(Block(d, heads, recipe) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, 256, bias=False)

    def forward(self, idx):
        x = self.embed(idx) + self.pos[: idx.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))

    def named_gemms(self):
        for i, b in enumerate(self.blocks):
            for name, lin in b.gemms():
                yield "decoder.layers.%d.%s" % (i, name), lin


def te_line(stamp, name, step, value):
    return "%s - INFO - %s \t\t\t\t iteration=%06d \t\t\t\t value=%.4f\n" % (stamp, name, step, value)


def evaluate(model, data, context, windows, rng):
    """Next-byte accuracy on held-out windows, split into three tasks by where the window starts."""
    model.eval()
    tasks = {"bytes_a": [], "bytes_b": [], "bytes_c": []}
    names = list(tasks)
    with torch.no_grad():
        for w in range(windows):
            start = rng.randrange(0, len(data) - context - 1)
            x = torch.tensor(list(data[start:start + context]), dtype=torch.long)[None]
            y = torch.tensor(list(data[start + 1:start + context + 1]), dtype=torch.long)
            pred = model(x)[0].argmax(-1)
            tasks[names[w % 3]].extend((pred == y).float().tolist())
    model.train()
    out = {}
    for name, hits in tasks.items():
        n = len(hits)
        acc = sum(hits) / n
        out[name] = {"alias": name, "acc,none": acc, "acc_stderr,none": math.sqrt(acc * (1 - acc) / n)}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--precision", choices=["bf16", "fp8"], default="fp8")
    p.add_argument("--recipe", choices=["current", "delayed"], default="current")
    p.add_argument("--fault", choices=["none", "stale-scale", "e4m3-grad", "early-feature", "wrong-inference"],
                   default="none")
    p.add_argument("--fault-step", type=int, default=400)
    p.add_argument("--fault-layer", type=int, default=3)
    p.add_argument("--steps", type=int, default=1200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--stat-interval", type=int, default=10)
    p.add_argument("--dump-steps", default="")
    p.add_argument("--threads", type=int, default=0, help="torch's CPU threads (0: up to 4)")
    a = p.parse_args()

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads if a.threads > 0 else max(1, min(4, os.cpu_count() or 1)))
    rng = random.Random(a.seed)
    data = corpus_bytes()
    split = int(len(data) * 0.9)
    train, held = data[:split], data[split:]
    fp8 = a.precision == "fp8"
    recipe = a.recipe if fp8 else None
    model = Gpt(a.layers, a.d_model, 4, a.context, recipe)
    lr = a.lr
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1)
    warmup = max(1, a.steps // 20)
    gemms = list(model.named_gemms())
    culprit = gemms[a.fault_layer * 4 + 3] if fp8 else None  # the fault's layer: its mlp.linear_fc2

    if a.fault == "early-feature" and fp8:
        for _, lin in gemms:
            lin.wgrad_unscaled = True

    os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)
    if fp8:
        os.makedirs(os.path.join(a.out, "nvdlfw_inspect_statistics_logs"), exist_ok=True)
    args = {
        "train_iters": a.steps, "lr": lr, "lr_warmup_iters": warmup, "seed": a.seed, "num_layers": a.layers,
        "hidden_size": a.d_model, "seq_length": a.context, "global_batch_size": a.batch,
        "bf16": True, "fp8": "hybrid" if fp8 else None, "fp8_recipe": a.recipe if fp8 else None,
    }
    if a.fault == "early-feature" and fp8:
        args["fp8_wgrad_unscaled"] = True
    out = open(os.path.join(a.out, "logs", "train.out"), "w")
    out.write("------------------------ arguments ------------------------\n")
    for k in sorted(args):
        out.write("  %s %s %s\n" % (k, "." * max(2, 40 - len(k)), args[k]))
    out.write("-------------------- end of arguments ---------------------\n")
    with open(os.path.join(a.out, "config.yaml"), "w") as f:
        for k in sorted(args):
            f.write("%s: %s\n" % (k, "null" if args[k] is None else str(args[k]).lower()
                                  if isinstance(args[k], bool) else args[k]))
        f.write("precision: %s\n" % ("fp8" if fp8 else "bf16"))
    with open(os.path.join(a.out, "pip_freeze.txt"), "w") as f:
        f.write("torch==%s\ntransformer-engine==2.9.0\nmegatron-core==0.14.0\n" % torch.__version__.split("+")[0])
    # The FP8 statistics (LogFp8TensorStats) of an FP8 run; a BF16 run logs none.
    stats = open(os.path.join(a.out, "nvdlfw_inspect_statistics_logs", "nvdlfw_inspect_globalrank-0.log"), "w") \
        if fp8 else None
    dump_steps = {int(s) for s in a.dump_steps.split(",") if s}

    losses = []
    t0 = time.time()
    for step in range(1, a.steps + 1):
        if fp8 and step == a.fault_step:
            if a.fault == "stale-scale":
                # The layer's gradient scale stays at the initial 1.0: its amax is no longer looked at.
                culprit[1].q_grad.unscaled = True
            elif a.fault == "e4m3-grad":
                culprit[1].q_grad = Quantizer(torch.float8_e4m3fn, E4M3_MAX, a.recipe)
        lr_now = lr * min(1.0, step / warmup) * (0.5 * (1 + math.cos(math.pi * min(1.0, step / a.steps))) * 0.9 + 0.1)
        for g in opt.param_groups:
            g["lr"] = lr_now
        measure = (step - 1) % a.stat_interval == 0
        for _, lin in gemms:
            for q in (lin.q_act, lin.q_weight, lin.q_grad):
                q.measure = measure
        starts = [rng.randrange(0, len(train) - a.context - 1) for _ in range(a.batch)]
        x = torch.tensor([list(train[s:s + a.context]) for s in starts], dtype=torch.long)
        y = torch.tensor([list(train[s + 1:s + a.context + 1]) for s in starts], dtype=torch.long)
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        losses.append(loss.item())
        it = step - 1  # the debug API's counter starts at 0
        if fp8 and it % a.stat_interval == 0:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S,000", time.gmtime(1767225600 + step))
            for name, lin in gemms:
                for tensor, q in (("activation", lin.q_act), ("weight", lin.q_weight), ("gradient", lin.q_grad)):
                    for stat, v in q.stats.items():
                        if stat == "overflows%" and a.recipe != "delayed":
                            continue
                        stats.write(te_line(stamp, "%s_%s_%s" % (name, tensor, stat), it, v))
        if step % a.log_interval == 0:
            mean = sum(losses[-a.log_interval:]) / a.log_interval
            ms = 1000.0 * (time.time() - t0) / a.log_interval
            t0 = time.time()
            out.write(" iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | "
                      "learning rate: %.6E | global batch size: %5d | lm loss: %.6E | loss scale: 1.0 | "
                      "grad norm: %.3f | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
                      % (step, a.steps, step * a.batch, ms, lr_now, a.batch, mean, gnorm))
        if step in dump_steps:
            d = os.path.join(a.out, "dumps", "step_%d" % step)
            os.makedirs(d, exist_ok=True)
            for name, lin in gemms:
                if lin.last_input is not None:
                    torch.save(lin.last_input.clone(), os.path.join(d, "%s.activation.pt" % name))
        out.flush()
    out.close()
    if stats:
        stats.close()

    # Evaluations of the final weights: BF16 inference, and FP8 inference for an FP8 run (with its scales off
    # by 4 for the wrong-inference fault: the largest quarter of each weight saturates).
    os.makedirs(os.path.join(a.out, "eval"), exist_ok=True)
    settings = [("bf16", None)] + ([("fp8", a.recipe)] if fp8 else [])
    for precision, rec in settings:
        eval_model = Gpt(a.layers, a.d_model, 4, a.context, rec)
        eval_model.load_state_dict(model.state_dict())
        if rec and a.fault == "wrong-inference":
            for _, lin in eval_model.named_gemms():
                lin.q_weight.recipe = "delayed"
                lin.q_weight.frozen = True
                lin.q_weight.history = [float(lin.weight.detach().abs().max()) / 4.0]
        results = evaluate(eval_model, held, a.context, 300, random.Random(a.seed + 7))
        doc = {"results": results, "config": {"model": "fp8train",
                                              "model_args": "dtype=%s" % ("bfloat16" if precision == "bf16"
                                                                          else "float8")}}
        with open(os.path.join(a.out, "eval", "results_%s.json" % precision), "w") as f:
            json.dump(doc, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
