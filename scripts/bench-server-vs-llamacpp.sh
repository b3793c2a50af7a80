#!/usr/bin/env bash
# Decode throughput through the live server (`textgen bench`, N concurrent gRPC streams)
# against llama.cpp's llama-batched-bench S_TG on the same random-weight 110M-shaped file,
# interleaved in one run (the machine is shared: only same-run ratios mean anything).
# Usage: scripts/bench-server-vs-llamacpp.sh [ROUNDS=1]
#   env: LLAMA_BIN, BUILD, MODELS (scripts/bench-common.sh)
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

# serve LABEL "SERVER FLAGS" "BENCH FLAGS"
serve() {
  local log
  log=$(mktemp)
  # shellcheck disable=SC2086
  "$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 --metrics-listen= \
    --kv-cache-mb 2048 $2 >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do grep -q grpc_port= "$log" && break; sleep 0.2; done
  local port
  port=$(grep -o 'grpc_port=[0-9]*' "$log" | cut -d= -f2)
  printf '\n==== %s (%s) server: %s bench: %s\n' "$1" "$(date +%T)" "$2" "$3"
  # shellcheck disable=SC2086
  "$B/bin/textgen" bench --addr "127.0.0.1:$port" $3 | grep -E 'output tokens|TTFT|ITL|errors'
  echo "server $(grep VmHWM /proc/$pid/status)"
  kill -TERM "$pid"
  wait "$pid" || true
  rm -f "$log"
}

# One unmeasured round first: a fresh server's first requests fault in their KV pages.
decode() { echo "--concurrency $1 --requests $1 --warmup $1 --prompt-tokens 8 --max-tokens 128"; }
for round in $(seq "$rounds"); do
  printf '\n==== round %s: llama-batched-bench f32 (%s)\n' "$round" "$(date +%T)"
  "$L/llama-batched-bench" -m "$model" -t 2 -c 16384 -npp 128 -ntg 32 -npl 1,16,64 2>/dev/null |
    grep -E '^\|'
  serve "f32, 1 stream" "" "$(decode 1)"
  serve "f32, 16 streams" "" "$(decode 16)"
  serve "f32, 64 streams" "" "$(decode 64)"
  serve "f32 + f16 KV, 16 streams" "--kv-cache-dtype f16" "$(decode 16)"
  serve "f32 + f16 KV, 64 streams" "--kv-cache-dtype f16" "$(decode 64)"
  serve "bf16, 16 streams" "--bf16" "$(decode 16)"
  serve "bf16, 64 streams" "--bf16" "$(decode 64)"
  serve "bf16 + f16 KV, 16 streams" "--bf16 --kv-cache-dtype f16" "$(decode 16)"
  serve "bf16 + f16 KV, 64 streams" "--bf16 --kv-cache-dtype f16" "$(decode 64)"
done
