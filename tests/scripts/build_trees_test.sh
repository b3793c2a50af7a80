#!/usr/bin/env bash
# Tests scripts/lib/build-trees.sh, which quickstart.sh and test.sh configure their trees with:
#  1. a tree configured the way quickstart.sh does, then the way test.sh does, has the test
#     suite (the bug this guards against: test.sh kept quickstart's cached TEXTGEN_BUILD_TESTS=OFF
#     and "passed" with no tests), and the other order gives quickstart its own options back;
#  2. run_counted_ctest fails when no test is registered and passes, naming the count, when all
#     registered tests run.
# cmake configure only, no build. Usage: build_trees_test.sh SOURCE_DIR WORK_DIR
set -euo pipefail
source_dir=$(cd "${1:?usage: build_trees_test.sh SOURCE_DIR WORK_DIR}" && pwd)
work=${2:?usage: build_trees_test.sh SOURCE_DIR WORK_DIR}
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
cd "$source_dir"
source scripts/lib/build-trees.sh

fail() { echo "FAIL: $*" >&2; exit 1; }
cache_value() { sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt"; }
# Captured first: grep -q would close the pipe early and fail the script under pipefail.
has_target() {
  local targets
  targets=$(cmake --build "$1" --target help)
  grep -q "^$2:" <<<"$targets"
}

tree=$work/tree
configure_quickstart "$tree"
[[ $(cache_value "$tree" TEXTGEN_BUILD_TESTS) == OFF ]] || fail "quickstart tree builds tests"
has_target "$tree" engine_test && fail "quickstart tree has the engine_test target"

configure_release_tests "$tree"
[[ $(cache_value "$tree" TEXTGEN_BUILD_TESTS) == ON ]] ||
  fail "test.sh's configure kept TEXTGEN_BUILD_TESTS=$(cache_value "$tree" TEXTGEN_BUILD_TESTS)"
for target in engine_test tokenizer_test scheduler_test service_test client_test grpc_e2e_test; do
  has_target "$tree" "$target" || fail "test.sh's tree lacks the $target target"
done
# Tests registered with add_test exist right after configure (gtest ones appear at build time).
count=$(registered_test_count "$tree")
((count > 0)) || fail "no tests registered after test.sh's configure"

configure_quickstart "$tree"
[[ $(cache_value "$tree" TEXTGEN_BUILD_TESTS) == OFF ]] || fail "quickstart kept test.sh's options"
[[ $(cache_value "$tree" TEXTGEN_WERROR) == ON ]] || fail "the two scripts disagree on Werror"

# run_counted_ctest on a tiny project: none registered fails, all registered pass.
mini=$work/mini
mkdir -p "$mini/src"
cat >"$mini/src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(mini NONE)
enable_testing()
if(WITH_TESTS)
  add_test(NAME first COMMAND true)
  add_test(NAME second COMMAND true)
endif()
CMAKE
cmake -S "$mini/src" -B "$mini/empty" -DWITH_TESTS=OFF >/dev/null
if run_counted_ctest "$mini/empty" >"$work/empty.log" 2>&1; then
  fail "run_counted_ctest passed with no tests registered"
fi
grep -q "no tests registered" "$work/empty.log" || fail "no-test failure did not say why"
cmake -S "$mini/src" -B "$mini/two" -DWITH_TESTS=ON >/dev/null
run_counted_ctest "$mini/two" >"$work/two.log" 2>&1 || fail "run_counted_ctest failed on 2 tests"
grep -q "2 of 2 registered tests ran and passed" "$work/two.log" || fail "count not reported"
run_counted_ctest "$mini/two" -R '^first$' >"$work/one.log" 2>&1 || fail "selection failed"
grep -q "1 of 1 registered tests ran and passed" "$work/one.log" || fail "selection not counted"
echo "build trees: ok"
