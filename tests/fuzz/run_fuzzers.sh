#!/usr/bin/env bash
# Runs the request, tokenizer, llama2.c, JSON Schema, GBNF, chat-reply and KV block fuzzers for a
# bounded time each (the GGUF and chat template fuzzers have their own scripts).
# Usage: tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS LLAMACPP_DIR [request|tokenizer|llama2c ...]
#   BUILD_DIR was configured by configure_fuzz (scripts/lib/build-trees.sh) and has built
#   textgen-fuzz-request, -tokenizer, -llama2c, -schema, -grammar, -reply and -kvblock.
#   LLAMACPP_DIR is the llama.cpp source (tests/reference/llamacpp_source.sh): its
#   models/ggml-vocab-*.gguf are the tokenizer fuzzer's vocabularies and their .inp test texts its seeds; its Llama 3 template
#   is the request fuzzer's named variant; its grammars/*.gbnf seed the grammar fuzzer. Debian's
#   json-schema-test-suite schemas seed the schema fuzzer.
# Env: FUZZ_RUNS=N runs N executions per fuzzer instead of SECONDS (for the 10M-execution runs);
#   FUZZ_TIMEOUT=S is the per-input timeout (default 10 s; raise it on a starved machine);
#   FUZZ_JOBS=N runs N fuzzers side by side (default 1; each is single-threaded), each one's
#   output printed whole, in order, once it has finished.
# Seeds: tests/fuzz/corpus/request/*.textproto (encoded with protoc), the .inp texts, the real
# stories260K checkpoint and tok512.bin from ../shared (when present). Failing inputs land in
# BUILD_DIR/fuzz/artifacts and fail the script.
set -euo pipefail
build=${1:?usage: run_fuzzers.sh BUILD_DIR SECONDS LLAMACPP_DIR [names]}
seconds=${2:?usage: run_fuzzers.sh BUILD_DIR SECONDS LLAMACPP_DIR [names]}
llamacpp=${3:?usage: run_fuzzers.sh BUILD_DIR SECONDS LLAMACPP_DIR [names]}
shift 3
names=("$@")
((${#names[@]})) || names=(request tokenizer llama2c schema grammar reply kvblock)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
shared=${TEXTGEN_SHARED_DIR:-$repo/../shared}
work=$build/fuzz
mkdir -p "$work/artifacts"
limit=(-max_total_time="$seconds")
[[ -n "${FUZZ_RUNS:-}" ]] && limit=(-runs="$FUZZ_RUNS")

seed_request() {
  local corpus=$1 seed kind
  for seed in "$here"/corpus/request/*.textproto; do
    # Byte 0 picks the message: 0 Generate, 1 Chat, 2 Embed (3: a Responses API body, below).
    case $(basename "$seed") in
      chat_*) kind=ChatRequest; printf '\x01' ;;
      embed_*) kind=EmbedRequest; printf '\x02' ;;
      *) kind=GenerateRequest; printf '\x00' ;;
    esac \
      > "$corpus/$(basename "$seed" .textproto)"
    grep -v '^#' "$seed" | protoc --proto_path="$repo/proto" \
      --encode="textgen.v1.$kind" textgen/v1/textgen.proto >> "$corpus/$(basename "$seed" .textproto)"
  done
  for seed in "$here"/corpus/request/*.json; do
    { printf '\x03'; cat "$seed"; } > "$corpus/$(basename "$seed" .json)"
  done
}

seed_tokenizer() {
  local corpus=$1
  # Every test text of every vocabulary, for vocabularies 0..7 (byte 0) with BOS (byte 1 = 1).
  /usr/bin/python3 - "$llamacpp/models" "$corpus" <<'PY'
import glob, os, sys
models, corpus = sys.argv[1], sys.argv[2]
n = 0
for path in sorted(glob.glob(os.path.join(models, "ggml-vocab-*.gguf.inp"))):
    text = open(path, "rb").read()
    for case in text.split(b"\n__ggml_vocab_test__\n"):
        if not case or len(case) > 2048:
            continue
        with open(os.path.join(corpus, "inp_%d" % n), "wb") as out:
            out.write(bytes([n % 8, 1]) + case)
        n += 1
PY
}

seed_llama2c() {
  local corpus=$1
  if [[ -f "$shared/models/stories260K/stories260K.bin" ]]; then
    { printf '\x00'; cat "$shared/models/stories260K/stories260K.bin"; } > "$corpus/checkpoint"
    { printf '\x01'; cat "$shared/models/stories260K/tok512.bin"; } > "$corpus/tok512"
  else
    echo "note: $shared/models/stories260K absent; the llama2.c fuzzer starts from nothing" >&2
  fi
}

seed_schema() {
  local corpus=$1
  /usr/bin/python3 - /usr/share/json-schema-test-suite/tests/draft7 "$corpus" <<'PY'
import glob, json, os, sys
suite, corpus = sys.argv[1], sys.argv[2]
n = 0
for path in sorted(glob.glob(os.path.join(suite, "*.json"))):
    for group in json.load(open(path)):
        for test in group["tests"][:1]:
            data = json.dumps(group["schema"]).encode() + b"\0" + json.dumps(test["data"]).encode()
            open(os.path.join(corpus, "schema_%d" % n), "wb").write(data)
            n += 1
PY
  # A framed reply (the fuzzer frames documents whose feed opens with 0xFF).
  printf '{"type":"object","properties":{"a":{"type":"integer"}}}\0\377<s>think\377</s>\377<h>{"a": 1}' \
    > "$corpus/framed"
  # A tool's parameters as qwen3-coder's XML blocks (a feed opening with 0xFE).
  printf '{"type":"object","properties":{"s":{"type":"string","maxLength":8},"n":{"type":"integer"},"e":{"enum":["a","b"]}},"required":["n"]}\0\376<function=f>\n<parameter=s>\nab<\n</parameter>\n<parameter=n>\n1\n</parameter>\n' \
    > "$corpus/xml_parameters"
}

seed_reply() {
  # Replies as the formats write them (byte 0: format in bits 0-2, no tools 0x08, <think> tags
  # 0x10, the prompt ending inside them 0x20; byte 1: split step).
  local corpus=$1
  printf '\x00\x03Sure.<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>' \
    > "$corpus/hermes"
  printf '\x10\x05<think>hm</think>\n\n<tool_call>\n{"name": "a", "arguments": "{}"}\n</tool_call>' \
    > "$corpus/hermes_think"
  printf '\x01\x02{"name": "get_weather", "parameters": {"city": "Oslo"}}' > "$corpus/llama3"
  printf '\x02\x07[TOOL_CALLS][{"name": "add", "arguments": {"a": 1}, "id": "abcDEF123"}]' \
    > "$corpus/mistral"
  printf '\x03\x04<|tool_call|>[{"name": "a", "arguments": {}}]<|/tool_call|>' > "$corpus/phi4"
  printf '\x30\x01still thinking</think> done' > "$corpus/in_reasoning"
  printf '\x05\x03<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a": 1}' \
    > "$corpus/harmony"
  printf '\x16\x03<think>\nhm\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo <b>\n</parameter>\n<parameter=days>\n[1, 2]\n</parameter>\n</function>\n</tool_call>' \
    > "$corpus/qwen3_coder"
  printf '\x07\x02<|tool_call_start|>[get_weather(city='"'"'Oslo'"'"', days=[1, 2]), add(a=1, b={"x": None})]<|tool_call_end|>' \
    > "$corpus/lfm2"
}

seed_kvblock() {
  # A block file (flags 3: the fuzzer fills in the block's key and the checksum): the header
  # of a 512-byte block under the fuzz namespace (lo 1, hi 2), a zero payload.
  local corpus=$1
  { printf '\x03TGKVBLK1\x00\x02\x00\x00\x00\x00\x00\x00'
    printf '\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00'
    head -c $((96 + 512 + 8)) /dev/zero; } > "$corpus/block"
}

seed_grammar() {
  local corpus=$1 g
  for g in "$llamacpp"/grammars/*.gbnf; do
    { cat "$g"; printf '\0{"a": [1, "x"]}'; } > "$corpus/$(basename "$g" .gbnf)"
  done
}

# run_one NAME: seeds and runs one fuzzer; fails when it fails or prints none of its stats.
run_one() {
  local name=$1 fuzzer corpus extra=()
  fuzzer=$build/bin/textgen-fuzz-$name
  corpus=$work/${name}_corpus
  mkdir -p "$corpus"
  "seed_$name" "$corpus"
  case $name in
    request) extra=(-max_len=4096)
             export TEXTGEN_FUZZ_CHAT_TEMPLATE="$llamacpp/models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja" ;;
    tokenizer) extra=(-max_len=2048)
               export TEXTGEN_FUZZ_VOCAB_DIR="$llamacpp/models" ;;
    llama2c) extra=(-max_len=1100000) ;;
    schema|grammar) extra=(-max_len=8192) ;;
    reply) extra=(-max_len=4096) ;;
    kvblock) extra=(-max_len=1024) ;;
  esac
  printf '\n== %s fuzzer\n' "$name"
  "$fuzzer" "$corpus" "${limit[@]}" "${extra[@]}" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2560 \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$name-" 2>&1 |
    grep -E 'fuzzer: |INITED|DONE|stat::|ERROR|SUMMARY|Test unit|==[0-9]+=='
}

for name in "${names[@]}"; do
  [[ -x $build/bin/textgen-fuzz-$name ]] ||
    { echo "missing $build/bin/textgen-fuzz-$name (configure_fuzz, then build it)" >&2; exit 2; }
done
status=0
running=() outputs=()
# finish_oldest: waits for the first fuzzer still running and prints its output.
finish_oldest() {
  wait "${running[0]}" || status=1
  cat "${outputs[0]}"
  running=("${running[@]:1}") outputs=("${outputs[@]:1}")
}
for name in "${names[@]}"; do
  run_one "$name" > "$work/$name.out" 2>&1 &
  running+=($!) outputs+=("$work/$name.out")
  ((${#running[@]} < ${FUZZ_JOBS:-1})) || finish_oldest
done
while ((${#running[@]})); do finish_oldest; done
source "$here/failing_inputs.sh"
fail_on_failing_inputs "$work/artifacts"
exit "$status"
