#!/usr/bin/env python3
"""Speculative decoding (issue #31): textgen with prompt-lookup drafting (and, with --draft-model,
drafting by a draft model) against itself without it and against llama.cpp's server with its
n-gram speculation (and its draft-model speculation), on one GGUF file, interleaved.

Every configuration runs as its own server, all started up front; each round runs every
configuration's workload once, in turn, so noise on this shared machine hits them alike.
Single stream: greedy, one prompt, streamed; decode tokens/s = (tokens - 1) / (last token time -
first token time), TTFT, inter-token gaps (p50/p99 over every token: a verified step hands over
several tokens at once), acceptance from textgen's metrics. Many streams: total completion
tokens / wall time, textgen with and without speculation. Peak RSS (VmHWM) per server.
Writes one JSON line per measurement to --out and prints medians.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

PASSAGE = ("The committee met on Tuesday to review the budget for the new library. After a long "
           "discussion, the members agreed that the reading room would open in March, that the "
           "children's section would move to the ground floor, and that the old archive would be "
           "scanned before the end of the year.")
# Workloads (--workload): a rewrite (the answer restates the passage), a copy (the passage again,
# the answer started for it), and free writing (nothing to copy).
WORKLOADS = {
    "rewrite": PASSAGE + " Rewrite the decision above as a short memo:\n",
    "copy": PASSAGE + "\n\nThe same text again:\n" + PASSAGE[:60],
    "free": "The history of the United States",
    # Structured output: an array of records under a JSON Schema (keys repeat record after
    # record, the kind of output prompt lookup drafts well). textgen servers only.
    "json": "List the library's rooms as JSON records:\n",
}
RECORDS_SCHEMA = {"type": "array", "minItems": 40, "items": {
    "type": "object", "additionalProperties": False, "required": ["room", "floor", "open"],
    "properties": {"room": {"type": "string", "maxLength": 12},
                   "floor": {"type": "integer", "minimum": 0, "maximum": 9},
                   "open": {"type": "boolean"}}}}
PROMPT = WORKLOADS["rewrite"]
WORKLOAD = "rewrite"


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name, argv, port, metrics_port=None, textgen=True):
        self.name, self.port, self.metrics_port, self.textgen = name, port, metrics_port, textgen
        self.log = open(f"/tmp/bench-spec-{name}.log", "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        self.model = None

    def wait_ready(self):
        for _ in range(1200):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/models", timeout=2) as r:
                    self.model = json.load(r)["data"][0]["id"]
                    return
            except Exception:
                if self.proc.poll() is not None:
                    sys.exit(f"{self.name} exited; see /tmp/bench-spec-{self.name}.log")
                time.sleep(0.5)
        sys.exit(f"{self.name} did not start")

    def counters(self):
        if self.metrics_port is None:
            return {}
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics").read().decode()
        out = {}
        for key in ("draft_tokens", "accepted_tokens", "verifications"):
            m = re.search(rf"^textgen_speculative_{key}_total (\S+)$", text, re.M)
            out[key] = float(m.group(1)) if m else 0.0
        return out

    def peak_rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def stream_completion(server, prompt, max_tokens, seed=None, warmup=False):
    """One streamed completion: (arrival time of each token, TTFT, total seconds, tokens)."""
    body = {"model": server.model, "prompt": prompt, "max_tokens": max_tokens, "stream": True,
            "temperature": 0, "ignore_eos": True}
    if seed is not None:
        body["seed"] = seed
    if WORKLOAD == "json" and not warmup:
        body["response_format"] = {"type": "json_schema", "json_schema": {
            "name": "rooms", "schema": RECORDS_SCHEMA, "strict": True}}
    req = urllib.request.Request(f"http://127.0.0.1:{server.port}/v1/completions",
                                 json.dumps(body).encode(), {"Content-Type": "application/json"})
    start = time.perf_counter()
    arrivals, text = [], ""
    with urllib.request.urlopen(req, timeout=1200) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            event = json.loads(line[6:])
            if not event.get("choices"):
                continue
            piece = event["choices"][0].get("text", "")
            if piece:
                text += piece
                arrivals.append(time.perf_counter() - start)
    return arrivals, time.perf_counter() - start, text


def single_stream(server, max_tokens):
    before = server.counters()
    arrivals, total, text = stream_completion(server, PROMPT, max_tokens)
    after = server.counters()
    # ignore_eos: every request generates max_tokens tokens.
    n = max_tokens
    decode = (n - 1) / (arrivals[-1] - arrivals[0]) if len(arrivals) > 1 else 0.0
    gaps = sorted(b - a for a, b in zip(arrivals, arrivals[1:]))
    out = {"decode_tok_s": decode, "ttft_s": arrivals[0] if arrivals else total,
           "events": len(arrivals), "text_head": text[:60]}
    if gaps:
        # Gaps between streamed events: a verified step hands over several tokens in one.
        out["event_gap_p50_ms"] = 1e3 * gaps[len(gaps) // 2]
        out["event_gap_p99_ms"] = 1e3 * gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))]
        out["itl_mean_ms"] = 1e3 * (arrivals[-1] - arrivals[0]) / (n - 1)
    if after:
        drafted = after["draft_tokens"] - before["draft_tokens"]
        accepted = after["accepted_tokens"] - before["accepted_tokens"]
        steps = after["verifications"] - before["verifications"]
        out["drafted"] = drafted
        out["acceptance"] = accepted / drafted if drafted else 0.0
        out["tokens_per_verification"] = (accepted + steps) / steps if steps else 1.0
    return out


def many_streams(server, streams, max_tokens):
    results = [None] * streams

    def one(i):
        body = {"model": server.model, "prompt": PROMPT + f" ({i})", "max_tokens": max_tokens,
                "temperature": 0, "ignore_eos": True}
        req = urllib.request.Request(f"http://127.0.0.1:{server.port}/v1/completions",
                                     json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=3600) as r:
            results[i] = json.load(r)["usage"]["completion_tokens"]

    start = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {"tok_s": sum(results) / wall, "wall_s": wall}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--llama-server")
    ap.add_argument("--llama-spec-types", default="ngram-simple,ngram-map-k,ngram-mod,ngram-cache")
    ap.add_argument("--draft-tokens", default="1,2,4,8")
    ap.add_argument("--draft-model", help="a draft model: textgen --speculative draft configurations "
                    "(and llama-server -md) with each --draft-tokens")
    ap.add_argument("--no-ngram", action="store_true", help="skip the prompt-lookup configurations")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--streams", default="", help="e.g. 4,16,64: many-stream rounds")
    ap.add_argument("--always-speculate", action="store_true",
                    help="many-stream runs with --speculative-max-batch 64 (find the crossover)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="rewrite")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    global PROMPT, WORKLOAD
    PROMPT, WORKLOAD = WORKLOADS[args.workload], args.workload
    if WORKLOAD == "json":
        args.llama_server = None

    servers = []

    def textgen(name, flags):
        port, mport = free_port(), free_port()
        servers.append(Server(name, [args.server, "--model", args.model, "--threads",
                                     str(args.threads), "--listen", "127.0.0.1:0",
                                     "--http-listen", f"127.0.0.1:{port}", "--metrics-listen",
                                     f"127.0.0.1:{mport}", "--kv-cache-mb", "1024", *flags],
                              port, mport))

    textgen("textgen-off", ["--speculative", "off"])
    always = ["--speculative-max-batch", "64"] if args.always_speculate else []
    for k in [int(x) for x in args.draft_tokens.split(",") if x]:
        if not args.no_ngram:
            textgen(f"textgen-ngram-k{k}", ["--speculative", "ngram", "--speculative-draft-tokens",
                                            str(k)] + always)
        if args.draft_model:
            textgen(f"textgen-draft-k{k}", ["--speculative", "draft", "--draft-model",
                                            args.draft_model, "--speculative-draft-tokens",
                                            str(k)] + always)
    if args.llama_server:
        for spec in ["none"] + [s for s in args.llama_spec_types.split(",") if s]:
            port = free_port()
            argv = [args.llama_server, "-m", args.model, "-t", str(args.threads), "-c", "8192",
                    "-np", "1", "--port", str(port), "--no-warmup"]
            if spec != "none":
                argv += ["--spec-type", spec, "--spec-draft-n-max", "8"]
            servers.append(Server(f"llama-{spec}", argv, port, textgen=False))
        if args.draft_model:
            port = free_port()
            argv = [args.llama_server, "-m", args.model, "-t", str(args.threads), "-c", "8192",
                    "-np", "1", "--port", str(port), "--no-warmup", "-md", args.draft_model,
                    "--spec-draft-n-max", "8"]
            servers.append(Server("llama-draft-model", argv, port, textgen=False))
    for s in servers:
        s.wait_ready()
    out = open(args.out, "a")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    single = {s.name: [] for s in servers}
    for rnd in range(1, args.rounds + 1):
        for s in servers:
            stream_completion(s, "Warm up.", 4, warmup=True)
            r = single_stream(s, args.max_tokens)
            r.update({"date": stamp, "config": s.name, "round": rnd, "streams": 1,
                      "workload": args.workload,
                      "model": os.path.basename(args.model), "max_tokens": args.max_tokens})
            out.write(json.dumps(r) + "\n")
            out.flush()
            single[s.name].append(r)
            extra = (f" acceptance {r['acceptance']:.2f} tokens/step {r['tokens_per_verification']:.2f}"
                     if "acceptance" in r else "")
            print(f"round {rnd} {s.name}: decode {r['decode_tok_s']:.2f} tok/s, TTFT "
                  f"{r['ttft_s'] * 1e3:.0f} ms{extra}", flush=True)
    many = {}
    textgens = [s for s in servers if s.textgen]
    for streams in [int(x) for x in args.streams.split(",") if x]:
        for rnd in range(1, args.rounds + 1):
            for s in (textgens[0], textgens[-1]):
                r = many_streams(s, streams, args.max_tokens // 2)
                r.update({"date": stamp, "config": s.name, "round": rnd, "streams": streams,
                          "model": os.path.basename(args.model),
                          "always_speculate": args.always_speculate})
                out.write(json.dumps(r) + "\n")
                out.flush()
                many.setdefault((streams, s.name), []).append(r["tok_s"])
                print(f"streams {streams} round {rnd} {s.name}: {r['tok_s']:.2f} tok/s", flush=True)
    print("\nmedians, one stream:")
    base = statistics.median(x["decode_tok_s"] for x in single["textgen-off"])
    for name, rs in single.items():
        med = statistics.median(x["decode_tok_s"] for x in rs)
        acc = (f", acceptance {statistics.median(x['acceptance'] for x in rs):.2f}"
               if rs and "acceptance" in rs[0] else "")
        print(f"  {name}: {med:.2f} tok/s ({med / base:.2f}x textgen-off), TTFT "
              f"{1e3 * statistics.median(x['ttft_s'] for x in rs):.0f} ms, peak RSS "
              f"{next(s for s in servers if s.name == name).peak_rss_mb():.0f} MB{acc}")
    for (streams, name), values in sorted(many.items()):
        off = statistics.median(many[(streams, textgens[0].name)])
        print(f"  {streams} streams {name}: {statistics.median(values):.2f} tok/s "
              f"({statistics.median(values) / off:.3f}x off)")
    for s in servers:
        s.stop()


if __name__ == "__main__":
    main()
