#!/usr/bin/env bash
# Capacity of one replica, for docs/scaling.md: for each model shape, a server with
# --threads 2 and `textgen bench` at several concurrencies (prompt 128 tokens, 64 generated,
# closed loop), then the KV cache bytes per token read from the server's own metrics after a
# session of known length, and the server's RSS.
# Usage: scripts/measure-capacity.sh [OUT=docs/measurements/capacity.json]   (env BUILD=build)
# Random weights in real shapes (textgen-make-random-gguf): speed does not depend on the values.
# Run it on a quiet machine: anything else on the 2 cores (a fuzzer, a build) stalls oneDNN's
# OpenMP barriers and cuts the figures several times over.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
out=${1:-docs/measurements/capacity.json}
work=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill $server 2>/dev/null; rm -rf "$work"' EXIT

"$B/bin/textgen-make-random-gguf" --arch llama --preset stories110M --dtype bf16 \
  --out "$work/stories110M-bf16.gguf" >/dev/null
# Llama 3.2 1B: dim 2048, FFN 8192, 16 layers, 32 heads / 8 KV heads, vocab 128256, tied.
"$B/bin/textgen-make-random-gguf" --arch llama --preset stories110M --dtype q8_0 --dim 2048 \
  --hidden 8192 --layers 16 --heads 32 --kv-heads 8 --vocab 128256 --context 4096 \
  --name llama-3.2-1B-shape --out "$work/llama1B-q8_0.gguf" >/dev/null

metric() {  # metric NAME: its value in the server's /metrics
  curl -s "http://127.0.0.1:$metrics_port/metrics" | awk -v n="$1" '$1 == n {print $2}'
}

results=()
run_model() {  # run_model NAME FILE CONCURRENCY...
  local name=$1 file=$2; shift 2
  "$B/bin/textgen-server" --model "$file" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --threads 2 --max-batch 64 --kv-cache-mb 4096 2> "$work/server.log" &
  server=$!
  for _ in $(seq 600); do grep -q metrics_port= "$work/server.log" && break; sleep 0.2; done
  local port metrics_port
  port=$(grep -o 'grpc_port=[0-9]*' "$work/server.log" | cut -d= -f2)
  metrics_port=$(grep -o 'metrics_port=[0-9]*' "$work/server.log" | cut -d= -f2)
  for c in "$@"; do
    "$B/bin/textgen" bench --addr "127.0.0.1:$port" --concurrency "$c" --requests "$((2 * c))" \
      --warmup "$c" --prompt-tokens 128 --max-tokens 64 --json > "$work/bench-$name-$c.json"
  done
  # KV bytes per token: one session, kept after its request; its KV is allocated in blocks
  # of 16 tokens for prompt + generated tokens (the last sampled one is never fed).
  "$B/bin/textgen" generate --addr "127.0.0.1:$port" --session kv-probe --max-tokens 64 \
    --json "$(printf 'Once upon a time there was a little robot. %.0s' $(seq 12))" > "$work/kv.json"
  local used rss held
  held=$(/usr/bin/python3 -c 'import json, sys
usage = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]["finished"]["usage"]
tokens = int(usage.get("promptTokens", usage.get("prompt_tokens"))) + \
    int(usage.get("completionTokens", usage.get("completion_tokens"))) - 1
print((tokens + 15) // 16 * 16)' "$work/kv.json")
  used=$(metric textgen_kv_cache_bytes_used)
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$server/status")
  kill -TERM "$server"; wait "$server" || true; server=
  results+=("$name" "$used" "$held" "$rss")
}

run_model stories110M-bf16 "$work/stories110M-bf16.gguf" 1 16 64
run_model llama-3.2-1B-shape-q8_0 "$work/llama1B-q8_0.gguf" 1 16

/usr/bin/python3 - "$work" "$out" "${results[@]}" <<'PY'
import glob, json, os, sys
work, out, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
report = {"machine": f"{os.cpu_count()} cores", "threads": 2, "models": {}}
for name, kv_used, held, rss_kb in zip(rest[0::4], rest[1::4], rest[2::4], rest[3::4]):
    runs = []
    for path in sorted(glob.glob(f"{work}/bench-{name}-*.json"),
                       key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0])):
        b = json.load(open(path))
        runs.append({"concurrency": b["config"]["concurrency"],
                     "output_tokens_per_second": round(b["output_tokens_per_second"], 1),
                     "ttft_p50_ms": round(1000 * b["ttft_seconds"]["p50"], 1),
                     "ttft_p99_ms": round(1000 * b["ttft_seconds"]["p99"], 1),
                     "itl_p50_ms": round(1000 * b["itl_seconds"]["p50"], 1),
                     "itl_p99_ms": round(1000 * b["itl_seconds"]["p99"], 1),
                     "failed": b["requests"]["failed"]})
    kv_per_token = float(kv_used) / int(held)
    report["models"][name] = {
        "bench": runs, "kv_bytes_per_token": round(kv_per_token),
        "sessions_per_gib_at_1000_tokens": round((1 << 30) / (kv_per_token * 1000), 1)
        if kv_per_token else None,
        "server_rss_mib": round(int(rss_kb) / 1024)}
json.dump(report, open(out, "w"), indent=1)
print(json.dumps(report, indent=1))
PY
