"""The overlay views: ``overlay/tombstones.jsonl`` and ``overlay/exclusions.jsonl``.

Seed-compatible files derived from the overlay refs, one active marker per
line, sorted by target::

    {"id": "<target>", "ts": "<RFC 3339>", "reason": "<text>"}
    {"id": "<target>", "mode": "exclude", "ts": "<RFC 3339>", "reason": "<text>"}

They must never lag an applied operation, so they are rewritten while an
operation that moves overlay refs is applied (after the ref files, before
``refs.applied`` names it) and when a crashed one is rolled forward. That is
the store's own write path, so they are written here, from the markers alone;
what a marker *means* to a reader is histstore.overlay's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from histstore.store.fsutil import atomic_write
from histstore.store.kinds import Marker

if TYPE_CHECKING:
    from histstore.store.store import Store

FOLDER = "overlay"
NAMES = ("tombstones.jsonl", "exclusions.jsonl")


def view_lines(markers: Iterable[Marker]) -> tuple[bytes, bytes]:
    """The two views' bytes: (tombstones, exclusions)."""
    tomb, excl = [], []
    for m in sorted((m for m in markers if m.active), key=lambda m: m.target):
        if m.mode == "exclude":
            excl.append({"id": m.target, "mode": "exclude", "ts": m.time, "reason": m.reason})
        else:
            tomb.append({"id": m.target, "ts": m.time, "reason": m.reason})

    def dump(rows: list[dict[str, Any]]) -> bytes:
        return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in rows)

    return dump(tomb), dump(excl)


def write_views(store: Store, markers: Iterable[Marker] | None = None) -> None:
    tomb, excl = view_lines(store.markers().values() if markers is None else markers)
    folder: Path = store.root / FOLDER
    atomic_write(folder / NAMES[0], tomb)
    atomic_write(folder / NAMES[1], excl)


def stale_views(store: Store) -> list[str]:
    """The views whose bytes are not what the overlay refs give (fsck)."""
    want = dict(zip(NAMES, view_lines(store.markers().values()), strict=True))
    out = []
    for name, data in want.items():
        try:
            have: bytes | None = (store.root / FOLDER / name).read_bytes()
        except FileNotFoundError:
            have = None
        if have != data and not (have is None and not data):
            out.append(name)
    return out
