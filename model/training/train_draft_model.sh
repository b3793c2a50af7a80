#!/usr/bin/env bash
# Trains models/default-draft.gguf: the draft model of the bundled default model for speculative
# decoding (textgen-server --speculative draft --draft-model models/default-draft.gguf). The same
# data and tokenizer as the default model (checked piece for piece against models/default.gguf
# before training), a smaller shape: 2 layers of d_model 128 (~1.1M parameters, 0.6M of them the
# embedding and output head), about a quarter of the default model's work per token.
#
#   bash model/training/train_draft_model.sh      # ~30 min; BUDGET_MIN, THREADS, NICE as for the default
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DATA_DIR="${DATA_DIR:-$HERE/runs/data}"
if [[ ! -f "$DATA_DIR/train.npy" || ! -f "$DATA_DIR/tokenizer.model" ]]; then
  /usr/bin/python3 "$HERE/prepare_data.py" --npm-dir "$HERE/runs/npm" --out-dir "$DATA_DIR" --vocab-size 4096
fi
/usr/bin/python3 "$HERE/same_vocabulary.py" --tokenizer "$DATA_DIR/tokenizer.model" --gguf "$ROOT/models/default.gguf"
export DATA_DIR
export SHAPE="--d-model 128 --num-layers 2 --num-heads 4 --num-kv-heads 4 --d-ff 352"
export NAME=textgen-default-draft OUT_STEM=default-draft
export RUN_DIR="${RUN_DIR:-$HERE/runs/draft}"
export BUDGET_MIN="${BUDGET_MIN:-25}"
exec bash "$HERE/train_default_model.sh"
