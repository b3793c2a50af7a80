#!/usr/bin/env bash
# Prefix cache (#29): an agent-style load, stateless through the OpenAI API with the official
# `openai` npm client (scripts/lib/bench_prefix_cache.js), on a Llama-3.2-1B-shaped
# random-weight Q4_K_M file with the Llama 3.1 chat template, 2 threads. Rounds interleave
# textgen with the prefix cache (default --prefix-cache-scope=principal), textgen without it
# (--prefix-cache-scope=off) and, when $LLAMA_BIN/llama-server exists, llama-server with one
# slot per conversation and its default prompt cache; every run starts a fresh server.
# Then one run of 16 conversations sharing a ~2,000-token system prompt (one turn each),
# sampling textgen's KV gauges.
#   env: BUILD, MODELS, LLAMA_BIN (scripts/bench-common.sh), ROUNDS (default 3),
#        CONVERSATIONS, TURNS, SYSTEM_WORDS, MAX_TOKENS (the load's shape; see the .js),
#        SHAPE (llama-1b, default; qwen35-0.8b: the Qwen3.5-0.8B-shaped hybrid, whose prefix
#        cache works through state snapshots)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench-common.sh"
rounds=${ROUNDS:-3}
require_tools "$B/bin/textgen-server"
modules=$(openai_node_modules textgen-bench-prefix)
shape=${SHAPE:-llama-1b}
case $shape in
  llama-1b) model=$(llama1b_chat_model q4_k_m 8192); name=llama-3.2-1b-shape ;;
  qwen35-0.8b) model=$(qwen35_chat_model q4_k_m 8192); name=qwen3.5-0.8b-shape ;;
  *) echo "SHAPE must be llama-1b or qwen35-0.8b" >&2; exit 1 ;;
esac
load() { NODE_PATH=$modules node "$here/lib/bench_prefix_cache.js" "$@"; }

server=
log=$(mktemp)
trap 'rm -f "$log"; [[ -n $server ]] && kill $server 2>/dev/null || true' EXIT

# textgen LABEL FLAGS...: a fresh server, one load, its peak RSS.
textgen() {
  local label=$1
  shift
  "$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --kv-cache-mb 4096 "$@" 2>"$log" &
  server=$!
  for _ in $(seq 600); do grep -q http_port= "$log" && break; sleep 0.5; done
  local port metrics
  port=$(grep -o 'http_port=[0-9]*' "$log" | head -1 | cut -d= -f2)
  metrics=$(grep -o 'metrics_port=[0-9]*' "$log" | head -1 | cut -d= -f2)
  METRICS_PORT=$metrics load "$port" "$name" "$label" |
    sed "s/}\$/,\"server_peak_rss_mib\":$(($(awk '/VmHWM/ {print $2}' /proc/$server/status) / 1024))}/"
  kill -TERM "$server"
  wait "$server" 2>/dev/null || true
  server=
}

# llama-server with one slot per conversation and its default prompt cache (on the hybrid,
# --no-repack: its repacked AMX weights crash qwen35's prefill here, see
# bench-moe-vs-llamacpp.sh).
llamacpp() {
  local port=$((20000 + RANDOM % 20000))
  local extra=()
  [[ $shape == qwen35* ]] && extra=(--no-repack)
  "$L/llama-server" -m "$model" -t 2 -c $((8192 * ${CONVERSATIONS:-4})) -np "${CONVERSATIONS:-4}" \
    --port "$port" --jinja "${extra[@]}" >"$log" 2>&1 &
  server=$!
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.5; done
  load "$port" "$name" llama-server |
    sed "s/}\$/,\"server_peak_rss_mib\":$(($(awk '/VmHWM/ {print $2}' /proc/$server/status) / 1024))}/"
  kill -TERM "$server"
  wait "$server" 2>/dev/null || true
  server=
}

for round in $(seq "$rounds"); do
  echo "== round $round ($(date +%T))" >&2
  textgen prefix-cache
  textgen no-prefix-cache --prefix-cache-scope=off
  [[ -x $L/llama-server ]] && llamacpp
done

echo "== 16 conversations after one ~2,000-token system prompt ($(date +%T))" >&2
CONVERSATIONS=16 TURNS=1 SYSTEM_WORDS=1600 textgen shared-system-prompt
