"""What a tombstone and an exclusion hide, view by view: the one place that decides.

Every read path that hands out stored text — the history views (log, show,
the list of sessions), recall, export, ``forgotten``, and the memory views
(show, diff, restore, log of a note, prompt, recall of notes, an agent's
memory tools) — asks here, and nowhere else, whether
a turn's or a note's text may leave. The porcelain, the plumbing, the MCP
server and export only call these read paths; none decides on its own.

==================  ===========================  ===========================
view                a tombstone                  an exclusion
==================  ===========================  ===========================
log, show, the      withheld: "forgotten since"  withheld: "forgotten since"
list of sessions    (``show_all`` shows it)      (always; ``show_all`` too)
recall              left out                     left out
export              exported                     left out
forgotten, the      its first prompt shown       no text of it, only the id
confirmation and
result of forget
and unforget
memory show, diff,  shown                        refused; its index line
restore, note log                                dropped from any index shown
memory prompt,      left out                     left out (and its index line)
memory recall,
an agent's memory
tools (list, read,
propose)
==================  ===========================  ===========================

A turn is hidden by its own marker or by its session's; an exclusion wins
over a tombstone (it hides more). A lifted marker hides nothing.
"""

from __future__ import annotations

from enum import StrEnum

from histstore.overlay.markers import Marker, Overlay
from histstore.overlay.targets import memory_target, parse_memory_target


class View(StrEnum):
    LOG = "log"
    SHOW = "show"
    RECALL = "recall"
    EXPORT = "export"
    FORGOTTEN = "forgotten"
    MEMORY_SHOW = "memory-show"  # show, diff, restore, log of one note
    MEMORY_PROMPT = "memory-prompt"  # prompt, recall of notes, an agent's memory tools


#: view -> (does a tombstone hide, may show_all lift a tombstone)
_TOMBSTONE = {
    View.LOG: (True, True),
    View.SHOW: (True, True),
    View.RECALL: (True, False),
    View.EXPORT: (False, False),
    View.FORGOTTEN: (False, False),
    View.MEMORY_SHOW: (False, False),
    View.MEMORY_PROMPT: (True, False),
}


def withholds(marker: Marker | None, view: View, show_all: bool = False) -> Marker | None:
    """The marker itself when it withholds its target's text from ``view``, else None."""
    if marker is None or not marker.active:
        return None
    if marker.mode == "exclude":
        return marker  # an exclusion's text leaves through no view
    hides, liftable = _TOMBSTONE[view]
    if not hides or (liftable and show_all):
        return None
    return marker


class Visibility:
    """The overlay as read now, asked view by view."""

    def __init__(self, overlay: Overlay) -> None:
        self.overlay = overlay

    def turn(
        self, view: View, session_id: str, turn_id: str, *, show_all: bool = False
    ) -> Marker | None:
        """The marker that withholds this turn's text from ``view``; None: shown."""
        return withholds(self.overlay.hides(session_id, turn_id), view, show_all)

    def session(self, view: View, session_id: str, *, show_all: bool = False) -> Marker | None:
        """The marker on a whole session that withholds it from ``view``."""
        return withholds(self.overlay.sessions.get(session_id), view, show_all)

    def note(self, view: View, scope_id: str, file: str) -> Marker | None:
        """The marker that withholds a memory note (``<type>_<slug>.md``) from ``view``."""
        type_, sep, rest = file.partition("_")
        if not sep or not rest.endswith(".md"):
            return None  # not a note (an index, another file): no marker names it
        return withholds(
            self.overlay.notes.get(memory_target(scope_id, type_, rest[: -len(".md")])),
            view,
            False,
        )

    def excluded_notes(self, scope_id: str) -> set[str]:
        """The notes of a scope an active exclusion names."""
        out = set()
        for target, marker in self.overlay.notes.items():
            parsed = parse_memory_target(target)
            if marker.excludes and parsed is not None and parsed[0] == scope_id:
                out.add(parsed[1])
        return out

    def __bool__(self) -> bool:
        return bool(self.overlay)
