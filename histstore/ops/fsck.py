"""Checking a store: every object re-hashed, every ref and refs-log entry checked,
and the derived data (overlay views, recall index) compared with them.

One check, two faces: ``hs fsck`` prints findings for people, ``hs plumbing
fsck`` the same findings as JSON lines. A finding is an *error* (the store is
damaged) or a *warning* (tolerated: a torn last log line after a crash, an
operation logged but not yet applied, a leftover temporary file). The checks
live with what they check: histstore.store.check (objects, packs, refs, the
refs log, the overlay views) and histstore.recall.check (the index).
"""

from __future__ import annotations

from histstore.ops import gc, purge_run
from histstore.recall.check import check_index
from histstore.store.check import Finding, check_purges, check_store, check_views, warning
from histstore.store.purged import PENDING
from histstore.store.store import Store

__all__ = ["Finding", "fsck"]


def fsck(store: Store, *, repair: bool = False) -> list[Finding]:
    out: list[Finding] = []
    if repair:
        out += _repair_purges(store)
    purges = check_purges(store)
    found, replayed = check_store(store, repair=repair)
    if repair and store.purged_still_stored():
        # a pack index the repair rebuilt reaches purged objects again
        out += _repair_purges(store)
        purges = check_purges(store)
    out += purges + found
    # derived data is compared with the refs only when they are sound
    if not any(f.severity == "error" for f in out):
        out += check_views(store, repair=repair, pending=replayed.pending_overlay)
    index = check_index(store, compare=not any(f.severity == "error" for f in out))
    if (store.root / PENDING).exists():
        # an interrupted purge may have rewritten the refs log before it
        # rebuilt the index; completing it (the next command) rebuilds it
        index = [
            warning(f.check, f"{f.message}; the interrupted purge rebuilds it", f.subject)
            for f in index
        ]
    out += index
    return out


def _repair_purges(store: Store) -> list[Finding]:
    """An interrupted purge completed; purged objects stored again removed."""
    out = []
    if purge_run.complete_pending(store) is not None:
        out.append(warning("purged", "completed a purge a crash had interrupted"))
    back = store.purged_still_stored()
    if back:
        with store.lock():
            n, _ = gc.remove_objects(store, back)
        out.append(warning("purged", f"removed {n} purged object(s) stored again"))
    return out
