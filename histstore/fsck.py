"""Checking a store: every object re-hashed, every ref and refs-log entry checked.

One check, two faces: ``hs fsck`` prints findings for people, ``hs plumbing
fsck`` the same findings as JSON lines. A finding is an *error* (the store is
damaged) or a *warning* (tolerated: a torn last log line after a crash, an
operation logged but not yet applied, a leftover temporary file).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .errors import BadInput, CorruptObject, CorruptStore, HistError
from .objects import decode_json, is_object_id
from .objectstore import DiskObjectStore
from .refs import KIND_OF_NAMESPACE, check_ref_name
from .store import SESSION_PREFIX, Store


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
        for pack in objects.packs():
            if not pack.verify_index():
                out.append(
                    Finding("error", "pack", "pack index checksum mismatch", pack.idx_path.name)
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
    payloads: dict[str, Any] = {}
    for object_id in objects.iter_ids():
        try:
            kind, payload = objects.get(object_id)
        except CorruptObject as e:
            out.append(Finding("error", "object", e.reason, object_id))
            continue
        kinds[object_id] = kind
        if kind != "blob":
            try:
                payloads[object_id] = decode_json(object_id, payload)
            except CorruptObject as e:
                out.append(Finding("error", "object", e.reason, object_id))

    # 2. every structured object's references resolve
    for object_id, obj in payloads.items():
        kind = kinds[object_id]
        wanted: list[tuple[str, str | None]] = []
        if kind == "session" and isinstance(obj, dict):
            wanted += [(t.get("object", ""), "turn") for t in obj.get("turns", [])]
            if obj.get("parent"):
                wanted.append((obj["parent"], "session"))
        elif kind == "turn":
            wanted += [(b, "blob") for b in _blob_refs(obj)]
        for ref_id, want in wanted:
            have = kinds.get(ref_id)
            if have is None:
                out.append(
                    Finding(
                        "error",
                        "reachability",
                        f"{kind} refers to missing {want} {ref_id}",
                        object_id,
                    )
                )
            elif want is not None and have != want:
                out.append(
                    Finding(
                        "error",
                        "reachability",
                        f"{kind} refers to {ref_id}, a {have} not a {want}",
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
        want = KIND_OF_NAMESPACE.get(name.split("/")[0])
        if want and have != want:
            out.append(Finding("error", "ref", f"points at a {have}, expected a {want}", name))
        if name.startswith(SESSION_PREFIX):
            sid = name[len(SESSION_PREFIX) :]
            obj = payloads.get(value)
            if isinstance(obj, dict) and obj.get("session_id") != sid:
                out.append(Finding("error", "ref", "points at another session's revision", name))

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
    pending_refs = {c.ref for c in last_op.changes} if (pending and last_op) else set()
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
    return out
