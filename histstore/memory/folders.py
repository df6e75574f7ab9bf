"""A scope's folder and the store: recording it, and making it follow a sync.

Each store keeps, per scope, the revision its folder last matched and the
notes it was not given (its *base*, ``memory-base/<scope>``, a local record
like git's index, never synced). Recording a folder merges it three-way with
what a sync brought since that base; after a pull, a folder that still holds
exactly its base is moved to the new revision. An excluded note is never
written into a folder that did not write it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, Conflict, NotFound
from histstore.memory import index as memindex
from histstore.memory import rules as memrules
from histstore.memory.revisions import (
    head,
    load_revision,
    load_tree,
    put_tree,
)
from histstore.memory.scopes import (
    SYSTEM,
    MemoryDir,
    Scope,
    configured_dirs,
    index_lines,
    index_link,
    inside,
    join_index_lines,
    memory_dir,
    read_files,
    redacted,
    scope_for,
    split_index,
)
from histstore.overlay.markers import Overlay
from histstore.overlay.visibility import Visibility
from histstore.store.clock import now_rfc3339
from histstore.store.codec import hash_object, is_object_id
from histstore.store.fsutil import atomic_write, fsync_dir
from histstore.store.kinds import MemRev
from histstore.store.merge import deletion_loses, merge3
from histstore.store.oplog import Operation, RefChange
from histstore.store.purged import PLACEHOLDER
from histstore.store.store import Store


def _as_merged(
    store: Store, scope: Scope, folder: dict[str, bytes], old: str, notes: list[str] | None
) -> tuple[dict[str, bytes], set[str], list[dict[str, Any]]]:
    """A folder's files as the next revision after ``old`` records them: against
    the revision the folder last matched (its base), merged three-way with
    what a sync brought since. (the files, the notes withheld from the folder,
    the conflicts; each conflict is also told in ``notes``)."""
    old_tree = load_tree(store, load_revision(store, old).tree)
    b = read_base(store, scope)
    # no record: the folder never matched a revision here (the scope came
    # by a push or pull): merged against nothing, so nothing is deleted
    base = b.rev if b is not None else None
    withheld = set(b.withheld if b is not None else ())
    files = as_recorded(store, folder, old_tree, withheld)
    conflicts: list[dict[str, Any]] = []
    if base == old:
        return files, withheld, conflicts
    base_tree = load_tree(store, load_revision(store, base).tree) if base else {}
    mine = files
    files, clashes = _merge_folder(store, base_tree, old_tree, files)
    for f in clashes:
        here = hash_object("blob", mine[f]) if f in mine else None
        versions = sorted(v for v in (here, old_tree.get(f)) if v is not None)
        conflicts.append({"file": f, "versions": versions})
        if notes is None:
            continue
        if memrules.is_index_name(f):
            kept = "merged by entry; an entry changed both ways keeps this folder's line"
        elif f in files and files[f] == mine.get(f):
            kept = f"this folder's version is kept, the other is in revision {old[:12]}"
        else:
            kept = "removed here but changed by the sync: the sync's version is kept"
        notes.append(
            f"memory conflict: {scope.label} {f}: changed here and by a sync; {kept} "
            f"(hs memory diff {f} {old[:12]}; hs memory restore {f}@REV settles it)"
        )
    return files, withheld, conflicts


def record(
    store: Store,
    scope: Scope,
    files: dict[str, bytes],
    *,
    kind: str,
    message: str,
    command: str,
    directory: Path | None = None,
    expect: str | bool | None = False,
    notes: list[str] | None = None,
) -> tuple[Operation | None, str | None]:
    """Record ``files`` as the scope's new revision (lock held by the caller).

    Unchanged content costs nothing: (None, head). ``expect`` (when not False)
    is the head the caller read before it changed the directory.

    With ``directory`` (the files are that folder's), the folder is recorded
    against the revision it last matched (its *base*): when a sync moved the
    scope since, the folder's own changes are merged three-way onto the newest
    revision, what arrived is written into the folder, and a file changed both
    ways keeps the folder's version (the other stays in history) and is named
    in ``notes``. Notes an exclusion kept out of the folder are not deletions."""
    old = head(store, scope)
    if expect is not False and old != expect:
        raise Conflict(
            f"the {scope.label} memory was recorded by another command meanwhile",
            hint="run the command again",
        )
    if old is None and not files:
        return None, None  # an empty directory never recorded: nothing to keep
    folder = files
    withheld: set[str] = set()
    conflicts: list[dict[str, Any]] = []
    if directory is not None and old is not None:
        files, withheld, conflicts = _as_merged(store, scope, folder, old, notes)
    tree = put_tree(store, files)
    tree_files = load_tree(store, tree)
    # what the folder is given: all but the notes still withheld (a lifted
    # exclusion's note comes in)
    # never an excluded note (the folder keeps what it has of one); a note
    # whose exclusion was lifted comes in
    give = not_given(store, scope, tree_files, folder) if directory is not None else set()

    def settle(rev: str) -> None:
        assert directory is not None
        after = as_given(store, tree_files, give, folder)
        # a file recorded as the folder holds it but for what redaction took
        # out keeps its bytes: the store never holds a secret, the folder
        # keeps what it has (it is never rewritten with [REDACTED:...])
        for f, data in after.items():
            mine = folder.get(f)
            if mine is not None and mine != data and redacted(store, mine) == data:
                after[f] = mine
        write_folder(directory, folder, after)
        set_base(store, scope, rev, still_withheld(store, scope, tree_files, after, withheld))

    if old is not None and load_revision(store, old).tree == tree:
        if directory is not None:
            settle(old)
        return None, old
    rev = MemRev(
        scope.id, scope.project, tree, [old] if old else [], now_rfc3339(), kind, message, conflicts
    )
    rev_id = store.objects.put("memrev", rev.payload())
    extra: dict[str, Any] = {"kind": "memory", "scope": scope.id, "memory_kind": kind}
    if directory is not None:
        extra["dir"] = str(directory)
    op = store.apply([RefChange(scope.ref, old, rev_id)], command, extra=extra)
    if directory is not None:
        settle(rev_id)
    return op, rev_id


BASE_DIR = "memory-base"


@dataclass(frozen=True)
class Base:
    """What a scope's folder was last made to match: a revision, less the
    notes it was not given (excluded ones; their files and index lines in the
    folder, if any, are the folder's own and are neither written nor
    recorded). A record of this store only, never synced (like git's index)."""

    rev: str | None
    withheld: frozenset[str] = frozenset()


def _base_path(store: Store, scope: Scope) -> Path:
    return store.root / BASE_DIR / scope.id


def read_base(store: Store, scope: Scope) -> Base | None:
    """The folder's base record; None when there is none."""
    try:
        words = _base_path(store, scope).read_text("utf-8").split()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    if not words or not is_object_id(words[0]):
        return None
    return Base(words[0], frozenset(w for w in words[1:] if memrules.split_file_name(w)))


def set_base(store: Store, scope: Scope, rev: str | None, withheld: Iterable[str] = ()) -> None:
    path = _base_path(store, scope)
    if rev is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        atomic_write(path, (" ".join([rev, *sorted(withheld)]) + "\n").encode("utf-8"))


def excluded_files(store: Store, scope: Scope) -> set[str]:
    """The notes of a scope an active exclusion names."""
    return Visibility(Overlay.read(store)).excluded_notes(scope.id)


def as_recorded(
    store: Store, folder: dict[str, bytes], tree: dict[str, str], withheld: set[str]
) -> dict[str, bytes]:
    """A folder's files as a revision records them against ``tree``: a
    withheld note is ``tree``'s (the folder's copy, or its absence, is not an
    edit), and so are the index lines of withheld notes."""
    out = {f: redacted(store, d) for f, d in folder.items() if f not in withheld}
    for f in withheld:
        if f in tree:
            out[f] = store.get_blob(tree[f])
    if withheld:
        for f, data in list(out.items()):
            if not memrules.is_index_name(f) or f not in tree:
                continue
            theirs = store.get_blob(tree[f])
            t_rest, t_held = split_index(theirs, withheld)
            f_rest, _ = split_index(data, withheld)
            if f_rest == t_rest:
                out[f] = theirs  # as given: the tree's own bytes, lines in place
            else:
                out[f] = join_index_lines(f_rest, t_held)
    return out


def as_given(
    store: Store, tree: dict[str, str], withheld: set[str], folder: dict[str, bytes]
) -> dict[str, bytes]:
    """What a folder holds once made to match ``tree``: its files, but the
    withheld notes stay as the folder has them (present or not), and so do
    their index lines."""
    out = {f: store.get_blob(b) for f, b in tree.items() if f not in withheld}
    out.update({f: d for f, d in folder.items() if f in withheld})
    for f, data in list(out.items()):
        if withheld and memrules.is_index_name(f) and f in tree:
            _, held_here = split_index(folder.get(f, b""), withheld)
            mine = {index_link(ln): ln for ln in held_here}
            lines = []
            for ln in index_lines(data.decode("utf-8", "replace")):
                note = index_link(ln)
                if note not in withheld:
                    lines.append(ln)
                elif note in mine:  # the folder's own line, where the tree has it
                    lines.append(mine.pop(note))
            out[f] = join_index_lines(lines, list(mine.values()))
    return out


def write_folder(directory: Path, current: dict[str, bytes], target: dict[str, bytes]) -> int:
    """Make the folder hold ``target`` (atomic writes, removals): files changed."""
    changed = 0
    for f in sorted(set(current) | set(target)):
        if current.get(f) == target.get(f):
            continue
        path = inside(directory, f)
        if f in target:
            atomic_write(path, target[f])
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        changed += 1
    if changed:
        fsync_dir(directory)
    return changed


def still_withheld(
    store: Store,
    scope: Scope,
    tree: dict[str, str],
    folder: dict[str, bytes],
    before: Iterable[str],
) -> set[str]:
    """The notes a folder now made to match ``tree`` was not given: of those
    withheld ``before`` or excluded now, each whose copy in the folder (or its
    absence) is not the tree's."""
    out = set()
    for f in (set(before) | excluded_files(store, scope)) & set(tree):
        have = folder.get(f)
        if have is None or redacted(store, have) != store.get_blob(tree[f]):
            out.add(f)
    return out


def not_given(
    store: Store, scope: Scope, tree: dict[str, str], folder: dict[str, bytes]
) -> set[str]:
    """The excluded notes whose text in ``tree`` the folder does not hold: not
    written into it (its copy, or its absence, stays). An excluded note the
    folder holds as the tree has it is given like any other (its index line
    follows), and one the tree no longer holds is removed like any other."""
    out = set()
    for f in excluded_files(store, scope) & set(tree):
        have = folder.get(f)
        if have is None or redacted(store, have) != store.get_blob(tree[f]):
            out.add(f)
    return out


def _merge_folder(
    store: Store, base: dict[str, str], theirs: dict[str, str], mine: dict[str, bytes]
) -> tuple[dict[str, bytes], list[str]]:
    """Three-way, per file: the folder (``mine``, as recorded, changed since
    ``base``) onto ``theirs`` (the newest revision). Returns (the merged files,
    the files changed both ways: the folder's version kept, the other in
    history; a deletion loses to a change). The index merges by entry, last,
    keeping exactly the notes that are kept."""
    ids = {f: hash_object("blob", d) for f, d in mine.items()}
    merged: dict[str, bytes] = {}
    conflicts = []
    index_names = [f for f in set(base) | set(theirs) | set(mine) if memrules.is_index_name(f)]
    for f in sorted(set(base) | set(theirs) | set(mine)):
        if f in index_names:
            continue
        m = ids.get(f)
        # this folder's version on a conflict; a deletion loses
        pick, clash = merge3(m, theirs.get(f), base.get(f), deletion_loses)
        if clash:
            conflicts.append(f)
        if pick is not None:
            merged[f] = mine[f] if pick == m else store.get_blob(pick)
    notes = {f for f in merged if memrules.split_file_name(f)}
    for f in sorted(index_names):
        b, t, m = base.get(f), theirs.get(f), ids.get(f)
        data = store.get_blob(t) if t is not None and (m == b or t == m) else mine.get(f)
        if t != m:
            # the side that changed it wins its other lines (both: this folder);
            # the entries list exactly the notes kept (a removed index: no lines)
            here = mine.get(f)
            there = store.get_blob(t) if t is not None else None
            won, lost = (there, here) if m == b else (here, there)
            held = {n for n in set(base) | set(theirs) | set(mine) if memrules.split_file_name(n)}
            by_entry = memindex.merge_index(
                f,
                won,
                lost,
                store.get_blob(b) if b is not None else None,
                keep=notes,
                gone=held - notes,
            )
            if by_entry is not None:
                data, clash = by_entry
                if clash:
                    conflicts.append(f)
            elif m != b and t != b:
                conflicts.append(f)
        elif m != b and t != b and t != m:
            conflicts.append(f)
        if data is not None:
            merged[f] = data
    return merged, conflicts


def snapshot(
    store: Store,
    mdir: MemoryDir,
    *,
    command: str = "hs memory snapshot",
    notes: list[str] | None = None,
) -> tuple[Operation | None, str | None]:
    """Record the directory as it is now (edits agents made on their own),
    merged with what a sync brought since the folder last matched the scope
    (conflicts go to ``notes`` and into the revision)."""
    with store.lock():
        files = read_files(mdir.path)
        return record(
            store,
            mdir.scope,
            files,
            kind="snapshot",
            message="snapshot",
            command=command,
            directory=mdir.path,
            notes=notes,
        )


def behind(store: Store) -> list[tuple[Scope, str | None, str]]:
    """The scopes whose configured folder last matched another revision than
    the newest: (scope, the folder's base, the newest revision)."""
    out = []
    for key in configured_dirs(store):
        scope = scope_for(None if key == SYSTEM else key)
        tip = head(store, scope)
        if tip is None:
            continue
        b = read_base(store, scope) or Base(None)
        lifted = set(b.withheld) - excluded_files(store, scope)
        if b.rev != tip or lifted:
            out.append((scope, b.rev, tip))
    return out


def snapshot_configured(store: Store, *, command: str) -> list[tuple[Scope, Operation]]:
    """A snapshot of every directory config.toml names (after an import). A
    directory that is gone or refused is skipped: importing sessions must not
    fail because of a memory folder."""
    out = []
    for key in configured_dirs(store):
        scope = scope_for(None if key == SYSTEM else key)
        try:
            mdir = memory_dir(store, scope, use_env=False)
            op, _ = snapshot(store, mdir, command=command)
        except (BadInput, NotFound):
            continue
        if op is not None:
            out.append((scope, op))
    return out


def same_files(store: Store, files: dict[str, bytes], tree: dict[str, str]) -> bool:
    return {f: hash_object("blob", d) for f, d in files.items()} == tree


def _purged_as_given(
    store: Store, files: dict[str, bytes], tree: dict[str, str], rewritten: frozenset[str]
) -> dict[str, bytes]:
    """``files`` with each one that is ``tree``'s file as the purge being
    completed rewrote it (its blob in ``rewritten``) but for the text it
    replaced (``[REDACTED:purged]`` there, one same text of 6 characters or
    more here at every place) taken as ``tree``'s: the folder holds what it
    was given, before the purge rewrote it, so it follows. Only that purge's
    files: a placeholder an earlier purge left, edited since, is an edit."""
    out = dict(files)
    mark = PLACEHOLDER.encode("ascii")
    for f, data in files.items():
        blob = tree.get(f)
        if blob is None or blob not in rewritten or hash_object("blob", data) == blob:
            continue
        given = store.get_blob(blob)
        if mark not in given:
            continue
        parts = given.split(mark)
        rx = re.escape(parts[0]) + b"(.{6,}?)" + re.escape(parts[1])
        rx += b"".join(b"\\1" + re.escape(p) for p in parts[2:])
        if re.fullmatch(rx, data, re.DOTALL):
            out[f] = given
    return out


def follow(
    store: Store,
    scope: Scope,
    old_rev: str | None,
    new_rev: str | None,
    *,
    rewritten: frozenset[str] = frozenset(),
) -> str | None:
    """After a sync moved a scope's ref from ``old_rev`` to ``new_rev``: bring
    the directory config.toml names for the scope along, as ``git pull`` does a
    clean work tree — only when it still holds exactly what it was last given
    (its base; ``old_rev`` when it has none): no edit is ever overwritten, and
    an excluded note's text is never written. Returns what happened, for the
    person, or None when the scope has no directory here. ``rewritten``: the
    blobs a purge being completed wrote in place of others (a text purge)."""
    key = SYSTEM if scope.project is None else scope.project
    if key not in configured_dirs(store):
        return None
    try:
        mdir = memory_dir(store, scope, use_env=False)
    except (BadInput, NotFound) as e:
        return f"{scope.label} memory directory not updated: {e.message}"
    with store.lock():
        b = read_base(store, scope)
        base = b.rev if b is not None else None
        withheld = set(b.withheld if b is not None else ())
        folder = read_files(mdir.path)
        base_tree = load_tree(store, load_revision(store, base).tree) if base else {}
        recorded = as_recorded(store, folder, base_tree, withheld)
        recorded = _purged_as_given(store, recorded, base_tree, rewritten)
        if not same_files(store, recorded, base_tree):
            return (
                f"{mdir.path} has edits not recorded: left as it is; `hs memory snapshot` "
                "records them merged with what arrived"
            )
        new_tree = load_tree(store, load_revision(store, new_rev).tree) if new_rev else {}
        after = as_given(store, new_tree, not_given(store, scope, new_tree, folder), folder)
        changed = write_folder(mdir.path, folder, after)
        set_base(store, scope, new_rev, still_withheld(store, scope, new_tree, after, withheld))
    return f"{mdir.path}: {changed} file{'s' if changed != 1 else ''} updated" if changed else None
