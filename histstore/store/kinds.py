"""Every object kind, as a typed class: parse, serialise, and the ids it names.

An object is a kind and a payload (histstore.store.codec). Every kind but
``blob`` has a JSON payload; each class here is the one place that says what
that payload holds:

=========  ==================  =================================================
kind       class               names (``refs()``)
=========  ==================  =================================================
blob       :class:`Blob`       nothing
turn       :class:`TurnObject` the blobs of its raw records and large outputs
session    :class:`SessionRev` its turns, then its parents
memtree    :class:`MemTree`    the blob of each file
memrev     :class:`MemRev`     its tree, then its parents
marker     :class:`Marker`     the marker it follows, and the heads it joins
=========  ==================  =================================================

``refs()`` lists parents last: a walk that copies objects children first (sync)
relies on it. ``fsck`` checks that every id ``refs()`` gives exists and is of
the kind it says; sync copies exactly what ``refs()`` gives. One function for
both, so the two can never disagree on what an object reaches.

``from_json`` raises :class:`ValueError` for a payload that is not of the kind;
:func:`parse` turns that into :class:`~histstore.errors.CorruptObject`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from histstore.errors import CorruptObject
from histstore.store.codec import canonical_json, decode_json


@dataclass(frozen=True, slots=True)
class Ref:
    """An id an object names, and the kind that object must be."""

    id: str
    kind: str


class Object:
    """What every kind offers (each class sets ``KIND``)."""

    KIND: ClassVar[str]

    def payload(self) -> bytes:
        return canonical_json(self.as_json())

    def as_json(self) -> Any:
        raise TypeError(f"a {self.KIND} has no JSON form")

    def refs(self) -> list[Ref]:
        return []


# --------------------------------------------------------------------------- blob


@dataclass(frozen=True)
class Blob(Object):
    """Bytes as stored: a tool output, a memory note, anything a turn or tree names."""

    KIND: ClassVar[str] = "blob"
    data: bytes

    def payload(self) -> bytes:
        return self.data


# --------------------------------------------------------------------------- turn

#: the fields every stored turn holds (histstore.history.turn documents them all)
TURN_REQUIRED = ("turn_id", "session_id", "project", "asked_at", "asked", "answered")


#: the fields of a step a blob reference can stand in (histstore.history.importing)
BLOB_FIELDS = ("output", "data")


def is_blob_ref(value: Any, keys: frozenset[str] = frozenset({"blob", "size"})) -> bool:
    return isinstance(value, dict) and isinstance(value.get("blob"), str) and set(value) <= keys


def blob_refs(turn: Any) -> Iterator[str]:
    """The blob references of a stored turn, at the only places the store puts
    them: ``raw`` (``{"blob", "lines", "size"}``) and a step's ``output`` or
    ``data`` (``{"blob", "size"}``). Nothing anywhere else is a reference,
    however it is shaped: what came from outside is data."""
    if not isinstance(turn, dict):
        return
    raw = turn.get("raw")
    if isinstance(raw, dict) and is_blob_ref(raw, frozenset({"blob", "lines", "size"})):
        yield raw["blob"]
    steps = turn.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict):
            for key in BLOB_FIELDS:
                if is_blob_ref(step.get(key)):
                    yield step[key]["blob"]


@dataclass(frozen=True)
class TurnObject(Object):
    """A stored turn: the record ``histstore.history.turn`` describes, its raw
    records and large outputs replaced by blob references."""

    KIND: ClassVar[str] = "turn"
    data: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        return self.data

    def refs(self) -> list[Ref]:
        return [Ref(b, "blob") for b in blob_refs(self.data)]

    @classmethod
    def from_json(cls, d: Any) -> TurnObject:
        if not isinstance(d, dict):
            raise ValueError("a turn is not a JSON object")
        missing = [f for f in TURN_REQUIRED if f not in d]
        if missing:
            raise ValueError(f"turn lacks {', '.join(missing)}")
        return cls(d)


# --------------------------------------------------------------------------- session


@dataclass(frozen=True, slots=True)
class TurnEntry:
    """A turn as a session revision lists it."""

    turn_id: str
    object: str
    asked_at: str
    subagent: str | None = None
    #: the turn's own project (its working directory's), which may differ from
    #: the session's: what ``hs log --project`` and the summary match
    project: str | None = None

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "turn_id": self.turn_id,
            "object": self.object,
            "asked_at": self.asked_at,
        }
        if self.subagent:
            d["subagent"] = self.subagent
        if self.project is not None:
            d["project"] = self.project
        return d


def _parents(d: Any) -> list[str]:
    """The ``parents`` of an object: a list of ids, sorted (the one spelling)."""
    parents = d.get("parents")
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise ValueError("parents is not a list of ids")
    if parents != sorted(parents) or len(set(parents)) != len(parents):
        raise ValueError("parents are not sorted and distinct")
    return parents


@dataclass
class SessionRev(Object):
    """A revision of a session as stored: the turns it *adds* (or replaces, by
    turn id) to its first parent's, so recording a turn costs the same whatever
    the session's length. A ``full`` revision holds every turn instead (the
    first of a session, and every merge). ``count`` is the session's number of
    turns at this revision. histstore.store.store.Store.load_session gives the
    whole session (:class:`Session`)."""

    KIND: ClassVar[str] = "session"
    session_id: str
    project: str
    agent: str
    title: str | None
    turns: list[TurnEntry]
    parents: list[str] = field(default_factory=list)
    full: bool = True
    count: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "project": self.project,
            "agent": self.agent,
            "title": self.title,
            "parents": sorted(self.parents),
            "full": self.full,
            "count": self.count,
            "turns": [t.as_json() for t in self.turns],
        }

    def refs(self) -> list[Ref]:
        return [Ref(t.object, "turn") for t in self.turns] + [
            Ref(p, "session") for p in self.parents
        ]

    @classmethod
    def from_json(cls, d: Any) -> SessionRev:
        """Raises ValueError when ``d`` is not a session revision."""
        try:
            rev = cls(
                session_id=d["session_id"],
                project=d["project"],
                agent=d["agent"],
                title=d.get("title"),
                parents=_parents(d),
                full=d["full"],
                count=d["count"],
                turns=[
                    TurnEntry(
                        t["turn_id"],
                        t["object"],
                        t["asked_at"],
                        t.get("subagent"),
                        t.get("project"),
                    )
                    for t in d["turns"]
                ],
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"not a session revision (missing or bad {e})") from None
        texts = [rev.session_id, rev.project, rev.agent] + [
            v for t in rev.turns for v in (t.turn_id, t.object, t.asked_at, t.project or "")
        ]
        if not all(isinstance(v, str) for v in texts):
            raise ValueError("not a session revision (a field is not a string)")
        if not isinstance(rev.full, bool) or not isinstance(rev.count, int):
            raise ValueError("not a session revision (full or count)")
        if not rev.full and len(rev.parents) != 1:
            raise ValueError("not a session revision (a delta has one parent)")
        if rev.title is not None and not isinstance(rev.title, str):
            raise ValueError("not a session revision (title)")
        return rev


@dataclass
class Session:
    """A session at one revision, with every turn: what readers use."""

    session_id: str
    project: str
    agent: str
    title: str | None
    turns: list[TurnEntry]
    #: the revision this is, and its parents
    rev: str = ""
    parents: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "project": self.project,
            "agent": self.agent,
            "title": self.title,
            "revision": self.rev,
            "parents": self.parents,
            "turns": [t.as_json() for t in self.turns],
        }

    @property
    def parent(self) -> str | None:
        """The first parent (the revision before), None for the first."""
        return self.parents[0] if self.parents else None


def materialize(
    rev_id: str,
    load: Callable[[str], SessionRev],
    cache: dict[str, Session] | None = None,
    keep: int = 256,
) -> Session:
    """The session as of revision ``rev_id``, every turn: the revision's turns
    applied, by turn id, over its first parent's, back to the nearest full
    revision (or one in ``cache``, which keeps the ``keep`` newest)."""
    memo = cache if cache is not None else {}
    if rev_id in memo:
        return memo[rev_id]
    chain: list[tuple[str, SessionRev]] = []
    base: Session | None = None
    at: str | None = rev_id
    while at is not None:
        if at in memo:
            base = memo[at]
            break
        rev = load(at)
        chain.append((at, rev))
        at = None if rev.full else rev.parents[0]
    for rid, rev in reversed(chain):
        if rev.full or base is None:
            turns = ordered(rev.turns)
        else:
            by_id = {t.turn_id: t for t in base.turns}
            by_id.update((t.turn_id, t) for t in rev.turns)
            turns = ordered(by_id.values())
        if len(turns) != rev.count:
            raise CorruptObject(rid, f"a revision of {rev.count} turns holds {len(turns)}")
        base = Session(
            rev.session_id, rev.project, rev.agent, rev.title, turns, rid, list(rev.parents)
        )
        memo[rid] = base
        while len(memo) > keep:
            memo.pop(next(iter(memo)))
    assert base is not None
    return base


def ordered(turns: Iterable[TurnEntry]) -> list[TurnEntry]:
    """A session's turns in their order: by ``asked_at``, then turn id."""
    return sorted(turns, key=lambda t: (t.asked_at, t.turn_id))


# --------------------------------------------------------------------------- memory


@dataclass(frozen=True)
class MemTree(Object):
    """A memory folder: file name -> blob id."""

    KIND: ClassVar[str] = "memtree"
    files: dict[str, str]

    def as_json(self) -> dict[str, Any]:
        return {"files": self.files}

    def refs(self) -> list[Ref]:
        return [Ref(b, "blob") for b in self.files.values()]

    @classmethod
    def from_json(cls, d: Any) -> MemTree:
        files = d.get("files") if isinstance(d, dict) else None
        if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in files.items()
        ):
            raise ValueError("not a memory tree")
        return cls(dict(files))


@dataclass(frozen=True)
class MemRev(Object):
    """A revision of a memory scope. ``conflicts`` (a merge made by sync) is
    written only when there are some."""

    KIND: ClassVar[str] = "memrev"
    scope: str
    project: str | None
    tree: str
    parents: list[str]
    time: str
    kind: str
    message: str
    conflicts: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "scope": self.scope,
            "project": self.project,
            "tree": self.tree,
            "parents": sorted(self.parents),
            "time": self.time,
            "kind": self.kind,
            "message": self.message,
        }
        if self.conflicts:
            d["conflicts"] = self.conflicts
        return d

    def refs(self) -> list[Ref]:
        return [Ref(self.tree, "memtree")] + [Ref(p, "memrev") for p in self.parents]

    @classmethod
    def from_json(cls, d: Any) -> MemRev:
        try:
            rev = cls(
                d["scope"],
                d.get("project"),
                d["tree"],
                _parents(d),
                d["time"],
                d["kind"],
                d.get("message") or "",
                list(d.get("conflicts") or []),
            )
        except (KeyError, TypeError) as e:
            raise ValueError(f"not a memory revision (missing or bad {e})") from None
        if not all(isinstance(v, str) for v in (rev.scope, rev.tree, rev.time, rev.kind)):
            raise ValueError("not a memory revision (a field is not a string)")
        if not all(isinstance(p, str) for p in rev.parents):
            raise ValueError("not a memory revision (a parent is not an id)")
        return rev


# --------------------------------------------------------------------------- marker

MARKER_MODES = ("tombstone", "exclude")
MARKER_STATES = ("active", "lifted")
#: what a marker can name: a turn, a session, or a memory note
MARKER_TARGETS = ("turn", "session", "memory")
#: joins a turn's session and id in the name of its overlay ref; no id holds it
TURN_SEPARATOR = "~"
#: starts the target naming a memory note (``memory@<scope>@<type>@<slug>``);
#: no session id may start so, or forgetting it would forge a note's marker
MEMORY_TARGET_PREFIX = "memory@"


@dataclass(frozen=True)
class Marker(Object):
    """What happens to one target from a moment on (histstore.overlay).

    ``parents`` are the markers it follows: none for a target's first marker,
    the one before it for a forget or unforget, and the concurrent heads it
    joins for a merge marker (sync: two parents or more)."""

    KIND: ClassVar[str] = "marker"
    target: str
    target_kind: str  # "turn" | "session" | "memory"
    session: str  # the session that holds the target (itself, for a session; a memory note's scope)
    mode: str  # "tombstone" | "exclude"
    state: str  # "active" | "lifted"
    reason: str
    time: str
    parents: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "target_kind": self.target_kind,
            "session": self.session,
            "mode": self.mode,
            "state": self.state,
            "reason": self.reason,
            "time": self.time,
            "parents": sorted(self.parents),
        }

    @property
    def is_merge(self) -> bool:
        return len(self.parents) > 1

    def refs(self) -> list[Ref]:
        return [Ref(p, "marker") for p in self.parents]

    @classmethod
    def from_json(cls, d: Any) -> Marker:
        try:
            m = cls(
                d["target"],
                d["target_kind"],
                d["session"],
                d["mode"],
                d["state"],
                d.get("reason") or "",
                d["time"],
                tuple(_parents(d)),
            )
        except (KeyError, TypeError, AttributeError):
            raise ValueError("not an overlay marker") from None
        if (
            m.mode not in MARKER_MODES
            or m.state not in MARKER_STATES
            or m.target_kind not in MARKER_TARGETS
        ):
            raise ValueError("not an overlay marker (mode or state)")
        if not all(isinstance(v, str) for v in (m.target, m.session, m.reason, m.time)):
            raise ValueError("not an overlay marker (a field is not a string)")
        return m

    @property
    def ref_target(self) -> str:
        """The name of its overlay ref (``overlay/<name>``): the target's own id
        for a session or a memory note; ``<session>~<turn>`` for a turn, since
        a turn id is unique only within its session (``~`` is in no id)."""
        if self.target_kind == "turn":
            return f"{self.session}{TURN_SEPARATOR}{self.target}"
        return self.target

    def names_ref(self, name: str) -> bool:
        """Whether ``overlay/<name>`` may hold this marker (a turn's marker
        written before turns were session-qualified is named by the turn id)."""
        return name == self.ref_target or (self.target_kind == "turn" and name == self.target)

    @property
    def active(self) -> bool:
        return self.state == "active"

    @property
    def excludes(self) -> bool:
        return self.active and self.mode == "exclude"


# --------------------------------------------------------------------------- any kind

CLASSES: dict[str, type[Any]] = {
    "blob": Blob,
    "turn": TurnObject,
    "session": SessionRev,
    "memtree": MemTree,
    "memrev": MemRev,
    "marker": Marker,
}


def parse(object_id: str, kind: str, payload: bytes) -> Any:
    """The typed object for a verified payload; CorruptObject when the payload
    is not what its kind must hold."""
    if kind == "blob":
        return Blob(payload)
    cls = CLASSES.get(kind)
    if cls is None:
        raise CorruptObject(object_id, f"unknown kind {kind!r}")
    try:
        return cls.from_json(decode_json(object_id, payload))
    except ValueError as e:
        raise CorruptObject(object_id, str(e)) from None


def refs_of(object_id: str, kind: str, payload: bytes) -> list[Ref]:
    """The ids an object names, parents last (fsck checks them, sync copies them)."""
    if kind == "blob":
        return []
    obj: Object = parse(object_id, kind, payload)
    return obj.refs()
