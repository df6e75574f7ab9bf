"""Invariant 7, as a property: any sequence of operations on two or three stores
(imports into new or existing sessions, forgets and unforgets in either mode,
memory revisions), synced pairwise in any order and direction, then a full round
of syncs, ends with the same refs, the same objects and the same overlay
everywhere; and syncing again changes nothing."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synctools import ops_count, state, write_memory

from histstore.errors import NotFound
from histstore.ops.forget import forget, resolve_target, unforget
from histstore.ops.fsck import fsck
from histstore.ops.importing import import_paths
from histstore.store.store import Store
from histstore.sync.engine import sync

SESSIONS = ["s0", "s1"]
SCOPES = ["system", "p-00000000000000aa"]
FILES = ["a.md", "b.md"]
NOTES = ["user_n0.md", "user_n1.md", "user_n2.md"]  # notes with a line in MEMORY.md
TIMES = [f"2026-03-0{d}T10:00:00.000Z" for d in (1, 2, 3)]

store_ix = st.integers(0, 2)
# forgets are drawn as often as everything else together, so that markers for
# one target are often made apart on two stores (the merges worth testing)
forget_op = st.tuples(
    st.just("forget"),
    store_ix,
    st.sampled_from(SESSIONS),
    st.one_of(st.none(), st.integers(0, 3)),  # a session, or one of its turns
    st.sampled_from(["tombstone", "exclude"]),
)
unforget_op = st.tuples(
    st.just("unforget"),
    store_ix,
    st.sampled_from(SESSIONS),
    st.one_of(st.none(), st.integers(0, 3)),
)
op = st.one_of(
    forget_op,
    unforget_op,
    forget_op,
    unforget_op,
    st.tuples(
        st.just("import"),
        store_ix,
        st.sampled_from(SESSIONS),
        st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True),
        st.integers(0, 1),  # content variant: the same turn recorded differently
    ),
    st.tuples(
        st.just("memory"),
        store_ix,
        st.sampled_from(SCOPES),
        st.sampled_from(FILES),
        st.sampled_from([b"x", b"y", None]),  # None: delete the file
        st.sampled_from(TIMES),
    ),
    st.tuples(
        st.just("index"),
        store_ix,
        st.sampled_from(SCOPES),
        st.sampled_from(NOTES),
        st.sampled_from([0, 1, None]),  # the entry's description, or None: remove the note
        st.sampled_from(TIMES),
    ),
    st.tuples(
        st.just("sync"),
        store_ix,
        store_ix,
        st.sampled_from(["push", "pull", "sync"]),
    ),
)


def _turn(session: str, n: int, variant: int) -> dict[str, Any]:
    return {
        "turn_id": f"{session}-t{n}",  # turn ids unique across sessions
        "session_id": session,
        "project": "/home/dev/app",
        "asked_at": f"2026-03-01T10:0{n}:00Z",
        "asked": f"question {n} of {session}",
        "answered": f"answer v{variant}",
    }


def _import(store: Store, tmp: Path, session: str, turns: list[int], variant: int) -> None:
    import json

    path = tmp / f"in-{session}-{variant}-{'-'.join(map(str, turns))}.jsonl"
    path.write_text("".join(json.dumps(_turn(session, n, variant)) + "\n" for n in turns))
    # the file name is part of each turn (source.file): one name for one content
    rep = import_paths(store, [path])
    assert not rep.problems


def _target(session: str, turn: int | None) -> str:
    return session if turn is None else f"{session}-t{turn}"


def _memory(store: Store, scope: str, name: str, data: bytes | None, time: str) -> None:
    rev = store.refs.read(f"memory/{scope}")
    files: dict[str, bytes] = {}
    if rev is not None:
        tree = store.get_json(store.get_json(rev, "memrev")["tree"], "memtree")
        files = {n: store.get_blob(b) for n, b in tree["files"].items()}
    if data is None:
        files.pop(name, None)
    else:
        files[name] = data
    write_memory(store, scope, files, time=time)


def _index_edit(store: Store, scope: str, note: str, variant: int | None, time: str) -> None:
    """A note written (its MEMORY.md line added or changed) or removed (its line
    too): the index edits two machines make apart, merged by entry."""
    rev = store.refs.read(f"memory/{scope}")
    files: dict[str, bytes] = {}
    if rev is not None:
        tree = store.get_json(store.get_json(rev, "memrev")["tree"], "memtree")
        files = {n: store.get_blob(b) for n, b in tree["files"].items()}
    lines = files.get("MEMORY.md", b"# Memory\n").decode().splitlines()
    line = f"- [{note[:-3]}]({note}) — v{variant}"
    at = [i for i, x in enumerate(lines) if f"]({note})" in x]
    if variant is None:
        lines = [x for i, x in enumerate(lines) if i not in at]
        files.pop(note, None)
    else:
        if at:
            lines[at[0]] = line
        else:
            lines.append(line)
        files[note] = f"note v{variant}\n".encode()
    files["MEMORY.md"] = "".join(x + "\n" for x in lines).encode()
    write_memory(store, scope, files, time=time)


def _sync(stores: list[Store], i: int, j: int, direction: str = "sync") -> None:
    sync(
        stores[i],
        stores[j],
        f"s{j}",
        push=direction in ("push", "sync"),
        pull=direction in ("pull", "sync"),
    )


def run(ops: list[tuple[Any, ...]], n: int, root: Path, *, shared: bool = False) -> None:
    stores = [Store.init(root / f"s{i}")[0] for i in range(n)]
    try:
        if shared:  # every store starts with the same turns: every target everywhere
            for sid in SESSIONS:
                _import(stores[0], root, sid, [0, 1, 2, 3], 0)
            for i in range(n - 1):
                _sync(stores, i, i + 1)
        for o in ops:
            kind, ix = o[0], o[1] % n
            s = stores[ix]
            if kind == "import":
                _import(s, root, o[2], o[3], o[4])
            elif kind == "forget":
                try:
                    t = resolve_target(s, _target(o[2], o[3]))
                except NotFound:
                    continue  # not in this store (yet)
                forget(s, t, mode=o[4], confirm=t.id)
            elif kind == "unforget":
                try:
                    t = resolve_target(s, _target(o[2], o[3]))
                    unforget(s, t, confirm=t.id)
                except NotFound:
                    continue  # nothing forgotten there
            elif kind == "memory":
                _memory(s, o[2], o[3], o[4], o[5])
            elif kind == "index":
                _index_edit(s, o[2], o[3], o[4], o[5])
            elif kind == "sync":
                j = o[2] % n
                if j != ix:
                    _sync(stores, ix, j, o[3])
        # a full round: along the chain and back
        for i in range(n - 1):
            _sync(stores, i, i + 1)
        for i in reversed(range(n - 1)):
            _sync(stores, i, i + 1)
        first = state(stores[0])
        for s in stores[1:]:
            assert state(s) == first
        # syncing again changes nothing: no object, no operation anywhere
        logs = [ops_count(s.root) for s in stores]
        for i in range(n):
            for j in range(n):
                if i != j:
                    rep = sync(stores[i], stores[j], f"s{j}")
                    assert rep.nothing, rep.as_json()
        assert [ops_count(s.root) for s in stores] == logs
        for s in stores:
            assert [f for f in fsck(s) if f.severity == "error"] == []
    finally:
        for s in stores:
            s.close()


@settings(
    max_examples=int(os.environ.get("HS_SYNC_EXAMPLES", "12")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(n=st.integers(2, 3), ops=st.lists(op, min_size=1, max_size=20))
def test_any_order_of_syncs_converges(n: int, ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run(ops, n, Path(tmp))


sync_op = st.tuples(st.just("sync"), store_ix, store_ix, st.sampled_from(["push", "pull", "sync"]))
# three targets only (a session and two of its turns), so stores often mark the same one
few = st.one_of(st.none(), st.integers(0, 1))
forget_few = st.tuples(
    st.just("forget"), store_ix, st.just("s0"), few, st.sampled_from(["tombstone", "exclude"])
)
unforget_few = st.tuples(st.just("unforget"), store_ix, st.just("s0"), few)


@settings(
    max_examples=int(os.environ.get("HS_SYNC_EXAMPLES", "10")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    n=st.integers(2, 3),
    ops=st.lists(st.one_of(forget_few, unforget_few, sync_op), min_size=1, max_size=15),
)
def test_forgets_made_apart_converge(n: int, ops: list[tuple[Any, ...]]) -> None:
    """The overlay alone, on stores that share every target: markers for one
    target made on several stores before they sync (merge markers), then any
    order of syncs; exclusions no other marker saw hold everywhere."""
    with tempfile.TemporaryDirectory() as tmp:
        run(ops, n, Path(tmp), shared=True)


def test_a_forget_and_an_unforget_on_two_machines_converge(tmp_path: Path) -> None:
    """A worked case: an exclusion on one store, its unforget on another after
    they synced, a new turn on a third; then every store agrees."""
    run(
        [
            ("import", 0, "s0", [0, 1], 0),
            ("sync", 0, 1, "sync"),
            ("forget", 1, "s0", 1, "exclude"),
            ("sync", 1, 2, "push"),
            ("unforget", 2, "s0", 1),
            ("import", 2, "s0", [2], 1),
            ("memory", 0, "system", "a.md", b"x", TIMES[0]),
            ("memory", 2, "system", "a.md", b"y", TIMES[0]),
        ],
        3,
        tmp_path,
    )
