"""Writes FP8 inference checkpoints with torch and safetensors, as the serving stacks' exporters lay them out,
clean and with planted faults, and the references they are audited against (test-only oracle).

usage: write_checkpoints.py OUTDIR

A small Llama-style model (2 layers, hidden 256, 4 heads in 2 key/value groups of head_dim 64, gated MLP of
512, vocabulary 320) in bfloat16 is the reference; every export quantizes it to float8_e4m3fn:

  OUTDIR/reference/model.safetensors      the bfloat16 weights, Hugging Face names
  OUTDIR/megatron/model.pt                the same weights as a Megatron training checkpoint (torch.save):
                                          decoder.layers.N.self_attention.linear_qkv (q, k, v interleaved per
                                          key/value group), linear_proj, mlp.linear_fc1 ([gate; up]),
                                          linear_fc2, output_layer
  OUTDIR/megatron_fp8/model.pt            the Megatron checkpoint with Transformer Engine's FP8 state in each
                                          module's _extra_state, written as TE's get_extra_state writes it (a
                                          uint8 tensor of pickle.dumps of a dict: the recipe object, scale_fwd,
                                          amax_history_fwd, ...): layer 0 trained in BF16 (empty state), layer 1
                                          with delayed scaling whose input amax history reached 3 (9 for
                                          linear_proj), and output_layer in FP8
  OUTDIR/ct_tensor/                       compressed-tensors, per-tensor weight_scale [1] and static
                                          input_scale [1]; lm_head ignored (kept bfloat16)
  OUTDIR/ct_channel/                      compressed-tensors, per-channel weight_scale [out, 1], dynamic
                                          activations, in two shards with model.safetensors.index.json
  OUTDIR/block/                           the fp8 method (DeepSeek-V3): 128x128 block weight_scale_inv
  OUTDIR/modelopt/                        TensorRT Model Optimizer: hf_quant_config.json, scalar weight_scale,
                                          input_scale, k_proj.k_scale and v_proj.v_scale
  OUTDIR/fault_missing/                   ct_tensor without model.layers.0.mlp.down_proj.weight_scale
  OUTDIR/fault_missing_input/             ct_tensor without model.layers.1.self_attn.o_proj.input_scale
  OUTDIR/fault_invalid/                   ct_tensor with model.layers.1.mlp.up_proj.weight_scale = 0
  OUTDIR/fault_grid/                      block with model.layers.0.self_attn.o_proj.weight_scale_inv on a
                                          [2, 3] grid (no block shape gives it on 256 x 256)
  OUTDIR/fault_inverted/                  ct_tensor with model.layers.0.self_attn.q_proj.weight_scale holding
                                          the encode scale (448 / amax) instead of the decode scale
  OUTDIR/fault_stale/                     ct_tensor whose model.layers.1.mlp.down_proj comes from other weights
                                          (the reference plus 30 % noise), quantized correctly
  OUTDIR/fault_precision/                 ct_tensor whose lm_head, which the config ignores, is quantized

The training run the calibrated exports come from, and exports calibrated the usual way (max calibration):

  OUTDIR/training_run/                    Transformer Engine's debug statistics of the activations of every
                                          module of both layers (cur_amax every 10 steps to 1000, printed
                                          "%.4f" as nvdlfw_inspect prints them; a late window that moves by a
                                          few per cent) and Megatron's stdout with its arguments block
  OUTDIR/training_run_bf16_last/          the same run with --first-last-layers-bf16 (none at the start, the
                                          last 1 at the end): layer 1 trained in BF16 and logs no FP8 statistics
  OUTDIR/ct_max_calibrated/               ct_tensor whose static input_scale is the late activation amax / 448,
                                          computed as calibrators do: of the unrounded amax over the late window
                                          stored as bfloat16 (linear_qkv's inputs), of the amax as printed
                                          (linear_proj), of the last step's unrounded amax (linear_fc1, below the
                                          window's largest), of the late window's largest as printed, stored as
                                          bfloat16 (linear_fc2)
  OUTDIR/ct_max_calibrated_bf16_last/     ct_max_calibrated with layer 1 kept in bfloat16 (ignored)
  OUTDIR/ct_calibration_40x/              ct_max_calibrated with model.layers.0.self_attn.o_proj's input_scale
                                          40 times too small
"""
import json
import math
import os
import shutil
import sys

import torch
from safetensors.torch import save_file

OUT = sys.argv[1]
HIDDEN, HEADS, GROUPS, HEAD_DIM, FFN, VOCAB, LAYERS = 256, 4, 2, 64, 512, 320, 2
FP8 = torch.float8_e4m3fn
FMAX = 448.0

gen = torch.Generator().manual_seed(7)


def weight(rows, cols):
    # Rows of different magnitudes, as trained weights have: per-channel scales matter.
    row_scale = torch.logspace(-2.3, -1.0, rows)[torch.randperm(rows, generator=gen)]
    return (torch.randn(rows, cols, generator=gen) * row_scale[:, None]).to(torch.bfloat16)


ref = {}
for i in range(LAYERS):
    p = f"model.layers.{i}."
    ref[p + "self_attn.q_proj.weight"] = weight(HEADS * HEAD_DIM, HIDDEN)
    ref[p + "self_attn.k_proj.weight"] = weight(GROUPS * HEAD_DIM, HIDDEN)
    ref[p + "self_attn.v_proj.weight"] = weight(GROUPS * HEAD_DIM, HIDDEN)
    ref[p + "self_attn.o_proj.weight"] = weight(HIDDEN, HEADS * HEAD_DIM)
    ref[p + "mlp.gate_proj.weight"] = weight(FFN, HIDDEN)
    ref[p + "mlp.up_proj.weight"] = weight(FFN, HIDDEN)
    ref[p + "mlp.down_proj.weight"] = weight(HIDDEN, FFN)
    ref[p + "input_layernorm.weight"] = torch.ones(HIDDEN, dtype=torch.bfloat16)
ref["model.embed_tokens.weight"] = weight(VOCAB, HIDDEN)
ref["lm_head.weight"] = weight(VOCAB, HIDDEN)
LINEARS = [n[: -len(".weight")] for n in ref if "_proj" in n]

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": HIDDEN,
    "num_attention_heads": HEADS,
    "num_key_value_heads": GROUPS,
    "head_dim": HEAD_DIM,
    "intermediate_size": FFN,
    "num_hidden_layers": LAYERS,
    "vocab_size": VOCAB,
}


def write(folder, tensors, quantization_config=None, extra_files=None, shards=1):
    path = os.path.join(OUT, folder)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    config = dict(CONFIG)
    if quantization_config is not None:
        config["quantization_config"] = quantization_config
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    for name, content in (extra_files or {}).items():
        with open(os.path.join(path, name), "w") as f:
            json.dump(content, f, indent=1)
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    if shards == 1:
        save_file(tensors, os.path.join(path, "model.safetensors"))
        return
    names = sorted(tensors)
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = names[s::shards]
        save_file({n: tensors[n] for n in part}, os.path.join(path, file))
        weight_map.update({n: file for n in part})
    with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1)


def per_tensor(w):
    w = w.float()
    scale = w.abs().max() / FMAX
    return (w / scale).to(FP8), scale.reshape(1)


def per_channel(w):
    w = w.float()
    scale = w.abs().amax(dim=1, keepdim=True) / FMAX
    return (w / scale).to(FP8), scale


def per_block(w, b=128):
    w = w.float()
    rows, cols = w.shape
    gr, gc = -(-rows // b), -(-cols // b)
    scale = torch.empty(gr, gc)
    codes = torch.empty(rows, cols, dtype=FP8)
    for i in range(gr):
        for j in range(gc):
            block = w[i * b : (i + 1) * b, j * b : (j + 1) * b]
            scale[i, j] = block.abs().max() / FMAX
            codes[i * b : (i + 1) * b, j * b : (j + 1) * b] = (block / scale[i, j]).to(FP8)
    return codes, scale


def activation_scale(name):
    # A calibrated static input scale: plausible activations of amax about 4.
    return torch.tensor([4.0 / FMAX + 1e-4 * (len(name) % 7)])


def others(quantized_names):
    return {k: v for k, v in ref.items() if k[: -len(".weight")] not in quantized_names}


def compressed_tensors(strategy, static):
    group = {
        "targets": ["Linear"],
        "weights": {"num_bits": 8, "type": "float", "strategy": strategy, "dynamic": False, "symmetric": True},
        "input_activations": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": not static},
    }
    return {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {"group_0": group},
        "ignore": ["lm_head"],
    }


def ct_tensor_tensors():
    t = others(LINEARS)
    for n in LINEARS:
        t[n + ".weight"], t[n + ".weight_scale"] = per_tensor(ref[n + ".weight"])
        t[n + ".input_scale"] = activation_scale(n)
    return t


write("reference", ref)

megatron = {}
for i in range(LAYERS):
    p, d = f"model.layers.{i}.", f"decoder.layers.{i}."
    q = ref[p + "self_attn.q_proj.weight"].reshape(GROUPS, HEADS // GROUPS * HEAD_DIM, HIDDEN)
    k = ref[p + "self_attn.k_proj.weight"].reshape(GROUPS, HEAD_DIM, HIDDEN)
    v = ref[p + "self_attn.v_proj.weight"].reshape(GROUPS, HEAD_DIM, HIDDEN)
    megatron[d + "self_attention.linear_qkv.weight"] = torch.cat([q, k, v], dim=1).reshape(-1, HIDDEN).clone()
    megatron[d + "self_attention.linear_proj.weight"] = ref[p + "self_attn.o_proj.weight"]
    megatron[d + "mlp.linear_fc1.weight"] = torch.cat(
        [ref[p + "mlp.gate_proj.weight"], ref[p + "mlp.up_proj.weight"]], dim=0
    )
    megatron[d + "mlp.linear_fc2.weight"] = ref[p + "mlp.down_proj.weight"]
megatron["output_layer.weight"] = ref["lm_head.weight"]
megatron["embedding.word_embeddings.weight"] = ref["model.embed_tokens.weight"]
os.makedirs(os.path.join(OUT, "megatron"), exist_ok=True)
torch.save(megatron, os.path.join(OUT, "megatron", "model.pt"))


# Transformer Engine's recipe as its checkpoints pickle it: a dataclass of transformer_engine.common.recipe
# (stood in for here under that module name, so that pickle names it as TE's own does).
import dataclasses
import enum
import pickle
import types


class Format(enum.Enum):
    E4M3 = "E4M3"
    HYBRID = "HYBRID"


@dataclasses.dataclass
class DelayedScaling:
    margin: int = 0
    fp8_format: Format = Format.HYBRID
    amax_history_len: int = 1024
    amax_compute_algo: str = "max"


te_recipe = types.ModuleType("transformer_engine.common.recipe")
for cls in (Format, DelayedScaling):
    cls.__module__ = te_recipe.__name__
    setattr(te_recipe, cls.__name__, cls)
for name in ("transformer_engine", "transformer_engine.common"):
    sys.modules.setdefault(name, types.ModuleType(name))
sys.modules[te_recipe.__name__] = te_recipe


def extra_state(input_amax):
    """What TE's get_extra_state returns: empty without FP8, else the pickled state as uint8."""
    if input_amax is None:
        return torch.empty(0, dtype=torch.uint8)
    history = torch.zeros(16, 3)
    history[:, 0] = torch.linspace(input_amax / 2, input_amax, 16)  # the input's amax, newest last here
    history[:, 1] = 0.05  # the weight's
    history[:, 2] = 1.0  # the output's
    state = {
        "recipe": DelayedScaling(amax_history_len=16),
        "scale_fwd": FMAX / history.max(dim=0).values,
        "amax_history_fwd": history,
        "scale_bwd": torch.ones(2),
        "amax_history_bwd": torch.zeros(16, 2),
        "extra_fp8_variables": {"num_gemms": 1, "fp8_checkpoint": True, "fp8_max_fwd": FMAX, "fp8_max_bwd": 57344.0},
    }
    return torch.frombuffer(bytearray(pickle.dumps(state)), dtype=torch.uint8)


megatron_fp8 = dict(megatron)
for i in range(LAYERS):
    for m in ("self_attention.linear_qkv", "self_attention.linear_proj", "mlp.linear_fc1", "mlp.linear_fc2"):
        amax = None if i == 0 else (9.0 if m == "self_attention.linear_proj" else 3.0)
        megatron_fp8[f"decoder.layers.{i}.{m}._extra_state"] = extra_state(amax)
megatron_fp8["output_layer._extra_state"] = extra_state(3.0)
os.makedirs(os.path.join(OUT, "megatron_fp8"), exist_ok=True)
torch.save(megatron_fp8, os.path.join(OUT, "megatron_fp8", "model.pt"))

write("ct_tensor", ct_tensor_tensors(), compressed_tensors("tensor", True))

t = others(LINEARS)
for n in LINEARS:
    t[n + ".weight"], t[n + ".weight_scale"] = per_channel(ref[n + ".weight"])
write("ct_channel", t, compressed_tensors("channel", False), shards=2)

t = others(LINEARS)
for n in LINEARS:
    t[n + ".weight"], t[n + ".weight_scale_inv"] = per_block(ref[n + ".weight"])
block_config = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "weight_block_size": [128, 128]}
write("block", t, block_config)
block = t

t = others(LINEARS)
for n in LINEARS:
    codes, scale = per_tensor(ref[n + ".weight"])
    t[n + ".weight"], t[n + ".weight_scale"] = codes, scale.reshape(())
    t[n + ".input_scale"] = activation_scale(n).reshape(())
    if n.endswith("k_proj"):
        t[n + ".k_scale"] = torch.tensor(0.02)
    if n.endswith("v_proj"):
        t[n + ".v_scale"] = torch.tensor(0.03)
modelopt = {
    "producer": {"name": "modelopt", "version": "0.19.0"},
    "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]},
}
write("modelopt", t, {"quant_method": "modelopt", "quant_algo": "FP8"}, {"hf_quant_config.json": modelopt})

t = ct_tensor_tensors()
del t["model.layers.0.mlp.down_proj.weight_scale"]
write("fault_missing", t, compressed_tensors("tensor", True))

t = ct_tensor_tensors()
del t["model.layers.1.self_attn.o_proj.input_scale"]
write("fault_missing_input", t, compressed_tensors("tensor", True))

t = ct_tensor_tensors()
t["model.layers.1.mlp.up_proj.weight_scale"] = torch.zeros(1)
write("fault_invalid", t, compressed_tensors("tensor", True))

t = dict(block)
t["model.layers.0.self_attn.o_proj.weight_scale_inv"] = torch.full((2, 3), 1e-4)
write("fault_grid", t, block_config)

t = ct_tensor_tensors()
t["model.layers.0.self_attn.q_proj.weight_scale"] = 1.0 / t["model.layers.0.self_attn.q_proj.weight_scale"]
write("fault_inverted", t, compressed_tensors("tensor", True))

t = ct_tensor_tensors()
w = ref["model.layers.1.mlp.down_proj.weight"].float()
stale = w + 0.3 * w.std() * torch.randn(w.shape, generator=gen)
t["model.layers.1.mlp.down_proj.weight"], t["model.layers.1.mlp.down_proj.weight_scale"] = per_tensor(stale)
write("fault_stale", t, compressed_tensors("tensor", True))

t = ct_tensor_tensors()
t["lm_head.weight"], t["lm_head.weight_scale"] = per_tensor(ref["lm_head.weight"])
write("fault_precision", t, compressed_tensors("tensor", True))


# The training run and the exports calibrated on it. Its own generator: the outputs above stay as they were.
run_gen = torch.Generator().manual_seed(11)
MODULES = ["self_attention.linear_qkv", "self_attention.linear_proj", "mlp.linear_fc1", "mlp.linear_fc2"]
STEPS = list(range(0, 1001, 10))
true_amax = {}
for i in range(LAYERS):
    for m in MODULES:
        base = 2.0 + 6.0 * torch.rand(1, generator=run_gen).item()
        wobble = torch.rand(len(STEPS), generator=run_gen)
        # Growing early, then steady within a few per cent (an unrounded value: what the tensor's amax was).
        true_amax[f"decoder.layers.{i}.{m}"] = [
            base * (0.5 + 0.5 * min(1.0, s / 300)) * (1 + 0.04 * (w.item() - 0.5)) + 1e-6 * math.pi
            for s, w in zip(STEPS, wobble)
        ]


def write_training_run(folder, layers_in_fp8, arguments):
    path = os.path.join(OUT, folder)
    shutil.rmtree(path, ignore_errors=True)
    logs = os.path.join(path, "rank_0", "nvdlfw_inspect_statistics_logs")
    os.makedirs(logs)
    with open(os.path.join(logs, "nvdlfw_inspect_globalrank-0.log"), "w") as f:
        for k, s in enumerate(STEPS):
            for module, values in true_amax.items():
                if int(module.split(".")[2]) not in layers_in_fp8:
                    continue
                f.write(
                    "2026-11-30 12:00:00,000 - INFO - %s_activation_cur_amax \t\t\t\t iteration=%06d \t\t\t\t "
                    "value=%.4f\n" % (module, s, values[k])
                )
    with open(os.path.join(path, "train.out"), "w") as f:
        f.write("------------------------ arguments ------------------------\n")
        for key, value in sorted(arguments.items()):
            f.write("  %s %s %s\n" % (key, "." * max(3, 48 - len(key)), value))
        f.write("-------------------- end of arguments ---------------------\n")
        for s in STEPS[1:]:
            f.write(
                " iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): 1000.0 | "
                "learning rate: 1.000E-04 | global batch size:     8 | lm loss: %.6E | loss scale: 1.0 | "
                "grad norm: 1.000 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
                % (s, STEPS[-1], s * 8, 3.0 + 5.0 / (1 + s / 100))
            )


ARGUMENTS = {"num_layers": LAYERS, "hidden_size": HIDDEN, "fp8": "hybrid", "fp8_recipe": "tensorwise"}
write_training_run("training_run", range(LAYERS), ARGUMENTS)
write_training_run(
    "training_run_bf16_last",
    range(LAYERS - 1),
    dict(ARGUMENTS, first_last_layers_bf16=True, num_layers_at_start_in_bf16=0, num_layers_at_end_in_bf16=1),
)

# The late window as the calibrators here take it: the last tenth of the logged steps.
LATE = len(STEPS) // 10
TRAINING = {
    "self_attn.q_proj": "self_attention.linear_qkv",
    "self_attn.k_proj": "self_attention.linear_qkv",
    "self_attn.v_proj": "self_attention.linear_qkv",
    "self_attn.o_proj": "self_attention.linear_proj",
    "mlp.gate_proj": "mlp.linear_fc1",
    "mlp.up_proj": "mlp.linear_fc1",
    "mlp.down_proj": "mlp.linear_fc2",
}


def max_calibrated(name):
    layer, module = name.split(".")[2], ".".join(name.split(".")[3:])
    training = TRAINING[module]
    values = true_amax[f"decoder.layers.{layer}.{training}"][-LATE:]
    printed = [float("%.4f" % v) for v in values]
    if training.endswith("linear_qkv"):
        return torch.tensor([max(values) / FMAX], dtype=torch.bfloat16)
    if training.endswith("linear_proj"):
        return torch.tensor([max(printed) / FMAX])
    if training.endswith("linear_fc1"):
        return torch.tensor([values[-1] / FMAX])
    return torch.tensor([max(printed) / FMAX], dtype=torch.bfloat16)


def ct_max_calibrated_tensors(quantized):
    t = others(quantized)
    for n in quantized:
        t[n + ".weight"], t[n + ".weight_scale"] = per_tensor(ref[n + ".weight"])
        t[n + ".input_scale"] = max_calibrated(n)
    return t


write("ct_max_calibrated", ct_max_calibrated_tensors(LINEARS), compressed_tensors("tensor", True))
kept = [n for n in LINEARS if not n.startswith("model.layers.%d." % (LAYERS - 1))]
bf16_last = compressed_tensors("tensor", True)
bf16_last["ignore"] = bf16_last["ignore"] + ["re:model.layers.%d..*" % (LAYERS - 1)]
write("ct_max_calibrated_bf16_last", ct_max_calibrated_tensors(kept), bf16_last)
t = ct_max_calibrated_tensors(LINEARS)
t["model.layers.0.self_attn.o_proj.input_scale"] = t["model.layers.0.self_attn.o_proj.input_scale"] / 40
write("ct_calibration_40x", t, compressed_tensors("tensor", True))
