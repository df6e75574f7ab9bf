"""The writers' lock of a store: an ``flock`` on ``lock``, plus an owner record.

``filelock`` takes an ``flock`` on ``<store>/lock``. On a local disk the kernel
drops it when its process dies, however it dies. On a network share, or a
folder a file-sync tool keeps in step, that is not reliable: a lock can outlive
its process, or not exclude a process on another machine at all. So the holder
also writes ``<store>/lock.owner`` (one JSON object: ``pid``, ``host``,
``time``) when it takes the lock and deletes it before it lets go, and a writer
reads it:

* lock taken, no record (or our own): the normal case;
* lock taken, the record names a process of this host that no longer runs: a
  writer died holding the lock (the kernel released it); take it over and say
  so (``notify``);
* lock taken, the record names a live process, or one on another host: the
  ``flock`` did not exclude it (a share without working locks): wait until the
  record goes away, up to the timeout, then :class:`Locked`;
* lock not taken within the timeout, the record names a dead process of this
  host: the dead holder's lock outlived it (a network share); the lock file is
  replaced by a fresh one, taken, and the takeover said.

A record of another host is never judged stale (its process cannot be asked):
it holds until the timeout, and the error says which file to delete once no
``hs`` runs there. The record is written without fsync: losing it in a crash
only loses the message.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.errors import Locked
from histstore.store.clock import now_rfc3339

OWNER_NAME = "lock.owner"
POLL = 0.05


@dataclass(frozen=True)
class Owner:
    pid: int
    host: str
    time: str

    def here(self) -> bool:
        return self.host == socket.gethostname()

    def is_me(self) -> bool:
        return self.here() and self.pid == os.getpid()

    def dead(self) -> bool:
        """A process of this host that no longer runs (never True for another host)."""
        if not self.here() or sys.platform == "win32":
            # (on Windows os.kill(pid, 0) would send Ctrl-C, not ask)
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def describe(self) -> str:
        return f"process {self.pid} on {self.host} (since {self.time})"


def read_owner(root: Path) -> Owner | None:
    try:
        d: Any = json.loads((root / OWNER_NAME).read_bytes())
        return Owner(int(d["pid"]), str(d["host"]), str(d["time"]))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (ValueError, KeyError, TypeError):
        return None  # a torn or foreign record tells nothing: ignore it


def write_owner(root: Path) -> None:
    rec = {"pid": os.getpid(), "host": socket.gethostname(), "time": now_rfc3339()}
    tmp = root / f".{OWNER_NAME}.{os.getpid()}.tmp"
    tmp.write_bytes(json.dumps(rec).encode() + b"\n")
    os.replace(tmp, root / OWNER_NAME)


def clear_owner(root: Path) -> None:
    owner = read_owner(root)
    if owner is None or owner.is_me():
        with contextlib.suppress(FileNotFoundError):
            (root / OWNER_NAME).unlink()


def _locked(root: Path, owner: Owner | None) -> Locked:
    if owner is None or owner.here():
        return Locked(
            f"the store at {root} is locked by another writer"
            + (f" ({owner.describe()})" if owner else ""),
            hint="wait for the other hs command to finish, then try again",
        )
    return Locked(
        f"the store at {root} is locked by {owner.describe()}",
        hint=f"if no hs runs on {owner.host} any more, delete {root / OWNER_NAME}",
    )


def acquire(
    lock: Any, root: Path, timeout: float, notify: Callable[[str], None] | None, make: Any
) -> Any:
    """Take ``lock`` (a filelock.FileLock on ``root/lock``) for the outermost use;
    returns the lock held, which is a new one when a dead holder's lock file was
    replaced (``make()`` makes it)."""
    import filelock

    began = time.monotonic()
    try:
        lock.acquire(timeout=timeout)
    except filelock.Timeout:
        owner = read_owner(root)
        if owner is None or not owner.dead():
            raise _locked(root, owner) from None
        # the dead holder's flock outlived it: a fresh lock file, then take that
        with contextlib.suppress(FileNotFoundError):
            (root / "lock").unlink()
        lock = make()
        try:
            lock.acquire(timeout=timeout)
        except filelock.Timeout:
            raise _locked(root, read_owner(root)) from None
        _say(notify, root, owner)
        return lock
    owner = read_owner(root)
    while owner is not None and not owner.is_me():
        if owner.dead():
            _say(notify, root, owner)
            break
        # a live holder our flock did not see (a share without working locks)
        if time.monotonic() - began >= timeout:
            lock.release()
            raise _locked(root, owner)
        time.sleep(POLL)
        owner = read_owner(root)
    return lock


def _say(notify: Callable[[str], None] | None, root: Path, owner: Owner) -> None:
    if notify is not None:
        notify(f"took over the lock of {root}: its owner, {owner.describe()}, is no longer running")
