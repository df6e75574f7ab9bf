"""Claude Code session files -> turn records.

Claude Code writes one JSONL file per session under
``~/.claude/projects/<project-slug>/<sessionId>.jsonl`` and one file per sub-agent,
either next to the session files (``agent-<hex>.jsonl``, CLI <= 2.0) or under
``<sessionId>/subagents/agent-<id>.jsonl`` (2.1+, optional ``agent-<id>.meta.json``).
See FORMATS.md section 1 (shared notes) for the observed format.

This is a pure parser: :func:`parse_file` reads one file and yields turn records
(see :mod:`histstore.turn`), :class:`~histstore.importers.Problem` for lines it
cannot read, and one :class:`~histstore.importers.SessionMeta` per file.

How the file is cut into turns
------------------------------
* Every raw line is passed through ``redact`` first, then parsed, so every string
  that reaches a turn is already redacted.
* A turn starts at a *prompt*: a ``user`` line that is not ``isMeta``,
  ``isCompactSummary`` or ``isVisibleInTranscriptOnly``, whose content is a string
  or holds a ``text``/``image`` block, and that is not a tool-result carrier, a
  caveat, a slash-command / local-command wrapper (``<command-name>``,
  ``<command-message>``, ``<command-args>``, ``<local-command-stdout>``,
  ``<local-command-stderr>``, ``<local-command-caveat>``), a ``!`` shell-mode
  wrapper (``<bash-input>``, ``<bash-stdout>``, ``<bash-stderr>``), a ``#`` memory
  wrapper (``<user-memory-input>``) or an interrupt marker. In a main session file
  the line must also have ``isSidechain`` false; in a sub-agent file (named
  ``agent-*.jsonl`` or whose first envelope line has ``isSidechain: true``) the
  sidechain flag is ignored, so the first user line (the Task prompt) is a prompt.
  The shell-mode and memory wrappers are not in the observed-format rule, but they
  are local input with no agent reply, so they never start a turn either; they
  become ``command`` events.
* Every other line belongs to a turn: to the turn of its ``parentUuid`` (or, for
  a compaction boundary, its ``logicalParentUuid``) when that uuid is known, else
  to the most recent prompt's turn in file order. So after a rewind/fork each
  prompt still makes a turn and each record goes to the branch it descends from.
* Lines before the first prompt (snapshots, system lines, ...) and ``summary``
  lines belong to no turn's content but are put in the *first* turn's ``raw`` so
  nothing is lost; a file without a prompt yields no turn (it only yields its
  :class:`SessionMeta`).
* Sub-agent files whose prompt line is missing (they start with the assistant
  reply, or are a lone "warmup" reply): the records before the first prompt make
  one turn with ``asked = ""``, ``turn_id`` = the first record's uuid and the usual
  status (normally ``completed``), provided they hold an assistant message.
* Sub-agent turns belong to the parent session (the ``sessionId`` in the lines)
  and carry ``subagent`` = the lines' ``agentId`` (else the ``agent-<id>`` file
  name). A ``.meta.json`` beside the file goes to ``extra["subagent_meta"]``.

Fields
------
* ``project`` is Claude Code's launch dir: the cwd of the first record of the file
  that has one, else the project folder's name (the slug). For a sub-agent file
  it is the first cwd of the *parent* session file when that file is found
  beside it (a sub-agent may run in its own worktree; its turns still belong to
  the parent's project), else the sub-agent file's own first cwd. The turn keeps
  that directory as written; a view that scopes by project (hs log --project,
  recall) maps both sides through histstore.project.project_key, so a re-import
  never depends on what this machine's disk holds.
* One assistant API message written as several lines (same ``message.id``) is
  merged: ``answered`` is the last ``text`` block of the last assistant message of
  the turn, "" when that message has no text or is an API error.
* ``answered_at`` is the timestamp of the last timestamped record of the turn
  (the prompt itself when nothing followed it).
* ``status``: ``interrupted`` when the turn holds an interrupt marker, else
  ``failed`` when its last assistant message is an API error or it has
  ``system/api_error`` lines and no answer, else ``completed``.
* Lines with ``isSidechain: true`` inside a *main* file (old CLIs) stay in ``raw``
  but add no steps, tools or files to the main turn.
* Session title: the last ``ai-title`` record of the file, else the first
  ``summary`` line (summary lines usually title an earlier conversation this one
  continued).
"""

from __future__ import annotations

import json
import pathlib
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
    SessionMeta,
)
from histstore.history.turn import is_untrusted_tool, normalize_time
from histstore.store.redact import redact_json_line

__all__ = ["find_files", "is_claude_code_line", "parse_file"]

AGENT = "claude-code"
FORMAT = "claude-code"

_ENVELOPE_TYPES = frozenset({"user", "assistant", "system", "progress", "attachment"})
_SESSION_TYPES = frozenset({"permission-mode", "last-prompt", "ai-title", "queue-operation"})

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

_READ_TOOLS = frozenset({"Read", "NotebookRead"})
_EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})

_PARENT_SCAN_LINES = 200

_AGENT_FILE = re.compile(r"^agent-(.+)$")


# --------------------------------------------------------------------------- detection


def is_claude_code_line(obj: dict[str, Any]) -> bool:
    """True when one parsed JSON line looks like a Claude Code session record."""
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    if not isinstance(kind, str):
        return False
    if kind in _ENVELOPE_TYPES:
        return "uuid" in obj and ("sessionId" in obj or "parentUuid" in obj)
    if kind == "summary":
        return "summary" in obj and ("leafUuid" in obj or len(obj) <= 3)
    if kind == "file-history-snapshot":
        return "snapshot" in obj or "messageId" in obj
    if kind in _SESSION_TYPES:
        return "sessionId" in obj
    return False


def find_files(root: pathlib.Path) -> list[pathlib.Path]:
    """Every ``*.jsonl`` under a projects folder or one project folder, sorted:
    session files, legacy ``agent-*.jsonl`` and ``<session>/subagents/agent-*.jsonl``."""
    root = pathlib.Path(root)
    if root.is_file():
        return [root] if root.suffix == ".jsonl" else []
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file())


# --------------------------------------------------------------------------- helpers


def _str(value: Any) -> str | None:
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


# --------------------------------------------------------------------------- reading


@dataclass
class _Line:
    lineno: int
    text: str
    obj: dict[str, Any]


@dataclass
class _Group:
    """The lines of one turn, before they are turned into a record."""

    prompt: _Line | None  # None: a sub-agent turn whose prompt line is missing
    lines: list[_Line] = field(default_factory=list)  # own records, file order
    extra_raw: list[tuple[int, str]] = field(default_factory=list)  # preamble, summaries


def _read_lines(
    path: pathlib.Path, redact: Redact, problems: list[Problem], progress: Progress | None = None
) -> Iterator[_Line]:
    unreported = 0
    with open(path, "rb") as fh:
        for lineno, data in enumerate(fh, start=1):
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
            text = text.rstrip("\r\n")
            if not text.strip():
                continue
            try:
                text, obj = redact_json_line(redact, text)
            except (ValueError, RecursionError) as exc:
                problems.append(Problem(str(path), lineno, f"not valid JSON: {exc}"))
                continue
            if not isinstance(obj, dict):
                problems.append(Problem(str(path), lineno, "not a JSON object"))
                continue
            yield _Line(lineno, text, obj)
    if progress is not None and unreported:
        progress(unreported)


def _subagent_layout(path: pathlib.Path) -> str | None:
    """``"nested"`` for <session>/subagents/agent-*.jsonl, ``"legacy"`` for agent-*.jsonl."""
    if not path.name.startswith("agent-"):
        return None
    if path.parent.name == "subagents":
        return "nested"
    return "legacy"


def _project_slug(path: pathlib.Path) -> str:
    if _subagent_layout(path) == "nested" and len(path.parents) >= 3:
        return path.parents[2].name
    return path.parent.name


def _parent_cwd(
    path: pathlib.Path, layout: str | None, session_id: str, redact: Redact
) -> str | None:
    """The launch dir of a sub-agent's parent session: the first cwd in its file."""
    if layout == "nested" and len(path.parents) >= 2:
        parent = path.parents[1].with_name(path.parents[1].name + ".jsonl")
    else:
        parent = path.with_name(session_id + ".jsonl")
    if parent == path:
        return None
    try:
        with open(parent, "rb") as fh:
            for lineno, data in enumerate(fh):
                if lineno >= _PARENT_SCAN_LINES:
                    break
                if b'"cwd"' not in data:
                    continue
                try:
                    obj = json.loads(redact(data.decode("utf-8", errors="replace")))
                except (ValueError, RecursionError):
                    continue
                if isinstance(obj, dict) and isinstance(obj.get("cwd"), str) and obj["cwd"]:
                    return str(obj["cwd"])
    except OSError:
        return None
    return None


def _read_meta(path: pathlib.Path, redact: Redact, problems: list[Problem]) -> Any:
    meta_path = path.with_name(path.stem + ".meta.json")
    try:
        if not meta_path.is_file():
            return None
        text = redact(meta_path.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        problems.append(Problem(str(meta_path), 0, f"cannot read: {exc}"))
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        problems.append(Problem(str(meta_path), 1, f"not valid JSON: {exc}"))
        return None


# --------------------------------------------------------------------------- parsing


def parse_file(
    path: pathlib.Path, redact: Redact, progress: Progress | None = None
) -> Iterator[Parsed]:
    """Yield turn records, Problems and SessionMeta for one Claude Code session file
    (a main session file or a sub-agent file, either layout)."""
    path = pathlib.Path(path)
    problems: list[Problem] = []
    layout = _subagent_layout(path)
    sub_mode: bool | None = True if layout else None

    groups: list[_Group] = []
    uuid_group: dict[str, int] = {}
    prompt_uuids: set[str] = set()
    current: int | None = None
    preamble: list[_Line] = []
    summaries: list[_Line] = []

    first_cwd: str | None = None
    first_session: str | None = None
    first_agent: str | None = None
    summary_title: str | None = None
    ai_title: str | None = None

    for line in _read_lines(path, redact, problems, progress):
        yield from problems
        problems.clear()
        obj = line.obj
        kind = obj.get("type")
        if sub_mode is None and "isSidechain" in obj:
            sub_mode = obj.get("isSidechain") is True
        if first_cwd is None:
            first_cwd = _str(obj.get("cwd")) or None
        if first_session is None:
            first_session = _str(obj.get("sessionId")) or None
        if first_agent is None:
            first_agent = _str(obj.get("agentId")) or None

        if kind == "summary":
            title = _str(obj.get("summary"))
            if summary_title is None and title:
                summary_title = title
            summaries.append(line)
            continue
        if kind == "ai-title":
            title = _str(obj.get("aiTitle"))
            if title:
                ai_title = title

        uuid = _str(obj.get("uuid"))
        if uuid and uuid not in prompt_uuids and is_prompt(obj, sidechain_ok=bool(sub_mode)):
            prompt_uuids.add(uuid)
            groups.append(_Group(prompt=line, lines=[line]))
            current = len(groups) - 1
            uuid_group[uuid] = current
            continue

        target = current
        for key in ("parentUuid", "logicalParentUuid"):
            parent = _str(obj.get(key))
            if parent and parent in uuid_group:
                target = uuid_group[parent]
                break
        if target is None:
            preamble.append(line)
            continue
        groups[target].lines.append(line)
        if uuid and uuid not in uuid_group:
            uuid_group[uuid] = target
    yield from problems
    problems.clear()

    # A sub-agent whose prompt line is missing: its opening records make a turn.
    if sub_mode and any(ln.obj.get("type") == "assistant" for ln in preamble):
        groups.insert(0, _Group(prompt=None, lines=preamble))
        preamble = []

    if groups:
        first = groups[0]
        first.extra_raw.extend((ln.lineno, ln.text) for ln in preamble)
        first.extra_raw.extend((ln.lineno, ln.text) for ln in summaries)

    session_fallback = path.stem
    if layout == "nested" and len(path.parents) >= 2:
        session_fallback = path.parents[1].name
    # names taken from the file system are text from outside too
    session_id = first_session or redact(session_fallback)
    project = None
    if sub_mode:
        project = _parent_cwd(path, layout, session_id, redact)
    project = project or first_cwd or redact(_project_slug(path))

    subagent: str | None = None
    subagent_meta: Any = None
    if sub_mode:
        m = _AGENT_FILE.match(path.stem)
        subagent = first_agent or redact(m.group(1) if m else path.stem)
        subagent_meta = _read_meta(path, redact, problems)
        yield from problems
        problems.clear()

    yield SessionMeta(session_id=session_id, title=ai_title or summary_title, project=project)

    tool_steps: dict[str, dict[str, Any]] = {}
    for group in groups:
        turn = _build_turn(
            group,
            path=path,
            session_id=session_id,
            project=project,
            sub_mode=bool(sub_mode),
            subagent=subagent,
            subagent_meta=subagent_meta,
            tool_steps=tool_steps,
            problems=problems,
        )
        yield from problems
        problems.clear()
        if turn is not None:
            yield turn


@dataclass
class _AssistantMsg:
    texts: list[str] = field(default_factory=list)
    error: bool = False


def _build_turn(
    group: _Group,
    *,
    path: pathlib.Path,
    session_id: str,
    project: str,
    sub_mode: bool,
    subagent: str | None,
    subagent_meta: Any,
    tool_steps: dict[str, dict[str, Any]],
    problems: list[Problem],
) -> dict[str, Any] | None:
    lines = group.lines
    if not lines:
        return None
    head = group.prompt or lines[0]
    prompt_obj = head.obj

    steps: list[dict[str, Any]] = []
    files: dict[str, None] = {}
    edited: dict[str, None] = {}
    tools: dict[str, int] = {}
    tainted = False
    model: str | None = None
    interrupted = False
    api_error_lines = False
    messages: dict[str, _AssistantMsg] = {}
    last_msg: str | None = None
    cwd = _str(prompt_obj.get("cwd"))
    last_time: str | None = None

    asked = ""
    for line in lines:
        obj = line.obj
        at = _time(obj.get("timestamp"))
        if at is not None:
            last_time = at
        if cwd is None:
            cwd = _str(obj.get("cwd"))
        kind = obj.get("type")
        if obj.get("isSidechain") is True and not sub_mode:
            continue  # an old CLI's sub-agent record inside the main file: raw only
        msg = _message(obj)
        content = msg.get("content")

        if line is group.prompt:
            asked = _user_text(content)
            if asked or isinstance(content, str):
                steps.append({"type": "user", "text": asked, "at": at})
            for block in _blocks(content):
                if block.get("type") == "image":
                    steps.append(_image_step(block, at))
            continue

        if kind == "user":
            if obj.get("isCompactSummary"):
                steps.append(_event("compact", _user_text(content), at))
                continue
            if _is_tool_result_carrier(content):
                for block in _blocks(content):
                    btype = block.get("type")
                    if btype == "tool_result":
                        _tool_result(block, at, steps, tool_steps)
                    elif btype == "text":
                        text = _str(block.get("text")) or ""
                        if _is_interrupt(text):
                            interrupted = True
                            steps.append(_event("interrupted", text, at))
                        else:
                            steps.append({"type": "user", "text": text, "at": at})
                    elif btype == "image":
                        steps.append(_image_step(block, at))
                continue
            text = _user_text(content)
            if obj.get("isMeta") or obj.get("isVisibleInTranscriptOnly") or _is_caveat(text):
                steps.append(_event("meta", text, at))
            elif _is_command(text):
                steps.append(_event("command", text, at))
            elif _is_interrupt(text):
                interrupted = True
                steps.append(_event("interrupted", text, at))
            else:
                if text or isinstance(content, str):
                    steps.append({"type": "user", "text": text, "at": at})
                for block in _blocks(content):
                    if block.get("type") == "image":
                        steps.append(_image_step(block, at))
            continue

        if kind == "assistant":
            mid = _str(msg.get("id")) or _str(obj.get("uuid")) or f"line-{line.lineno}"
            line_model = _str(msg.get("model"))
            blocks = _blocks(content)
            if isinstance(content, str):
                blocks = [{"type": "text", "text": content}]
            texts = [
                b["text"]
                for b in blocks
                if b.get("type") == "text" and isinstance(b.get("text"), str)
            ]
            is_error = obj.get("isApiErrorMessage") is True or (
                line_model == "<synthetic>" and any(t.startswith("API Error") for t in texts)
            )
            entry = messages.setdefault(mid, _AssistantMsg())
            last_msg = mid
            if is_error:
                entry.error = True
                text = "\n".join(texts) or _error_text(obj.get("error"))
                steps.append(_event("api_error", text, at))
                continue
            if line_model and line_model != "<synthetic>":
                model = line_model
            for block in blocks:
                btype = block.get("type")
                if btype == "text":
                    text = _str(block.get("text")) or ""
                    entry.texts.append(text)
                    steps.append({"type": "assistant", "text": text, "at": at, "model": line_model})
                elif btype == "thinking":
                    text = _str(block.get("thinking")) or _str(block.get("text")) or ""
                    steps.append({"type": "thinking", "text": text, "at": at})
                elif btype == "tool_use":
                    tainted = (
                        _tool_use(block, at, steps, tool_steps, files, edited, tools) or tainted
                    )
            continue

        if kind == "system":
            subtype = obj.get("subtype")
            if subtype == "api_error":
                api_error_lines = True
                steps.append(_event("api_error", _error_text(obj.get("error")), at))
            elif subtype == "compact_boundary":
                steps.append(_event("compact", _str(obj.get("content")) or "", at))

    answered = ""
    last_error = False
    if last_msg is not None:
        entry = messages[last_msg]
        last_error = entry.error
        if not entry.error and entry.texts:
            answered = entry.texts[-1]

    if interrupted:
        status = "interrupted"
    elif last_error or (api_error_lines and not answered):
        status = "failed"
    else:
        status = "completed"

    asked_at = _time(prompt_obj.get("timestamp"))
    if asked_at is None:
        asked_at = next((t for ln in lines if (t := _time(ln.obj.get("timestamp")))), None)
    if asked_at is None:
        problems.append(Problem(str(path), head.lineno, "prompt has no usable timestamp; skipped"))
        return None

    turn_id = _str(prompt_obj.get("uuid"))
    if not turn_id:
        turn_id = next((u for ln in lines if (u := _str(ln.obj.get("uuid")))), None)
    if not turn_id:
        turn_id = f"{session_id}-L{head.lineno}"

    raw_pairs = [(ln.lineno, ln.text) for ln in lines] + group.extra_raw
    raw_pairs.sort(key=lambda p: p[0])

    turn: dict[str, Any] = {
        "turn_id": turn_id,
        "session_id": _str(prompt_obj.get("sessionId")) or session_id,
        "project": project,
        "asked_at": asked_at,
        "asked": asked,
        "answered": answered,
        "files": list(files),
        "edited": list(edited),
        "tools": tools,
        "tainted": tainted,
        "model": model,
        "agent": AGENT,
        "status": status,
        "answered_at": last_time,
        "cwd": cwd,
        "subagent": subagent,
        "source": {
            "format": FORMAT,
            "file": str(path),
            "line": head.lineno,
            "end_line": raw_pairs[-1][0],
        },
        "steps": steps,
        "raw": [text for _, text in raw_pairs],
    }
    if subagent_meta is not None:
        turn["extra"] = {"subagent_meta": subagent_meta}
    return turn


def _event(kind: str, text: str, at: str | None) -> dict[str, Any]:
    return {"type": "event", "kind": kind, "text": text, "at": at}


def _image_step(block: dict[str, Any], at: str | None) -> dict[str, Any]:
    source = block.get("source")
    src = source if isinstance(source, dict) else {}
    return {
        "type": "image",
        "media_type": _str(src.get("media_type")) or "",
        "data": _str(src.get("data")) or _str(src.get("url")) or "",
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
    tool_id = _str(block.get("id")) or ""
    if tool_id and tool_id in tool_steps and tool_steps[tool_id].get("name"):
        return False  # the same block written twice
    name = _str(block.get("name")) or ""
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
    target = _str(tool_input.get("file_path")) or _str(tool_input.get("notebook_path"))
    if target:
        if name in _READ_TOOLS:
            files.setdefault(target, None)
        elif name in _EDIT_TOOLS:
            edited.setdefault(target, None)
    return is_untrusted_tool(name)


def _tool_result(
    block: dict[str, Any],
    at: str | None,
    steps: list[dict[str, Any]],
    tool_steps: dict[str, dict[str, Any]],
) -> None:
    tool_id = _str(block.get("tool_use_id")) or ""
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
