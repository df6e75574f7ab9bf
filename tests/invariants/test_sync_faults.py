"""Sync under faults: killed at each step, run by two processes into one remote at
once, and after a writer died holding a store's lock."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import HS
from synctools import add_turns, state, turn_ids, write_memory

from histstore.ops.forget import forget, resolve_target
from histstore.ops.fsck import fsck
from histstore.store.store import Store
from histstore.sync.engine import sync

#: these tests kill writers at chosen points: every fsync must stay on
pytestmark = pytest.mark.durability

# The child syncs store A with store B both ways, dying at the chosen point as a
# kill would (os._exit: no cleanup, no lock released by Python).
CHILD = r"""
import os, sys
from pathlib import Path
from histstore.store import objectstore
from histstore.store import refs
from histstore.sync import engine as sync_mod
from histstore.store import Store

point = sys.argv[3]

def die():
    os._exit(9)

if point == "mid-copy-loose":
    real = objectstore.atomic_write
    n = [0]
    def atomic(path, data, **kw):
        if "pack" not in str(path):
            n[0] += 1
            if n[0] == 3:
                die()
        return real(path, data, **kw)
    objectstore.atomic_write = atomic
elif point == "mid-copy-pack":
    real = objectstore.atomic_write
    def atomic(path, data, **kw):
        if path.suffix == ".idx":
            die()
        return real(path, data, **kw)
    objectstore.atomic_write = atomic
elif point == "merge-objects":
    def get(self, object_id):
        die()
    sync_mod._Made.get = get
elif point in ("before-remote-log", "after-remote-log", "before-local-log", "after-local-log"):
    real_append = refs.append_line
    calls = [0]
    nth = 1 if "remote" in point else 2
    def append(path, line):
        calls[0] += 1
        if calls[0] == nth and point.startswith("before"):
            die()
        real_append(path, line)
        if calls[0] == nth:
            die()
    refs.append_line = append
elif point == "half-the-local-refs":
    real_write = refs.RefStore._write_ref
    def write_ref(self, name, value, *, sync):
        if self.root == Path(sys.argv[1]) and name.startswith("remotes/"):
            die()
        return real_write(self, name, value, sync=sync)
    refs.RefStore._write_ref = write_ref
elif point == "before-local-applied":
    real_atomic = refs.atomic_write
    def atomic2(path, data, **kw):
        if path.name == "refs.applied" and path.parent == Path(sys.argv[1]):
            die()
        return real_atomic(path, data, **kw)
    refs.atomic_write = atomic2
elif point == "before-index":
    sync_mod.refresh_after_pull = lambda *a, **k: die()

a = Store.open(Path(sys.argv[1]))
b = Store.open(Path(sys.argv[2]))
sync_mod.sync(a, b, "b")
print("acknowledged", flush=True)
"""

POINTS = [
    "mid-copy-loose",
    "mid-copy-pack",
    "merge-objects",
    "before-remote-log",
    "after-remote-log",
    "before-local-log",
    "after-local-log",
    "half-the-local-refs",
    "before-local-applied",
    "before-index",
]
INSIDE_THE_LOCKS = POINTS[2:-1]


def no_errors(store: Store) -> None:
    errors = [f for f in fsck(store) if f.severity == "error"]
    assert errors == [], errors


def diverged(tmp_path: Path) -> tuple[Path, Path]:
    """Two stores that synced once, then both changed: turns in one session on
    both sides, 40 new turns on one side (a pack), a forget, memory on both."""
    pa, pb = tmp_path / "a", tmp_path / "b"
    a, _ = Store.init(pa)
    b, _ = Store.init(pb)
    add_turns(a, tmp_path, [1, 2], session_id="s")
    write_memory(a, "system", {"m.md": b"0"})
    sync(a, b, "b")
    add_turns(a, tmp_path, [3, 4], session_id="s")
    add_turns(a, tmp_path, list(range(100, 140)), session_id="big")
    write_memory(a, "system", {"m.md": b"left"}, time="2026-03-02T00:00:00.000Z")
    add_turns(b, tmp_path, [5, 6], session_id="s")
    t = resolve_target(b, "turn-0001")
    forget(b, t, mode="exclude", confirm=t.id)
    write_memory(b, "system", {"m.md": b"right", "n.md": b"new"}, time="2026-03-03T00:00:00.000Z")
    a.close()
    b.close()
    return pa, pb


@pytest.mark.parametrize("point", POINTS)
def test_a_sync_killed_at_each_step(tmp_path: Path, point: str) -> None:
    pa, pb = diverged(tmp_path)
    with Store.open(pa) as a, Store.open(pb) as b:
        had_a, had_b = turn_ids(a), turn_ids(b)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(pa), str(pb), point],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr  # it died where it was told to
    assert "acknowledged" not in proc.stdout
    notices: list[str] = []
    with Store.open(pa) as a, Store.open(pb) as b:
        for s in (a, b):
            no_errors(s)
        # nothing acknowledged is lost
        assert had_a <= turn_ids(a) and had_b <= turn_ids(b)
        # the next sync completes, and both stores then agree
        a.notify = b.notify = notices.append
        sync(a, b, "b")
        for s in (a, b):
            no_errors(s)
        assert state(a) == state(b)
        assert turn_ids(a) == had_a | had_b
        assert sync(a, b, "b").nothing
    if point in INSIDE_THE_LOCKS:
        # the child died holding the locks: its owner records say so
        assert any("took over the lock of" in n for n in notices), notices


# The child pushes store A into store B, checkpointing every 50 objects, and
# dies as a kill would after copying the given number of objects.
LATE_KILL = r"""
import os, sys
from pathlib import Path
from histstore.sync import engine as sync_mod
from histstore.store import Store

sync_mod.CHECKPOINT_OBJECTS = 50
die_after = int(sys.argv[3])
real = sync_mod._copier
copied = [0]

def copier(batch, moved, dst=None):
    emit = real(batch, moved, dst)
    def counted(oid, kind, payload):
        if copied[0] == die_after:
            os._exit(9)
        emit(oid, kind, payload)
        copied[0] += 1
    return counted

sync_mod._copier = copier
sync_mod.sync(Store.open(Path(sys.argv[1])), Store.open(Path(sys.argv[2])), "b", pull=False)
print("acknowledged", flush=True)
"""


def test_a_sync_killed_late_in_the_copy_sends_only_the_rest_when_run_again(
    tmp_path: Path,
) -> None:
    """The bulk copy checkpoints the receiving batch as it goes: a first push
    killed after copying most of the objects keeps what it copied up to its
    last checkpoint, and the rerun sends only the rest."""
    pa, pb = tmp_path / "a", tmp_path / "b"
    a, _ = Store.init(pa)
    b, _ = Store.init(pb)
    # not empty: a first push into an empty store copies packs whole instead
    b.objects.put("blob", b"already here")
    probe = Store.init(tmp_path / "probe")[0]
    probe.objects.put("blob", b"already here")
    add_turns(a, tmp_path, list(range(120)), session_id="s")
    total = sync(a, probe, "probe", pull=False).sent.objects
    a.close()
    b.close()
    assert total > 100
    late = total - 20
    proc = subprocess.run(
        [sys.executable, "-c", LATE_KILL, str(pa), str(pb), str(late)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr
    with Store.open(pa) as a, Store.open(pb) as b:
        no_errors(b)
        assert b.session_refs() == {}  # no ref moved: the copy never finished
        rep = sync(a, b, "b", pull=False)
        # at most what followed the last checkpoint before the kill is sent again
        assert rep.sent.objects <= total - late + 50, (rep.sent.objects, total)
        assert state(a) == state(b)
        no_errors(b)


# --------------------------------------------------------------------------- concurrency

PUSHER = r"""
import sys, time
from pathlib import Path
from histstore.store import Store
from histstore.sync.engine import sync

go = Path(sys.argv[3])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.005)
local, remote = Store.open(Path(sys.argv[1])), Store.open(Path(sys.argv[2]))
rep = sync(local, remote, "hub", pull=False)
print(len(rep.remote_changes), flush=True)
"""


def test_two_processes_pushing_into_one_remote_both_land(tmp_path: Path) -> None:
    hub, _ = Store.init(tmp_path / "hub")
    locals_ = []
    for i in range(2):
        s, _ = Store.init(tmp_path / f"l{i}")
        add_turns(s, tmp_path, [10 * i + k for k in range(3)], session_id="shared")
        add_turns(s, tmp_path, [100 + 10 * i + k for k in range(40)], session_id=f"own{i}")
        locals_.append(s)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", PUSHER, str(s.root), str(hub.root), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in locals_
    ]
    for p in procs:  # both are waiting for the same moment
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    go.touch()
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with Store.open(hub.root) as h:
        no_errors(h)
        assert set(h.session_refs()) == {"shared", "own0", "own1"}
        want = {t.turn_id for s in locals_ for x in s.sessions() for t in x.turns}
        assert turn_ids(h) == want
        shared = {t.turn_id for t in h.session("shared").turns}
        assert shared == {f"turn-{n:04d}" for n in (0, 1, 2, 10, 11, 12)}
        assert [o.extra.get("kind") for o in h.operations()] == ["sync", "sync"]


MUTUAL = r"""
import sys, time
from pathlib import Path
from histstore.store import Store
from histstore.sync.engine import sync

go = Path(sys.argv[3])
print("ready", flush=True)
while not go.exists():
    time.sleep(0.005)
local, remote = Store.open(Path(sys.argv[1])), Store.open(Path(sys.argv[2]))
for _ in range(5):
    sync(local, remote, "peer")
print("done", flush=True)
"""


def test_two_machines_syncing_with_each_other_at_once_cannot_deadlock(tmp_path: Path) -> None:
    """A syncs with B while B syncs with A: each takes both locks in one order
    (by store id), so neither waits for the other forever."""
    a, _ = Store.init(tmp_path / "a")
    b, _ = Store.init(tmp_path / "b")
    add_turns(a, tmp_path, list(range(40)), session_id="s")
    add_turns(b, tmp_path, list(range(40, 80)), session_id="s")
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MUTUAL, str(x.root), str(y.root), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for x, y in ((a, b), (b, a))
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    go.touch()
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.strip() == "done", err
    with Store.open(a.root) as sa, Store.open(b.root) as sb:
        no_errors(sa)
        no_errors(sb)
        assert state(sa) == state(sb)
        assert len(sa.session("s").turns) == 80


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


HOLDER = r"""
import os, sys, time
from pathlib import Path
from histstore.store import Store

s = Store.open(Path(sys.argv[1]))
with s.lock():
    if sys.argv[2] == "die":
        os._exit(0)
    print("holding", flush=True)
    time.sleep(60)
"""


def _cli_pair(tmp_path: Path) -> tuple[HS, Path, Path]:
    hs = HS()
    a, b = tmp_path / "a", tmp_path / "b"
    hs("-C", str(a), "init")
    hs("-C", str(b), "init")
    with Store.open(a) as s:
        add_turns(s, tmp_path, [1], session_id="s")
    assert hs("-C", str(a), "remote", "add", "lap", str(b)).exit_code == 0
    return hs, a, b


def test_a_lock_left_by_a_dead_process_is_taken_over_with_a_message(tmp_path: Path) -> None:
    hs, a, b = _cli_pair(tmp_path)
    proc = subprocess.run([sys.executable, "-c", HOLDER, str(b), "die"], timeout=60)
    assert proc.returncode == 0
    assert (b / "lock.owner").exists()  # its owner record stayed behind
    r = hs("-C", str(a), "push", "lap")
    assert r.exit_code == 0, r.stderr
    assert r.stderr.startswith(f"hs: took over the lock of {b}: its owner record names process ")
    assert f"on {socket.gethostname()}" in r.stderr and "which no longer holds it" in r.stderr
    assert not (b / "lock.owner").exists()
    r = hs("-C", str(a), "push", "lap")
    assert r.stderr == ""


def test_a_lock_that_outlived_its_dead_owner_is_never_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A share where a dead process's lock stays held: the lock is held (here by
    a live helper), the owner record names a process that is gone. The lock
    file is never replaced (a live holder may be inside): exit 6, and the
    message says what to do once no hs runs anywhere."""
    hs, a, b = _cli_pair(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(b), "hold"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        dead = _dead_pid()
        (b / "lock.owner").write_text(
            f'{{"pid": {dead}, "host": "{socket.gethostname()}", "time": "2026-01-01T00:00:00Z"}}'
        )
        inode = (b / "lock").stat().st_ino
        monkeypatch.setenv("HS_LOCK_TIMEOUT", "0.5")
        r = hs("-C", str(a), "push", "lap")
        assert r.exit_code == 6, r.stderr
        assert f"names process {dead}" in r.stderr and "no longer running" in r.stderr
        assert f"remove {b / 'lock'}" in r.stderr
        assert (b / "lock").stat().st_ino == inode
    finally:
        holder.kill()
        holder.wait()


def test_a_record_of_this_host_on_a_free_lock_is_taken_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flock is free but the owner record names a live process of this
    host (its pid reused, or a writer killed): the kernel says nobody holds the
    lock, so the record is stale and taken over, with a message. A record of
    another host is waited for, then refused with exit 6, and broken only by
    --break-lock once stale."""
    hs, a, b = _cli_pair(tmp_path)
    (b / "lock.owner").write_text(
        f'{{"pid": {os.getppid()}, "host": "{socket.gethostname()}", "time": "t"}}'
    )
    monkeypatch.setenv("HS_LOCK_TIMEOUT", "0.3")
    r = hs("-C", str(a), "push", "lap")
    assert r.exit_code == 0, r.stderr
    assert f"took over the lock of {b}: its owner record names process {os.getppid()}" in r.stderr
    assert not (b / "lock.owner").exists()
    # another host's record is never taken over silently
    with Store.open(a) as s:
        add_turns(s, tmp_path, [2], session_id="s")  # something to push again
    (b / "lock.owner").write_text('{"pid": 1, "host": "elsewhere", "time": "t"}')
    r = hs("-C", str(a), "push", "lap")
    assert r.exit_code == 6 and "run again with --break-lock" in r.stderr
    r = hs("-C", str(a), "--break-lock", "push", "lap")
    assert r.exit_code == 0, r.stderr
    assert f"broke the lock of {b}: process 1 on elsewhere" in r.stderr
