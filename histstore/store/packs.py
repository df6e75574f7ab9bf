"""Packs: many objects in one file, found through a sorted index.

A pack file is ``PACK_MAGIC``, a big-endian u32 length and that many bytes of
a zstd dictionary (none: length 0), then object frames: each one object's
zstd frame, compressed with the pack's dictionary when it has one. Its index
``pack-<name>.idx`` is ``IDX_MAGIC``, a 256-entry fan-out of big-endian u32
counts, one record per object sorted by id (32-byte id, u64 offset, u32
length), and a blake3 of all that; ``<name>`` is the first 40 hex digits of
that blake3 (docs/format.md, "Packs"). Objects carry their own verification,
so the pack needs no checksum of its own. A pack is visible only once its
index is in place.

The multi-pack index (``multi-pack-index``, written by ``hs gc``) is one
sorted index over the packs it names, so a lookup costs one search however
many packs there are; packs written since are searched one by one.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import blake3
import zstandard

from histstore.errors import CorruptObject
from histstore.store.codec import verify

#: format 2: a dictionary (maybe empty) after the magic
PACK_MAGIC = b"HSPACK\x00\x02"
#: format 1's packs: frames right after the magic
PACK_MAGIC_1 = b"HSPACK\x00\x01"
IDX_MAGIC = b"HSIDX\x00\x00\x01"
MIDX_MAGIC = b"HSMIDX\x00\x01"
MIDX_NAME = "multi-pack-index"
_REC = struct.Struct(">32sQI")  # id, offset, length
REC_SIZE = _REC.size
_MREC = struct.Struct(">32sIQI")  # id, pack number, offset, length
_U32 = struct.Struct(">I")
_FANOUT = struct.Struct(">256I")
IDX_HEAD = len(IDX_MAGIC) + _FANOUT.size


def pack_header(dictionary: bytes = b"") -> bytes:
    """What a pack starts with: the magic and its dictionary."""
    return PACK_MAGIC + _U32.pack(len(dictionary)) + dictionary


def _fanout(raws: list[bytes]) -> list[int]:
    counts = [0] * 256
    for raw in raws:
        counts[raw[0]] += 1
    total = 0
    for i in range(256):
        total += counts[i]
        counts[i] = total
    return counts


def index_size(count: int) -> int:
    """The bytes of a pack index of ``count`` objects (what index_bytes writes)."""
    return IDX_HEAD + count * REC_SIZE + 32  # the trailer: a blake3 digest


def index_bytes(records: list[tuple[bytes, int, int]]) -> tuple[str, bytes]:
    """(the pack's name, its index's bytes) for (raw id, offset, length) records
    (sorted here)."""
    records.sort()
    body = bytearray(IDX_MAGIC)
    body += _FANOUT.pack(*_fanout([r[0] for r in records]))
    for rec in records:
        body += _REC.pack(*rec)
    digest = blake3.blake3(bytes(body))
    name = str(digest.hexdigest())[:40]
    body += digest.digest()
    return name, bytes(body)


class _IdxIds:
    """A read-only sequence view of the sorted ids in a pack index (for bisect)."""

    def __init__(self, mm: mmap.mmap, n: int) -> None:
        self.mm, self.n = mm, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> bytes:
        off = IDX_HEAD + i * _REC.size
        return self.mm[off : off + 32]


class Pack:
    """One pack file and its index, memory-mapped."""

    def __init__(self, idx_path: Path, *, legacy: bool = False) -> None:
        """``legacy`` also reads a format-1 pack (``hs upgrade`` does)."""
        self.idx_path = idx_path
        self.pack_path = idx_path.with_suffix(".pack")
        with open(idx_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < IDX_HEAD + 32:
                raise CorruptObject(idx_path.name, "pack index is truncated")
            self._idx = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if self._idx[: len(IDX_MAGIC)] != IDX_MAGIC:
                raise CorruptObject(idx_path.name, "not a pack index")
            self.fanout = _FANOUT.unpack_from(self._idx, len(IDX_MAGIC))
            self.n = self.fanout[255]
            if len(self._idx) != IDX_HEAD + self.n * _REC.size + 32:
                raise CorruptObject(idx_path.name, "pack index has the wrong size")
            self._ids = _IdxIds(self._idx, self.n)
            try:
                self._fd = os.open(self.pack_path, os.O_RDONLY)
            except FileNotFoundError:
                raise CorruptObject(idx_path.name, "its pack file is missing") from None
            try:
                self.dictionary = read_header(self._fd, self.pack_path.name, legacy=legacy)
            except BaseException:
                os.close(self._fd)
                raise
        except BaseException:
            self._idx.close()
            raise
        self.decompressor = decompressor(self.dictionary)

    def close(self) -> None:
        self._idx.close()
        os.close(self._fd)

    def _find(self, raw: bytes) -> int:
        b = raw[0]
        lo = self.fanout[b - 1] if b else 0
        hi = self.fanout[b]
        i = bisect.bisect_left(self._ids, raw, lo, hi)
        return i if i < hi and self._ids[i] == raw else -1

    def has(self, raw: bytes) -> bool:
        return self._find(raw) >= 0

    @property
    def name(self) -> str:
        return self.idx_path.stem  # pack-<40 hex>

    def entry(self, raw: bytes) -> tuple[int, int] | None:
        """(offset, length) of an object's frame, None when the pack lacks it."""
        i = self._find(raw)
        if i < 0:
            return None
        _, off, length = _REC.unpack_from(self._idx, IDX_HEAD + i * _REC.size)
        return off, length

    def read(self, raw: bytes, offset: int, length: int) -> bytes:
        data = os.pread(self._fd, length, offset)
        if len(data) != length:
            raise CorruptObject(raw.hex(), f"truncated in {self.pack_path.name}")
        return data

    def frame(self, raw: bytes) -> bytes | None:
        at = self.entry(raw)
        return None if at is None else self.read(raw, *at)

    def entries(self) -> Iterator[tuple[bytes, int, int]]:
        """(raw id, offset, length) of every object, by id."""
        for i in range(self.n):
            yield _REC.unpack_from(self._idx, IDX_HEAD + i * _REC.size)

    def ids(self) -> Iterator[str]:
        for i in range(self.n):
            yield self._ids[i].hex()

    def find_prefix(self, prefix: str) -> Iterator[str]:
        lo_key = bytes.fromhex(prefix.ljust(64, "0"))
        i = bisect.bisect_left(self._ids, lo_key)
        while i < self.n:
            h = self._ids[i].hex()
            if not h.startswith(prefix):
                break
            yield h
            i += 1

    def verify_index(self) -> bool:
        body = self._idx[: len(self._idx) - 32]
        return bytes(blake3.blake3(body).digest()) == self._idx[len(self._idx) - 32 :]


def read_header(fd: int, name: str, *, close: bool = False, legacy: bool = False) -> bytes:
    """A pack's dictionary (b"" for none), read from its header (and ``fd``
    closed after, when ``close``). ``legacy`` accepts a format-1 pack (its
    frames follow the magic; no dictionary)."""
    try:
        head = os.pread(fd, len(PACK_MAGIC) + _U32.size, 0)
        if legacy and head[: len(PACK_MAGIC_1)] == PACK_MAGIC_1:
            return b""
        if head[: len(PACK_MAGIC)] != PACK_MAGIC or len(head) < len(PACK_MAGIC) + _U32.size:
            raise CorruptObject(name, "not a pack of this format")
        (n,) = _U32.unpack_from(head, len(PACK_MAGIC))
        dictionary = os.pread(fd, n, len(head)) if n else b""
        if len(dictionary) != n:
            raise CorruptObject(name, "its dictionary is truncated")
        return dictionary
    finally:
        if close:
            os.close(fd)


def header_size(dictionary: bytes) -> int:
    return len(PACK_MAGIC) + _U32.size + len(dictionary)


def decompressor(dictionary: bytes) -> zstandard.ZstdDecompressor | None:
    if not dictionary:
        return None
    return zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(dictionary))


class MultiPackIndex:
    """One index over several packs: ``MIDX_MAGIC``, a u32 count of packs and
    each pack's 40-hex name, the fan-out, then one record per object sorted by
    id (32-byte id, u32 pack number, u64 offset, u32 length), and a blake3."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as f:
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            mm = self._mm
            if mm[: len(MIDX_MAGIC)] != MIDX_MAGIC:
                raise CorruptObject(path.name, "not a multi-pack index")
            at = len(MIDX_MAGIC)
            (count,) = _U32.unpack_from(mm, at)
            at += _U32.size
            self.packs = [
                "pack-" + mm[at + 40 * i : at + 40 * (i + 1)].decode("ascii") for i in range(count)
            ]
            at += 40 * count
            self.fanout = _FANOUT.unpack_from(mm, at)
            self._head = at + _FANOUT.size
            self.n = self.fanout[255]
            if len(mm) != self._head + self.n * _MREC.size + 32:
                raise CorruptObject(path.name, "multi-pack index has the wrong size")
        except (BaseException, struct.error):
            self._mm.close()
            raise

    def verify(self) -> bool:
        """Whether the checksum holds: asked by fsck, as a pack index's is,
        not on every open (48 MB to hash at 1M objects, for a read that looks
        up a few; every object read is verified by its id anyway)."""
        mm = self._mm
        return bytes(blake3.blake3(mm[: len(mm) - 32]).digest()) == mm[len(mm) - 32 :]

    def close(self) -> None:
        self._mm.close()

    def _id(self, i: int) -> bytes:
        off = self._head + i * _MREC.size
        return self._mm[off : off + 32]

    def _find(self, raw: bytes) -> int:
        b = raw[0]
        lo = self.fanout[b - 1] if b else 0
        hi = self.fanout[b]
        while lo < hi:
            mid = (lo + hi) // 2
            if self._id(mid) < raw:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < self.fanout[b] and self._id(lo) == raw else -1

    def lookup(self, raw: bytes) -> tuple[str, int, int] | None:
        """(pack name, offset, length) of an object, None when no pack holds it."""
        i = self._find(raw)
        if i < 0:
            return None
        _, pack, off, length = _MREC.unpack_from(self._mm, self._head + i * _MREC.size)
        if pack >= len(self.packs):
            return None  # damage (fsck's checksum finds it): the object is sought elsewhere
        return self.packs[pack], off, length

    def ids(self) -> Iterator[str]:
        for i in range(self.n):
            yield self._id(i).hex()

    def find_prefix(self, prefix: str) -> Iterator[str]:
        lo_key = bytes.fromhex(prefix.ljust(64, "0"))
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) // 2
            if self._id(mid) < lo_key:
                lo = mid + 1
            else:
                hi = mid
        while lo < self.n:
            h = self._id(lo).hex()
            if not h.startswith(prefix):
                break
            yield h
            lo += 1


def midx_bytes(packs: list[Pack]) -> bytes:
    """The multi-pack index of ``packs`` (an object two packs hold is found in
    the first)."""
    names = [p.name[len("pack-") :] for p in packs]
    records: dict[bytes, tuple[int, int, int]] = {}
    for n, p in enumerate(packs):
        for raw, off, length in p.entries():
            records.setdefault(raw, (n, off, length))
    raws = sorted(records)
    body = bytearray(MIDX_MAGIC)
    body += _U32.pack(len(names))
    for name in names:
        body += name.encode("ascii")
    body += _FANOUT.pack(*_fanout(raws))
    for raw in raws:
        body += _MREC.pack(raw, *records[raw])
    body += blake3.blake3(bytes(body)).digest()
    return bytes(body)


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 20


@dataclass
class Walked:
    """A pack read frame by frame, without its index: each whole object's
    (raw id, offset, length), and the byte ranges that held none."""

    records: list[tuple[bytes, int, int]] = field(default_factory=list)
    damaged: list[tuple[int, int]] = field(default_factory=list)


def _one_frame(mm: mmap.mmap, at: int, d: zstandard.ZstdDecompressor) -> tuple[bytes, int]:
    """The object in the frame at ``at`` and the frame's length; ZstdError when
    no whole frame starts there."""
    obj = d.decompressobj()
    out = bytearray()
    pos = at
    while not obj.eof:
        if pos >= len(mm):
            raise zstandard.ZstdError("the pack ends inside a frame")
        chunk = mm[pos : pos + _CHUNK]
        out += obj.decompress(chunk)
        pos += len(chunk)
    return bytes(out), pos - at - len(obj.unused_data)


def walk(pack_path: Path) -> Walked:
    """Every object a pack holds, found by reading its frames one after the
    other (how ``hs fsck --repair`` rebuilds a lost index). Each object is
    re-hashed: its id is the blake3 of what the frame holds, and a frame whose
    header does not parse is skipped to the next frame's magic and reported."""
    done = Walked()
    with open(pack_path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return done
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        dictionary = read_header(os.open(pack_path, os.O_RDONLY), pack_path.name, close=True)
        d = decompressor(dictionary) or zstandard.ZstdDecompressor()
        at = header_size(dictionary)
        while at < len(mm):
            try:
                data, length = _one_frame(mm, at, d)
                object_id = str(blake3.blake3(data).hexdigest())
                verify(object_id, data)
            except (zstandard.ZstdError, CorruptObject):
                nxt = mm.find(_ZSTD_MAGIC, at + 1)
                end = len(mm) if nxt < 0 else nxt
                done.damaged.append((at, end))
                at = end
                continue
            done.records.append((bytes.fromhex(object_id), at, length))
            at += length
    finally:
        mm.close()
    return done
