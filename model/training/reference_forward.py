#!/usr/bin/python3
"""Plain PyTorch forward passes for GGUF llama and gpt2 models: the test oracle for the C++ engine.

Written from the Hugging Face / PyTorch math (LlamaModel, GPT2Model), not from the C++ code:
  llama: RMSNorm, RoPE (adjacent pairs (2i, 2i+1) = GGUF "normal", or NeoX (i, i + d/2)), causal
         attention with grouped-query heads (query head h uses kv head h // (H / KV)), SwiGLU.
  gpt2:  LayerNorm, learned positions, fused QKV, GELU (tanh approximation, HF "gelu_new").
Everything runs in float64 by default. Weights are read with gguf_reader.GGUFFile.

CLI:
    reference_forward.py --model m.gguf --tokens 1,2,3 [--greedy N] [--out logits.f32]
prints the argmax per position (or the greedy continuation), --out writes little-endian f32
logits [n_tokens, vocab].
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gguf_reader import GGUFFile  # noqa: E402


class ReferenceModel:
    """Config + weights of a GGUF model as torch tensors ([out, in] matrices)."""

    def __init__(self, path: str, dtype: torch.dtype = torch.float64, rope_layout: str = "adjacent"):
        self.file = GGUFFile(path)
        md = self.file.metadata
        self.arch = md["general.architecture"]
        if self.arch not in ("llama", "gpt2"):
            raise ValueError(f"{path}: architecture {self.arch!r} not supported")
        a = self.arch
        self.dtype = dtype
        self.rope_layout = rope_layout
        self.dim = int(md[f"{a}.embedding_length"])
        self.n_layers = int(md[f"{a}.block_count"])
        self.n_heads = int(md[f"{a}.attention.head_count"])
        self.n_kv_heads = int(md.get(f"{a}.attention.head_count_kv", self.n_heads))
        self.head_dim = self.dim // self.n_heads
        if a == "llama":
            self.eps = float(md.get("llama.attention.layer_norm_rms_epsilon", 1e-5))
            self.rope_dim = int(md.get("llama.rope.dimension_count", self.head_dim))
            self.rope_theta = float(md.get("llama.rope.freq_base", 10000.0))
        else:
            self.eps = float(md.get("gpt2.attention.layer_norm_epsilon", 1e-5))
        names = set(self.file.names())
        self.w = {n: torch.from_numpy(self.file.tensor(n).copy()).to(dtype) for n in names}
        if "output.weight" not in self.w:  # tied embeddings
            self.w["output.weight"] = self.w["token_embd.weight"]
        self.vocab_size = self.w["token_embd.weight"].shape[0]

    def forward(self, tokens: list[int]) -> torch.Tensor:
        """Logits [len(tokens), vocab] for a sequence starting at position 0."""
        ids = torch.tensor(tokens, dtype=torch.long)
        if self.arch == "llama":
            return self._llama(ids)
        return self._gpt2(ids)

    def greedy(self, prompt: list[int], n: int) -> list[int]:
        out = list(prompt)
        for _ in range(n):
            out.append(int(torch.argmax(self.forward(out)[-1])))
        return out[len(prompt):]

    # ---- llama ----

    def _rms_norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight

    def _rope(self, x: torch.Tensor) -> torch.Tensor:
        """x [T, heads, head_dim]: rotates the first rope_dim dims of each head by position."""
        t = x.shape[0]
        half = self.rope_dim // 2
        inv_freq = self.rope_theta ** (-torch.arange(half, dtype=torch.float64) * 2 / self.rope_dim)
        ang = torch.arange(t, dtype=torch.float64)[:, None] * inv_freq[None, :]  # [T, half]
        cos = ang.cos().to(x.dtype)[:, None, :]
        sin = ang.sin().to(x.dtype)[:, None, :]
        rot, rest = x[..., :self.rope_dim], x[..., self.rope_dim:]
        if self.rope_layout == "adjacent":
            a, b = rot[..., 0::2], rot[..., 1::2]
            rot = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
        else:  # neox: (i, i + half)
            a, b = rot[..., :half], rot[..., half:]
            rot = torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
        return torch.cat((rot, rest), dim=-1)

    def _attention(self, q, k, v) -> torch.Tensor:
        """q [T, H, hd], k/v [T, KV, hd] -> [T, H * hd], causal."""
        t = q.shape[0]
        group = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(group, dim=1)  # query head h <- kv head h // group
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("thd,shd->hts", q, k) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        return torch.einsum("hts,shd->thd", probs, v).reshape(t, -1)

    def _llama(self, ids: torch.Tensor) -> torch.Tensor:
        w = self.w
        x = w["token_embd.weight"][ids]
        t = ids.shape[0]
        for i in range(self.n_layers):
            p = f"blk.{i}."
            h = self._rms_norm(x, w[p + "attn_norm.weight"])
            q = (h @ w[p + "attn_q.weight"].T).view(t, self.n_heads, self.head_dim)
            k = (h @ w[p + "attn_k.weight"].T).view(t, self.n_kv_heads, self.head_dim)
            v = (h @ w[p + "attn_v.weight"].T).view(t, self.n_kv_heads, self.head_dim)
            x = x + self._attention(self._rope(q), self._rope(k), v) @ w[p + "attn_output.weight"].T
            h = self._rms_norm(x, w[p + "ffn_norm.weight"])
            gate = torch.nn.functional.silu(h @ w[p + "ffn_gate.weight"].T)
            x = x + (gate * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        return self._rms_norm(x, w["output_norm.weight"]) @ w["output.weight"].T

    # ---- gpt2 ----

    def _layer_norm(self, x, weight, bias) -> torch.Tensor:
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, self.eps)

    def _gpt2(self, ids: torch.Tensor) -> torch.Tensor:
        w = self.w
        t = ids.shape[0]
        d = self.dim
        x = w["token_embd.weight"][ids] + w["position_embd.weight"][:t]
        for i in range(self.n_layers):
            p = f"blk.{i}."
            h = self._layer_norm(x, w[p + "attn_norm.weight"], w[p + "attn_norm.bias"])
            qkv = h @ w[p + "attn_qkv.weight"].T + w[p + "attn_qkv.bias"]
            q, k, v = (qkv[:, j * d:(j + 1) * d].reshape(t, self.n_heads, self.head_dim)
                       for j in range(3))
            a = self._attention(q, k, v)
            x = x + a @ w[p + "attn_output.weight"].T + w[p + "attn_output.bias"]
            h = self._layer_norm(x, w[p + "ffn_norm.weight"], w[p + "ffn_norm.bias"])
            h = h @ w[p + "ffn_up.weight"].T + w[p + "ffn_up.bias"]
            h = 0.5 * h * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h.pow(3))))
            x = x + h @ w[p + "ffn_down.weight"].T + w[p + "ffn_down.bias"]
        x = self._layer_norm(x, w["output_norm.weight"], w["output_norm.bias"])
        return x @ w["output.weight"].T


def main() -> None:
    ap = argparse.ArgumentParser(description="PyTorch reference forward of a GGUF model")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--greedy", type=int, default=0, help="print N greedy tokens after the prompt")
    ap.add_argument("--rope", choices=("adjacent", "neox"), default="adjacent")
    ap.add_argument("--f32", action="store_true", help="compute in float32 instead of float64")
    ap.add_argument("--out", help="write f32 logits [n_tokens, vocab] here")
    args = ap.parse_args()
    model = ReferenceModel(args.model, torch.float32 if args.f32 else torch.float64, args.rope)
    tokens = [int(t) for t in args.tokens.split(",") if t.strip()]
    if args.greedy:
        print(model.greedy(tokens, args.greedy))
        return
    logits = model.forward(tokens)
    if args.out:
        logits.to(torch.float32).numpy().astype("<f4").tofile(args.out)
    print(torch.argmax(logits, dim=-1).tolist())


if __name__ == "__main__":
    main()
