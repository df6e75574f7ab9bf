"""`hs import` with no path: the agent homes it finds, --dry-run, and inputs it
cannot import named on stderr (never skipped silently). Every home here is
under the test's temporary HOME (tests/conftest.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from codex_rollout import SID as CODEX_SID
from codex_rollout import Rollout, rollout_path
from helpers import HS

from histstore.history.homes import agent_homes, candidates

CLAUDE_SID = "11111111-2222-3333-4444-555555555555"


def claude_session(folder: Path, sid: str = CLAUDE_SID, prompts: int = 1) -> Path:
    """A Claude Code session file of ``prompts`` prompt/answer pairs."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    parent = None
    for n in range(1, prompts + 1):
        base = {"isSidechain": False, "cwd": "/home/dev/app", "sessionId": sid, "version": "2.0.1"}
        u = {
            **base,
            "type": "user",
            "uuid": f"u{n}",
            "parentUuid": parent,
            "timestamp": f"2026-05-01T10:0{n}:00.000Z",
            "message": {"role": "user", "content": f"question {n}"},
        }
        a = {
            **base,
            "type": "assistant",
            "uuid": f"a{n}",
            "parentUuid": f"u{n}",
            "timestamp": f"2026-05-01T10:0{n}:05.000Z",
            "message": {
                "id": f"msg_{n}",
                "model": "claude-sonnet-4",
                "role": "assistant",
                "type": "message",
                "content": [{"type": "text", "text": f"answer {n}"}],
            },
        }
        lines += [json.dumps(u), json.dumps(a)]
        parent = f"a{n}"
    path = folder / f"{sid}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def codex_session(root: Path, archived: bool = False) -> Path:
    r = Rollout()
    r.meta()
    r.turn_12x("019a-t1", "Fix the login bug", "Fixed it.")
    path = rollout_path(root)
    if archived:
        path = root / "archived_sessions" / path.name
    return r.write(path)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (what "writes nothing" compares)."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


# --------------------------------------------------------------------------- finding homes


def test_homes_by_default_and_by_override(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / ".claude" / "projects").mkdir(parents=True)
    (home / ".codex" / "sessions").mkdir(parents=True)
    (home / ".codex" / "archived_sessions").mkdir(parents=True)
    found = agent_homes({"HOME": str(home)})
    assert [(h.agent, h.path, h.format) for h in found] == [
        ("claude-code", home / ".claude" / "projects", "claude-code"),
        ("codex", home / ".codex" / "sessions", "codex"),
        ("codex", home / ".codex" / "archived_sessions", "codex"),
    ]
    # the XDG place Claude Code also uses
    (home / ".config" / "claude" / "projects").mkdir(parents=True)
    assert len(agent_homes({"HOME": str(home)})) == 4
    # the agents' own variables replace the defaults (a list for Claude Code)
    c1, c2, cx = tmp_path / "c1", tmp_path / "c2", tmp_path / "cx"
    for d in (c1 / "projects", c2 / "projects", cx / "sessions"):
        d.mkdir(parents=True)
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": f"{c1},{c2}", "CODEX_HOME": str(cx)}
    assert [(h.path, h.via) for h in agent_homes(env)] == [
        (c1 / "projects", "$CLAUDE_CONFIG_DIR"),
        (c2 / "projects", "$CLAUDE_CONFIG_DIR"),
        (cx / "sessions", "$CODEX_HOME"),
    ]
    # empty means unset; a folder reached twice is one source
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": str(home / ".codex")}
    assert len(agent_homes(env)) == 4
    assert agent_homes({"HOME": str(tmp_path / "nobody")}) == []
    assert {str(h.path) for h in candidates({"HOME": "/u"})} == {
        "/u/.claude/projects",
        "/u/.config/claude/projects",
        "/u/.codex/sessions",
        "/u/.codex/archived_sessions",
    }


# --------------------------------------------------------------------------- hs import


def test_import_with_no_path_finds_every_agent(hs: HS) -> None:
    home = Path(os.environ["HOME"])
    claude_session(home / ".claude" / "projects" / "-home-dev-app", prompts=2)
    codex_session(home / ".codex")
    assert hs("init").exit_code == 0
    r = hs("import")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[:2] == [
        f"claude-code: {home / '.claude' / 'projects'}",
        f"codex: {home / '.codex' / 'sessions'}",
    ]
    assert "imported 2 files; sessions: 2 added, 0 updated; turns: 3 added" in lines[2]
    rows = hs.json_lines("log", "--json")
    assert sorted(x["agent"] for x in rows) == ["claude-code", "claude-code", "codex"]
    again = hs("import", "--json")
    out = json.loads(again.stdout)
    assert again.exit_code == 0 and out["operation"] is None and out["files_unchanged"] == 2
    assert [s["agent"] for s in out["sources"]] == ["claude-code", "codex"]


def test_import_honours_the_agents_variables(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["HOME"])
    claude_session(home / ".claude" / "projects" / "-home-dev-app")  # not looked at
    elsewhere = tmp_path / "claude-elsewhere"
    claude_session(elsewhere / "projects" / "-p", sid="22222222-2222-3333-4444-555555555555")
    codex_home = tmp_path / "codex-home"
    codex_session(codex_home, archived=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(elsewhere))
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    assert hs("init").exit_code == 0
    r = hs("import", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["sources"] == [
        {"agent": "claude-code", "path": str(elsewhere / "projects")},
        {"agent": "codex", "path": str(codex_home / "archived_sessions")},
    ]
    sessions = {x["session_id"] for x in hs.json_lines("log", "--json")}
    assert sessions == {"22222222-2222-3333-4444-555555555555", CODEX_SID}
    # --format narrows the homes to that agent's
    r = hs("import", "--format", "codex", "--json")
    assert [s["agent"] for s in json.loads(r.stdout)["sources"]] == ["codex"]


def test_import_with_nothing_found_says_where_it_looked(hs: HS) -> None:
    home = Path(os.environ["HOME"])
    assert hs("init").exit_code == 0
    r = hs("import")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout.startswith("nothing to import: no agent history found (looked in ")
    assert str(home / ".claude" / "projects") in r.stdout
    assert str(home / ".codex" / "sessions") in r.stdout
    assert hs("ops", "--json").stdout == ""


# --------------------------------------------------------------------------- --dry-run


def test_dry_run_lists_sources_and_writes_nothing(hs: HS, store_path: Path) -> None:
    home = Path(os.environ["HOME"])
    cc = claude_session(home / ".claude" / "projects" / "-home-dev-app", prompts=3)
    rollout = codex_session(home / ".codex")
    assert hs("init").exit_code == 0
    before = tree(store_path)
    r = hs("import", "--dry-run")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"claude-code  {home / '.claude' / 'projects'}  1 file (1 to read), "
        f"{cc.stat().st_size / 1024:.1f} KB new",
        f"codex  {home / '.codex' / 'sessions'}  1 file (1 to read), "
        f"{rollout.stat().st_size / 1024:.1f} KB new",
        f"dry run: 2 files to read, {(cc.stat().st_size + rollout.stat().st_size) / 1024:.1f} "
        "KB new; nothing was written",
    ]
    assert tree(store_path) == before
    # after an import: nothing new; after an append: only what follows the last turn
    assert hs("import").exit_code == 0
    before = tree(store_path)
    rows = hs.json_lines("import", "--dry-run", "--json")
    assert [(x["agent"], x["files"], x["files_unchanged"], x["new_bytes"]) for x in rows] == [
        ("claude-code", 1, 1, 0),
        ("codex", 1, 1, 0),
    ]
    size = cc.stat().st_size
    claude_session(cc.parent, prompts=4)  # the same file, one more turn
    rows = hs.json_lines("import", "--dry-run", "--json")
    grown = rows[0]
    assert grown["files_to_read"] == 1 and grown["files_unchanged"] == 0
    assert cc.stat().st_size - size < grown["new_bytes"] < cc.stat().st_size
    assert tree(store_path) == before


def test_dry_run_of_paths_names_their_formats(hs: HS, tmp_path: Path, store_path: Path) -> None:
    rollout = codex_session(tmp_path / "given")
    junk = tmp_path / "given" / "notes.jsonl"
    junk.write_text('{"hello": "world"}\n')
    assert hs("init").exit_code == 0
    before = tree(store_path)
    r = hs("import", "--dry-run", "--json", str(tmp_path / "given"))
    assert r.exit_code == 1
    (row,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert row["agent"] == "codex" and row["files"] == 2 and row["files_to_read"] == 1
    assert row["new_bytes"] == rollout.stat().st_size
    assert row["files_skipped"] == [
        {
            "file": str(junk),
            "reason": "format not recognised; formats known: turns, claude-code, codex",
        }
    ]
    assert r.stderr.splitlines() == [
        f"hs: would skip {junk}: format not recognised; formats known: turns, claude-code, codex",
        "hs: some input would not be imported (1 file(s) skipped)",
    ]
    assert tree(store_path) == before


# --------------------------------------------------------------------------- nothing skipped silently


def test_an_unrecognised_file_is_named_with_the_formats_known(hs: HS, tmp_path: Path) -> None:
    codex_session(tmp_path / "in")
    junk = tmp_path / "in" / "notes.jsonl"
    junk.write_text('{"hello": "world"}\n')
    assert hs("init").exit_code == 0
    r = hs("import", str(tmp_path / "in"))
    assert r.exit_code == 1
    assert "turns: 1 added" in r.stdout
    assert r.stderr.splitlines() == [
        f"hs: skipped {junk}: format not recognised; formats known: turns, claude-code, codex",
        "hs: some input was not imported (1 file(s) skipped, 0 problem(s) above); the rest is stored",
    ]


def test_a_format_that_does_not_fit_is_named(hs: HS, tmp_path: Path) -> None:
    """--format claude-code on a Codex rollout (the fault of issue 13: it
    imported nothing and said nothing), and on a file of no known format."""
    rollout = codex_session(tmp_path / "in")
    assert hs("init").exit_code == 0
    r = hs("import", "--format", "claude-code", str(rollout))
    assert r.exit_code == 1
    assert "imported 0 files" in r.stdout
    assert r.stderr.splitlines() == [
        f"hs: skipped {rollout}: it is codex, not claude-code (--format claude-code does not "
        "fit); formats known: turns, claude-code, codex",
        "hs: some input was not imported (1 file(s) skipped, 0 problem(s) above); the rest is stored",
    ]
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"hello": "world"}\n')
    r = hs("import", "--format", "claude-code", "--json", str(junk))
    assert r.exit_code == 1
    out = json.loads(r.stdout)
    assert out["complete"] is False and out["files"] == 1
    assert out["files_skipped"] == [
        {
            "file": str(junk),
            "reason": "nothing in it reads as claude-code (--format claude-code); "
            "formats known: turns, claude-code, codex",
        }
    ]
    # a forced format that fits imports as before
    r = hs("import", "--format", "codex", str(rollout))
    assert r.exit_code == 0, r.stderr
    assert "turns: 1 added" in r.stdout
