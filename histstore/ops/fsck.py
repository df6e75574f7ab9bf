"""Checking a store: every object re-hashed, every ref and refs-log entry checked.

One check, two faces: ``hs fsck`` prints findings for people, ``hs plumbing
fsck`` the same findings as JSON lines. A finding is an *error* (the store is
damaged) or a *warning* (tolerated: a torn last log line after a crash, an
operation logged but not yet applied, a leftover temporary file).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, CorruptObject, CorruptStore, HistError
from histstore.history.turn import REQUIRED as TURN_FIELDS
from histstore.overlay.markers import Marker, Overlay, load_marker, view_lines, write_views
from histstore.store.codec import decode_json, is_object_id
from histstore.store.objectstore import DiskObjectStore
from histstore.store.refs import KIND_OF_NAMESPACE, check_ref_name
from histstore.store.store import SESSION_PREFIX, SessionRev, Store


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    check: str
    message: str
    subject: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "check": self.check,
            "subject": self.subject,
            "message": self.message,
        }


def _blob_refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if isinstance(value.get("blob"), str) and set(value) <= {"blob", "size", "lines"}:
            yield value["blob"]
        else:
            for v in value.values():
                yield from _blob_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from _blob_refs(v)


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except FileNotFoundError:
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fsck(store: Store, *, repair: bool = False) -> list[Finding]:
    out: list[Finding] = []
    objects = store.objects
    kinds: dict[str, str] = {}

    # 1. objects: pack indexes, then every object re-hashed
    if isinstance(objects, DiskObjectStore):
        packs = objects.packs()
        for name, reason in sorted(objects.bad_packs.items()):
            out.append(Finding("error", "pack", reason, name))
        for pack in packs:
            if not pack.verify_index():
                out.append(
                    Finding("error", "pack", "pack index checksum mismatch", pack.idx_path.name)
                )
        for orphan in sorted(objects.pack_dir.glob("pack-*.pack")):
            if not orphan.with_suffix(".idx").exists() and _older_than(orphan, 3600):
                # (a younger one may be an import between its pack and its index)
                # a crash after the pack was renamed, before its index was written:
                # nothing points at its objects (the import never committed)
                if repair:
                    with contextlib.suppress(FileNotFoundError):
                        orphan.unlink()
                    out.append(
                        Finding("warning", "pack", "removed a pack with no index", orphan.name)
                    )
                else:
                    out.append(
                        Finding(
                            "warning",
                            "pack",
                            "a pack with no index (a stopped import)",
                            orphan.name,
                        )
                    )
        for tmp in sorted(objects.pack_dir.glob("tmp-*.pack")):
            pid = int(tmp.name.split("-")[1]) if tmp.name.split("-")[1].isdigit() else 0
            if pid and _pid_alive(pid):
                continue
            if repair:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                out.append(Finding("warning", "pack", "removed an unfinished pack", tmp.name))
            else:
                out.append(
                    Finding("warning", "pack", "unfinished pack left by a stopped import", tmp.name)
                )
    # Only each object's kind and the ids it refers to are kept, not its payload.
    wanted: list[tuple[str, str, str]] = []  # (object, id it refers to, kind it must be)
    for object_id in objects.iter_ids():
        try:
            kind, payload = objects.get(object_id)
        except CorruptObject as e:
            out.append(Finding("error", "object", e.reason, object_id))
            continue
        kinds[object_id] = kind
        if kind == "blob":
            continue
        try:
            obj = decode_json(object_id, payload)
        except CorruptObject as e:
            out.append(Finding("error", "object", e.reason, object_id))
            continue
        if kind == "session":
            try:
                rev = SessionRev.from_json(obj)
            except ValueError as e:
                out.append(Finding("error", "object", str(e), object_id))
                continue
            wanted += [(object_id, t.object, "turn") for t in rev.turns]
            wanted += [(object_id, p, "session") for p in rev.parents]
        elif kind == "marker":
            try:
                Marker.from_json(obj)
            except ValueError as e:
                out.append(Finding("error", "object", str(e), object_id))
                continue
            # a merge marker (sync) joins heads that must all be here
            merged = obj.get("merged", [])
            if not isinstance(merged, list) or not all(isinstance(m, str) for m in merged):
                out.append(Finding("error", "object", "merged is not a list of ids", object_id))
            else:
                wanted += [(object_id, m, "marker") for m in merged]
        elif kind == "memtree":
            files = obj.get("files") if isinstance(obj, dict) else None
            if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
                out.append(Finding("error", "object", "not a memory tree", object_id))
                continue
            wanted += [(object_id, b, "blob") for b in files.values()]
        elif kind == "memrev":
            try:
                wanted.append((object_id, obj["tree"], "memtree"))
                wanted += [(object_id, p, "memrev") for p in obj["parents"]]
                if not isinstance(obj["scope"], str) or not isinstance(obj["time"], str):
                    raise TypeError
            except (KeyError, TypeError):
                out.append(Finding("error", "object", "not a memory revision", object_id))
        elif kind == "turn":
            missing = [f for f in TURN_FIELDS if not isinstance(obj, dict) or f not in obj]
            if missing:
                out.append(
                    Finding("error", "object", f"turn lacks {', '.join(missing)}", object_id)
                )
                continue
            wanted += [(object_id, b, "blob") for b in _blob_refs(obj)]

    # 2. every structured object's references resolve
    for object_id, ref_id, want in wanted:
        have = kinds.get(ref_id)
        what = kinds[object_id]
        if have is None:
            out.append(
                Finding(
                    "error", "reachability", f"{what} refers to missing {want} {ref_id}", object_id
                )
            )
        elif have != want:
            out.append(
                Finding(
                    "error",
                    "reachability",
                    f"{what} refers to {ref_id}, a {have} not a {want}",
                    object_id,
                )
            )

    # 3. refs
    refs = store.refs.list_refs()
    for name, value in refs.items():
        try:
            check_ref_name(name)
        except BadInput as e:
            out.append(Finding("error", "ref", e.message, name))
            continue
        if not is_object_id(value):
            out.append(Finding("error", "ref", "does not hold an object id", name))
            continue
        have = kinds.get(value)
        if have is None:
            out.append(Finding("error", "ref", f"points at missing object {value}", name))
            continue
        ns_kind = KIND_OF_NAMESPACE.get(name.split("/")[0])
        if ns_kind and have != ns_kind:
            out.append(Finding("error", "ref", f"points at a {have}, expected a {ns_kind}", name))
        if name.startswith("overlay/") and have == "marker":
            try:
                if load_marker(store, value).target != name[len("overlay/") :]:
                    out.append(Finding("error", "ref", "points at another target's marker", name))
            except HistError:
                pass  # reported with the object above
        if name.startswith("memory/") and have == "memrev":
            try:
                if store.get_json(value, "memrev").get("scope") != name[len("memory/") :]:
                    out.append(Finding("error", "ref", "points at another scope's revision", name))
            except HistError:
                pass  # reported with the object above
        if name.startswith(SESSION_PREFIX) and have == "session":
            sid = name[len(SESSION_PREFIX) :]
            try:
                if store.load_session(value).session_id != sid:
                    out.append(
                        Finding("error", "ref", "points at another session's revision", name)
                    )
            except HistError:
                pass  # reported with the object above

    # 4. the refs log: every line readable, a chain of operations, replaying it
    #    gives the refs there are
    lines = list(store.refs.read_log())
    state: dict[str, str] = {}
    parent: str | None = None
    last_op = None
    for ln in lines:
        if ln.op is None:
            # A write torn by a crash: the operation never completed (its refs were
            # never moved) and the next append closed the line. Tolerated; real
            # damage to an entry shows as a broken parent chain below.
            msg = f"{ln.error or 'unreadable'}: tolerated, an operation that never completed"
            out.append(Finding("warning", "refs-log", msg, f"line {ln.lineno}"))
            continue
        op = ln.op
        if op.derive_id() != op.op:
            out.append(
                Finding(
                    "error",
                    "refs-log",
                    f"operation {op.op} does not match its content",
                    f"line {ln.lineno}",
                )
            )
        if op.parent != parent:
            out.append(
                Finding(
                    "error",
                    "refs-log",
                    f"operation {op.op} does not follow {parent}",
                    f"line {ln.lineno}",
                )
            )
        for c in op.changes:
            if state.get(c.ref) != c.old:
                out.append(
                    Finding(
                        "error",
                        "refs-log",
                        f"operation {op.op} moves {c.ref} from {c.old}, but it was {state.get(c.ref)}",
                        f"line {ln.lineno}",
                    )
                )
            if c.new is None:
                state.pop(c.ref, None)
            else:
                state[c.ref] = c.new
                if c.new not in kinds:
                    out.append(
                        Finding(
                            "error",
                            "refs-log",
                            f"operation {op.op} points {c.ref} at missing object {c.new}",
                            f"line {ln.lineno}",
                        )
                    )
        parent = op.op
        last_op = op
    pending = last_op is not None and store.refs.applied() != last_op.op
    if pending and last_op is not None:
        if repair:
            try:
                with store.lock():
                    store.refs.recover()
                refs = store.refs.list_refs()
                out.append(
                    Finding(
                        "warning",
                        "refs-log",
                        "completed an operation a crash had interrupted",
                        last_op.op,
                    )
                )
                pending = False
            except (CorruptStore, HistError) as e:
                out.append(
                    Finding("error", "refs-log", f"cannot complete operation: {e}", last_op.op)
                )
        else:
            out.append(
                Finding(
                    "warning",
                    "refs-log",
                    "the last operation is logged but not fully applied; the next write or `hs fsck --repair` completes it",
                    last_op.op,
                )
            )
    pending_refs_changes = last_op.changes if (pending and last_op) else []
    pending_refs = {c.ref for c in pending_refs_changes}
    for name in sorted(set(state) | set(refs)):
        if name in pending_refs:
            continue
        if state.get(name) != refs.get(name):
            out.append(
                Finding(
                    "error",
                    "refs-log",
                    f"ref is {refs.get(name)} but the refs log says {state.get(name)}",
                    name,
                )
            )
    # the overlay views are derived from the overlay refs
    if not any(f.severity == "error" for f in out):
        # an interrupted operation that moves overlay refs rewrites the views when
        # it is rolled forward: until then they may lag, and that is no damage
        lagging = pending and any(c.ref.startswith("overlay/") for c in pending_refs_changes)
        out += _check_views(store, repair=repair, pending=lagging)
    # the index is derived from the refs: compare it with them only when they are sound
    out += _check_index(store, compare=not any(f.severity == "error" for f in out))
    return out


def _check_views(store: Store, *, repair: bool, pending: bool = False) -> list[Finding]:
    """overlay/tombstones.jsonl and overlay/exclusions.jsonl match the overlay refs."""
    overlay = Overlay.read(store)
    want = dict(zip(("tombstones.jsonl", "exclusions.jsonl"), view_lines(overlay), strict=True))
    out = []
    for name, data in want.items():
        path = store.root / "overlay" / name
        try:
            have: bytes | None = path.read_bytes()
        except FileNotFoundError:
            have = None if data else b""
        if have == data or (have is None and not data):
            continue
        if repair:
            with store.lock():
                write_views(store)
            out.append(Finding("warning", "overlay", "rewrote it from the overlay refs", name))
        elif pending:
            out.append(
                Finding(
                    "warning",
                    "overlay",
                    "behind the overlay refs of an interrupted operation; "
                    "completing it rewrites the views",
                    name,
                )
            )
        else:
            out.append(
                Finding("error", "overlay", "does not match the overlay refs (fsck --repair)", name)
            )
    return out


def _check_index(store: Store, *, compare: bool) -> list[Finding]:
    """The current generation of the recall index: readable, whole, and holding
    one row per turn when it is up to date (an index is derived data: any
    problem is mended by `hs plumbing index-build`)."""
    import sqlite3

    from histstore.recall.index import SCHEMA_VERSION, RecallIndex

    index = RecallIndex(store)
    try:
        path = index.current_path()
        if path is None:
            if compare and store.session_refs():
                return [Finding("warning", "index", "no recall index yet; hs recall builds it")]
            return []
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            bad = [r[0] for r in conn.execute("PRAGMA quick_check") if r[0] != "ok"]
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            rows = conn.execute("SELECT count(*) FROM turn").fetchone()[0]
        finally:
            conn.close()
    except (HistError, sqlite3.Error) as e:
        return [Finding("error", "index", f"{e}; rebuild it with `hs plumbing index-build`")]
    out = [Finding("error", "index", f"damaged: {b}", path.name) for b in bad[:5]]
    if meta.get("schema") != SCHEMA_VERSION:
        out.append(Finding("error", "index", f"unknown schema {meta.get('schema')!r}", path.name))
    last = store.refs.last_operation()
    applied = meta.get("applied_op") or None
    if applied is not None and store.refs.operations_after(applied) is None:
        out.append(
            Finding(
                "error", "index", f"built from operation {applied}, not in the refs log", path.name
            )
        )
    elif meta.get("applied_op") != (last.op if last else ""):
        out.append(
            Finding(
                "warning",
                "index",
                "behind the refs log; the next write or hs recall catches it up",
                path.name,
            )
        )
    elif compare and (last is None or store.refs.applied() == last.op):
        # (an operation logged but not yet applied is reported above; the index
        # already holds it)
        overlay = Overlay.read(store)
        turns = sum(
            1
            for s in store.sessions()
            for t in s.turns
            if not overlay.hides(s.session_id, t.turn_id)  # forgotten: never indexed
        )
        if rows != turns:
            out.append(
                Finding("error", "index", f"holds {rows} turns, the store {turns}", path.name)
            )
    return out
