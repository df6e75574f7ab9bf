"""Invariant 3 through the library, no CLI: no library read path hands out the
text of an excluded turn or note, and a tombstone hides exactly what the
visibility policy (histstore.overlay.visibility) says.

Every read path a caller (the porcelain, the plumbing, an agent's tool server)
uses is driven directly, and everything it returns is searched for words that
only the forgotten turn or note holds; so is every answer and error of the MCP
server (`hs mcp`, driven over stdio by the SDK's client)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import turn_record, write_turns

from histstore.memory.folders import snapshot
from histstore.memory.prompt import prompt, search_notes
from histstore.memory.revisions import diff, log, note_at
from histstore.memory.scopes import memory_dir, scope_for, target_id
from histstore.memory.writes import plan_restore
from histstore.ops.forget import forget, forgotten, resolve_target
from histstore.ops.importing import import_paths
from histstore.overlay import reads
from histstore.overlay.export import exported_turns, jsonl_line, markdown
from histstore.recall.index import recall
from histstore.store.store import Store

SECRET_TURN = "quetzalcoatl"  # only in the excluded turn
SECRET_SESSION = "axolotl"  # only in the excluded session
SECRET_NOTE = "pangolin"  # only in the excluded note
TOMB = "capybara"  # only in the tombstoned turn
COMMON = "login"  # in every turn and note


def dump(value: Any) -> str:
    """Everything a read path returned, as text to search."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.dumps(value, default=lambda o: dump(o) if dataclasses.is_dataclass(o) else repr(o))


def note(slug: str, word: str) -> bytes:
    return (
        f"---\nname: Note {slug}\ndescription: about {COMMON} and {word}\ntype: feedback\n---\n\n"
        f"{COMMON} {word} rule.\n\n**Why:** {word}.\n\n**How to apply:** {word}.\n"
    ).encode()


@pytest.fixture
def forgotten_store(tmp_path: Path, store: Store) -> tuple[Store, Path]:
    recs = [
        turn_record(1, session_id="s-keep", asked=f"{COMMON} one", answered="fine"),
        turn_record(2, session_id="s-keep", asked=f"{COMMON} {SECRET_TURN}", answered=SECRET_TURN),
        turn_record(3, session_id="s-keep", asked=f"{COMMON} {TOMB}", answered=TOMB),
        turn_record(4, session_id="s-gone", asked=f"{COMMON} {SECRET_SESSION}", answered="x"),
    ]
    import_paths(store, [write_turns(tmp_path / "in.jsonl", recs)])
    mem = tmp_path / "mem"
    mem.mkdir()
    (mem / "feedback_keep.md").write_bytes(note("keep", "fine"))
    (mem / "feedback_gone.md").write_bytes(note("gone", SECRET_NOTE))
    (mem / "MEMORY.md").write_bytes(
        b"- [Note keep](feedback_keep.md) \xe2\x80\x94 keep\n"
        + f"- [Note gone](feedback_gone.md) \u2014 {SECRET_NOTE}\n".encode()
    )
    scope = scope_for(None)
    snapshot(store, memory_dir(store, scope, mem))
    for target, mode in (
        ("turn-0002", "exclude"),
        ("s-gone", "exclude"),
        ("turn-0003", "tombstone"),
        (target_id(scope, "feedback_gone.md"), "exclude"),
    ):
        t = resolve_target(store, target)
        forget(store, t, mode=mode, confirm=t.id, reason="test")
    return store, mem


def test_no_library_read_path_returns_excluded_text(
    forgotten_store: tuple[Store, Path],
) -> None:
    store, mem = forgotten_store
    scope = scope_for(None)
    mdir = memory_dir(store, scope, mem)
    objects = {e.entry.turn_id: e.entry.object for e in reads.log(store)}
    sessions = store.session_refs()
    results: dict[str, Any] = {
        "log": reads.log(store),
        "log --all": reads.log(store, show_all=True),
        "show turn": reads.show(store, "turn-0002", show_all=True),
        "show session": reads.show(store, "s-gone", show_all=True),
        "show kept session": reads.show(store, "s-keep", show_all=True),
        "show turn object": reads.show(store, objects["turn-0002"], show_all=True),
        "show session object": reads.show(store, sessions["s-gone"], show_all=True),
        "export": list(exported_turns(store)),
        # (the hits: the query itself echoes the words asked)
        "recall": recall(store, f"{COMMON} {SECRET_TURN} {SECRET_SESSION} {TOMB}", k=10).hits,
        "recall of notes": search_notes(store, [COMMON, SECRET_NOTE], None, everywhere=True),
        "prompt": prompt(store, "claude-opus-4", [mdir]),
        "memory log": log(store, scope),
        "memory diff": diff(store, scope, None, None, None),
        "memory index": note_at(store, scope, "MEMORY.md", None),
        "forgotten": forgotten(store),
    }
    exported = [t for _, t in results["export"]]
    results["export jsonl"] = [jsonl_line(t) for t in exported]
    results["export markdown"] = "".join(markdown(results["export"]))
    for name, value in results.items():
        text = dump(value)
        for secret in (SECRET_TURN, SECRET_SESSION, SECRET_NOTE):
            assert secret not in text, f"{name} handed out {secret}"
    # naming the excluded note is refused, never answered with its text
    for read in (
        lambda: note_at(store, scope, "feedback_gone.md", None),
        lambda: log(store, scope, "feedback_gone.md"),
        lambda: diff(store, scope, "feedback_gone.md", None, None),
        lambda: plan_restore(store, mdir, "feedback_gone.md", "~0"),
    ):
        with pytest.raises(Exception) as e:
            read()
        assert SECRET_NOTE not in str(e.value) and "excluded" in str(e.value)


def test_no_mcp_tool_result_or_error_holds_excluded_text(
    forgotten_store: tuple[Store, Path], tmp_path: Path
) -> None:
    from mcp import MCPError
    from mcptools import Server

    from histstore.store.config import read_config, write_config

    store, mem = forgotten_store
    config = read_config(store.root)
    config.setdefault("memory", {})["dirs"] = {"system": str(mem)}
    write_config(store.root, config)
    objects = {e.entry.turn_id: e.entry.object for e in reads.log(store, show_all=True)}
    home = tmp_path / "mcp-home"
    home.mkdir()
    propose = {"type": "feedback", "body": "x\n\n**Why:** y.\n\n**How to apply:** z."}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("recall_history", {"query": COMMON, "everywhere": True, "k": 10}),
        ("recall_history", {"query": f"{COMMON} fine", "everywhere": True, "days": 3650}),
        ("recall_history", {"query": COMMON}),
        ("show_turn", {"turn_id": "turn-0002"}),
        ("show_turn", {"turn_id": "turn-0004"}),
        ("show_turn", {"turn_id": "turn-0003"}),
        ("show_turn", {"turn_id": objects["turn-0002"]}),
        ("show_turn", {"turn_id": store.session_refs()["s-gone"]}),
        ("recent_sessions", {"everywhere": True}),
        ("recent_sessions", {"project": "/home/dev/src/app"}),
        ("memory_list", {}),
        ("memory_list", {"scope": "all"}),
        ("memory_read", {"name": "feedback_gone.md"}),
        ("memory_read", {"name": "gone"}),
        ("memory_read", {"name": "Note gone"}),
        ("memory_read", {"name": "MEMORY.md"}),
        ("memory_prompt", {"model": "claude-opus-4"}),
        ("memory_propose", {**propose, "slug": "gone", "name": "N", "description": "d"}),
        (
            "memory_propose",
            {**propose, "slug": "other", "name": "Note gone", "description": f"about {COMMON}"},
        ),
        ("memory_propose", {**propose, "slug": "keep", "name": "K", "description": "d"}),
    ]
    srv = Server(store.root, tmp_path, home)
    try:
        answers = [srv.call(name, args) for name, args in calls]
        for method, *args in (("list_resources",), ("list_resource_templates",), ("list_prompts",)):
            try:
                answers.append((repr(srv.run(method, *args)), False))
            except MCPError as e:
                answers.append((str(e), True))
        answers.append((srv.stderr(), False))
    finally:
        srv.close()
    assert any("forgotten (exclusion since" in text for text, _ in answers)
    for (text, _), what in zip(
        answers, [*calls, "resources", "templates", "prompts", "log"], strict=True
    ):
        for secret in (SECRET_TURN, SECRET_SESSION, SECRET_NOTE):
            assert secret not in text, f"{what} handed out {secret}"
    assert TOMB not in answers[0][0]  # a tombstoned turn is left out of recall


def test_a_tombstone_hides_what_the_policy_says_and_no_more(
    forgotten_store: tuple[Store, Path],
) -> None:
    store, _ = forgotten_store
    assert TOMB not in dump(reads.log(store))
    assert TOMB in dump(reads.log(store, show_all=True))  # --all shows a tombstoned turn
    assert TOMB not in dump(recall(store, TOMB).hits)
    assert TOMB in dump(list(exported_turns(store)))  # a tombstone hides from recall only
    listed = {f.marker.target: f.first_prompt for f in forgotten(store)}
    assert TOMB in listed["turn-0003"]  # quoted for a tombstone
    assert listed["turn-0002"] == ""  # never for an exclusion
