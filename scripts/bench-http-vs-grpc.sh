#!/usr/bin/env bash
# The HTTP front end's overhead (#14): one textgen-server with both front ends, driven by
# `textgen bench` over gRPC (Generate) and over HTTP (streaming /v1/completions, --http), in
# alternating runs so both see the same machine state. Same prompts (random token ids, seeded),
# same ignore_eos lengths. Two models: a stories110M-shaped f32 file (random weights, the engine
# dominates, as in production) and the bundled 3M model (the engine is nearly free, so the
# front end's own cost shows).
# Usage: scripts/bench-http-vs-grpc.sh [ROUNDS=5]   (env: BUILD=build, STREAMS=64, REQUESTS=256)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
B=${BUILD:-build}
streams=${STREAMS:-64}
requests=${REQUESTS:-256}
work=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT
"$B/bin/textgen-make-random-gguf" --arch llama --preset stories110M --dtype f32 \
  --out "$work/stories110M-f32.gguf" >/dev/null

run_model() {  # NAME MODEL PROMPT MAX_TOKENS
  local name=$1 model=$2 prompt=$3 max=$4
  "$B/bin/textgen-server" --model "$model" --listen 127.0.0.1:0 --metrics-listen= \
    --http-listen 127.0.0.1:0 --max-batch "$streams" --max-queue 1024 --log-level info \
    2> "$work/server.log" &
  server=$!
  for _ in $(seq 100); do grep -q http_port= "$work/server.log" && break; sleep 0.1; done
  local grpc http
  grpc=$(grep -o 'grpc_port=[0-9]*' "$work/server.log" | cut -d= -f2)
  http=$(grep -o 'http_port=[0-9]*' "$work/server.log" | cut -d= -f2)
  local common=(--addr "127.0.0.1:$grpc" --concurrency "$streams" --requests "$requests"
    --prompt-tokens "$prompt" --max-tokens "$max" --warmup "$streams" --json)
  for r in $(seq "$rounds"); do
    for api in grpc http; do
      local extra=()
      [[ $api == http ]] && extra=(--http "127.0.0.1:$http")
      "$B/bin/textgen" bench "${common[@]}" "${extra[@]}" > "$work/$name-$api-$r.json"
    done
  done
  kill -TERM $server; wait $server || true
  /usr/bin/python3 - "$work" "$name" "$rounds" <<'PY'
import json, statistics, sys
work, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def load(api, r): return json.load(open(f"{work}/{name}-{api}-{r}.json"))
def pick(d, *path):
    for p in path: d = d[p]
    return d
rows = [("output tok/s", ("output_tokens_per_second",), 1),
        ("TTFT p50 ms", ("ttft_seconds", "p50"), 1e3), ("TTFT p99 ms", ("ttft_seconds", "p99"), 1e3),
        ("ITL p50 ms", ("itl_seconds", "p50"), 1e3), ("ITL p99 ms", ("itl_seconds", "p99"), 1e3)]
print(f"\n{name}: {rounds} alternating rounds, medians (per-round HTTP/gRPC throughput ratios)")
print(f"{'':14} {'gRPC':>10} {'HTTP':>10} {'HTTP/gRPC':>10}")
for label, path, scale in rows:
    g = [scale * pick(load("grpc", r), *path) for r in range(1, rounds + 1)]
    h = [scale * pick(load("http", r), *path) for r in range(1, rounds + 1)]
    gm, hm = statistics.median(g), statistics.median(h)
    print(f"{label:14} {gm:10.2f} {hm:10.2f} {hm / gm:10.3f}")
ratios = [pick(load("http", r), "output_tokens_per_second") / pick(load("grpc", r), "output_tokens_per_second") for r in range(1, rounds + 1)]
print("throughput ratio per round:", " ".join(f"{x:.3f}" for x in ratios))
failed = sum(load(a, r)["requests"]["failed"] for a in ("grpc", "http") for r in range(1, rounds + 1))
print("failed requests:", failed)
PY
}

run_model stories110M-f32 "$work/stories110M-f32.gguf" 32 64
run_model bundled-3M models/default.gguf 32 64
