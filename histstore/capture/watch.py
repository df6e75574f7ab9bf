"""``hs watch``: import agent files as they change (for agents without hooks,
and for people who prefer a watcher to hooks).

File-system events come from the ``watchdog`` package (inotify on Linux,
FSEvents on macOS, ReadDirectoryChangesW on Windows), one observer thread
for every folder watched; they are only *collected* there. The watcher's own
loop (:meth:`Watcher.run`, or :meth:`Watcher.step` driven by a test) imports:

* **What is watched.** A folder named, recursively; a file named, alone (the
  observer watches its folder, and the handler lets only that file through,
  never a file beside it).
* **Debounced.** A changed ``.jsonl`` file (created, written, moved in) is
  remembered; once no change has come for ``debounce`` seconds — or the
  first of them has waited ``max_wait`` seconds, so an agent that never
  pauses is still captured — every file remembered is imported in one
  import (one operation), the spool applied first. An agent writing a turn
  line by line gives one import, not one per line.
* **Files that go away.** A file deleted or moved away before its import is
  left out; a folder watched that disappears (an agent rotating its folder)
  is watched again, and imported, once it is back.
* **Busy store.** An import that finds the store locked past
  ``HS_LOCK_TIMEOUT`` keeps its files for the next round.
* **Stopping.** :meth:`Watcher.run` returns when its ``stop`` event is set
  (``hs watch`` sets it on SIGTERM; Ctrl-C raises KeyboardInterrupt there),
  and the observer thread is stopped and joined either way.
"""

from __future__ import annotations

import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from histstore.capture.apply import import_with_spool
from histstore.errors import BadInput, HistError, Locked, NotFound
from histstore.history.homes import agent_homes, candidates
from histstore.store.store import Store

#: seconds between two looks at whether a watched folder went or came back
ROOT_CHECK = 5.0

Report = Callable[[dict[str, Any]], None]


def watch_roots(paths: list[Path]) -> list[Path]:
    """The folders (or files) to watch: those given, else every agent home."""
    if paths:
        out = []
        for p in paths:
            if not p.exists():
                raise NotFound(f"{p}: no such file or folder", hint="give a folder to watch")
            out.append(p.resolve())
        return out
    found = [h.path for h in agent_homes()]
    if not found:
        looked = ", ".join(str(h.path) for h in candidates())
        raise NotFound(
            f"no agent history found to watch (looked in {looked})",
            hint="give the folder to watch: hs watch DIR",
        )
    return found


class Debouncer:
    """Paths changed, and when a batch of them is due."""

    def __init__(
        self, quiet: float, max_wait: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.quiet, self.max_wait, self.clock = quiet, max_wait, clock
        self.pending: dict[Path, None] = {}
        self.first: float | None = None
        self.last: float | None = None

    def add(self, path: Path) -> None:
        now = self.clock()
        self.pending[path] = None
        self.last = now
        if self.first is None:
            self.first = now

    def wait(self) -> float | None:
        """Seconds until the batch is due (None: nothing pending)."""
        if self.first is None or self.last is None:
            return None
        now = self.clock()
        return max(0.0, min(self.last + self.quiet, self.first + self.max_wait) - now)

    def due(self) -> bool:
        w = self.wait()
        return w is not None and w <= 0

    def take(self) -> list[Path]:
        out = list(self.pending)
        self.pending.clear()
        self.first = self.last = None
        return out


def _is_session_file(path: str) -> bool:
    return path.endswith(".jsonl")


#: the longest quiet a watch may wait for before it imports (an hour)
MAX_DEBOUNCE = 3600.0


class Watcher:
    def __init__(
        self,
        store: Store,
        roots: list[Path],
        *,
        debounce: float = 2.0,
        max_wait: float = 30.0,
        report: Report | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 <= debounce <= MAX_DEBOUNCE:  # nan and inf too
            raise BadInput(
                f"--debounce {debounce}: give the seconds of quiet, from 0 to {MAX_DEBOUNCE:g}"
            )
        self.store = store
        self.roots = roots
        self.report = report or (lambda _event: None)
        self.debouncer = Debouncer(debounce, max_wait, clock)
        self.events: queue.Queue[Path] = queue.Queue()
        self.imports = 0
        self._observer: Any = None
        self._watches: dict[Path, Any] = {}
        self._next_check = 0.0
        self.clock = clock

    # ------------------------------------------------------------ events in

    def changed(self, path: Path) -> None:
        """A file (or folder) changed: called from the observer's thread."""
        self.events.put(path)

    def wanted(self, path: Path) -> bool:
        """Whether a change at ``path`` is one of the roots': the file named, or
        anything under a folder watched (a file's folder is watched for it
        alone: the files beside it are not the watch's)."""
        return any(path == r or r in path.parents for r in self.roots)

    def handler(self) -> Any:
        """What the observer calls, from its thread, for every event."""
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: Any) -> None:
                if event.event_type in ("deleted", "opened", "closed_no_write"):
                    return
                for attr in ("src_path", "dest_path"):
                    p = getattr(event, attr, None)
                    if isinstance(p, bytes):
                        p = p.decode("utf-8", "surrogateescape")
                    if not p or not watcher.wanted(Path(p)):
                        continue
                    if event.is_directory:
                        if event.event_type in ("created", "moved") and attr == (
                            "dest_path" if event.event_type == "moved" else "src_path"
                        ):
                            watcher.changed(Path(p))
                    elif _is_session_file(p) or Path(p) in watcher.roots:
                        watcher.changed(Path(p))

        return Handler()

    def start(self) -> None:
        self._observer = Observer()
        self._handle = self.handler()
        for root in self.roots:
            self._schedule(root)
        self._observer.start()
        self.report({"event": "watching", "roots": [str(r) for r in self.roots]})

    def _schedule(self, root: Path) -> None:
        folder = root if root.is_dir() else root.parent
        try:
            self._watches[root] = self._observer.schedule(
                self._handle, str(folder), recursive=root.is_dir()
            )
        except OSError as e:
            self.report({"event": "error", "message": f"cannot watch {root}: {e}"})

    def _check_roots(self) -> None:
        """A watched folder that went is dropped; one that came back is
        watched again, and imported whole."""
        now = self.clock()
        if now < self._next_check or self._observer is None:
            return
        self._next_check = now + ROOT_CHECK
        for root in self.roots:
            there = root.exists()
            if root in self._watches and not there:
                with contextlib.suppress(KeyError, OSError, RuntimeError):
                    self._observer.unschedule(self._watches[root])
                del self._watches[root]
            elif root not in self._watches and there:
                self._schedule(root)
                self.changed(root)

    # ------------------------------------------------------------ the loop

    def step(self, timeout: float) -> bool:
        """Collect changes for up to ``timeout`` seconds (less when a batch
        falls due), then import the batch if it is due. True when it imported."""
        wait = self.debouncer.wait()
        limit = timeout if wait is None else min(timeout, wait)
        try:
            path = self.events.get(timeout=max(0.0, limit))
            self.debouncer.add(path)
            while True:
                self.debouncer.add(self.events.get_nowait())
        except queue.Empty:
            pass
        if not self.debouncer.due():
            return False
        return self.import_batch(self.debouncer.take())

    def import_batch(self, paths: list[Path]) -> bool:
        files = []
        for p in paths:
            with contextlib.suppress(OSError):
                if p.exists():
                    files.append(p)
        if not files:
            return False
        try:
            report, _ = import_with_spool(self.store, files, command="hs watch")
        except Locked as e:
            for p in files:
                self.debouncer.add(p)  # the next round tries again
            self.report({"event": "error", "message": e.message})
            return False
        except NotFound:
            # a file went between the look and the read: the others next time
            for p in files:
                if p.exists():
                    self.debouncer.add(p)
            return False
        except (HistError, OSError, sqlite3.Error) as e:
            message = e.message if isinstance(e, HistError) else str(e)
            self.report({"event": "error", "message": message})
            return False
        self.imports += 1
        self.report(
            {
                "event": "imported",
                "files": report.files,
                "turns_added": report.turns_added,
                "turns_revised": report.turns_revised,
                "operation": report.operation.op if report.operation else None,
            }
        )
        for problem in report.problems:
            self.report({"event": "error", "message": str(problem)})
        return True

    def run(self, stop: threading.Event, *, poll: float = 0.5) -> None:
        """Watch until ``stop`` is set: everything under the roots imported
        first (what changed while nothing watched), then every change."""
        self.start()
        try:
            for root in self.roots:
                self.debouncer.add(root)
            self.import_batch(self.debouncer.take())
            while not stop.is_set():
                self.step(poll)
                self._check_roots()
        finally:
            self.close()
        self.report({"event": "stopped"})

    def close(self) -> None:
        if self._observer is not None:
            with contextlib.suppress(RuntimeError):
                self._observer.stop()
                self._observer.join(timeout=5)
            self._observer = None
