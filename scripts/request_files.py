#!/usr/bin/python3
"""Lists the server/ source files one request runs, measured (#33: "one request passes through
fewer files"; docs/architecture.md quotes the lists).

Builds textgen-server from --source with gcc's --coverage into --build, then starts it on the
bundled model once per case with the same flags, each run writing its own counters
(GCOV_PREFIX):
  idle, idle-again   start, wait for the "serving" line, stop (SIGTERM: the normal drain);
  generate           the same with one gRPC Generate, sent by an uninstrumented CLI (--client);
  chat               the same with one HTTP POST /v1/chat/completions.
A file is on a request's path when some line of it ran more times in that run than in the idle
run: the .cc files are the list, headers whose inline code ran are listed apart (so code moved
into a header cannot leave the list unnoticed). A line whose counts differ between the two idle
runs is timing noise (a writer thread's loop): its file is reported and the line never counted,
so the lists do not depend on how long a run lasted.
Usage: scripts/request_files.py [--source DIR] [--build DIR] [--client PATH] [--json FILE]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", default=REPO, help="source tree to measure (a checkout)")
    p.add_argument("--build", default=os.path.join(REPO, "build-coverage"))
    p.add_argument("--client", default=os.path.join(REPO, "build", "bin", "textgen"),
                   help="textgen CLI used to send the gRPC request (not instrumented)")
    p.add_argument("--model", default=None,
                   help="model file (default: the source's models/default.gguf)")
    p.add_argument("--json", default=None, help="also write the lists as JSON here")
    return p.parse_args()


def build(source, build_dir):
    # Release flags plus coverage; tests, benchmarks and fuzzers off. Werror off: an old
    # checkout measured for comparison may warn under --coverage.
    subprocess.run(["cmake", "-S", source, "-B", build_dir, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Release", "-DTEXTGEN_WERROR=OFF",
                    "-DTEXTGEN_SANITIZE=", "-DTEXTGEN_FUZZ=OFF", "-DTEXTGEN_BUILD_SERVER=ON",
                    "-DTEXTGEN_BUILD_TESTS=OFF", "-DTEXTGEN_BUILD_BENCH=OFF",
                    "-DCMAKE_CXX_FLAGS=--coverage", "-DCMAKE_EXE_LINKER_FLAGS=--coverage"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build_dir, "--target", "textgen-server"], check=True)


def run_server(server, model, prefix, request):
    """Starts the server with counters under `prefix`, sends `request` (or nothing), stops it."""
    env = dict(os.environ, GCOV_PREFIX=prefix)
    proc = subprocess.Popen([server, "--model", model, "--listen", "127.0.0.1:0",
                             "--http_listen", "127.0.0.1:0", "--metrics_listen", "",
                             "--threads", "1"],
                            env=env, stderr=subprocess.PIPE, text=True)
    served = None  # (gRPC port, HTTP port, model name)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        # The served name goes into the HTTP request: asking /v1/models would add its route.
        m = re.search(r"serving model=(.*?) path=.*grpc_port=(\d+) .*http_port=(\d+)", line)
        if m:
            served = int(m.group(2)), int(m.group(3)), m.group(1)
            break
    if served is None:
        proc.wait()
        sys.exit("the server did not start:\n" + "".join(lines))
    if request is not None:
        request(*served)
    proc.send_signal(signal.SIGTERM)
    proc.stderr.read()
    if proc.wait(timeout=120) != 0:
        sys.exit(f"the server exited with {proc.returncode}")


def grpc_generate(client):
    def send(grpc_port, _, __):
        subprocess.run([client, "generate", "--addr", f"127.0.0.1:{grpc_port}", "--max-tokens",
                        "8", "--seed", "1", "Once upon a time"], check=True,
                       stdout=subprocess.DEVNULL)
    return send


def http_chat(_, http_port, model):
    base = f"http://127.0.0.1:{http_port}/v1"
    body = json.dumps({"model": model, "max_tokens": 8, "seed": 1,
                       "messages": [{"role": "user", "content": "Tell me a story."}]})
    req = urllib.request.Request(base + "/chat/completions",
                                 data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as response:
        reply = json.load(response)
    if not reply.get("choices"):
        sys.exit(f"no choices in the chat reply: {reply}")


def line_counts(prefix, build_dir, source):
    """{source file: {line: count}} for the server/ objects whose counters are under prefix."""
    counts = {}
    build_abs = os.path.abspath(build_dir)
    for root, _, files in os.walk(prefix + build_abs):
        for name in files:
            if not name.endswith(".gcda") or "/server/" not in root + "/":
                continue
            gcda = os.path.join(root, name)
            gcno_src = build_abs + gcda[len(prefix + build_abs):-len(".gcda")] + ".gcno"
            shutil.copy(gcno_src, gcda[:-len(".gcda")] + ".gcno")
            out = subprocess.run(["gcov", "-t", "-j", gcda], check=True, capture_output=True,
                                 text=True, cwd=root).stdout
            for f in json.loads(out)["files"]:
                path = os.path.relpath(os.path.realpath(os.path.join(root, f["file"])), source)
                if not path.startswith("server/") or not path.endswith((".cc", ".h")):
                    continue
                per_line = counts.setdefault(path, {})
                for line in f["lines"]:
                    n = line["line_number"]
                    per_line[n] = per_line.get(n, 0) + line["count"]
    return counts


def grown_lines(base, run):
    """{(file, line)} of the lines that ran more times in `run` than in `base`."""
    return {(path, n) for path, lines in run.items() for n, count in lines.items()
            if count > base.get(path, {}).get(n, 0)}


def main():
    args = parse_args()
    source = os.path.realpath(args.source)
    model = args.model or os.path.join(source, "models", "default.gguf")
    for path, what in ((args.client, "--client (build it: cmake --build build --target textgen)"),
                       (model, "--model")):
        if not os.path.isfile(path):
            sys.exit(f"{path}: no such file; {what}")
    build(source, args.build)
    server = os.path.join(args.build, "bin", "textgen-server")
    cases = {"idle": None, "idle-again": None, "generate": grpc_generate(args.client),
             "chat": http_chat}
    with tempfile.TemporaryDirectory(prefix="request-files-") as work:
        counts = {}
        for name, request in cases.items():
            prefix = os.path.join(work, name)
            run_server(server, model, prefix, request)
            counts[name] = line_counts(prefix, args.build, source)
    # Lines whose counts differ between the two idle runs (a writer thread's loop, say) depend on
    # timing, not on the request: never counted.
    noise = (grown_lines(counts["idle"], counts["idle-again"]) |
             grown_lines(counts["idle-again"], counts["idle"]))
    noisy_files = sorted({path for path, _ in noise})
    result = {"source": source, "timing_noise": noisy_files}
    for name in ("generate", "chat"):
        files = sorted({path for path, n in grown_lines(counts["idle"], counts[name]) - noise})
        sources = [f for f in files if f.endswith(".cc")]
        headers = [f for f in files if f.endswith(".h")]
        result[name] = {"sources": sources, "headers": headers}
        print(f"{name}: {len(sources)} server/ .cc files")
        for f in sources:
            print(f"  {f}")
        print(f"  and {len(headers)} server/ headers whose inline code ran: {', '.join(headers)}")
    if noise:
        print("files with lines whose counts differ between the idle runs (those lines are not "
              "counted): " + ", ".join(noisy_files))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
