"""Invariant 15 for hs purge: killed before any one of its write steps (every
rename, unlink and rmdir it makes, each observed, none on a timer), the store
fsck finds consistent, and the purge either did not happen (nothing of it
recorded, the content all there) or happened — and then the next command
completes it, leaving no byte of what it removed anywhere under the store."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import leaks
from crashtools import run_killed
from helpers import HS, turn_record, write_turns

from histstore.ops import purge as purging
from histstore.ops import rewrite
from histstore.ops.fsck import fsck
from histstore.ops.importing import import_paths
from histstore.store.store import Store

# These kill the process, not the machine: what it wrote is in the page cache
# whether it was fsynced or not, so fsync stays off (as in every test not
# marked durability) and the many kills stay cheap.

MARK = "ZQX-CRASHME-9931"
STEPS = ("replace", "unlink", "rmdir")


def _prepared(root: Path, tmp: Path, folder: str) -> None:
    """A pack holding both sessions, loose objects, a forgotten turn (the
    views, index generations), the summary and the source table; with a
    ``folder`` holding MARK, MARK in the refs log and the source table too
    (the imported file's path)."""
    store, _ = Store.init(root)
    recs = [turn_record(i, session_id="keep", asked=f"keep {i} " * 20) for i in range(1, 30)]
    recs += [
        turn_record(
            i,
            session_id="gone",
            asked=f"what about {MARK} {i}",
            steps=[
                {
                    "type": "tool",
                    "id": "t",
                    "name": "Bash",
                    "input": {},
                    "output": f"{MARK} {i} " * 60,
                }
            ],
        )
        for i in range(40, 46)
    ]
    where = tmp / folder
    where.mkdir()
    path = write_turns(where / "t.jsonl", recs)
    import_paths(store, [path], command=f"hs import {path}")
    import_paths(store, [write_turns(tmp / "one.jsonl", [turn_record(50, session_id="gone")])])
    from histstore.ops.forget import forget, resolve_target

    t = resolve_target(store, "gone~turn-0041", confirm="gone~turn-0041")
    forget(
        store,
        t,
        mode="tombstone",
        reason=f"has {MARK}",
        confirm="gone~turn-0041",
        command="hs forget",
    )
    from histstore.history.summary import open_summary

    summary = open_summary(store)
    if summary is not None:
        summary.current()
        summary.close()
    store.close()


def _run_killed(
    root: Path, kill_at: int, make: Callable[[], Any], marks: Path | None = None
) -> int:
    """A purge in a forked child that dies before its ``kill_at``-th write
    step; returns the steps it took (all, when it lived). ``marks``: where the
    whole run writes the write step at which each of the purge's phases began
    (``commit``, ``objects``, …)."""

    def body(count: Callable[[], int]) -> None:
        seen: dict[str, int] = {}
        with Store.open(root) as s:
            purging.purge(s, make(), command="hs purge", step=lambda n: seen.setdefault(n, count()))
        if marks is not None:
            marks.write_text(json.dumps(seen))

    return run_killed(kill_at, STEPS, body)


def _consistent(root: Path) -> None:
    with Store.open(root) as s:
        errors = [f for f in fsck(s) if f.severity == "error"]
        assert errors == [], errors


def _check(root: Path, gone: Callable[[Store], bool]) -> bool:
    """After a kill: consistent; the next command completes the purge or
    finds none; then either nothing of it happened or all of it. Whether it
    happened."""
    _consistent(root)
    r = HS()("-C", str(root), "status")  # the next command
    assert r.exit_code == 0, r.stderr
    _consistent(root)
    assert not (root / "purge-pending").exists()
    with Store.open(root) as s:
        done = bool(s.purges.entries())
        assert gone(s) == done
        assert [x.session_id for x in s.sessions()]  # readable
    hits = leaks.scan(root, leaks.Finder([MARK]))
    assert (hits == {}) == done, sorted(hits)[:5]
    return done


def _each_step(
    tmp: Path,
    folder: str,
    make: Callable[[], Any],
    gone: Callable[[Store], bool],
    *,
    dense_to: str,
    every: int,
) -> None:
    base = tmp / "base"
    _prepared(base, tmp, folder)
    whole = tmp / "whole"
    shutil.copytree(base, whole)
    steps = _run_killed(whole, -1, make, tmp / "marks")
    marks = json.loads((tmp / "marks").read_text())
    assert steps >= 10, "the purge exercised its steps"
    assert _check(whole, gone)
    # every step from just before the commit point to the phase ``dense_to``,
    # and (``make test-deep``: every one) one in ``every`` of the rest
    if os.environ.get("HS_HYPOTHESIS_PROFILE") == "deep":
        every = 1
    dense = range(marks["commit"] - 1, marks[dense_to] + 1)
    outcomes = []
    for k in [k for k in range(steps) if k in dense or k % every == 0]:
        root = tmp / f"k{k}"
        shutil.copytree(base, root)
        assert _run_killed(root, k, make) == k
        done = _check(root, gone)
        outcomes.append(done)
        if not done:  # not done: running it again does it
            with Store.open(root) as s:
                purging.purge(s, make(), command="hs purge")
            assert _check(root, gone)
        shutil.rmtree(root)
    # some kills come before the commit point, most after
    assert not all(outcomes) and any(outcomes)


def test_a_session_purge_killed_before_each_write_step(tmp_path: Path) -> None:
    def make() -> Any:
        with Store.open(tmp_path / "base") as s:
            target = purging.resolve(s, "gone", "gone")
        return purging.target_planner(target)

    # every step to the refs' move, then one in six (gc's swap, the local
    # files, the index)
    _each_step(
        tmp_path, "in", make, lambda s: "gone" not in s.session_refs(), dense_to="refs", every=6
    )


def test_a_text_purge_killed_before_each_write_step(tmp_path: Path) -> None:
    def gone(s: Store) -> bool:
        return MARK not in s.refs.log_path.read_text() and "gone" in s.session_refs()

    # what a text purge does that a session's does not, step by step: the
    # commit of its new objects, the refs log rewritten, the refs moved
    _each_step(
        tmp_path,
        f"in-{MARK}",
        lambda: rewrite.text_planner(MARK),
        gone,
        dense_to="refs",
        every=8,
    )
