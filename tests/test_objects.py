"""The canonical encoding is a contract: these golden ids must never change."""

from __future__ import annotations

from typing import Any

import blake3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histstore.errors import BadInput, CorruptObject
from histstore.store.codec import Codec, canonical_json, hash_object

# blake3(b"blob 3\0abc") -- the worked example in docs/format.md
GOLDEN_BLOB_ABC = "569f3e98d8d876887c13c900627f86bc06b99b847e263b11ae7eaba03a74b75f"
GOLDEN_EMPTY_BLOB = "4a0b6603381c7c38c557e9ceb3cba8876f0a7863146e7309801352e80b073b65"
# a turn object holding {"a":"é","b":1}: sorted keys, compact, UTF-8
GOLDEN_TURN = "4e712b5217ed823ea5670efd836bb966dcfbec87bf6d6a717ed3a7788028317c"


def test_blob_id_is_blake3_of_header_and_payload() -> None:
    expected = blake3.blake3(b"blob 3\x00abc").hexdigest()
    assert hash_object("blob", b"abc") == expected


def test_golden_ids() -> None:
    assert hash_object("blob", b"abc") == GOLDEN_BLOB_ABC
    assert hash_object("blob", b"") == GOLDEN_EMPTY_BLOB
    assert hash_object("turn", canonical_json({"b": 1, "a": "é"})) == GOLDEN_TURN


def test_canonical_json_is_sorted_compact_utf8() -> None:
    assert (
        canonical_json({"b": 1, "a": ["é", None, True]}) == '{"a":["é",null,true],"b":1}'.encode()
    )
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(BadInput):
        hash_object("tree", b"")


def test_codec_roundtrip_and_verification() -> None:
    codec = Codec()
    oid, frame = codec.encode("blob", b"hello world")
    assert codec.decode(oid, frame) == ("blob", b"hello world")
    other = hash_object("blob", b"hello world!")
    with pytest.raises(CorruptObject) as e:
        codec.decode(other, frame)
    assert other in str(e.value)


def test_flipped_byte_is_corrupt_object_naming_the_id() -> None:
    codec = Codec()
    oid, frame = codec.encode("blob", b"x" * 1000 + b"tail")
    for i in range(len(frame)):
        bad = bytearray(frame)
        bad[i] ^= 0x01
        with pytest.raises(CorruptObject) as e:
            codec.decode(oid, bytes(bad))
        assert e.value.object_id == oid


def test_frame_without_content_size_is_accepted() -> None:
    """Any valid single zstd frame holds an object, even one a streaming writer
    wrote without its content size (docs/format.md)."""
    import io

    import zstandard

    data = b"blob 5\x00hello"
    out = io.BytesIO()
    with zstandard.ZstdCompressor(write_content_size=False).stream_writer(out, closefd=False) as w:
        w.write(data)
    frame = out.getvalue()
    assert zstandard.frame_content_size(frame) == -1
    assert Codec().decode(hash_object("blob", b"hello"), frame) == ("blob", b"hello")


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonical_json_is_rfc8785(value: Any) -> None:
    """The fast path (Python's json for values with no float) writes exactly
    what the RFC 8785 reference writes, for any JSON value."""
    import rfc8785

    try:
        want = bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, UnicodeEncodeError):
        with pytest.raises((ValueError, UnicodeEncodeError)):
            canonical_json(value)
        return
    assert canonical_json(value) == want


def test_canonical_json_pins_numbers_escapes_and_key_order() -> None:
    assert canonical_json({"n": [1e16, 1.0, -0.0, 1e-7, 0.1, 2**53 - 1]}) == (
        b'{"n":[10000000000000000,1,0,1e-7,0.1,9007199254740991]}'
    )
    assert canonical_json({"s": '"\\\n\x01\u2028é'}) == '{"s":"\\"\\\\\\n\\u0001\u2028é"}'.encode()
    # keys by UTF-16 code units: U+1F600 (a surrogate pair, D83D...) before U+FB01
    assert canonical_json({"\ufb01": 1, "\U0001f600": 2, "a": 3}) == (
        '{"a":3,"\U0001f600":2,"\ufb01":1}'.encode()
    )
    for bad in (float("nan"), float("inf"), 2**53):
        with pytest.raises(ValueError):
            canonical_json({"x": bad})
