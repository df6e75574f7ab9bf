"""Undoing a memory operation: the folder's files go back with the refs.

Only a write or a restore changed files in a folder; undoing one puts them
back when the folder still holds exactly what the operation left (compared
after redaction), else the undo conflicts and changes nothing. Undoing a
snapshot only un-records it: putting files back would erase the very edits
it recorded. A folder that followed a pull moves back with its undo.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from histstore.errors import Conflict
from histstore.memory.folders import (
    as_given,
    as_recorded,
    follow,
    not_given,
    read_base,
    set_base,
    still_withheld,
    write_folder,
)
from histstore.memory.revisions import load_revision, load_tree
from histstore.memory.scopes import (
    FILE_KINDS,
    PREFIX,
    Scope,
    read_files,
)
from histstore.store.codec import hash_object
from histstore.store.oplog import Operation, RefChange
from histstore.store.store import Store

Step = tuple[Scope, dict[str, bytes], dict[str, bytes], dict[str, str], set[str], str | None]


@dataclass
class FilesBack:
    """The files an undo puts back, in three steps the undo runs in this order:
    :meth:`write` the folder, move the refs, :meth:`settle` the folders' bases.

    The folder goes first so that no kill can leave it behind its ref: killed
    after the folder was written, the ref still names the undone revision
    and the base matches it, so the next write or snapshot records the folder
    as it is (its old state stays in history); killed after the refs moved,
    the folder already holds what the ref names. Either way no note the
    folder holds is ever removed by what follows. If moving the refs fails,
    :meth:`revert` puts the folder back."""

    store: Store
    path: Path
    #: per scope: (scope, the folder now, the folder to write, the tree it
    #: goes back to, the notes withheld, the revision it goes back to)
    steps: list[Step]

    def write(self) -> None:
        for _scope, current, target, _tree, _withheld, _rev in self.steps:
            write_folder(self.path, current, target)

    def revert(self) -> None:
        for _scope, current, target, _tree, _withheld, _rev in self.steps:
            write_folder(self.path, target, current)

    def settle(self) -> None:
        for scope, _current, target, back_tree, withheld, rev in self.steps:
            kept = still_withheld(self.store, scope, back_tree, target, withheld)
            set_base(self.store, scope, rev, kept)


def undo_files(store: Store, op: Operation, inverse: list[RefChange]) -> FilesBack | None:
    """Before an undo moves memory refs (lock held): check that each directory
    the operation wrote still holds what it wrote, and return what puts the
    files back as they were before it (None: nothing to do on disk).
    Refuses with Conflict when the directory changed since. Notes the folder
    was not given (withheld: excluded) are left as the folder has them."""
    mem = [c for c in inverse if c.ref.startswith(PREFIX)]
    directory = op.extra.get("dir")
    if not mem or not isinstance(directory, str):
        return None
    if op.extra.get("memory_kind") not in FILE_KINDS:
        # a snapshot recorded what was on disk and changed no file: undoing it
        # un-records it and leaves the directory alone
        return None
    path = Path(directory)
    if not path.is_dir():
        return None
    steps: list[Step] = []
    for c in mem:
        scope = Scope(c.ref[len(PREFIX) :], None)
        b = read_base(store, scope)
        withheld = set(b.withheld if b is not None else ())
        now_tree = load_tree(store, load_revision(store, c.old).tree) if c.old else {}
        back_tree = load_tree(store, load_revision(store, c.new).tree) if c.new else {}
        current = read_files(path)
        recorded = as_recorded(store, current, now_tree, withheld)
        changed = sorted(
            f
            for f in set(recorded) | set(now_tree)
            if (hash_object("blob", recorded[f]) if f in recorded else None) != now_tree.get(f)
        )
        if changed:
            raise Conflict(
                f"{changed[0]} in {path} changed since operation {op.op}",
                hint="put the file back as the operation left it (`hs memory show`), "
                "or go back with `hs memory restore NAME@REV` instead",
            )
        give = not_given(store, scope, back_tree, current)
        target = as_given(store, back_tree, give, current)
        steps.append((scope, current, target, back_tree, withheld, c.new))
    return FilesBack(store, path, steps)


def after_undo(store: Store, op: Operation, inverse: list[RefChange]) -> None:
    """Once an undo moved memory refs (lock held): the folders' bases follow.
    An undone snapshot leaves its folder ahead of the ref (its edits are
    recorded again by the next snapshot); an undone sync moves a folder back
    when it holds what the sync gave it (as :func:`follow` does; a scope the
    sync created goes away)."""
    if op.extra.get("memory_kind") in FILE_KINDS and isinstance(op.extra.get("dir"), str):
        return  # undo_files put the files and the base back
    for c in inverse:
        if not c.ref.startswith(PREFIX):
            continue
        scope_id = c.ref[len(PREFIX) :]
        rev = c.new or c.old
        project = load_revision(store, rev).project if rev else None
        scope = Scope(scope_id, project)
        if op.extra.get("memory_kind") == "snapshot":
            b = read_base(store, scope)
            set_base(store, scope, c.new, b.withheld if b is not None else ())
        else:
            follow(store, scope, c.old, c.new)
