"""Soak load for textgen-server (driven by scripts/soak.sh; loopback only, bounded in time).

STREAMS concurrent clients for DURATION seconds, each looping over a weighted mix:
  normal    a Generate of random token ids (16-128) for 16-64 tokens; expects OK
  session   a 2-4 turn conversation on its own session id (the cache covers all but the new
            tokens of each turn);
            half are deleted afterwards, the rest stay idle (KV pressure: the server must evict
            them, never fail a running request); expects OK, cached tokens on turns 2+
  cancel    a Generate the client cancels after 1-8 tokens; expects CANCELLED (or OK if done)
  deadline  a Generate with a 20-300 ms deadline; expects DEADLINE_EXCEEDED or OK
  invalid   one of several malformed requests; expects INVALID_ARGUMENT naming the field
  http      POST /v1/completions on the OpenAI API; expects 200 with usage
Every completed stream is checked: exactly one `finished`, last; usage.completion_tokens equals
the ids received; ids inside the vocabulary. Meanwhile the server's RSS and open descriptors
are sampled every 5 s. At the end every session left is deleted and /metrics must show no
running or queued request, no KV in use and no session. Prints a JSON report; exit 1 on any
failed check.
"""
import argparse
import asyncio
import json
import os
import random
import re
import sys
import time
import urllib.request


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--grpc", required=True, help="HOST:PORT")
    p.add_argument("--http", required=True, help="HOST:PORT of the OpenAI API")
    p.add_argument("--metrics", required=True, help="HOST:PORT of /metrics")
    p.add_argument("--pid", type=int, required=True, help="server process (RSS, fds)")
    p.add_argument("--stubs", required=True, help="directory with textgen/v1/*_pb2*.py")
    p.add_argument("--streams", type=int, default=256)
    p.add_argument("--duration", type=float, default=600)
    p.add_argument("--warmup", type=float, default=120, help="seconds before RSS must be flat")
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


ARGS = parse_args()
sys.path.insert(0, ARGS.stubs)
import grpc  # noqa: E402
from textgen.v1 import textgen_pb2 as pb  # noqa: E402
from textgen.v1 import textgen_pb2_grpc as pb_grpc  # noqa: E402

KINDS = ["normal", "session", "cancel", "deadline", "invalid", "http"]
WEIGHTS = [40, 20, 12, 10, 10, 8]
EXPECTED = {
    "normal": {"OK"},
    "session": {"OK"},
    "cancel": {"CANCELLED", "OK"},
    "deadline": {"DEADLINE_EXCEEDED", "OK"},
    "invalid": {"INVALID_ARGUMENT"},
    "http": {"200"},
    # After the conversation: evicted under KV pressure is fine, busy is not (the turn is over).
    "delete": {"OK", "NOT_FOUND"},
}


class Report:
    def __init__(self):
        self.outcomes = {}      # kind -> status -> count
        self.failures = []      # first failures, described
        self.failure_count = 0
        self.tokens = 0
        self.cached_tokens = 0
        self.samples = []       # (seconds, rss_kib, fds)
        self.sessions_kept = set()

    def count(self, kind, status, details=""):
        self.outcomes.setdefault(kind, {}).setdefault(status, 0)
        self.outcomes[kind][status] += 1
        if status not in EXPECTED[kind]:
            self.fail(f"{kind}: unexpected {status} {details}".strip())

    def fail(self, what):
        self.failure_count += 1
        if len(self.failures) < 20:
            self.failures.append(what)


REPORT = Report()


def random_prompt(rng, vocab, n):
    # Ids 3.. avoid BOS/EOS and other control tokens at the bottom of the vocabulary.
    return [rng.randrange(3, vocab) for _ in range(n)]


async def read_stream(kind, call, vocab, cancel_after=None):
    """Reads a Generate stream; returns (status name, ids, finished) and checks its shape."""
    ids, finished, after_finished = [], None, False
    try:
        async for message in call:
            if finished is not None:
                after_finished = True
            for i in message.token_ids:
                if not 0 <= i < vocab:
                    REPORT.fail(f"{kind}: token id {i} outside the vocabulary")
            ids.extend(message.token_ids)
            if message.HasField("finished"):
                finished = message.finished
            if cancel_after is not None and len(ids) >= cancel_after:
                call.cancel()
                break
        status = (await call.code()).name if not call.cancelled() else "CANCELLED"
    except asyncio.CancelledError:
        status = "CANCELLED"
    except grpc.aio.AioRpcError as error:
        status = error.code().name
        if status not in EXPECTED[kind]:
            REPORT.fail(f"{kind}: {status}: {error.details()}")
    if status == "CANCELLED" and finished is not None:
        status = "OK"  # it ended before the cancel took effect
    if status == "OK":
        if finished is None:
            REPORT.fail(f"{kind}: OK stream without finished")
        elif finished.usage.completion_tokens != len(ids):
            REPORT.fail(f"{kind}: usage says {finished.usage.completion_tokens} tokens, "
                        f"received {len(ids)}")
        if after_finished:
            REPORT.fail(f"{kind}: messages after finished")
        REPORT.tokens += len(ids)
    return status, ids, finished


def generate_request(rng, vocab, prompt_tokens=None, max_tokens=None, session_id=""):
    n = prompt_tokens or rng.randint(16, 128)
    return pb.GenerateRequest(
        tokens=pb.TokenIds(ids=random_prompt(rng, vocab, n)),
        session_id=session_id,
        sampling=pb.SamplingParameters(temperature=0.8, seed=rng.randrange(1 << 32)),
        stopping=pb.StoppingCriteria(max_new_tokens=max_tokens or rng.randint(16, 64),
                                     ignore_eos=True))


def invalid_request(rng, vocab):
    choice = rng.randrange(6)
    ok = generate_request(rng, vocab)
    if choice == 0:
        ok.sampling.temperature = -1
    elif choice == 1:
        ok.session_id = "bad session/id"
    elif choice == 2:
        ok.stopping.max_new_tokens = 1 << 20
    elif choice == 3:
        ok.tokens.ids.append(vocab + 5)
    elif choice == 4:
        ok.ClearField("tokens")
    else:
        ok.sampling.top_p = 7
    return ok


async def http_completion(rng, vocab):
    host, port = ARGS.http.rsplit(":", 1)
    body = json.dumps({"prompt": random_prompt(rng, vocab, rng.randint(8, 64)),
                       "max_tokens": rng.randint(8, 32), "ignore_eos": True,
                       "seed": rng.randrange(1 << 31)}).encode()
    try:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json"
                     b"\r\nConnection: close\r\nContent-Length: " + str(len(body)).encode() +
                     b"\r\n\r\n" + body)
        await writer.drain()
        response = await asyncio.wait_for(reader.read(), timeout=600)
        writer.close()
    except (OSError, asyncio.TimeoutError) as error:
        return f"error {type(error).__name__}"
    head, _, payload = response.partition(b"\r\n\r\n")
    status = head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/1.1 ") else "malformed"
    if status == "200":
        try:
            usage = json.loads(payload)["usage"]
            REPORT.tokens += usage["completion_tokens"]
        except (ValueError, KeyError):
            REPORT.fail("http: 200 without a JSON body with usage")
    return status


async def delete_session(stub, session):
    try:
        await stub.DeleteSession(pb.DeleteSessionRequest(session_id=session), timeout=60)
        return "OK", ""
    except grpc.aio.AioRpcError as error:
        return error.code().name, error.details()


async def client(index, stub, vocab, end):
    rng = random.Random(ARGS.seed * 100003 + index)
    conversation = 0
    while time.monotonic() < end:
        kind = rng.choices(KINDS, WEIGHTS)[0]
        if kind == "normal":
            status, _, _ = await read_stream(kind, stub.Generate(generate_request(rng, vocab)),
                                             vocab)
            REPORT.count(kind, status)
        elif kind == "session":
            conversation += 1
            session = f"soak-{index}-{conversation}"
            history = []
            for turn in range(rng.randint(2, 4)):
                # The whole conversation each turn; the session's cache covers all but the new
                # tokens.
                request = generate_request(rng, vocab, rng.randint(8, 48), rng.randint(8, 32),
                                           session)
                history += list(request.tokens.ids)
                request.tokens.ids[:] = history
                status, ids, finished = await read_stream(kind, stub.Generate(request), vocab)
                REPORT.count(kind, status)
                if status != "OK":
                    break
                history += ids
                REPORT.cached_tokens += finished.usage.cached_tokens
            if rng.random() < 0.5:
                REPORT.count("delete", *await delete_session(stub, session))
            else:
                REPORT.sessions_kept.add(session)
        elif kind == "cancel":
            status, _, _ = await read_stream(kind, stub.Generate(generate_request(rng, vocab)),
                                             vocab, cancel_after=rng.randint(1, 8))
            REPORT.count(kind, status)
        elif kind == "deadline":
            call = stub.Generate(generate_request(rng, vocab), timeout=rng.uniform(0.02, 0.3))
            status, _, _ = await read_stream(kind, call, vocab)
            REPORT.count(kind, status)
        elif kind == "invalid":
            try:
                async for _ in stub.Generate(invalid_request(rng, vocab)):
                    pass
                status = "OK"
            except grpc.aio.AioRpcError as error:
                status = error.code().name
                if not error.details():
                    REPORT.fail("invalid: a refusal without a message")
            REPORT.count(kind, status)
        else:
            REPORT.count(kind, await http_completion(rng, vocab))


def sample_process(pid):
    with open(f"/proc/{pid}/status") as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


async def sampler(start, end):
    while time.monotonic() < end:
        rss, fds = sample_process(ARGS.pid)
        REPORT.samples.append((round(time.monotonic() - start, 1), rss, fds))
        await asyncio.sleep(5)


def scrape():
    with urllib.request.urlopen(f"http://{ARGS.metrics}/metrics", timeout=10) as page:
        text = page.read().decode()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


async def main():
    channel = grpc.aio.insecure_channel(ARGS.grpc)
    stub = pb_grpc.TextGenerationStub(channel)
    info = await stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=30)
    vocab = info.vocab_size
    _, fds_before = sample_process(ARGS.pid)
    start = time.monotonic()
    end = start + ARGS.duration
    await asyncio.gather(sampler(start, end),
                         *(client(i, stub, vocab, end) for i in range(ARGS.streams)))
    elapsed = time.monotonic() - start
    for session in sorted(REPORT.sessions_kept):
        REPORT.count("delete", *await delete_session(stub, session))
    await channel.close()
    await asyncio.sleep(1)  # the engine notices the last cancels and deletions
    metrics = scrape()
    final_rss, final_fds = sample_process(ARGS.pid)
    warm = [s for s in REPORT.samples if s[0] >= ARGS.warmup] or REPORT.samples
    rss = [s[1] for s in warm]
    fds = [s[2] for s in warm]
    rss_spread = (max(rss) - min(rss)) / min(rss)
    gauges = {name: metrics.get(name, -1) for name in (
        "textgen_running_requests", "textgen_queued_requests", "textgen_kv_cache_bytes_used",
        "textgen_sessions")}
    for name, value in gauges.items():
        if value != 0:
            REPORT.fail(f"{name} is {value} at the end")
    if rss_spread > 0.05:
        REPORT.fail(f"RSS after warm-up varies by {rss_spread:.1%} (min {min(rss)} KiB, "
                    f"max {max(rss)} KiB)")
    # During the load descriptors follow the open connections; once it is over they must be
    # back where they started.
    if final_fds > fds_before + 2:
        REPORT.fail(f"open descriptors leak: {fds_before} before the load, {final_fds} after")
    requests = sum(sum(s.values()) for s in REPORT.outcomes.values())
    report = {
        "streams": ARGS.streams,
        "seconds": round(elapsed, 1),
        "requests": requests,
        "outcomes": REPORT.outcomes,
        "generated_tokens": REPORT.tokens,
        "tokens_per_second": round(REPORT.tokens / elapsed, 1),
        "session_cached_tokens": REPORT.cached_tokens,
        "session_evictions": metrics.get("textgen_session_evictions_total", -1),
        "rss_mib_after_warmup": [round(min(rss) / 1024, 1), round(max(rss) / 1024, 1)],
        "rss_spread": round(rss_spread, 4),
        "fds_before": fds_before,
        "fds_after_warmup": [min(fds), max(fds)],
        "final_rss_mib": round(final_rss / 1024, 1),
        "final_fds": final_fds,
        "final_gauges": gauges,
        "failures": REPORT.failure_count,
        "first_failures": REPORT.failures,
    }
    print(json.dumps(report, indent=1))
    return 1 if REPORT.failure_count else 0


sys.exit(asyncio.run(main()))
