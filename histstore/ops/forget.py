"""Forget and unforget: a marker, an index commit, then proof the target is gone.

The order (docs/cli.md, "hs forget"):

1. resolve the target (a session or a turn, whole id or unique prefix) and
   check the confirmation names it exactly — nothing is written otherwise;
2. write the marker object and move ``overlay/<target>`` to it, one operation,
   and rewrite the overlay views; from here on every reader's recall hides the
   target (the overlay is merged at read time);
3. catch the index up: the target's documents deleted (or, for an unforget,
   added back) in one commit — a cost that does not grow with the store;
4. confirm with the index that the target is gone, then report success.

If step 3 fails, the marker is rolled back (a new operation restores the ref)
and the index keeps serving its last commit: :class:`RebuildFailed`. If the
target still shows after the commit: :class:`NotConverged`, naming the step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, TypeVar

from histstore.errors import (
    Ambiguous,
    BadInput,
    HistError,
    NotConverged,
    NotFound,
    RebuildFailed,
    Unconfirmed,
)
from histstore.history.reading import check_agent
from histstore.memory import rules as memrules
from histstore.memory.revisions import load_revision, load_tree
from histstore.memory.scopes import PREFIX as MEMORY_PREFIX
from histstore.memory.scopes import TARGET_PREFIX, parse_target
from histstore.overlay.markers import (
    MODES,
    PREFIX,
    Marker,
    Overlay,
    load_marker,
    put_marker,
)
from histstore.overlay.visibility import View, withholds
from histstore.recall.index import RecallIndex
from histstore.store.clock import now_rfc3339
from histstore.store.kinds import TURN_SEPARATOR
from histstore.store.oplog import Operation, RefChange, one_line
from histstore.store.refs import check_component, check_ref_name
from histstore.store.store import Store

T = TypeVar("T")


@dataclass(frozen=True)
class Target:
    """What a forget is about: a session, a turn or a memory note."""

    kind: str  # "session" | "turn" | "memory"
    id: str
    session: str
    turns: int
    first_prompt: str
    in_store: bool = True

    @property
    def qualified(self) -> str:
        """How to name it so that nothing else is meant: a turn as
        ``<session>~<turn>`` (a turn id is unique only in its session)."""
        return f"{self.session}{TURN_SEPARATOR}{self.id}" if self.kind == "turn" else self.id

    def ref(self, store: Store) -> str:
        """Its overlay ref: the one its marker has (a turn's marker of before
        session-qualified names keeps its name), else the qualified name."""
        name = Overlay.read(store).ref_name(self.kind, self.session, self.id)
        return PREFIX + (name if name is not None else self.qualified)

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "session": self.session,
            "turns": self.turns,
            "first_prompt": self.first_prompt,
        }


def resolve_target(store: Store, text: str, *, confirm: str | None = None) -> Target:
    """A session id or a turn id, whole or as a unique prefix; for unforget, also
    the id of a target the overlay holds (it may no longer be in the store).
    Its first prompt (a note's description) is quoted only when the overlay
    lets ``forgotten`` quote it: never for an excluded target, so neither the
    confirmation nor the result of an unforget hands out its text."""
    target = _resolve(store, text, confirm=confirm)
    if target.first_prompt and _withheld(store, target):
        return replace(target, first_prompt="")
    return target


def _withheld(store: Store, target: Target) -> bool:
    """Whether the overlay withholds the target's text from ``forgotten``."""
    overlay = Overlay.read(store)
    if target.kind == "memory":
        marker = overlay.notes.get(target.id)
    elif target.kind == "session":
        marker = overlay.sessions.get(target.id)
    else:
        marker = overlay.hides(target.session, target.id)
    return withholds(marker, View.FORGOTTEN) is not None


def _resolve(store: Store, text: str, *, confirm: str | None) -> Target:
    text = text.strip()
    if not text:
        raise BadInput("no target given", hint="name a session id or a turn id")
    if text.startswith(TARGET_PREFIX):
        return _memory_target(store, text)
    if TURN_SEPARATOR in text:
        return _qualified_turn(store, text)
    # a whole id the confirmation repeats is looked up directly (the index knows
    # a turn's session); anything else is resolved without opening the index,
    # so a refused command touches no file of the store
    whole = _whole_id(store, text) if confirm == text else None
    if whole is not None:
        return whole
    # (kind, id, session, turns, the object whose prompt to show)
    exact: list[tuple[str, str, str, int, str | None]] = []
    near: list[tuple[str, str, str, int, str | None]] = []
    for s in store.sessions():
        if s.session_id.startswith(text):
            first = s.turns[0].object if s.turns else None
            hit = ("session", s.session_id, s.session_id, len(s.turns), first)
            (exact if s.session_id == text else near).append(hit)
        for e in s.turns:
            if e.turn_id.startswith(text):
                hit = ("turn", e.turn_id, s.session_id, 1, e.object)
                (exact if e.turn_id == text else near).append(hit)
    found = exact or near
    if not found:
        overlay = Overlay.read(store)
        marked = [
            m for t, m in overlay.markers.items() if t.startswith(text) or m.target.startswith(text)
        ]
        if len(marked) == 1:
            m = marked[0]
            return Target(m.target_kind, m.target, m.session, 0, "", in_store=False)
        raise NotFound(
            f"no session or turn {text!r} in the store",
            hint="see ids with `hs log --oneline`; forget names one of them",
        )
    if len(found) > 1:
        raise Ambiguous(
            f"target {text!r} is ambiguous ({len(found)} matches)",
            [
                f"{kind} {sid}{TURN_SEPARATOR}{tid}" if kind == "turn" else f"{kind} {tid}"
                for kind, tid, sid, *_ in found[:10]
            ],
            hint=f"give the whole id, or more of it; a turn as SESSION{TURN_SEPARATOR}TURN",
        )
    kind, tid, sid, turns, first = found[0]
    return Target(kind, tid, sid, turns, _first_prompt(store, first) if first else "")


def _qualified_turn(store: Store, text: str) -> Target:
    """``<session>~<turn>``: one turn of one session, each part whole or a
    unique prefix."""
    session_text, _, turn_text = text.partition(TURN_SEPARATOR)
    if not session_text.strip() or not turn_text.strip():  # an empty half matches all
        raise BadInput(f"{text}: give both parts", hint="SESSION~TURN, as hs log shows")
    hits = [
        ((s.session_id, e.turn_id), (s, e))
        for s in store.sessions()
        if s.session_id.startswith(session_text)
        for e in s.turns
        if e.turn_id.startswith(turn_text)
    ]
    found = _one_pair(text, hits, (session_text, turn_text), "matches")
    if found is not None:
        s, e = found
        return Target("turn", e.turn_id, s.session_id, 1, _first_prompt(store, e.object))
    # a turn no longer in the store (its import undone) with a marker:
    # unforget lifts it
    marked = [
        ((sid, tid), m)
        for (sid, tid), m in Overlay.read(store).turns.items()
        if sid.startswith(session_text) and tid.startswith(turn_text)
    ]
    m = _one_pair(text, marked, (session_text, turn_text), "forgotten turns")
    if m is not None:
        return Target("turn", m.target, m.session, 0, "", in_store=False)
    raise NotFound(f"no turn {text!r} in the store", hint="see ids with `hs log --oneline`")


def _one_pair(
    text: str, pairs: list[tuple[tuple[str, str], T]], whole: tuple[str, str], what: str
) -> T | None:
    """What the (session, turn) ``whole`` names among ``pairs`` (each found by
    prefix): the pair with both ids whole, else the only one; None for none;
    Ambiguous when several."""
    found = [p for p in pairs if p[0] == whole] or pairs
    if len(found) > 1:
        raise Ambiguous(
            f"target {text!r} is ambiguous ({len(found)} {what})",
            [f"turn {sid}{TURN_SEPARATOR}{tid}" for (sid, tid), _ in found[:10]],
            hint="give more of the ids",
        )
    return found[0][1] if found else None


def _whole_id(store: Store, text: str) -> Target | None:
    """A whole session id (its ref) or a whole turn id (the recall index knows its
    session): found without reading every session. None: look further."""
    try:
        rev = store.session_ref(text)
    except BadInput:
        return None
    if rev is not None:
        s = store.load_session(rev)
        first = _first_prompt(store, s.turns[0].object) if s.turns else ""
        turn_hit = RecallIndex(store).sessions_of(text)
        if not turn_hit:
            return Target("session", s.session_id, s.session_id, len(s.turns), first)
        return None  # also a turn id: let the full scan report the ambiguity
    # the sessions holding it: those the index knows, and those where it is
    # forgotten (not in the index: by its own marker, or its session's) — one
    # session is the target, several make it ambiguous (the full scan says so)
    overlay = Overlay.read(store)
    found = set(RecallIndex(store).sessions_of(text))
    found |= {sid for (sid, tid) in overlay.turns if tid == text}
    entries: dict[str, Any] = {}
    for sid in sorted(found | set(overlay.sessions)):
        rev = store.session_ref(sid)
        entry = None
        if rev is not None:
            entry = next((t for t in store.load_session(rev).turns if t.turn_id == text), None)
        if entry is not None:
            entries[sid] = entry
    if len(entries) != 1:
        return None
    ((sid, entry),) = entries.items()
    return Target("turn", text, sid, 1, _first_prompt(store, entry.object))


def _memory_note(store: Store, target: str) -> tuple[str, str] | None:
    """(scope id, description) of the memory note a target names, when the
    scope's newest revision holds it."""
    parsed = parse_target(target)
    if parsed is None:
        return None
    scope_id, file = parsed
    try:
        rev = store.refs.read(MEMORY_PREFIX + check_component(scope_id, "memory scope"))
    except BadInput:
        return None
    if rev is None:
        return None
    files = load_tree(store, load_revision(store, rev).tree)
    if file not in files:
        return None
    note, _ = memrules.parse_note(file, store.get_blob(files[file]))
    return scope_id, one_line(note.description, 100) if note else ""


def _memory_target(store: Store, text: str) -> Target:
    parsed = parse_target(text)
    if parsed is None:
        raise BadInput(
            f"{text!r} is not a memory target",
            hint="memory@<scope>@<type>@<slug>, as `hs memory show --json` gives it",
        )
    found = _memory_note(store, text)
    if found is not None:
        return Target("memory", text, found[0], 0, found[1])
    marker = Overlay.read(store).markers.get(text)
    if marker is not None:
        return Target("memory", text, marker.session, 0, "", in_store=False)
    raise NotFound(
        f"no memory note {parsed[1]} in scope {parsed[0]}",
        hint="record the directory first (`hs memory snapshot`), then forget the note",
    )


def _first_prompt(store: Store, object_id: str) -> str:
    turn = store.get_json(object_id, "turn")
    return one_line(str(turn.get("asked") or ""), 100)


def check_confirmation(target: Target, confirm: str | None) -> None:
    if confirm is None or confirm not in (target.id, target.qualified):
        given = "no confirmation given" if confirm is None else f"the confirmation {confirm!r}"
        raise Unconfirmed(
            f"unconfirmed-target: {given} is not {target.kind} {target.id}",
            hint=f"repeat the exact id: --confirm {target.id}",
        )


@dataclass
class ForgetResult:
    """A forget or unforget done: its marker, operation and index generation."""

    target: Target
    marker: Marker
    marker_id: str
    operation: Operation | None
    generation: str | None
    changed: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target.as_json(),
            "mode": self.marker.mode,
            "state": self.marker.state,
            "reason": self.marker.reason,
            "time": self.marker.time,
            "marker": self.marker_id,
            "operation": self.operation.op if self.operation else None,
            "rebuilt": self.changed and self.target.kind != "memory",
            "generation": self.generation,
        }


def _set_marker(
    store: Store, target: Target, make: Any, command: str
) -> tuple[Marker, str, str | None, Operation | None]:
    """Under the lock: the target's marker moved to ``make(previous)``; returns
    (marker, its id, the ref's old value, the operation or None if unchanged)."""
    ref = target.ref(store)
    check_ref_name(ref)
    with store.lock():
        old = store.refs.read(ref)
        previous = load_marker(store, old) if old else None
        marker = make(previous, old)
        if marker is None:
            assert previous is not None and old is not None
            return previous, old, old, None
        marker_id = put_marker(store, marker)
        op = store.apply(
            [RefChange(ref, old, marker_id)],
            command,
            extra={"kind": "overlay", "target": target.id},
        )
    return marker, marker_id, old, op


def _follow_or_roll_back(
    store: Store, target: Target, ref_old: str | None, marker_id: str, command: str
) -> str | None:
    """The index catches up to the marker (one commit), or the marker goes back."""
    index = RecallIndex(store)
    before = _index_state(index)
    try:
        index.catch_up()
        return index.status().generation
    except Exception as e:
        if _index_state(index) != before:
            # the index took the marker before the failure: it serves
            return index.status().generation
        try:
            with store.lock():
                store.apply(
                    [RefChange(target.ref(store), marker_id, ref_old)],
                    f"{command} (rolled back: rebuild failed)",
                    extra={"kind": "overlay-rollback", "target": target.id},
                )
        except HistError as again:
            raise NotConverged(
                f"blocked-non-converged: marker {marker_id[:12]} for {target.kind} {target.id} "
                f"stands but the index could not be updated ({e}), and rolling the marker back "
                f"failed too ({again}) (failed step: rollback)",
                hint="recall hides the target all the same; run `hs plumbing index-build`",
            ) from None
        raise RebuildFailed(
            f"rebuild-failed: the index could not be updated ({e}); the marker for "
            f"{target.kind} {target.id} was rolled back and the index serves as before",
            hint="the marker is as it was before this command; fix the cause "
            "(disk space?) and run it again",
        ) from None


def _index_state(index: RecallIndex) -> tuple[str | None, str | None]:
    """(the generation CURRENT names, the last operation it applied), or the
    same for an index that cannot be read."""
    try:
        gen = index.gens.current()
    except HistError:
        return None, None
    return (gen.name, gen.applied_op) if gen else (None, None)


def forget(
    store: Store,
    target: Target,
    *,
    mode: str = "tombstone",
    reason: str = "",
    confirm: str | None,
    command: str = "hs forget",
) -> ForgetResult:
    if mode not in MODES:
        raise BadInput(f"unknown mode {mode!r}", hint="tombstone (default) or exclude")
    if not target.in_store:
        raise NotFound(f"{target.kind} {target.id} is not in the store: nothing to forget")
    check_confirmation(target, confirm)
    reason = one_line(store.redactor(reason), 500)

    def make(previous: Marker | None, previous_id: str | None) -> Marker | None:
        if (
            previous is not None
            and previous.active
            and (previous.mode == mode or previous.mode == "exclude")
        ):
            # already forgotten this way, or more (an exclusion also hides from
            # recall): a forget never weakens what is hidden; unforget first
            return None
        return Marker(
            target.id,
            target.kind,
            target.session,
            mode,
            "active",
            reason,
            now_rfc3339(),
            () if previous_id is None else (previous_id,),
        )

    marker, marker_id, old, op = _set_marker(store, target, make, command)
    if op is None or target.kind == "memory":
        # a memory note is not in the recall index: the overlay alone hides it
        return ForgetResult(
            target, marker, marker_id, op, RecallIndex(store).status().generation, op is not None
        )
    generation = _follow_or_roll_back(store, target, old, marker_id, command)
    left = RecallIndex(store).holds(
        session_id=target.session, turn_id=target.id if target.kind == "turn" else None
    )
    if left:
        raise NotConverged(
            f"blocked-non-converged: marker {marker_id[:12]} for {target.kind} {target.id} is "
            f"recorded (operation {op.op}), but generation {generation} still holds {left} of "
            "its turns after the commit (failed step: confirm)",
            hint="recall hides it all the same (the overlay is merged at read time); "
            "run `hs plumbing index-build`",
        )
    return ForgetResult(target, marker, marker_id, op, generation, True)


def unforget(
    store: Store, target: Target, *, confirm: str | None, command: str = "hs unforget"
) -> ForgetResult:
    check_confirmation(target, confirm)

    def make(previous: Marker | None, previous_id: str | None) -> Marker | None:
        if previous is None:
            raise NotFound(f"{target.kind} {target.id} is not forgotten", hint="see `hs forgotten`")
        if not previous.active:
            return None
        return Marker(
            previous.target,
            previous.target_kind,
            previous.session,
            previous.mode,
            "lifted",
            previous.reason,
            now_rfc3339(),
            (previous_id,) if previous_id else (),
        )

    marker, marker_id, old, op = _set_marker(store, target, make, command)
    if op is None or target.kind == "memory":
        return ForgetResult(
            target, marker, marker_id, op, RecallIndex(store).status().generation, op is not None
        )
    generation = _follow_or_roll_back(store, target, old, marker_id, command)
    return ForgetResult(target, marker, marker_id, op, generation, True)


@dataclass(frozen=True)
class Forgotten:
    """An active marker as ``hs forgotten`` lists it."""

    marker: Marker
    marker_id: str
    hides: int  # turns of the store it hides (0: stale, the target is not in the store)
    first_prompt: str
    #: the agent of the target's session (None: a memory note, or not in the store)
    agent: str | None = None

    @property
    def stale(self) -> bool:
        return self.hides == 0

    def as_json(self) -> dict[str, Any]:
        d = self.marker.as_json()
        d.update(marker=self.marker_id, hides=self.hides, stale=self.stale)
        d["first_prompt"] = self.first_prompt
        d["agent"] = self.agent
        return d


def forgotten(store: Store, *, agent: str | None = None) -> list[Forgotten]:
    """Every active marker, newest first, with what it hides in the store now.
    The first prompt (a note's description) is given for a tombstone only: an
    exclusion's target is counted, never quoted (histstore.overlay.visibility).
    With ``agent``, only the markers of that agent's sessions and turns (a
    memory note's marker, or one whose session is not in the store, has none)."""
    check_agent(store, agent)
    overlay = Overlay.read(store)
    refs = store.refs.list_refs(PREFIX)
    sessions = {s.session_id: s for s in store.sessions()} if overlay else {}
    out = []
    for m in overlay.active():
        s = sessions.get(m.session)
        if agent is not None and (m.target_kind == "memory" or s is None or s.agent != agent):
            continue
        quote = withholds(m, View.FORGOTTEN) is None
        first: str | None = None  # the object whose first prompt to quote
        if m.target_kind == "memory":
            note = _memory_note(store, m.target)
            hides, text = (1, note[1]) if note else (0, "")
        elif s is None:
            hides, text = 0, ""
        elif m.target_kind == "session":
            hides, text = len(s.turns), ""
            first = s.turns[0].object if s.turns else None
        else:
            entry = next((e for e in s.turns if e.turn_id == m.target), None)
            hides, text = (1 if entry else 0), ""
            first = entry.object if entry else None
        if not quote:
            text = ""
        elif first is not None:
            text = _first_prompt(store, first)
        name = overlay.ref_name(m.target_kind, m.session, m.target) or m.ref_target
        who = s.agent if s is not None and m.target_kind != "memory" else None
        out.append(Forgotten(m, refs[PREFIX + name], hides, text, who))
    out.sort(key=lambda f: f.marker.time, reverse=True)
    return out
