#!/usr/bin/python3
"""Converters end to end (run in-process), no C++ needed: random PyTorch models -> GGUF (convert_transformer_lm.py,
convert_gpt2.py) -> read back with reference_forward.py; logits must equal the PyTorch model's.

Also checks metadata, tokenizer arrays, tensor dtypes, nanoGPT vs HF Conv1D layouts and the
bias=False nanoGPT variant.
"""

from __future__ import annotations

import os

import numpy as np
import torch

import testlib
from gguf_reader import GGUFFile
from reference_forward import ReferenceModel

TOKENS = [1, 17, 300, 5, 99, 511, 42, 7, 260, 3, 150, 77]


def check_llama(c: testlib.Checker, work: str) -> None:
    import sentencepiece as spm
    tok = testlib.train_sentencepiece(work)
    sp = spm.SentencePieceProcessor(model_file=tok)
    # vocab 520 > 512 pieces: the converter must pad with [PADi] tokens.
    model = testlib.randomize(testlib.LlamaLM(vocab_size=520, context_length=64, d_model=64,
                                              num_layers=2, num_heads=4, num_kv_heads=2, d_ff=96),
                              seed=1).double()
    ckpt = os.path.join(work, "llama.pt")
    torch.save({"state_dict": model.state_dict(), "config": model.config}, ckpt)
    with torch.no_grad():
        want = model(TOKENS)
    for dtype, tol in (("f32", 1e-4), ("f16", None), ("bf16", None), ("q8_0", None)):
        out = os.path.join(work, f"llama_{dtype}.gguf")
        r = testlib.convert_in_process("convert_transformer_lm.py", ["--checkpoint", ckpt, "--tokenizer", tok,
                                                          "--out", out, "--dtype", dtype])
        if not c.check(r.returncode == 0, f"llama {dtype} converts: {r.stderr.strip()[-300:]}"):
            continue
        f = GGUFFile(out)
        types = {n: t for n, t in f.tensor_types.items()}
        expect_type = {"f32": 0, "f16": 1, "bf16": 30, "q8_0": 8}[dtype]
        c.check(types["blk.0.attn_q.weight"] == expect_type and types["blk.0.attn_norm.weight"] == 0
                and types["output_norm.weight"] == 0,
                f"llama {dtype}: matrices stored as {dtype}, norms f32")
        if dtype == "q8_0":  # d_ff 96 rows are 3 blocks; ffn_down rows (96) too; all multiples of 32
            c.check(types["blk.0.ffn_down.weight"] == 8, "llama q8_0: ffn_down stored as q8_0")
        got = ReferenceModel(out).forward(TOKENS)
        if tol is not None:
            diff = testlib.max_abs_diff(got, want)
            c.check(diff < tol, f"llama {dtype}: reference_forward(GGUF) == PyTorch model, max diff "
                                f"{diff:.2e}")
        else:  # lossy: same weights up to rounding -> close logits, same argmax mostly
            diff = testlib.max_abs_diff(got, want)
            scale = float(want.abs().max())
            c.check(diff < 0.1 * scale, f"llama {dtype}: logits within 10% of range "
                                        f"(max diff {diff:.3f}, range {scale:.2f})")
    f = GGUFFile(os.path.join(work, "llama_f32.gguf"))
    md = f.metadata
    expected = {"general.architecture": "llama", "llama.context_length": 64,
                "llama.embedding_length": 64, "llama.block_count": 2,
                "llama.feed_forward_length": 96, "llama.attention.head_count": 4,
                "llama.attention.head_count_kv": 2, "llama.rope.dimension_count": 16,
                "llama.rope.freq_base": 10000.0, "general.file_type": 0,
                "tokenizer.ggml.model": "llama", "tokenizer.ggml.bos_token_id": sp.bos_id(),
                "tokenizer.ggml.eos_token_id": sp.eos_id(),
                "tokenizer.ggml.unknown_token_id": sp.unk_id(),
                "tokenizer.ggml.add_bos_token": True, "general.alignment": 32}
    for k, v in expected.items():
        c.check(md.get(k) == v, f"llama metadata {k} = {v!r} (got {md.get(k)!r})")
    c.check(abs(md["llama.attention.layer_norm_rms_epsilon"] - 1e-5) < 1e-10, "llama rms eps 1e-5")
    tokens, scores, types = (md["tokenizer.ggml.tokens"], md["tokenizer.ggml.scores"],
                             md["tokenizer.ggml.token_type"])
    c.check(len(tokens) == len(scores) == len(types) == 520, "llama vocab arrays padded to 520")
    ok = all(tokens[i] == sp.id_to_piece(i) and abs(scores[i] - sp.get_score(i)) < 1e-6
             for i in range(sp.vocab_size()))
    c.check(ok, "llama tokens/scores equal the SentencePiece pieces/scores")
    byte_ok = all((types[i] == 6) == sp.is_byte(i) and (types[i] == 3) == sp.is_control(i) and
                  (types[i] == 2) == sp.is_unknown(i) for i in range(sp.vocab_size()))
    c.check(byte_ok, "llama token types: byte/control/unknown match SentencePiece")
    n = sp.vocab_size()
    c.check(n < 520 and tokens[n] == f"[PAD{n}]" and types[519] == 5,
            f"llama padding tokens after the {n} pieces are unused [PADi]")
    # A bare state_dict with the hyperparameters as flags converts to the same tensors.
    bare = os.path.join(work, "llama_bare.pt")
    torch.save(model.state_dict(), bare)
    out = os.path.join(work, "llama_bare.gguf")
    r = testlib.convert_in_process("convert_transformer_lm.py", ["--checkpoint", bare, "--tokenizer", tok,
                                                      "--out", out, "--num-heads", "4",
                                                      "--context-length", "64"])
    if c.check(r.returncode == 0, f"bare state_dict + flags converts: {r.stderr.strip()[-300:]}"):
        g = GGUFFile(out)
        c.check(g.metadata["llama.attention.head_count_kv"] == 2, "bare: num_kv_heads inferred 2")
        c.check(all(np.array_equal(g.tensor(n), f.tensor(n)) for n in f.names()),
                "bare: same tensors as the checkpoint with config")


def check_gpt2(c: testlib.Checker, work: str) -> None:
    enc, bpe, n_tok = testlib.write_tiny_gpt2_vocab(work)
    model = testlib.randomize(testlib.Gpt2LM(vocab_size=288, n_ctx=32, n_embd=64, n_layer=2,
                                             n_head=4), seed=2).double()
    tokens = [t % 288 for t in TOKENS]
    with torch.no_grad():
        want = model(tokens)
    sd = model.state_dict()
    nano = os.path.join(work, "nano.pt")
    torch.save({"model": {"_orig_mod." + k: v for k, v in sd.items()},
                "model_args": model.config}, nano)
    # Hugging Face GPT2LMHeadModel layout: Conv1D [in, out] weights plus mask buffers.
    hf = {}
    for k, v in sd.items():
        if any(k.endswith(m) for m in ("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            v = v.t().contiguous()
        hf[k] = v
    for i in range(2):
        hf[f"transformer.h.{i}.attn.bias"] = torch.tril(torch.ones(32, 32)).view(1, 1, 32, 32)
        hf[f"transformer.h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    hf_path = os.path.join(work, "hf.bin")
    torch.save(hf, hf_path)
    outs = {}
    for label, ckpt, extra in (("nanoGPT", nano, []), ("HF Conv1D", hf_path, ["--n-head", "4"])):
        out = os.path.join(work, f"gpt2_{label[:2]}.gguf")
        r = testlib.convert_in_process("convert_gpt2.py", ["--checkpoint", ckpt, "--encoder", enc, "--vocab",
                                                bpe, "--out", out] + extra)
        if not c.check(r.returncode == 0, f"gpt2 {label} converts: {r.stderr.strip()[-300:]}"):
            continue
        outs[label] = out
        diff = testlib.max_abs_diff(ReferenceModel(out).forward(tokens), want)
        c.check(diff < 1e-4, f"gpt2 {label}: reference_forward(GGUF) == PyTorch model, max diff "
                             f"{diff:.2e}")
    if len(outs) == 2:
        a, b = GGUFFile(outs["nanoGPT"]), GGUFFile(outs["HF Conv1D"])
        c.check(sorted(a.names()) == sorted(b.names()) and
                all(np.array_equal(a.tensor(n), b.tensor(n)) for n in a.names()),
                "gpt2: nanoGPT and HF layouts give identical tensors")
        c.check("output.weight" not in a.names(), "gpt2: tied lm_head is not duplicated")
        md = a.metadata
        expected = {"general.architecture": "gpt2", "gpt2.context_length": 32,
                    "gpt2.embedding_length": 64, "gpt2.feed_forward_length": 256,
                    "gpt2.block_count": 2, "gpt2.attention.head_count": 4,
                    "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.eos_token_id": n_tok - 1,
                    "tokenizer.ggml.bos_token_id": n_tok - 1}
        for k, v in expected.items():
            c.check(md.get(k) == v, f"gpt2 metadata {k} = {v!r} (got {md.get(k)!r})")
        c.check(md["tokenizer.ggml.merges"][:2] == ["Ġ t", "h e"] and
                len(md["tokenizer.ggml.merges"]) == 10, "gpt2 merges copied in rank order")
        toks = md["tokenizer.ggml.tokens"]
        c.check(len(toks) == 288 and toks[n_tok - 1] == "<|endoftext|>" and
                md["tokenizer.ggml.token_type"][n_tok - 1] == 3 and toks[-1] == "[PAD287]",
                "gpt2 tokens: encoder order, <|endoftext|> control, padded to 288")
    # nanoGPT bias=False: no biases, no LayerNorm biases -> zero biases in the file.
    nb = testlib.randomize(testlib.Gpt2LM(vocab_size=288, n_ctx=32, n_embd=64, n_layer=1,
                                          n_head=4), seed=3).double()
    with torch.no_grad():
        for name, p in nb.named_parameters():
            if name.endswith(".bias"):
                p.zero_()
        want_nb = nb(tokens)
    sd_nb = {k: v for k, v in nb.state_dict().items() if not k.endswith(".bias")}
    cfg = dict(nb.config, bias=False)
    path = os.path.join(work, "nobias.pt")
    torch.save({"model": sd_nb, "model_args": cfg}, path)
    out = os.path.join(work, "gpt2_nobias.gguf")
    r = testlib.convert_in_process("convert_gpt2.py", ["--checkpoint", path, "--encoder", enc, "--vocab", bpe,
                                            "--out", out, "--dtype", "f16"])
    if c.check(r.returncode == 0, f"gpt2 bias=False f16 converts: {r.stderr.strip()[-300:]}"):
        diff = testlib.max_abs_diff(ReferenceModel(out).forward(tokens), want_nb)
        c.check(diff < 0.05 * float(want_nb.abs().max()),
                f"gpt2 bias=False f16: logits close (max diff {diff:.3f})")
        c.check(GGUFFile(out).tensor_types["blk.0.attn_qkv.weight"] == 1, "gpt2 f16 qkv is f16")


def check_training_model(c: testlib.Checker, work: str) -> None:
    """If model/training/model.py (the bundled model's module) exists, its checkpoint layout must
    convert too: train.py saves {"state_dict", "config", "optimizer", ...}."""
    try:
        import model as training_model
        cfg = training_model.ModelConfig(vocab_size=520, context_length=64, d_model=64,
                                         num_layers=2, num_heads=4, num_kv_heads=2, d_ff=96)
        net = training_model.TransformerLM(cfg)
    except Exception as e:  # absent or changed: that module is not ours to test
        print(f"skip model/training/model.py check: {e}")
        return
    testlib.randomize(net, seed=4).double().eval()
    tok = os.path.join(work, "tok.model")
    ckpt = os.path.join(work, "training_model.pt")
    torch.save({"state_dict": net.state_dict(), "config": cfg.to_dict(), "step": 1}, ckpt)
    out = os.path.join(work, "training_model.gguf")
    r = testlib.convert_in_process("convert_transformer_lm.py",
                                   ["--checkpoint", ckpt, "--tokenizer", tok, "--out", out])
    if c.check(r.returncode == 0, f"model.py TransformerLM converts: {r.stderr.strip()[-300:]}"):
        with torch.no_grad():
            want = net(torch.tensor([TOKENS]))[0]
        diff = testlib.max_abs_diff(ReferenceModel(out).forward(TOKENS), want)
        c.check(diff < 1e-4, f"model.py TransformerLM: reference_forward(GGUF) == its forward, "
                             f"max diff {diff:.2e}")


def check_llama2_vocab(c: testlib.Checker, work: str) -> None:
    """The Llama 2 tokenizer.model converted by us vs llama2.c's tokenizer.bin export of the same
    vocabulary (../shared/models/llama2-tokenizer): same pieces ("▁" as " ") and scores."""
    import struct
    d = os.path.join(testlib.shared_dir(), "models", "llama2-tokenizer")
    if not testlib.require_shared_file(os.path.join(d, "tokenizer.model")):
        return
    net = testlib.LlamaLM(vocab_size=32000, context_length=16, d_model=32, num_layers=1,
                          num_heads=2, num_kv_heads=2, d_ff=32)
    ckpt = os.path.join(work, "llama2vocab.pt")
    torch.save({"state_dict": net.state_dict(), "config": net.config}, ckpt)
    out = os.path.join(work, "llama2vocab.gguf")
    r = testlib.convert_in_process("convert_transformer_lm.py",
                                   ["--checkpoint", ckpt, "--tokenizer",
                                    os.path.join(d, "tokenizer.model"), "--out", out,
                                    "--dtype", "f16"])
    if not c.check(r.returncode == 0, f"Llama 2 vocabulary converts: {r.stderr.strip()[-300:]}"):
        return
    md = GGUFFile(out).metadata
    raw = open(os.path.join(d, "tokenizer.bin"), "rb").read()
    pos = 4  # max_token_length
    bin_tokens, bin_scores = [], []
    while pos < len(raw):
        score, n = struct.unpack_from("<fi", raw, pos)
        bin_tokens.append(raw[pos + 8:pos + 8 + n].decode("utf-8"))
        bin_scores.append(score)
        pos += 8 + n
    ours = [t.replace("\u2581", " ") for t in md["tokenizer.ggml.tokens"]]
    # llama2.c's exporter writes BOS/EOS as "\n<s>\n" / "\n</s>\n".
    bin_tokens[1], bin_tokens[2] = "<s>", "</s>"
    c.check(len(bin_tokens) == 32000 and ours == bin_tokens,
            "Llama 2 pieces equal llama2.c tokenizer.bin (32000 entries)")
    c.check(np.allclose(md["tokenizer.ggml.scores"], bin_scores, atol=0),
            "Llama 2 scores equal llama2.c tokenizer.bin")
    types = md["tokenizer.ggml.token_type"]
    c.check(types[0] == 2 and types[1] == types[2] == 3 and all(t == 6 for t in types[3:259])
            and types[259] == 1, "Llama 2 token types: unk, control, 256 bytes, then normal")


def main() -> None:
    args = testlib.parse_args(__doc__)
    work = testlib.temp_dir(args.keep)
    c = testlib.Checker()
    check_llama(c, work)
    check_training_model(c, work)
    check_llama2_vocab(c, work)
    check_gpt2(c, work)
    c.close(sane_checks=40)


if __name__ == "__main__":
    main()
