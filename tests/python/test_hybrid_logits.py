#!/usr/bin/python3
"""Hybrid attention / recurrent architectures on GGUF files written by llama.cpp's gguf-py in the
layout llama.cpp's converter writes, against a PyTorch forward written here from the published
definitions, and against llama.cpp itself (libllama, tests/reference/llamacpp_ref.c).

    test_hybrid_logits.py --bin BUILD/bin --llamacpp LLAMA_CPP_SOURCE --work DIR

qwen35 (Qwen3.5 / 3.6 dense) and qwen35moe (their mixtures): Gated DeltaNet layers (Hugging Face's Qwen3NextGatedDeltaNet /
torch_recurrent_gated_delta_rule: a causal depthwise convolution with SiLU over q|k|v, L2-normed
q and k, per value head the decay exp(-exp(A_log) softplus(alpha + dt_bias)) and
beta = sigmoid(b), the delta rule, an RMSNorm gated by silu(z)) with more value heads than key
heads (value head h reads key head h % key heads: the converter's tiled order), between
attention layers whose q projection carries a sigmoid output gate per head, with Q/K norms and
partial NeoX RoPE over rope.dimension_sections; the feed-forward's norm is post_attention_norm.
The layer list comes from full_attention_interval in one file and from
attention.recurrent_layers in another. qwen35moe: every feed-forward is 8 experts of which 2 run
per token (softmax router, renormalized, a hot and cold experts) plus a shared expert scaled by
the sigmoid of its gate logit (llama.cpp's qwen35moe graph). lfm2 (LFM2 / LFM2.5): Hugging
Face's Lfm2ShortConv (b, c, x = in_proj(h); out_proj(c * conv(b * x)) with a 3-tap depthwise
causal convolution) between attention layers with per-head Q/K norms, the layer list read from
a per-layer attention.head_count_kv (0: convolution), the final norm named token_embd_norm and
the output tied to the token embedding. qwen3next (Qwen3-Next): qwen35moe's layers made from
Hugging Face's in_proj_qkvz / in_proj_ba (grouped per key head, value head j reading key head
j // (value heads / key heads): repeat_interleave) as llama.cpp's converter writes them
(attn_qkv | attn_gate, ssm_ba) and as it wrote them before (ssm_in), no RoPE sections.

Checks: textgen's logits of every position (token by token) and of one prefill's last position
against PyTorch at 1e-4 (f32) and against llama.cpp at 1e-4; one prefill equals token-by-token
decoding bitwise; a 2,100-token prompt (states carried across four prefill chunks of 512)
against llama.cpp (qwen35, lfm2); and Q4_K_M files (qwen35, qwen35moe, lfm2, qwen3next) made by
llama.cpp's
quantizer: textgen's log-probabilities
within 0.45 of llama.cpp's (both quantize activations to 8 bits) and greedy agreeing wherever
llama.cpp's margin is clear.
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
LLAMACPP_REF = os.path.join(os.path.dirname(os.path.abspath(args.llamacpp)), "bin", "llamacpp-ref")
sys.path.insert(0, os.path.join(args.llamacpp, "gguf-py"))
import gguf  # noqa: E402

ATOL = 1e-4
VOCAB = 300
os.makedirs(args.work, exist_ok=True)
F = torch.nn.functional


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def l2_norm(x, eps):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


def rope_neox(x, theta, rope_dim):
    """x [T, heads, head_dim]: the first rope_dim dims rotate in (i, i + rope_dim/2) pairs."""
    half = rope_dim // 2
    freqs = theta ** (-torch.arange(0, half, dtype=torch.float64) * 2 / rope_dim)
    ang = torch.outer(torch.arange(x.shape[0], dtype=torch.float64), freqs)[:, None, :]
    out = x.clone()
    a, b = x[..., :half], x[..., half:rope_dim]
    out[..., :half] = a * torch.cos(ang) - b * torch.sin(ang)
    out[..., half:rope_dim] = a * torch.sin(ang) + b * torch.cos(ang)
    return out


def gated_delta_net(m, p, h):
    """Hugging Face's Qwen3NextGatedDeltaNet on the GGUF's tensors (state [dk, dv] per head)."""
    T = h.shape[0]
    kh, vh, dk, dv, kernel = m["k_heads"], m["v_heads"], m["dk"], m["dv"], m["kernel"]
    key_dim = kh * dk
    if m["layout"] == "qwen35":
        mixed = h @ m[p + "attn_qkv.weight"].T  # [T, channels]
        z = (h @ m[p + "attn_gate.weight"].T).view(T, vh, dv)
        b = h @ m[p + "ssm_beta.weight"].T  # [T, vh]
        a = h @ m[p + "ssm_alpha.weight"].T
    else:
        # Qwen3-Next: Hugging Face's in_proj_qkvz and in_proj_ba, grouped per key head
        # (fix_query_key_value_ordering); value heads stay grouped.
        r = vh // kh
        qkvz = (h @ m[p + "hf.in_proj_qkvz"].T).view(T, kh, 2 * dk + 2 * r * dv)
        q, k = qkvz[..., :dk].reshape(T, key_dim), qkvz[..., dk:2 * dk].reshape(T, key_dim)
        v = qkvz[..., 2 * dk:2 * dk + r * dv].reshape(T, vh * dv)
        z = qkvz[..., 2 * dk + r * dv:].reshape(T, vh, dv)
        mixed = torch.cat([q, k, v], -1)
        ba = (h @ m[p + "hf.in_proj_ba"].T).view(T, kh, 2 * r)
        b, a = ba[..., :r].reshape(T, vh), ba[..., r:].reshape(T, vh)
    b = torch.sigmoid(b)
    g = m[p + "ssm_a"] * F.softplus(a + m[p + "ssm_dt.bias"])  # ssm_a = -exp(A_log)
    w = m[p + "ssm_conv1d.weight"]  # [channels, kernel]
    padded = torch.cat([torch.zeros(kernel - 1, mixed.shape[1], dtype=mixed.dtype), mixed])
    conv = torch.stack([(padded[t:t + kernel] * w.T).sum(0) for t in range(T)])
    conv = F.silu(conv)
    q = l2_norm(conv[:, :key_dim].view(T, kh, dk), m["eps"])
    k = l2_norm(conv[:, key_dim:2 * key_dim].view(T, kh, dk), m["eps"])
    v = conv[:, 2 * key_dim:].view(T, vh, dv)
    # Value head j reads key head j % kh (Qwen3.5: tiled by the converter) or j // (vh / kh)
    # (Qwen3-Next: Hugging Face's repeat_interleave).
    tile = torch.arange(vh) % kh if m["layout"] == "qwen35" else torch.arange(vh) // (vh // kh)
    q, k = q[:, tile] * dk ** -0.5, k[:, tile]
    state = torch.zeros(vh, dk, dv, dtype=torch.float64)
    out = torch.zeros(T, vh, dv, dtype=torch.float64)
    for t in range(T):
        state = state * g[t].exp()[:, None, None]
        kv_mem = (state * k[t][:, :, None]).sum(1)
        delta = (v[t] - kv_mem) * b[t][:, None]
        state = state + k[t][:, :, None] * delta[:, None, :]
        out[t] = (state * q[t][:, :, None]).sum(1)
    out = rms_norm(out, m[p + "ssm_norm.weight"], m["eps"]) * F.silu(z)
    return out.reshape(T, vh * dv) @ m[p + "ssm_out.weight"].T


def gated_attention(m, p, h):
    T, H, KV, hd = h.shape[0], m["heads"], m["kv_heads"], m["head_dim"]
    qg = (h @ m[p + "attn_q.weight"].T).view(T, H, 2 * hd)
    q, gate = qg[..., :hd], qg[..., hd:].reshape(T, H * hd)
    k = (h @ m[p + "attn_k.weight"].T).view(T, KV, hd)
    v = (h @ m[p + "attn_v.weight"].T).view(T, KV, hd)
    q = rope_neox(rms_norm(q, m[p + "attn_q_norm.weight"], m["eps"]), m["theta"], m["rope_dim"])
    k = rope_neox(rms_norm(k, m[p + "attn_k_norm.weight"], m["eps"]), m["theta"], m["rope_dim"])
    k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
    att = torch.einsum("thd,shd->hts", q, k) * hd ** -0.5
    att = att + torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    o = torch.einsum("hts,shd->thd", torch.softmax(att, -1), v).reshape(T, H * hd)
    return (o * torch.sigmoid(gate)) @ m[p + "attn_output.weight"].T


def short_conv(m, p, h):
    """Hugging Face's Lfm2ShortConv on the GGUF's tensors: b, c, x = in_proj(h); the output is
    out_proj(c * conv(b * x)), a depthwise causal convolution without bias or activation."""
    T, dim, kernel = h.shape[0], h.shape[1], m["short_conv_kernel"]
    bcx = h @ m[p + "shortconv.in_proj.weight"].T
    b, c, x = bcx[:, :dim], bcx[:, dim:2 * dim], bcx[:, 2 * dim:]
    bx = torch.cat([torch.zeros(kernel - 1, dim, dtype=h.dtype), b * x])
    w = m[p + "shortconv.conv.weight"]  # [dim, kernel]
    conv = torch.stack([(bx[t:t + kernel] * w.T).sum(0) for t in range(T)])
    return (c * conv) @ m[p + "shortconv.out_proj.weight"].T


def qk_norm_attention(m, p, h):
    """LFM2's attention: per-head RMSNorm of q and k, NeoX RoPE over the whole head."""
    T, H, KV, hd = h.shape[0], m["heads"], m["kv_heads"], m["head_dim"]
    q = (h @ m[p + "attn_q.weight"].T).view(T, H, hd)
    k = (h @ m[p + "attn_k.weight"].T).view(T, KV, hd)
    v = (h @ m[p + "attn_v.weight"].T).view(T, KV, hd)
    q = rope_neox(rms_norm(q, m[p + "attn_q_norm.weight"], m["eps"]), m["theta"], hd)
    k = rope_neox(rms_norm(k, m[p + "attn_k_norm.weight"], m["eps"]), m["theta"], hd)
    k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
    att = torch.einsum("thd,shd->hts", q, k) * hd ** -0.5
    att = att + torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    o = torch.einsum("hts,shd->thd", torch.softmax(att, -1), v).reshape(T, H * hd)
    return o @ m[p + "attn_output.weight"].T


def forward_lfm2(m, tokens):
    x = m["token_embd.weight"][tokens]
    for l in range(m["layers"]):
        p = f"blk.{l}."
        h = rms_norm(x, m[p + "attn_norm.weight"], m["eps"])
        x = x + (short_conv(m, p, h) if m["recurrent"][l] else qk_norm_attention(m, p, h))
        h = rms_norm(x, m[p + "ffn_norm.weight"], m["eps"])
        if p + "ffn_gate_inp.weight" in m:  # lfm2moe past its leading dense layers
            x = x + routed_experts(m, p, h, "sigmoid", "swiglu")
        else:
            x = x + swiglu(h, m[p + "ffn_gate.weight"], m[p + "ffn_up.weight"],
                           m[p + "ffn_down.weight"])
    # The final norm is token_embd_norm; the output is tied to the token embedding.
    return rms_norm(x, m["token_embd_norm.weight"], m["eps"]) @ m["token_embd.weight"].T


def mamba2(m, p, h):
    """Mamba2 as Hugging Face's NemotronHMamba2Mixer / BambaMixer compute it (torch_forward) on
    the GGUF's tensors: z | xBC | dt = in_proj(h); a causal depthwise convolution with bias and
    SiLU over xBC; per head dt = softplus(dt + dt_bias), the state S [head_dim, state] decayed by
    exp(dt A) and fed x dt B (B and C shared by consecutive heads of a group), read out by C,
    plus D x; times silu(z), an RMSNorm per group, out_proj."""
    T = h.shape[0]
    inner, n, heads, groups, kernel = m["inner"], m["state"], m["ssm_heads"], m["groups"], \
        m["ssm_kernel"]
    hd, channels = inner // heads, inner + 2 * groups * n
    zxbcdt = h @ m[p + "ssm_in.weight"].T
    z, xbc, dt = zxbcdt[:, :inner], zxbcdt[:, inner:inner + channels], zxbcdt[:, inner + channels:]
    w = m[p + "ssm_conv1d.weight"]  # [channels, kernel]
    padded = torch.cat([torch.zeros(kernel - 1, channels, dtype=h.dtype), xbc])
    conv = torch.stack([(padded[t:t + kernel] * w.T).sum(0) for t in range(T)])
    xbc = F.silu(conv + m[p + "ssm_conv1d.bias"])
    x = xbc[:, :inner].view(T, heads, hd)
    B = xbc[:, inner:inner + groups * n].view(T, groups, n)
    C = xbc[:, inner + groups * n:].view(T, groups, n)
    group = torch.arange(heads) // (heads // groups)
    B, C = B[:, group], C[:, group]  # [T, heads, n]
    dt = F.softplus(dt + m[p + "ssm_dt.bias"])  # [T, heads]
    A, D = m[p + "ssm_a"][:, 0], m[p + "ssm_d"][:, 0]
    S = torch.zeros(heads, hd, n, dtype=torch.float64)
    y = torch.zeros(T, heads, hd, dtype=torch.float64)
    for t in range(T):
        S = S * torch.exp(dt[t] * A)[:, None, None] + \
            (x[t] * dt[t][:, None])[:, :, None] * B[t][:, None, :]
        y[t] = (S * C[t][:, None, :]).sum(-1) + D[:, None] * x[t]
    y = (y.reshape(T, inner) * F.silu(z)).view(T, groups, inner // groups)
    y = rms_norm(y, m[p + "ssm_norm.weight"], m["eps"]).reshape(T, inner)
    return y @ m[p + "ssm_out.weight"].T


def rope_adjacent(x, theta):
    """x [T, heads, head_dim]: rotates adjacent pairs (2i, 2i + 1), as llama.cpp's NORM RoPE."""
    hd = x.shape[-1]
    freqs = theta ** (-torch.arange(0, hd // 2, dtype=torch.float64) * 2 / hd)
    ang = torch.outer(torch.arange(x.shape[0], dtype=torch.float64), freqs)[:, None, :]
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = a * torch.cos(ang) - b * torch.sin(ang)
    out[..., 1::2] = a * torch.sin(ang) + b * torch.cos(ang)
    return out


def plain_attention(m, p, h, rope=False, scale=None):
    """Attention without Q/K norms: no positions (Nemotron-H, Granite 4.0-H) or adjacent-pair
    RoPE (Bamba), q.k scaled by `scale` (Granite's attention multiplier) or 1/sqrt(head_dim)."""
    T, H, KV, hd = h.shape[0], m["heads"], m["kv_heads"], m["head_dim"]
    q = (h @ m[p + "attn_q.weight"].T).view(T, H, hd)
    k = (h @ m[p + "attn_k.weight"].T).view(T, KV, hd)
    v = (h @ m[p + "attn_v.weight"].T).view(T, KV, hd)
    if rope:
        q, k = rope_adjacent(q, m["theta"]), rope_adjacent(k, m["theta"])
    k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
    att = torch.einsum("thd,shd->hts", q, k) * (scale or hd ** -0.5)
    att = att + torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    o = torch.einsum("hts,shd->thd", torch.softmax(att, -1), v).reshape(T, H * hd)
    return o @ m[p + "attn_output.weight"].T


def forward_mamba2_hybrid(m, tokens):
    """nemotron_h: each block one of Mamba2 ("M"), attention without positions ("*") or a
    squared-ReLU feed-forward ("-"; nemotron_h_moe: routed squared-ReLU experts and a shared
    one), normed by its attn_norm. granitehybrid: Mamba2 or attention (RoPE when
    rope.scaling.finetuned), then a SwiGLU or SwiGLU experts (and a shared one), with Granite's
    multipliers."""
    granite = m["arch"] == "granitehybrid"
    x = m["token_embd.weight"][tokens] * m.get("embedding_scale", 1.0)
    res = m.get("residual_scale", 1.0)
    for l, kind in enumerate(m["pattern"]):
        p = f"blk.{l}."
        h = rms_norm(x, m[p + "attn_norm.weight"], m["eps"])
        if kind == "M":
            out = mamba2(m, p, h)
        elif kind == "*":
            out = plain_attention(m, p, h, rope=m.get("rope", False),
                                  scale=m.get("attention_scale"))
        elif m["experts"]:  # nemotron_h_moe: sigmoid-routed squared-ReLU experts
            out = routed_experts(m, p, h, "sigmoid", "relu2", norm=True, scale=2.5)
        else:
            out = (F.relu(h @ m[p + "ffn_up.weight"].T) ** 2) @ m[p + "ffn_down.weight"].T
        x = x + out * res
        if granite:
            h = rms_norm(x, m[p + "ffn_norm.weight"], m["eps"])
            if m["experts"]:  # softmax-routed SwiGLU experts
                ffn = routed_experts(m, p, h, "softmax", "swiglu")
            else:
                ffn = swiglu(h, m[p + "ffn_gate.weight"], m[p + "ffn_up.weight"],
                             m[p + "ffn_down.weight"])
            x = x + ffn * res
    logits = rms_norm(x, m["output_norm.weight"], m["eps"]) @ m["output.weight"].T
    return logits / m.get("logit_scale", 1.0)


def swiglu(h, gate, up, down):
    return (F.silu(h @ gate.T) * (h @ up.T)) @ down.T


def experts_with_shared(m, p, h):
    """qwen35moe's feed-forward (llama.cpp's build_moe_ffn with softmax gating and norm_w, then
    the shared expert scaled by the sigmoid of its gate logit): the softmax of the router picks
    the top experts_used (ties to the lower index), their probabilities renormalized."""
    probs = torch.softmax(h @ m[p + "ffn_gate_inp.weight"].T, -1)
    ranked = torch.sort(probs, dim=-1, descending=True, stable=True)
    chosen = ranked.indices[:, :m["experts_used"]]
    w = probs.gather(1, chosen)
    w = w / w.sum(-1, keepdim=True)
    out = torch.zeros_like(h)
    for t in range(h.shape[0]):
        for j, e in enumerate(chosen[t].tolist()):
            out[t] += w[t, j] * swiglu(h[t], m[p + "ffn_gate_exps.weight"][e],
                                       m[p + "ffn_up_exps.weight"][e],
                                       m[p + "ffn_down_exps.weight"][e])
    shared = swiglu(h, m[p + "ffn_gate_shexp.weight"], m[p + "ffn_up_shexp.weight"],
                    m[p + "ffn_down_shexp.weight"])
    return out + shared * torch.sigmoid(h @ m[p + "ffn_gate_inp_shexp.weight"])[:, None]


def routed_experts(m, p, h, gating, act, norm=True, scale=1.0):
    """llama.cpp's build_moe_ffn: softmax or sigmoid probabilities; the experts chosen by the
    probabilities plus exp_probs_b.bias when present (ties to the lower index), weighted by
    their probabilities (renormalized when `norm`, the sum clamped at 2^-14) times `scale`; each
    expert a SwiGLU ("swiglu") or a squared-ReLU up/down ("relu2"); then a shared expert of the
    same kind, added as is, where the file has one."""
    logits = h @ m[p + "ffn_gate_inp.weight"].T
    probs = torch.softmax(logits, -1) if gating == "softmax" else torch.sigmoid(logits)
    select = probs + m[p + "exp_probs_b.bias"] if p + "exp_probs_b.bias" in m else probs
    chosen = torch.sort(select, dim=-1, descending=True, stable=True).indices[:, :m["experts_used"]]
    w = probs.gather(1, chosen)
    if norm:
        w = w / w.sum(-1, keepdim=True).clamp(min=2 ** -14)
    w = w * scale

    def ffn(x, gate, up, down):
        if act == "relu2":
            return (F.relu(x @ up.T) ** 2) @ down.T
        return swiglu(x, gate, up, down)

    out = torch.zeros_like(h)
    for t in range(h.shape[0]):
        for j, e in enumerate(chosen[t].tolist()):
            gate = m[p + "ffn_gate_exps.weight"][e] if act == "swiglu" else None
            out[t] += w[t, j] * ffn(h[t:t + 1], gate, m[p + "ffn_up_exps.weight"][e],
                                    m[p + "ffn_down_exps.weight"][e])[0]
    if p + "ffn_up_shexp.weight" in m:
        out = out + ffn(h, m.get(p + "ffn_gate_shexp.weight"), m[p + "ffn_up_shexp.weight"],
                        m[p + "ffn_down_shexp.weight"])
    return out


def forward(m, tokens):
    x = m["token_embd.weight"][tokens]
    for l in range(m["layers"]):
        p = f"blk.{l}."
        h = rms_norm(x, m[p + "attn_norm.weight"], m["eps"])
        x = x + (gated_delta_net(m, p, h) if m["recurrent"][l] else gated_attention(m, p, h))
        h = rms_norm(x, m[p + "post_attention_norm.weight"], m["eps"])
        if p + "ffn_gate_inp.weight" in m:
            x = x + experts_with_shared(m, p, h)
        else:
            x = x + swiglu(h, m[p + "ffn_gate.weight"], m[p + "ffn_up.weight"],
                           m[p + "ffn_down.weight"])
    return rms_norm(x, m["output_norm.weight"], m["eps"]) @ m["output.weight"].T


def make_model(name, seed, dim, layers, heads, kv_heads, head_dim, rope_dim, sections, ffn,
               k_heads, v_heads, dk, kernel, interval=None, recurrent_list=None, context=4096,
               experts=0, experts_used=0, expert_ffn=0, shared_ffn=0, layout="qwen35"):
    """A qwen35 / qwen35moe file, or with layout "qwen3next" / "qwen3next_legacy" a qwen3next
    file made from Hugging Face's in_proj_qkvz and in_proj_ba as llama.cpp's converter writes
    them today (attn_qkv | attn_gate, ssm_ba) or did before (ssm_in)."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *shape, s=1.0: torch.randn(*shape, generator=g, dtype=torch.float64) * s
    recurrent = recurrent_list or [(l + 1) % interval != 0 for l in range(layers)]
    m = dict(heads=heads, kv_heads=kv_heads, head_dim=head_dim, layers=layers, eps=1e-6,
             theta=1e7, rope_dim=rope_dim, k_heads=k_heads, v_heads=v_heads, dk=dk, dv=dk,
             kernel=kernel, recurrent=recurrent, experts_used=experts_used,
             layout="qwen35" if layout == "qwen35" else "qwen3next")
    channels, value_dim = 2 * k_heads * dk + v_heads * dk, v_heads * dk
    r = v_heads // k_heads
    t = {"token_embd.weight": rnd(VOCAB, dim)}
    hf = {}  # the Hugging Face tensors a qwen3next file is converted from
    for l in range(layers):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = 1 + rnd(dim, s=0.1)
        if recurrent[l] and layout != "qwen35":
            qkvz = rnd(k_heads, 2 * dk + 2 * r * dk, dim, s=dim ** -0.5)
            ba = rnd(2 * v_heads, dim, s=dim ** -0.5)
            hf[p + "hf.in_proj_qkvz"], hf[p + "hf.in_proj_ba"] = qkvz.reshape(-1, dim), ba
            if layout == "qwen3next_legacy":
                t[p + "ssm_in.weight"] = qkvz.reshape(-1, dim)
            else:
                q, k = qkvz[:, :dk], qkvz[:, dk:2 * dk]
                v, z = qkvz[:, 2 * dk:2 * dk + r * dk], qkvz[:, 2 * dk + r * dk:]
                t[p + "attn_qkv.weight"] = torch.cat(
                    [q.reshape(-1, dim), k.reshape(-1, dim), v.reshape(-1, dim)])
                t[p + "attn_gate.weight"] = z.reshape(-1, dim)
        if recurrent[l]:
            if layout == "qwen35":
                t[p + "attn_qkv.weight"] = rnd(channels, dim, s=dim ** -0.5)
                t[p + "attn_gate.weight"] = rnd(value_dim, dim, s=dim ** -0.5)
            t[p + "ssm_conv1d.weight"] = rnd(channels, kernel, s=0.5)
            t[p + "ssm_dt.bias"] = rnd(v_heads, s=0.5)
            # -exp(A_log) with A_log ~ U(-1.5, 1): decays from ~0.2 to ~0.98 per token.
            t[p + "ssm_a"] = -torch.exp(torch.rand(v_heads, generator=g, dtype=torch.float64) *
                                        2.5 - 1.5)
            if layout == "qwen35":
                t[p + "ssm_beta.weight"] = rnd(v_heads, dim, s=dim ** -0.5)
                t[p + "ssm_alpha.weight"] = rnd(v_heads, dim, s=dim ** -0.5)
            else:
                t[p + "ssm_ba.weight"] = hf[p + "hf.in_proj_ba"]
            t[p + "ssm_norm.weight"] = 1 + rnd(dk, s=0.1)
            t[p + "ssm_out.weight"] = rnd(dim, value_dim, s=value_dim ** -0.5)
        else:
            t[p + "attn_q.weight"] = rnd(2 * heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_k.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_v.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_q_norm.weight"] = 1 + rnd(head_dim, s=0.2)
            t[p + "attn_k_norm.weight"] = 1 + rnd(head_dim, s=0.2)
            t[p + "attn_output.weight"] = rnd(dim, heads * head_dim, s=(heads * head_dim) ** -0.5)
        t[p + "post_attention_norm.weight"] = 1 + rnd(dim, s=0.1)
        if experts:  # a router that routes unevenly, the experts, the gated shared expert
            scale = torch.ones(experts, 1, dtype=torch.float64)
            scale[experts // 2:-1] = 0.3  # cold
            scale[-1] = 2.5  # hot
            t[p + "ffn_gate_inp.weight"] = rnd(experts, dim, s=2 * dim ** -0.5) * scale
            t[p + "ffn_gate_exps.weight"] = rnd(experts, expert_ffn, dim, s=dim ** -0.5)
            t[p + "ffn_up_exps.weight"] = rnd(experts, expert_ffn, dim, s=dim ** -0.5)
            t[p + "ffn_down_exps.weight"] = rnd(experts, dim, expert_ffn, s=expert_ffn ** -0.5)
            t[p + "ffn_gate_inp_shexp.weight"] = rnd(dim, s=2 * dim ** -0.5)
            t[p + "ffn_gate_shexp.weight"] = rnd(shared_ffn, dim, s=dim ** -0.5)
            t[p + "ffn_up_shexp.weight"] = rnd(shared_ffn, dim, s=dim ** -0.5)
            t[p + "ffn_down_shexp.weight"] = rnd(dim, shared_ffn, s=shared_ffn ** -0.5)
        else:
            t[p + "ffn_gate.weight"] = rnd(ffn, dim, s=dim ** -0.5)
            t[p + "ffn_up.weight"] = rnd(ffn, dim, s=dim ** -0.5)
            t[p + "ffn_down.weight"] = rnd(dim, ffn, s=ffn ** -0.5)
    t["output_norm.weight"] = 1 + rnd(dim, s=0.1)
    t["output.weight"] = rnd(VOCAB, dim, s=3 * dim ** -0.5)
    path = os.path.join(args.work, name + ".gguf")
    arch = "qwen3next" if layout != "qwen35" else "qwen35moe" if experts else "qwen35"
    w = gguf.GGUFWriter(path, arch=arch)
    w.add_name(f"random hybrid {seed}")
    w.add_context_length(context)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(experts_used)
        w.add_expert_feed_forward_length(expert_ffn)
        w.add_expert_shared_feed_forward_length(shared_ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(rope_dim)
    if sections:
        w.add_rope_dimension_sections(sections)
    w.add_rope_freq_base(m["theta"])
    w.add_layer_norm_rms_eps(m["eps"])
    w.add_ssm_conv_kernel(kernel)
    w.add_ssm_state_size(dk)
    w.add_ssm_group_count(k_heads)
    w.add_ssm_time_step_rank(v_heads)
    w.add_ssm_inner_size(value_dim)
    if recurrent_list is not None:
        w.add_recurrent_layers(recurrent_list)
    else:
        w.add_full_attention_interval(interval)
    finish_gguf(w, t)
    m.update({k: v.to(torch.float32).to(torch.float64) for k, v in (t | hf).items()})
    return path, m


def finish_gguf(w, t):
    """A byte-level vocabulary of VOCAB tokens, the tensors, and the file written."""
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    bu = [chr(b) if 33 <= b <= 126 else chr(256 + b) for b in range(256)]
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


def make_lfm2(name, seed, dim, layers, heads, kv_heads, ffn, recurrent, kernel=3, context=4096,
              experts=0, experts_used=0, expert_ffn=0, dense=0):
    """An LFM2 file as its converter writes it: attention.head_count_kv per layer (0 for the
    convolution layers), shortconv.l_cache, the final norm as token_embd_norm, tied output."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *shape, s=1.0: torch.randn(*shape, generator=g, dtype=torch.float64) * s
    head_dim = dim // heads
    m = dict(heads=heads, kv_heads=kv_heads, head_dim=head_dim, layers=layers, eps=1e-5,
             theta=1e6, recurrent=recurrent, short_conv_kernel=kernel, experts_used=experts_used)
    # Scaled so the tied output's logits spread over several tokens instead of one.
    t = {"token_embd.weight": rnd(VOCAB, dim, s=3 * dim ** -0.5)}
    for l in range(layers):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = 1 + rnd(dim, s=0.1)
        if recurrent[l]:
            t[p + "shortconv.in_proj.weight"] = rnd(3 * dim, dim, s=dim ** -0.5)
            t[p + "shortconv.conv.weight"] = rnd(dim, kernel, s=0.5)
            t[p + "shortconv.out_proj.weight"] = rnd(dim, dim, s=dim ** -0.5)
        else:
            t[p + "attn_q.weight"] = rnd(heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_k.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_v.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_q_norm.weight"] = 1 + rnd(head_dim, s=0.2)
            t[p + "attn_k_norm.weight"] = 1 + rnd(head_dim, s=0.2)
            t[p + "attn_output.weight"] = rnd(dim, heads * head_dim, s=dim ** -0.5)
        t[p + "ffn_norm.weight"] = 1 + rnd(dim, s=0.1)
        if experts and l >= dense:
            add_experts(t, rnd, p, dim, experts, expert_ffn, 0, True, True)
        else:
            t[p + "ffn_gate.weight"] = rnd(ffn, dim, s=dim ** -0.5)
            t[p + "ffn_up.weight"] = rnd(ffn, dim, s=dim ** -0.5)
            t[p + "ffn_down.weight"] = rnd(dim, ffn, s=ffn ** -0.5)
    t["token_embd_norm.weight"] = 1 + rnd(dim, s=0.1)
    path = os.path.join(args.work, name + ".gguf")
    w = gguf.GGUFWriter(path, arch="lfm2moe" if experts else "lfm2")
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(experts_used)
        w.add_expert_feed_forward_length(expert_ffn)
        w.add_leading_dense_block_count(dense)
        w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    w.add_name(f"random lfm2 {seed}")
    w.add_context_length(context)
    w.add_embedding_length(dim)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv([0 if r else kv_heads for r in recurrent])
    w.add_rope_freq_base(m["theta"])
    w.add_layer_norm_rms_eps(m["eps"])
    w.add_vocab_size(VOCAB)
    w.add_shortconv_l_cache(kernel)
    finish_gguf(w, t)
    m.update({k: v.to(torch.float32).to(torch.float64) for k, v in t.items()})
    return path, m


def add_experts(t, rnd, p, dim, experts, width, shared, gated, selection_bias):
    """A router that routes unevenly, stacked experts, a selection bias and a shared expert."""
    scale = torch.ones(experts, 1, dtype=torch.float64)
    scale[experts // 2:-1] = 0.3  # cold
    scale[-1] = 2.5  # hot
    t[p + "ffn_gate_inp.weight"] = rnd(experts, dim, s=2 * dim ** -0.5) * scale
    if selection_bias:
        t[p + "exp_probs_b.bias"] = rnd(experts, s=0.3)
    if gated:
        t[p + "ffn_gate_exps.weight"] = rnd(experts, width, dim, s=dim ** -0.5)
    t[p + "ffn_up_exps.weight"] = rnd(experts, width, dim, s=dim ** -0.5)
    t[p + "ffn_down_exps.weight"] = rnd(experts, dim, width, s=width ** -0.5)
    if shared:
        if gated:
            t[p + "ffn_gate_shexp.weight"] = rnd(shared, dim, s=dim ** -0.5)
        t[p + "ffn_up_shexp.weight"] = rnd(shared, dim, s=dim ** -0.5)
        t[p + "ffn_down_shexp.weight"] = rnd(dim, shared, s=shared ** -0.5)


def make_mamba2_hybrid(name, seed, arch, pattern, dim, heads, kv_heads, head_dim, ffn, inner,
                       state, ssm_heads, groups, kernel=4, rope=False, granite_scales=False,
                       context=4096, experts=0, experts_used=0, expert_ffn=0, shared_ffn=0):
    """A nemotron_h or granitehybrid file as llama.cpp's converter writes it: the layer kinds in
    per-layer attention.head_count_kv (0: not attention) and, for nemotron_h,
    feed_forward_length (0: not a feed-forward); ssm_a = -exp(A_log) and ssm_d as [heads, 1],
    ssm_norm as [groups, inner / groups]."""
    g = torch.Generator().manual_seed(seed)
    rnd = lambda *shape, s=1.0: torch.randn(*shape, generator=g, dtype=torch.float64) * s
    granite = arch == "granitehybrid"
    m = dict(arch=arch, pattern=pattern, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
             layers=len(pattern), eps=1e-5, theta=1e4, inner=inner, state=state,
             ssm_heads=ssm_heads, groups=groups, ssm_kernel=kernel, rope=rope, experts=experts,
             experts_used=experts_used)
    if granite_scales:
        m.update(embedding_scale=3.0, residual_scale=0.6, logit_scale=2.5,
                 attention_scale=0.7 * head_dim ** -0.5)
    channels = inner + 2 * groups * state
    t = {"token_embd.weight": rnd(VOCAB, dim, s=0.5)}
    for l, kind in enumerate(pattern):
        p = f"blk.{l}."
        t[p + "attn_norm.weight"] = 1 + rnd(dim, s=0.1)
        if kind == "M":
            t[p + "ssm_in.weight"] = rnd(inner + channels + ssm_heads, dim, s=dim ** -0.5)
            t[p + "ssm_conv1d.weight"] = rnd(channels, kernel, s=0.5)
            t[p + "ssm_conv1d.bias"] = rnd(channels, s=0.2)
            t[p + "ssm_dt.bias"] = rnd(ssm_heads, s=0.5)
            # -exp(A_log), A_log ~ U(-1.5, 1)
            t[p + "ssm_a"] = -torch.exp(torch.rand(ssm_heads, 1, generator=g,
                                                   dtype=torch.float64) * 2.5 - 1.5)
            t[p + "ssm_d"] = 1 + rnd(ssm_heads, 1, s=0.3)
            t[p + "ssm_norm.weight"] = 1 + rnd(groups, inner // groups, s=0.1)
            t[p + "ssm_out.weight"] = rnd(dim, inner, s=inner ** -0.5)
        elif kind == "*":
            t[p + "attn_q.weight"] = rnd(heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_k.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_v.weight"] = rnd(kv_heads * head_dim, dim, s=dim ** -0.5)
            t[p + "attn_output.weight"] = rnd(dim, heads * head_dim, s=(heads * head_dim) ** -0.5)
        elif experts:
            add_experts(t, rnd, p, dim, experts, expert_ffn, shared_ffn, False, True)
        else:
            t[p + "ffn_up.weight"] = rnd(ffn, dim, s=dim ** -0.5)
            t[p + "ffn_down.weight"] = rnd(dim, ffn, s=ffn ** -0.5)
        if granite:
            t[p + "ffn_norm.weight"] = 1 + rnd(dim, s=0.1)
            if experts:  # Granite's experts are feed_forward_length wide
                add_experts(t, rnd, p, dim, experts, ffn, shared_ffn, True, False)
            else:
                t[p + "ffn_gate.weight"] = rnd(ffn, dim, s=dim ** -0.5)
                t[p + "ffn_up.weight"] = rnd(ffn, dim, s=dim ** -0.5)
                t[p + "ffn_down.weight"] = rnd(dim, ffn, s=ffn ** -0.5)
    t["output_norm.weight"] = 1 + rnd(dim, s=0.1)
    t["output.weight"] = rnd(VOCAB, dim, s=3 * dim ** -0.5)
    path = os.path.join(args.work, name + ".gguf")
    w = gguf.GGUFWriter(path, arch=arch)
    w.add_name(f"random {arch} {seed}")
    w.add_context_length(context)
    w.add_embedding_length(dim)
    w.add_block_count(len(pattern))
    w.add_feed_forward_length(ffn if granite else
                              [(expert_ffn or ffn) if k == "-" else 0 for k in pattern])
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(experts_used)
        if not granite:
            w.add_expert_feed_forward_length(expert_ffn)
            w.add_expert_weights_norm(True)
            w.add_expert_weights_scale(2.5)
        if shared_ffn:
            w.add_expert_shared_feed_forward_length(shared_ffn)
    w.add_head_count(heads)
    w.add_head_count_kv([kv_heads if k == "*" else 0 for k in pattern])
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(m["eps"])
    w.add_layer_norm_eps(m["eps"])
    w.add_ssm_conv_kernel(kernel)
    w.add_ssm_inner_size(inner)
    w.add_ssm_state_size(state)
    w.add_ssm_time_step_rank(ssm_heads)
    w.add_ssm_group_count(groups)
    if granite:
        w.add_rope_scaling_finetuned(rope)
        w.add_rope_freq_base(m["theta"])
        w.add_rope_dimension_count(head_dim)
        if granite_scales:
            w.add_embedding_scale(m["embedding_scale"])
            w.add_residual_scale(m["residual_scale"])
            w.add_logit_scale(m["logit_scale"])
            w.add_attention_scale(m["attention_scale"])
    finish_gguf(w, t)
    m.update({k: v.to(torch.float32).to(torch.float64) for k, v in t.items()})
    return path, m


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr[-2000:])


def llamacpp_logits(path, tokens):
    out = path + ".llamacpp"
    run([LLAMACPP_REF, "logits", path, ",".join(map(str, tokens)), out])
    return np.fromfile(out, dtype="<f4").reshape(-1, VOCAB)


def dump(path, tokens, mode, *flags):
    out = path + "." + mode + "".join(flags)
    run([os.path.join(args.bin, "textgen-dump-logits"), "--model", path, "--tokens",
         ",".join(map(str, tokens)), "--mode", mode, "--out", out, *flags])
    return np.fromfile(out, dtype="<f4").reshape(-1, VOCAB)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(1, keepdims=True))


failures = checks = 0


def check(ok, message):
    global failures, checks
    checks += 1
    failures += 0 if ok else 1
    print(f"{'ok  ' if ok else 'FAIL'} {message}")


SMALL = dict(dim=64, heads=4, kv_heads=2, head_dim=32, rope_dim=16, sections=[3, 3, 2, 0],
             ffn=96, k_heads=2, v_heads=4, dk=16, kernel=4)
CASES = {
    "qwen35 (full_attention_interval 2: DeltaNet, attention, DeltaNet, attention)":
        dict(name="qwen35_interval", seed=1, layers=4, interval=2, **SMALL),
    "qwen35 (attention.recurrent_layers [T, T, F]: two DeltaNet layers, then attention)":
        dict(name="qwen35_list", seed=2, layers=3, recurrent_list=[True, True, False], **SMALL),
    # The dense width 192 is not the experts' (48) nor the shared expert's (80).
    "qwen35moe (8 experts, 2 per token, a gated shared expert; DeltaNet, attention)":
        dict(name="qwen35moe", seed=5, layers=2, interval=2, experts=8, experts_used=2,
             expert_ffn=48, shared_ffn=80, **(SMALL | {"ffn": 192})),
    # Grouped value heads (4 per key head here), ssm_ba, the MoE with a shared expert,
    # RoPE without sections; and the same layers in a file converted before ssm_in was split.
    "qwen3next (attn_qkv | attn_gate, ssm_ba; DeltaNet, DeltaNet, attention)":
        dict(name="qwen3next", seed=11, layers=3, interval=3, experts=8, experts_used=2,
             expert_ffn=48, shared_ffn=80, layout="qwen3next",
             **(SMALL | {"ffn": 192, "v_heads": 8, "sections": None})),
    "qwen3next (legacy ssm_in: q, k, v, z per key head)":
        dict(name="qwen3next_legacy", seed=11, layers=3, interval=3, experts=8, experts_used=2,
             expert_ffn=48, shared_ffn=80, layout="qwen3next_legacy",
             **(SMALL | {"ffn": 192, "v_heads": 8, "sections": None})),
}
LFM2_SMALL = dict(dim=64, heads=4, kv_heads=2, ffn=96)
LFM2_CASES = {
    "lfm2 (convolution, convolution, attention, convolution: head_count_kv per layer)":
        dict(name="lfm2", seed=8, layers=4, recurrent=[True, True, False, True], **LFM2_SMALL),
    # One leading dense layer, then 8 experts of which 2 run (sigmoid router, selection bias).
    "lfm2moe (a dense convolution layer, then experts: convolution, attention, convolution)":
        dict(name="lfm2moe", seed=19, layers=4, recurrent=[True, True, False, True], experts=8,
             experts_used=2, expert_ffn=48, dense=1, **LFM2_SMALL),
}
# Mamba2 hybrids: 8 heads of 16 in 2 groups (4 heads share a group's B and C), state 16.
MAMBA2_SMALL = dict(dim=64, heads=4, kv_heads=2, head_dim=16, ffn=96, inner=128, state=16,
                    ssm_heads=8, groups=2)
MAMBA2_CASES = {
    "nemotron_h (Mamba2, squared-ReLU MLP, attention without positions, Mamba2, MLP)":
        dict(name="nemotron_h", seed=13, arch="nemotron_h", pattern="M-*M-", **MAMBA2_SMALL),
    "granitehybrid (Granite 4.0-H: Mamba2, attention without positions, Mamba2; multipliers)":
        dict(name="granitehybrid", seed=14, arch="granitehybrid", pattern="M*M",
             granite_scales=True, **MAMBA2_SMALL),
    "granitehybrid (Bamba: attention with RoPE, Mamba2)":
        dict(name="granitehybrid_rope", seed=15, arch="granitehybrid", pattern="*M", rope=True,
             **MAMBA2_SMALL),
    # Sigmoid router biased by exp_probs_b, 8 experts 2 per token renormalized and scaled by
    # 2.5, a shared expert; all squared ReLU.
    "nemotron_h_moe (Mamba2, experts, attention, experts)":
        dict(name="nemotron_h_moe", seed=20, arch="nemotron_h_moe", pattern="M-*-", experts=8,
             experts_used=2, expert_ffn=48, shared_ffn=80, **MAMBA2_SMALL),
    "granitehybrid (Granite 4.0-H Tiny: SwiGLU experts and a shared one)":
        dict(name="granitehybrid_moe", seed=21, arch="granitehybrid", pattern="M*", experts=8,
             experts_used=2, shared_ffn=80, granite_scales=True, **MAMBA2_SMALL),
}
tokens = [256, 17, 200, 5, 99, 211, 42, 7, 260, 3, 150, 77, 31, 298, 12, 250, 199, 4]
MODELS = [(label, make_model, forward, cfg) for label, cfg in CASES.items()]
MODELS += [(label, make_lfm2, forward_lfm2, cfg) for label, cfg in LFM2_CASES.items()]
MODELS += [(label, make_mamba2_hybrid, forward_mamba2_hybrid, cfg)
           for label, cfg in MAMBA2_CASES.items()]
for label, maker, reference, cfg in MODELS:
    path, m = maker(**cfg)
    with torch.no_grad():
        want = reference(m, tokens).numpy()
    try:
        decoded = dump(path, tokens, "decode")
        prefilled = dump(path, tokens, "prefill")
        theirs = llamacpp_logits(path, tokens)
    except RuntimeError as e:
        check(False, f"{label}: {e}")
        continue
    diff = float(np.abs(decoded - want).max())
    distinct = len(set(want.argmax(1).tolist()))
    check(diff <= ATOL and (decoded.argmax(1) == want.argmax(1)).all(),
          f"{label} decode: max |textgen - pytorch| = {diff:.2e} over {len(want)} positions "
          f"({distinct} distinct greedy tokens)")
    diff = float(np.abs(prefilled - want[-1:]).max())
    check(diff <= ATOL, f"{label} prefill: max |textgen - pytorch| = {diff:.2e}")
    check(prefilled.tobytes() == decoded[-1:].tobytes(),
          f"{label}: one prefill gives bitwise the logits of token-by-token decoding")
    diff = float(np.abs(theirs - decoded).max())
    check(diff <= ATOL, f"{label} vs llama.cpp: max |textgen - llama.cpp| = {diff:.2e}")

# A long prompt: the states run through 2,100 tokens, across prefill chunks (textgen-dump-logits
# prefills in one Forward; the engine's own chunking is the scheduler's, covered by the engine
# tests), against llama.cpp at every position.
rng = np.random.default_rng(7)
long_tokens = [256] + rng.integers(0, 256, 2099).tolist()


def check_long_prompt(label, path):
    try:
        theirs = llamacpp_logits(path, long_tokens)
        ours = dump(path, long_tokens, "decode")
        prefill = dump(path, long_tokens, "prefill")
    except RuntimeError as e:
        check(False, f"{label} long prompt: {e}")
        return
    diff = float(np.abs(theirs - ours).max())
    check(diff <= 1e-3, f"{label}, 2,100 tokens vs llama.cpp: max |textgen - llama.cpp| = "
                        f"{diff:.2e} (<= 1e-3) over every position")
    check(prefill.tobytes() == ours[-1:].tobytes(),
          f"{label}, 2,100 tokens: one prefill gives bitwise the last decode step's logits")


check_long_prompt("qwen35", make_model(name="qwen35_long", seed=3, layers=4, interval=2,
                                       **SMALL)[0])
check_long_prompt("lfm2", make_lfm2(name="lfm2_long", seed=9, layers=4,
                                    recurrent=[True, False, True, False], **LFM2_SMALL)[0])
check_long_prompt("nemotron_h", make_mamba2_hybrid(name="nemotron_h_long", seed=16,
                                                   arch="nemotron_h", pattern="M*-M",
                                                   **MAMBA2_SMALL)[0])

# Quantized: rows of whole K-quant super-blocks (dim 256, value width 256).
QUANT = dict(dim=256, heads=2, kv_heads=1, head_dim=128, rope_dim=64, sections=[11, 11, 10, 0],
             ffn=512, k_heads=2, v_heads=4, dk=64, kernel=4)
f32_path, _ = make_model(name="qwen35_q", seed=4, layers=4, interval=4, **QUANT)
qtokens = tokens + [88, 9, 290, 131, 66]
moe_path, _ = make_model(name="qwen35moe_q", seed=6, layers=4, interval=4, experts=8,
                         experts_used=2, expert_ffn=256, shared_ffn=512, **(QUANT | {"ffn": 768}))
lfm2_path, _ = make_lfm2(name="lfm2_q", seed=10, layers=4, recurrent=[True, True, False, True],
                         dim=256, heads=4, kv_heads=2, ffn=512)
next_path, _ = make_model(name="qwen3next_q", seed=12, layers=4, interval=4, experts=8,
                          experts_used=2, expert_ffn=256, shared_ffn=512,
                          layout="qwen3next_legacy", **(QUANT | {"ffn": 768, "sections": None}))
MAMBA2_QUANT = dict(dim=256, heads=2, kv_heads=1, head_dim=128, ffn=512, inner=512, state=64,
                    ssm_heads=8, groups=2)
nemotron_path, _ = make_mamba2_hybrid(name="nemotron_h_q", seed=17, arch="nemotron_h",
                                      pattern="M-*-M-", **MAMBA2_QUANT)
granite_path, _ = make_mamba2_hybrid(name="granitehybrid_q", seed=18, arch="granitehybrid",
                                     pattern="M*M", granite_scales=True, **MAMBA2_QUANT)
nemotron_moe_path, _ = make_mamba2_hybrid(
    name="nemotron_h_moe_q", seed=22, arch="nemotron_h_moe", pattern="M-*-", experts=8,
    experts_used=2, expert_ffn=256, shared_ffn=512, **MAMBA2_QUANT)
lfm2moe_path, _ = make_lfm2(name="lfm2moe_q", seed=23, layers=4,
                            recurrent=[True, True, False, True], dim=256, heads=4, kv_heads=2,
                            ffn=512, experts=8, experts_used=2, expert_ffn=256, dense=1)
QUANTIZED = ((f32_path, "qwen35", "Q4_K_M", 15, 0.45), (f32_path, "qwen35", "Q8_0", 7, 0.25),
             (nemotron_moe_path, "nemotron_h_moe", "Q4_K_M", 15, 0.45),
             (lfm2moe_path, "lfm2moe", "Q4_K_M", 15, 0.45),
             (nemotron_path, "nemotron_h", "Q4_K_M", 15, 0.45),
             (granite_path, "granitehybrid", "Q4_K_M", 15, 0.45),
             (moe_path, "qwen35moe", "Q4_K_M", 15, 0.45), (lfm2_path, "lfm2", "Q4_K_M", 15, 0.45),
             (next_path, "qwen3next (legacy ssm_in)", "Q4_K_M", 15, 0.45))
for base, label, qname, ftype, tol in QUANTIZED:
    qpath = base.replace(".gguf", f"-{qname}.gguf")
    try:
        run([LLAMACPP_REF, "quantize", base, qpath, str(ftype)])
        theirs = log_softmax(llamacpp_logits(qpath, qtokens))
        decoded = dump(qpath, qtokens, "decode")
        prefilled = dump(qpath, qtokens, "prefill")
    except RuntimeError as e:
        check(False, f"{label} {qname}: {e}")
        continue
    ours = log_softmax(decoded)
    likely = theirs >= np.log(0.01)
    likely[np.arange(len(theirs)), theirs.argmax(1)] = True
    diff = float(np.abs(theirs - ours)[likely].max())
    sorted_lp = np.sort(theirs, axis=1)
    clear = (sorted_lp[:, -1] - sorted_lp[:, -2]) > 2 * tol
    agree = bool(np.all(theirs.argmax(1)[clear] == ours.argmax(1)[clear]))
    check(diff <= tol and agree,
          f"{label} {qname}: max |logprob textgen - llama.cpp| over tokens with p >= 1% = "
          f"{diff:.4f} (<= {tol}); greedy agrees on {int(clear.sum())} of {len(clear)} positions "
          f"with a clear margin: {agree}")
    check(prefilled.tobytes() == decoded[-1:].tobytes(),
          f"{label} {qname}: one prefill gives bitwise the logits of token-by-token decoding")

print(f"{checks - failures}/{checks} checks passed")
sys.exit(1 if failures or checks < 72 else 0)
