"""A Codex CLI rollout written line by line, for the tests: one builder per
generation of the format as observed in real files."""

from __future__ import annotations

import json
import pathlib
from typing import Any

SID = "019a0000-1111-7222-8333-444455556666"
CWD = "/home/dev/proj"
WIN = "C:\\Users\\dev\\proj"


class Rollout:
    """A rollout file written line by line; every line gets a later timestamp."""

    def __init__(self) -> None:
        self.lines: list[Any] = []
        self.tick = 0

    def ts(self) -> str:
        self.tick += 1
        return (
            f"2026-03-04T05:{self.tick // 60 % 60:02d}:{self.tick % 60:02d}.{self.tick % 1000:03d}Z"
        )

    def add(self, kind: str, payload: dict[str, Any], ts: str | None = None) -> int:
        """Append one envelope; returns its line number."""
        self.lines.append({"timestamp": ts or self.ts(), "type": kind, "payload": payload})
        return len(self.lines)

    def raw(self, text: str) -> int:
        self.lines.append(text)
        return len(self.lines)

    def event(self, etype: str, /, **fields: Any) -> int:
        return self.add("event_msg", {"type": etype, **fields})

    def item(self, itype: str, /, **fields: Any) -> int:
        return self.add("response_item", {"type": itype, **fields})

    # -- envelopes every generation writes

    def meta(self, version: str = "0.128.0", cwd: str = CWD, **extra: Any) -> int:
        payload = {
            "id": SID,
            "timestamp": "2026-03-04T05:00:00.000Z",
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": version,
            "source": "cli",
            "model_provider": "openai",
            **extra,
        }
        return self.add("session_meta", payload)

    def context(self, model: str = "gpt-5.5", cwd: str = CWD, turn_id: str | None = None) -> int:
        payload: dict[str, Any] = {"cwd": cwd, "approval_policy": "on-request", "model": model}
        if turn_id:
            payload["turn_id"] = turn_id
        return self.add("turn_context", payload)

    def user_item(self, *texts: str, images: tuple[str, ...] = ()) -> int:
        content: list[dict[str, Any]] = [{"type": "input_text", "text": t} for t in texts]
        content += [{"type": "input_image", "image_url": u} for u in images]
        return self.item("message", role="user", content=content)

    def developer(self, text: str) -> int:
        return self.item(
            "message", role="developer", content=[{"type": "input_text", "text": text}]
        )

    def prompt_event(self, text: str, **extra: Any) -> int:
        return self.event("user_message", message=text, images=[], **extra)

    def assistant(self, text: str, phase: str | None = None) -> int:
        fields: dict[str, Any] = {"role": "assistant"}
        fields["content"] = [{"type": "output_text", "text": text}]
        if phase:
            fields["phase"] = phase
        return self.item("message", **fields)

    def reasoning(self, text: str) -> int:
        return self.item(
            "reasoning", summary=[{"type": "summary_text", "text": text}], content=None
        )

    def call(self, name: str, call_id: str, **args: Any) -> int:
        return self.item("function_call", name=name, arguments=json.dumps(args), call_id=call_id)

    def output(self, call_id: str, output: Any) -> int:
        return self.item("function_call_output", call_id=call_id, output=output)

    def custom(self, name: str, call_id: str, text: str) -> int:
        return self.item(
            "custom_tool_call", name=name, input=text, call_id=call_id, status="completed"
        )

    def custom_output(self, call_id: str, output: str) -> int:
        return self.item("custom_tool_call_output", call_id=call_id, output=output)

    def write(self, path: pathlib.Path) -> pathlib.Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in self.lines)
        path.write_text(text, encoding="utf-8")
        return path

    # -- one turn per generation

    def turn_060(self, prompt: str, answer: str, *, tools: bool = True) -> int:
        """0.60.1: the prompt twice, a turn_context before every model request, no
        phase, no task events, agent_reasoning / agent_message mirrors."""
        first = self.user_item(prompt)
        self.prompt_event(prompt)
        self.context(model="gpt-5.1-codex-max")
        self.item("ghost_snapshot", ghost_commit={"id": "abc", "parent": None})
        self.event("token_count", info=None)
        self.event("agent_reasoning", text="**Looking around**")
        self.reasoning("**Looking around**")
        if tools:
            self.call("shell_command", "c-ls", command="ls", workdir=".", timeout_ms=1000)
            self.output("c-ls", "Exit code: 0\nWall time: 0 seconds\nOutput:\na.txt\n")
            self.context(model="gpt-5.1-codex-max")
        self.event("agent_message", message=answer)
        self.assistant(answer)
        return first

    def turn_12x(self, turn_id: str, prompt: str, answer: str, model: str = "gpt-5.5") -> int:
        """0.12x: task_started opens the turn before its prompt; phases; a shell call
        with exec_command_end; task_complete with last_agent_message."""
        first = self.event("task_started", turn_id=turn_id, model_context_window=258400)
        self.developer("<permissions instructions>\nsandboxing...\n</permissions instructions>")
        self.user_item(f"<environment_context>\n  <cwd>{CWD}</cwd>\n</environment_context>")
        self.context(model=model, turn_id=turn_id)
        self.user_item(prompt)
        self.prompt_event(prompt, local_images=[], text_elements=[])
        self.assistant("Let me look.", phase="commentary")
        self.event("agent_message", message="Let me look.", phase="commentary")
        self.call("exec_command", f"{turn_id}-c1", cmd="sed -n 1,20p src/app.py", workdir=CWD)
        self.event(
            "exec_command_end",
            call_id=f"{turn_id}-c1",
            turn_id=turn_id,
            command=["/bin/bash", "-lc", "sed -n 1,20p src/app.py"],
            cwd=CWD,
            parsed_cmd=[{"type": "read", "cmd": "sed", "name": "app.py", "path": "src/app.py"}],
            exit_code=0,
            aggregated_output="print('hi')\n",
            status="completed",
        )
        self.output(
            f"{turn_id}-c1", "Chunk ID: 1\nWall time: 0.01 seconds\nProcess exited with code 0\n"
        )
        self.assistant(answer, phase="final_answer")
        self.event("agent_message", message=answer, phase="final_answer")
        self.event("token_count", info=None)
        self.event("task_complete", turn_id=turn_id, last_agent_message=answer)
        return first

    def turn_144(self, turn_id: str, prompt: str, answer: str) -> int:
        """0.144 code mode: the model writes JavaScript for a custom ``exec`` tool;
        the tools it runs show up only as events with their own call ids."""
        first = self.event("task_started", turn_id=turn_id)
        self.context(model="gpt-5.6-sol", turn_id=turn_id)
        self.user_item(prompt)
        self.prompt_event(prompt, local_images=[], text_elements=[])
        self.custom("exec", f"{turn_id}-x1", 'const r = await tools.exec_command({"cmd":"ls"});')
        self.custom_output(f"{turn_id}-x1", "Script running with cell ID 1\nOutput:\n")
        self.event("web_search_end", call_id="exec-ws-1", query="rust tokio", action={})
        self.event(
            "patch_apply_end",
            call_id="exec-p-1",
            turn_id=turn_id,
            success=True,
            stdout="Success.",
            stderr="",
            changes={
                f"{CWD}/src/lib.rs": {"type": "add", "content": "fn x() {}"},
                f"{CWD}/src/old.rs": {
                    "type": "update",
                    "unified_diff": "@@",
                    "move_path": f"{CWD}/src/new.rs",
                },
            },
        )
        self.call("wait", f"{turn_id}-w1", cell_id="1")
        self.output(f"{turn_id}-w1", [{"type": "input_text", "text": "Script completed"}])
        self.assistant(answer, phase="final_answer")
        self.event("task_complete", turn_id=turn_id, last_agent_message=None)
        return first


def rollout_path(root: pathlib.Path, sid: str = SID) -> pathlib.Path:
    return root / "sessions" / "2026" / "03" / "04" / f"rollout-2026-03-04T05-00-00-{sid}.jsonl"
