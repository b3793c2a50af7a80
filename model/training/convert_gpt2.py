#!/usr/bin/python3
"""Converts a GPT-2 checkpoint (nanoGPT or Hugging Face key names) + encoder.json/vocab.bpe to GGUF.

    /usr/bin/python3 convert_gpt2.py --checkpoint ckpt.pt --encoder encoder.json \
        --vocab vocab.bpe --out model.gguf [--dtype f32|f16|bf16|q8_0] [--n-head N]

Keys may carry a "transformer." prefix (nanoGPT, HF GPT2LMHeadModel) or not (HF GPT2Model):
wte, wpe, h.{i}.ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj, ln_f, optional
lm_head.weight. HF uses Conv1D modules whose weights are [in, out]; nanoGPT uses nn.Linear,
[out, in]. The layout is detected from the c_attn / c_fc shapes (or forced with --layout).
The attention-mask buffers attn.bias / attn.masked_bias are skipped. nanoGPT's bias=False
models get zero biases so the file has the complete gpt2 tensor set. n_head comes from the
checkpoint config (model_args["n_head"] / config["n_head"]) or --n-head.
Output is GGUF architecture "gpt2". Exits 1 with a precise message on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from convert_common import (WEIGHT_DTYPES, ConversionError, check_state_dict,  # noqa: E402
                            load_checkpoint, matrix_dtype, pad_vocab, run_main)
from gguf_writer import FILE_TYPES, GGUFWriter  # noqa: E402

_MATRICES = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
_BUFFERS = (".attn.bias", ".attn.masked_bias")


def normalise_keys(state: dict) -> dict:
    """Drops the "transformer." prefix and the attention-mask buffers."""
    out = {}
    for k, v in state.items():
        if k.startswith("transformer."):
            k = k[len("transformer."):]
        if k.endswith(_BUFFERS) and re.match(r"h\.\d+\.attn\.(masked_)?bias$", k):
            continue
        out[k] = v
    return out


def detect_layout(state: dict, d: int, forced: str) -> str:
    """'conv1d' (HF, [in, out]) or 'linear' (nanoGPT, [out, in]), from c_attn/c_fc shapes."""
    if forced != "auto":
        return forced
    for key, out_features in (("h.0.attn.c_attn.weight", 3 * d), ("h.0.mlp.c_fc.weight", None)):
        w = state.get(key)
        if w is None or w.dim() != 2:
            continue
        if w.shape[0] == d and w.shape[1] != d and (out_features is None or w.shape[1] == out_features):
            return "conv1d"
        if w.shape[1] == d and w.shape[0] != d:
            return "linear"
    raise ConversionError("cannot tell HF Conv1D ([in, out]) from nn.Linear ([out, in]) weights "
                          f"from h.0.attn.c_attn.weight / h.0.mlp.c_fc.weight (d_model {d}); "
                          "pass --layout conv1d or --layout linear")


def infer_config(state: dict, config: dict, args) -> dict:
    cfg = {}
    aliases = {"n_layer": ("n_layer", "num_layers"), "n_head": ("n_head", "num_heads"),
               "n_embd": ("n_embd", "d_model"), "n_ctx": ("block_size", "n_positions", "n_ctx"),
               "vocab_size": ("vocab_size",), "n_inner": ("n_inner", "d_ff"),
               "norm_eps": ("layer_norm_epsilon", "norm_eps")}
    for key, names in aliases.items():
        for n in names:
            if config.get(n) is not None:
                cfg[key] = config[n]
                break
    for key in ("n_layer", "n_head", "n_embd", "n_ctx", "vocab_size", "n_inner", "norm_eps"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    wte, wpe = state.get("wte.weight"), state.get("wpe.weight")
    if wte is not None and wte.dim() == 2:
        cfg.setdefault("vocab_size", wte.shape[0])
        cfg.setdefault("n_embd", wte.shape[1])
    if wpe is not None and wpe.dim() == 2:
        cfg.setdefault("n_ctx", wpe.shape[0])
    layers = {int(m.group(1)) for k in state if (m := re.match(r"h\.(\d+)\.", k))}
    if layers:
        cfg.setdefault("n_layer", max(layers) + 1)
    cfg.setdefault("norm_eps", 1e-5)
    missing = [k for k in ("n_layer", "n_head", "n_embd", "n_ctx", "vocab_size") if k not in cfg]
    if missing:
        raise ConversionError("cannot determine " + ", ".join(missing) + " from the checkpoint; "
                              "pass --" + " --".join(m.replace("_", "-") for m in missing))
    if cfg.get("n_inner") is None:
        fc = state.get("h.0.mlp.c_fc.weight")
        d = int(cfg["n_embd"])
        if fc is not None and fc.dim() == 2 and d in fc.shape:
            cfg["n_inner"] = fc.shape[1] if fc.shape[0] == d else fc.shape[0]
        else:
            cfg["n_inner"] = 4 * d
    for k in ("n_layer", "n_head", "n_embd", "n_ctx", "vocab_size", "n_inner"):
        cfg[k] = int(cfg[k])
        if cfg[k] <= 0:
            raise ConversionError(f"config {k} must be positive, got {cfg[k]}")
    if cfg["n_embd"] % cfg["n_head"] != 0:
        raise ConversionError(f"n_embd {cfg['n_embd']} is not divisible by n_head {cfg['n_head']}")
    return cfg


def expected_shapes(cfg: dict, layout: str) -> dict:
    d, ff = cfg["n_embd"], cfg["n_inner"]

    def mat(out_f, in_f):
        return (in_f, out_f) if layout == "conv1d" else (out_f, in_f)

    shapes = {"wte.weight": (cfg["vocab_size"], d), "wpe.weight": (cfg["n_ctx"], d)}
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        shapes.update({
            p + "ln_1.weight": (d,), p + "ln_1.bias": (d,),
            p + "attn.c_attn.weight": mat(3 * d, d), p + "attn.c_attn.bias": (3 * d,),
            p + "attn.c_proj.weight": mat(d, d), p + "attn.c_proj.bias": (d,),
            p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
            p + "mlp.c_fc.weight": mat(ff, d), p + "mlp.c_fc.bias": (ff,),
            p + "mlp.c_proj.weight": mat(d, ff), p + "mlp.c_proj.bias": (d,),
        })
    shapes["ln_f.weight"] = (d,)
    shapes["ln_f.bias"] = (d,)
    shapes["lm_head.weight"] = (cfg["vocab_size"], d)
    return shapes


def optional_keys(state: dict, shapes: dict) -> set:
    """lm_head is optional (tied); biases are optional only if the model has none at all."""
    optional = {"lm_head.weight"}
    biases = {k for k in shapes if k.endswith(".bias")}
    if not any(k in state for k in biases):
        optional |= biases  # nanoGPT bias=False
    return optional


def read_gpt2_vocab(encoder_path: str, merges_path: str) -> dict:
    for p in (encoder_path, merges_path):
        if not os.path.exists(p):
            raise ConversionError(f"tokenizer file {p} does not exist")
    try:
        with open(encoder_path, encoding="utf-8") as f:
            encoder = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise ConversionError(f"cannot read {encoder_path}: {e}") from e
    if not isinstance(encoder, dict):
        raise ConversionError(f"{encoder_path}: expected a JSON object token -> id")
    by_id = {}
    for tok, i in encoder.items():
        if not isinstance(i, int) or i < 0:
            raise ConversionError(f"{encoder_path}: token {tok!r} has id {i!r}, not an int >= 0")
        if i in by_id:
            raise ConversionError(f"{encoder_path}: id {i} used by {by_id[i]!r} and {tok!r}")
        by_id[i] = tok
    n = len(by_id)
    gaps = [i for i in range(n) if i not in by_id]
    if gaps:
        raise ConversionError(f"{encoder_path}: ids are not 0..{n - 1}; first missing id {gaps[0]}")
    tokens = [by_id[i] for i in range(n)]
    with open(merges_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    merges = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or (lineno == 1 and line.startswith("#version")):
            continue
        parts = line.split(" ")
        if len(parts) != 2:
            raise ConversionError(f"{merges_path}:{lineno}: expected 'left right', got {line!r}")
        merges.append(line)
    types = [3 if t == "<|endoftext|>" else 1 for t in tokens]
    eot = encoder.get("<|endoftext|>", -1)
    return {"tokens": tokens, "merges": merges, "types": types, "eot": eot}


def convert(args) -> None:
    raw, config = load_checkpoint(args.checkpoint)
    state = normalise_keys(raw)
    cfg = infer_config(state, config, args)
    layout = detect_layout(state, cfg["n_embd"], args.layout)
    shapes = expected_shapes(cfg, layout)
    optional = optional_keys(state, shapes)
    check_state_dict(state, shapes, optional=optional)
    vocab = read_gpt2_vocab(args.encoder, args.vocab)
    pad_vocab(vocab["tokens"], None, vocab["types"], cfg["vocab_size"], f"encoder {args.encoder}")

    w = GGUFWriter(args.out)
    d = cfg["n_embd"]
    w.add_string("general.architecture", "gpt2")
    w.add_string("general.name", args.name or os.path.splitext(os.path.basename(args.out))[0])
    w.add_uint32("general.file_type", FILE_TYPES[args.dtype])
    w.add_uint32("gpt2.vocab_size", cfg["vocab_size"])
    w.add_uint32("gpt2.context_length", cfg["n_ctx"])
    w.add_uint32("gpt2.embedding_length", d)
    w.add_uint32("gpt2.feed_forward_length", cfg["n_inner"])
    w.add_uint32("gpt2.block_count", cfg["n_layer"])
    w.add_uint32("gpt2.attention.head_count", cfg["n_head"])
    w.add_float32("gpt2.attention.layer_norm_epsilon", float(cfg["norm_eps"]))

    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", "gpt-2")
    w.add_array("tokenizer.ggml.tokens", vocab["tokens"], "string")
    w.add_array("tokenizer.ggml.token_type", vocab["types"], "int32")
    w.add_array("tokenizer.ggml.merges", vocab["merges"], "string")
    if vocab["eot"] >= 0:
        w.add_uint32("tokenizer.ggml.bos_token_id", vocab["eot"])
        w.add_uint32("tokenizer.ggml.eos_token_id", vocab["eot"])
    w.add_bool("tokenizer.ggml.add_bos_token", False)

    def get(key: str, shape: tuple) -> np.ndarray:
        if key in state:
            return state[key].numpy()
        return np.zeros(shape, dtype=np.float32)  # bias=False model

    def matrix(key: str) -> np.ndarray:
        m = state[key].numpy()
        return np.ascontiguousarray(m.T) if layout == "conv1d" else m  # -> [out, in]

    def add_matrix(name: str, array: np.ndarray) -> None:
        w.add_tensor(name, array, matrix_dtype(name, array, args.dtype))

    add_matrix("token_embd.weight", state["wte.weight"].numpy())
    # Position embeddings are added, not multiplied: keep them f32 like the norms.
    w.add_tensor("position_embd.weight", state["wpe.weight"].numpy(), "f32")
    names = {"ln_1": "attn_norm", "ln_2": "ffn_norm"}
    for i in range(cfg["n_layer"]):
        p, b = f"h.{i}.", f"blk.{i}."
        for src, dst in names.items():
            w.add_tensor(b + dst + ".weight", state[p + src + ".weight"].numpy(), "f32")
            w.add_tensor(b + dst + ".bias", get(p + src + ".bias", (d,)), "f32")
        for src, dst, out_f in (("attn.c_attn", "attn_qkv", 3 * d), ("attn.c_proj", "attn_output", d),
                                ("mlp.c_fc", "ffn_up", cfg["n_inner"]),
                                ("mlp.c_proj", "ffn_down", d)):
            add_matrix(b + dst + ".weight", matrix(p + src + ".weight"))
            w.add_tensor(b + dst + ".bias", get(p + src + ".bias", (out_f,)), "f32")
    w.add_tensor("output_norm.weight", state["ln_f.weight"].numpy(), "f32")
    w.add_tensor("output_norm.bias", get("ln_f.bias", (d,)), "f32")
    lm_head = state.get("lm_head.weight")
    tied = lm_head is None or torch.equal(lm_head, state["wte.weight"])
    if not tied or args.write_tied_output:
        add_matrix("output.weight", (lm_head if lm_head is not None else state["wte.weight"]).numpy())
    w.write()
    print(f"wrote {args.out}: gpt2, {cfg['n_layer']} layers, n_embd {d}, heads {cfg['n_head']}, "
          f"vocab {cfg['vocab_size']}, {layout} weights, {'tied' if tied else 'separate'} output, "
          f"{args.dtype}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True, help="torch.save file (nanoGPT ckpt.pt or HF "
                    "pytorch_model.bin)")
    ap.add_argument("--encoder", required=True, help="GPT-2 encoder.json")
    ap.add_argument("--vocab", required=True, help="GPT-2 vocab.bpe (merges)")
    ap.add_argument("--out", required=True, help="output .gguf path")
    ap.add_argument("--dtype", choices=WEIGHT_DTYPES, default="f32",
                    help="type of the weight matrices (norms, biases, positions stay f32)")
    ap.add_argument("--layout", choices=("auto", "conv1d", "linear"), default="auto",
                    help="weight layout: HF Conv1D [in, out] or nn.Linear [out, in]")
    ap.add_argument("--write-tied-output", action="store_true",
                    help="write output.weight even when lm_head is tied to wte")
    ap.add_argument("--name", help="general.name (default: output file stem)")
    for key, typ in (("n_layer", int), ("n_head", int), ("n_embd", int), ("n_ctx", int),
                     ("vocab_size", int), ("n_inner", int), ("norm_eps", float)):
        ap.add_argument("--" + key.replace("_", "-"), dest=key, type=typ,
                        help="overrides/supplies the checkpoint config value")
    convert(ap.parse_args())


if __name__ == "__main__":
    run_main(main)
