"""Helpers for the sync tests (imported as `synctools`; tests/ is on sys.path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import turn_record, write_turns

from histstore.ops.importing import import_paths
from histstore.store.codec import canonical_json
from histstore.store.oplog import RefChange
from histstore.store.store import Store
from histstore.store.views import view_lines
from histstore.sync.engine import synced_refs


def add_turns(store: Store, tmp: Path, numbers: list[int], **over: Any) -> None:
    """Import turn_record(n) for each n (each in ``over``'s session)."""
    name = (
        f"in-{'-'.join(map(str, numbers[:3]))}-{len(numbers)}-{over.get('session_id', 'a')}.jsonl"
    )
    path = write_turns(tmp / name, [turn_record(n, **over) for n in numbers])
    rep = import_paths(store, [path])
    assert not rep.problems, rep.problems


def write_memory(
    store: Store,
    scope: str,
    files: dict[str, bytes],
    *,
    time: str = "2026-03-01T10:00:00.000Z",
    parents: list[str] | None = None,
    kind: str = "write",
) -> str:
    """A memory revision written directly as objects and a ref move (the format
    issue 5 fixes): blobs, a memtree, a memrev whose parent is the ref's value."""
    ref = f"memory/{scope}"
    with store.lock():
        old = store.refs.read(ref)
        blobs = {name: store.objects.put("blob", data) for name, data in files.items()}
        tree = store.objects.put("memtree", canonical_json({"files": blobs}))
        rev = store.objects.put(
            "memrev",
            canonical_json(
                {
                    "scope": scope,
                    "project": None,
                    "tree": tree,
                    "parents": parents if parents is not None else ([old] if old else []),
                    "time": time,
                    "kind": kind,
                    "message": "test",
                }
            ),
        )
        store.apply([RefChange(ref, old, rev)], f"test memory {scope}")
    return rev


def memory_files(store: Store, scope: str) -> dict[str, bytes]:
    rev = store.refs.read(f"memory/{scope}")
    assert rev is not None
    tree = store.get_json(store.get_json(rev, "memrev")["tree"], "memtree")
    return {name: store.get_blob(blob) for name, blob in tree["files"].items()}


def reachable(store: Store) -> set[str]:
    """Every object the synced refs reach."""
    from histstore.sync.walk import children

    seen: set[str] = set()
    todo = list(synced_refs(store).values())
    while todo:
        oid = todo.pop()
        if oid in seen:
            continue
        seen.add(oid)
        kind, payload = store.objects.get(oid)
        todo += children(oid, kind, payload)
    return seen


def state(store: Store) -> dict[str, Any]:
    """What two synced stores must agree on: the synced refs, the objects they
    reach, the overlay views."""
    return {
        "refs": synced_refs(store),
        "objects": reachable(store),
        "views": view_lines(store.markers().values()),
    }


def ops_count(root: Path) -> int:
    log = root / "refs.log"
    return len(log.read_bytes().splitlines()) if log.exists() else 0


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of a store but the lock and its owner record (a refused command
    may have taken the lock; it holds no content), for "unchanged"."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in ("lock", "lock.owner")
    }


def turn_ids(store: Store) -> set[str]:
    return {t.turn_id for s in store.sessions() for t in s.turns}
