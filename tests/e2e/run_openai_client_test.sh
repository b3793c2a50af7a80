#!/bin/sh
# Installs the official `openai` npm client into WORK_DIR once (cached between runs) and runs
# openai_client_test.js against the real server on the bundled model. Exit 77 = skipped (no
# node, or the npm registry unreachable), with the reason printed.
# Usage: run_openai_client_test.sh SERVER_BIN CLIENT_BIN MODEL_GGUF WORK_DIR
set -eu
server=$1 client=$2 model=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/node_packages.sh"
node_packages "$work" openai@^6
NODE_PATH="$work/node_modules" exec node "$here/openai_client_test.js" "$server" "$client" "$model"
