"""Checked writes of one note: plan (a preview), apply (with rollback), restore, undo.

:func:`plan_write` computes the rendered note, its one index line and the
near-duplicates it would make, touching nothing. :func:`apply_write`, under
the store lock, writes exactly the note's file and one index line, reads both
back and checks every rule; any failure puts every changed file back to its
previous bytes (a created file is removed) and raises WriteBlocked saying
which rule failed and whether the rollback succeeded. Undo of a write puts
the files back when the folder still holds what the write left.
"""

from __future__ import annotations

import contextlib
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from histstore.errors import Ambiguous, BadInput, Conflict, HistError, NotFound, WriteBlocked
from histstore.memory import check as memcheck
from histstore.memory import index as memindex
from histstore.memory import models as memmodels
from histstore.memory import rules as memrules
from histstore.memory.folders import (
    Base,
    as_recorded,
    excluded_files,
    read_base,
    record,
    same_files,
)
from histstore.memory.revisions import head, load_revision, load_tree, note_at, note_key
from histstore.memory.scopes import (
    INDEX_FILE,
    MemoryDir,
    index_file,
    index_warn_tokens,
    inside,
    read_files,
    read_regular,
)
from histstore.store.fsutil import atomic_write, fsync_dir
from histstore.store.oplog import Operation
from histstore.store.store import Store


@dataclass(frozen=True)
class Duplicate:
    """A note already there that a new one would repeat, and why it looks so."""

    file: str
    name: str
    description: str
    why: str  # "same name", "same slug", "similar description", "similar body"

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "name": self.name,
            "description": self.description,
            "why": self.why,
        }


@dataclass
class WritePlan:
    """A checked memory write before it happens: the note and the index change."""

    mdir: MemoryDir
    file: str
    path: Path
    text: str  # the note's new content
    index_path: Path
    index_old: bytes | None
    index_new: bytes
    index_line: str
    index_replaces: str | None  # the index line it changes, None when it adds one
    note_old: bytes | None
    head: str | None
    duplicates: list[Duplicate]
    revise: str | None
    create: bool
    kind: str = "write"

    def preview(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "file": self.file,
            "exists": self.note_old is not None,
            "content": self.text,
            "index": str(self.index_path),
            "index_line": self.index_line,
            "index_replaces": self.index_replaces,
            "duplicates": [d.as_json() for d in self.duplicates],
        }


def _similar(a: str, b: str) -> float:
    a, b = " ".join(a.lower().split()), " ".join(b.lower().split())
    if not a or not b:
        return 0.0
    return difflib.SequenceMatcher(None, a, b).ratio()


def near_duplicates(
    directory: Path,
    file: str,
    note: memrules.Note,
    skip: str | None,
    hidden: frozenset[str] = frozenset(),
) -> list[Duplicate]:
    """Notes of the directory that look like ``note``: same name or slug, or a
    close description or body. ``skip``: the file being revised; ``hidden``:
    excluded notes, never compared (what a message would say of one is its
    text)."""
    out = []
    for name, data in read_files(directory).items():
        if name == skip or name in hidden or memrules.is_index_name(name):
            continue
        other, _ = memrules.parse_note(name, data)
        split = memrules.split_file_name(name)
        if other is None:
            if split and split[1] == note.slug:
                out.append(Duplicate(name, "", "", "same slug"))
            continue
        if note_key(other.name) == note_key(note.name):
            why = "same name"
        elif other.slug == note.slug:
            why = "same slug"
        elif _similar(other.description, note.description) >= 0.8:
            why = "similar description"
        elif _similar(other.body, note.body) >= 0.9:
            why = "similar body"
        else:
            continue
        out.append(Duplicate(name, other.name, other.description, why))
    return out


def draft_fields(text: str) -> dict[str, Any]:
    """The frontmatter of a draft note as a mapping ({} when it has none)."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        front = "\n".join(lines[1:end])
        if memrules.too_deep(front):
            return {}
        data = yaml.safe_load(front)
    except (StopIteration, yaml.YAMLError, RecursionError):
        return {}  # parse_note reports what is wrong with it
    return data if isinstance(data, dict) else {}


def _index_with(index_old: bytes | None, file: str, line: str) -> tuple[bytes, str | None]:
    """The index with exactly one line added or changed: (new bytes, replaced line)."""
    text = (index_old or b"").decode("utf-8-sig") if index_old else ""
    # lines as memindex.parse_index counts them (split on "\n" only), each
    # keeping its own ending, so only the one line changes
    raw = text.split("\n")
    ends = ["\n"] * (len(raw) - 1) + [""]
    if raw and raw[-1] == "":
        raw.pop()
        ends.pop()
    lines = [ln.removesuffix("\r") for ln in raw]
    ends = [
        "\r\n" if r.endswith("\r") and e else "\r" if r.endswith("\r") else e
        for r, e in zip(raw, ends, strict=True)
    ]
    first_end = next((e for e in ends if e), "\n")
    entries, _ = memindex.parse_index(INDEX_FILE, index_old or b"")
    mine = [e for e in entries if e.file == file]
    if len(mine) > 1:
        raise BadInput(
            f"{INDEX_FILE} lists {file} {len(mine)} times",
            hint="remove the extra lines first (hs memory check shows them)",
        )
    if mine:
        replaced = lines[mine[0].line - 1]
        lines[mine[0].line - 1] = line
        if not ends[mine[0].line - 1]:
            ends[mine[0].line - 1] = first_end
    else:
        replaced = None
        if ends and not ends[-1]:
            ends[-1] = first_end  # the last line gets its missing line break
        lines.append(line)
        ends.append(first_end)
    bom = "\ufeff" if index_old and index_old.startswith(b"\xef\xbb\xbf") else ""
    body = "".join(ln + e for ln, e in zip(lines, ends, strict=True))
    return (bom + body).encode("utf-8"), replaced


def _note_name(
    directory: Path, type_: str | None, slug: str | None, revise: str | None
) -> tuple[str, str]:
    """The (type, slug) a write names: given, or the revised note's own."""
    if revise is not None:
        files = {f: "" for f in read_files(directory)}
        target_file = _find_in_dir(directory, files, revise)
        split = memrules.split_file_name(target_file)
        if split is None:  # the index, or a file that is no note (Notes.md)
            raise BadInput(
                f"--revise {revise}: {target_file} is not a memory note",
                hint="name a note (<type>_<slug>.md, its slug or its name); "
                "the index is written with the notes",
            )
        if (type_ is not None and type_ != split[0]) or (slug is not None and slug != split[1]):
            raise BadInput(
                f"--revise {revise} keeps its file {target_file}; --type/--slug differ",
                hint="leave out --type and --slug, or write a new note with --create",
            )
        type_, slug = split
    if type_ is None or slug is None:
        raise BadInput(
            "a memory needs --type and --slug", hint="e.g. --type feedback --slug use-tabs"
        )
    memrules.check_type(type_)
    memrules.check_slug(slug)
    return type_, slug


def _render(type_: str, name: str, description: str, body: str) -> str:
    if not name.strip() or not description.strip():
        raise BadInput("a memory needs a non-empty --name and --description")
    for what, value in (("--name", name), ("--description", description)):
        if any(c in value for c in "\r\n\x00"):
            raise BadInput(f"{what} holds a line break", hint="give it on one line")
    return memrules.render_note(type_, name.strip(), description.strip(), body)


def _checked_note(file: str, text: str) -> memrules.Note:
    """The note ``text`` is, refused when it breaks any rule."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput("the note is not valid UTF-8 text", hint="give the text as UTF-8") from None
    note, violations = memrules.parse_note(file, data)
    if violations or note is None:
        v = violations[0] if violations else None
        raise BadInput(
            f"the note breaks a rule: {v}" if v else "the note cannot be parsed",
            hint="fix the draft; `hs memory check` explains every rule",
        )
    return note


def plan_write(
    store: Store,
    mdir: MemoryDir,
    *,
    type_: str | None,
    slug: str | None,
    name: str,
    description: str,
    body: str,
    revise: str | None = None,
    create: bool = False,
    kind: str = "write",
    text: str | None = None,
) -> WritePlan:
    """Everything a write will do, checked before anything is written. ``text``:
    the note's whole content (a restore), else rendered from the fields."""
    index_warn_tokens(store)  # a bad setting is refused before anything is written
    directory = mdir.path
    _check_in_step(store, mdir)
    type_, slug = _note_name(directory, type_, slug, revise)
    file = memrules.note_file_name(type_, slug)
    if text is None:
        text = _render(type_, name, description, body)
    note = _checked_note(file, text)
    path = inside(directory, file)
    b = read_base(store, mdir.scope)
    if b is not None and file in b.withheld:
        raise Conflict(
            f"{file} is a note this folder was not given (it is excluded)",
            hint="write it where it was written, or `hs unforget` it first",
        )
    note_old = read_regular(path)
    if note_old is not None and revise is None and kind == "write":
        raise Conflict(
            f"{file} exists in {directory}",
            hint=f"revise it with --revise {file}, or choose another --slug",
        )
    hidden = frozenset(excluded_files(store, mdir.scope))
    dups = near_duplicates(
        directory, file, note, skip=file if revise or kind != "write" else None, hidden=hidden
    )
    index_path = inside(directory, index_file(directory))
    index_old = read_regular(index_path, memrules.MAX_INDEX_BYTES)
    if index_old is not None:
        try:
            if b"\0" in index_old:
                raise UnicodeDecodeError("utf-8", index_old, 0, 1, "NUL")
            index_old.decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput(
                f"{index_path} is not UTF-8 text",
                hint="fix it first (`hs memory check` shows where)",
            ) from None
    line = memindex.index_line(note.name, file, note.description)
    index_new, replaced = _index_with(index_old, file, line)
    return WritePlan(
        mdir,
        file,
        path,
        text,
        index_path,
        index_old,
        index_new,
        line,
        replaced,
        note_old,
        head(store, mdir.scope),
        dups,
        revise,
        create,
        kind,
    )


def _check_in_step(store: Store, mdir: MemoryDir) -> None:
    """A write starts from the newest revision: a folder a sync left behind
    (with edits of its own, so it could not follow) is merged first."""
    tip = head(store, mdir.scope)
    if tip is None:
        return
    b = read_base(store, mdir.scope) or Base(None)
    if b.rev == tip and set(b.withheld) <= excluded_files(store, mdir.scope):
        return
    folder = read_files(mdir.path)
    withheld = set(b.withheld)
    tip_tree = load_tree(store, load_revision(store, tip).tree)
    lifted = withheld - excluded_files(store, mdir.scope)
    if not lifted and same_files(store, as_recorded(store, folder, tip_tree, withheld), tip_tree):
        return
    base_tree = load_tree(store, load_revision(store, b.rev).tree) if b.rev else {}
    edits = not same_files(store, as_recorded(store, folder, base_tree, withheld), base_tree)
    raise Conflict(
        f"{mdir.path} is behind revision {tip[:12]} of the {mdir.scope.label} memory "
        f"(a sync brought it){' and holds edits of its own' if edits else ''}",
        hint="`hs memory snapshot` "
        + ("merges the two" if edits else "brings it up to date")
        + "; then write again",
    )


def _find_in_dir(directory: Path, files: dict[str, str], name: str) -> str:
    key = note_key(name)
    for f in files:
        if f.lower() in (key, key + ".md"):
            return f
    hits = []
    for f in files:
        if memrules.is_index_name(f):
            continue
        split = memrules.split_file_name(f)
        note, _ = memrules.parse_note(f, (directory / f).read_bytes())
        if (split and split[1] == key) or (note is not None and note_key(note.name) == key):
            hits.append(f)
    if len(hits) == 1:
        return hits[0]
    if hits:
        raise Ambiguous(f"memory {name!r} is ambiguous", sorted(hits), hint="give the file name")
    raise NotFound(
        f"no memory {name!r} in {directory}", hint="see the notes with `hs memory check`"
    )


@dataclass
class WriteResult:
    """A memory write done: the file, its revision and operation."""

    file: str
    path: Path
    operation: Operation | None
    revision: str | None
    index_line: str
    warning: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "path": str(self.path),
            "operation": self.operation.op if self.operation else None,
            "revision": self.revision,
            "index_line": self.index_line,
            "warning": self.warning,
        }


def _write_file(path: Path, data: bytes) -> None:
    """The one place a write touches the memory directory (tests inject faults here)."""
    atomic_write(path, data)


def _restore(path: Path, data: bytes | None) -> bool:
    """Put a file back to ``data`` (None: remove it); True when it reads back so."""
    try:
        if data is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            fsync_dir(path.parent)
            return not path.exists()
        atomic_write(path, data)
        return path.read_bytes() == data
    except OSError:
        return False


def _new_violations(
    before: list[memrules.Violation], after: list[memrules.Violation]
) -> list[memrules.Violation]:
    # by file and rule: a message may change wording with the write (an
    # index-missing note: "there is no MEMORY.md" -> "MEMORY.md has no entry")
    seen = {(v.file, v.rule) for v in before}
    return [v for v in after if (v.file, v.rule) not in seen]


def apply_write(store: Store, plan: WritePlan, *, command: str) -> WriteResult:
    """Write the note and its index line, check both, record a revision.

    Refuses a plan with near-duplicates unless it revises or ``create`` is set."""
    if plan.duplicates and not plan.create and plan.kind == "write":
        d = plan.duplicates[0]
        if plan.revise is not None:
            raise Conflict(
                f"revised, {plan.file} would look like {d.file} ({d.why})",
                hint=f"revise {d.file} instead, or make the two notes say different things",
            )
        raise Conflict(
            f"{d.file} looks like this note ({d.why})",
            hint=f"revise it with --revise {d.file}, or write a separate note with --create",
        )
    directory = plan.mdir.path
    with store.lock():
        # the directory must still be what the preview showed
        now_note = read_regular(plan.path)
        now_index = read_regular(plan.index_path, memrules.MAX_INDEX_BYTES)
        if now_note != plan.note_old or now_index != plan.index_old:
            raise Conflict(
                f"{directory} changed since the preview",
                hint="run the command again to see the new preview",
            )
        if head(store, plan.mdir.scope) != plan.head:
            raise Conflict(
                f"the {plan.mdir.scope.label} memory was recorded meanwhile",
                hint="run the command again",
            )
        before = memcheck.check_dir(directory)
        pre_files = read_files(directory)
        # the directory as it was is recorded first, so undo and diff show only
        # this write (agents may have edited it since the last snapshot)
        record(
            store,
            plan.mdir.scope,
            pre_files,
            kind="snapshot",
            message="snapshot before write",
            command=command + " (snapshot)",
            directory=directory,
        )
        if read_regular(plan.path) != plan.note_old or (
            read_regular(plan.index_path, memrules.MAX_INDEX_BYTES) != plan.index_old
        ):
            raise Conflict(
                f"{directory} took in what a sync brought while it was recorded",
                hint="run the command again to see the new preview",
            )
        written: list[tuple[Path, bytes | None]] = []
        try:
            written.append((plan.path, plan.note_old))
            _write_file(plan.path, plan.text.encode("utf-8"))
            written.append((plan.index_path, plan.index_old))
            _write_file(plan.index_path, plan.index_new)
            problems = _check_written(plan, before)
            if problems:
                raise _Blocked(problems[0])
            files = read_files(directory)
            op, rev = record(
                store,
                plan.mdir.scope,
                files,
                kind=plan.kind,
                message=f"{plan.kind} {plan.file}",
                command=command,
                directory=directory,
            )
        except BaseException as e:  # an interrupt (Ctrl-C) rolls back too
            ok = all(_restore(p, old) for p, old in reversed(written))
            what = (
                e.message
                if isinstance(e, HistError)
                else "interrupted"
                if isinstance(e, KeyboardInterrupt)
                else f"{type(e).__name__}: {e}"
            )
            raise WriteBlocked(
                f"blocked: {what}; rollback {'succeeded' if ok else 'FAILED'}",
                hint="every file was put back as it was"
                if ok
                else f"check {plan.path} and {plan.index_path} by hand",
            ) from None
    warning = _index_warning(store, plan)
    return WriteResult(plan.file, plan.path, op, rev, plan.index_line, warning)


class _Blocked(HistError):
    pass


def _check_written(plan: WritePlan, before: list[memrules.Violation]) -> list[str]:
    """Read both files back and check every rule: what this write broke."""
    after = memcheck.check_dir(plan.mdir.path)
    problems = [f"{v.rule}: {v}" for v in _new_violations(before, after)]
    if plan.path.read_bytes() != plan.text.encode("utf-8"):
        problems.append(f"{plan.file} does not read back as written")
    if plan.index_path.read_bytes() != plan.index_new:
        problems.append(f"{plan.index_path.name} does not read back as written")
    _note, violations = memrules.parse_note(plan.file, plan.path.read_bytes())
    problems += [f"{v.rule}: {v}" for v in violations]
    entries, _ = memindex.parse_index(plan.index_path.name, plan.index_path.read_bytes())
    if sum(1 for e in entries if e.file == plan.file) != 1:
        problems.append(f"index-entry: {plan.index_path.name} does not list {plan.file} once")
    return problems


def _index_warning(store: Store, plan: WritePlan) -> str | None:
    limit = index_warn_tokens(store)
    if limit == 0:
        return None
    before = memmodels.estimate_tokens((plan.index_old or b"").decode("utf-8", "replace"))
    after = memmodels.estimate_tokens(plan.index_new.decode("utf-8", "replace"))
    if before <= limit < after:
        return (
            f"{plan.index_path.name} is now ~{after} tokens, past memory.index_warn_tokens "
            f"({limit}): tighten long descriptions"
        )
    return None


def plan_restore(store: Store, mdir: MemoryDir, name: str, rev_text: str) -> WritePlan:
    """A write that puts a note back as it was at a revision (a new revision;
    the old ones stay)."""
    file, data, rev = note_at(store, mdir.scope, name, rev_text)
    split = memrules.split_file_name(file)
    if split is None:
        raise BadInput(f"{file} is not a memory note", hint="restore names a note, not the index")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{file}@{rev.id[:12]} is not UTF-8 text: it cannot be restored") from None
    return plan_write(
        store,
        mdir,
        type_=split[0],
        slug=split[1],
        name="",
        description="",
        body="",
        kind="restore",
        text=text,
    )
