#!/usr/bin/env python3
"""A/B of two builds of a Google Benchmark program (e.g. textgen-bench-quant-matmul before and
after a kernel change), interleaved on this shared machine: each round runs A then B on the
same filter, so noise from neighbours hits both alike. Prints, per benchmark, the median and
best of a counter (default GOP/s) for A and B and the ratio of the medians; with BM_Vnni in the
filter, also each median as a share of the VNNI peak measured in the same rounds.

Usage: scripts/bench_kernel_ab.py --a OLD_BIN --b NEW_BIN --filter REGEX [--rounds 5]
         [--counter GOP/s] [--min-time 0.3] [--out results.jsonl]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys


def run(binary, pattern, min_time):
    out = subprocess.run([binary, f"--benchmark_filter={pattern}", "--benchmark_format=json",
                          f"--benchmark_min_time={min_time}"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["benchmarks"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="baseline binary")
    ap.add_argument("--b", required=True, help="candidate binary")
    ap.add_argument("--filter", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--counter", default="GOP/s")
    ap.add_argument("--min-time", default="0.3")
    ap.add_argument("--out")
    args = ap.parse_args()

    values = {}  # (name, side) -> [counter per round]
    for round_index in range(args.rounds):
        for side, binary in (("a", args.a), ("b", args.b)):
            for bench in run(binary, args.filter, args.min_time):
                if args.counter not in bench:
                    continue
                values.setdefault((bench["name"], side), []).append(bench[args.counter])
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps({"round": round_index, "side": side, "binary": binary,
                                            "name": bench["name"], "label": bench.get("label", ""),
                                            args.counter: bench[args.counter]}) + "\n")
        print(f"round {round_index + 1}/{args.rounds} done", file=sys.stderr)

    peak = {side: statistics.median(values[("BM_Vnni/real_time", side)])
            for side in ("a", "b") if ("BM_Vnni/real_time", side) in values}
    names = sorted({name for name, _ in values})
    print(f"{'benchmark':58} {'A median':>9} {'A best':>8} {'B median':>9} {'B best':>8} "
          f"{'B/A':>6}" + ("  A %peak  B %peak" if peak else ""))
    for name in names:
        a, b = values.get((name, "a")), values.get((name, "b"))
        if not a or not b:
            continue
        line = (f"{name:58} {statistics.median(a):9.0f} {max(a):8.0f} {statistics.median(b):9.0f} "
                f"{max(b):8.0f} {statistics.median(b) / statistics.median(a):6.2f}")
        if peak and name != "BM_Vnni/real_time":
            line += (f"  {100 * statistics.median(a) / peak['a']:6.0f}% "
                     f"{100 * statistics.median(b) / peak['b']:6.0f}%")
        print(line)


if __name__ == "__main__":
    main()
