"""The one three-way rule (histstore.store.merge) every merge follows."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, turn_record, write_turns

from histstore.memory import folders as memory_folders
from histstore.memory import index as memory_index
from histstore.store import merge
from histstore.store.merge import deletion_loses, keep, merge3, merge3_keyed
from histstore.sync import merge as sync_merge


def test_one_side_changed_takes_that_side() -> None:
    assert merge3("a", "b", "a", keep("x")) == ("b", False)
    assert merge3("b", "a", "a", keep("x")) == ("b", False)
    assert merge3("b", "b", "a", keep("x")) == ("b", False)
    assert merge3("a", "a", "a", keep("x")) == ("a", False)


def test_both_changed_differently_is_a_conflict_settled_by_the_policy() -> None:
    assert merge3("b", "c", "a", keep("x")) == ("x", True)
    assert merge3("b", "c", "a", lambda o, t: max(o, t)) == ("c", True)


def test_a_deletion_is_a_change_and_loses_under_deletion_loses() -> None:
    assert merge3(None, "a", "a", deletion_loses) == (None, False)  # deleted, unchanged there
    assert merge3(None, "b", "a", deletion_loses) == ("b", True)  # deleted here, changed there
    assert merge3("b", None, "a", deletion_loses) == ("b", True)


def test_keyed_merge_drops_what_ends_absent_and_names_the_conflicts() -> None:
    ours = {"a": 1, "b": 2, "c": 3}
    theirs = {"a": 1, "b": 20, "d": 4}
    base = {"a": 1, "b": 2, "c": 3, "d": 5}
    merged, conflicts = merge3_keyed(ours, theirs, base, deletion_loses)
    # c: deleted there, unchanged here; d: deleted here but changed there (a conflict)
    assert merged == {"a": 1, "b": 20, "d": 4}
    assert conflicts == ["d"]
    merged, conflicts = merge3_keyed({"a": 2}, {"a": 3}, {"a": 1}, deletion_loses)
    assert merged == {"a": 2} and conflicts == ["a"]


def test_every_merge_of_the_library_is_made_by_merge3(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The four merges (a session's turns and fields, a memory revision's
    files, an index's entries, a memory folder onto what a sync brought) each
    reach histstore.store.merge.merge3: a spy put where each module looks the
    helper up sees a call from every one of them."""
    callers: set[str] = set()
    picked: set[str] = set()  # what _pick merged: turn entries and fields

    def spy(ours: Any, theirs: Any, base: Any, resolve: Any) -> tuple[Any, bool]:
        caller = sys._getframe(1).f_code.co_qualname
        callers.add(caller)
        if caller == "_pick":
            picked.add(type(ours if ours is not None else theirs).__name__)
        return merge.merge3(ours, theirs, base, resolve)

    for module in (sync_merge, memory_folders, memory_index):
        monkeypatch.setattr(module, "merge3", spy)

    a, b = tmp_path / "a", tmp_path / "b"
    mem_a, mem_b = tmp_path / "mem-a", tmp_path / "mem-b"

    def ok(store: Path, *args: str) -> str:
        r = hs("-C", str(store), *args)
        assert r.exit_code == 0, (args, r.stdout, r.stderr)
        return str(r.stdout)

    def note(store: Path, slug: str, body: str, *how: str) -> None:
        ok(store, "memory", "write", "--type", "user", "--slug", slug, "--name", slug.title(),
           "--description", f"about {slug}", "--body", body, "--yes", *how)  # fmt: skip

    def turns(store: Path, numbers: list[int]) -> None:
        path = write_turns(tmp_path / f"t{numbers[0]}.jsonl", [turn_record(n) for n in numbers])
        ok(store, "import", str(path))

    for store, folder in ((a, mem_a), (b, mem_b)):
        folder.mkdir()
        ok(store, "init")
        ok(store, "memory", "dir", "--set", str(folder))
    ok(b, "remote", "add", "a", str(a))
    turns(a, [1, 2])
    note(a, "editor", "Uses vim.", "--create")
    ok(b, "pull", "a")
    # made apart: a turn of the same session on each side, a note on each side
    turns(a, [3])
    turns(b, [4])
    note(a, "shell", "Uses zsh.")
    note(b, "desk", "Standing desk.")
    ok(b, "sync", "a")  # merge_sessions, merge_memory (and the index by entry)
    # then a folder edited but not recorded, while a sync brings a new note
    ok(a, "memory", "snapshot")  # (a push never writes a's folder)
    note(a, "pager", "Uses less.")
    editor = mem_b / "user_editor.md"
    editor.write_text(editor.read_text() + "Also nano.\n")
    ok(b, "pull", "a")
    ok(b, "memory", "snapshot")  # the folder merged onto what arrived
    assert "Also nano." in editor.read_text() and (mem_b / "user_pager.md").exists()
    assert {
        "_pick",  # every field and turn of merge_sessions
        "merge_memory",
        "merge_index.<locals>.pick",
        "_merge_folder",
    } <= callers, callers
    # the session merge took both its turns and its fields through it (markers
    # merge as a join of their heads, sync/merge.py: no base, no three-way)
    assert {"TurnEntry", "str"} <= picked, picked
