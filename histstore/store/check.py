"""The store's own checks: packs, every object re-hashed and parsed, the ids
each names, every ref, and the refs log replayed.

A finding is an *error* (the store is damaged) or a *warning* (tolerated: a
torn log line after a crash, an operation logged but not yet applied, a
leftover temporary file). ``histstore.ops.fsck`` runs these and the checks of
the derived data (overlay views, recall index) as one report.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, CorruptObject, CorruptStore, HistError
from histstore.store import packs, repack, upgrading
from histstore.store import purged as purging
from histstore.store.codec import is_object_id
from histstore.store.fsutil import atomic_write, fsync_dir, pid_alive, unfinished_pack_pid
from histstore.store.kinds import MemRev, Ref, SessionRev, parse
from histstore.store.objectstore import DiskObjectStore
from histstore.store.refs import KIND_OF_NAMESPACE, check_ref_name
from histstore.store.store import SESSION_PREFIX, Store
from histstore.store.views import stale_views, write_views

#: a pack with no index younger than this may be an import between its pack
#: and its index: left alone
ORPHAN_AGE = 3600


@dataclass(frozen=True)
class Finding:
    """One thing fsck found: an error or a warning, and what it is about."""

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


def error(check: str, message: str, subject: str | None = None) -> Finding:
    return Finding("error", check, message, subject)


def warning(check: str, message: str, subject: str | None = None) -> Finding:
    return Finding("warning", check, message, subject)


@dataclass
class Checked:
    """What the object check learned: each object's kind, for the checks after it."""

    kinds: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)


def _older_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime > seconds
    except FileNotFoundError:
        return False


def _held(idx_path: Path) -> str:
    """What a damaged pack's index says the pack held, for the report."""
    try:
        data = idx_path.read_bytes()
        ids = [
            data[at : at + 32].hex()
            for at in range(packs.IDX_HEAD, len(data) - 32 - packs.REC_SIZE + 1, packs.REC_SIZE)
        ]
    except OSError:
        return "what it held is not known (its index is unreadable)"
    if not ids:
        return "what it held is not known"
    shown = ", ".join(i[:12] for i in ids[:5]) + (", ..." if len(ids) > 5 else "")
    return f"it held {len(ids)} object{'s' if len(ids) != 1 else ''} ({shown})"


def reindex(objects: DiskObjectStore, pack_path: Path) -> Finding:
    """Rebuild a pack's index by walking its frames (``hs fsck --repair``): the
    pack is kept whatever its state, and every whole object in it is found
    again. The index is named after its records, so a pack whose walk found
    fewer objects than it was named for is renamed to match first."""
    try:
        walked = packs.walk(pack_path)
    except CorruptObject as e:
        walked = packs.Walked()
        why = e.reason
    else:
        why = "no whole frame"
    if not walked.records:
        # nothing in it can be read, so nothing a ref reaches is lost by it;
        # still it is not this check's to delete
        msg = f"holds no readable object ({why}); left in place, remove it by hand"
        return warning("pack", msg, pack_path.name)
    name, body = packs.index_bytes(walked.records)
    target = pack_path.with_name(f"pack-{name}.pack")
    if target != pack_path:
        os.replace(pack_path, target)
        fsync_dir(target.parent)
    atomic_write(target.with_suffix(".idx"), body)
    stale = pack_path.with_suffix(".idx")
    if target != pack_path:
        stale.unlink(missing_ok=True)
    objects.forget_bad(stale.name)
    objects._scan_packs()
    n = len(walked.records)
    msg = f"rebuilt its index from its frames ({n} object{'s' if n != 1 else ''})"
    if walked.damaged:
        lost = sum(b - a for a, b in walked.damaged)
        msg += f"; {lost} bytes in {len(walked.damaged)} places held no whole object"
    return warning("pack", msg, target.name)


def check_packs(objects: DiskObjectStore, *, repair: bool) -> list[Finding]:
    """Pack indexes readable and whole; packs without one. Repair re-indexes a
    pack from its frames and never deletes one: what a ref reaches may be in it."""
    out: list[Finding] = []
    packs_now = objects.packs()
    for name, reason in sorted(objects.bad_packs.items()):
        pack_path = (objects.pack_dir / name).with_suffix(".pack")
        if repair and pack_path.exists():
            out.append(reindex(objects, pack_path))
        else:
            held = _held(objects.pack_dir / name)
            out.append(error("pack", f"{reason}; {held}", name))
    for pack in packs_now:
        if not pack.verify_index():
            if repair:
                out.append(reindex(objects, pack.pack_path))
            else:
                out.append(error("pack", "pack index checksum mismatch", pack.idx_path.name))
    objects.verify_midx()
    if objects.bad_midx is not None:
        if repair:
            reason, current = objects.bad_midx, objects.packs()
            repack.write_midx(objects, current)
            done = "rewrote" if len(current) > 1 else "removed"  # one pack needs none
            out.append(warning("pack", f"{done} the multi-pack index ({reason})"))
        else:
            out.append(error("pack", objects.bad_midx, packs.MIDX_NAME))
    for orphan in sorted(objects.pack_dir.glob("pack-*.pack")):
        if orphan.with_suffix(".idx").exists():
            continue
        if repair:
            out.append(reindex(objects, orphan))
        elif _older_than(orphan, ORPHAN_AGE):
            # young, it may be an import between its pack and its index
            out.append(
                warning("pack", "a pack with no index: `hs fsck --repair` rebuilds it", orphan.name)
            )
    for tmp in sorted(objects.pack_dir.glob("tmp-*.pack")):
        pid = unfinished_pack_pid(tmp.name)
        if pid is not None and pid_alive(pid):
            continue
        if repair:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            out.append(warning("pack", "removed an unfinished pack", tmp.name))
        else:
            out.append(warning("pack", "unfinished pack left by a stopped import", tmp.name))
    return out


def check_objects(store: Store, *, repair: bool) -> Checked:
    """Every object re-hashed and parsed as its kind, and every id it names
    (``refs()``, the same list sync copies) present and of the right kind.
    Only each object's kind and the ids it names are kept, not its payload."""
    objects = store.objects
    done = Checked()
    if isinstance(objects, DiskObjectStore):
        done.findings += check_packs(objects, repair=repair)
    wanted: list[tuple[str, Ref]] = []
    purged = _purged(store)
    for object_id in objects.iter_ids():
        try:
            kind, payload = objects.get(object_id)
            obj = parse(object_id, kind, payload)
        except CorruptObject as e:
            done.findings.append(error("object", e.reason, object_id))
            continue
        done.kinds[object_id] = kind
        wanted += [(object_id, r) for r in obj.refs()]
    holes: dict[str, int] = {}
    for object_id, ref in wanted:
        have = done.kinds.get(ref.id)
        what = done.kinds[object_id]
        if have is None and ref.id in purged:
            holes[ref.id] = holes.get(ref.id, 0) + 1  # a purge removed it: accepted
        elif have is None:
            msg = f"{what} refers to missing {ref.kind} {ref.id}"
            done.findings.append(error("reachability", msg, object_id))
        elif have != ref.kind:
            msg = f"{what} refers to {ref.id}, a {have} not a {ref.kind}"
            done.findings.append(error("reachability", msg, object_id))
    if holes:
        by_purge: dict[str, int] = {}
        for hole, n in holes.items():
            entry = store.purges.of_object(hole)
            key = f"{entry.id} ({entry.what}, {entry.time})" if entry is not None else "?"
            by_purge[key] = by_purge.get(key, 0) + n
        for key, n in sorted(by_purge.items()):
            msg = f"{n} reference{'s' if n != 1 else ''} to objects purge {key} removed: accepted"
            done.findings.append(warning("purged", msg))
    return done


def _purged(store: Store) -> frozenset[str]:
    """The purged ids; a damaged record is reported by check_purges."""
    try:
        return store.purged_ids()
    except CorruptStore:
        return frozenset()


def check_purges(store: Store) -> list[Finding]:
    """The purge record readable; no purge left half-done; no purged object
    held again (``--repair`` completes and removes: histstore.ops.fsck)."""
    out = []
    try:
        store.purged_ids()  # the record readable
    except CorruptStore as e:
        return [error("purged", e.message, purging.RECORD)]
    try:
        pending = purging.read_pending(store.root)
    except CorruptStore as e:
        return [error("purged", e.message, purging.PENDING)]
    if pending is not None:
        msg = "a purge was interrupted; the next hs command (or `hs fsck --repair`) completes it"
        out.append(warning("purged", msg, purging.PENDING))
        return out
    back = sorted(store.purged_still_stored())
    if back:
        msg = (
            f"{len(back)} purged object{'s' if len(back) != 1 else ''} stored again "
            f"({', '.join(i[:12] for i in back[:5])}); `hs fsck --repair` removes them"
        )
        out.append(warning("purged", msg))
    return out


def _names_its_own(store: Store, name: str, value: str, have: str) -> str | None:
    """What is wrong when a ref points at an object of another ref's (another
    target's marker, another scope's or session's revision), else None."""
    try:
        if name.startswith("overlay/") and have == "marker":
            if not store.load_marker(value).names_ref(name[len("overlay/") :]):
                return "points at another target's marker"
        elif name.startswith("memory/") and have == "memrev":
            rev: MemRev = parse(value, *store.objects.get(value))
            if rev.scope != name[len("memory/") :]:
                return "points at another scope's revision"
        elif name.startswith(SESSION_PREFIX) and have == "session":
            session: SessionRev = parse(value, *store.objects.get(value))
            if session.session_id != name[len(SESSION_PREFIX) :]:
                return "points at another session's revision"
    except HistError:
        pass  # reported with the object
    return None


def check_refs(store: Store, refs: dict[str, str], kinds: dict[str, str]) -> list[Finding]:
    """Every ref: a valid name, an object id, an object of its namespace's kind,
    and its own target's, scope's or session's."""
    out = []
    for name, value in refs.items():
        try:
            check_ref_name(name)
        except BadInput as e:
            out.append(error("ref", e.message, name))
            continue
        if not is_object_id(value):
            out.append(error("ref", "does not hold an object id", name))
            continue
        have = kinds.get(value)
        if have is None:
            gone = "purged" if value in _purged(store) else "missing"
            out.append(error("ref", f"points at {gone} object {value}", name))
            continue
        ns_kind = KIND_OF_NAMESPACE.get(name.split("/")[0])
        if ns_kind and have != ns_kind:
            out.append(error("ref", f"points at a {have}, expected a {ns_kind}", name))
        wrong = _names_its_own(store, name, value, have)
        if wrong:
            out.append(error("ref", wrong, name))
        elif have == "session" and _purged(store):
            shown = _purged_turn(store, value)
            if shown:
                msg = f"shows purged turn object {shown}: its content is gone"
                # an interrupted purge moves the ref when it is completed
                pending = (store.root / purging.PENDING).exists()
                out.append((warning if pending else error)("ref", msg, name))
    return out


def _purged_turn(store: Store, rev_id: str) -> str | None:
    """A purged turn the session at ``rev_id`` lists: a ref must move off it
    (a purge writes a revision without it), else every read of it fails."""
    try:
        return purging.purged_turn(store, rev_id)
    except HistError:
        return None  # its own damage, reported where its objects are checked


@dataclass
class Replayed:
    """The refs log replayed: the refs it says there are, and whether its last
    operation is still to be applied (a crash)."""

    state: dict[str, str] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # refs of an unapplied operation
    pending_overlay: bool = False
    refs: dict[str, str] = field(default_factory=dict)  # the refs after any repair


def replay_log(store: Store, kinds: dict[str, str], *, repair: bool) -> Replayed:
    """Every line readable, a chain of operations each moving refs from where
    the one before left them, to objects there are."""
    done = Replayed()
    state = done.state
    # an entry older than gc's horizon may name what gc removed (it was
    # outside the retention window)
    horizon = store.gc_horizon()
    purged = _purged(store)
    parent: str | None = None
    last_op = None
    for ln in store.refs.read_log():
        where = f"line {ln.lineno}"
        if ln.op is None:
            # A write torn by a crash: the operation never completed (its refs were
            # never moved) and the next append closed the line. Tolerated; real
            # damage to an entry shows as a broken parent chain below.
            msg = f"{ln.error or 'unreadable'}: tolerated, an operation that never completed"
            done.findings.append(warning("refs-log", msg, where))
            continue
        op = ln.op
        if op.derive_id() != op.op:
            done.findings.append(
                error("refs-log", f"operation {op.op} does not match its content", where)
            )
        if op.parent != parent:
            done.findings.append(
                error("refs-log", f"operation {op.op} does not follow {parent}", where)
            )
        for c in op.changes:
            if state.get(c.ref) != c.old:
                msg = f"operation {op.op} moves {c.ref} from {c.old}, but it was {state.get(c.ref)}"
                done.findings.append(error("refs-log", msg, where))
            if c.new is None:
                state.pop(c.ref, None)
                continue
            state[c.ref] = c.new
            if c.new not in kinds and c.new not in purged and not (horizon and op.time < horizon):
                msg = f"operation {op.op} points {c.ref} at missing object {c.new}"
                done.findings.append(error("refs-log", msg, where))
        parent = op.op
        last_op = op
    done.refs = store.refs.list_refs()
    if last_op is None or store.refs.applied() == last_op.op:
        return done
    if repair:
        try:
            with store.lock():
                store.refs.recover()
            done.refs = store.refs.list_refs()
            done.findings.append(
                warning("refs-log", "completed an operation a crash had interrupted", last_op.op)
            )
            return done
        except (CorruptStore, HistError) as e:
            done.findings.append(error("refs-log", f"cannot complete operation: {e}", last_op.op))
    else:
        done.findings.append(
            warning(
                "refs-log",
                "the last operation is logged but not fully applied; the next write or "
                "`hs fsck --repair` completes it",
                last_op.op,
            )
        )
    done.pending = [c.ref for c in last_op.changes]
    done.pending_overlay = any(c.ref.startswith("overlay/") for c in last_op.changes)
    return done


def check_log_matches_refs(replayed: Replayed) -> list[Finding]:
    """The refs there are are the refs the log says (but those of an operation
    still to be applied)."""
    out = []
    state, refs = replayed.state, replayed.refs
    for name in sorted(set(state) | set(refs)):
        if name not in replayed.pending and state.get(name) != refs.get(name):
            msg = f"ref is {refs.get(name)} but the refs log says {state.get(name)}"
            out.append(error("refs-log", msg, name))
    return out


def check_store(store: Store, *, repair: bool) -> tuple[list[Finding], Replayed]:
    """Objects, refs and the refs log; the replay, for the checks of derived data."""
    objects = check_objects(store, repair=repair)
    out = list(objects.findings)
    if (store.root / upgrading.UPGRADE_DIR).exists():
        # the format-1 files an upgrade replaced, not yet removed
        if repair:
            upgrading.remove_leftovers(store.root)
            out.append(warning("upgrade", "removed what hs upgrade replaced"))
        else:
            out.append(
                warning("upgrade", "what hs upgrade replaced is still there; hs upgrade removes it")
            )
    out += check_refs(store, store.refs.list_refs(), objects.kinds)
    replayed = replay_log(store, objects.kinds, repair=repair)
    out += replayed.findings
    out += check_log_matches_refs(replayed)
    return out, replayed


def check_views(store: Store, *, repair: bool, pending: bool = False) -> list[Finding]:
    """overlay/tombstones.jsonl and overlay/exclusions.jsonl match the overlay
    refs. ``pending``: an interrupted operation moved overlay refs, and its
    roll-forward rewrites the views, so until then they may lag."""
    stale = stale_views(store)
    if stale and repair:
        with store.lock():
            write_views(store)
        return [warning("overlay", "rewrote it from the overlay refs", n) for n in stale]
    if pending:
        msg = (
            "behind the overlay refs of an interrupted operation; completing it rewrites the views"
        )
        return [warning("overlay", msg, n) for n in stale]
    return [error("overlay", "does not match the overlay refs (fsck --repair)", n) for n in stale]
