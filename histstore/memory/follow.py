"""What follows a pull or a purge in this store: its memory folders.

After an operation moved this store's ``memory/`` refs (a sync, a purge),
each scope's configured folder follows, but only when it still holds exactly
what it was last given (histstore.memory.folders.follow: never over an edit
not recorded, never an excluded note's text). After a sync, a folder an
earlier push into this store left behind catches up too. The operation stands
whatever happens here: each folder's outcome is a line for the person.
"""

from __future__ import annotations

from histstore.errors import HistError
from histstore.memory.folders import behind, follow
from histstore.memory.revisions import load_revision
from histstore.memory.scopes import PREFIX, Scope
from histstore.store.oplog import RefChange
from histstore.store.store import Store


def follow_memory(
    store: Store,
    changes: list[RefChange],
    *,
    late: bool = True,
    rewritten: frozenset[str] = frozenset(),
) -> list[str]:
    """Bring the memory folders along after ``changes`` moved this store's refs;
    ``late``: and every folder still behind its scope's revision (a push into
    this store never writes a folder); ``rewritten``: the blobs a purge being
    completed wrote in place of others (histstore.memory.folders.follow)."""
    out = []
    moved = set()
    for c in changes:
        if not c.ref.startswith(PREFIX) or c.new is None:
            continue
        scope_id = c.ref[len(PREFIX) :]
        moved.add(scope_id)
        try:
            scope = Scope(scope_id, load_revision(store, c.new).project)
            said = follow(store, scope, c.old, c.new, rewritten=rewritten)
        except HistError as e:
            said = f"{scope_id} memory directory not updated: {e.message}"
        if said:
            out.append(said)
    if not late:
        return out
    try:
        lagging = [b for b in behind(store) if b[0].id not in moved]
    except HistError:
        lagging = []
    for scope, base, tip in lagging:
        try:
            said = follow(store, scope, base, tip)
        except HistError as e:
            said = f"{scope.id} memory directory not updated: {e.message}"
        if said:
            out.append(said)
    return out
