#!/usr/bin/python3
"""Every architecture textgen runs, on GGUF files written by llama.cpp's own gguf-py in the
layout llama.cpp's converter writes, against a PyTorch forward of the same tensors written here
from the architectures' published definitions: logits of every position (decode mode, one token
at a time) and of the last position of one prefill, at atol 1e-4 in f32.

    test_arch_logits.py --bin BUILD/bin --llamacpp LLAMA_CPP_SOURCE --work DIR

Covers: llama with Llama 3.1's rope_freqs, GQA, untied output and a head size given by
key_length (not dim / heads); llama with Q/K/V biases; qwen2 (biases, NeoX RoPE, tied output);
qwen3 (per-head Q/K RMSNorm before RoPE, head size from key_length, NeoX RoPE).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np
import torch

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--bin", required=True)
ap.add_argument("--llamacpp", required=True)
ap.add_argument("--work", required=True)
args = ap.parse_args()
sys.path.insert(0, os.path.join(args.llamacpp, "gguf-py"))
import gguf  # noqa: E402

ATOL = 1e-4
VOCAB = 300
os.makedirs(args.work, exist_ok=True)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, positions, theta, rope_dim, neox, factors=None):
    """x [T, heads, head_dim]; rotates the first rope_dim dims of each head."""
    half = rope_dim // 2
    freqs = theta ** (-torch.arange(0, half, dtype=torch.float64) * 2 / rope_dim)
    if factors is not None:
        freqs = freqs / torch.as_tensor(factors, dtype=torch.float64)
    ang = torch.outer(torch.as_tensor(positions, dtype=torch.float64), freqs)[:, None, :]
    cos, sin = torch.cos(ang), torch.sin(ang)
    out = x.clone()
    if neox:  # pairs (i, i + half)
        a, b = x[..., :half], x[..., half:rope_dim]
        out[..., :half] = a * cos - b * sin
        out[..., half:rope_dim] = a * sin + b * cos
    else:  # pairs (2i, 2i + 1)
        a, b = x[..., 0:rope_dim:2], x[..., 1:rope_dim:2]
        out[..., 0:rope_dim:2] = a * cos - b * sin
        out[..., 1:rope_dim:2] = a * sin + b * cos
    return out


def forward(m, tokens):
    """m: dict of float64 tensors and hyperparameters. Returns logits [T, vocab]."""
    T = len(tokens)
    H, KV, hd = m["heads"], m["kv_heads"], m["head_dim"]
    x = m["token_embd.weight"][tokens]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(m["layers"]):
        p = f"blk.{l}."
        h = rms_norm(x, m[p + "attn_norm.weight"], m["eps"])
        q, k, v = (h @ m[p + f"attn_{n}.weight"].T for n in "qkv")
        if p + "attn_q.bias" in m:
            q, k, v = q + m[p + "attn_q.bias"], k + m[p + "attn_k.bias"], v + m[p + "attn_v.bias"]
        q, k, v = q.view(T, H, hd), k.view(T, KV, hd), v.view(T, KV, hd)
        if p + "attn_q_norm.weight" in m:
            q = rms_norm(q, m[p + "attn_q_norm.weight"], m["eps"])
            k = rms_norm(k, m[p + "attn_k_norm.weight"], m["eps"])
        q = rope(q, range(T), m["theta"], m["rope_dim"], m["neox"], m.get("rope_freqs"))
        k = rope(k, range(T), m["theta"], m["rope_dim"], m["neox"], m.get("rope_freqs"))
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) / hd ** 0.5 + mask
        o = torch.einsum("hts,shd->thd", torch.softmax(att, -1), v).reshape(T, H * hd)
        x = x + o @ m[p + "attn_output.weight"].T
        h = rms_norm(x, m[p + "ffn_norm.weight"], m["eps"])
        g = torch.nn.functional.silu(h @ m[p + "ffn_gate.weight"].T)
        x = x + (g * (h @ m[p + "ffn_up.weight"].T)) @ m[p + "ffn_down.weight"].T
    x = rms_norm(x, m["output_norm.weight"], m["eps"])
    out = m.get("output.weight", m["token_embd.weight"])
    return x @ out.T


def make_model(arch, seed, dim, layers, heads, kv_heads, head_dim, ffn, bias=False,
               qk_norm=False, rope_freqs=False, tied=False, theta=10000.0, eps=1e-6):
    """Random f32 weights with enough spread that greedy choices are not ties; writes the GGUF
    with gguf-py and returns (path, float64 model dict)."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *shape, s=1.0: (torch.randn(*shape, generator=g, dtype=torch.float64) * s)
    m = dict(heads=heads, kv_heads=kv_heads, head_dim=head_dim, layers=layers, eps=eps,
             theta=theta, rope_dim=head_dim, neox=arch in ("qwen2", "qwen3"))
    t = {"token_embd.weight": rnd(VOCAB, dim)}
    for l in range(layers):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = 1 + rnd(dim, s=0.1)
        t[p + "attn_q.weight"] = rnd(heads * head_dim, dim, s=dim ** -0.5)
        t[p + "attn_k.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
        t[p + "attn_v.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
        if bias:
            t[p + "attn_q.bias"] = rnd(heads * head_dim, s=0.3)
            t[p + "attn_k.bias"] = rnd(kv_heads * head_dim, s=0.3)
            t[p + "attn_v.bias"] = rnd(kv_heads * head_dim, s=0.3)
        if qk_norm:
            t[p + "attn_q_norm.weight"] = 1 + rnd(head_dim, s=0.2)
            t[p + "attn_k_norm.weight"] = 1 + rnd(head_dim, s=0.2)
        t[p + "attn_output.weight"] = rnd(dim, heads * head_dim, s=(heads * head_dim) ** -0.5)
        t[p + "ffn_norm.weight"] = 1 + rnd(dim, s=0.1)
        t[p + "ffn_gate.weight"] = rnd(ffn, dim, s=dim ** -0.5)
        t[p + "ffn_up.weight"] = rnd(ffn, dim, s=dim ** -0.5)
        t[p + "ffn_down.weight"] = rnd(dim, ffn, s=ffn ** -0.5)
    t["output_norm.weight"] = 1 + rnd(dim, s=0.1)
    if not tied:
        t["output.weight"] = rnd(VOCAB, dim, s=3 * dim ** -0.5)
    if rope_freqs:  # Llama 3.1-style divisors: 1 for high frequencies, up to 8 for low ones
        t["rope_freqs.weight"] = torch.linspace(1, 8, head_dim // 2, dtype=torch.float64)
        m["rope_freqs"] = t["rope_freqs.weight"]
    name = f"{arch}_{seed}"
    path = os.path.join(args.work, name + ".gguf")
    w = gguf.GGUFWriter(path, arch=arch)
    w.add_name(name)
    w.add_context_length(64)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(eps)
    if head_dim != dim // heads:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2" if arch.startswith("qwen") else "llama-bpe")
    bu = [chr(b) if 33 <= b <= 126 else chr(256 + b) for b in range(256)]
    w.add_token_list(bu + [f"<|extra_{i}|>" for i in range(VOCAB - 256)])
    w.add_token_types([1] * 256 + [3] * (VOCAB - 256))
    w.add_token_merges([])
    w.add_bos_token_id(256)
    w.add_eos_token_id(257)
    for key, value in t.items():
        w.add_tensor(key, value.to(torch.float32).numpy())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    m.update({k: v.to(torch.float32).to(torch.float64) for k, v in t.items()})
    return path, m


def dump(path, tokens, mode):
    out = path + "." + mode
    r = subprocess.run([os.path.join(args.bin, "textgen-dump-logits"), "--model", path,
                        "--tokens", ",".join(map(str, tokens)), "--mode", mode, "--out", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return np.fromfile(out, dtype="<f4").reshape(-1, VOCAB)


CASES = {
    "llama (rope_freqs, GQA, key_length 24 != 64/4, untied)":
        dict(arch="llama", dim=64, layers=2, heads=4, kv_heads=2, head_dim=24, ffn=96,
             rope_freqs=True, theta=500000.0),
    "llama (Q/K/V biases, tied)":
        dict(arch="llama", dim=64, layers=2, heads=4, kv_heads=4, head_dim=16, ffn=96, bias=True,
             tied=True),
    "qwen2 (biases, NeoX, GQA, tied)":
        dict(arch="qwen2", dim=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=128, bias=True,
             tied=True, theta=1000000.0),
    "qwen3 (Q/K norm, key_length 32 != 64/4, NeoX)":
        dict(arch="qwen3", dim=64, layers=2, heads=4, kv_heads=2, head_dim=32, ffn=96,
             qk_norm=True, theta=1000000.0),
}
tokens = [256, 17, 200, 5, 99, 211, 42, 7, 260, 3, 150, 77, 31, 298]
failures = checks = 0
for seed, (label, cfg) in enumerate(CASES.items()):
    path, m = make_model(seed=seed + 1, **cfg)
    with torch.no_grad():
        want = forward(m, tokens).numpy()
    for mode in ("decode", "prefill"):
        try:
            got = dump(path, tokens, mode)
        except RuntimeError as e:
            print(f"FAIL {label} {mode}: {e}")
            failures += 1
            continue
        ref = want if mode == "decode" else want[-1:]
        diff = float(np.abs(got - ref).max()) if got.shape == ref.shape else float("inf")
        agree = float(np.mean(got.argmax(1) == ref.argmax(1))) if got.shape == ref.shape else 0
        distinct = len(set(ref.argmax(1).tolist()))
        ok = diff <= ATOL and agree == 1.0
        checks += 1
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {label} {mode}: max |textgen - pytorch| = {diff:.2e}, "
              f"argmax agrees on {agree:.0%} of {len(ref)} rows ({distinct} distinct tokens)")
print(f"{checks - failures}/{checks} checks passed")
sys.exit(1 if failures or checks < 8 else 0)
