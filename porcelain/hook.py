"""``hs capture`` as an agent's hook runs it: fast, silent, always exit 0.

The hook command is ``hs --store STORE capture AGENT`` (Codex's notify:
``... capture codex --notify -- [PROGRAM ARGS...]`` with the payload as the
last argument). :func:`main_fast` recognises exactly that command line before
typer is imported (typer alone is ~60 ms of start-up, and a hook runs once a
turn) and runs it here; any other shape goes through the typer command,
which calls :func:`run` the same way.

What a hook process promises the agent (docs/capture.md):

* nothing on stdout, ever (file descriptor 1 is pointed at ``/dev/null``
  first, so not even a stray warning of a library reaches the agent, which
  would read JSON there as a decision), and nothing on stderr;
* exit status 0, whatever happens (2 would block Claude Code from stopping);
* it does little itself: it spools the payload and probes the store lock
  (histstore.capture.fastspool, the standard library alone), and unless the
  store is locked starts ``hs capture --drain --fresh ENTRY`` in a process
  of its own session, which imports the turn (and does any slow work: an
  index build, ``hs gc --auto``) while the agent goes on;
* a hard time bound, :data:`BUDGET` seconds (``HS_CAPTURE_BUDGET``), for the
  whole hook process from reading stdin on (an agent that never closes it
  gets the hook back in time; a whole payload read by then is spooled):
  with ``HS_CAPTURE_DETACH=0``, when it imports the turn itself, the work is
  interrupted there (its payload stays spooled), and a process still alive a
  second later ends itself.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# only os and sys at the top: a capture that finds the store locked returns
# having loaded little else (histstore.capture.fastspool)

#: seconds a capture may take inside a hook (the installed hooks' timeouts are
#: larger: Claude Code's SessionEnd gets 10 s, Stop 30 s)
BUDGET = 8.0
#: bytes of payload read from stdin at most
MAX_STDIN = 8 << 20


class HookArgs:
    """The hook's command line: the store (None: the default one), the agent,
    and for Codex's notify the program chained after hs and the payload."""

    def __init__(
        self,
        store: str | os.PathLike[str] | None,
        agent: str | None,
        *,
        notify: bool = False,
        chain: list[str] | None = None,
        payload: str | None = None,
        drain: bool = False,
    ) -> None:
        self.store = os.fspath(store) if store is not None else None
        self.agent = agent
        self.notify = notify
        self.chain = list(chain or [])
        self.payload = payload
        self.drain = drain


def parse_fast(argv: list[str]) -> HookArgs | None:
    """The hook command line, or None for anything else (typer parses that)."""
    store: str | None = None
    i = 0
    while i < len(argv) and argv[i] != "capture":
        a = argv[i]
        if a in ("--store", "-C") and i + 1 < len(argv):
            store = os.path.expanduser(argv[i + 1])
            i += 2
        elif a.startswith("--store="):
            store = os.path.expanduser(a.split("=", 1)[1])
            i += 1
        elif a == "--break-lock":
            i += 1
        else:
            return None
    rest = argv[i + 1 :]
    if i >= len(argv):
        return None
    if rest == ["--drain"]:
        return HookArgs(store, None, drain=True)
    if len(rest) == 3 and rest[:2] == ["--drain", "--fresh"]:
        return HookArgs(store, None, drain=True, payload=rest[2])
    if not rest or rest[0] not in ("claude-code", "codex"):
        return None
    agent, rest = rest[0], rest[1:]
    if not rest:
        return HookArgs(store, agent)
    if rest[0] != "--notify" or agent != "codex":
        return None
    rest = rest[1:]
    if rest and rest[0] == "--":
        rest = rest[1:]
    if not rest:
        return HookArgs(store, agent, notify=True)
    return HookArgs(store, agent, notify=True, chain=rest[:-1], payload=rest[-1])


def default_store() -> str:
    from histstore.store.config import default_store_path

    return str(default_store_path())


class _OutOfTime(BaseException):
    """Raised by the time bound's alarm: not an Exception, so nothing below
    mistakes it for an error it may handle."""


def _detach(argv: list[str], env: dict[str, str] | None = None) -> int | None:
    """Start ``argv`` in a session of its own, stdio closed; never waited for
    (``HS_CAPTURE_DETACH=0``: run it here and wait, for tests and debugging).
    Its pid (None when it ran here or did not start)."""
    import subprocess

    null = subprocess.DEVNULL
    full = {**os.environ, **env} if env else None
    try:
        if inline():
            subprocess.run(argv, stdin=null, stdout=null, stderr=null, check=False, env=full)
            return None
        return subprocess.Popen(
            argv,
            stdin=null,
            stdout=null,
            stderr=null,
            start_new_session=True,
            close_fds=True,
            env=full,
        ).pid
    except (OSError, subprocess.SubprocessError):
        return None


def inline() -> bool:
    """``HS_CAPTURE_DETACH=0``: what a hook would start in the background is
    done in the hook process instead (the tests; debugging)."""
    return os.environ.get("HS_CAPTURE_DETACH") == "0"


def background(root: Path, tasks: list[str]) -> None:
    """Start a capture's slow work (``drain``: the spool applied without a
    time bound and the recall index caught up or built; ``gc``: ``hs gc
    --auto``) detached from the agent."""
    if inline():
        from histstore.capture.apply import drain_all
        from histstore.ops import gc
        from histstore.store.store import Store

        if "drain" in tasks:
            drain_all(root)
        if "gc" in tasks:
            with Store.open(root) as store:
                gc.auto(store)
        return
    if "drain" in tasks:
        _detach([*hs_argv(), "--store", str(root), "capture", "--drain"])
    elif "gc" in tasks:
        _detach([*hs_argv(), "--store", str(root), "gc", "--auto"])


def hs_argv() -> list[str]:
    """How to run this hs again: this Python with the entry module."""
    return [sys.executable, "-m", "histstore.porcelain.entry"]


def _read_stdin(got: list[bytes]) -> None:
    """Read stdin to its end (at most :data:`MAX_STDIN` bytes and one more)
    into ``got``, piece by piece, so what was read stays when the time bound
    interrupts the read."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return
        try:
            fd = sys.stdin.fileno()
        except (OSError, ValueError):  # a stream of Python's own (a test's runner)
            got.append(sys.stdin.buffer.read(MAX_STDIN + 1))
            return
        size = 0
        while size <= MAX_STDIN:
            data = os.read(fd, min(1 << 16, MAX_STDIN + 1 - size))
            if not data:
                return
            got.append(data)
            size += len(data)
    except (OSError, ValueError, AttributeError):
        return


def _read_stdin_within(limit: float) -> tuple[str, bool]:
    """The payload on stdin, and whether stdin ended within ``limit`` seconds
    (the hook's time bound: an agent that never closes the pipe must not keep
    the hook); when it did not, what was read by then."""
    import signal
    import threading

    got: list[bytes] = []
    ended = True
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        _read_stdin(got)  # no alarm (Windows; not the main thread): only an exit timer bounds it
        return b"".join(got).decode("utf-8", "replace"), True

    def out_of_time(signum: int, frame: object) -> None:
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, out_of_time)
    try:
        signal.setitimer(signal.ITIMER_REAL, limit)
        try:
            _read_stdin(got)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _OutOfTime:
        ended = False
    finally:
        signal.signal(signal.SIGALRM, previous)
    return b"".join(got).decode("utf-8", "replace"), ended


def _stdin_out_of_time(args: HookArgs, limit: float, partial: str) -> None:
    """Record a hook stopped by its time bound while it read its payload: a
    whole payload read by then (the agent wrote it but never closed stdin)
    is spooled for the next capture; else the next capture reads the
    transcript."""
    from pathlib import Path

    from histstore.capture import fastspool
    from histstore.capture import run as capture

    root = Path(args.store if args.store is not None else default_store())
    what = "the next capture reads its transcript"
    if fastspool.is_store(str(root)) and fastspool.event_name(partial) != "unknown":
        try:
            fastspool.spool(str(root / fastspool.CAPTURE_DIR), str(args.agent), partial)
            what = "its payload stays spooled"
        except OSError:
            pass
    capture.record_failure(
        root,
        str(args.agent),
        partial,
        f"stopped after {limit:g} s reading its payload (the hook's time bound): {what}",
    )


#: the longest bound ``HS_CAPTURE_BUDGET`` may set: an hour (beyond every
#: agent's hook timeout; ``inf`` would overflow the timer and lose the turn)
MAX_BUDGET = 3600.0


def budget() -> float:
    """``HS_CAPTURE_BUDGET`` seconds, when it is a number in (0, an hour];
    else the default: a capture never fails on its setting."""
    try:
        value = float(os.environ.get("HS_CAPTURE_BUDGET", "") or BUDGET)
    except ValueError:
        return BUDGET
    return value if 0 < value <= MAX_BUDGET else BUDGET


def run(args: HookArgs, *, stdin: str | None = None, deadline: float | None = None) -> int:
    """Run a capture as a hook does; always 0. ``stdin`` is the payload when
    it is not an argument (read from the process's stdin when None);
    ``deadline`` (``time.monotonic()``) when the time bound began before
    (the hook process's: reading stdin counts), else it begins now."""
    import contextlib
    import signal
    import threading
    import time
    from pathlib import Path

    from histstore.capture import run as capture

    root = Path(args.store if args.store is not None else default_store())
    if args.drain:
        from histstore.capture.apply import drain_all

        try:
            out = drain_all(root, Path(args.payload) if args.payload else None)
        except Exception as e:  # the background half: recorded, never raised
            capture.record_failure(root, "hs", "", f"drain: {type(e).__name__}: {e}")
            return 0
        if "gc" in out.background:
            from histstore.ops import gc
            from histstore.store.store import Store

            with contextlib.suppress(Exception), Store.open(root) as store:
                gc.auto(store)  # already in the background: run it here
        return 0
    assert args.agent is not None
    _chain(args)
    limit = budget()
    payload = args.payload if args.payload is not None else stdin
    if payload is None:
        deadline = time.monotonic() + limit
        payload, ended = _read_stdin_within(limit)
        if not ended:
            _stdin_out_of_time(args, limit, payload)
            return 0
    left = limit if deadline is None else max(deadline - time.monotonic(), 0.001)

    def out_of_time(signum: int, frame: object) -> None:
        raise _OutOfTime

    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGALRM, out_of_time) if alarm else None
    try:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, left)
        try:
            out = capture.capture(root, args.agent, payload)
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _OutOfTime:
        capture.record_failure(
            root,
            args.agent,
            payload,
            f"stopped after {limit:g} s (the hook's time bound): its payload stays spooled",
        )
        return 0
    except Exception as e:  # never a traceback, never a non-zero exit, to an agent
        capture.record_failure(root, args.agent, payload, f"{type(e).__name__}: {e}")
        return 0
    finally:
        if alarm and previous is not None:
            signal.signal(signal.SIGALRM, previous)
    if out.background:
        try:
            background(root, out.background)
        except Exception as e:
            capture.record_failure(root, args.agent, payload, f"background: {e}")
    return 0


def spool_to_background(root: str, agent: str, payload: str) -> bool:
    """Spool the payload and start ``hs capture --drain`` detached to apply
    it (histstore.capture.fastspool.spool_for_drain): the agent waits for
    neither the store's code to load nor the import (about a second of CPU
    on a loaded machine)."""
    from histstore.capture import fastspool

    def start(entry: str, env: dict[str, str] | None) -> int | None:
        return _detach([*hs_argv(), "--store", root, "capture", "--drain", "--fresh", entry], env)

    return fastspool.spool_for_drain(root, agent, payload, start)


def _chain(args: HookArgs) -> None:
    """The notify program hs was put in front of gets the payload first, as
    Codex gives it: fire and forget (once)."""
    if args.chain and args.payload is not None:
        chain, args.chain = args.chain, []
        _detach([*chain, args.payload])


def main_fast(argv: list[str]) -> int | None:
    """Run the hook command line here (its exit status), or None when ``argv``
    is any other command."""
    args = parse_fast(argv)
    if args is None:
        return None
    # nothing may reach the agent: stdout (and stderr) go nowhere from here on
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        if not os.environ.get("HS_DEBUG"):
            os.dup2(devnull, 2)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    try:
        if not args.drain:
            assert args.agent is not None
            import threading
            import time

            limit = budget()
            deadline = time.monotonic() + limit
            # the last resort of the time bound: a process stuck past it ends itself
            stop = threading.Timer(limit + 1.0, os._exit, (0,))
            stop.daemon = True
            stop.start()
            _chain(args)
            payload, ended = args.payload, True
            if payload is None:
                payload, ended = _read_stdin_within(limit)
            if not ended:
                _stdin_out_of_time(args, limit, payload)
                return 0
            from histstore.capture.fastspool import spool_if_locked

            root = args.store or default_store()
            try:
                if spool_if_locked(root, args.agent, payload):
                    return 0  # the store is locked: the payload waits in the spool
                if not inline() and spool_to_background(root, args.agent, payload):
                    return 0  # applied by a process of its own, not waited for
            except OSError:
                pass  # the full capture records what is wrong
            return run(args, stdin=payload, deadline=deadline)
        return run(args)
    except BaseException:
        return 0
