"""Undo: any operation reverted by a new operation that applies its inverse.

Every operation in the refs log holds its ref changes (old -> new). Undoing it
moves each of those refs from ``new`` back to ``old``, compare-and-swap, as a
new operation (so an undo can itself be undone). When a later operation moved
one of those refs again, the undo conflicts: it says which operation, and
changes nothing. After the refs move, the derived data follows: the overlay
views are rewritten and the index catches up (one commit), so an undone
forget is back in recall at once; when markers moved and the index cannot
follow, the undo is rolled back.
An undone memory write also puts the memory directory's files back, when the
directory still holds what the operation wrote (else the undo conflicts).
"""

from __future__ import annotations

from histstore.errors import Ambiguous, BadInput, Conflict, NotFound, RebuildFailed
from histstore.memory.undo import after_undo, undo_files
from histstore.overlay.markers import PREFIX as OVERLAY_PREFIX
from histstore.recall.index import RecallIndex
from histstore.store.oplog import Operation, RefChange
from histstore.store.purged import shows_purged
from histstore.store.store import Store
from histstore.store.upgrading import IdMap

#: the ``extra.kind`` of a purge's operation (histstore.ops.purge.KIND)
PURGE_KIND = "purge"


def find_operation(store: Store, op_id: str | None) -> Operation:
    want = None if op_id is None else op_id.strip().lower()
    if want == "":  # a prefix of every operation: never taken for the newest
        raise BadInput(
            "the operation id is empty",
            hint="name one from `hs ops`, or give none to undo the last",
        )
    ops = store.operations()
    if not ops:
        raise NotFound("no operation to undo: the store has recorded nothing yet")
    if want is None:
        return ops[-1]
    found = [o for o in ops if o.op.startswith(want)]
    if not found and want:
        # an operation id from before hs upgrade: the entry it became
        now = {new for _, new in IdMap(store.root).op(want)}
        found = [o for o in ops if o.op in now]
    if not found:
        raise NotFound(f"no operation {op_id!r}", hint="see the operations with `hs ops`")
    if len(found) > 1:
        raise Ambiguous(
            f"operation {op_id!r} is ambiguous ({len(found)} matches)",
            [o.op for o in found[:10]],
            hint="give more of the operation id; see them with `hs ops`",
        )
    return found[0]


def _refuse_purged(store: Store, target: Operation, inverse: list[RefChange]) -> None:
    """A purge cannot be undone, nor anything whose undo would bring back
    what a purge removed (histstore.ops.purge)."""
    if target.extra.get("kind") == PURGE_KIND:
        raise BadInput(
            f"cannot undo {target.op}: it is a purge, and what a purge removed is gone for good",
            hint="a purge cannot be undone; see hs purge --list",
        )
    purged = [c.new for c in inverse if c.new and shows_purged(store, c.new)]
    if purged:
        raise BadInput(
            f"cannot undo {target.op}: it would bring back {len(purged)} object(s) "
            "a purge removed for good",
            hint="see hs purge --list",
        )


def _refuse_remote_removal(target: Operation) -> None:
    """An ``hs remote remove`` is not undone: its tracking refs would come
    back without the config entry, describing no remote."""
    if target.extra.get("kind") == "remote-remove":
        name = target.extra.get("remote", "")
        raise BadInput(
            f"cannot undo {target.op}: it removed the remote {name!r}",
            hint=f"add it again with `hs remote add {name} PATH`; the next sync brings "
            "its tracking refs back",
        )


def undo(store: Store, op_id: str | None = None, *, command: str = "hs undo") -> Operation:
    target = find_operation(store, op_id)
    _refuse_remote_removal(target)
    inverse = [RefChange(c.ref, c.new, c.old) for c in target.changes]
    _refuse_purged(store, target, inverse)
    with store.lock():
        _refuse_purged(store, target, inverse)  # (a purge may have run meanwhile)
        horizon = store.gc_horizon()
        if horizon and target.time < horizon:
            gone = [c.new for c in inverse if c.new and not store.objects.has(c.new)]
            if gone:
                raise BadInput(
                    f"cannot undo {target.op}: it is older than gc's retention window, "
                    f"and hs gc removed {len(gone)} object(s) it would bring back",
                    hint="raise [gc] retention_days to keep what undo may need for longer",
                )
        moved = [c for c in inverse if store.refs.read(c.ref) != c.old]
        if moved:
            later = [
                o.op
                for o in store.refs.operations_after(target.op) or []
                if any(ch.ref in {m.ref for m in moved} for ch in o.changes)
            ]
            raise Conflict(
                f"cannot undo {target.op}: {moved[0].ref} was changed again by "
                f"{', '.join(later) or 'a later operation'}",
                hint="undo the later operation first, or leave this one",
            )
        # memory writes: the directory must still hold what the operation wrote;
        # its files go back with the refs
        files_back = undo_files(store, target, inverse)
        extra = {"kind": "undo", "undoes": target.op}
        for key in ("dir", "memory_kind"):
            if key in target.extra:
                extra[key] = target.extra[key]
        # the folder first, then the refs, then its base (memory.undo.FilesBack):
        # no kill leaves a folder behind its ref
        if files_back is not None:
            files_back.write()
        try:
            op = store.apply(inverse, f"{command} {target.op}", extra=extra)
        except BaseException:
            if files_back is not None:
                files_back.revert()
            raise
        if op is None:
            if files_back is not None:
                files_back.revert()
            raise BadInput(f"operation {target.op} changed nothing to undo")
        if files_back is not None:
            files_back.settle()
        after_undo(store, target, inverse)
        markers_moved = any(c.ref.startswith(OVERLAY_PREFIX) for c in inverse)
    index = RecallIndex(store)
    try:
        index.catch_up()
    except Exception as e:
        if not markers_moved:
            # the undo stands (it is committed); hs recall catches the index up
            # before it searches, and so does the next write
            return op
        # an undone forget must be back in recall when undo returns, or not at all
        with store.lock():
            store.apply(
                [RefChange(c.ref, c.new, c.old) for c in op.changes],
                f"{command} {target.op} (rolled back: rebuild failed)",
                extra={"kind": "undo-rollback", "undoes": op.op},
            )
        raise RebuildFailed(
            f"rebuild-failed: the index could not be updated ({e}); undo of {target.op} "
            "was rolled back",
            hint="the store is as it was before this command",
        ) from None
    return op
