"""What captures leave beside the store: the spool, the last run of each hook,
the failures.

All of it is under ``<store>/local/capture/`` (this machine's, never synced,
like the source table; docs/format.md, "Capture"):

* ``spool/<time>-<ns>-<pid>-<n>.json``: a payload not applied yet, one file
  each (``{"agent", "text", "received", "attempts"}``: ``text`` the payload as
  it came), written
  durably *before* a capture does anything else and removed once its turns
  are committed. A capture that finds the store lock held, is killed, or runs
  out of time leaves it there; the next capture (or ``hs import``, or ``hs
  capture --drain``) applies it. After :data:`MAX_ATTEMPTS` failures an
  entry moves to ``spool/failed/``, kept for a person to look at, so one bad
  payload never blocks the rest.
* ``last/<agent>.<event>.json``: the last run of each hook — when, its
  result, what it added, how long it took.
* ``failures.jsonl``: one line per failure (time, agent, event, session,
  message); over :data:`LOG_LIMIT` bytes it becomes ``failures.jsonl.1``
  (the one before is dropped), so it stays small.

A capture whose store is missing cannot write there: it writes its ``last/``
and ``failures.jsonl`` to ``$XDG_STATE_HOME/histstore/capture/`` (default
``~/.local/state/histstore/capture/``) instead, naming the store it looked
for, and ``hs hooks status`` reads both. Every write here is small; only
the spool entry is fsynced (it may hold the only copy of an answer whose
transcript lags). Reading tolerates anything: a torn or foreign file is
skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.capture import fastspool
from histstore.store.clock import now_rfc3339
from histstore.store.fsutil import atomic_write

DIR = Path("local") / "capture"
SPOOL = "spool"
FAILED = "failed"
LAST = "last"
FAILURES = "failures.jsonl"
#: failures.jsonl is rotated past this size
LOG_LIMIT = 256 * 1024
#: a spooled payload whose application failed this many times is set aside
MAX_ATTEMPTS = 3


def state_dir() -> Path:
    """Where a capture records itself when its store is missing."""
    base = os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base else Path.home() / ".local" / "state"
    return root / "histstore" / "capture"


@dataclass
class SpoolEntry:
    """A hook's payload waiting in the spool, with how often it was tried."""

    path: Path
    agent: str
    #: the payload as it came
    text: str
    received: str
    attempts: int = 0
    #: the answer the payload carried, kept out of the spool (fastspool.kept):
    #: known only to the capture that spooled it
    message: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "text": self.text,
            "received": self.received,
            "attempts": self.attempts,
        }


class Journal:
    """The capture records of one store (or of the fallback folder)."""

    def __init__(self, root: Path, *, store: Path | None = None) -> None:
        self.root = root
        #: the store a fallback journal stands in for (None: the store's own)
        self.missing_store = store

    @classmethod
    def of_store(cls, store_root: Path) -> Journal:
        return cls(store_root / DIR)

    @classmethod
    def fallback(cls, store_root: Path) -> Journal:
        return cls(state_dir(), store=store_root)

    # ------------------------------------------------------------ the spool

    @property
    def spool_dir(self) -> Path:
        return self.root / SPOOL

    def spool(self, agent: str, text: str) -> SpoolEntry:
        """Keep a payload (the text it came as) until it is applied (durably)."""
        path, spooled, message = fastspool.spool(str(self.root), agent, text)
        return SpoolEntry(Path(path), agent, spooled, "", 0, message)

    def waiting(self) -> int:
        """How many payloads wait (counted, not read)."""
        return fastspool.waiting(str(self.root))

    def spooled(self) -> list[SpoolEntry]:
        """The entries waiting, oldest first (an unreadable one is skipped)."""
        try:
            names = sorted(
                e.name
                for e in os.scandir(self.spool_dir)
                if e.name.endswith(".json") and not e.name.startswith(".") and e.is_file()
            )
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for name in names:
            path = self.spool_dir / name
            d = _read(path)
            if not isinstance(d, dict) or not isinstance(d.get("agent"), str):
                continue
            text = d.get("text")
            out.append(
                SpoolEntry(
                    path,
                    d["agent"],
                    text if isinstance(text, str) else "",
                    str(d.get("received") or ""),
                    int(d.get("attempts") or 0),
                )
            )
        return out

    def set_aside_count(self) -> int:
        try:
            return sum(1 for e in os.scandir(self.spool_dir / FAILED) if e.name.endswith(".json"))
        except (FileNotFoundError, NotADirectoryError):
            return 0

    def done(self, entry: SpoolEntry) -> None:
        """The entry was applied: it goes (another capture may have taken it first)."""
        with contextlib.suppress(FileNotFoundError):
            entry.path.unlink()

    def failed(self, entry: SpoolEntry, *, hopeless: bool = False) -> bool:
        """Applying the entry failed: count it; True when it was set aside
        (after MAX_ATTEMPTS, or at once when it can never apply)."""
        entry.attempts = MAX_ATTEMPTS if hopeless else entry.attempts + 1
        if not entry.path.exists():
            return False
        if entry.attempts >= MAX_ATTEMPTS:
            target = self.spool_dir / FAILED / entry.path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                os.replace(entry.path, target)
            return True
        atomic_write(entry.path, fastspool.dump(entry.as_json()))
        return False

    # ------------------------------------------------------------ runs and failures

    def ran(self, agent: str, event: str, record: dict[str, Any]) -> None:
        """Record the last run of a hook (not fsynced: losing it loses a message)."""
        if self.missing_store is not None:
            record = {**record, "store": str(self.missing_store)}
        fastspool.write_last(str(self.root), agent, event, record)

    def failure(self, agent: str, event: str, message: str, **more: Any) -> None:
        """Append one failure (one line; the log is rotated once it is large)."""
        rec = {"time": now_rfc3339(), "agent": agent, "event": event, "message": message, **more}
        if self.missing_store is not None:
            rec["store"] = str(self.missing_store)
        path = self.root / FAILURES
        line = json.dumps(rec, ensure_ascii=False, sort_keys=True).replace("\n", " ")
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_size > LOG_LIMIT:
                    os.replace(path, path.with_name(FAILURES + ".1"))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, (line + "\n").encode("utf-8"))
            finally:
                os.close(fd)

    def last_runs(self) -> list[dict[str, Any]]:
        """The last run of every hook recorded here, newest first."""
        try:
            paths = [self.root / LAST / e.name for e in os.scandir(self.root / LAST)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        runs = [d for p in paths if p.suffix == ".json" for d in [_read(p)] if isinstance(d, dict)]
        return sorted(runs, key=lambda d: str(d.get("time") or ""), reverse=True)

    def failures(self) -> Iterator[dict[str, Any]]:
        """Every failure recorded (the rotated log first), oldest first."""
        for name in (FAILURES + ".1", FAILURES):
            try:
                data = (self.root / name).read_bytes()
            except OSError:
                continue
            for raw in data.splitlines():
                try:
                    d = json.loads(raw)
                except ValueError:
                    continue  # a torn line
                if isinstance(d, dict):
                    yield d

    def recent_failures(self, since: str) -> list[dict[str, Any]]:
        """The failures recorded at or after ``since`` (RFC 3339), oldest first."""
        return [f for f in self.failures() if str(f.get("time") or "") >= since]


def summary(store_root: Path, *, days: int = 7) -> dict[str, Any]:
    """What ``hs status`` says of capture: the last run of any hook, the
    payloads waiting and set aside, and the failures of the last ``days``
    (with the latest)."""
    journal = Journal.of_store(store_root)
    runs = journal.last_runs()
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - days * 86400))
    failures = journal.recent_failures(since)
    return {
        "last_run": runs[0] if runs else None,
        "waiting": journal.waiting(),
        "set_aside": journal.set_aside_count(),
        "failures": len(failures),
        "failures_days": days,
        "last_failure": failures[-1] if failures else None,
    }


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
