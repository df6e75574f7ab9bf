"""Codex rollouts: reading lines and classifying them (the format and the rules: the package's docstring)."""

from __future__ import annotations

import json
import ntpath
import pathlib
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from histstore.errors import BadInput
from histstore.history.importers import (
    Problem,
    Progress,
    Redact,
    Resume,
)
from histstore.history.importers.jsonl import json_lines
from histstore.history.turn import normalize_time
from histstore.store.fsutil import open_regular
from histstore.store.refs import check_component

AGENT = "codex"
FORMAT = "codex"

_LINE_TYPES = frozenset(
    {
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        "world_state",
        "inter_agent_communication_metadata",
    }
)

#: text parts starting with one of these are context Codex injected, not prompts
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for ",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<skills_instructions>",
    "<apps_instructions>",
    "<plugins_instructions>",
    "<multi_agent_mode>",
    "<model_switch>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<subagent_notification>",
    "Another language model started to solve this problem",
)
_TAG_BLOCK = re.compile(r"<([A-Za-z_][\w.-]*)(?:\s[^>]*)?>.*</\1>\s*", re.S)
_NOT_PROMPT_KINDS = frozenset({"user_instructions", "environment_context"})
#: the text parts that wrap an image in a prompt item, and the placeholder for it
_IMAGE_WRAPPER = re.compile(r"\s*</?image\b[^>]*>\s*")
_IMAGE_MARK = re.compile(r"\[Image #\d+\]|</?image\b[^>]*>")

#: lines that show the model (or a tool it ran) at work
_ACTIVE_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "web_search_call",
        "tool_search_call",
        "tool_search_output",
        "image_generation_call",
        "agent_message",
        "compaction",
        "context_compaction",
    }
)
_ACTIVE_EVENTS = frozenset(
    {
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "exec_command_end",
        "patch_apply_end",
        "mcp_tool_call_end",
        "web_search_end",
        "view_image_tool_call",
        "image_generation_end",
        "error",
        "context_compacted",
        "entered_review_mode",
        "exited_review_mode",
        "collab_agent_spawn_end",
        "collab_agent_interaction_end",
        "collab_waiting_end",
        "collab_close_end",
        "collab_resume_end",
    }
)
_END_EVENTS = frozenset({"task_complete", "turn_aborted"})
_SUBAGENT_EVENTS = frozenset(
    {
        "collab_agent_spawn_end",
        "collab_agent_interaction_end",
        "collab_waiting_end",
        "collab_close_end",
        "collab_resume_end",
    }
)

_EXIT_CODE = re.compile(r"^Exit code: (-?\d+)", re.M)
_PROCESS_EXIT = re.compile(r"Process exited with code (-?\d+)")
_PATCH_FAILED = ("apply_patch verification failed", "Failed to apply patch")
_PATCH_HEADER = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.M)
_APPLY_PATCH_COMMANDS = ("apply_patch", "applypatch")
_FILE_UUID = re.compile(
    r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)
_WINDOWS_PATH = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
_ROLLBACK_MARK = b"thread_rolled_back"
#: the one time format of the store (histstore.history.turn.format_time), with
#: a month, day and time that can be
_STORE_TIME = re.compile(
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z"
)
_SCAN_CHUNK = 1 << 20


# --------------------------------------------------------------------------- detection


def is_codex_line(obj: Any) -> bool:
    """True when one parsed JSON line looks like a Codex rollout record (an
    envelope, or the header of a rollout from before the envelope)."""
    if not isinstance(obj, dict):
        return False
    if obj.get("type") in _LINE_TYPES and isinstance(obj.get("payload"), dict):
        return "timestamp" in obj
    return is_legacy_header(obj)


def is_legacy_header(obj: Any) -> bool:
    """The first line of a rollout from before the envelope (mid 2025): a bare
    ``{id, timestamp, instructions, git}`` session header."""
    return (
        isinstance(obj, dict)
        and "type" not in obj
        and "payload" not in obj
        and isinstance(obj.get("id"), str)
        and isinstance(obj.get("timestamp"), str)
        and ("instructions" in obj or "git" in obj)
    )


def _legacy_envelope(obj: dict[str, Any], legacy: dict[str, str | None]) -> dict[str, Any]:
    """A line of a rollout from before the envelope, as the envelope it would
    be: the header a ``session_meta``, ``{"record_type": ...}`` lines a
    ``state`` record (kept in raw only), a bare response item a
    ``response_item``. Those lines have no time of their own: each takes the
    header's (the session's start)."""
    ts = legacy.get("ts")
    if is_legacy_header(obj) and ts is None:
        legacy["ts"] = obj["timestamp"]
        return {"timestamp": obj["timestamp"], "type": "session_meta", "payload": obj}
    if "record_type" in obj:
        return {"timestamp": ts, "type": "state", "payload": obj}
    return {"timestamp": ts, "type": "response_item", "payload": obj}


# --------------------------------------------------------------------------- helpers


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _time(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    if _STORE_TIME.fullmatch(value):
        return value  # already the store's form (what Codex writes): no need to parse
    try:
        return normalize_time(value)
    except (BadInput, ValueError, OverflowError):
        return None


def _valid_id(text: str | None) -> bool:
    if not text:
        return False
    try:
        check_component(text)
    except BadInput:
        return False
    return True


def _parts(content: Any, types: tuple[str, ...]) -> list[str]:
    """The texts of a message's content parts of the given types."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in types:
                text = part.get("text")
                if isinstance(text, str):
                    out.append(text)
    return out


def _input_texts(content: Any) -> list[str]:
    return _parts(content, ("input_text", "text"))


def _output_text(content: Any) -> str:
    return "\n".join(_parts(content, ("output_text", "text", "refusal")))


def _is_injected(text: str) -> bool:
    s = text.strip()
    return s.startswith(_INJECTED_PREFIXES) or _TAG_BLOCK.fullmatch(s) is not None


def _is_injected_message(texts: list[str]) -> bool:
    """A user message all of whose text parts are injected context."""
    shown = [t for t in texts if t.strip()]
    return bool(shown) and all(_is_injected(t) for t in shown)


def _same_prompt(a: str, b: str) -> bool:
    """Whether two lines carry the same prompt: the same words once image
    placeholders are set aside, or one text inside the other."""
    na = " ".join(_IMAGE_MARK.sub(" ", a).split())
    nb = " ".join(_IMAGE_MARK.sub(" ", b).split())
    return na == nb or bool(na and nb and (na in nb or nb in na))


def _is_windows(path: str) -> bool:
    return _WINDOWS_PATH.match(path) is not None


def _resolve(path: str, base: str | None) -> str:
    """``path`` as recorded when absolute, else joined to ``base`` (Windows aware)."""
    if not base:
        return path
    if _is_windows(path) or _is_windows(base):
        return path if ntpath.isabs(path) else ntpath.normpath(ntpath.join(base, path))
    return path if posixpath.isabs(path) else posixpath.normpath(posixpath.join(base, path))


def _json_object(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _output(value: Any) -> tuple[str, bool]:
    """A tool output as text, and whether it reports a failure."""
    if value is None:
        return "", False
    if isinstance(value, list):
        texts = [p.get("text") for p in value if isinstance(p, dict)]
        return "\n".join(t for t in texts if isinstance(t, str)), False
    if isinstance(value, dict):
        if isinstance(value.get("text"), str):
            return str(value["text"]), False
        return json.dumps(value, ensure_ascii=False, sort_keys=True), False
    if not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False, sort_keys=True), False
    wrapped = _json_object(value)
    if wrapped is not None and isinstance(wrapped.get("output"), str):
        code = _dict(wrapped.get("metadata")).get("exit_code")
        failed = isinstance(code, int) and not isinstance(code, bool) and code != 0
        return str(wrapped["output"]), failed
    head = value[:2000]
    m = _EXIT_CODE.match(head) or _PROCESS_EXIT.search(head)
    if m:
        return value, int(m.group(1)) != 0
    return value, value.lstrip().startswith(_PATCH_FAILED)


def _image_step(url: str, at: str | None) -> dict[str, Any]:
    media, data = "", url
    if url.startswith("data:") and "," in url:
        head, data = url[5:].split(",", 1)
        media = head.split(";", 1)[0]
    return {"type": "image", "media_type": media, "data": data, "at": at}


def _images(content: Any) -> list[str]:
    out: list[str] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "input_image":
                url = part.get("image_url")
                if isinstance(url, str) and url:
                    out.append(url)
    return out


def _event(kind: str, text: str, at: str | None) -> dict[str, Any]:
    return {"type": "event", "kind": kind, "text": text, "at": at}


def _tool(call_id: str, name: str, tool_input: dict[str, Any], at: str | None) -> dict[str, Any]:
    return {
        "type": "tool",
        "id": call_id,
        "name": name,
        "input": tool_input,
        "output": None,
        "is_error": False,
        "at": at,
    }


def _patch_text(step: dict[str, Any]) -> str | None:
    """The patch an ``apply_patch`` call carried: the custom tool's input, or a shell
    command ``apply_patch <patch>`` (argv, or a command line starting with it)."""
    inp = _dict(step.get("input"))
    if step.get("name") in _APPLY_PATCH_COMMANDS:
        text = inp.get("input") or inp.get("patch")
        return text if isinstance(text, str) else None
    command = inp.get("command", inp.get("cmd"))
    if isinstance(command, list):
        args = [c for c in command if isinstance(c, str)]
        if len(args) >= 2 and args[0] in _APPLY_PATCH_COMMANDS:
            return args[1]
        command = args[-1] if args else None
    if (
        isinstance(command, str)
        and command.lstrip().startswith(_APPLY_PATCH_COMMANDS)
        and "*** Begin Patch" in command
    ):
        return command
    return None


def _mentions(path: pathlib.Path, needle: bytes, start: int = 0) -> bool:
    """Whether the file's bytes from ``start`` hold ``needle`` (read in chunks,
    never whole)."""
    tail = b""
    with open_regular(path) as fh:
        fh.seek(start)
        while chunk := fh.read(_SCAN_CHUNK):
            if needle in tail + chunk:
                return True
            tail = chunk[-(len(needle) - 1) :]
    return False


# --------------------------------------------------------------------------- reading


@dataclass
class _Line:
    """A line of a Codex rollout: its text, what it parsed to and its time."""

    lineno: int
    text: str
    obj: dict[str, Any] | None  # None: not a usable record (kept in raw only)
    #: the byte offset of the line in its file
    offset: int = 0
    #: its usable timestamp, in the store's form (None: none)
    at: str | None = None
    #: what it means for cutting (see :func:`_classify`), once asked
    cls: tuple[str, str] | None = None

    def classified(self) -> tuple[str, str]:
        if self.cls is None:
            self.cls = _classify(self.obj)
        return self.cls


def _read_lines(
    path: pathlib.Path,
    redact: Redact,
    problems: list[Problem],
    progress: Progress | None,
    start: Resume | None = None,
    legacy: dict[str, str | None] | None = None,
) -> Iterator[_Line]:
    """Every line of the file (from ``start``), redacted, then parsed. A last
    line without its newline that is not JSON yet is being written: it is left
    for the next import (which starts before it). A rollout from before the
    envelope (its header first) is read as envelopes (``legacy`` holds the
    header's time once seen, so a resumed read goes on the same way)."""
    legacy = {} if legacy is None else legacy
    for line in json_lines(path, redact, problems, progress, start):
        lineno, text, obj, at = line.lineno, line.text, line.obj, line.at
        if line.error is not None:
            if line.unfinished:
                break  # still being written: read again next time
            problems.append(Problem(str(path), lineno, line.error))
            yield _Line(lineno, redact(text), None, at)
            continue
        if isinstance(obj, dict) and "payload" not in obj:
            if lineno == 1 and is_legacy_header(obj):
                legacy["ts"] = None  # a rollout from before the envelope
            if "ts" in legacy:
                obj = _legacy_envelope(obj, legacy)
        if not isinstance(obj, dict) or not isinstance(obj.get("payload"), dict):
            what = "not a JSON object" if not isinstance(obj, dict) else "no payload object"
            problems.append(Problem(str(path), lineno, f"not a Codex rollout record: {what}"))
            yield _Line(lineno, text, None, at)
            continue
        yield _Line(lineno, text, obj, at, _time(obj.get("timestamp")))


#: the fields of ``session_meta`` a resumed read needs
_META_KEYS = frozenset(
    {"id", "session_id", "cwd", "cli_version", "originator", "parent_thread_id", "forked_from_id"}
)


# --------------------------------------------------------------------------- classifying


def _classify(obj: dict[str, Any] | None) -> tuple[str, str]:
    """What a line means for cutting: (kind, prompt text). Kinds: ``E`` / ``R``
    (the two lines of a prompt), ``task_started``, ``turn_context``, ``end``,
    ``activity``, ``rollback``, ``other``."""
    if obj is None:
        return "other", ""
    kind = obj.get("type")
    payload = _dict(obj.get("payload"))
    ptype = payload.get("type")
    if kind == "event_msg":
        if ptype == "user_message":
            message = _str(payload.get("message")) or ""
            if payload.get("kind") in _NOT_PROMPT_KINDS or (
                message.strip().startswith(_INJECTED_PREFIXES)
            ):
                return "other", ""
            return "E", message
        if ptype == "task_started":
            return "task_started", ""
        if ptype in _END_EVENTS:
            return "end", ""
        if ptype == "thread_rolled_back":
            return "rollback", ""
        if ptype in _ACTIVE_EVENTS:
            return "activity", ""
        return "other", ""
    if kind == "response_item":
        if ptype == "message":
            role = payload.get("role")
            if role == "assistant":
                return "activity", ""
            if role == "user":
                content = payload.get("content")
                texts = _input_texts(content)
                if not texts and not _images(content):
                    return "other", ""
                if _is_injected_message(texts):
                    return "other", ""
                shown = [t for t in texts if not _IMAGE_WRAPPER.fullmatch(t)]
                return "R", "\n".join(shown)
            return "other", ""
        if ptype in _ACTIVE_ITEMS:
            return "activity", ""
        return "other", ""
    if kind == "turn_context":
        return "turn_context", ""
    if kind == "compacted":
        return "activity", ""
    return "other", ""


def _turn_id_of(obj: dict[str, Any] | None) -> str | None:
    return _str(_dict((obj or {}).get("payload")).get("turn_id")) or None


# --------------------------------------------------------------------------- one turn
