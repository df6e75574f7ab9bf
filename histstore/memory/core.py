"""Memory files with history: scopes, directories, revisions, checked writes.

An agent's memory is a flat directory of markdown notes (``<type>_<slug>.md``,
YAML frontmatter) and their one-line index ``MEMORY.md`` (the rules:
:mod:`histstore.memrules`). There is one directory per *scope*: the system
scope and one per project (the project key turns use). The store keeps every
state of a scope's directory as a revision (docs/format.md, "Memory"):

- ``memtree``  ``{"files": {"<file name>": "<blob id>"}}`` — the directory;
- ``memrev``   ``{"scope", "project", "tree", "parents", "time", "kind", "message"}``
  (plus ``"conflicts"`` on a merge made by sync);
- ``memory/<scope>`` points at the scope's newest revision; ``<scope>`` is
  ``system`` or ``p-`` + the first 16 hex digits of blake3(project key).

A note's text is redacted before it is hashed, like every other object.

Writes (:func:`plan_write` then :func:`apply_write`) touch exactly the note's
file and one index line, read both back and check every rule; any failure puts
every changed file back to its previous bytes (a created file is removed) and
raises :class:`WriteBlocked` saying which rule failed and whether the rollback
succeeded. Each write, snapshot and restore is one operation in the refs log,
so ``hs undo`` takes it back — files included, when the directory still holds
what the operation wrote.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import os
import re
import stat
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3

from histstore.errors import BadInput, Conflict, HistError, NotFound
from histstore.memory import rules as memrules
from histstore.store.clock import now_rfc3339
from histstore.store.codec import canonical_json, hash_object, is_id_prefix, is_object_id
from histstore.store.fsutil import atomic_write, fsync_dir
from histstore.store.merge import deletion_loses, merge3
from histstore.store.oplog import Operation, RefChange
from histstore.store.store import Store

PREFIX = "memory/"
SYSTEM = "system"
DEFAULT_INDEX_WARN_TOKENS = 2500
#: the system scope's note that says who the person is (hs memory prompt)
IDENTITY_FILE = "user_identity.md"
INDEX_FILE = "MEMORY.md"
#: the revision kinds that changed files in the directory (undo puts them back)
FILE_KINDS = ("write", "restore")


class WriteBlocked(HistError):
    """A write failed a check after it touched the directory (exit 10)."""

    exit_code = 10


# --------------------------------------------------------------------- scopes


@dataclass(frozen=True)
class Scope:
    id: str  # "system" or "p-<16 hex>"
    project: str | None  # the project key, None for the system scope

    @property
    def ref(self) -> str:
        return PREFIX + self.id

    @property
    def label(self) -> str:
        return "system" if self.project is None else f"project {self.project}"


def scope_for(project: str | None) -> Scope:
    """The system scope (None) or the scope of a project key."""
    if project is None:
        return Scope(SYSTEM, None)
    digest = blake3.blake3(project.encode("utf-8")).hexdigest()
    return Scope(f"p-{digest[:16]}", project)


def configured_dirs(store: Store) -> dict[str, str]:
    """``[memory.dirs]`` of config.toml: ``system`` or a project key -> directory."""
    dirs = store.config.get("memory", {}).get("dirs", {})
    if not isinstance(dirs, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in dirs.items()
    ):
        raise BadInput("config.toml: [memory.dirs] must map scope names to directory paths")
    return dirs


def index_warn_tokens(store: Store) -> int:
    value = store.config.get("memory", {}).get("index_warn_tokens", DEFAULT_INDEX_WARN_TOKENS)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadInput(
            "config.toml: memory.index_warn_tokens must be a whole number >= 0",
            hint="0 turns the warning off",
        )
    return value


@dataclass(frozen=True)
class MemoryDir:
    scope: Scope
    path: Path  # resolved
    source: str  # "--memory-dir", "MEMORY_DIR", "config"


def _in_version_control(path: Path) -> bool:
    """Would git track files in ``path``? (inside a work tree and not ignored)"""
    top = next((d for d in (path, *path.parents) if (d / ".git").exists()), None)
    if top is None:
        return False
    try:
        ignored = subprocess.run(
            ["git", "-C", str(top), "check-ignore", "-q", str(path / "MEMORY.md")],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return True  # no git to ask: a work tree is a work tree
    return ignored.returncode != 0


def memory_dir(
    store: Store,
    scope: Scope,
    given: Path | None = None,
    *,
    use_env: bool = True,
    given_as: str = "--memory-dir",
) -> MemoryDir:
    """``--memory-dir``, else ``$MEMORY_DIR``, else the folder config.toml names.

    Every path is untrusted: one inside a git work tree (not ignored) is
    refused, and a missing directory is never created here."""
    if given is not None:
        raw, source = str(given), given_as
    elif use_env and os.environ.get("MEMORY_DIR"):
        raw, source = os.environ["MEMORY_DIR"], "MEMORY_DIR"
    else:
        dirs = configured_dirs(store)
        key = SYSTEM if scope.project is None else scope.project
        if key not in dirs:
            raise NotFound(
                f"no memory directory for the {scope.label} scope",
                hint="pass --memory-dir DIR, set MEMORY_DIR, or name one with "
                "`hs memory dir --set DIR`",
            )
        raw, source = dirs[key], "config"
    if "\0" in raw:
        raise BadInput(f"{source} holds a NUL character")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    if not path.exists():
        raise NotFound(
            f"{source} {path} does not exist",
            hint=f"create it first (mkdir -p {path}); hs does not create memory directories",
        )
    if not path.is_dir():
        raise BadInput(f"{source} {path} is not a directory")
    path = path.resolve()
    root = store.root.resolve()
    if path == root or path.is_relative_to(root) or root.is_relative_to(path):
        raise BadInput(
            f"{source} {path} is inside the store (or holds it)",
            hint="keep memory in its own folder, apart from the store",
        )
    if _in_version_control(path):
        raise BadInput(
            f"{source} is inside version control ({path})",
            hint="keep memory outside a git work tree, or list it in .gitignore",
        )
    return MemoryDir(scope, path, source)


def _inside(directory: Path, name: str) -> Path:
    """The file ``name`` of ``directory``; refused when it would resolve outside."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        raise BadInput(f"{name!r} is not a file name in the memory directory")
    path = directory / name
    if path.is_symlink() or not path.resolve().is_relative_to(directory):
        raise BadInput(
            f"{name} resolves outside the memory directory {directory}",
            hint="memory files must be regular files inside the directory (no symlinks)",
        )
    return path


# ------------------------------------------------------------------ revisions


@dataclass(frozen=True)
class Revision:
    id: str
    scope: str
    project: str | None
    tree: str
    parents: list[str]
    time: str
    kind: str
    message: str
    conflicts: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "scope": self.scope,
            "project": self.project,
            "tree": self.tree,
            "parents": self.parents,
            "time": self.time,
            "kind": self.kind,
            "message": self.message,
        }
        if self.conflicts:
            d["conflicts"] = self.conflicts
        return d


def load_revision(store: Store, rev_id: str) -> Revision:
    d = store.get_json(rev_id, "memrev")
    try:
        return Revision(
            rev_id,
            d["scope"],
            d.get("project"),
            d["tree"],
            list(d["parents"]),
            d["time"],
            d["kind"],
            d.get("message") or "",
            list(d.get("conflicts") or []),
        )
    except (KeyError, TypeError) as e:
        from histstore.errors import CorruptObject

        raise CorruptObject(rev_id, f"not a memory revision (missing {e})") from None


def load_tree(store: Store, tree_id: str) -> dict[str, str]:
    files = store.get_json(tree_id, "memtree").get("files")
    if not isinstance(files, dict):
        from histstore.errors import CorruptObject

        raise CorruptObject(tree_id, "not a memory tree")
    return dict(files)


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
        frontier.extend(p for p in rev.parents if p not in seen)


def read_files(directory: Path) -> dict[str, bytes]:
    """The files a revision records: the top-level regular ``*.md`` files (the
    notes and the index). Symlinks are refused, other files ignored."""
    out: dict[str, bytes] = {}
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.name.startswith(".") or not entry.name.lower().endswith(".md"):
            continue
        if entry.is_symlink() and not Path(entry.path).resolve().is_relative_to(
            directory.resolve()
        ):
            raise BadInput(
                f"{entry.name} in {directory} is a symlink leading outside it",
                hint="memory files must be regular files inside the directory",
            )
        if entry.is_file():
            data = read_regular(
                Path(entry.path), max(memrules.MAX_NOTE_BYTES, memrules.MAX_INDEX_BYTES)
            )
            if data is not None:
                out[entry.name] = data
    return out


def read_regular(path: Path, limit: int = memrules.MAX_NOTE_BYTES) -> bytes | None:
    """A memory file's bytes; None when there is none. Anything but a regular
    file (a FIFO, a device, a folder) is refused before it is opened, and so is
    a file over ``limit`` bytes."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{path} is not a regular file", hint="memory files are plain text files")
    if st.st_size > limit:
        raise BadInput(
            f"{path.name} is {st.st_size} bytes, over the {limit}-byte limit of a memory file",
            hint="shorten it; `hs memory check` lists every problem",
        )
    return path.read_bytes()


def _redacted(store: Store, data: bytes) -> bytes:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # not text: kept as it is (hs memory check refuses it)
    clean = store.redactor(text)
    return data if clean == text else clean.encode("utf-8")


def put_tree(store: Store, files: dict[str, bytes]) -> str:
    ids = {name: store.objects.put("blob", _redacted(store, data)) for name, data in files.items()}
    return store.objects.put("memtree", canonical_json({"files": ids}))


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
        old_tree = load_tree(store, load_revision(store, old).tree)
        b = read_base(store, scope)
        # no record: the folder never matched a revision here (the scope came
        # by a push or pull): merged against nothing, so nothing is deleted
        base = b.rev if b is not None else None
        withheld = set(b.withheld if b is not None else ())
        files = as_recorded(store, folder, old_tree, withheld)
        if base != old:
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
    tree = put_tree(store, files)
    tree_files = load_tree(store, tree)
    # what the folder is given: all but the notes still withheld (a lifted
    # exclusion's note comes in)
    # never an excluded note (the folder keeps what it has of one); a note
    # whose exclusion was lifted comes in
    give = _not_given(store, scope, tree_files, folder) if directory is not None else set()

    def settle(rev: str) -> None:
        assert directory is not None
        after = as_given(store, tree_files, give, folder)
        _write_folder(directory, folder, after)
        set_base(store, scope, rev, _still_withheld(store, scope, tree_files, after, withheld))

    if old is not None and load_revision(store, old).tree == tree:
        if directory is not None:
            settle(old)
        return None, old
    rev = Revision(
        "",
        scope.id,
        scope.project,
        tree,
        [old] if old else [],
        now_rfc3339(),
        kind,
        message,
        conflicts,
    )
    rev_id = store.objects.put("memrev", canonical_json(rev.as_json()))
    extra: dict[str, Any] = {"kind": "memory", "scope": scope.id, "memory_kind": kind}
    if directory is not None:
        extra["dir"] = str(directory)
    op = store.apply([RefChange(scope.ref, old, rev_id)], command, extra=extra)
    if directory is not None:
        settle(rev_id)
    return op, rev_id


# ------------------------------------------------ a folder and its base


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
    from histstore.overlay.markers import Overlay

    out = set()
    for target, marker in Overlay.read(store).markers.items():
        parsed = parse_target(target)
        if marker.excludes and parsed is not None and parsed[0] == scope.id:
            out.add(parsed[1])
    return out


def _link(line: str) -> str | None:
    m = re.search(r"\]\(([^)]+)\)", line)
    return m.group(1) if m else None


def _split_index(data: bytes, withheld: set[str]) -> tuple[list[str], list[str]]:
    """An index's lines (with their endings): (the others, those of withheld notes)."""
    mine: list[str] = []
    held: list[str] = []
    for ln in data.decode("utf-8", "replace").splitlines(keepends=True):
        (held if _link(ln) in withheld else mine).append(ln)
    return mine, held


def _join(lines: list[str], extra: list[str]) -> bytes:
    out = list(lines)
    if out and extra and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return "".join(out + extra).encode("utf-8")


def as_recorded(
    store: Store, folder: dict[str, bytes], tree: dict[str, str], withheld: set[str]
) -> dict[str, bytes]:
    """A folder's files as a revision records them against ``tree``: a
    withheld note is ``tree``'s (the folder's copy, or its absence, is not an
    edit), and so are the index lines of withheld notes."""
    out = {f: _redacted(store, d) for f, d in folder.items() if f not in withheld}
    for f in withheld:
        if f in tree:
            out[f] = store.get_blob(tree[f])
    if withheld:
        for f, data in list(out.items()):
            if not memrules.is_index_name(f) or f not in tree:
                continue
            theirs = store.get_blob(tree[f])
            t_rest, t_held = _split_index(theirs, withheld)
            f_rest, _ = _split_index(data, withheld)
            if f_rest == t_rest:
                out[f] = theirs  # as given: the tree's own bytes, lines in place
            else:
                out[f] = _join(f_rest, t_held)
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
            _, held_here = _split_index(folder.get(f, b""), withheld)
            mine = {_link(ln): ln for ln in held_here}
            lines = []
            for ln in data.decode("utf-8", "replace").splitlines(keepends=True):
                note = _link(ln)
                if note not in withheld:
                    lines.append(ln)
                elif note in mine:  # the folder's own line, where the tree has it
                    lines.append(mine.pop(note))
            out[f] = _join(lines, list(mine.values()))
    return out


def _write_folder(directory: Path, current: dict[str, bytes], target: dict[str, bytes]) -> int:
    """Make the folder hold ``target`` (atomic writes, removals): files changed."""
    changed = 0
    for f in sorted(set(current) | set(target)):
        if current.get(f) == target.get(f):
            continue
        path = _inside(directory, f)
        if f in target:
            atomic_write(path, target[f])
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        changed += 1
    if changed:
        fsync_dir(directory)
    return changed


def _still_withheld(
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
        if have is None or _redacted(store, have) != store.get_blob(tree[f]):
            out.add(f)
    return out


def _not_given(
    store: Store, scope: Scope, tree: dict[str, str], folder: dict[str, bytes]
) -> set[str]:
    """The excluded notes whose text in ``tree`` the folder does not hold: not
    written into it (its copy, or its absence, stays). An excluded note the
    folder holds as the tree has it is given like any other (its index line
    follows), and one the tree no longer holds is removed like any other."""
    out = set()
    for f in excluded_files(store, scope) & set(tree):
        have = folder.get(f)
        if have is None or _redacted(store, have) != store.get_blob(tree[f]):
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
            by_entry = memrules.merge_index(
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


# ------------------------------------------------------------------- reading


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
    if len(by_slug) == 1:
        return by_slug[0]
    by_name = []
    for f, blob in files.items():
        if memrules.is_index_name(f):
            continue
        note, _ = memrules.parse_note(f, store.get_blob(blob))
        if note is not None and note_key(note.name) == key:
            by_name.append(f)
    found = by_name or by_slug
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        from histstore.errors import Ambiguous

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
        from histstore.errors import Ambiguous

        raise Ambiguous(f"revision {text!r} is ambiguous", [r.id for r in found[:10]])
    return found[0]


def split_name_rev(text: str) -> tuple[str, str | None]:
    name, sep, rev = text.rpartition("@")
    return (name, rev) if sep and name else (text, None)


@dataclass(frozen=True)
class Change:
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


def first_parent_tree(store: Store, rev: Revision) -> str | None:
    return load_revision(store, rev.parents[0]).tree if rev.parents else None


def log(store: Store, scope: Scope, name: str | None = None) -> list[tuple[Revision, list[Change]]]:
    """Revisions newest first with what each changed (only those touching
    ``name`` when given)."""
    out = []
    file: str | None = None
    if name is not None:
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
    """(file, bytes, revision) of a note at a revision (default: the newest)."""
    rev = resolve_rev(store, scope, rev_text)
    files = load_tree(store, rev.tree)
    file = _file_in_history(store, scope, name) if rev_text is None else None
    if file is None or file not in files:
        file = find_file(store, files, name)
    return file, store.get_blob(files[file]), rev


def unified(old: bytes | None, new: bytes | None, old_label: str, new_label: str) -> list[str]:
    a = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
    lines = list(difflib.unified_diff(a, b, old_label, new_label))
    return [ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines]


def diff(
    store: Store,
    scope: Scope,
    name: str | None,
    rev1: str | None,
    rev2: str | None,
    *,
    skip: Callable[[str], bool] = lambda file: False,
) -> list[str]:
    """A unified diff. No revisions: the last change (of ``name``, or of the
    scope); one: that revision against the newest; two: the first against the
    second. ``skip``: files whose text must not be shown (excluded notes)."""
    if rev1 is None:
        entries = log(store, scope, name)
        if not entries:
            raise NotFound(f"the {scope.label} memory has no revision yet")
        rev = entries[0][0]
        b = rev
        a = load_revision(store, rev.parents[0]) if rev.parents else None
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
    out: list[str] = []
    for f in wanted:
        if a_files.get(f) == b_files.get(f) or skip(f):
            continue
        old = store.get_blob(a_files[f]) if f in a_files else None
        new = store.get_blob(b_files[f]) if f in b_files else None
        if memrules.is_index_name(f):
            old = drop_index_lines(old, skip) if old is not None else None
            new = drop_index_lines(new, skip) if new is not None else None
            if old == new:
                continue
        a_label = f"a/{f}@{a.id[:12]}" if a and f in a_files else "/dev/null"
        b_label = f"b/{f}@{b.id[:12]}" if f in b_files else "/dev/null"
        out.extend(unified(old, new, a_label, b_label))
    return out


# ------------------------------------------------------------------- writing


@dataclass(frozen=True)
class Duplicate:
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
    directory: Path, file: str, note: memrules.Note, skip: str | None
) -> list[Duplicate]:
    """Notes of the directory that look like ``note``: same name or slug, or a
    close description or body. ``skip``: the file being revised."""
    out = []
    for name, data in read_files(directory).items():
        if name == skip or memrules.is_index_name(name):
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


def drop_index_lines(data: bytes, hidden: Callable[[str], bool]) -> bytes:
    """An index without the lines of the notes ``hidden`` names (exclusions:
    not even a note's name and description are handed out)."""
    lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(ln for ln in lines if (f := _link(ln)) is None or not hidden(f)).encode()


def index_file(directory: Path) -> str:
    """The directory's index: ``MEMORY.md``, else another name in any case
    (``memory.md``, ``INDEX.md``) that is there, else ``MEMORY.md`` (created)."""
    if (directory / INDEX_FILE).is_file():
        return INDEX_FILE
    found = memrules.index_order(e.name for e in os.scandir(directory) if e.is_file())
    return found[0] if found else INDEX_FILE


def draft_fields(text: str) -> dict[str, Any]:
    """The frontmatter of a draft note as a mapping ({} when it has none)."""
    import yaml

    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        data = yaml.safe_load("\n".join(lines[1:end]))
    except (StopIteration, yaml.YAMLError, RecursionError):
        return {}  # parse_note reports what is wrong with it
    return data if isinstance(data, dict) else {}


def _index_with(index_old: bytes | None, file: str, line: str) -> tuple[bytes, str | None]:
    """The index with exactly one line added or changed: (new bytes, replaced line)."""
    text = (index_old or b"").decode("utf-8-sig") if index_old else ""
    # lines as memrules.parse_index counts them (split on "\n" only), each
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
    entries, _ = memrules.parse_index(INDEX_FILE, index_old or b"")
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
    target_file: str | None = None
    if revise is not None:
        files = {f: "" for f in read_files(directory)}
        target_file = _find_in_dir(directory, files, revise)
        split = memrules.split_file_name(target_file)
        assert split is not None
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
    file = memrules.note_file_name(type_, slug)
    if text is None:
        if not name.strip() or not description.strip():
            raise BadInput("a memory needs a non-empty --name and --description")
        for what, value in (("--name", name), ("--description", description)):
            if any(c in value for c in "\r\n\x00"):
                raise BadInput(f"{what} holds a line break", hint="give it on one line")
        text = memrules.render_note(type_, name.strip(), description.strip(), body)
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
    path = _inside(directory, file)
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
    dups = near_duplicates(directory, file, note, skip=file if revise or kind != "write" else None)
    index_path = _inside(directory, index_file(directory))
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
    line = memrules.index_line(note.name, file, note.description)
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
    if not lifted and _same(store, as_recorded(store, folder, tip_tree, withheld), tip_tree):
        return
    base_tree = load_tree(store, load_revision(store, b.rev).tree) if b.rev else {}
    edits = not _same(store, as_recorded(store, folder, base_tree, withheld), base_tree)
    raise Conflict(
        f"{mdir.path} is behind revision {tip[:12]} of the {mdir.scope.label} memory "
        f"(a sync brought it){' and holds edits of its own' if edits else ''}",
        hint="`hs memory snapshot` "
        + ("merges the two" if edits else "brings it up to date")
        + "; then write again",
    )


def _same(store: Store, files: dict[str, bytes], tree: dict[str, str]) -> bool:
    return {f: hash_object("blob", d) for f, d in files.items()} == tree


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
        from histstore.errors import Ambiguous

        raise Ambiguous(f"memory {name!r} is ambiguous", sorted(hits), hint="give the file name")
    raise NotFound(
        f"no memory {name!r} in {directory}", hint="see the notes with `hs memory check`"
    )


@dataclass
class WriteResult:
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
        before = memrules.check_dir(directory)
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
    after = memrules.check_dir(plan.mdir.path)
    problems = [f"{v.rule}: {v}" for v in _new_violations(before, after)]
    if plan.path.read_bytes() != plan.text.encode("utf-8"):
        problems.append(f"{plan.file} does not read back as written")
    if plan.index_path.read_bytes() != plan.index_new:
        problems.append(f"{plan.index_path.name} does not read back as written")
    _note, violations = memrules.parse_note(plan.file, plan.path.read_bytes())
    problems += [f"{v.rule}: {v}" for v in violations]
    entries, _ = memrules.parse_index(plan.index_path.name, plan.index_path.read_bytes())
    if sum(1 for e in entries if e.file == plan.file) != 1:
        problems.append(f"index-entry: {plan.index_path.name} does not list {plan.file} once")
    return problems


def _index_warning(store: Store, plan: WritePlan) -> str | None:
    limit = index_warn_tokens(store)
    if limit == 0:
        return None
    before = memrules.estimate_tokens((plan.index_old or b"").decode("utf-8", "replace"))
    after = memrules.estimate_tokens(plan.index_new.decode("utf-8", "replace"))
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


# ---------------------------------------------------------------------- undo


def undo_files(store: Store, op: Operation, inverse: list[RefChange]) -> Callable[[], None] | None:
    """Before an undo moves memory refs (lock held): check that each directory
    the operation wrote still holds what it wrote, and return the step that puts
    the files back as they were before it (None: nothing to do on disk).
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
    steps: list[tuple[Scope, dict[str, bytes], dict[str, bytes], dict[str, str], set[str]]] = []
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
        give = _not_given(store, scope, back_tree, current)
        steps.append(
            (scope, current, as_given(store, back_tree, give, current), back_tree, withheld)
        )

    def run() -> None:
        for (scope, current, target, back_tree, withheld), c in zip(steps, mem, strict=True):
            _write_folder(path, current, target)
            set_base(
                store, scope, c.new, _still_withheld(store, scope, back_tree, target, withheld)
            )

    return run


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


# -------------------------------------------------------------------- prompt


@dataclass(frozen=True)
class PromptPart:
    what: str  # "identity", "model note", "index"
    scope: str
    file: str
    text: str

    @property
    def tokens(self) -> int:
        return memrules.estimate_tokens(self.text)

    def as_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "scope": self.scope,
            "file": self.file,
            "tokens": self.tokens,
            "text": self.text,
        }


def prompt(
    store: Store, model: str, dirs: list[MemoryDir], hidden: Callable[[Scope, str], bool]
) -> list[PromptPart]:
    """What a session on ``model`` gets: the identity memory, the model notes
    that match (system scope, then project), then each scope's index."""
    if not model.strip():
        raise BadInput("no model given", hint="e.g. --model claude-sonnet-4-5")
    identity: list[PromptPart] = []
    notes: list[PromptPart] = []
    indexes: list[PromptPart] = []
    for mdir in sorted(dirs, key=lambda d: d.scope.project is not None):
        files = read_files(mdir.path)
        label = mdir.scope.label
        for f, data in files.items():
            if hidden(mdir.scope, f):
                continue
            text = data.decode("utf-8", "replace")
            if memrules.is_index_name(f):
                kept = drop_index_lines(data, functools.partial(hidden, mdir.scope))
                indexes.append(PromptPart("index", label, f, kept.decode("utf-8", "replace")))
                continue
            note, _ = memrules.parse_note(f, data)
            if note is None:
                continue
            if mdir.scope.project is None and f == IDENTITY_FILE:
                identity.append(PromptPart("identity", label, f, text))
            elif note.models is not None and memrules.model_matches(note.models, model):
                notes.append(PromptPart("model note", label, f, text))
    return identity + notes + indexes


# ---------------------------------------------------------------- forgetting


TARGET_PREFIX = "memory@"


def target_id(scope: Scope, file: str) -> str:
    """The overlay target naming a note: ``memory@<scope>@<type>@<slug>``."""
    split = memrules.split_file_name(file)
    if split is None:
        raise BadInput(f"{file} is not a memory note")
    return f"{TARGET_PREFIX}{scope.id}@{split[0]}@{split[1]}"


def parse_target(target: str) -> tuple[str, str] | None:
    """(scope id, file) of a memory target, None when it is not one."""
    if not target.startswith(TARGET_PREFIX):
        return None
    parts = target[len(TARGET_PREFIX) :].split("@")
    if len(parts) != 3:
        return None
    return parts[0], f"{parts[1]}_{parts[2]}.md"


# -------------------------------------------------------------------- recall


@dataclass(frozen=True)
class NoteHit:
    scope: Scope
    file: str
    name: str
    description: str
    matched: int  # how many of the query's terms the note holds

    def as_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope.id,
            "project": self.scope.project,
            "file": self.file,
            "name": self.name,
            "description": self.description,
            "matched": self.matched,
            "target": target_id(self.scope, self.file),
        }


def search_notes(
    store: Store,
    terms: list[str],
    project: str | None,
    *,
    everywhere: bool = False,
    k: int = 3,
) -> list[NoteHit]:
    """The memory notes (newest revisions) holding the most of ``terms``, case
    folded: the system scope and ``project``'s (every scope when
    ``everywhere``). Notes the overlay hides are left out."""
    from histstore.overlay.markers import Overlay

    heads = scopes(store)
    if not heads or not terms:
        return []
    wanted = {SYSTEM, scope_for(project).id} if project is not None else {SYSTEM}
    overlay = Overlay.read(store)
    need = max(1, -(-len(terms) // 2))
    hits = []
    for scope_id, rev_id in sorted(heads.items()):
        if not everywhere and scope_id not in wanted:
            continue
        rev = load_revision(store, rev_id)
        scope = Scope(scope_id, rev.project)
        for file, blob in sorted(load_tree(store, rev.tree).items()):
            if memrules.is_index_name(file) or memrules.split_file_name(file) is None:
                continue
            marker = overlay.markers.get(target_id(scope, file))
            if marker is not None and marker.active:
                continue
            data = store.get_blob(blob)
            text = data.decode("utf-8", "replace").casefold()
            matched = sum(1 for t in terms if t.casefold() in text)
            if matched < need:
                continue
            note, _ = memrules.parse_note(file, data)
            name = note.name if note else file
            description = note.description if note else ""
            hits.append(NoteHit(scope, file, name, description, matched))
    hits.sort(key=lambda h: (-h.matched, h.scope.id, h.file))
    return hits[:k]


# ---------------------------------------------------------------------- sync


def follow(store: Store, scope: Scope, old_rev: str | None, new_rev: str | None) -> str | None:
    """After a sync moved a scope's ref from ``old_rev`` to ``new_rev``: bring
    the directory config.toml names for the scope along, as ``git pull`` does a
    clean work tree — only when it still holds exactly what it was last given
    (its base; ``old_rev`` when it has none): no edit is ever overwritten, and
    an excluded note's text is never written. Returns what happened, for the
    person, or None when the scope has no directory here."""
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
        if not _same(store, as_recorded(store, folder, base_tree, withheld), base_tree):
            return (
                f"{mdir.path} has edits not recorded: left as it is; `hs memory snapshot` "
                "records them merged with what arrived"
            )
        new_tree = load_tree(store, load_revision(store, new_rev).tree) if new_rev else {}
        after = as_given(store, new_tree, _not_given(store, scope, new_tree, folder), folder)
        changed = _write_folder(mdir.path, folder, after)
        set_base(store, scope, new_rev, _still_withheld(store, scope, new_tree, after, withheld))
    return f"{mdir.path}: {changed} file{'s' if changed != 1 else ''} updated" if changed else None
