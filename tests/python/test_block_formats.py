"""textgen's dequantization of every GGUF tensor type against gguf-py's (llama.cpp's own Python
GGUF package, from the source bundled in the npm package node-llama-cpp), bit for bit.

Random blocks of each type (random bits everywhere, with finite f16 scales so NaN never stands
in for a comparison) are written by gguf-py's GGUFWriter, read back by textgen-dequantize, and
compared with gguf.quants.dequantize on the same bytes.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np

ap = argparse.ArgumentParser(description=__doc__)
ap.add_argument("--bin", required=True, help="directory with textgen-dequantize")
ap.add_argument("--llamacpp", required=True, help="llama.cpp source (tests/reference/llamacpp_source.sh)")
ap.add_argument("--work", required=True, help="scratch directory")
args = ap.parse_args()

sys.path.insert(0, os.path.join(args.llamacpp, "gguf-py"))
import gguf  # noqa: E402
from gguf import GGMLQuantizationType as Q  # noqa: E402

# Byte offsets of the f16 scale fields in each block layout (ggml-common.h).
SCALE_OFFSETS = {
    Q.Q4_0: [0], Q.Q4_1: [0, 2], Q.Q5_0: [0], Q.Q5_1: [0, 2], Q.Q8_0: [0],
    Q.Q2_K: [80, 82], Q.Q3_K: [108], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208],
    Q.MXFP4: [],  # an e8m0 exponent byte at 0, set below
}
ROWS = 24

rng = np.random.default_rng(20261123)
os.makedirs(args.work, exist_ok=True)
path = os.path.join(args.work, "blocks.gguf")
writer = gguf.GGUFWriter(path, arch="llama")
expected = {}
for qtype, offsets in SCALE_OFFSETS.items():
    block_elements, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    blocks_per_row = 2048 // block_elements if block_elements == 32 else 3
    raw = rng.integers(0, 256, size=(ROWS, blocks_per_row, block_bytes), dtype=np.uint8)
    # Scales: normal halves of both signs, subnormals and zeros.
    for off in offsets:
        scales = rng.normal(0, 0.05, size=(ROWS, blocks_per_row)).astype(np.float16)
        scales[0, 0] = np.float16(0)
        scales[1, 0] = np.frombuffer(np.uint16(0x0003).tobytes(), dtype=np.float16)[0]
        scales[2, 0] = np.float16(-65504)
        raw[:, :, off:off + 2] = scales.view(np.uint8).reshape(ROWS, blocks_per_row, 2)
    if qtype == Q.MXFP4:
        # Exponents around 2^0 (finite products), and the subnormal and extreme ends.
        raw[:, :, 0] = rng.integers(110, 140, size=(ROWS, blocks_per_row), dtype=np.uint8)
        raw[0, 0, 0], raw[1, 0, 0], raw[2, 0, 0], raw[3, 0, 0] = 0, 1, 2, 200
    raw = raw.reshape(ROWS, blocks_per_row * block_bytes)
    name = qtype.name.lower()
    writer.add_tensor(name, raw, raw_dtype=qtype)
    expected[name] = gguf.quants.dequantize(raw, qtype).astype(np.float32)
for name, dtype, qtype in (("f16", np.float16, Q.F16), ("bf16", None, Q.BF16)):
    values = rng.normal(0, 3, size=(ROWS, 96)).astype(np.float32)
    if dtype is not None:
        raw = values.astype(dtype)
        writer.add_tensor(name, raw)
        expected[name] = raw.astype(np.float32)
    else:
        raw = (values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8).reshape(ROWS, 192)
        writer.add_tensor(name, raw, raw_dtype=qtype)
        expected[name] = gguf.quants.dequantize(raw, qtype).astype(np.float32)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()

out_dir = os.path.join(args.work, "out")
os.makedirs(out_dir, exist_ok=True)
subprocess.run([os.path.join(args.bin, "textgen-dequantize"), path, out_dir], check=True)

failures = 0
for name, ref in expected.items():
    ours = np.fromfile(os.path.join(out_dir, name + ".f32"), dtype=np.float32)
    ref = ref.reshape(-1)
    same = ours.shape == ref.shape and np.array_equal(ours.view(np.uint32), ref.view(np.uint32))
    spread = float(np.std(ref))
    print(f"{'ok  ' if same else 'FAIL'} {name}: {ref.size} values bit-identical to gguf-py "
          f"(std {spread:.3g})" if same else
          f"FAIL {name}: {int(np.sum(ours != ref)) if ours.shape == ref.shape else 'shape'} differ")
    failures += 0 if same and spread > 0 else 1
print(f"{len(expected) - failures}/{len(expected)} tensor types match")
sys.exit(1 if failures else 0)
