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
require_tools "$B/bin/textgen-server"
modules=$(openai_node_modules textgen-bench-tools)
model=$(llama1b_chat_model q8_0 4096)
log=$(mktemp)
trap 'rm -f "$log"; kill $server 2>/dev/null || true' EXIT
"$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 --max-batch 16 2>"$log" &
server=$!
for _ in $(seq 600); do grep -q http_port= "$log" && break; sleep 0.5; done
port=$(grep -o 'http_port=[0-9]*' "$log" | head -1 | cut -d= -f2)
NODE_PATH=$modules node "$here/lib/bench_tool_calls.js" "$port" llama-3.2-1b-shape "$rounds"
