#!/usr/bin/env python3
"""Sets tokenizer.chat_template in a GGUF file, leaving everything else byte for byte.

    set_chat_template.py IN.gguf TEMPLATE.jinja OUT.gguf

Metadata entries are copied as raw bytes (an existing tokenizer.chat_template is replaced),
tensor infos likewise, and the tensor data section verbatim: offsets in GGUF are relative to
the data section, so only the padding before it changes. Used to give the bundled model
(models/default.gguf) its chat template (models/default.chat.jinja) without re-exporting it;
train_default_model.sh passes the template to the exporter for new runs.
"""
import struct
import sys

_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9
KEY = "tokenizer.chat_template"


def _skip_value(buf, pos, vtype):
    if vtype in _SCALAR_SIZES:
        return pos + _SCALAR_SIZES[vtype]
    if vtype == _STRING:
        (n,) = struct.unpack_from("<Q", buf, pos)
        return pos + 8 + n
    if vtype == _ARRAY:
        etype, n = struct.unpack_from("<IQ", buf, pos)
        pos += 12
        for _ in range(n):
            pos = _skip_value(buf, pos, etype)
        return pos
    raise ValueError(f"unknown GGUF value type {vtype} at byte {pos}")


def _string(text):
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def set_chat_template(source, template):
    return set_string(source, KEY, template)


def set_string(source, key_to_set, value):
    """`source` (GGUF bytes) with string metadata `key_to_set` set to `value` (replaced when
    present, appended otherwise); everything else byte for byte."""
    if source[:4] != b"GGUF":
        raise ValueError("not a GGUF file")
    version, n_tensors, n_kv = struct.unpack_from("<IQQ", source, 4)
    pos = 24
    entries, alignment = [], 32
    for _ in range(n_kv):
        start = pos
        (key_len,) = struct.unpack_from("<Q", source, pos)
        key = source[pos + 8:pos + 8 + key_len].decode("utf-8")
        pos += 8 + key_len
        (vtype,) = struct.unpack_from("<I", source, pos)
        if key == "general.alignment":
            (alignment,) = struct.unpack_from("<I", source, pos + 4)
        pos = _skip_value(source, pos + 4, vtype)
        if key != key_to_set:
            entries.append(source[start:pos])
    entries.append(_string(key_to_set) + struct.pack("<I", _STRING) + _string(value))
    infos_start = pos
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<Q", source, pos)
        pos += 8 + name_len
        (n_dims,) = struct.unpack_from("<I", source, pos)
        pos += 4 + 8 * n_dims + 4 + 8
    infos = source[infos_start:pos]
    data_start = (pos + alignment - 1) // alignment * alignment
    head = b"GGUF" + struct.pack("<IQQ", version, n_tensors, len(entries)) + b"".join(entries)
    head += infos
    head += b"\0" * ((alignment - len(head) % alignment) % alignment)
    return head + source[data_start:]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    with open(sys.argv[1], "rb") as f:
        source = f.read()
    with open(sys.argv[2], encoding="utf-8") as f:
        template = f.read()
    with open(sys.argv[3], "wb") as f:
        f.write(set_chat_template(source, template))


if __name__ == "__main__":
    main()
