"""Writing packs whole: the objects ``hs gc`` keeps, with a trained dictionary.

An import writes its pack as it goes, each frame compressed on its own (zstd
level 3, no dictionary: as fast as the parse allows). ``hs gc`` rewrites small
packs and loose objects into one pack whose frames share a zstd dictionary
trained on those very objects, at a higher level: turn records have much in
common (field names, tool names, paths), which a dictionary lets every frame
use. Ids are over the uncompressed bytes, so recompressing changes no id.

The new pack is made durable (fsync, rename, index written and renamed)
before anything it replaces may go, so a crash leaves the old objects or the
new pack, or both — never neither.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import zstandard

from histstore.errors import CorruptObject
from histstore.store.codec import Codec, header
from histstore.store.fsutil import atomic_write, fsync, fsync_dir
from histstore.store.objectstore import DiskObjectStore
from histstore.store.packs import (
    MIDX_NAME,
    Pack,
    decompressor,
    index_bytes,
    midx_bytes,
    pack_header,
    read_header,
)

#: a pack's dictionary: about what zstd's trainer suggests for small records
DICT_SIZE = 110 * 1024
#: the samples a dictionary is trained on, at most
SAMPLE_BYTES = 16 << 20
SAMPLES = 20_000
#: below this many objects a pack gets no dictionary (not worth its own bytes)
DICT_MIN_OBJECTS = 64
#: objects read, then compressed side by side, then written, at a time (and
#: no more bytes of them than this: a blob may be large)
BATCH = 1000
BATCH_BYTES = 32 << 20
#: threads compressing them (each frame is independent of the others)
THREADS = min(4, os.cpu_count() or 1)
#: what ``hs gc`` writes with: fast enough for a daily run
LEVEL = 9
#: what ``hs gc --full`` (which rewrites every pack) writes with, as git's
#: ``gc --aggressive`` spends time for space: zstd's optimal parser (16 is its
#: first level) and a dictionary of up to 256 KiB (a 64th of the sample, at
#: least DICT_SIZE: a larger one only pays over many objects). Measured on
#: the synthetic 100k corpus: 9% smaller than level 9 with 110 KiB, 31 s
#: against 14 s on two cores; on the real samples 1-2% smaller
FULL_LEVEL = 16
FULL_DICT_SIZE = 256 * 1024


@dataclass(frozen=True)
class Written:
    """A pack a repack wrote: its name, objects and bytes."""

    name: str  # pack-<40 hex>
    objects: int
    bytes: int


def train(samples: Sequence[bytes], size: int = DICT_SIZE) -> bytes:
    """A zstd dictionary of ``size`` bytes for these frames' contents; b""
    when there are too few (or too alike) to train one."""
    if len(samples) < DICT_MIN_OBJECTS:
        return b""
    try:
        d = zstandard.train_dictionary(size, list(samples))
    except zstandard.ZstdError:
        return b""
    return bytes(d.as_bytes())


def _compressor(level: int, dictionary: bytes) -> Callable[[bytes], bytes]:
    """A frame compressor safe to call from several threads: a zstd context
    for each (contexts are not shared), one prepared dictionary for all."""
    prepared = None
    if dictionary:
        prepared = zstandard.ZstdCompressionDict(dictionary)
        prepared.precompute_compress(level=level)
    local = threading.local()

    def compress(data: bytes) -> bytes:
        cctx = getattr(local, "cctx", None)
        if cctx is None:
            cctx = local.cctx = zstandard.ZstdCompressor(level=level, dict_data=prepared)
        return bytes(cctx.compress(data))

    return compress


def _batches(objects: DiskObjectStore, ids: list[str]) -> Iterator[tuple[list[str], list[bytes]]]:
    """The objects' ids and frame contents (read and verified), BATCH of them
    at a time and no more than BATCH_BYTES."""
    batch: list[str] = []
    datas: list[bytes] = []
    held = 0
    for object_id in ids:
        kind, payload = objects.get(object_id)
        batch.append(object_id)
        datas.append(header(kind, len(payload)) + payload)
        held += len(datas[-1])
        if len(batch) >= BATCH or held >= BATCH_BYTES:
            yield batch, datas
            batch, datas, held = [], [], 0
    if batch:
        yield batch, datas


def write_pack(
    objects: DiskObjectStore,
    ids: Iterable[str],
    *,
    level: int = LEVEL,
    dict_size: int = DICT_SIZE,
    progress: Callable[[int], None] | None = None,
) -> Written | None:
    """One new pack holding ``ids`` (read and verified from ``objects``),
    compressed with a dictionary trained on them (of a 64th of the sample,
    asked for between DICT_SIZE and ``dict_size``: the trainer may give
    less); durable when this returns. None when ``ids`` is empty."""
    ids = sorted(set(ids))
    if not ids:
        return None
    samples: list[bytes] = []
    total = 0
    step = max(1, len(ids) // SAMPLES)
    for object_id in ids[::step]:
        kind, payload = objects.get(object_id)
        data = header(kind, len(payload)) + payload
        samples.append(data)
        total += len(data)
        if total >= SAMPLE_BYTES:
            break
    dictionary = train(samples, max(DICT_SIZE, min(dict_size, total // 64)))
    compress = _compressor(level, dictionary)
    pack_dir = objects.pack_dir
    pack_dir.mkdir(parents=True, exist_ok=True)
    tmp = pack_dir / f"tmp-{os.getpid()}-{os.urandom(6).hex()}.pack"
    records: list[tuple[bytes, int, int]] = []
    head = pack_header(dictionary)
    offset = len(head)
    try:
        with (
            open(tmp, "wb", buffering=1 << 20) as fh,
            ThreadPoolExecutor(max_workers=THREADS) as pool,
        ):
            fh.write(head)
            n = 0
            for batch, datas in _batches(objects, ids):
                # compressed on every core (zstd lets go of the GIL), written in order
                for object_id, frame in zip(batch, pool.map(compress, datas), strict=True):
                    fh.write(frame)
                    records.append((bytes.fromhex(object_id), offset, len(frame)))
                    offset += len(frame)
                    n += 1
                    if progress is not None and n % 1000 == 0:
                        progress(1000)
            fh.flush()
            fsync(fh.fileno())
        name, body = index_bytes(records)
        pack_path = pack_dir / f"pack-{name}.pack"
        # renamed into place before its index exists: readers find packs only
        # through their index, so they never see a half-written one
        os.replace(tmp, pack_path)
        atomic_write(pack_path.with_suffix(".idx"), body)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    objects._scan_packs()
    return Written(f"pack-{name}", len(ids), offset)


def write_midx(objects: DiskObjectStore, packs: list[Pack]) -> None:
    """The multi-pack index over ``packs`` (replaced atomically); none when
    there are fewer than two: one pack's own index is already one binary
    search, and a copy of it would add 48 bytes an object (7% of a store
    after ``hs gc --full``)."""
    path = objects.pack_dir / MIDX_NAME
    if len(packs) < 2:
        if path.exists():
            path.unlink()
            objects._scan_packs()
        return
    atomic_write(path, midx_bytes(packs))
    objects._scan_packs()


def remove_pack(pack: Pack) -> int:
    """A pack and its index (the index first, so no reader finds a pack that
    is going); the bytes freed. Readers (this process's too) drop it at their
    next scan."""
    freed = 0
    for path in (pack.idx_path, pack.pack_path):
        try:
            freed += path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            continue
    fsync_dir(pack.pack_path.parent)
    return freed


def remove_loose(objects: DiskObjectStore, ids: Iterable[str]) -> int:
    freed = 0
    dirs: set[Path] = set()
    for object_id in ids:
        path = objects._loose_path(object_id)
        try:
            freed += path.stat().st_size
            path.unlink()
            dirs.add(path.parent)
        except FileNotFoundError:
            continue
    for d in dirs:
        try:
            d.rmdir()  # only when empty
        except OSError:
            fsync_dir(d)
    if dirs:
        fsync_dir(objects.root)
    return freed


def copy_all(
    src: DiskObjectStore,
    dst: DiskObjectStore,
    progress: Callable[[int], None] | None = None,
) -> tuple[int, int]:
    """Every object of ``src`` into an empty ``dst`` as files, not object by
    object (a first push): each pack copied whole (the kernel's copy), then
    every object in the copy read back, decompressed and re-hashed once
    before its index is put beside it (so a pack is visible only once all of
    it verified); each loose object verified and written. Returns (objects,
    bytes of their payloads, uncompressed: what every other transfer counts)."""
    codec = Codec()
    objects = size = 0
    dst.pack_dir.mkdir(parents=True, exist_ok=True)
    for pack in src.packs():
        target = dst.pack_dir / pack.pack_path.name
        shutil.copyfile(pack.pack_path, target)
        fd = os.open(target, os.O_RDONLY)
        try:
            d = decompressor(read_header(fd, target.name))
            for raw, off, length in pack.entries():
                frame = os.pread(fd, length, off)
                _, payload = codec.decode(raw.hex(), frame, d)  # CorruptObject when it is not
                objects += 1
                size += len(payload)
                if progress is not None and objects % 1000 == 0:
                    progress(1000)
            fsync(fd)
        finally:
            os.close(fd)
        if not pack.verify_index():
            target.unlink()
            raise CorruptObject(pack.idx_path.name, "pack index checksum mismatch")
        atomic_write(target.with_suffix(".idx"), pack.idx_path.read_bytes())
    for object_id in src.iter_loose():
        path = src._loose_path(object_id)
        frame = path.read_bytes()
        _, payload = codec.decode(object_id, frame)
        atomic_write(dst._loose_path(object_id), frame, sync_dir=False)
        objects += 1
        size += len(payload)
    fsync_dir(dst.root)
    dst._scan_packs()
    return objects, size
