#!/usr/bin/env bash
# Prefill against the int8 compute limit (#31): how close a 512-token prefill comes to the
# VNNI peak measured in the same round, on this shared host where the peak itself moves 2x
# between minutes. Every round runs, interleaved:
#   - the VNNI peak (textgen-bench-quant-matmul BM_Vnni, best of 3, 2 threads);
#   - per model file: textgen-bench-engine --prompt 512 --gen 1 --batches 1 (2 threads);
#   - the VNNI peak again.
# Then prints per file the prefill's GOP/s (2 x the multiply-adds of every layer's products
# per token, read from the file's tensor shapes; the output layer runs for one row only) as a
# share of the mean of the two peaks around it: per round, and their median.
# Usage: scripts/bench-prefill-vs-peak.sh [ROUNDS=5] [FILE...]
#   FILE: GGUF models (default: the Llama-3.2-1B-shaped Q4_K_M and Q8_0 random-weight files
#   llama1b_chat_model makes). env: BUILD, MODELS, LLAMACPP_SRC (scripts/bench-common.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
shift || true
source scripts/bench-common.sh
require_tools "$B/bin/textgen-bench-engine" "$B/bin/textgen-bench-quant-matmul"
files=("$@")
if ((${#files[@]} == 0)); then
  files=("$(llama1b_chat_model q4_k_m 4096)" "$(llama1b_chat_model q8_0 4096)")
fi
[[ -d $S/gguf-py ]] || { echo "missing $S/gguf-py (tests/reference/llamacpp_source.sh $B/reference/llamacpp)" >&2; exit 1; }

log=$(mktemp)
record() { echo "RESULT|$1|$2" | tee -a "$log"; }
peak() {
  "$B/bin/textgen-bench-quant-matmul" --benchmark_filter='BM_Vnni' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=false 2>/dev/null |
    grep -o 'GOP/s=[0-9.]*k\?' | cut -d= -f2 |
    awk '{ v = $1 + 0; if ($1 ~ /k$/) v *= 1000; print v }' | sort -g | tail -1
}

for round in $(seq "$rounds"); do
  printf '\n==== round %s (%s)\n' "$round" "$(date +%T)"
  record "peak before $round" "$(peak)"
  for f in "${files[@]}"; do
    record "prefill512 $round $(basename "$f")" "$("$B/bin/textgen-bench-engine" --model "$f" \
      --threads 2 --prompt 512 --gen 1 --batches 1 --json |
      /usr/bin/python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["prefill_tok_s"])')"
  done
  record "peak after $round" "$(peak)"
done

printf '\n==== summary over %s rounds\n' "$rounds"
PYTHONPATH=$S/gguf-py /usr/bin/python3 - "$log" "$rounds" "${files[@]}" <<'EOF'
import os, statistics, sys
import gguf
log, rounds, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
values = {}
for line in open(log):
    _, label, value = line.rstrip("\n").split("|")
    values[label] = float(value)
for f in files:
    reader = gguf.GGUFReader(f)
    # Every layer's products (2-D weights of the blocks; norms and biases are 1-D).
    gop = 2 * sum(int(t.n_elements) for t in reader.tensors
                  if t.name.startswith("blk.") and len(t.shape) == 2) / 1e9
    shares, rates = [], []
    for r in range(1, rounds + 1):
        rate = values[f"prefill512 {r} {os.path.basename(f)}"]
        peak = (values[f"peak before {r}"] + values[f"peak after {r}"]) / 2
        rates.append(rate)
        shares.append(rate * gop / peak)
    print(f"{os.path.basename(f)}: {gop:.3f} GOP per token; prefill 512 median "
          f"{statistics.median(rates):.1f} tok/s (runs {rates}); share of the VNNI peak per round "
          f"{[round(100 * s) for s in shares]}%, median {100 * statistics.median(shares):.0f}%")
EOF
rm -f "$log"
