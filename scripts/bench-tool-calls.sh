#!/usr/bin/env bash
# Tool calls (#28): decode throughput of chat requests that make a named tool call (constrained
# by the tool's schema, the reply parsed into tool_calls) against plain chat requests, through
# the HTTP API with the official `openai` npm client, on the Llama-3.2-1B-shaped random-weight
# file of scripts/bench-constraint.sh (with the Llama 3.1 chat template). One server, 2 threads;
# rounds alternate plain / tool call at 1 and 16 streams, 64 tokens per request; medians.
#   env: BUILD, MODELS (scripts/bench-common.sh), ROUNDS (default 3),
#        LLAMACPP_SRC (llama.cpp source; default BUILD/reference/llamacpp/llama.cpp)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench-common.sh"
rounds=${ROUNDS:-3}
vocab=$S/models/ggml-vocab-llama-bpe.gguf
template=$S/models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja
require_tools "$B/bin/textgen-server" "$B/bin/textgen-make-random-gguf"
[[ -f $vocab ]] || { echo "missing $vocab (tests/reference/llamacpp_source.sh $B/reference/llamacpp)" >&2; exit 1; }
command -v node >/dev/null || { echo "node is needed (scripts/install-deps.sh --test)" >&2; exit 1; }
work=$M/textgen-bench-tools
mkdir -p "$work"
[[ -d $work/node_modules/openai ]] ||
  (cd "$work" && npm install --no-audit --no-fund --no-save --loglevel=error openai@^6)
model=$M/llama1b-shape-tools-Q8_0.gguf
[[ -f $model ]] || "$B/bin/textgen-make-random-gguf" --arch llama --preset tiny --dim 2048 \
  --hidden 8192 --layers 16 --heads 32 --kv-heads 8 --context 4096 --dtype q8_0 \
  --vocab-from "$vocab" --chat-template "$template" --name llama-3.2-1b-shape --out "$model" >/dev/null
log=$(mktemp)
trap 'rm -f "$log"; kill $server 2>/dev/null || true' EXIT
"$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 --max-batch 16 2>"$log" &
server=$!
for _ in $(seq 600); do grep -q http_port= "$log" && break; sleep 0.5; done
port=$(grep -o 'http_port=[0-9]*' "$log" | head -1 | cut -d= -f2)
NODE_PATH=$work/node_modules node "$here/lib/bench_tool_calls.js" "$port" llama-3.2-1b-shape "$rounds"
