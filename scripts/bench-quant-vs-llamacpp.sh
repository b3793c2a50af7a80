#!/usr/bin/env bash
# Quantized files (#12): textgen against llama.cpp on the same Llama-3.2-1B-shaped random-weight
# files (dim 2048, 16 layers, 32 heads / 8 KV heads, FFN 8192, vocab 128256 from llama.cpp's
# Llama 3 vocabulary, tied embeddings), written by textgen-make-random-gguf in F16 and quantized
# by llama.cpp's own llama-quantize to Q8_0 and Q4_K_M. Every round runs, interleaved:
#   - the DRAM read limit (textgen-bench-quant-matmul BM_ReadBandwidth, 2 threads);
#   - decode, 1 stream: llama-bench tg64 (-p 0) and textgen-bench-engine --prompt 1 --gen 64,
#     with 2 threads and with 1;
#   - prefill 512: llama-bench pp512 and textgen-bench-engine --prompt 512;
#   - the live server, 16 and 64 concurrent streams, 128-token prompts and 128 generated
#     tokens on both sides: output tokens over the whole wall time (llama-batched-bench:
#     B * 128 / T; textgen: a fresh server driven by `textgen bench`), and the server's
#     peak RSS.
# Then prints medians, ratios and each decode rate as a share of the read limit
# (tok/s * file bytes / read GB/s).
# With WITH_8B=1 also a Llama-3.1-8B-shaped Q4_K_M (dim 4096, 32 layers, 32/8 heads, FFN
# 14336, vocab 128256, untied; written as Q8_0, 8.5 GB, then requantized by llama-quantize):
# decode and prefill 64 against llama-bench, and textgen's peak RSS.
# Usage: scripts/bench-quant-vs-llamacpp.sh [ROUNDS=3]
#   env: LLAMA_BIN, BUILD, MODELS (scripts/bench-common.sh); ONLY=REGEX runs only the
#        measurements whose label matches (e.g. ONLY='decode'); SERVER_KV_MB (default 4096).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
source scripts/bench-common.sh
require_tools "$L/llama-bench" "$L/llama-batched-bench" "$L/llama-quantize" \
  "$B/bin/textgen-bench-engine" "$B/bin/textgen-bench-quant-matmul" "$B/bin/textgen-server" \
  "$B/bin/textgen" "$B/bin/textgen-make-random-gguf"
vocab=${LLAMA_VOCAB:-$L/../../models/ggml-vocab-llama-bpe.gguf}
[[ -f $vocab ]] || { echo "missing $vocab (llama.cpp's Llama 3 vocabulary)" >&2; exit 1; }
f16=$M/llama1b-shape-f16.gguf
[[ -f $f16 ]] || "$B/bin/textgen-make-random-gguf" --arch llama --preset tiny --dim 2048 \
  --hidden 8192 --layers 16 --heads 32 --kv-heads 8 --context 4096 --dtype f16 \
  --vocab-from "$vocab" --name llama-3.2-1b-shape --out "$f16"
types=(Q4_K_M Q8_0)
for t in "${types[@]}"; do
  [[ -f $M/llama1b-shape-$t.gguf ]] || "$L/llama-quantize" "$f16" "$M/llama1b-shape-$t.gguf" "$t" >/dev/null 2>&1
done

if [[ ${WITH_8B:-0} == 1 && ! -f $M/llama8b-shape-Q4_K_M.gguf ]]; then
  "$B/bin/textgen-make-random-gguf" --arch llama --preset tiny --dim 4096 --hidden 14336 \
    --layers 32 --heads 32 --kv-heads 8 --context 8192 --dtype q8_0 --vocab-from "$vocab" \
    --untied --name llama-3.1-8b-shape --out "$M/llama8b-shape-Q8_0.gguf"
  "$L/llama-quantize" --allow-requantize "$M/llama8b-shape-Q8_0.gguf" \
    "$M/llama8b-shape-Q4_K_M.gguf" Q4_K_M >/dev/null 2>&1
fi

log=$(mktemp)
# record LABEL VALUE: one measurement, for the summary.
record() { echo "RESULT|$1|$2" | tee -a "$log"; }
want() { [[ $1 =~ ${ONLY:-.} ]]; }

# The most the DRAM gave in 5 reads of 1 GiB (neighbours take their share at random).
read_limit() {
  "$B/bin/textgen-bench-quant-matmul" --benchmark_filter='BM_ReadBandwidth' \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=false 2>/dev/null |
    grep -o 'GB/s=[0-9.]*' | cut -d= -f2 | sort -g | tail -1
}
llama_tg() {  # FILE THREADS
  "$L/llama-bench" -m "$1" -t "$2" -p 0 -n 64 -r 3 2>/dev/null | awk -F'|' '/tg64/ { split($(NF-1), a, "±"); print a[1] + 0 }'
}
llama_pp() {
  "$L/llama-bench" -m "$1" -t 2 -p 512 -n 0 -r 1 2>/dev/null | awk -F'|' '/pp512/ { split($(NF-1), a, "±"); print a[1] + 0 }'
}
textgen_decode() {  # FILE THREADS
  "$B/bin/textgen-bench-engine" --model "$1" --threads "$2" --prompt 1 --gen 64 --batches 1 |
    awk '/decode 1 sequence/ { print $4 }'
}
textgen_prefill() {
  "$B/bin/textgen-bench-engine" --model "$1" --threads 2 --prompt 512 --gen 2 --batches 1 |
    awk '/prefill 512 tokens/ { print $4 }'
}
# llama_served FILE B: llama-batched-bench output tokens over its whole wall time.
llama_served() {
  "$L/llama-batched-bench" -m "$1" -t 2 -c 40000 -npp 128 -ntg 128 -npl "$2" 2>/dev/null |
    awk -F'|' -v b="$2" '$4 + 0 == b && $8 + 0 > 0 { printf "%.2f\n", b * 128 / $10 }'
}
# textgen_served FILE B: a fresh server, `textgen bench` with B streams; prints tok/s and RSS.
textgen_served() {
  local slog pid port out
  slog=$(mktemp)
  "$B/bin/textgen-server" --model "$1" --threads 2 --listen 127.0.0.1:0 --metrics-listen= \
    --kv-cache-mb "${SERVER_KV_MB:-4096}" --max-batch-tokens 512 >"$slog" 2>&1 &
  pid=$!
  for _ in $(seq 600); do grep -q grpc_port= "$slog" && break; sleep 0.2; done
  port=$(grep -o 'grpc_port=[0-9]*' "$slog" | cut -d= -f2)
  out=$("$B/bin/textgen" bench --addr "127.0.0.1:$port" --concurrency "$2" --requests "$2" \
    --warmup "$2" --prompt-tokens 128 --max-tokens 128)
  local rss
  rss=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$pid/status")
  kill -TERM "$pid"
  wait "$pid" || true
  rm -f "$slog"
  echo "$(grep -o '([0-9.]* tok/s' <<<"$out" | tr -d '(' | cut -d' ' -f1) $rss"
}

for round in $(seq "$rounds"); do
  printf '\n==== round %s (%s)\n' "$round" "$(date +%T)"
  record "read GB/s" "$(read_limit)"
  for t in "${types[@]}"; do
    f=$M/llama1b-shape-$t.gguf
    if want "$t decode"; then
      record "$t decode llama.cpp" "$(llama_tg "$f" 2)"
      record "$t decode textgen" "$(textgen_decode "$f" 2)"
    fi
    if want "$t 1-thread"; then
      record "$t 1-thread decode llama.cpp" "$(llama_tg "$f" 1)"
      record "$t 1-thread decode textgen" "$(textgen_decode "$f" 1)"
    fi
    if want "$t prefill"; then
      record "$t prefill512 llama.cpp" "$(llama_pp "$f")"
      record "$t prefill512 textgen" "$(textgen_prefill "$f")"
    fi
    for b in 16 64; do
      want "$t server B=$b" || continue
      record "$t server B=$b llama.cpp" "$(llama_served "$f" "$b")"
      read -r tps rss <<<"$(textgen_served "$f" "$b")"
      record "$t server B=$b textgen" "$tps"
      record "$t server B=$b textgen peak RSS MiB" "$rss"
    done
  done
  if [[ ${WITH_8B:-0} == 1 ]] && want "8B"; then
    f=$M/llama8b-shape-Q4_K_M.gguf
    record "8B_Q4_K_M decode llama.cpp" "$(llama_tg "$f" 2)"
    record "8B_Q4_K_M decode textgen" "$(textgen_decode "$f" 2)"
    record "8B_Q4_K_M prefill64 llama.cpp" "$("$L/llama-bench" -m "$f" -t 2 -p 64 -n 0 -r 1 2>/dev/null |
      awk -F'|' '/pp64/ { split($(NF-1), a, "±"); print a[1] + 0 }')"
    out=$(/usr/bin/time -v "$B/bin/textgen-bench-engine" --model "$f" --threads 2 --prompt 64 \
      --gen 2 --batches 1 2>&1)
    record "8B_Q4_K_M prefill64 textgen" "$(awk '/prefill 64 tokens/ { print $4 }' <<<"$out")"
    record "8B_Q4_K_M textgen peak RSS MiB" \
      "$(awk '/Maximum resident/ { printf "%.0f", $6 / 1024 }' <<<"$out")"
  fi
done

printf '\n==== summary: medians of %s rounds\n' "$rounds"
PYTHONPATH=scripts/lib /usr/bin/python3 - "$log" "$M" <<'EOF'
import os, sys
from bench_results import read_results
values, med = read_results(sys.argv[1])
read = med.get("read GB/s")
print(f"DRAM read limit: {read} GB/s (runs: {values.get('read GB/s')})")
for label in sorted(med):
    if not label.endswith("textgen"):
        continue
    base = label[: -len("textgen")] + "llama.cpp"
    line = f"{label:36s} {med[label]:8.1f}  (runs {values[label]})"
    if base in med and med[base] > 0:
        line += f"  llama.cpp {med[base]:.1f} (runs {values[base]})  ratio {med[label] / med[base]:.2f}x"
    if "decode" in label and read and "1-thread" not in label:
        qtype = label.split()[0]
        name = qtype.replace("8B_", "llama8b-shape-") if qtype.startswith("8B_") else f"llama1b-shape-{qtype}"
        size = os.path.getsize(os.path.join(sys.argv[2], f"{name}.gguf"))
        limit = read * 1e9 / size
        line += f"  read limit {limit:.1f} tok/s: textgen at {100 * med[label] / limit:.0f}%"
    print(line)
for label in sorted(med):
    if "RSS" in label:
        print(f"{label:36s} {med[label]:8.0f} MiB (runs {values[label]})")
EOF
rm -f "$log"
