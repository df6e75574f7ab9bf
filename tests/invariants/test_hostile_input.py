"""Hostile input, found by trying: each test reproduces a fault that once aborted
an import, hung it, wrote inside the store, forged a reference or a marker,
or gave the wrong exit code, and shows it now fails safely."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HS, turn_record, write_turns

from histstore.ops.fsck import fsck
from histstore.store.store import Store


def cc_line(session: str, uuid: str, parent: str | None, kind: str, text: str) -> str:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return json.dumps(
        {
            "type": kind,
            "sessionId": session,
            "uuid": uuid,
            "parentUuid": parent,
            "isSidechain": True,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/home/dev/src/app",
            "message": {"role": kind, "content": content},
        }
    )


# ----------------------------------------------------------------- fault 4


def test_a_subagent_with_a_separator_in_its_session_id_is_reported_not_fatal(
    hs: HS, tmp_path: Path
) -> None:
    hs("init")
    proj = tmp_path / "projects" / "-home-dev-src-app"
    proj.mkdir(parents=True)
    (proj / "agent-abc1234.jsonl").write_text(
        cc_line("a/b", "u1", None, "user", "hi")
        + "\n"
        + cc_line("a/b", "u2", "u1", "assistant", "yo")
        + "\n"
    )
    good = proj / "sess-good.jsonl"
    good.write_text(
        cc_line("sess-good", "g1", None, "user", "hello").replace(
            '"isSidechain": true', '"isSidechain": false'
        )
        + "\n"
    )
    r = hs("import", str(tmp_path / "projects"))
    assert r.exit_code == 1 and "internal error" not in r.stderr
    assert "session id 'a/b' is not allowed" in r.stderr
    # said once, at the file and line it came from
    said = [x for x in r.stderr.splitlines() if "'a/b' is not allowed" in x]
    assert len(said) == 1 and "agent-abc1234.jsonl:" in said[0] and "-:0:" not in r.stderr
    assert "turns: 1 added" in r.stdout  # the good file still imports


def test_a_turn_whose_source_line_is_not_a_number_is_one_problem(hs: HS, tmp_path: Path) -> None:
    hs("init")
    bad = turn_record(1, source={"line": "x"})
    path = write_turns(tmp_path / "t.jsonl", [bad, turn_record(2)])
    r = hs("import", str(path))
    assert r.exit_code == 1 and "internal error" not in r.stderr
    assert f"{path}:1: field 'source.line' must be a whole number" in r.stderr
    assert "turns: 1 added" in r.stdout


def test_a_file_nested_past_reading_is_skipped_with_its_name(hs: HS, tmp_path: Path) -> None:
    hs("init")
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    good = write_turns(tmp_path / "good.jsonl", [turn_record(1)])
    r = hs("import", str(deep), str(good))
    assert r.exit_code == 1 and "internal error" not in r.stderr
    assert f"skipped {deep}" in r.stderr and "turns: 1 added" in r.stdout


def test_record_of_json_nested_past_reading_is_bad_input(hs: HS) -> None:
    hs("init")
    r = hs("record", input='{"a":' * 5000 + "1" + "}" * 5000)
    assert r.exit_code == 2 and r.stderr.startswith("hs: error: ")
    assert len(r.stderr.splitlines()) == 1


# ----------------------------------------------------------------- fault 5


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_named_like_a_parent_session_never_hangs_an_import(tmp_path: Path) -> None:
    store = tmp_path / "store"
    proj = tmp_path / "projects" / "-home-dev-src-app"
    proj.mkdir(parents=True)
    os.mkfifo(proj / "sess-fifo.jsonl")
    (proj / "agent-fff1234.jsonl").write_text(cc_line("sess-fifo", "u1", None, "user", "hi") + "\n")
    hs_bin = str(Path(sys.executable).with_name("hs"))
    subprocess.run([hs_bin, "-C", str(store), "init"], check=True, capture_output=True)
    r = subprocess.run(
        [hs_bin, "-C", str(store), "import", str(tmp_path / "projects")],
        capture_output=True,
        text=True,
        timeout=30,  # a hang would be a TimeoutExpired, not an answer
    )
    assert "internal error" not in r.stderr
    assert "turns: 1 added" in r.stdout, r.stderr


# ----------------------------------------------------------------- fault 6


def test_no_command_writes_a_user_named_path_inside_the_store(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    hs("init")
    hs("import", str(write_turns(tmp_path / "t.jsonl", [turn_record(1)])))
    config = (store_path / "config.toml").read_bytes()
    r = hs("export", "-o", str(store_path / "config.toml"))
    assert r.exit_code == 2 and "inside the store" in r.stderr
    assert (store_path / "config.toml").read_bytes() == config
    r = hs("memory", "scan", "--drafts", str(store_path / "refs" / "sessions"))
    assert r.exit_code == 2 and "inside the store" in r.stderr
    # a store made inside it would be a ref folder, a ref named "inner"
    inner = store_path / "refs" / "sessions" / "inner"
    r = hs("-C", str(inner), "init")
    assert r.exit_code == 2 and "inside the store" in r.stderr and r.stdout == ""
    assert not inner.exists()
    assert hs("log").exit_code == 0
    with Store.open(store_path) as s:
        assert [f for f in fsck(s) if f.severity == "error"] == []


# ----------------------------------------------------------------- fault 7


def test_a_step_output_shaped_like_a_blob_reference_stays_data(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    hs("init")
    fake = {"blob": "ab" * 32, "size": 3}
    rec = turn_record(1, steps=[{"type": "tool", "name": "x", "input": {}, "output": fake}])
    assert hs("record", input=json.dumps(rec)).exit_code == 0
    assert hs("fsck").exit_code == 0
    r = hs("export")
    assert r.exit_code == 0
    (turn,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert json.loads(turn["steps"][0]["output"]) == fake


# ----------------------------------------------------------------- fault 8


def test_a_turn_marker_hides_one_turn_of_one_session(hs: HS, tmp_path: Path) -> None:
    hs("init")
    a = turn_record(1, session_id="sess-a", turn_id="t-1", asked="ocelot in a")
    hs("import", str(write_turns(tmp_path / "a.jsonl", [a])))
    r = hs("forget", "t-1", "--confirm", "t-1", "--exclude")
    assert r.exit_code == 0, r.stderr
    b = turn_record(2, session_id="sess-b", turn_id="t-1", asked="ocelot in b")
    hs("import", str(write_turns(tmp_path / "b.jsonl", [b])))
    log = hs.json_lines("log", "--json")
    shown = {(x["session_id"], "forgotten" in x) for x in log}
    assert shown == {("sess-a", True), ("sess-b", False)}
    hits = hs.json_lines("recall", "-e", "--json", "ocelot")[0]["hits"]
    assert [h["session_id"] for h in hits] == ["sess-b"]
    assert [json.loads(x)["session_id"] for x in hs("export").stdout.splitlines()] == ["sess-b"]
    # t-1 now names two turns: forget asks which, and SESSION~TURN says
    r = hs("forget", "t-1", "--confirm", "t-1")
    assert r.exit_code == 2 and "turn sess-b~t-1" in r.stderr and "turn sess-a~t-1" in r.stderr
    # show asks which too, and takes SESSION~TURN (a prefix of either part)
    r = hs("show", "t-1")
    assert r.exit_code == 2 and r.stdout == ""
    assert "is in 2 sessions" in r.stderr and "turn sess-b~t-1" in r.stderr
    r = hs("show", "sess-b~t-1")
    assert r.exit_code == 0 and "ocelot in b" in r.stdout and "ocelot in a" not in r.stdout
    assert hs("show", "sess-b~t-").exit_code == 0
    r = hs("show", "sess-b~zz")
    assert r.exit_code == 4 and "session sess-b has no turn matching 'zz'" in r.stderr
    r = hs("forget", "sess-b~t-1", "--confirm", "sess-b~t-1")
    assert r.exit_code == 0, r.stderr
    # forgotten names the turn as SESSION~TURN
    listed = hs("forgotten").stdout
    assert "turn sess-a~t-1" in listed and "turn sess-b~t-1" in listed
    assert hs.json_lines("recall", "-e", "--json", "ocelot")[0]["hits"] == []
    r = hs("unforget", "sess-a~t-1", "--confirm", "sess-a~t-1")
    assert r.exit_code == 0, r.stderr
    hits = hs.json_lines("recall", "-e", "--json", "ocelot")[0]["hits"]
    assert [h["session_id"] for h in hits] == ["sess-a"]
    assert hs("fsck").exit_code == 0


def test_a_session_id_cannot_forge_a_memory_notes_marker(hs: HS, tmp_path: Path) -> None:
    hs("init")
    forged = "memory@system@feedback@use-tabs"
    path = write_turns(tmp_path / "t.jsonl", [turn_record(1, session_id=forged)])
    r = hs("import", str(path))
    assert r.exit_code == 1 and "reserved" in r.stderr


# ----------------------------------------------------------------- fault 9


def test_a_session_file_whose_name_is_not_utf8_is_imported(tmp_path: Path) -> None:
    store = tmp_path / "store"
    proj = os.fsencode(tmp_path / "projects" / "-home-dev-src-app")
    os.makedirs(proj)
    name = proj + b"/caf\xe9-0001.jsonl"
    line = cc_line("sess-nu", "u1", None, "user", "hi").replace(
        '"isSidechain": true', '"isSidechain": false'
    )
    with open(name, "wb") as f:
        f.write(line.encode() + b"\n")
    hs_bin = str(Path(sys.executable).with_name("hs"))
    subprocess.run([hs_bin, "-C", str(store), "init"], check=True, capture_output=True)
    r = subprocess.run(
        [hs_bin, "-C", str(store), "import", str(tmp_path / "projects")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "turns: 1 added" in r.stdout
    shown = subprocess.run(
        [hs_bin, "-C", str(store), "show", "u1"], capture_output=True, text=True
    ).stdout
    assert "caf\\xe9-0001.jsonl" in shown


# ----------------------------------------------------------------- fault 10


@pytest.mark.parametrize("value", ["garbage", "a" * 64])
def test_damage_at_the_sync_border_is_exit_7(hs: HS, tmp_path: Path, value: str) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    hs("-C", str(a), "init")
    hs("-C", str(b), "init")
    hs("-C", str(b), "record", input=json.dumps(turn_record(1)))
    assert hs("-C", str(a), "remote", "add", "r", str(b)).exit_code == 0
    (b / "refs" / "sessions" / "zz").write_text(value + "\n")
    before = sorted(p.name for p in (a / "refs").rglob("*"))
    r = hs("-C", str(a), "pull", "r")
    assert r.exit_code == 7, r.stderr
    assert "no ref was moved" in r.stderr and "run hs fsck" in r.stderr
    assert sorted(p.name for p in (a / "refs").rglob("*")) == before


def test_a_push_meeting_a_damaged_ref_both_hold_is_exit_7(hs: HS, tmp_path: Path) -> None:
    """The remote's value of a session this store holds too names an object
    it does not have: the push merges it, so that is damage (exit 7), not
    "no object" (exit 4)."""
    a, b = tmp_path / "a", tmp_path / "b"
    hs("-C", str(a), "init")
    hs("-C", str(b), "init")
    hs("-C", str(a), "record", input=json.dumps(turn_record(1, session_id="zz")))
    hs("-C", str(b), "record", input=json.dumps(turn_record(2)))
    assert hs("-C", str(a), "remote", "add", "r", str(b)).exit_code == 0
    (b / "refs" / "sessions" / "zz").write_text("a" * 64 + "\n")
    before = sorted(p.name for p in (b / "refs").rglob("*"))
    r = hs("-C", str(a), "push", "r")
    assert r.exit_code == 7, r.stderr
    assert "run hs fsck" in r.stderr and len(r.stderr.splitlines()) == 1
    assert sorted(p.name for p in (b / "refs").rglob("*")) == before
