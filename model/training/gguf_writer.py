"""A small GGUF v3 writer (the llama.cpp model file format), numpy only.

Usage:
    w = GGUFWriter("out.gguf")
    w.add_string("general.architecture", "llama")
    w.add_uint32("llama.block_count", 6)
    w.add_array("tokenizer.ggml.tokens", ["<unk>", "<s>"], "string")
    w.add_tensor("token_embd.weight", emb, "f16")   # emb: [vocab, dim] = [out, in], row-major
    w.write()

Layout written (all little-endian):
    header      magic "GGUF", version u32 = 3, tensor_count u64, kv_count u64
    kv pairs    key (u64 length + utf-8), value type u32, value
    tensor info name, n_dims u32, dims u64[n_dims] innermost-first, ggml type u32, offset u64
    padding     to `general.alignment` (32)
    tensor data each tensor starts at a multiple of the alignment (offsets relative to here)

A numpy array of shape [out, in] (PyTorch nn.Linear layout) is written with GGUF dims [in, out].
"""

from __future__ import annotations

import struct
from typing import Iterable, Sequence

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
DEFAULT_ALIGNMENT = 32

# gguf_type (metadata value types).
GGUF_TYPE_UINT8 = 0
GGUF_TYPE_INT8 = 1
GGUF_TYPE_UINT16 = 2
GGUF_TYPE_INT16 = 3
GGUF_TYPE_UINT32 = 4
GGUF_TYPE_INT32 = 5
GGUF_TYPE_FLOAT32 = 6
GGUF_TYPE_BOOL = 7
GGUF_TYPE_STRING = 8
GGUF_TYPE_ARRAY = 9
GGUF_TYPE_UINT64 = 10
GGUF_TYPE_INT64 = 11
GGUF_TYPE_FLOAT64 = 12

# ggml_type (tensor element types) that this writer produces.
GGML_TYPE_F32 = 0
GGML_TYPE_F16 = 1
GGML_TYPE_Q8_0 = 8
GGML_TYPE_BF16 = 30

TENSOR_DTYPES = {"f32": GGML_TYPE_F32, "f16": GGML_TYPE_F16, "bf16": GGML_TYPE_BF16,
                 "q8_0": GGML_TYPE_Q8_0}
# general.file_type (llama_ftype) for a file whose big matrices are all of one dtype.
FILE_TYPES = {"f32": 0, "f16": 1, "q8_0": 7, "bf16": 32}

Q8_0_BLOCK = 32

_ARRAY_ELEM_TYPES = {
    "string": (GGUF_TYPE_STRING, None),
    "float32": (GGUF_TYPE_FLOAT32, "<f4"),
    "int32": (GGUF_TYPE_INT32, "<i4"),
    "uint32": (GGUF_TYPE_UINT32, "<u4"),
}


def _pack_string(s: str) -> bytes:
    data = s.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even f32 -> bf16 (as uint16), NaN kept quiet; same as ggml's converter."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + (0x7FFF + ((u >> 16) & 1))) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        rounded[nan] = ((u[nan] >> 16) | 64).astype(np.uint16)
    return rounded


def quantize_q8_0(x: np.ndarray) -> bytes:
    """ggml Q8_0: per 32 values an f16 scale d = max|x| / 127 then int8 round(x / d).

    `x` is [rows, cols] with cols % 32 == 0; blocks run along each row.
    """
    blocks = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, Q8_0_BLOCK)
    amax = np.abs(blocks).max(axis=1)
    d = amax / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    # ggml uses roundf (half away from zero), numpy rounds half to even: use sign * floor(|v|+.5).
    v = blocks * inv[:, None]
    q = (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int8)
    out = np.empty(blocks.shape[0], dtype=[("d", "<f2"), ("qs", "i1", (Q8_0_BLOCK,))])
    out["d"] = d.astype(np.float16)
    out["qs"] = q
    return out.tobytes()


class GGUFWriter:
    """Collects metadata and tensors, then writes one GGUF v3 file with write()."""

    def __init__(self, path: str, alignment: int = DEFAULT_ALIGNMENT,
                 write_alignment_key: bool = True):
        self.path = path
        self.alignment = alignment
        self._kv: list[tuple[str, bytes]] = []
        self._keys: set[str] = set()
        self._tensors: list[tuple[str, tuple[int, ...], int, bytes]] = []
        self._tensor_names: set[str] = set()
        if write_alignment_key:  # readers assume 32 without it
            self.add_uint32("general.alignment", alignment)
        elif alignment != DEFAULT_ALIGNMENT:
            raise ValueError(f"alignment {alignment} != 32 must be written as general.alignment")

    # ---- metadata ----

    def _add_kv(self, key: str, value_type: int, payload: bytes) -> None:
        if key in self._keys:
            raise ValueError(f"duplicate metadata key {key!r}")
        self._keys.add(key)
        self._kv.append((key, struct.pack("<I", value_type) + payload))

    def add_string(self, key: str, value: str) -> None:
        self._add_kv(key, GGUF_TYPE_STRING, _pack_string(value))

    def add_uint32(self, key: str, value: int) -> None:
        if not 0 <= int(value) < 2**32:
            raise ValueError(f"{key}: {value} does not fit in uint32")
        self._add_kv(key, GGUF_TYPE_UINT32, struct.pack("<I", int(value)))

    def add_int32(self, key: str, value: int) -> None:
        if not -(2**31) <= int(value) < 2**31:
            raise ValueError(f"{key}: {value} does not fit in int32")
        self._add_kv(key, GGUF_TYPE_INT32, struct.pack("<i", int(value)))

    def add_uint64(self, key: str, value: int) -> None:
        self._add_kv(key, GGUF_TYPE_UINT64, struct.pack("<Q", int(value)))

    def add_float32(self, key: str, value: float) -> None:
        self._add_kv(key, GGUF_TYPE_FLOAT32, struct.pack("<f", float(value)))

    def add_bool(self, key: str, value: bool) -> None:
        self._add_kv(key, GGUF_TYPE_BOOL, struct.pack("<B", 1 if value else 0))

    def add_array(self, key: str, values: Sequence | Iterable, elem_type: str) -> None:
        if elem_type not in _ARRAY_ELEM_TYPES:
            raise ValueError(f"{key}: array element type {elem_type!r} not in "
                             f"{sorted(_ARRAY_ELEM_TYPES)}")
        gguf_type, np_dtype = _ARRAY_ELEM_TYPES[elem_type]
        values = list(values)
        header = struct.pack("<IQ", gguf_type, len(values))
        if elem_type == "string":
            body = b"".join(_pack_string(v) for v in values)
        else:
            body = np.asarray(values, dtype=np_dtype).tobytes()
        self._add_kv(key, GGUF_TYPE_ARRAY, header + body)

    # ---- tensors ----

    def add_tensor(self, name: str, array, dtype: str = "f32") -> None:
        """Adds a tensor. `array` is numpy (or torch) with PyTorch shape ([out, in] for a matrix)."""
        if dtype not in TENSOR_DTYPES:
            raise ValueError(f"tensor {name}: dtype {dtype!r} not in {sorted(TENSOR_DTYPES)}")
        if name in self._tensor_names:
            raise ValueError(f"duplicate tensor name {name!r}")
        if len(name.encode("utf-8")) >= 64:
            raise ValueError(f"tensor name {name!r} is longer than GGML_MAX_NAME - 1 = 63 bytes")
        if hasattr(array, "detach"):  # torch.Tensor
            array = array.detach().to("cpu").float().numpy()
        array = np.asarray(array, dtype=np.float32)
        if array.ndim < 1 or array.ndim > 4:
            raise ValueError(f"tensor {name}: {array.ndim} dims, GGUF tensors have 1-4")
        array = np.ascontiguousarray(array)
        if dtype == "f32":
            data = array.astype("<f4").tobytes()
        elif dtype == "f16":
            data = array.astype("<f2").tobytes()
        elif dtype == "bf16":
            data = f32_to_bf16_bits(array).astype("<u2").tobytes()
        else:  # q8_0
            if array.shape[-1] % Q8_0_BLOCK != 0:
                raise ValueError(f"tensor {name}: q8_0 needs the innermost dim to be a multiple "
                                 f"of {Q8_0_BLOCK}, got shape {list(array.shape)}")
            data = quantize_q8_0(array)
        dims = tuple(int(d) for d in reversed(array.shape))  # GGUF: innermost first
        self._tensor_names.add(name)
        self._tensors.append((name, dims, TENSOR_DTYPES[dtype], data))

    # ---- output ----

    def _pad(self, n: int) -> int:
        return (self.alignment - n % self.alignment) % self.alignment

    def write(self) -> None:
        infos = []
        offset = 0
        for name, dims, ggml_type, data in self._tensors:
            infos.append(_pack_string(name) + struct.pack("<I", len(dims)) +
                         struct.pack(f"<{len(dims)}Q", *dims) +
                         struct.pack("<IQ", ggml_type, offset))
            offset += len(data) + self._pad(len(data))
        with open(self.path, "wb") as f:
            f.write(GGUF_MAGIC)
            f.write(struct.pack("<IQQ", GGUF_VERSION, len(self._tensors), len(self._kv)))
            for key, value in self._kv:
                f.write(_pack_string(key))
                f.write(value)
            for info in infos:
                f.write(info)
            f.write(b"\0" * self._pad(f.tell()))
            for _, _, _, data in self._tensors:
                f.write(data)
                f.write(b"\0" * self._pad(len(data)))
