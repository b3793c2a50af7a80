# Sourced by the e2e wrappers that run Node tests: node_packages WORK_DIR PACKAGE... installs
# the npm packages into WORK_DIR once (checking for each package's directory) and exits 77
# (skipped, with the reason) when node/npm are missing or the registry cannot be reached.
node_packages() {
  _work=$1; shift
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node/npm not installed (scripts/install-deps.sh --test installs them)"; exit 77
  fi
  mkdir -p "$_work"
  for _spec in "$@"; do
    _name=${_spec%@*}
    if [ ! -d "$_work/node_modules/$_name" ]; then
      (cd "$_work" && npm install --no-audit --no-fund --no-save --loglevel=error "$@") ||
        { echo "SKIP: npm install $* failed (registry unreachable?)"; exit 77; }
      return 0
    fi
  done
}
