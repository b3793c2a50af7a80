#!/usr/bin/env bash
# Runs the chat-template fuzzer for a bounded time.
# Usage: tests/fuzz/run_jinja_fuzz.sh BUILD_DIR SECONDS [TEMPLATE_DIR]
#   BUILD_DIR was configured with -DTEXTGEN_FUZZ=ON and clang and has built textgen-fuzz-jinja.
# Env: FUZZ_RUNS=N runs N executions instead of SECONDS (the 10M-execution runs);
#   FUZZ_TIMEOUT=S is the per-input timeout (default 10 s; raise it on a starved machine).
# Seeds: the semantic cases of tests/model/chat/jinja_cases.py and, when TEMPLATE_DIR is given (or
# llama.cpp's source is in BUILD_DIR/reference), its real chat templates. Crash inputs land in
# BUILD_DIR/fuzz/jinja_artifacts; the whole log in BUILD_DIR/fuzz/jinja.log.
set -euo pipefail
build=${1:?usage: run_jinja_fuzz.sh BUILD_DIR SECONDS [TEMPLATE_DIR]}
seconds=${2:?usage: run_jinja_fuzz.sh BUILD_DIR SECONDS [TEMPLATE_DIR]}
templates=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
fuzzer=$build/bin/textgen-fuzz-jinja
[ -x "$fuzzer" ] || { echo "missing $fuzzer (configure with -DTEXTGEN_FUZZ=ON and clang)" >&2; exit 2; }

work=$build/fuzz
corpus=$work/jinja_corpus
artifacts=$work/jinja_artifacts
mkdir -p "$corpus" "$artifacts"
/usr/bin/python3 - "$here/../model/chat" "$corpus" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
import jinja_cases
for i, (name, template, _) in enumerate(jinja_cases.SEMANTIC_CASES):
    with open(os.path.join(sys.argv[2], f"seed_{i:03d}"), "w", encoding="utf-8") as f:
        f.write(template)
PY
if [[ -n $templates && -d $templates ]]; then
  cp "$templates"/*.jinja "$corpus/"
else
  echo "note: no chat template directory given; seeding from the semantic cases only" >&2
fi

limit=(-max_total_time="$seconds")
[[ -n "${FUZZ_RUNS:-}" ]] && limit=(-runs="$FUZZ_RUNS")
"$fuzzer" "$corpus" -dict="$here/jinja.dict" "${limit[@]}" -timeout="${FUZZ_TIMEOUT:-10}" \
  -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" 2>&1 | tee "$work/jinja.log" | tail -n 25
status=${PIPESTATUS[0]}
source "$here/failing_inputs.sh"
fail_on_failing_inputs "$artifacts"
exit "$status"
