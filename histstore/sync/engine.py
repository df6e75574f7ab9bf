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
3. After a pull, this store's recall index catches up (one commit: newly
   forgotten turns leave it, new ones arrive), outside the locks; after an
   operation here that moved only remote-tracking refs (a push), the index
   follows it by its meta alone (RecallIndex.follow).

A ref present on one side only is copied to the other: sync never deletes a
ref. A sync that finds nothing different moves no object and records no
operation anywhere. This module never prints: what a person should know comes
back in :class:`SyncReport`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from histstore.errors import BadInput, CorruptObject, CorruptStore, HistError, NotFound
from histstore.memory.follow import follow_memory
from histstore.recall.index import RecallIndex
from histstore.store.codec import is_object_id
from histstore.store.config import read_config, rulesets_of
from histstore.store.objectstore import Batch, DiskObjectStore, MemoryObjectStore
from histstore.store.oplog import Operation, RefChange
from histstore.store.repack import copy_all
from histstore.store.store import Store
from histstore.sync.merge import MemoryConflict, check_value, merge_values, recorded_conflicts
from histstore.sync.purges import carry
from histstore.sync.remotes import (
    NAMESPACES,
    TRACKING,
    Remote,
    check_empty_folder,
    check_remote_name,
    check_same_patterns,
    overlap_of,
)
from histstore.sync.walk import Moved, Objects, _Made, _Presence, walk_missing

Progress = Callable[[int, int], None]  # (refs walked so far, refs to walk)


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


@dataclass
class SyncReport:
    """What a sync sent, received, merged and left, per direction."""

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
    index: str | None = None  # "catch-up" after a pull that moved refs
    index_error: str | None = None
    #: what each memory folder of this store did after the pull, for the person
    memory_dirs: list[str] = field(default_factory=list)
    #: purge record entries given to the other side, and taken from it
    purges_sent: int = 0
    purges_received: int = 0

    @property
    def nothing(self) -> bool:
        return (
            not self.sent.objects
            and not self.received.objects
            and not self.remote_changes
            and not self.local_changes
            and not self.tracking_changes
            and not self.purges_sent
            and not self.purges_received
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
            "memory_dirs": self.memory_dirs,
            "purges_sent": self.purges_sent,
            "purges_received": self.purges_received,
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
    """Both sides' synced refs and the names whose values differ."""

    local: dict[str, str]
    remote: dict[str, str]
    differ: list[str]


def _mark(store: Store) -> tuple[str | None, str | None]:
    """(the newest operation in the refs log, the last one applied): any ref
    change moves one of them."""
    return store.refs.last_op_id(), store.refs.applied()


def _checked_refs(store: Store, side: str) -> dict[str, str]:
    """The synced refs of one side, each holding an object id: damage (a ref
    file holding garbage) is refused at the border as damage (exit 7)."""
    refs = synced_refs(store)
    for name, value in refs.items():
        if not is_object_id(value):
            raise CorruptStore(
                f"the {side} store's ref {name} does not hold an object id; no ref was moved",
                hint=f"run hs fsck on the {side} store ({store.root})",
            )
    return refs


def _plan(local: Store, remote: Store) -> _Plan:
    lo, re = _checked_refs(local, "local"), _checked_refs(remote, "remote")
    differ = sorted(n for n in set(lo) | set(re) if lo.get(n) != re.get(n))
    return _Plan(lo, re, differ)


def _copy_objects(
    src: Store,
    dst: Store,
    roots: list[str],
    moved: Moved,
    progress: Callable[[], None] | None,
    *,
    dry_run: bool = False,
) -> None:
    presence = _Presence(dst.objects, skip=dst.purged_ids() | src.purged_ids())
    if dry_run:

        def count(oid: str, kind: str, payload: bytes) -> None:
            moved.objects += 1
            moved.bytes += len(payload)

        walk_missing(src.objects, presence, roots, count, progress)
        return
    with dst.objects.batch() as batch:
        walk_missing(src.objects, presence, roots, _copier(batch, moved, presence), progress)


def _copy(
    src: Store,
    dst: Store,
    roots: list[str],
    moved: Moved,
    progress: Callable[[], None] | None,
    *,
    dry_run: bool = False,
) -> None:
    """What ``roots`` reach that ``dst`` lacks, copied from ``src``; an object a
    ref of ``src`` reaches that ``src`` does not have is damage (exit 7)."""
    try:
        _copy_objects(src, dst, roots, moved, progress, dry_run=dry_run)
    except NotFound as e:
        raise CorruptStore(
            f"the store at {src.root} is damaged: {e.message}, which its refs reach; "
            "no ref was moved",
            hint=f"run hs fsck on it ({src.root})",
        ) from None


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
    push sends what the remote lacks and moves its refs, pull the other way;
    then this store's recall index and memory folders follow."""
    check_remote_name(name)
    overlap = overlap_of(remote.root, local)
    if overlap:
        raise BadInput(f"{remote.root} {overlap}")
    check_same_patterns(local, remote, name)
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

    # 0. purges first, both ways: each side completes what the other purged,
    #    so neither offers the other what it purged (histstore.sync.purges)
    report.purges_sent, report.purges_received = carry(
        local, remote, command=command, dry_run=dry_run
    )
    # 1. the refs as they are now, read without a lock (readers never lock);
    #    with nothing different there is nothing to copy, merge or record
    #    (unless an interrupted operation waits for a writer to complete it)
    marks = (_mark(local), _mark(remote))
    plan = _plan(local, remote)
    interrupted = any(last != applied for last, applied in marks)
    if not plan.differ and not (interrupted and not dry_run):
        return _followed(local, report)
    send, recv = roots(plan)
    if not dry_run and push and send and _empty(remote):
        # a first push: every pack copied whole and verified, not object by
        # object (the walk below then finds everything there)
        lo, ro = local.objects, remote.objects
        if isinstance(lo, DiskObjectStore) and isinstance(ro, DiskObjectStore):
            report.sent.objects, report.sent.bytes = copy_all(lo, ro)
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
        _decide(objs, plan, report, push=push, pull=pull)
        report.made = len(objs.made)
        made_local = {c.new for c in report.local_changes if c.new} & set(objs.made)
        report.tracking_changes = _tracking(local, name, plan, report, made_local, pull)
        if dry_run:
            return report
        _record(local, remote, name, objs, report, command)

    # 3. this store's recall index and memory folders follow what arrived
    moved = [c for c in report.local_changes if c.ref.startswith(("sessions/", "overlay/"))]
    if moved and refresh_index:
        refresh_after_pull(local, report, any(c.ref.startswith("overlay/") for c in moved))
    elif report.local_operation is not None and refresh_index:
        # only remote-tracking refs (and memory) moved here: the index is not
        # left behind the operation (format.md), and no document changes
        try:
            RecallIndex(local).follow()
        except (HistError, OSError, ValueError) as e:
            report.index_error = str(e)
    return _followed(local, report)


def _empty(store: Store) -> bool:
    """Whether a store holds no object at all (a remote just made by --init)."""
    objs = store.objects
    if not isinstance(objs, DiskObjectStore):
        return False
    return not objs.packs() and next(objs.iter_loose(), None) is None


def _followed(local: Store, report: SyncReport) -> SyncReport:
    """The report, once this store's memory folders followed (a folder an
    earlier push left behind catches up even when nothing moved now)."""
    if not report.dry_run:
        report.memory_dirs = follow_memory(local, report.local_changes)
    return report


def _decide(objs: Objects, plan: _Plan, report: SyncReport, *, push: bool, pull: bool) -> None:
    """Under both locks: each differing ref's merged value (checked at the
    border first), as the ref changes of each side."""
    for n in plan.differ:
        a, b = plan.local.get(n), plan.remote.get(n)
        # what is sent, and what a merge reads, is checked at the border:
        # on a push the remote's value of a ref both hold is merged too
        if a is not None and (push or b is not None):
            check_value(objs, n, a, "local")
        if b is not None and (pull or a is not None):
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


def _record(
    local: Store, remote: Store, name: str, objs: Objects, report: SyncReport, command: str
) -> None:
    """Under both locks: the merge objects into each side whose refs will name
    them (their children are all there by now), then one operation per side."""
    made_remote = {c.new for c in report.remote_changes if c.new} & set(objs.made)
    made_local = {c.new for c in report.local_changes if c.new} & set(objs.made)
    for dst, ids in ((remote, made_remote), (local, made_local)):
        if ids:
            with dst.objects.batch() as batch:
                made = _Made(objs, dst.objects)
                walk_missing(made, made, sorted(ids), _copier(batch, None))
    # each side records the rule sets whose redaction the objects it got carry
    if report.sent.objects or report.remote_changes:
        remote.add_rulesets(rulesets_of(read_config(local.root)))
    if report.received.objects or report.local_changes:
        local.add_rulesets(rulesets_of(read_config(remote.root)))
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
    path = remote.path
    if path.exists() and not path.is_dir():
        raise BadInput(f"remote {remote.name}: {path} is a file, not a store folder")
    overlap = overlap_of(path, local)
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

    # what a purge removed is never offered (as _copy_objects skips it)
    presence = _Presence(MemoryObjectStore(), skip=local.purged_ids())
    walk_missing(local.objects, presence, sorted(set(refs.values())), count)
    report.remote_changes = [RefChange(n, None, v) for n, v in refs.items()]
    return report


def refresh_after_pull(local: Store, report: SyncReport, markers_moved: bool) -> None:
    """The index catches up in one commit (newly forgotten turns leave it at once,
    ``markers_moved`` or not). The sync stands whatever happens here: a failure
    is reported, and `hs recall` or the next write catches up."""
    try:
        RecallIndex(local).catch_up()
        report.index = "catch-up"
    except (HistError, OSError, ValueError) as e:
        report.index_error = str(e)
