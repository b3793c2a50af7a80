#!/usr/bin/env bash
# Installs what is needed, builds textgen and runs the whole test suite:
#   1. Release build, warnings as errors, every test (unit, reference, integration, e2e).
#   2. ASan+UBSan build of the model and scheduler tests (no gRPC: Debian's is not instrumented).
#   3. TSan build of the scheduler tests (fake engine; oneDNN/OpenMP are not TSan-instrumented),
#      the chat template tests (renders share one template across threads), the HTTP
#      transport tests (streams fed from other threads) and the request preparation pool.
#   4. The GGUF, chat-template, request-validation, tokenizer, llama2.c, JSON Schema and GBNF
#      fuzzers for a bounded time each.
# Every stage states all the build options it relies on (scripts/lib/build-trees.sh), refuses
# to pass when no test ran, and checks that every test the build registered ran.
# Usage: scripts/test.sh   (env: TEXTGEN_SKIP_SANITIZERS=1, TEXTGEN_FUZZ_SECONDS=60, JOBS=N)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-trees.sh
jobs=${JOBS:-$(nproc)}
scripts/install-deps.sh --test

# CI runs with ../shared beside the checkout. Without it every comparison against the shared
# reference models would skip and the run would still pass, so there it is an error; with it,
# a test that lacks a shared file fails instead of skipping (tests/testing/shared_files.h).
shared_dir=${TEXTGEN_SHARED_DIR:-$PWD/../shared}
if [[ "${CI:-}" == true && ! -d "$shared_dir/models" ]]; then
  echo "error: CI=true but $shared_dir/models is absent: the reference tests would be skipped" >&2
  exit 1
fi
step() { printf '\n==== %s (%s)\n' "$1" "$(date +%T)"; }

step "release build"
configure_release_tests build
cmake --build build -j"$jobs"
step "release tests"
run_counted_ctest build -- -j"$jobs" --timeout 900

if [[ "${TEXTGEN_SKIP_SANITIZERS:-0}" != 1 ]]; then
  step "ASan+UBSan build (engine, scheduler)"
  # llama.cpp's source as the release stage fetched it (its fetch is a py_ test, not run here).
  configure_sanitizer_tests build-asan address \
    -DTEXTGEN_LLAMACPP_REFERENCE_DIR="$PWD/build/reference/llamacpp"
  cmake --build build-asan -j"$jobs"
  step "ASan+UBSan tests"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_counted_ctest build-asan -E '^py_' -- -j"$jobs" --timeout 900

  step "TSan build (scheduler, chat templates, HTTP transport)"
  configure_sanitizer_tests build-tsan thread
  cmake --build build-tsan --target scheduler_test jinja_test http_server_test preparation_pool_test \
    -j"$jobs"
  step "TSan tests"
  TSAN_OPTIONS=halt_on_error=1 run_counted_ctest build-tsan \
    -R '^(SchedulerTest|StopMatcherTest|SessionStoreTest|ChatTemplateTest|HttpServerTest|HttpTlsTest|TlsCredentialsTest|PreparationPoolTest)\.' -- \
    --timeout 900
fi

step "fuzzers (GGUF reader, chat templates, request validation, tokenizers, llama2.c, JSON Schema, GBNF, chat replies, KV block files)"
configure_fuzz build-fuzz
cmake --build build-fuzz --target textgen-fuzz-gguf textgen-fuzz-jinja textgen-make-random-gguf \
  textgen-fuzz-request textgen-fuzz-tokenizer textgen-fuzz-llama2c textgen-fuzz-schema \
  textgen-fuzz-grammar textgen-fuzz-reply textgen-fuzz-kvblock -j"$jobs"
# Every fuzzer is single-threaded, so they run side by side: the GGUF fuzzer beside the chat
# template one (its output printed after), then the others $jobs at a time.
fuzz_seconds=${TEXTGEN_FUZZ_SECONDS:-60}
llamacpp=build/reference/llamacpp/llama.cpp
mkdir -p build-fuzz/fuzz
tests/fuzz/run_gguf_fuzz.sh build-fuzz "$fuzz_seconds" > build-fuzz/fuzz/gguf.out 2>&1 &
gguf_fuzz=$!
fuzz_status=0
tests/fuzz/run_jinja_fuzz.sh build-fuzz "$fuzz_seconds" "$llamacpp/models/templates" || fuzz_status=1
wait "$gguf_fuzz" || fuzz_status=1
cat build-fuzz/fuzz/gguf.out
FUZZ_JOBS=$jobs tests/fuzz/run_fuzzers.sh build-fuzz "$fuzz_seconds" "$llamacpp" || fuzz_status=1
((fuzz_status == 0)) || { echo "error: a fuzzer failed (its output is above)" >&2; exit 1; }
step "all tests passed"
