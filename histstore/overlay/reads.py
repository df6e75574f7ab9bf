"""The read paths of history with the overlay applied: log and show.

These are what every caller that shows turns to a person or an agent uses
(the porcelain's ``hs log`` and ``hs show``, the MCP server): each item says
either what the turn holds or which marker withholds it, as
:mod:`histstore.overlay.visibility` decides. Nothing here hands out the text
of a turn the policy withholds. (``histstore.history.reading`` is the layer
below: raw access by id, for the store's own machinery.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from histstore.history.reading import (
    LogEntry,
    SubagentLinks,
    load_turn,
    log_entries,
    resolve,
    subagent_links,
)
from histstore.history.sources import Sources
from histstore.history.summary import SessionInfo
from histstore.overlay.markers import Marker, Overlay
from histstore.overlay.visibility import View, Visibility
from histstore.store.kinds import Session, TurnEntry
from histstore.store.store import Store


@dataclass(frozen=True)
class Item:
    """One turn as a view gives it: ``turn`` when it may be shown, else the
    marker that withholds it (``withheld``)."""

    entry: TurnEntry
    session: Session | SessionInfo
    turn: dict[str, Any] | None
    withheld: Marker | None

    @property
    def turn_id(self) -> str:
        return self.entry.turn_id


def _item(store: Store, vis: Visibility, view: View, e: LogEntry, show_all: bool) -> Item:
    marker = vis.turn(view, e.session.session_id, e.entry.turn_id, show_all=show_all)
    turn = None if marker is not None else load_turn(store, e.entry.object)
    return Item(e.entry, e.session, turn, marker)


def log(
    store: Store,
    *,
    session: str | None = None,
    project: str | None = None,
    since: str | None = None,
    limit: int | None = None,
    show_all: bool = False,
    agent: str | None = None,
) -> list[Item]:
    """Turns newest first, as ``hs log`` gives them."""
    entries = log_entries(
        store, session=session, project=project, since=since, limit=limit, agent=agent
    )
    vis = Visibility(Overlay.read(store))
    return [_item(store, vis, View.LOG, e, show_all) for e in entries]


@dataclass
class Shown:
    """What ``hs show ID`` gives: a turn, a session (with its turns), or an object.

    ``withheld`` is the marker that keeps its content back; then ``turn``,
    ``turns`` and ``payload`` are empty."""

    kind: str  # "turn" | "session" | "object"
    id: str
    withheld: Marker | None = None
    session: Session | SessionInfo | None = None
    entry: TurnEntry | None = None
    turn: dict[str, Any] | None = None
    turns: list[Item] = field(default_factory=list)
    object_kind: str | None = None
    payload: bytes | None = None
    #: for a withheld object: the turn or session it is (to name it)
    names: dict[str, Any] = field(default_factory=dict)
    #: for a turn shown: where this store read it (histstore.history.sources)
    source: dict[str, Any] | None = None
    #: the format-1 id that was asked for, when it was one (hs upgrade)
    old_id: str | None = None
    #: for a turn shown: the sub-agents it started, or the turn that started it
    links: SubagentLinks | None = None


def show(store: Store, ident: str, *, show_all: bool = False) -> Shown:
    """A turn, session or object id (or unique prefix), as ``hs show`` gives it."""
    r = resolve(store, ident)
    vis = Visibility(Overlay.read(store))
    if r.kind == "turn":
        assert r.entry is not None and r.session is not None
        e = LogEntry(r.entry, r.session)
        item = _item(store, vis, View.SHOW, e, show_all)
        shown = Shown("turn", r.id, item.withheld, r.session, r.entry, item.turn)
        if item.turn is not None:
            sources = Sources(store)
            shown.source = sources.of(r.entry.object)
            sources.close()
            session = r.session
            extra = item.turn.get("extra")
            linked = item.turn.get("subagent") or (
                isinstance(extra, dict) and extra.get("subagents")
            )
            if linked and not isinstance(session, Session):  # the summary's listing
                session = store.load_session(session.rev)
            shown.links = (
                subagent_links(store, session, item.turn)
                if isinstance(session, Session)
                else SubagentLinks({}, None)
            )
        return shown
    if r.kind == "session":
        s = r.session
        assert isinstance(s, Session)  # resolve reads a session it names whole
        marker = vis.session(View.SHOW, s.session_id, show_all=show_all)
        if marker is not None:
            return Shown("session", r.id, marker, s)
        items = [_item(store, vis, View.SHOW, LogEntry(t, s), show_all) for t in s.turns]
        return Shown("session", r.id, None, s, turns=items)
    kind, payload = store.objects.get(r.id)
    shown = Shown("object", r.id, object_kind=kind, old_id=r.old_id)
    # an object is a turn or a session revision like any other: the same policy
    if kind == "turn" and vis:
        t = json.loads(payload)
        m = vis.turn(View.SHOW, t["session_id"], t["turn_id"], show_all=show_all)
        if m is not None:
            shown.withheld = m
            shown.names = {k: t[k] for k in ("turn_id", "session_id", "asked_at")}
            return shown
    if kind == "session" and vis:
        sid = json.loads(payload).get("session_id") or ""
        m = vis.session(View.SHOW, sid, show_all=show_all)
        if m is not None:
            shown.withheld = m
            shown.names = {"session_id": sid}
            return shown
    shown.payload = payload
    return shown
