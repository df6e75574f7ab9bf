"""The overlay: reversible forgetting, as marker objects behind overlay refs.

A *marker* (object kind ``marker``) says what happens to one target — a turn
or a session, by id — from a moment on::

    {"target": "<id>", "target_kind": "turn" | "session" | "memory", "session": "<session id>",
     "mode": "tombstone" | "exclude", "state": "active" | "lifted",
     "reason": "<text>", "ts": "<RFC 3339>", "parent": "<previous marker id>" | null}

``overlay/<target>`` points at the target's newest marker. ``hs forget`` writes
an active marker, ``hs unforget`` a lifted one; the chain of parents keeps the
target's whole history. Turn and session objects are never touched. A
*tombstone* hides a target from recall; an *exclusion* from recall and from
every export. Reads merge the overlay: recall filters its hits through it even
before the index has dropped the rows.

``overlay/tombstones.jsonl`` and ``overlay/exclusions.jsonl`` in the store
directory are views derived from the overlay refs (histstore.store.views).
The marker class itself is histstore.store.kinds.Marker.
"""

from __future__ import annotations

from histstore.store.kinds import MARKER_MODES, MARKER_TARGETS, Marker
from histstore.store.store import OVERLAY_PREFIX, Store

PREFIX = OVERLAY_PREFIX
MODES = MARKER_MODES
#: what a marker can name: a turn, a session, or a memory note
#: (``memory@<scope>@<type>@<slug>``, histstore.overlay.targets)
TARGET_KINDS = MARKER_TARGETS

__all__ = ["MODES", "PREFIX", "TARGET_KINDS", "Marker", "Overlay", "load_marker", "put_marker"]


def load_marker(store: Store, marker_id: str) -> Marker:
    return store.load_marker(marker_id)


def put_marker(store: Store, marker: Marker) -> str:
    return store.objects.put("marker", marker.payload())


class Overlay:
    """The markers of a store, as read now, found by what they name."""

    def __init__(self, markers: dict[str, Marker]) -> None:
        #: ref name (below overlay/) -> that ref's newest marker (active or lifted)
        self.markers = markers
        self.turns: dict[tuple[str, str], Marker] = {}  # (session, turn id)
        self.sessions: dict[str, Marker] = {}
        self.notes: dict[str, Marker] = {}  # memory target
        self.names: dict[tuple[str, str, str], str] = {}  # (kind, session, target) -> ref name
        for name, m in markers.items():
            if m.target_kind == "turn":
                self.turns[(m.session, m.target)] = m
            elif m.target_kind == "session":
                self.sessions[m.target] = m
            else:
                self.notes[m.target] = m
            self.names[(m.target_kind, m.session, m.target)] = name

    @classmethod
    def empty(cls) -> Overlay:
        return cls({})

    @classmethod
    def read(cls, store: Store) -> Overlay:
        """Every overlay ref's newest marker (cheap when nothing was ever forgotten)."""
        return cls(store.markers())

    def active(self) -> list[Marker]:
        return [m for m in self.markers.values() if m.active]

    def ref_name(self, kind: str, session: str, target: str) -> str | None:
        """The ref a target's marker has now (a turn's marker of before
        session-qualified names keeps its name), None when it has none."""
        return self.names.get((kind, session, target))

    def _hits(self, session_id: str, turn_id: str) -> list[Marker]:
        """The active markers on a turn: its own (of its session) and its session's."""
        out = []
        for m in (self.turns.get((session_id, turn_id)), self.sessions.get(session_id)):
            if m is not None and m.active:
                out.append(m)
        return out

    def hides(self, session_id: str, turn_id: str) -> Marker | None:
        """The marker hiding a turn from recall, if any; an exclusion before a
        tombstone, as it hides more."""
        hits = self._hits(session_id, turn_id)
        return next((m for m in hits if m.mode == "exclude"), hits[0] if hits else None)

    def excludes(self, session_id: str, turn_id: str) -> Marker | None:
        """The marker hiding a turn from export too (an exclusion), if any: the
        turn's own or its session's, whatever else marks it."""
        return next((m for m in self._hits(session_id, turn_id) if m.mode == "exclude"), None)

    def __bool__(self) -> bool:
        return any(m.active for m in self.markers.values())
