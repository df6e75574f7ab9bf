"""``hs status``: what a store holds, read from the summary (constant time
in the store's size, but for the object files it lists)."""

from __future__ import annotations

from typing import Any

from histstore.history.project import project_key
from histstore.history.summary import open_summary
from histstore.store.objectstore import DiskObjectStore
from histstore.store.store import Store


def status_info(store: Store) -> dict[str, Any]:
    """The facts ``hs status`` prints (and its ``--json``)."""
    summary = open_summary(store)
    if summary is not None:
        with summary:
            counts = summary.counts()
    else:
        sessions = list(store.sessions())
        agents: dict[str, int] = {}
        for s in sessions:
            agents[s.agent] = agents.get(s.agent, 0) + len(s.turns)
        counts = {
            "sessions": len(sessions),
            "turns": sum(len(s.turns) for s in sessions),
            "projects": len({project_key(s.project) for s in sessions}),
            "agents": dict(sorted(agents.items())),
            "operations": len(store.operations()),
        }
    objs = store.objects
    packs = loose = size = 0
    if isinstance(objs, DiskObjectStore):
        packs = len(objs.packs())
        loose = sum(1 for _ in objs.iter_loose())
        size = objs.size_on_disk()
    last = store.refs.last_operation()
    return {
        "store": str(store.root),
        "format": store.format_version,
        "id": store.config["store"]["id"],
        "sessions": counts["sessions"],
        "turns": counts["turns"],
        "agents": counts["agents"],
        "projects": counts["projects"],
        "objects": objs.count_fast() if isinstance(objs, DiskObjectStore) else objs.count(),
        "packs": packs,
        "loose_objects": loose,
        "size_bytes": size,
        "operations": counts["operations"],
        "last_operation": last.as_json() if last else None,
        "memory_scopes": len(store.refs.list_refs("memory/")),
        "memory_dirs": store.config.get("memory", {}).get("dirs", {}),
    }
