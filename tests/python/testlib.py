"""Helpers for the Python tests: tiny PyTorch models written here (independent of model/training's
model.py), a tiny SentencePiece / GPT-2 vocabulary, converter and textgen-dump-logits runners.

Run the tests with Debian's /usr/bin/python3 (torch, numpy, sentencepiece).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRAINING = os.path.join(REPO, "model", "training")
sys.path.insert(0, TRAINING)
sys.path.insert(0, os.path.join(REPO, "tests", "testing"))
from shared_files import require_shared_file, shared_dir  # noqa: E402  (one rule for ../shared)

SKIP = 77  # ctest SKIP_RETURN_CODE


def parse_args(description: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bin"),
                    help="directory with textgen-dump-logits")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir")
    return ap.parse_args()


def temp_dir(keep: bool = False) -> str:
    d = tempfile.mkdtemp(prefix="textgen_pytest_")
    if not keep:
        import atexit
        import shutil
        atexit.register(shutil.rmtree, d, True)
    return d


class Checker:
    """Collects failures so one run reports all of them; exit code 1 if any."""

    def __init__(self):
        self.failures = 0
        self.checks = 0

    def check(self, ok: bool, what: str) -> bool:
        self.checks += 1
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        if not ok:
            self.failures += 1
        return ok

    def close(self, sane_checks: int = 1) -> None:
        if self.checks < sane_checks:
            print(f"FAIL only {self.checks} checks ran (expected >= {sane_checks})")
            sys.exit(1)
        print(f"{self.checks - self.failures}/{self.checks} checks passed")
        sys.exit(1 if self.failures else 0)


def max_abs_diff(a, b) -> float:
    a = torch.as_tensor(np.asarray(a), dtype=torch.float64)
    b = torch.as_tensor(np.asarray(b), dtype=torch.float64)
    if a.shape != b.shape:
        return float("inf")
    return float((a - b).abs().max())


# ---------------------------------------------------------------------------------------------
# A CS336-style TransformerLM (llama: RMSNorm, RoPE on adjacent pairs, SwiGLU, GQA).

class LlamaLM(nn.Module):
    def __init__(self, vocab_size, context_length, d_model, num_layers, num_heads, num_kv_heads,
                 d_ff, rope_theta=10000.0, norm_eps=1e-5):
        super().__init__()
        self.config = dict(vocab_size=vocab_size, context_length=context_length, d_model=d_model,
                           num_layers=num_layers, num_heads=num_heads, num_kv_heads=num_kv_heads,
                           d_ff=d_ff, rope_theta=rope_theta, norm_eps=norm_eps)
        hd = d_model // num_heads
        self.token_embeddings = nn.Embedding(vocab_size, d_model)
        self.layers = nn.ModuleList()
        for _ in range(num_layers):
            layer = nn.Module()
            layer.ln1 = nn.Module()
            layer.ln1.weight = nn.Parameter(torch.ones(d_model))
            layer.ln2 = nn.Module()
            layer.ln2.weight = nn.Parameter(torch.ones(d_model))
            layer.attn = nn.Module()
            layer.attn.q_proj = nn.Linear(d_model, num_heads * hd, bias=False)
            layer.attn.k_proj = nn.Linear(d_model, num_kv_heads * hd, bias=False)
            layer.attn.v_proj = nn.Linear(d_model, num_kv_heads * hd, bias=False)
            layer.attn.output_proj = nn.Linear(num_heads * hd, d_model, bias=False)
            layer.ffn = nn.Module()
            layer.ffn.w1 = nn.Linear(d_model, d_ff, bias=False)
            layer.ffn.w2 = nn.Linear(d_ff, d_model, bias=False)
            layer.ffn.w3 = nn.Linear(d_model, d_ff, bias=False)
            self.layers.append(layer)
        self.ln_final = nn.Module()
        self.ln_final.weight = nn.Parameter(torch.ones(d_model))
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def _norm(self, x, w):
        eps = self.config["norm_eps"]
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def _rope(self, x):  # x [T, heads, hd]; pairs (2i, 2i+1)
        t, _, hd = x.shape
        freqs = 1.0 / (self.config["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        ang = torch.outer(torch.arange(t, dtype=torch.float64), freqs)
        xc = torch.view_as_complex(x.to(torch.float64).reshape(t, x.shape[1], hd // 2, 2).contiguous())
        rotated = xc * torch.polar(torch.ones_like(ang), ang)[:, None, :]
        return torch.view_as_real(rotated).reshape(x.shape).to(x.dtype)

    def forward(self, tokens: list[int]) -> torch.Tensor:
        c = self.config
        t = len(tokens)
        hd = c["d_model"] // c["num_heads"]
        x = self.token_embeddings(torch.tensor(tokens))
        for layer in self.layers:
            h = self._norm(x, layer.ln1.weight)
            q = self._rope(layer.attn.q_proj(h).view(t, c["num_heads"], hd)).transpose(0, 1)
            k = self._rope(layer.attn.k_proj(h).view(t, c["num_kv_heads"], hd)).transpose(0, 1)
            v = layer.attn.v_proj(h).view(t, c["num_kv_heads"], hd).transpose(0, 1)
            rep = c["num_heads"] // c["num_kv_heads"]
            k = k[:, None].expand(-1, rep, -1, -1).reshape(c["num_heads"], t, hd)  # HF repeat_kv
            v = v[:, None].expand(-1, rep, -1, -1).reshape(c["num_heads"], t, hd)
            s = q @ k.transpose(1, 2) / math.sqrt(hd)
            s = s + torch.full((t, t), float("-inf"), dtype=s.dtype).triu(1)
            a = (torch.softmax(s, -1) @ v).transpose(0, 1).reshape(t, -1)
            x = x + layer.attn.output_proj(a)
            h = self._norm(x, layer.ln2.weight)
            x = x + layer.ffn.w2(F.silu(layer.ffn.w1(h)) * layer.ffn.w3(h))
        return self.lm_head(self._norm(x, self.ln_final.weight))


# ---------------------------------------------------------------------------------------------
# A nanoGPT-style GPT-2 (LayerNorm, learned positions, fused QKV, GELU tanh, tied lm_head).

class Gpt2LM(nn.Module):
    def __init__(self, vocab_size, n_ctx, n_embd, n_layer, n_head):
        super().__init__()
        self.config = dict(vocab_size=vocab_size, block_size=n_ctx, n_embd=n_embd, n_layer=n_layer,
                           n_head=n_head, bias=True)
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(vocab_size, n_embd)
        self.transformer.wpe = nn.Embedding(n_ctx, n_embd)
        self.transformer.h = nn.ModuleList()
        for _ in range(n_layer):
            b = nn.Module()
            b.ln_1 = nn.LayerNorm(n_embd)
            b.attn = nn.Module()
            b.attn.c_attn = nn.Linear(n_embd, 3 * n_embd)
            b.attn.c_proj = nn.Linear(n_embd, n_embd)
            b.ln_2 = nn.LayerNorm(n_embd)
            b.mlp = nn.Module()
            b.mlp.c_fc = nn.Linear(n_embd, 4 * n_embd)
            b.mlp.c_proj = nn.Linear(4 * n_embd, n_embd)
            self.transformer.h.append(b)
        self.transformer.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied, as nanoGPT

    def forward(self, tokens: list[int]) -> torch.Tensor:
        c = self.config
        t = len(tokens)
        d, nh = c["n_embd"], c["n_head"]
        tr = self.transformer
        x = tr.wte(torch.tensor(tokens)) + tr.wpe(torch.arange(t))
        for b in tr.h:
            q, k, v = b.attn.c_attn(b.ln_1(x)).split(d, dim=-1)
            q, k, v = (z.view(t, nh, d // nh).transpose(0, 1) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True) if hasattr(
                F, "scaled_dot_product_attention") else self._attn(q, k, v)
            x = x + b.attn.c_proj(y.transpose(0, 1).reshape(t, d))
            x = x + b.mlp.c_proj(F.gelu(b.mlp.c_fc(b.ln_2(x)), approximate="tanh"))
        return self.lm_head(tr.ln_f(x))

    @staticmethod
    def _attn(q, k, v):
        t = q.shape[1]
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        return torch.softmax(s, -1) @ v


def randomize(model: nn.Module, seed: int) -> nn.Module:
    """Weights with O(1) logits (unit-gain normal init), so argmaxes are well separated."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                fan_in = p.shape[1] if "embeddings" not in name and "wte" not in name and \
                    "wpe" not in name else 1
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))
            else:
                base = 1.0 if name.endswith("weight") else 0.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
    return model


def greedy(model: nn.Module, prompt: list[int], n: int) -> list[int]:
    out = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            out.append(int(torch.argmax(model(out)[-1])))
    return out[len(prompt):]


# ---------------------------------------------------------------------------------------------
# Vocabularies.

CORPUS = "\n".join(
    f"Story {i}: once upon a time a little robot number {i * 7 % 13} liked to count tokens, "
    f"read {i % 5} stories, wrote numbers like {i * 31} and sang songs about matrices and vectors."
    for i in range(200))


def train_sentencepiece(work: str, vocab_size: int = 512) -> str:
    """A tiny byte-fallback BPE SentencePiece model trained on CORPUS; returns its path."""
    import sentencepiece as spm
    corpus = os.path.join(work, "corpus.txt")
    with open(corpus, "w") as f:
        f.write(CORPUS)
    prefix = os.path.join(work, "tok")
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=vocab_size,
                                   model_type="bpe", byte_fallback=True, character_coverage=1.0,
                                   num_threads=1, minloglevel=2, hard_vocab_limit=False)
    return prefix + ".model"


def bytes_to_unicode() -> dict:
    """GPT-2's byte -> printable unicode map (from OpenAI's encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def write_tiny_gpt2_vocab(work: str) -> tuple[str, str, int]:
    """A valid byte-level BPE vocab: 256 byte tokens, a few merges, <|endoftext|>."""
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("o", "n"),
              ("e", "r"), ("Ġ", "s"), ("r", "e"), ("a", "t")]
    for a, b in merges:
        tokens.append(a + b)
    tokens.append("<|endoftext|>")
    enc = os.path.join(work, "encoder.json")
    with open(enc, "w", encoding="utf-8") as f:
        json.dump({t: i for i, t in enumerate(tokens)}, f, ensure_ascii=False)
    bpe = os.path.join(work, "vocab.bpe")
    with open(bpe, "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return enc, bpe, len(tokens)


# ---------------------------------------------------------------------------------------------
# Running things.

def run(cmd: list[str], timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def convert(script: str, args: list[str]) -> subprocess.CompletedProcess:
    return run(["/usr/bin/python3", os.path.join(TRAINING, script)] + args)


def convert_in_process(script: str, args: list[str]) -> subprocess.CompletedProcess:
    """Runs a converter's main() in this process (saves a torch import per call)."""
    import contextlib
    import importlib
    import io
    from convert_common import ConversionError
    module = importlib.import_module(script[:-3] if script.endswith(".py") else script)
    err = io.StringIO()
    old_argv = sys.argv
    sys.argv = [script] + args
    code = 0
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            module.main()
    except ConversionError as e:
        err.write(f"error: {e}\n")
        code = 1
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        sys.argv = old_argv
    return subprocess.CompletedProcess(args, code, "", err.getvalue())


def dump_logits_path(bin_dir: str) -> str:
    return os.path.join(bin_dir, "textgen-dump-logits")


def dump_logits(bin_dir: str, model: str, tokens: list[int], mode: str, out: str,
                extra: list[str] = ()) -> np.ndarray:
    """Runs textgen-dump-logits; returns logits [rows, vocab] (prefill: 1 row, decode: n rows)."""
    cmd = [dump_logits_path(bin_dir), "--model", model, "--tokens", ",".join(map(str, tokens)),
           "--mode", mode, "--out", out] + list(extra)
    r = run(cmd)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return np.fromfile(out, dtype="<f4")
