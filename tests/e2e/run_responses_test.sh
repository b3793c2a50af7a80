#!/bin/sh
# The Responses API end to end: random-weight models in Qwen 3 and Llama 3.1 layouts (their
# real vocabularies and chat templates, from llama.cpp's source), the official `openai` npm
# client (create, stream, retrieve, delete, function tools, text.format) and `ajv`. Installs the
# npm packages into WORK_DIR once.
# Exit 77 = skipped (no node, or the npm registry unreachable), with the reason printed.
# Usage: run_responses_test.sh SERVER_BIN MAKE_GGUF_BIN LLAMACPP_DIR WORK_DIR
set -eu
server=$1 make_gguf=$2 llamacpp=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/node_packages.sh"
. "$here/chat_models.sh"
node_packages "$work" openai@^6 ajv@^8
make_chat_model "$make_gguf" "$llamacpp" qwen3 4096 "$work/qwen3.gguf"
make_chat_model "$make_gguf" "$llamacpp" llama3.1 4096 "$work/llama.gguf"
NODE_PATH="$work/node_modules" exec node "$here/responses_test.js" "$server" \
  "$work/qwen3.gguf" "$work/llama.gguf"
