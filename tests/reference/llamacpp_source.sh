#!/usr/bin/env bash
# Makes llama.cpp's source (the reference for what a GGUF file means) and its prebuilt libllama
# available under DIR, from the npm registry (the only place this project may fetch from):
#   DIR/llama.cpp/            git clone of node-llama-cpp's llama/gitRelease.bundle: gguf-py/,
#                             models/ggml-vocab-*.gguf (+ .inp/.out), models/templates/*.jinja
#   DIR/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.so (prebuilt, CPU)
# Idempotent; prints DIR/llama.cpp. Nothing here is ever copied into the repository.
# Usage: tests/reference/llamacpp_source.sh DIR
set -euo pipefail
dir=${1:?usage: llamacpp_source.sh DIR}
version=3.22.1  # node-llama-cpp release whose llama.cpp the reference tests were written against
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [[ ! -f $dir/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle ||
      ! -d $dir/npm/node_modules/@node-llama-cpp/linux-x64 ]]; then
  mkdir -p "$dir/npm"
  (cd "$dir/npm" && [[ -f package.json ]] || echo '{"name":"textgen-reference","private":true}' >package.json)
  # --ignore-scripts: no postinstall download or build; --omit=optional: no GPU binaries.
  (cd "$dir/npm" && npm install --ignore-scripts --omit=optional --no-audit --no-fund \
    "node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" >&2)
fi
if [[ ! -d $dir/llama.cpp/gguf-py ]]; then
  rm -rf "$dir/llama.cpp"
  git -c advice.detachedHead=false clone -q \
    "$dir/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$dir/llama.cpp" >&2
fi
[[ -d $dir/llama.cpp/gguf-py ]] || { echo "llama.cpp source missing under $dir" >&2; exit 1; }
echo "$dir/llama.cpp"
