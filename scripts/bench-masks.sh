#!/usr/bin/env bash
# Token-mask cost (#27), two builds interleaved: textgen-bench-constraint (11 schemas, 20 random
# walks each, a fresh matcher per walk, one thread) on llama.cpp's llama-bpe (128k), qwen2
# (152k) and llama-spm (32k) vocabularies, ROUNDS rounds alternating BEFORE and AFTER. Writes
# every run as a JSON line to OUT and prints, per vocabulary, the medians over the rounds.
# Usage: scripts/bench-masks.sh BEFORE_BENCH AFTER_BENCH [OUT=mask-bench.jsonl]
#   env: ROUNDS (default 3), BUILD, LLAMACPP_SRC (scripts/bench-common.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/bench-common.sh"
before=${1:?usage: bench-masks.sh BEFORE_BENCH AFTER_BENCH [OUT]}
after=${2:?usage: bench-masks.sh BEFORE_BENCH AFTER_BENCH [OUT]}
out=${3:-mask-bench.jsonl}
rounds=${ROUNDS:-3}
require_tools "$before" "$after"
vocabs=(ggml-vocab-llama-bpe.gguf ggml-vocab-qwen2.gguf ggml-vocab-llama-spm.gguf)
for v in "${vocabs[@]}"; do
  [[ -f $S/models/$v ]] || { echo "missing $S/models/$v (tests/reference/llamacpp_source.sh $B/reference/llamacpp)" >&2; exit 1; }
done
: >"$out"
for ((round = 1; round <= rounds; ++round)); do
  for v in "${vocabs[@]}"; do
    for build in before after; do
      bench=$before
      [[ $build == after ]] && bench=$after
      "$bench" --vocab "$S/models/$v" --walks 20 |
        /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    row = json.loads(line)
    row.update(round=int(sys.argv[1]), vocab=sys.argv[2], build=sys.argv[3])
    print(json.dumps(row))' "$round" "$v" "$build" >>"$out"
    done
  done
done
/usr/bin/python3 - "$out" <<'PY'
import collections, json, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    row = json.loads(line)
    runs[(row["vocab"], row.get("schema", "trie"), row["build"])].append(row)
med = lambda rows, key: statistics.median(r[key] for r in rows)
for vocab in dict.fromkeys(k[0] for k in runs):
    print(f"\n{vocab}: trie build {med(runs[(vocab, 'trie', 'after')], 'trie_build_ms'):.0f} ms "
          f"(before {med(runs[(vocab, 'trie', 'before')], 'trie_build_ms'):.0f})")
    print("| schema | compile | mask p50 | p90 (before) | p99 (before) | max (before) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (v, schema, build), rows in runs.items():
        if v != vocab or schema == "trie" or build != "after":
            continue
        old = runs[(v, schema, "before")]
        print(f"| {schema} | {med(rows, 'compile_ms'):.2f} ms | {med(rows, 'mask_p50_us'):.1f} us | "
              f"{med(rows, 'mask_p90_us'):.0f} us ({med(old, 'mask_p90_us'):.0f}) | "
              f"{med(rows, 'mask_p99_us'):.0f} us ({med(old, 'mask_p99_us'):.0f}) | "
              f"{med(rows, 'mask_max_us'):.0f} us ({med(old, 'mask_max_us'):.0f}) |")
PY
