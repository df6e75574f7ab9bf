"""Export: turns out of the store, as the project's turn JSONL or as markdown.

Excluded targets never appear, through any filter; tombstoned ones do (a
tombstone hides from recall only). A JSONL export holds each turn as it was
recorded — every step with its output, the raw records — so importing it into
an empty store gives the same turn objects, with the same ids.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from histstore.display import text_lines, visible
from histstore.errors import BadInput
from histstore.history.reading import check_agent, expand_turn, load_turn, log_entries, raw_records
from histstore.history.summary import SessionInfo
from histstore.overlay.markers import Overlay
from histstore.overlay.visibility import View, Visibility
from histstore.store.fsutil import atomic_write
from histstore.store.kinds import Session
from histstore.store.store import Store

FORMATS = ("jsonl", "markdown")
RECHECK = 200


def exported_turns(
    store: Store,
    *,
    session: str | None = None,
    project: str | None = None,
    since: str | None = None,
    agent: str | None = None,
) -> Iterator[tuple[Session | SessionInfo, dict[str, Any]]]:
    """(session, turn record) oldest first, exclusions left out. The overlay is
    read again as the export goes (every ``RECHECK`` turns), so an exclusion
    made while a long export runs holds for the turns not yet written."""
    vis = Visibility(Overlay.read(store))
    entries = log_entries(store, session=session, project=project, since=since, agent=agent)
    for i, e in enumerate(reversed(entries)):
        if i and i % RECHECK == 0:
            vis = Visibility(Overlay.read(store))
        if vis.turn(View.EXPORT, e.session.session_id, e.entry.turn_id):
            continue
        turn = expand_turn(store, load_turn(store, e.entry.object))
        turn["raw"] = raw_records(store, turn)
        yield e.session, turn


def jsonl_line(turn: dict[str, Any]) -> str:
    return json.dumps(turn, ensure_ascii=False, sort_keys=True)


def markdown(turns: list[tuple[Session | SessionInfo, dict[str, Any]]]) -> Iterator[str]:
    """A readable transcript: a heading per session, then each turn's steps.
    It is read by people (printed, or opened in an editor or a terminal), so
    the control characters of stored text are made visible in it
    (``histstore.display``); the JSONL export keeps them exact."""
    for chunk in _markdown(turns):
        yield visible(chunk)


def _markdown(turns: list[tuple[Session | SessionInfo, dict[str, Any]]]) -> Iterator[str]:
    current = None
    for s, t in turns:
        if s.session_id != current:
            current = s.session_id
            title = f" — {visible(s.title, lines=False)}" if s.title else ""
            yield f"# Session {s.session_id}{title}\n\n"
            yield f"Project: `{_one(s.project)}` · agent: {_one(s.agent)}\n\n"
        yield f"## {t['asked_at'][:16].replace('T', ' ')} UTC · turn `{t['turn_id']}`\n\n"
        if t.get("tainted"):
            yield "> This turn read untrusted content.\n\n"
        yield "**Asked:**\n\n" + _quote(t.get("asked") or "") + "\n"
        for step in t.get("steps") or []:
            if step.get("type") == "tool":
                name = _one(step.get("name"))
                yield f"*Tool `{name}`*" + (" (error)" if step.get("is_error") else "")
                yield "\n\n```json\n" + json.dumps(step.get("input"), indent=2, ensure_ascii=False)
                yield "\n```\n\n"
                if step.get("output"):
                    yield _fence(str(step["output"]))
        yield "**Answered:**\n\n" + _quote(t.get("answered") or "(no answer)") + "\n"
        files = [
            *(f"read `{_one(f)}`" for f in t.get("files", [])),
            *(f"edited `{_one(f)}`" for f in t.get("edited", [])),
        ]
        if files:
            yield "Files: " + ", ".join(files) + "\n\n"


def _one(text: object) -> str:
    """A one-line field of the markdown (a path, a name): a line break in it
    shown, never started."""
    return visible(str(text), lines=False)


def _quote(text: str) -> str:
    return "".join(f"> {line}\n" if line else ">\n" for line in text_lines(text) or [""])


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}\n\n"


def export(
    store: Store,
    fmt: str,
    output: Path | None = None,
    *,
    session: str | None = None,
    project: str | None = None,
    since: str | None = None,
    agent: str | None = None,
) -> Iterator[str]:
    """The export as text chunks; with ``output``, written to that file
    (atomically, and never inside the store) and nothing yielded."""
    if fmt not in FORMATS:
        raise BadInput(f"unknown export format {fmt!r}", hint="use jsonl or markdown")
    target = store.check_output_file(output, "--output") if output is not None else None
    check_agent(store, agent)  # before anything is written
    turns = exported_turns(store, session=session, project=project, since=since, agent=agent)
    if fmt == "jsonl":
        chunks: Iterator[str] = (jsonl_line(t) + "\n" for _, t in turns)
    else:
        chunks = markdown(list(turns))
    if target is None:
        yield from chunks
        return
    atomic_write(target, "".join(chunks).encode("utf-8"))
