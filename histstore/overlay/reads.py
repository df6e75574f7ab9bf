"""The read paths of history with the overlay applied: log, show, and the list of sessions.

These are what every caller that shows turns to a person or an agent uses
(the porcelain's ``hs log`` and ``hs show``, the MCP server): each item says
either what the turn holds or which marker withholds it, as
:mod:`histstore.overlay.visibility` decides. Nothing here hands out the text
of a turn the policy withholds. (``histstore.history.reading`` is the layer
below: raw access by id, for the store's own machinery.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from histstore.errors import BadInput, CorruptStore, NotFound
from histstore.history.project import project_key
from histstore.history.reading import (
    LogEntry,
    SubagentLinks,
    load_turn,
    log_entries,
    resolve,
    subagent_links,
)
from histstore.history.summary import SessionInfo, open_summary
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
    grep: str | None = None,
) -> list[Item]:
    """Turns newest first, as ``hs log`` gives them; with ``grep``, only those
    whose question or answer holds that text (ignoring case). A turn a marker
    withholds is never searched, so never listed by what it holds."""
    vis = Visibility(Overlay.read(store))
    if not grep:
        entries = log_entries(
            store, session=session, project=project, since=since, limit=limit, agent=agent
        )
        return [_item(store, vis, View.LOG, e, show_all) for e in entries]
    pattern = re.compile(re.escape(grep), re.IGNORECASE)
    out: list[Item] = []
    for e in log_entries(store, session=session, project=project, since=since, agent=agent):
        if limit is not None and len(out) >= limit:
            break
        it = _item(store, vis, View.LOG, e, show_all)
        if it.turn is None:
            continue
        text = f"{it.turn.get('asked') or ''}\n{it.turn.get('answered') or ''}"
        if pattern.search(text):
            out.append(it)
    return out


def short_ids(store: Store, turn_ids: list[str]) -> dict[str, str]:
    """Each turn id as ``hs log --oneline`` abbreviates it: 12 characters, or
    as many more as make it name that turn alone (``hs show`` takes it)."""
    summary = open_summary(store)
    if summary is None:
        return {t: t[:12] for t in turn_ids}
    with summary:
        return summary.abbreviations(turn_ids)


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
            from histstore.history.sources import Sources

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


@dataclass(frozen=True)
class SessionItem:
    """One session as the list of sessions gives it: its id, agent, turn count
    and times always; ``title`` only when no marker withholds the session
    (``withheld``). ``forgotten`` counts its turns the log withholds."""

    session: Session
    withheld: Marker | None
    turns: int
    forgotten: int
    first: str | None  # asked_at of its first turn
    last: str | None  # asked_at of its newest turn

    @property
    def title(self) -> str | None:
        return None if self.withheld is not None else self.session.title

    def as_json(self) -> dict[str, Any]:
        s = self.session
        out: dict[str, Any] = {
            "session_id": s.session_id,
            "agent": s.agent,
            "project": s.project,
            "title": self.title,
            "turns": self.turns,
            "forgotten_turns": self.forgotten,
            "first": self.first,
            "last": self.last,
        }
        if self.withheld is not None:
            out["forgotten"] = {"mode": self.withheld.mode, "since": self.withheld.time}
        return out


def _revisions(store: Store, cache: dict[str, Session] | None) -> list[Session]:
    """Every session's newest revision. With a ``cache`` (revision id ->
    revision, kept by a long-lived caller), only revisions not read before are
    loaded: a revision is immutable, so its id always names the same one; the
    cache is left holding only the current revisions."""
    if cache is None:
        return list(store.sessions())
    out = []
    refs = store.session_refs()
    for sid, rev in refs.items():
        s = cache.get(rev)
        if s is None:
            try:
                s = store.load_session(rev)
            except (NotFound, BadInput) as e:
                raise CorruptStore(f"ref sessions/{sid}: {e}", hint="run hs fsck") from None
            cache[rev] = s
        out.append(s)
    for rev in set(cache) - set(refs.values()):
        del cache[rev]
    return out


def sessions(
    store: Store,
    *,
    project: str | None = None,
    since: str | None = None,
    agent: str | None = None,
    limit: int | None = None,
    cache: dict[str, Session] | None = None,
) -> list[SessionItem]:
    """Sessions newest first (by their newest turn): in ``project`` (a
    directory, compared by project key), with a turn asked since ``since``,
    recorded by ``agent``; a session a marker withholds from the log is
    listed without its title. ``cache``: see :func:`_revisions`."""
    want = project_key(project) if project is not None else None
    vis = Visibility(Overlay.read(store))
    out = []
    for s in _revisions(store, cache):
        if agent is not None and s.agent != agent:
            continue
        if want is not None and s.project != project and project_key(s.project) != want:
            continue
        times = sorted(t.asked_at for t in s.turns)
        if since is not None and (not times or times[-1] < since):
            continue
        marker = vis.session(View.LOG, s.session_id)
        forgotten = 0
        if vis:
            forgotten = sum(
                1 for t in s.turns if vis.turn(View.LOG, s.session_id, t.turn_id) is not None
            )
        first, last = (times[0], times[-1]) if times else (None, None)
        out.append(SessionItem(s, marker, len(s.turns), forgotten, first, last))
    out.sort(key=lambda i: (i.last or "", i.session.session_id), reverse=True)
    return out[:limit] if limit is not None else out


def turn(store: Store, session_id: str, turn_id: str, *, show_all: bool = False) -> Shown:
    """One turn of a known session, as ``hs show`` gives it (a caller that
    found the session elsewhere, such as the recall index, skips the scan of
    every session :func:`show` does to resolve an id). NotFound when the
    session does not hold the turn."""
    s = store.session(session_id)
    entry = next((t for t in s.turns if t.turn_id == turn_id), None)
    if entry is None:
        raise NotFound(f"session {session_id} has no turn {turn_id}")
    vis = Visibility(Overlay.read(store))
    item = _item(store, vis, View.SHOW, LogEntry(entry, s), show_all)
    return Shown("turn", turn_id, item.withheld, s, entry, item.turn)
