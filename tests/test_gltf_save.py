"""The GLB container writer (vkdqs.gltf.save.write_glb) that GltfBuilder and the bake share: a
buffer streamed in pieces gives the bytes of one written whole, the chunks are padded as the spec
says, and a wrong length or a file past 4 GiB is refused. CPU only."""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest

from tests.gltf_fixtures import make_rig
from vkdqs.errors import LimitError
from vkdqs.gltf import load_gltf
from vkdqs.gltf.save import GLB_MAX_BYTES, glb_length, json_bytes, save, write_glb


def test_a_streamed_buffer_gives_the_bytes_of_a_whole_one(tmp_path):
    b = make_rig().builder
    whole = tmp_path / "whole.glb"
    save(whole, b.document, bytes(b.binary))
    source = io.BytesIO(bytes(b.binary))
    streamed = tmp_path / "streamed.glb"
    with open(streamed, "wb") as out:  # seven bytes at a time, as from a temporary file
        n = write_glb(out, json_bytes(b.document), len(b.binary), iter(lambda: source.read(7), b""))
    assert streamed.read_bytes() == whole.read_bytes()
    assert n == len(whole.read_bytes()) == glb_length(len(json_bytes(b.document)), len(b.binary))
    np.testing.assert_array_equal(
        load_gltf(streamed).meshes[0].primitives[0].positions,
        load_gltf(whole).meshes[0].primitives[0].positions,
    )


@pytest.mark.parametrize("binary", [b"", b"1", b"12345", b"1234"])
def test_chunks_are_padded_to_four_bytes(binary):
    text = json_bytes({"asset": {"version": "2.0"}, "x": "ab"})
    out = io.BytesIO()
    write_glb(out, text, len(binary), [binary[:1], binary[1:]])
    data = out.getvalue()
    assert struct.unpack_from("<III", data) == (0x46546C67, 2, len(data))
    json_len, kind = struct.unpack_from("<II", data, 12)
    assert kind == 0x4E4F534A and json_len % 4 == 0
    assert data[20 : 20 + json_len] == text + b" " * (json_len - len(text))
    assert json.loads(data[20 : 20 + json_len]) == json.loads(text)
    if not binary:
        assert len(data) == 20 + json_len  # no BIN chunk
        return
    bin_len, kind = struct.unpack_from("<II", data, 20 + json_len)
    assert kind == 0x004E4942 and bin_len % 4 == 0
    assert data[28 + json_len :] == binary + b"\0" * (bin_len - len(binary))


def test_chunks_that_do_not_add_up_are_refused():
    with pytest.raises(ValueError, match="has 3 bytes, not the 4 announced"):
        write_glb(io.BytesIO(), b"{}", 4, [b"abc"])


def test_past_four_gib_nothing_is_written():
    out = io.BytesIO()
    with pytest.raises(LimitError, match="4 GiB"):
        write_glb(out, b"{}", GLB_MAX_BYTES, iter(()))
    assert out.getvalue() == b""
