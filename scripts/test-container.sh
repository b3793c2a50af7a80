#!/usr/bin/env bash
# Containers, for real, with podman (no Docker engine and no image registry here):
#   1. a debian:bookworm base image made locally with mmdebstrap (once; kept in podman's store);
#   2. the repo's Dockerfile built and run: health, text generated through the published port,
#      the non-root user, and SIGTERM (podman stop) draining a running stream to its end with
#      exit code 0;
#   3. deploy/docker-compose.yml started with podman-compose (3 replicas, nginx and Prometheus
#      images built from Debian packages): the scale-out check of scripts/test-scale-out.sh
#      (50 conversations x 5 turns, then 50 more with one replica stopped mid-run) through the
#      compose stack's nginx, and Prometheus scraping the replicas.
# Loopback only (published ports bound to 127.0.0.1), bounded; a program to run and quote, not
# part of CI (building the image compiles textgen: about 15 minutes on 2 cores).
# Usage: scripts/test-container.sh [OUT=container-report.json]   (the containers' logs go to
#   OUT without .json + -logs/; env BUILD=build: the host
#   build whose textgen CLI and Python stubs drive the containers; MIRROR=Debian mirror URL)
# Needs: apt-get install podman buildah mmdebstrap runc podman-compose (as root).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD:-build}
out=${1:-container-report.json}
mirror=${MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d)
project=textgen-test
cleanup() {
  podman rm -f textgen-single >/dev/null 2>&1 || true
  podman-compose -p "$project" -f deploy/docker-compose.yml down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
for tool in podman mmdebstrap podman-compose; do
  command -v "$tool" >/dev/null || { echo "test-container: $tool is missing" >&2; exit 2; }
done
# runc and cgroupfs: crun fails on this machine's cgroup setup (../shared/PLATFORM.md).
cat > "$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF=$work/containers.conf

step() { printf '\n== %s\n' "$*" >&2; }

if ! podman image exists docker.io/library/debian:bookworm; then
  step "base image: mmdebstrap --variant=minbase bookworm"
  mmdebstrap --variant=minbase bookworm "$work/base.tar" "$mirror" >&2
  podman import "$work/base.tar" docker.io/library/debian:bookworm >&2
fi
# The runtime stage's bookworm-slim: the same minimal system.
podman tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim

step "podman build (the repo's Dockerfile)"
build_start=$(date +%s)
podman build -t localhost/textgen:latest . >&2
build_seconds=$(($(date +%s) - build_start))
image_mb=$(($(podman image inspect localhost/textgen:latest --format '{{.Size}}') >> 20))

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
grpc=$(free_port)
step "run it: health, generate, user, SIGTERM drain"
podman run -d --name textgen-single -p "127.0.0.1:$grpc:50051" localhost/textgen:latest >/dev/null
for _ in $(seq 120); do
  "$B/bin/textgen" health --addr "127.0.0.1:$grpc" >/dev/null 2>&1 && break
  sleep 0.5
done
health=$("$B/bin/textgen" health --addr "127.0.0.1:$grpc")
text=$("$B/bin/textgen" generate --addr "127.0.0.1:$grpc" --max-tokens 24 --seed 1 "Once upon a time")
user=$(podman exec textgen-single id -u)
pid1=$(podman exec textgen-single cat /proc/1/comm)
# A long stream, then SIGTERM while it runs: it must end whole, the container with 0.
"$B/bin/textgen" generate --addr "127.0.0.1:$grpc" --max-tokens 200 --seed 2 --verbose \
  "Once upon a time" > "$work/drained.txt" 2> "$work/drained.err" &
streamer=$!
sleep 0.3
podman stop -t 60 textgen-single >/dev/null
stream_exit=0
wait "$streamer" || stream_exit=$?
exit_code=$(podman inspect textgen-single --format '{{.State.ExitCode}}')
podman logs textgen-single > "$work/single.log" 2>&1
drained=$(grep -c "drain: all requests finished" "$work/single.log" || true)
podman rm textgen-single >/dev/null

step "podman-compose up: 3 replicas, nginx, Prometheus"
export TEXTGEN_THREADS=1  # three replicas on this one 2-core machine
podman-compose -p "$project" -f deploy/docker-compose.yml build lb prometheus >&2
podman-compose -p "$project" -f deploy/docker-compose.yml up -d >&2
for _ in $(seq 120); do
  "$B/bin/textgen" health --addr 127.0.0.1:50051 >/dev/null 2>&1 && break
  sleep 0.5
done
# Prometheus must have scraped every replica once before the traffic, for rate() to see it.
for _ in $(seq 150); do
  up=$(curl -s 'http://127.0.0.1:9091/api/v1/query?query=count(up==1)' 2>/dev/null |
       sed -n 's/.*"value":\[[0-9.]*,"\([0-9]*\)"\].*/\1/p' || true)
  [[ ${up:-0} == 3 ]] && break
  sleep 0.2
done
/usr/bin/python3 -c "import sys; sys.path.insert(0, 'tests/e2e'); \
from server_harness import generate_stubs; generate_stubs('proto', '$work/stubs')"
status=0
/usr/bin/python3 scripts/scale_out.py --target 127.0.0.1:50051 --stubs "$work/stubs" \
  --reply-tokens 24 --session-prefix steady > "$work/steady.json" || status=1
victim=${project}_textgen-b_1
/usr/bin/python3 scripts/scale_out.py --target 127.0.0.1:50051 --stubs "$work/stubs" \
  --reply-tokens 24 --session-prefix failover --kill-after 100 \
  --kill-command "podman stop -t 60 $victim" > "$work/failover.json" || status=1
victim_exit=$(podman inspect "$victim" --format '{{.State.ExitCode}}')
sleep 11  # two scrape intervals: the stopped replica's last samples and a scrape after the traffic
prometheus_ttft=$(curl -s 'http://127.0.0.1:9091/api/v1/query' --data-urlencode \
  'query=histogram_quantile(0.5, sum by (le) (rate(textgen_time_to_first_token_seconds_bucket[1m])))' |
  /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "none")')
logs=${out%.json}-logs
mkdir -p "$logs"
for service in textgen-a textgen-b textgen-c lb prometheus; do
  podman logs "${project}_${service}_1" > "$logs/$service.log" 2>&1 || true
done
podman-compose -p "$project" -f deploy/docker-compose.yml down >&2

/usr/bin/python3 - "$out" "$build_seconds" "$image_mb" "$health" "$text" "$user" "$pid1" \
  "$stream_exit" "$exit_code" "$drained" "$work/steady.json" "$work/failover.json" \
  "$victim_exit" "$prometheus_ttft" "$(wc -w < "$work/drained.txt")" <<'PY'
import json, sys
(out, build_seconds, image_mb, health, text, user, pid1, stream_exit, exit_code, drained,
 steady, failover, victim_exit, ttft, drained_words) = sys.argv[1:]
report = {
    "image": {"build_seconds": int(build_seconds), "size_mib": int(image_mb)},
    "single": {"health": health.strip(), "generated": text.strip(), "uid": int(user),
               "pid1": pid1.strip(), "stream_during_sigterm_exit": int(stream_exit),
               "stream_during_sigterm_words": int(drained_words),
               "container_exit_code": int(exit_code), "drained": drained == "1"},
    "compose": {"steady": json.load(open(steady)), "failover": json.load(open(failover)),
                "stopped_replica_exit_code": int(victim_exit),
                "prometheus_ttft_p50_seconds": ttft},
}
failures = []
if report["single"]["uid"] == 0: failures.append("the container runs as root")
if not report["single"]["generated"]: failures.append("no text generated")
if int(stream_exit) != 0 or int(exit_code) != 0 or drained != "1":
    failures.append("SIGTERM did not drain the running stream with exit 0")
if report["compose"]["steady"]["failures"] or report["compose"]["failover"]["failures"]:
    failures.append("the scale-out check failed through compose")
if int(victim_exit) != 0: failures.append("the stopped replica did not exit 0")
if ttft == "none": failures.append("Prometheus gave no TTFT quantile")
report["failures"] = failures
json.dump(report, open(out, "w"), indent=1)
print(json.dumps(report, indent=1))
sys.exit(1 if failures else 0)
PY
