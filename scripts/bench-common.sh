# Sourced by the bench-*-vs-llamacpp.sh scripts: where the tools and model files are.
#   env: LLAMA_BIN (default /tmp/llamacpp-peer/llama.cpp/build/bin, from
#        ../shared/tools/build-llamacpp-peer.sh), BUILD (default build), MODELS (default /tmp),
#        LLAMACPP_SRC (default BUILD/reference/llamacpp/llama.cpp)
L=${LLAMA_BIN:-/tmp/llamacpp-peer/llama.cpp/build/bin}
B=${BUILD:-build}
M=${MODELS:-/tmp}
# llama.cpp's source (its test vocabularies and chat templates), as test.sh fetches it.
S=${LLAMACPP_SRC:-$B/reference/llamacpp/llama.cpp}

# require_tools PATH...: exits with a message naming the first missing executable.
require_tools() {
  local tool
  for tool in "$@"; do
    [[ -x $tool ]] || {
      echo "missing $tool (llama.cpp: ../shared/tools/build-llamacpp-peer.sh; textgen: cmake --build $B)" >&2
      exit 1
    }
  done
}
