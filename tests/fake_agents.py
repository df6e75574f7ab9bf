"""Fake agents for the capture tests: each writes a real-format transcript line
by line, in the agent's own home (under the test's temporary HOME), and gives
the hook payloads the agent would send at each point (shapes recorded from
Claude Code 2.1.197 and Codex 0.171.0 runs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codex_rollout import Rollout

CLAUDE_SID = "61f62d05-1c0e-4d5b-9a3e-2f8f7d1a0b11"
CODEX_SID = "01a23145-b1a4-7a73-895f-35b37673b738"


def slug(cwd: str) -> str:
    return cwd.replace("/", "-")


class FakeClaude:
    """Claude Code: ``<config>/projects/<slug>/<session>.jsonl``, one record a
    line, a sub-agent's in ``<session>/subagents/agent-<id>.jsonl``."""

    def __init__(self, config: Path, cwd: str = "/home/dev/app", sid: str = CLAUDE_SID) -> None:
        self.cwd, self.sid = cwd, sid
        self.path = config / "projects" / slug(cwd) / f"{sid}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self.parent: str | None = None
        self.n = 0
        self.tick = 0
        self.held: list[str] = []
        self.prompt_id: str | None = None

    def ts(self) -> str:
        self.tick += 1
        s = self.tick
        return f"2026-05-01T{10 + s // 3600 % 10:02d}:{s // 60 % 60:02d}:{s % 60:02d}.000Z"

    def _base(self, kind: str, uuid: str) -> dict[str, Any]:
        rec = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.sid,
            "version": "2.1.197",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": self.ts(),
        }
        if self.prompt_id:
            rec["promptId"] = self.prompt_id
        self.parent = uuid
        return rec

    def write(self, rec: dict[str, Any], *, hold: bool = False) -> None:
        line = json.dumps(rec) + "\n"
        if hold:
            self.held.append(line)
            return
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)

    def flush(self) -> None:
        """Write what the agent had not written yet (a lagging transcript)."""
        with self.path.open("a", encoding="utf-8") as f:
            f.writelines(self.held)
        self.held.clear()

    def turn(self, text: str, answer: str, *, tools: int = 1, lag: bool = False) -> str:
        """One whole turn: the prompt, ``tools`` Read calls and their results,
        the answer (held back with ``lag``). Returns the turn id (prompt uuid)."""
        self.n += 1
        n = self.n
        self.prompt_id = f"{n:08x}-aaaa-4bbb-8ccc-{n:012x}"
        uid = f"{self.sid[:8]}-{n:04x}-4000-8000-{n:012x}"
        user = self._base("user", uid)
        user["message"] = {"role": "user", "content": text}
        self.write(user)
        for k in range(tools):
            call = f"toolu_{n:06d}{k:02d}"
            a = self._base("assistant", f"{self.sid[:8]}-{n:04x}-4111-8000-{k:012x}")
            a["requestId"] = f"req_{n}_{k}"
            a["message"] = {
                "id": f"msg_{n}_{k}",
                "model": "claude-sonnet-4-5",
                "role": "assistant",
                "type": "message",
                "content": [
                    {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": "a.py"}}
                ],
                "stop_reason": "tool_use",
            }
            self.write(a)
            r = self._base("user", f"{self.sid[:8]}-{n:04x}-4222-8000-{k:012x}")
            r["message"] = {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": f"line {n}"}],
            }
            r["toolUseResult"] = {"type": "text", "file": {"filePath": "a.py", "content": "x"}}
            self.write(r)
        final = self._base("assistant", f"{self.sid[:8]}-{n:04x}-4333-8000-{n:012x}")
        final["message"] = {
            "id": f"msg_{n}_final",
            "model": "claude-sonnet-4-5",
            "role": "assistant",
            "type": "message",
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
        }
        self.write(final, hold=lag)
        return uid

    def subagent(self, agent_id: str, task: str, answer: str) -> Path:
        """A sub-agent's whole transcript (2.1 layout)."""
        path = self.path.with_suffix("") / "subagents" / f"agent-{agent_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        base = {"isSidechain": True, "cwd": self.cwd, "sessionId": self.sid, "agentId": agent_id}
        lines = [
            {
                **base,
                "type": "user",
                "uuid": f"{agent_id}-u",
                "parentUuid": None,
                "timestamp": self.ts(),
                "message": {"role": "user", "content": task},
            },
            {
                **base,
                "type": "assistant",
                "uuid": f"{agent_id}-a",
                "parentUuid": f"{agent_id}-u",
                "timestamp": self.ts(),
                "message": {
                    "id": f"msg_{agent_id}",
                    "model": "claude-haiku-4-5",
                    "role": "assistant",
                    "type": "message",
                    "content": [{"type": "text", "text": answer}],
                },
            },
        ]
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        return path

    def payload(self, event: str = "Stop", **extra: Any) -> dict[str, Any]:
        p: dict[str, Any] = {
            "session_id": self.sid,
            "transcript_path": str(self.path),
            "cwd": self.cwd,
            "prompt_id": self.prompt_id,
            "permission_mode": "default",
            "hook_event_name": event,
        }
        if event in ("Stop", "SubagentStop"):
            p["stop_hook_active"] = False
            p["background_tasks"] = []
            p["session_crons"] = []
        if event == "PreCompact":
            p.update(trigger="manual", custom_instructions=None)
        if event == "SessionEnd":
            p["reason"] = "other"
        p.update(extra)
        return p


class FakeCodex:
    """Codex: a rollout under ``$CODEX_HOME/sessions/YYYY/MM/DD/`` whose folder
    is a local date unrelated to the turns' times (found by the thread id)."""

    def __init__(self, home: Path, sid: str = CODEX_SID, cwd: str = "/home/dev/proj") -> None:
        self.sid, self.cwd = sid, cwd
        self.path = (
            home / "sessions" / "2026" / "12" / "02" / f"rollout-2026-12-02T01-03-22-{sid}.jsonl"
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.r = Rollout()
        self.written = 0
        self.r.meta(cwd=cwd, id=sid)
        self.n = 0
        self.turn_id: str | None = None

    def _sync(self) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            for rec in self.r.lines[self.written :]:
                f.write((rec if isinstance(rec, str) else json.dumps(rec)) + "\n")
        self.written = len(self.r.lines)

    def turn(self, text: str, answer: str) -> str:
        self.n += 1
        self.turn_id = f"01a23145-b1e3-7ef0-a794-{self.n:012x}"
        self.r.turn_12x(self.turn_id, text, answer)
        self._sync()
        return self.turn_id

    def stop_payload(self, answer: str) -> dict[str, Any]:
        return {
            "session_id": self.sid,
            "turn_id": self.turn_id,
            "transcript_path": str(self.path),
            "cwd": self.cwd,
            "hook_event_name": "Stop",
            "model": "gpt-5",
            "permission_mode": "bypassPermissions",
            "stop_hook_active": False,
            "last_assistant_message": answer,
        }

    def notify_payload(self, prompt: str, answer: str) -> dict[str, Any]:
        return {
            "type": "agent-turn-complete",
            "thread-id": self.sid,
            "turn-id": self.turn_id,
            "cwd": self.cwd,
            "client": "codex_exec",
            "input-messages": [prompt],
            "last-assistant-message": answer,
        }
