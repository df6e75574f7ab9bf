"""What memory gives a model: the prompt of a session, and notes that match a recall.

Both leave out every note the overlay hides (a tombstone or an exclusion),
and the index lines that link them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from histstore.errors import BadInput
from histstore.memory import models as memmodels
from histstore.memory import rules as memrules
from histstore.memory.revisions import load_revision, load_tree, scopes
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
