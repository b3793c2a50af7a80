#!/usr/bin/env bash
# A long fuzz campaign (the 10M-execution runs of docs/reliability.md), in chunks: runs
# tests/fuzz/run_fuzzers.sh for CHUNK executions of one fuzzer at a time and appends a line per
# chunk to LOG (its executed units, exit status and seconds), until the chunks that passed add
# up to TOTAL or the file LOG.stop exists. Each chunk grows the fuzzer's corpus in BUILD_DIR and
# is checked for failing inputs; the first failing chunk ends the campaign and keeps its output
# in LOG.failed.
# Usage: setsid tests/fuzz/campaign.sh BUILD_DIR LLAMACPP_DIR NAME CHUNK TOTAL LOG &
#   (run_fuzzers.sh names BUILD_DIR and LLAMACPP_DIR; env FUZZ_TIMEOUT as there, default 600 s
#   here: a campaign shares the machine.)
# Started with setsid, it lowers its whole scheduling group to nice 19: a job in its own session
# (setsid, another terminal) is its own autogroup, which `nice` alone leaves competing with
# everything else as an equal (docs/scaling.md). Stop it rather than pausing it (a pause longer
# than FUZZ_TIMEOUT ends the chunk on a false timeout): touch LOG.stop ends it after the chunk;
# killing the fuzzer after that ends it at once, the chunk logged as stopped and not counted.
set -uo pipefail
usage="usage: campaign.sh BUILD_DIR LLAMACPP_DIR NAME CHUNK TOTAL LOG"
build=${1:?$usage} llamacpp=${2:?$usage} name=${3:?$usage} chunk=${4:?$usage}
total=${5:?$usage} log=${6:?$usage}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/failing_inputs.sh"
# (An autogroup is a whole session's: lowered from a shell's session, it would slow everything
# that shell starts afterwards, benchmarks included.)
if [[ $(ps -o sid= -p $$ | tr -d ' ') == "$$" ]]; then
  echo 19 > /proc/self/autogroup 2>/dev/null || true
else
  echo "note: not started with setsid, so its scheduling group (the caller's session) is left" \
    "as it is; only its own nice is lowered" >&2
fi
renice -n 19 $$ > /dev/null

passed() { awk '/ rc=0 / { split($2, u, "="); n += u[2] } END { print n + 0 }' "$log" 2>/dev/null || echo 0; }
touch "$log"
while [[ ! -e $log.stop ]] && (( $(passed) < total )); do
  out=$(mktemp)
  start=$(date +%s)
  FUZZ_RUNS=$chunk FUZZ_TIMEOUT=${FUZZ_TIMEOUT:-600} \
    bash "$here/run_fuzzers.sh" "$build" 0 "$llamacpp" "$name" > "$out" 2>&1
  rc=$?
  units=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out" | tail -1)
  line="$(date -u +%FT%TZ) units=${units:-0} rc=$rc secs=$(($(date +%s) - start))"
  if ((rc != 0)) && [[ -e $log.stop ]] && grep -q 'libFuzzer: run interrupted' "$out" &&
    (fail_on_failing_inputs "$build/fuzz/artifacts" 2> /dev/null); then
    # Stopped on purpose (LOG.stop, then the fuzzer killed): not a failure, and not counted.
    echo "$line stopped (not counted)" >> "$log"
    rm -f "$out"
    break
  fi
  echo "$line" >> "$log"
  if ((rc != 0)); then
    mv "$out" "$log.failed"
    echo "chunk failed (rc=$rc): $log.failed" >&2
    exit 1
  fi
  rm -f "$out"
done
echo "$name: $(passed) executions in chunks that passed ($log)"
