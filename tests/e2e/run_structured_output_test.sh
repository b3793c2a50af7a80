#!/bin/sh
# Structured output end to end: random-weight models in Qwen 2.5, Llama 3.1 and gpt-oss layouts
# (their real vocabularies and chat templates, from llama.cpp's source; gpt-oss's harmony tags
# added to Llama 3's vocabulary, its answer the final message after its analysis), the server's
# HTTP API, the
# official `openai` npm client with response_format json_schema, and `ajv` (draft 2020-12,
# with ajv-formats) validating every answer. Installs the npm packages into WORK_DIR once.
# Exit 77 = skipped (no node, or the npm registry unreachable), with the reason printed.
# Usage: run_structured_output_test.sh SERVER_BIN MAKE_GGUF_BIN LLAMACPP_DIR WORK_DIR
set -eu
server=$1 make_gguf=$2 llamacpp=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/node_packages.sh"
. "$here/chat_models.sh"
node_packages "$work" openai@^6 ajv@^8 ajv-formats@^3
make_chat_model "$make_gguf" "$llamacpp" qwen2.5 2048 "$work/qwen2.gguf"
make_chat_model "$make_gguf" "$llamacpp" llama3.1 2048 "$work/llama.gguf"
make_chat_model "$make_gguf" "$llamacpp" gpt-oss 2048 "$work/gpt-oss.gguf"
NODE_PATH="$work/node_modules" exec node "$here/structured_output_test.js" "$server" \
  "$work/qwen2.gguf" "$work/llama.gguf" "$work/gpt-oss.gguf"
