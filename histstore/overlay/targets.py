"""What a marker can name, spelled as an overlay target.

A turn or a session is named by its own id. A memory note is named
``memory@<scope>@<type>@<slug>`` (the note ``<type>_<slug>.md`` of a scope):
a ref component like any id, so a note can be forgotten like a turn.
"""

from __future__ import annotations

from histstore.store.kinds import MEMORY_TARGET_PREFIX

MEMORY_PREFIX = MEMORY_TARGET_PREFIX


def memory_target(scope_id: str, type_: str, slug: str) -> str:
    """The target naming the note ``<type>_<slug>.md`` of a scope."""
    return f"{MEMORY_PREFIX}{scope_id}@{type_}@{slug}"


def parse_memory_target(target: str) -> tuple[str, str] | None:
    """(scope id, file name) of a memory target; None when it is not one."""
    if not target.startswith(MEMORY_PREFIX):
        return None
    parts = target[len(MEMORY_PREFIX) :].split("@")
    if len(parts) != 3:
        return None
    return parts[0], f"{parts[1]}_{parts[2]}.md"
