#!/usr/bin/python3
"""Greedy and sampled continuations from a trained checkpoint (PyTorch reference, no KV cache).

    /usr/bin/python3 sample.py --checkpoint runs/default/final.pt --tokenizer runs/data/tokenizer.model \
        [--out samples.json] [--max-new-tokens 48]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import ModelConfig, TransformerLM  # noqa: E402

DEFAULT_PROMPTS = [
    "The history of the United States",
    "Call me Ishmael.",
    "The jury said that",
    "In the morning, the old man",
    "Our nation must",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", help="write samples as JSON here")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--top-p", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("prompts", nargs="*")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    ckpt = torch.load(args.checkpoint, map_location="cpu")
    model = TransformerLM(ModelConfig.from_dict(ckpt["config"]))
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    gen = torch.Generator().manual_seed(args.seed)

    results = []
    for prompt in args.prompts or DEFAULT_PROMPTS:
        ids = [sp.bos_id()] + sp.encode(prompt)
        entry = {"prompt": prompt}
        for mode, temp in (("greedy", 0.0), (f"sampled (T={args.temperature}, top_p={args.top_p}, "
                                             f"seed={args.seed})", args.temperature)):
            out = model.generate(ids, args.max_new_tokens, temperature=temp, top_p=args.top_p,
                                 eos_id=sp.eos_id(), generator=gen)
            # Decode prompt + continuation together so the continuation keeps its leading space.
            text = sp.decode(out[1:])[len(sp.decode(ids[1:])):]
            entry[mode.split(" ")[0]] = text
            entry.setdefault("settings", {})[mode.split(" ")[0]] = mode
            print(f"[{mode}] {prompt}|{text}\n", flush=True)
        results.append(entry)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"checkpoint": os.path.basename(args.checkpoint), "max_new_tokens": args.max_new_tokens,
                       "samples": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
