#!/usr/bin/python3
"""GGUF writer/reader and reference forward against files and numbers nobody here produced:

- re-writing ../shared/models/stories260K/stories260K.gguf (written by llama.cpp's converter)
  metadata and tensors through GGUFWriter gives a byte-identical file;
- reference_forward.py on that file reproduces llama.cpp's greedy token ids (PROVENANCE.md);
- q8_0 / bf16 encodings follow ggml's reference formulas (roundf half away from zero, bf16
  round-to-nearest-even), checked on hand-computed values;
- header layout, alignment padding and round trips of every metadata type.
"""

from __future__ import annotations

import os
import struct

import numpy as np

import testlib
from gguf_reader import GGUFFile
from gguf_writer import GGUFWriter, f32_to_bf16_bits, quantize_q8_0
from reference_forward import ReferenceModel

STORIES_PROMPT = [1, 403, 407, 261, 378]  # BOS + "Once upon a time"
STORIES_GREEDY_48 = [432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267,
                     337, 410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432,
                     358, 394, 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267, 337,
                     335, 312, 432]


def check_layout_and_roundtrip(c: testlib.Checker, work: str) -> None:
    path = os.path.join(work, "rt.gguf")
    w = GGUFWriter(path)
    w.add_string("s", "héllo")
    w.add_uint32("u", 4000000000)
    w.add_int32("i", -7)
    w.add_float32("f", 0.25)
    w.add_bool("b", False)
    w.add_array("as", ["a", "", "ü"], "string")
    w.add_array("af", [1.5, -2.0], "float32")
    w.add_array("ai", [-1, 2, 3], "int32")
    w.add_array("au", [7], "uint32")
    rng = np.random.default_rng(0)
    mats = {"m_f32": rng.standard_normal((3, 5)).astype(np.float32),
            "m_f16": rng.standard_normal((2, 7)).astype(np.float32),
            "m_bf16": rng.standard_normal((4, 3)).astype(np.float32),
            "m_q8": rng.standard_normal((2, 64)).astype(np.float32),
            "vec": np.arange(5, dtype=np.float32)}
    dtypes = {"m_f32": "f32", "m_f16": "f16", "m_bf16": "bf16", "m_q8": "q8_0", "vec": "f32"}
    for n, a in mats.items():
        w.add_tensor(n, a, dtypes[n])
    w.write()
    raw = open(path, "rb").read()
    c.check(raw[:4] == b"GGUF" and struct.unpack_from("<IQQ", raw, 4) == (3, 5, 10),
            "header: magic, version 3, 5 tensors, 10 kv (incl. general.alignment)")
    f = GGUFFile(path)
    want = {"general.alignment": 32, "s": "héllo", "u": 4000000000, "i": -7, "f": 0.25, "b": False,
            "as": ["a", "", "ü"], "af": [1.5, -2.0], "ai": [-1, 2, 3], "au": [7]}
    c.check(f.metadata == want, f"metadata round trip {f.metadata}")
    c.check(f.metadata_types == {"general.alignment": 4, "s": 8, "u": 4, "i": 5, "f": 6, "b": 7,
                                 "as": 9, "af": 9, "ai": 9, "au": 9} and
            f.array_types == {"as": 8, "af": 6, "ai": 5, "au": 4}, "metadata value types")
    c.check(f.data_offset % 32 == 0 and all(o % 32 == 0 for o in f.tensor_offsets.values()),
            "data section and every tensor start 32-byte aligned")
    c.check(f.tensor_dims["m_f32"] == [5, 3] and f.tensor_dims["vec"] == [5],
            "dims innermost-first: [out=3, in=5] written as [5, 3]")
    c.check(f.tensor_types == {"m_f32": 0, "m_f16": 1, "m_bf16": 30, "m_q8": 8, "vec": 0},
            "ggml type ids f32 0, f16 1, bf16 30, q8_0 8")
    c.check(np.array_equal(f.tensor("m_f32"), mats["m_f32"]), "f32 exact")
    c.check(np.array_equal(f.tensor("m_f16"), mats["m_f16"].astype(np.float16).astype(np.float32)),
            "f16 equals numpy's float16 rounding")
    c.check(np.abs(f.tensor("m_bf16") - mats["m_bf16"]).max() <= 2**-8 * np.abs(mats["m_bf16"]).max(),
            "bf16 within half an ulp")
    q8_err = np.abs(f.tensor("m_q8") - mats["m_q8"]).max()
    c.check(q8_err <= np.abs(mats["m_q8"]).max() / 127, f"q8_0 error {q8_err:.4f} within one step")
    end = f.tensor_offsets["vec"] + 5 * 4
    c.check(len(raw) == end + (32 - end % 32) % 32, "file ends with the last tensor padded to 32")
    try:
        GGUFWriter(path).add_tensor("bad", np.zeros((2, 33), np.float32), "q8_0")
        c.check(False, "q8_0 with 33-wide rows rejected")
    except ValueError as e:
        c.check("multiple of 32" in str(e), f"q8_0 with 33-wide rows rejected: {e}")


def check_encodings(c: testlib.Checker) -> None:
    # Q8_0: a block with max |x| = 127 has d = 1, so q = roundf(x): halves go away from zero.
    x = np.zeros(32, np.float32)
    x[:6] = [127.0, 2.5, -2.5, 0.49, -126.6, 3.5]
    raw = quantize_q8_0(x.reshape(1, 32))
    d = np.frombuffer(raw[:2], "<f2")[0]
    q = np.frombuffer(raw[2:], np.int8)
    c.check(len(raw) == 34 and d == np.float16(1.0), "q8_0 block = f16 scale + 32 int8 (34 bytes)")
    c.check(list(q[:6]) == [127, 3, -3, 0, -127, 4], f"q8_0 rounds like roundf: {list(q[:6])}")
    zero = quantize_q8_0(np.zeros((1, 32), np.float32))
    c.check(zero == bytes(34), "q8_0 all-zero block: d = 0, q = 0")
    # bf16: nearest even on the 16 dropped bits.
    vals = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.0, 1.0 + 2**-8 + 2**-20, np.inf],
                    np.float32)
    bits = [int(b) for b in f32_to_bf16_bits(vals)]
    c.check(bits == [0x3F80, 0x3F80, 0x3F82, 0xC000, 0x3F81, 0x7F80],
            f"bf16 round-to-nearest-even: {[hex(b) for b in bits]}")
    nan_bits = int(f32_to_bf16_bits(np.array([np.nan], np.float32))[0])
    c.check((nan_bits & 0x7F80) == 0x7F80 and (nan_bits & 0x7F) != 0, "bf16 keeps NaN a NaN")


def check_stories260k(c: testlib.Checker, work: str) -> None:
    src = os.path.join(testlib.shared_dir(), "models", "stories260K", "stories260K.gguf")
    if not testlib.require_shared_file(src):
        return
    f = GGUFFile(src)
    out = os.path.join(work, "stories_rewritten.gguf")
    w = GGUFWriter(out, write_alignment_key=False)  # that file has no general.alignment key
    scalar = {4: w.add_uint32, 5: w.add_int32, 6: w.add_float32, 7: w.add_bool, 8: w.add_string}
    elem = {8: "string", 6: "float32", 5: "int32", 4: "uint32"}
    for k, v in f.metadata.items():
        t = f.metadata_types[k]
        if t == 9:
            w.add_array(k, v, elem[f.array_types[k]])
        else:
            scalar[t](k, v)
    for n in f.names():
        w.add_tensor(n, f.tensor(n), "f32")
    w.write()
    c.check(open(out, "rb").read() == open(src, "rb").read(),
            "stories260K.gguf (llama.cpp) re-written by GGUFWriter is byte-identical")
    got = ReferenceModel(src).greedy(STORIES_PROMPT, 48)
    c.check(got == STORIES_GREEDY_48, "reference_forward greedy on stories260K == llama.cpp ids")


def main() -> None:
    args = testlib.parse_args(__doc__)
    work = testlib.temp_dir(args.keep)
    c = testlib.Checker()
    check_layout_and_roundtrip(c, work)
    check_encodings(c)
    check_stories260k(c, work)
    c.close(sane_checks=15)


if __name__ == "__main__":
    main()
