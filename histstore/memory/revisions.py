"""Revisions of a scope: the memory trees and revisions the store keeps, read back.

A revision (``memrev``) names its tree (``memtree``: file name -> blob) and
its parents; ``memory/<scope>`` points at the newest. This module reads them:
history newest first, a note at a revision, what each revision changed, and
unified diffs, with the overlay applied (an excluded note's text is never
shown, and its index line is dropped).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any

from histstore.errors import Ambiguous, BadInput, HistError, NotFound
from histstore.memory import rules as memrules
from histstore.memory.scopes import (
    PREFIX,
    Scope,
    drop_index_lines,
    index_lines,
    redacted,
    target_id,
)
from histstore.overlay.markers import Overlay
from histstore.overlay.visibility import View, Visibility
from histstore.store.codec import canonical_json, is_id_prefix
from histstore.store.kinds import MemRev, MemTree, parse
from histstore.store.store import Store


@dataclass(frozen=True)
class Revision(MemRev):
    """A memory revision (histstore.store.kinds.MemRev) and its id."""

    id: str = ""


def load_revision(store: Store, rev_id: str) -> Revision:
    kind, payload = store.objects.get(rev_id)
    if kind != "memrev":
        raise BadInput(f"object {rev_id} is a {kind}, not a memrev")
    rev: MemRev = parse(rev_id, kind, payload)
    return Revision(**{f.name: getattr(rev, f.name) for f in fields(MemRev)}, id=rev_id)


def load_tree(store: Store, tree_id: str) -> dict[str, str]:
    kind, payload = store.objects.get(tree_id)
    if kind != "memtree":
        raise BadInput(f"object {tree_id} is a {kind}, not a memtree")
    tree: MemTree = parse(tree_id, kind, payload)
    return dict(tree.files)


def head(store: Store, scope: Scope) -> str | None:
    return store.refs.read(scope.ref)


def scopes(store: Store) -> dict[str, str]:
    """scope id -> its newest revision id."""
    n = len(PREFIX)
    return {k[n:]: v for k, v in store.refs.list_refs(PREFIX).items()}


def history(store: Store, rev_id: str | None) -> Iterator[Revision]:
    """Every revision reachable from ``rev_id``, newest first (merges followed)."""
    seen: set[str] = set()
    frontier = [rev_id] if rev_id else []
    loaded: dict[str, Revision] = {}
    frontier = [r for r in frontier if not store.is_purged(r)]  # a purged one is a hole
    while frontier:
        for r in frontier:
            if r not in loaded:
                loaded[r] = load_revision(store, r)
        frontier.sort(key=lambda r: (loaded[r].time, r), reverse=True)
        rev = loaded[frontier.pop(0)]
        if rev.id in seen:
            continue
        seen.add(rev.id)
        yield rev
        frontier.extend(p for p in rev.parents if p not in seen and not store.is_purged(p))


def put_tree(store: Store, files: dict[str, bytes]) -> str:
    """The tree of a folder's files, each blob redacted. A file name that
    holds a secret is refused (BadInput): the name is the tree's key and the
    folder's file, which a redacted key would no longer match."""
    for name in files:
        shown = store.redactor(name)
        if shown != name:
            raise BadInput(
                f"memory file name {shown!r} holds a secret: nothing was recorded",
                hint="rename the file, then record the folder again",
            )
    ids = {name: store.objects.put("blob", redacted(store, data)) for name, data in files.items()}
    return store.objects.put("memtree", canonical_json({"files": ids}))


def note_key(name: str) -> str:
    return name.strip().lower()


def find_file(store: Store, files: dict[str, str], name: str) -> str:
    """A note of a tree by file name, ``<type>_<slug>``, slug or frontmatter name."""
    key = note_key(name)
    if not key:
        raise BadInput("no memory name given")
    for f in files:
        if f.lower() in (key, key + ".md"):
            return f
    by_slug = [f for f in files if (s := memrules.split_file_name(f)) and s[1] == key]
    by_name = []
    for f, blob in files.items():
        if memrules.is_index_name(f):
            continue
        note, _ = memrules.parse_note(f, store.get_blob(blob))
        if note is not None and note_key(note.name) == key:
            by_name.append(f)
    # every note the slug or the name answers to (a slug and another note's
    # name alike: neither is taken); notes sharing the slug are told apart
    # by the one of them that also has the name
    found = sorted(set(by_slug) | set(by_name))
    both = [f for f in by_slug if f in by_name]
    if len(found) > 1 and len(both) == 1 and set(by_name) <= set(by_slug):
        return both[0]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise Ambiguous(f"memory {name!r} is ambiguous", sorted(found), hint="give the file name")
    raise NotFound(f"no memory {name!r}", hint="see the notes with `hs memory log`")


def resolve_rev(store: Store, scope: Scope, text: str | None) -> Revision:
    """A revision of the scope: None for the newest, an id prefix, or ``~N``
    (N revisions before the newest)."""
    tip = head(store, scope)
    if tip is None:
        raise NotFound(
            f"the {scope.label} memory has no revision yet",
            hint="record one with `hs memory snapshot`",
        )
    if text is None or text in ("", "~0"):
        return load_revision(store, tip)
    revs = history(store, tip)
    if text.startswith("~") and text[1:].isdigit():
        back = int(text[1:])
        for i, rev in enumerate(revs):
            if i == back:
                return rev
        raise NotFound(f"the {scope.label} memory has no revision {text}")
    if not is_id_prefix(text.lower()):
        raise BadInput(
            f"{text!r} is not a revision", hint="give a revision id (4+ hex digits) or ~N"
        )
    found = [r for r in revs if r.id.startswith(text.lower())]
    if not found:
        raise NotFound(f"no revision {text} in the {scope.label} memory", hint="see hs memory log")
    if len(found) > 1:
        raise Ambiguous(
            f"revision {text!r} is ambiguous ({len(found)} matches)",
            [r.id for r in found[:10]],
            hint="give more of the revision id; see them with `hs memory log`",
        )
    return found[0]


def split_name_rev(text: str) -> tuple[str, str | None]:
    """``NAME@REV`` as (name, rev); a text without ``@``, or whose only ``@``
    starts it (a frontmatter name may), as (text, None). An ``@`` with
    nothing after it, or only blanks before it, is refused:
    ``use-tabs@"$REV"`` with REV unset never means the newest revision."""
    name, sep, rev = text.rpartition("@")
    if not sep or not name:  # "@work habits": a name that starts with "@"
        return text, None
    if not name.strip():
        raise BadInput(f"{text!r} names no note before the @", hint="NAME@REV, e.g. use-tabs@~1")
    if not rev.strip():
        raise BadInput(
            f"{text!r} names no revision after the @",
            hint="NAME@REV, e.g. use-tabs@~1; without the @, the newest",
        )
    return name, rev


@dataclass(frozen=True)
class Change:
    """A file added, modified or removed between two memory trees."""

    file: str
    status: str  # "added" | "modified" | "removed"
    old: str | None
    new: str | None


def changes(store: Store, old_tree: str | None, new_tree: str) -> list[Change]:
    a = load_tree(store, old_tree) if old_tree else {}
    b = load_tree(store, new_tree)
    out = []
    for f in sorted(set(a) | set(b)):
        if a.get(f) == b.get(f):
            continue
        status = "added" if f not in a else "removed" if f not in b else "modified"
        out.append(Change(f, status, a.get(f), b.get(f)))
    return out


def _text_or_hole(store: Store, blob: str | None) -> bytes | None:
    """A file's bytes, or None when it has none here or a purge removed them."""
    if blob is None or store.is_purged(blob):
        return None
    return store.get_blob(blob)


def first_parent_tree(store: Store, rev: Revision) -> str | None:
    """The tree ``rev`` changed (None for a first revision, or one whose
    parent a purge removed: a hole)."""
    if not rev.parents or store.is_purged(rev.parents[0]):
        return None
    return load_revision(store, rev.parents[0]).tree


def _withheld(store: Store) -> Callable[[Scope, str], bool]:
    """Whether a note's text is withheld from the memory views (an exclusion:
    histstore.overlay.visibility, View.MEMORY_SHOW)."""
    vis = Visibility(Overlay.read(store))
    return lambda scope, file: vis.note(View.MEMORY_SHOW, scope.id, file) is not None


def note_files(store: Store, scope: Scope) -> list[str]:
    """The notes of the scope's newest revision a person may name (shell
    completion): every file but the index and the notes an exclusion withholds."""
    tip = head(store, scope)
    if tip is None:
        return []
    withheld = _withheld(store)
    files = load_tree(store, load_revision(store, tip).tree)
    return sorted(f for f in files if not memrules.is_index_name(f) and not withheld(scope, f))


def refuse_excluded(store: Store, scope: Scope, file: str) -> None:
    """An excluded note's text is never handed out (hs unforget lifts it)."""
    if _withheld(store)(scope, file):
        raise NotFound(
            f"memory {file} is excluded: its text is not shown",
            hint=f"hs unforget {target_id(scope, file)} to see it again",
        )


def _refuse_name(store: Store, scope: Scope, name: str) -> None:
    """As :func:`refuse_excluded`, for a name the newest revision holds."""
    tip = head(store, scope)
    if tip is None:
        return
    try:
        file = find_file(store, load_tree(store, load_revision(store, tip).tree), name)
    except (NotFound, BadInput):
        return
    refuse_excluded(store, scope, file)


def log(store: Store, scope: Scope, name: str | None = None) -> list[tuple[Revision, list[Change]]]:
    """Revisions newest first with what each changed (only those touching
    ``name`` when given; an excluded note's history is not shown)."""
    out = []
    file: str | None = None
    if name is not None:
        _refuse_name(store, scope, name)
        file = _file_in_history(store, scope, name)
    for rev in history(store, head(store, scope)):
        ch = changes(store, first_parent_tree(store, rev), rev.tree)
        if file is not None:
            ch = [c for c in ch if c.file == file]
            if not ch:
                continue
        out.append((rev, ch))
    return out


def _file_in_history(store: Store, scope: Scope, name: str) -> str:
    """The file a name means: looked up in the newest revision, then older ones
    (a note that was removed)."""
    last: HistError | None = None
    for rev in history(store, head(store, scope)):
        try:
            return find_file(store, load_tree(store, rev.tree), name)
        except NotFound as e:
            last = e
    if last is None:
        raise NotFound(f"the {scope.label} memory has no revision yet")
    raise last


def note_at(
    store: Store, scope: Scope, name: str, rev_text: str | None
) -> tuple[str, bytes, Revision]:
    """(file, bytes, revision) of a note at a revision (default: the newest),
    as the memory views may show it: an excluded note is refused (checked by
    the name in the newest revision and by the file found at the revision),
    and an index comes without the lines of excluded notes."""
    _refuse_name(store, scope, name)
    rev = resolve_rev(store, scope, rev_text)
    files = load_tree(store, rev.tree)
    file = _file_in_history(store, scope, name) if rev_text is None else None
    if file is None or file not in files:
        file = find_file(store, files, name)
    refuse_excluded(store, scope, file)
    data = store.get_blob(files[file])
    if memrules.is_index_name(file):
        withheld = _withheld(store)
        data = drop_index_lines(data, lambda f: withheld(scope, f))
    return file, data, rev


def unified(old: bytes | None, new: bytes | None, old_label: str, new_label: str) -> list[str]:
    """A unified diff, lines split at line feeds only (as diff(1) does: a form
    feed or U+2028 is inside a line)."""
    a = index_lines((old or b"").decode("utf-8", "replace"))
    b = index_lines((new or b"").decode("utf-8", "replace"))
    lines = list(difflib.unified_diff(a, b, old_label, new_label))
    return [ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines]


@dataclass(frozen=True)
class FileDiff:
    """One file's part of a diff: its labels (``a/<file>@<rev>`` or
    ``/dev/null``) and its unified diff lines, the two header lines first."""

    file: str
    old: str
    new: str
    lines: list[str]

    def as_json(self) -> dict[str, Any]:
        status = (
            "added"
            if self.old == "/dev/null"
            else "removed"
            if self.new == "/dev/null"
            else "modified"
        )
        return {
            "file": self.file,
            "status": status,
            "from": self.old,
            "to": self.new,
            "diff": "".join(self.lines),
        }


def diff(
    store: Store,
    scope: Scope,
    name: str | None,
    rev1: str | None,
    rev2: str | None,
) -> list[str]:
    """A unified diff. No revisions: the last change (of ``name``, or of the
    scope); one: that revision against the newest; two: the first against the
    second. Excluded notes are left out (and their index lines); naming one
    is refused."""
    return [ln for f in diff_files(store, scope, name, rev1, rev2) for ln in f.lines]


def diff_files(
    store: Store,
    scope: Scope,
    name: str | None,
    rev1: str | None,
    rev2: str | None,
) -> list[FileDiff]:
    """:func:`diff`, file by file."""
    withheld = _withheld(store)

    def skip(file: str) -> bool:
        return withheld(scope, file)

    if name is not None:
        _refuse_name(store, scope, name)
    if rev1 is None:
        entries = log(store, scope, name)
        if not entries:
            raise NotFound(f"the {scope.label} memory has no revision yet")
        rev = entries[0][0]
        b = rev
        parent = rev.parents[0] if rev.parents else None
        a = load_revision(store, parent) if parent and not store.is_purged(parent) else None
    else:
        a = resolve_rev(store, scope, rev1)
        b = resolve_rev(store, scope, rev2)
    a_files = load_tree(store, a.tree) if a else {}
    b_files = load_tree(store, b.tree)
    if name is not None:
        try:
            file = find_file(store, b_files, name)
        except NotFound:
            file = find_file(store, a_files, name)
        wanted = [file]
    else:
        wanted = sorted(set(a_files) | set(b_files))
    out: list[FileDiff] = []
    for f in wanted:
        if a_files.get(f) == b_files.get(f) or skip(f):
            continue
        old = _text_or_hole(store, a_files.get(f))
        new = _text_or_hole(store, b_files.get(f))
        if memrules.is_index_name(f):
            old = drop_index_lines(old, skip) if old is not None else None
            new = drop_index_lines(new, skip) if new is not None else None
            if old == new:
                continue
        gone = " (purged: its content is gone)"
        a_label = f"a/{f}@{a.id[:12]}" if a and f in a_files else "/dev/null"
        b_label = f"b/{f}@{b.id[:12]}" if f in b_files else "/dev/null"
        a_label += gone if old is None and f in a_files else ""
        b_label += gone if new is None and f in b_files else ""
        out.append(FileDiff(f, a_label, b_label, unified(old, new, a_label, b_label)))
    return out
