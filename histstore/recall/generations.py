"""The recall index's generations on disk: ``CURRENT``, their meta files, the lock.

Layout under ``<store>/index/`` (docs/format.md, "The recall index")::

    CURRENT                 the name of the generation readers use ("gen-<n>\\n")
    gen-<n>/                a generation: a Tantivy index directory
    gen-<n>.json            its meta: schema, built_op, applied_op, built_at
    .gen-<n>.<pid>.tmp/     a generation being built (never read)
    lock                    the index writers' lock (not the store lock)

A build writes a whole new generation beside the others and points
``CURRENT`` at it; every later change is a commit inside the generation
``CURRENT`` names. The newest ``KEEP`` generations stay, so a bad build can
be rolled back. Knows nothing of Tantivy beyond "a directory".
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from histstore.errors import CorruptStore, Locked
from histstore.store.fsutil import atomic_write, fsync_dir, pid_alive
from histstore.store.store import Store

KEEP = 3
GEN = re.compile(r"^gen-(\d+)$")
_TMP = re.compile(r"^\.gen-\d+\.(\d+)\.tmp$")
#: the files of the SQLite FTS5 index an older hs wrote: replaced by the first build
_LEGACY = re.compile(r"^gen-\d+\.sqlite(-wal|-shm)?$|^\.gen-\d+\.\d+\.tmp(-wal|-shm)?$")
REBUILD_HINT = "rebuild it with `hs plumbing index-build`"


class Generation:
    """One generation: its name (``gen-<n>``), its directory, its meta."""

    __slots__ = ("meta", "name", "path")

    def __init__(self, name: str, path: Path, meta: dict[str, Any]) -> None:
        self.name = name
        self.path = path
        self.meta = meta

    @property
    def number(self) -> int:
        return number(self.name)

    @property
    def applied_op(self) -> str | None:
        return self.meta.get("applied_op") or None

    @property
    def built_op(self) -> str | None:
        return self.meta.get("built_op") or None


def number(name: str) -> int:
    m = GEN.match(name)
    return int(m.group(1)) if m else 0


class Generations:
    """The generations of one store's index (``self.dir`` is ``index/``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.dir = store.root / "index"
        self._lock: Any = None  # a filelock.FileLock, made by the first writer

    # ------------------------------------------------------------ reading

    def _named(self) -> str | None:
        try:
            return (self.dir / "CURRENT").read_text("utf-8").strip()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise CorruptStore(
                f"{self.dir / 'CURRENT'} cannot be read ({e})", hint=REBUILD_HINT
            ) from None

    def legacy_name(self) -> str | None:
        """The SQLite generation an older hs left CURRENT naming, if it did."""
        name = self._named()
        return name if name is not None and _LEGACY.match(name) else None

    def current_name(self) -> str | None:
        """The generation CURRENT names; None when there is no index (or only the
        SQLite index an older hs wrote, which the next build replaces)."""
        name = self._named()
        if name is None or _LEGACY.match(name):
            return None
        if not GEN.match(name):
            raise CorruptStore(
                f"{self.dir / 'CURRENT'} does not name a generation", hint=REBUILD_HINT
            )
        return name

    def current(self) -> Generation | None:
        name = self.current_name()
        return None if name is None else self.load(name)

    def load(self, name: str) -> Generation:
        path = self.dir / name
        if not path.is_dir():
            raise CorruptStore(f"the current recall index {name} is missing", hint=REBUILD_HINT)
        try:
            meta = json.loads((self.dir / f"{name}.json").read_text("utf-8"))
            if not isinstance(meta, dict):
                raise ValueError("not an object")
        except (OSError, ValueError) as e:
            raise CorruptStore(
                f"the recall index {name} is damaged (its meta: {e})", hint=REBUILD_HINT
            ) from None
        return Generation(name, path, meta)

    def names(self) -> list[str]:
        """Every generation present (with its meta), oldest first."""
        if not self.dir.is_dir():
            return []
        found = [
            p.name
            for p in self.dir.iterdir()
            if GEN.match(p.name) and (self.dir / f"{p.name}.json").exists()
        ]
        return sorted(found, key=number)

    def next_number(self) -> int:
        if not self.dir.is_dir():
            return 1
        seen = [number(p.name.removesuffix(".json")) for p in self.dir.iterdir()]
        return max([0, *seen]) + 1

    # ------------------------------------------------------------ writing

    @contextlib.contextmanager
    def lock(self, timeout: float | None = None) -> Iterator[None]:
        import filelock  # writers only: readers never lock

        self.dir.mkdir(parents=True, exist_ok=True)
        if self._lock is None:
            self._lock = filelock.FileLock(str(self.dir / "lock"))
        try:
            self._lock.acquire(timeout=self.store.lock_timeout if timeout is None else timeout)
        except filelock.Timeout:
            raise Locked(f"the recall index of {self.store.root} is being written") from None
        try:
            yield
        finally:
            self._lock.release()

    def scratch(self, n: int) -> Path:
        import shutil  # writers only (with zlib, bz2, lzma): a search removes nothing

        tmp = self.dir / f".gen-{n}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        return tmp

    def write_meta(self, name: str, meta: dict[str, Any]) -> None:
        atomic_write(self.dir / f"{name}.json", (json.dumps(meta, sort_keys=True) + "\n").encode())

    def publish(self, tmp: Path, n: int, meta: dict[str, Any]) -> str:
        """Name a finished generation, give it its meta, point CURRENT at it, and
        prune the old ones (with the index lock held)."""
        name = f"gen-{n}"
        os.replace(tmp, self.dir / name)
        fsync_dir(self.dir)
        self.write_meta(name, meta)
        self.point(name)
        with contextlib.suppress(OSError):  # an old file that will not go is no failure
            self.prune()
        return name

    def point(self, name: str) -> None:
        atomic_write(self.dir / "CURRENT", (name + "\n").encode())

    def prune(self, keep: int = KEEP) -> None:
        """All but the newest ``keep`` generations, never the current one; the
        leftovers of builds that died, and the SQLite files an older hs wrote."""
        import shutil  # writers only (above)

        current = self.current_name()
        for name in self.names()[:-keep] if keep else self.names():
            if name != current:
                self.remove(name)
        for p in self.dir.iterdir():
            m = _TMP.match(p.name)
            if m and not _alive(int(m.group(1))):
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink()
            elif not m and _LEGACY.match(p.name) and p.is_file():
                p.unlink()
            elif GEN.match(p.name) and not (self.dir / f"{p.name}.json").exists():
                shutil.rmtree(p, ignore_errors=True)  # renamed, never given its meta

    def remove(self, name: str) -> None:
        import shutil  # writers only (above)

        # the meta first: a directory without one is no generation
        with contextlib.suppress(FileNotFoundError):
            (self.dir / f"{name}.json").unlink()
        shutil.rmtree(self.dir / name)


def _alive(pid: int) -> bool:
    return pid == os.getpid() or pid_alive(pid)
