"""Carrying purges between stores (docs/sync.md, "Purges").

A purge record entry (histstore.store.purged) says, by id only, what a purge
removed. Before anything else, a push, a pull or a sync gives each side the
entries it lacks — in both directions, whatever the direction of the sync: a
pull that left the other store holding what this one purged would have it
offered back at every sync — and each side completes them as a purge of its
own (histstore.ops.purge.receive): the objects named go, its refs move off
them the same way (so both sides arrive at the same revisions), and a target
purge (a session, a turn, a memory note) takes that target's every trace
there, including what only that store had. The objects that replace rewritten
ones (a text purge, ``hs redact --apply``) are copied first, from the side
that made them. Only then are the refs compared; the walk of what a side
lacks steps over every purged id, so no purged object is ever sent.
"""

from __future__ import annotations

from histstore.store.purged import PurgeEntry
from histstore.store.store import Store
from histstore.sync.walk import _Presence, walk_missing


def missing(a: Store, b: Store) -> list[PurgeEntry]:
    """The entries ``a`` has and ``b`` lacks, in ``a``'s order."""
    have = {e.id for e in b.purges.entries()}
    return [e for e in a.purges.entries() if e.id not in have]


def carry(local: Store, remote: Store, *, command: str, dry_run: bool) -> tuple[int, int]:
    """Each side's entries to the other, completed there. (sent, received)."""
    if dry_run:
        return len(missing(local, remote)), len(missing(remote, local))
    sent = got = 0
    # a side completing a target purge may add an entry of its own (what only
    # it held of the target), which the other side then lacks: a few rounds
    for _ in range(4):
        to_remote = missing(local, remote)
        if to_remote:
            receive(remote, local, to_remote, command)
            sent += len(to_remote)
        to_local = missing(remote, local)
        if to_local:
            receive(local, remote, to_local, command)
            got += len(to_local)
        if not to_remote and not to_local:
            break
    return sent, got


def receive(store: Store, src: Store, entries: list[PurgeEntry], command: str) -> None:
    """``entries`` of ``src`` completed in ``store``: the replacements copied,
    then the purge made there."""
    roots = sorted({v for e in entries for v in e.replaced.values() if src.objects.has(v)})
    if roots:
        skip = store.purged_ids() | src.purged_ids() | {o for e in entries for o in e.objects}
        presence = _Presence(store.objects, skip=skip)
        with store.objects.batch() as batch:

            def emit(oid: str, kind: str, payload: bytes) -> None:
                batch.put(kind, payload)
                presence.add(oid)

            walk_missing(src.objects, presence, roots, emit)
    from histstore.ops import purge  # the purge machinery: only when there is one to carry

    purge.receive(store, entries, command=command)
