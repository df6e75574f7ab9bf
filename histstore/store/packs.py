"""Packs: many objects in one file, found through a sorted index.

A pack file is ``PACK_MAGIC`` followed by object frames (each one object's
zstd frame, as a loose object holds it). Its index ``pack-<name>.idx`` is
``IDX_MAGIC``, a 256-entry fan-out of big-endian u32 counts, one record per
object sorted by id (32-byte id, u64 offset, u32 length), and a blake3 of all
that; ``<name>`` is the first 40 hex digits of that blake3 (docs/format.md,
"Packs"). Objects carry their own verification, so the pack needs no checksum
of its own. A pack is visible only once its index is in place.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import blake3

from histstore.errors import CorruptObject

PACK_MAGIC = b"HSPACK\x00\x01"
IDX_MAGIC = b"HSIDX\x00\x00\x01"
_REC = struct.Struct(">32sQI")  # id, offset, length
_FANOUT = struct.Struct(">256I")
_IDX_HEAD = len(IDX_MAGIC) + _FANOUT.size


def index_bytes(records: list[tuple[bytes, int, int]]) -> tuple[str, bytes]:
    """(the pack's name, its index's bytes) for (raw id, offset, length) records
    (sorted here)."""
    records.sort()
    fanout = [0] * 256
    for raw, _, _ in records:
        fanout[raw[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    body = bytearray(IDX_MAGIC)
    body += _FANOUT.pack(*fanout)
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
        off = _IDX_HEAD + i * _REC.size
        return self.mm[off : off + 32]


class Pack:
    """One pack file and its index, memory-mapped."""

    def __init__(self, idx_path: Path) -> None:
        self.idx_path = idx_path
        self.pack_path = idx_path.with_suffix(".pack")
        with open(idx_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < _IDX_HEAD + 32:
                raise CorruptObject(idx_path.name, "pack index is truncated")
            self._idx = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if self._idx[: len(IDX_MAGIC)] != IDX_MAGIC:
                raise CorruptObject(idx_path.name, "not a pack index")
            self.fanout = _FANOUT.unpack_from(self._idx, len(IDX_MAGIC))
            self.n = self.fanout[255]
            if len(self._idx) != _IDX_HEAD + self.n * _REC.size + 32:
                raise CorruptObject(idx_path.name, "pack index has the wrong size")
            self._ids = _IdxIds(self._idx, self.n)
            try:
                self._fd = os.open(self.pack_path, os.O_RDONLY)
            except FileNotFoundError:
                raise CorruptObject(idx_path.name, "its pack file is missing") from None
        except BaseException:
            self._idx.close()
            raise

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

    def frame(self, raw: bytes) -> bytes | None:
        i = self._find(raw)
        if i < 0:
            return None
        _, off, length = _REC.unpack_from(self._idx, _IDX_HEAD + i * _REC.size)
        data = os.pread(self._fd, length, off)
        if len(data) != length:
            raise CorruptObject(raw.hex(), f"truncated in {self.pack_path.name}")
        return data

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
