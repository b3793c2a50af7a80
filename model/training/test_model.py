#!/usr/bin/python3
"""Self-check for model.py (no pytest): /usr/bin/python3 model/training/test_model.py; exits 1 on failure.

1. RoPE rotates adjacent pairs: apply_rope equals multiplying the complex number x[2i] + j*x[2i+1] by
   exp(j * pos * theta^(-2i/d)), computed independently with Python's cmath.
2. Causal mask: changing a future token leaves every earlier position's logits unchanged (and does change the
   changed position's own logits, so the check is not vacuous).
3. State-dict key names match the contract with convert_transformer_lm.py.
4. Grouped-query attention: a GQA model equals the MHA model whose K/V heads are the repeated GQA heads.
"""

from __future__ import annotations

import cmath
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import ModelConfig, TransformerLM, apply_rope, rope_cos_sin  # noqa: E402

FAILURES: list[str] = []


def check(cond: bool, msg: str) -> None:
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        FAILURES.append(msg)


def test_rope_matches_complex() -> None:
    head_dim, seq, theta = 8, 11, 10000.0
    torch.manual_seed(0)
    x = torch.randn(seq, head_dim, dtype=torch.float64)
    cos, sin = rope_cos_sin(head_dim, seq, theta)
    got = apply_rope(x, cos.double(), sin.double())
    max_err = 0.0
    for pos in range(seq):
        for i in range(head_dim // 2):
            z = complex(float(x[pos, 2 * i]), float(x[pos, 2 * i + 1]))
            w = z * cmath.exp(1j * pos * theta ** (-2.0 * i / head_dim))
            max_err = max(max_err, abs(w.real - float(got[pos, 2 * i])), abs(w.imag - float(got[pos, 2 * i + 1])))
    # cos/sin tables are stored as f32, so agreement is to f32 precision.
    check(max_err < 1e-5, f"RoPE adjacent-pair rotation matches complex multiply (max err {max_err:.2e})")
    check(torch.equal(got[0], x[0]), "RoPE leaves position 0 unchanged")


def small_model(num_kv_heads: int = 4, seed: int = 0) -> TransformerLM:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=64, context_length=16, d_model=32, num_layers=2, num_heads=4,
                      num_kv_heads=num_kv_heads, d_ff=48)
    return TransformerLM(cfg).eval()


def test_causal_mask() -> None:
    model = small_model()
    tokens = torch.randint(0, 64, (1, 12), generator=torch.Generator().manual_seed(1))
    changed = tokens.clone()
    changed[0, 7] = (changed[0, 7] + 5) % 64
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    check(torch.equal(a[0, :7], b[0, :7]), "changing token 7 leaves logits of positions 0..6 bit-identical")
    check(not torch.allclose(a[0, 7], b[0, 7]), "changing token 7 changes logits at position 7")


def test_state_dict_keys() -> None:
    model = small_model()
    keys = set(model.state_dict().keys())
    expected = {"token_embeddings.weight", "ln_final.weight", "lm_head.weight"}
    for i in range(2):
        for k in ("attn.q_proj", "attn.k_proj", "attn.v_proj", "attn.output_proj", "ln1", "ln2",
                  "ffn.w1", "ffn.w2", "ffn.w3"):
            expected.add(f"layers.{i}.{k}.weight")
    check(keys == expected, f"state_dict keys match the converter contract (extra {sorted(keys - expected)}, "
                            f"missing {sorted(expected - keys)})")
    sd = model.state_dict()
    check(tuple(sd["layers.0.ffn.w1.weight"].shape) == (48, 32) and tuple(sd["layers.0.ffn.w2.weight"].shape)
          == (32, 48), "Linear weights are [out, in]")


def test_gqa_equals_repeated_mha() -> None:
    gqa = small_model(num_kv_heads=2, seed=3)
    mha = small_model(num_kv_heads=4, seed=4)
    sd = gqa.state_dict()
    head_dim = 8
    for i in range(2):
        for name in ("k_proj", "v_proj"):
            w = sd[f"layers.{i}.attn.{name}.weight"].view(2, head_dim, 32)
            # Query head h reads kv head h // 2, so kv head g is repeated for query heads 2g and 2g+1.
            sd[f"layers.{i}.attn.{name}.weight"] = w.repeat_interleave(2, dim=0).reshape(4 * head_dim, 32)
    mha.load_state_dict(sd)
    tokens = torch.randint(0, 64, (2, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        diff = float((gqa(tokens) - mha(tokens)).abs().max())
    check(diff < 1e-5, f"GQA (2 kv heads) equals MHA with repeated kv heads (max diff {diff:.2e})")


def main() -> int:
    torch.set_num_threads(1)
    test_rope_matches_complex()
    test_causal_mask()
    test_state_dict_keys()
    test_gqa_equals_repeated_mha()
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
