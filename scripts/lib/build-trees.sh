# Sourced by the scripts that configure a build tree (quickstart.sh, test.sh, the script test):
# every tree is configured with every option it relies on stated, so an option cached by an
# earlier configure of the same directory (quickstart's TEXTGEN_BUILD_TESTS=OFF, say) can never
# carry over into another script's build.
#
# Each configure_* function takes the build directory and extra cmake arguments.

# Options every tree states. Werror is on in every tree, so switching a directory between
# quickstart and test.sh never recompiles everything for a flag change.
_textgen_common_options=(-G Ninja -DTEXTGEN_WERROR=ON)

# Release server + CLI only (what quickstart.sh builds and runs).
configure_quickstart() {
  local dir=$1; shift
  cmake -S . -B "$dir" "${_textgen_common_options[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTEXTGEN_SANITIZE= -DTEXTGEN_FUZZ=OFF -DTEXTGEN_BUILD_SERVER=ON -DTEXTGEN_BUILD_TESTS=OFF \
    -DTEXTGEN_BUILD_BENCH=OFF "$@" >/dev/null
}

# Release build with the whole test suite (test.sh's first stage).
configure_release_tests() {
  local dir=$1; shift
  cmake -S . -B "$dir" "${_textgen_common_options[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTEXTGEN_SANITIZE= -DTEXTGEN_FUZZ=OFF -DTEXTGEN_BUILD_SERVER=ON -DTEXTGEN_BUILD_TESTS=ON \
    -DTEXTGEN_BUILD_BENCH=ON "$@" >/dev/null
}

# Engine and scheduler tests under a sanitizer (address or thread); no gRPC, which Debian
# does not build instrumented.
configure_sanitizer_tests() {
  local dir=$1 sanitizer=$2; shift 2
  cmake -S . -B "$dir" "${_textgen_common_options[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTEXTGEN_SANITIZE="$sanitizer" -DTEXTGEN_FUZZ=OFF -DTEXTGEN_BUILD_SERVER=OFF \
    -DTEXTGEN_BUILD_TESTS=ON -DTEXTGEN_BUILD_BENCH=OFF "$@" >/dev/null
}

# The server under AddressSanitizer with leak detection, for scripts/soak.sh (BUILD=build-asan-server
# scripts/soak.sh). Debian's gRPC is not instrumented; ASan only needs our code to be.
configure_asan_server() {
  local dir=$1; shift
  cmake -S . -B "$dir" "${_textgen_common_options[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTEXTGEN_SANITIZE=address -DTEXTGEN_FUZZ=OFF -DTEXTGEN_BUILD_SERVER=ON \
    -DTEXTGEN_BUILD_TESTS=ON -DTEXTGEN_BUILD_BENCH=OFF "$@" >/dev/null
}

# libFuzzer targets (clang).
configure_fuzz() {
  local dir=$1; shift
  CC=clang CXX=clang++ cmake -S . -B "$dir" "${_textgen_common_options[@]}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEXTGEN_SANITIZE= -DTEXTGEN_FUZZ=ON \
    -DTEXTGEN_BUILD_SERVER=ON -DTEXTGEN_BUILD_TESTS=ON -DTEXTGEN_BUILD_BENCH=OFF "$@" >/dev/null
}

# registered_test_count DIR [ctest selection args]: how many tests ctest would run.
registered_test_count() {
  local dir=$1; shift
  ctest --test-dir "$dir" -N "$@" | sed -n 's/^Total Tests: \([0-9]*\)$/\1/p'
}

# run_counted_ctest DIR [ctest args]: runs ctest, fails when no test runs, when a test fails,
# or when the number that ran is not the number the build registered for the same selection.
# Selection (-R/-E) args must come before any other ctest args, after a literal `--`:
#   run_counted_ctest build -E '^py_' -- --timeout 900
run_counted_ctest() {
  local dir=$1; shift
  local selection=() rest=()
  while (($#)) && [[ $1 != -- ]]; do selection+=("$1"); shift; done
  (($#)) && shift
  rest=("$@")
  local expected log ran
  expected=$(registered_test_count "$dir" "${selection[@]}")
  if [[ -z $expected || $expected -eq 0 ]]; then
    echo "error: no tests registered in $dir for selection '${selection[*]}'" >&2
    return 1
  fi
  log=$(mktemp)
  local status=0
  ctest --test-dir "$dir" --no-tests=error --output-on-failure "${selection[@]}" "${rest[@]}" \
    | tee "$log" || status=$?
  ran=$(sed -n 's/.*tests passed, [0-9]* tests* failed out of \([0-9]*\)$/\1/p' "$log" | tail -n 1)
  rm -f "$log"
  ((status == 0)) || return "$status"
  if [[ $ran != "$expected" ]]; then
    echo "error: ctest in $dir ran ${ran:-no} tests, the build registered $expected" >&2
    return 1
  fi
  echo "==== $dir: $ran of $expected registered tests ran and passed"
}
