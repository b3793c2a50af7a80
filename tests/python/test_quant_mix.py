"""The tensor types of textgen-make-random-gguf's mixes (--dtype q4_k_m, q5_k_m, mxfp4_moe)
against llama-quantize's: the same shape written in f32 and quantized by llama.cpp's
llama_model_quantize (libllama, through llamacpp-ref), both files read by gguf-py, and every
tensor's type compared by name.

The benchmark files stand for the files users download, so their bytes per type must be
llama.cpp's: Q6_K only in the "more bits" layers of attn_v and ffn_down, the output's type on a
tied token_embd, the 8-expert rules (Q8_0 attn_k/attn_v, Q5_K attn_output), the 32-block types
where rows are not whole super-blocks, fused QKV treated as V, MXFP4 only on stacked experts.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--bin", required=True, help="directory with textgen-make-random-gguf")
ap.add_argument("--llamacpp", required=True, help="llama.cpp source (tests/reference/llamacpp_source.sh)")
ap.add_argument("--work", required=True, help="scratch directory")
args = ap.parse_args()

sys.path.insert(0, os.path.join(args.llamacpp, "gguf-py"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402

import testlib  # noqa: E402

LLAMACPP_REF = os.path.join(os.path.dirname(os.path.abspath(args.llamacpp)), "bin", "llamacpp-ref")
FTYPE = {"q4_k_m": 15, "q5_k_m": 17, "mxfp4_moe": 38}  # LLAMA_FTYPE_MOSTLY_*
os.makedirs(args.work, exist_ok=True)

# name, the tool's shape flags, the mixes compared.
COMMON = ["--preset", "tiny", "--heads", "4", "--kv-heads", "2", "--head-dim", "64",
          "--vocab", "512", "--context", "128"]
SHAPES = [
    # 16 layers: every rule of use_more_bits (first and last eighth, every third between).
    ("llama_tied", ["--arch", "llama", "--dim", "256", "--hidden", "512", "--layers", "16"],
     ("q4_k_m", "q5_k_m")),
    ("llama_untied", ["--arch", "llama", "--dim", "256", "--hidden", "512", "--layers", "16",
                      "--untied"], ("q4_k_m", "q5_k_m")),
    # ffn_down rows 384 wide: not whole super-blocks (Q4_K -> Q5_0, Q6_K -> Q8_0).
    ("llama_ragged", ["--arch", "llama", "--dim", "256", "--hidden", "384", "--layers", "8",
                      "--untied"], ("q4_k_m", "q5_k_m")),
    ("phi3_fused_qkv", ["--arch", "phi3", "--dim", "256", "--hidden", "512", "--layers", "8",
                        "--kv-heads", "4", "--untied"], ("q4_k_m",)),
    ("qwen3moe_16_experts", ["--arch", "qwen3moe", "--dim", "256", "--hidden", "512",
                             "--layers", "16", "--experts", "16", "--experts-used", "4",
                             "--expert-hidden", "256", "--untied"], ("q4_k_m", "mxfp4_moe")),
    ("qwen3moe_8_experts", ["--arch", "qwen3moe", "--dim", "256", "--hidden", "512",
                            "--layers", "8", "--experts", "8", "--experts-used", "2",
                            "--expert-hidden", "256", "--untied"], ("q4_k_m", "q5_k_m")),
    ("mixtral_8_experts", ["--arch", "llama", "--dim", "256", "--hidden", "512", "--layers", "8",
                           "--experts", "8", "--experts-used", "2", "--untied"], ("q4_k_m",)),
    ("gptoss", ["--arch", "gpt-oss", "--dim", "256", "--hidden", "256", "--layers", "4",
                "--experts", "8", "--experts-used", "2", "--expert-hidden", "256",
                "--sliding-window", "64", "--untied"], ("mxfp4_moe",)),
    # Gated DeltaNet layers (attn_qkv, attn_gate, ssm_*) between attention layers.
    ("qwen35", ["--arch", "qwen35", "--dim", "256", "--hidden", "512", "--layers", "8",
                "--full-attention-interval", "4", "--ssm-key-heads", "2", "--ssm-value-heads",
                "4", "--untied"], ("q4_k_m", "q5_k_m")),
    ("qwen35moe", ["--arch", "qwen35moe", "--dim", "256", "--hidden", "512", "--layers", "4",
                   "--full-attention-interval", "2", "--ssm-key-heads", "2",
                   "--ssm-value-heads", "4", "--experts", "8", "--experts-used", "2",
                   "--expert-hidden", "256", "--untied"], ("q4_k_m",)),
    # Qwen3-Next's ssm_ba; LFM2's short convolutions with a tied output.
    ("qwen3next", ["--arch", "qwen3next", "--dim", "256", "--hidden", "512", "--layers", "4",
                   "--full-attention-interval", "2", "--ssm-key-heads", "2",
                   "--ssm-value-heads", "4", "--experts", "8", "--experts-used", "2",
                   "--expert-hidden", "256", "--untied"], ("q4_k_m",)),
    ("lfm2", ["--arch", "lfm2", "--dim", "256", "--hidden", "512", "--layers", "6",
              "--full-attention-interval", "3"], ("q4_k_m", "q5_k_m")),
    # Mamba2 layers (ssm_in, ssm_out; ssm_a, ssm_d and ssm_norm kept f32), Nemotron-H's
    # feed-forward-only blocks, the hybrids' mixtures (exp_probs_b, ungated experts).
    ("nemotron_h", ["--arch", "nemotron_h", "--dim", "256", "--hidden", "512", "--layers", "8",
                    "--full-attention-interval", "2", "--untied"], ("q4_k_m", "q5_k_m")),
    ("nemotron_h_moe", ["--arch", "nemotron_h_moe", "--dim", "256", "--hidden", "512",
                        "--layers", "4", "--full-attention-interval", "2", "--experts", "8",
                        "--experts-used", "2", "--expert-hidden", "256", "--untied"],
     ("q4_k_m",)),
    ("granitehybrid", ["--arch", "granitehybrid", "--dim", "256", "--hidden", "512",
                       "--layers", "8", "--full-attention-interval", "4", "--untied"],
     ("q4_k_m",)),
    ("lfm2moe", ["--arch", "lfm2moe", "--dim", "256", "--hidden", "512", "--layers", "6",
                 "--full-attention-interval", "3", "--experts", "8", "--experts-used", "2",
                 "--expert-hidden", "256", "--leading-dense", "1"], ("q4_k_m",)),
]


def make(out: str, flags: list[str], dtype: str) -> None:
    subprocess.run([os.path.join(args.bin, "textgen-make-random-gguf"), *COMMON, *flags,
                    "--dtype", dtype, "--out", out], check=True, stdout=subprocess.DEVNULL)


def types(path: str) -> dict[str, str]:
    return {t.name: t.tensor_type.name for t in gguf.GGUFReader(path).tensors}


c = testlib.Checker()
for name, flags, mixes in SHAPES:
    f32 = os.path.join(args.work, f"{name}-f32.gguf")
    make(f32, flags, "f32")
    for mix in mixes:
        ours_path = os.path.join(args.work, f"{name}-{mix}-textgen.gguf")
        theirs_path = os.path.join(args.work, f"{name}-{mix}-llamacpp.gguf")
        make(ours_path, flags, mix)
        subprocess.run([LLAMACPP_REF, "quantize", f32, theirs_path, str(FTYPE[mix])], check=True)
        ours, theirs = types(ours_path), types(theirs_path)
        differ = sorted(n for n in theirs if ours.get(n) != theirs[n])
        c.check(ours.keys() == theirs.keys() and not differ,
                f"{name} {mix}: {len(theirs)} tensors, types {dict(Counter(theirs.values()))}"
                + "".join(f"\n     {n}: ours {ours.get(n)}, llama.cpp {theirs[n]}"
                          for n in differ[:8]))
        # A mix, not one type: the comparison above would pass on a uniform file otherwise.
        quantized = {t for t in theirs.values() if t not in ("F32", "F16")}
        c.check(len(quantized) >= 2, f"{name} {mix}: llama.cpp's file mixes {sorted(quantized)}")
c.close(sane_checks=2 * sum(len(m) for _, _, m in SHAPES))
