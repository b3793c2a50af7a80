"""A small GGUF v2/v3 reader (numpy only), independent of the C++ loader.

    f = GGUFFile("model.gguf")
    f.metadata["llama.block_count"]      # python values; arrays are lists
    f.tensor("blk.0.attn_q.weight")      # np.float32 in PyTorch shape ([out, in] for a matrix)
    f.tensor_types["token_embd.weight"]  # ggml type id

Supports f32, f16, bf16 and q8_0 tensors (dequantised to f32).
"""

from __future__ import annotations

import struct

import numpy as np

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9

GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30


class GGUFFile:
    def __init__(self, path: str):
        with open(path, "rb") as f:
            self._buf = f.read()
        self._pos = 0
        magic = self._buf[:4]
        if magic != b"GGUF":
            raise ValueError(f"{path}: bad magic {magic!r}, expected b'GGUF'")
        self._pos = 4
        self.version = self._read("<I")
        if self.version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {self.version} not supported (2 or 3)")
        n_tensors = self._read("<Q")
        n_kv = self._read("<Q")
        self.metadata: dict = {}
        self.metadata_types: dict = {}  # key -> gguf value type
        self.array_types: dict = {}  # key -> element type, for arrays
        for _ in range(n_kv):
            key = self._read_string()
            vtype = self._read("<I")
            self.metadata_types[key] = vtype
            if vtype == _ARRAY:
                (self.array_types[key],) = struct.unpack_from("<I", self._buf, self._pos)
            self.metadata[key] = self._read_value(vtype)
        infos = []
        for _ in range(n_tensors):
            name = self._read_string()
            n_dims = self._read("<I")
            dims = [self._read("<Q") for _ in range(n_dims)]
            ggml_type = self._read("<I")
            offset = self._read("<Q")
            infos.append((name, dims, ggml_type, offset))
        alignment = int(self.metadata.get("general.alignment", 32))
        self.data_offset = (self._pos + alignment - 1) // alignment * alignment
        self.tensor_dims = {name: dims for name, dims, _, _ in infos}
        self.tensor_types = {name: t for name, _, t, _ in infos}
        self.tensor_offsets = {name: self.data_offset + off for name, _, _, off in infos}

    def _read(self, fmt: str):
        size = struct.calcsize(fmt)
        if self._pos + size > len(self._buf):
            raise ValueError(f"truncated GGUF at byte {self._pos}")
        (value,) = struct.unpack_from(fmt, self._buf, self._pos)
        self._pos += size
        return value

    def _read_string(self) -> str:
        n = self._read("<Q")
        s = self._buf[self._pos:self._pos + n]
        self._pos += n
        return s.decode("utf-8", errors="replace")

    def _read_value(self, vtype: int):
        if vtype in _SCALARS:
            return self._read(_SCALARS[vtype])
        if vtype == _STRING:
            return self._read_string()
        if vtype == _ARRAY:
            etype = self._read("<I")
            n = self._read("<Q")
            return [self._read_value(etype) for _ in range(n)]
        raise ValueError(f"unknown GGUF value type {vtype} at byte {self._pos}")

    def names(self) -> list[str]:
        return list(self.tensor_dims)

    def tensor(self, name: str) -> np.ndarray:
        """The tensor as float32 in PyTorch shape (GGUF dims reversed)."""
        if name not in self.tensor_dims:
            raise KeyError(f"tensor {name!r} not in file")
        dims = self.tensor_dims[name]
        n = int(np.prod(dims))
        t = self.tensor_types[name]
        off = self.tensor_offsets[name]
        if t == GGML_F32:
            x = np.frombuffer(self._buf, "<f4", n, off).astype(np.float32)
        elif t == GGML_F16:
            x = np.frombuffer(self._buf, "<f2", n, off).astype(np.float32)
        elif t == GGML_BF16:
            bits = np.frombuffer(self._buf, "<u2", n, off).astype(np.uint32) << 16
            x = bits.view(np.float32)
        elif t == GGML_Q8_0:
            blocks = np.frombuffer(self._buf, [("d", "<f2"), ("qs", "i1", (32,))], n // 32, off)
            x = (blocks["d"].astype(np.float32)[:, None] * blocks["qs"].astype(np.float32))
        else:
            raise ValueError(f"tensor {name}: ggml type {t} not supported by this reader")
        return x.reshape(list(reversed(dims)))
