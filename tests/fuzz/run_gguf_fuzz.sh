#!/usr/bin/env bash
# Runs the GGUF fuzzer for a bounded time.
# Usage: tests/fuzz/run_gguf_fuzz.sh BUILD_DIR SECONDS
#   BUILD_DIR was configured with -DTEXTGEN_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++
#   -DCMAKE_C_COMPILER=clang and has built textgen-fuzz-gguf (and textgen-make-random-gguf).
# Env: FUZZ_RUNS=N runs N executions instead of SECONDS (the 10M-execution runs);
#   FUZZ_TIMEOUT=S is the per-input timeout (default 10 s; raise it on a starved machine).
# Seeds: the real stories260K.gguf from the shared models (if present), tiny llama/gpt2 files
# in every dtype and tiny qwen35, lfm2 and nemotron_h hybrids from textgen-make-random-gguf.
# Crash inputs land in
# BUILD_DIR/fuzz/artifacts, the whole log in BUILD_DIR/fuzz/gguf.log.
set -euo pipefail
build=${1:?usage: run_gguf_fuzz.sh BUILD_DIR SECONDS}
seconds=${2:?usage: run_gguf_fuzz.sh BUILD_DIR SECONDS}
here=$(cd "$(dirname "$0")" && pwd)
shared=${TEXTGEN_SHARED_DIR:-$here/../../../shared}
fuzzer=$build/bin/textgen-fuzz-gguf
maker=$build/bin/textgen-make-random-gguf
[ -x "$fuzzer" ] || { echo "missing $fuzzer (configure with -DTEXTGEN_FUZZ=ON and clang)" >&2; exit 2; }

work=$build/fuzz
corpus=$work/gguf_corpus
mkdir -p "$corpus" "$work/artifacts"
if [ -f "$shared/models/stories260K/stories260K.gguf" ]; then
  cp "$shared/models/stories260K/stories260K.gguf" "$corpus/seed_stories260K.gguf"
else
  echo "note: $shared/models/stories260K absent; seeding from generated files only" >&2
fi
if [ -x "$maker" ]; then
  for dtype in f32 f16 bf16 q8_0; do
    "$maker" --arch llama --preset tiny --dtype "$dtype" --dim 32 --hidden 64 --layers 1 \
      --heads 2 --kv-heads 1 --vocab 260 --context 8 --out "$corpus/seed_llama_$dtype.gguf" >/dev/null
    "$maker" --arch gpt2 --preset tiny --dtype "$dtype" --dim 32 --hidden 64 --layers 1 \
      --heads 2 --vocab 258 --context 8 --out "$corpus/seed_gpt2_$dtype.gguf" >/dev/null
  done
  # A hybrid (Gated DeltaNet layers and their ssm.* keys).
  "$maker" --arch qwen35 --preset tiny --dtype f32 --dim 32 --hidden 64 --layers 1 \
    --heads 2 --kv-heads 1 --vocab 260 --context 8 --out "$corpus/seed_qwen35_f32.gguf" >/dev/null
  # LFM2: a short convolution, then attention (per-layer head_count_kv, shortconv.l_cache).
  "$maker" --arch lfm2 --preset tiny --dtype f32 --dim 32 --hidden 64 --layers 2 \
    --full-attention-interval 2 --heads 2 --kv-heads 1 --vocab 260 --context 8 \
    --out "$corpus/seed_lfm2_f32.gguf" >/dev/null
  # Nemotron-H: Mamba2, then a squared-ReLU feed-forward block (per-layer head_count_kv and
  # feed_forward_length, ssm.*).
  "$maker" --arch nemotron_h --preset tiny --dtype f32 --dim 32 --hidden 64 --layers 2 \
    --heads 2 --kv-heads 1 --vocab 260 --context 8 --mamba-inner 32 --mamba-state 8 \
    --mamba-heads 4 --out "$corpus/seed_nemotron_h_f32.gguf" >/dev/null
else
  echo "note: $maker not built; no generated seeds" >&2
fi

# One worker keeps to the shared 2-core budget; the 1.2 MB real file sets max_len.
limit=(-max_total_time="$seconds")
[[ -n "${FUZZ_RUNS:-}" ]] && limit=(-runs="$FUZZ_RUNS")
"$fuzzer" "$corpus" -dict="$here/gguf.dict" "${limit[@]}" -timeout="${FUZZ_TIMEOUT:-10}" \
  -rss_limit_mb=2048 -max_len=1300000 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" 2>&1 | tee "$work/gguf.log" | tail -n 25
status=${PIPESTATUS[0]}
source "$here/failing_inputs.sh"
fail_on_failing_inputs "$work/artifacts"
exit "$status"
