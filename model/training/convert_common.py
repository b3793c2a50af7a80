"""Shared pieces of the checkpoint -> GGUF converters: loading, key/shape checking, dtypes."""

from __future__ import annotations

import sys
from typing import Mapping

import numpy as np
import torch

WEIGHT_DTYPES = ("f32", "f16", "bf16", "q8_0")


class ConversionError(Exception):
    """A checkpoint that cannot be converted; the message says exactly why."""


def load_checkpoint(path: str) -> tuple[dict, dict]:
    """Returns (state_dict, config dict) from a torch.save file.

    Accepts {"state_dict"|"model"|"model_state_dict": sd, "config"|"model_args": cfg} or a bare
    state_dict. Strips the "_orig_mod." (torch.compile) and "module." (DDP) prefixes.
    """
    try:
        obj = torch.load(path, map_location="cpu")
    except Exception as e:  # torch raises many types for a bad file
        raise ConversionError(f"cannot read checkpoint {path}: {e}") from e
    if not isinstance(obj, Mapping):
        raise ConversionError(f"{path}: expected a dict (state_dict or checkpoint), got "
                              f"{type(obj).__name__}")
    config: dict = {}
    state = obj
    for key in ("state_dict", "model", "model_state_dict"):
        if key in obj and isinstance(obj[key], Mapping):
            state = obj[key]
            break
    for key in ("config", "model_args"):
        if key in obj and isinstance(obj[key], Mapping):
            config = dict(obj[key])
            break
    out = {}
    for name, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise ConversionError(f"{path}: state_dict entry {name!r} is a "
                                  f"{type(value).__name__}, not a tensor")
        for prefix in ("_orig_mod.", "module."):
            if name.startswith(prefix):
                name = name[len(prefix):]
        out[name] = value.detach().to(torch.float32)
    return out, config


def check_state_dict(state: Mapping[str, torch.Tensor], expected: Mapping[str, tuple],
                     optional: set[str] = frozenset(), ignored_suffixes: tuple = ()) -> None:
    """Raises ConversionError listing every missing key, unexpected key and shape mismatch."""
    problems = []
    missing = [k for k in expected if k not in state and k not in optional]
    if missing:
        problems.append("missing keys: " + ", ".join(missing))
    unexpected = [k for k in state if k not in expected and not k.endswith(ignored_suffixes)]
    if unexpected:
        problems.append("unexpected keys: " + ", ".join(unexpected))
    for k, shape in expected.items():
        if k in state and tuple(state[k].shape) != tuple(shape):
            problems.append(f"shape mismatch for {k}: expected {list(shape)}, got "
                            f"{list(state[k].shape)}")
    if problems:
        raise ConversionError("checkpoint does not match the model config:\n  " +
                              "\n  ".join(problems))


def matrix_dtype(name: str, array: np.ndarray, dtype: str) -> str:
    """q8_0 needs rows that are a multiple of 32 wide; such tensors fall back to f16."""
    if dtype == "q8_0" and array.shape[-1] % 32 != 0:
        print(f"note: {name} has rows of {array.shape[-1]} (not a multiple of 32): stored as f16",
              file=sys.stderr)
        return "f16"
    return dtype


def pad_vocab(tokens: list, scores: list, types: list, vocab_size: int, what: str) -> None:
    """Pads the vocabulary with unused [PADi] tokens up to the model's (padded) vocab size."""
    if len(tokens) > vocab_size:
        raise ConversionError(f"{what} has {len(tokens)} tokens but the model's vocab_size is "
                              f"{vocab_size}")
    for i in range(len(tokens), vocab_size):
        tokens.append(f"[PAD{i}]")
        if scores is not None:
            scores.append(-1e9)
        types.append(5)  # unused


def run_main(main) -> None:
    try:
        main()
    except ConversionError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
