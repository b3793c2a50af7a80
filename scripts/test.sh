#!/usr/bin/env bash
# Installs what is needed, builds textgen and runs the whole test suite:
#   1. Release build, warnings as errors, every test (unit, reference, integration, e2e).
#   2. ASan+UBSan build of the model and scheduler tests (no gRPC: Debian's is not instrumented).
#   3. TSan build of the scheduler tests (fake engine; oneDNN/OpenMP are not TSan-instrumented).
#   4. The GGUF fuzzer for a bounded time.
# Usage: scripts/test.sh   (env: TEXTGEN_SKIP_SANITIZERS=1, TEXTGEN_FUZZ_SECONDS=60, JOBS=N)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
scripts/install-deps.sh --test
step() { printf '\n==== %s (%s)\n' "$1" "$(date +%T)"; }

step "release build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTEXTGEN_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
step "release tests"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 900

if [[ "${TEXTGEN_SKIP_SANITIZERS:-0}" != 1 ]]; then
  step "ASan+UBSan build (engine, scheduler)"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEXTGEN_SANITIZE=address \
    -DTEXTGEN_BUILD_SERVER=OFF -DTEXTGEN_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  step "ASan+UBSan tests"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 900 -E '^py_'

  step "TSan build (scheduler)"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEXTGEN_SANITIZE=thread \
    -DTEXTGEN_BUILD_SERVER=OFF -DTEXTGEN_BUILD_BENCH=OFF >/dev/null
  cmake --build build-tsan --target scheduler_test -j"$jobs"
  step "TSan tests"
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure --timeout 900 \
    -R '^(SchedulerTest|StopMatcherTest|SessionStoreTest)\.'
fi

step "GGUF fuzzer"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTEXTGEN_FUZZ=ON -DTEXTGEN_BUILD_SERVER=OFF -DTEXTGEN_BUILD_BENCH=OFF >/dev/null
cmake --build build-fuzz --target textgen-fuzz-gguf textgen-make-random-gguf -j"$jobs"
tests/fuzz/run_gguf_fuzz.sh build-fuzz "${TEXTGEN_FUZZ_SECONDS:-60}"
step "all tests passed"
