"""Writes Transformer Engine DumpTensors-shaped files holding each of TE's quantized tensor classes, in both
reduce forms TE has pickled, quantized as core/formats/fp8math.h defines it, clean and with planted faults
(test-only oracle).

usage: write_te_quantized.py OUTDIR
  OUTDIR/te/NAME.pt         torch.save({"high_precision": bf16 (M, K), "quantized": <TE tensor, reduce form>}),
                            256 x 384 unless named: float8-{new,old}, mxfp8-{new,old}, mxfp8-200x320 (M not a
                            multiple of 32, which TE itself refuses: the last 32x1 columnwise block is 8 rows),
                            blockwise2d-new, blockwise1d-{new,old}, nvfp4-{new,old}; planted faults (rowwise copy
                            only): float8-badcode (0,0) +1 step, mxfp8-badcode (5,70) +3 steps, mxfp8-badscale
                            block (9,2) E8M0 +1, blockwise2d-badscale block (1,1) x 2, nvfp4-badamax (amax_rowwise
                            1000x the true one, and every rowwise scale and code computed from it)
  OUTDIR/te/expected.json   per file: class, form ("new": TE 2.15+'s module-level _make_*_in_reduce_ex;
                            "old": CLASS._make_in_reduce_ex), shape, the copies present and the planted
                            fault (null for a correct kernel's output)
The classes are stand-ins with TE's module paths (nothing is constructed when the file is read); DType
pickles as a pybind11 enum does. Exit code 3 means torch is not importable.
"""
import json
import os
import sys
import types
import zipfile

try:
    import torch
except Exception as exc:  # noqa: BLE001 - any import failure means "no oracle"
    print(f"torch unavailable: {exc}")
    sys.exit(3)

out = os.path.join(sys.argv[1], "te")
os.makedirs(out, exist_ok=True)
F32 = torch.float32
FLT_MAX = 3.4028234663852886e38
E4M3, E2M1 = 7, 10  # transformer_engine_torch.DType values (kFloat8E4M3, kFloat4E2M1)


def f32(v):
    return torch.tensor(v, dtype=F32)


def up(n, m):
    return (n + m - 1) // m * m


def cdiv(n, m):
    return (n + m - 1) // m


def own(t):  # a tensor with a storage of its own, exactly its size (torch.save writes whole storages)
    return None if t is None else t.contiguous().clone()


# ---- the stand-ins: TE's module paths, both maker forms ----
def module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


tex = module("transformer_engine_torch")
for pkg in ("transformer_engine", "transformer_engine.pytorch", "transformer_engine.pytorch.tensor"):
    module(pkg)


class DType:  # a pybind11 enum pickles as its class and its value as state
    def __init__(self, value=0):
        self.value = value

    def __getstate__(self):
        return (self.value,)

    def __setstate__(self, state):
        self.value = state[0]


DType.__module__ = tex.__name__
tex.DType = DType


def stand_in(module_name, name):  # a function pickle writes as the GLOBAL module_name.name
    def fn(*args):
        raise RuntimeError("stand-in: never called by the reader")
    fn.__module__, fn.__name__, fn.__qualname__ = module_name, name, name
    return fn


MAKERS = {}  # class name -> (old maker, new maker, quantizer class)
for cls_name, mod_name, quantizer_name in (
        ("Float8Tensor", "float8_tensor", "Float8CurrentScalingQuantizer"),
        ("MXFP8Tensor", "mxfp8_tensor", "MXFP8Quantizer"),
        ("Float8BlockwiseQTensor", "float8_blockwise_tensor", "Float8BlockQuantizer"),
        ("NVFP4Tensor", "nvfp4_tensor", "NVFP4Quantizer")):
    mod = module("transformer_engine.pytorch.tensor." + mod_name)
    # old: a classmethod, which pickles as getattr(CLASS, "_make_in_reduce_ex")
    old = stand_in(mod.__name__, "_make_in_reduce_ex")
    cls = type(cls_name, (), {"_make_in_reduce_ex": classmethod(old), "__module__": mod.__name__})
    # new (TE 2.15+): a module-level function, e.g. float8_tensor._make_float8_tensor_in_reduce_ex
    new = stand_in(mod.__name__, f"_make_{mod_name}_in_reduce_ex")
    # the quantizer TE pickles beside the data (never read; off the reader's allowlist)
    quantizer = type(quantizer_name, (), {"__module__": mod.__name__})
    for obj in (cls, new, quantizer):
        setattr(mod, obj.__name__, obj)
    MAKERS[cls_name] = (cls._make_in_reduce_ex, new, quantizer)


class Reduced:
    def __init__(self, maker, args):
        self.maker, self.args = maker, args

    def __reduce_ex__(self, protocol):
        return (self.maker, self.args)


# ---- casts and scales, as fp8math.h defines them (float32 throughout) ----
def e4m3_codes(x):
    """castToCode(x, E4M3): torch rounds to nearest even; clamping first makes it saturate."""
    return x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).view(torch.uint8)


def e4m3_values(codes):
    return codes.view(torch.float8_e4m3fn).to(F32)


E2M1_GRID = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_MIDS = (E2M1_GRID[1:] + E2M1_GRID[:-1]) / 2  # 0.25 0.75 1.25 1.75 2.5 3.5 5


def e2m1_codes(x):
    """castToCode(x, E2M1): nearest of the grid, ties to the even code, saturating at 6; sign bit 0x8."""
    mag = x.abs()
    code = torch.bucketize(mag, E2M1_MIDS)  # a tie with MIDS[j] gives j, the lower neighbour
    tie = mag == E2M1_MIDS[code.clamp(max=6)]
    code = code + (tie & (code % 2 == 1)).long()  # an odd lower neighbour loses the tie
    return (code | torch.signbit(x).long() * 8).to(torch.uint8)


def e8m0_round_up(x):
    """e8m0FromFloat(x, roundUp=true) for x >= 0 finite: ceil(log2 x) as a biased exponent."""
    bits = x.view(torch.int32) & 0x7FFFFFFF
    exp, man = bits >> 23, bits & 0x7FFFFF
    code = torch.where(exp == 0, (man > 0x400000).int(), exp + (man != 0).int())
    return torch.where(bits >= 0x7F000000, 0xFE, code).clamp(max=0xFE)


def e8m0_float(code):
    """e8m0ToFloat: 2^(code - 127); code 0 is 2^-127 (a float32 subnormal, bits 0x400000)."""
    return torch.where(code == 0, 0x400000, code << 23).int().view(F32)


def mx_encode(amax):
    """mxScaleCode(amax, E4M3, ocpRule=false) and the encode scale blockScaleFor derives from it."""
    code = e8m0_round_up(amax * (f32(1.0) / f32(448.0)))
    return code.to(torch.uint8), e8m0_float(254 - code)


def nvfp4_global_encode(amax):
    if not (amax > 0 and amax <= FLT_MAX):
        return f32(1.0)
    return (f32(448.0 * 6.0) / amax).clamp(max=FLT_MAX)


def nvfp4_block(block_amax, global_encode):
    """nvfp4BlockScale: the E4M3 byte of amax/6 * global, and the encode scale (0 where the decode is 0)."""
    byte = e4m3_codes(block_amax * (f32(1.0) / f32(6.0)) * global_encode)
    decode = e4m3_values(byte) * (f32(1.0) / global_encode)
    encode = torch.where(decode > 0, (f32(1.0) / decode).clamp(max=FLT_MAX), f32(0.0))
    return byte, encode


def block_amax(x, br, bc):
    """Finite amax of each br x bc block, the last ones short (zero padding leaves a max unchanged)."""
    rows, cols = x.shape
    gr, gc = cdiv(rows, br), cdiv(cols, bc)
    padded = torch.zeros(gr * br, gc * bc, dtype=F32)
    padded[:rows, :cols] = x.abs()
    return padded.reshape(gr, br, gc, bc).amax(dim=(1, 3))


def spread(grid, br, bc, rows, cols):  # each block's value on each of its elements
    return grid.repeat_interleave(br, 0)[:rows].repeat_interleave(bc, 1)[:, :cols]


def pad_to(grid, shape, fill, dtype):
    stored = torch.full(shape, fill, dtype=dtype)
    stored[: grid.shape[0], : grid.shape[1]] = grid
    return stored


# ---- the four recipes ----
def float8(hp):
    """Current scaling: scale = 448 / amax, scale_inv = 1 / scale; data_transpose the codes of the transpose."""
    x = hp.to(F32)
    scale = f32(448.0) / x.abs().max()
    codes = e4m3_codes(x * scale)
    return {"data": codes, "scale_inv": (f32(1.0) / scale).reshape(1), "data_t": codes.t()}


def mxfp8(hp):
    """Rowwise: 1x32 blocks, scales (roundup(M,128), roundup(K/32,4)); columnwise: 32x1 blocks, data in the
    tensor's own orientation, scales (roundup(ceil(M/32),4), roundup(K,128)). Padding bytes are 127."""
    x = hp.to(F32)
    rows, cols = x.shape
    r_code, r_enc = mx_encode(block_amax(x, 1, 32))
    c_code, c_enc = mx_encode(block_amax(x, 32, 1))
    return {
        "row": e4m3_codes(x * spread(r_enc, 1, 32, rows, cols)),
        "row_scale": pad_to(r_code, (up(rows, 128), up(cols // 32, 4)), 127, torch.uint8),
        "col": e4m3_codes(x * spread(c_enc, 32, 1, rows, cols)),
        "col_scale": pad_to(c_code, (up(cdiv(rows, 32), 4), up(cols, 128)), 127, torch.uint8),
    }


def blockwise_rowwise(x, two_d):
    """Float8BlockQuantizer's GEMM-ready layouts, as its kernel scales: scale = 448 / amax per block (float32),
    scale_inv = 1 / scale, codes = cast(x * scale) (NUMERICS.md's FP32 block rule); 128x128 as
    (ceil(M/128), roundup(ceil(K/128),4)); 1x128 transposed, [block col, row], as (ceil(K/128), roundup(M,4)).
    Zero padding."""
    rows, cols = x.shape
    br, bc = (128, 128) if two_d else (1, 128)
    scale = f32(448.0) / block_amax(x, br, bc).clamp(min=1e-30)
    grid = f32(1.0) / scale
    codes = e4m3_codes(x * spread(scale, br, bc, rows, cols))
    if two_d:
        stored = pad_to(grid, (grid.shape[0], up(grid.shape[1], 4)), 0.0, F32)
    else:
        stored = pad_to(grid.t(), (grid.shape[1], up(grid.shape[0], 4)), 0.0, F32)
    return codes, stored


def blockwise(hp, two_d):
    x = hp.to(F32)
    row, row_scale = blockwise_rowwise(x, two_d)
    col, col_scale = blockwise_rowwise(x.t(), two_d)  # columnwise: the (K, M) transpose, quantized row-wise
    return {"row": row, "row_scale": row_scale, "col": col, "col_scale": col_scale, "two_d": two_d}


def nvfp4_rowwise(x, amax):
    """1x16 blocks; data (M, K/2) with element 2i in the low nibble; E4M3 scale bytes padded with 0 to
    (roundup(M,128), roundup(K/16,4))."""
    rows, cols = x.shape
    byte, enc = nvfp4_block(block_amax(x, 1, 16), nvfp4_global_encode(amax))
    codes = e2m1_codes(x * spread(enc, 1, 16, rows, cols))
    packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
    return packed, pad_to(byte, (up(rows, 128), up(cols // 16, 4)), 0, torch.uint8)


def nvfp4(hp, amax_row=None):
    """amax_row: the amax a (faulty) kernel was given for the rowwise copy; the columnwise keeps the true one."""
    x = hp.to(F32)
    amax = x.abs().max()
    amax_row = amax if amax_row is None else amax_row
    row, row_scale = nvfp4_rowwise(x, amax_row)
    col, col_scale = nvfp4_rowwise(x.t().contiguous(), amax)  # columnwise: the (K, M) transpose, quantized row-wise
    return {"row": row, "row_scale": row_scale, "col": col, "col_scale": col_scale,
            "amax_row": amax_row.reshape(1), "amax_col": amax.reshape(1)}


# ---- the reduce forms: the argument tuples TE's makers take (old: the classmethod's; new: TE 2.15+'s) ----
def reduce(cls_name, q, shape, old):
    size, quantizer = torch.Size(shape), MAKERS[cls_name][2]()
    if cls_name == "Float8Tensor":
        args = (q["data"], DType(E4M3), q["scale_inv"], torch.bfloat16) + (() if old else (size, q["data_t"]))
    elif cls_name == "MXFP8Tensor":  # new: + with_gemm_swizzled_scales
        args = (q["row"], q["row_scale"], q["col"], q["col_scale"], DType(E4M3), torch.bfloat16, size,
                quantizer) + (() if old else (False,))
    elif cls_name == "Float8BlockwiseQTensor":  # the same tuple in both forms: (..., is_2D_scaled, None)
        args = (size, q["row"], q["row_scale"], q["col"], q["col_scale"], DType(E4M3), torch.bfloat16, quantizer,
                q["two_d"], None)
    else:  # NVFP4; new: + row_scaled_nvfp4, nvfp4_use_4over6, nvfp4_e4m3_max
        args = (size, q["row"], q["row_scale"], q["col"], q["col_scale"], q["amax_row"], q["amax_col"],
                DType(E2M1), torch.bfloat16, quantizer, False) + (() if old else (False, False, 448))
    args = tuple(own(a) if isinstance(a, torch.Tensor) else a for a in args)
    return Reduced(MAKERS[cls_name][0 if old else 1], args)


# ---- the files ----
g = torch.Generator().manual_seed(2615)


def make_hp(rows, cols):  # columns spread over four decades, so blocks differ
    return (torch.randn(rows, cols, generator=g) * torch.logspace(-2, 2, cols)).to(torch.bfloat16)


def bump(codes, row, col, steps, sign_bit):
    """Moves one code `steps` magnitude steps away from zero, keeping its sign; it must stay finite."""
    code = int(codes[row, col])
    mag = (code & (sign_bit - 1)) + steps
    assert mag <= 0x7E, f"code {code:#x} at ({row}, {col}) has no room for +{steps}"
    codes[row, col] = (code & sign_bit) | mag


# FP8SCOPE_TE_SHAPE=ROWSxCOLS writes smaller files (the fuzz corpus's seeds); the planted faults need 256x384.
shape = [int(v) for v in os.environ.get("FP8SCOPE_TE_SHAPE", "256x384").split("x")]
hp = make_hp(*shape)
hp_small = make_hp(200, 320)  # pads every scale grid: rows to 128 / 4, block columns to 4, columns to 128
expected = {}


def save(name, cls_name, form, tensor_hp, q, kind=None, row=None, col=None):
    quantized = reduce(cls_name, q, list(tensor_hp.shape), form == "old")
    torch.save({"high_precision": tensor_hp, "quantized": quantized}, os.path.join(out, name + ".pt"))
    copies = ["rowwise"] if (cls_name, form) == ("Float8Tensor", "old") else ["rowwise", "columnwise"]
    expected[name + ".pt"] = {"class": cls_name, "form": form, "shape": list(tensor_hp.shape), "copies": copies,
                              "planted": kind and {"kind": kind, "copy": "rowwise", "row": row, "col": col}}


q = float8(hp)
save("float8-new", "Float8Tensor", "new", hp, q)
save("float8-old", "Float8Tensor", "old", hp, q)
bad = dict(q, data=q["data"].clone())
bump(bad["data"], 0, 0, 1, 0x80)
save("float8-badcode", "Float8Tensor", "new", hp, bad, kind="code", row=0, col=0)

q = mxfp8(hp)
save("mxfp8-new", "MXFP8Tensor", "new", hp, q)
save("mxfp8-old", "MXFP8Tensor", "old", hp, q)
save("mxfp8-200x320", "MXFP8Tensor", "new", hp_small, mxfp8(hp_small))
bad = dict(q, row=q["row"].clone())
bump(bad["row"], 5, 70, 3, 0x80)
save("mxfp8-badcode", "MXFP8Tensor", "new", hp, bad, kind="code", row=5, col=70)
bad = dict(q, row_scale=q["row_scale"].clone())
bad["row_scale"][9, 2] += 1  # block (row 9, columns 64..95); its codes stay as computed
save("mxfp8-badscale", "MXFP8Tensor", "new", hp, bad, kind="scale", row=9, col=2)

q = blockwise(hp, True)
save("blockwise2d-new", "Float8BlockwiseQTensor", "new", hp, q)
bad = dict(q, row_scale=q["row_scale"].clone())
bad["row_scale"][min(1, bad["row_scale"].shape[0] - 1), 1] *= 2  # block rows 128..255, columns 128..255; its codes stay as computed
save("blockwise2d-badscale", "Float8BlockwiseQTensor", "new", hp, bad, kind="scale", row=1, col=1)
q = blockwise(hp, False)
save("blockwise1d-new", "Float8BlockwiseQTensor", "new", hp, q)
save("blockwise1d-old", "Float8BlockwiseQTensor", "old", hp, q)

# The oldest blockwise reduce form, before the shape and is_2D_scaled were added: (rowwise_data,
# rowwise_scale_inv, columnwise_data, columnwise_scale_inv, fp8_dtype, dtype). On a square tensor the 1x128
# scale's first dimension equals the 128x128 one's: only its whole shape tells them apart.
square = make_hp(256, 256)
q = blockwise(square, False)
args = tuple(own(a) if isinstance(a, torch.Tensor) else a
             for a in (q["row"], q["row_scale"], q["col"], q["col_scale"], DType(E4M3), torch.bfloat16))
torch.save({"high_precision": square, "quantized": Reduced(MAKERS["Float8BlockwiseQTensor"][0], args)},
           os.path.join(out, "blockwise1d-square-oldest.pt"))
expected["blockwise1d-square-oldest.pt"] = {"class": "Float8BlockwiseQTensor", "form": "oldest", "shape": [256, 256],
                                            "copies": ["rowwise", "columnwise"], "planted": None}

q = nvfp4(hp)
save("nvfp4-new", "NVFP4Tensor", "new", hp, q)
save("nvfp4-old", "NVFP4Tensor", "old", hp, q)
bad = nvfp4(hp, amax_row=q["amax_col"][0] * f32(1000.0))  # a kernel handed the wrong amax, used consistently
save("nvfp4-badamax", "NVFP4Tensor", "new", hp, bad, kind="amax")

# Hostile dumps (refused with why, never read past their data): a scale tensor too small for its grid, and a
# storage that lies (the pickle declares more bytes than the archive holds).
q = mxfp8(hp)
bad = dict(q, row_scale=q["row_scale"][:4, :4].clone())
save("hostile-scale-shape", "MXFP8Tensor", "new", hp, bad, kind="refused")
expected["hostile-scale-shape.pt"]["refused"] = "does not cover"
save("hostile-lying-storage", "MXFP8Tensor", "new", hp, q, kind="refused")
path = os.path.join(out, "hostile-lying-storage.pt")
with zipfile.ZipFile(path) as z:
    entries = [(i.filename, z.read(i.filename)) for i in z.infolist()]
# The row-wise codes' storage (the first of 256 x 384 bytes after the bfloat16 tensor's) cut to half its bytes.
largest = next(e for e in entries if "/data/" in e[0] and len(e[1]) == shape[0] * shape[1])
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
    for name, data in entries:
        z.writestr(name, data[: len(data) // 2] if name == largest[0] else data)
expected["hostile-lying-storage.pt"]["refused"] = "fewer than"
# An empty tensor (0 rows): nothing to compare, said so (a block of no columns once divided by zero).
empty = torch.zeros(0, 16, dtype=torch.bfloat16)
codes = torch.zeros(0, 16, dtype=torch.uint8)
save("hostile-empty", "Float8Tensor", "new", empty,
     {"data": codes, "scale_inv": torch.ones(1, dtype=F32), "data_t": codes.t()}, kind="refused")
expected["hostile-empty.pt"]["refused"] = "empty"

with open(os.path.join(out, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1)
    f.write("\n")
