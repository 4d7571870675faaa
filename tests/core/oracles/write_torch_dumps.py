"""Writes torch.save files with real torch for the native .pt reader's tests (test-only).

usage: write_torch_dumps.py OUTDIR
  OUTDIR/plain.pt                 float32 (-0, a subnormal, inf, NaN), float16, bfloat16, float8_e4m3fn and
                                  float8_e5m2 tensors, non-contiguous views (a transpose, a strided slice, a
                                  column), tensors sharing one storage, nested dicts and lists, a bare int
  OUTDIR/expected/NAME.bin        the bytes of each tensor, contiguous, as torch has them
  OUTDIR/expected/index.txt       NAME DTYPE SHAPE, one per line
  OUTDIR/run/tensor_dumps/rank_R/iter_N/<layer>_activation.pt and _weight.pt, DumpTensors-shaped: two ranks, three
                                  iterations, {"high_precision": bf16, "quantized": a Transformer Engine Float8Tensor
                                  in its reduce form}; and an MXFP8Tensor one; the run's nvdlfw_inspect log names
                                  the layers
  OUTDIR/expected/te/REL.bin      the float32 values each quantized entry's codes x scale_inv give, and
                                  REL.hp.bin the bytes of its high_precision entry
  OUTDIR/blockwise/NAME.pt        Float8BlockwiseQTensor entries (128x128 and 1x128, both reduce forms), with
                                  OUTDIR/expected/blockwise-NAME.bin their codes x scale_inv
  OUTDIR/unnamed/tensor_dumps/... one DumpTensors file without the nvdlfw_inspect log that names its layer
  OUTDIR/hostile/*.pt             pickles whose load would run code (each would create OUTDIR/pwned-NAME), and
                                  hand-made archives with bad sizes, keys and nesting; each has a good
                                  "high_precision" entry where the format allows
Exit code 3 means torch is not importable.
"""
import collections
import io
import os
import struct
import sys
import types
import zipfile

try:
    import torch
except Exception as exc:  # noqa: BLE001 - any import failure means "no oracle"
    print(f"torch unavailable: {exc}")
    sys.exit(3)

out = sys.argv[1]
for sub in ("expected/te", "hostile", "run/nvdlfw_inspect_logs"):
    os.makedirs(os.path.join(out, sub), exist_ok=True)


def expect(name, t):
    t = t.contiguous()
    with open(os.path.join(out, "expected", name + ".bin"), "wb") as f:
        f.write(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    index.write(f"{name} {str(t.dtype).replace('torch.', '')} {'x'.join(str(d) for d in t.shape)}\n")


index = open(os.path.join(out, "expected", "index.txt"), "w")
g = torch.Generator().manual_seed(26)
f32 = torch.randn(6, 8, generator=g) * 3
f32[0, 0] = -0.0
f32[0, 1] = 1e-45
f32[0, 2] = float("inf")
f32[0, 3] = float("nan")
f16 = (torch.randn(5, 7, generator=g) * 100).to(torch.float16)
bf16 = (torch.randn(4, 9, generator=g) * 1e4).to(torch.bfloat16)
e4m3 = (torch.randn(3, 16, generator=g) * 50).to(torch.float8_e4m3fn)
e5m2 = (torch.randn(2, 32, generator=g) * 1000).to(torch.float8_e5m2)
shared = torch.arange(120, dtype=torch.float32).reshape(10, 12) / 8
plain = {
    "f32": f32,
    "model": collections.OrderedDict(
        [("layers.0.fc1.weight", f16), ("layers.0.fc1.bias", bf16[0]), ("emb", bf16)]),
    "fp8": [e4m3, {"e5m2": e5m2}],
    "views": {
        "transposed": f32.t(),
        "strided": shared[1:9:3, ::2],
        "column": shared[:, 5],
        "rows": shared[2:4],
        "whole": shared,
        "bf16_t": bf16.t(),
    },
    "step": 100,
}
torch.save(plain, os.path.join(out, "plain.pt"))
expect("f32", f32)
expect("model.layers.0.fc1.weight", f16)
expect("model.layers.0.fc1.bias", bf16[0])
expect("model.emb", bf16)
expect("fp8.0", e4m3)
expect("fp8.1.e5m2", e5m2)
expect("views.transposed", f32.t())
expect("views.strided", shared[1:9:3, ::2])
expect("views.column", shared[:, 5])
expect("views.rows", shared[2:4])
expect("views.whole", shared)
expect("views.bf16_t", bf16.t())
index.close()


# Transformer Engine's quantized tensors in their reduce form (transformer_engine/pytorch/tensor/*.py):
# Float8Tensor._make_in_reduce_ex(data, fp8_dtype, scale_inv, dtype) and MXFP8Tensor._make_in_reduce_ex(
# rowwise_data, rowwise_scale_inv, columnwise_data, columnwise_scale_inv, fp8_dtype, dtype, shape, quantizer).
# The classes are stand-ins with TE's module paths; DType pickles as a pybind11 enum does (its value as state).
def module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


tex = module("transformer_engine_torch")
module("transformer_engine")
module("transformer_engine.pytorch")
module("transformer_engine.pytorch.tensor")
f8mod = module("transformer_engine.pytorch.tensor.float8_tensor")
mxmod = module("transformer_engine.pytorch.tensor.mxfp8_tensor")
bwmod = module("transformer_engine.pytorch.tensor.float8_blockwise_tensor")


class DType:
    def __init__(self, value=0):
        self.value = value

    def __getstate__(self):
        return (self.value,)

    def __setstate__(self, state):
        self.value = state[0]


DType.__module__ = "transformer_engine_torch"
tex.DType = DType


class Float8Tensor:
    @classmethod
    def _make_in_reduce_ex(cls, data, fp8_dtype, fp8_scale_inv, dtype):
        raise RuntimeError("never called by the reader")


class MXFP8Tensor:
    @classmethod
    def _make_in_reduce_ex(cls, *args):
        raise RuntimeError("never called by the reader")


class Float8BlockwiseQTensor:
    @classmethod
    def _make_in_reduce_ex(cls, *args):
        raise RuntimeError("never called by the reader")


class Quantizer:  # what MXFP8Tensor pickles beside its data: not on the reader's allowlist
    pass


for cls, mod in ((Float8Tensor, f8mod), (MXFP8Tensor, mxmod), (Quantizer, mxmod), (Float8BlockwiseQTensor, bwmod)):
    cls.__module__ = mod.__name__
    setattr(mod, cls.__name__, cls)


class Reduced:
    def __init__(self, maker, args):
        self.maker, self.args = maker, args

    def __reduce_ex__(self, protocol):
        return (self.maker, self.args)


def float8(hp, scale):
    codes = (hp.float() * scale).to(torch.float8_e4m3fn)
    scale_inv = torch.tensor([1.0 / scale], dtype=torch.float32)
    values = codes.float() * scale_inv  # what the codes stand for
    return Reduced(Float8Tensor._make_in_reduce_ex, (codes.view(torch.uint8), DType(7), scale_inv, torch.bfloat16)), values


def mxfp8(hp):
    rows, cols = hp.shape
    x = hp.float().reshape(rows, cols // 32, 32)
    amax = x.abs().amax(dim=2).clamp(min=2.0**-120)
    exp = torch.floor(torch.log2(amax)) - 8  # E4M3's largest power of two is 2^8
    scale_inv = torch.pow(2.0, exp)
    codes = (x / scale_inv.unsqueeze(2)).to(torch.float8_e4m3fn).reshape(rows, cols)
    padded = torch.full(((rows + 127) // 128 * 128, (cols // 32 + 3) // 4 * 4), 127, dtype=torch.uint8)
    padded[:rows, : cols // 32] = (exp + 127).to(torch.uint8)
    values = (codes.float().reshape(rows, cols // 32, 32) * scale_inv.unsqueeze(2)).reshape(rows, cols)
    args = (codes.view(torch.uint8), padded, None, None, DType(7), torch.bfloat16, torch.Size([rows, cols]), Quantizer())
    return Reduced(MXFP8Tensor._make_in_reduce_ex, args), values


def blockwise(hp, two_d, old_form=False):
    # Float8BlockQuantizer's GEMM-ready layouts: 128x128 blocks, scale (ceil(M/128), ceil(K/128) up to 4);
    # 1x128, scale transposed (ceil(K/128), M up to 4).
    x = hp.float()
    rows, cols = x.shape
    br, bc = (128, 128) if two_d else (1, 128)
    gr, gc = (rows + br - 1) // br, (cols + bc - 1) // bc
    grid = torch.zeros(gr, gc)
    for r in range(gr):
        for c in range(gc):
            grid[r, c] = x[r * br:(r + 1) * br, c * bc:(c + 1) * bc].abs().max().clamp(min=1e-30) / 448.0
    expanded = grid.repeat_interleave(br, 0)[:rows].repeat_interleave(bc, 1)[:, :cols]
    codes = (x / expanded).to(torch.float8_e4m3fn)
    values = codes.float() * expanded
    up4 = lambda n: (n + 3) // 4 * 4  # noqa: E731
    if two_d:
        stored = torch.zeros(gr, up4(gc))
        stored[:, :gc] = grid
    else:
        stored = torch.zeros(gc, up4(gr))
        stored[:, :gr] = grid.t()
    data = codes.view(torch.uint8)
    if old_form:
        args = (data, stored, None, None, DType(7), torch.bfloat16)
    else:
        args = (torch.Size([rows, cols]), data, stored, None, None, DType(7), torch.bfloat16, Quantizer(), two_d)
    return Reduced(Float8BlockwiseQTensor._make_in_reduce_ex, args), values


os.makedirs(os.path.join(out, "blockwise"))
with open(os.path.join(out, "expected", "blockwise.txt"), "w") as bw_index:
    for name, shape, two_d, old in (("w2d", (256, 384), True, False), ("a1d", (200, 256), False, False),
                                    ("old1d", (64, 384), False, True)):
        hp = (torch.randn(*shape, generator=g) * torch.logspace(-3, 3, shape[1])).to(torch.bfloat16)
        q, values = blockwise(hp, two_d, old)
        torch.save({"high_precision": hp, "quantized": q}, os.path.join(out, "blockwise", name + ".pt"))
        with open(os.path.join(out, "expected", "blockwise-" + name + ".bin"), "wb") as f:
            f.write(values.numpy().tobytes())
        bw_index.write(f"{name} {'128x128' if two_d else '1x128'}\n")

layers = ["model.layers.0.self_attention.linear_qkv", "model.layers.1.mlp.linear_fc2", "model.layers.1"]
with open(os.path.join(out, "run", "nvdlfw_inspect_logs", "nvdlfw_inspect_globalrank-0.log"), "w") as log:
    for name in layers:
        log.write(f"2026-01-15 23:06:31,201 - INFO - Assigned layer name: {name}\n")
    log.write(f"2026-01-15 23:06:33,943 - INFO - LAYER={layers[1]}: Tensor: activation, gemm fprop - Dump\n")


def sanitize(name):
    return "".join("_" if c in '/\\:*?"<>|. ' else c for c in name)


te_index = open(os.path.join(out, "expected", "te", "index.txt"), "w")
for rank in (0, 1):
    for it in (10, 20, 30):
        folder = os.path.join(out, "run", "tensor_dumps", f"rank_{rank}", f"iter_{it:06d}")
        os.makedirs(folder, exist_ok=True)
        for layer, tensor in ((layers[0], "activation"), (layers[1], "weight")):
            hp = (torch.randn(16, 64, generator=g) * (rank + 1) * it).to(torch.bfloat16)
            q, values = float8(hp, 448.0 / float(hp.float().abs().max()))
            rel = f"rank_{rank}/iter_{it:06d}/{sanitize(layer)}_{tensor}.pt"
            torch.save({"high_precision": hp, "quantized": q}, os.path.join(out, "run", "tensor_dumps", rel))
            dst = os.path.join(out, "expected", "te", rel.replace("/", "_") + ".bin")
            with open(dst, "wb") as f:
                f.write(values.numpy().tobytes())
            with open(dst[: -len(".bin")] + ".hp.bin", "wb") as f:
                f.write(hp.view(torch.uint8).numpy().tobytes())
            te_index.write(f"{rel} {layer} {tensor}\n")
hp = (torch.randn(64, 96, generator=g) * 5).to(torch.bfloat16)
hp[3, 40:72] *= 1000  # one block far larger than the rest
q, values = mxfp8(hp)
rel = f"rank_0/iter_000010/{sanitize(layers[1])}_gradient.pt"
torch.save({"high_precision": hp, "quantized": q}, os.path.join(out, "run", "tensor_dumps", rel))
with open(os.path.join(out, "expected", "te", rel.replace("/", "_") + ".bin"), "wb") as f:
    f.write(values.numpy().tobytes())
with open(os.path.join(out, "expected", "te", rel.replace("/", "_") + ".hp.bin"), "wb") as f:
    f.write(hp.view(torch.uint8).numpy().tobytes())
te_index.write(f"{rel} {layers[1]} gradient\n")
te_index.close()
# A DumpTensors folder without the debug tool's log: its names cannot be resolved.
folder = os.path.join(out, "unnamed", "tensor_dumps", "rank_0", "iter_000005")
os.makedirs(folder)
torch.save({"high_precision": torch.ones(4, 4, dtype=torch.bfloat16)},
           os.path.join(folder, "decoder_layers_3_fc1_activation.pt"))


# Hostile files. Each pickle would create OUTDIR/pwned-NAME were it run.
good = torch.arange(8, dtype=torch.float32)


def marker(name):
    return os.path.join(out, f"pwned-{name}")


class CallsSystem:
    def __reduce__(self):
        return (os.system, (f"touch {marker('system')}",))


class CallsEval:
    def __reduce__(self):
        return (eval, (f"open({marker('eval')!r}, 'w')",))


class CallsPopen:
    def __reduce__(self):
        import subprocess
        return (subprocess.Popen, (["touch", marker("popen")],))


class Unknown:
    def __init__(self, *args):
        open(marker("unknown"), "w").close()

    def __reduce__(self):
        return (Unknown, (1,))


class CallsGetattr:  # getattr(os, "system") then a call of it
    def __reduce__(self):
        return (getattr(os, "system"), (f"touch {marker('getattr')}",))


for name, payload in (("system", CallsSystem()), ("eval", CallsEval()), ("popen", CallsPopen()),
                      ("unknown", Unknown.__new__(Unknown)), ("getattr", CallsGetattr())):
    torch.save({"high_precision": good, "quantized": payload}, os.path.join(out, "hostile", f"{name}.pt"))

# Hand-made archives in torch's layout.


def pickle_of(obj):
    buf = io.BytesIO()
    torch.save(obj, buf)
    with zipfile.ZipFile(buf) as z:
        name = next(n for n in z.namelist() if n.endswith("/data.pkl"))
        return z.read(name), {n: z.read(n) for n in z.namelist()}


def write_zip(path, entries):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in entries.items():
            z.writestr(name, data)


_, entries = pickle_of({"high_precision": good})
pkl_name = next(n for n in entries if n.endswith("/data.pkl"))
prefix = pkl_name[: -len("data.pkl")]
# A storage key outside the archive and a storage far smaller than declared.
pkl = entries[pkl_name]
write_zip(os.path.join(out, "hostile", "outside.pt"),
          {**{n: d for n, d in entries.items()}, pkl_name: pkl.replace(b"X\x01\x00\x00\x000", b"X\x08\x00\x00\x00../../x0")})
huge = pkl.replace(struct.pack("<BB", ord("K"), 8), b"\x8a\x08" + struct.pack("<q", 1 << 60), 1)
write_zip(os.path.join(out, "hostile", "huge.pt"), {**entries, pkl_name: huge})
# Deep nesting: a million lists in lists, then STOP.
deep = b"\x80\x02" + b"]" * 1 + b"(]" * 200000 + b"e" * 200000 + b"."
write_zip(os.path.join(out, "hostile", "deep.pt"), {prefix + "data.pkl": deep, prefix + "byteorder": b"little"})
# A compressed storage, and a truncated archive.
with zipfile.ZipFile(os.path.join(out, "hostile", "compressed.pt"), "w") as z:
    for name, data in entries.items():
        z.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED if "/data/" in name else zipfile.ZIP_STORED)
whole = open(os.path.join(out, "plain.pt"), "rb").read()
open(os.path.join(out, "hostile", "truncated.pt"), "wb").write(whole[: len(whole) // 2])
torch.save(good, os.path.join(out, "hostile", "legacy.pt"), _use_new_zipfile_serialization=False)
print("ok")
