#!/bin/sh
# Installs @grpc/grpc-js and @grpc/proto-loader into WORK_DIR once (cached between runs) and
# runs node_client_test.js. Exit 77 = skipped (no model, no node, or npm registry unreachable).
# Usage: run_node_client_test.sh SERVER_BIN PROTO_ROOT SHARED_DIR WORK_DIR
set -eu
server=$1 proto_root=$2 shared=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
model="$shared/models/stories260K/stories260K.gguf"
# Skip when ../shared is absent, fail when it is present without the model (one rule for both).
python3 "$(dirname "$0")/../testing/shared_files.py" "$shared" "$model" || exit $?
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node/npm not installed"; exit 77
fi
mkdir -p "$work"
if [ ! -d "$work/node_modules/@grpc/grpc-js" ] || [ ! -d "$work/node_modules/@grpc/proto-loader" ]; then
  (cd "$work" && npm install --no-audit --no-fund --no-save --loglevel=error \
      @grpc/grpc-js@^1 @grpc/proto-loader@^0.7) || { echo "SKIP: npm install failed"; exit 77; }
fi
NODE_PATH="$work/node_modules" exec node "$here/node_client_test.js" "$server" "$proto_root" "$model"
