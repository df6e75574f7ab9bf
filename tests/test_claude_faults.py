"""The three Claude Code faults issue 13 found on real files, each on a fixture
of our own that reproduces it: a slash command's work that no turn held, IDE
context taken for the prompt, and sub-agents floating (no prompt, no link to
the call that started them, the session titled by a warm-up summary)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

from helpers import HS
from test_importer_claude_code import (
    CWD,
    SID,
    _sidechain,
    asst,
    parse,
    session,
    text,
    tool_result,
    tool_use,
    user,
    write,
)

from histstore.history.importers import Resume
from histstore.history.importers.claude_code import parse_file

INIT_PROMPT = "Please analyze this codebase and create a CLAUDE.md file."


def init_session() -> list[Any]:
    """/init as Claude Code writes it: the command line, an isMeta prompt it
    injects, the work (tools, a Write of CLAUDE.md) and the answer; then a
    prompt typed with an IDE's context."""
    return [
        {"type": "queue-operation", "operation": "enqueue", "sessionId": SID},
        user(
            "c1",
            None,
            "<command-message>init is analyzing your codebase…</command-message>\n"
            "<command-name>/init</command-name>",
        ),
        user("m1", "c1", [text(INIT_PROMPT)], isMeta=True),
        asst("a1", "m1", "msg_1", [{"type": "thinking", "thinking": "look", "signature": "s"}]),
        asst("a2", "a1", "msg_1", [tool_use("t1", "Bash", command="ls")]),
        user("r1", "a2", tool_result("t1", "Gemfile\nconfig.ru")),
        asst("a3", "r1", "msg_2", [tool_use("t2", "Write", file_path=f"{CWD}/CLAUDE.md")]),
        user("r2", "a3", tool_result("t2", "File created")),
        asst("a4", "r2", "msg_3", [text("Created CLAUDE.md: serve it with rackup.")]),
        user(
            "u1",
            "a4",
            [
                text(
                    "<ide_opened_file>The user opened the file /p/app.js in the IDE. "
                    "This may or may not be related.</ide_opened_file>"
                ),
                text("Now modernise the build"),
            ],
        ),
        asst("a5", "u1", "msg_4", [text("Done.")]),
    ]


# --------------------------------------------------------------------------- a slash command's work


def test_a_slash_command_the_agent_worked_on_is_a_turn(tmp_path: pathlib.Path) -> None:
    path = session(tmp_path, init_session())
    turns, problems, _ = parse(path)
    assert problems == []
    assert [t["turn_id"] for t in turns] == ["c1", "u1"]
    init = turns[0]
    assert init["asked"] == "/init"  # the command as typed
    assert init["answered"] == "Created CLAUDE.md: serve it with rackup."
    assert init["edited"] == [f"{CWD}/CLAUDE.md"]
    assert init["tools"] == {"Bash": 1, "Write": 1}
    events = [(s["kind"], s["text"]) for s in init["steps"] if s["type"] == "event"]
    assert events == [("meta", INIT_PROMPT)]  # what Claude Code injected, kept
    assert init["steps"][0] == {"type": "user", "text": "/init", "at": init["asked_at"]}
    assert len(init["raw"]) == 9  # the queued line before it too


def test_slash_commands_without_work_stay_in_the_turn_they_follow(
    tmp_path: pathlib.Path,
) -> None:
    recs = [
        user("c0", None, "<command-name>/model</command-name>"),
        user("c1", "c0", "<local-command-stdout>Set model</local-command-stdout>"),
        user("u1", "c1", "one"),
        asst("a1", "u1", "m1", [text("first")]),
        user("c2", "a1", "<command-name>/review</command-name>\n<command-args>12</command-args>"),
        asst("a2", "c2", "m2", [text("PR 12 looks fine")]),
        user("c3", "a2", "<command-name>/cost</command-name>"),
        user("c4", "c3", "<local-command-stdout>$0.12</local-command-stdout>"),
        user("u2", "c4", "two"),
        asst("a3", "u2", "m3", [text("second")]),
        user("c5", "a3", "<command-name>/clear</command-name>"),  # the last line
    ]
    path = session(tmp_path, recs)
    out = list(parse_file(path, lambda s: s))
    turns = [o for o in out if isinstance(o, dict)]
    assert [(t["turn_id"], t["asked"]) for t in turns] == [
        ("u1", "one"),
        ("c2", "/review 12"),
        ("u2", "two"),
    ]
    assert turns[1]["answered"] == "PR 12 looks fine"
    # /cost's lines are in the /review turn, /clear's in the last, /model's first
    assert [json.loads(x)["uuid"] for x in turns[1]["raw"]] == ["c2", "a2", "c3", "c4"]
    assert json.loads(turns[2]["raw"][-1])["uuid"] == "c5"
    assert json.loads(turns[0]["raw"][0])["uuid"] == "c0"
    # a later import starts at the last turn, which read again gives the same
    resume = out[-1]
    assert isinstance(resume, Resume) and resume.line == 9


def test_hs_recall_finds_the_work_of_init(hs: HS, tmp_path: pathlib.Path) -> None:
    path = session(tmp_path, init_session())
    assert hs("init").exit_code == 0
    assert hs("import", str(path)).exit_code == 0
    (out,) = hs.json_lines("recall", "-e", "--json", "rackup")
    assert [h["turn_id"] for h in out["hits"]] == ["c1"]
    r = hs("log", "--oneline")
    assert [line.split("  ")[-1] for line in r.stdout.splitlines()] == [
        "Now modernise the build",
        "/init",
    ]


# --------------------------------------------------------------------------- IDE context


def test_ide_context_is_not_the_prompt(tmp_path: pathlib.Path) -> None:
    selection = (
        "<ide_selection>The user selected the lines 98 to 98 from /p/app.js:\n"
        "total = 0\n\nThis may or may not be related.</ide_selection>"
    )
    recs = [
        user("u1", None, [text(selection), text("why is total zero here?")]),
        asst("a1", "u1", "m1", [text("It is reset.")]),
        user("u2", "a1", selection + "\nand here?"),  # the same, as one string
        asst("a2", "u2", "m2", [text("Also reset.")]),
    ]
    turns, problems, _ = parse(session(tmp_path, recs))
    assert problems == []
    assert [t["asked"] for t in turns] == ["why is total zero here?", "and here?"]
    for t in turns:
        context = [s["text"] for s in t["steps"] if s.get("kind") == "context"]
        assert context == [selection]  # shown as context, not as what was asked
        users = [s["text"] for s in t["steps"] if s["type"] == "user"]
        assert users == [t["asked"]]
        assert selection.split("\n")[0] in t["raw"][0]  # the record as written


def test_ide_context_in_log_and_recall(hs: HS, tmp_path: pathlib.Path) -> None:
    path = session(tmp_path, init_session())
    assert hs("init").exit_code == 0
    assert hs("import", str(path)).exit_code == 0
    r = hs("log", "--oneline", "-n", "1")
    assert "Now modernise the build" in r.stdout and "ide_opened" not in r.stdout
    (out,) = hs.json_lines("recall", "-e", "--json", "modernise")
    assert "<ide_" not in out["hits"][0]["excerpt"]


# --------------------------------------------------------------------------- sub-agents


def main_with_agent_call(tmp_path: pathlib.Path, agent_id: str) -> pathlib.Path:
    """A main session whose Agent call started sub-agent ``agent_id``."""
    call = tool_use("t1", "Agent", description="Explore", prompt="Map the repo", subagent_type="x")
    result = user("r1", "a1", tool_result("t1", [{"type": "text", "text": "mapped"}]))
    result["toolUseResult"] = {"status": "completed", "agentId": agent_id, "prompt": "Map the repo"}
    return session(
        tmp_path,
        [
            {"type": "summary", "summary": "Claude Code warmup for proj", "leafUuid": "x1"},
            user("u1", None, "explore it"),
            asst("a1", "u1", "m1", [call]),
            result,
            asst("a2", "r1", "m2", [text("It is mapped.")]),
            {"type": "ai-title", "aiTitle": "Mapping the repo", "sessionId": SID},
        ],
    )


def test_a_task_call_names_the_subagent_it_started(tmp_path: pathlib.Path) -> None:
    path = main_with_agent_call(tmp_path, "ab12cd3")
    (t,), _, metas = parse(path)
    (step,) = [s for s in t["steps"] if s["type"] == "tool"]
    assert step["name"] == "Agent" and step["subagent"] == "ab12cd3"
    assert t["extra"] == {"subagents": ["ab12cd3"]}
    assert metas[0].title == "Mapping the repo"  # not the warm-up summary


def test_a_subagent_without_its_prompt_line_takes_the_calls(tmp_path: pathlib.Path) -> None:
    main = main_with_agent_call(tmp_path, "c8d9b115")
    recs = _sidechain(
        [
            asst("s1", None, "m9", [text("I'll map it.")]),
            asst("s2", "s1", "m9", [text("Mapped.")]),
        ],
        "c8d9b115",
    )
    (t,), problems, metas = parse(write(main.parent / "agent-c8d9b115.jsonl", recs))
    assert problems == []
    assert t["asked"] == "Map the repo" and t["extra"] == {"asked_from": "parent"}
    assert metas[0].title is None  # a sub-agent's file never titles the session


def test_a_warmup_subagent_is_said_to_be_one(hs: HS, tmp_path: pathlib.Path) -> None:
    main = main_with_agent_call(tmp_path, "ab12cd3")
    lone = _sidechain([asst("w1", None, "m7", [text("I'm ready to explore.")])], "3430b97e")
    write(main.parent / "agent-3430b97e.jsonl", lone)
    primed = _sidechain([user("w2", None, "Warmup"), asst("w3", "w2", "m8", [text("Ready")])], "9f")
    write(main.parent / "agent-9f.jsonl", primed)
    started = _sidechain(
        [user("s1", None, "Map the repo"), asst("s2", "s1", "m9", [text("mapped")])], "ab12cd3"
    )
    write(main.parent / SID / "subagents" / "agent-ab12cd3.jsonl", started)
    assert hs("init").exit_code == 0
    r = hs("import", str(tmp_path / "projects"))
    assert r.exit_code == 0, r.stderr
    rows = {x["turn_id"]: x for x in hs.json_lines("log", "--json")}
    assert set(rows) == {"u1", "w1", "w2", "s1"}
    lines = {ln.split()[0]: ln for ln in hs("log", "--oneline").stdout.splitlines()}
    assert lines["w1"].endswith("↳ (sub-agent warm-up)")
    assert lines["w2"].endswith("↳ (sub-agent warm-up)")  # primed with Warmup: one too
    assert lines["s1"].endswith("↳ Map the repo")
    assert "(no prompt)" not in "".join(lines.values())
    # the session has the title that says what it was about
    (s,) = hs.json_lines("show", "--json", SID)
    assert s["title"] == "Mapping the repo"
    # the call and the sub-agent's turns name each other
    shown = hs("show", "u1").stdout
    assert "Sub-agent ab12cd3: 1 turn: s1" in shown
    assert "Started by: turn u1" in hs("show", "s1").stdout
    full = hs("show", "--full", "u1").stdout
    assert "── tool Agent  → sub-agent ab12cd3" in full
