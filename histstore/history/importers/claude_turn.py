"""One Claude Code turn from its records: steps, files, tools, answer and status.

The records of a turn (histstore.history.importers.claude_code cuts a file
into them) are read in order: the prompt, the user lines (tool results,
interrupts, meta and command lines), the assistant lines (one API message
may span several lines sharing ``message.id``) and the system lines. The
rules are in claude_code's module docstring.
"""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass, field
from typing import Any

from histstore.errors import BadInput
from histstore.history.importers import (
    Problem,
    line_runs,
)
from histstore.history.turn import is_untrusted_tool, normalize_time

AGENT = "claude-code"


FORMAT = "claude-code"


_CAVEAT_PREFIX = "Caveat: The messages below were generated"


_INTERRUPT_PREFIX = "[Request interrupted by user"


_COMMAND_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-memory-input>",
)


_CAVEAT_TAG = "<local-command-caveat>"


#: a slash command the person typed: the line that may start a turn when the
#: agent then works on it (``/init``, a skill, a custom command)
_SLASH_PREFIXES = ("<command-name>", "<command-message>")
_COMMAND_NAME = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>\s*(.*?)\s*</command-args>", re.S)


#: context an IDE extension sends with a prompt (``<ide_selection>``,
#: ``<ide_opened_file>``, ...): one whole tag block, not what was asked
_IDE_BLOCK = re.compile(r"\s*<(ide_[A-Za-z_]+)>.*?</\1>\s*", re.S)


#: the prompt Claude Code primes an Explore sub-agent with
WARMUP = "Warmup"


_READ_TOOLS = frozenset({"Read", "NotebookRead"})


_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _time(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return normalize_time(value)
    except (BadInput, ValueError, OverflowError):
        return None


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _message(obj: dict[str, Any]) -> dict[str, Any]:
    msg = obj.get("message")
    return msg if isinstance(msg, dict) else {}


def _user_text(content: Any) -> str:
    """A user message's text: the string, or its text blocks joined with newlines."""
    if isinstance(content, str):
        return content
    parts = [b.get("text") for b in _blocks(content) if b.get("type") == "text"]
    return "\n".join(p for p in parts if isinstance(p, str))


def _has_prompt_content(content: Any) -> bool:
    if isinstance(content, str):
        return True
    return any(b.get("type") in ("text", "image") for b in _blocks(content))


def _is_tool_result_carrier(content: Any) -> bool:
    return any(b.get("type") == "tool_result" for b in _blocks(content))


def _is_caveat(text: str) -> bool:
    s = text.lstrip()
    return s.startswith(_CAVEAT_PREFIX) or s.startswith(_CAVEAT_TAG)


def _is_command(text: str) -> bool:
    return text.lstrip().startswith(_COMMAND_PREFIXES)


def _is_interrupt(text: str) -> bool:
    return text.strip().startswith(_INTERRUPT_PREFIX)


def _is_slash_command(text: str) -> bool:
    return text.lstrip().startswith(_SLASH_PREFIXES)


def command_text(text: str) -> str:
    """A slash-command wrapper as the person typed it: ``/init``, ``/review 12``."""
    name = _COMMAND_NAME.search(text)
    if name is None:
        return text.strip()
    args = _COMMAND_ARGS.search(text)
    words = [name.group(1)] + ([args.group(1)] if args and args.group(1) else [])
    return " ".join(words)


def split_ide(text: str) -> tuple[str, list[str]]:
    """A prompt's text apart from the IDE context blocks it begins with (or
    that are whole text blocks of it): (what was typed, the IDE blocks)."""
    found: list[str] = []
    pos = 0
    while m := _IDE_BLOCK.match(text, pos):
        found.append(m.group(0).strip())
        pos = m.end()
    return text[pos:], found


def is_command_prompt(obj: dict[str, Any], *, sidechain_ok: bool = False) -> bool:
    """A user line holding a slash command: it starts a turn when the agent
    worked on it (a line of the agent follows it), else its lines stay in
    the turn they follow (see claude_code's module doc)."""
    if obj.get("type") != "user":
        return False
    if obj.get("isSidechain") is True and not sidechain_ok:
        return False
    if obj.get("isMeta") or obj.get("isCompactSummary") or obj.get("isVisibleInTranscriptOnly"):
        return False
    content = _message(obj).get("content")
    if _is_tool_result_carrier(content):
        return False
    return _is_slash_command(_user_text(content))


def is_prompt(obj: dict[str, Any], *, sidechain_ok: bool = False) -> bool:
    """True when ``obj`` is a user line that starts a turn (see the module doc)."""
    if obj.get("type") != "user":
        return False
    if obj.get("isSidechain") is True and not sidechain_ok:
        return False
    if obj.get("isMeta") or obj.get("isCompactSummary") or obj.get("isVisibleInTranscriptOnly"):
        return False
    content = _message(obj).get("content")
    if not _has_prompt_content(content) or _is_tool_result_carrier(content):
        return False
    text = _user_text(content)
    return not (_is_caveat(text) or _is_command(text) or _is_interrupt(text))


def _tool_output(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                t = item.get("text")
                if isinstance(t, str):
                    parts.append(t)
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _error_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


@dataclass
class Line:
    """A record of a Claude Code transcript: its line, its text and what it parsed to."""

    lineno: int
    text: str
    obj: dict[str, Any]
    #: the byte offset of the line in its file
    offset: int = 0


@dataclass
class Group:
    """The lines of one turn, before they are turned into a record."""

    prompt: Line | None  # None: a sub-agent turn whose prompt line is missing
    lines: list[Line] = field(default_factory=list)  # own records, file order
    extra_raw: list[tuple[int, str]] = field(default_factory=list)  # preamble, summaries
    #: a slash command's group: a turn only if the agent worked on it, else its
    #: lines go back to the group they would have joined (``fallback``)
    tentative: bool = False
    fallback: int | None = None


@dataclass
class _AssistantMsg:
    """The text blocks of one assistant message, and whether it was an error."""

    texts: list[str] = field(default_factory=list)
    error: bool = False


class _TurnBuilder:
    """One turn's records read in order into steps, files, tools and status;
    :meth:`record` then gives the turn record."""

    def __init__(self, group: Group, sub_mode: bool, tool_steps: dict[str, dict[str, Any]]) -> None:
        self.group = group
        self.sub_mode = sub_mode
        self.tool_steps = tool_steps
        self.head = group.prompt or group.lines[0]
        self.steps: list[dict[str, Any]] = []
        self.files: dict[str, None] = {}
        self.edited: dict[str, None] = {}
        self.tools: dict[str, int] = {}
        self.tainted = False
        self.model: str | None = None
        self.interrupted = False
        self.api_error_lines = False
        self.messages: dict[str, _AssistantMsg] = {}
        self.last_msg: str | None = None
        self.cwd = text_or_none(self.head.obj.get("cwd"))
        self.last_time: str | None = None
        self.asked = ""
        #: the sub-agents this turn's Task/Agent calls started, in order
        self.subagents: dict[str, None] = {}

    def read(self) -> None:
        for line in self.group.lines:
            obj = line.obj
            if obj.get("type") == "queue-operation":
                continue  # a prompt typed ahead, raw only: not the agent's time
            at = _time(obj.get("timestamp"))
            if at is not None:
                self.last_time = at
            if self.cwd is None:
                self.cwd = text_or_none(obj.get("cwd"))
            if obj.get("isSidechain") is True and not self.sub_mode:
                continue  # an old CLI's sub-agent record inside the main file: raw only
            content = _message(obj).get("content")
            kind = obj.get("type")
            if line is self.group.prompt:
                self._prompt(content, at)
            elif kind == "user":
                self._user(obj, content, at)
            elif kind == "assistant":
                self._assistant(line, obj, content, at)
            elif kind == "system":
                self._system(obj, at)

    def _user_content(self, text: str, content: Any, at: str | None) -> None:
        typed, ide = self._typed(text, content)
        for context in ide:
            self.steps.append(_event("context", context, at))
        if typed or (isinstance(content, str) and not ide):
            self.steps.append({"type": "user", "text": typed, "at": at})
        for block in _blocks(content):
            if block.get("type") == "image":
                self.steps.append(_image_step(block, at))

    @staticmethod
    def _typed(text: str, content: Any) -> tuple[str, list[str]]:
        """(what the person typed, the IDE context blocks sent with it)."""
        if not isinstance(content, list):
            rest, blocks = split_ide(text)
            return (rest.strip() if blocks else text), blocks
        parts: list[str] = []
        ide: list[str] = []
        for b in _blocks(content):
            if b.get("type") != "text" or not isinstance(b.get("text"), str):
                continue
            typed, found = split_ide(b["text"])
            ide += found
            if not found:
                parts.append(typed)
            elif typed.strip():
                parts.append(typed.strip())
        return "\n".join(parts), ide

    def _prompt(self, content: Any, at: str | None) -> None:
        text = _user_text(content)
        if _is_slash_command(text):
            # a slash command the agent worked on: asked is the command as typed
            self.asked = command_text(text)
            self.steps.append({"type": "user", "text": self.asked, "at": at})
            return
        self.asked = self._typed(text, content)[0]
        self._user_content(text, content, at)

    def _interrupt(self, text: str, at: str | None) -> None:
        self.interrupted = True
        self.steps.append(_event("interrupted", text, at))

    def _user(self, obj: dict[str, Any], content: Any, at: str | None) -> None:
        if obj.get("isCompactSummary"):
            self.steps.append(_event("compact", _user_text(content), at))
            return
        if _is_tool_result_carrier(content):
            blocks = _blocks(content)
            spawned = _spawned(obj, blocks)
            for block in blocks:
                btype = block.get("type")
                if btype == "tool_result":
                    step = _tool_result(block, at, self.steps, self.tool_steps)
                    if spawned is not None:
                        # the Task/Agent call that started a sub-agent names it
                        step["subagent"] = spawned
                        self.subagents.setdefault(spawned, None)
                elif btype == "text":
                    text = text_or_none(block.get("text")) or ""
                    if _is_interrupt(text):
                        self._interrupt(text, at)
                    else:
                        self.steps.append({"type": "user", "text": text, "at": at})
                elif btype == "image":
                    self.steps.append(_image_step(block, at))
            return
        text = _user_text(content)
        if obj.get("isMeta") or obj.get("isVisibleInTranscriptOnly") or _is_caveat(text):
            self.steps.append(_event("meta", text, at))
        elif _is_command(text):
            self.steps.append(_event("command", text, at))
        elif _is_interrupt(text):
            self._interrupt(text, at)
        else:
            self._user_content(text, content, at)

    def _assistant(self, line: Line, obj: dict[str, Any], content: Any, at: str | None) -> None:
        msg = _message(obj)
        mid = text_or_none(msg.get("id")) or text_or_none(obj.get("uuid")) or f"line-{line.lineno}"
        line_model = text_or_none(msg.get("model"))
        blocks = _blocks(content)
        if isinstance(content, str):
            blocks = [{"type": "text", "text": content}]
        texts = [
            b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
        is_error = obj.get("isApiErrorMessage") is True or (
            line_model == "<synthetic>" and any(t.startswith("API Error") for t in texts)
        )
        entry = self.messages.setdefault(mid, _AssistantMsg())
        self.last_msg = mid
        if is_error:
            entry.error = True
            text = "\n".join(texts) or _error_text(obj.get("error"))
            self.steps.append(_event("api_error", text, at))
            return
        if line_model and line_model != "<synthetic>":
            self.model = line_model
        for block in blocks:
            btype = block.get("type")
            if btype == "text":
                text = text_or_none(block.get("text")) or ""
                entry.texts.append(text)
                self.steps.append(
                    {"type": "assistant", "text": text, "at": at, "model": line_model}
                )
            elif btype == "thinking":
                text = text_or_none(block.get("thinking")) or text_or_none(block.get("text")) or ""
                self.steps.append({"type": "thinking", "text": text, "at": at})
            elif btype == "tool_use":
                untrusted = _tool_use(
                    block, at, self.steps, self.tool_steps, self.files, self.edited, self.tools
                )
                self.tainted = untrusted or self.tainted

    def _system(self, obj: dict[str, Any], at: str | None) -> None:
        subtype = obj.get("subtype")
        if subtype == "api_error":
            self.api_error_lines = True
            self.steps.append(_event("api_error", _error_text(obj.get("error")), at))
        elif subtype == "compact_boundary":
            self.steps.append(_event("compact", text_or_none(obj.get("content")) or "", at))

    def answer(self) -> tuple[str, str]:
        """(the final answer, the turn's status)."""
        answered = ""
        last_error = False
        if self.last_msg is not None:
            entry = self.messages[self.last_msg]
            last_error = entry.error
            if not entry.error and entry.texts:
                answered = entry.texts[-1]
        if self.interrupted:
            return answered, "interrupted"
        if last_error or (self.api_error_lines and not answered):
            return answered, "failed"
        return answered, "completed"


def build_turn(
    group: Group,
    *,
    path: pathlib.Path,
    session_id: str,
    project: str,
    sub_mode: bool,
    subagent: str | None,
    subagent_meta: Any,
    tool_steps: dict[str, dict[str, Any]],
    problems: list[Problem],
    spawn_prompt: str | None = None,
) -> dict[str, Any] | None:
    lines = group.lines
    if not lines:
        return None
    b = _TurnBuilder(group, sub_mode, tool_steps)
    b.read()
    answered, status = b.answer()
    head, prompt_obj = b.head, b.head.obj
    asked_at = _time(prompt_obj.get("timestamp"))
    if asked_at is None:
        asked_at = next((t for ln in lines if (t := _time(ln.obj.get("timestamp")))), None)
    if asked_at is None:
        problems.append(Problem(str(path), head.lineno, "prompt has no usable timestamp; skipped"))
        return None

    turn_id = text_or_none(prompt_obj.get("uuid"))
    if not turn_id:
        turn_id = next((u for ln in lines if (u := text_or_none(ln.obj.get("uuid")))), None)
    if not turn_id:
        turn_id = f"{session_id}-L{head.lineno}"

    raw_pairs = sorted([(ln.lineno, ln.text) for ln in lines] + group.extra_raw, key=lambda p: p[0])

    turn: dict[str, Any] = {
        "turn_id": turn_id,
        "session_id": text_or_none(prompt_obj.get("sessionId")) or session_id,
        "project": project,
        "asked_at": asked_at,
        "asked": b.asked,
        "answered": answered,
        "files": list(b.files),
        "edited": list(b.edited),
        "tools": b.tools,
        "tainted": b.tainted,
        "model": b.model,
        "agent": AGENT,
        "status": status,
        "answered_at": b.last_time,
        "cwd": b.cwd,
        "subagent": subagent,
        "source": {
            "format": FORMAT,
            "file": str(path),
            "line": head.lineno,
            "end_line": raw_pairs[-1][0],
            "offset": head.offset,
            "lines": line_runs([n for n, _ in raw_pairs]),  # each raw record's line
        },
        "steps": b.steps,
        "raw": [text for _, text in raw_pairs],
    }
    extra: dict[str, Any] = {}
    if subagent_meta is not None:
        extra["subagent_meta"] = subagent_meta
    if b.subagents:
        extra["subagents"] = list(b.subagents)
    if sub_mode and group.prompt is None:
        if spawn_prompt is not None:
            # the prompt line is missing: the parent's call says what it asked
            turn["asked"] = spawn_prompt
            extra["asked_from"] = "parent"
        else:
            extra["warmup"] = True  # no prompt, and no call started it
    elif sub_mode and b.asked.strip() == WARMUP:
        extra["warmup"] = True
    if extra:
        turn["extra"] = extra
    return turn


def _event(kind: str, text: str, at: str | None) -> dict[str, Any]:
    return {"type": "event", "kind": kind, "text": text, "at": at}


def _image_step(block: dict[str, Any], at: str | None) -> dict[str, Any]:
    source = block.get("source")
    src = source if isinstance(source, dict) else {}
    return {
        "type": "image",
        "media_type": text_or_none(src.get("media_type")) or "",
        "data": text_or_none(src.get("data")) or text_or_none(src.get("url")) or "",
        "at": at,
    }


def _tool_use(
    block: dict[str, Any],
    at: str | None,
    steps: list[dict[str, Any]],
    tool_steps: dict[str, dict[str, Any]],
    files: dict[str, None],
    edited: dict[str, None],
    tools: dict[str, int],
) -> bool:
    """Record one tool_use block; return True when the tool is untrusted."""
    tool_id = text_or_none(block.get("id")) or ""
    if tool_id and tool_id in tool_steps and tool_steps[tool_id].get("name"):
        return False  # the same block written twice
    name = text_or_none(block.get("name")) or ""
    raw_input = block.get("input")
    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
    step = tool_steps.get(tool_id) if tool_id else None
    if step is None:
        step = {
            "type": "tool",
            "id": tool_id,
            "name": name,
            "input": tool_input,
            "output": None,
            "is_error": False,
            "at": at,
        }
        if tool_id:
            tool_steps[tool_id] = step
        steps.append(step)
    else:  # the result came first; fill in the call
        step["name"] = name
        step["input"] = tool_input
    tools[name] = tools.get(name, 0) + 1
    target = text_or_none(tool_input.get("file_path")) or text_or_none(
        tool_input.get("notebook_path")
    )
    if target:
        if name in _READ_TOOLS:
            files.setdefault(target, None)
        elif name in _EDIT_TOOLS:
            edited.setdefault(target, None)
    return is_untrusted_tool(name)


def _spawned(obj: dict[str, Any], blocks: list[dict[str, Any]]) -> str | None:
    """The sub-agent a tool-result line reports on: ``toolUseResult.agentId``
    of a line carrying one tool result (a Task/Agent call's)."""
    result = obj.get("toolUseResult")
    if not isinstance(result, dict):
        return None
    agent_id = text_or_none(result.get("agentId"))
    if not agent_id or sum(1 for b in blocks if b.get("type") == "tool_result") != 1:
        return None
    return agent_id


def _tool_result(
    block: dict[str, Any],
    at: str | None,
    steps: list[dict[str, Any]],
    tool_steps: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    tool_id = text_or_none(block.get("tool_use_id")) or ""
    step = tool_steps.get(tool_id) if tool_id else None
    if step is None:
        step = {
            "type": "tool",
            "id": tool_id,
            "name": "",
            "input": {},
            "output": None,
            "is_error": False,
            "at": at,
        }
        if tool_id:
            tool_steps[tool_id] = step
        steps.append(step)
    step["output"] = _tool_output(block.get("content"))
    step["is_error"] = block.get("is_error") is True
    return step
