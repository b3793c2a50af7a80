#!/bin/sh
# Installs the official `openai` npm client into WORK_DIR once (cached between runs) and runs
# openai_client_test.js against the real server on the bundled model. Exit 77 = skipped (no
# node, or the npm registry unreachable), with the reason printed.
# Usage: run_openai_client_test.sh SERVER_BIN CLIENT_BIN MODEL_GGUF WORK_DIR
set -eu
server=$1 client=$2 model=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed (scripts/install-deps.sh --test installs them)"; exit 77
fi
mkdir -p "$work"
if [ ! -d "$work/node_modules/openai" ]; then
  (cd "$work" && npm install --no-audit --no-fund --no-save --loglevel=error openai@^6) ||
    { echo "SKIP: npm install openai failed (registry unreachable?)"; exit 77; }
fi
NODE_PATH="$work/node_modules" exec node "$here/openai_client_test.js" "$server" "$client" "$model"
