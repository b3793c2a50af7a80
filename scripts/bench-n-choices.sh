#!/usr/bin/env bash
# `n` choices cost one prefill (#30): POST /v1/completions with a ~PROMPT_WORDS-word prompt and
# max_tokens 1 (so the time is the prompt's), n=1 and n=4 interleaved, ROUNDS rounds, on one
# server with the Llama-3.2-1B-shaped random-weight Q4_K_M file, 2 threads, the prefix cache
# off for the prompt's own reuse (each request has a prompt of its own: a round number leads
# it). Per request: wall time, and the prompt tokens the engine computed
# (textgen_prefill_tokens_total before and after). Prints one JSON line per request and a
# summary (medians).
#   env: BUILD, MODELS (scripts/bench-common.sh), ROUNDS (default 5), PROMPT_WORDS (1500)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench-common.sh"
rounds=${ROUNDS:-5}
words=${PROMPT_WORDS:-1500}
require_tools "$B/bin/textgen-server"
model=$(llama1b_chat_model q4_k_m 8192)

log=$(mktemp)
"$B/bin/textgen-server" --model "$model" --threads 2 --listen 127.0.0.1:0 \
  --http-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 2>"$log" &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 600); do grep -q http_port= "$log" && break; sleep 0.5; done
port=$(grep -o 'http_port=[0-9]*' "$log" | head -1 | cut -d= -f2)
metrics=$(grep -o 'metrics_port=[0-9]*' "$log" | head -1 | cut -d= -f2)

prefilled() {
  curl -s "127.0.0.1:$metrics/metrics" | awk '/^textgen_prefill_tokens_total / {print $2}'
}

# request N ROUND: one completion with n=N on a prompt no earlier request had.
request() {
  local n=$1 round=$2
  local body
  body=$(python3 -c "
import json, sys
words = ' '.join('w%d' % (i % 97) for i in range($words))
print(json.dumps({'prompt': 'Round $round n $n: ' + words, 'max_tokens': 1, 'n': $n,
                  'temperature': 1, 'seed': 1}))")
  local before after seconds
  before=$(prefilled)
  seconds=$(curl -s -o /dev/null -w '%{time_total}' "127.0.0.1:$port/v1/completions" \
    -H 'Content-Type: application/json' -d "$body")
  after=$(prefilled)
  printf '{"n":%d,"round":%d,"seconds":%s,"prefill_tokens":%d}\n' "$n" "$round" "$seconds" \
    "$(python3 -c "print(int(float('$after') - float('$before')))")"
}

request 1 0 >/dev/null  # warm-up
results=$(for round in $(seq "$rounds"); do
  request 1 "$round"
  request 4 "$round"
done)
echo "$results"
python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in sys.argv[1].splitlines()]
def med(n, key):
    return statistics.median(r[key] for r in rows if r["n"] == n)
one, four = med(1, "seconds"), med(4, "seconds")
print(json.dumps({"summary": True, "n1_seconds": one, "n4_seconds": four,
                  "n4_over_n1": round(four / one, 3),
                  "n1_prefill_tokens": med(1, "prefill_tokens"),
                  "n4_prefill_tokens": med(4, "prefill_tokens")}))
EOF
