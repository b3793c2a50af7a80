#!/usr/bin/env bash
# KV cache directory (#29): time to first token of a follow-up turn with ~4,000 tokens of
# history (stateless, OpenAI completions API through the `openai` npm client), on a
# Llama-3.2-1B-shaped random-weight Q4_K_M file, 2 threads. Each round, on a fresh directory:
#   recompute   turn 1, nothing cached: the whole history is prefilled
#   warm        turn 2 on the same server: the history is in memory
#   disk        turn 3 after SIGTERM (the drain writes the cache) and a restart on the same
#               directory, the block files in the page cache
#   disk-cold   turn 4 after another restart with the page cache dropped first (when this
#               machine lets us: /proc/sys/vm/drop_caches), so the blocks come off the device
# Also reports the drain's write time and the restart's load time from the server's log.
#   env: BUILD, MODELS (scripts/bench-common.sh), ROUNDS (default 3), HISTORY_WORDS, KV_DTYPE,
#        SHAPE (llama-1b, default; qwen35-0.8b: the hybrid, whose prefix continues from state
#        snapshots written beside the blocks)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench-common.sh"
rounds=${ROUNDS:-3}
require_tools "$B/bin/textgen-server"
modules=$(openai_node_modules textgen-bench-prefix)
case ${SHAPE:-llama-1b} in
  llama-1b) model=$(llama1b_chat_model q4_k_m 8192) ;;
  qwen35-0.8b) model=$(qwen35_chat_model q4_k_m 8192); export MODEL_NAME=qwen3.5-0.8b-shape ;;
  *) echo "SHAPE must be llama-1b or qwen35-0.8b" >&2; exit 1 ;;
esac
work=$(mktemp -d)
server=
trap 'rm -rf "$work"; [[ -n $server ]] && kill $server 2>/dev/null || true' EXIT

start() {  # start DIR LOG: a server on DIR (none when DIR is -); sets $port (HTTP)
  local dir_flags=(--kv-cache-dir "$1")
  [[ $1 == - ]] && dir_flags=()
  "$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --kv-cache-mb 4096 \
    --kv-cache-dtype "${KV_DTYPE:-f32}" "${dir_flags[@]}" >/dev/null 2>"$2" &
  server=$!
  for _ in $(seq 600); do grep -q http_port= "$2" && break; sleep 0.5; done
  port=$(grep -o 'http_port=[0-9]*' "$2" | head -1 | cut -d= -f2)
}
stop() {  # stop: SIGTERM, wait; sets $stop_ms (the drain's wall time)
  local t0 t1
  t0=$(date +%s%N)
  kill -TERM "$server"
  wait "$server" 2>/dev/null || true
  t1=$(date +%s%N)
  server=
  stop_ms=$(((t1 - t0) / 1000000))
}
turn() { NODE_PATH=$modules node "$here/lib/bench_turn_ttft.js" "$@"; }

for round in $(seq "$rounds"); do
  echo "== round $round ($(date +%T))" >&2
  dir=$work/cache-$round state=$work/state-$round.json
  # The baseline of the write cost: the same first turn on a server without a directory.
  start - "$work/log0"
  turn "$port" recompute-no-dir "$work/state-$round-no-dir.json"
  stop
  start "$dir" "$work/log1"
  turn "$port" recompute "$state"
  turn "$port" warm "$state"
  stop
  drain_ms=$stop_ms
  written=$(grep -o 'wrote [0-9]* blocks ([0-9.]* MiB)' "$work/log1" | tail -1)
  start "$dir" "$work/log2"
  load=$(grep -o 'load_time=[0-9.]*s' "$work/log2" | head -1)
  opened=$(grep -o 'opened in [0-9.]*s' "$work/log2" | head -1)
  turn "$port" disk "$state"
  stop
  sync
  if (echo 1 >/proc/sys/vm/drop_caches) 2>/dev/null; then
    start "$dir" "$work/log3"
    turn "$port" disk-cold "$state"
    stop
  else
    echo "note: cannot drop the page cache here; no disk-cold turn" >&2
  fi
  echo "{\"label\":\"restart\",\"round\":$round,\"drain_ms\":$drain_ms,\"drain\":\"$written\",\"restart\":\"$load, kv dir $opened\"}"
done
