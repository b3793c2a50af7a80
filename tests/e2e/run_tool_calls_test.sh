#!/bin/sh
# Tool calls end to end: random-weight models in Qwen 2.5, Qwen 3, Qwen3.5, Llama 3.1, Mistral-Nemo,
# Phi-4-mini, gpt-oss and LFM2.5 layouts (their real vocabularies and chat templates, from llama.cpp's
# source; Mistral's, Phi-4-mini's and harmony's special tokens added to Llama 3's vocabulary;
# Phi-4-mini's template from Hugging Face's @huggingface/ollama-utils npm package), the
# server's HTTP API, the
# official `openai` npm client (calls, streams, runTools) and `ajv` validating every call's
# arguments. Installs the npm packages into WORK_DIR once.
# Exit 77 = skipped (no node, or the npm registry unreachable), with the reason printed.
# Usage: run_tool_calls_test.sh SERVER_BIN MAKE_GGUF_BIN LLAMACPP_DIR WORK_DIR
set -eu
server=$1 make_gguf=$2 llamacpp=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/node_packages.sh"
. "$here/chat_models.sh"
node_packages "$work" openai@^6 ajv@^8 @huggingface/ollama-utils@0.0.18
NODE_PATH="$work/node_modules" node "$here/phi4_mini_template.js" "$work/phi4-mini.jinja"
make_chat_model "$make_gguf" "$llamacpp" qwen2.5 4096 "$work/qwen2.gguf"
make_chat_model "$make_gguf" "$llamacpp" qwen3 4096 "$work/qwen3.gguf"
make_chat_model "$make_gguf" "$llamacpp" qwen3.5 4096 "$work/qwen3.5.gguf"
make_chat_model "$make_gguf" "$llamacpp" llama3.1 4096 "$work/llama.gguf"
make_chat_model "$make_gguf" "$llamacpp" mistral-nemo 4096 "$work/mistral-nemo.gguf"
make_chat_model "$make_gguf" "$llamacpp" phi4-mini 4096 "$work/phi4-mini.gguf" \
  "$work/phi4-mini.jinja"
make_chat_model "$make_gguf" "$llamacpp" gpt-oss 4096 "$work/gpt-oss.gguf"
make_chat_model "$make_gguf" "$llamacpp" lfm2.5 4096 "$work/lfm2.5.gguf"
NODE_PATH="$work/node_modules" exec node "$here/tool_calls_test.js" "$server" \
  "$work/qwen2.gguf" "$work/qwen3.gguf" "$work/qwen3.5.gguf" "$work/llama.gguf" "$work/mistral-nemo.gguf" \
  "$work/phi4-mini.gguf" "$work/gpt-oss.gguf" "$work/lfm2.5.gguf"
