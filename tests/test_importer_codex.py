"""The Codex CLI importer on small hand-written rollout files, one builder per
generation of the format as observed in real files: 0.60 (no phases, no task events,
a turn_context before every model request), 0.12x (phases, task_started /
task_complete, exec_command_end, patch_apply_end) and 0.144 code mode (a custom
``exec`` tool running the other tools)."""

from __future__ import annotations

import json
import pathlib
import tracemalloc
from typing import Any

from codex_rollout import CWD, SID, WIN, Rollout, rollout_path
from helpers import HS

from histstore.history.importers import Problem, Resume, SessionMeta
from histstore.history.importers.codex import is_codex_line, parse_file
from histstore.history.importers.detect import detect_file, expand
from histstore.store.redact import Redactor


def parse(
    path: pathlib.Path, redact: Any = None
) -> tuple[list[dict[str, Any]], list[Problem], list[SessionMeta]]:
    out = list(parse_file(path, redact or (lambda s: s)))
    assert isinstance(out[-1], Resume), "the Resume comes last"
    assert isinstance(out[-2], SessionMeta), "the SessionMeta comes before it"
    turns = [o for o in out if isinstance(o, dict)]
    problems = [o for o in out if isinstance(o, Problem)]
    metas = [o for o in out if isinstance(o, SessionMeta)]
    return turns, problems, metas


def assert_raw_complete(path: pathlib.Path, turns: list[dict[str, Any]]) -> None:
    """Every non-empty line of the file is in exactly one turn's raw, in order."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    assert [ln for t in turns for ln in t["raw"]] == lines


def kinds(turn: dict[str, Any]) -> list[str]:
    return [s["type"] if s["type"] != "event" else f"event:{s['kind']}" for s in turn["steps"]]


# --------------------------------------------------------------------------- generations


def test_060_rollout(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta(version="0.60.1", instructions=None)
    r.user_item(f"<environment_context>\n  <cwd>{CWD}</cwd>\n</environment_context>")
    p1 = r.turn_060("Make a chess board", "Built the board.")
    p2 = r.turn_060("Now add a clock", "Added the clock.", tools=False)
    path = r.write(rollout_path(tmp_path))
    turns, problems, metas = parse(path)

    assert problems == []
    assert [t["turn_id"] for t in turns] == [f"{SID}-1", f"{SID}-2"]
    assert [t["asked"] for t in turns] == ["Make a chess board", "Now add a clock"]
    assert [t["answered"] for t in turns] == ["Built the board.", "Added the clock."]
    t = turns[0]
    assert t["agent"] == "codex"
    assert t["session_id"] == SID
    assert t["project"] == CWD and t["cwd"] == CWD
    assert t["model"] == "gpt-5.1-codex-max"
    assert t["status"] == "completed"
    assert t["asked_at"] == r.lines[p1 - 1]["timestamp"]
    assert t["answered_at"] == r.lines[p2 - 2]["timestamp"]
    assert t["tools"] == {"shell_command": 1}
    assert t["tainted"] is False
    assert t["subagent"] is None
    # the response item and its event twin make one user step; mirrors add nothing
    kinds_060 = ["event:context", "user", "event:snapshot", "thinking", "tool", "assistant"]
    assert kinds(t) == kinds_060
    assert t["steps"][2]["text"] == "abc"  # the ghost commit of the undo checkpoint
    tool = t["steps"][4]
    assert tool["input"] == {"command": "ls", "workdir": ".", "timeout_ms": 1000}
    assert tool["output"].startswith("Exit code: 0") and tool["is_error"] is False
    assert t["steps"][5]["model"] == "gpt-5.1-codex-max" and "phase" not in t["steps"][5]
    assert t["source"] == {
        "format": "codex",
        "file": str(path),
        "line": p1,
        "end_line": p2 - 1,
        "offset": sum(len(ln) + 1 for ln in path.read_bytes().split(b"\n")[: p1 - 1]),
        "lines": [[1, p2 - 1]],
    }
    assert t["extra"] == {"cli_version": "0.60.1", "originator": "codex_cli_rs"}
    assert_raw_complete(path, turns)
    assert metas == [SessionMeta(session_id=SID, title=None, project=CWD)]


def test_12x_rollout(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta(version="0.125.0")
    a = r.turn_12x("019a-turn-a", "Fix the login bug", "Fixed it in auth.py.")
    b = r.turn_12x("019a-turn-b", "Add a test", "Added tests/test_auth.py.", model="gpt-5.4")
    path = r.write(rollout_path(tmp_path))
    turns, problems, _ = parse(path)

    assert problems == []
    assert [t["turn_id"] for t in turns] == ["019a-turn-a", "019a-turn-b"]
    assert [t["answered"] for t in turns] == ["Fixed it in auth.py.", "Added tests/test_auth.py."]
    assert [t["model"] for t in turns] == ["gpt-5.5", "gpt-5.4"]
    t = turns[1]
    # the lines that open a turn before its prompt belong to it
    assert t["raw"][0] == json.dumps(r.lines[b - 1])
    assert turns[0]["raw"][1] == json.dumps(r.lines[a - 1])  # after the session_meta
    assert t["source"]["line"] == b + 4 and t["source"]["end_line"] == len(r.lines)
    assert kinds(t) == [
        "event:context",
        "event:context",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert [s.get("phase") for s in t["steps"] if s["type"] == "assistant"] == [
        "commentary",
        "final_answer",
    ]
    assert t["files"] == [f"{CWD}/src/app.py"]  # parsed_cmd read, resolved against cwd
    assert t["tools"] == {"exec_command": 1}
    assert "unfinished" not in t["extra"]
    assert_raw_complete(path, turns)


def test_144_code_mode(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta(version="0.144.1", session_id=SID)
    r.turn_144("019b-turn-1", "Scaffold the crate", "Scaffolded the crate.")
    path = r.write(rollout_path(tmp_path))
    (t,), problems, _ = parse(path)

    assert problems == []
    assert t["turn_id"] == "019b-turn-1"
    # no last_agent_message: the final answer is the phase:final_answer message
    assert t["answered"] == "Scaffolded the crate."
    assert t["model"] == "gpt-5.6-sol"
    assert t["tools"] == {"exec": 1, "web_search": 1, "apply_patch": 1, "wait": 1}
    assert t["tainted"] is True
    assert t["edited"] == [f"{CWD}/src/lib.rs", f"{CWD}/src/old.rs", f"{CWD}/src/new.rs"]
    exec_step = next(s for s in t["steps"] if s.get("name") == "exec")
    assert exec_step["input"] == {"input": 'const r = await tools.exec_command({"cmd":"ls"});'}
    wait_step = next(s for s in t["steps"] if s.get("name") == "wait")
    assert wait_step["input"] == {"cell_id": "1"} and wait_step["output"] == "Script completed"
    assert_raw_complete(path, [t])


# --------------------------------------------------------------------------- prompts


def test_only_one_line_of_the_pair(tmp_path: pathlib.Path) -> None:
    """A file with only response-item prompts, or only user_message events, still
    gets one turn per prompt; a pair in either order is one turn."""
    r = Rollout()
    r.meta()
    r.user_item("only the item")
    r.assistant("one")
    r.prompt_event("only the event")
    r.assistant("two")
    r.prompt_event("event first")
    r.user_item("event first", images=("data:image/png;base64,iVBORw0KGgo=",))
    r.assistant("three")
    r.user_item("item text")
    r.prompt_event("a different prompt")  # not the same text: a prompt of its own
    r.assistant("five")
    path = r.write(rollout_path(tmp_path))
    turns, problems, _ = parse(path)
    assert problems == []
    assert [t["asked"] for t in turns] == [
        "only the item",
        "only the event",
        "event first",
        "item text",
        "a different prompt",
    ]
    assert [t["answered"] for t in turns] == ["one", "two", "three", "", "five"]
    assert [kinds(t).count("user") for t in turns] == [1, 1, 1, 1, 1]
    assert_raw_complete(path, turns)


def test_a_repeated_prompt_after_activity_is_a_new_turn(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.user_item("retry")
    r.prompt_event("retry")
    r.assistant("first try")
    r.user_item("retry")  # the same text again, after an answer: typed again
    r.prompt_event("retry")
    r.assistant("second try")
    turns, _, _ = parse(r.write(rollout_path(tmp_path)))
    assert [t["answered"] for t in turns] == ["first try", "second try"]


def test_injected_messages_are_not_prompts(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.user_item(
        "# AGENTS.md instructions for /home/dev/proj\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>"
    )
    r.user_item("<user_instructions>\nuse tabs\n</user_instructions>")
    r.user_item(f"<environment_context><cwd>{CWD}</cwd></environment_context>")
    r.developer("<collaboration_mode># Plan Mode</collaboration_mode>")
    r.user_item("<some_future_tag attr='1'>\ncontext\n</some_future_tag>")
    r.prompt_event("<environment_context>old CLI</environment_context>", kind="environment_context")
    r.prompt_event("use tabs", kind="user_instructions")
    p = r.user_item("The real question")
    r.prompt_event("The real question", kind="plain")
    r.assistant("The real answer")
    r.developer("<turn_aborted>\nThe previous turn was interrupted\n</turn_aborted>")
    r.user_item("<turn_aborted>\ninterrupted\n</turn_aborted>")
    path = r.write(rollout_path(tmp_path))
    (t,), problems, _ = parse(path)
    assert problems == []
    assert t["asked"] == "The real question" and t["source"]["line"] == p
    assert t["answered"] == "The real answer"
    assert kinds(t).count("event:context") == 9
    assert_raw_complete(path, [t])


def test_prompt_images(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.user_item("what is this?", images=("data:image/png;base64,iVBORw0KGgo=",))
    r.prompt_event("what is this?")
    r.assistant("a cat")
    # newer CLIs wrap an attached image in <image> text parts and leave a
    # placeholder in the typed text: still one prompt
    png = "data:image/png;base64,iVBORw0KGgo="
    r.item(
        "message",
        role="user",
        content=[
            {"type": "input_text", "text": "<image name=[Image #1]>"},
            {"type": "input_image", "image_url": png},
            {"type": "input_text", "text": "</image>"},
            {"type": "input_text", "text": "[Image #1] and this?"},
        ],
    )
    r.prompt_event("[Image #1] and this?", local_images=["/home/dev/shot.png"])
    r.assistant("a dog")
    r.item(
        "message",
        role="user",
        content=[
            {"type": "input_text", "text": "<image name=[Image #1]>"},
            {"type": "input_image", "image_url": png},
            {"type": "input_text", "text": "</image>"},
        ],
    )
    r.prompt_event("")  # an image and no words
    r.assistant("a bird")
    turns, _, _ = parse(r.write(rollout_path(tmp_path)))
    assert [t["asked"] for t in turns] == ["what is this?", "[Image #1] and this?", ""]
    assert [t["answered"] for t in turns] == ["a cat", "a dog", "a bird"]
    for t in turns:
        image = t["steps"][1]
        assert image["type"] == "image" and image["media_type"] == "image/png"
        assert image["data"] == "iVBORw0KGgo="


# --------------------------------------------------------------------------- answers


def test_answer_fallbacks(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    # no final_answer phase: task_complete's last_agent_message
    r.event("task_started", turn_id="t1")
    r.user_item("one")
    r.prompt_event("one")
    r.assistant("working on it", phase="commentary")
    r.event("task_complete", turn_id="t1", last_agent_message="done with one")
    # neither: the last assistant message
    r.event("task_started", turn_id="t2")
    r.user_item("two")
    r.prompt_event("two")
    r.assistant("first part", phase="commentary")
    r.assistant("last part", phase="commentary")
    r.event("task_complete", turn_id="t2", last_agent_message=None)
    # only agent_message events: they give the steps and the answer
    r.event("task_started", turn_id="t3")
    r.prompt_event("three")
    r.event("agent_message", message="event answer")
    r.event("task_complete", turn_id="t3", last_agent_message=None)
    # the final_answer message wins over a later message and over task_complete
    r.event("task_started", turn_id="t4")
    r.prompt_event("four")
    r.assistant("the final answer", phase="final_answer")
    r.assistant("a note after it", phase="commentary")
    r.event("task_complete", turn_id="t4", last_agent_message="a note after it")
    turns, _, _ = parse(r.write(rollout_path(tmp_path)))
    assert [t["answered"] for t in turns] == [
        "done with one",
        "last part",
        "event answer",
        "the final answer",
    ]
    assert kinds(turns[2]) == ["user", "assistant"]
    assert [t["status"] for t in turns] == ["completed"] * 4


def test_interrupted_turn(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.event("task_started", turn_id="t1")
    r.user_item("Refactor everything")
    r.prompt_event("Refactor everything")
    r.assistant("Starting with the parser.", phase="commentary")
    r.call("shell_command", "c1", command="make", workdir=CWD)
    r.developer("<turn_aborted>\nThe previous turn was interrupted on purpose.\n</turn_aborted>")
    r.event("turn_aborted", turn_id="t1", reason="interrupted")
    r.event("task_started", turn_id="t2")
    r.user_item("only the parser")
    r.prompt_event("only the parser")
    r.assistant("Done.", phase="final_answer")
    r.event("task_complete", turn_id="t2", last_agent_message="Done.")
    path = r.write(rollout_path(tmp_path))
    turns, _, _ = parse(path)
    assert [t["status"] for t in turns] == ["interrupted", "completed"]
    assert turns[0]["answered"] == "Starting with the parser."
    assert "event:interrupted" in kinds(turns[0])
    assert turns[0]["tools"] == {"shell_command": 1}
    tool = next(s for s in turns[0]["steps"] if s["type"] == "tool")
    assert tool["output"] is None
    assert_raw_complete(path, turns)


def test_failed_turns(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.event("task_started", turn_id="t1")
    r.prompt_event("one")
    r.event("error", message="stream disconnected before completion")
    r.event("task_complete", turn_id="t1", last_agent_message=None)
    r.event("task_started", turn_id="t2")
    r.prompt_event("two")
    r.assistant("partial", phase="commentary")
    r.event(
        "task_complete",
        turn_id="t2",
        last_agent_message=None,
        error={"message": "usage limit reached", "codex_error_info": "usage_limit_exceeded"},
    )
    r.event("task_started", turn_id="t3")
    r.prompt_event("three")
    r.event("error", message="transient")
    r.assistant("recovered", phase="final_answer")
    r.event("task_complete", turn_id="t3", last_agent_message="recovered")
    turns, _, _ = parse(r.write(rollout_path(tmp_path)))
    assert [t["status"] for t in turns] == ["failed", "failed", "completed"]
    assert "usage limit reached" in [s["text"] for s in turns[1]["steps"] if s["type"] == "event"]


def test_unfinished_turn(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.event("task_started", turn_id="t1")
    r.prompt_event("long job")
    r.call("exec_command", "c1", cmd="cargo build")
    (t,), _, _ = parse(r.write(rollout_path(tmp_path)))
    assert t["extra"]["unfinished"] is True and t["status"] == "completed"
    assert t["answered"] == ""


# --------------------------------------------------------------------------- rollback, compaction


def test_rolled_back_turns_are_kept_and_marked(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    for n in (1, 2, 3):
        r.turn_12x(f"t{n}", f"prompt {n}", f"answer {n}")
    r.event("thread_rolled_back", num_turns=2)  # undoes t3 and t2
    r.turn_12x("t4", "prompt 4", "answer 4")
    r.event("thread_rolled_back", num_turns=1)  # undoes t4
    r.turn_12x("t5", "prompt 5", "answer 5")
    r.event("thread_rolled_back", num_turns=2)  # undoes t5 and t1 (t2-t4 are gone)
    r.turn_12x("t6", "prompt 6", "answer 6")
    path = r.write(rollout_path(tmp_path))
    turns, problems, _ = parse(path)
    assert problems == []
    rolled = {t["turn_id"] for t in turns if t.get("extra", {}).get("rolled_back")}
    assert rolled == {"t1", "t2", "t3", "t4", "t5"}
    assert [t["status"] for t in turns] == ["completed"] * 6
    assert all(t["answered"] == f"answer {n}" for n, t in enumerate(turns, 1))
    for t in turns:
        marked = "event:rolled_back" in kinds(t)
        assert marked == (t["turn_id"] in rolled)
    assert "event:rollback" in kinds(turns[2])  # the rollback line is in the turn it follows
    assert_raw_complete(path, turns)
    # the same turns whichever pass saw the rollback: parsing twice is stable
    assert parse(path)[0] == turns


def test_compaction_inside_a_turn_and_as_its_own_task(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.turn_12x("t1", "first", "first answer")
    # an automatic compaction inside the next turn
    r.event("task_started", turn_id="t2")
    r.context(turn_id="t2")
    r.user_item("second")
    r.prompt_event("second")
    r.add(
        "compacted",
        {
            "message": "Summary of the work so far",
            "replacement_history": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "first"}],
                }
            ],
        },
    )
    r.event("context_compacted")
    r.assistant("second answer", phase="final_answer")
    r.event("task_complete", turn_id="t2", last_agent_message="second answer")
    # /compact: a task without a prompt, with its own model
    r.event("task_started", turn_id="t-compact")
    r.context(model="gpt-5.5-mini", turn_id="t-compact")
    r.add("compacted", {"message": "Manual summary", "replacement_history": []})
    r.event("context_compacted")
    r.event("task_complete", turn_id="t-compact", last_agent_message="compacted")
    r.turn_12x("t3", "third", "third answer")
    path = r.write(rollout_path(tmp_path))
    turns, problems, _ = parse(path)
    assert problems == []
    assert [t["turn_id"] for t in turns] == ["t1", "t2", "t3"]
    t2 = turns[1]
    # one compact event per compaction: context_compacted mirrors the compacted line
    assert [s["text"] for s in t2["steps"] if s.get("kind") == "compact"] == [
        "Summary of the work so far",
        "Manual summary",
    ]
    # the prompt-less task is kept in the turn before it, which keeps its own answer,
    # model and status
    assert t2["answered"] == "second answer" and t2["model"] == "gpt-5.5"
    assert t2["status"] == "completed" and "unfinished" not in t2["extra"]
    assert_raw_complete(path, turns)


# --------------------------------------------------------------------------- files and tools


def test_apply_patch_edits_from_headers_and_events(tmp_path: pathlib.Path) -> None:
    patch = (
        "*** Begin Patch\n*** Add File: src/new.py\n+x = 1\n*** Update File: src/app.py\n"
        "*** Move to: src/main.py\n@@\n-a\n+b\n*** Delete File: /home/dev/other/old.py\n"
        "*** End Patch"
    )
    r = Rollout()
    r.meta(version="0.60.1")
    r.turn_060("Restructure", "Restructured.", tools=False)
    r.custom("apply_patch", "p1", patch)
    r.custom_output("p1", json.dumps({"output": "Success.", "metadata": {"exit_code": 0}}))
    r.custom("apply_patch", "p2", "*** Begin Patch\n*** Update File: src/failed.py\n*** End Patch")
    r.custom_output("p2", "apply_patch verification failed: Failed to find expected lines")
    r.call("shell", "p3", command=["apply_patch", "*** Begin Patch\n*** Add File: argv.txt\n"])
    r.output("p3", json.dumps({"output": "Done!", "metadata": {"exit_code": 0}}))
    r.custom("apply_patch", "p4", "*** Begin Patch\n*** Update File: src/exit1.py\n")
    r.custom_output("p4", json.dumps({"output": "error", "metadata": {"exit_code": 1}}))
    # 0.12x: patch_apply_end is authoritative; a failed one edits nothing
    r.custom("apply_patch", "p5", "*** Begin Patch\n*** Update File: src/ignored.py\n")
    r.event(
        "patch_apply_end",
        call_id="p5",
        success=True,
        changes={f"{CWD}/src/real.py": {"type": "update", "unified_diff": "", "move_path": None}},
    )
    r.custom_output("p5", json.dumps({"output": "Success.", "metadata": {"exit_code": 0}}))
    r.custom("apply_patch", "p6", "*** Begin Patch\n*** Update File: src/bad.py\n")
    r.event("patch_apply_end", call_id="p6", success=False, changes={f"{CWD}/src/bad.py": {}})
    (t,), problems, _ = parse(r.write(rollout_path(tmp_path)))
    assert problems == []
    assert t["edited"] == [
        f"{CWD}/src/new.py",
        f"{CWD}/src/app.py",
        f"{CWD}/src/main.py",
        "/home/dev/other/old.py",
        f"{CWD}/argv.txt",
        f"{CWD}/src/real.py",
    ]
    steps = {s["id"]: s for s in t["steps"] if s["type"] == "tool"}
    assert [steps[i]["is_error"] for i in ("p1", "p2", "p3", "p4", "p5", "p6")] == [
        False,
        True,
        False,
        True,
        False,
        True,
    ]
    assert steps["p1"]["output"] == "Success."  # the JSON wrapper is unwrapped
    assert t["tools"] == {"apply_patch": 5, "shell": 1}


def test_exec_command_end_reads_and_errors(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.event("task_started", turn_id="t1")
    r.context(turn_id="t1", cwd=CWD)
    r.prompt_event("look around")
    r.call("exec_command", "c1", cmd="cat a.py && head /etc/hosts", workdir=f"{CWD}/sub")
    r.event(
        "exec_command_end",
        call_id="c1",
        cwd=f"{CWD}/sub",
        parsed_cmd=[
            {"type": "read", "cmd": "cat a.py", "name": "a.py", "path": "a.py"},
            {"type": "read", "cmd": "head /etc/hosts", "name": "hosts", "path": "/etc/hosts"},
            {"type": "list_files", "cmd": "ls", "path": "."},
            {"type": "search", "cmd": "rg x", "query": "x", "path": "src"},
        ],
        exit_code=0,
        aggregated_output="...",
    )
    r.output("c1", "Process exited with code 0\nOutput:\n...")
    r.call("shell_command", "c2", command="false", workdir=CWD)
    r.event("exec_command_end", call_id="c2", cwd=CWD, parsed_cmd=[], exit_code=1)
    r.output("c2", "Exit code: 1\nOutput:\n")
    r.call("exec_command", "c3", cmd="ls")  # its output never came: the event's is used
    r.event(
        "exec_command_end",
        call_id="c3",
        cwd=CWD,
        parsed_cmd=[],
        exit_code=2,
        aggregated_output="ls: error",
    )
    r.call("view_image", "c4", path="shots/screen.png", detail="original")
    r.event("view_image_tool_call", call_id="c4", path=f"{CWD}/shots/screen.png")
    r.event(
        "exec_command_end",
        call_id="u1",
        cwd=CWD,
        source="user_shell",
        command=["bash", "-lc", "git status"],
        parsed_cmd=[],
        exit_code=0,
    )
    r.assistant("seen", phase="final_answer")
    (t,), _, _ = parse(r.write(rollout_path(tmp_path)))
    assert t["files"] == [f"{CWD}/sub/a.py", "/etc/hosts", f"{CWD}/shots/screen.png"]
    steps = {s["id"]: s for s in t["steps"] if s["type"] == "tool"}
    assert [steps[c]["is_error"] for c in ("c1", "c2", "c3")] == [False, True, True]
    assert steps["c3"]["output"] == "ls: error"
    assert t["tools"] == {"exec_command": 2, "shell_command": 1, "view_image": 1}
    assert any(
        s.get("kind") == "user_shell" and s["text"] == "bash -lc git status" for s in t["steps"]
    )


def test_mcp_calls_taint_the_turn(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.event("task_started", turn_id="t1")
    r.prompt_event("search the docs")
    r.call("search", "m1", query="tokio")
    r.lines[-1]["payload"]["namespace"] = "mcp__docs"
    r.event(
        "mcp_tool_call_end",
        call_id="m1",
        invocation={"server": "docs", "tool": "search", "arguments": {"query": "tokio"}},
        duration={"secs": 0, "nanos": 5},
        result={
            "Ok": {"content": [{"type": "text", "text": "tokio is a runtime"}], "isError": False}
        },
    )
    r.output("m1", "tokio is a runtime")
    # a call only the event names (no function_call), and a failed one
    r.event(
        "mcp_tool_call_end",
        call_id="m2",
        invocation={"server": "mail", "tool": "list", "arguments": {}},
        result={"Err": "connection refused"},
    )
    r.assistant("done", phase="final_answer")
    r.event("task_complete", turn_id="t1", last_agent_message="done")
    r.turn_12x("t2", "local only", "ok")
    turns, _, _ = parse(r.write(rollout_path(tmp_path)))
    t = turns[0]
    assert t["tainted"] is True and turns[1]["tainted"] is False
    assert t["tools"] == {"mcp__docs__search": 1, "mcp__mail__list": 1}
    steps = {s["id"]: s for s in t["steps"] if s["type"] == "tool"}
    assert steps["m1"]["input"] == {"query": "tokio"} and steps["m1"]["is_error"] is False
    assert steps["m1"]["output"] == "tokio is a runtime"
    assert steps["m2"]["is_error"] is True and steps["m2"]["output"] == "connection refused"


def test_web_search_taints_and_is_counted_once(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.event("task_started", turn_id="t1")
    r.prompt_event("what's new in rust?")
    r.item(
        "web_search_call", id="ws_1", status="completed", action={"type": "search", "query": "rust"}
    )
    r.event("web_search_end", call_id="call_9", query="rust", action={"type": "search"})
    r.assistant("Rust 2.0", phase="final_answer")
    r.event("task_complete", turn_id="t1", last_agent_message="Rust 2.0")
    (t,), _, _ = parse(r.write(rollout_path(tmp_path)))
    assert t["tainted"] is True
    assert t["tools"] == {"web_search": 1}


def test_local_shell_call(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.prompt_event("list")
    r.item(
        "local_shell_call",
        call_id="l1",
        status="completed",
        action={"type": "exec", "command": ["ls", "-la"], "working_directory": CWD},
    )
    r.output("l1", "total 0")
    (t,), _, _ = parse(r.write(rollout_path(tmp_path)))
    (step,) = [s for s in t["steps"] if s["type"] == "tool"]
    assert step["name"] == "local_shell" and step["input"]["command"] == ["ls", "-la"]
    assert step["output"] == "total 0"


# --------------------------------------------------------------------------- paths, ids, sessions


def test_windows_paths(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta(cwd=WIN, version="0.125.0")
    r.event("task_started", turn_id="t1")
    r.context(cwd=WIN, turn_id="t1")
    r.prompt_event("fix it")
    r.custom("apply_patch", "p1", "*** Begin Patch\n*** Update File: lib/format.ts\n*** End Patch")
    r.custom_output("p1", json.dumps({"output": "Success.", "metadata": {"exit_code": 0}}))
    r.call("shell_command", "c1", command="Get-Content src\\main.rs", workdir=WIN)
    r.event(
        "exec_command_end",
        call_id="c1",
        cwd=WIN,
        parsed_cmd=[
            {"type": "read", "cmd": "Get-Content", "name": "main.rs", "path": "src\\main.rs"}
        ],
        exit_code=0,
    )
    r.custom("apply_patch", "p2", "*** Begin Patch\n*** Add File: ignored.ts\n")
    r.event("patch_apply_end", call_id="p2", success=True, changes={f"{WIN}\\app\\page.tsx": {}})
    (t,), problems, metas = parse(r.write(rollout_path(tmp_path)))
    assert problems == []
    assert t["project"] == WIN and t["cwd"] == WIN
    assert t["edited"] == [f"{WIN}\\lib\\format.ts", f"{WIN}\\app\\page.tsx"]
    assert t["files"] == [f"{WIN}\\src\\main.rs"]
    assert metas[0].project == WIN


def test_ids_are_stable_across_reimport_and_append(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta(version="0.60.1")
    r.turn_060("one", "1")
    r.turn_060("two", "2")
    path = r.write(rollout_path(tmp_path))
    first, _, _ = parse(path)
    assert parse(path)[0] == first
    r.turn_060("three", "3")
    r.turn_12x("019c-t4", "four", "4")
    r.write(path)
    again, _, _ = parse(path)
    assert [t["turn_id"] for t in again] == [f"{SID}-1", f"{SID}-2", f"{SID}-3", "019c-t4"]
    assert again[0] == first[0]  # an earlier turn is the very same record
    assert again[1]["turn_id"] == first[1]["turn_id"]


def test_a_codex_turn_id_seen_twice_gets_a_suffix(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.event("task_started", turn_id="t1")
    r.prompt_event("first")
    r.assistant("working", phase="commentary")
    r.prompt_event("also this")  # typed while the turn runs: same Codex turn
    r.assistant("both done", phase="final_answer")
    r.event("task_complete", turn_id="t1", last_agent_message="both done")
    turns, _, _ = parse(r.write(rollout_path(tmp_path)))
    assert [t["turn_id"] for t in turns] == ["t1", "t1-2"]
    assert [t["answered"] for t in turns] == ["working", "both done"]


def test_session_id_from_the_file_name_and_invalid_turn_ids(tmp_path: pathlib.Path) -> None:
    other = "019d0000-aaaa-7bbb-8ccc-dddddddddddd"
    r = Rollout()
    r.event("task_started", turn_id="not a valid/id")
    r.prompt_event("hello")
    r.assistant("hi")
    path = r.write(rollout_path(tmp_path, other))
    (t,), problems, metas = parse(path)
    assert problems == []
    assert t["session_id"] == other and t["turn_id"] == f"{other}-1"
    assert t["project"] == "" and metas == [SessionMeta(other, None, "")]


def test_title_and_subagent(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta(parent_thread_id="019e-parent", source={"subagent": {"thread_spawn": {"depth": 1}}})
    r.prompt_event("review the diff")
    r.assistant("looks fine")
    r.event("thread_name_updated", thread_id=SID, thread_name="First name")
    r.event("thread_name_updated", thread_id=SID, thread_name="Diff review")
    # a second session_meta (copied in by a fork) changes nothing
    r.add("session_meta", {"id": "019f-other", "cwd": "/elsewhere"})
    (t,), _, metas = parse(r.write(rollout_path(tmp_path)))
    assert metas == [SessionMeta(SID, "Diff review", CWD)]
    assert t["session_id"] == SID and t["subagent"] == SID
    assert t["extra"]["parent_thread_id"] == "019e-parent"


def test_prompt_without_timestamp(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.prompt_event("one")
    before = r.assistant("1")
    r.add("event_msg", {"type": "user_message", "message": "two"}, ts="[trimmed]")
    r.add("response_item", {"type": "message", "role": "assistant", "content": []}, ts="bad")
    turns, problems, _ = parse(r.write(rollout_path(tmp_path)))
    assert len(turns) == 2
    assert turns[1]["asked_at"] == r.lines[before - 1]["timestamp"]
    assert [(p.line, p.message) for p in problems] == [
        (before + 1, f"prompt has no usable timestamp; asked_at taken from line {before}")
    ]


def test_a_prompt_read_with_a_borrowed_time_leaves_the_import_complete(
    hs: HS, tmp_path: pathlib.Path
) -> None:
    """Every turn is stored; the borrowed time is a warning, not input left
    out: exit 0 (it was 1, "some input was not imported"), complete in --json."""
    r = Rollout()
    r.meta()
    r.prompt_event("one")
    r.assistant("1")
    r.add("event_msg", {"type": "user_message", "message": "two"}, ts="[trimmed]")
    r.assistant("2")
    path = r.write(rollout_path(tmp_path))
    assert hs("init").exit_code == 0
    got = hs("import", str(path))
    assert got.exit_code == 0, got.stderr
    assert "hs: warning: " in got.stderr and "asked_at taken from line" in got.stderr
    assert "not imported" not in got.stderr
    other = str(tmp_path / "other")
    assert hs("-C", other, "init").exit_code == 0
    got = hs("-C", other, "import", "--json", str(path))
    assert got.exit_code == 0, got.stderr
    report = json.loads(got.stdout)
    assert report["complete"] is True and report["turns_added"] == 2
    assert [p["kept"] for p in report["problems"]] == [True]


# --------------------------------------------------------------------------- odd files


def test_malformed_and_unknown_lines(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.prompt_event("go")
    bad = r.raw('{"timestamp": "2026-03-04T05:00:00Z", "type": "event_msg", "payl')
    odd = r.raw(json.dumps({"timestamp": "2026-03-04T05:00:00Z", "type": "event_msg"}))
    arr = r.raw("[1, 2]")
    r.add("future_record", {"anything": [1, 2]})
    r.item("future_item", data="x")
    r.event("future_event", data="y")
    r.item("function_call", name="weird", arguments="not json {", call_id="w1")
    r.item("function_call", name="nullargs", arguments=None, call_id="w2")
    r.assistant("still here")
    path = r.write(rollout_path(tmp_path))
    (t,), problems, _ = parse(path)
    assert [p.line for p in problems] == [bad, odd, arr]
    assert problems[0].message.startswith("not valid JSON")
    assert all(p.file == str(path) for p in problems)
    assert t["answered"] == "still here"
    steps = {s["id"]: s for s in t["steps"] if s["type"] == "tool"}
    assert steps["w1"]["input"] == {"arguments": "not json {"}
    assert steps["w2"]["input"] == {"arguments": None}
    assert_raw_complete(path, [t])  # bad lines are kept in raw too


def test_files_without_turns(tmp_path: pathlib.Path) -> None:
    empty = rollout_path(tmp_path)
    empty.parent.mkdir(parents=True)
    empty.write_text("")
    assert parse(empty) == ([], [], [SessionMeta(SID, None, "")])
    r = Rollout()
    r.meta()
    r.context()
    r.user_item(f"<environment_context><cwd>{CWD}</cwd></environment_context>")
    r.event("token_count", info=None)
    no_prompt = r.write(tmp_path / "other" / "x.jsonl")
    assert parse(no_prompt) == ([], [], [SessionMeta(SID, None, CWD)])


def test_redactor_is_applied_before_parsing(tmp_path: pathlib.Path) -> None:
    key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF"
    token = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    r = Rollout()
    r.meta()
    r.user_item(f"use {key}")
    r.prompt_event(f"use {key}")
    r.call("exec_command", "c1", cmd=f"curl -H 'Authorization: token {token}' x")
    r.output("c1", f"Process exited with code 0\n{token}")
    r.assistant(f"the key was {key}", phase="final_answer")
    path = r.write(rollout_path(tmp_path))
    (t,), _, _ = parse(path, Redactor())
    text = json.dumps(t)
    assert key not in text and token not in text
    assert "[REDACTED:openai-key]" in t["asked"] and "[REDACTED:github-token]" in text
    assert "[REDACTED:github-token]" in t["steps"][1]["input"]["cmd"]


def test_detection(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.turn_12x("t1", "hi", "hello")
    path = r.write(rollout_path(tmp_path))
    assert is_codex_line(r.lines[0]) and is_codex_line(r.lines[3])
    assert not is_codex_line({"type": "user", "uuid": "u", "sessionId": "s", "message": {}})
    assert not is_codex_line({"type": "event_msg", "payload": "x", "timestamp": "t"})
    assert not is_codex_line([1])
    assert detect_file(path) == "codex"
    assert expand([tmp_path / "sessions"]) == [(path, "codex")]


# --------------------------------------------------------------------------- streaming


def big_rollout(path: pathlib.Path, turns: int, output_size: int, rollback: bool) -> None:
    """A rollout of ``turns`` 0.12x turns, each with one large tool output, written
    without holding the file in memory."""
    blob = "x" * output_size
    with open(path, "w", encoding="utf-8") as fh:
        for n in range(turns):
            r = Rollout()
            if n == 0:
                r.meta()
            r.turn_12x(f"t{n}", f"prompt {n}", f"answer {n}")
            r.call("shell_command", f"big{n}", command="cat big.log")
            r.output(f"big{n}", "Exit code: 0\nOutput:\n" + blob)
            if rollback and n == turns - 1:
                r.event("thread_rolled_back", num_turns=1)
            for rec in r.lines:
                fh.write(json.dumps(rec) + "\n")


def test_a_large_rollout_streams_in_bounded_memory(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "big.jsonl"
    big_rollout(path, turns=100, output_size=100_000, rollback=True)
    size = path.stat().st_size
    assert size > 10_000_000
    read = [0]
    first_seen_at: list[int] = []
    count = 0
    tracemalloc.start()
    try:
        for item in parse_file(path, lambda s: s, lambda n: read.__setitem__(0, read[0] + n)):
            if isinstance(item, dict):
                count += 1
                if not first_seen_at:
                    first_seen_at.append(read[0])
                assert item["raw"], item["turn_id"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 100
    assert read[0] == size
    assert first_seen_at[0] < size // 10, "the first turn came before the file was read"
    assert peak < 4_000_000, f"peak {peak} bytes for a {size}-byte file"
    # the rollback at the end was seen by the first, counting pass
    last = list(parse_file(path, lambda s: s))[-3]
    assert last["turn_id"] == "t99" and last["extra"]["rolled_back"] is True


# --------------------------------------------------------------------------- end to end


def test_hs_import_of_a_codex_session(hs: HS, tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.turn_12x("019a-t1", "Fix the login bug", "Fixed it.")
    r.turn_144("019a-t2", "Scaffold", "Scaffolded.")
    path = r.write(rollout_path(tmp_path))
    assert hs("init").exit_code == 0
    res = hs("import", str(tmp_path / "sessions"))
    assert res.exit_code == 0, res.stderr
    assert "turns: 2 added" in res.stdout
    rows = hs.json_lines("log", "--json")
    assert [x["turn_id"] for x in rows] == ["019a-t2", "019a-t1"]
    assert {x["agent"] for x in rows} == {"codex"}
    assert rows[0]["session_id"] == SID and rows[0]["tainted"] is True
    shown = hs("show", "019a-t1")
    assert shown.exit_code == 0 and "Agent:   codex" in shown.stdout
    again = hs("import", "--format", "codex", str(path))
    assert again.exit_code == 0, again.stderr
    assert "imported 0 files, 1 unchanged since the last import (not read)" in again.stdout
    assert "nothing new: no operation recorded" in again.stdout


# --------------------------------------------------------------------------- resuming


def _rich_rollout() -> Rollout:
    """Every way a turn can open, end or be undone, in one file."""
    r = Rollout()
    r.meta(version="0.128.0")
    r.user_item(f"<environment_context>\n  <cwd>{CWD}</cwd>\n</environment_context>")
    r.turn_060("old style one", "one done")
    r.turn_12x("t2", "two", "two done")
    r.turn_12x("t3", "three", "three done", model="gpt-5.4")
    r.event("thread_rolled_back", num_turns=1)  # undoes t3
    # a prompt-less task (/compact) appended to the turn before it
    r.event("task_started", turn_id="t-compact")
    r.context(turn_id="t-compact")
    r.add("compacted", {"message": "summary", "replacement_history": []})
    r.event("task_complete", turn_id="t-compact", last_agent_message="compacted")
    r.turn_144("t4", "four", "four done")
    r.event("thread_name_updated", thread_id=SID, thread_name="A rich session")
    r.event("task_started", turn_id="t5")
    r.prompt_event("five")
    r.assistant("five, part", phase="commentary")
    r.prompt_event("also five")  # typed while the turn ran: same Codex turn id
    r.assistant("five done", phase="final_answer")
    r.event("task_complete", turn_id="t5", last_agent_message="five done")
    r.turn_12x("t6", "six", "six done")
    r.event("thread_rolled_back", num_turns=3)  # undoes t6, 'also five', five
    r.turn_12x("t7", "seven", "seven done")
    return r


def _turns_by_id(items: list[Any]) -> dict[str, dict[str, Any]]:
    return {t["turn_id"]: t for t in items if isinstance(t, dict)}


def test_a_resumed_read_gives_what_a_whole_read_gives(tmp_path: pathlib.Path) -> None:
    """Cut the file after any line, read the cut file, then read the whole file
    from the Resume the first read gave: the turns before the resume point and
    the turns read from it are those of one whole read, record for record."""
    r = _rich_rollout()
    path = r.write(rollout_path(tmp_path))
    data = path.read_bytes()
    whole = list(parse_file(path, lambda s: s))
    expected = _turns_by_id(whole)
    assert len(expected) == 8
    rolled = {t for t, rec in expected.items() if rec.get("extra", {}).get("rolled_back")}
    assert rolled == {"t3", "t5", "t5-6", "t6"}
    assert isinstance(whole[-1], Resume) and whole[-1].state["title"] == "A rich session"
    cut_file = tmp_path / "cut" / path.name
    cut_file.parent.mkdir()
    resumed_from_start = 0
    for k in range(1, data.count(b"\n")):
        cut_file.write_bytes(b"".join(data.splitlines(keepends=True)[:k]))
        first = list(parse_file(cut_file, lambda s: s))
        resume = first[-1]
        assert isinstance(resume, Resume)
        json.dumps(resume.state)  # it is kept as JSON
        cut_file.write_bytes(data)
        second = list(parse_file(cut_file, lambda s: s, resume=resume))
        assert isinstance(second[-1], Resume) and second[-2] == whole[-2]  # the SessionMeta
        again = _turns_by_id(second)
        merged = {**_turns_by_id(first), **again}
        for rec in merged.values():
            rec["source"]["file"] = str(path)
        assert merged == expected, f"cut after line {k}"
        if resume.offset == 0:
            resumed_from_start += 1
        else:
            assert data[resume.offset - 1 : resume.offset] == b"\n"  # at a line's start
        # where the whole read resumes, whatever way the file was read
        assert second[-1] == whole[-1], f"cut after line {k}"
    assert resumed_from_start < data.count(b"\n") // 2


def test_a_rollback_past_the_resume_point_reads_the_file_again(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.turn_12x("t1", "one", "1")
    r.turn_12x("t2", "two", "2")
    path = r.write(rollout_path(tmp_path))
    resume = list(parse_file(path, lambda s: s))[-1]
    assert isinstance(resume, Resume) and resume.offset > 0
    r.event("thread_rolled_back", num_turns=2)
    r.turn_12x("t3", "three", "3")
    r.write(path)
    read: list[int] = []
    out = list(parse_file(path, lambda s: s, lambda n: read.append(n), resume=resume))
    turns = _turns_by_id(out)
    assert set(turns) == {"t1", "t2", "t3"}  # t1 is given again, marked
    assert turns["t1"]["extra"]["rolled_back"] is True
    assert sum(read) == path.stat().st_size


def test_an_unfinished_last_line_waits_for_the_next_import(tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.turn_12x("t1", "one", "1")
    path = r.write(rollout_path(tmp_path))
    with open(path, "a") as fh:
        fh.write('{"timestamp": "2026-03-04T06:00:00.000Z", "type": "event_msg", "payl')
    turns, problems, _ = parse(path)
    assert problems == [] and [t["turn_id"] for t in turns] == ["t1"]
    assert all(not ln.endswith('"payl') for ln in turns[0]["raw"])


def test_import_of_a_grown_rollout_reads_only_its_tail(tmp_path: pathlib.Path) -> None:
    """Through the store: a re-import reads nothing, an appended rollout is read
    from the start of its last turn, and the store ends as a fresh import of
    the whole file would make it."""
    from histstore.ops.importing import import_paths
    from histstore.store.store import Store

    r = Rollout()
    r.meta()
    for n in range(1, 6):
        r.turn_12x(f"t{n}", f"prompt {n}", f"answer {n}")
    path = r.write(rollout_path(tmp_path))
    store, _ = Store.init(tmp_path / "store")
    with store:
        first = import_paths(store, [path])
        assert (first.turns_added, first.files) == (5, 1)
        read: list[int] = []
        again = import_paths(store, [path], progress=read.append)
        assert again.operation is None and again.files_unchanged == 1 and again.files == 0
        size = path.stat().st_size
        for n in range(6, 8):
            r.turn_12x(f"t{n}", f"prompt {n}", f"answer {n}")
        r.write(path)
        read.clear()
        grown = import_paths(store, [path], progress=read.append)
        assert (grown.turns_added, grown.turns_unchanged, grown.turns_revised) == (2, 1, 0)
        tail = path.stat().st_size - size
        assert tail < sum(read) < tail + size // 4  # the last turn read again, no more
        ours = [(t.turn_id, t.object) for t in store.session(SID).turns]
    fresh, _ = Store.init(tmp_path / "fresh")
    with fresh:
        import_paths(fresh, [path])
        assert [(t.turn_id, t.object) for t in fresh.session(SID).turns] == ours


def test_a_rollout_first_seen_empty_is_read_as_codex_later(tmp_path: pathlib.Path) -> None:
    """Codex creates the file before it writes to it: an empty file found in a
    folder imports nothing, and is detected again once it holds lines."""
    from histstore.ops.importing import import_paths
    from histstore.store.store import Store

    path = rollout_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("")
    store, _ = Store.init(tmp_path / "store")
    with store:
        rep = import_paths(store, [tmp_path / "sessions"])
        assert rep.complete and rep.turns_added == 0
        r = Rollout()
        r.meta()
        r.turn_12x("t1", "hello", "hi")
        r.write(path)
        rep = import_paths(store, [tmp_path / "sessions"])
        assert rep.complete and rep.turns_added == 1
        assert store.session(SID).agent == "codex"


# --------------------------------------------------------------------------- before the envelope


def test_a_rollout_from_before_the_envelope(tmp_path: pathlib.Path) -> None:
    """Mid-2025 rollouts (described by other parsers, none seen here): a bare
    header line, ``record_type`` state lines, bare response items without
    times. Read as the envelopes they would be; every turn is asked at the
    header's time."""
    lines: list[Any] = [
        {"id": SID, "timestamp": "2025-06-01T10:00:00.000Z", "instructions": None, "git": {}},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command": ["ls"]}',
            "call_id": "c",
        },
        {"type": "function_call_output", "call_id": "c", "output": "a.txt"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "yo"}],
        },
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "bye"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
    ]
    path = rollout_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert detect_file(path) == "codex"
    turns, problems, metas = parse(path)
    assert problems == []
    assert [(t["asked"], t["answered"]) for t in turns] == [("hi", "yo"), ("bye", "ok")]
    assert {t["asked_at"] for t in turns} == {"2025-06-01T10:00:00.000Z"}
    assert turns[0]["tools"] == {"shell": 1} and metas[0].session_id == SID
    assert_raw_complete(path, turns)  # the lines as written, not as read
    # read while it was written: from the Resume of its first nine lines
    data = path.read_bytes()
    path.write_bytes(b"".join(data.splitlines(keepends=True)[:9]))
    resume = list(parse_file(path, lambda s: s))[-1]
    assert isinstance(resume, Resume) and resume.state["legacy"]
    path.write_bytes(data)
    again = [t for t in parse_file(path, lambda s: s, resume=resume) if isinstance(t, dict)]
    assert again == turns[-len(again) :]


def test_request_user_input_and_rolled_back_in_show(hs: HS, tmp_path: pathlib.Path) -> None:
    r = Rollout()
    r.meta()
    r.event("task_started", turn_id="t1")
    r.prompt_event("set it up")
    r.call("request_user_input", "q1", questions=[{"question": "Which DB?"}])
    r.output("q1", "Postgres")
    r.assistant("Set up Postgres.", phase="final_answer")
    r.event("task_complete", turn_id="t1", last_agent_message="Set up Postgres.")
    r.event("thread_rolled_back", num_turns=1)
    path = r.write(rollout_path(tmp_path))
    (t,), _, _ = parse(path)
    (step,) = [s for s in t["steps"] if s["type"] == "tool"]
    assert step["name"] == "request_user_input" and step["output"] == "Postgres"
    assert hs("init").exit_code == 0
    assert hs("import", str(path)).exit_code == 0
    shown = hs("show", "t1").stdout
    assert "status completed  [rolled back]" in shown
