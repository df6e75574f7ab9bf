"""Invariant 1 for captures: a hook process killed at each point of its work
(os._exit where it is told to die: no cleanup runs, no timer) leaves a store
fsck finds consistent and a spool that the next capture applies, so every
turn the agent wrote is in the store once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_agents import FakeClaude

from histstore.capture.journal import Journal
from histstore.ops.fsck import fsck
from histstore.porcelain.hook import HookArgs, run
from histstore.store.store import Store

pytestmark = pytest.mark.durability

CHILD = r"""
import os, sys
from pathlib import Path
from histstore.capture import journal, apply
from histstore.history import sources
from histstore.store import refs
from histstore.porcelain.hook import HookArgs, run

point = sys.argv[2]

def die():
    os._exit(9)

def after(owner, name):
    real = getattr(owner, name)
    def wrapped(*a, **k):
        out = real(*a, **k)
        die()
    setattr(owner, name, wrapped)

def before(owner, name):
    setattr(owner, name, lambda *a, **k: die())

if point == "after-spool":
    after(journal.Journal, "spool")
elif point == "before-log":
    refs.append_line = lambda path, line: die()
elif point == "after-log":
    after(refs, "append_line")
elif point == "before-sources":
    before(sources.Sources, "record_rows")
elif point == "before-unspool":
    before(journal.Journal, "done")
elif point == "before-refresh":
    before(apply, "refresh")

run(HookArgs(Path(sys.argv[1]), "claude-code"), stdin=sys.stdin.read())
print("returned", flush=True)
"""

POINTS = [
    "after-spool",
    "before-log",
    "after-log",
    "before-sources",
    "before-unspool",
    "before-refresh",
]


@pytest.mark.parametrize("point", POINTS)
def test_a_capture_killed_at_each_point(store_path: Path, point: str) -> None:
    Store.init(store_path)[0].close()
    claude = FakeClaude(Path(os.environ["HOME"]) / ".claude")
    t1 = claude.turn("first", "one")
    run(HookArgs(store_path, "claude-code"), stdin=json.dumps(claude.payload()))
    t2 = claude.turn("second", "two", lag=True)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(store_path), point],
        input=json.dumps(claude.payload(last_assistant_message="two")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr  # it died where it was told to
    assert "returned" not in proc.stdout
    with Store.open(store_path) as s:
        assert [f for f in fsck(s) if f.severity == "error"] == []
    # the agent goes on: its answer written, its next turn and hooks fired
    claude.flush()
    t3 = claude.turn("third", "three")
    run(HookArgs(store_path, "claude-code"), stdin=json.dumps(claude.payload()))
    with Store.open(store_path) as s:
        (session,) = list(s.sessions())
        got = {t.turn_id: s.get_json(t.object, "turn") for t in session.turns}
        assert [f for f in fsck(s) if f.severity == "error"] == []
    assert sorted(got) == sorted([t1, t2, t3]) and len(session.turns) == 3
    assert [got[t]["answered"] for t in (t1, t2, t3)] == ["one", "two", "three"]
    assert Journal.of_store(store_path).spooled() == []
