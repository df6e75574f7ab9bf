"""The Claude Code importer on small hand-written session files."""

from __future__ import annotations

import datetime
import json
import pathlib
from typing import Any

from histstore.history.importers import Problem, Resume, SessionMeta
from histstore.history.importers.claude_code import find_files, is_claude_code_line, parse_file

SID = "11111111-2222-3333-4444-555555555555"
CWD = "/home/dev/proj"
_ts = 0
_T0 = datetime.datetime(2026, 1, 2, 3, 4)


def _next_ts() -> str:
    """A later time for every record made in this process: the order records
    are written in is their order in time, whichever tests ran before (a
    counter that wrapped at a minute once put a turn before its elder)."""
    global _ts
    _ts += 1
    t = _T0 + datetime.timedelta(milliseconds=_ts)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def env(kind: str, uuid: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": SID,
        "version": "2.0.42",
        "type": kind,
        "uuid": uuid,
        "timestamp": _next_ts(),
    }
    rec.update(extra)
    return rec


def user(uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    return env("user", uuid, parent, message={"role": "user", "content": content}, **extra)


def asst(
    uuid: str,
    parent: str | None,
    mid: str,
    blocks: list[dict[str, Any]],
    model: str = "claude-sonnet-4-5",
    **extra: Any,
) -> dict[str, Any]:
    msg = {"id": mid, "model": model, "role": "assistant", "type": "message", "content": blocks}
    return env("assistant", uuid, parent, message=msg, **extra)


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(tid: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp}


def tool_result(tid: str, content: Any, is_error: bool = False) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": content}
    if is_error:
        block["is_error"] = True
    return [block]


def write(path: pathlib.Path, records: list[Any]) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def parse(
    path: pathlib.Path, redact: Any = None
) -> tuple[list[dict[str, Any]], list[Problem], list[SessionMeta]]:
    out = list(parse_file(path, redact or (lambda s: s)))
    turns = [o for o in out if isinstance(o, dict)]
    problems = [o for o in out if isinstance(o, Problem)]
    metas = [o for o in out if isinstance(o, SessionMeta)]
    return turns, problems, metas


def session(tmp_path: pathlib.Path, records: list[Any], name: str = SID) -> pathlib.Path:
    return write(tmp_path / "projects" / "-home-dev-proj" / f"{name}.jsonl", records)


# --------------------------------------------------------------------------- basic turns


def test_plain_turn_with_split_assistant_message(tmp_path: pathlib.Path) -> None:
    recs = [
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
        user("u1", None, "Explain the code"),
        asst("a1", "u1", "msg_1", [{"type": "thinking", "thinking": "hmm", "signature": "s"}]),
        asst("a2", "a1", "msg_1", [text("Part one.")]),
        asst("a3", "a2", "msg_1", [text("Final part.")]),
        env("system", "s1", "a3", subtype="turn_duration", durationMs=5),
    ]
    path = session(tmp_path, recs)
    turns, problems, metas = parse(path)
    assert problems == []
    assert len(turns) == 1
    t = turns[0]
    assert t["turn_id"] == "u1"
    assert t["session_id"] == SID
    assert t["project"] == CWD
    assert t["cwd"] == CWD
    assert t["asked"] == "Explain the code"
    assert t["answered"] == "Final part."
    assert t["asked_at"] == recs[1]["timestamp"]
    assert t["answered_at"] == recs[5]["timestamp"]
    assert t["model"] == "claude-sonnet-4-5"
    assert t["agent"] == "claude-code"
    assert t["status"] == "completed"
    assert t["subagent"] is None
    assert [s["type"] for s in t["steps"]] == ["user", "thinking", "assistant", "assistant"]
    assert t["steps"][1]["text"] == "hmm"
    assert t["source"] == {
        "format": "claude-code",
        "file": str(path),
        "line": 2,
        "end_line": 6,
        "offset": len(path.read_bytes().split(b"\n")[0]) + 1,
        "lines": [[1, 6]],  # the line of each raw record, as runs
    }
    # the snapshot before the prompt is kept in the first turn's raw
    assert t["raw"] == path.read_text().splitlines()
    assert metas == [SessionMeta(session_id=SID, title=None, project=CWD)]


def test_tool_calls_are_paired_and_counted(tmp_path: pathlib.Path) -> None:
    recs = [
        user("u1", None, [text("Fix the bug")]),
        asst("a1", "u1", "m1", [text("Let me look."), tool_use("t1", "Read", file_path="/p/a.py")]),
        user("r1", "a1", tool_result("t1", [text("line1"), text("line2")])),
        asst("a2", "r1", "m2", [tool_use("t2", "Edit", file_path="/p/a.py", old_string="x")]),
        asst("a3", "a2", "m2", [tool_use("t3", "Read", file_path="/p/b.py")]),
        user("r2", "a2", tool_result("t2", "ok")),
        user("r3", "a3", tool_result("t3", "File does not exist.", is_error=True)),
        asst("a4", "r3", "m3", [tool_use("t4", "Write", file_path="/p/c.py", content="")]),
        user("r4", "a4", tool_result("t4", "written")),
        asst("a5", "r4", "m4", [tool_use("t5", "MultiEdit", file_path="/p/a.py", edits=[])]),
        user("r5", "a5", tool_result("t5", "ok")),
        asst("a6", "r5", "m5", [tool_use("t6", "NotebookEdit", notebook_path="/p/n.ipynb")]),
        user("r6", "a6", tool_result("t6", "ok")),
        asst("a7", "r6", "m6", [text("Done.")]),
    ]
    turns, problems, _ = parse(session(tmp_path, recs))
    assert problems == []
    (t,) = turns
    assert t["files"] == ["/p/a.py", "/p/b.py"]
    assert t["edited"] == ["/p/a.py", "/p/c.py", "/p/n.ipynb"]
    assert t["tools"] == {"Read": 2, "Edit": 1, "Write": 1, "MultiEdit": 1, "NotebookEdit": 1}
    assert t["tainted"] is False
    assert t["answered"] == "Done."
    tools = {s["id"]: s for s in t["steps"] if s["type"] == "tool"}
    assert len(tools) == 6
    assert tools["t1"]["output"] == "line1\nline2"
    assert tools["t1"]["name"] == "Read"
    assert tools["t1"]["input"] == {"file_path": "/p/a.py"}
    assert tools["t1"]["is_error"] is False
    assert tools["t3"]["is_error"] is True
    assert tools["t3"]["output"] == "File does not exist."
    assert len(t["raw"]) == len(recs)


def test_non_prompt_user_lines_never_start_a_turn(tmp_path: pathlib.Path) -> None:
    caveat = (
        "Caveat: The messages below were generated by the user while running local "
        "commands. DO NOT respond to these messages."
    )
    recs = [
        user("c0", None, caveat, isMeta=True),
        user(
            "c1",
            "c0",
            "<command-name>/model</command-name>\n<command-message>model</command-message>",
        ),
        user("c2", "c1", "<local-command-stdout>Set model</local-command-stdout>"),
        user("u1", "c2", "real prompt"),
        asst("a1", "u1", "m1", [text("answer")]),
        user("m0", "a1", [text("skill body")], isMeta=True),
        user("c3", "m0", "<local-command-caveat>Caveat: whatever</local-command-caveat>"),
        user(
            "c4",
            "c3",
            "<command-message>init</command-message>\n<command-name>/init</command-name>",
        ),
        user("c5", "c4", "<command-args>x</command-args>"),
        user("c6", "c5", "<local-command-stderr>oops</local-command-stderr>"),
        user("i0", "c6", [text("[Request interrupted by user]")]),
        user("i1", "i0", [text("[Request interrupted by user for tool use]")]),
        user("r0", "i1", tool_result("tx", "orphan result")),
        env("system", "b0", None, subtype="compact_boundary", content="Conversation compacted"),
        user(
            "k0",
            "b0",
            "This session is being continued from a previous conversation...",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        user("v0", "k0", "visible only", isVisibleInTranscriptOnly=True),
        {"type": "queue-operation", "operation": "enqueue", "sessionId": SID, "content": "q"},
        {"type": "summary", "summary": "A title", "leafUuid": "elsewhere"},
        user("u2", "v0", "second prompt"),
    ]
    path = session(tmp_path, recs)
    turns, problems, _ = parse(path)
    assert problems == []
    assert [t["turn_id"] for t in turns] == ["u1", "u2"]
    first = turns[0]
    kinds = [s["kind"] for s in first["steps"] if s["type"] == "event"]
    assert kinds == [
        "meta", "meta", "command", "command", "command", "interrupted", "interrupted",
        "compact", "compact", "meta",
    ]  # fmt: skip
    assert first["status"] == "interrupted"
    # every line lands in exactly one turn's raw, the preamble and summary in the first
    all_raw = [line for t in turns for line in t["raw"]]
    assert sorted(all_raw) == sorted(path.read_text().splitlines())
    assert first["raw"][0].startswith('{"parentUuid": null')
    assert first["source"]["line"] == 4
    assert turns[1]["source"] == {
        "format": "claude-code",
        "file": str(path),
        "line": 19,
        "end_line": 19,
        "offset": sum(len(x) + 1 for x in path.read_bytes().split(b"\n")[:18]),
        "lines": [[17, 1], [19, 1]],  # the prompt queued before it is its own
    }


def test_interrupted_turn_keeps_tool_steps(tmp_path: pathlib.Path) -> None:
    recs = [
        user("u1", None, "run the tests"),
        asst("a1", "u1", "m1", [text("Running."), tool_use("t1", "Bash", command="pytest")]),
        user("r1", "a1", tool_result("t1", "The user doesn't want to proceed", is_error=True)),
        user("i1", "r1", [text("[Request interrupted by user for tool use]")]),
    ]
    (t,), problems, _ = parse(session(tmp_path, recs))
    assert problems == []
    assert t["status"] == "interrupted"
    assert t["tools"] == {"Bash": 1}
    tool = next(s for s in t["steps"] if s["type"] == "tool")
    assert tool["is_error"] is True
    assert t["answered"] == "Running."


def test_api_error_message_fails_the_turn(tmp_path: pathlib.Path) -> None:
    recs = [
        user("u1", None, "hello"),
        asst(
            "a1",
            "u1",
            "m1",
            [text("API Error: 400 bad request")],
            model="<synthetic>",
            isApiErrorMessage=True,
            error="invalid_request",
        ),
        user("u2", "a1", "hello again"),
        env("system", "s1", "u2", subtype="api_error", error={"status": 529}, retryAttempt=1),
        env("system", "s2", "s1", subtype="api_error", error={"status": 529}, retryAttempt=2),
        user("u3", "s2", "third"),
        env("system", "s3", "u3", subtype="api_error", error={"status": 529}, retryAttempt=1),
        asst("a3", "s3", "m3", [text("recovered")]),
    ]
    turns, problems, _ = parse(session(tmp_path, recs))
    assert problems == []
    assert [t["status"] for t in turns] == ["failed", "failed", "completed"]
    assert turns[0]["answered"] == ""
    assert turns[0]["model"] is None
    assert [s["kind"] for s in turns[0]["steps"] if s["type"] == "event"] == ["api_error"]
    assert [s["kind"] for s in turns[1]["steps"] if s["type"] == "event"] == [
        "api_error",
        "api_error",
    ]
    assert turns[2]["answered"] == "recovered"


def test_untrusted_tools_taint_the_turn(tmp_path: pathlib.Path) -> None:
    recs = [
        user("u1", None, "look it up"),
        asst("a1", "u1", "m1", [tool_use("t1", "WebFetch", url="https://x", prompt="p")]),
        user("r1", "a1", tool_result("t1", "page")),
        asst("a2", "r1", "m2", [text("found")]),
        user("u2", "a2", "and the db"),
        asst("a3", "u2", "m3", [tool_use("t2", "mcp__db__query", sql="select 1")]),
        user("r2", "a3", tool_result("t2", "1")),
        asst("a4", "r2", "m4", [text("1")]),
        user("u3", "a4", "nothing external"),
        asst("a5", "u3", "m5", [tool_use("t3", "Grep", pattern="x")]),
        user("r3", "a5", tool_result("t3", "")),
        asst("a6", "r3", "m6", [text("none")]),
    ]
    turns, _, _ = parse(session(tmp_path, recs))
    assert [t["tainted"] for t in turns] == [True, True, False]
    assert turns[1]["tools"] == {"mcp__db__query": 1}


def test_the_last_summary_gives_session_title(tmp_path: pathlib.Path) -> None:
    """Issue 13: a session was titled by its first summary line ("Claude Code
    warmup for ...") though a later one says what it came to be about."""
    recs = [
        {"type": "summary", "summary": "Claude Code warmup for proj", "leafUuid": "x1"},
        {"type": "summary", "summary": "Login bug fixed", "leafUuid": "x2"},
        user("u1", None, "hi"),
        asst("a1", "u1", "m1", [text("hello")]),
    ]
    path = session(tmp_path, recs)
    turns, _, metas = parse(path)
    assert metas == [SessionMeta(session_id=SID, title="Login bug fixed", project=CWD)]
    assert turns[0]["raw"] == path.read_text().splitlines()
    assert turns[0]["source"]["line"] == 3


def test_ai_title_gives_session_title(tmp_path: pathlib.Path) -> None:
    recs = [
        user("u1", None, "hi"),
        asst("a1", "u1", "m1", [text("hello")]),
        {"type": "ai-title", "aiTitle": "Greeting", "sessionId": SID},
    ]
    _, _, metas = parse(session(tmp_path, recs))
    assert metas[0].title == "Greeting"


def test_model_switch(tmp_path: pathlib.Path) -> None:
    recs = [
        user("u1", None, "one"),
        asst("a1", "u1", "m1", [text("first")], model="claude-opus-4-1"),
        user("c1", "a1", "<command-name>/model</command-name>"),
        user("c2", "c1", "<local-command-stdout>Set model to sonnet</local-command-stdout>"),
        user("u2", "c2", "two"),
        asst("a2", "u2", "m2", [tool_use("t1", "Bash", command="ls")], model="claude-opus-4-1"),
        user("r1", "a2", tool_result("t1", "x")),
        asst("a3", "r1", "m3", [text("second")], model="claude-sonnet-4"),
        asst("a4", "a3", "m4", [text("No response requested.")], model="<synthetic>"),
    ]
    turns, _, _ = parse(session(tmp_path, recs))
    assert [t["model"] for t in turns] == ["claude-opus-4-1", "claude-sonnet-4"]
    models = [s["model"] for s in turns[1]["steps"] if s["type"] == "assistant"]
    assert models == ["claude-sonnet-4", "<synthetic>"]


def test_windows_cwd_and_cwd_change(tmp_path: pathlib.Path) -> None:
    win = "c:\\Users\\dev\\proj"
    recs = [
        user("u1", None, "one", cwd=win),
        asst("a1", "u1", "m1", [text("ok")], cwd=win),
        user("u2", "a1", "two", cwd=win + "\\sub"),
        asst("a2", "u2", "m2", [text("ok")], cwd=win + "\\sub"),
    ]
    path = session(tmp_path, recs)
    turns, _, metas = parse(path)
    assert [t["cwd"] for t in turns] == [win, win + "\\sub"]
    assert [t["project"] for t in turns] == [win, win]
    assert metas[0].project == win


def test_image_prompt(tmp_path: pathlib.Path) -> None:
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}}
    recs = [user("u1", None, [img]), asst("a1", "u1", "m1", [text("a picture")])]
    (t,), _, _ = parse(session(tmp_path, recs))
    assert t["asked"] == ""
    assert {"type": "image", "media_type": "image/png", "data": "AAA", "at": t["asked_at"]} in t[
        "steps"
    ]


def test_rewind_attributes_records_to_their_branch(tmp_path: pathlib.Path) -> None:
    recs = [
        user("u1", None, "first"),
        asst("a1", "u1", "m1", [text("answer 1")]),
        user("u2", "a1", "second, later rewound"),
        asst("a2", "u2", "m2", [text("answer 2")]),
        # rewind: a new prompt hanging off a1 again, then a late record of u2's branch
        user("u3", "a1", "second, retyped"),
        asst("a3", "u3", "m3", [text("answer 3")]),
        asst("a2b", "a2", "m2b", [text("late answer 2")]),
    ]
    turns, _, _ = parse(session(tmp_path, recs))
    assert [t["turn_id"] for t in turns] == ["u1", "u2", "u3"]
    assert turns[1]["answered"] == "late answer 2"
    assert turns[2]["answered"] == "answer 3"
    assert turns[1]["source"]["end_line"] == 7
    assert turns[2]["source"]["end_line"] == 6
    # the late record of u2's branch sits after u3's lines: where each is, is kept
    assert turns[1]["source"]["lines"] == [[3, 2], [7, 1]]
    assert turns[2]["source"]["lines"] == [[5, 2]]


# --------------------------------------------------------------------------- sub-agents


def _sidechain(recs: list[dict[str, Any]], agent: str | None) -> list[dict[str, Any]]:
    for r in recs:
        r["isSidechain"] = True
        if agent:
            r["agentId"] = agent
    return recs


def test_legacy_subagent_file(tmp_path: pathlib.Path) -> None:
    main = session(tmp_path, [user("u1", None, "go"), asst("a1", "u1", "m1", [text("ok")])])
    recs = _sidechain(
        [
            user("s1", None, "Find the config files", cwd="/elsewhere"),
            asst("s2", "s1", "m9", [tool_use("t1", "Glob", pattern="*.toml")], model="haiku"),
            user("s3", "s2", tool_result("t1", "a.toml")),
            asst("s4", "s3", "m10", [text("a.toml")], model="haiku"),
        ],
        "ea02459f",
    )
    path = write(main.parent / "agent-ea02459f.jsonl", recs)
    turns, problems, metas = parse(path)
    assert problems == []
    (t,) = turns
    assert t["turn_id"] == "s1"
    assert t["session_id"] == SID
    assert t["subagent"] == "ea02459f"
    assert t["asked"] == "Find the config files"
    assert t["answered"] == "a.toml"
    assert t["model"] == "haiku"
    assert t["cwd"] == "/elsewhere"
    assert t["project"] == CWD  # the parent session's launch dir
    assert "extra" not in t
    assert metas[0].session_id == SID


def test_nested_subagent_file_with_meta(tmp_path: pathlib.Path) -> None:
    recs = _sidechain(
        [
            user("s1", None, "Research X"),
            asst("s2", "s1", "m9", [text("X is Y")]),
        ],
        None,  # no agentId field: the id comes from the file name
    )
    folder = tmp_path / "projects" / "-home-dev-proj" / SID / "subagents"
    path = write(folder / "agent-a2271d1.jsonl", recs)
    meta = {"agentType": "general-purpose", "description": "Research X"}
    (folder / "agent-a2271d1.meta.json").write_text(json.dumps(meta))
    turns, problems, _ = parse(path)
    assert problems == []
    (t,) = turns
    assert t["session_id"] == SID
    assert t["subagent"] == "a2271d1"
    assert t["extra"] == {"subagent_meta": meta}
    assert t["project"] == CWD


def test_subagent_without_prompt_line(tmp_path: pathlib.Path) -> None:
    recs = _sidechain(
        [
            asst("s1", None, "m1", [text("Let me look."), tool_use("t1", "Read", file_path="/a")]),
            user("s2", "s1", tool_result("t1", "content")),
            asst("s3", "s2", "m2", [text("It says content.")]),
        ],
        "c8d9b115",
    )
    path = session(tmp_path, recs, name="agent-c8d9b115")
    (t,), problems, _ = parse(path)
    assert problems == []
    assert t["asked"] == ""
    assert t["turn_id"] == "s1"
    assert t["status"] == "completed"
    assert t["answered"] == "It says content."
    assert t["files"] == ["/a"]
    assert t["subagent"] == "c8d9b115"
    assert t["source"]["line"] == 1
    assert len(t["raw"]) == 3


def test_sidechain_file_detected_by_content(tmp_path: pathlib.Path) -> None:
    recs = _sidechain([user("w1", None, "Warmup"), asst("w2", "w1", "m1", [text("Ready")])], "af1")
    (t,), _, _ = parse(write(tmp_path / "sample_agent.jsonl", recs))
    assert t["subagent"] == "af1"
    assert t["asked"] == "Warmup"


def test_sidechain_lines_in_main_file_add_no_steps(tmp_path: pathlib.Path) -> None:
    side = asst("x1", "a1", "mx", [tool_use("tx", "Bash", command="ls")])
    side["isSidechain"] = True
    side_user = user("x0", "a1", "sub-agent prompt")
    side_user["isSidechain"] = True
    recs = [
        user("u1", None, "go"),
        asst("a1", "u1", "m1", [text("ok")]),
        side_user,
        side,
    ]
    (t,), _, _ = parse(session(tmp_path, recs))
    assert t["tools"] == {}
    assert len(t["raw"]) == 4


# --------------------------------------------------------------------------- degenerate files


def test_empty_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "projects" / "-p" / "abc.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    turns, problems, metas = parse(path)
    assert turns == [] and problems == []
    assert metas == [SessionMeta(session_id="abc", title=None, project="-p")]


def test_only_summaries_and_snapshots(tmp_path: pathlib.Path) -> None:
    recs = [
        {"type": "summary", "summary": "Old title", "leafUuid": "x"},
        {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}},
        "",
        "   ",
    ]
    turns, problems, metas = parse(session(tmp_path, recs, name="only-summary"))
    assert turns == [] and problems == []
    assert metas == [
        SessionMeta(session_id="only-summary", title="Old title", project="-home-dev-proj")
    ]


def test_invalid_json_line_is_a_problem(tmp_path: pathlib.Path) -> None:
    recs: list[Any] = [
        user("u1", None, "one"),
        '{"type": "assistant", broken',
        "[1, 2]",
        asst("a1", "u1", "m1", [text("fine")]),
    ]
    path = session(tmp_path, recs)
    turns, problems, _ = parse(path)
    assert [(p.file, p.line) for p in problems] == [(str(path), 2), (str(path), 3)]
    assert "JSON" in problems[0].message
    (t,) = turns
    assert t["answered"] == "fine"
    assert len(t["raw"]) == 2


def test_prompt_without_reply(tmp_path: pathlib.Path) -> None:
    (t,), _, _ = parse(session(tmp_path, [user("u1", None, "anyone?")]))
    assert t["answered"] == ""
    assert t["model"] is None
    assert t["status"] == "completed"
    assert t["answered_at"] == t["asked_at"]


def test_redactor_is_applied(tmp_path: pathlib.Path) -> None:
    recs = [
        {"type": "summary", "summary": "about SECRET", "leafUuid": "x"},
        user("u1", None, "my key is SECRET"),
        asst("a1", "u1", "m1", [tool_use("t1", "Bash", command="echo SECRET")]),
        user("r1", "a1", tool_result("t1", "SECRET")),
        asst("a2", "r1", "m2", [text("the key SECRET is set")]),
    ]
    path = session(tmp_path, recs)
    turns, _, metas = parse(path, lambda s: s.replace("SECRET", "[X]"))
    (t,) = turns
    dumped = json.dumps(t)
    assert "SECRET" not in dumped
    assert t["asked"] == "my key is [X]"
    assert t["answered"] == "the key [X] is set"
    assert metas[0].title == "about [X]"
    assert all("SECRET" not in line for line in t["raw"])
    assert len(t["raw"]) == 5


def queue(operation: str, content: Any = None) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "type": "queue-operation",
        "operation": operation,
        "timestamp": _next_ts(),
        "sessionId": SID,
    }
    if content is not None:
        rec["content"] = content
    return rec


def _queued_session(tmp_path: pathlib.Path) -> pathlib.Path:
    return session(
        tmp_path,
        [
            queue("enqueue", [text("first, queued")]),
            queue("dequeue"),
            user("u1", None, [text("first, queued")]),
            asst("a1", "u1", "m1", [text("one")]),
            queue("enqueue", [text("the private second prompt")]),
            asst("a1b", "a1", "m1b", [text("still on one")]),
            queue("dequeue"),
            user("u2", "a1b", [text("the private second prompt")]),
            asst("a2", "u2", "m2", [text("two")]),
            queue("enqueue", [text("never sent")]),
            queue("remove"),
        ],
    )


def test_a_queued_prompt_is_filed_with_the_turn_it_opens(tmp_path: pathlib.Path) -> None:
    """A prompt typed while the agent works is written as a queue-operation
    line before the turn it opens: its text is that turn's, so it must not sit
    in the turn before (excluding the second turn would leave it there)."""
    turns, problems, _ = parse(_queued_session(tmp_path))
    assert problems == []
    first, second = turns
    assert [t["turn_id"] for t in turns] == ["u1", "u2"]
    assert not any("private second" in line for line in first["raw"])
    assert sum("private second" in line for line in second["raw"]) == 2
    assert [json.loads(x)["type"] for x in second["raw"][:3]] == ["queue-operation"] * 2 + ["user"]
    assert second["source"]["line"] == 8 and second["source"]["lines"] == [[5, 1], [7, 5]]
    assert first["source"]["lines"] == [[1, 4], [6, 1]]
    assert first["answered_at"] == json.loads(first["raw"][-1])["timestamp"]  # a1b's
    # queue lines no prompt follows stay with the latest turn: every line is kept
    assert [json.loads(x).get("operation") for x in second["raw"][-2:]] == ["enqueue", "remove"]
    assert second["answered_at"] == json.loads(second["raw"][-3])["timestamp"]  # a2's, not theirs


def test_a_resumed_read_gives_what_a_whole_read_gives(tmp_path: pathlib.Path) -> None:
    """Cut the file after any line, read it, then read the whole file from the
    Resume the first read gave: the turns read again replace the first read's
    and together they are one whole read's, record for record (a queued prompt
    filed with the latest turn moves to the turn it opens)."""
    path = _queued_session(tmp_path)
    data = path.read_bytes()
    whole = list(parse_file(path, lambda s: s))
    expected = {t["turn_id"]: t for t in whole if isinstance(t, dict)}
    cut_file = tmp_path / "cut" / path.name
    cut_file.parent.mkdir()
    for k in range(1, data.count(b"\n")):
        cut_file.write_bytes(b"".join(data.splitlines(keepends=True)[:k]))
        first = list(parse_file(cut_file, lambda s: s))
        resume = first[-1]
        assert isinstance(resume, Resume)
        cut_file.write_bytes(data)
        second = list(parse_file(cut_file, lambda s: s, resume=resume))
        merged = {t["turn_id"]: t for t in first + second if isinstance(t, dict)}
        for rec in merged.values():
            rec["source"]["file"] = str(path)
        assert merged == expected, f"cut after line {k}"
        assert second[-1] == whole[-1], f"cut after line {k}"


# --------------------------------------------------------------------------- detection, discovery


def test_is_claude_code_line() -> None:
    assert is_claude_code_line(user("u1", None, "hi"))
    assert is_claude_code_line(asst("a1", "u1", "m", [text("x")]))
    assert is_claude_code_line({"type": "summary", "summary": "t", "leafUuid": "x"})
    assert is_claude_code_line({"type": "file-history-snapshot", "messageId": "m", "snapshot": {}})
    assert is_claude_code_line(
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s"}
    )
    codex = {"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "x"}}
    assert not is_claude_code_line(codex)
    assert not is_claude_code_line({"type": "response_item", "payload": {}})
    assert not is_claude_code_line({"role": "user", "content": "hi"})


def test_find_files(tmp_path: pathlib.Path) -> None:
    projects = tmp_path / "projects"
    files = [
        projects / "-a" / "s1.jsonl",
        projects / "-a" / "agent-1234abcd.jsonl",
        projects / "-a" / "s1" / "subagents" / "agent-a1.jsonl",
        projects / "-b" / "s2.jsonl",
    ]
    for f in files:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("")
    (projects / "-a" / "s1" / "subagents" / "agent-a1.meta.json").write_text("{}")
    (projects / "-a" / "notes.txt").write_text("")
    assert find_files(projects) == sorted(files)
    assert find_files(projects / "-a") == sorted(files[:3])
    assert find_files(tmp_path / "missing") == []
