#!/usr/bin/env bash
# Installs what is needed, builds textgen and starts the server on the bundled default model.
# Usage: scripts/quickstart.sh [extra textgen-server flags]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/build-trees.sh
scripts/install-deps.sh
configure_quickstart build
cmake --build build --target textgen-server textgen -j"$(nproc)"
exec build/bin/textgen-server --listen 127.0.0.1:50051 --metrics-listen 127.0.0.1:9090 \
  --http-listen 127.0.0.1:8080 "$@"
