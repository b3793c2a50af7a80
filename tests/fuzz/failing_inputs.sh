# Sourced by the fuzz scripts: fail_on_failing_inputs DIR exits 1 when libFuzzer left a failing
# input (crash, leak, out-of-memory or timeout) in DIR, whatever its prefix.
fail_on_failing_inputs() {
  local dir=$1 kind
  for kind in crash leak oom timeout; do
    if compgen -G "$dir/*$kind-*" >/dev/null; then
      echo "fuzzers found failing inputs in $dir" >&2
      exit 1
    fi
  done
}
