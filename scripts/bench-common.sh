# Sourced by the bench-*-vs-llamacpp.sh scripts: where the tools and model files are.
#   env: LLAMA_BIN (default /tmp/llamacpp-peer/llama.cpp/build/bin, from
#        ../shared/tools/build-llamacpp-peer.sh), BUILD (default build), MODELS (default /tmp),
#        LLAMACPP_SRC (default BUILD/reference/llamacpp/llama.cpp)
L=${LLAMA_BIN:-/tmp/llamacpp-peer/llama.cpp/build/bin}
B=${BUILD:-build}
M=${MODELS:-/tmp}
# llama.cpp's source (its test vocabularies and chat templates), as test.sh fetches it.
S=${LLAMACPP_SRC:-$B/reference/llamacpp/llama.cpp}
# In the names of the random files made once in $M: bump it when textgen-make-random-gguf
# changes what it writes, so no benchmark reads a file the tool would no longer make
# (2: the K-quant mixes give each tensor llama-quantize's type).
# (3: Mamba2 files carry their convolution's bias and Granite 4.0-H's NoPE switch).
RANDOM_GGUF_REV=3

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

# qwen35_chat_model DTYPE CONTEXT: makes (once, in $M) and prints the path of the
# Qwen3.5-0.8B-shaped random-weight hybrid (qwen35: dim 1024, 24 layers of which every 4th
# attends, Gated DeltaNet's 16 + 16 heads of 128) with llama.cpp's Qwen3.5 test vocabulary and
# the Qwen3.5 chat template.
qwen35_chat_model() {
  local dtype=$1 context=$2
  local vocab=$S/models/ggml-vocab-qwen35.gguf
  local template=$S/models/templates/Qwen3.5-4B.jinja
  local model=$M/qwen35-0.8b-shape-$dtype-ctx$context-r$RANDOM_GGUF_REV.gguf
  require_tools "$B/bin/textgen-make-random-gguf"
  [[ -f $vocab ]] || { echo "missing $vocab (tests/reference/llamacpp_source.sh $B/reference/llamacpp)" >&2; exit 1; }
  [[ -f $model ]] || "$B/bin/textgen-make-random-gguf" --arch qwen35 --preset tiny --dim 1024 \
    --hidden 3584 --layers 24 --heads 8 --kv-heads 2 --head-dim 256 --ssm-key-heads 16 \
    --ssm-value-heads 16 --ssm-head-dim 128 --context "$context" --dtype "$dtype" \
    --vocab-from "$vocab" --chat-template "$template" --name qwen3.5-0.8b-shape --out "$model" >/dev/null
  echo "$model"
}

# llama1b_chat_model DTYPE CONTEXT: makes (once, in $M) and prints the path of the
# Llama-3.2-1B-shaped random-weight file with llama.cpp's Llama 3 vocabulary and the Llama 3.1
# chat template, the file the HTTP benchmarks load.
llama1b_chat_model() {
  local dtype=$1 context=$2
  local vocab=$S/models/ggml-vocab-llama-bpe.gguf
  local template=$S/models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja
  local model=$M/llama1b-shape-$dtype-ctx$context-r$RANDOM_GGUF_REV.gguf
  require_tools "$B/bin/textgen-make-random-gguf"
  [[ -f $vocab ]] || { echo "missing $vocab (tests/reference/llamacpp_source.sh $B/reference/llamacpp)" >&2; exit 1; }
  [[ -f $model ]] || "$B/bin/textgen-make-random-gguf" --arch llama --preset tiny --dim 2048 \
    --hidden 8192 --layers 16 --heads 32 --kv-heads 8 --context "$context" --dtype "$dtype" \
    --vocab-from "$vocab" --chat-template "$template" --name llama-3.2-1b-shape --out "$model" >/dev/null
  echo "$model"
}

# bert_base_model DTYPE: a BERT-base-shaped random-weight encoder (12 layers, dim 768, FFN
# 3072, 12 heads, context 512, mean pooling) with BGE's WordPiece vocabulary; prints its path.
bert_base_model() {
  local dtype=$1
  local vocab=$S/models/ggml-vocab-bert-bge.gguf
  local model=$M/bert-base-shape-$dtype-r$RANDOM_GGUF_REV.gguf
  require_tools "$B/bin/textgen-make-random-gguf"
  [[ -f $vocab ]] || { echo "missing $vocab (tests/reference/llamacpp_source.sh $B/reference/llamacpp)" >&2; exit 1; }
  [[ -f $model ]] || "$B/bin/textgen-make-random-gguf" --arch bert --preset bert-base \
    --dtype "$dtype" --vocab-from "$vocab" --pooling mean --name bert-base-shape --out "$model" >/dev/null
  echo "$model"
}

# openai_node_modules NAME: installs the official `openai` npm client (once) into $M/NAME and
# prints the node_modules folder to put on NODE_PATH.
openai_node_modules() {
  command -v node >/dev/null || { echo "node is needed (scripts/install-deps.sh --test)" >&2; exit 1; }
  local work=$M/$1
  mkdir -p "$work"
  [[ -d $work/node_modules/openai ]] ||
    (cd "$work" && npm install --no-audit --no-fund --no-save --loglevel=error openai@^6 >&2)
  echo "$work/node_modules"
}

# warn_about_neighbours: samples the machine's CPU for a second and warns on stderr when other
# processes keep it busy. Their nice value does not protect a benchmark: a job started in
# another login session (setsid, another terminal) is its own scheduling group (autogroup), and
# groups share the CPU by the group's nice, not the tasks' (docs/scaling.md). Stop such jobs,
# or lower their whole group: echo 19 > /proc/PID/autogroup.
warn_about_neighbours() {
  local a b busy
  read -r -a a < <(head -1 /proc/stat)
  sleep 1
  read -r -a b < <(head -1 /proc/stat)
  # fields: cpu user nice system idle iowait irq softirq steal
  busy=$(( (b[1] + b[2] + b[3] + b[6] + b[7]) - (a[1] + a[2] + a[3] + a[6] + a[7]) ))
  local total=$(( busy + b[4] + b[5] - a[4] - a[5] ))
  if (( total > 0 && busy * 10 > total )); then
    echo "warning: the CPU was $(( 100 * busy / total ))% busy before this benchmark started;" \
      "its figures will be low and noisy. Busiest processes (pid, nice, %cpu, autogroup):" >&2
    local pid
    for pid in $(ps -eo pid=,pcpu= --sort=-pcpu | awk '$2 > 5 { print $1 }' | head -5); do
      echo "  $pid $(ps -o ni=,pcpu=,comm= -p "$pid") $(cat "/proc/$pid/autogroup" 2>/dev/null)" >&2
    done
  fi
}
warn_about_neighbours
