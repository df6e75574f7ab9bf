"""The purge record: what ``hs purge`` removed, by id only (docs/format.md, "Purges").

Objects are immutable and synced, so a purge cannot simply delete them: the
other stores still hold them and would send them back. So every purge leaves
an entry in ``<store>/purged``: the ids of the objects it removed (and, for a
rewrite, the id each was replaced by), never a byte of their content. Every
writer treats those ids as gone for good — an import skips them, a sync
neither sends nor takes them, gc and fsck step over a reference to one — and
a sync carries the entries, so each store that receives one purges too.

A purge is made in two halves around one commit point, the file
``purge-pending`` (the entry and what else the purge must do, ids and
placeholder text only): before it, nothing the purge wrote is named by
anything (a new object is garbage for gc); once it exists, the purge has
happened, and whoever takes the store's lock next completes it
(histstore.ops.purge). This module holds the two files; what a purge does is
histstore.ops.purge's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3

from histstore.errors import CorruptStore, NotFound, PurgedObject
from histstore.store.codec import canonical_json, decode_json, is_object_id
from histstore.store.fsutil import atomic_write, fsync_dir, version
from histstore.store.kinds import TURN_SEPARATOR, MemRev, MemTree

if TYPE_CHECKING:
    from histstore.store.store import Store

RECORD = "purged"
HEADER = b"# hs purged 1"
#: a purge past its commit point, not yet complete
PENDING = "purge-pending"
#: what a purge removed: a session, a turn, a memory note (every trace of the
#: target), every place a text occurred, or what the current rules redact
WHATS = ("session", "turn", "memory", "text", "redact")
#: what a purge writes where the text it removes stood
PLACEHOLDER = "[REDACTED:purged]"

#: completes a pending purge (set by histstore.ops.purge when it is imported:
#: the store cannot import upward); ``Store.lock`` calls it
complete_hook: Callable[[Store], None] | None = None


@dataclass(frozen=True)
class PurgeEntry:
    """One purge, as the record keeps it: ids only."""

    id: str
    time: str
    what: str
    target: str | None
    objects: tuple[str, ...]
    replaced: dict[str, str] = field(default_factory=dict)
    #: a purged session's turn ids (so ``hs show`` of one can say so)
    turns: tuple[str, ...] = ()

    def body(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "time": self.time,
            "what": self.what,
            "target": self.target,
            "objects": list(self.objects),
            "replaced": dict(sorted(self.replaced.items())),
        }
        if self.turns:
            d["turns"] = list(self.turns)
        return d

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, **self.body()}

    @classmethod
    def make(
        cls,
        time: str,
        what: str,
        target: str | None,
        objects: Iterable[str],
        replaced: dict[str, str] | None = None,
        turns: Iterable[str] = (),
    ) -> PurgeEntry:
        objs, ts = tuple(sorted(set(objects))), tuple(sorted(set(turns)))
        e = cls("", time, what, target, objs, dict(replaced or {}), ts)
        return cls(derive_id(e.body()), time, what, target, objs, e.replaced, ts)

    @classmethod
    def from_json(cls, d: Any) -> PurgeEntry:
        """Raises ValueError when ``d`` is not an entry."""
        if not isinstance(d, dict):
            raise ValueError("not an object")
        objects, replaced = d.get("objects"), d.get("replaced") or {}
        if not isinstance(objects, list) or not all(is_object_id(o) for o in objects):
            raise ValueError("objects is not a list of object ids")
        if not isinstance(replaced, dict) or not all(
            is_object_id(k) and is_object_id(v) for k, v in replaced.items()
        ):
            raise ValueError("replaced does not map object ids to object ids")
        what, target, time = d.get("what"), d.get("target"), d.get("time")
        if what not in WHATS or not isinstance(time, str):
            raise ValueError("what or time")
        if target is not None and not isinstance(target, str):
            raise ValueError("target")
        turns = d.get("turns") or []
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            raise ValueError("turns is not a list of turn ids")
        e = cls(str(d.get("id")), time, what, target, tuple(objects), dict(replaced), tuple(turns))
        if e.id != derive_id(e.body()):
            raise ValueError(f"entry {e.id} does not match its content")
        return e


def derive_id(body: dict[str, Any]) -> str:
    """16 hex digits of blake3 over the entry without its ``id`` (as an operation's)."""
    return str(blake3.blake3(canonical_json(body)).hexdigest())[:16]


class PurgeRecord:
    """``<store>/purged``, read again only when the file changed."""

    def __init__(self, root: Path) -> None:
        self.path = root / RECORD
        #: (version, entries, removed ids, each id -> the first purge removing it)
        self._cache: (
            tuple[tuple[int, int, int], list[PurgeEntry], frozenset[str], dict[str, PurgeEntry]]
            | None
        ) = None

    def _load(self) -> tuple[list[PurgeEntry], frozenset[str], dict[str, PurgeEntry]]:
        key = version(self.path)
        if key is None:
            self._cache = None
            return [], frozenset(), {}
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1:]
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        if lines[0] != HEADER:
            raise CorruptStore(f"{self.path} is not a purge record", hint="run hs fsck")
        entries: list[PurgeEntry] = []
        for n, raw in enumerate(lines[1:], 2):
            if not raw.strip():
                continue
            try:
                entries.append(PurgeEntry.from_json(json.loads(raw)))
            except ValueError as e:
                raise CorruptStore(
                    f"{self.path} line {n} is not a purge entry ({e})", hint="run hs fsck"
                ) from None
        by_object: dict[str, PurgeEntry] = {}
        for entry in entries:
            for o in entry.objects:
                by_object.setdefault(o, entry)
        ids = frozenset(by_object)
        self._cache = (key, entries, ids, by_object)
        return entries, ids, by_object

    def entries(self) -> list[PurgeEntry]:
        return self._load()[0]

    def ids(self) -> frozenset[str]:
        """Every object id a purge removed."""
        return self._load()[1]

    def has(self, entry_id: str) -> bool:
        return any(e.id == entry_id for e in self.entries())

    def of_object(self, object_id: str) -> PurgeEntry | None:
        """The (first) purge that removed an object."""
        return self._load()[2].get(object_id)

    def add(self, new: Iterable[PurgeEntry]) -> bool:
        """Append entries not yet recorded (lock held): the file is written
        whole through the one write path. Whether anything was added."""
        have = self.entries()
        known = {e.id for e in have}
        added: list[PurgeEntry] = []
        for e in new:
            if e.id not in known:
                known.add(e.id)
                added.append(e)
        if not added:
            return False
        body = b"".join(canonical_json(e.as_json()) + b"\n" for e in [*have, *added])
        atomic_write(self.path, HEADER + b"\n" + body)
        self._cache = None
        return True


def read_pending(root: Path) -> dict[str, Any] | None:
    """The purge past its commit point, not yet complete (None: there is none)."""
    try:
        data = (root / PENDING).read_bytes()
    except FileNotFoundError:
        return None
    try:
        value = json.loads(data)
        if not isinstance(value, dict):
            raise TypeError
        for e in value["entries"]:
            PurgeEntry.from_json(e)
    except (ValueError, KeyError, TypeError):
        raise CorruptStore(
            f"{root / PENDING} does not describe a purge", hint="run hs fsck"
        ) from None
    return value


def write_pending(root: Path, pending: dict[str, Any]) -> None:
    """The commit point of a purge (atomic, durable)."""
    atomic_write(root / PENDING, canonical_json(pending) + b"\n")


def clear_pending(root: Path) -> None:
    try:
        (root / PENDING).unlink()
    except FileNotFoundError:
        return
    fsync_dir(root)


def purged_turn(store: Store, rev_id: str) -> str | None:
    """A turn object a purge removed that the session at ``rev_id`` lists
    (the first), or None; reading the session may raise (NotFound, …)."""
    turns = store.load_session(rev_id).turns
    return next((e.object for e in turns if store.is_purged(e.object)), None)


def shows_purged(store: Store, object_id: str) -> bool:
    """Whether a ref at ``object_id`` would show what a purge removed: the
    object itself, a turn of the session it is a revision of (one only the
    refs log still named, which the purge moved no ref off: an undo would
    bring it back), or the tree or a file of the memory revision it is. A
    ref must never point so (hs undo and update-ref refuse, fsck reports it)."""
    if not store.purged_ids():
        return False  # nothing was ever purged: no session need be read
    if store.is_purged(object_id):
        return True
    try:
        kind, payload = store.objects.get(object_id)
        if kind == "session":
            return purged_turn(store, object_id) is not None
        if kind == "memrev":
            tree = MemRev.from_json(decode_json(object_id, payload)).tree
            if store.is_purged(tree):
                return True
            files = MemTree.from_json(store.get_json(tree, "memtree")).files.values()
            return any(store.is_purged(b) for b in files)
    except PurgedObject:  # a revision before it
        return True
    except NotFound:  # gone another way (gc): not this check's to say
        return False
    return False


def purged_turns(store: Store) -> frozenset[tuple[str, str]]:
    """(session id, turn id) of every turn a session's or a turn's purge
    removed: an import that reads one again skips it, whatever object it
    would now be (the turn grew, or is read with other lines)."""
    out: set[tuple[str, str]] = set()
    for e in store.purges.entries():
        if e.target is None:
            continue
        if e.what == "session":
            out.update((e.target, t) for t in e.turns)
        elif e.what == "turn":
            session, sep, turn = e.target.partition(TURN_SEPARATOR)
            if sep:
                out.add((session, turn))
    return frozenset(out)
