#!/usr/bin/env python3
"""Writes a copy of a GGUF model that keeps only its first N transformer blocks (the embedding,
output norm and head stay): a draft model for benchmarking speculative decoding on a random-weight
file of a real shape, where no trained draft exists. The kept tensors are copied byte for byte
(any quantization), {arch}.block_count says N.

    PYTHONPATH=/tmp/llamacpp-peer/llama.cpp/gguf-py python3 scripts/truncate_gguf_layers.py IN.gguf OUT.gguf N

Needs llama.cpp's gguf-py (the peer checkout of ../shared/tools/build-llamacpp-peer.sh) and
Debian's python3-numpy.
"""
import sys

import gguf


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    src, dst, layers = sys.argv[1], sys.argv[2], int(sys.argv[3])
    reader = gguf.GGUFReader(src)
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    blocks = reader.get_field(f"{arch}.block_count").contents()
    if not 0 < layers <= blocks:
        print(f"{src} has {blocks} blocks; N must be 1..{blocks}")
        return 2
    writer = gguf.GGUFWriter(dst, arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by GGUFWriter itself
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        value = layers if field.name == f"{arch}.block_count" else field.contents()
        writer.add_key_value(field.name, value, value_type, sub_type=sub_type)
    kept = [t for t in reader.tensors
            if not (t.name.startswith("blk.") and int(t.name.split(".")[1]) >= layers)]
    for t in kept:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in kept:
        writer.write_tensor_data(t.data, tensor_endianess=reader.endianess)
    writer.close()
    print(f"wrote {dst}: {layers} of {blocks} blocks, {len(kept)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
