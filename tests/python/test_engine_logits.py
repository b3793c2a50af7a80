#!/usr/bin/python3
"""The C++ engine (textgen-dump-logits) against PyTorch on small random models converted by our
converters: llama (GQA and multi-query) and gpt2, prefill (last row) and decode (every row)
logits at atol 1e-4 for f32 files, greedy continuations token for token, and lossy dtypes
(f16 / bf16 / q8_0, the latter dequantized and through the quantized kernels) against
reference_forward.py on the same dequantised file.

    test_engine_logits.py --bin BUILD/bin

textgen-dump-logits --model M --tokens 1,2,3 --mode prefill|decode --out F writes little-endian
f32 logits: prefill = one chunk, last position [1, vocab]; decode = one token at a time, [n, vocab].
"""

from __future__ import annotations

import os
import sys

import numpy as np
import torch

import testlib
from reference_forward import ReferenceModel

ATOL = 1e-4


def compare_logits(c: testlib.Checker, label: str, bin_dir: str, gguf: str, tokens: list[int],
                   want: torch.Tensor, atol: float, extra: list[str] = (),
                   min_argmax_agreement: float = 1.0,
                   modes: tuple = ("prefill", "decode")) -> None:
    """want: [n, vocab] float64 logits for `tokens`; the engine's argmax must agree on at least
    `min_argmax_agreement` of the rows."""
    vocab = want.shape[1]
    out = gguf + ".logits"
    for mode in modes:
        try:
            got = testlib.dump_logits(bin_dir, gguf, tokens, mode, out, extra)
        except RuntimeError as e:
            c.check(False, f"{label} {mode}: {e}")
            continue
        rows = 1 if mode == "prefill" else len(tokens)
        if not c.check(got.size == rows * vocab,
                       f"{label} {mode}: {got.size} floats = {rows} x {vocab}"):
            continue
        ref = want[-1:] if mode == "prefill" else want
        got = got.reshape(rows, vocab)
        diff = testlib.max_abs_diff(got, ref)
        c.check(diff <= atol, f"{label} {mode}: max |engine - pytorch| = {diff:.2e} <= {atol:g}")
        agree = float(np.mean(got.argmax(axis=1) == ref.numpy().argmax(axis=1)))
        c.check(agree >= min_argmax_agreement,
                f"{label} {mode}: argmax agrees on {agree:.0%} of rows (>= "
                f"{min_argmax_agreement:.0%})")


def check_greedy(c: testlib.Checker, label: str, bin_dir: str, gguf: str, model, prompt: list[int],
                 n: int) -> None:
    want = testlib.greedy(model, prompt, n)
    out = gguf + ".greedy"
    # Repeated prefill: the engine picks each next token itself (argmax of its last row).
    seq = list(prompt)
    try:
        for _ in range(min(n, 3)):
            seq.append(int(np.argmax(testlib.dump_logits(bin_dir, gguf, seq, "prefill", out))))
        c.check(seq[len(prompt):] == want[:len(seq) - len(prompt)],
                f"{label}: engine greedy (repeated prefill) {seq[len(prompt):]} == pytorch "
                f"{want[:len(seq) - len(prompt)]}")
        # Decode mode over prompt + continuation: the argmax at each position is the next token.
        full = prompt + want[:-1]
        rows = testlib.dump_logits(bin_dir, gguf, full, "decode", out).reshape(len(full), -1)
        got = [int(t) for t in rows.argmax(axis=1)[len(prompt) - 1:]]
        c.check(got == want, f"{label}: engine greedy over {n} decode steps == pytorch {want}")
    except RuntimeError as e:
        c.check(False, f"{label} greedy: {e}")


def main() -> None:
    args = testlib.parse_args(__doc__)
    binary = testlib.dump_logits_path(args.bin)
    if not os.path.exists(binary):
        print(f"FAIL: {binary} does not exist. Build the engine's textgen-dump-logits target "
              f"(cmake --build <dir> --target textgen-dump-logits) and pass --bin <dir>/bin.")
        sys.exit(1)
    work = testlib.temp_dir(args.keep)
    c = testlib.Checker()
    torch.manual_seed(0)
    tok = testlib.train_sentencepiece(work)
    tokens = [1, 17, 300, 5, 99, 511, 42, 7, 260, 3, 150, 77]

    llamas = {
        "llama GQA (4 heads / 2 kv)": dict(vocab_size=520, context_length=64, d_model=64,
                                           num_layers=2, num_heads=4, num_kv_heads=2, d_ff=96),
        "llama MQA (6 heads / 1 kv)": dict(vocab_size=512, context_length=64, d_model=96,
                                           num_layers=2, num_heads=6, num_kv_heads=1, d_ff=160,
                                           rope_theta=500000.0, norm_eps=1e-6),
    }
    for seed, (label, cfg) in enumerate(llamas.items()):
        model = testlib.randomize(testlib.LlamaLM(**cfg), seed=10 + seed).double()
        ckpt = os.path.join(work, f"llama{seed}.pt")
        torch.save({"state_dict": model.state_dict(), "config": model.config}, ckpt)
        gguf = os.path.join(work, f"llama{seed}.gguf")
        r = testlib.convert_in_process("convert_transformer_lm.py",
                                       ["--checkpoint", ckpt, "--tokenizer", tok, "--out", gguf])
        if not c.check(r.returncode == 0, f"{label}: converts {r.stderr.strip()[-200:]}"):
            continue
        with torch.no_grad():
            want = model(tokens)
        compare_logits(c, label, args.bin, gguf, tokens, want, ATOL)
        check_greedy(c, label, args.bin, gguf, model, [1, 40, 41, 300], 20)
        if seed == 0:
            # bf16 compute (--bf16): weights and activations rounded to 8 mantissa bits.
            compare_logits(c, f"{label} --bf16", args.bin, gguf, tokens, want,
                           0.02 * float(want.abs().max()), extra=["--bf16"],
                           min_argmax_agreement=0.75)
            for dtype in ("f16", "bf16", "q8_0"):
                lossy = os.path.join(work, f"llama_{dtype}.gguf")
                r = testlib.convert_in_process("convert_transformer_lm.py",
                                               ["--checkpoint", ckpt, "--tokenizer", tok,
                                                "--out", lossy, "--dtype", dtype])
                if not c.check(r.returncode == 0, f"llama {dtype}: converts"):
                    continue
                # Same (rounded) weights in f64. The engine may also round activations for
                # these files, so the bound is relative to the logit range: small enough to
                # catch a wrong block scale or layout, whose errors are of the order of the range.
                ref = ReferenceModel(lossy).forward(tokens)
                tol = max(ATOL, 0.01 * float(ref.abs().max()))
                if dtype == "q8_0":
                    # Dequantized once: only f32 rounding differs from the reference.
                    compare_logits(c, "llama q8_0 --dequantize vs reference_forward", args.bin,
                                   lossy, tokens, ref, tol, extra=["--dequantize"],
                                   min_argmax_agreement=0.75, modes=("decode",))
                    # The quantized kernels also round activations to 8 bits per 32 values (as
                    # llama.cpp does); at dim 64 that measured 1.4% of the logit range.
                    tol = 0.03 * float(ref.abs().max())
                compare_logits(c, f"llama {dtype} vs reference_forward", args.bin, lossy, tokens,
                               ref, tol, min_argmax_agreement=0.75, modes=("decode",))

    enc, bpe, _ = testlib.write_tiny_gpt2_vocab(work)
    model = testlib.randomize(testlib.Gpt2LM(vocab_size=288, n_ctx=48, n_embd=64, n_layer=2,
                                             n_head=4), seed=20).double()
    ckpt = os.path.join(work, "gpt2.pt")
    torch.save({"model": model.state_dict(), "model_args": model.config}, ckpt)
    g_tokens = [t % 288 for t in tokens]
    # An untied variant (separate random lm_head): greedy on a tied random GPT-2 degenerates into
    # repeating one token, so the untied one is the better greedy test.
    untied = testlib.randomize(testlib.Gpt2LM(vocab_size=288, n_ctx=48, n_embd=64, n_layer=2,
                                              n_head=4), seed=20).double()
    untied.lm_head = torch.nn.Linear(64, 288, bias=False).double()
    with torch.no_grad():
        untied.lm_head.weight.copy_(torch.randn(288, 64, generator=torch.Generator().manual_seed(5)))
    untied_ckpt = os.path.join(work, "gpt2_untied.pt")
    torch.save({"model": untied.state_dict(), "model_args": untied.config}, untied_ckpt)
    for i, (label, path, net, extra) in enumerate((
            ("gpt2 (tied output)", ckpt, model, []),
            ("gpt2 (tied, explicit output.weight)", ckpt, model, ["--write-tied-output"]),
            ("gpt2 (untied lm_head)", untied_ckpt, untied, []))):
        gguf = os.path.join(work, f"gpt2_{i}.gguf")
        r = testlib.convert_in_process("convert_gpt2.py", ["--checkpoint", path, "--encoder", enc,
                                                           "--vocab", bpe, "--out", gguf] + extra)
        if not c.check(r.returncode == 0, f"{label}: converts {r.stderr.strip()[-200:]}"):
            continue
        with torch.no_grad():
            want = net(g_tokens)
        compare_logits(c, label, args.bin, gguf, g_tokens, want, ATOL,
                       modes=("decode",) if i == 1 else ("prefill", "decode"))
        if i == 2:
            check_greedy(c, label, args.bin, gguf, net, [266, 40, 41, 100], 20)
    c.close(sane_checks=20)


if __name__ == "__main__":
    main()
