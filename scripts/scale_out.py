#!/usr/bin/python3
"""Conversations through a load balancer in front of textgen replicas (scripts/test-scale-out.sh).

Plays CONVERSATIONS conversations of TURNS turns each, CONCURRENCY at a time, on the gRPC
Generate RPC with token prompts: every turn sends the whole history (previous prompt + the
reply + a new user part) with the session id in the request and in the `x-session-id`
metadata, as documented clients do, on a channel with the documented retry policy. With
--kill-pid, that replica gets SIGTERM once --kill-after turns have finished, while others run.

Prints one JSON report: per turn the cached tokens and status, and the checks:
  - every turn ended OK with a final `finished` message (nothing truncated, nothing lost);
  - follow-up turns with cached_tokens > 0 (>= 95% required when nothing is killed);
  - with a kill: every conversation whose replica went away recomputed its history exactly
    once (one follow-up turn with cached_tokens == 0) and reused the cache again afterwards;
    with --shared-kv-dir (the replicas share --kv-cache-dir) none recomputed at all: the
    replica a session moves to reads its history from the shared directory.
Exit status 1 when a check fails.
"""
import argparse
import asyncio
import json
import os
import random
import signal
import sys
import time
import urllib.request


def retry_service_config():
    """The CLI's retry policy (client/retry_policy.h), so this driver retries as it does."""
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "client",
                          "retry_policy.h")
    text = open(header).read()
    return json.dumps(json.loads(text[text.index('R"json(') + 7:text.index(')json"')]))


RETRY_SERVICE_CONFIG = retry_service_config()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", required=True, help="HOST:PORT of the load balancer")
    p.add_argument("--stubs", required=True, help="directory with textgen/v1/*_pb2*.py")
    p.add_argument("--conversations", type=int, default=50)
    p.add_argument("--turns", type=int, default=5)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--user-tokens", type=int, default=8)
    p.add_argument("--reply-tokens", type=int, default=8)
    p.add_argument("--session-prefix", default="conv")
    p.add_argument("--kill-pid", type=int, default=0, help="replica to SIGTERM mid-run")
    p.add_argument("--kill-after", type=int, default=0, help="finished turns before the kill")
    p.add_argument("--kill-command", default="",
                   help="instead of --kill-pid: a shell command that stops the replica "
                        "(e.g. podman stop); runs in the background")
    p.add_argument("--kill-metrics", default="",
                   help="the replica's /metrics URL: the kill waits until it runs a request")
    p.add_argument("--min-cached-ratio", type=float, default=0.95)
    p.add_argument("--dump-histories", default="",
                   help="write every conversation's tokens so far (JSON) for --continue-from")
    p.add_argument("--continue-from", default="",
                   help="go on with the conversations a --dump-histories file holds")
    p.add_argument("--shared-kv-dir", action="store_true",
                   help="the replicas share --kv-cache-dir: a moved session recomputes nothing")
    return p.parse_args()


ARGS = parse_args()
CONTINUED = json.load(open(ARGS.continue_from)) if ARGS.continue_from else {}
sys.path.insert(0, ARGS.stubs)
import grpc  # noqa: E402
from textgen.v1 import textgen_pb2 as pb  # noqa: E402
from textgen.v1 import textgen_pb2_grpc as pb_grpc  # noqa: E402


class Run:
    def __init__(self):
        self.turns = []  # dicts: conversation, turn, status, cached, prompt, finished, seconds
        self.histories = {}  # conversation -> {"tokens": prompt + last reply, "turns": played}
        self.finished_turns = 0
        self.killed_at = None
        self.running_at_kill = None
        self.kill_process = None


def running_requests(url):
    """The replica's textgen_running_requests gauge (None when it cannot be read)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith("textgen_running_requests"):
                    return int(float(line.split()[-1]))
    except OSError:
        return None
    return None


async def killer(run):
    """SIGTERMs --kill-pid once --kill-after turns are done and (with --kill-metrics) the
    replica is running requests: the drain then has streams to finish."""
    while run.finished_turns < ARGS.kill_after:
        await asyncio.sleep(0.002)
    for _ in range(5000):
        running = running_requests(ARGS.kill_metrics) if ARGS.kill_metrics else None
        if not ARGS.kill_metrics or (running or 0) > 0:
            break
        await asyncio.sleep(0.001)
    if ARGS.kill_command:
        # Its output must not mix with the JSON report on stdout.
        run.kill_process = await asyncio.create_subprocess_shell(
            ARGS.kill_command, stdout=asyncio.subprocess.DEVNULL)
    else:
        os.kill(ARGS.kill_pid, signal.SIGTERM)
    run.killed_at = time.monotonic()
    run.running_at_kill = running


async def play_turn(stub, run, conv, turn, prompt, rng):
    session = f"{ARGS.session_prefix}-{conv}"
    request = pb.GenerateRequest(session_id=session)
    request.tokens.ids.extend(prompt)
    request.sampling.seed = conv * 1000 + turn
    request.stopping.max_new_tokens = ARGS.reply_tokens
    request.stopping.ignore_eos = True
    start = time.monotonic()
    reply, finished, status, details = [], None, "OK", ""
    try:
        call = stub.Generate(request, metadata=(("x-session-id", session),), timeout=120)
        async for message in call:
            reply.extend(message.token_ids)
            if message.HasField("finished"):
                finished = message.finished
    except grpc.aio.AioRpcError as error:
        status, details = error.code().name, error.details()
    record = {"conversation": conv, "turn": turn, "status": status, "details": details,
              "prompt_tokens": len(prompt), "reply_tokens": len(reply),
              "finished": finished is not None,
              "cached": finished.usage.cached_tokens if finished is not None else None,
              "seconds": round(time.monotonic() - start, 4),
              "after_kill": run.killed_at is not None}
    run.turns.append(record)
    run.finished_turns += 1
    return reply if status == "OK" and finished is not None else None


async def conversation(stub, run, conv, semaphore):
    rng = random.Random(conv)
    prompt = [1]  # BOS
    first = 0
    if str(conv) in CONTINUED:  # its history so far, played elsewhere: every turn a follow-up
        prompt, first = CONTINUED[str(conv)]["tokens"], CONTINUED[str(conv)]["turns"]
        rng = random.Random(conv * 7919 + first)
    for turn in range(first, first + ARGS.turns):
        prompt = prompt + [rng.randrange(10, 4000) for _ in range(ARGS.user_tokens)]
        async with semaphore:
            reply = await play_turn(stub, run, conv, turn, prompt, rng)
        if reply is None:
            return  # the conversation cannot go on: counted as a failure
        prompt = prompt + reply
    run.histories[str(conv)] = {"tokens": prompt, "turns": first + ARGS.turns}


def check(run):
    failures = []
    bad = [t for t in run.turns if t["status"] != "OK" or not t["finished"]]
    for t in bad[:10]:
        failures.append(f"conversation {t['conversation']} turn {t['turn']}: {t['status']} "
                        f"{t['details']} (finished={t['finished']})")
    if len(run.turns) != ARGS.conversations * ARGS.turns:
        failures.append(f"{len(run.turns)} turns played of {ARGS.conversations * ARGS.turns}")
    follow_ups = [t for t in run.turns if t["turn"] > 0 and t["cached"] is not None]
    cached = [t for t in follow_ups if t["cached"] > 0]
    by_conv = {}
    for t in sorted(run.turns, key=lambda t: (t["conversation"], t["turn"])):
        by_conv.setdefault(t["conversation"], []).append(t)
    # Conversations that recomputed: a follow-up turn with nothing cached.
    recomputed = {c: [t["turn"] for t in turns if t["turn"] > 0 and t["cached"] == 0]
                  for c, turns in by_conv.items()}
    recomputed = {c: turns for c, turns in recomputed.items() if turns}
    report = {
        "conversations": ARGS.conversations, "turns_per_conversation": ARGS.turns,
        "turns_played": len(run.turns), "turns_failed": len(bad),
        "follow_up_turns": len(follow_ups), "follow_ups_cached": len(cached),
        "follow_up_cached_ratio": round(len(cached) / max(1, len(follow_ups)), 4),
        "conversations_that_recomputed": len(recomputed),
        "recompute_turns": sum(len(v) for v in recomputed.values()),
        "killed": bool(ARGS.kill_pid or ARGS.kill_command),
        "turn_seconds_p50": percentile([t["seconds"] for t in run.turns], 0.5),
        "turn_seconds_p99": percentile([t["seconds"] for t in run.turns], 0.99),
    }
    if not report["killed"]:
        if report["follow_up_cached_ratio"] < ARGS.min_cached_ratio:
            failures.append(f"only {report['follow_up_cached_ratio']:.1%} of follow-up turns "
                            f"reused a cache (need {ARGS.min_cached_ratio:.0%})")
    elif ARGS.shared_kv_dir:
        if recomputed:
            failures.append(f"conversations recomputed although the KV directory is shared: "
                            f"{dict(list(recomputed.items())[:10])}")
    else:
        twice = {c: v for c, v in recomputed.items() if len(v) > 1}
        if twice:
            failures.append(f"conversations recomputed more than once: {twice}")
        before = [c for c, v in recomputed.items()
                  if not any(t["after_kill"] for t in by_conv[c] if t["turn"] in v)]
        if before:
            failures.append(f"conversations recomputed before the kill: {before}")
        if not recomputed:
            failures.append("no conversation moved: the killed replica served no session")
    report["failures"] = failures
    return report


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def main():
    options = [("grpc.enable_retries", 1), ("grpc.service_config", RETRY_SERVICE_CONFIG)]
    async with grpc.aio.insecure_channel(ARGS.target, options=options) as channel:
        stub = pb_grpc.TextGenerationStub(channel)
        run = Run()
        semaphore = asyncio.Semaphore(ARGS.concurrency)
        start = time.monotonic()
        tasks = [conversation(stub, run, c, semaphore) for c in range(ARGS.conversations)]
        if ARGS.kill_pid or ARGS.kill_command:
            tasks.append(killer(run))
        await asyncio.gather(*tasks)
        if run.kill_process is not None:
            await run.kill_process.wait()
        report = check(run)
        report["seconds"] = round(time.monotonic() - start, 2)
        if run.killed_at is not None:
            report["killed_after_seconds"] = round(run.killed_at - start, 2)
            report["replica_running_requests_at_kill"] = run.running_at_kill
    if ARGS.dump_histories:
        with open(ARGS.dump_histories, "w") as out:
            json.dump(run.histories, out)
    print(json.dumps(report, indent=1))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
