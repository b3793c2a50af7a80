#!/usr/bin/env bash
# Soak: STREAMS concurrent clients for MINUTES against textgen-server on a stories110M-shaped
# f32 model (random weights), mixing normal requests, session turns, client cancels, short
# deadlines, invalid requests and OpenAI HTTP completions (scripts/soak.py says what each
# expects). Loopback only, bounded in time. Pass: only expected statuses, every completed stream
# well-formed, RSS after warm-up flat within 5%, open descriptors back to where they started,
# running/queued/KV/session gauges 0 at the end, and the server drains and exits 0 on SIGTERM.
# Usage: scripts/soak.sh [MINUTES=10] [STREAMS=256]
#   env BUILD=build (a tree with textgen-server and textgen-make-random-gguf; an ASan tree runs
#   the server with leak detection: see scripts/lib/build-trees.sh configure_asan_server),
#   KV_MB=1024 (the default; 256 streams still force idle sessions out), OUT=soak-report.json
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
streams=${2:-256}
B=${BUILD:-build}
out=${OUT:-soak-report.json}
work=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill $server 2>/dev/null; rm -rf "$work"' EXIT

"$B/bin/textgen-make-random-gguf" --arch llama --preset stories110M --dtype f32 \
  --out "$work/stories110M-f32.gguf" >/dev/null
/usr/bin/python3 -c "import sys; sys.path.insert(0, 'tests/e2e'); \
from server_harness import generate_stubs; generate_stubs('proto', '$work/stubs')"

# Leaks are reported at exit; abort_on_error keeps a report from being lost in a core dump.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
"$B/bin/textgen-server" --model "$work/stories110M-f32.gguf" --listen 127.0.0.1:0 \
  --metrics-listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --max-batch 64 --max-queue 1024 \
  --kv-cache-mb "${KV_MB:-1024}" --max-sessions 4096 --drain-timeout 60s \
  2> "$work/server.log" &
server=$!
for _ in $(seq 900); do grep -q http_port= "$work/server.log" 2>/dev/null && break; sleep 0.2; done
port() { grep -o "$1=[0-9]*" "$work/server.log" | head -1 | cut -d= -f2; }
[[ -n $(port http_port) ]] || { cat "$work/server.log" >&2; echo "soak: server did not start" >&2; exit 1; }

status=0
/usr/bin/python3 scripts/soak.py --grpc "127.0.0.1:$(port grpc_port)" \
  --http "127.0.0.1:$(port http_port)" --metrics "127.0.0.1:$(port metrics_port)" --pid "$server" \
  --stubs "$work/stubs" --streams "$streams" --duration "$((minutes * 60))" \
  --warmup "$((minutes * 60 / 5))" > "$work/report.json" || status=1

# Drain: SIGTERM must end the server with 0 (and, in an ASan build, no leak report).
kill -TERM "$server"
exit_code=0
wait "$server" || exit_code=$?
server=
leaks=$(grep -c "ERROR: LeakSanitizer\|ERROR: AddressSanitizer" "$work/server.log" || true)
/usr/bin/python3 - "$work/report.json" "$exit_code" "$leaks" "$out" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
report["server_exit_code"] = int(sys.argv[2])
report["sanitizer_reports"] = int(sys.argv[3])
json.dump(report, open(sys.argv[4], "w"), indent=1)
print(json.dumps(report, indent=1))
PY
if [[ $exit_code != 0 || $leaks != 0 ]]; then
  grep -A30 "ERROR: " "$work/server.log" | head -80 >&2 || true
  echo "soak: server exit $exit_code, $leaks sanitizer reports" >&2
  status=1
fi
grep -c ' E ' "$work/server.log" | sed 's/^/server error lines: /' >&2 || true
exit "$status"
