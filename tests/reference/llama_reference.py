"""Writes Llama 2 ids from Debian's python3-sentencepiece for the text and hard cases that
gpt2_reference.js wrote. Usage: /usr/bin/python3 llama_reference.py TOKENIZER_MODEL OUT_DIR"""
import json
import os
import sys

import sentencepiece


def write(out_dir, name, data):
    tmp = os.path.join(out_dir, name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(tmp, os.path.join(out_dir, name))


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
    sp = sentencepiece.SentencePieceProcessor(model_file=model_path)
    with open(os.path.join(out_dir, "moby_dick.txt"), encoding="utf-8", newline="") as f:
        text = f.read()
    with open(os.path.join(out_dir, "hard_cases.json"), encoding="utf-8") as f:
        hard_cases = json.load(f)
    # encode() adds no BOS/EOS: the C++ side compares Encode(text, add_bos=false).
    write(out_dir, "llama_moby_dick_ids.txt", "".join(f"{i}\n" for i in sp.encode(text)))
    write(out_dir, "llama_hard_cases.json", json.dumps([sp.encode(t) for t in hard_cases]))


if __name__ == "__main__":
    main()
