"""The store side of ``hs upgrade``: moving a built format-2 store into place,
and the ids a format-1 store had.

``hs upgrade`` (histstore.ops.upgrade) builds the format-2 store beside the
old one, in ``.upgrade/new/``, makes it durable, and then writes
``.upgrade/COMMIT``: one JSON object naming the entries to move in (from
``new/``) and the entries to move out (into ``.upgrade/old/``), with
``config.toml`` last. Before ``COMMIT`` the store is the format-1 store it was
(a leftover ``.upgrade/`` is removed by the next ``hs upgrade``). Once it is
written the upgrade has happened: :func:`finish` moves the entries, each one
rename, and any command that opens the store runs it first (under the lock),
as a logged operation is rolled forward — so no reader ever sees a store
half moved. Each step is a rename that can be repeated: an entry still in
``new/`` is moved in (the one in its place moved out first); one named to move
out that is still in place is moved out. Then ``COMMIT`` goes, then
``.upgrade/``.

The ids the format-1 store had are kept in ``format-1/``: ``ids``, sorted
records of (old raw id, new raw id) for every object whose id changed, and
``ops``, a line ``<old op> <new op>`` per operation. ``hs show`` and
``hs undo`` take an old id and use the new one.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from histstore.store.fsutil import atomic_write, fsync_dir

UPGRADE_DIR = ".upgrade"
NEW = "new"
OLD = "old"
COMMIT = "COMMIT"
MAP_DIR = "format-1"
IDS = "ids"
OPS = "ops"
IDS_MAGIC = b"HSIDMAP\x01"
_REC = 64  # old raw id, new raw id


def committed(root: Path) -> bool:
    return (root / UPGRADE_DIR / COMMIT).exists()


def commit(root: Path, move_in: list[str], move_out: list[str]) -> None:
    """Write the commit record: from here on the upgrade has happened."""
    assert move_in and move_in[-1] == "config.toml"
    record = {"move_in": move_in, "move_out": move_out}
    atomic_write(root / UPGRADE_DIR / COMMIT, json.dumps(record).encode("utf-8") + b"\n")


def finish(root: Path) -> bool:
    """Move a committed upgrade into place (lock held); True if there was one."""
    up = root / UPGRADE_DIR
    try:
        record = json.loads((up / COMMIT).read_bytes())
    except FileNotFoundError:
        return False
    new, old = up / NEW, up / OLD
    old.mkdir(exist_ok=True)
    for name in record["move_out"]:
        here = root / name
        if here.exists() or here.is_symlink():
            os.replace(here, old / name)
    for name in record["move_in"]:
        src, here = new / name, root / name
        if not (src.exists() or src.is_symlink()):
            continue  # moved in already
        if here.exists() or here.is_symlink():
            if (old / name).exists():
                # a step repeated after a crash: what is in place is from
                # before (the new one is still in new/), so it may go
                _remove(here)
            else:
                os.replace(here, old / name)
        os.replace(src, here)
    fsync_dir(root)
    (up / COMMIT).unlink()
    fsync_dir(up)
    remove_leftovers(root)
    return True


def remove_leftovers(root: Path) -> None:
    """``.upgrade/`` without a commit record: an upgrade stopped before it
    committed, or one that finished but for removing what it replaced."""
    up = root / UPGRADE_DIR
    if up.exists() and not (up / COMMIT).exists():
        _remove(up)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# ------------------------------------------------------------------ the id map


def write_map(
    directory: Path, ids: Iterable[tuple[str, str]], ops: Iterable[tuple[str, str]]
) -> None:
    """The id map of an upgrade, in ``directory`` (``format-1/`` of the new store)."""
    records = sorted(bytes.fromhex(old) + bytes.fromhex(new) for old, new in ids if old != new)
    atomic_write(directory / IDS, IDS_MAGIC + b"".join(records))
    text = "".join(f"{old} {new}\n" for old, new in ops)
    atomic_write(directory / OPS, text.encode("ascii"))


class IdMap:
    """What a format-1 id is now (``format-1/`` of an upgraded store)."""

    def __init__(self, root: Path) -> None:
        self.dir = root / MAP_DIR
        self._ids: bytes | None = None
        self._ops: dict[str, str] | None = None

    def exists(self) -> bool:
        return self.dir.is_dir()

    def _load(self) -> bytes:
        if self._ids is None:
            try:
                data = (self.dir / IDS).read_bytes()
            except FileNotFoundError:
                data = IDS_MAGIC
            self._ids = data[len(IDS_MAGIC) :] if data.startswith(IDS_MAGIC) else b""
        return self._ids

    def _keys(self) -> _Keys:
        return _Keys(self._load())

    def objects(self, prefix: str) -> Iterator[tuple[str, str]]:
        """(old id, new id) for every old object id starting with ``prefix``."""
        keys = self._keys()
        lo_key = bytes.fromhex(prefix.ljust(64, "0"))
        i = bisect.bisect_left(keys, lo_key)
        data = self._load()
        while i < len(keys):
            old = data[i * _REC : i * _REC + 32].hex()
            if not old.startswith(prefix):
                break
            yield old, data[i * _REC + 32 : (i + 1) * _REC].hex()
            i += 1

    def op(self, prefix: str) -> list[tuple[str, str]]:
        if self._ops is None:
            try:
                lines = (self.dir / OPS).read_text("ascii").split("\n")
            except FileNotFoundError:
                lines = []
            self._ops = dict(ln.split(" ", 1) for ln in lines if " " in ln)
        return [(o, n) for o, n in self._ops.items() if o.startswith(prefix)]


class _Keys:
    """The old ids of the map as a sorted sequence, for bisect."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data) // _REC

    def __getitem__(self, i: int) -> bytes:
        return self.data[i * _REC : i * _REC + 32]
