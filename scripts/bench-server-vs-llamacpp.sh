#!/usr/bin/env bash
# Decode throughput through the live server (`textgen bench`, N concurrent gRPC streams)
# against llama.cpp's llama-batched-bench S_TG on the same random-weight 110M-shaped file,
# each row paired with a llama.cpp run at the same batch right before it (the machine is
# shared: only same-run ratios mean anything).
# Usage: scripts/bench-server-vs-llamacpp.sh [ROUNDS=1]
#   env: LLAMA_BIN, BUILD, MODELS (scripts/bench-common.sh); ONLY=REGEX runs only the rows
#        whose label matches (e.g. ONLY='^f32, 64').
# Every textgen row starts a fresh server, runs one bench and prints the server's peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-1}
source scripts/bench-common.sh
require_tools "$L/llama-batched-bench" "$B/bin/textgen-server" "$B/bin/textgen"
model=$M/110m-ctx2048-f32.gguf
# A real tokenizer so the server can detokenize; context 2048 so long prompts fit.
[[ -f $model ]] || "$B/bin/textgen-make-random-gguf" --arch llama --preset stories110M --dtype f32 \
  --context 2048 --tokenizer ../shared/models/llama2-tokenizer/tokenizer.bin --out "$model"

# llama_stg B: llama-batched-bench S_TG (tok/s) at batch B, 128-token prompts, 32 generated.
llama_stg() {
  "$L/llama-batched-bench" -m "$model" -t 2 -c 16384 -npp 128 -ntg 32 -npl "$1" 2>/dev/null |
    awk -F'|' -v b="$1" '$4 + 0 == b && $9 + 0 > 0 { gsub(/ /, "", $9); print $9 }'
}

# serve LABEL STREAMS "SERVER FLAGS": llama.cpp at B=STREAMS first, then a fresh textgen
# server driven by STREAMS concurrent streams; prints both and their ratio. Pairing each row
# with its own llama.cpp run right before it keeps the two within a minute of each other
# (on this shared machine either can move 20% between minutes).
serve() {
  local label=$1 streams=$2 flags=$3 log stg
  [[ $label =~ ${ONLY:-.} ]] || return 0
  stg=$(llama_stg "$streams")
  log=$(mktemp)
  # shellcheck disable=SC2086
  "$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 --metrics-listen= \
    --kv-cache-mb 2048 $flags >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do grep -q grpc_port= "$log" && break; sleep 0.2; done
  local port out
  port=$(grep -o 'grpc_port=[0-9]*' "$log" | cut -d= -f2)
  printf '\n==== %s (%s) server: %s\n' "$label" "$(date +%T)" "$flags"
  # One unmeasured round first (--warmup): a fresh server's first requests fault in KV pages.
  out=$("$B/bin/textgen" bench --addr "127.0.0.1:$port" --concurrency "$streams" \
    --requests "$streams" --warmup "$streams" --prompt-tokens 8 --max-tokens 128)
  grep -E 'output tokens|TTFT|ITL|errors' <<<"$out"
  echo "server $(grep VmHWM /proc/$pid/status)"
  kill -TERM "$pid"
  wait "$pid" || true
  rm -f "$log"
  local tps
  tps=$(grep -o '([0-9.]* tok/s' <<<"$out" | tr -d '(' | cut -d' ' -f1)
  awk -v t="$tps" -v l="$stg" -v b="$streams" \
    'BEGIN { printf "llama.cpp f32 S_TG B=%d just before: %s tok/s; textgen/llama.cpp = %.2fx\n", b, l, t / l }'
}

for round in $(seq "$rounds"); do
  printf '\n==== round %s (%s)\n' "$round" "$(date +%T)"
  serve "f32, 1 stream" 1 ""
  serve "f32, 16 streams" 16 ""
  serve "f32, 64 streams" 64 ""
  serve "f32 + f16 KV, 16 streams" 16 "--kv-cache-dtype f16"
  serve "f32 + f16 KV, 64 streams" 64 "--kv-cache-dtype f16"
  serve "bf16, 16 streams" 16 "--bf16"
  serve "bf16, 64 streams" 64 "--bf16"
  serve "bf16 + f16 KV, 16 streams" 16 "--bf16 --kv-cache-dtype f16"
  serve "bf16 + f16 KV, 64 streams" 64 "--bf16 --kv-cache-dtype f16"
done
