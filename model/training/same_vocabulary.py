"""Checks that a SentencePiece tokenizer.model is the vocabulary a GGUF file carries (pieces, scores
and types, id for id): a draft model trained with it then drafts the ids the GGUF's model means.

    python3 same_vocabulary.py --tokenizer runs/data/tokenizer.model --gguf ../../models/default.gguf
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_reader import GGUFFile  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--gguf", required=True)
    args = ap.parse_args()
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=args.tokenizer)
    gguf = GGUFFile(args.gguf)
    tokens = gguf.metadata["tokenizer.ggml.tokens"]
    scores = gguf.metadata["tokenizer.ggml.scores"]
    if sp.get_piece_size() != len(tokens):
        print(f"different sizes: {sp.get_piece_size()} pieces, {len(tokens)} tokens in {args.gguf}")
        return 1
    for i, (token, score) in enumerate(zip(tokens, scores)):
        if sp.id_to_piece(i) != token or abs(sp.get_score(i) - score) > 1e-6:
            print(f"id {i}: {sp.id_to_piece(i)!r} score {sp.get_score(i)} here, {token!r} score {score} in "
                  f"{args.gguf}")
            return 1
    print(f"same vocabulary: {len(tokens)} pieces, scores and order as in {args.gguf}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
