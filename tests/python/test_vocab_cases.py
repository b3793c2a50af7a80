"""textgen's tokenizers against llama.cpp's own tokenizer test suite: every vocabulary file
models/ggml-vocab-*.gguf in llama.cpp's source that has test cases (.inp: texts separated by
"\\n__ggml_vocab_test__\\n"; .out: one line of ids per case, made by the Hugging Face tokenizers,
no special tokens added). Every case of every vocabulary whose tokenizer model textgen supports
must match; the others must be refused with the error that names what is missing.

Then llama.cpp itself (libllama through tests/reference/llamacpp_ref.c) tokenizes 120 kB of real
text (Moby Dick) plus every test case, as a prompt (the vocabulary's BOS/EOS added, no special
token parsing), and textgen must give the same ids for every supported vocabulary; the same for
text that writes the vocabulary's special tokens, with and without parsing them (a chat
template's output vs a user's text); and the set of tokens that end a generation (EOS,
end-of-turn...) must be the one llama.cpp uses.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--bin", required=True, help="directory with textgen-tokenize")
ap.add_argument("--llamacpp", required=True, help="llama.cpp source (tests/reference/llamacpp_source.sh)")
ap.add_argument("--work", required=True, help="scratch directory")
args = ap.parse_args()
# The project's own Python GGUF reader (independent of the C++ loader; gguf-py's takes ~16 s
# per 150k-token vocabulary).
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "model", "training"))
import gguf_reader  # noqa: E402
from set_chat_template import set_string  # noqa: E402

reference_dir = os.path.dirname(os.path.abspath(args.llamacpp))
llamacpp_ref = os.path.join(reference_dir, "bin", "llamacpp-ref")
with open(os.path.join(reference_dir, "moby_dick.txt"), encoding="utf-8") as f:
    real_text = f.read()[:120_000]
os.makedirs(args.work, exist_ok=True)

# Vocabularies textgen does not read yet, with the reason (and the error it must give).
UNSUPPORTED = {
    "gemma-4": ("Gemma 4's \"gemma4\" tokenizer model is not implemented yet",
                'tokenizer.ggml.model "gemma4" is not supported'),
}

tool = os.path.join(args.bin, "textgen-tokenize")


def same_ids_as_llamacpp(label, path, text):
    """Tokenizes `text` as a prompt with the vocabulary at `path` through llama.cpp and textgen;
    prints and returns whether the ids are the same."""
    text_path = os.path.join(args.work, os.path.basename(path) + ".txt")
    with open(text_path, "w", encoding="utf-8") as f:
        f.write(text)
    want = subprocess.run([llamacpp_ref, "tokenize", path, text_path], capture_output=True,
                          text=True)
    ours = subprocess.run([tool, "--gguf", path, "--add-special"], input=text.encode(),
                          capture_output=True)
    if want.returncode != 0 or ours.returncode != 0:
        print(f"FAIL {label}: llama.cpp rc {want.returncode} {want.stderr[-300:]}; "
              f"textgen rc {ours.returncode} {ours.stderr.decode()[-300:]}")
        return False
    want_ids, our_ids = want.stdout.split(), ours.stdout.decode().split()
    first = next((i for i, (a, b) in enumerate(zip(want_ids, our_ids)) if a != b),
                 None if len(want_ids) == len(our_ids) else min(len(want_ids), len(our_ids)))
    if first is None:
        print(f"ok   {label}: {len(text.encode())} bytes -> {len(want_ids)} ids, same as "
              f"llama.cpp (first ids {' '.join(want_ids[:3])})")
        return True
    print(f"FAIL {label}: ids differ from llama.cpp at {first} of {len(want_ids)}: "
          f"llama.cpp {want_ids[first:first + 5]} textgen {our_ids[first:first + 5]}")
    return False


files = sorted(glob.glob(os.path.join(args.llamacpp, "models", "ggml-vocab-*.gguf")))
failures = 0
matched_vocabs = 0
all_cases = []  # every vocabulary's test texts, for the o200k check at the end
for path in files:
    name = os.path.basename(path)[len("ggml-vocab-"):-len(".gguf")]
    if not os.path.exists(path + ".inp"):
        print(f"skip {name}: llama.cpp ships no test cases for it")
        continue
    with open(path + ".inp", "rb") as f:
        inp = f.read()
    all_cases += inp.decode("utf-8").split("\n__ggml_vocab_test__\n")
    with open(path + ".out", encoding="utf-8") as f:
        expected = [line.strip() for line in f.read().split("\n")]
    run = subprocess.run([tool, "--gguf", path, "--cases"], input=inp, capture_output=True)
    if name in UNSUPPORTED:
        reason, error = UNSUPPORTED[name]
        ok = run.returncode != 0 and error in run.stderr.decode()
        print(f"{'ok  ' if ok else 'FAIL'} {name}: not supported ({reason})"
              + ("" if ok else f"; expected the error '{error}', got: {run.stderr.decode()!r}"))
        failures += 0 if ok else 1
        continue
    if run.returncode != 0:
        print(f"FAIL {name}: textgen-tokenize failed: {run.stderr.decode()}")
        failures += 1
        continue
    got = run.stdout.decode().split("\n")
    cases = inp.decode("utf-8").split("\n__ggml_vocab_test__\n")
    n = len(cases) - (1 if cases[-1] == "" else 0)
    bad = [i for i in range(n) if i >= len(got) or got[i].strip() != expected[i]]
    if bad:
        i = bad[0]
        print(f"FAIL {name}: {len(bad)}/{n} cases differ; first: case {i} {cases[i][:60]!r}\n"
              f"     textgen: {got[i] if i < len(got) else '(none)'}\n     HF:      {expected[i]}")
        failures += 1
    else:
        print(f"ok   {name}: {n}/{n} cases match")
        matched_vocabs += 1
    want_eog = subprocess.run([llamacpp_ref, "eog", path], capture_output=True, text=True)
    our_eog = subprocess.run([tool, "--gguf", path, "--eog"], capture_output=True, text=True)
    ok = want_eog.returncode == 0 and want_eog.stdout.split() == our_eog.stdout.split()
    print(f"{'ok  ' if ok else 'FAIL'} {name}: end-of-generation ids "
          f"{our_eog.stdout.split()}" + ("" if ok else f", llama.cpp {want_eog.stdout.split()}"))
    failures += 0 if ok else 1
    # The same text through llama.cpp and textgen, as a prompt; with every control and
    # user-defined token written into it (up to 64 of them), parsed and not.
    metadata = gguf_reader.GGUFFile(path).metadata
    tokens = metadata["tokenizer.ggml.tokens"]
    types = metadata["tokenizer.ggml.token_type"]
    specials = [tokens[i] for i in range(len(tokens)) if types[i] in (3, 4)][:64]
    special_text = "".join(f"x{t}y {t}\n{t} z " for t in specials)
    text = real_text + "\n" + "\n".join(cases) + "\n" + special_text
    for parse in (False, True):
        text_path = os.path.join(args.work, name + "-special.txt")
        with open(text_path, "w", encoding="utf-8") as f:
            f.write(special_text)
        want = subprocess.run([llamacpp_ref, "tokenize", path, text_path]
                              + (["parse-special"] if parse else []), capture_output=True, text=True)
        ours = subprocess.run([tool, "--gguf", path, "--add-special"]
                              + (["--parse-special"] if parse else []),
                              input=special_text.encode(), capture_output=True)
        same = want.returncode == 0 and want.stdout.split() == ours.stdout.decode().split()
        print(f"{'ok  ' if same else 'FAIL'} {name}: {len(specials)} special tokens written in "
              f"text, {'parsed' if parse else 'not parsed'}: "
              + ("same ids as llama.cpp" if same else
                 f"differ: llama.cpp {want.stdout.split()[:12]} textgen "
                 f"{ours.stdout.decode().split()[:12]} {want.stderr[-200:]}"))
        failures += 0 if same else 1
    failures += 0 if same_ids_as_llamacpp(name, path, text) else 1

# o200k: same ids as llama.cpp on real text and every test case of every vocabulary.
with open(os.path.join(args.llamacpp, "models", "ggml-vocab-qwen2.gguf"), "rb") as f:
    relabelled = set_string(f.read(), "tokenizer.ggml.pre", "gpt-4o")
o200k_path = os.path.join(args.work, "vocab-qwen2-as-gpt-4o.gguf")
with open(o200k_path, "wb") as f:
    f.write(relabelled)
# Case changes inside words, contractions in both cases, digit runs, slashes after punctuation.
o200k_text = (real_text + "\n" + "\n".join(all_cases) + "\nHTTPServer getHTTPResponse iPhone "
              "XMLHttpRequest I'M HE'S they'RE 1234567 3.14159 a/b//c !!!//\n\n  x\r\n")
failures += 0 if same_ids_as_llamacpp("gpt-4o pre-tokenizer (qwen2 vocabulary)", o200k_path,
                                      o200k_text) else 1
if matched_vocabs < 10:
    print(f"FAIL only {matched_vocabs} vocabularies matched (expected at least 10)")
    failures += 1
print(f"{matched_vocabs} vocabularies match every case; {failures} failures")
sys.exit(1 if failures else 0)
