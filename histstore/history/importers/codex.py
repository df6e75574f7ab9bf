"""OpenAI Codex CLI rollout files -> turn records.

Codex writes one JSONL file per session (a *thread*) under
``~/.codex/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl``. Every
line is an envelope ``{timestamp, type, payload}`` with ``type`` one of
``session_meta``, ``turn_context``, ``response_item`` (what the model saw and
said), ``event_msg`` (UI events, many of them mirrors of response items),
``compacted``, ``world_state``, ... See FORMATS.md section 2 (shared notes) for the
observed format of every generation (0.60 ... 0.14x).

This is a pure parser: :func:`parse_file` reads one file and yields turn records
(see :mod:`histstore.history.turn`), :class:`~histstore.history.importers.Problem`
for lines it cannot read, one :class:`~histstore.history.importers.SessionMeta`
after the turns (the title is often written late in the file), and last a
:class:`~histstore.history.importers.Resume`.

Reading
-------
* The file is read line by line and never held whole: only the lines of the turn
  being built (and, before the first prompt, the lines before it) are kept. Every
  raw line is passed through ``redact`` first, then parsed, so every string that
  reaches a turn is already redacted.
* A line that is not JSON, not an object or not a ``{type, payload}`` envelope is a
  Problem naming the line; its (redacted) text still goes into the raw lines of
  the turn it falls in, and the rest of the file imports. Unknown ``type`` values
  and payload types are kept in ``raw`` and otherwise ignored.

How the file is cut into turns
------------------------------
* A turn starts at a *prompt*. Codex writes each typed prompt twice: as
  ``event_msg/user_message`` (the clean text the person typed) and as a
  ``response_item`` user message (what the model saw), next to each other in
  either order. Either one starts the turn; the other is its *partner* and joins
  the same turn when it comes before any model activity of that turn and carries
  the same text (whitespace, ``[Image #n]`` placeholders and ``<image>`` wrapper
  parts aside, or one text inside the other). So a file where
  only one of the pair was written (older writers, a file cut between the two
  lines) still gets one turn per prompt, and a pair never makes two turns.
  ``asked`` is the ``user_message`` text when there is one, else the response
  item's text.
* Not prompts: developer messages; user messages whose every text part is
  injected context (``<environment_context>``, ``<user_instructions>``,
  ``# AGENTS.md instructions for ...``, ``<permissions instructions>``,
  ``<collaboration_mode>``, ``<skills_instructions>``, ``<turn_aborted>``, the
  compaction bridge "Another language model started to solve this problem ...",
  or any text that is one whole ``<tag ...>...</tag>`` block); and
  ``user_message`` events with ``kind`` ``user_instructions`` or
  ``environment_context`` (older CLIs) or starting with one of the prefixes above.
  These become ``context`` event steps of the turn they fall in.
* Newer CLIs open a turn *before* its prompt: ``task_started`` (and a
  ``turn_context`` with a new ``turn_id``), developer messages and the
  environment context come first. Those opening lines are held back until the
  next line decides: a prompt makes them the first lines of the new turn; model
  activity, ``task_complete``/``turn_aborted`` or another opening first means the
  task had no prompt (``/compact``, a review, a user shell command), and its
  lines are appended to the current turn as *foreign* lines: they add raw lines,
  steps, tools and files there but never change its id, model, answer or status.
* Every other line belongs to the turn of the last prompt. Lines before the first
  prompt (``session_meta``, the first environment context, ...) open the first
  turn, so every line of the file ends up in exactly one turn's ``raw``; a file
  without any prompt yields no turn (only its :class:`SessionMeta`).

Fields
------
* ``session_id``: the first ``session_meta`` ``payload.id`` (else
  ``payload.session_id``); else the uuid at the end of the file name
  ``rollout-<time>-<uuid>.jsonl``; else the file name's stem. Later
  ``session_meta`` lines (copied in by a fork) are ignored.
* ``turn_id``: the Codex turn id known when the prompt is read, when it is a
  valid one: the ``turn_id`` of the ``task_started`` / ``turn_context`` that
  opened the turn before its prompt, or, for a prompt typed while a task ran,
  that task's; else ``<session_id>-<n>`` where ``n`` is the prompt's position
  among the file's prompts (1 for the first). Lines after the prompt never
  change it, so it is the same on a re-import and when the file grows (read
  while Codex was still writing the turn). A Codex turn id already taken by an
  earlier turn of the file gets ``-<n>`` appended.
* ``project``: the first ``session_meta`` ``cwd`` as recorded (Windows paths
  kept), else the first ``turn_context`` cwd, else ``""``. ``cwd``: the cwd of
  the ``turn_context`` in effect when the prompt was asked (the turn's first one
  for 0.60, which writes it after the prompt). ``model``: the last ``turn_context``
  model of the turn (0.60 writes one before every model request), else the one in
  effect before it.
* ``answered``: the last assistant message with ``phase: final_answer``, else the
  turn's ``task_complete.last_agent_message``, else its last assistant message
  (``response_item``, else ``agent_message`` events), else ``""``.
* Steps: ``user`` (the prompt, plus its images), ``assistant`` (response items,
  with ``phase`` when Codex wrote one; ``agent_message`` events only when the turn
  has no assistant response item), ``thinking`` (reasoning summaries and raw
  reasoning text; ``agent_reasoning`` events only when the turn has none), ``tool``
  and ``event`` (kinds ``context``, ``interrupted``, ``rollback``,
  ``rolled_back``, ``compact``, ``error``, ``review``, ``undo``, ``plan``,
  ``subagent``, ``inter_agent``, ``user_shell``).
* Tool steps: ``function_call`` (``arguments`` is a JSON string, parsed into
  ``input``; MCP tools get their ``namespace`` prefixed), ``custom_tool_call``
  (``input = {"input": <raw text>}``: ``apply_patch``, code mode's ``exec``),
  ``local_shell_call`` (``local_shell``), ``web_search_call`` (``web_search``),
  ``tool_search_call``, ``image_generation_call``. Outputs are matched by
  ``call_id``; an output that is JSON ``{"output", "metadata": {"exit_code"}}`` is
  unwrapped. ``is_error``: a non-zero exit code (``Exit code: N`` /
  ``Process exited with code N`` / ``metadata.exit_code`` / ``exec_command_end``),
  ``apply_patch verification failed``, ``patch_apply_end.success`` false, an MCP
  error. ``exec_command_end``, ``patch_apply_end`` and ``mcp_tool_call_end`` events
  complete the call with their ``call_id``; one without a call in the turn (code
  mode runs tools from inside ``exec``) is a tool step of its own
  (``exec_command``, ``apply_patch``, ``mcp__<server>__<tool>``).
  ``web_search_end`` events are ``web_search`` steps only when the turn has no
  ``web_search_call``. A user shell command (``!cmd``) is a ``user_shell`` event,
  not a tool.
* ``tools`` counts the tool steps by name. ``edited``: the paths of the turn's
  ``patch_apply_end.changes`` (and ``move_path``) that did not fail; for an
  ``apply_patch`` call without such an event (0.60), its ``*** Add File:`` /
  ``*** Update File:`` / ``*** Delete File:`` / ``*** Move to:`` headers, resolved
  against the turn's cwd, unless the call failed. ``files``: the ``read`` entries
  of ``exec_command_end.parsed_cmd`` (resolved against the command's cwd) and
  ``view_image`` paths. Shell commands of 0.60 (no ``exec_command_end``) and code
  mode give no read paths.
* ``tainted``: the turn ran a web search or an MCP tool (``web_search_call``,
  ``web_search_end``, ``mcp_tool_call_end``, any tool ``mcp__...``; see
  :func:`histstore.history.turn.is_untrusted_tool`).
* ``status``: ``interrupted`` when the turn's ``turn_aborted`` is there (any
  reason); else ``failed`` when its ``task_complete`` carries an ``error`` or an
  ``error`` event came after its last assistant message; else ``completed``.
* ``thread_rolled_back {num_turns}`` undoes the last ``num_turns`` prompts still in
  effect (earlier rollbacks already removed some): those turns are kept, with
  ``extra["rolled_back"] = true`` and a ``rolled_back`` event step, their status
  unchanged. Because a rollback names turns that were already read, a file that
  mentions ``thread_rolled_back`` is read twice (the first pass only counts);
  other files once.
* ``asked_at`` is the prompt's timestamp, else the nearest earlier usable one in
  the file (a Problem says so), else the turn's first; ``answered_at`` the last
  usable timestamp of the turn.
* ``extra``: ``cli_version`` and ``originator`` of the session, ``parent_thread_id``
  and ``forked_from_id`` when set, ``rolled_back``, and ``unfinished`` for a turn
  whose ``task_started`` has no ``task_complete``/``turn_aborted`` (a file cut
  mid-turn or still being written). A session whose ``session_meta`` names a
  parent thread (a sub-agent) gives ``subagent`` = its own id.
* Session title (:class:`SessionMeta`): the last ``thread_name_updated`` name.

Resuming
--------
The :class:`Resume` it yields last is the start of the file's last turn (its
first line: the ``task_started`` or ``turn_context`` that opened it, else its
prompt) with what the lines before it said: the session's ``session_meta``
fields, id and project, the model and cwd in effect, the last usable
timestamp, the title so far, the number of prompts and which of them were
rolled back, and the turn ids already taken. A later import of the file grown
by appends starts there and reads that turn again (it may still have been
growing), so it gives the same records a whole read would. Two cases read the
whole file instead: a last turn that starts the file, and a rollback in the
new lines that undoes a prompt before the resume point (those turns must be
given again, marked).
"""

from __future__ import annotations

import json
import ntpath
import pathlib
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from histstore.errors import BadInput
from histstore.history.importers import (
    PROGRESS_STEP,
    Parsed,
    Problem,
    Progress,
    Redact,
    Resume,
    SessionMeta,
)
from histstore.history.turn import is_untrusted_tool, normalize_time
from histstore.store.fsutil import open_regular
from histstore.store.redact import redact_json_line
from histstore.store.refs import check_component

__all__ = ["is_codex_line", "parse_file"]

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
    unreported = 0
    offset = start.offset if start else 0
    lineno = start.line - 1 if start else 0
    with open_regular(path) as fh:
        fh.seek(offset)
        for data in fh:
            lineno += 1
            at, offset = offset, offset + len(data)
            unreported += len(data)
            if progress is not None and unreported >= PROGRESS_STEP:
                progress(unreported)
                unreported = 0
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("utf-8", errors="replace")
                problems.append(Problem(str(path), lineno, "invalid UTF-8, replaced"))
            if lineno == 1:
                text = text.lstrip("\ufeff")
            unfinished = not text.endswith("\n")
            text = text.rstrip("\r\n")
            if not text.strip():
                continue
            try:
                text, obj = redact_json_line(redact, text)
            except (ValueError, RecursionError) as exc:
                if unfinished:
                    break  # still being written: read again next time
                problems.append(Problem(str(path), lineno, f"not valid JSON: {exc}"))
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
    if progress is not None and unreported:
        progress(unreported)


# --------------------------------------------------------------------------- the session


class _Session:
    """What the file says about the session, and what all its turns share."""

    def __init__(self, path: pathlib.Path, redact: Redact) -> None:
        self.path = path
        self.redact = redact
        self.meta: dict[str, Any] | None = None
        self.title: str | None = None
        self.model: str | None = None  # the model in effect (last turn_context)
        self.cwd: str | None = None  # the cwd in effect
        self.first_cwd: str | None = None
        self.last_time: tuple[str, int] | None = None  # (time, line)
        self.used_ids: set[str] = set()
        self._id: str | None = None
        self._project: str | None = None

    def observe(self, line: _Line) -> None:
        obj = line.obj
        if obj is None:
            return
        at = line.at
        if at is not None:
            self.last_time = (at, line.lineno)
        payload = _dict(obj.get("payload"))
        kind = obj.get("type")
        if kind == "session_meta" and self.meta is None:
            self.meta = payload
        elif kind == "turn_context":
            model, cwd = _str(payload.get("model")), _str(payload.get("cwd"))
            if model:
                self.model = model
            if cwd:
                self.cwd = cwd
                self.first_cwd = self.first_cwd or cwd
        elif kind == "event_msg" and payload.get("type") == "thread_name_updated":
            name = _str(payload.get("thread_name")) or _str(payload.get("name"))
            if name and name.strip():
                self.title = name

    @property
    def session_id(self) -> str:
        """Fixed the first time it is asked, so every turn of the file agrees."""
        if self._id is None:
            meta = self.meta or {}
            ids = (_str(meta.get("id")), _str(meta.get("session_id")))
            valid = next((i for i in ids if i and _valid_id(i)), None)
            if valid:
                self._id = valid
            else:
                m = _FILE_UUID.search(self.path.stem)
                # names taken from the file system are text from outside too
                self._id = self.redact(m.group(1) if m else self.path.stem)
        return self._id

    def meta_cwd(self) -> str | None:
        return _str((self.meta or {}).get("cwd")) or None

    @property
    def project(self) -> str:
        """Fixed the first time a turn asks, so every turn of the file agrees."""
        if self._project is None:
            self._project = self.meta_cwd() or self.first_cwd or ""
        return self._project

    def extra(self) -> dict[str, Any]:
        meta = self.meta or {}
        out: dict[str, Any] = {}
        for key in ("cli_version", "originator", "parent_thread_id", "forked_from_id"):
            value = _str(meta.get(key))
            if value:
                out[key] = value
        return out

    def is_subagent(self) -> bool:
        meta = self.meta or {}
        return bool(_str(meta.get("parent_thread_id"))) or "subagent" in _dict(meta.get("source"))

    # ---------------------------------------------------------------- resuming

    def mark(self) -> dict[str, Any]:
        """What changes as lines are read (taken where a turn may start)."""
        return {
            "model": self.model,
            "cwd": self.cwd,
            "first_cwd": self.first_cwd,
            "last_time": list(self.last_time) if self.last_time else None,
            "title": self.title,
        }

    def fixed(self, drop: str | None) -> dict[str, Any]:
        """What is fixed once read (the session's first ``session_meta``, its id
        and project) and the turn ids taken, but ``drop`` (the turn that will
        be read again)."""
        meta: dict[str, Any] | None = None
        if self.meta is not None:
            meta = {k: v for k, v in self.meta.items() if k in _META_KEYS and isinstance(v, str)}
            if "subagent" in _dict(self.meta.get("source")):
                meta["source"] = {"subagent": True}
        return {
            "meta": meta,
            "id": self._id,
            "project": self._project,
            "used_ids": sorted(self.used_ids - {drop} if drop else self.used_ids),
        }

    def restore(self, state: dict[str, Any]) -> None:
        meta = state.get("meta")
        self.meta = meta if isinstance(meta, dict) else None
        self.model = _str(state.get("model"))
        self.cwd = _str(state.get("cwd"))
        self.first_cwd = _str(state.get("first_cwd"))
        self.title = _str(state.get("title"))
        last = state.get("last_time")
        if isinstance(last, list) and len(last) == 2:
            self.last_time = (str(last[0]), int(last[1]))
        self._id = _str(state.get("id"))
        self._project = _str(state.get("project"))
        self.used_ids = {str(i) for i in state.get("used_ids") or []}


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


@dataclass
class _Turn:
    """One turn while it is read. ``light`` turns (the first pass of a file with a
    rollback) keep only what cutting needs."""

    session: _Session
    light: bool
    ordinal: int = 0
    started: bool = False  # has its prompt
    has_e: bool = False
    has_r: bool = False
    e_text: str = ""
    r_text: str = ""
    activity: bool = False  # model activity since the prompt
    saw_task: bool = False
    task_ended: bool = False
    in_foreign: bool = False  # inside a prompt-less task appended to this turn
    codex_id: str | None = None
    #: where the turn's first line starts and what the lines before said
    #: (None: the turn starts the file)
    start_mark: dict[str, Any] | None = None
    assigned_id: str | None = None
    #: the Codex turn id known when the prompt came (what the turn id is made of:
    #: lines after the prompt never change it, so a grown file keeps the id)
    prompt_codex_id: str | None = None

    def running(self) -> str | None:
        """The Codex turn id of this turn's task while it runs (not ended)."""
        return self.codex_id if self.started and self.saw_task and not self.task_ended else None

    # content (not kept by light turns)
    raw: list[str] = field(default_factory=list)
    first_line: int = 0
    last_line: int = 0
    prompt_line: int = 0
    prompt_offset: int = 0
    asked: str = ""
    asked_at: str | None = None
    earlier_time: tuple[str, int] | None = None
    first_time: str | None = None
    last_time: str | None = None
    user_step: dict[str, Any] | None = None
    model: str | None = None
    inherited_model: str | None = None
    open_cwd: str | None = None
    own_cwd: str | None = None
    inherited_cwd: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, None] = field(default_factory=dict)
    edit_hints: dict[str, None] = field(default_factory=dict)
    taint_hint: bool = False
    final_answer: str | None = None
    last_assistant: str | None = None
    last_agent_event: str | None = None
    task_message: str | None = None
    task_error: bool = False
    error_pending: bool = False
    interrupted: bool = False
    primary: set[str] = field(default_factory=set)  # categories with a primary source

    # ---------------------------------------------------------------- cutting state

    def mode(self) -> str:
        if self.in_foreign:
            return "foreign"
        return "own" if self.started else "open"

    def pairs(self, kind: str, text: str) -> bool:
        """Whether a prompt line is the partner of this turn's prompt."""
        if not self.started or self.activity:
            return False
        if kind == "E":
            return self.has_r and not self.has_e and _same_prompt(text, self.r_text)
        return self.has_e and not self.has_r and _same_prompt(text, self.e_text)

    def owns_task_start(self, line: _Line) -> bool:
        """A ``task_started`` written just after this turn's prompt is its own."""
        if not self.started or self.saw_task or self.activity:
            return False
        tid = _turn_id_of(line.obj)
        return self.codex_id is None or tid is None or tid == self.codex_id

    def _cut_state(self, line: _Line, role: str, kind: str, text: str, sig: str | None) -> None:
        obj = line.obj
        if sig is not None:
            if sig == "E":
                self.has_e, self.e_text = True, text
            else:
                self.has_r, self.r_text = True, text
            self.started = True
            return
        if role == "foreign":
            if kind == "activity" and self.started:
                self.activity = True
            return
        if kind == "activity" and self.started:
            self.activity = True
        ptype = _dict((obj or {}).get("payload")).get("type")
        if kind == "task_started":
            self.saw_task = True
        tid = _turn_id_of(obj)
        id_line = kind in ("task_started", "turn_context", "end")
        if tid and id_line and self.codex_id is None and not self.task_ended:
            self.codex_id = tid
        if kind == "end" and ptype in _END_EVENTS and self._is_mine(obj):
            self.task_ended = True

    def _is_mine(self, obj: dict[str, Any] | None) -> bool:
        tid = _turn_id_of(obj)
        return tid is None or self.codex_id is None or tid == self.codex_id

    # ---------------------------------------------------------------- reading a line

    def add(self, line: _Line, role: str, sig: str | None = None) -> None:
        """Take one line: ``role`` is ``open`` (before the prompt), ``own`` or
        ``foreign`` (a prompt-less task appended to this turn); ``sig`` says the
        line is this turn's prompt (``E``) or its partner (``R``), or the other way."""
        kind, text = line.classified()
        self._cut_state(line, role, kind, text, sig)
        if self.light:
            return
        if not self.first_line:
            self.first_line = line.lineno
        self.last_line = line.lineno
        self.raw.append(line.text)
        obj = line.obj
        if obj is None:
            return
        at = line.at
        if at is not None:
            self.last_time = at
            self.first_time = self.first_time or at
        payload = _dict(obj.get("payload"))
        ltype = obj.get("type")
        # what only the turn's own task may change: its model, answer and status
        own = role != "foreign"
        if sig is not None:
            self._prompt(line, sig, payload, at)
        elif ltype == "turn_context":
            if own:
                self._turn_context(payload)
        elif ltype == "compacted":
            self.primary.add("compact")
            self.steps.append(_event("compact", _str(payload.get("message")) or "", at))
        elif ltype == "response_item":
            self._response_item(payload, at, own)
        elif ltype == "event_msg":
            self._event_msg(payload, at, own and self._is_mine(obj))

    def _prompt(self, line: _Line, sig: str, payload: dict[str, Any], at: str | None) -> None:
        text = self.e_text if sig == "E" else self.r_text
        if self.user_step is None:
            self.prompt_line = line.lineno
            self.prompt_offset = line.offset
            self.asked = text
            self.asked_at = at
            self.earlier_time = self.session.last_time
            self.inherited_model = self.session.model
            self.inherited_cwd = self.session.cwd
            self.user_step = {"type": "user", "text": text, "at": at}
            self.steps.append(self.user_step)
            urls = (
                _images(payload.get("content"))
                if sig == "R"
                else [u for u in payload.get("images") or [] if isinstance(u, str) and u]
            )
            self.steps.extend(_image_step(u, at) for u in urls)
            return
        # the partner line: the typed prompt is the clean text
        if sig == "E":
            self.asked = text
            self.user_step["text"] = text
        if self.asked_at is None:
            self.asked_at = at
            self.user_step["at"] = at

    def _turn_context(self, payload: dict[str, Any]) -> None:
        model, cwd = _str(payload.get("model")), _str(payload.get("cwd"))
        if model:
            self.model = model
        if cwd:
            if not self.started:
                self.open_cwd = cwd
            elif self.own_cwd is None:
                self.own_cwd = cwd

    def cwd(self) -> str | None:
        return self.open_cwd or self.own_cwd or self.inherited_cwd or self.session.meta_cwd()

    def _model_now(self) -> str | None:
        return self.model or self.inherited_model or self.session.model

    def _step_for(self, call_id: str, name: str, at: str | None) -> dict[str, Any]:
        """The tool step of ``call_id``, made (with ``name``) when there is none yet."""
        step = self.calls.get(call_id) if call_id else None
        if step is None:
            step = _tool(call_id, name, {}, at)
            self.steps.append(step)
            if call_id:
                self.calls[call_id] = step
        return step

    def _call(self, call_id: str, name: str, tool_input: dict[str, Any], at: str | None) -> None:
        step = self.calls.get(call_id) if call_id else None
        if step is not None and step["name"] and step.get("_called"):
            return  # the same call written twice
        if step is None:
            step = self._step_for(call_id, name, at)
        step["name"] = name
        step["input"] = tool_input
        step["_called"] = True
        if name == "view_image" and isinstance(tool_input.get("path"), str):
            self.files.setdefault(_resolve(tool_input["path"], self.cwd()), None)

    def _result(self, call_id: str, value: Any, at: str | None) -> None:
        step = self._step_for(call_id, "", at)
        text, failed = _output(value)
        step["output"] = text
        step["is_error"] = bool(step["is_error"]) or failed

    # ---------------------------------------------------------------- response items

    def _response_item(self, p: dict[str, Any], at: str | None, own: bool) -> None:
        ptype = p.get("type")
        call_id = _str(p.get("call_id")) or ""
        if ptype == "message":
            role = p.get("role")
            content = p.get("content")
            if role == "assistant":
                text = _output_text(content)
                step: dict[str, Any] = {
                    "type": "assistant",
                    "text": text,
                    "at": at,
                    "model": self._model_now(),
                }
                phase = _str(p.get("phase"))
                if phase:
                    step["phase"] = phase
                self.steps.append(step)
                self.primary.add("assistant")
                if own:
                    self.last_assistant = text
                    self.error_pending = False
                    if phase == "final_answer":
                        self.final_answer = text
            else:
                text = "\n".join(_input_texts(content))
                self.steps.append(_event("context", text, at))
        elif ptype == "reasoning":
            texts = [
                *_parts(p.get("summary"), ("summary_text",)),
                *_parts(p.get("content"), ("reasoning_text", "text")),
            ]
            text = "\n\n".join(t for t in texts if t)
            if text:
                self.primary.add("thinking")
                self.steps.append({"type": "thinking", "text": text, "at": at})
        elif ptype == "function_call":
            name = _str(p.get("name")) or ""
            namespace = _str(p.get("namespace"))
            if namespace and not name.startswith(namespace):
                name = f"{namespace}__{name}"
            args = p.get("arguments")
            parsed = _json_object(args)
            tool_input = parsed if parsed is not None else {"arguments": args}
            self._call(call_id, name, tool_input, at)
        elif ptype == "custom_tool_call":
            self._call(call_id, _str(p.get("name")) or "", {"input": p.get("input")}, at)
        elif ptype == "local_shell_call":
            cid = call_id or _str(p.get("id")) or ""
            self._call(cid, "local_shell", _dict(p.get("action")), at)
        elif ptype == "web_search_call":
            self.primary.add("web_search")
            self._call(_str(p.get("id")) or "", "web_search", _dict(p.get("action")), at)
        elif ptype == "tool_search_call":
            self._call(call_id, "tool_search", _dict(p.get("arguments")), at)
        elif ptype == "image_generation_call":
            prompt = _str(p.get("revised_prompt"))
            tool_input = {"revised_prompt": prompt} if prompt else {}
            self._call(_str(p.get("id")) or "", "image_generation", tool_input, at)
        elif ptype in (
            "function_call_output",
            "custom_tool_call_output",
            "local_shell_call_output",
        ):
            self._result(call_id, p.get("output"), at)
        elif ptype == "tool_search_output":
            self._result(call_id, p.get("tools"), at)
        elif ptype == "agent_message":
            text = "\n".join(_parts(p.get("content"), ("input_text", "output_text", "text")))
            self.steps.append(_event("inter_agent", text, at))
        elif ptype == "ghost_snapshot":
            # 0.60's undo checkpoint: a commit of the work tree before the turn
            commit = _str(_dict(p.get("ghost_commit")).get("id")) or ""
            self.steps.append(_event("snapshot", commit, at))
        elif ptype in ("compaction", "context_compaction"):
            self.primary.add("compact")
            self.steps.append(_event("compact", "", at))

    # ---------------------------------------------------------------- events

    def _event_msg(self, p: dict[str, Any], at: str | None, own: bool) -> None:
        ptype = p.get("type")
        call_id = _str(p.get("call_id")) or ""
        if ptype == "user_message":  # not a prompt (injected kind)
            self.steps.append(_event("context", _str(p.get("message")) or "", at))
        elif ptype == "agent_message":
            text = _str(p.get("message")) or ""
            self.steps.append(
                {"type": "assistant", "text": text, "at": at, "model": self._model_now()}
                | {"_mirror": "assistant"}
            )
            if own:
                self.last_agent_event = text
                self.error_pending = False
        elif ptype in ("agent_reasoning", "agent_reasoning_raw_content"):
            text = _str(p.get("text")) or ""
            if text:
                self.steps.append(
                    {"type": "thinking", "text": text, "at": at, "_mirror": "thinking"}
                )
        elif ptype == "task_complete":
            if own:
                message = _str(p.get("last_agent_message"))
                if message:
                    self.task_message = message
                error = p.get("error")
                if error:
                    self.task_error = True
                    self.steps.append(_event("error", _error_text(error), at))
        elif ptype == "turn_aborted":
            reason = _str(p.get("reason")) or "interrupted"
            self.steps.append(_event("interrupted", reason, at))
            if own:
                self.interrupted = True
        elif ptype == "thread_rolled_back":
            n = p.get("num_turns")
            self.steps.append(_event("rollback", f"{n} turn(s) rolled back", at))
        elif ptype == "error":
            self.steps.append(_event("error", _str(p.get("message")) or "", at))
            if own:
                self.error_pending = True
        elif ptype == "exec_command_end":
            self._exec_end(p, call_id, at)
        elif ptype == "patch_apply_end":
            self._patch_end(p, call_id, at)
        elif ptype == "mcp_tool_call_end":
            self._mcp_end(p, call_id, at)
        elif ptype == "web_search_end":
            step = _tool(
                call_id, "web_search", {"query": p.get("query"), "action": p.get("action")}, at
            )
            step["_mirror"] = "web_search"
            self.steps.append(step)
        elif ptype == "view_image_tool_call":
            path = _str(p.get("path"))
            if path:
                self.files.setdefault(_resolve(path, self.cwd()), None)
        elif ptype == "context_compacted":
            self.steps.append(_event("compact", "", at) | {"_mirror": "compact"})
        elif ptype in ("entered_review_mode", "exited_review_mode"):
            self.steps.append(_event("review", _review_text(p), at))
        elif ptype == "undo_completed":
            self.steps.append(_event("undo", _str(p.get("message")) or "", at))
        elif ptype in _SUBAGENT_EVENTS:
            self.steps.append(_event("subagent", _subagent_text(p), at))
        elif ptype == "item_completed":
            self._item_completed(_dict(p.get("item")), at)

    def _exec_end(self, p: dict[str, Any], call_id: str, at: str | None) -> None:
        cwd = _str(p.get("cwd")) or self.cwd()
        self._reads(p.get("parsed_cmd"), cwd)
        command = p.get("command")
        if p.get("source") == "user_shell" and call_id not in self.calls:
            shown = (
                " ".join(c for c in command if isinstance(c, str))
                if isinstance(command, list)
                else ""
            )
            self.steps.append(_event("user_shell", shown, at))
            return
        step = self.calls.get(call_id) if call_id else None
        if step is None:
            step = self._step_for(call_id, "exec_command", at)
            step["input"] = {"command": command, "cwd": p.get("cwd")}
        code = p.get("exit_code")
        if (isinstance(code, int) and not isinstance(code, bool) and code != 0) or p.get(
            "status"
        ) in ("failed", "declined"):
            step["is_error"] = True
        if step["output"] is None:
            out = _str(p.get("aggregated_output")) or _str(p.get("formatted_output"))
            if out is not None:
                step["output"] = out

    def _reads(self, parsed: Any, cwd: str | None) -> None:
        if not isinstance(parsed, list):
            return
        for entry in parsed:
            if isinstance(entry, dict) and entry.get("type") == "read":
                path = _str(entry.get("path"))
                if path:
                    self.files.setdefault(_resolve(path, cwd), None)

    def _patch_end(self, p: dict[str, Any], call_id: str, at: str | None) -> None:
        ok = p.get("success") is not False
        paths: list[str] = []
        for path, change in _dict(p.get("changes")).items():
            paths.append(path)
            move = _str(_dict(change).get("move_path"))
            if move:
                paths.append(move)
        step = self.calls.get(call_id) if call_id else None
        if step is None:
            step = self._step_for(call_id, "apply_patch", at)
            step["input"] = {"changes": sorted(_dict(p.get("changes")))}
        step["_edits"] = paths if ok else []
        if not ok:
            step["is_error"] = True
        if step["output"] is None:
            out = "\n".join(s for s in (_str(p.get("stdout")), _str(p.get("stderr"))) if s)
            step["output"] = out

    def _mcp_end(self, p: dict[str, Any], call_id: str, at: str | None) -> None:
        inv = _dict(p.get("invocation"))
        server, tool = _str(inv.get("server")) or "", _str(inv.get("tool")) or ""
        name = f"mcp__{server}__{tool}"
        step = self.calls.get(call_id) if call_id else None
        if step is None:
            step = self._step_for(call_id, name, at)
            args = inv.get("arguments")
            step["input"] = args if isinstance(args, dict) else {"arguments": args}
        elif not step["name"].startswith("mcp__"):
            step["name"] = name
        self.taint_hint = True
        result = _dict(p.get("result"))
        if "Err" in result:
            step["is_error"] = True
            text = _error_text(result["Err"])
        else:
            ok = _dict(result.get("Ok")) or result
            if ok.get("isError") is True:
                step["is_error"] = True
            text, _ = _output(ok.get("content"))
        if step["output"] is None or not step["output"]:
            step["output"] = text

    def _item_completed(self, item: dict[str, Any], at: str | None) -> None:
        itype = item.get("type")
        if itype == "Plan":
            self.steps.append(_event("plan", _str(item.get("text")) or "", at))
        elif itype == "CommandExecution":
            self._reads(item.get("parsed_cmd"), _str(item.get("cwd")) or self.cwd())
        elif itype == "FileChange":
            for path in _dict(item.get("changes")):
                self.edit_hints.setdefault(path, None)
        elif itype == "McpToolCall" or (
            itype == "Extension" and _dict(item.get("action")).get("type") is not None
        ):
            self.taint_hint = True

    # ---------------------------------------------------------------- the record

    def record(self, rolled_back: bool, problems: list[Problem]) -> dict[str, Any] | None:
        session = self.session
        path = session.path
        asked_at = self.asked_at
        if asked_at is None:
            if self.earlier_time is not None:
                asked_at, where = self.earlier_time
                problems.append(
                    Problem(
                        str(path),
                        self.prompt_line,
                        f"prompt has no usable timestamp; asked_at taken from line {where}",
                    )
                )
            elif self.first_time is not None:
                asked_at = self.first_time
                problems.append(
                    Problem(
                        str(path),
                        self.prompt_line,
                        "prompt has no usable timestamp; asked_at taken from a later line",
                    )
                )
            else:
                problems.append(
                    Problem(str(path), self.prompt_line, "turn has no usable timestamp; skipped")
                )
                return None

        cwd = self.cwd()
        steps = [s for s in self.steps if "_mirror" not in s or s["_mirror"] not in self.primary]
        edited: dict[str, None] = {}
        tools: dict[str, int] = {}
        tainted = self.taint_hint
        for step in steps:
            if step["type"] != "tool":
                continue
            name = step["name"]
            if name:
                tools[name] = tools.get(name, 0) + 1
                tainted = tainted or is_untrusted_tool(name)
            edits = step.get("_edits")
            if isinstance(edits, list):
                for p in edits:
                    edited.setdefault(p, None)
            elif not step["is_error"] and (patch := _patch_text(step)):
                base = _str(_dict(step["input"]).get("workdir"))
                base = _resolve(base, cwd) if base else cwd
                for m in _PATCH_HEADER.finditer(patch):
                    edited.setdefault(_resolve(m.group(1), base), None)
        for p in self.edit_hints:
            edited.setdefault(p, None)
        if rolled_back:
            steps.append(_event("rolled_back", "undone by a later thread_rolled_back", None))
        steps = [{k: v for k, v in s.items() if not k.startswith("_")} for s in steps]

        if self.interrupted:
            status = "interrupted"
        elif self.task_error or self.error_pending:
            status = "failed"
        else:
            status = "completed"
        answered = (
            self.final_answer
            or self.task_message
            or self.last_assistant
            or self.last_agent_event
            or ""
        )

        extra = session.extra()
        if rolled_back:
            extra["rolled_back"] = True
        if self.saw_task and not self.task_ended:
            extra["unfinished"] = True

        turn: dict[str, Any] = {
            "turn_id": self._turn_id(),
            "session_id": session.session_id,
            "project": session.project,
            "asked_at": asked_at,
            "asked": self.asked,
            "answered": answered,
            "files": list(self.files),
            "edited": list(edited),
            "tools": tools,
            "tainted": tainted,
            "model": self.model or self.inherited_model,
            "agent": AGENT,
            "status": status,
            "answered_at": self.last_time,
            "cwd": cwd,
            "subagent": session.session_id if session.is_subagent() else None,
            "source": {
                "format": FORMAT,
                "file": str(path),
                "line": self.prompt_line,
                "end_line": self.last_line,
                "offset": self.prompt_offset,
            },
            "steps": steps,
            "raw": self.raw,
        }
        if extra:
            turn["extra"] = extra
        return turn

    def _turn_id(self) -> str:
        session = self.session
        fallback = f"{session.session_id}-{self.ordinal}"
        tid = self.prompt_codex_id if _valid_id(self.prompt_codex_id) else None
        tid = tid or fallback
        if tid in session.used_ids:
            tid = f"{tid}-{self.ordinal}"
        if not _valid_id(tid) or tid in session.used_ids:
            tid = fallback
        session.used_ids.add(tid)
        self.assigned_id = tid
        return tid


def _error_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _review_text(p: dict[str, Any]) -> str:
    out = _dict(p.get("review_output"))
    for value in (
        out.get("overall_explanation"),
        p.get("user_facing_hint"),
        p.get("prompt"),
    ):
        if isinstance(value, str) and value:
            return value
    return str(p.get("type"))


def _subagent_text(p: dict[str, Any]) -> str:
    text = str(p.get("type"))
    nickname = _str(p.get("new_agent_nickname")) or _str(p.get("receiver_agent_nickname"))
    if nickname:
        text += f": {nickname}"
    prompt = _str(p.get("prompt"))
    return f"{text}\n{prompt}" if prompt else text


# --------------------------------------------------------------------------- cutting


class _Cutter:
    """Cuts a stream of lines into turns (see the module doc). ``feed`` returns a
    turn when a new prompt closes it; ``close`` returns the last one.

    Each turn remembers where its first line starts and what the lines before
    it said (:meth:`_mark`), so a later import of the grown file can start
    there (see :func:`parse_file`)."""

    def __init__(self, session: _Session, light: bool, state: dict[str, Any] | None = None) -> None:
        self.session = session
        self.light = light
        self.turn = _Turn(session, light)  # the first turn, before its prompt
        self.pending: list[_Line] = []  # opening lines of what may be a new turn
        self.pending_mark: dict[str, Any] | None = None
        self.prompts = 0
        self.rolled: set[int] = set()  # prompts a rollback undid
        #: the task running before the first line read (a resumed read)
        self.running: str | None = None
        if state is not None:
            self.prompts = int(state.get("prompts", 0))
            self.rolled = {int(n) for n in state.get("rolled", [])}
            self.running = _str(state.get("running"))

    def _mark(self, line: _Line) -> dict[str, Any] | None:
        """What a turn starting at ``line`` needs of the lines before it."""
        if self.light:
            return None
        mark = self.session.mark()
        mark.update(
            offset=line.offset,
            line=line.lineno,
            prompts=self.prompts,
            rolled=sorted(self.rolled),
            running=self.turn.running() or self.running,
        )
        return mark

    def _roll_back(self, n: int) -> None:
        """Undo the last ``n`` prompts still in effect."""
        i = self.prompts
        while n > 0 and i >= 1:
            if i not in self.rolled:
                self.rolled.add(i)
                n -= 1
            i -= 1

    def _flush(self, role: str) -> None:
        for line in self.pending:
            self.turn.add(line, role)
        self.pending = []
        self.pending_mark = None

    def _open(self, line: _Line, mark: dict[str, Any] | None) -> None:
        if self.pending:
            self._flush("foreign")
        self.turn.in_foreign = False
        self.pending = [line]
        self.pending_mark = mark

    def feed(self, line: _Line) -> _Turn | None:
        kind, text = line.classified()
        mark = self._mark(line) if kind in _MAYBE_START else None
        self.session.observe(line)
        turn = self.turn
        if kind == "rollback":
            n = _dict((line.obj or {}).get("payload")).get("num_turns")
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                self._roll_back(n)
        if kind in ("E", "R"):
            if turn.pairs(kind, text):
                self._flush("own")
                turn.add(line, "own", sig=kind)
                return None
            done: _Turn | None = None
            running = turn.running() if turn.started else self.running
            if turn.started:
                done = turn
                self.turn = turn = _Turn(self.session, self.light)
                turn.start_mark = self.pending_mark if self.pending else mark
            self._flush("open")
            self.prompts += 1
            turn.ordinal = self.prompts
            turn.in_foreign = False
            turn.add(line, "own", sig=kind)
            # a prompt typed while a task ran is a turn of that task
            turn.prompt_codex_id = turn.codex_id or running
            self.running = None
            return done
        if kind == "task_started":
            if not self.pending and turn.owns_task_start(line):
                turn.add(line, "own")
            else:
                self._open(line, mark)
            return None
        if kind == "turn_context" and not self.pending:
            tid = _turn_id_of(line.obj)
            if turn.started and turn.codex_id and tid and tid != turn.codex_id:
                self._open(line, mark)
                return None
        if self.pending:
            if kind == "activity":
                self._flush("foreign")
                turn.in_foreign = True
            elif kind == "end":
                self.pending.append(line)
                self._flush("foreign")
                return None
            else:
                self.pending.append(line)
                return None
        turn.add(line, turn.mode())
        if kind == "end" and turn.in_foreign:
            turn.in_foreign = False
        return None

    def close(self) -> _Turn | None:
        if self.pending:
            self._flush("foreign")
        return self.turn if self.turn.started else None


#: the kinds of line a turn may start at
_MAYBE_START = frozenset({"E", "R", "task_started", "turn_context"})


def _rollback_pass(path: pathlib.Path, redact: Redact, resume: Resume | None) -> set[int] | None:
    """The prompts (by position) a ``thread_rolled_back`` undoes: a first,
    counting pass, only for a file that mentions one (from ``resume`` on, when
    given); None when it does not."""
    if not _mentions(path, _ROLLBACK_MARK, resume.offset if resume else 0):
        return None
    session = _Session(path, redact)
    state = resume.state if resume else None
    if state is not None:
        session.restore(state)
    cutter = _Cutter(session, light=True, state=state)
    for line in _read_lines(path, redact, [], None, resume, _legacy_of(state)):
        cutter.feed(line)
    return cutter.rolled


# --------------------------------------------------------------------------- parsing


def _legacy_of(state: dict[str, Any] | None) -> dict[str, str | None]:
    """What a resumed read knows of a rollout from before the envelope."""
    legacy = (state or {}).get("legacy")
    return dict(legacy) if isinstance(legacy, dict) else {}


def parse_file(
    path: pathlib.Path,
    redact: Redact,
    progress: Progress | None = None,
    resume: Resume | None = None,
) -> Iterator[Parsed]:
    """Yield turn records and Problems for one Codex rollout file, then its
    SessionMeta, then where a later import may resume: the start of its last
    turn, with what the lines before it said (the session, the model and cwd in
    effect, the prompts counted and rolled back, the turn ids taken).

    A resumed read starts there. When the lines read from there roll back a
    prompt before it (a ``thread_rolled_back`` reaching past the resume
    point), the whole file is read again instead, so those turns are marked."""
    path = pathlib.Path(path)
    if resume is not None and not resume.state:
        resume = None  # the start of the file
    rolled_first = _rollback_pass(path, redact, resume)
    if resume is not None and rolled_first is not None:
        before = {int(n) for n in resume.state.get("rolled", [])}
        upto = int(resume.state.get("prompts", 0))
        if any(n <= upto and n not in before for n in rolled_first):
            resume = None  # a rollback undid turns read before: read them again
            rolled_first = _rollback_pass(path, redact, None)
    rolled_first = rolled_first or set()
    session = _Session(path, redact)
    state = resume.state if resume is not None else None
    if state is not None:
        session.restore(state)
    cutter = _Cutter(session, light=False, state=state)
    if resume is not None:
        cutter.turn.start_mark = dict(resume.state, offset=resume.offset, line=resume.line)
    problems: list[Problem] = []
    legacy = _legacy_of(state)

    def emit(turn: _Turn) -> Iterator[Parsed]:
        rolled = turn.ordinal in rolled_first or turn.ordinal in cutter.rolled
        record = turn.record(rolled, problems)
        yield from problems
        problems.clear()
        if record is not None:
            yield record

    for line in _read_lines(path, redact, problems, progress, resume, legacy):
        yield from problems
        problems.clear()
        done = cutter.feed(line)
        if done is not None:
            yield from emit(done)
    yield from problems
    problems.clear()
    last = cutter.close()
    if last is not None:
        yield from emit(last)
    yield SessionMeta(session_id=session.session_id, title=session.title, project=session.project)
    mark = last.start_mark if last is not None else None
    if last is None or mark is None:
        yield Resume(0, 1, {})  # no turn, or one that starts the file: read it all again
    else:
        state = {k: v for k, v in mark.items() if k not in ("offset", "line")}
        state.update(session.fixed(drop=last.assigned_id))
        if legacy:
            state["legacy"] = legacy
        yield Resume(int(mark["offset"]), int(mark["line"]), state)
