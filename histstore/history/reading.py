"""Reading history back: turns newest first, one turn in full, ids by prefix."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from histstore.agents.homes import AGENTS
from histstore.errors import Ambiguous, BadInput, CorruptStore, NotFound
from histstore.history.project import matching_projects, project_key
from histstore.history.summary import SessionInfo, open_summary
from histstore.history.turn import format_time, parse_time
from histstore.store.codec import is_id_prefix, is_object_id
from histstore.store.kinds import BLOB_FIELDS, Session, TurnEntry, is_blob_ref
from histstore.store.store import Store
from histstore.store.upgrading import IdMap

_SINCE = re.compile(r"^(\d+)\s*(h|d|w|m|y)$")
_UNITS = {
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
    "m": timedelta(days=30),
    "y": timedelta(days=365),
}


def parse_since(text: str, now: datetime | None = None) -> str:
    """``2w``, ``3d``, ``12h``, ``1m`` (30 days), ``1y``, or a date/time -> RFC 3339 UTC."""
    t = text.strip().lower()
    m = _SINCE.match(t)
    if m:
        now = now or datetime.now(UTC)
        try:
            return format_time(now - int(m.group(1)) * _UNITS[m.group(2)])
        except (OverflowError, ValueError):
            raise BadInput(f"--since {text!r} reaches before year 1") from None
    try:
        if re.match(r"^\d{4}-\d{2}-\d{2}$", t):
            return format_time(datetime.fromisoformat(t).replace(tzinfo=UTC))
        return format_time(parse_time(text))
    except (BadInput, ValueError):
        raise BadInput(
            f"--since {text!r} is not a time",
            hint="use a span like 2w, 3d, 12h, 1m, or a date like 2026-01-31",
        ) from None


@dataclass(frozen=True)
class LogEntry:
    """A turn as a listing shows it: its entry and its session."""

    entry: TurnEntry
    #: the session, whole (read from the store) or as the summary lists it
    session: Session | SessionInfo

    @property
    def turn_id(self) -> str:
        return self.entry.turn_id


#: the agents hs reads (and "hs", the default of its own turn JSONL)
KNOWN_AGENTS = (*AGENTS, "hs")


def store_agents(store: Store) -> set[str]:
    """The agents this store holds sessions of."""
    summary = open_summary(store)
    if summary is not None:
        with summary:
            return set(summary.counts()["agents"])
    return {s.agent for s in store.sessions()}


def check_agent(store: Store, agent: str | None) -> None:
    """An ``--agent`` value that is a near miss of an agent hs knows or the
    store holds (``Codex``, ``claud-code``) is refused with the name it
    missed: it would match nothing, silently. Any other name is a filter
    (an agent whose turns came as turn JSONL, or none yet)."""
    if agent is None or agent in KNOWN_AGENTS:
        return
    held = store_agents(store)
    if agent in held:
        return
    import difflib

    names = sorted(held | set(KNOWN_AGENTS))
    close = [n for n in names if n.lower() == agent.lower()] or difflib.get_close_matches(
        agent, names, n=1, cutoff=0.8
    )
    if close:
        raise BadInput(
            f"--agent {agent!r}: no such agent (did you mean {close[0]!r}?)",
            hint=f"agents: {', '.join(names)}",
        )


@dataclass(frozen=True)
class ProjectMatch:
    """What ``--project GIVEN`` names: the projects as recorded, and their
    project keys (more than one key: several projects matched)."""

    given: str
    projects: frozenset[str]
    keys: tuple[str, ...]


def match_projects(store: Store, given: str) -> ProjectMatch:
    """The recorded projects ``given`` names (histstore.history.project.
    matching_projects): a directory here, a path with or without a trailing
    slash, or a project's last path component."""
    summary = open_summary(store)
    if summary is not None:
        with summary:
            pairs = summary.projects()
    else:
        pairs = {
            (own, project_key(own))
            for s in store.sessions()
            for own in {t.project or s.project for t in s.turns}
        }
    found = matching_projects(given, pairs)
    keys = tuple(sorted({k for p, k in pairs if p in found}))
    return ProjectMatch(given, frozenset(found), keys)


def log_entries(
    store: Store,
    *,
    session: str | None = None,
    project: str | None = None,
    since: str | None = None,
    limit: int | None = None,
    agent: str | None = None,
) -> list[LogEntry]:
    """Every current turn matching the filters (the turn's own project, as
    :func:`match_projects` reads ``project``), newest first, at most
    ``limit``: from the summary (histstore.history.summary), else by reading
    every session. ``agent`` is compared with each session's (every importer
    gives one agent per session: the one that wrote it)."""
    check_agent(store, agent)
    sid = resolve_session(store, session) if session is not None else None
    if sid is not None:
        rev = store.session_ref(sid)
        if rev is None or not is_object_id(rev):
            raise CorruptStore(f"ref sessions/{sid} does not hold an object id", hint="run hs fsck")
    wanted = match_projects(store, project).projects if project is not None else None
    summary = open_summary(store)
    if summary is not None:
        with summary:
            rows = summary.log(session=sid, projects=wanted, since=since, limit=limit, agent=agent)
        return [LogEntry(r.entry, r.session) for r in rows]
    sessions = [store.session(sid)] if sid is not None else list(store.sessions())
    out = []
    for s in sessions:
        if agent is not None and s.agent != agent:
            continue
        for t in s.turns:
            if wanted is not None and (t.project or s.project) not in wanted:
                continue
            if since is not None and t.asked_at < since:
                continue
            out.append(LogEntry(t, s))
    out.sort(key=lambda e: (e.entry.asked_at, e.entry.turn_id), reverse=True)
    return out if limit is None else out[:limit]


def load_turn(store: Store, object_id: str) -> dict[str, Any]:
    """A turn object a session revision names: missing, it is damage (exit 7)."""
    try:
        turn: dict[str, Any] = store.get_json(object_id, "turn")
    except NotFound:
        raise CorruptStore(
            f"turn object {object_id} is missing, though a session names it",
            hint="run hs fsck (hs fsck --repair rebuilds a pack index that went missing)",
        ) from None
    return turn


@dataclass(frozen=True)
class SubagentLinks:
    """How a turn and sub-agents are linked (Claude Code's Task/Agent calls):
    the sub-agents its calls started, each with the ids of its turns in the
    session, and for a sub-agent's turn, the turn whose call started it."""

    spawned: dict[str, list[str]]
    started_by: str | None


def subagent_links(store: Store, session: Session, turn: dict[str, Any]) -> SubagentLinks:
    extra = turn.get("extra") if isinstance(turn.get("extra"), dict) else {}
    ids = [a for a in (extra or {}).get("subagents") or [] if isinstance(a, str)]
    spawned = {a: [t.turn_id for t in session.turns if t.subagent == a] for a in ids}
    started_by = None
    agent = turn.get("subagent")
    if isinstance(agent, str) and agent:
        for entry in session.turns:
            if entry.subagent:
                continue
            other = load_turn(store, entry.object).get("extra") or {}
            if isinstance(other, dict) and agent in (other.get("subagents") or []):
                started_by = entry.turn_id
                break
    return SubagentLinks(spawned, started_by)


def blob_text(store: Store, ref: Any) -> Any:
    """A value as the agent wrote it: a {"blob": id} reference read back as text."""
    if is_blob_ref(ref):
        return store.get_blob(ref["blob"]).decode("utf-8", errors="replace")
    return ref


def expand_turn(store: Store, turn: dict[str, Any]) -> dict[str, Any]:
    """The turn with every blob reference in its steps replaced by its text."""
    out = dict(turn)
    out["steps"] = [
        {k: blob_text(store, v) if k in BLOB_FIELDS else v for k, v in step.items()}
        for step in turn.get("steps") or []
    ]
    return out


def raw_records(store: Store, turn: dict[str, Any]) -> list[str]:
    raw = turn.get("raw")
    if not raw:
        return []
    text = store.get_blob(raw["blob"]).decode("utf-8")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def resolve_session(store: Store, text: str) -> str:
    if not text.strip():  # a prefix of every session: never taken for the only one
        raise BadInput("the session id is empty", hint="name a session; see them with `hs log`")
    refs = store.session_refs(text)
    if text in refs:
        return text
    found = [s for s in refs if s.startswith(text)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotFound(f"no session matches {text!r}", hint="see the sessions with `hs log`")
    raise Ambiguous(
        f"session prefix {text!r} is ambiguous ({len(found)} matches)",
        found[:10],
        hint="give more of the session id; see them with `hs log`",
    )


@dataclass(frozen=True)
class Resolved:
    """What an id or prefix given on the command line names."""

    kind: str  # "turn" | "session" | "object"
    id: str
    session: Session | SessionInfo | None = None
    entry: TurnEntry | None = None
    #: set when ``text`` was an id the store had in format 1 (hs upgrade)
    old_id: str | None = None


def resolve(store: Store, text: str) -> Resolved:
    """A turn id, a session id or an object id, whole or as a unique prefix.
    A whole session id wins; turn ids are looked up in the summary when there
    is one (else in every session)."""
    text = text.strip()
    if not text:
        raise BadInput("empty id")
    if "~" in text:  # SESSION~TURN: one turn of one session (no id holds a "~")
        return _resolve_in_session(store, *text.split("~", 1))
    refs = store.session_refs(text)
    if text in refs:
        return Resolved("session", text, store.session(text))
    session_hits = [Resolved("session", sid) for sid in refs if sid.startswith(text)]
    turn_hits: list[Resolved] = []
    summary = open_summary(store)
    if summary is not None:
        with summary:
            rows = summary.turns_named(text)
        for r in rows:
            turn_hits.append(Resolved("turn", r.entry.turn_id, r.session, r.entry))
    else:
        for s in store.sessions():
            for t in s.turns:
                if t.turn_id.startswith(text):
                    turn_hits.append(Resolved("turn", t.turn_id, s, t))
    exact = [h for h in turn_hits if h.id == text]
    if len(exact) == 1:
        return exact[0]
    if exact:  # the same turn id in several sessions: say which to name
        raise Ambiguous(
            f"turn {text!r} is in {len(exact)} sessions",
            [f"turn {_session_of(h)}~{h.id}" for h in exact[:10]],
            hint="name one as SESSION~TURN",
        )
    object_hits: list[Resolved] = []
    if is_id_prefix(text.lower()):
        object_hits = [
            Resolved("object", i) for i in sorted(set(store.objects.find_prefix(text.lower())))
        ]
    hits = turn_hits + session_hits + object_hits
    if not hits and is_id_prefix(text.lower()):
        # an id from before hs upgrade: what it is now
        mapped = list(IdMap(store.root).objects(text.lower()))
        hits = [Resolved("object", new, old_id=old) for old, new in mapped[:11]]
    if len(hits) == 1:
        hit = hits[0]
        if hit.kind == "session":
            return Resolved("session", hit.id, store.session(hit.id))
        return hit
    if not hits:
        raise NotFound(
            f"no turn, session or object matches {text!r}",
            hint="see turn and session ids with `hs log`",
        )
    # the summary hands at most 11 turns: more may match than were counted
    more = "at least " if summary is not None and len(turn_hits) >= 11 else ""
    raise Ambiguous(
        f"{text!r} is ambiguous ({more}{len(hits)} matches)",
        [
            f"turn {_session_of(h)}~{h.id}" if h.kind == "turn" else f"{h.kind} {h.id}"
            for h in hits[:10]
        ],
        hint="give more characters of the id",
    )


def _session_of(hit: Resolved) -> str:
    return hit.session.session_id if hit.session is not None else "?"


def _resolve_in_session(store: Store, session_text: str, turn_text: str) -> Resolved:
    """``SESSION~TURN``: the session by id or unique prefix, then its turn by
    id or unique prefix."""
    if not session_text or not turn_text:
        raise BadInput(
            f"{session_text}~{turn_text!s}: give both parts", hint="SESSION~TURN, as hs log shows"
        )
    sid = resolve_session(store, session_text)
    session = store.session(sid)
    found = [t for t in session.turns if t.turn_id == turn_text] or [
        t for t in session.turns if t.turn_id.startswith(turn_text)
    ]
    if not found:
        raise NotFound(
            f"session {sid} has no turn matching {turn_text!r}",
            hint=f"see its turns with `hs log --session {sid}`",
        )
    if len(found) > 1:
        raise Ambiguous(
            f"{turn_text!r} is ambiguous in session {sid} ({len(found)} turns)",
            [f"turn {sid}~{t.turn_id}" for t in found[:10]],
            hint="give more characters of the turn id",
        )
    return Resolved("turn", found[0].turn_id, session, found[0])
