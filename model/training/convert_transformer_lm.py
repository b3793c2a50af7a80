#!/usr/bin/python3
"""Converts a CS336-style TransformerLM checkpoint (see model.py) + SentencePiece tokenizer to GGUF.

    /usr/bin/python3 convert_transformer_lm.py --checkpoint ckpt.pt --tokenizer tok.model \
        --out model.gguf [--dtype f32|f16|bf16|q8_0]

The checkpoint is torch.save({"state_dict": ..., "config": {vocab_size, context_length, d_model,
num_layers, num_heads, num_kv_heads, d_ff, rope_theta, norm_eps}}) or a bare state_dict with the
hyperparameters as flags (vocab_size, d_model, num_layers, d_ff and num_kv_heads are inferred from
shapes; num_heads and context_length must be given). Output is GGUF architecture "llama".
RoPE in this model rotates adjacent pairs (2i, 2i+1) - GGUF llama's "normal" layout - so Q/K are
written unpermuted. Norm weights stay f32. Exits 1 with a precise message on any mismatch.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from convert_common import (WEIGHT_DTYPES, ConversionError, check_state_dict,  # noqa: E402
                            load_checkpoint, matrix_dtype, pad_vocab, run_main)
from gguf_writer import FILE_TYPES, GGUFWriter  # noqa: E402

# SentencePiece ModelProto.SentencePiece.Type -> GGUF token_type.
_SP_TYPE_TO_GGUF = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6}  # normal unknown control user unused byte


def infer_config(state: dict, config: dict, args) -> dict:
    """Fills the hyperparameters: checkpoint config, then flags, then what shapes allow."""
    cfg = dict(config)
    for key in ("vocab_size", "context_length", "d_model", "num_layers", "num_heads",
                "num_kv_heads", "d_ff", "rope_theta", "norm_eps"):
        flag = getattr(args, key)
        if flag is not None:
            cfg[key] = flag
    emb = state.get("token_embeddings.weight")
    if emb is not None and emb.dim() == 2:
        cfg.setdefault("vocab_size", emb.shape[0])
        cfg.setdefault("d_model", emb.shape[1])
    layers = {int(m.group(1)) for k in state if (m := re.match(r"layers\.(\d+)\.", k))}
    if layers:
        cfg.setdefault("num_layers", max(layers) + 1)
    w1 = state.get("layers.0.ffn.w1.weight")
    if w1 is not None and w1.dim() == 2:
        cfg.setdefault("d_ff", w1.shape[0])
    cfg.setdefault("rope_theta", 10000.0)
    cfg.setdefault("norm_eps", 1e-5)
    if "num_heads" in cfg and "num_kv_heads" not in cfg:
        q = state.get("layers.0.attn.q_proj.weight")
        k = state.get("layers.0.attn.k_proj.weight")
        if q is not None and k is not None and q.shape[0] % cfg["num_heads"] == 0:
            head_dim = q.shape[0] // cfg["num_heads"]
            cfg["num_kv_heads"] = k.shape[0] // head_dim
        else:
            cfg["num_kv_heads"] = cfg["num_heads"]
    missing = [k for k in ("vocab_size", "context_length", "d_model", "num_layers", "num_heads",
                           "num_kv_heads", "d_ff") if k not in cfg]
    if missing:
        raise ConversionError("cannot determine " + ", ".join(missing) + " from the checkpoint; "
                              "pass --" + " --".join(m.replace("_", "-") for m in missing))
    for k in ("vocab_size", "context_length", "d_model", "num_layers", "num_heads",
              "num_kv_heads", "d_ff"):
        cfg[k] = int(cfg[k])
        if cfg[k] <= 0:
            raise ConversionError(f"config {k} must be positive, got {cfg[k]}")
    if cfg["d_model"] % cfg["num_heads"] != 0:
        raise ConversionError(f"d_model {cfg['d_model']} is not divisible by num_heads "
                              f"{cfg['num_heads']}")
    if cfg["num_heads"] % cfg["num_kv_heads"] != 0:
        raise ConversionError(f"num_heads {cfg['num_heads']} is not divisible by num_kv_heads "
                              f"{cfg['num_kv_heads']}")
    if (cfg["d_model"] // cfg["num_heads"]) % 2 != 0:
        raise ConversionError(f"head_dim {cfg['d_model'] // cfg['num_heads']} must be even for RoPE")
    return cfg


def expected_shapes(cfg: dict) -> dict:
    d, ff, v = cfg["d_model"], cfg["d_ff"], cfg["vocab_size"]
    head_dim = d // cfg["num_heads"]
    kv = cfg["num_kv_heads"] * head_dim
    shapes = {"token_embeddings.weight": (v, d)}
    for i in range(cfg["num_layers"]):
        p = f"layers.{i}."
        shapes.update({
            p + "ln1.weight": (d,),
            p + "attn.q_proj.weight": (cfg["num_heads"] * head_dim, d),
            p + "attn.k_proj.weight": (kv, d),
            p + "attn.v_proj.weight": (kv, d),
            p + "attn.output_proj.weight": (d, cfg["num_heads"] * head_dim),
            p + "ln2.weight": (d,),
            p + "ffn.w1.weight": (ff, d),
            p + "ffn.w2.weight": (d, ff),
            p + "ffn.w3.weight": (ff, d),
        })
    shapes["ln_final.weight"] = (d,)
    shapes["lm_head.weight"] = (v, d)
    return shapes


# state_dict key -> GGUF tensor name (per layer keys use {i}).
_LAYER_NAMES = {
    "ln1.weight": "attn_norm.weight",
    "attn.q_proj.weight": "attn_q.weight",
    "attn.k_proj.weight": "attn_k.weight",
    "attn.v_proj.weight": "attn_v.weight",
    "attn.output_proj.weight": "attn_output.weight",
    "ln2.weight": "ffn_norm.weight",
    "ffn.w1.weight": "ffn_gate.weight",
    "ffn.w3.weight": "ffn_up.weight",
    "ffn.w2.weight": "ffn_down.weight",
}


def read_sentencepiece(path: str) -> dict:
    """Pieces, scores, GGUF token types, special ids and add_dummy_prefix of a .model file."""
    import sentencepiece as spm
    if not os.path.exists(path):
        raise ConversionError(f"tokenizer {path} does not exist")
    try:
        sp = spm.SentencePieceProcessor(model_file=path)
    except Exception as e:
        raise ConversionError(f"cannot load SentencePiece model {path}: {e}") from e
    n = sp.vocab_size()
    tokens = [sp.id_to_piece(i) for i in range(n)]
    scores = [float(sp.get_score(i)) for i in range(n)]
    add_dummy_prefix = True
    try:  # The proto has the exact piece types (user-defined is not exposed by the processor).
        from sentencepiece import sentencepiece_model_pb2
        proto = sentencepiece_model_pb2.ModelProto()
        with open(path, "rb") as f:
            proto.ParseFromString(f.read())
        types = [_SP_TYPE_TO_GGUF.get(p.type, 1) for p in proto.pieces]
        add_dummy_prefix = proto.normalizer_spec.add_dummy_prefix
        model_type = proto.trainer_spec.model_type  # 1 unigram, 2 bpe
    except Exception:
        types = []
        for i in range(n):
            types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i) else
                         5 if sp.is_unused(i) else 6 if sp.is_byte(i) else 1)
        model_type = None
    if model_type is not None and model_type not in (1, 2):
        print(f"warning: SentencePiece model type {model_type} is neither unigram nor BPE",
              file=sys.stderr)
    return {"tokens": tokens, "scores": scores, "types": types, "bos": sp.bos_id(),
            "eos": sp.eos_id(), "unk": sp.unk_id(), "pad": sp.pad_id(),
            "add_dummy_prefix": add_dummy_prefix}


def convert(args) -> None:
    state, config = load_checkpoint(args.checkpoint)
    cfg = infer_config(state, config, args)
    check_state_dict(state, expected_shapes(cfg))
    vocab = read_sentencepiece(args.tokenizer)
    pad_vocab(vocab["tokens"], vocab["scores"], vocab["types"], cfg["vocab_size"],
              f"tokenizer {args.tokenizer}")

    w = GGUFWriter(args.out)
    name = args.name or os.path.splitext(os.path.basename(args.out))[0]
    head_dim = cfg["d_model"] // cfg["num_heads"]
    w.add_string("general.architecture", "llama")
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", FILE_TYPES[args.dtype])
    w.add_uint32("llama.vocab_size", cfg["vocab_size"])
    w.add_uint32("llama.context_length", cfg["context_length"])
    w.add_uint32("llama.embedding_length", cfg["d_model"])
    w.add_uint32("llama.block_count", cfg["num_layers"])
    w.add_uint32("llama.feed_forward_length", cfg["d_ff"])
    w.add_uint32("llama.attention.head_count", cfg["num_heads"])
    w.add_uint32("llama.attention.head_count_kv", cfg["num_kv_heads"])
    w.add_uint32("llama.rope.dimension_count", head_dim)
    w.add_float32("llama.rope.freq_base", float(cfg["rope_theta"]))
    w.add_float32("llama.attention.layer_norm_rms_epsilon", float(cfg["norm_eps"]))

    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", vocab["tokens"], "string")
    w.add_array("tokenizer.ggml.scores", vocab["scores"], "float32")
    w.add_array("tokenizer.ggml.token_type", vocab["types"], "int32")
    for key, tok in (("bos", vocab["bos"]), ("eos", vocab["eos"]), ("unknown", vocab["unk"]),
                     ("padding", vocab["pad"])):
        if tok >= 0:
            w.add_uint32(f"tokenizer.ggml.{key}_token_id", tok)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", bool(vocab["add_dummy_prefix"]))
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            w.add_string("tokenizer.chat_template", f.read())

    def matrix(gguf_name: str, key: str) -> None:
        array = state[key].numpy()
        w.add_tensor(gguf_name, array, matrix_dtype(gguf_name, array, args.dtype))

    matrix("token_embd.weight", "token_embeddings.weight")
    for i in range(cfg["num_layers"]):
        for key, gguf in _LAYER_NAMES.items():
            if gguf.endswith("norm.weight"):
                w.add_tensor(f"blk.{i}.{gguf}", state[f"layers.{i}.{key}"].numpy(), "f32")
            else:
                matrix(f"blk.{i}.{gguf}", f"layers.{i}.{key}")
    w.add_tensor("output_norm.weight", state["ln_final.weight"].numpy(), "f32")
    matrix("output.weight", "lm_head.weight")
    w.write()
    print(f"wrote {args.out}: llama, {cfg['num_layers']} layers, d_model {cfg['d_model']}, "
          f"heads {cfg['num_heads']}/{cfg['num_kv_heads']}, vocab {cfg['vocab_size']}, "
          f"{args.dtype}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True, help="torch.save file")
    ap.add_argument("--tokenizer", required=True, help="SentencePiece .model file")
    ap.add_argument("--out", required=True, help="output .gguf path")
    ap.add_argument("--dtype", choices=WEIGHT_DTYPES, default="f32",
                    help="type of the weight matrices (norms stay f32)")
    ap.add_argument("--name", help="general.name (default: output file stem)")
    ap.add_argument("--chat-template", help="Jinja file written as tokenizer.chat_template")
    for key, typ in (("vocab_size", int), ("context_length", int), ("d_model", int),
                     ("num_layers", int), ("num_heads", int), ("num_kv_heads", int),
                     ("d_ff", int), ("rope_theta", float), ("norm_eps", float)):
        ap.add_argument("--" + key.replace("_", "-"), dest=key, type=typ,
                        help="overrides/supplies the checkpoint config value")
    convert(ap.parse_args())


if __name__ == "__main__":
    run_main(main)
