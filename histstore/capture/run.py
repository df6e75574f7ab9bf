"""One capture: a hook's payload turned into the turns its transcript gained.

A hook process first goes through :mod:`histstore.capture.fastspool` (the
payload spooled, the lock probed, the application handed to a detached
``hs capture --drain``: histstore.porcelain.hook). :func:`capture` is the
whole of it in one process — what that drain, ``HS_CAPTURE_DETACH=0`` and
every payload the fast path does not take (not JSON, no store) go through.
It never raises and never waits for the store lock:

1. The payload is read (:mod:`histstore.capture.events`) and written to the
   spool (:mod:`histstore.capture.journal`) first, durably: whatever happens
   next — the lock held, a kill, the time bound — the next capture or import
   applies it, so nothing is lost. A payload the spool cannot keep (the
   spool cannot be written) is applied at once, after the spool, and its
   run says so; with the store locked too it is a failure (the transcript
   is read by the next capture, but an answer only the hook had is lost).
2. When another writer holds the store lock (a non-blocking probe of its
   ``flock``), that is all: the payload waits in the spool.
3. Else every spooled payload is applied, oldest first (this one last), with
   the store's lock timeout at 0 — a writer that came in meanwhile leaves the
   rest spooled (:mod:`histstore.capture.apply`: only what the transcripts
   gained, the session read from the summary, the lag made good from the
   hook's own answer).
4. The recall index and the summary are caught up if their locks are free at
   once and they are only a little behind; otherwise the outcome asks for a
   drain in the background.

A payload whose transcripts gained more than :data:`HOOK_BYTES` (the first
capture of a long session) is not read inside the hook: the outcome asks the
caller to apply the spool in the background (``hs capture --drain``), and
when loose objects call for ``hs gc --auto`` the outcome says so too — the
caller starts both detached, so the agent never waits for them.

Every run is recorded (``last/``) and every failure too (``failures.jsonl``),
in the store, or beside it when there is no store to write to.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from histstore.capture import events, fastspool
from histstore.capture.journal import Journal
from histstore.errors import BadInput, HistError
from histstore.store.config import CONFIG_NAME

if TYPE_CHECKING:
    from histstore.capture.apply import Drained

#: a payload whose transcripts gained more than this is applied in the background
HOOK_BYTES = 4 << 20


@dataclass
class Outcome:
    """What a capture did, as ``hs hooks status`` and ``hs status`` tell it."""

    #: ``recorded`` (turns added or revised), ``unchanged`` (nothing new),
    #: ``spooled`` (the store was locked: the payload waits), ``deferred``
    #: (too much to read in a hook: applied in the background), ``failed``
    result: str
    message: str = ""
    agent: str = ""
    event: str = ""
    session: str | None = None
    turns_added: int = 0
    turns_revised: int = 0
    #: spooled payloads applied by this run (its own included)
    applied: int = 0
    #: payloads left in the spool
    waiting: int = 0
    #: the transcript lagged: an answer was taken from the hook
    lagging: bool = False
    seconds: float = 0.0
    #: what the caller should start in the background: ``drain``, ``gc``
    background: list[str] = field(default_factory=list)
    #: its failure is in the journal already
    logged: bool = False

    def as_json(self) -> dict[str, Any]:
        return {
            "result": self.result,
            "message": self.message,
            "session": self.session,
            "turns_added": self.turns_added,
            "turns_revised": self.turns_revised,
            "applied": self.applied,
            "waiting": self.waiting,
            "lagging": self.lagging,
            "seconds": round(self.seconds, 4),
            "background": self.background,
        }


# ---------------------------------------------------------------- a capture


def _event_name(obj: Any) -> str:
    if isinstance(obj, dict):
        if obj.get("type") == "agent-turn-complete":
            return events.NOTIFY
        name = obj.get("hook_event_name")
        if isinstance(name, str) and name:
            return name
    return "unknown"


def capture(root: Path, agent: str, payload: str | bytes) -> Outcome:
    """Apply one hook payload to the store at ``root`` (see the module's
    docstring). Never raises a HistError or an OSError: the outcome says
    what happened, and the journal has recorded it."""
    began = time.monotonic()
    out = Outcome("failed", agent=agent, event="unknown")
    if not (root / CONFIG_NAME).is_file():
        journal = Journal.fallback(root)
        out.message = f"no store at {root}"
        out.event = "unknown"
        with contextlib.suppress(BadInput):
            out.event = _event_name(events.load_payload(payload))
        journal.failure(agent, out.event, out.message)
        journal.ran(agent, out.event, {"result": "failed", "message": out.message})
        return out
    journal = Journal.of_store(root)
    try:
        obj = events.load_payload(payload)
        out.event = _event_name(obj)
        event = events.from_object(agent, obj)
        out.session = event.session_id
    except BadInput as e:
        out.message = e.message
        return finish(journal, out, began)
    mine = None
    unspooled = None  # why the spool could not keep it
    text = payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
    try:
        mine = journal.spool(agent, text)
    except OSError as e:
        # not kept for later: applied now or, if it cannot be, recorded as lost
        unspooled = f"cannot spool the payload: {e}"
        journal.failure(agent, out.event, unspooled, session=out.session)
    if fastspool.lock_held(str(root)):
        out.result = "spooled"
        out.message = "the store is locked by another writer: applied by the next capture or import"
        out.waiting = journal.waiting()
        _not_spooled(out, unspooled)
        return finish(journal, out, began)
    # the store is free: now (only now) load what applying needs
    import sqlite3

    from histstore.capture.apply import drain, gc_due, refresh
    from histstore.store.store import Store

    try:
        store = Store.open(root)
    except HistError as e:
        out.message = e.message
        return finish(journal, out, began)
    try:
        store.lock_timeout = 0.0
        done = drain(
            store,
            journal,
            limit_bytes=HOOK_BYTES,
            mine=mine,
            unspooled=event if unspooled is not None else None,
        )
        fill_outcome(out, done, journal)
        _not_spooled(out, unspooled)
        behind = done.behind or (done.committed and refresh(store))
        if behind and "drain" not in out.background:
            out.background.append("drain")
        if gc_due(store):
            out.background.append("gc")
    except (HistError, OSError, sqlite3.Error, ValueError) as e:
        out.result = "failed"
        out.message = e.message if isinstance(e, HistError) else f"{type(e).__name__}: {e}"
    finally:
        store.close()
    return finish(journal, out, began)


def fill_outcome(out: Outcome, done: Drained, journal: Journal) -> None:
    out.applied = done.applied
    out.turns_added = done.turns_added
    out.turns_revised = done.turns_revised
    out.lagging = done.lagging
    out.waiting = journal.waiting()
    if done.deferred:
        out.result = "deferred"
        out.message = "more than a hook should read: applied in the background"
        out.background.append("drain")
    elif done.locked:
        out.result = "spooled"
        out.message = "another writer took the store lock: applied by the next capture or import"
    elif done.turns_added or done.turns_revised:
        out.result = "recorded"
    elif done.errors:
        out.result = "failed"
        out.message = done.errors[-1]
        out.logged = True  # drain recorded each failure
        return
    else:
        out.result = "unchanged"
        if done.no_transcript:
            out.message = "its transcript is not there yet: the next event reads it"
    if done.lagging:
        out.message = "the transcript lags its hook: the answer was taken from the hook"
    if done.errors and not out.message:
        out.message = done.errors[-1]


def _not_spooled(out: Outcome, why: str | None) -> None:
    """The outcome of a payload the spool could not keep (``why``): applied at
    once, or, when the store was locked, a failure (its spool failure is
    recorded already): the next capture or import reads its transcript."""
    if why is None or out.result == "failed":
        return
    if out.result == "spooled":
        out.result = "failed"
        out.message = (
            f"{why}, and the store is locked by another writer: the next capture or import "
            "reads its transcript (an answer only the hook had is lost)"
        )
        out.logged = True
    else:
        out.message = f"applied at once: {why}" + (f"; {out.message}" if out.message else "")


def finish(journal: Journal, out: Outcome, began: float) -> Outcome:
    out.seconds = time.monotonic() - began
    record = {k: v for k, v in out.as_json().items() if k != "background"}
    if out.result == "failed" and not out.logged:
        journal.failure(out.agent, out.event, out.message, session=out.session)
    journal.ran(out.agent, out.event, record)
    return out


def record_failure(root: Path, agent: str, payload: str | bytes, message: str) -> None:
    """Record a capture that could not finish (its time bound, an unexpected
    error): its payload, spooled first, stays for the next capture."""
    journal = Journal.of_store(root) if (root / CONFIG_NAME).is_file() else Journal.fallback(root)
    event = "unknown"
    with contextlib.suppress(BadInput):
        event = _event_name(events.load_payload(payload))
    journal.failure(agent, event, message)
    journal.ran(agent, event, {"result": "failed", "message": message})
