#!/usr/bin/env bash
# Embeddings throughput (#30): BATCH inputs of about INPUT_TOKENS tokens each, embedded as one
# request, 2 threads, on SHAPE: llama1b-q8_0 (default; the Llama-3.2-1B-shaped random-weight
# Q8_0 decoder, no pooling_type: both pool the last token) or bert-base-f16 (a BERT-base-shaped
# F16 encoder with BGE's vocabulary, mean pooling). Rounds interleave textgen (one warm server with the prefix cache off,
# so every round computes every token; POST /v1/embeddings with every input; wall time of the
# request) and llama.cpp's llama-embedding (the same inputs, one
# per line, --pooling last, its default batch 2048 and ubatch 512; its wall time less that of a
# one-word input, which leaves out loading). The token count is textgen's (the same vocabulary
# and text). Peak resident memory: the server's VmHWM, llama-embedding's maximum RSS. Prints
# one JSON line per run and the medians.
#   env: BUILD, MODELS, LLAMA_BIN (scripts/bench-common.sh), ROUNDS (default 3), BATCH (32),
#        INPUT_TOKENS (128), SHAPE (llama1b-q8_0 | bert-base-f16), SERVER_FLAGS (extra
#        textgen-server flags, e.g. --bf16)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench-common.sh"
rounds=${ROUNDS:-3}
batch=${BATCH:-32}
input_tokens=${INPUT_TOKENS:-128}
require_tools "$B/bin/textgen-server" "$L/llama-embedding"
shape=${SHAPE:-llama1b-q8_0}
case $shape in
  # Tokens per word of the input text below in each vocabulary (the server reports the real
  # count), and the pooling both engines use.
  llama1b-q8_0) model=$(llama1b_chat_model q8_0 4096) tokens_per_word=1.29 pooling=last ;;
  bert-base-f16) model=$(bert_base_model f16) tokens_per_word=1.0 pooling=mean ;;
  *) echo "SHAPE must be llama1b-q8_0 or bert-base-f16, got $shape" >&2; exit 2 ;;
esac
work=$(mktemp -d)
log=$work/server.log
trap 'kill $server 2>/dev/null || true; rm -rf "$work"' EXIT

# Inputs: distinct sentences of about INPUT_TOKENS tokens (one per line for llama-embedding).
python3 - "$batch" "$input_tokens" "$work" "$tokens_per_word" <<'EOF'
import json, sys
batch, tokens, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
per_word = float(sys.argv[4])
words = ("river mountain quiet engine lantern harbor violet cobalt meadow signal orchard "
         "granite whisper copper falcon ember").split()
inputs = []
for i in range(batch):
    # About 1.29 tokens per word of this text in Llama 3's vocabulary (160 tokens for 124
    # words), 1.0 in BERT's; the server reports the real count.
    count = max(1, round(tokens / per_word) - 3)
    inputs.append(f"Input {i}: " + " ".join(words[(i * 7 + j) % len(words)] for j in range(count)))
open(f"{work}/inputs.txt", "w").write("\n".join(inputs) + "\n")
open(f"{work}/one.txt", "w").write("Input\n")
json.dump({"input": inputs, "encoding_format": "float"}, open(f"{work}/body.json", "w"))
EOF

"$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 \
  --http-listen 127.0.0.1:0 --metrics-listen "" --max-batch "$batch" --max-queue "$((batch * 2))" \
  --max-batch-tokens 4096 --prefix-cache-scope off ${SERVER_FLAGS:-} 2>"$log" &
server=$!
for _ in $(seq 600); do grep -q http_port= "$log" && break; sleep 0.5; done
port=$(grep -o 'http_port=[0-9]*' "$log" | head -1 | cut -d= -f2)

textgen() {
  local seconds tokens
  seconds=$(curl -s -o "$work/out.json" -w '%{time_total}' "127.0.0.1:$port/v1/embeddings" \
    -H 'Content-Type: application/json' -d @"$work/body.json")
  tokens=$(python3 -c "import json; print(json.load(open('$work/out.json'))['usage']['prompt_tokens'])")
  # Peak resident memory of the whole server so far (weights, KV budget used, scratch).
  rss_mb=$(awk '/VmHWM/ {printf "%d", $2 / 1024}' "/proc/$server/status")
  printf '{"engine":"textgen","seconds":%s,"tokens":%d,"tokens_per_second":%.1f,"peak_rss_mb":%d}\n' \
    "$seconds" "$tokens" "$(python3 -c "print($tokens / $seconds)")" "$rss_mb"
}

# llama-embedding prints no timings of its own here: its compute time is the wall time with the
# inputs less the wall time with one one-word input (loading, context creation, warm-up).
llamacpp() {
  local ctx=$((batch * (input_tokens + 16)))
  run() {
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$work/llama.rss" \
      "$L/llama-embedding" -m "$model" -t 2 -f "$1" --pooling "$pooling" -c "$ctx" -b 2048 -ub 512 \
      --embd-output-format json >"$work/llama.json" 2>"$work/llama.log" || {
      tail -20 "$work/llama.log" >&2
      exit 1
    }
    end=$(date +%s.%N)
    python3 -c "print($end - $start)"
  }
  local full empty tokens
  full=$(run "$work/inputs.txt")
  local rss_kb
  rss_kb=$(tail -1 "$work/llama.rss")
  empty=$(run "$work/one.txt")
  tokens=$(python3 -c "import json; print(json.load(open('$work/out.json'))['usage']['prompt_tokens'])")
  python3 -c "
s = $full - $empty
print('{\"engine\":\"llama.cpp\",\"seconds\":%.4f,\"tokens\":%d,\"tokens_per_second\":%.1f,'
      '\"wall_seconds\":%.4f,\"overhead_seconds\":%.4f,\"peak_rss_mb\":%d}'
      % (s, $tokens, $tokens / s, $full, $empty, $rss_kb // 1024))"
}

textgen >/dev/null  # warm-up
results=$(for round in $(seq "$rounds"); do
  echo "== round $round ($(date +%T))" >&2
  textgen
  llamacpp
done)
echo "$results"
python3 - "$results" "$shape" "${SERVER_FLAGS:-}" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
med = {e: statistics.median(r["tokens_per_second"] for r in rows if r["engine"] == e)
       for e in ("textgen", "llama.cpp")}
print(json.dumps({"summary": True, "shape": sys.argv[2], "server_flags": sys.argv[3],
                  "textgen_tokens_per_second": med["textgen"],
                  "llamacpp_tokens_per_second": med["llama.cpp"],
                  "ratio": round(med["textgen"] / med["llama.cpp"], 3),
                  "textgen_peak_rss_mb": max(r["peak_rss_mb"] for r in rows if r["engine"] == "textgen"),
                  "llamacpp_peak_rss_mb": max(r["peak_rss_mb"] for r in rows
                                              if r["engine"] == "llama.cpp")}))
EOF
