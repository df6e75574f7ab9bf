"""One object of every kind: parse and serialise round-trip, and fsck and the
sync walk agree on what each reaches (both use the kind's ``refs()``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from histstore.ops.fsck import fsck
from histstore.store.codec import canonical_json
from histstore.store.kinds import (
    CLASSES,
    Blob,
    Marker,
    MemRev,
    MemTree,
    SessionRev,
    TurnEntry,
    TurnObject,
    parse,
    refs_of,
)
from histstore.store.objectstore import MemoryObjectStore
from histstore.store.store import Store
from histstore.sync.walk import walk_missing


def one_of_each(store: Store) -> dict[str, str]:
    """kind -> the id of one object of it, each naming objects of other kinds."""
    put = store.objects.put
    raw = put("blob", b"raw record\n")
    out_blob = put("blob", b"x" * 600)
    turn = TurnObject(
        {
            "turn_id": "t1",
            "session_id": "s1",
            "project": "/p",
            "asked_at": "2026-01-01T00:00:00.000Z",
            "asked": "q",
            "answered": "a",
            "raw": {"blob": raw, "lines": 1, "size": 11},
            "steps": [{"type": "tool", "output": {"blob": out_blob, "size": 600}}],
        }
    )
    turn_id = put("turn", turn.payload())
    entry = TurnEntry("t1", turn_id, "2026-01-01T00:00:00.000Z")
    first = SessionRev("s1", "/p", "hs", None, [entry], count=1)
    first_id = put("session", first.payload())
    # a delta: the turn revised, over its parent
    second = SessionRev("s1", "/p", "hs", "title", [entry], parents=[first_id], full=False, count=1)
    session_id = put("session", second.payload())
    note = put("blob", b"note")
    tree_id = put("memtree", MemTree({"a.md": note}).payload())
    rev0 = put("memrev", MemRev("system", None, tree_id, [], "t", "snapshot", "m").payload())
    rev_id = put("memrev", MemRev("system", None, tree_id, [rev0], "t", "write", "m").payload())
    m0 = Marker("t1", "turn", "s1", "tombstone", "active", "", "t0")
    m0_id = put("marker", m0.payload())
    m1 = Marker("t1", "turn", "s1", "exclude", "active", "", "t1")
    m1_id = put("marker", m1.payload())
    merge = Marker("t1", "turn", "s1", "exclude", "active", "", "t2", tuple(sorted((m0_id, m1_id))))
    marker_id = put("marker", merge.payload())
    return {
        "blob": raw,
        "turn": turn_id,
        "session": session_id,
        "memtree": tree_id,
        "memrev": rev_id,
        "marker": marker_id,
    }


def closure(store: Store, root: str) -> set[str]:
    """Every id reachable from ``root`` by following refs() (root included)."""
    seen, todo = set(), [root]
    while todo:
        oid = todo.pop()
        if oid in seen:
            continue
        seen.add(oid)
        kind, payload = store.objects.get(oid)
        todo += [r.id for r in refs_of(oid, kind, payload)]
    return seen


def test_every_kind_round_trips(store: Store) -> None:
    ids = one_of_each(store)
    assert set(ids) == set(CLASSES)
    for kind, oid in ids.items():
        got_kind, payload = store.objects.get(oid)
        assert got_kind == kind
        obj = parse(oid, kind, payload)
        assert obj.payload() == payload, kind
        if kind != "blob":
            assert canonical_json(obj.as_json()) == payload
    assert isinstance(parse(ids["blob"], "blob", b"raw record\n"), Blob)


@pytest.mark.parametrize("kind", ["blob", "turn", "session", "memtree", "memrev", "marker"])
def test_the_sync_walk_copies_exactly_what_refs_reach(store: Store, kind: str) -> None:
    root = one_of_each(store)[kind]
    emitted: list[str] = []

    def emit(oid: str, k: str, payload: bytes) -> None:
        emitted.append(oid)

    walk_missing(store.objects, MemoryObjectStore(), [root], emit)
    assert set(emitted) == closure(store, root)
    # children first: nothing is emitted before what it names
    for i, oid in enumerate(emitted):
        kind_i, payload = store.objects.get(oid)
        assert {r.id for r in refs_of(oid, kind_i, payload)} <= set(emitted[:i])


def test_fsck_misses_no_id_that_refs_name(tmp_path: Path, store: Store) -> None:
    """Each id an object names, taken away in turn, is a reachability error
    naming that object: fsck checks exactly what refs() lists, markers'
    parents and merged heads included."""
    ids = one_of_each(store)
    assert [f for f in fsck(store) if f.severity == "error"] == []
    every: set[str] = set()
    for root in ids.values():
        every |= closure(store, root)
    named: dict[str, set[str]] = {}
    for oid in every:
        kind, payload = store.objects.get(oid)
        for r in refs_of(oid, kind, payload):
            named.setdefault(r.id, set()).add(oid)
    assert named, "the objects name nothing"
    for missing, holders in sorted(named.items()):
        copy = tmp_path / f"copy-{missing[:8]}"
        shutil.copytree(store.root, copy)
        (copy / "objects" / missing[:2] / missing[2:]).unlink()
        with Store.open(copy) as damaged:
            found: dict[str, Any] = {
                f.subject: f.message
                for f in fsck(damaged)
                if f.check == "reachability" and missing in f.message
            }
        assert set(found) == holders, (missing, found)
