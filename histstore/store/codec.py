"""Objects: immutable, content-addressed, verified on every read.

An object is a *kind* and a *payload* (bytes). Its id is the blake3 hash, as 64
lowercase hex digits, of the header plus the payload::

    <kind> SP <decimal payload length> NUL <payload>

``blob`` payloads are raw bytes; every other kind's payload is canonical JSON
(:func:`canonical_json`: RFC 8785, the JSON Canonicalization Scheme). On disk
an object is that same header+payload compressed as one zstd frame
(docs/format.md). The encoding is a contract: changing it changes every id,
so tests pin golden ids.
"""

from __future__ import annotations

import json
import re
from typing import Any

import blake3
import zstandard

from histstore.errors import BadInput, CorruptObject

KINDS = ("blob", "turn", "session", "memtree", "memrev", "marker")
_ID_RE = re.compile(r"^[0-9a-f]{64}$")
_PREFIX_RE = re.compile(r"^[0-9a-f]{4,64}$")


#: the integers JSON numbers hold exactly (RFC 8785 serialises numbers as
#: IEEE 754 doubles; an integer outside this range has no canonical form here)
SAFE_INTEGER = 2**53 - 1


def _plain(value: Any) -> bool:
    """Whether ``value`` holds only what Python's json module already writes
    exactly as RFC 8785 does: no floats, integers in the safe range, and no
    object key with a character beyond the BMP (RFC 8785 sorts keys by UTF-16
    code units, Python by code points: the two orders differ only there)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str) or v is None or isinstance(v, bool):
            continue
        if isinstance(v, int):
            if -SAFE_INTEGER <= v <= SAFE_INTEGER:
                continue
            return False
        if isinstance(v, dict):
            for k, x in v.items():
                if not isinstance(k, str) or (not k.isascii() and max(k) > "\uffff"):
                    return False
                stack.append(x)
            continue
        if isinstance(v, list | tuple):
            stack.extend(v)
            continue
        return False  # a float, or a type JSON has not
    return True


def canonical_json(obj: Any) -> bytes:
    """The canonical encoding of structured objects: RFC 8785 (JCS), through
    the ``rfc8785`` package.

    Keys sorted by UTF-16 code units, no whitespace, UTF-8, strings escaped
    only where JSON must be (``\\"``, ``\\\\``, control characters), numbers as
    ECMAScript writes doubles (``1e16`` is ``10000000000000000``, ``1.0`` is
    ``1``, ``-0.0`` is ``0``). No NaN or infinity, no integer beyond 2^53 - 1:
    ``ValueError``. For a value :func:`_plain` accepts (no floats: nearly
    every object a store writes), Python's json module writes the very same
    bytes three to four times faster, so it is used; tests/test_objects.py
    checks the two agree on random values. Changing any of this changes every
    object id: it is part of the format.
    """
    if _plain(obj):
        return json.dumps(
            obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
    import rfc8785  # only a value with a float (or an odd key) needs it

    try:
        return bytes(rfc8785.dumps(obj))
    except rfc8785.CanonicalizationError as e:
        raise ValueError(f"no canonical JSON form: {e}") from None


def header(kind: str, size: int) -> bytes:
    return f"{kind} {size}\0".encode("ascii")


def hash_object(kind: str, payload: bytes) -> str:
    if kind not in KINDS:
        raise BadInput(f"unknown object kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
    h = blake3.blake3(header(kind, len(payload)))
    h.update(payload)
    return str(h.hexdigest())


def is_object_id(text: str) -> bool:
    return bool(_ID_RE.match(text))


def check_id(text: str) -> str:
    if not is_object_id(text):
        raise BadInput(f"not an object id: {text[:80]!r}", hint="an id is 64 lowercase hex digits")
    return text


def is_id_prefix(text: str) -> bool:
    return bool(_PREFIX_RE.match(text))


class Codec:
    """Compresses and verifies object frames. Reuses one zstd context per thread of
    use, which also avoids the per-call allocator churn measured with zlib."""

    def __init__(self, level: int = 3) -> None:
        self._c = zstandard.ZstdCompressor(level=level)
        self._d = zstandard.ZstdDecompressor()

    def encode(self, kind: str, payload: bytes) -> tuple[str, bytes]:
        """Return (id, compressed frame) for an object."""
        return hash_object(kind, payload), self.compress(kind, payload)

    def compress(self, kind: str, payload: bytes) -> bytes:
        """The frame stored on disk: header and payload as one zstd frame."""
        return bytes(self._c.compress(header(kind, len(payload)) + payload))

    def decode(
        self,
        object_id: str,
        frame: bytes,
        decompressor: zstandard.ZstdDecompressor | None = None,
    ) -> tuple[str, bytes]:
        """Decompress a frame (with its pack's dictionary's ``decompressor``,
        when it has one), parse its header, re-hash: (kind, payload) or
        CorruptObject."""
        d = decompressor if decompressor is not None else self._d
        try:
            if zstandard.frame_content_size(frame) == -1:
                # a valid frame written without its content size (by a streaming writer)
                data = d.decompressobj().decompress(frame)
            else:
                data = d.decompress(frame)
        except zstandard.ZstdError as e:
            raise CorruptObject(object_id, f"cannot decompress ({e})") from None
        return verify(object_id, data)


def verify(object_id: str, data: bytes) -> tuple[str, bytes]:
    """An object's header and payload, re-hashed against its id: (kind,
    payload) or CorruptObject."""
    nul = data.find(b"\0", 0, 32)
    if nul < 0:
        raise CorruptObject(object_id, "no header")
    try:
        kind_b, size_b = data[:nul].split(b" ")
        kind, size = kind_b.decode("ascii"), int(size_b)
    except (ValueError, UnicodeDecodeError):
        raise CorruptObject(object_id, "bad header") from None
    payload = data[nul + 1 :]
    if kind not in KINDS or size != len(payload):
        raise CorruptObject(object_id, "bad header")
    if str(blake3.blake3(data).hexdigest()) != object_id:
        raise CorruptObject(object_id, "content does not match its id")
    return kind, payload


def decode_json(object_id: str, payload: bytes) -> Any:
    try:
        return json.loads(payload)
    except ValueError:
        raise CorruptObject(object_id, "payload is not JSON") from None
