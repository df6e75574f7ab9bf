"""What an agent's hook hands hs, read into one :class:`Event`.

* **Claude Code** runs a command hook with one JSON object on stdin:
  ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and, per
  event, ``Stop`` (``stop_hook_active``, ``last_assistant_message`` since
  2.1.47), ``SubagentStop`` (the same, plus ``agent_id``,
  ``agent_transcript_path``), ``PreCompact`` (``trigger``), ``SessionEnd``
  (``reason``); ``prompt_id`` on recent versions.
* **Codex** hooks (``hooks.json``, ``[hooks]`` of ``config.toml``) send the
  same shape: ``Stop`` has ``session_id`` (the thread id), ``turn_id``,
  ``transcript_path`` (the rollout; may be null), ``cwd``,
  ``last_assistant_message``.
* **Codex ``notify``** (older Codexes, and any that has it set) appends one
  JSON argument: ``{"type": "agent-turn-complete", "thread-id", "turn-id",
  "cwd", "input-messages", "last-assistant-message"}``; no transcript path,
  so the rollout is found by the thread id
  (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``:
  the folders are local dates, so it is looked up by the id, never by a date).

Every field is taken only when it has the type the agent documents; paths
must be absolute ``.jsonl`` files (a relative one is taken against ``cwd``).
A payload that is not a JSON object, or gives no session and no transcript,
is :class:`~histstore.errors.BadInput`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.agents import homes
from histstore.errors import BadInput

AGENTS = ("claude-code", "codex")
#: the name given to Codex's ``notify`` payload, which has no event name
NOTIFY = "notify"
#: the payload is refused past this size (a hook payload is a few KB)
MAX_PAYLOAD = 8 << 20

_THREAD_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z-]{7,63}$")


@dataclass(frozen=True)
class Event:
    """One hook's payload, as hs uses it."""

    agent: str
    #: the hook event (``Stop``, ``SubagentStop``, ``PreCompact``,
    #: ``SessionEnd``, ...), or ``notify`` for Codex's notify program
    name: str
    session_id: str | None
    #: the session's transcript (Claude Code's session file, Codex's rollout)
    transcript: Path | None
    #: a sub-agent's own transcript (Claude Code ``SubagentStop``)
    subagent_transcript: Path | None = None
    subagent_id: str | None = None
    #: the agent's final answer as the hook gives it (the transcript may lag)
    last_message: str | None = None
    #: the turn the event is about, when the agent names it (Codex)
    turn_id: str | None = None
    #: the prompt the turn answers (Claude Code's ``prompt_id``)
    prompt_id: str | None = None
    cwd: str | None = None

    @property
    def format(self) -> str:
        """The import format of its transcripts."""
        return self.agent


def _text(d: Mapping[str, Any], *keys: str) -> str | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, str) and v:
            return v
    return None


def _path(value: str | None, cwd: str | None) -> Path | None:
    """A transcript path from a payload: absolute (a relative one against
    ``cwd``), a ``.jsonl`` name, no NUL."""
    if not value or "\0" in value:
        return None
    p = Path(value).expanduser()
    if not p.is_absolute():
        if not cwd or not Path(cwd).is_absolute():
            return None
        p = Path(cwd) / p
    if p.suffix != ".jsonl":
        return None
    return p


def load_payload(text: str | bytes) -> dict[str, Any]:
    """The payload as a JSON object, or BadInput saying what it is instead."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if len(text) > MAX_PAYLOAD:
        raise BadInput(f"the hook payload is {len(text)} bytes, more than a hook sends")
    if not text.strip():
        raise BadInput("no hook payload (stdin was empty)")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BadInput(f"the hook payload is not JSON ({e})") from None
    if not isinstance(obj, dict):
        raise BadInput("the hook payload is not a JSON object")
    return obj


def is_hook_payload(obj: Any) -> bool:
    """Whether a JSON object is what an agent's hook sends (rather than a turn)."""
    if not isinstance(obj, dict):
        return False
    if obj.get("type") == "agent-turn-complete" and "thread-id" in obj:
        return True
    return isinstance(obj.get("hook_event_name"), str) and (
        "transcript_path" in obj or "session_id" in obj
    )


def parse(agent: str, text: str | bytes) -> Event:
    """The event of ``agent``'s hook payload ``text``."""
    if agent not in AGENTS:
        raise BadInput(f"unknown agent {agent!r}", hint=f"use one of {', '.join(AGENTS)}")
    return from_object(agent, load_payload(text))


def from_object(agent: str, obj: dict[str, Any]) -> Event:
    if obj.get("type") == "agent-turn-complete":
        return _notify(obj)
    name = _text(obj, "hook_event_name")
    if name is None:
        raise BadInput(
            "the hook payload names no event (hook_event_name)",
            hint="hs capture reads what an agent's hook sends on stdin",
        )
    cwd = _text(obj, "cwd")
    session = _text(obj, "session_id")
    transcript = _path(_text(obj, "transcript_path"), cwd)
    if session is None and transcript is None:
        raise BadInput(f"the {name} payload names no session_id and no transcript_path")
    if agent == "codex" and transcript is None and session is not None:
        transcript = find_rollout(session)
    message = obj.get("last_assistant_message")
    return Event(
        agent=agent,
        name=name,
        session_id=session,
        transcript=transcript,
        subagent_transcript=_path(_text(obj, "agent_transcript_path"), cwd),
        subagent_id=_text(obj, "agent_id"),
        last_message=message if isinstance(message, str) else None,
        turn_id=_text(obj, "turn_id"),
        prompt_id=_text(obj, "prompt_id"),
        cwd=cwd,
    )


def _notify(obj: dict[str, Any]) -> Event:
    thread = _text(obj, "thread-id")
    if thread is None:
        raise BadInput("the notify payload names no thread-id")
    message = obj.get("last-assistant-message")
    return Event(
        agent="codex",
        name=NOTIFY,
        session_id=thread,
        transcript=find_rollout(thread),
        last_message=message if isinstance(message, str) else None,
        turn_id=_text(obj, "turn-id"),
        cwd=_text(obj, "cwd"),
    )


def _rollouts(root: Path, thread: str) -> Iterator[Path]:
    # sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, archived_sessions/rollout-...
    yield from root.glob(f"sessions/*/*/*/rollout-*-{thread}.jsonl")
    yield from root.glob(f"archived_sessions/rollout-*-{thread}.jsonl")


def find_rollout(thread: str) -> Path | None:
    """The rollout file of a Codex thread, found by its id (None: not there,
    or not an id a file could be named by)."""
    if not _THREAD_ID.match(thread):
        return None
    found = sorted(_rollouts(homes.codex_home(), thread))
    return found[-1] if found else None


def files(event: Event) -> list[Path]:
    """The transcripts an event asks hs to read, each once: the session's and
    a sub-agent's; for Claude Code also the sub-agents' files of the session
    (``<session>/subagents/*.jsonl``: unchanged ones cost a look at their
    size), so a sub-agent whose own hook was missed is caught up."""
    out: list[Path] = []
    for p in (event.transcript, event.subagent_transcript):
        if p is not None and p not in out:
            out.append(p)
    if event.agent == "claude-code" and event.transcript is not None:
        sub = event.transcript.with_suffix("") / "subagents"
        try:
            found = sorted(sub.glob("*.jsonl")) if sub.is_dir() else []
        except OSError:
            found = []
        out += [p for p in found if p not in out]
    return out
