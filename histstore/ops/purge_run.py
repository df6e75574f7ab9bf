"""Completing a purge (histstore.ops.purge): from its commit point to its end.

:func:`run_pending` takes ``purge-pending`` (the entries and what else must
change) and does the rest, in an order any step of which a crash may stop and
the next run repeats (each finds what is done done): the entries into the
record; the refs log rewritten where it held the text; every ref moved off
what was purged, in one operation (:func:`head_changes`: the same revisions
on every store that applies the same purge to the same state); the purged
objects out of the packs (gc's swap) and the loose files; the local files
(source table, summary, memory bases, leftovers of dead writers); the recall
index rebuilt (:func:`forget_in_index`, the one place a purge touches it);
the memory folders brought along; ``purge-pending`` removed. Whoever takes
the store lock next completes an interrupted one (the hook below).
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from histstore.errors import CorruptObject, HistError, NotFound
from histstore.memory import rules as memrules
from histstore.memory.follow import follow_memory
from histstore.memory.scopes import drop_index_lines, parse_target
from histstore.ops import gc as gcmod
from histstore.ops.purge_files import clean_capture, clean_local, rewrite_log
from histstore.recall.index import RecallIndex
from histstore.store import packs
from histstore.store import purged as purging
from histstore.store.check import reindex
from histstore.store.clock import now_rfc3339
from histstore.store.codec import canonical_json
from histstore.store.fsutil import fsync_dir
from histstore.store.kinds import (
    TURN_SEPARATOR,
    MemRev,
    SessionRev,
    TurnEntry,
    ordered,
    parse,
)
from histstore.store.objectstore import DiskObjectStore
from histstore.store.oplog import Operation, RefChange
from histstore.store.purged import PurgeEntry
from histstore.store.store import Store
from histstore.store.views import write_views

#: a purge's operation in the refs log: ``{"kind": "purge", "purge": <entry id>}``
KIND = "purge"

Step = Callable[[str], None]


@dataclass
class Plan:
    """What a purge removes (ids only, for the preview) and what it writes."""

    what: str
    target: str | None
    drop: set[str]
    #: old id -> the id that replaces it (a rewrite); a ref on an old id moves
    replaced: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)  # dropped objects by kind
    sessions: list[str] = field(default_factory=list)
    turns: list[str] = field(default_factory=list)  # SESSION~TURN
    notes: list[str] = field(default_factory=list)
    #: refs-log edits: op id -> {"command": ..., "extra": ...} (placeholder text)
    log: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: torn refs-log lines: blake3 of the line -> the line rewritten
    torn: dict[str, str] = field(default_factory=dict)
    #: local source-table files to forget: blake3 of each path
    files: list[str] = field(default_factory=list)
    #: local source-table files whose resume state (the file's title, its
    #: directory, … as an import left them) is rewritten: blake3 of the path
    #: -> the new state
    states: dict[str, str] = field(default_factory=dict)
    #: capture records (``local/capture/``) to rewrite or remove: path below
    #: it -> [blake3 of the bytes planned from, the new text or None]
    capture: dict[str, list[str | None]] = field(default_factory=dict)
    #: redaction findings by secret kind (hs redact)
    findings: dict[str, int] = field(default_factory=dict)
    refs: int = 0  # refs that move or go
    time: str = field(default_factory=now_rfc3339)

    def entry(self) -> PurgeEntry:
        turns = (
            [t.partition(TURN_SEPARATOR)[2] for t in self.turns] if self.what == "session" else []
        )
        return PurgeEntry.make(self.time, self.what, self.target, self.drop, self.replaced, turns)

    @property
    def empty(self) -> bool:
        return not (self.drop or self.replaced or self.log or self.torn or self.capture)

    def as_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "target": self.target,
            "objects": len(self.drop),
            "by_kind": dict(sorted(self.kinds.items())),
            "sessions": self.sessions,
            "turns": self.turns,
            "notes": self.notes,
            "replaced": len(self.replaced),
            "refs": self.refs,
            "log_entries": len(self.log) + len(self.torn),
            "source_files": len(self.files) + len(self.states),
            "capture_records": len(self.capture),
            "findings": dict(sorted(self.findings.items())),
        }


@dataclass
class Report:
    """What a purge removed and rewrote, and what followed it."""

    plan: Plan
    entry: PurgeEntry | None = None
    operation: Operation | None = None
    removed: int = 0
    packs_rewritten: int = 0
    index: str | None = None
    index_error: str | None = None
    memory_dirs: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            **self.plan.as_json(),
            "purge": self.entry.id if self.entry else None,
            "operation": self.operation.op if self.operation else None,
            "removed": self.removed,
            "packs_rewritten": self.packs_rewritten,
            "index": self.index,
            "index_error": self.index_error,
            "memory_dirs": self.memory_dirs,
        }


def inner_ref(name: str) -> str:
    """A ref's name without ``remotes/<remote>/`` (what a tracking ref mirrors)."""
    parts = name.split("/")
    return "/".join(parts[2:]) if parts[0] == "remotes" and len(parts) > 2 else name


# ------------------------------------------------------------------ heads


@dataclass
class _Rules:
    """What every ref is moved off: the purged ids, their replacements, and
    the targets whose every trace goes."""

    purged: frozenset[str]
    replaced: dict[str, str]
    sessions: set[str]
    turns: set[tuple[str, str]]
    notes: dict[str, set[str]]  # scope -> note file names (lower case)
    notes_any: set[str]  # memory targets
    time: str

    @classmethod
    def of(cls, store: Store, entries: list[PurgeEntry]) -> _Rules:
        purged = store.purged_ids() | {o for e in entries for o in e.objects}
        r = cls(purged, {}, set(), set(), {}, set(), max(e.time for e in entries))
        for e in entries:
            r.replaced.update(e.replaced)
            if e.what == "session" and e.target:
                r.sessions.add(e.target)
            elif e.what == "turn" and e.target and TURN_SEPARATOR in e.target:
                sid, _, tid = e.target.partition(TURN_SEPARATOR)
                r.turns.add((sid, tid))
            elif e.what == "memory" and e.target:
                parsed = parse_target(e.target)
                if parsed:
                    r.notes.setdefault(parsed[0], set()).add(parsed[1].lower())
                    r.notes_any.add(e.target)
        return r


Put = Callable[[str, bytes], str]


def head_changes(
    store: Store, entries: list[PurgeEntry], put: Put | None = None
) -> list[RefChange]:
    """The ref moves that take every ref off what ``entries`` purged (lock
    held): a value replaced moves to its replacement; a session or memory
    revision that names a purged object gets a new revision without it (the
    same object on every store that applies the same purge to the same
    revision); a ref of a purged target, or holding a purged object, goes."""
    rules = _Rules.of(store, entries)
    write = put or store.objects.put
    out = []
    for name, value in store.refs.list_refs().items():
        new = _moved(store, name, value, rules, write)
        if new != value:
            out.append(RefChange(name, value, new))
    return out


def _moved(store: Store, name: str, value: str, r: _Rules, put: Put) -> str | None:
    inner = inner_ref(name)
    ns, _, rest = inner.partition("/")
    if ns == "sessions" and rest in r.sessions:
        return None
    if value in r.replaced and store.objects.has(r.replaced[value]):
        return r.replaced[value]
    if value in r.purged:
        return None
    if name != inner:
        return value  # a tracking ref records what the remote held: left as it was
    try:
        if ns == "sessions":
            return _session_head(store, rest, value, r, put)
        if ns == "memory":
            return _memory_head(store, rest, value, r, put)
        if ns == "overlay":
            m = store.load_marker(value)
            if m.target_kind in ("session", "turn") and m.session in r.sessions:
                return None
            if m.target_kind == "turn" and (m.session, m.target) in r.turns:
                return None
            if m.target_kind == "memory" and m.target in r.notes_any:
                return None
    except (NotFound, CorruptObject):
        return value  # damage is fsck's to report; the purge leaves it
    return value


def _session_head(store: Store, sid: str, value: str, r: _Rules, put: Put) -> str | None:
    s = store.load_session(value)
    chain_purged = False
    at: str | None = value
    while at is not None:  # the revisions reading it takes: none may be purged
        if at in r.purged:
            chain_purged = True
            break
        rev = store.load_revision(at)
        at = None if rev.full else rev.parents[0]
    turns: list[TurnEntry] = []
    changed = chain_purged
    for t in s.turns:
        if (sid, t.turn_id) in r.turns:
            changed = True
        elif t.object in r.replaced and store.objects.has(r.replaced[t.object]):
            turns.append(
                TurnEntry(t.turn_id, r.replaced[t.object], t.asked_at, t.subagent, t.project)
            )
            changed = True
        elif t.object in r.purged:
            changed = True
        else:
            turns.append(t)
    if not changed:
        return value
    if not turns:
        return None  # a session with no turn has no ref
    rev = SessionRev(
        sid, s.project, s.agent, s.title, ordered(turns), [value], full=True, count=len(turns)
    )
    return put("session", rev.payload())


def _memory_head(store: Store, scope: str, value: str, r: _Rules, put: Put) -> str | None:
    rev: MemRev = parse(value, *store.objects.get(value))
    tree_id = r.replaced.get(rev.tree, rev.tree)
    files = dict(parse(tree_id, *store.objects.get(tree_id)).files)
    gone = r.notes.get(scope, set())
    out: dict[str, str] = {}
    for name, blob in files.items():
        if name.lower() in gone:
            continue
        if gone and memrules.is_index_name(name) and blob not in r.replaced:
            try:
                data = store.get_blob(blob)
            except NotFound:
                continue
            out[name] = put("blob", drop_index_lines(data, lambda f: f.lower() in gone))
        elif blob in r.replaced and store.objects.has(r.replaced[blob]):
            out[name] = r.replaced[blob]
        elif blob not in r.purged:
            out[name] = blob
    if out == files and tree_id == rev.tree:
        return value
    tree = put("memtree", canonical_json({"files": out}))
    body = MemRev(rev.scope, rev.project, tree, [value], r.time, "purge", "purge")
    return put("memrev", body.payload())


# ------------------------------------------------------------------ running


def say_step(step: Step | None, name: str) -> None:
    if step is not None:
        step(name)


def commit(
    store: Store, plan: Plan, command: str, received: Iterable[PurgeEntry] = ()
) -> dict[str, Any]:
    """The commit point (lock held, every new object durable): ``purge-pending``."""
    entries = list(received)
    if not plan.empty:
        entries.append(plan.entry())
    pending = {
        "entries": [e.as_json() for e in entries],
        "command": command,
        "log": plan.log,
        "torn": plan.torn,
        "files": sorted(plan.files),
        "states": plan.states,
        "capture": plan.capture,
    }
    purging.write_pending(store.root, pending)
    return pending


def run_pending(store: Store, pending: dict[str, Any], step: Step | None = None) -> Report:
    """Complete a purge past its commit point (lock held; the same again after
    a crash: every step finds what is done done)."""
    entries = [PurgeEntry.from_json(e) for e in pending["entries"]]
    report = Report(Plan("", None, set()))
    report.entry = entries[-1] if entries else None
    was, store.purging = store.purging, True
    try:
        say_step(step, "record")
        store.purges.add(entries)
        if pending.get("log") or pending.get("torn"):
            say_step(step, "log")
            rewrite_log(store, pending.get("log") or {}, pending.get("torn") or {})
        say_step(step, "refs")
        changes = head_changes(store, entries) if entries else []
        extra = {"kind": KIND, "purge": report.entry.id if report.entry else ""}
        command = str(pending.get("command") or "hs purge")
        report.operation = store.apply(changes, command, extra=extra)
        write_views(store)
        say_step(step, "objects")
        _orphans(store)
        drop = store.purged_still_stored()
        report.removed, report.packs_rewritten = gcmod.remove_objects(store, drop, step)
        say_step(step, "local")
        files, states = set(pending.get("files") or []), pending.get("states") or {}
        clean_local(store, drop, entries, files, states)
        clean_capture(store, pending.get("capture") or {})
        say_step(step, "index")
        report.index = forget_in_index(store)
        say_step(step, "memory")
        rewritten = frozenset(v for e in entries for v in e.replaced.values())
        report.memory_dirs = follow_memory(store, changes, late=False, rewritten=rewritten)
        say_step(step, "done")
        purging.clear_pending(store.root)
    finally:
        store.purging = was
    return report


def _orphans(store: Store) -> None:
    """A pack left without its index (a swap killed between the two unlinks
    that remove it) that holds a purged object: removed when everything
    else in it is stored elsewhere (it was going), else indexed again from
    its frames (``hs fsck --repair``'s way) so that its purged objects go
    with the rest."""
    objects = store.objects
    if not isinstance(objects, DiskObjectStore) or not objects.pack_dir.is_dir():
        return
    purged = store.purged_ids()
    for pack in sorted(objects.pack_dir.glob("pack-*.pack")):
        if pack.with_suffix(".idx").exists():
            continue
        try:
            ids = [raw.hex() for raw, _, _ in packs.walk(pack).records]
        except (OSError, CorruptObject):
            continue
        if not any(i in purged for i in ids):
            continue
        if all(i in purged or objects.has(i) for i in ids):
            pack.unlink()
            fsync_dir(pack.parent)
        else:
            reindex(objects, pack)


def complete_pending(store: Store, step: Step | None = None) -> Report | None:
    """Complete an interrupted purge, if there is one (takes the lock)."""
    if not (store.root / purging.PENDING).exists():
        return None
    was, store.purging = store.purging, True
    try:
        with store.lock():
            pending = purging.read_pending(store.root)
            if pending is None:
                return None
            return run_pending(store, pending, step)
    finally:
        store.purging = was


def _hook(store: Store) -> None:
    pending = purging.read_pending(store.root)
    if pending is not None:
        run_pending(store, pending)


purging.complete_hook = _hook


# ------------------------------------------------------------------ the recall index


def forget_in_index(store: Store) -> str | None:
    """The recall index forgets what was purged, through its public API only:
    a whole new generation built from the refs as they are now, then every
    other generation removed and the new one compacted (``RecallIndex.compact``).
    The one place a purge touches the index: point it at another engine's
    rebuild-and-drop-the-rest when one replaces this. Returns the generation
    that serves, None when there is no index."""
    index = RecallIndex(store)
    if not index.dir.exists():
        return None
    try:
        index.build()
        status = index.compact()
    except (HistError, sqlite3.Error, OSError, ValueError):
        # it could not be rebuilt: it is derived data, and the text must go
        index.close()
        shutil.rmtree(index.dir, ignore_errors=True)
        return None
    finally:
        index.close()
    return status.generation
