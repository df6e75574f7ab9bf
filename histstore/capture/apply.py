"""Applying hook payloads: what :mod:`histstore.capture.run` loads once it
knows the store is free (docs/capture.md; the steps are run.py's).

* :func:`apply_event`: what one payload's transcripts gained, imported as one
  operation, the session read from the summary first (:func:`prime`), the
  hook's answer given to the turn it is about when the transcript lags
  (:func:`lag_amend`);
* :func:`drain`: every spooled payload applied, oldest first;
* :func:`refresh`: the recall index and summary caught up without waiting;
* :func:`drain_all`, :func:`import_with_spool`: the same for ``hs capture
  --drain`` and ``hs import``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histstore.capture import events, fastspool
from histstore.capture.events import Event
from histstore.capture.fastspool import MESSAGE_ENV, MESSAGE_FOR_ENV
from histstore.capture.journal import Journal, SpoolEntry
from histstore.capture.run import Outcome, fill_outcome
from histstore.errors import BadInput, HistError, Locked
from histstore.history.importing import ImportReport, plan_files, store_paths
from histstore.history.sources import Sources
from histstore.history.summary import Summary, Unavailable
from histstore.history.turn import Turn
from histstore.store.store import Store

# ---------------------------------------------------------------- the lag


def _words(text: str) -> str:
    return " ".join(text.split())


def answers_agree(answered: str, message: str) -> bool:
    """Whether a transcript's answer is the hook's (white space aside; the hook
    may join text blocks the transcript's last block is one of)."""
    a, m = _words(answered), _words(message)
    return bool(a) and (a == m or a in m or m in a)


def _looks_finished(turn: Turn) -> bool:
    """Whether a turn's last step is the agent's answer (text after its last tool)."""
    for step in reversed(turn.get("steps") or []):
        kind = step.get("type") if isinstance(step, dict) else None
        if kind == "event" or kind == "thinking":
            continue
        return kind == "assistant" and bool(str(step.get("text") or "").strip())
    return False


def _prompt_ids(turn: Turn) -> set[str]:
    """The ``promptId`` values of a Claude Code turn's records."""
    out: set[str] = set()
    for line in turn.get("raw") or []:
        if '"promptId"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("promptId"), str):
            out.add(obj["promptId"])
    return out


@dataclass
class Lag:
    """What the lag check found in one application."""

    patched: str | None = None  # the turn id that took the hook's answer


def lag_amend(
    store: Store, event: Event, lag: Lag, *, fresh: bool = True
) -> Callable[[Path, Turn, bool], Turn] | None:
    """The amend that gives the turn the hook is about the hook's answer when
    the transcript does not hold it yet (None when the hook gave none).

    The turn is: for Codex, the one whose id the payload names; for a Claude
    Code sub-agent, the last of its own file; for Claude Code, the last of the
    session's file when its prompt is the payload's ``prompt_id``, or, when
    the payload names no prompt, when the payload is ``fresh`` and the turn
    looks unfinished (its last step is no answer): a payload applied late,
    from the spool, never gives its answer to a later turn."""
    message = event.last_message
    if not message or not message.strip():
        return None
    sub = event.name == "SubagentStop" and event.subagent_transcript is not None
    target = event.subagent_transcript if sub else event.transcript
    if target is None:
        return None

    def amend(path: Path, turn: Turn, last: bool) -> Turn:
        if path != target:
            return turn
        if event.agent == "codex" and event.turn_id:
            if turn.get("turn_id") != event.turn_id:
                return turn
        elif not last:
            return turn
        elif not sub and event.agent == "claude-code":
            ids = _prompt_ids(turn)
            if event.prompt_id and ids:
                if event.prompt_id not in ids:
                    return turn
            elif not fresh or _looks_finished(turn):
                return turn
        # the stored answer is redacted: the hook's is compared as it would be stored
        redacted = store.redactor(message)
        if answers_agree(str(turn.get("answered") or ""), redacted):
            return turn
        extra = dict(turn.get("extra") or {})
        extra["answered_from"] = "hook"
        lag.patched = str(turn.get("turn_id"))
        return {**turn, "answered": redacted, "extra": extra}

    return amend


# ---------------------------------------------------------------- applying


def _existing(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        with contextlib.suppress(OSError):
            if p.is_file():
                out.append(p)
    return out


def pending_bytes(store: Store, event: Event, limit: int | None = None) -> int:
    """How many bytes of its transcripts an event would read (at most their
    sizes: only when those pass the limit is the source table asked)."""
    paths = _existing(events.files(event))
    if not paths:
        return 0
    if limit is not None:
        with contextlib.suppress(OSError):
            if sum(p.stat().st_size for p in paths) <= limit:
                return 0
    sources = Sources(store, readonly=True)
    try:
        return sum(fp.new_bytes for fp in plan_files(sources, paths))
    except (HistError, OSError, sqlite3.Error):
        return 0
    finally:
        sources.close()


#: a hook catches the summary up by at most this many operations (more is a
#: summary left behind: the background catches it up)
SUMMARY_OPS = 64


def prime(store: Store, session_id: str | None) -> bool:
    """Give the store the session as it is now from the summary, so storing a
    turn in it reads no delta before it. False when the summary is too far
    behind to be used in a hook (the session is then read from its
    revisions, and the summary should be caught up in the background)."""
    if not session_id:
        return True
    try:
        rev = store.session_ref(session_id)
    except BadInput:
        return True  # an id no ref can have: the import refuses it itself
    if rev is None:
        return True
    try:
        with Summary(store) as s:
            session = s.session(session_id, rev, limit=SUMMARY_OPS)
    except Unavailable:
        return False
    except (HistError, sqlite3.Error, OSError):
        return True
    if session is not None:
        store.remember_session(session)
    return True


@dataclass
class Applied:
    """What applying one capture did: the import, the lag made good, what was missing."""

    report: ImportReport
    lag: Lag
    #: none of the event's transcripts is there (yet)
    no_transcript: bool = False
    #: the summary was too far behind to read the session from
    summary_behind: bool = False


def apply_event(store: Store, event: Event, *, fresh: bool = True) -> Applied:
    """Import what the event's transcripts gained, as one operation (``fresh``:
    the payload just arrived; see :func:`drain`)."""
    lag = Lag()
    paths = _existing(events.files(event))
    if not paths:
        return Applied(ImportReport(), lag, no_transcript=True)
    behind = not prime(store, event.session_id)
    report = store_paths(
        store,
        paths,
        command=f"hs capture {event.agent} {event.name}",
        amend=lag_amend(store, event, lag, fresh=fresh),
    )
    return Applied(report, lag, summary_behind=behind)


@dataclass
class Drained:
    """What a drain of the spool did, in counts and in why it stopped."""

    applied: int = 0
    turns_added: int = 0
    turns_revised: int = 0
    lagging: bool = False
    locked: bool = False
    deferred: bool = False
    no_transcript: bool = False
    errors: list[str] = field(default_factory=list)
    committed: bool = False
    #: derived data (the summary, the recall index) left for the background
    behind: bool = False


def drain(
    store: Store,
    journal: Journal,
    *,
    limit_bytes: int | None = None,
    mine: SpoolEntry | None = None,
    unspooled: Event | None = None,
) -> Drained:
    """Apply every spooled payload, oldest first; stop at a held lock (the
    rest waits) or, with ``limit_bytes``, at one that would read more than
    that (it is deferred to a drain without a limit). A payload that fails is
    recorded and counted (journal.failed sets it aside after a few).

    ``mine`` is the payload of the capture running this drain: only it may
    give its answer to a Claude Code turn it can tell only by being the last
    one (a payload without ``prompt_id``); one applied later, from the
    spool, could be about an earlier turn by then.

    ``unspooled`` is the payload of the capture running this drain when the
    spool could not keep it: applied last, whatever its size (it cannot
    wait for a drain in the background)."""
    out = Drained()
    for entry in journal.spooled():
        try:
            event = events.parse(entry.agent, entry.text)
        except BadInput as e:  # it never will apply: set aside at once
            name = fastspool.event_name(entry.text)
            journal.failure(entry.agent, name, f"spooled payload {entry.path.name}: {e.message}")
            journal.failed(entry, hopeless=True)
            out.errors.append(e.message)
            continue
        if limit_bytes is not None and pending_bytes(store, event, limit_bytes) > limit_bytes:
            out.deferred = True
            break
        fresh = mine is not None and entry.path == mine.path
        if fresh and mine is not None and mine.message is not None and event.last_message is None:
            event = dataclasses.replace(event, last_message=mine.message)
        began = time.monotonic()
        try:
            done = apply_event(store, event, fresh=fresh)
        except Locked:
            out.locked = True
            break
        except (HistError, OSError, sqlite3.Error, ValueError, UnicodeError) as e:
            message = e.message if isinstance(e, HistError) else f"{type(e).__name__}: {e}"
            journal.failure(entry.agent, event.name, message, session=event.session_id)
            journal.failed(entry)
            out.errors.append(message)
            continue
        journal.done(entry)
        _ran(journal, entry, event, done, time.monotonic() - began)
        _count(out, journal, event, done)
    if unspooled is not None and not out.locked:
        try:
            _count(out, journal, unspooled, apply_event(store, unspooled))
        except Locked:
            out.locked = True
        except (HistError, OSError, sqlite3.Error, ValueError, UnicodeError) as e:
            message = e.message if isinstance(e, HistError) else f"{type(e).__name__}: {e}"
            journal.failure(unspooled.agent, unspooled.name, message, session=unspooled.session_id)
            out.errors.append(message)
    return out


def _count(out: Drained, journal: Journal, event: Event, done: Applied) -> None:
    """Add what applying one payload did to a drain's counts (its problems recorded)."""
    rep = done.report
    out.applied += 1
    out.turns_added += rep.turns_added
    out.turns_revised += rep.turns_revised
    out.lagging = out.lagging or done.lag.patched is not None
    out.no_transcript = done.no_transcript
    out.behind = out.behind or done.summary_behind
    out.committed = out.committed or rep.operation is not None
    for p in rep.problems:
        if not p.kept:  # a line read with a stand-in is in: no failure of the hook's
            journal.failure(event.agent, event.name, str(p), session=event.session_id)


#: a hook catches the recall index up itself when it is at most this many ref
#: changes behind (a turn or two); more is left to the background
CATCH_UP_CHANGES = 64


def refresh(store: Store, *, wait: bool = False) -> bool:
    """Catch the recall index and the summary up. Inside a hook (``wait``
    False) only a small catch-up is done, and only if the index lock is free
    at once; True when the index was left behind for the background (none
    built yet, or far behind: that is a build, seconds at 100k turns)."""
    from histstore.recall.index import RecallIndex

    index = RecallIndex(store)
    behind = False
    with contextlib.suppress(HistError, sqlite3.Error, OSError):
        if wait:
            index.catch_up()
        else:
            status = index.status()
            todo = store.refs.operations_after(status.applied_op) if status.generation else None
            if todo is None or sum(len(op.changes) for op in todo) > CATCH_UP_CHANGES:
                behind = True
            elif todo:
                index.catch_up(timeout=0)
    try:
        with Summary(store) as s:
            s.current(limit=None if wait else SUMMARY_OPS)
    except Unavailable:
        behind = True
    except (HistError, sqlite3.Error, OSError):
        pass
    return behind


def gc_due(store: Store) -> bool:
    from histstore.ops import gc

    try:
        return gc.auto_due(store)
    except (HistError, OSError):
        return False


def _ran(journal: Journal, entry: SpoolEntry, event: Event, done: Applied, took: float) -> None:
    """Record what applying one spooled payload did, as its hook's last run."""
    rep = done.report
    if rep.turns_added or rep.turns_revised:
        result, message = "recorded", ""
    else:
        result = "unchanged"
        message = "its transcript is not there yet" if done.no_transcript else ""
    if done.lag.patched:
        message = "the transcript lags its hook: the answer was taken from the hook"
    journal.ran(
        entry.agent,
        event.name,
        {
            "result": result,
            "message": message,
            "session": event.session_id,
            "turns_added": rep.turns_added,
            "turns_revised": rep.turns_revised,
            "applied": 1,
            "lagging": done.lag.patched is not None,
            "seconds": round(took, 4),
            "received": entry.received,
        },
    )


def drain_all(root: Path, fresh: Path | None = None) -> Outcome:
    """``hs capture --drain``: apply the whole spool, waiting for the lock as
    any writer does (the background half of a capture; ``fresh``: the spool
    entry of the hook that started it, applied as that hook would have)."""
    out = Outcome("unchanged", agent="hs", event="drain")
    journal = Journal.of_store(root)
    mine = None
    if fresh is not None:
        # the answer the hook kept out of the spool, handed over in memory
        given = (
            os.environ.get(MESSAGE_ENV) if os.environ.get(MESSAGE_FOR_ENV) == fresh.name else None
        )
        mine = SpoolEntry(fresh, "", "", "", 0, given)
    with Store.open(root) as store:
        done = drain(store, journal, mine=mine)
        fill_outcome(out, done, journal)
        refresh(store, wait=True)
        if gc_due(store):
            out.background.append("gc")
    return out


def import_with_spool(store: Store, paths: list[Path], **kw: Any) -> tuple[ImportReport, Drained]:
    """``hs import``: the spool applied first (the payloads that found the
    store locked), then the import itself (histstore.ops.importing)."""
    from histstore.ops.importing import import_paths

    done = drain(store, Journal.of_store(store.root))
    return import_paths(store, paths, **kw), done
