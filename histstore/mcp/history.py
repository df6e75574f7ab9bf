"""The history tools: recall_history, show_turn, recent_sessions.

Each reads through the library's read paths (``ops.recall``, ``overlay.reads``,
the recall index to find a turn) and returns the text the model reads.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, HistError, NotFound
from histstore.history.project import project_key
from histstore.history.reading import expand_turn, parse_since
from histstore.mcp.base import Env
from histstore.ops.recall import Style, answer, render
from histstore.overlay import reads
from histstore.recall.index import RecallIndex
from histstore.recall.query import UNTRUSTED_LABEL
from histstore.store.store import Store

#: a part of show_turn holds at most this many characters (~2k tokens)
PAGE_CHARS = 8000

TOOL_STYLE = Style(everywhere="everywhere=true", days="days", full_ids=True)


def recall_history(env: Env, a: dict[str, Any]) -> str:
    with Store.open(env.store) as store:
        scope = None if a["everywhere"] else project_key(env.project)
        ans = answer(store, a["query"], project=scope, days=a["days"], k=a["k"], agent=a["agent"])
        lines = render(ans, TOOL_STYLE)
    if ans.result.hits:
        lines += ["", "(show_turn with a turn id gives the whole turn)"]
    return "\n".join(lines)


# ------------------------------------------------------------------ show_turn


def _step_text(step: dict[str, Any]) -> str:
    kind = step.get("type")
    at = f" at {step['at']}" if step.get("at") else ""
    if kind == "tool":
        err = " (error)" if step.get("is_error") else ""
        inp = json.dumps(step.get("input"), ensure_ascii=False, indent=2, sort_keys=True)
        text = f"── tool {step.get('name')}{err}{at}\ninput:\n{inp}"
        if step.get("output") is not None:
            text += f"\noutput:\n{step['output']}"
        return text
    if kind == "image":
        return f"── image {step.get('media_type')}{at}"
    label = kind if kind in ("user", "assistant", "thinking") else f"event {step.get('kind', '')}"
    return f"── {label}{at}\n{step.get('text') or ''}"


def turn_text(store: Store, turn: dict[str, Any], title: str | None) -> str:
    """One turn, whole: header, prompt, answer, steps."""
    head = [f"turn {turn['turn_id']}", f"session: {turn['session_id']}"]
    if title:
        head[-1] += f"  ({title})"
    head.append(f"project: {turn.get('project')}")
    head.append(f"asked: {turn.get('asked_at')}  answered: {turn.get('answered_at') or '-'}")
    meta = f"agent: {turn.get('agent') or '-'}"
    if turn.get("model"):
        meta += f"  model: {turn['model']}"
    meta += f"  status: {turn.get('status', 'completed')}"
    if turn.get("subagent"):
        meta += f"  sub-agent: {turn['subagent']}"
    head.append(meta)
    if turn.get("tainted"):
        head.append(UNTRUSTED_LABEL)
    if turn.get("edited"):
        head.append("edited: " + ", ".join(turn["edited"]))
    if turn.get("files"):
        head.append("read: " + ", ".join(turn["files"]))
    if turn.get("tools"):
        head.append("tools: " + ", ".join(f"{k}×{v}" for k, v in sorted(turn["tools"].items())))
    steps = expand_turn(store, turn)["steps"]
    parts = [
        "\n".join(head),
        "## prompt\n" + (turn.get("asked") or "(no prompt)"),
        "## answer\n" + (turn.get("answered") or "(no answer)"),
    ]
    if steps:
        parts.append(f"## steps ({len(steps)})\n" + "\n\n".join(_step_text(s) for s in steps))
    return "\n\n".join(parts)


def split_pages(text: str, size: int = PAGE_CHARS) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut after a line
    where one ends within the piece, else hard."""
    pages: list[str] = []
    while len(text) > size:
        cut = text.rfind("\n", 0, size)
        cut = cut + 1 if cut > size // 2 else size
        pages.append(text[:cut])
        text = text[cut:]
    pages.append(text)
    return pages


def _find_turn(store: Store, ident: str) -> reads.Shown:
    """A whole turn id the recall index knows is found through it (one
    session read); anything else (a prefix, a forgotten turn, which the index
    no longer holds, an object id) by hs show's resolution, a scan of every
    session."""
    try:
        sessions = RecallIndex(store).sessions_of(ident)
    except HistError:
        sessions = []
    if len(sessions) == 1:
        with contextlib.suppress(NotFound):
            return reads.turn(store, sessions[0], ident)
    return reads.show(store, ident)


def show_turn(env: Env, a: dict[str, Any]) -> str:
    with Store.open(env.store) as store:
        shown = _find_turn(store, a["turn_id"].strip())
        if shown.kind != "turn":
            raise BadInput(
                f"{a['turn_id']!r} is a {shown.kind}, not a turn",
                hint="give a turn id from recall_history (recent_sessions lists sessions)",
            )
        assert shown.entry is not None and shown.session is not None
        if shown.turn is None:
            assert shown.withheld is not None
            mode = "exclusion" if shown.withheld.mode == "exclude" else shown.withheld.mode
            return (
                f"turn {shown.entry.turn_id}\nsession: {shown.session.session_id}\n\n"
                f"forgotten ({mode} since {shown.withheld.time}): its text is not shown"
            )
        pages = split_pages(turn_text(store, shown.turn, shown.session.title))
    part: int = a["part"]
    if part > len(pages):
        raise BadInput(
            f"show_turn: part {part}: turn {shown.entry.turn_id} has {len(pages)} "
            f"part{'s' if len(pages) != 1 else ''}",
            hint="parts are numbered from 1",
        )
    tid = shown.entry.turn_id
    text = pages[part - 1]
    if len(pages) == 1:
        return text
    head = f"[turn {tid}: part {part} of {len(pages)}]"
    if shown.turn.get("tainted"):
        head += f"\n{UNTRUSTED_LABEL}"
    tail = (
        f"\n[part {part} of {len(pages)}: call show_turn with turn_id={tid!r} and "
        f"part={part + 1} for the next]"
        if part < len(pages)
        else f"\n[part {part} of {len(pages)}: the end of the turn]"
    )
    return head + "\n" + text.rstrip("\n") + tail


# ------------------------------------------------------------------ sessions


#: store -> session revisions read so far (a server lists sessions often; a
#: revision is immutable, so only new ones are read again)
_SESSION_CACHE: dict[Path, dict[str, Any]] = {}


def recent_sessions(env: Env, a: dict[str, Any]) -> str:
    if a["everywhere"] and a["project"] is not None:
        raise BadInput("recent_sessions: give project or everywhere, not both")
    project = None if a["everywhere"] else (a["project"] or env.project)
    if project is not None and os.path.isdir(project):
        project = str(Path(project).resolve())
    since = parse_since(f"{a['days']}d") if a["days"] is not None else None
    with Store.open(env.store) as store:
        recorded = bool(store.session_refs())
        cache = _SESSION_CACHE.setdefault(env.store, {})
        items = reads.sessions(
            store, project=project, since=since, agent=a["agent"], limit=a["limit"], cache=cache
        )
    if not items:
        if not recorded:
            return "nothing recorded yet: import sessions with `hs import`"
        where = f" in {project_key(project)}" if project is not None else ""
        who = f" of {a['agent']}" if a["agent"] else ""
        days = f" in the last {a['days']} days" if a["days"] is not None else ""
        more = " (try everywhere=true)" if project is not None else ""
        return f"no session{who}{where}{days}{more}"
    out: list[str] = []
    for it in items:
        s = it.session
        if out:
            out.append("")
        if it.withheld is not None:
            mode = "exclusion" if it.withheld.mode == "exclude" else it.withheld.mode
            out.append(f"session {s.session_id}: forgotten ({mode} since {it.withheld.time})")
        else:
            out.append(f"session {s.session_id}" + (f"  {it.title}" if it.title else ""))
        if project is None:
            out.append(f"  project: {s.project}")
        n = f"{it.turns} turn{'s' if it.turns != 1 else ''}"
        if it.forgotten:
            n += f" ({it.forgotten} forgotten)"
        out.append(f"  agent: {s.agent}  {n}  first: {it.first or '-'}  newest: {it.last or '-'}")
    return "\n".join(out)
