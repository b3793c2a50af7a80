#!/usr/bin/python3
"""Every architecture textgen runs, on GGUF files written by llama.cpp's own gguf-py in the
layout llama.cpp's converter writes, against a PyTorch forward of the same tensors written here
from the architectures' published definitions: logits of every position (decode mode, one token
at a time) and of the last position of one prefill, at atol 1e-4 in f32.

    test_arch_logits.py --bin BUILD/bin --llamacpp LLAMA_CPP_SOURCE --work DIR

Covers: llama with Llama 3.1's rope_freqs, GQA, untied output and a head size given by
key_length (not dim / heads); llama with Q/K/V biases; qwen2 (biases, NeoX RoPE, tied output);
qwen3 (per-head Q/K RMSNorm before RoPE, head size from key_length, NeoX RoPE); phi3 (fused QKV
and gate|up, NeoX RoPE, LongRoPE's long factors and attention factor); gemma2 (GeGLU, norms after
each sublayer, embedding scaled by sqrt(dim), attention and final-logit softcapping, sliding
window on every other layer); gemma3 (Q/K norms, a per-layer pattern of sliding layers with their
own RoPE base, linear RoPE scaling on the global ones, head size 256 in the quantized case);
mixtures of experts: qwen3moe (Qwen 3's attention, 8 experts of which 2 run per token) and
Mixtral-style llama (4 experts, 2 per token, the width from feed_forward_length), with routers
that route unevenly (a hot last expert, cold ones) and two experts of identical router rows, so
that their scores tie: the lower index wins, as in llama.cpp (asserted to happen at the top-k
boundary at least once); gpt-oss (a learned sink logit per head in the softmax, Q/K/V and output
biases, every other layer sliding, experts with biases weighted by a softmax over the chosen
router logits, the clamped SwiGLU with gates large enough to clamp, YaRN x32 on every layer).

The same files also go through llama.cpp itself (libllama, tests/reference/llamacpp_ref.c, F32 KV
cache, flash attention off): f32 logits within 1e-4. Then 256-wide models of every architecture
are quantized by llama.cpp (llama_model_quantize: Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K) and
textgen's per-token log-probabilities are compared with llama.cpp's on the same quantized file
(tolerances per type below: llama.cpp multiplies quantized weights with activations quantized to
8 bits, textgen dequantizes the weights and keeps f32 activations).
"""

from __future__ import annotations

import argparse
import math
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
LLAMACPP_REF = os.path.join(os.path.dirname(os.path.abspath(args.llamacpp)), "bin", "llamacpp-ref")
sys.path.insert(0, os.path.join(args.llamacpp, "gguf-py"))
import gguf  # noqa: E402

ATOL = 1e-4
GEGLU_ATOL = 1e-2  # textgen vs llama.cpp on GeGLU models: see the check below
TABLE_ATOL = 2e-3  # llama.cpp vs PyTorch with llama.cpp's GELU table: see the check below
VOCAB = 300
os.makedirs(args.work, exist_ok=True)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def yarn(rope_dim, theta, factor, original):
    """YaRN as published (Hugging Face's _compute_yarn_parameters, beta_fast 32, beta_slow 1):
    per pair, the share of the interpolated frequency (1 / factor) and of the original one, and
    the attention factor that multiplies cos and sin."""
    def correction(turns):
        return rope_dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(theta))
    low = max(math.floor(correction(32)), 0)
    high = min(math.ceil(correction(1)), rope_dim - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(rope_dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    extrapolation = 1 - ramp
    return (1 / factor) * (1 - extrapolation) + extrapolation, 0.1 * math.log(factor) + 1


def rope(x, positions, theta, rope_dim, neox, factors=None, mscale=1.0, pscale=1.0, yarn_scaling=None):
    """x [T, heads, head_dim]; rotates the first rope_dim dims of each head; cos and sin are
    multiplied by mscale (LongRoPE's attention factor), positions by pscale (linear scaling);
    yarn_scaling = (factor, original context) replaces the linear scaling by YaRN's."""
    half = rope_dim // 2
    freqs = theta ** (-torch.arange(0, half, dtype=torch.float64) * 2 / rope_dim)
    if factors is not None:
        freqs = freqs / torch.as_tensor(factors, dtype=torch.float64)
    if yarn_scaling is not None:
        scales, attention = yarn(rope_dim, theta, *yarn_scaling)
        freqs, mscale = freqs * scales, mscale * attention
    pos = torch.as_tensor(positions, dtype=torch.float64) * pscale
    ang = torch.outer(pos, freqs)[:, None, :]
    cos, sin = mscale * torch.cos(ang), mscale * torch.sin(ang)
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


def _ggml_gelu_table():
    """ggml's table: for every half h, half(gelu(h)) computed in float32 as ggml_gelu_f32 does."""
    h = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    with np.errstate(all="ignore"):
        y = np.float32(0.5) * h * (np.float32(1) + np.tanh(np.float32(0.7978845608028654) * h * (
            np.float32(1) + np.float32(0.044715) * h * h)))
    return torch.as_tensor(y.astype(np.float16).astype(np.float64))


GGML_GELU_TABLE = _ggml_gelu_table()


def ggml_table_gelu(x):
    """GELU as llama.cpp's CPU backend computes it (GGML_GELU_FP16 in ggml-cpu/vec.h): the input
    (an f32 activation) rounded to half indexes a table of half-precision results; 0 below -10,
    x above 10."""
    index = torch.as_tensor(
        x.to(torch.float32).to(torch.float16).numpy().view(np.uint16).astype(np.int64))
    y = GGML_GELU_TABLE[index]
    return torch.where(x <= -10, torch.zeros_like(x), torch.where(x >= 10, x, y))


def moe_feed_forward(m, p, h, routing=None):
    """A mixture of experts (softmax router, top-k with ties to the lower index, weights
    renormalized as llama.cpp's build_moe_ffn does), each expert a SwiGLU. gpt-oss (m["oai"], as
    its reference implementation): the router and experts have biases, the top-k of the logits
    are weighted by a softmax over them, and each expert is the clamped SwiGLU
    g * sigmoid(1.702 g) * (clamp(u, -7, 7) + 1), g = min(gate, 7). Appends each token's
    scores, sorted, and their experts to `routing` (ties at the top-k boundary, tokens routed to
    the last expert)."""
    used = m["experts_used"]
    oai = m.get("oai", False)
    bias = (lambda name, e=None: (m[p + name] if e is None else m[p + name][e]) if oai else 0.0)
    logits = h @ m[p + "ffn_gate_inp.weight"].T + bias("ffn_gate_inp.bias")
    scores = logits if oai else torch.softmax(logits, -1)
    ranked = torch.sort(scores, dim=-1, descending=True, stable=True)
    if routing is not None:
        routing.append(ranked)
    chosen = ranked.indices[:, :used]
    if oai:
        w = torch.softmax(ranked.values[:, :used], -1)
    else:
        w = scores.gather(1, chosen)
        w = w / w.sum(-1, keepdim=True).clamp(min=6.103515625e-5)
    out = torch.zeros_like(h)
    for t in range(h.shape[0]):
        for j in range(used):
            e = int(chosen[t, j])
            g = h[t] @ m[p + "ffn_gate_exps.weight"][e].T + bias("ffn_gate_exps.bias", e)
            u = h[t] @ m[p + "ffn_up_exps.weight"][e].T + bias("ffn_up_exps.bias", e)
            if oai:
                g = g.clamp(max=7.0)
                act = g * torch.sigmoid(1.702 * g) * (u.clamp(-7.0, 7.0) + 1)
            else:
                act = torch.nn.functional.silu(g) * u
            f = act @ m[p + "ffn_down_exps.weight"][e].T + bias("ffn_down_exps.bias", e)
            out[t] += w[t, j] * f
    return out


def forward(m, tokens, gelu=None, routing=None):
    """m: dict of float64 tensors and hyperparameters. Returns logits [T, vocab]. `gelu` replaces
    the exact tanh GELU of GeGLU models; `routing` collects mixtures' router probabilities."""
    T = len(tokens)
    H, KV, hd = m["heads"], m["kv_heads"], m["head_dim"]
    x = m["token_embd.weight"][tokens] * m.get("embd_scale", 1.0)
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    # Sliding layers (Gemma): position t sees s only when t - s < window.
    window = m.get("window", 0)
    dist = torch.arange(T)[:, None] - torch.arange(T)[None, :]
    local_mask = mask.masked_fill(dist >= window, float("-inf")) if window else mask
    for l in range(m["layers"]):
        sliding = bool(m.get("sliding", [False] * m["layers"])[l])
        p = f"blk.{l}."
        h = rms_norm(x, m[p + "attn_norm.weight"], m["eps"])
        if p + "attn_qkv.weight" in m:  # phi3: one fused tensor, rows q | k | v
            q, k, v = torch.split(h @ m[p + "attn_qkv.weight"].T, [H * hd, KV * hd, KV * hd], -1)
        else:
            q, k, v = (h @ m[p + f"attn_{n}.weight"].T for n in "qkv")
        if p + "attn_q.bias" in m:
            q, k, v = q + m[p + "attn_q.bias"], k + m[p + "attn_k.bias"], v + m[p + "attn_v.bias"]
        q, k, v = q.view(T, H, hd), k.view(T, KV, hd), v.view(T, KV, hd)
        if p + "attn_q_norm.weight" in m:
            q = rms_norm(q, m[p + "attn_q_norm.weight"], m["eps"])
            k = rms_norm(k, m[p + "attn_k_norm.weight"], m["eps"])
        # Sliding layers: their own base without scaling (Gemma), or the global RoPE (gpt-oss).
        own = sliding and not m.get("oai")
        rot = dict(theta=m["theta_local"] if own else m["theta"], rope_dim=m["rope_dim"],
                   neox=m["neox"], factors=m.get("rope_freqs"), mscale=m.get("attn_factor", 1.0),
                   pscale=1.0 if own else m.get("freq_scale", 1.0),
                   yarn_scaling=None if own else m.get("yarn"))
        q, k = rope(q, range(T), **rot), rope(k, range(T), **rot)
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        att = torch.einsum("thd,shd->hts", q, k) * m.get("attn_scale", hd ** -0.5)
        if m.get("attn_softcap"):  # Gemma 2
            att = m["attn_softcap"] * torch.tanh(att / m["attn_softcap"])
        att = att + (local_mask if sliding else mask)
        if p + "attn_sinks.weight" in m:  # gpt-oss: a sink logit per head joins the softmax
            sinks = m[p + "attn_sinks.weight"].reshape(H, 1, 1).expand(H, T, 1)
            probs = torch.softmax(torch.cat([att, sinks], -1), -1)[..., :-1]
        else:
            probs = torch.softmax(att, -1)
        o = torch.einsum("hts,shd->thd", probs, v).reshape(T, H * hd)
        o = o @ m[p + "attn_output.weight"].T
        if p + "attn_output.bias" in m:
            o = o + m[p + "attn_output.bias"]
        if m.get("geglu"):  # Gemma: the sublayer's output is normalized
            o = rms_norm(o, m[p + "post_attention_norm.weight"], m["eps"])
        x = x + o
        # gpt-oss names its feed-forward norm post_attention_norm.
        h = rms_norm(x, m[p + ("post_attention_norm.weight" if m.get("oai") else "ffn_norm.weight")],
                     m["eps"])
        if p + "ffn_gate_inp.weight" in m:
            x = x + moe_feed_forward(m, p, h, routing)
            continue
        if p + "ffn_gate.weight" in m:
            g, u = h @ m[p + "ffn_gate.weight"].T, h @ m[p + "ffn_up.weight"].T
        else:  # phi3: ffn_up holds gate | up
            g, u = (h @ m[p + "ffn_up.weight"].T).chunk(2, dim=-1)
        if not m.get("geglu"):
            act = torch.nn.functional.silu(g)
        elif gelu is not None:
            act = gelu(g)
        else:
            act = torch.nn.functional.gelu(g, approximate="tanh")
        f = (act * u) @ m[p + "ffn_down.weight"].T
        if p + "post_ffw_norm.weight" in m:
            f = rms_norm(f, m[p + "post_ffw_norm.weight"], m["eps"])
        x = x + f
    x = rms_norm(x, m["output_norm.weight"], m["eps"])
    out = m.get("output.weight", m["token_embd.weight"])
    logits = x @ out.T
    if m.get("final_softcap"):
        logits = m["final_softcap"] * torch.tanh(logits / m["final_softcap"])
    return logits


def hyperparameters(arch, dim, layers, heads, kv_heads, head_dim, theta=10000.0, eps=1e-6,
                    window=0, sliding=None, attn_softcap=0.0, final_softcap=0.0,
                    theta_local=None, freq_scale=1.0, experts_used=0, yarn=None, **_):
    """The forward's hyperparameters for a case (the weights come separately)."""
    m = dict(heads=heads, kv_heads=kv_heads, head_dim=head_dim, layers=layers, eps=eps,
             theta=theta, rope_dim=head_dim, experts_used=experts_used, yarn=yarn,
             neox=arch in ("qwen2", "qwen3", "qwen3moe", "phi3", "gemma2", "gemma3", "gpt-oss"))
    if arch == "gpt-oss":  # every other layer slides, with the global RoPE (YaRN included)
        m.update(oai=True, window=window, sliding=[l % 2 == 0 for l in range(layers)],
                 theta_local=theta)
    if arch.startswith("gemma"):
        m.update(embd_scale=dim ** 0.5, geglu=True, attn_softcap=attn_softcap,
                 final_softcap=final_softcap, window=window, sliding=sliding, freq_scale=freq_scale,
                 theta_local=theta if theta_local is None else theta_local)
    return m


def make_model(arch, seed, dim, layers, heads, kv_heads, head_dim, ffn, bias=False,
               qk_norm=False, rope_freqs=False, tied=False, theta=10000.0, eps=1e-6,
               long_rope=False, window=0, sliding=None, attn_softcap=0.0, final_softcap=0.0,
               theta_local=None, freq_scale=1.0, experts=0, experts_used=0, expert_ffn=0,
               yarn=None, context=64, expert_gain=4.0):
    """Random f32 weights with enough spread that greedy choices are not ties; writes the GGUF
    with gguf-py and returns (path, float64 model dict). With experts, the feed-forward is a
    mixture: the last expert's router row is large (hot), the middle ones small (cold), and
    experts 1 and 2 share their router row (their scores tie)."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *shape, s=1.0: (torch.randn(*shape, generator=g, dtype=torch.float64) * s)
    gemma = arch.startswith("gemma")
    oai = arch == "gpt-oss"
    m = hyperparameters(arch, dim, layers, heads, kv_heads, head_dim, theta, eps, window, sliding,
                        attn_softcap, final_softcap, theta_local, freq_scale, experts_used, yarn)
    # Logits of a realistic spread (std ~3) whether or not the output is tied to the embedding
    # (Gemma scales the embedding by sqrt(dim) on the way in).
    t = {"token_embd.weight": rnd(VOCAB, dim, s=3 * dim ** -0.5 if tied else 1.0 / m.get(
        "embd_scale", 1.0))}
    for l in range(layers):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = 1 + rnd(dim, s=0.1)
        t[p + "attn_q.weight"] = rnd(heads * head_dim, dim, s=dim ** -0.5)
        t[p + "attn_k.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
        t[p + "attn_v.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
        if bias or oai:
            t[p + "attn_q.bias"] = rnd(heads * head_dim, s=0.3)
            t[p + "attn_k.bias"] = rnd(kv_heads * head_dim, s=0.3)
            t[p + "attn_v.bias"] = rnd(kv_heads * head_dim, s=0.3)
        if qk_norm:
            t[p + "attn_q_norm.weight"] = 1 + rnd(head_dim, s=0.2)
            t[p + "attn_k_norm.weight"] = 1 + rnd(head_dim, s=0.2)
        if oai:  # sinks about as large as the scores, some far above
            t[p + "attn_sinks.weight"] = rnd(heads, s=1.5)
        t[p + "attn_output.weight"] = rnd(dim, heads * head_dim, s=(heads * head_dim) ** -0.5)
        if oai:
            t[p + "attn_output.bias"] = rnd(dim, s=0.3)
        t[p + ("post_attention_norm.weight" if oai else "ffn_norm.weight")] = 1 + rnd(dim, s=0.1)
        if experts:
            scale = torch.ones(experts, 1, dtype=torch.float64)
            scale[experts // 2:-1] = 0.3  # cold
            scale[-1] = 2.5  # hot
            router = rnd(experts, dim, s=2 * dim ** -0.5) * scale
            router[2] = router[1]  # tied scores
            t[p + "ffn_gate_inp.weight"] = router
            t[p + "ffn_gate_exps.weight"] = rnd(experts, expert_ffn, dim, s=dim ** -0.5)
            t[p + "ffn_up_exps.weight"] = rnd(experts, expert_ffn, dim, s=dim ** -0.5)
            t[p + "ffn_down_exps.weight"] = rnd(experts, dim, expert_ffn, s=expert_ffn ** -0.5)
            if oai:
                # Gates and ups of std ~expert_gain, so the clamps at 7 bite; biases on
                # everything, the router's equal for the two tied experts.
                t[p + "ffn_gate_exps.weight"] *= expert_gain
                t[p + "ffn_up_exps.weight"] *= expert_gain
                t[p + "ffn_down_exps.weight"] /= expert_gain
                router_bias = rnd(experts, s=0.5)
                router_bias[2] = router_bias[1]
                t[p + "ffn_gate_inp.bias"] = router_bias
                t[p + "ffn_gate_exps.bias"] = rnd(experts, expert_ffn, s=0.5)
                t[p + "ffn_up_exps.bias"] = rnd(experts, expert_ffn, s=0.5)
                t[p + "ffn_down_exps.bias"] = rnd(experts, dim, s=0.3)
        else:
            t[p + "ffn_gate.weight"] = rnd(ffn, dim, s=dim ** -0.5)
            t[p + "ffn_up.weight"] = rnd(ffn, dim, s=dim ** -0.5)
            t[p + "ffn_down.weight"] = rnd(dim, ffn, s=ffn ** -0.5)
        if gemma:  # as large as the scaled embedding, so the output is not just an echo of it
            t[p + "post_attention_norm.weight"] = 6 + rnd(dim, s=0.5)
            t[p + "post_ffw_norm.weight"] = 6 + rnd(dim, s=0.5)
    if arch == "phi3":  # llama.cpp's converter fuses these
        for l in range(layers):
            p = f"blk.{l}."
            t[p + "attn_qkv.weight"] = torch.cat([t.pop(p + f"attn_{n}.weight") for n in "qkv"])
            t[p + "ffn_up.weight"] = torch.cat([t.pop(p + "ffn_gate.weight"),
                                                t.pop(p + "ffn_up.weight")])
    t["output_norm.weight"] = 1 + rnd(dim, s=0.1)
    if not tied:
        t["output.weight"] = rnd(VOCAB, dim, s=3 * dim ** -0.5)
    if rope_freqs:  # Llama 3.1-style divisors: 1 for high frequencies, up to 8 for low ones
        t["rope_freqs.weight"] = torch.linspace(1, 8, head_dim // 2, dtype=torch.float64)
        m["rope_freqs"] = t["rope_freqs.weight"]
    if long_rope:  # Phi-3.5: the long set applies because context 64 > original 32
        t["rope_factors_long.weight"] = torch.linspace(1, 6, head_dim // 2, dtype=torch.float64)
        t["rope_factors_short.weight"] = torch.linspace(1, 1.5, head_dim // 2, dtype=torch.float64)
        m["rope_freqs"] = t["rope_factors_long.weight"]
        m["attn_factor"] = 1.19
    name = f"{arch}_{seed}"
    path = os.path.join(args.work, name + ".gguf")
    w = gguf.GGUFWriter(path, arch=arch)
    # Not the architecture's name: llama.cpp keys vocabulary quirks on general.name ("phi3").
    w.add_name(f"random weights {seed}")
    w.add_context_length(context)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(experts_used)
        if arch != "llama":  # Mixtral's experts are feed_forward_length wide
            w.add_expert_feed_forward_length(expert_ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(eps)
    if head_dim != dim // heads:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    if long_rope:
        w.add_rope_scaling_attn_factors(1.19)
        w.add_rope_scaling_orig_ctx_len(32)
    if freq_scale != 1.0:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(1.0 / freq_scale)
    if yarn is not None:
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(yarn[0])
        w.add_rope_scaling_orig_ctx_len(yarn[1])
    if window:
        w.add_sliding_window(window)
        if sliding is not None and arch == "gemma3":  # as bools; gemma2, gpt-oss keep defaults
            w.add_sliding_window_pattern(list(sliding))
    if theta_local is not None:
        w.add_rope_freq_base_swa(theta_local)
    if attn_softcap:
        w.add_attn_logit_softcapping(attn_softcap)
    if final_softcap:
        w.add_final_logit_softcapping(final_softcap)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2" if arch.startswith("qwen") else "llama-bpe")
    bu = [chr(b) if 33 <= b <= 126 else chr(256 + b) for b in range(256)]
    # 256 byte tokens, one merge (llama.cpp refuses a BPE vocabulary without merges), then
    # control tokens up to VOCAB.
    w.add_token_list(bu + ["ab"] + [f"<|extra_{i}|>" for i in range(VOCAB - 257)])
    w.add_token_types([1] * 257 + [3] * (VOCAB - 257))
    w.add_token_merges(["a b"])
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


def llamacpp_logits(path, tokens, vocab):
    out = path + ".llamacpp"
    r = subprocess.run([LLAMACPP_REF, "logits", path, ",".join(map(str, tokens)), out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return np.fromfile(out, dtype="<f4").reshape(-1, vocab)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(1, keepdims=True))


def dump(path, tokens, mode, *flags):
    out = path + "." + mode + "".join(flags)
    r = subprocess.run([os.path.join(args.bin, "textgen-dump-logits"), "--model", path,
                        "--tokens", ",".join(map(str, tokens)), "--mode", mode, "--out", out,
                        *flags], capture_output=True, text=True)
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
    "phi3 (fused QKV and gate|up, LongRoPE long factors and attn_factor, NeoX)":
        dict(arch="phi3", dim=64, layers=2, heads=4, kv_heads=4, head_dim=16, ffn=96,
             long_rope=True),
    "phi3 (fused, GQA, no LongRoPE)":
        dict(arch="phi3", dim=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=96),
    "qwen3 (Q/K norm, key_length 32 != 64/4, NeoX)":
        dict(arch="qwen3", dim=64, layers=2, heads=4, kv_heads=2, head_dim=32, ffn=96,
             qk_norm=True, theta=1000000.0),
    # Caps low enough that tanh bends the scores and logits; a 5-token window on layer 0 (the
    # default every-other-layer pattern) so the 14-token prompt slides.
    "gemma2 (GeGLU, post norms, sqrt(dim) embedding, attention and final softcaps, window 5)":
        dict(arch="gemma2", dim=64, layers=2, heads=4, kv_heads=2, head_dim=32, ffn=128,
             tied=True, window=5, sliding=[True, False], attn_softcap=2.0, final_softcap=5.0),
    # Q/K norms; local layer: base 10000 from rope.freq_base_swa, global: base 1e6 and linear
    # scaling by 8 (as Gemma 3 4B+); the pattern written as one bool per layer.
    "gemma3 (Q/K norm, per-layer RoPE base and scaling, window 4, final softcap)":
        dict(arch="gemma3", dim=64, layers=3, heads=4, kv_heads=2, head_dim=32, ffn=128,
             tied=True, qk_norm=True, window=4, sliding=[True, False, True], theta=1000000.0,
             theta_local=10000.0, freq_scale=0.125, final_softcap=5.0),
    # feed_forward_length 192 is the dense width a qwen3moe file carries; the experts' is 48.
    "qwen3moe (8 experts, 2 per token, Q/K norm, key_length 32, NeoX)":
        dict(arch="qwen3moe", dim=64, layers=2, heads=4, kv_heads=2, head_dim=32, ffn=192,
             qk_norm=True, theta=1000000.0, experts=8, experts_used=2, expert_ffn=48),
    # YaRN x4 from an original context of 4096 (16384 served): pairs 5-12 of 16 ramp from kept to
    # interpolated, cos and sin scaled by 1 + 0.1 ln 4.
    "qwen3moe with YaRN (factor 4, original context 4096)":
        dict(arch="qwen3moe", dim=64, layers=2, heads=4, kv_heads=2, head_dim=32, ffn=192,
             qk_norm=True, experts=8, experts_used=2, expert_ffn=48, yarn=(4.0, 4096),
             context=16384),
    "llama with YaRN (factor 8, original context 256, rope_freqs)":
        dict(arch="llama", dim=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=96,
             rope_freqs=True, yarn=(8.0, 256), context=2048),
    "llama with experts (Mixtral: 4 experts, 2 per token, width from feed_forward_length)":
        dict(arch="llama", dim=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=64,
             experts=4, experts_used=2, expert_ffn=64),
    # Sinks, biases, the clamped SwiGLU and softmax-over-chosen weights; layer 0 slides over 5.
    "gpt-oss (attention sinks and biases, window 5 on even layers, 8 experts with biases, 2 per "
    "token, clamped SwiGLU)":
        dict(arch="gpt-oss", dim=64, layers=2, heads=4, kv_heads=2, head_dim=16, ffn=48,
             theta=150000.0, window=5, experts=8, experts_used=2, expert_ffn=48),
    # As the real models: YaRN x32 from 4096 on every layer, sliding ones included.
    "gpt-oss with YaRN (factor 32, original context 4096), head size 32 != 64/4":
        dict(arch="gpt-oss", dim=64, layers=3, heads=4, kv_heads=2, head_dim=32, ffn=48,
             theta=150000.0, window=4, experts=4, experts_used=2, expert_ffn=48,
             yarn=(32.0, 4096), context=131072),
}
tokens = [256, 17, 200, 5, 99, 211, 42, 7, 260, 3, 150, 77, 31, 298]
failures = checks = 0
for seed, (label, cfg) in enumerate(CASES.items()):
    path, m = make_model(seed=seed + 1, **cfg)
    routing = []
    with torch.no_grad():
        want = forward(m, tokens, routing=routing).numpy()
    if routing:
        # Tokens whose k-th and (k+1)-th probabilities tie: there the lower index must win.
        used = cfg["experts_used"]
        ranked = torch.cat([r.values for r in routing])
        chosen = torch.cat([r.indices[:, :used] for r in routing])
        boundary_ties = int((ranked[:, used - 1] == ranked[:, used]).sum())
        to_last = int((chosen == cfg["experts"] - 1).any(1).sum())
        ok = boundary_ties > 0 and to_last > 0
        checks += 1
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {label}: of {len(ranked)} routings, {boundary_ties} "
              f"tie at the top-{used} boundary, {to_last} use the last expert")
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
    try:
        theirs = llamacpp_logits(path, tokens, VOCAB)
        ours = dump(path, tokens, "decode")
        diff = float(np.abs(theirs - ours).max())
        if not m.get("geglu"):
            ok = diff <= ATOL
            print(f"{'ok  ' if ok else 'FAIL'} {label} vs llama.cpp: max |textgen - llama.cpp| = "
                  f"{diff:.2e}")
        else:
            # llama.cpp's GELU goes through a half-precision table: its logits match the PyTorch
            # forward with that GELU to TABLE_ATOL (everything else is computed alike; what is
            # left is an activation now and then rounding to the other neighbouring half, since
            # PyTorch's f64 and llama.cpp's f32 differ in the last bits: measured 5e-5, 7e-4),
            # and textgen's, with the exact GELU, lie within GEGLU_ATOL of them (3.5e-3, 4.2e-3).
            with torch.no_grad():
                table = forward(m, tokens, gelu=ggml_table_gelu).numpy()
            table_diff = float(np.abs(theirs - table).max())
            ok = table_diff <= TABLE_ATOL and diff <= GEGLU_ATOL
            print(f"{'ok  ' if ok else 'FAIL'} {label} vs llama.cpp: max |llama.cpp - pytorch with "
                  f"ggml's half-precision GELU table| = {table_diff:.2e}; max |textgen - llama.cpp| "
                  f"= {diff:.2e} (<= {GEGLU_ATOL})")
    except RuntimeError as e:
        ok = False
        print(f"FAIL {label} vs llama.cpp: {e}")
    checks += 1
    failures += 0 if ok else 1

# Quantized files, made by llama.cpp from f32 ones whose rows are whole K-quant super-blocks.
# Three checks per file:
#  1. exact: textgen with --dequantize against the PyTorch forward of the same file's weights
#     dequantized by gguf-py, logits at ATOL (textgen dequantizes once and computes in f32, so
#     nothing else differs);
#  2. the quantized kernels (the default): like llama.cpp they quantize activations to 8 bits
#     (per 32 values, or per 256 for the K-quants) for every quantized matmul, so their
#     log-probabilities are off from the exact ones by that much (printed: the activation
#     quantization error); prefill and token-by-token decode must give bitwise the same logits;
#  3. llama.cpp: its log-probabilities are off from the exact ones by its own activation
#     quantization; textgen's (quantized kernels) must lie within the bound below of llama.cpp's
#     (before the quantized kernels, with exact f32 activations, the distance measured 0.12-0.14
#     for Q8_0, 0.18-0.27 Q6_K, 0.13-0.30 Q5_K_M, 0.16-0.24 Q4_K_M, 0.11-0.16 Q4_0 on these
#     random-weight files), and greedy choices must agree wherever llama.cpp's top-1 margin is
#     larger than that error.
QUANT_TYPES = {"Q8_0": (7, 0.25), "Q6_K": (18, 0.35), "Q5_K_M": (17, 0.45), "Q4_K_M": (15, 0.45),
               "Q4_0": (2, 0.45)}
# llama.cpp's MXFP4_MOE (gpt-oss's type for the experts; the rest Q8_0): mixtures only.
EXPERT_QUANT_TYPES = {"MXFP4_MOE": (38, 0.3)}
QUANT_CASES = {
    "llama": dict(arch="llama", dim=256, layers=2, heads=4, kv_heads=2, head_dim=64, ffn=512,
                  rope_freqs=True, theta=500000.0),
    "qwen2": dict(arch="qwen2", dim=256, layers=2, heads=4, kv_heads=2, head_dim=64, ffn=512,
                  bias=True, tied=True),
    "qwen3": dict(arch="qwen3", dim=256, layers=2, heads=4, kv_heads=2, head_dim=128, ffn=512,
                  qk_norm=True),
    "phi3": dict(arch="phi3", dim=256, layers=2, heads=4, kv_heads=4, head_dim=64, ffn=512,
                 long_rope=True),
    "gemma2": dict(arch="gemma2", dim=256, layers=2, heads=4, kv_heads=2, head_dim=64, ffn=512,
                   tied=True, window=6, sliding=[True, False], attn_softcap=10.0,
                   final_softcap=8.0),
    # Head size 256 as Gemma 3 has (attention takes its portable path past 128).
    "gemma3": dict(arch="gemma3", dim=256, layers=2, heads=4, kv_heads=2, head_dim=256,
                   ffn=512, tied=True, qk_norm=True, window=6, sliding=[True, False],
                   theta=1000000.0, theta_local=10000.0),
    # The router stays f32 (llama.cpp's quantizer never quantizes ffn_gate_inp); the experts
    # are quantized like any matrix.
    "qwen3moe": dict(arch="qwen3moe", dim=256, layers=2, heads=4, kv_heads=2, head_dim=64,
                     ffn=768, qk_norm=True, experts=8, experts_used=2, expert_ffn=256),
    "llama with experts": dict(arch="llama", dim=256, layers=2, heads=4, kv_heads=2, head_dim=64,
                               ffn=256, experts=4, experts_used=2, expert_ffn=256),
    # Gates and ups of std 1.5 (the clamps bite now and then): at 4, as in the f32 cases, a
    # routing flipped by 8-bit activations moves logits by several units for llama.cpp as for
    # textgen, and the comparison measures the flips, not the quantization.
    "gpt-oss": dict(arch="gpt-oss", dim=256, layers=2, heads=4, kv_heads=2, head_dim=64, ffn=256,
                    window=6, experts=8, experts_used=2, expert_ffn=256, expert_gain=1.5),
}
qtokens = tokens + [12, 250, 199, 4, 66, 131, 17, 290, 9, 88]


def dequantized_model(path, cfg):
    """The forward's model dict from a (quantized) GGUF, dequantized by gguf-py."""
    m = hyperparameters(**cfg)
    m["types"] = sorted({t.tensor_type.name for t in gguf.GGUFReader(path).tensors})
    for t in gguf.GGUFReader(path).tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        shape = [int(d) for d in reversed(t.shape)]
        m[t.name] = torch.as_tensor(np.array(values, dtype=np.float64).reshape(shape))
    if "rope_freqs.weight" in m:
        m["rope_freqs"] = m["rope_freqs.weight"].reshape(-1)
    if "rope_factors_long.weight" in m:
        m["rope_freqs"] = m["rope_factors_long.weight"].reshape(-1)
        m["attn_factor"] = 1.19
    for name in list(m):
        vector = name.endswith(("norm.weight", ".bias", "sinks.weight")) and "_exps." not in name
        if isinstance(m[name], torch.Tensor) and vector:
            m[name] = m[name].reshape(-1)
    return m
for seed, (label, cfg) in enumerate(QUANT_CASES.items()):
    f32_path, _ = make_model(seed=100 + seed, **cfg)
    types = QUANT_TYPES | (EXPERT_QUANT_TYPES if cfg.get("experts") else {})
    for qname, (ftype, tol) in types.items():
        qpath = f32_path.replace(".gguf", f"-{qname}.gguf")
        r = subprocess.run([LLAMACPP_REF, "quantize", f32_path, qpath, str(ftype)],
                           capture_output=True, text=True)
        checks += 1
        if r.returncode != 0:
            print(f"FAIL {label} {qname}: llama.cpp cannot quantize: {r.stderr[-300:]}")
            failures += 1
            continue
        try:
            dequantized_logits = dump(qpath, qtokens, "decode", "--dequantize")
            ours_logits = dump(qpath, qtokens, "decode")
            ours_prefill = dump(qpath, qtokens, "prefill")
            theirs = log_softmax(llamacpp_logits(qpath, qtokens, VOCAB))
            ours = log_softmax(ours_logits)
        except RuntimeError as e:
            print(f"FAIL {label} {qname}: {e}")
            failures += 1
            continue
        exact_model = dequantized_model(qpath, cfg)
        with torch.no_grad():
            exact = forward(exact_model, qtokens).numpy()
        exact_diff = float(np.abs(dequantized_logits - exact).max())
        ok = exact_diff <= ATOL
        checks += 1
        failures += 0 if ok else 1
        exact_lp = log_softmax(exact)
        print(f"{'ok  ' if ok else 'FAIL'} {label} {qname} ({'+'.join(exact_model['types'])}): "
              f"max |textgen --dequantize - pytorch on the dequantized weights| = {exact_diff:.2e}; "
              f"distance from it in log-probability: quantized kernels "
              f"{float(np.abs(ours - exact_lp).max()):.3f}, llama.cpp {float(np.abs(theirs - exact_lp).max()):.3f}")
        ok = ours_prefill.tobytes() == ours_logits[-1:].tobytes()
        checks += 1
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {label} {qname}: quantized kernels give bitwise the same "
              f"last-position logits in one prefill as token by token")
        # The log-probability of llama.cpp's most likely token at every position, and of every
        # token it gives at least 1% (the ones sampling can pick).
        likely = theirs >= np.log(0.01)
        likely[np.arange(len(theirs)), theirs.argmax(1)] = True
        diff = float(np.abs(theirs - ours)[likely].max())
        sorted_lp = np.sort(theirs, axis=1)
        clear = (sorted_lp[:, -1] - sorted_lp[:, -2]) > 2 * tol  # llama.cpp's top-1 margin
        agree = bool(np.all(theirs.argmax(1)[clear] == ours.argmax(1)[clear]))
        ok = diff <= tol and agree
        failures += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FAIL'} {label} {qname}: max |logprob textgen - llama.cpp| "
              f"over tokens with p >= 1% = {diff:.4f} (<= {tol}); greedy agrees on all {int(clear.sum())} of "
              f"{len(clear)} positions with a clear margin" if agree else
              f"FAIL {label} {qname}: greedy differs where llama.cpp's margin is clear")
print(f"{checks - failures}/{checks} checks passed")
sys.exit(1 if failures or checks < 191 else 0)
