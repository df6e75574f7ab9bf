"""hs export --format claude-code|codex and hs restore, on small hand-made
sessions: the agent's own files back, byte for byte, where the agent looks."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from codex_rollout import SID as CODEX_SID
from codex_rollout import Rollout
from helpers import HS, turn_record, write_turns
from secretcases import MUST_CATCH

from histstore.agents.sessions import claude_slug, js_hash36
from histstore.history.importing import store_paths
from histstore.store.store import Store

SID = "5e55101a-0000-4000-8000-000000000001"
CWD = "/home/dev/shop_v2"
SLUG = "-home-dev-shop-v2"  # every character but a letter or digit made '-'
AGENT = "a1b2c3d4e5f6a7b8c"  # a 2.1 sub-agent id
LEGACY_AGENT = "ea02459f"
SECRET = "quetzalcoatl"  # only in the second turn
_tick = [0]


def _ts() -> str:
    _tick[0] += 1
    n = _tick[0]
    return f"2026-05-06T07:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z"


def line(obj: dict[str, Any]) -> str:
    """A record as Claude Code writes it: compact JSON, non-ASCII as is."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def rec(kind: str, uuid: str, parent: str | None, version: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": SID,
        "version": version,
        "gitBranch": "main",
        "type": kind,
    }
    out.update(extra)
    out.update({"uuid": uuid, "timestamp": _ts()})
    return out


def user(uuid: str, parent: str | None, content: Any, v: str, **extra: Any) -> dict[str, Any]:
    return rec("user", uuid, parent, v, message={"role": "user", "content": content}, **extra)


def asst(uuid: str, parent: str, mid: str, blocks: list[Any], v: str) -> dict[str, Any]:
    msg = {"id": mid, "model": "claude-sonnet-4-5", "role": "assistant", "type": "message"}
    return rec("assistant", uuid, parent, v, message={**msg, "content": blocks})


def txt(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def claude_records(version: str = "2.1.30", agent: str = AGENT) -> list[dict[str, Any]]:
    v = version
    task = {"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {"prompt": "find it"}}
    result = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "in cart.py"}]
    return [
        {"type": "summary", "summary": "Cart totals", "leafUuid": "0ld00000-0000-4000-8000-0"},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}, "isSnapshotUpdate": 0},
        user("u1", None, "Where are cart totals rounded?", v),
        asst("a1", "u1", "msg_1", [{"type": "thinking", "thinking": "hmm", "signature": "s"}], v),
        asst("a2", "a1", "msg_1", [task], v),
        user("r1", "a2", result, v, toolUseResult={"agentId": agent, "prompt": "find it"}),
        asst("a3", "r1", "msg_2", [txt("Totals are rounded in cart.py — naïvely")], v),
        user("u2", "a3", f"Make them exact ({SECRET})", v),
        asst("a4", "u2", "msg_3", [txt(f"Done with Decimal, {SECRET}")], v),
        user("u3", "a4", "Add a test", v),
        asst("a5", "u3", "msg_4", [txt("Added tests/test_cart.py")], v),
    ]


def sub_records(version: str = "2.1.30", agent: str = AGENT) -> list[dict[str, Any]]:
    side = {"isSidechain": True, "agentId": agent}
    s1 = user("s1", None, "find it", version, **side)
    s2 = asst("s2", "s1", "msg_s", [txt("in cart.py")], version)
    s2.update(side)
    return [s1, s2]


def write_lines(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((r if isinstance(r, str) else line(r)) + "\n" for r in records)
    path.write_bytes(text.encode("utf-8"))
    return path


def claude_home(root: Path, *, legacy: bool = False) -> dict[str, Path]:
    """A Claude Code projects folder holding the session and its sub-agent."""
    proj = root / "projects" / SLUG
    if legacy:
        v, a = "2.0.42", LEGACY_AGENT
        main = write_lines(proj / f"{SID}.jsonl", claude_records(v, a))
        sub = write_lines(proj / f"agent-{a}.jsonl", sub_records(v, a))
        return {"main": main, "sub": sub}
    main = write_lines(proj / f"{SID}.jsonl", claude_records())
    sub = write_lines(proj / SID / "subagents" / f"agent-{AGENT}.jsonl", sub_records())
    meta = proj / SID / "subagents" / f"agent-{AGENT}.meta.json"
    meta.write_text('{"description":"find it","agentType":"Explore"}')
    return {"main": main, "sub": sub, "meta": meta}


@pytest.fixture
def claude(hs: HS, tmp_path: Path) -> dict[str, Path]:
    files = claude_home(tmp_path / "src")
    assert hs("init").exit_code == 0
    r = hs("import", str(tmp_path / "src" / "projects"))
    assert r.exit_code == 0, r.stderr
    return files


def codex_rollout() -> Rollout:
    r = Rollout()
    r.meta("0.128.0")
    r.turn_12x("019a0000-aaaa-7000-8000-000000000001", "Where is the config read?", "In cfg.py")
    r.turn_12x("019a0000-aaaa-7000-8000-000000000002", f"Rotate {SECRET} keys", "Rotated")
    r.turn_12x("019a0000-aaaa-7000-8000-000000000003", "Now add a test", "Added")
    return r


@pytest.fixture
def codex(hs: HS, tmp_path: Path) -> Path:
    path = codex_rollout().write(tmp_path / "src" / "codex" / "rollout.jsonl")
    assert hs("init").exit_code == 0
    r = hs("import", str(path))
    assert r.exit_code == 0, r.stderr
    return path


def forget(hs: HS, target: str, *mode: str) -> None:
    """``hs forget`` the target: an exclusion, or with no mode a tombstone."""
    r = hs("forget", target, *mode, "--confirm", target, "--reason", "test")
    assert r.exit_code == 0, r.stderr


def turn_ids(store: Path) -> dict[str, list[str]]:
    s = Store.open(store)
    try:
        return {sid: [t.turn_id for t in s.session(sid).turns] for sid in s.session_refs()}
    finally:
        s.close()


def objects(store: Path) -> list[str]:
    s = Store.open(store)
    try:
        return sorted(t.object for sid in s.session_refs() for t in s.session(sid).turns)
    finally:
        s.close()


def reimport(tmp_path: Path, *paths: Path, name: str = "again") -> Path:
    """The files imported into a fresh store (the importer only: no index)."""
    s, _ = Store.init(tmp_path / name)
    try:
        store_paths(s, list(paths))
    finally:
        s.close()
    return tmp_path / name


# --------------------------------------------------------------------------- export


def test_claude_code_export_is_the_session_file_byte_for_byte(
    hs: HS, claude: dict[str, Path]
) -> None:
    r = hs("export", "--format", "claude-code", "--session", SID[:8])
    assert r.exit_code == 0
    assert r.stdout_bytes == claude["main"].read_bytes()
    assert r.stderr == (
        "hs: 1 sub-agent transcript not written; "
        "hint: --dir DIR writes them in Claude Code's layout\n"
    )


def test_export_dir_writes_claude_codes_layout_and_imports_to_the_same_turns(
    hs: HS, claude: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    r = hs("export", "--format", "claude-code", "--session", SID, "--dir", str(out))
    assert r.exit_code == 0 and r.stderr == ""
    sub = out / SID / "subagents" / f"agent-{AGENT}.jsonl"
    meta = sub.with_name(f"agent-{AGENT}.meta.json")
    assert r.stdout.splitlines() == [
        f"wrote {sub}",
        f"wrote {meta}",
        f"wrote {out / f'{SID}.jsonl'}",
    ]
    assert (out / f"{SID}.jsonl").read_bytes() == claude["main"].read_bytes()
    assert sub.read_bytes() == claude["sub"].read_bytes()
    # the meta file is kept as JSON (its keys in order), not as its bytes
    assert json.loads(meta.read_text()) == json.loads(claude["meta"].read_text())
    again = reimport(tmp_path, out)
    assert turn_ids(again) == turn_ids(tmp_path / "store")
    assert objects(again) == objects(tmp_path / "store")  # the very same turn objects


def test_export_dir_of_a_2_0_session_puts_the_sub_agent_beside_it(hs: HS, tmp_path: Path) -> None:
    files = claude_home(tmp_path / "src", legacy=True)
    hs("init")
    assert hs("import", str(tmp_path / "src")).exit_code == 0
    out = tmp_path / "out"
    r = hs("export", "--format", "claude-code", "--session", SID, "--dir", str(out))
    assert r.exit_code == 0, r.stderr
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == [
        f"{SID}.jsonl",
        f"agent-{LEGACY_AGENT}.jsonl",
    ]
    assert (out / f"agent-{LEGACY_AGENT}.jsonl").read_bytes() == files["sub"].read_bytes()
    assert turn_ids(reimport(tmp_path, out)) == turn_ids(tmp_path / "store")


def test_a_sub_agent_goes_back_where_it_was_imported_from_with_its_meta(
    hs: HS, tmp_path: Path
) -> None:
    """A 2.0 sub-agent under <session>/subagents/ with a .meta.json (its layout
    is not its version's): exported and restored where it was, meta and all,
    so a restore over the source finds it there and re-import loses nothing."""
    v = "2.0.50"
    proj = tmp_path / "src" / "projects" / SLUG
    write_lines(proj / f"{SID}.jsonl", claude_records(v, AGENT))
    sub = write_lines(proj / SID / "subagents" / f"agent-{AGENT}.jsonl", sub_records(v, AGENT))
    meta = sub.with_name(f"agent-{AGENT}.meta.json")
    meta.write_text('{"description":"find it","agentType":"Explore"}')
    hs("init")
    assert hs("import", str(tmp_path / "src" / "projects")).exit_code == 0
    out = tmp_path / "out"
    r = hs("export", "--format", "claude-code", "--session", SID, "--dir", str(out))
    assert r.exit_code == 0, r.stderr
    rel = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert rel == sorted(str(p.relative_to(proj)) for p in proj.rglob("*") if p.is_file())
    assert (out / sub.relative_to(proj)).read_bytes() == sub.read_bytes()
    assert objects(reimport(tmp_path, out)) == objects(tmp_path / "store")  # meta kept
    r = hs("restore", SID, "--to", str(tmp_path / "src"))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"session {SID} is already there, unchanged")
    assert len(list((tmp_path / "src").rglob("*.jsonl"))) == 2  # no second copy


@pytest.mark.parametrize(("version", "beside"), [("2.0.50", True), ("2.1.30", False)])
def test_a_store_that_never_read_the_files_tells_the_layout_by_version(
    hs: HS, tmp_path: Path, version: str, beside: bool
) -> None:
    """A synced store has no record of where the files were (local/ is the
    machine's own): a sub-agent of CLI 2.0 goes beside the session's file."""
    proj = tmp_path / "src" / "projects" / SLUG
    write_lines(proj / f"{SID}.jsonl", claude_records(version, AGENT))
    write_lines(proj / SID / "subagents" / f"agent-{AGENT}.jsonl", sub_records(version, AGENT))
    hs("init")
    assert hs("import", str(tmp_path / "src" / "projects")).exit_code == 0
    (tmp_path / "store" / "local" / "sources.sqlite").unlink()
    out = tmp_path / "out"
    r = hs("export", "--format", "claude-code", "--session", SID, "--dir", str(out))
    assert r.exit_code == 0, r.stderr
    nested = out / SID / "subagents" / f"agent-{AGENT}.jsonl"
    assert (out / f"agent-{AGENT}.jsonl").is_file() is beside and nested.is_file() is not beside


def test_a_legacy_sub_agents_meta_is_written_beside_it(hs: HS, tmp_path: Path) -> None:
    files = claude_home(tmp_path / "src", legacy=True)
    meta = files["sub"].with_name(f"agent-{LEGACY_AGENT}.meta.json")
    meta.write_text('{"agentType":"Explore"}')
    hs("init")
    assert hs("import", str(tmp_path / "src")).exit_code == 0
    out = tmp_path / "out"
    r = hs("export", "--format", "claude-code", "--session", SID, "--dir", str(out))
    assert r.exit_code == 0, r.stderr
    assert json.loads((out / meta.name).read_text()) == {"agentType": "Explore"}
    assert objects(reimport(tmp_path, out)) == objects(tmp_path / "store")


def test_export_o_writes_the_session_file(hs: HS, claude: dict[str, Path], tmp_path: Path) -> None:
    r = hs("export", "--format", "claude-code", "--session", SID, "-o", str(tmp_path / "s.jsonl"))
    assert r.exit_code == 0 and r.stdout == ""
    assert (tmp_path / "s.jsonl").read_bytes() == claude["main"].read_bytes()
    missing = tmp_path / "nowhere" / "s.jsonl"
    r = hs("export", "--format", "claude-code", "--session", SID, "-o", str(missing))
    assert r.exit_code == 4 and "there is no folder" in r.stderr
    assert not missing.parent.exists()


def fork_records() -> list[dict[str, Any]]:
    """A rewound session whose first branch went on after the second prompt:
    turn u2's records are not one run of the file."""
    v = "2.1.30"
    return [
        user("u1", None, "first", v),
        asst("a1", "u1", "m1", [txt("answer 1")], v),
        user("u2", "a1", "second, later rewound", v),
        asst("a2", "u2", "m2", [txt("answer 2")], v),
        user("u3", "a1", "second, retyped", v),
        asst("a3", "u3", "m3", [txt("answer 3")], v),
        asst("a2b", "a2", "m2b", [txt("late answer 2")], v),
    ]


def test_a_fork_continued_after_a_later_prompt_comes_back_in_file_order(
    hs: HS, tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "src" / SLUG / f"{SID}.jsonl", fork_records())
    hs("init")
    assert hs("import", str(path)).exit_code == 0
    r = hs("export", "--format", "claude-code", "--session", SID)
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout_bytes == path.read_bytes()  # the source table knows each record's line
    # a table from before per-record lines knows only where each turn starts
    db = sqlite3.connect(tmp_path / "store" / "local" / "sources.sqlite")
    db.execute("UPDATE turns SET raw_lines = NULL")
    db.commit()
    db.close()
    r = hs("export", "--format", "claude-code", "--session", SID)
    assert r.exit_code == 0
    assert sorted(r.stdout.splitlines()) == sorted(path.read_text().splitlines())
    assert r.stderr == (
        f"hs: warning: the turns of {SID}.jsonl overlap in the original file and this store "
        "does not know where each record was: they are in turn order, which may differ\n"
    )


def test_a_redacted_line_differs_only_inside_the_redacted_span(hs: HS, tmp_path: Path) -> None:
    case = MUST_CATCH[0]
    recs = claude_records()
    recs[10] = asst("a5", "u3", "msg_4", [txt(f"Set it: {case.text} and go")], "2.1.30")
    path = write_lines(tmp_path / "src" / SLUG / f"{SID}.jsonl", recs)
    hs("init")
    assert hs("import", str(path)).exit_code == 0
    r = hs("export", "--format", "claude-code", "--session", SID)
    assert r.exit_code == 0
    got, want = r.stdout.splitlines(), path.read_text().splitlines()
    assert got[:10] == want[:10]
    assert case.secret not in r.stdout and "[REDACTED:" in got[10]
    head, _, tail = got[10].partition("[REDACTED:")
    tail = tail.split("]", 1)[1]
    assert want[10].startswith(head) and want[10].endswith(tail)


def chain_ok(lines: list[str]) -> bool:
    """Every parentUuid names a record of the file, or is null."""
    recs = [json.loads(x) for x in lines]
    uuids = {r.get("uuid") for r in recs}
    return all(r.get("parentUuid") is None or r["parentUuid"] in uuids for r in recs)


def test_an_excluded_turn_is_left_out_and_the_chain_relinked(
    hs: HS, claude: dict[str, Path], tmp_path: Path
) -> None:
    forget(hs, "u2", "--exclude")
    r = hs("export", "--format", "claude-code", "--session", SID, "--dir", str(tmp_path / "out"))
    assert r.exit_code == 0
    assert r.stderr == (
        f"hs: left out 1 excluded turn of session {SID}: u2; 1 record re-linked over the gap\n"
    )
    got = (tmp_path / "out" / f"{SID}.jsonl").read_text().splitlines()
    want = claude["main"].read_text().splitlines()
    assert SECRET not in "\n".join(got)
    # the lines of u2 are gone; u3's prompt hangs off a3 now; every other line is as written
    assert got[:7] == want[:7] and got[8] == want[10]
    assert got[7] == want[9].replace('"parentUuid":"a4"', '"parentUuid":"a3"')
    assert chain_ok(got)
    again = reimport(tmp_path, tmp_path / "out")
    assert turn_ids(again) == {SID: ["u1", "u3", "s1"]}


def test_a_prompt_queued_for_an_excluded_turn_leaves_with_it(hs: HS, tmp_path: Path) -> None:
    """A prompt typed while the agent works is written (a queue-operation line)
    before the turn it opens, inside the turn before: excluded with its turn,
    it reaches no export, raw view, restore or recall."""
    private = "rotate the vault key"
    v = "2.1.30"
    queued = {"type": "queue-operation", "timestamp": _ts(), "sessionId": SID}
    recs = [
        user("u1", None, "Where are cart totals rounded?", v),
        asst("a1", "u1", "msg_1", [txt("In cart.py")], v),
        {**queued, "operation": "enqueue", "content": [txt(private)]},
        {**queued, "operation": "dequeue"},
        user("u2", "a1", [txt(private)], v),
        asst("a2", "u2", "msg_2", [txt("Done")], v),
        user("u3", "a2", "Add a test", v),
        asst("a3", "u3", "msg_3", [txt("Added")], v),
    ]
    path = write_lines(tmp_path / "src" / "projects" / SLUG / f"{SID}.jsonl", recs)
    assert hs("init").exit_code == 0
    assert hs("import", str(path)).exit_code == 0
    forget(hs, "u2", "--exclude")
    outputs = []
    for args in (
        ("export", "--session", SID),
        ("export", "--format", "claude-code", "--session", SID),
        ("show", "--raw", "u1"),
        ("show", "u1"),
        ("recall", "vault"),
    ):
        r = hs(*args)
        assert r.exit_code in (0, 1), (args, r.stderr)
        outputs.append(r.stdout + r.stderr)
    assert "u1" in outputs[2] and "queue-operation" not in outputs[2]
    assert hs("restore", SID, "--to", str(tmp_path / "back")).exit_code == 0
    restored = "".join(p.read_text() for p in (tmp_path / "back").rglob("*.jsonl"))
    assert "Add a test" in restored
    for text in [*outputs, restored]:
        assert private not in text


def test_excluding_the_first_turn_drops_its_preamble_and_roots_the_next(
    hs: HS, claude: dict[str, Path]
) -> None:
    forget(hs, "u1", "--exclude")
    r = hs("export", "--format", "claude-code", "--session", SID)
    assert r.exit_code == 0
    got = r.stdout.splitlines()
    want = claude["main"].read_text().splitlines()
    assert got[0] == want[7].replace('"parentUuid":"a3"', '"parentUuid":null')
    assert got[1:] == want[8:]
    assert "Cart totals" not in r.stdout  # the summary line was the first turn's
    assert chain_ok(got)


def test_a_tombstoned_turn_is_exported(hs: HS, claude: dict[str, Path]) -> None:
    forget(hs, "u2")
    r = hs("export", "--format", "claude-code", "--session", SID)
    assert r.exit_code == 0 and r.stderr.count("left out") == 0
    assert r.stdout_bytes == claude["main"].read_bytes()


def test_an_excluded_session_is_refused(hs: HS, claude: dict[str, Path]) -> None:
    forget(hs, SID, "--exclude")
    r = hs("export", "--format", "claude-code", "--session", SID)
    assert r.exit_code == 4 and r.stdout == ""
    assert r.stderr == (
        f"hs: error: every turn of session {SID} is excluded: nothing to export; "
        "hint: `hs forgotten` lists exclusions; `hs unforget` lifts one\n"
    )


@pytest.mark.parametrize(
    "args,code,message",
    [
        (["--format", "claude-code"], 2, "--format claude-code exports one session"),
        (["--format", "codex", "--session", SID], 2, f"session {SID} was written by claude-code"),
        (["--format", "claude-code", "--session", SID, "--since", "2d"], 2, "--since does not"),
        (["--format", "claude-code", "--session", SID, "-o", "a", "--dir", "b"], 2, "not both"),
        (["--format", "jsonl", "--dir", "b"], 2, "--dir is for --format claude-code"),
        (["--format", "claude-code", "--session", "nope"], 4, "no session matches 'nope'"),
    ],
)
def test_agent_format_export_refuses_what_does_not_fit(
    hs: HS, claude: dict[str, Path], args: list[str], code: int, message: str
) -> None:
    r = hs("export", *args)
    assert r.exit_code == code and r.stdout == ""
    assert r.stderr.startswith("hs: error: ") and message in r.stderr
    assert len(r.stderr.splitlines()) == 1


def test_a_turn_jsonl_session_has_no_agent_format(hs: HS, tmp_path: Path) -> None:
    hs("init")
    hs("import", str(write_turns(tmp_path / "t.jsonl", [turn_record(1)])))
    r = hs("export", "--format", "claude-code", "--session", "sess-a")
    assert r.exit_code == 2
    assert r.stderr == (
        "hs: error: session sess-a was written by hs, not claude-code; hint: use --format "
        "jsonl or markdown: only Claude Code and Codex sessions have one\n"
    )
    r = hs("restore", "sess-a")
    assert r.exit_code == 2 and "only Claude Code and Codex sessions can be restored" in r.stderr


def test_codex_export_is_the_rollout_byte_for_byte(hs: HS, codex: Path, tmp_path: Path) -> None:
    r = hs("export", "--format", "codex", "--session", CODEX_SID)
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout_bytes == codex.read_bytes()
    r = hs("export", "--format", "codex", "--session", CODEX_SID, "--dir", str(tmp_path / "o"))
    assert r.exit_code == 0
    (written,) = (tmp_path / "o").rglob("*.jsonl")
    assert written.read_bytes() == codex.read_bytes()
    assert turn_ids(reimport(tmp_path, written)) == turn_ids(tmp_path / "store")


def test_codex_rollout_is_named_in_local_time(
    hs: HS, codex: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30, no summer time
    time.tzset()
    try:
        r = hs("export", "--format", "codex", "--session", CODEX_SID, "--dir", str(tmp_path / "o"))
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert r.exit_code == 0
    (written,) = (tmp_path / "o").rglob("*.jsonl")
    # session_meta says it started 2026-03-04T05:00:00Z: 10:30 in Kolkata
    assert written.relative_to(tmp_path / "o").as_posix() == (
        f"2026/03/04/rollout-2026-03-04T10-30-00-{CODEX_SID}.jsonl"
    )


def test_excluding_codexs_first_turn_keeps_the_session_meta(hs: HS, codex: Path) -> None:
    forget(hs, "019a0000-aaaa-7000-8000-000000000001", "--exclude")
    r = hs("export", "--format", "codex", "--session", CODEX_SID)
    assert r.exit_code == 0 and "left out 1 excluded turn" in r.stderr
    got, want = r.stdout.splitlines(), codex.read_text().splitlines()
    assert got[0] == want[0] and json.loads(got[0])["type"] == "session_meta"
    assert got[1:] == want[len(want) - len(got) + 1 :]
    assert "Where is the config read?" not in r.stdout


def test_a_codex_rollback_after_an_excluded_turn_refuses_the_export(hs: HS, tmp_path: Path) -> None:
    r = codex_rollout()
    r.event("thread_rolled_back", num_turns=1)
    path = r.write(tmp_path / "src" / "rollout.jsonl")
    hs("init")
    assert hs("import", str(path)).exit_code == 0
    forget(hs, "019a0000-aaaa-7000-8000-000000000002", "--exclude")
    res = hs("export", "--format", "codex", "--session", CODEX_SID)
    assert res.exit_code == 5 and res.stdout == ""
    assert "a later rollback (thread_rolled_back) counts it" in res.stderr
    assert SECRET not in res.stderr


# --------------------------------------------------------------------------- restore


def test_restore_puts_a_claude_code_session_where_claude_resumes_it(
    hs: HS, claude: dict[str, Path], tmp_path: Path
) -> None:
    home = Path(os.environ["HOME"])
    before = time.time()
    r = hs("restore", SID[:8])
    assert r.exit_code == 0, r.stderr
    proj = home / ".claude" / "projects" / SLUG
    main, sub = proj / f"{SID}.jsonl", proj / SID / "subagents" / f"agent-{AGENT}.jsonl"
    meta = sub.with_name(f"agent-{AGENT}.meta.json")
    assert r.stdout.splitlines() == [
        f"restored session {SID} (claude-code):",
        f"  wrote {sub} (2 lines)",
        f"  wrote {meta} (1 line)",
        f"  wrote {main} (11 lines)",
        f"resume it: cd {CWD} && claude --resume {SID}",
    ]
    assert r.stderr == ""
    assert main.read_bytes() == claude["main"].read_bytes()
    assert sub.read_bytes() == claude["sub"].read_bytes()
    # now, not the session's time: Claude Code's cleanup goes by mtime
    assert main.stat().st_mtime >= before - 1 and main.stat().st_mode & 0o777 == 0o600
    # a second restore finds it there, unchanged, and writes nothing
    r = hs("restore", SID)
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout == f"session {SID} is already there, unchanged: {main}\n"


def test_restore_then_import_is_a_no_op(hs: HS, claude: dict[str, Path]) -> None:
    assert hs("restore", SID).exit_code == 0
    r = hs("import")  # the agent homes, where the session is back
    assert r.exit_code == 0, r.stderr
    assert "turns: 0 added, 0 revised, 4 unchanged" in r.stdout
    assert "nothing new: no operation recorded" in r.stdout


def test_restore_honours_claude_config_dir_and_to(
    hs: HS, claude: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert hs("restore", SID).exit_code == 0
    assert (tmp_path / "cfg" / "projects" / SLUG / f"{SID}.jsonl").is_file()
    r = hs("restore", SID, "--to", str(tmp_path / "other"))
    assert r.exit_code == 0
    assert (tmp_path / "other" / "projects" / SLUG / f"{SID}.jsonl").is_file()
    assert r.stdout.splitlines()[-1] == (
        f"resume it: cd {CWD} && CLAUDE_CONFIG_DIR={tmp_path / 'other'} claude --resume {SID}"
    )
    assert not (Path(os.environ["HOME"]) / ".claude").exists()


def test_restore_never_overwrites_a_file_that_differs(hs: HS, claude: dict[str, Path]) -> None:
    main = Path(os.environ["HOME"]) / ".claude" / "projects" / SLUG / f"{SID}.jsonl"
    main.parent.mkdir(parents=True)
    main.write_text(claude["main"].read_text() + line(user("u9", "a5", "more", "2.1.30")) + "\n")
    before = main.read_bytes()
    for args in ([], ["--dry-run"]):
        r = hs("restore", SID, *args)
        assert r.exit_code == 5 and r.stdout == ""
        assert r.stderr == (
            f"hs: error: {main} exists and differs from session {SID} as the store holds it; "
            f"hint: `hs restore {SID} --as-new` writes it under a new id (both can be "
            "resumed); `--to DIR` writes it into another folder\n"
        )
    assert main.read_bytes() == before
    assert sorted(p.name for p in main.parent.rglob("*")) == [main.name]  # nothing else written


def test_as_new_writes_a_copy_with_every_id_rewritten(
    hs: HS, claude: dict[str, Path], tmp_path: Path
) -> None:
    proj = Path(os.environ["HOME"]) / ".claude" / "projects" / SLUG
    proj.mkdir(parents=True)
    (proj / f"{SID}.jsonl").write_text("{}\n")  # something else is there
    assert hs("restore", SID).exit_code == 5
    r = hs("restore", SID, "--as-new", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    new = out["session"]
    assert out["stored_session"] == SID and new != SID and out["status"] == "restored"
    main = proj / f"{new}.jsonl"
    (sub,) = (proj / new / "subagents").glob("agent-*.jsonl")
    assert out["written"] == [str(sub), str(sub.with_suffix(".meta.json")), str(main)]
    assert (proj / f"{SID}.jsonl").read_text() == "{}\n"  # the other file is left alone
    copy = main.read_text() + sub.read_text()
    assert SID not in copy and AGENT not in copy
    for uuid in ("u1", "a1", "a2", "r1", "a3", "u2", "a4", "u3", "a5", "s1", "s2"):
        assert f'"{uuid}"' not in copy
    # the copy is Claude Code's format again: the same turns under new ids
    (proj / f"{SID}.jsonl").unlink()
    ids = turn_ids(reimport(tmp_path, proj))
    assert list(ids) == [new] and len(ids[new]) == 4
    assert not set(ids[new]) & {"u1", "u2", "u3", "s1"}


def uuid_records() -> list[dict[str, Any]]:
    """claude_records with real uuids, as Claude Code writes them."""
    recs = claude_records()
    names = ["u1", "a1", "a2", "r1", "a3", "u2", "a4", "u3", "a5", "s1", "s2"]
    ids = {n: f"0000{i:04d}-1111-4222-8333-444455556666" for i, n in enumerate(names)}
    text = "\n".join(line(r) for r in recs)
    for n, u in ids.items():
        text = text.replace(f'"{n}"', f'"{u}"')
    return [json.loads(x) for x in text.split("\n")]


def test_as_new_rewrites_uuids_and_maps_back_to_the_original(hs: HS, tmp_path: Path) -> None:
    recs = uuid_records()
    path = write_lines(tmp_path / "src" / SLUG / f"{SID}.jsonl", recs)
    hs("init")
    assert hs("import", str(path)).exit_code == 0
    r = hs("restore", SID, "--as-new", "--json")
    assert r.exit_code == 0, r.stderr
    new = json.loads(r.stdout)["session"]
    copy = (Path(os.environ["HOME"]) / ".claude" / "projects" / SLUG / f"{new}.jsonl").read_text()
    original = path.read_text()
    old_ids = {x.get("uuid") for x in recs if x.get("uuid")} | {SID}
    assert not any(u in copy for u in old_ids)
    # the same ids, renamed one to one: mapping them back gives the original bytes
    pattern = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    mapping: dict[str, str] = {}
    for a, b in zip(re.findall(pattern, copy), re.findall(pattern, original), strict=True):
        assert mapping.setdefault(a, b) == b
    assert len(set(mapping.values())) == len(mapping)
    back = re.sub(pattern, lambda m: mapping[m.group(0)], copy)
    assert back == original
    ids = turn_ids(reimport(tmp_path, Path(os.environ["HOME"]) / ".claude" / "projects"))
    assert set(ids) == {new} and len(ids[new]) == 3
    assert not set(ids[new]) & old_ids


def test_dry_run_says_what_it_would_write_and_writes_nothing(
    hs: HS, claude: dict[str, Path]
) -> None:
    home = Path(os.environ["HOME"])
    r = hs("restore", SID, "--dry-run")
    assert r.exit_code == 0
    proj = home / ".claude" / "projects" / SLUG
    assert r.stdout.splitlines() == [
        f"would restore session {SID} (claude-code):",
        f"  would write {proj / SID / 'subagents' / f'agent-{AGENT}.jsonl'} (2 lines)",
        f"  would write {proj / SID / 'subagents' / f'agent-{AGENT}.meta.json'} (1 line)",
        f"  would write {proj / f'{SID}.jsonl'} (11 lines)",
        "dry run: nothing was written",
    ]
    assert not (home / ".claude").exists()


def test_restore_puts_a_codex_rollout_where_codex_resumes_it(
    hs: HS, codex: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    r = hs("restore", CODEX_SID)
    assert r.exit_code == 0, r.stderr
    want = tmp_path / "cx" / "sessions" / "2026" / "03" / "04"
    want = want / f"rollout-2026-03-04T05-00-00-{CODEX_SID}.jsonl"
    assert r.stdout.splitlines() == [
        f"restored session {CODEX_SID} (codex):",
        f"  wrote {want} ({len(codex.read_text().splitlines())} lines)",
        f"resume it: codex resume {CODEX_SID}",
    ]
    assert want.read_bytes() == codex.read_bytes()
    assert hs("restore", CODEX_SID).stdout.startswith(f"session {CODEX_SID} is already there")


def test_a_codex_session_only_in_the_archive_is_restored_and_said_so(
    hs: HS, codex: Path, tmp_path: Path
) -> None:
    archived = Path(os.environ["HOME"]) / ".codex" / "archived_sessions"
    archived.mkdir(parents=True)
    (archived / f"rollout-2026-03-04T05-00-00-{CODEX_SID}.jsonl").write_bytes(codex.read_bytes())
    r = hs("restore", CODEX_SID)
    assert r.exit_code == 0
    assert r.stderr.startswith("hs: note: Codex archived it too: ")
    assert len(list((archived.parent / "sessions").rglob("*.jsonl"))) == 1


def test_codex_as_new_is_a_rollout_of_a_new_thread(hs: HS, codex: Path, tmp_path: Path) -> None:
    r = hs("restore", CODEX_SID, "--as-new", "--to", str(tmp_path / "cx"), "--json")
    assert r.exit_code == 0, r.stderr
    new = json.loads(r.stdout)["session"]
    (path,) = (tmp_path / "cx" / "sessions").rglob("*.jsonl")
    assert path.name == f"rollout-2026-03-04T05-00-00-{new}.jsonl"
    text = path.read_text()
    assert CODEX_SID not in text and "019a0000-aaaa-7000-8000-00000000000" not in text
    assert json.loads(text.splitlines()[0])["payload"]["id"] == new
    ids = turn_ids(reimport(tmp_path, path))
    assert list(ids) == [new] and len(ids[new]) == 3
    assert not any(t.startswith("019a0000-aaaa") for t in ids[new])


def test_restore_since_restores_each_missing_session_and_lists_it(
    hs: HS, claude: dict[str, Path], codex: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["HOME"])
    assert hs("restore", CODEX_SID).exit_code == 0  # already there
    codex_file = next((home / ".codex").rglob("*.jsonl"))
    r = hs("restore", "--since", "3650d")
    assert r.exit_code == 0, r.stderr
    main = home / ".claude" / "projects" / SLUG / f"{SID}.jsonl"
    assert r.stdout.splitlines() == [
        f"restored       {SID}  claude-code  {main}",
        f"present        {CODEX_SID}  codex  {codex_file}",
        "restored 1 session of 2 since 3650d: 1 already there, 0 skipped",
    ]
    assert main.read_bytes() == claude["main"].read_bytes()
    r = hs("restore", "--since", "3650d", "--agent", "codex", "--dry-run", "--json")
    assert [json.loads(x)["status"] for x in r.stdout.splitlines()] == ["present"]
    r = hs("restore", "--since", "3650d", "--project", "/elsewhere")
    assert r.stdout == "restored 0 sessions of 0 since 3650d: 0 already there, 0 skipped\n"


def test_restore_since_shows_a_progress_bar_on_a_terminal(
    hs: HS, claude: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from histstore.porcelain import restore_cli

    monkeypatch.setattr(restore_cli, "_on_terminal", lambda: True)
    r = hs("restore", "--since", "3650d")
    assert r.exit_code == 0 and "restoring" in r.stderr


def test_restore_since_skips_an_excluded_session_and_says_so(
    hs: HS, claude: dict[str, Path]
) -> None:
    forget(hs, SID, "--exclude")
    r = hs("restore", "--since", "3650d")
    assert r.exit_code == 1
    assert r.stdout.splitlines()[0] == (
        f"skipped        {SID}  claude-code: every turn of session {SID} is excluded: "
        "nothing to export"
    )
    assert r.stderr == "hs: 1 session could not be restored (above)\n"
    assert not (Path(os.environ["HOME"]) / ".claude").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        ([], "give a session, or --since WHEN"),
        ([SID, "--since", "2d"], "give a session, or --since WHEN"),
        (["--since", "2d", "--as-new"], "--as-new is for one session"),
        ([SID, "--agent", "codex"], "--agent and --project go with --since"),
        (["--since", "2d", "--agent", "hs"], "--agent hs: only claude-code and codex"),
        (["--since", "soon"], "--since 'soon' is not a time"),
    ],
)
def test_restore_refuses_bad_usage(
    hs: HS, claude: dict[str, Path], args: list[str], message: str
) -> None:
    r = hs("restore", *args)
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith("hs: error: ") and message in r.stderr


# --------------------------------------------------------------------------- where


def test_claude_slug_follows_claude_codes_rule() -> None:
    assert claude_slug("/Users/dain/workspace/danieldemmel.me-next") == (
        "-Users-dain-workspace-danieldemmel-me-next"
    )
    assert claude_slug("C:\\Users\\dev\\my_app") == "C--Users-dev-my-app"
    assert claude_slug("/tmp/café/😀") == "-tmp-caf----"  # é one unit, 😀 two
    # the 32-bit string hash of a long path, in base 36, as JavaScript computes it
    assert js_hash36("a") == "2p" and js_hash36("ab") == "2e9"
    assert js_hash36("x" * 300) == js_hash36("x" * 300)


def test_a_long_project_path_uses_the_folder_claude_code_made(tmp_path: Path) -> None:
    from histstore.agents.sessions import claude_project_dir

    cwd = "/" + "deep/" * 50
    projects = tmp_path / "projects"
    default = claude_project_dir(projects, cwd)
    assert len(default.name) == 200 + 1 + len(js_hash36(cwd))
    made = projects / (claude_slug(cwd)[:200] + "-bunhash")  # Bun's hash differs
    made.mkdir(parents=True)
    assert claude_project_dir(projects, cwd) == made


# --------------------------------------------------------------------------- invariants


def test_a_file_that_appears_meanwhile_is_never_replaced(
    hs: HS, claude: dict[str, Path], tmp_path: Path
) -> None:
    from histstore.errors import Conflict
    from histstore.ops.restore import apply, plan

    store = Store.open(tmp_path / "store")
    try:
        p = plan(store, SID)
        assert [f.state for f in p.files] == ["new", "new", "new"]
        main = p.session_path
        main.parent.mkdir(parents=True)
        main.write_text("the agent's own\n")  # written after the plan was made
        with pytest.raises(Conflict, match="appeared while the session was restored"):
            apply(p)
    finally:
        store.close()
    assert main.read_text() == "the agent's own\n"
    # what this restore had written before it found out is gone again
    assert sorted(x.name for x in main.parent.rglob("*") if x.is_file()) == [main.name]


def test_no_export_or_restore_in_an_agents_format_holds_excluded_text(
    hs: HS, claude: dict[str, Path], codex: Path, tmp_path: Path
) -> None:
    gone = "axolotl"  # only in the session excluded whole
    gone_sid = "5e55101a-0000-4000-8000-00000000000f"
    text = "\n".join(line(r) for r in claude_records()).replace(SID, gone_sid)
    recs = [json.loads(x) for x in text.replace("naïvely", gone).splitlines()]
    for r in recs:  # its own record ids
        for key in ("uuid", "parentUuid"):
            if r.get(key):
                r[key] = "g" + r[key]
    write_lines(tmp_path / "gone" / SLUG / f"{gone_sid}.jsonl", recs)
    assert hs("import", str(tmp_path / "gone")).exit_code == 0
    forget(hs, "u2", "--exclude")
    forget(hs, "019a0000-aaaa-7000-8000-000000000002", "--exclude")
    forget(hs, gone_sid, "--exclude")
    outputs: list[str] = []
    runs = [
        ("export", "--format", "claude-code", "--session", SID),
        ("export", "--format", "claude-code", "--session", SID, "--dir", str(tmp_path / "d1")),
        ("export", "--format", "codex", "--session", CODEX_SID),
        ("export", "--format", "codex", "--session", CODEX_SID, "--dir", str(tmp_path / "d2")),
        ("export", "--format", "claude-code", "--session", gone_sid),
        ("restore", SID, "--dry-run", "--json"),
        ("restore", "--since", "3650d", "--dry-run", "--json"),
        ("restore", "--since", "3650d"),
        ("restore", SID, "--as-new"),
        ("restore", CODEX_SID, "--as-new", "--json"),
        ("restore", gone_sid),
    ]
    for args in runs:
        r = hs(*args)
        outputs += [r.stdout, r.stderr]
    files = [tmp_path / "d1", tmp_path / "d2", Path(os.environ["HOME"])]
    for root in files:
        outputs += [p.read_text() for p in root.rglob("*") if p.is_file()]
    written = "\n".join(outputs)
    # the rest is there
    assert "Totals are rounded in cart.py" in written and "Now add a test" in written
    for secret in (SECRET, gone):
        assert secret not in written


def test_a_session_file_in_another_project_folder_counts_as_there(
    hs: HS, claude: dict[str, Path]
) -> None:
    moved = Path(os.environ["HOME"]) / ".claude" / "projects" / "-elsewhere" / f"{SID}.jsonl"
    moved.parent.mkdir(parents=True)
    moved.write_bytes(claude["main"].read_bytes())
    r = hs("restore", SID)
    assert r.exit_code == 0, r.stderr
    sub = moved.parent / SID / "subagents" / f"agent-{AGENT}.jsonl"
    # only what was missing is written, beside the session's file where it is
    assert r.stdout.splitlines()[1:3] == [
        f"  wrote {sub} (2 lines)",
        f"  wrote {sub.with_suffix('.meta.json')} (1 line)",
    ]
    assert not (moved.parent.parent / SLUG).exists()
    assert hs("restore", SID).stdout == f"session {SID} is already there, unchanged: {moved}\n"


def test_restore_to_a_folder_inside_the_store_is_refused(hs: HS, claude: dict[str, Path]) -> None:
    inside = Path(os.environ["HISTORY_DIR"]) / "x"
    r = hs("restore", SID, "--to", str(inside))
    assert r.exit_code == 2 and f"--to {inside} is inside the store" in r.stderr
    assert not inside.exists()


def test_a_turn_recorded_without_records_is_said_and_left_out(
    hs: HS, claude: dict[str, Path], tmp_path: Path
) -> None:
    rec = turn_record(9, session_id=SID, agent="claude-code", asked_at="2026-05-07T00:00:00Z")
    assert hs("record", input=json.dumps(rec)).exit_code == 0
    r = hs("export", "--format", "claude-code", "--session", SID, "--dir", str(tmp_path / "o"))
    assert r.exit_code == 0
    assert r.stderr == (
        f"hs: 1 turn of session {SID} has no records of the agent's (recorded by hs record), "
        "not written: turn-0009\n"
    )
    assert (tmp_path / "o" / f"{SID}.jsonl").read_bytes() == claude["main"].read_bytes()


def test_only_sub_agent_turns_left_is_nothing_to_resume(hs: HS, claude: dict[str, Path]) -> None:
    for t in ("u1", "u2", "u3"):
        forget(hs, t, "--exclude")
    r = hs("export", "--format", "claude-code", "--session", SID)
    assert r.exit_code == 4 and r.stdout == ""
    assert f"every turn of session {SID}'s own file is excluded" in r.stderr


def test_importing_a_restore_with_a_gap_revises_only_the_relinked_turn(
    hs: HS, claude: dict[str, Path]
) -> None:
    forget(hs, "u2", "--exclude")
    assert hs("restore", SID).exit_code == 0
    r = hs("import")
    assert r.exit_code == 0, r.stderr
    # u3's prompt now hangs off a3: its raw record changed; u2 stays in the store, excluded
    assert "turns: 0 added, 1 revised, 2 unchanged" in r.stdout
    assert turn_ids(Path(os.environ["HISTORY_DIR"])) == {SID: ["u1", "u2", "u3", "s1"]}


def test_a_uuid_a_kept_record_defines_too_is_not_a_gap(hs: HS, tmp_path: Path) -> None:
    """A resumed session can repeat records (same uuid) in two turns: the
    excluded turn's copy leaves no gap the kept one fills."""
    v = "2.1.30"
    recs = [
        user("u1", None, "first", v),
        asst("a1", "u1", "m1", [txt("answer 1")], v),
        user("u2", "a1", f"second {SECRET}", v),
        asst("a1", "u2", "m1", [txt("answer 1, repeated")], v),  # a1 again, in u2's turn
        user("u3", "a1", "third", v),
        asst("a3", "u3", "m3", [txt("answer 3")], v),
    ]
    path = write_lines(tmp_path / "src" / SLUG / f"{SID}.jsonl", recs)
    hs("init")
    assert hs("import", str(path)).exit_code == 0
    forget(hs, "u2", "--exclude")
    r = hs("export", "--format", "claude-code", "--session", SID)
    assert r.exit_code == 0 and "re-linked" not in r.stderr
    assert SECRET not in r.stdout and '"parentUuid":"a1"' in r.stdout.splitlines()[-2]
