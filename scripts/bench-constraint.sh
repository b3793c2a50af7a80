#!/usr/bin/env bash
# Structured output (#27): decode throughput of JSON-Schema-constrained requests against the
# same requests unconstrained, on a Llama-3.2-1B-shaped random-weight file (dim 2048, 16
# layers, 32 heads / 8 KV heads, FFN 8192, llama.cpp's Llama 3 vocabulary of 128,256 tokens)
# in Q4_K_M (llama.cpp's llama-quantize; Q8_0 from textgen-make-random-gguf when llama.cpp's
# tools are absent). One server, 2 threads; rounds alternate unconstrained / constrained at
# 1 and 16 streams; prints each round and the medians. Then the token-mask micro-benchmark.
#   env: LLAMA_BIN, BUILD, MODELS (scripts/bench-common.sh), ROUNDS (default 3),
#        LLAMACPP_SRC (llama.cpp source; default BUILD/reference/llamacpp/llama.cpp)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench-common.sh"
rounds=${ROUNDS:-3}
vocab=$S/models/ggml-vocab-llama-bpe.gguf
require_tools "$B/bin/textgen" "$B/bin/textgen-server" "$B/bin/textgen-make-random-gguf" \
  "$B/bin/textgen-bench-constraint"
[[ -f $vocab ]] || { echo "missing $vocab (tests/reference/llamacpp_source.sh $B/reference/llamacpp)" >&2; exit 1; }
make_model() {  # dtype out
  "$B/bin/textgen-make-random-gguf" --arch llama --preset tiny --dim 2048 --hidden 8192 \
    --layers 16 --heads 32 --kv-heads 8 --context 4096 --dtype "$1" --vocab-from "$vocab" \
    --name llama-3.2-1b-shape --out "$2" >/dev/null
}
if [[ -x $L/llama-quantize ]]; then
  model=$M/llama1b-shape-Q4_K_M.gguf
  if [[ ! -f $model ]]; then
    [[ -f $M/llama1b-shape-F16.gguf ]] || make_model f16 "$M/llama1b-shape-F16.gguf"
    "$L/llama-quantize" "$M/llama1b-shape-F16.gguf" "$model" Q4_K_M >/dev/null 2>&1
  fi
else
  model=$M/llama1b-shape-Q8_0.gguf
  [[ -f $model ]] || make_model q8_0 "$model"
  echo "note: no llama-quantize in $L: measuring the Q8_0 file" >&2
fi
schema=$(mktemp)
trap 'rm -f "$schema"; kill $server 2>/dev/null || true' EXIT
# An array of records: object keys, bounded integers, free strings, enums; long enough that
# the answer does not end within max_tokens.
cat > "$schema" <<'JSON'
{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},
 "age":{"type":"integer","minimum":0,"maximum":120},"role":{"enum":["admin","user","guest"]},
 "tags":{"type":"array","items":{"type":"string"}}},"required":["name","age","role","tags"],
 "additionalProperties":false},"minItems":40}
JSON
log=$(mktemp)
"$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 --max-batch 16 2>"$log" &
server=$!
for _ in $(seq 600); do grep -q grpc_port= "$log" && break; sleep 0.5; done
port=$(grep -o 'grpc_port=[0-9]*' "$log" | head -1 | cut -d= -f2)
run() {  # streams requests [extra flags]
  "$B/bin/textgen" bench --addr "127.0.0.1:$port" --concurrency "$1" --requests "$2" \
    --prompt-tokens 32 --max-tokens 64 --warmup 1 --json "${@:3}" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.2f %.1f %.1f %d" % (r["output_tokens_per_second"], r["itl_seconds"]["p50"]*1e3, r["itl_seconds"]["p99"]*1e3, r["requests"]["short"]))'
}
for streams in 1 16; do
  requests=$((streams == 1 ? 4 : 32))
  free=() constrained=()
  for round in $(seq "$rounds"); do
    a=$(run "$streams" "$requests"); b=$(run "$streams" "$requests" --json-schema "$schema")
    echo "streams $streams round $round: unconstrained tok/s itl_p50 itl_p99 short = $a | constrained = $b"
    free+=("${a%% *}") constrained+=("${b%% *}")
  done
  python3 - "$streams" "${free[*]}" "${constrained[*]}" <<'PY'
import statistics, sys
streams, free, con = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
f, c = statistics.median(free), statistics.median(con)
print(f"streams {streams}: median unconstrained {f:.2f} tok/s, constrained {c:.2f} tok/s, ratio {c / f:.3f}")
PY
done
kill $server; wait $server 2>/dev/null || true

# llama.cpp's server on the same file and schema (its json_schema -> GBNF grammar sampling),
# one stream, the same rounds; tokens/s from its own timings.predicted_per_second.
if [[ -x $L/llama-server ]]; then
  lport=$((20000 + RANDOM % 20000))
  "$L/llama-server" -m "$model" -t 2 -c 4096 -np 1 --port "$lport" >/dev/null 2>&1 &
  server=$!
  python3 - "$lport" "$schema" "$rounds" <<'PY'
import json, statistics, sys, time, urllib.request
port, schema, rounds = int(sys.argv[1]), json.load(open(sys.argv[2])), int(sys.argv[3])
url = f"http://127.0.0.1:{port}/completion"
for _ in range(600):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
        break
    except Exception:
        time.sleep(0.5)
def run(constrained, seed):
    body = {"prompt": "Write JSON", "n_predict": 64, "seed": seed, "temperature": 1,
            "ignore_eos": True, "cache_prompt": False}
    if constrained:
        body["json_schema"] = schema
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=600))
    return r["timings"]["predicted_per_second"], r["tokens_predicted"]
free, con = [], []
for i in range(rounds):
    run(False, 99)  # warm-up
    a, na = run(False, i + 1)
    b, nb = run(True, i + 1)
    print(f"llama.cpp round {i + 1}: unconstrained {a:.2f} tok/s ({na}) | constrained {b:.2f} tok/s ({nb})")
    free.append(a); con.append(b)
f, c = statistics.median(free), statistics.median(con)
print(f"llama.cpp 1 stream: median unconstrained {f:.2f} tok/s, constrained {c:.2f} tok/s, ratio {c / f:.3f}")
PY
  kill $server; wait $server 2>/dev/null || true
fi
"$B/bin/textgen-bench-constraint" --vocab "$vocab" --walks 5 --steps 128
