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
directory are views derived from the overlay refs, rewritten atomically after
every change (``hs fsck`` checks them)::

    {"id": "<id>", "ts": "<RFC3339>", "reason": "<text>"}
    {"id": "<id>", "mode": "exclude", "ts": "<RFC3339>", "reason": "<text>"}
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.errors import CorruptObject
from histstore.store.codec import canonical_json
from histstore.store.fsutil import atomic_write
from histstore.store.store import Store

PREFIX = "overlay/"
MODES = ("tombstone", "exclude")
#: what a marker can name: a turn, a session, or a memory note
#: (``memory@<scope>@<type>@<slug>``, histstore.memory.target_id)
TARGET_KINDS = ("turn", "session", "memory")


@dataclass(frozen=True)
class Marker:
    target: str
    target_kind: str  # "turn" | "session" | "memory"
    session: str  # the session that holds the target (itself, for a session; a memory note's scope)
    mode: str  # "tombstone" | "exclude"
    state: str  # "active" | "lifted"
    reason: str
    ts: str
    parent: str | None

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "target_kind": self.target_kind,
            "session": self.session,
            "mode": self.mode,
            "state": self.state,
            "reason": self.reason,
            "ts": self.ts,
            "parent": self.parent,
        }

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
                d["ts"],
                d.get("parent"),
            )
        except (KeyError, TypeError):
            raise ValueError("not an overlay marker") from None
        if (
            m.mode not in MODES
            or m.state not in ("active", "lifted")
            or m.target_kind not in TARGET_KINDS
        ):
            raise ValueError("not an overlay marker (mode or state)")
        return m

    @property
    def active(self) -> bool:
        return self.state == "active"

    @property
    def excludes(self) -> bool:
        return self.active and self.mode == "exclude"


def load_marker(store: Store, marker_id: str) -> Marker:
    try:
        return Marker.from_json(store.get_json(marker_id, "marker"))
    except ValueError as e:
        raise CorruptObject(marker_id, str(e)) from None


def put_marker(store: Store, marker: Marker) -> str:
    return store.objects.put("marker", canonical_json(marker.as_json()))


class Overlay:
    """The active markers of a store, as read now."""

    def __init__(self, markers: dict[str, Marker]) -> None:
        self.markers = markers  # target -> newest marker (active or lifted)

    @classmethod
    def empty(cls) -> Overlay:
        return cls({})

    @classmethod
    def read(cls, store: Store) -> Overlay:
        """Every overlay ref's newest marker. Cheap when nothing was ever forgotten:
        one look at refs/overlay."""
        folder = store.root / "refs" / "overlay"
        try:
            if not any(os.scandir(folder)):
                return cls.empty()
        except FileNotFoundError:
            return cls.empty()
        n = len(PREFIX)
        return cls(
            {
                ref[n:]: load_marker(store, marker_id)
                for ref, marker_id in store.refs.list_refs(PREFIX).items()
            }
        )

    def active(self) -> list[Marker]:
        return [m for m in self.markers.values() if m.active]

    def _hits(self, session_id: str, turn_id: str) -> list[Marker]:
        """The active markers on a turn: its own and its session's."""
        out = []
        for key, kind in ((turn_id, "turn"), (session_id, "session")):
            m = self.markers.get(key)
            if m is not None and m.active and m.target_kind == kind:
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


def view_lines(overlay: Overlay) -> tuple[bytes, bytes]:
    """The two seed-compatible views, one object per line, sorted by id."""
    tomb, excl = [], []
    for m in sorted(overlay.active(), key=lambda m: m.target):
        if m.mode == "exclude":
            excl.append({"id": m.target, "mode": "exclude", "ts": m.ts, "reason": m.reason})
        else:
            tomb.append({"id": m.target, "ts": m.ts, "reason": m.reason})

    def dump(rows: list[dict[str, Any]]) -> bytes:
        return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in rows)

    return dump(tomb), dump(excl)


def write_views(store: Store, overlay: Overlay | None = None) -> None:
    tomb, excl = view_lines(overlay if overlay is not None else Overlay.read(store))
    folder: Path = store.root / "overlay"
    atomic_write(folder / "tombstones.jsonl", tomb)
    atomic_write(folder / "exclusions.jsonl", excl)
