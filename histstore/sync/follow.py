"""What follows a pull in this store: its memory folders.

After a sync moved this store's ``memory/`` refs, each scope's configured
folder follows, but only when it still holds exactly what it was last given
(histstore.memory.folders.follow: never over an edit not recorded, never an
excluded note's text). A folder an earlier push into this store left behind
catches up too. The sync stands whatever happens here: each folder's outcome
is a line for the person.
"""

from __future__ import annotations

from histstore.errors import HistError
from histstore.memory.folders import behind, follow
from histstore.memory.revisions import load_revision
from histstore.memory.scopes import PREFIX, Scope
from histstore.store.oplog import RefChange
from histstore.store.store import Store


def follow_memory(store: Store, changes: list[RefChange]) -> list[str]:
    """Bring the memory folders along after ``changes`` moved this store's refs."""
    out = []
    moved = set()
    for c in changes:
        if not c.ref.startswith(PREFIX) or c.new is None:
            continue
        scope_id = c.ref[len(PREFIX) :]
        moved.add(scope_id)
        try:
            scope = Scope(scope_id, load_revision(store, c.new).project)
            said = follow(store, scope, c.old, c.new)
        except HistError as e:
            said = f"{scope_id} memory directory not updated: {e.message}"
        if said:
            out.append(said)
    try:
        late = [b for b in behind(store) if b[0].id not in moved]
    except HistError:
        late = []
    for scope, base, tip in late:
        try:
            said = follow(store, scope, base, tip)
        except HistError as e:
            said = f"{scope.id} memory directory not updated: {e.message}"
        if said:
            out.append(said)
    return out
