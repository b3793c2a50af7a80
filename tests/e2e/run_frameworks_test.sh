#!/bin/sh
# The frameworks people build on, unchanged, against the server's HTTP API: the OpenAI Agents
# SDK (through the Responses API and Chat Completions), LangChain.js, the Vercel AI SDK and the
# Codex CLI (a native binary the npm package ships), on a random-weight model in Qwen 3's layout (its real vocabulary and chat template, from llama.cpp's
# source). Installs the npm packages into WORK_DIR once (pinned to major versions).
# Exit 77 = skipped (no node, or the npm registry unreachable), with the reason printed.
# Usage: run_frameworks_test.sh SERVER_BIN MAKE_GGUF_BIN LLAMACPP_DIR WORK_DIR
set -eu
server=$1 make_gguf=$2 llamacpp=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/node_packages.sh"
. "$here/chat_models.sh"
node_packages "$work" openai@^6 @openai/agents@~0.20.0 @langchain/openai@^1 @langchain/core@^1 \
  ai@^6 @ai-sdk/openai-compatible@^2 zod@^4 @openai/codex@0.169.0
# Codex's prompt alone is about 5,400 tokens.
make_chat_model "$make_gguf" "$llamacpp" qwen3 16384 "$work/qwen3.gguf"
NODE_PATH="$work/node_modules" exec node "$here/frameworks_test.js" "$server" "$work/qwen3.gguf" \
  "$work/node_modules/.bin/codex"
