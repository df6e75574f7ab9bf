"""Every turn says which agent wrote it, and --agent filters log, recall,
export and the forget listings (issue 13, point 2); hs status counts turns
per agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from codex_rollout import SID as CODEX_SID
from codex_rollout import Rollout, rollout_path
from helpers import HS
from test_import_agents import claude_session

from histstore.recall.index import RecallIndex, recall
from histstore.store.store import Store


@pytest.fixture
def mixed(hs: HS, tmp_path: Path) -> HS:
    """A store with a Claude Code session (2 turns), a Codex session (1 turn)
    and a recorded turn (agent hs); the word "quokka" is in one turn of each."""
    home = tmp_path / "home"
    cc = claude_session(home / ".claude" / "projects" / "-home-dev-app", prompts=2)
    cc.write_text(cc.read_text().replace("question 1", "question 1 about the quokka"))
    r = Rollout()
    r.meta()
    r.turn_12x("019a-t1", "Find the quokka in the zoo", "Found it.")
    r.write(rollout_path(home / ".codex"))
    assert hs("init").exit_code == 0
    assert hs("import").exit_code == 0
    rec = {
        "turn_id": "rec-1",
        "session_id": "rec-s",
        "project": "/home/dev/app",
        "asked_at": "2026-05-02T00:00:00Z",
        "asked": "another quokka",
        "answered": "ok",
    }
    assert hs("record", input=json.dumps(rec)).exit_code == 0
    return hs


def test_agent_on_every_turn_of_log_and_show(mixed: HS) -> None:
    rows = mixed.json_lines("log", "--json")
    assert sorted(r["agent"] for r in rows) == ["claude-code", "claude-code", "codex", "hs"]
    r = mixed("log", "--oneline")
    assert r.exit_code == 0
    by_id = {line.split()[0]: line for line in r.stdout.splitlines()}
    assert "  codex        Find the quokka" in by_id["019a-t1"]
    assert "  claude-code  question 2" in by_id["u2"]
    assert "  hs           another quokka" in by_id["rec-1"]
    assert "Agent:   codex" in mixed("show", "019a-t1").stdout
    assert "Agent:   claude-code" in mixed("log", "-n", "5").stdout
    (shown,) = mixed.json_lines("show", "--json", "019a-t1")
    assert shown["agent"] == "codex"
    (full,) = mixed.json_lines("show", "--json", "--full", "u1")
    assert full["agent"] == "claude-code"
    (session,) = mixed.json_lines("show", "--json", CODEX_SID)
    assert session["agent"] == "codex"


def test_log_agent_filter(mixed: HS) -> None:
    rows = mixed.json_lines("log", "--json", "--agent", "codex")
    assert [r["turn_id"] for r in rows] == ["019a-t1"]
    rows = mixed.json_lines("log", "--json", "--agent", "claude-code")
    assert [r["turn_id"] for r in rows] == ["u2", "u1"]
    r = mixed("log", "--agent", "gemini")
    assert (r.exit_code, r.stdout) == (0, "no turns match\n")


def test_export_agent_and_its_filter(mixed: HS) -> None:
    r = mixed("export")
    assert r.exit_code == 0
    turns = [json.loads(x) for x in r.stdout.splitlines()]
    assert sorted(t["agent"] for t in turns) == ["claude-code", "claude-code", "codex", "hs"]
    r = mixed("export", "--agent", "codex")
    assert [json.loads(x)["turn_id"] for x in r.stdout.splitlines()] == ["019a-t1"]
    md = mixed("export", "--format", "markdown", "--agent", "claude-code").stdout
    assert "agent: claude-code" in md and "agent: codex" not in md and "quokka" in md
    assert mixed("export", "--agent", "gemini").stdout == ""


@pytest.mark.parametrize("fallback", ["0", "1"], ids=["fts5", "like"])
def test_recall_agent_filter(mixed: HS, fallback: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HS_RECALL_FALLBACK", fallback)
    (out,) = mixed.json_lines("recall", "-e", "--json", "quokka")
    assert sorted(h["agent"] for h in out["hits"]) == ["claude-code", "codex", "hs"]
    (out,) = mixed.json_lines("recall", "-e", "--json", "--agent", "codex", "quokka")
    assert [(h["turn_id"], h["agent"]) for h in out["hits"]] == [("019a-t1", "codex")]
    assert out["agent"] == "codex"
    r = mixed("recall", "-e", "--agent", "claude-code", "quokka")
    assert r.exit_code == 0
    assert r.stdout.startswith("2026-05-01  session 11111111  turn u1  claude-code\n")
    assert "019a-t1" not in r.stdout
    r = mixed("recall", "-e", "--agent", "gemini", "quokka")
    assert r.stdout == "no turn of gemini matches 'quokka'\n"


def test_recall_agent_filter_through_the_library(mixed: HS, store_path: Path) -> None:
    store = Store.open(store_path)
    try:
        res = recall(store, "quokka", agent="hs")
        assert [(h.turn_id, h.agent) for h in res.hits] == [("rec-1", "hs")]
        assert len(recall(store, "quokka").hits) == 3
    finally:
        store.close()


def test_an_index_of_the_older_schema_is_rebuilt(mixed: HS, store_path: Path) -> None:
    """A generation of an older schema (here 2, the SQLite index with the
    agent) is behind: fsck warns, and the next recall rebuilds it, so the
    filter finds what it should. So is the SQLite index an older hs left."""
    store = Store.open(store_path)
    try:
        index = RecallIndex(store)
        gen = index.gens.current()
        assert gen is not None
        index.gens.write_meta(gen.name, {**gen.meta, "schema": 2})
        assert index.behind()
        index.close()
    finally:
        store.close()
    fsck = mixed("fsck")
    assert fsck.exit_code == 0 and "built by an older hs (schema 2)" in fsck.stdout
    (out,) = mixed.json_lines("recall", "-e", "--json", "--agent", "codex", "quokka")
    assert [h["turn_id"] for h in out["hits"]] == ["019a-t1"]
    assert "older hs" not in mixed("fsck").stdout
    # the SQLite FTS5 index of an older hs: CURRENT names its file
    index_dir = store_path / "index"
    (index_dir / "gen-9.sqlite").write_bytes(b"SQLite format 3\x00")
    (index_dir / "CURRENT").write_text("gen-9.sqlite\n")
    fsck = mixed("fsck")
    assert fsck.exit_code == 0 and "built by an older hs (SQLite)" in fsck.stdout
    (out,) = mixed.json_lines("recall", "-e", "--json", "--agent", "codex", "quokka")
    assert [h["turn_id"] for h in out["hits"]] == ["019a-t1"]
    assert not (index_dir / "gen-9.sqlite").exists()
    assert "older hs" not in mixed("fsck").stdout


def test_forget_listings_agent_filter(mixed: HS) -> None:
    assert mixed("forget", CODEX_SID, "--confirm", CODEX_SID).exit_code == 0
    assert mixed("forget", "u2", "--confirm", "u2", "--exclude").exit_code == 0
    every = mixed.json_lines("forgotten", "--json")
    assert sorted(f["agent"] for f in every) == ["claude-code", "codex"]
    (only,) = mixed.json_lines("forgotten", "--json", "--agent", "codex")
    assert only["target"] == CODEX_SID and only["agent"] == "codex"
    (only,) = mixed.json_lines("forget", "--list", "--json", "--agent", "claude-code")
    assert only["target"] == "u2"
    r = mixed("forget", "--list", "--agent", "codex")
    assert r.exit_code == 0 and "hides 1 turn of codex" in r.stdout and "u2" not in r.stdout
    assert mixed("forgotten", "--agent", "hs").stdout == "nothing is forgotten\n"
    r = mixed("forget", "u1", "--agent", "codex", "--confirm", "u1")
    assert r.exit_code == 2 and "--agent only filters --list" in r.stderr


def test_status_counts_turns_per_agent(mixed: HS) -> None:
    r = mixed("status")
    assert r.exit_code == 0
    assert (
        "turns:        4\n"
        "  by agent:   2  claude-code\n"
        "              1  codex\n"
        "              1  hs\n"
    ) in r.stdout
    (info,) = mixed.json_lines("status", "--json")
    assert info["agents"] == {"claude-code": 2, "codex": 1, "hs": 1}
    assert info["turns"] == 4
