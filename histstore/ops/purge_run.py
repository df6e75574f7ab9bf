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

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3
import filelock

from histstore.errors import CorruptObject, HistError, NotFound
from histstore.history.sources import NAME as SOURCES_NAME
from histstore.history.summary import NAME as SUMMARY_NAME
from histstore.memory import rules as memrules
from histstore.memory.folders import BASE_DIR, follow
from histstore.memory.revisions import load_revision
from histstore.memory.scopes import PREFIX as MEMORY_PREFIX
from histstore.memory.scopes import Scope, drop_index_lines, parse_target
from histstore.ops import gc as gcmod
from histstore.recall.index import RecallIndex
from histstore.store import packs, upgrading
from histstore.store import purged as purging
from histstore.store.check import reindex
from histstore.store.clock import now_rfc3339
from histstore.store.codec import canonical_json
from histstore.store.fsutil import atomic_write, fsync_dir
from histstore.store.kinds import (
    TURN_SEPARATOR,
    MemRev,
    SessionRev,
    TurnEntry,
    ordered,
    parse,
)
from histstore.store.objectstore import DiskObjectStore
from histstore.store.oplog import Operation, RefChange, read_log
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
        return not self.drop and not self.replaced and not self.log and not self.torn

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
            "source_files": len(self.files),
            "findings": dict(sorted(self.findings.items())),
        }


@dataclass
class Report:
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
        drop = _present_purged(store)
        report.removed, report.packs_rewritten = gcmod.remove_objects(store, drop, step)
        say_step(step, "local")
        clean_local(store, drop, entries, set(pending.get("files") or []))
        say_step(step, "index")
        report.index = forget_in_index(store)
        say_step(step, "memory")
        report.memory_dirs = _follow_memory(store, changes)
        say_step(step, "done")
        purging.clear_pending(store.root)
    finally:
        store.purging = was
    return report


def _present_purged(store: Store) -> set[str]:
    """Every purged object the store still holds: this purge's, and any
    written again since an earlier one (an import that raced it)."""
    out = set()
    for i in store.purged_ids():
        with contextlib.suppress(ValueError):
            if store.objects.has(i):
                out.add(i)
    return out


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


def _follow_memory(store: Store, changes: list[RefChange]) -> list[str]:
    out = []
    for c in changes:
        if not c.ref.startswith(MEMORY_PREFIX) or c.new is None:
            continue
        scope_id = c.ref[len(MEMORY_PREFIX) :]
        try:
            scope = Scope(scope_id, load_revision(store, c.new).project)
            said = follow(store, scope, c.old, c.new)
        except HistError as e:
            said = f"{scope_id} memory directory not updated: {e.message}"
        if said:
            out.append(said)
    return out


# ------------------------------------------------------------------ the refs log


def rewrite_log(store: Store, edits: dict[str, dict[str, Any]], torn: dict[str, str]) -> int:
    """The refs log with the entries ``edits`` names rewritten (their command
    and ``extra``), each later entry's ``parent`` (and an undo's ``undoes``)
    following the ids that changed, written whole through the one write path;
    then ``refs.applied`` and the format-1 op map follow. Idempotent: once
    done, no entry has an id ``edits`` names. Returns entries rewritten."""
    lines = store.root.joinpath("refs.log").read_bytes().split(b"\n") if edits or torn else []
    if not lines:
        return 0
    ops = list(read_log(store.refs.log_path))
    if not any(ln.op is not None and ln.op.op in edits for ln in ops) and not any(
        line_key(raw) in torn for raw in lines
    ):
        return 0
    out: list[bytes] = []
    ids: dict[str, str] = {}
    changed = 0
    by_line = {ln.lineno: ln for ln in ops}
    for n, raw in enumerate(lines, 1):
        if not raw:
            out.append(raw)
            continue
        ln = by_line.get(n)
        if ln is None or ln.op is None:
            key = line_key(raw)
            out.append(torn[key].encode("utf-8") if key in torn else raw)
            continue
        op = ln.op
        new = Operation(op.op, op.time, op.command, op.changes, op.parent, dict(op.extra))
        if op.op in edits:
            e = edits[op.op]
            new.command = str(e.get("command", op.command))
            if "extra" in e:
                new.extra = dict(e["extra"] or {})
            changed += 1
        new.parent = ids.get(op.parent, op.parent) if op.parent else None
        for key in ("undoes",):
            if isinstance(new.extra.get(key), str):
                new.extra[key] = ids.get(new.extra[key], new.extra[key])
        new.op = new.derive_id()
        ids[op.op] = new.op
        out.append(canonical_json(new.as_json()))
    fmap = store.root / upgrading.MAP_DIR / upgrading.OPS
    if fmap.exists():
        rows = [ln.split(" ", 1) for ln in fmap.read_text("ascii").splitlines() if " " in ln]
        text = "".join(f"{o} {ids.get(n, n)}\n" for o, n in rows)
        atomic_write(fmap, text.encode("ascii"))
    atomic_write(store.refs.log_path, b"\n".join(out))
    applied = store.refs.applied()
    if applied and applied in ids:
        atomic_write(store.refs.applied_path, (ids[applied] + "\n").encode("ascii"))
    return changed


def line_key(raw: bytes) -> str:
    return str(blake3.blake3(raw).hexdigest())[:32]


# ------------------------------------------------------------------ local files


def clean_local(store: Store, drop: set[str], entries: list[PurgeEntry], files: set[str]) -> None:
    """The local files forget what went: the source table's rows of purged
    turns (a replaced one follows its replacement) and of the files named
    (by hash), then VACUUM and a truncated WAL; the summary is removed (it is
    rebuilt from the refs); a memory folder's base on a purged revision
    follows its replacement or goes; leftovers of writers that died
    (temporary files, unfinished packs) and what ``hs upgrade`` replaced go."""
    replaced: dict[str, str] = {}
    for e in entries:
        replaced.update(e.replaced)
    purged = store.purged_ids()
    _clean_sources(store, purged, replaced, files)
    _remove_summary(store)
    base = store.root / BASE_DIR
    if base.is_dir():
        for f in sorted(base.iterdir()):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                words = f.read_text("utf-8").split()
                if words and words[0] in replaced:
                    words[0] = replaced[words[0]]
                    atomic_write(f, (" ".join(words) + "\n").encode("utf-8"))
                elif words and words[0] in purged:
                    f.unlink()
    _remove_leftovers(store)
    if (store.root / upgrading.UPGRADE_DIR).exists() and not upgrading.committed(store.root):
        upgrading.remove_leftovers(store.root)


def _clean_sources(
    store: Store, purged: frozenset[str], replaced: dict[str, str], files: set[str]
) -> None:
    path = store.root / "local" / SOURCES_NAME
    if not path.exists():
        return
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.create_function("hs_key", 1, lambda p: path_key(str(p)), deterministic=True)
        conn.execute("BEGIN IMMEDIATE")
        for old, new in replaced.items():
            conn.execute("UPDATE OR REPLACE turns SET object = ? WHERE object = ?", (new, old))
        rows = [r[0] for r in conn.execute("SELECT DISTINCT object FROM turns")]
        for obj in rows:
            if obj in purged:
                conn.execute("DELETE FROM turns WHERE object = ?", (obj,))
        if files:
            for table in ("turns", "files"):
                for (p,) in conn.execute(f"SELECT DISTINCT path FROM {table}").fetchall():
                    if path_key(str(p)) in files:
                        conn.execute(f"DELETE FROM {table} WHERE path = ?", (p,))
        conn.execute("COMMIT")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def path_key(path: str) -> str:
    return str(blake3.blake3(path.encode("utf-8", "surrogateescape")).hexdigest())[:32]


def _remove_summary(store: Store) -> None:
    local = store.root / "local"
    if not (local / SUMMARY_NAME).exists():
        return
    lock = filelock.FileLock(str(local / "summary.lock"))
    with lock.acquire(timeout=store.lock_timeout):
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                (local / (SUMMARY_NAME + suffix)).unlink()
    fsync_dir(local)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: no process id is this large (Linux's pid_max is at most 2**22)
PID_MAX = 1 << 22


def _remove_leftovers(store: Store) -> None:
    """Temporary files of writers that died (``.<name>.<pid>.tmp``, an
    unfinished ``tmp-<pid>-….pack``): they may hold what was purged."""
    for dirpath, _, names in os.walk(store.root):
        for name in names:
            pid = None
            if name.startswith(".") and name.endswith(".tmp"):
                # ``.<name>.<pid>.tmp`` (the owner record's: ``.<pid>.<thread>.tmp``)
                words = [w for w in name[:-4].split(".") if w.isdigit() and int(w) < PID_MAX]
                pid = int(words[-1]) if words else None
            elif name.startswith("tmp-") and name.endswith(".pack"):
                word = name.split("-")[1]
                pid = int(word) if word.isdigit() and int(word) < PID_MAX else None
            if pid is not None and pid != os.getpid() and not _pid_alive(pid):
                with contextlib.suppress(FileNotFoundError):
                    Path(dirpath, name).unlink()


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
    except (HistError, sqlite3.Error, OSError):
        # it could not be rebuilt: it is derived data, and the text must go
        index.close()
        shutil.rmtree(index.dir, ignore_errors=True)
        return None
    finally:
        index.close()
    return status.generation
