#!/usr/bin/env python3
"""Converts PyTorch tensor dumps (.pt / .pth, written by torch.save) to safetensors, which fp8scope reads.

usage: pt2safetensors.py [--force] [--out OUT] FILE.pt [FILE.pt ...]

fp8scope reads torch.save files itself (the zip layout of PyTorch 1.6 and later, through an interpreter
of their pickle that never calls anything: plain tensors, containers, and Transformer Engine's Float8Tensor,
MXFP8Tensor and Float8BlockwiseQTensor). This tool is still needed for what that reader refuses: the legacy
(non-zip) format, files whose pickles name other classes (a custom tensor subclass, a training state object
around the tensors), and Transformer Engine's FP4 tensor classes. It loads them with torch.load(weights_only=True), PyTorch's restricted
unpickler, which admits tensors and plain containers and refuses anything else, so a file that smuggles
code is refused here too. Run it where you trust the environment it runs in: it needs Python with torch
and safetensors (pip install torch safetensors); fp8scope itself does not.

Each FILE.pt becomes FILE.safetensors beside it (or --out, for one input), which keeps an iteration in
the file name (iter_000100.pt -> iter_000100.safetensors) for fp8scope's run-folder index. Nested dicts,
lists and tuples are flattened into dotted names (a state dict's names stay as they are). Kept: float32,
float16, bfloat16, float8_e4m3fn and float8_e5m2 tensors, unchanged; float64 is rounded to float32 (and
said so). Skipped, with a line saying what and why: tensors of other dtypes (integers, bool, complex, the
FNUZ float8 types), sparse and quantized tensors, and non-tensor values (numbers, strings, None).

Exit status: 0 when every input was converted, 1 when any failed (each failure is one line on stderr,
naming the file), 2 for bad usage.
"""

import argparse
import os
import re
import sys

KEPT = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")


def load(path, torch):
    """The object a .pt file holds, through the restricted unpickler (memory-mapped where the file allows)."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except RuntimeError as e:
        # Files in the legacy (non-zip) format cannot be memory-mapped.
        if "mmap" not in str(e):
            raise
    return torch.load(path, map_location="cpu", weights_only=True)


def refusal(error):
    """The sentence of a torch.load error that says what was wrong (its restricted unpickler's own words)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    if "WeightsUnpickler error:" in text:
        text = text.split("WeightsUnpickler error:", 1)[1]
        text = re.split(r"Please use|Check the documentation", text)[0]
    text = " ".join(text.split())
    first = re.split(r"(?<=[^.])\. ", text, maxsplit=1)[0].rstrip(".")
    return first or type(error).__name__


def flatten(obj, prefix, out, skipped, torch):
    """Tensors of obj under dotted names into out (name -> tensor); everything else into skipped."""
    if isinstance(obj, torch.Tensor):
        name = prefix or "tensor"
        if name in out:
            raise ValueError("two tensors flatten to the same name '%s'" % name)
        out[name] = obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            flatten(value, "%s.%s" % (prefix, key) if prefix else str(key), out, skipped, torch)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            flatten(value, "%s.%d" % (prefix, i) if prefix else str(i), out, skipped, torch)
    else:
        skipped.append("%s (%s, not a tensor)" % (prefix or "<top level>", type(obj).__name__))


def convert(path, out_path, force, torch, save_file):
    """Converts one file; returns the lines to print. Raises on failure."""
    if not os.path.isfile(path):
        raise FileNotFoundError("no such file")
    if os.path.exists(out_path) and not force:
        raise FileExistsError("%s exists (--force replaces it)" % out_path)
    try:
        obj = load(path, torch)
    except Exception as e:  # torch raises UnpicklingError, RuntimeError, EOFError, ... on bad files
        raise RuntimeError("torch.load(weights_only=True) refused it: %s" % refusal(e)) from None
    found = {}
    skipped = []
    flatten(obj, "", found, skipped, torch)
    tensors = {}
    notes = []
    seen_storage = set()
    for name, t in found.items():
        if t.layout != torch.strided:
            skipped.append("%s (%s layout)" % (name, str(t.layout).replace("torch.", "")))
            continue
        if t.is_quantized:
            skipped.append("%s (quantized tensor)" % name)
            continue
        dtype = str(t.dtype).replace("torch.", "")
        if dtype == "float64":
            t = t.to(torch.float32)
            notes.append("%s: float64 rounded to float32" % name)
        elif dtype not in KEPT:
            skipped.append("%s (%s)" % (name, dtype))
            continue
        t = t.detach().contiguous()
        # safetensors refuses tensors that share memory (tied weights, views of one buffer): a tensor that is
        # not the whole of its storage, or whose storage an earlier tensor already holds, is copied.
        storage = t.untyped_storage()
        if t.numel() > 0 and (storage.data_ptr() in seen_storage or storage.nbytes() != t.numel() * t.element_size()):
            t = t.clone()
        seen_storage.add(t.untyped_storage().data_ptr())
        tensors[name] = t
    if not tensors:
        raise ValueError("holds no tensor fp8scope can read" + (": skipped " + "; ".join(skipped) if skipped else ""))
    tmp = out_path + ".part"
    try:
        save_file(tensors, tmp, metadata={"source": os.path.basename(path), "converted_by": "fp8scope pt2safetensors"})
        os.replace(tmp, out_path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    lines = ["%s -> %s: %d tensor%s" % (path, out_path, len(tensors), "" if len(tensors) == 1 else "s")]
    lines += ["  note: " + n for n in notes]
    lines += ["  skipped: " + s for s in skipped]
    return lines


def main(argv):
    parser = argparse.ArgumentParser(
        prog="pt2safetensors.py",
        description="Convert PyTorch .pt tensor dumps to safetensors for fp8scope (tensors only, weights_only load).",
    )
    parser.add_argument("files", nargs="+", metavar="FILE.pt")
    parser.add_argument("--out", help="output file (one input only; default: FILE.safetensors beside the input)")
    parser.add_argument("--force", action="store_true", help="replace existing output files")
    args = parser.parse_args(argv)
    if args.out and len(args.files) != 1:
        parser.error("--out takes one input file")
    try:
        import torch
        from safetensors.torch import save_file
    except ImportError as e:
        print("pt2safetensors.py: needs Python with torch and safetensors (%s)" % e, file=sys.stderr)
        return 1
    failed = 0
    for path in args.files:
        out_path = args.out or os.path.splitext(path)[0] + ".safetensors"
        try:
            for line in convert(path, out_path, args.force, torch, save_file):
                print(line)
        except Exception as e:
            print("pt2safetensors.py: %s: %s" % (path, e), file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
