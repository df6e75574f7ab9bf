"""Object storage: one interface, a disk and an in-memory implementation.

Single writes (``put``) go to *loose* objects, one file each, fsynced. Bulk writes
go through a :class:`Batch`, which appends compressed frames to one new *pack* file
and, on commit, writes the pack's index and fsyncs once — so an import of 100k
turns costs one fsync instead of 100k files (docs/format.md, "Packs").
Every read re-hashes the object and raises :class:`CorruptObject` on mismatch.
The pack and pack-index formats are histstore.store.packs.
"""

from __future__ import annotations

import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from histstore.errors import Ambiguous, BadInput, CorruptObject, NotFound, PurgedObject
from histstore.store.codec import Codec, check_id, hash_object, is_id_prefix
from histstore.store.fsutil import atomic_write, fsync, version
from histstore.store.packs import MIDX_NAME, MultiPackIndex, Pack, index_bytes, pack_header


class Batch(ABC):
    """A group of object writes made durable together by :meth:`commit`."""

    @abstractmethod
    def put(self, kind: str, payload: bytes) -> str: ...

    @abstractmethod
    def commit(self) -> None: ...

    @abstractmethod
    def checkpoint(self) -> None:
        """Make what was put so far durable and go on with a fresh part, so a
        long batch holds a bounded amount of bookkeeping in memory."""

    @abstractmethod
    def abort(self) -> None: ...

    @property
    @abstractmethod
    def count(self) -> int:
        """Objects written by this batch (not counting ones the store already had)."""

    def __enter__(self) -> Batch:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if et is None:
            self.commit()
        else:
            self.abort()


class ObjectStore(ABC):
    @abstractmethod
    def has(self, object_id: str) -> bool: ...

    @abstractmethod
    def get(self, object_id: str) -> tuple[str, bytes]:
        """(kind, payload), verified. NotFound if absent, CorruptObject if damaged."""

    @abstractmethod
    def put(self, kind: str, payload: bytes) -> str:
        """Write one object durably (a no-op if it exists) and return its id."""

    @abstractmethod
    def batch(self) -> Batch: ...

    @abstractmethod
    def iter_ids(self) -> Iterator[str]: ...

    def resolve_prefix(self, prefix: str) -> str:
        """The one object id that starts with ``prefix`` (4 to 64 hex digits)."""
        prefix = prefix.lower()
        if not is_id_prefix(prefix):
            raise BadInput(f"not an object id or prefix: {prefix[:80]!r}")
        if len(prefix) == 64:
            if self.has(prefix):
                return prefix
            raise NotFound(f"no object {prefix}")
        found = sorted(set(self.find_prefix(prefix)))
        if not found:
            raise NotFound(f"no object starts with {prefix}")
        if len(found) > 1:
            raise Ambiguous(
                f"object prefix {prefix} is ambiguous ({len(found)} matches)",
                found[:10],
                hint="give more of the object id",
            )
        return found[0]

    @abstractmethod
    def find_prefix(self, prefix: str) -> Iterator[str]: ...

    def count(self) -> int:
        return sum(1 for _ in self.iter_ids())


# --------------------------------------------------------------------------- memory


class MemoryObjectStore(ObjectStore):
    """The same contract held in a dict: for tests and for library users."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[str, bytes]] = {}
        self._codec = Codec()

    def has(self, object_id: str) -> bool:
        return object_id in self.objects

    def get(self, object_id: str) -> tuple[str, bytes]:
        try:
            return self.objects[object_id]
        except KeyError:
            raise NotFound(f"no object {object_id}") from None

    def put(self, kind: str, payload: bytes) -> str:
        object_id, _ = self._codec.encode(kind, payload)
        self.objects.setdefault(object_id, (kind, bytes(payload)))
        return object_id

    def batch(self) -> Batch:
        return _MemoryBatch(self)

    def iter_ids(self) -> Iterator[str]:
        return iter(list(self.objects))

    def find_prefix(self, prefix: str) -> Iterator[str]:
        return (i for i in self.objects if i.startswith(prefix))


class _MemoryBatch(Batch):
    def __init__(self, store: MemoryObjectStore) -> None:
        self.store = store
        self.pending: dict[str, tuple[str, bytes]] = {}
        self.written = 0

    def put(self, kind: str, payload: bytes) -> str:
        object_id = hash_object(kind, payload)
        if not self.store.has(object_id):
            self.pending.setdefault(object_id, (kind, bytes(payload)))
        return object_id

    def checkpoint(self) -> None:
        for k, v in self.pending.items():
            self.store.objects.setdefault(k, v)
        self.written += len(self.pending)
        self.pending = {}

    def commit(self) -> None:
        for k, v in self.pending.items():
            self.store.objects.setdefault(k, v)
        self.pending = {}

    def abort(self) -> None:
        self.pending = {}

    @property
    def count(self) -> int:
        return self.written + len(self.pending)


# --------------------------------------------------------------------------- disk


class DiskObjectStore(ObjectStore):
    """Loose objects under ``objects/xx/`` and packs under ``objects/pack/``,
    found through the multi-pack index first (when ``hs gc`` wrote one), then
    the packs it does not cover, then the loose objects."""

    def __init__(self, root: Path, *, legacy_packs: bool = False) -> None:
        self.root = root
        self.pack_dir = root / "pack"
        self.legacy_packs = legacy_packs  # read format-1 packs too (hs upgrade)
        self.codec = Codec()
        self._packs: dict[str, Pack] = {}  # pack-<name> -> its pack
        self.bad_packs: dict[str, str] = {}  # index file name -> what is wrong with it
        self._midx: MultiPackIndex | None = None
        self._midx_key: tuple[int, int, int] | None = None
        #: the version of the multi-pack index whose checksum was checked
        self._midx_verified: tuple[int, int, int] | None = None
        self.bad_midx: str | None = None
        #: whether a purge removed an id (the Store sets it): a read of one
        #: says so instead of "no object"
        self.is_purged: Callable[[str], bool] | None = None
        self._scan_packs()

    def close(self) -> None:
        for p in self._packs.values():
            p.close()
        self._packs = {}
        if self._midx is not None:
            self._midx.close()
            self._midx = None

    def _scan_packs(self) -> bool:
        """Open packs (and the multi-pack index) that appeared since the last
        scan. True if any did. Called when a lookup misses and when a batch
        starts or adds a pack."""
        if not self.pack_dir.is_dir():
            return False
        added = self._scan_midx()
        present = sorted(self.pack_dir.glob("pack-*.idx"))
        names = {idx.stem for idx in present}
        for gone in [n for n in self._packs if n not in names]:
            # removed by gc once its objects were in another pack, which this
            # scan finds; a read already under way keeps its open file
            self._packs.pop(gone).close()
        for idx in present:
            if idx.stem not in self._packs and idx.name not in self.bad_packs:
                try:
                    self._packs[idx.stem] = Pack(idx, legacy=self.legacy_packs)
                    added = True
                except CorruptObject as e:
                    # unreadable: its objects read as missing, and fsck reports it
                    self.bad_packs[idx.name] = e.reason
                except FileNotFoundError:  # a racing gc removed it
                    continue
        return added

    def _scan_midx(self) -> bool:
        path = self.pack_dir / MIDX_NAME
        key = version(path)
        if key is None:  # none (it is optional): every pack is searched on its own
            changed = self._midx is not None
            self._midx, self._midx_key, self.bad_midx = None, None, None
            return changed
        if key == self._midx_key:
            return False
        self._midx_key = key
        try:
            self._midx = MultiPackIndex(path)
            self.bad_midx = None
        except (CorruptObject, FileNotFoundError) as e:
            # unreadable: every pack is searched on its own, and fsck reports it
            self._midx = None
            self.bad_midx = e.reason if isinstance(e, CorruptObject) else "missing"
        return True

    def verify_midx(self) -> bool:
        """Check the multi-pack index's checksum (fsck, and a read that missed
        or met a bad frame): a mismatch is recorded in ``bad_midx``, every pack
        is then searched on its own, and True says the index was dropped."""
        self._scan_midx()
        if self._midx is None or self._midx_verified == self._midx_key:
            return False
        self._midx_verified = self._midx_key
        if self._midx.verify():
            return False
        self._midx.close()
        self._midx = None
        self.bad_midx = "multi-pack index checksum mismatch"
        return True

    def forget_bad(self, index_name: str) -> None:
        """Look at a pack index again on the next scan (it was repaired)."""
        self.bad_packs.pop(index_name, None)
        stem = Path(index_name).stem
        pack = self._packs.pop(stem, None)
        if pack is not None:
            pack.close()

    def _uncovered(self) -> list[Pack]:
        """The packs the multi-pack index does not cover (written since it)."""
        covered = set(self._midx.packs) if self._midx is not None else set()
        return [p for name, p in self._packs.items() if name not in covered]

    def packs(self) -> list[Pack]:
        self._scan_packs()
        return list(self._packs.values())

    def multi_pack_index(self) -> MultiPackIndex | None:
        self._scan_packs()
        return self._midx

    def _loose_path(self, object_id: str) -> Path:
        return self.root / f"{object_id[:2]}/{object_id[2:]}"

    def _locate(self, raw: bytes) -> tuple[Pack, int, int] | None:
        if self._midx is not None:
            hit = self._midx.lookup(raw)
            if hit is not None:
                pack = self._packs.get(hit[0])
                if pack is not None:
                    return pack, hit[1], hit[2]
        for p in self._uncovered():
            at = p.entry(raw)
            if at is not None:
                return p, at[0], at[1]
        return None

    def _frame(self, object_id: str) -> tuple[bytes, Any] | None:
        raw = bytes.fromhex(object_id)
        for _ in range(2):
            hit = self._locate(raw)
            if hit is not None:
                pack, off, length = hit
                return pack.read(raw, off, length), pack.decompressor
            try:
                return self._loose_path(object_id).read_bytes(), None
            except FileNotFoundError:
                pass
            if not self._scan_packs():
                return None
        return None

    def has(self, object_id: str) -> bool:
        raw = bytes.fromhex(check_id(object_id))
        if self._locate(raw) is not None:
            return True
        if self._loose_path(object_id).exists():
            return True
        return self._scan_packs() and self._locate(raw) is not None

    def get(self, object_id: str) -> tuple[str, bytes]:
        check_id(object_id)
        try:
            return self._get(object_id)
        except CorruptObject:
            whole = self.whole_copy(object_id)  # a damaged frame, a good copy elsewhere
            if whole is not None:
                return whole
            if not self.verify_midx():
                raise
        except NotFound:
            if not self.verify_midx():
                raise
        # a damaged multi-pack index hid the object or pointed at other bytes
        return self._get(object_id)

    def whole_copy(self, object_id: str, *, besides: str | None = None) -> tuple[str, bytes] | None:
        """The object from any copy of it that reads whole — its loose file,
        then each pack holding it (but pack ``besides``) — or None: what a
        read falls back on when the copy the index names is damaged."""
        with contextlib.suppress(FileNotFoundError, CorruptObject):
            return self.codec.decode(object_id, self._loose_path(object_id).read_bytes(), None)
        raw = bytes.fromhex(object_id)
        for pack in self.packs():
            hit = pack.entry(raw)
            if hit is None or pack.name == besides:
                continue
            with contextlib.suppress(CorruptObject):
                return self.codec.decode(object_id, pack.read(raw, *hit), pack.decompressor)
        return None

    def _get(self, object_id: str) -> tuple[str, bytes]:
        found = self._frame(object_id)
        if found is None:
            if self.is_purged is not None and self.is_purged(object_id):
                raise PurgedObject(object_id)
            raise NotFound(f"no object {object_id}")
        return self.codec.decode(object_id, found[0], found[1])

    def put(self, kind: str, payload: bytes) -> str:
        object_id, frame = self.codec.encode(kind, payload)
        if self.is_purged is not None and self.is_purged(object_id):
            raise BadInput(
                f"object {object_id} holds what a purge removed for good: it is not stored again",
                hint="see hs purge --list",
            )
        if not self.freshen(object_id):
            path = self._loose_path(object_id)
            atomic_write(path, frame)
        return object_id

    def freshen(self, object_id: str, done: set[str] | None = None) -> bool:
        """Whether the store has the object; if so, its file (loose, or the pack
        holding it) is touched, so ``hs gc`` counts it as just written and keeps
        it through its grace period: a writer that reuses an object nothing
        reached yet (and will name it once its operation commits) must never
        find it pruned meanwhile (git's "freshen"). ``done`` names files this
        writer already touched, to touch each once."""
        raw = bytes.fromhex(check_id(object_id))
        for _ in range(2):
            hit = self._locate(raw)
            path = hit[0].pack_path if hit is not None else self._loose_path(object_id)
            key = str(path)
            if done is not None and key in done:
                return True
            try:
                os.utime(path)
            except FileNotFoundError:
                if hit is not None:  # its pack went (gc): look again
                    self._scan_packs()
                    continue
                if self._scan_packs():
                    continue
                return False
            except PermissionError:  # a read-only store: nothing to protect
                pass
            if done is not None:
                done.add(key)
            return True
        return False

    def batch(self) -> Batch:
        return _PackBatch(self)

    def iter_ids(self) -> Iterator[str]:
        seen: set[str] = set()
        self._scan_packs()
        sources: list[Iterator[str]] = [p.ids() for p in self._uncovered()]
        if self._midx is not None:
            sources.insert(0, self._midx.ids())
        for ids in sources:
            for i in ids:
                if i not in seen:
                    seen.add(i)
                    yield i
        yield from (i for i in self.iter_loose() if i not in seen)

    def count_fast(self) -> int:
        """About how many objects there are, from the index counts (an object
        stored twice, in a pack and loose, counts twice): constant time in
        the packs' sizes, unlike :meth:`count`."""
        self._scan_packs()
        n: int = self._midx.n if self._midx is not None else 0
        n += sum(int(p.n) for p in self._uncovered())
        return n + sum(1 for _ in self.iter_loose())

    def iter_loose(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for d in sorted(self.root.iterdir()):
            if len(d.name) == 2 and d.is_dir():
                for f in sorted(d.iterdir()):
                    if len(f.name) == 62 and not f.name.startswith("."):
                        yield d.name + f.name

    def find_prefix(self, prefix: str) -> Iterator[str]:
        self._scan_packs()
        if self._midx is not None:
            yield from self._midx.find_prefix(prefix)
        for p in self._uncovered():
            yield from p.find_prefix(prefix)
        d = self.root / prefix[:2]
        if len(prefix) >= 2 and d.is_dir():
            for f in d.iterdir():
                if (d.name + f.name).startswith(prefix) and len(f.name) == 62:
                    yield d.name + f.name

    def size_on_disk(self) -> int:
        total = 0
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                with contextlib.suppress(FileNotFoundError):
                    total += os.stat(os.path.join(dirpath, name)).st_size
        return total


class _PackBatch(Batch):
    """Appends frames to a new pack; commit writes its index with one fsync.

    A batch of at most ``LOOSE_MAX`` objects is written as loose objects instead,
    so small operations (one recorded turn, a grown session) do not pile up packs.
    :meth:`checkpoint` finishes the current pack and starts another, which bounds
    the index records held in memory during a very long import.
    """

    LOOSE_MAX = 32

    def __init__(self, store: DiskObjectStore) -> None:
        self.store = store
        self.records: list[tuple[bytes, int, int]] = []
        self.small: list[tuple[str, bytes]] = []
        self.seen: set[bytes] = set()
        self.written = 0
        self._tmp: Path | None = None
        self._fh: BinaryIO | None = None
        self._offset = 0
        self._done = False
        self._loose: set[str] | None = None
        self._fresh: set[str] = set()  # files this batch touched (freshen)

    def _open(self) -> None:
        self.store.pack_dir.mkdir(parents=True, exist_ok=True)
        self._tmp = self.store.pack_dir / f"tmp-{os.getpid()}-{os.urandom(6).hex()}.pack"
        self._fh = open(self._tmp, "wb", buffering=1 << 20)  # noqa: SIM115 - closed in commit
        head = pack_header()
        self._fh.write(head)
        self._offset = len(head)
        small, self.small = self.small, []
        for object_id, frame in small:
            self._append(bytes.fromhex(object_id), frame)

    def _append(self, raw: bytes, frame: bytes) -> None:
        assert self._fh is not None
        self._fh.write(frame)
        self.records.append((raw, self._offset, len(frame)))
        self._offset += len(frame)

    def _stored(self, object_id: str, raw: bytes) -> bool:
        """Whether the store has the object. A small batch (a recorded turn) asks
        with a stat per object; a long one lists loose objects once instead. A
        miss only ever costs a duplicate."""
        if len(self.seen) < self.LOOSE_MAX:
            return self.store.freshen(object_id, self._fresh)
        if self._loose is None:
            self.store._scan_packs()
            self._loose = set(self.store.iter_loose())
        if object_id not in self._loose and self.store._locate(raw) is None:
            return False
        return self.store.freshen(object_id, self._fresh)

    def put(self, kind: str, payload: bytes) -> str:
        if self._done:
            raise RuntimeError("this batch is already committed")
        object_id = hash_object(kind, payload)
        raw = bytes.fromhex(object_id)
        if raw in self.seen or self._stored(object_id, raw):
            return object_id  # hashed, never compressed: a known object costs little
        self.seen.add(raw)
        frame = self.store.codec.compress(kind, payload)
        if self._fh is None and not self.records and len(self.small) < self.LOOSE_MAX:
            self.small.append((object_id, frame))
            return object_id
        if self._fh is None:
            self._open()
        self._append(raw, frame)
        return object_id

    @property
    def count(self) -> int:
        return self.written + len(self.records) + len(self.small)

    def checkpoint(self) -> None:
        for object_id, frame in self.small:
            atomic_write(self.store._loose_path(object_id), frame)
            if self._loose is not None:
                self._loose.add(object_id)
        self.written += len(self.small)
        self.small = []
        self._finish_pack()

    def commit(self) -> None:
        if self._done:
            return
        self._done = True
        self.checkpoint()

    def _finish_pack(self) -> None:
        if self._fh is None:
            return
        fh = self._fh
        fh.flush()
        fsync(fh.fileno())
        fh.close()
        self._fh = None
        name, body = index_bytes(self.records)
        assert self._tmp is not None
        pack_path = self.store.pack_dir / f"pack-{name}.pack"
        # The pack is renamed into place before its index exists: readers only
        # find packs through their index, so they never see a half-written pack.
        os.replace(self._tmp, pack_path)
        atomic_write(pack_path.with_suffix(".idx"), bytes(body))
        self._tmp = None
        self.written += len(self.records)
        self.records = []
        self.seen = set()  # what this pack holds is found through its index now
        self.store._scan_packs()

    def abort(self) -> None:
        self._done = True
        if self._fh is not None:
            self._fh.close()
        self._fh = None
        if self._tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                self._tmp.unlink()
        self.records = []
        self.small = []
        self.seen = set()
