#!/usr/bin/env bash
# Mixture of experts (#32) and hybrid recurrent models (#59): textgen against llama.cpp on the
# same random-weight file in a real model's shape, written by textgen-make-random-gguf (SHAPE):
#   qwen3-30b-a3b (default): qwen3moe, dim 2048, 48 layers, 32 heads / 4 KV heads of 128, 128
#     experts of width 768 of which 8 run per token, vocab 151936 from llama.cpp's Qwen 2
#     vocabulary, untied output, each tensor in the type llama-quantize's Q4_K_M gives it (Q4_K;
#     Q6_K for the output and for attn_v and ffn_down_exps in 24 of the 48 layers; the router
#     f32; tests/python/test_quant_mix.py checks the mix against llama_model_quantize): 17 GB;
#   gpt-oss-20b: gpt-oss, dim 2880, 24 layers, 64 heads / 8 KV heads of 64, 32 experts of width
#     2880 of which 4 run per token, every other layer sliding over 128, vocab 201088, untied, in
#     llama.cpp's MXFP4_MOE mix (experts MXFP4, the rest Q8_0; router and biases f32): 12 GB;
#   qwen35-2b: qwen35 (Qwen3.5-2B's dimensions), dim 2048, 24 layers of which every 4th attends
#     (8 heads / 2 KV heads of 256, a quarter rotated, output-gated) and the rest are Gated
#     DeltaNet (16 key and 16 value heads of 128, a 4-wide convolution), feed-forward 6144,
#     vocab 248320, output tied, in llama-quantize's Q4_K_M mix: 1.2 GB;
#   qwen35-0.8b: the same with dim 1024 and feed-forward 3584: 0.5 GB;
#   qwen35-35b-a3b: qwen35moe (Qwen3.5-35B-A3B's dimensions), dim 2048, 40 layers of which every
#     4th attends (16 heads / 2 KV heads of 256, a quarter rotated, output-gated) and the rest
#     are Gated DeltaNet (16 key and 32 value heads of 128), 256 experts of width 512 of which 8
#     run per token plus a gated shared expert of 512, vocab 248320, output tied, in
#     llama-quantize's Q4_K_M mix: about 20 GB whole, so LAYERS (default 12) cuts it to fit;
#   granite-4.0-h-1b: granitehybrid (Granite-4.0-H-1B's dimensions), dim 1536, 40 layers of
#     which every 10th attends (12 heads / 4 KV heads of 128, no positions) and the rest are
#     Mamba2 (48 heads of 64, state 128, one group, a 4-wide convolution), a SwiGLU of 4096 in
#     every block, vocab 100352, output tied, in llama-quantize's Q4_K_M mix: 0.9 GB.
# Every round runs, interleaved:
#   - the DRAM read limit (textgen-bench-quant-matmul BM_ReadBandwidth, 2 threads);
#   - decode, 1 stream: llama-bench tg64 (-p 0) and textgen-bench-engine --prompt 1 --gen 64
#     (with the share of its anonymous memory the kernel backs with 2 MiB pages after loading,
#     and --read-probe: the read rate on its own threads just before and after its decode);
#   - prefill P (PREFILL, default 128): llama-bench ppP and textgen-bench-engine --prompt P;
#   - decode, 16 streams after P-token prompts: llama-batched-bench's S_TG (generated tokens
#     over the decode time) and textgen-bench-engine's decode batch 16 (the same);
#   - textgen's peak RSS.
# Then prints medians, ratios, and the 1-stream decode rates as a share of the read limit for
# the bytes a token reads: every tensor but the stacked experts and the token embedding, plus
# experts_used / experts of the experts (the active ones), plus one embedding row (a tied
# embedding is the LM head too: read whole).
# Usage: [SHAPE=qwen3-30b-a3b|gpt-oss-20b|qwen35-2b|qwen35-0.8b|qwen35-35b-a3b|granite-4.0-h-1b]
#        [PREFILL=128]
#        scripts/bench-moe-vs-llamacpp.sh [ROUNDS=3]
#   env: LLAMA_BIN, BUILD, MODELS (scripts/bench-common.sh); LAYERS (default: the model's; fewer
#        keeps each layer's shape and makes a smaller file).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
shape=${SHAPE:-qwen3-30b-a3b}
prefill=${PREFILL:-128}
source scripts/bench-common.sh
require_tools "$L/llama-bench" "$L/llama-batched-bench" "$B/bin/textgen-bench-engine" \
  "$B/bin/textgen-bench-quant-matmul" "$B/bin/textgen-make-random-gguf"
case $shape in
  qwen3-30b-a3b)
    layers=${LAYERS:-48}
    vocab=$S/models/ggml-vocab-qwen2.gguf
    [[ -f $vocab ]] || { echo "missing $vocab (tests/reference/llamacpp_source.sh $B/reference/llamacpp)" >&2; exit 1; }
    suffix=$([[ $layers == 48 ]] && echo "" || echo "-${layers}l")
    f=$M/qwen3moe-30b-a3b-shape$suffix-q4_k_m-r$RANDOM_GGUF_REV.gguf
    make=(--arch qwen3moe --preset tiny --dim 2048 --hidden 6144 --layers "$layers" --heads 32
      --kv-heads 4 --head-dim 128 --experts 128 --experts-used 8 --expert-hidden 768
      --context 4096 --dtype q4_k_m --untied --vocab-from "$vocab" --name qwen3-30b-a3b-shape) ;;
  gpt-oss-20b)
    layers=${LAYERS:-24}
    suffix=$([[ $layers == 24 ]] && echo "" || echo "-${layers}l")
    f=$M/gpt-oss-20b-shape$suffix-mxfp4_moe-r$RANDOM_GGUF_REV.gguf
    make=(--arch gpt-oss --preset tiny --dim 2880 --hidden 2880 --layers "$layers" --heads 64
      --kv-heads 8 --head-dim 64 --experts 32 --experts-used 4 --expert-hidden 2880
      --sliding-window 128 --context 4096 --vocab 201088 --dtype mxfp4_moe --untied
      --name gpt-oss-20b-shape) ;;
  qwen35-2b|qwen35-0.8b)
    layers=${LAYERS:-24}
    suffix=$([[ $layers == 24 ]] && echo "" || echo "-${layers}l")
    dims=(--dim 2048 --hidden 6144)
    [[ $shape == qwen35-0.8b ]] && dims=(--dim 1024 --hidden 3584)
    f=$M/$shape-shape$suffix-q4_k_m-r$RANDOM_GGUF_REV.gguf
    make=(--arch qwen35 --preset tiny "${dims[@]}" --layers "$layers" --heads 8 --kv-heads 2
      --head-dim 256 --ssm-key-heads 16 --ssm-value-heads 16 --ssm-head-dim 128
      --full-attention-interval 4 --vocab 248320 --context 8192 --dtype q4_k_m
      --name "$shape-shape") ;;
  qwen35-35b-a3b)
    layers=${LAYERS:-12}
    f=$M/$shape-shape-${layers}l-q4_k_m-r$RANDOM_GGUF_REV.gguf
    make=(--arch qwen35moe --preset tiny --dim 2048 --hidden 512 --layers "$layers" --heads 16
      --kv-heads 2 --head-dim 256 --ssm-key-heads 16 --ssm-value-heads 32 --ssm-head-dim 128
      --full-attention-interval 4 --experts 256 --experts-used 8 --expert-hidden 512
      --vocab 248320 --context 8192 --dtype q4_k_m --name "$shape-shape") ;;
  granite-4.0-h-1b)
    layers=${LAYERS:-40}
    suffix=$([[ $layers == 40 ]] && echo "" || echo "-${layers}l")
    f=$M/$shape-shape$suffix-q4_k_m-r$RANDOM_GGUF_REV.gguf
    make=(--arch granitehybrid --preset tiny --dim 1536 --hidden 4096 --layers "$layers"
      --heads 12 --kv-heads 4 --head-dim 128 --mamba-inner 3072 --mamba-heads 48
      --mamba-state 128 --mamba-groups 1 --full-attention-interval 10 --vocab 100352
      --context 8192 --dtype q4_k_m --name "$shape-shape") ;;
  *) echo "SHAPE must be qwen3-30b-a3b, gpt-oss-20b, qwen35-2b, qwen35-0.8b, qwen35-35b-a3b or" \
      "granite-4.0-h-1b" >&2
    exit 1 ;;
esac
[[ -f $f ]] || "$B/bin/textgen-make-random-gguf" "${make[@]}" --out "$f"

log=$(mktemp)
record() { echo "RESULT|$1|$2" | tee -a "$log"; }
read_limit() {
  "$B/bin/textgen-bench-quant-matmul" --benchmark_filter='BM_ReadBandwidth' \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=false 2>/dev/null |
    grep -o 'GB/s=[0-9.]*' | cut -d= -f2 | sort -g | tail -1
}
# llama.cpp maps the file and reads an expert from it the first time a token routes there;
# llama-bench warms up with one token, so pages textgen's run pushed out of the page cache
# (its packed copy takes as much memory again) would be read from disk inside llama.cpp's
# timed tokens. Every llama.cpp run starts with the whole file in the page cache, as in a
# server that has been running.
cache_file() { cat "$f" >/dev/null; }
llama_bench() {  # -p P -n N: prints the t/s of the one test
  cache_file
  "$L/llama-bench" -m "$f" -t 2 "$@" -r 3 2>/dev/null | awk -F'|' '/(pp|tg)[0-9]/ { split($(NF-1), a, "±"); print a[1] + 0 }'
}
# llama.cpp's repacked (AMX) weights crash its prefill on qwen35 here (ggml_backend_amx_mul_mat,
# any prompt length; its decode runs): for hybrids prompts go through llama-batched-bench with
# --no-repack, which llama-bench has no flag for.
no_repack=()
[[ $shape == qwen35* ]] && no_repack=(--no-repack)
llama_batched16() {
  cache_file
  "$L/llama-batched-bench" -m "$f" -t 2 -c 16384 -npp "$prefill" -ntg 64 -npl 16 \
    "${no_repack[@]}" 2>/dev/null | awk -F'|' '$4 + 0 == 16 && $8 + 0 > 0 { print $9 + 0 }'
}
llama_prefill() {
  if [[ ${#no_repack[@]} -eq 0 ]]; then
    llama_bench -p "$prefill" -n 0
    return
  fi
  cache_file
  "$L/llama-batched-bench" -m "$f" -t 2 -c 4096 -npp "$prefill" -ntg 1 -npl 1 "${no_repack[@]}" \
    2>/dev/null | awk -F'|' '$4 + 0 == 1 && $7 + 0 > 0 { print $7 + 0 }'
}

for round in $(seq "$rounds"); do
  printf '\n==== round %s (%s)\n' "$round" "$(date +%T)"
  record "read GB/s" "$(read_limit)"
  record "decode llama.cpp" "$(llama_bench -p 0 -n 64)"
  out=$("$B/bin/textgen-bench-engine" --model "$f" --threads 2 --prompt 1 --gen 64 --batches 1 \
    --read-probe)
  record "decode textgen" "$(awk '/decode 1 sequence/ { print $4 }' <<<"$out")"
  record "read GB/s around textgen decode" \
    "$(awk '/read rate around it/ { printf "%.1f", ($5 + $8) / 2 }' <<<"$out")"
  record "decode textgen 2 MiB pages %" "$(awk '/2 MiB pages/ { printf "%.0f", 100 * $6 / $8 }' <<<"$out")"
  record "prefill llama.cpp" "$(llama_prefill)"
  record "decode16 llama.cpp" "$(llama_batched16)"
  out=$("$B/bin/textgen-bench-engine" --model "$f" --threads 2 --prompt "$prefill" --gen 64 \
    --batches 16)
  record "prefill textgen" "$(awk '/prefill [0-9]+ tokens/ { print $4 }' <<<"$out")"
  record "decode16 textgen" "$(awk '/decode batch  16/ { print $4 }' <<<"$out")"
  record "textgen peak RSS MiB" "$(awk '/peak RSS/ { print $3 }' <<<"$out")"
done

printf '\n==== summary: medians of %s rounds (%s)\n' "$rounds" "$f"
PYTHONPATH=$S/gguf-py:scripts/lib /usr/bin/python3 - "$log" "$f" <<'EOF'
import os, statistics, sys
import gguf
from bench_results import read_results
values, med = read_results(sys.argv[1])
reader = gguf.GGUFReader(sys.argv[2])
field = lambda key: reader.fields[key].parts[-1]
arch = bytes(field("general.architecture")).decode()
has = lambda key: key in reader.fields
experts = int(field(arch + ".expert_count")[0]) if has(arch + ".expert_count") else 0
used = int(field(arch + ".expert_used_count")[0]) if experts else 0
tied = "output.weight" not in {t.name for t in reader.tensors}
active = 0
for t in reader.tensors:
    if t.name.endswith(("_exps.weight", "_exps.bias")):
        active += t.n_bytes * used / experts
    elif t.name == "token_embd.weight" and not tied:
        active += t.n_bytes / int(t.shape[-1])
    else:
        active += t.n_bytes
read = med["read GB/s"]
experts_note = f"{used} of {experts} experts" if experts else "dense"
print(f"file {os.path.getsize(sys.argv[2]) / 2**30:.2f} GiB; a token reads {active / 1e9:.3f} GB "
      f"({experts_note}); DRAM read limit {read} GB/s (runs {values['read GB/s']}): "
      f"{read * 1e9 / active:.1f} tok/s")
for what in ("decode", "prefill", "decode16"):
    ours, theirs = med[f"{what} textgen"], med[f"{what} llama.cpp"]
    line = (f"{what:10s} textgen {ours:7.1f} (runs {values[what + ' textgen']})  llama.cpp "
            f"{theirs:7.1f} (runs {values[what + ' llama.cpp']})  ratio {ours / theirs:.2f}x")
    if what == "decode":
        limit = read * 1e9 / active
        line += f"  textgen at {100 * ours / limit:.0f}% of the read limit, llama.cpp {100 * theirs / limit:.0f}%"
        line += f"\n{'':10s} textgen's memory on 2 MiB pages after load: {values['decode textgen 2 MiB pages %']} %"
        # The host's read rate moves 2x within minutes: each round's decode against the rate
        # measured on textgen's own threads just before and after it.
        shares = [100 * rate * active / (around * 1e9) for rate, around in
                  zip(values["decode textgen"], values["read GB/s around textgen decode"])]
        line += (f"\n{'':10s} against the read rate around textgen's decode (runs "
                 f"{values['read GB/s around textgen decode']} GB/s): per round "
                 f"{[round(x) for x in shares]} %, median {statistics.median(shares):.0f}%")
    print(line)
print(f"textgen peak RSS {med['textgen peak RSS MiB']:.0f} MiB (runs {values['textgen peak RSS MiB']}), "
      f"file {os.path.getsize(sys.argv[2]) / 2**20:.0f} MiB")
EOF
rm -f "$log"
