#!/usr/bin/python3
"""Converter CLIs reject bad checkpoints with a message that names every problem (missing keys,
unexpected keys, shape mismatches with expected vs got), exit non-zero and write no output."""

from __future__ import annotations

import os

import torch

import testlib


def expect_failure(c: testlib.Checker, label: str, script: str, args: list[str], out: str,
                   needles: list[str], subprocess: bool = False) -> None:
    """subprocess=True runs the real CLI (exit code, no traceback); else main() in-process."""
    r = (testlib.convert if subprocess else testlib.convert_in_process)(script, args)
    c.check(r.returncode != 0, f"{label}: exit code {r.returncode} != 0")
    for needle in needles:
        c.check(needle in r.stderr, f"{label}: message contains {needle!r}")
    c.check("Traceback" not in r.stderr, f"{label}: a clean message, not a traceback")
    c.check(not os.path.exists(out), f"{label}: no output file written")
    if any(n not in r.stderr for n in needles):
        print("     stderr was:\n" + r.stderr)


def main() -> None:
    args = testlib.parse_args(__doc__)
    work = testlib.temp_dir(args.keep)
    c = testlib.Checker()
    out = os.path.join(work, "out.gguf")

    tok = testlib.train_sentencepiece(work)
    model = testlib.LlamaLM(vocab_size=512, context_length=32, d_model=64, num_layers=2,
                            num_heads=4, num_kv_heads=2, d_ff=96)
    sd = model.state_dict()
    del sd["layers.1.ffn.w3.weight"]
    sd["layers.0.attn.k_proj.weight"] = torch.zeros(48, 64)
    sd["layers.0.attn.rotary.weight"] = torch.zeros(4)
    bad = os.path.join(work, "bad_llama.pt")
    torch.save({"state_dict": sd, "config": model.config}, bad)
    expect_failure(c, "llama bad state_dict", "convert_transformer_lm.py",
                   ["--checkpoint", bad, "--tokenizer", tok, "--out", out],
                   out, ["missing keys: layers.1.ffn.w3.weight",
                         "unexpected keys: layers.0.attn.rotary.weight",
                         "shape mismatch for layers.0.attn.k_proj.weight: expected [32, 64], "
                         "got [48, 64]"], subprocess=True)

    bare = os.path.join(work, "bare_llama.pt")
    torch.save(model.state_dict(), bare)
    expect_failure(c, "llama bare state_dict without num_heads", "convert_transformer_lm.py",
                   ["--checkpoint", bare, "--tokenizer", tok, "--out", out],
                   out, ["context_length", "num_heads", "--num-heads"])
    expect_failure(c, "llama missing tokenizer", "convert_transformer_lm.py",
                   ["--checkpoint", bare, "--tokenizer", os.path.join(work, "nope.model"),
                    "--out", out, "--num-heads", "4", "--context-length", "32"],
                   out, ["nope.model does not exist"])

    enc, bpe, _ = testlib.write_tiny_gpt2_vocab(work)
    g = testlib.Gpt2LM(vocab_size=300, n_ctx=16, n_embd=64, n_layer=2, n_head=4)
    sd = g.state_dict()
    del sd["transformer.h.1.mlp.c_fc.bias"]
    sd["transformer.wpe.weight"] = torch.zeros(16, 32)
    bad = os.path.join(work, "bad_gpt2.pt")
    torch.save({"model": sd, "model_args": g.config}, bad)
    expect_failure(c, "gpt2 bad state_dict", "convert_gpt2.py",
                   ["--checkpoint", bad, "--encoder", enc, "--vocab", bpe, "--out", out],
                   out, ["missing keys: h.1.mlp.c_fc.bias",
                         "shape mismatch for wpe.weight: expected [16, 64], got [16, 32]"],
                   subprocess=True)
    c.close(sane_checks=20)


if __name__ == "__main__":
    main()
