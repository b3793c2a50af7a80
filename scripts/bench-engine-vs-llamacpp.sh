#!/usr/bin/env bash
# The engine against llama.cpp on the same random-weight 110M-shaped GGUF files, interleaved
# in one run (the machine is shared: only same-run ratios mean anything).
# Usage: scripts/bench-engine-vs-llamacpp.sh [ROUNDS=2]
#   env: LLAMA_BIN, BUILD, MODELS (scripts/bench-common.sh)
# Prints each program's own output; docs/engine-benchmarks.md tabulates one run.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
source scripts/bench-common.sh
require_tools "$L/llama-bench" "$L/llama-batched-bench" "$B/bin/textgen-bench-engine"
for dtype in f32 bf16; do
  f=$M/110m-$dtype.gguf
  [[ -f $f ]] || "$B/bin/textgen-make-random-gguf" --arch llama --preset stories110M --dtype "$dtype" --out "$f"
done

section() { printf '\n==== %s (%s)\n' "$1" "$(date +%T)"; }
for round in $(seq "$rounds"); do
  section "round $round: llama-bench f32"
  "$L/llama-bench" -m "$M/110m-f32.gguf" -t 2 -p 128 -n 64 -r 3 2>/dev/null | grep -E 'pp128|tg64'
  section "round $round: textgen-bench-engine f32"
  "$B/bin/textgen-bench-engine" --model "$M/110m-f32.gguf" --threads 2 --prompt 128 --gen 64 \
    --batches 1,4,16,64
  section "round $round: textgen-bench-engine f32, f16 KV cache"
  "$B/bin/textgen-bench-engine" --model "$M/110m-f32.gguf" --threads 2 --prompt 128 --gen 64 \
    --batches 16,64 --kv-f16
  section "round $round: llama-bench bf16"
  "$L/llama-bench" -m "$M/110m-bf16.gguf" -t 2 -p 128 -n 64 -r 3 2>/dev/null | grep -E 'pp128|tg64'
  section "round $round: textgen-bench-engine bf16"
  "$B/bin/textgen-bench-engine" --model "$M/110m-f32.gguf" --bf16 --threads 2 --prompt 128 \
    --gen 64 --batches 1,4,16,64
  section "round $round: textgen-bench-engine bf16, f16 KV cache"
  "$B/bin/textgen-bench-engine" --model "$M/110m-f32.gguf" --bf16 --threads 2 --prompt 128 \
    --gen 64 --batches 16,64 --kv-f16
  # Decode from an empty context, like llama-bench's tg64 (positions 0-63).
  for dtype in f32 bf16; do
    section "round $round: llama-bench $dtype, decode from an empty context"
    "$L/llama-bench" -m "$M/110m-$dtype.gguf" -t 2 -p 0 -n 64 -r 3 2>/dev/null | grep -E 'tg64'
    flag=$([[ $dtype == bf16 ]] && echo --bf16 || true)
    for kv in "" --kv-f16; do
      section "round $round: textgen-bench-engine $dtype $kv, decode from an empty context"
      # shellcheck disable=SC2086
      "$B/bin/textgen-bench-engine" --model "$M/110m-f32.gguf" $flag $kv --threads 2 --prompt 1 \
        --gen 64 --batches 1 | grep 'decode 1 sequence'
    done
  done
  section "round $round: llama-batched-bench f32"
  "$L/llama-batched-bench" -m "$M/110m-f32.gguf" -t 2 -c 16384 -npp 128 -ntg 64 \
    -npl 1,4,16,64 2>/dev/null | grep -E '^\|'
  section "round $round: llama-batched-bench bf16"
  "$L/llama-batched-bench" -m "$M/110m-bf16.gguf" -t 2 -c 16384 -npp 128 -ntg 64 \
    -npl 1,16,64 2>/dev/null | grep -E '^\|'
done
