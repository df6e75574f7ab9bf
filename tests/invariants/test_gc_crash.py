"""Invariant 1 for hs gc: killed before any one of its write steps (every
rename, unlink and rmdir it makes, each observed, none on a timer), the store
fsck finds consistent still holds everything a ref reaches, and the next gc
completes."""

from __future__ import annotations

import json
import shutil
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from crashtools import run_killed
from helpers import turn_record, write_turns

from histstore.ops import gc as gcmod
from histstore.ops.fsck import fsck
from histstore.ops.importing import import_paths, record_turn
from histstore.store.store import Store

#: these tests kill writers at chosen points: every fsync must stay on
pytestmark = pytest.mark.durability

LATER = datetime.now(UTC) + timedelta(days=1)  # past every grace period
STEPS = ("replace", "unlink", "rmdir")


def _prepared(root: Path, tmp: Path) -> dict[str, Any]:
    """A store with a big pack, a small one, loose objects, garbage past the
    window, loose refs and a recall index: every kind of gc step."""
    store, _ = Store.init(root)
    recs = [turn_record(i, session_id=f"s{i % 3}", asked=f"q {i} " * 30) for i in range(1, 90)]
    import_paths(store, [write_turns(tmp / "big.jsonl", recs)])
    gcmod.gc(store, now=LATER)
    small = [turn_record(i, session_id="t", asked=f"r {i} " * 30) for i in range(100, 140)]
    op = import_paths(store, [write_turns(tmp / "small.jsonl", small)]).operation
    assert op is not None
    from histstore.ops.undo import undo

    undo(store, op.op)  # its objects: garbage once past the window
    record_turn(store, json.dumps(turn_record(200, session_id="u")))
    store.objects.put("blob", b"stray")
    config = tomllib.loads((root / "config.toml").read_text())
    config["gc"] = {"retention_days": 0}
    (root / "config.toml").write_text(tomli_w.dumps(config))
    reads = {s.session_id: [t.object for t in s.turns] for s in store.sessions()}
    store.close()
    return reads


def _run_killed(root: Path, kill_at: int) -> int:
    """gc in a forked child that dies before its ``kill_at``-th write step;
    returns the steps it took (all, when it lived)."""

    def body(_count: object) -> None:
        with Store.open(root) as s:
            gcmod.gc(s, now=LATER)

    return run_killed(kill_at, STEPS, body)


def _check(root: Path, reads: dict[str, list[str]]) -> None:
    with Store.open(root) as s:
        assert [f for f in fsck(s) if f.severity == "error"] == []
        got = {x.session_id: [t.object for t in x.turns] for x in s.sessions()}
        assert got == reads
        for objs in got.values():
            for o in objs:
                s.get_json(o, "turn")


def test_gc_killed_before_each_write_step(tmp_path: Path) -> None:
    base = tmp_path / "base"
    reads = _prepared(base, tmp_path)
    whole = tmp_path / "whole"
    shutil.copytree(base, whole)
    steps = _run_killed(whole, -1)
    print("gc write steps:", steps)
    assert steps >= 10, "the gc exercised its steps"
    _check(whole, reads)
    for k in range(steps):
        root = tmp_path / f"k{k}"
        shutil.copytree(base, root)
        assert _run_killed(root, k) == k
        _check(root, reads)
        # the next gc completes, and leaves it as a gc that was never killed would
        with Store.open(root) as s:
            gcmod.gc(s, now=LATER)
        _check(root, reads)
        shutil.rmtree(root)
