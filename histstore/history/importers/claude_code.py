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
* A slash command (a user line whose text starts with ``<command-name>`` or
  ``<command-message>``) starts a turn when the agent worked on it: when an
  assistant line joins its group (``/init``, a skill, a custom command, whose
  long injected ``isMeta`` prompt follows the command line). Its ``asked`` is
  the command and its arguments as typed (``/init``, ``/review 12``). A command
  no assistant line follows (``/model``, ``/clear``, ``/cost``) is no turn: its
  lines go to the group they would have joined had it not been a candidate.
  Work an agent did is never outside a turn.
* Every other line belongs to a turn: to the turn of its ``parentUuid`` (or, for
  a compaction boundary, its ``logicalParentUuid``) when that uuid is known, else
  to the most recent prompt's turn in file order. So after a rewind/fork each
  prompt still makes a turn and each record goes to the branch it descends from.
* ``queue-operation`` lines (a prompt typed while the agent worked, written
  before the turn it opens) go to the turn the next prompt starts, raw only;
  those no prompt follows go to the latest prompt's turn.
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
  A sub-agent turn whose prompt line is missing takes its ``asked`` from the
  parent's call (``toolUseResult.prompt`` of the parent file's line whose
  ``toolUseResult.agentId`` names it; ``extra["asked_from"] = "parent"``); when
  no call names it, or its prompt is Claude Code's ``Warmup``, it is a warm-up
  (``extra["warmup"] = true``).
* The parent's side of the link: the tool step of a Task/Agent result line
  whose ``toolUseResult.agentId`` names a sub-agent gets ``subagent`` = that id,
  and the turn lists the sub-agents it started in ``extra["subagents"]``.

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
* Session title: the last ``ai-title`` record of the file, else the last
  ``summary`` line (the first often titles a warm-up or an earlier
  conversation this one continued). A sub-agent's file gives no title.
* The prompt's text is what the person typed: IDE context an extension sends
  with it (whole ``<ide_selection>``, ``<ide_opened_file>``, ... blocks, as text
  blocks of their own or at the start of the text) is not ``asked``; each block
  is a ``context`` event step before the ``user`` step, and stays in ``raw``.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from histstore.history.importers import (
    Parsed,
    Problem,
    Progress,
    Redact,
    Resume,
    SessionMeta,
)
from histstore.history.importers.claude_turn import (
    Group,
    Line,
    build_turn,
    is_command_prompt,
    is_prompt,
    text_or_none,
)
from histstore.history.importers.jsonl import json_lines
from histstore.store.fsutil import open_regular

__all__ = ["find_files", "is_claude_code_line", "parse_file"]


_ENVELOPE_TYPES = frozenset({"user", "assistant", "system", "progress", "attachment"})


_QUEUE = "queue-operation"


_SESSION_TYPES = frozenset({"permission-mode", "last-prompt", "ai-title", _QUEUE})


_PARENT_SCAN_LINES = 200


_AGENT_FILE = re.compile(r"^agent-(.+)$")


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


def _read_lines(
    path: pathlib.Path,
    redact: Redact,
    problems: list[Problem],
    progress: Progress | None = None,
    start: Resume | None = None,
) -> Iterator[Line]:
    """Every line of the file (from ``start``), redacted, then parsed. A last
    line without its newline that is not JSON yet is being written: it is
    left for the next import."""
    for line in json_lines(path, redact, problems, progress, start):
        if line.error is not None:
            if not line.unfinished:
                problems.append(Problem(str(path), line.lineno, line.error))
            continue
        if not isinstance(line.obj, dict):
            problems.append(Problem(str(path), line.lineno, "not a JSON object"))
            continue
        yield Line(line.lineno, line.text, line.obj, line.at)


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


def _plain_name(text: str) -> bool:
    """Whether ``text`` can name a file beside this one (no separator, not . or ..)."""
    return (
        bool(text)
        and "/" not in text
        and "\\" not in text
        and "\0" not in text
        and text not in (".", "..")
    )


def _parent_file(path: pathlib.Path, layout: str | None, session_id: str) -> pathlib.Path | None:
    """The session file a sub-agent's file belongs to (beside it, or two
    folders up for the nested layout)."""
    if layout == "nested" and len(path.parents) >= 2:
        parent = path.parents[1].with_name(path.parents[1].name + ".jsonl")
    else:
        if not _plain_name(session_id):
            return None  # an id no file can be named by (it is refused as an id later)
        parent = path.with_name(session_id + ".jsonl")
    return None if parent == path else parent


def _spawn_prompt(
    path: pathlib.Path, layout: str | None, session_id: str, agent_id: str, redact: Redact
) -> str | None:
    """What the parent's Task/Agent call asked the sub-agent ``agent_id``
    (``toolUseResult.prompt`` of the result naming it), for a sub-agent file
    whose prompt line is missing; None when no call names it (a warm-up)."""
    parent = _parent_file(path, layout, session_id)
    if parent is None:
        return None
    needle = agent_id.encode("utf-8")
    try:
        with open_regular(parent) as fh:
            for data in fh:
                if needle not in data or b'"toolUseResult"' not in data:
                    continue
                try:
                    obj = json.loads(redact(data.decode("utf-8", errors="replace")))
                except (ValueError, RecursionError):
                    continue
                result = obj.get("toolUseResult") if isinstance(obj, dict) else None
                if isinstance(result, dict) and result.get("agentId") == agent_id:
                    prompt = result.get("prompt")
                    return prompt if isinstance(prompt, str) else None
    except OSError:
        return None
    return None


def _parent_cwd(
    path: pathlib.Path, layout: str | None, session_id: str, redact: Redact
) -> str | None:
    """The launch dir of a sub-agent's parent session: the first cwd in its file."""
    parent = _parent_file(path, layout, session_id)
    if parent is None:
        return None
    try:
        with open_regular(parent) as fh:
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


@dataclass
class _Cut:
    """A file cut into turns' groups, and what its lines said of the session."""

    groups: list[Group] = field(default_factory=list)
    preamble: list[Line] = field(default_factory=list)
    summaries: list[Line] = field(default_factory=list)
    sub_mode: bool | None = None
    first_cwd: str | None = None
    first_session: str | None = None
    first_agent: str | None = None
    summary_title: str | None = None
    ai_title: str | None = None


#: what a resumed read needs of the lines before it (the file's first values)
_RESUME_FIELDS = (
    "sub_mode",
    "first_cwd",
    "first_session",
    "first_agent",
    "summary_title",
    "ai_title",
)


def _cut(
    lines: Iterator[Line], cut: _Cut, problems: list[Problem], queued: list[Line]
) -> Iterator[Problem]:
    """Read every line into ``cut``: a prompt starts a group; every other line
    goes to the group of its parent uuid, else the latest prompt's.

    A ``queue-operation`` line holds a prompt typed while the agent was busy:
    it is the next prompt, written early, so it goes to the group the next
    prompt starts (excluding that turn hides it with its turn); queue lines
    no prompt follows go to the latest prompt's group."""
    uuid_group: dict[str, int] = {}
    prompt_uuids: set[str] = set()
    current: int | None = None
    for line in lines:
        yield from problems
        problems.clear()
        obj = line.obj
        kind = obj.get("type")
        if cut.sub_mode is None and "isSidechain" in obj:
            cut.sub_mode = obj.get("isSidechain") is True
        cut.first_cwd = cut.first_cwd or text_or_none(obj.get("cwd")) or None
        cut.first_session = cut.first_session or text_or_none(obj.get("sessionId")) or None
        cut.first_agent = cut.first_agent or text_or_none(obj.get("agentId")) or None
        if kind == "summary":
            title = text_or_none(obj.get("summary"))
            if title and title.strip():
                cut.summary_title = title  # the last one: what the file came to be about
            cut.summaries.append(line)
            continue
        if kind == "ai-title":
            cut.ai_title = text_or_none(obj.get("aiTitle")) or cut.ai_title
        if kind == _QUEUE:
            queued.append(line)
            continue

        uuid = text_or_none(obj.get("uuid"))
        target = current
        for key in ("parentUuid", "logicalParentUuid"):
            parent = text_or_none(obj.get(key))
            if parent and parent in uuid_group:
                target = uuid_group[parent]
                break
        if uuid and uuid not in prompt_uuids:
            ok = bool(cut.sub_mode)
            command = is_command_prompt(obj, sidechain_ok=ok)
            if command or is_prompt(obj, sidechain_ok=ok):
                prompt_uuids.add(uuid)
                group = Group(
                    prompt=line, lines=[*queued, line], tentative=command, fallback=target
                )
                queued.clear()
                cut.groups.append(group)
                current = len(cut.groups) - 1
                uuid_group[uuid] = current
                continue
        if target is None:
            cut.preamble.append(line)
            continue
        cut.groups[target].lines.append(line)
        if uuid and uuid not in uuid_group:
            uuid_group[uuid] = target
    if current is None:
        cut.preamble.extend(queued)
    else:
        cut.groups[current].lines.extend(queued)
    yield from problems
    problems.clear()
    _settle(cut)


#: the resume state's key for the queue lines the re-read turn owns
_QUEUED = "queued"


def _queued_lines(
    path: pathlib.Path, redact: Redact, problems: list[Problem], resume: Resume | None
) -> list[Line]:
    """The queue lines before the resume point that belong to the turn read
    again (the resume state names them by offset and line number)."""
    spots = resume.state.get(_QUEUED) if resume is not None else None
    lines: list[Line] = []
    for offset, lineno in spots if isinstance(spots, list) else []:
        found = next(_read_lines(path, redact, problems, None, Resume(offset, lineno, {})), None)
        if found is not None and found.lineno == lineno and found.obj.get("type") == _QUEUE:
            lines.append(found)
    return lines


def _settle(cut: _Cut) -> None:
    """Slash commands the agent did not work on (``/model``, ``/clear``: no
    line of the agent follows them) are no turns: their lines go back to the
    group they would have joined, or before the first prompt."""
    keep: list[int] = []
    into: dict[int, int | None] = {}  # a dropped group -> where its lines went
    for i, g in enumerate(cut.groups):
        if g.tentative and not any(ln.obj.get("type") == "assistant" for ln in g.lines):
            to = g.fallback
            while to is not None and to in into:
                to = into[to]
            into[i] = to
        else:
            keep.append(i)
    if not into:
        return
    for i, to in into.items():
        lines = cut.groups[i].lines
        if to is None:
            cut.preamble.extend(lines)
        else:
            cut.groups[to].lines.extend(lines)
    for i in keep:
        cut.groups[i].lines.sort(key=lambda ln: ln.lineno)
    cut.preamble.sort(key=lambda ln: ln.lineno)
    cut.groups = [cut.groups[i] for i in keep]


def parse_file(
    path: pathlib.Path,
    redact: Redact,
    progress: Progress | None = None,
    resume: Resume | None = None,
) -> Iterator[Parsed]:
    """Yield turn records, Problems and SessionMeta for one Claude Code session file
    (a main session file or a sub-agent file, either layout), then where a later
    import may resume: the start of its last turn. A resumed read starts there,
    with the values the lines before gave (session, launch directory, titles);
    a line after it whose parent is in an earlier turn goes to the re-read turn."""
    path = pathlib.Path(path)
    problems: list[Problem] = []
    layout = _subagent_layout(path)
    cut = _Cut(sub_mode=True if layout else None)
    if resume is not None:
        for key in _RESUME_FIELDS:
            if key in resume.state:
                setattr(cut, key, resume.state[key])
    queued = _queued_lines(path, redact, problems, resume)
    yield from _cut(_read_lines(path, redact, problems, progress, resume), cut, problems, queued)
    groups, preamble, sub_mode = cut.groups, cut.preamble, cut.sub_mode
    last = next((g for g in reversed(groups) if g.prompt is not None), None)
    state: dict[str, Any] = {key: getattr(cut, key) for key in _RESUME_FIELDS}
    after = resume
    if last is not None and last.prompt is not None:
        # a later import reads from the last prompt again, and first the
        # queue lines before it that are its own (by where they are: no text)
        before = [[ln.offset, ln.lineno] for ln in last.lines if ln.lineno < last.prompt.lineno]
        if before:
            state[_QUEUED] = before
        after = Resume(last.prompt.offset, last.prompt.lineno, state)

    # A sub-agent whose prompt line is missing: its opening records make a turn.
    if sub_mode and any(ln.obj.get("type") == "assistant" for ln in preamble):
        groups.insert(0, Group(prompt=None, lines=preamble))
        preamble = []

    if groups:
        first = groups[0]
        first.extra_raw.extend((ln.lineno, ln.text) for ln in preamble)
        first.extra_raw.extend((ln.lineno, ln.text) for ln in cut.summaries)

    session_fallback = path.stem
    if layout == "nested" and len(path.parents) >= 2:
        session_fallback = path.parents[1].name
    # names taken from the file system are text from outside too
    session_id = cut.first_session or redact(session_fallback)
    project = None
    if sub_mode:
        project = _parent_cwd(path, layout, session_id, redact)
    project = project or cut.first_cwd or redact(_project_slug(path))

    subagent: str | None = None
    subagent_meta: Any = None
    if sub_mode:
        m = _AGENT_FILE.match(path.stem)
        subagent = cut.first_agent or redact(m.group(1) if m else path.stem)
        subagent_meta = _read_meta(path, redact, problems)
        yield from problems
        problems.clear()

    # a sub-agent's file never titles its parent's session
    title = None if sub_mode else cut.ai_title or cut.summary_title
    yield SessionMeta(session_id=session_id, title=title, project=project)

    spawn_prompt: str | None = None
    if sub_mode and subagent and groups and groups[0].prompt is None:
        spawn_prompt = _spawn_prompt(path, layout, session_id, subagent, redact)

    tool_steps: dict[str, dict[str, Any]] = {}
    for group in groups:
        turn = build_turn(
            group,
            path=path,
            session_id=session_id,
            project=project,
            sub_mode=bool(sub_mode),
            subagent=subagent,
            subagent_meta=subagent_meta,
            tool_steps=tool_steps,
            problems=problems,
            spawn_prompt=spawn_prompt if group.prompt is None else None,
        )
        yield from problems
        problems.clear()
        if turn is not None:
            yield turn
    yield after if after is not None else Resume(0, 1, {})
