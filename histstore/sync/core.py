"""Sync: make two stores hold the same history, memory and forgets (docs/sync.md).

The other store (the *remote*) is a store directory like any other: a mounted
disk, a network share. A sync between this store and a remote, in one or both
directions:

1. **Objects first.** For every ref of ``sessions/``, ``memory/`` and
   ``overlay/`` whose value differs between the two sides, the objects its
   value reaches (a session revision, its turns, their blobs, its parents; a
   marker and its chain; a memory revision, its tree, its blobs, its parents)
   are walked, stopping at every object the receiving side already has, and
   copied: read through the sending store's ``get`` (which re-hashes), written
   through the receiving store's batch (which hashes again; the ids must
   agree), children before parents, made durable before any ref names them.
   This bulk copy runs before the locks are taken, so a long first sync does
   not hold up other writers.
2. **Refs, under both locks.** Both stores' locks are taken in a fixed order
   (by store id), the refs read again, the few objects that arrived meanwhile
   copied, and each differing ref merged (:func:`merge_values`:
   deterministic and symmetric, so every order of syncs converges). The
   receiving side's refs move by compare-and-swap as ONE operation in its
   refs log (the remote's first, then this store's, which also moves the
   remote-tracking refs ``remotes/<name>/<ref>``).
3. After a pull, this store's recall index follows (a generation swap when
   overlay refs moved, else a catch-up), outside the locks.

A ref present on one side only is copied to the other: sync never deletes a
ref. A sync that finds nothing different moves no object and records no
operation anywhere. This module never prints: what a person should know comes
back in :class:`SyncReport`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from histstore.errors import BadInput, CorruptObject, CorruptStore, HistError, NoStore, NotFound
from histstore.history.turn import parse_time
from histstore.memory.rules import is_index_name, merge_index
from histstore.store.codec import canonical_json, decode_json, hash_object
from histstore.store.kinds import SessionRev, TurnEntry, refs_of
from histstore.store.merge import deletion_loses, keep, merge3
from histstore.store.objectstore import Batch, ObjectStore
from histstore.store.oplog import Operation, RefChange
from histstore.store.refs import check_component
from histstore.store.store import Store

NAMESPACES = ("sessions/", "memory/", "overlay/")
TRACKING = "remotes/"
Progress = Callable[[int, int], None]  # (refs walked so far, refs to walk)


# --------------------------------------------------------------------------- remotes


@dataclass(frozen=True)
class Remote:
    name: str
    path: Path

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path)}


def check_remote_name(name: str) -> str:
    return check_component(name, "remote name")


def remote_entries(store: Store) -> tuple[dict[str, Remote], dict[str, str]]:
    """The remotes of ``config.toml`` (``[remotes.NAME] path = "..."``), by name,
    and the entries that are not a remote (name -> what is wrong), so one bad
    entry neither hides the others nor keeps ``hs remote remove`` from it."""
    table = store.config.get("remotes", {})
    if not isinstance(table, dict):
        raise BadInput(f"{store.root / 'config.toml'}: [remotes] must be a table of remotes")
    good, bad = {}, {}
    for name, entry in sorted(table.items()):
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not path:
            bad[name] = "has no path" if isinstance(entry, dict) else "is not a table"
        else:
            good[name] = Remote(name, Path(path))
    return good, bad


def _bad_remote(store: Store, name: str, problem: str) -> BadInput:
    return BadInput(
        f"{store.root / 'config.toml'}: remote {name!r} {problem}",
        hint=f"set [remotes.{name}] path, or `hs remote remove {name}`",
    )


def get_remote(store: Store, name: str) -> Remote:
    """Remote ``name``; another remote's bad entry does not matter here."""
    check_remote_name(name)
    good, bad = remote_entries(store)
    if name in bad:
        raise _bad_remote(store, name, bad[name])
    found = good.get(name)
    if found is None:
        known = ", ".join(sorted([*good, *bad])) or "none"
        raise NotFound(
            f"no remote {name!r} (remotes: {known})",
            hint=f"add it with `hs remote add {name} PATH`",
        )
    return found


def _overlap(path: Path, store: Store) -> str | None:
    """How a remote's folder overlaps this store's (it is the store, inside
    it, or holds it), or None. A remote there would copy a store into itself."""
    try:
        there, here = path.resolve(), store.root.resolve()
    except OSError:
        return None
    if there == here:
        return "is this store itself"
    if here in there.parents:
        return "is inside this store"
    if there in here.parents:
        return "holds this store"
    return None


def add_remote(store: Store, name: str, path: Path) -> Remote:
    """Record a remote in ``config.toml`` (under the store lock). The path need
    not hold a store yet (``hs push --init`` makes one); it must not be a file."""
    from histstore.store.config import read_config, write_config

    check_remote_name(name)
    path = Path(path).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise BadInput(f"{path} is a file, not a store folder", hint="give a folder for the remote")
    overlap = _overlap(path, store)
    if overlap:
        raise BadInput(
            f"{path} {overlap}", hint="a remote is another store folder, outside this one"
        )
    with store.lock():
        config = read_config(store.root)
        table = config.setdefault("remotes", {})
        if name in table:
            raise BadInput(
                f"remote {name!r} already exists ({table[name].get('path')})",
                hint=f"remove it first with `hs remote remove {name}`",
            )
        table[name] = {"path": str(path)}
        write_config(store.root, config)
        store.config = config
    return Remote(name, path)


def remove_remote(
    store: Store, name: str, command: str = "hs remote remove"
) -> tuple[Remote, Operation | None]:
    """Forget a remote: its remote-tracking refs go (one operation), then its
    entry in ``config.toml``. The remote store itself is not touched."""
    from histstore.store.config import read_config, write_config

    check_remote_name(name)
    good, bad = remote_entries(store)
    if name not in good and name not in bad:
        get_remote(store, name)  # raises: no such remote
    # a bad entry (no path) is removed all the same: that is how it is fixed
    remote = good.get(name) or Remote(name, Path())
    with store.lock():
        prefix = f"{TRACKING}{name}/"
        tracking = store.refs.list_refs(prefix)
        op = store.apply(
            [RefChange(ref, value, None) for ref, value in tracking.items()],
            command,
            extra={"kind": "remote-remove", "remote": name},
        )
        config = read_config(store.root)
        config.get("remotes", {}).pop(name, None)
        if not config.get("remotes"):
            config.pop("remotes", None)
        write_config(store.root, config)
        store.config = config
    return remote, op


def check_empty_folder(remote: Remote) -> None:
    """A remote folder with no store must be missing or empty for one to be
    made there (so ``--init`` is never hinted where it would fail)."""
    path = remote.path
    if path.is_dir() and any(path.iterdir()):
        raise BadInput(
            f"remote {remote.name}: {path} is not empty and holds no store",
            hint=(
                "point the remote at an empty or new folder "
                f"(`hs remote remove {remote.name}`, then `hs remote add {remote.name} PATH`)"
            ),
        )


def open_remote(store: Store, remote: Remote, *, init: bool = False) -> tuple[Store, bool]:
    """The remote's store (created when ``init``): (store, created)."""
    path = remote.path
    if path.exists() and not path.is_dir():
        raise BadInput(f"remote {remote.name}: {path} is a file, not a store folder")
    overlap = _overlap(path, store)
    if overlap:
        raise BadInput(
            f"remote {remote.name}: {path} {overlap}",
            hint="a remote is another store folder, outside this one",
        )
    if not (path / "config.toml").exists():
        check_empty_folder(remote)
        if not init:
            raise NoStore(
                f"no store at {path} (remote {remote.name})",
                hint=f"`hs push {remote.name} --init` creates one there",
            )
        other, created = Store.init(path)
    else:
        other, created = Store.open(path), False
    other.notify = store.notify
    return other, created


# --------------------------------------------------------------------------- the object graph


def children(object_id: str, kind: str, payload: bytes) -> list[str]:
    """The ids an object refers to (the objects a copy must bring with it),
    parent revisions last (:func:`walk_missing` relies on it): the object
    kind's own ``refs()``, which fsck checks too."""
    return [r.id for r in refs_of(object_id, kind, payload)]


class _Presence:
    """Whether the receiving store has an object: ``has`` per id, until many
    misses show a big transfer (a first sync); then one listing of its ids."""

    LIST_AFTER = 2000

    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects
        self.ids: set[str] | None = None
        self.misses = 0

    def has(self, object_id: str) -> bool:
        if self.ids is not None:
            return object_id in self.ids
        if self.objects.has(object_id):
            return True
        self.misses += 1
        if self.misses >= self.LIST_AFTER:
            self.ids = set(self.objects.iter_ids())
            return object_id in self.ids
        return False

    def add(self, object_id: str) -> None:
        if self.ids is not None:
            self.ids.add(object_id)


@dataclass
class Moved:
    objects: int = 0
    bytes: int = 0

    def as_json(self) -> dict[str, int]:
        return {"objects": self.objects, "bytes": self.bytes}


class _Source(Protocol):
    def get(self, object_id: str) -> tuple[str, bytes]: ...


class _Has(Protocol):
    def has(self, object_id: str) -> bool: ...


HOLD_BYTES = 8 << 20  # payloads a walk keeps on its stack; beyond, it reads again


def walk_missing(
    src: _Source,
    dst: _Has,
    roots: list[str],
    emit: Callable[[str, str, bytes], None],
    progress: Callable[[], None] | None = None,
    *,
    hold: int | None = None,
) -> None:
    """Every object reachable from ``roots`` that ``dst`` lacks, children before
    parents (so an interrupted copy never leaves an object without what it
    names), each passed to ``emit`` once.

    Memory stays bounded however long the history: an object with no
    children is emitted as soon as it is read; one with children waits on the
    stack by id, keeping its payload only while the payloads kept total at
    most ``hold`` bytes (:data:`HOLD_BYTES`), else read again when emitted. Its
    children are entered in the order :func:`children` lists them, parent
    revisions last, so a frame descending a revision chain has no sibling ids
    left to keep: a session recorded a turn at a time (a chain of thousands
    of revisions, each naming every turn) is walked in memory linear in its
    length, not quadratic."""
    budget = HOLD_BYTES if hold is None else hold
    held = 0
    seen: set[str] = set()
    # (id, kind, payload or None when not kept, children left to enter, reversed)
    stack: list[tuple[str, str, bytes | None, list[str]]] = []

    def enter(oid: str) -> None:
        nonlocal held
        if oid in seen:
            return
        seen.add(oid)
        if dst.has(oid):
            return
        kind, payload = src.get(oid)
        kids = children(oid, kind, payload)
        if not kids:
            emit(oid, kind, payload)
            return
        keep = held + len(payload) <= budget
        held += len(payload) if keep else 0
        stack.append((oid, kind, payload if keep else None, kids[::-1]))

    for root in roots:
        enter(root)
        while stack:
            oid, kind, payload, kids = stack[-1]
            if kids:
                enter(kids.pop())
                continue
            stack.pop()
            if payload is None:
                again, payload = src.get(oid)
                if again != kind:
                    raise CorruptObject(oid, f"was a {kind}, read again as a {again}")
            else:
                held -= len(payload)
            emit(oid, kind, payload)
        if progress is not None:
            progress()


CHECKPOINT_OBJECTS = 20_000  # a copy makes what it wrote durable this often,
CHECKPOINT_BYTES = 64 << 20  # or after this many payload bytes


def _copier(
    batch: Batch, moved: Moved | None, dst: _Presence | None = None
) -> Callable[[str, str, bytes], None]:
    """Writes each object the walk emits into ``batch``, making the batch durable
    (:meth:`Batch.checkpoint`) every :data:`CHECKPOINT_OBJECTS` objects or
    :data:`CHECKPOINT_BYTES` bytes: a sync killed mid-copy keeps what it had
    copied up to its last checkpoint, and the next one sends only the rest.
    Objects arrive children first, so a checkpointed object never names one
    that is not durable too."""
    since = [0, 0]  # objects, bytes since the last checkpoint

    def emit(oid: str, kind: str, payload: bytes) -> None:
        if batch.put(kind, payload) != oid:  # the codec hashed it again
            raise CorruptObject(oid, "arrived with other content")
        if dst is not None:
            dst.add(oid)
        if moved is not None:
            moved.objects += 1
            moved.bytes += len(payload)
        since[0] += 1
        since[1] += len(payload)
        if since[0] >= CHECKPOINT_OBJECTS or since[1] >= CHECKPOINT_BYTES:
            batch.checkpoint()
            since[0] = since[1] = 0

    return emit


# --------------------------------------------------------------------------- merging


class Objects:
    """Reads an object from whichever of the stores has it (a merge reads both
    sides' histories), and keeps the objects a merge makes until they are
    written."""

    def __init__(self, *stores: ObjectStore) -> None:
        self.stores = stores
        self.made: dict[str, tuple[str, bytes]] = {}

    def get(self, object_id: str) -> tuple[str, bytes]:
        if object_id in self.made:
            return self.made[object_id]
        for s in self.stores:
            with contextlib.suppress(NotFound):
                return s.get(object_id)
        raise NotFound(f"no object {object_id} on either side")

    def json(self, object_id: str, kind: str) -> Any:
        k, payload = self.get(object_id)
        if k != kind:
            raise CorruptObject(object_id, f"expected a {kind}, found a {k}")
        return decode_json(object_id, payload)

    def make(self, kind: str, obj: Any) -> str:
        return self.make_raw(kind, canonical_json(obj))

    def make_blob(self, data: bytes) -> str:
        return self.make_raw("blob", data)

    def make_raw(self, kind: str, payload: bytes) -> str:
        oid = hash_object(kind, payload)
        self.made[oid] = (kind, payload)
        return oid


class _Made:
    """The objects a merge made, read like a store, to be written children
    first; what they name that no merge made is in the store already."""

    def __init__(self, objs: Objects, dst: ObjectStore) -> None:
        self.made = objs.made
        self.dst = dst

    def get(self, object_id: str) -> tuple[str, bytes]:
        return self.made[object_id]

    def has(self, object_id: str) -> bool:
        return object_id not in self.made or self.dst.has(object_id)


def _relate(
    parents_of: Callable[[str], list[str]], a: str, b: str
) -> tuple[str | None, str | None]:
    """(the one of ``a``/``b`` that descends from the other, or None; the merge
    base when neither does: the common ancestor nearest to both, by the sum of
    its distances and then its id, so either side picks the same one).

    Both histories are walked a level at a time, side by side, and the walk
    stops as soon as one side reaches the other: a fast-forward (the usual
    case: one new revision on one side) reads a revision or two, however long
    the history. Only revisions made apart walk both histories whole."""
    depth = ({a: 0}, {b: 0})
    front = ([a], [b])
    while True:
        if b in depth[0]:
            return a, None
        if a in depth[1]:
            return b, None
        if not front[0] and not front[1]:
            break
        for side in (0, 1):
            nxt = []
            for rev in front[side]:
                for p in parents_of(rev):
                    if p not in depth[side]:
                        depth[side][p] = depth[side][rev] + 1
                        nxt.append(p)
            front[side][:] = nxt
    ha, hb = depth
    common = set(ha) & set(hb)
    base = min(common, key=lambda r: (ha[r] + hb[r], r)) if common else None
    return None, base


def _pick(a: Any, b: Any, base: Any, tie: Any) -> Any:
    """Three-way for one field: the side that changed it, else ``tie``."""
    return merge3(a, b, base, keep(tie))[0]


def merge_sessions(objs: Objects, a: str, b: str) -> str:
    """The revision a session ref moves to when the sides hold ``a`` and ``b``:
    the descendant when one descends from the other, else a merge revision
    (made in ``objs``) whose turns are the union of both sides', a turn both
    sides changed differently taken from the later ``asked_at`` (then the
    greater object id). The same object whichever side makes it."""

    def load(rev: str) -> SessionRev:
        try:
            return SessionRev.from_json(objs.json(rev, "session"))
        except ValueError as e:
            raise CorruptObject(rev, str(e)) from None

    def parents_of(rev: str) -> list[str]:
        d = objs.json(rev, "session")
        return [p for p in (d.get("parent"), d.get("merged")) if isinstance(p, str)]

    ahead, base_id = _relate(parents_of, a, b)
    if ahead is not None:
        return ahead
    ra, rb = load(a), load(b)
    rbase = load(base_id) if base_id else None
    ta = {t.turn_id: t for t in ra.turns}
    tb = {t.turn_id: t for t in rb.turns}
    to = {t.turn_id: t for t in rbase.turns} if rbase else {}
    turns: list[TurnEntry] = []
    for tid in set(ta) | set(tb):
        x, y = ta.get(tid), tb.get(tid)
        if x is None or y is None:
            turns.append(x or y)  # type: ignore[arg-type]
            continue
        later = max(x, y, key=lambda t: (t.asked_at, t.object))
        turns.append(_pick(x, y, to.get(tid), later))
    turns.sort(key=lambda t: (t.asked_at, t.turn_id))
    first, second = sorted([a, b])
    greater = rb if b > a else ra
    merged = SessionRev(
        session_id=ra.session_id,
        project=_pick(ra.project, rb.project, rbase.project if rbase else None, greater.project),
        agent=_pick(ra.agent, rb.agent, rbase.agent if rbase else None, greater.agent),
        title=_pick(ra.title, rb.title, rbase.title if rbase else None, greater.title),
        turns=turns,
        parent=first,
        merged=second,
    )
    return objs.make("session", merged.as_json())


def _when(text: Any) -> datetime:
    """A time of an object, for ordering; one that does not parse sorts first."""
    try:
        return parse_time(str(text))
    except HistError:
        return datetime.min.replace(tzinfo=UTC)


def _marker_parents(d: Any) -> list[str]:
    """The markers a marker follows: its ``parent``, and on a merge marker the
    other heads it joins (``merged``)."""
    out = [d["parent"]] if isinstance(d.get("parent"), str) else []
    merged = d.get("merged")
    if isinstance(merged, list):
        out += [m for m in merged if isinstance(m, str)]
    return out


def _marker_heads(objs: Objects, marker: str) -> set[str]:
    """The concurrent markers a value stands for: a merge marker's heads, or
    the marker itself."""
    d = objs.json(marker, "marker")
    if isinstance(d.get("merged"), list):
        return set(_marker_parents(d))
    return {marker}


def merge_markers(objs: Objects, a: str, b: str) -> str:
    """The marker an overlay ref moves to when the sides hold ``a`` and ``b``.

    The two values stand for sets of *heads*: markers none of the others
    follows (a marker made by a forget or unforget on top of another follows
    it, through ``parent``; a merge marker follows the heads it joins). The
    result stands for the union of both sets, less every head another one
    follows — a join, so any order of syncs ends on the same value. One head
    left: that marker (the newer marker wins whenever it was made on top of
    the older). Several, made apart on different stores: a merge marker
    joining them, which says what the newest of them says (by ``ts``, then
    id) — except that an active exclusion no other head has seen holds over
    them all (the newest such): a tombstone or an unforget made where the
    exclusion was not yet known never weakens it. The losers stay objects."""
    heads = _marker_heads(objs, a) | _marker_heads(objs, b)
    seen: dict[str, set[str]] = {}

    def ancestors(m: str) -> set[str]:
        if m not in seen:
            out: set[str] = set()
            todo = [m]
            while todo:
                for p in _marker_parents(objs.json(todo.pop(), "marker")):
                    if p not in out:
                        out.add(p)
                        with contextlib.suppress(NotFound):
                            objs.get(p)
                            todo.append(p)
            seen[m] = out
        return seen[m]

    heads = {h for h in heads if not any(h in ancestors(o) for o in heads if o != h)}
    if len(heads) == 1:
        return heads.pop()
    body = {h: objs.json(h, "marker") for h in heads}
    excluding = [
        h for h in heads if body[h].get("state") == "active" and body[h].get("mode") == "exclude"
    ]
    chosen = body[max(excluding or heads, key=lambda h: (_when(body[h].get("ts")), h))]
    first, *rest = sorted(heads)
    merged = {k: chosen.get(k) for k in ("target", "target_kind", "session", "mode", "state")}
    merged.update(reason=chosen.get("reason") or "", ts=chosen.get("ts"), parent=first, merged=rest)
    return objs.make("marker", merged)


@dataclass(frozen=True)
class MemoryConflict:
    scope: str
    file: str
    versions: list[str]
    #: False when the merge that found it was made by an earlier sync between
    #: other stores, and this one only moved a ref onto it (a fast-forward)
    merged_here: bool = True

    def as_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "file": self.file,
            "versions": self.versions,
            "merged_here": self.merged_here,
        }

    def message(self) -> str:
        where = "" if self.merged_here else " by a merge made on another store"
        return (
            f"memory conflict: {self.scope} {self.file}: both versions kept{where}; "
            "settle with hs memory restore"
        )


def recorded_conflicts(objs: Objects, rev: str) -> list[MemoryConflict]:
    """The conflicts a merge revision recorded when it was made (its
    ``conflicts`` field), for a sync that arrives at it by a fast-forward."""
    d = objs.json(rev, "memrev")
    out = []
    for c in d.get("conflicts") or []:
        if isinstance(c, dict) and isinstance(c.get("file"), str):
            versions = [v for v in c.get("versions") or [] if isinstance(v, str)]
            out.append(MemoryConflict(str(d.get("scope")), c["file"], versions, False))
    return out


def _merge_index(
    objs: Objects,
    name: str,
    won: str | None,
    lost: str | None,
    base: str | None,
    *,
    keep: set[str],
    gone: set[str],
) -> tuple[str, bool] | None:
    """An index file both sides changed, merged by entry
    (:func:`histstore.memrules.merge_index`): (the merged blob, made in
    ``objs``; whether an entry changed differently on both sides). ``won`` is
    the version of the winning revision (the later one). None: a version is
    not text an index can be, and the file is merged as a whole."""

    def data(blob: str | None) -> bytes | None:  # None: no index on that side
        if blob is None:
            return None
        kind, payload = objs.get(blob)
        return payload if kind == "blob" else b"\0"

    merged = merge_index(name, data(won), data(lost), data(base), keep=keep, gone=gone)
    if merged is None:
        return None
    return objs.make_blob(merged[0]), merged[1]


def _theirs_unless_deleted(ours: str | None, theirs: str | None) -> str | None:
    return deletion_loses(theirs, ours)


def merge_memory(objs: Objects, a: str, b: str) -> tuple[str, list[MemoryConflict]]:
    """The memory revision a ``memory/<scope>`` ref moves to, and the files both
    sides changed differently. One side descending from the other: that one.
    Else a ``merge`` revision, per file three-way against the merge base; a
    conflict takes the version of the revision with the later ``time`` (then
    the greater id; a deletion loses to a modification) and is listed in the
    revision's ``conflicts`` with both blob ids. The index (``MEMORY.md``) is
    merged by entry (:func:`_merge_index`): notes added on two machines keep
    both lines, and only an entry changed differently on both is a conflict."""
    revs: dict[str, Any] = {}

    def rev(r: str) -> Any:
        if r not in revs:
            revs[r] = objs.json(r, "memrev")
        return revs[r]

    def parents_of(r: str) -> list[str]:
        parents = rev(r).get("parents") or []
        return [p for p in parents if isinstance(p, str)]

    def files(r: str | None) -> dict[str, str]:
        if r is None:
            return {}
        tree = objs.json(rev(r)["tree"], "memtree")
        return dict(tree.get("files") or {})

    ahead, base = _relate(parents_of, a, b)
    if ahead is not None:
        return ahead, []
    fa, fb, fo = files(a), files(b), files(base)
    ka = (_when(rev(a).get("time")), a)
    kb = (_when(rev(b).get("time")), b)
    scope = str(rev(a).get("scope"))
    merged: dict[str, str] = {}
    conflicts: list[MemoryConflict] = []
    names = sorted(set(fa) | set(fb) | set(fo))
    # the notes first, then the index, which lists exactly the notes kept
    for name in [n for n in names if not is_index_name(n)] + [n for n in names if is_index_name(n)]:
        x, y, o = fa.get(name), fb.get(name), fo.get(name)
        by_entry = None
        pick: str | None
        if x != y and is_index_name(name) and (x is not None or y is not None):
            # the side that changed it wins its other lines; both: the later
            if x == o:
                won, lost = y, x
            elif y == o:
                won, lost = x, y
            else:
                won, lost = (x, y) if ka > kb else (y, x)
            notes = {n for n in merged if not is_index_name(n)}
            gone = {n for n in names if not is_index_name(n)} - notes
            by_entry = _merge_index(objs, name, won, lost, o, keep=notes, gone=gone)
        if by_entry is not None:
            pick, clash = by_entry
            if clash:
                conflicts.append(
                    MemoryConflict(scope, name, sorted(v for v in (x, y) if v is not None))
                )
        else:
            # a file changed both ways keeps the later revision's; a deletion loses
            pick, clash = merge3(x, y, o, deletion_loses if ka > kb else _theirs_unless_deleted)
            if clash:
                versions = sorted(v for v in {x, y} if v is not None)
                conflicts.append(MemoryConflict(scope, name, versions))
        if pick is not None:
            merged[name] = pick
    tree = objs.make("memtree", {"files": merged})
    newer = rev(a) if ka > kb else rev(b)
    body: dict[str, Any] = {
        "scope": scope,
        "project": newer.get("project"),
        "tree": tree,
        "parents": sorted([a, b]),
        "time": newer.get("time"),
        "kind": "merge",
        "message": "merge",
    }
    if conflicts:
        body["conflicts"] = [{"file": c.file, "versions": c.versions} for c in conflicts]
    return objs.make("memrev", body), conflicts


def merge_values(
    objs: Objects, ref: str, a: str | None, b: str | None
) -> tuple[str | None, list[MemoryConflict]]:
    """What a synced ref holds on both sides when one holds ``a`` and the other
    ``b``: symmetric (``merge_values(b, a)`` is the same) and deterministic."""
    if a == b or b is None:
        return a, []
    if a is None:
        return b, []
    if ref.startswith("sessions/"):
        return merge_sessions(objs, a, b), []
    if ref.startswith("overlay/"):
        return merge_markers(objs, a, b), []
    if ref.startswith("memory/"):
        return merge_memory(objs, a, b)
    raise BadInput(f"sync does not carry ref {ref}")


def check_value(objs: Objects, ref: str, value: str, side: str) -> None:
    """A ref value about to be adopted by another store must be what its
    namespace holds (a well-formed session revision of that session, a marker
    of that target, a memory revision of that scope): damage in one store is
    refused at the border instead of spreading (exit 7)."""
    from histstore.overlay.markers import Marker

    ns, _, name = ref.partition("/")
    want = {"sessions": "session", "overlay": "marker", "memory": "memrev"}[ns]
    what = f"the {side} store's ref {ref}"
    try:
        d = objs.json(value, want)
        if ns == "sessions":
            if SessionRev.from_json(d).session_id != name:
                raise ValueError("a revision of another session")
        elif ns == "overlay":
            if Marker.from_json(d).target != name:
                raise ValueError("a marker of another target")
        elif d.get("scope") != name or not isinstance(d.get("tree"), str):
            raise ValueError("not a memory revision of that scope")
    except (CorruptObject, ValueError, AttributeError) as e:
        reason = e.reason if isinstance(e, CorruptObject) else str(e)
        raise CorruptStore(
            f"{what} points at {value[:12]}: {reason}; no ref was moved",
            hint=f"run hs fsck on the {side} store",
        ) from None


# --------------------------------------------------------------------------- the sync


@dataclass
class SyncReport:
    remote: str
    path: str
    direction: str  # "push" | "pull" | "sync"
    dry_run: bool = False
    initialized: bool = False
    sent: Moved = field(default_factory=Moved)
    received: Moved = field(default_factory=Moved)
    made: int = 0  # merge objects made
    remote_changes: list[RefChange] = field(default_factory=list)
    local_changes: list[RefChange] = field(default_factory=list)
    tracking_changes: list[RefChange] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    memory_conflicts: list[MemoryConflict] = field(default_factory=list)
    remote_operation: Operation | None = None
    local_operation: Operation | None = None
    index: str | None = None  # "swap" | "catch-up" after a pull that moved refs
    index_error: str | None = None

    @property
    def nothing(self) -> bool:
        return (
            not self.sent.objects
            and not self.received.objects
            and not self.remote_changes
            and not self.local_changes
            and not self.tracking_changes
        )

    def memory_changes(self) -> list[dict[str, Any]]:
        out = []
        for side, changes in (("remote", self.remote_changes), ("local", self.local_changes)):
            for c in changes:
                if c.ref.startswith("memory/"):
                    out.append({"side": side, **c.as_json()})
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "remote": self.remote,
            "path": self.path,
            "direction": self.direction,
            "dry_run": self.dry_run,
            "initialized": self.initialized,
            "sent": self.sent.as_json(),
            "received": self.received.as_json(),
            "merge_objects": self.made,
            "remote_changes": [c.as_json() for c in self.remote_changes],
            "local_changes": [c.as_json() for c in self.local_changes],
            "tracking_changes": len(self.tracking_changes),
            "merged": self.merged,
            "memory_changes": self.memory_changes(),
            "memory_conflicts": [c.as_json() for c in self.memory_conflicts],
            "remote_operation": self.remote_operation.op if self.remote_operation else None,
            "local_operation": self.local_operation.op if self.local_operation else None,
            "index": self.index,
            "index_error": self.index_error,
        }


def synced_refs(store: Store) -> dict[str, str]:
    out: dict[str, str] = {}
    for ns in NAMESPACES:
        out.update(store.refs.list_refs(ns))
    return out


def _lock_key(store: Store) -> tuple[str, str]:
    return str(store.config.get("store", {}).get("id", "")), str(store.root.resolve())


@contextlib.contextmanager
def both_locked(a: Store, b: Store) -> Iterator[None]:
    """Both stores' locks, taken in one fixed order (by store id), so two
    machines syncing with each other at once cannot deadlock."""
    first, second = sorted((a, b), key=_lock_key)
    with first.lock(), second.lock():
        yield


@dataclass
class _Plan:
    local: dict[str, str]
    remote: dict[str, str]
    differ: list[str]


def _mark(store: Store) -> tuple[str | None, str | None]:
    """(the newest operation in the refs log, the last one applied): any ref
    change moves one of them."""
    last = store.refs.last_operation()
    return (last.op if last else None), store.refs.applied()


def _plan(local: Store, remote: Store) -> _Plan:
    lo, re = synced_refs(local), synced_refs(remote)
    differ = sorted(n for n in set(lo) | set(re) if lo.get(n) != re.get(n))
    return _Plan(lo, re, differ)


def _copy(
    src: Store,
    dst: Store,
    roots: list[str],
    moved: Moved,
    progress: Callable[[], None] | None,
    *,
    dry_run: bool = False,
) -> None:
    presence = _Presence(dst.objects)
    if dry_run:

        def count(oid: str, kind: str, payload: bytes) -> None:
            moved.objects += 1
            moved.bytes += len(payload)

        walk_missing(src.objects, presence, roots, count, progress)
        return
    with dst.objects.batch() as batch:
        walk_missing(src.objects, presence, roots, _copier(batch, moved, presence), progress)


def sync(
    local: Store,
    remote: Store,
    name: str,
    *,
    push: bool = True,
    pull: bool = True,
    dry_run: bool = False,
    command: str = "hs sync",
    progress: Progress | None = None,
    refresh_index: bool = True,
) -> SyncReport:
    """Sync ``local`` with ``remote`` (known to ``local`` as remote ``name``):
    push sends what the remote lacks and moves its refs, pull the other way."""
    check_remote_name(name)
    overlap = _overlap(remote.root, local)
    if overlap:
        raise BadInput(f"{remote.root} {overlap}")
    direction = "sync" if push and pull else "push" if push else "pull"
    report = SyncReport(name, str(remote.root), direction, dry_run=dry_run)

    def roots(plan: _Plan) -> tuple[list[str], list[str]]:
        send = [plan.local[n] for n in plan.differ if push and n in plan.local]
        recv = [plan.remote[n] for n in plan.differ if pull and n in plan.remote]
        return send, recv

    def walker(total: int) -> Callable[[], None] | None:
        if progress is None or not total:
            return None
        done = [0]

        def step() -> None:
            done[0] += 1
            progress(done[0], total)

        return step

    # 1. the refs as they are now, read without a lock (readers never lock);
    #    with nothing different there is nothing to copy, merge or record
    #    (unless an interrupted operation waits for a writer to complete it)
    marks = (_mark(local), _mark(remote))
    plan = _plan(local, remote)
    interrupted = any(last != applied for last, applied in marks)
    if not plan.differ and not (interrupted and not dry_run):
        return report
    send, recv = roots(plan)
    if not dry_run:
        # the bulk of the objects, before any lock (objects need none)
        step = walker(len(send) + len(recv))
        _copy(local, remote, send, report.sent, step)
        _copy(remote, local, recv, report.received, step)

    # 2. under both locks (a dry run reads only): what moved meanwhile, the
    #    merges, the refs. Refs move only by logged operations, so when neither
    #    log moved (and no interrupted operation was completed) the refs read
    #    above still hold and need not be listed again.
    with contextlib.nullcontext() if dry_run else both_locked(local, remote):
        if not dry_run and (_mark(local), _mark(remote)) != marks:
            plan = _plan(local, remote)
            send, recv = roots(plan)
        _copy(local, remote, send, report.sent, None, dry_run=dry_run)
        _copy(remote, local, recv, report.received, None, dry_run=dry_run)
        objs = Objects(local.objects, remote.objects)
        for n in plan.differ:
            a, b = plan.local.get(n), plan.remote.get(n)
            if push and a is not None:
                check_value(objs, n, a, "local")
            if pull and b is not None:
                check_value(objs, n, b, "remote")
            value, conflicts = merge_values(objs, n, a, b)
            if value is not None and value not in (a, b):
                report.merged.append(n)
                report.memory_conflicts += conflicts
            elif n.startswith("memory/") and pull and value is not None and value != a:
                # this store arrives at a merge made elsewhere: its person has
                # not been told of the conflicts it recorded
                report.memory_conflicts += recorded_conflicts(objs, value)
            if push and value != b:
                report.remote_changes.append(RefChange(n, b, value))
            if pull and value != a:
                report.local_changes.append(RefChange(n, a, value))
        report.made = len(objs.made)
        made_remote = {c.new for c in report.remote_changes if c.new} & set(objs.made)
        made_local = {c.new for c in report.local_changes if c.new} & set(objs.made)
        report.tracking_changes = _tracking(local, name, plan, report, made_local, pull)
        if dry_run:
            return report
        # merge objects: into each side whose refs will name them (their
        # children are all there by now)
        for dst, ids in ((remote, made_remote), (local, made_local)):
            if ids:
                with dst.objects.batch() as batch:
                    made = _Made(objs, dst.objects)
                    walk_missing(made, made, sorted(ids), _copier(batch, None))
        peer = str(local.config.get("store", {}).get("id", ""))
        if report.remote_changes:
            report.remote_operation = remote.apply(
                report.remote_changes,
                command,
                extra={"kind": "sync", "peer": peer, "direction": "in"},
            )
        local_all = report.local_changes + report.tracking_changes
        if local_all:
            report.local_operation = local.apply(
                local_all,
                command,
                extra={
                    "kind": "sync",
                    "remote": name,
                    "peer": str(remote.config.get("store", {}).get("id", "")),
                },
            )

    # 3. this store's recall index follows what arrived
    moved = [c for c in report.local_changes if c.ref.startswith(("sessions/", "overlay/"))]
    if moved and refresh_index:
        refresh_after_pull(local, report, any(c.ref.startswith("overlay/") for c in moved))
    return report


def _tracking(
    local: Store, name: str, plan: _Plan, report: SyncReport, made_local: set[str], pull: bool
) -> list[RefChange]:
    """The moves of the remote-tracking refs ``remotes/<name>/<ref>`` of the refs
    this sync found different: each to what the remote holds after it, where
    this store has that object (a push whose value lost to the remote's own
    leaves its tracking ref as it was). Refs both sides already agreed on are
    left alone, so a sync with nothing new records nothing."""
    prefix = f"{TRACKING}{name}/"
    after = {n: plan.remote.get(n) for n in plan.differ}
    for c in report.remote_changes:
        after[c.ref] = c.new
    local_values = set(plan.local.values())
    out = []
    for ref, value in sorted(after.items()):
        if value is None:
            continue  # sync never deletes a ref: the remote lacks it and keeps lacking it
        old = local.refs.read(prefix + ref)
        if old == value:
            continue
        if value in made_local or value in local_values or pull:
            pass  # here, or received (a pull brings every remote value)
        elif not local.objects.has(value):
            continue
        out.append(RefChange(prefix + ref, old, value))
    return out


def preview_fresh(local: Store, remote: Remote) -> SyncReport:
    """A dry run of the first push to a path with no store yet: everything the
    synced refs reach would be sent, and every synced ref created."""
    from histstore.store.objectstore import MemoryObjectStore

    path = remote.path
    if path.exists() and not path.is_dir():
        raise BadInput(f"remote {remote.name}: {path} is a file, not a store folder")
    overlap = _overlap(path, local)
    if overlap:
        raise BadInput(
            f"remote {remote.name}: {path} {overlap}",
            hint="a remote is another store folder, outside this one",
        )
    check_empty_folder(remote)
    report = SyncReport(remote.name, str(path), "push", dry_run=True, initialized=True)
    refs = synced_refs(local)

    def count(oid: str, kind: str, payload: bytes) -> None:
        report.sent.objects += 1
        report.sent.bytes += len(payload)

    walk_missing(local.objects, _Presence(MemoryObjectStore()), sorted(set(refs.values())), count)
    report.remote_changes = [RefChange(n, None, v) for n, v in refs.items()]
    return report


def refresh_after_pull(local: Store, report: SyncReport, markers_moved: bool) -> None:
    """A generation swap when markers arrived (newly forgotten turns leave recall
    at once), else a catch-up. The sync stands whatever happens here: a failure
    is reported, and `hs recall` or the next write catches up."""
    import sqlite3

    from histstore.recall.index import RecallIndex

    index = RecallIndex(local)
    try:
        if markers_moved:
            index.swap()
            report.index = "swap"
        else:
            index.catch_up()
            report.index = "catch-up"
    except (HistError, sqlite3.Error, OSError) as e:
        report.index_error = str(e)


def connect(local: Store, name: str, *, init: bool = False) -> tuple[Remote, Store, bool]:
    """The remote ``name`` of ``local``, opened (or created with ``init``)."""
    remote = get_remote(local, name)
    other, created = open_remote(local, remote, init=init)
    return remote, other, created
