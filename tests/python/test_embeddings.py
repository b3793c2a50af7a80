#!/usr/bin/python3
"""Embeddings (POST /v1/embeddings of the real textgen-server) against llama.cpp itself
(libllama through tests/reference/llamacpp_ref.c `embed`: the file's pooling_type, F32 KV cache,
one thread) on the same GGUF files: random-weight decoder models in Qwen 3's and Llama's layouts
(textgen-make-random-gguf --pooling mean|cls|last, Qwen's real vocabulary) and encoders in
BERT's and nomic-embed's (bert, nomic-bert: bidirectional, BGE's real WordPiece vocabulary), in
f32 and quantized by llama.cpp (Q8_0, Q4_K_M).
    test_embeddings.py --bin BUILD/bin --llamacpp LLAMA_CPP_SOURCE --work DIR
Checks: the raw pooled vectors (`normalize: false`) have cosine similarity >= 0.9999 with
llama.cpp's in f32 and >= the per-type bound below when quantized; the default output is that
vector L2-normalized; `dimensions: 16` is the first 16 values, normalized; base64 decodes to the
float list; an input's embedding is bitwise the same alone, in a batch of 8 inputs and while 8
requests run at once; an encoder embeds text tokenized as llama.cpp does ([CLS] ... [SEP]) and
refuses to generate (409 naming it an embedding model); the gRPC-free errors (an empty input, too many dimensions, a bad
encoding_format) are 400s naming `input`, `dimensions`, `encoding_format`.
"""
from __future__ import annotations

import argparse
import base64
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import numpy as np

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--bin", required=True)
ap.add_argument("--llamacpp", required=True)
ap.add_argument("--work", required=True)
args = ap.parse_args()
LLAMACPP_REF = os.path.join(os.path.dirname(os.path.abspath(args.llamacpp)), "bin", "llamacpp-ref")
VOCAB = os.path.join(args.llamacpp, "models", "ggml-vocab-qwen2.gguf")
BERT_VOCAB = os.path.join(args.llamacpp, "models", "ggml-vocab-bert-bge.gguf")
os.makedirs(args.work, exist_ok=True)

# Cosine bounds against llama.cpp on the same file. Quantized: llama.cpp multiplies with
# activations quantized to 8 bits, textgen's integer kernels too but blocked differently.
MIN_COSINE = {"f32": 0.9999, "q8_0": 0.9995, "q4_k_m": 0.999}
FTYPE = {"q8_0": 7, "q4_k_m": 15}
DECODER_INPUTS = [[9707, 1879, 11, 1246, 525, 498, 30], [40, 1079, 264, 1273, 13] * 9,
                  [785], list(range(1000, 1040))]
# Encoders' inputs framed as BERT's tokenizer frames them: [CLS] ... [SEP].
ENCODER_INPUTS = [[101, 7592, 2088, 999, 102], [101] + [2023, 2003, 1037, 3231, 1012] * 9 + [102],
                  [101, 102], [101] + list(range(2000, 2040)) + [102]]
ENCODERS = ("bert", "nomic-bert")
# Architecture, pooling, the quantizations checked.
MODELS = [(arch, pooling, ("f32", "q8_0", "q4_k_m")) for arch in ("qwen3", "llama")
          for pooling in ("mean", "last", "cls")]
MODELS += [("bert", "mean", ("f32", "q8_0", "q4_k_m")), ("bert", "cls", ("f32", "q8_0")),
           ("nomic-bert", "mean", ("f32", "q8_0"))]


def make_model(arch: str, pooling: str, dtype: str) -> str:
    f32 = os.path.join(args.work, f"{arch}-{pooling}-f32.gguf")
    if not os.path.exists(f32):
        encoder = arch in ENCODERS
        subprocess.run([os.path.join(args.bin, "textgen-make-random-gguf"), "--arch", arch,
                        "--preset", "tiny", "--dim", "128", "--hidden", "256", "--heads", "4",
                        "--kv-heads", "4" if encoder else "2", "--dtype", "f32", "--context",
                        "512", "--pooling", pooling, "--vocab-from",
                        BERT_VOCAB if encoder else VOCAB, "--name", f"{arch}-{pooling}",
                        "--out", f32], check=True, stdout=subprocess.DEVNULL)
    if dtype == "f32":
        return f32
    out = os.path.join(args.work, f"{arch}-{pooling}-{dtype}.gguf")
    if not os.path.exists(out):
        subprocess.run([LLAMACPP_REF, "quantize", f32, out, str(FTYPE[dtype])], check=True)
    return out


def llamacpp_tokens(model: str, text: str) -> list[int]:
    path = os.path.join(args.work, "text.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    run = subprocess.run([LLAMACPP_REF, "tokenize", model, path], check=True,
                         capture_output=True, text=True)
    return [int(x) for x in run.stdout.split()]


def llamacpp_embedding(model: str, ids: list[int]) -> np.ndarray:
    out = os.path.join(args.work, "ref.bin")
    subprocess.run([LLAMACPP_REF, "embed", model, ",".join(map(str, ids)), out], check=True)
    return np.fromfile(out, dtype=np.float32).astype(np.float64)


class Server:
    def __init__(self, model: str):
        self.process = subprocess.Popen(
            [os.path.join(args.bin, "textgen-server"), "--model", model, "--listen",
             "127.0.0.1:0", "--metrics-listen=", "--http-listen", "127.0.0.1:0", "--threads", "1",
             "--max-batch", "16"], stderr=subprocess.PIPE, text=True)
        self.port = None
        for line in self.process.stderr:
            match = re.search(r"http_port=(\d+)", line)
            if match:
                self.port = int(match.group(1))
                break
        if self.port is None:
            raise RuntimeError(f"textgen-server exited with {self.process.wait()}")
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()

    def post(self, body: dict, path: str = "/v1/embeddings") -> tuple[int, dict]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def embed(self, inputs, **extra) -> list[list[float]]:
        status, body = self.post({"input": inputs, **extra})
        assert status == 200, body
        return [item["embedding"] for item in sorted(body["data"], key=lambda d: d["index"])]

    def stop(self):
        self.process.terminate()
        self.process.wait()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


failures = []
worst = {}
for arch, pooling, dtypes in MODELS:
        INPUTS = ENCODER_INPUTS if arch in ENCODERS else DECODER_INPUTS
        for dtype in dtypes:
            model = make_model(arch, pooling, dtype)
            server = Server(model)
            try:
                raw = server.embed(INPUTS, normalize=False)
                for ids, vector in zip(INPUTS, raw):
                    ours = np.asarray(vector, dtype=np.float64)
                    ref = llamacpp_embedding(model, ids)
                    c = cosine(ours, ref)
                    key = (arch, dtype, pooling)
                    worst[key] = min(worst.get(key, 1.0), c)
                    if c < MIN_COSINE[dtype]:
                        failures.append(f"{arch} {pooling} {dtype} {len(ids)} tokens: cosine {c}")
                if dtype != "f32":
                    continue
                if arch in ENCODERS:
                    # Text: WordPiece and the [CLS] ... [SEP] framing, as llama.cpp tokenizes it.
                    text = "Hello, World! Embeddings of naïve café text."
                    ids = llamacpp_tokens(model, text)
                    ours = np.asarray(server.embed([text], normalize=False)[0])
                    c = cosine(ours, llamacpp_embedding(model, ids))
                    if c < MIN_COSINE[dtype]:
                        failures.append(f"{arch} {pooling} text {ids}: cosine {c}")
                    # An encoder embeds; it does not generate.
                    status, reply = server.post({"prompt": "x"}, "/v1/completions")
                    assert status == 409 and "embedding model" in reply["error"]["message"], reply
                # Normalized by default; dimensions truncate first.
                normalized = server.embed(INPUTS[:1])[0]
                expect = np.asarray(raw[0]) / np.linalg.norm(raw[0])
                assert np.allclose(normalized, expect, atol=1e-6), (arch, pooling)
                short = server.embed(INPUTS[:1], dimensions=16)[0]
                head = np.asarray(raw[0][:16])
                assert len(short) == 16 and np.allclose(short, head / np.linalg.norm(head),
                                                        atol=1e-6), (arch, pooling)
                encoded = server.embed(INPUTS[:1], encoding_format="base64")[0]
                decoded = np.frombuffer(base64.b64decode(encoded), dtype="<f4")
                assert decoded.tolist() == np.asarray(normalized, dtype=np.float32).tolist()
                # Batch invariance: alone, in a batch of 8, and under 8 concurrent requests.
                alone = [server.embed([ids])[0] for ids in INPUTS]
                batched = server.embed((INPUTS * 2)[:8])
                assert batched[:4] == alone and batched[4:] == alone, (arch, pooling)
                with concurrent.futures.ThreadPoolExecutor(8) as pool:
                    parallel = list(pool.map(lambda i: server.embed([INPUTS[i % 4]])[0],
                                             range(8)))
                assert parallel == (alone * 2), (arch, pooling)
                # Errors name the parameter.
                for body, param in (({"input": ["ok", ""]}, "input"),
                                    ({"input": "x", "dimensions": 100000}, "dimensions"),
                                    ({"input": "x", "encoding_format": "hex"}, "encoding_format"),
                                    ({"input": [list(range(600))]}, "input")):
                    status, reply = server.post(body)
                    assert status == 400 and reply["error"]["param"] == param, (body, reply)
            finally:
                server.stop()

for (arch, dtype, pooling), c in sorted(worst.items()):
    print(f"{arch:10} {dtype:7} {pooling:5} worst cosine vs llama.cpp {c:.6f}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("embeddings: OK")
