"""The writers' lock of a store: an ``flock`` on ``lock``, plus an owner record.

``filelock`` takes an ``flock`` on ``<store>/lock``. The kernel drops it when
its process dies, however it dies, so **the kernel decides who holds the
store**: hs never deletes or replaces the lock file, and never takes over a
lock the kernel says is held. (Replacing the file once let a newcomer lock a
fresh inode while a live holder still held the old one: two writers inside.)

The holder also writes ``<store>/lock.owner`` (one JSON object: ``pid``,
``host``, ``since`` — when it took the lock — and ``time`` — when it last
said it is alive) once it holds the lock, rewrites it every ``REFRESH``
seconds while it holds it (a thread: a long import, gc or sync keeps its
record fresh), and deletes it before it lets go. It only names the holder, for
messages and for shares whose locks do not work across machines:

* lock taken, no record (or our own): the normal case;
* lock taken, a record of this host: its writer exited without clearing it (a
  kill) — the kernel released that writer's lock, whatever process has its pid
  now (a pid alone never identifies a holder) — so the record is stale: take
  over and say so (``notify``);
* lock taken, a record of another host: on a share the ``flock`` may not
  exclude another machine, so its writer may be inside: wait until the record
  goes away, up to the timeout, then :class:`Locked`. Such a record is never
  taken over silently: once it has not been refreshed for ``STALE`` seconds
  its writer is probably gone, and ``--break-lock`` (``break_lock``) takes
  over, saying whose lock it broke; a record refreshed more recently is never
  broken (its writer is alive);
* lock not taken within the timeout: :class:`Locked`, naming the owner the
  record gives. A share that keeps a dead process's lock is the share's to
  release (its own tools, or removing ``lock`` once no hs runs anywhere).

The record is written without fsync: losing it in a crash only loses the message.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from histstore.errors import Locked
from histstore.store.clock import now_rfc3339
from histstore.store.fsutil import pid_alive

OWNER_NAME = "lock.owner"
POLL = 0.05
#: seconds between two refreshes of the owner record while the lock is held
REFRESH = 30.0
#: a record of another host not refreshed for this long is stale (10 minutes)
STALE = 600.0


@dataclass(frozen=True)
class Owner:
    """A lock's owner record: which process on which host, since when."""

    pid: int
    host: str
    time: str  # when it last refreshed the record
    since: str | None = None  # when it took the lock

    def age(self) -> float | None:
        """Seconds since it last refreshed its record (None: unreadable time)."""
        try:
            t = datetime.fromisoformat(self.time.replace("Z", "+00:00"))
        except ValueError:
            return None
        return max(0.0, (datetime.now(UTC) - t).total_seconds())

    def stale(self) -> bool:
        age = self.age()
        return age is None or age >= STALE

    def here(self) -> bool:
        return self.host == socket.gethostname()

    def is_me(self) -> bool:
        return self.here() and self.pid == os.getpid()

    def running(self) -> bool | None:
        """Whether its pid names a live process of this host (None: cannot
        tell — another host, or Windows, where os.kill(pid, 0) sends Ctrl-C).
        Only for what a message says: a pid alone never decides who holds."""
        if not self.here() or sys.platform == "win32":
            return None
        return pid_alive(self.pid)

    def describe(self) -> str:
        age = self.age()
        seen = f", last seen {int(age)} s ago" if age is not None else ""
        return f"process {self.pid} on {self.host} (since {self.since or self.time}{seen})"


def read_owner(root: Path) -> Owner | None:
    try:
        d: Any = json.loads((root / OWNER_NAME).read_bytes())
        since = d.get("since")
        return Owner(int(d["pid"]), str(d["host"]), str(d["time"]), str(since) if since else None)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (ValueError, KeyError, TypeError):
        return None  # a torn or foreign record tells nothing: ignore it


def write_owner(root: Path, since: str | None = None) -> str:
    """Write (or refresh) our record; returns when we took the lock."""
    now = now_rfc3339()
    rec = {"pid": os.getpid(), "host": socket.gethostname(), "since": since or now, "time": now}
    tmp = root / f".{OWNER_NAME}.{os.getpid()}.{threading.get_ident()}.tmp"
    tmp.write_bytes(json.dumps(rec).encode() + b"\n")
    os.replace(tmp, root / OWNER_NAME)
    return str(rec["since"])


class Refresher:
    """Rewrites our owner record every ``REFRESH`` seconds while the lock is
    held, so another host can tell a long operation from a dead one."""

    def __init__(self, root: Path, since: str) -> None:
        self.root, self.since = root, since
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hs-lock-refresh", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(REFRESH):
            owner = read_owner(self.root)
            if owner is not None and not owner.is_me():
                return  # broken by --break-lock elsewhere: never write over it
            with contextlib.suppress(OSError):
                write_owner(self.root, self.since)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def clear_owner(root: Path) -> None:
    owner = read_owner(root)
    if owner is None or owner.is_me():
        with contextlib.suppress(FileNotFoundError):
            (root / OWNER_NAME).unlink()


def _locked(root: Path, owner: Owner | None) -> Locked:
    if owner is not None and owner.here() and owner.running() is False:
        return Locked(
            f"the store at {root} is locked, but its owner record names "
            f"{owner.describe()}, which is no longer running",
            hint="another writer may be starting (its record not yet written): try "
            "again; if it stays so, this is a share that keeps a dead process's lock: "
            f"once no hs runs on any machine, remove {root / 'lock'} (hs never replaces it)",
        )
    if owner is None or owner.here():
        return Locked(
            f"the store at {root} is locked by another writer"
            + (f" ({owner.describe()})" if owner else ""),
            hint="wait for the other hs command to finish, then try again",
        )
    if owner.stale():
        return Locked(
            f"the store at {root} is locked by {owner.describe()}, which has not "
            f"said it is alive for over {int(STALE // 60)} minutes",
            hint=f"if no hs runs on {owner.host} any more, run again with --break-lock",
        )
    return Locked(
        f"the store at {root} is locked by {owner.describe()}, which is running",
        hint="wait for it to finish, then try again",
    )


def acquire(
    lock: Any,
    root: Path,
    timeout: float,
    notify: Callable[[str], None] | None,
    *,
    break_lock: bool = False,
) -> None:
    """Take ``lock`` (a filelock.FileLock on ``root/lock``) for the outermost use,
    or raise :class:`Locked`. Never replaces the lock file. ``break_lock``
    takes over a stale record of another host (and says so)."""
    import filelock

    began = time.monotonic()
    try:
        lock.acquire(timeout=timeout)
    except filelock.Timeout:
        raise _locked(root, read_owner(root)) from None
    owner = read_owner(root)
    while owner is not None and not owner.is_me():
        if owner.here():
            # the kernel gave us the lock: whoever this record names is gone
            _say(notify, root, owner)
            return
        # a writer on another host our flock did not see (a share without
        # working locks): wait for it to clear its record
        if break_lock and owner.stale():
            if notify is not None:
                notify(f"broke the lock of {root}: {owner.describe()} held it (--break-lock)")
            return
        if time.monotonic() - began >= timeout:
            lock.release()
            raise _locked(root, owner)
        time.sleep(POLL)
        owner = read_owner(root)


def _say(notify: Callable[[str], None] | None, root: Path, owner: Owner) -> None:
    if notify is not None:
        notify(
            f"took over the lock of {root}: its owner record names {owner.describe()}, "
            "which no longer holds it"
        )
