"""What memory gives a model: the prompt of a session, notes that match a
recall, and the notes an agent's tools list and read.

All leave out every note the overlay hides from a model (a tombstone or an
exclusion: View.MEMORY_PROMPT), and the index lines that link them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from histstore.errors import Ambiguous, BadInput, NotFound
from histstore.memory import models as memmodels
from histstore.memory import rules as memrules
from histstore.memory.revisions import find_file, load_revision, load_tree, scopes
from histstore.memory.scopes import (
    IDENTITY_FILE,
    SYSTEM,
    MemoryDir,
    Scope,
    drop_index_lines,
    read_files,
    scope_for,
    target_id,
)
from histstore.overlay.markers import Overlay
from histstore.overlay.visibility import View, Visibility
from histstore.store.store import Store


@dataclass(frozen=True)
class PromptPart:
    """A piece of the memory prompt: what it is, where it came from, its text."""

    what: str  # "identity", "model note", "index"
    scope: str
    file: str
    text: str

    @property
    def tokens(self) -> int:
        return memmodels.estimate_tokens(self.text)

    def as_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "scope": self.scope,
            "file": self.file,
            "tokens": self.tokens,
            "text": self.text,
        }


def _hidden(store: Store) -> Callable[[Scope, str], bool]:
    """Whether a note is left out of what a model is given (a tombstone or an
    exclusion: histstore.overlay.visibility, View.MEMORY_PROMPT)."""
    vis = Visibility(Overlay.read(store))
    return lambda scope, file: vis.note(View.MEMORY_PROMPT, scope.id, file) is not None


def prompt(store: Store, model: str, dirs: list[MemoryDir]) -> list[PromptPart]:
    """What a session on ``model`` gets: the identity memory, the model notes
    that match (system scope, then project), then each scope's index. Notes
    the overlay hides are left out, and their index lines."""
    if not model.strip():
        raise BadInput("no model given", hint="e.g. --model claude-sonnet-4-5")
    hidden = _hidden(store)
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
            elif note.models is not None and memmodels.model_matches(note.models, model):
                notes.append(PromptPart("model note", label, f, text))
    return identity + notes + indexes


@dataclass(frozen=True)
class NoteHit:
    """A memory note a recall found, with how many of the query's terms it holds."""

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
    heads = scopes(store)
    if not heads or not terms:
        return []
    wanted = {SYSTEM, scope_for(project).id} if project is not None else {SYSTEM}
    hidden = _hidden(store)
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
            if hidden(scope, file):
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


# ------------------------------------------------------------ an agent's own reads
#
# What an agent's tools (the MCP server) list and read of memory: the newest
# revision of each scope, as View.MEMORY_PROMPT allows it — what a model is
# given, so a tombstoned note is left out as well as an excluded one, and so
# are their index lines.


@dataclass(frozen=True)
class ListedNote:
    """A memory note as a listing shows it, with the rules it breaks."""

    scope: Scope
    file: str
    type: str
    name: str
    description: str
    problems: int  # how many memory rules the note breaks (0: none)

    def as_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope.id,
            "project": self.scope.project,
            "file": self.file,
            "type": self.type,
            "name": self.name,
            "description": self.description,
            "problems": self.problems,
        }


def _newest_files(store: Store, scope: Scope) -> dict[str, str] | None:
    """file -> blob id of the scope's newest revision; None when it has none."""
    rev_id = scopes(store).get(scope.id)
    if rev_id is None:
        return None
    return load_tree(store, load_revision(store, rev_id).tree)


def list_notes(store: Store, wanted: list[Scope]) -> list[ListedNote]:
    """The notes of each scope's newest revision (scopes in the order given,
    notes by file name), without the notes the overlay hides from a model."""
    hidden = _hidden(store)
    out: list[ListedNote] = []
    for scope in wanted:
        files = _newest_files(store, scope)
        for file, blob in sorted((files or {}).items()):
            split = memrules.split_file_name(file)
            if split is None or hidden(scope, file):
                continue  # an index, a stray file, or a note a model is not given
            note, violations = memrules.parse_note(file, store.get_blob(blob))
            name = note.name if note and note.name else file
            description = note.description if note else ""
            out.append(ListedNote(scope, file, split[0], name, description, len(violations)))
    return out


def read_note(store: Store, wanted: list[Scope], name: str) -> tuple[Scope, str, bytes]:
    """(scope, file, bytes) of a note or an index of the newest revisions, by
    file name, slug or frontmatter name, looked for in each scope given; a
    note the overlay hides from a model is refused (its text never leaves),
    an index comes without the lines of hidden notes."""
    if not name.strip():
        raise BadInput("no memory name given", hint="give a note's file name, slug or name")
    hidden = _hidden(store)
    found: list[tuple[Scope, str, str]] = []
    for scope in wanted:
        files = _newest_files(store, scope)
        if not files:
            continue
        try:
            file = find_file(store, files, name)
        except NotFound:
            continue
        found.append((scope, file, files[file]))
    if not found:
        raise NotFound(f"no memory {name!r}", hint="memory_list shows the notes there are")
    if len(found) > 1:
        raise Ambiguous(
            f"memory {name!r} is in more than one scope",
            [f"{s.label}: {f}" for s, f, _ in found],
            hint="give the scope",
        )
    scope, file, blob = found[0]
    if hidden(scope, file):
        raise NotFound(
            f"memory {file} is forgotten: its text is not given to agents",
            hint=f"a person can bring it back with `hs unforget {target_id(scope, file)}`",
        )
    data = store.get_blob(blob)
    if memrules.is_index_name(file):
        data = drop_index_lines(data, functools.partial(hidden, scope))
    return scope, file, data
