"""One writer at a time, whatever is killed when: the kernel's flock decides who
holds the store, the lock file is never replaced, and an owner record (a pid)
never keeps a free store locked."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import turn_record

from histstore.store import locking
from histstore.store.store import Store

#: these tests kill writers at chosen points: every fsync must stay on
pytestmark = pytest.mark.durability

HOLDER = r"""
import sys, time
from pathlib import Path
from histstore.store import Store

s = Store.open(Path(sys.argv[1]))
with s.lock():
    print("holding", flush=True)
    sys.stdin.readline()  # hold until told
    print("still inside", flush=True)
"""

WRITER = r"""
import os, sys, time
from pathlib import Path
from histstore.errors import Locked
from histstore.store import Store

store = Store.open(Path(sys.argv[1]))
counter = Path(sys.argv[2])
deadline = time.monotonic() + float(sys.argv[3])
while time.monotonic() < deadline:
    try:
        with store.lock():
            n = int(counter.read_text() or "0")
            print("in", flush=True)  # an observed point: the parent may kill us here
            time.sleep(0.001)
            tmp = counter.with_name(f".counter.{os.getpid()}")
            tmp.write_text(str(n + 1))
            os.replace(tmp, counter)
        print("done", flush=True)
    except Locked:
        print("locked", flush=True)
"""


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def record_owner(root: Path, pid: int, host: str | None = None, age: float | None = None) -> None:
    """An owner record; refreshed ``age`` seconds ago (None: an unreadable time)."""
    host = host or socket.gethostname()
    when = "t"
    if age is not None:
        when = (datetime.now(UTC) - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    rec = {"pid": pid, "host": host, "since": "2026-01-01T00:00:00.000Z", "time": when}
    (root / "lock.owner").write_text(json.dumps(rec))


def record(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`hs record` of one turn, as a process."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("hs")), "-C", str(root), "record"],
        input=json.dumps(turn_record(1)),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_a_dead_owners_record_never_lets_a_second_writer_in(store: Store) -> None:
    """Fault: a live writer holds the lock, its owner record not yet written
    (the record still names a killed writer). A second writer that waited out
    its timeout replaced the lock file and took a lock on the new inode: two
    writers inside. Now it gives up (exit 6) and the file is never replaced."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "holding"
        inode = (store.root / "lock").stat().st_ino
        record_owner(store.root, dead_pid())  # as if the holder had not written its own yet
        r = record(store.root, {"HS_LOCK_TIMEOUT": "0.3"})
        assert r.returncode == 6, r.stderr
        assert "is no longer running" in r.stderr and "never replaces it" in r.stderr
        assert (store.root / "lock").stat().st_ino == inode
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "still inside"
    finally:
        holder.kill()
        holder.wait()


def test_a_reused_pid_in_a_stale_record_blocks_no_writer(store: Store) -> None:
    """Fault: a killed writer's record names a pid an unrelated live process
    now has: every writer waited for it and exited 6. The kernel says the lock
    is free, so the record is stale: taken over with a message."""
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record_owner(store.root, unrelated.pid)
        notes: list[str] = []
        store.notify = notes.append
        with store.lock():
            pass
        assert len(notes) == 1 and f"process {unrelated.pid}" in notes[0]
        assert "which no longer holds it" in notes[0]
        assert not (store.root / "lock.owner").exists()
    finally:
        unrelated.kill()
        unrelated.wait()


def test_another_hosts_record_is_waited_for_then_refused(store: Store) -> None:
    """On a share whose flock does not reach another machine, a record of
    another host may be a writer inside: waited for, never taken over; one
    refreshed lately is a writer that is alive, and even --break-lock waits."""
    record_owner(store.root, 1, host="elsewhere", age=5)
    r = record(store.root, {"HS_LOCK_TIMEOUT": "0.2"})
    assert r.returncode == 6
    assert "locked by process 1 on elsewhere" in r.stderr and "which is running" in r.stderr
    r = record_break(store.root)
    assert r.returncode == 6 and "which is running" in r.stderr
    assert json.loads((store.root / "lock.owner").read_text())["host"] == "elsewhere"


def record_break(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("hs")), "-C", str(root), "--break-lock", "record"],
        input=json.dumps(turn_record(2)),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HS_LOCK_TIMEOUT": "0.2"},
    )


def test_a_stale_record_of_another_host_is_broken_only_when_asked(store: Store) -> None:
    record_owner(store.root, 77, host="elsewhere", age=3600)
    r = record(store.root, {"HS_LOCK_TIMEOUT": "0.2"})
    assert r.returncode == 6
    assert "has not said it is alive for over 10 minutes" in r.stderr
    assert "run again with --break-lock" in r.stderr
    assert store.refs.list_refs() == {}
    r = record_break(store.root)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("hs: broke the lock of ")
    assert "process 77 on elsewhere" in r.stderr
    assert len(store.refs.list_refs()) == 1
    assert not (store.root / "lock.owner").exists()


def test_the_owner_record_is_refreshed_while_the_lock_is_held(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(locking, "REFRESH", 0.01)
    with store.lock():
        first = locking.read_owner(store.root)
        assert first is not None and first.is_me() and first.since == first.time
        deadline = time.monotonic() + 30
        now = first
        while now is not None and now.time == first.time and time.monotonic() < deadline:
            time.sleep(0.01)
            now = locking.read_owner(store.root)
        assert now is not None and now.time > first.time and now.since == first.since
    assert locking.read_owner(store.root) is None


def test_writers_killed_at_random_never_overlap(tmp_path: Path, store: Store) -> None:
    """Several writers take the lock in a loop, each incrementing a counter
    inside it; some are killed (SIGKILL) while inside, at the moment they
    said so. Were two ever inside at once, an increment would be lost: the
    counter must be at least the increments acknowledged, and at most those
    plus the writers killed (a killed one may have written before dying)."""
    # at least this long, and on until the loop has seen enough (a loaded
    # machine starts the writers slowly): 20 increments and a kill inside
    seconds = float(os.environ.get("HS_LOCK_LOOP_SECONDS", "0.8"))
    counter = tmp_path / "counter"
    counter.write_text("0")
    rng = random.Random(7)
    env = {**os.environ, "HS_LOCK_TIMEOUT": "0.2"}
    done = kills = 0
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    cap = deadline + 30

    def going() -> bool:
        now = time.monotonic()
        with lock:
            enough = done > 20 and kills > 0
        return now < deadline or (not enough and now < cap)

    def run_one() -> None:
        nonlocal done, kills
        while going():
            left = max(0.2, deadline - time.monotonic())
            p = subprocess.Popen(
                [sys.executable, "-c", WRITER, str(store.root), str(counter), f"{left:.2f}"],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            assert p.stdout is not None
            for line in p.stdout:
                word = line.strip()
                if word == "done":
                    with lock:
                        done += 1
                elif word == "in":
                    with lock:
                        kill = rng.random() < 0.05
                    if kill:
                        p.send_signal(signal.SIGKILL)
                        with lock:
                            kills += 1
                        break
            p.wait()

    threads = [threading.Thread(target=run_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = int(counter.read_text())
    assert done > 20, "the writers barely ran"
    assert kills > 0, "no writer was killed inside the lock"
    assert done <= final <= done + kills, (done, kills, final)
