"""``hs status``: what a store holds, read from the summary (constant time
in the store's size, but for the object files it lists)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from histstore.history.project import project_key
from histstore.history.summary import open_summary
from histstore.store.objectstore import DiskObjectStore
from histstore.store.store import Store

#: how many projects ``hs status`` lists by turns
TOP_PROJECTS = 10
#: the operations that capture turns (what "the last capture" is)
CAPTURES = frozenset({"import", "record", "capture"})


def status_info(store: Store, *, changes: bool = True) -> dict[str, Any]:
    """The facts ``hs status`` prints (and its ``--json``); without
    ``changes``, the last operation and capture leave out their ref changes
    (the human view never shows them)."""
    summary = open_summary(store)
    if summary is not None:
        with summary:
            counts = summary.counts()
            top = summary.project_turns(TOP_PROJECTS)
    else:
        sessions = list(store.sessions())
        agents: dict[str, int] = {}
        per_project: dict[str, int] = {}
        for s in sessions:
            agents[s.agent] = agents.get(s.agent, 0) + len(s.turns)
            for t in s.turns:
                k = project_key(t.project or s.project)
                per_project[k] = per_project.get(k, 0) + 1
        counts = {
            "sessions": len(sessions),
            "turns": sum(len(s.turns) for s in sessions),
            "projects": len({project_key(s.project) for s in sessions}),
            "turn_projects": len(per_project),
            "agents": dict(sorted(agents.items())),
            "operations": len(store.operations()),
        }
        top = sorted(per_project.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_PROJECTS]
    objs = store.objects
    parts = sizes(store.root)
    packs = loose = size = 0
    if isinstance(objs, DiskObjectStore):
        packs = len(objs.packs())
        loose = sum(1 for _ in objs.iter_loose())
        size = parts["objects"]
    # the entries as the log holds them, without an object per ref change
    # (an import's names every session it moved), their changes only if asked
    # without changes: what the human view shows, read from the end of a long entry
    last = next(store.refs.newest_first_json(), None) if changes else store.refs.newest_brief()
    capture = (
        last
        if last is not None and _is_capture(last)
        else next((d for d in store.refs.newest_first_json() if _is_capture(d)), None)
    )
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
        "sizes": parts,
        "project_turns": [{"project": k, "turns": n} for k, n in top],
        # the project keys of the turns themselves, as project_turns lists them
        "turn_projects": counts["turn_projects"],
        "last_capture": _entry(capture, changes),
        "operations": counts["operations"],
        "last_operation": _entry(last, changes),
        "memory_scopes": len(store.refs.list_refs("memory/")),
        "memory_dirs": store.config.get("memory", {}).get("dirs", {}),
    }


def _entry(d: dict[str, Any] | None, changes: bool) -> dict[str, Any] | None:
    """A refs-log entry as ``Operation.as_json`` gives it (its keys in that
    order, a missing parent or old value null)."""
    if d is None:
        return None
    out: dict[str, Any] = {
        "op": d["op"],
        "time": d["time"],
        "command": d["command"],
        "parent": d.get("parent"),
    }
    if changes and "changes" in d:
        out["changes"] = [
            {"ref": c["ref"], "old": c.get("old"), "new": c.get("new")} for c in d["changes"]
        ]
    if d.get("extra"):
        out["extra"] = d["extra"]
    return out


def _is_capture(op: dict[str, Any]) -> bool:
    extra = op.get("extra") or {}
    return isinstance(extra, dict) and extra.get("kind") in CAPTURES


#: the parts of a store folder ``hs status`` sizes, by top-level name
PARTS = {
    "objects": "objects",
    "index": "recall index",
    "local": "local",
    "refs": "refs",
    "packed-refs": "refs",
    "refs.log": "refs log",
    "refs.applied": "refs log",
}


def sizes(root: Path) -> dict[str, int]:
    """Bytes on disk under the store folder, by part: ``objects`` (packs and
    loose objects), ``recall index``, ``local`` (the summary and the source
    table), ``refs``, ``refs log``, and ``other`` (config, memory bases, ...)."""
    out = dict.fromkeys(("objects", "recall index", "local", "refs", "refs log", "other"), 0)
    try:
        tops = list(os.scandir(root))
    except OSError:
        return out
    for entry in tops:
        part = PARTS.get(entry.name, "other")
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                for dirpath, _, files in os.walk(entry.path):
                    for name in files:
                        with contextlib.suppress(OSError):
                            out[part] += os.lstat(os.path.join(dirpath, name)).st_size
            else:
                out[part] += entry.stat(follow_symlinks=False).st_size
    return out
