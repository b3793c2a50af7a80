"""Decoder-only LLaMA-style language model (the CS336 `TransformerLM` layout).

Pre-norm RMSNorm, RoPE on adjacent pairs (2i, 2i+1), SwiGLU FFN, causal multi-head attention with optional
grouped-query attention, no biases. State-dict key names are a contract with convert_transformer_lm.py:

  token_embeddings.weight                      [vocab, d_model]
  layers.{i}.ln1.weight / ln2.weight           [d_model]
  layers.{i}.attn.q_proj.weight                [num_heads * head_dim, d_model]
  layers.{i}.attn.k_proj.weight / v_proj       [num_kv_heads * head_dim, d_model]
  layers.{i}.attn.output_proj.weight           [d_model, num_heads * head_dim]
  layers.{i}.ffn.w1.weight (gate) / w3 (up)    [d_ff, d_model]
  layers.{i}.ffn.w2.weight (down)              [d_model, d_ff]
  ln_final.weight                              [d_model]
  lm_head.weight                               [vocab, d_model]

GQA convention (same as llama.cpp): query head h reads kv head h // (num_heads // num_kv_heads).
"""

from __future__ import annotations

import dataclasses
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclasses.dataclass
class ModelConfig:
    vocab_size: int = 4096
    context_length: int = 256
    d_model: int = 256
    num_layers: int = 6
    num_heads: int = 8
    num_kv_heads: int = 8
    d_ff: int = 688
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: dict) -> "ModelConfig":
        fields = {f.name for f in dataclasses.fields(ModelConfig)}
        return ModelConfig(**{k: v for k, v in d.items() if k in fields})

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads


class RMSNorm(nn.Module):
    def __init__(self, d_model: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in f32 even under bf16 autocast: the mean of squares is precision-sensitive.
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x * self.weight.float()).to(dtype)


def rope_cos_sin(head_dim: int, max_len: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin tables [max_len, head_dim // 2]; pair i rotates by pos * theta^(-2i / head_dim)."""
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return angles.cos().float(), angles.sin().float()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotates adjacent pairs (x[2i], x[2i+1]). x: [..., seq, head_dim]; cos/sin: [seq, head_dim // 2]."""
    x_even = x[..., 0::2]
    x_odd = x[..., 1::2]
    out_even = x_even * cos - x_odd * sin
    out_odd = x_even * sin + x_odd * cos
    return torch.stack((out_even, out_odd), dim=-1).flatten(-2)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        assert cfg.d_model % cfg.num_heads == 0, "d_model must be divisible by num_heads"
        assert cfg.num_heads % cfg.num_kv_heads == 0, "num_heads must be divisible by num_kv_heads"
        self.num_heads = cfg.num_heads
        self.num_kv_heads = cfg.num_kv_heads
        self.head_dim = cfg.head_dim
        self.q_proj = nn.Linear(cfg.d_model, cfg.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.d_model, cfg.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.d_model, cfg.num_kv_heads * self.head_dim, bias=False)
        self.output_proj = nn.Linear(cfg.num_heads * self.head_dim, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)  # [b, h, t, hd]
        k = self.k_proj(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)  # [b, kvh, t, hd]
        v = self.v_proj(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        group = self.num_heads // self.num_kv_heads
        if group > 1:
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))  # [b, h, t, t]
        scores = scores.masked_fill(mask, float("-inf"))
        probs = torch.softmax(scores.float(), dim=-1).to(v.dtype)
        out = (probs @ v).transpose(1, 2).reshape(b, t, self.num_heads * self.head_dim)
        return self.output_proj(out)


class SwiGLU(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # gate
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # up
        self.w2 = nn.Linear(d_ff, d_model, bias=False)  # down

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = SwiGLU(cfg.d_model, cfg.d_ff)

    def forward(self, x, cos, sin, mask):
        x = x + self.attn(self.ln1(x), cos, sin, mask)
        return x + self.ffn(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.token_embeddings = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList([TransformerBlock(cfg) for _ in range(cfg.num_layers)])
        self.ln_final = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        cos, sin = rope_cos_sin(cfg.head_dim, cfg.context_length, cfg.rope_theta)
        # Non-persistent: the tables are derived from the config and must not appear in the state_dict.
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self._init_weights()

    def _init_weights(self) -> None:
        # GPT-2 style: N(0, 0.02), residual-output projections scaled by 1/sqrt(2 * num_layers).
        for name, p in self.named_parameters():
            if p.dim() < 2:
                continue
            std = 0.02
            if name.endswith("output_proj.weight") or name.endswith("ffn.w2.weight"):
                std = 0.02 / math.sqrt(2 * self.cfg.num_layers)
            nn.init.trunc_normal_(p, mean=0.0, std=std, a=-3 * std, b=3 * std)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens [b, t] int64 -> logits [b, t, vocab] (f32)."""
        _, t = tokens.shape
        if t > self.cfg.context_length:
            raise ValueError(f"sequence length {t} exceeds context_length {self.cfg.context_length}")
        x = self.token_embeddings(tokens)
        cos, sin = self.rope_cos[:t], self.rope_sin[:t]
        mask = torch.ones(t, t, dtype=torch.bool, device=tokens.device).triu(1)  # True = masked (future)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.ln_final(x)).float()

    def num_params(self, exclude_embeddings: bool = False) -> int:
        n = sum(p.numel() for p in self.parameters())
        if exclude_embeddings:
            n -= self.token_embeddings.weight.numel()
        return n

    @torch.no_grad()
    def generate(self, tokens: list[int], max_new_tokens: int, temperature: float = 0.0, top_p: float = 1.0,
                 eos_id: int | None = None, generator: torch.Generator | None = None) -> list[int]:
        """Greedy (temperature 0) or nucleus sampling; no KV cache (fine for demo-length outputs)."""
        out = list(tokens)
        for _ in range(max_new_tokens):
            ctx = torch.tensor([out[-self.cfg.context_length:]], dtype=torch.long)
            logits = self.forward(ctx)[0, -1]
            if temperature <= 0:
                nxt = int(torch.argmax(logits))
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                sorted_p, sorted_i = torch.sort(probs, descending=True)
                keep = (sorted_p.cumsum(0) - sorted_p) < top_p
                sorted_p = sorted_p * keep
                nxt = int(sorted_i[torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=generator)])
            out.append(nxt)
            if eos_id is not None and nxt == eos_id:
                break
        return out
