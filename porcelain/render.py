"""Human-readable rendering of turns, sessions and reports (no store access).

Every line a human view prints goes out through :func:`say`, which shows the
control characters of stored text as printable text (``histstore.display``);
``--json``, ``--raw`` and export output are printed exact, with ``typer.echo``
(tests/test_terminal.py checks that nothing else is).
"""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any

from histstore.display import text_lines, visible
from histstore.plumbing.term import (
    Text,
    highlight_phrases,
    highlight_text,
    join,
    local_date,
    local_time,
    paint,
)
from histstore.plumbing.term import say as _say
from histstore.store.kinds import Session

if TYPE_CHECKING:  # a name in annotations: hs recall never loads the summary (nor sqlite3)
    from histstore.history.summary import SessionInfo


def say(text: str | Text = "", *, err: bool = False, nl: bool = True) -> None:
    """Print one piece of a human view, control characters made visible (in
    colour on a terminal, through the pager when the command pages:
    histstore.plumbing.term)."""
    _say(text, err=err, nl=nl)


def raw_line(text: str = "") -> None:
    """One line exactly as given (JSON, or the bytes a view must keep: ``show
    --raw``) on stdout, as typer.echo writes it: flushed, and in UTF-8 where
    the stream's own encoding cannot hold it."""
    out = sys.stdout
    data = text + "\n"
    try:
        out.write(data)
    except UnicodeEncodeError:
        out.flush()
        out.buffer.write(data.encode("utf-8", "replace"))
    out.flush()


def field(text: object) -> str:
    """A one-line field (a title, a path, a name): a line break in it is shown,
    never started."""
    return visible(str(text), lines=False)


def size_text(n: int) -> str:
    """A byte count for people: ``928 B``, ``10.2 KB``, ``1.4 GB``."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def first_line(text: str, width: int = 72) -> str:
    line = field(" ".join(text.split()))
    return line if len(line) <= width else line[: width - 1] + "…"


def when(ts: str | None, *, seconds: bool = False) -> str:
    """``2026-01-02T03:04:05.678Z`` -> ``2026-01-02 03:04 UTC``, in the local
    time zone (``TZ``); with ``seconds``, ``03:04:05``."""
    return local_time(ts, seconds=seconds)


def tools_text(tools: dict[str, int]) -> str:
    return ", ".join(f"{field(k)}×{v}" if v != 1 else field(k) for k, v in sorted(tools.items()))


def indent(text: str, max_lines: int | None = None) -> str:
    lines = text_lines(text.strip("\n")) or [""]
    more = 0
    if max_lines is not None and len(lines) > max_lines:
        more = len(lines) - max_lines
        lines = lines[:max_lines]
    body = "\n".join("    " + ln for ln in lines)
    if more:
        body += f"\n    … ({more} more lines; `hs show` for all)"
    return body


def asked_text(turn: dict[str, Any]) -> str:
    """What was asked, or why there is nothing: a sub-agent's warm-up (Claude
    Code primes an Explore agent with no prompt of anyone's), or no prompt."""
    extra = turn.get("extra")
    if isinstance(extra, dict) and extra.get("warmup"):
        return "(sub-agent warm-up)"  # also one primed with Claude Code's "Warmup"
    if turn.get("asked"):
        return str(turn["asked"])
    return "(no prompt)"


def turn_header(turn: dict[str, Any], session: Session | SessionInfo | None) -> list[Text]:
    out = [Text("turn ", paint(turn["turn_id"], "id"))]
    title = f"  ({first_line(session.title, 60)})" if session and session.title else ""
    sub = f"  [sub-agent {field(turn['subagent'])}]" if turn.get("subagent") else ""
    out.append(Text("Session: ", paint(turn["session_id"], "id"), title, sub))
    out.append(Text("Project: ", paint(field(turn["project"]), "project")))
    out.append(Text("Date:    ", paint(when(turn["asked_at"]), "date")))
    meta = Text("Agent:   ", paint(field(turn.get("agent") or "-"), "agent"))
    if turn.get("model"):
        meta += f"  model {field(turn['model'])}"
    meta += f"  status {turn.get('status', 'completed')}"
    extra = turn.get("extra")
    if isinstance(extra, dict) and extra.get("rolled_back"):
        meta += "  [rolled back]"  # undone in the agent (Codex thread_rolled_back), kept here
    if turn.get("tainted"):
        meta += "  [read untrusted content]"
    out.append(meta)
    if turn.get("edited"):
        out.append(Text("Edited:  " + ", ".join(map(field, turn["edited"]))))
    if turn.get("files"):
        out.append(Text("Read:    " + ", ".join(map(field, turn["files"]))))
    if turn.get("tools"):
        out.append(Text("Tools:   " + tools_text(turn["tools"])))
    return out


def turn_text(
    turn: dict[str, Any],
    session: Session | SessionInfo | None,
    max_lines: int | None,
    grep: str | None = None,
) -> Text:
    """A turn's header, question and answer; with ``grep``, its matches marked."""
    asked = indent(asked_text(turn), max_lines)
    answered = indent(turn.get("answered") or "(no answer)", max_lines)
    body: Text | str = asked + "\n\n" + answered
    if grep:
        body = highlight_text(body, grep)
    return join([*turn_header(turn, session), "", body], "\n")


def oneline(
    turn: dict[str, Any], short: str | None = None, width: int = 12, grep: str | None = None
) -> Text:
    """One line of ``hs log --oneline``; ``short`` the turn id's abbreviation
    (overlay.reads.short_ids), padded to ``width``; with ``grep``, its
    matches marked."""
    sub = "↳ " if turn.get("subagent") else ""
    agent = field(turn.get("agent") or "-")  # stored text: a line break shown, never started
    tid = short if short is not None else turn["turn_id"][:12]
    asked: Text | str = first_line(asked_text(turn), 70)
    if grep:
        asked = highlight_text(asked, grep)
    return Text(
        paint(tid, "id"),
        " " * max(width - len(tid), 0) + "  ",
        paint(local_time(turn["asked_at"], zone=False), "date"),
        "  ",
        paint(turn["session_id"][:8], "id"),
        "  ",
        paint(agent, "agent"),
        " " * max(11 - len(agent), 0) + "  ",
        sub,
        asked,
    )


def step_text(step: dict[str, Any]) -> str:
    kind = step.get("type")
    at = f"  {when(step.get('at'))}" if step.get("at") else ""
    if kind == "tool":
        err = "  [error]" if step.get("is_error") else ""
        spawned = f"  → sub-agent {field(step['subagent'])}" if step.get("subagent") else ""
        head = f"── tool {field(step.get('name'))}{err}{spawned}{at}"
        inp = json.dumps(step.get("input"), ensure_ascii=False, indent=2, sort_keys=True)
        out = step.get("output")
        body = indent(inp)
        if out is not None:
            body += "\n    ⇒\n" + indent(str(out))
        return head + "\n" + body
    if kind == "image":
        return f"── image {field(step.get('media_type'))}{at}"
    text = str(step.get("text") or "")
    label = {"user": "user", "assistant": "assistant", "thinking": "thinking"}.get(
        str(kind), f"event {field(step.get('kind', ''))}"
    )
    return f"── {label}{at}\n" + indent(text)


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 turn``, ``2 turns`` (``words`` where adding an s is wrong)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def transcript_notes(t: Any) -> list[str]:
    """What stderr says of a session exported or restored in its agent's
    format (histstore.overlay.transcripts.Transcript): the turns left out, and
    an order that may not be the original."""
    notes = []
    if t.left_out:
        line = (
            f"hs: left out {plural(len(t.left_out), 'excluded turn')} of session "
            f"{t.stored_id}: {', '.join(t.left_out)}"
        )
        if t.relinked:
            line += f"; {plural(t.relinked, 'record')} re-linked over the gap"
        notes.append(line)
    if t.no_raw:
        notes.append(
            f"hs: {plural(len(t.no_raw), 'turn')} of session {t.stored_id} "
            f"{'have' if len(t.no_raw) != 1 else 'has'} no records of the agent's "
            f"(recorded by hs record), not written: {', '.join(t.no_raw)}"
        )
    for name in t.unordered:
        notes.append(
            f"hs: warning: the turns of {name} overlap in the original file and this store "
            "does not know where each record was: they are in turn order, which may differ"
        )
    return notes


_RECALL_HEAD = re.compile(r"^(\d{4}-\d\d-\d\d)  session (\S+)  turn (\S+)(  .*)?$")


def recall_lines(ans: Any, lines: list[str]) -> list[Text]:
    """The lines of a recall answer (histstore.ops.recall.render) as a person
    sees them: each hit's date in the local zone, ids, agent and project
    painted, and the query's terms marked wherever a hit or note quotes text."""
    from histstore.recall.query import token_spans  # recall's tokens: only recall marks them

    terms = [t.split() for t in ans.terms]
    hits = iter(ans.result.hits)
    out: list[Text] = []
    for line in lines:
        head = _RECALL_HEAD.match(line) if not line.startswith(" ") else None
        hit = next(hits, None) if head else None
        if head and hit is not None:
            agent = (head.group(4) or "").strip()
            out.append(
                Text(
                    paint(local_date(hit.asked_at), "date"),
                    "  session ",
                    paint(head.group(2), "id"),
                    "  turn ",
                    paint(head.group(3), "id"),
                    *(("  ", paint(agent, "agent")) if agent else ()),
                )
            )
        elif line.startswith("  project: "):
            out.append(Text("  project: ", paint(line[len("  project: ") :], "project")))
        elif line.startswith("  "):
            out.append(highlight_phrases(line, terms, token_spans))
        else:
            out.append(Text(line))
    return out
