#!/usr/bin/env bash
# Scale-out check: 3 textgen replicas on the bundled model behind Debian's nginx running the
# shipped deploy/nginx/textgen-lb.conf (LB=haproxy: Debian's HAProxy with
# deploy/haproxy/haproxy.cfg), replica addresses and listen ports rewritten to loopback,
# driven by scripts/scale_out.py. Loopback only, bounded (a few minutes on 2 cores).
#   1. 50 conversations x 5 turns: at least 95% of follow-up turns reuse their replica's cache.
#   2. 50 new conversations x 5 turns; one replica gets SIGTERM mid-run: every turn ends OK with
#      its final message (running streams drain, new ones move, the client retries UNAVAILABLE),
#      the replica exits 0, and no moved conversation recomputes its history: the replicas share
#      one --kv-cache-dir (as the shipped compose file and manifests do), so the replica a
#      session moves to reads it from there. (SHARED_KV_DIR=0: no directory; each moved
#      conversation then recomputes its history exactly once.)
#   3. The HTTP API through the balancer: a session's completions stay on one replica (cached tokens).
#   5. The stopped replica restarts on the directory: conversations of step 1 continue on it
#      from disk (every follow-up turn cached; its textgen_kv_disk_reads_total grows).
#   5. Observability: promtool checks deploy/prometheus/*.yml; Debian's prometheus scrapes the
#      replicas with the shipped prometheus.yml (targets rewritten) and answers the TTFT
#      histogram_quantile with a number; every metric the Grafana dashboard and the alerts use is
#      in a live /metrics scrape, and every dashboard query returns data.
# Usage: scripts/test-scale-out.sh   (env LB=nginx|haproxy, BUILD=build, OUT=FILE for the JSON report,
#        CONVERSATIONS=50, TURNS=5, KEEP_WORK=1 keeps the logs)
# Needs: BUILD/bin/textgen-server, nginx (nginx-light) or haproxy, prometheus, python3-grpcio
# (scripts/install-deps.sh --test installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
lb=${LB:-nginx}
conversations=${CONVERSATIONS:-50}
turns=${TURNS:-5}
shared_kv=${SHARED_KV_DIR:-1}
for tool in "$lb" prometheus promtool protoc /usr/bin/grpc_python_plugin; do
  command -v "$tool" >/dev/null || { echo "test-scale-out: $tool is missing (scripts/install-deps.sh --test)" >&2; exit 2; }
done
[[ -x $B/bin/textgen-server ]] || { echo "test-scale-out: build $B/bin/textgen-server first" >&2; exit 2; }

work=$(mktemp -d)
chmod 755 "$work"  # nginx workers may run as another user
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [[ -f $work/lb.pid ]] && kill "$(cat "$work/lb.pid")" 2>/dev/null || true
  [[ -n ${prometheus_pid:-} ]] && kill "$prometheus_pid" 2>/dev/null || true
  [[ -n ${KEEP_WORK:-} ]] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

/usr/bin/python3 -c "import sys; sys.path.insert(0, 'tests/e2e'); \
from server_harness import generate_stubs; generate_stubs('proto', '$work/stubs')"

# Three replicas, one engine thread each (2 cores in all).
names=(a b c)
declare -A grpc_port http_port metrics_port pid_of
kv_flags=()
[[ $shared_kv == 1 ]] && kv_flags=(--kv-cache-dir "$work/kv")
replica() {  # replica NAME LOG: starts one, as the shipped deployment runs it
  "$B/bin/textgen-server" --model models/default.gguf --listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --threads 1 --max-batch 16 \
    --drain-timeout 60s "${kv_flags[@]}" 2> "$2" &
  pid_of[$1]=$!
  pids+=("$!")
}
for name in "${names[@]}"; do replica "$name" "$work/replica-$name.log"; done
port() { grep -o "$2=[0-9]*" "$work/replica-$1.log" | head -1 | cut -d= -f2; }
for name in "${names[@]}"; do
  for _ in $(seq 300); do grep -q http_port= "$work/replica-$name.log" 2>/dev/null && break; sleep 0.1; done
  grpc_port[$name]=$(port "$name" grpc_port)
  http_port[$name]=$(port "$name" http_port)
  metrics_port[$name]=$(port "$name" metrics_port)
  [[ -n ${grpc_port[$name]} ]] || { cat "$work/replica-$name.log" >&2; exit 1; }
done

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
lb_grpc=$(free_port)
lb_http=$(free_port)
replica_addresses=$(for name in "${names[@]}"; do
  printf -- "-e s|textgen-%s:50051|127.0.0.1:%s| -e s|textgen-%s:8080|127.0.0.1:%s| " \
    "$name" "${grpc_port[$name]}" "$name" "${http_port[$name]}"
done)
# The shipped file with loopback addresses: textgen-X:50051 / :8080 become the replicas' ports,
# the listen ports free ones; the access log (session and replica of every request) in $work.
access_log=$work/lb-access.log
case $lb in
  nginx)
    # shellcheck disable=SC2086  # one sed argument per word
    sed -e "s|listen 50051 http2;|listen 127.0.0.1:$lb_grpc http2;|" \
        -e "s|listen 8080;|listen 127.0.0.1:$lb_http;|" \
        -e "s|/var/log/nginx/textgen-grpc.log|$access_log|" \
        -e "s|/var/log/nginx/textgen-http.log|$work/lb-http.log|" \
        $replica_addresses deploy/nginx/textgen-lb.conf > "$work/textgen-lb.conf"
    cat > "$work/nginx.conf" <<EOF
worker_processes 1;
pid $work/lb.pid;
error_log $work/lb-error.log warn;
events { worker_connections 1024; }
http {
  client_body_temp_path $work/body;  # small prompts never touch it
  proxy_temp_path $work/proxy;
  include $work/textgen-lb.conf;
}
EOF
    nginx -t -p "$work" -c "$work/nginx.conf" 2> "$work/lb-error.log" || { cat "$work/lb-error.log" >&2; exit 1; }
    nginx -p "$work" -c "$work/nginx.conf"
    ;;
  haproxy)
    # Logging is the test's addition: the session header and the replica of every request.
    # shellcheck disable=SC2086
    sed -e "s|bind :50051 proto h2|bind 127.0.0.1:$lb_grpc proto h2\n    capture request header x-session-id len 128|" \
        -e "s|bind :8080|bind 127.0.0.1:$lb_http|" \
        -e "s|^global|global\n    log stdout format raw local0|" \
        -e "s|^defaults|defaults\n    log global\n    log-format \"%ft session=%[capture.req.hdr(0)] upstream=%si:%sp status=%ST\"|" \
        $replica_addresses deploy/haproxy/haproxy.cfg > "$work/haproxy.cfg"
    haproxy -c -q -f "$work/haproxy.cfg" >&2
    haproxy -db -f "$work/haproxy.cfg" -p "$work/lb.pid" > "$access_log" 2> "$work/lb-error.log" &
    pids+=("$!")
    ;;
  *) echo "test-scale-out: LB=$lb: nginx or haproxy" >&2; exit 2 ;;
esac
for _ in $(seq 50); do [[ -s $work/lb.pid ]] && break; sleep 0.1; done
for _ in $(seq 50); do (echo > "/dev/tcp/127.0.0.1/$lb_grpc") 2>/dev/null && break; sleep 0.1; done

# Prometheus from the start, so its scrapes see the traffic: the shipped prometheus.yml with the
# replicas' metrics ports for textgen-X:9090 and the repo's alerts.yml for /etc/prometheus's.
prom_port=$(free_port)
sed -e "s|/etc/prometheus/alerts.yml|$PWD/deploy/prometheus/alerts.yml|" \
    $(for name in "${names[@]}"; do
        printf -- "-e s|textgen-%s:9090|127.0.0.1:%s| " "$name" "${metrics_port[$name]}"
      done) deploy/prometheus/prometheus.yml > "$work/prometheus.yml"
promtool check config "$work/prometheus.yml" >&2
promtool check rules deploy/prometheus/alerts.yml >&2
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn 2> "$work/prometheus.log" &
prometheus_pid=$!
# Its first scrape of every replica must come before the traffic, for rate() to see it.
for _ in $(seq 150); do
  n=$(curl -s "http://127.0.0.1:$prom_port/api/v1/query?query=count(up)" 2>/dev/null |
      sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p' || true)
  [[ ${n:-0} == "${#names[@]}" ]] && break
  sleep 0.2
done
[[ ${n:-0} == "${#names[@]}" ]] || { cat "$work/prometheus.log" >&2; echo "prometheus never scraped" >&2; exit 1; }

status=0
echo "== 1. $conversations conversations x $turns turns through the balancer" >&2
/usr/bin/python3 scripts/scale_out.py --target "127.0.0.1:$lb_grpc" --stubs "$work/stubs" \
  --conversations "$conversations" --turns "$turns" --reply-tokens 24 --session-prefix steady \
  --dump-histories "$work/steady-histories.json" > "$work/steady.json" || status=1
cat "$work/steady.json" >&2

# Which replica served most sessions is the one to stop: the failover then moves the most.
victim=$(/usr/bin/python3 - "$access_log" "${names[@]}" <<'PY'
import collections, re, sys
log, names = sys.argv[1], sys.argv[2:]
counts = collections.Counter(m.group(1) for m in
                             re.finditer(r"session=steady-\S+ upstream=(\S+) ", open(log).read()))
print(counts.most_common(1)[0][0])
PY
)
victim_name=
for name in "${names[@]}"; do
  [[ 127.0.0.1:${grpc_port[$name]} == "$victim" ]] && victim_name=$name
done
echo "== 2. again with replica $victim_name ($victim) stopped mid-run" >&2
/usr/bin/python3 scripts/scale_out.py --target "127.0.0.1:$lb_grpc" --stubs "$work/stubs" \
  --conversations "$conversations" --turns "$turns" --reply-tokens 24 --session-prefix failover \
  --kill-pid "${pid_of[$victim_name]}" --kill-after "$((conversations * turns * 2 / 5))" \
  --kill-metrics "http://127.0.0.1:${metrics_port[$victim_name]}/metrics" \
  $([[ $shared_kv == 1 ]] && echo --shared-kv-dir) > "$work/failover.json" || status=1
cat "$work/failover.json" >&2
victim_exit=0
wait "${pid_of[$victim_name]}" || victim_exit=$?
drained=$(grep -c "drain: all requests finished" "$work/replica-$victim_name.log" || true)
drain_seconds=$(sed -n 's/.*drain: all requests finished in \([0-9.]*\) s.*/\1/p' \
  "$work/replica-$victim_name.log")
echo "replica $victim_name exit $victim_exit, drained: $drained (${drain_seconds:-?} s)" >&2
[[ $victim_exit == 0 && $drained == 1 ]] || status=1
# Sessions that moved went where the hash ring says, and every one stayed there.
moved=$(/usr/bin/python3 - "$access_log" "$victim" <<'PY'
import collections, re, sys
log, victim = sys.argv[1], sys.argv[2]
where = collections.defaultdict(list)
# nginx lists every replica it tried ("A, B"); the last one served the request.
for m in re.finditer(r"session=(failover-\S+) upstream=(.+?) (?:upstream_)?status=", open(log).read()):
    where[m.group(1)].append(m.group(2).split(", ")[-1])
moved = {s: u for s, u in where.items() if u[0] == victim and u[-1] != victim}
# After its last turn on the stopped replica, a moved session must stay on one replica.
after = {s: u[len(u) - u[::-1].index(victim):] for s, u in moved.items()}
bounced = {s: u for s, u in after.items() if len(set(u)) > 1}
print(len(moved), len(bounced))
PY
)
echo "sessions moved off $victim_name: ${moved% *}, moved more than once: ${moved#* }" >&2
[[ ${moved#* } == 0 && ${moved% *} -gt 0 ]] || status=1

restart_reads=0
if [[ $shared_kv == 1 ]]; then
  echo "== 3. replica $victim_name restarted on the directory continues step 1's conversations" >&2
  replica "$victim_name" "$work/replica-$victim_name-restarted.log"
  for _ in $(seq 300); do grep -q grpc_port= "$work/replica-$victim_name-restarted.log" && break; sleep 0.1; done
  restarted_grpc=$(grep -o "grpc_port=[0-9]*" "$work/replica-$victim_name-restarted.log" | head -1 | cut -d= -f2)
  restarted_metrics=$(grep -o "metrics_port=[0-9]*" "$work/replica-$victim_name-restarted.log" | head -1 | cut -d= -f2)
  /usr/bin/python3 scripts/scale_out.py --target "127.0.0.1:$restarted_grpc" --stubs "$work/stubs" \
    --conversations 10 --turns 2 --reply-tokens 24 --session-prefix steady --min-cached-ratio 1.0 \
    --continue-from "$work/steady-histories.json" > "$work/restarted.json" || status=1
  restart_reads=$(curl -s "http://127.0.0.1:$restarted_metrics/metrics" |
    sed -n 's/^textgen_kv_disk_reads_total \([0-9.e+]*\)$/\1/p')
  echo "restarted replica: $(grep -o '"follow_up_cached_ratio": [0-9.]*' "$work/restarted.json"), blocks read from disk: $restart_reads" >&2
  [[ ${restart_reads%.*} -gt 0 ]] || status=1
fi

echo "== 4. HTTP API through the balancer: one session's completions on one replica" >&2
http_result=$(/usr/bin/python3 - "$lb_http" <<'PY'
import json, sys, urllib.request
port = int(sys.argv[1])
def complete(prompt):
    body = json.dumps({"prompt": prompt, "max_tokens": 4, "session_id": "http-conv-1",
                       "seed": 1}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                     {"Content-Type": "application/json",
                                      "X-Session-Id": "http-conv-1"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.load(reply)
first = complete("Once upon a time there was a")
second = complete("Once upon a time there was a" + first["choices"][0]["text"] + " and then")
cached = second["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0)
print(cached)
PY
) || status=1
echo "second HTTP turn cached_tokens=$http_result" >&2
[[ ${http_result:-0} -gt 0 ]] || status=1

echo "== 5. Prometheus, alerts and the Grafana dashboard against the live replicas" >&2
survivor=${names[0]}
[[ $survivor == "$victim_name" ]] && survivor=${names[1]}
/usr/bin/python3 scripts/check_observability.py --prometheus "http://127.0.0.1:$prom_port" \
  --metrics "http://127.0.0.1:${metrics_port[$survivor]}/metrics" \
  --dashboard deploy/grafana/dashboards/textgen.json --alerts deploy/prometheus/alerts.yml \
  > "$work/observability.json" || status=1
cat "$work/observability.json" >&2

/usr/bin/python3 - "$work/steady.json" "$work/failover.json" "$victim_exit" "$drained" \
  "$moved" "${http_result:-0}" "${OUT:-/dev/stdout}" "${drain_seconds:-0}" \
  "$work/observability.json" "$lb" "$shared_kv" "${restart_reads:-0}" <<'PY'
import json, sys
steady, failover = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
observability = json.load(open(sys.argv[9]))
moved, bounced = map(int, sys.argv[5].split())
report = {"replicas": 3, "balancer": sys.argv[10],
          "steady": steady, "failover": failover,
          "failover_replica_exit_code": int(sys.argv[3]),
          "failover_replica_drained": sys.argv[4] == "1",
          "failover_replica_drain_seconds": float(sys.argv[8]),
          "sessions_moved": moved, "sessions_moved_twice": bounced,
          "http_second_turn_cached_tokens": int(sys.argv[6]),
          "shared_kv_cache_dir": sys.argv[11] == "1",
          "restarted_replica_disk_block_reads": float(sys.argv[12] or 0),
          "observability": observability}
with open(sys.argv[7], "w") as out:
    json.dump(report, out, indent=1)
    out.write("\n")
PY
if [[ $status != 0 ]]; then
  echo "test-scale-out: FAILED" >&2
  tail -n 20 "$work/lb-error.log" >&2 || true
else
  echo "test-scale-out: passed" >&2
fi
exit "$status"
