"""The first thing a hook does, with nothing but the standard library's
``os``, ``json`` and ``time``: keep the payload in the spool, and see whether
the store is locked.

A capture that finds another writer holding the store lock must return at
once (issue 14: within 50 ms as a process), so this module loads nothing of
the store, the importers or even ``pathlib``: it writes the spool entry
(docs/format.md, "Capture records") durably through its own few lines of
the one write path (temporary file, fsync, rename, fsync of the folder),
probes the lock, and records the run. :mod:`histstore.capture.journal`
writes and reads the same files through these functions.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import time
from collections.abc import Callable

#: the store's config file (histstore.store.config.CONFIG_NAME; a test keeps them equal)
CONFIG = "config.toml"
#: where the capture records live in a store (journal.DIR)
CAPTURE_DIR = os.path.join("local", "capture")

_seq = itertools.count()


def now() -> str:
    """The store's time format (histstore.store.clock): UTC, milliseconds, ``Z``."""
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def is_store(root: str) -> bool:
    return os.path.isfile(os.path.join(root, CONFIG))


def _fsync_enabled() -> bool:
    # histstore.store.fsutil.FSYNC: the tests' switch, read the same way
    return os.environ.get("HS_TEST_NO_FSYNC", "") != "1"


def write_file(path: str, data: bytes, *, sync: bool) -> None:
    """Write ``data`` to ``path`` whole: a temporary file beside it, (fsync),
    rename, (fsync of the folder); the folder made when missing."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync and _fsync_enabled():
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    if sync and _fsync_enabled():
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        except OSError:  # pragma: no cover - some filesystems refuse it
            pass
        finally:
            os.close(dfd)


def dump(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n"


def spool_name() -> str:
    """A spool entry's name: its time first, so names sort in time order."""
    ns = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(ns / 1e9))
    return f"{stamp}-{ns % 1_000_000_000:09d}-{os.getpid()}-{next(_seq)}.json"


#: what a capture reads of a payload (histstore.capture.events), and all a
#: spool entry keeps of it: ids, paths, event names. The rest of a payload
#: (the answer, a prompt, tool input) is text an agent wrote, where secrets
#: are, and the spool is under the store, where no secret may reach a byte.
KEPT = frozenset(
    {
        "type",
        "hook_event_name",
        "cwd",
        "session_id",
        "transcript_path",
        "agent_transcript_path",
        "agent_id",
        "turn_id",
        "prompt_id",
        "thread-id",
        "turn-id",
        "stop_hook_active",
        "trigger",
        "reason",
    }
)
#: the answer a payload carries (Claude Code's, Codex notify's): kept out of
#: the spool; the capture that spooled it hands it to its drain in memory
MESSAGES = ("last_assistant_message", "last-assistant-message")
#: how a hook hands the answer to the drain it starts (the environment of a
#: process is readable by its user only; never written to a file): the
#: answer, and the spool entry it belongs to
MESSAGE_ENV = "HS_CAPTURE_MESSAGE"
MESSAGE_FOR_ENV = "HS_CAPTURE_MESSAGE_FOR"
#: a longer answer is left to the transcript (an environment variable holds
#: at most 128 KiB on Linux)
MESSAGE_MAX = 100_000


def kept(text: str) -> tuple[str, str | None]:
    """What the spool keeps of a payload, and the answer it kept out."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        obj = None
    if not isinstance(obj, dict):
        return dump({"hs_unreadable": "the payload is not a JSON object"}).decode(), None
    message = next((obj[k] for k in MESSAGES if isinstance(obj.get(k), str)), None)
    out = {
        k: v for k, v in obj.items() if k in KEPT and (v is None or isinstance(v, str | bool | int))
    }
    return dump(out).decode().rstrip("\n"), message


def spool(
    capture_dir: str, agent: str, text: str, argv: list[str] | None = None
) -> tuple[str, str, str | None]:
    """Keep what a capture needs of a payload (:func:`kept`) until it is
    applied: (its path, the text kept, the answer kept out)."""
    text, message = kept(text)
    entry: dict[str, object] = {"agent": agent, "text": text, "received": now(), "attempts": 0}
    if argv:
        entry["argv"] = argv
    path = os.path.join(capture_dir, "spool", spool_name())
    write_file(path, dump(entry), sync=True)
    return path, text, message


def waiting(capture_dir: str) -> int:
    """How many payloads wait in the spool (counted, not read)."""
    try:
        with os.scandir(os.path.join(capture_dir, "spool")) as it:
            return sum(1 for e in it if e.name.endswith(".json") and not e.name.startswith("."))
    except OSError:
        return 0


def _safe(name: str) -> str:
    out = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:64]
    return out or "_"


def write_last(capture_dir: str, agent: str, event: str, record: dict[str, object]) -> None:
    """The last run of a hook (not fsynced: losing it loses a message)."""
    rec = {"agent": agent, "event": event, "time": now(), **record}
    path = os.path.join(capture_dir, "last", f"{_safe(agent)}.{_safe(event)}.json")
    with contextlib.suppress(OSError):
        write_file(path, dump(rec), sync=False)


def event_name(text: str) -> str:
    """The hook event a payload names (``notify`` for Codex's; ``unknown``)."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return "unknown"
    if isinstance(obj, dict):
        if obj.get("type") == "agent-turn-complete":
            return "notify"
        name = obj.get("hook_event_name")
        if isinstance(name, str) and name:
            return name
    return "unknown"


def lock_held(root: str) -> bool:
    """Whether a writer holds the store lock now: a non-blocking ``flock`` of
    ``<store>/lock`` on a descriptor of our own, let go at once (on systems
    without ``flock`` this says no, and the commit's own 0-second try decides)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return False
    try:
        fd = os.open(os.path.join(root, "lock"), os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False  # no lock file: nobody ever wrote, nobody holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops our flock, if we got it
    return False


def spool_if_locked(root: str, agent: str, text: str) -> bool:
    """The whole of a capture that finds the store locked: the payload spooled,
    the run recorded; False (nothing done) when the store is not locked, or
    is no store (the full capture then records why)."""
    if not is_store(root) or not lock_held(root):
        return False
    capture_dir = os.path.join(root, CAPTURE_DIR)
    began = time.monotonic()
    spool(capture_dir, agent, text)
    _spooled(
        capture_dir,
        agent,
        event_name(text),
        "the store is locked by another writer: applied by the next capture or import",
        seconds=round(time.monotonic() - began, 4),
    )
    return True


def spool_for_drain(
    root: str, agent: str, text: str, start: Callable[[str, dict[str, str] | None], int | None]
) -> bool:
    """Spool a payload for ``hs capture --drain`` to apply in the background:
    ``start(entry, env)`` starts it (the answer, kept out of the spool,
    handed over in its environment when it fits) and gives its pid. False
    (nothing done) for a payload that is not a hook's or a store that is
    missing: the capture in the hook's own process then records why."""
    event = event_name(text)
    if not is_store(root) or event == "unknown":
        return False
    capture_dir = os.path.join(root, CAPTURE_DIR)
    entry, _, message = spool(capture_dir, agent, text)
    env = None
    if message is not None and len(message.encode("utf-8", "replace")) <= MESSAGE_MAX:
        env = {MESSAGE_ENV: message, MESSAGE_FOR_ENV: os.path.basename(entry)}
    pid = start(entry, env)
    _spooled(capture_dir, agent, event, "being applied in the background", drain_pid=pid)
    return True


def _spooled(capture_dir: str, agent: str, event: str, message: str, **extra: object) -> None:
    """The last run of a hook that spooled its payload."""
    record: dict[str, object] = {
        "result": "spooled",
        "message": message,
        "waiting": waiting(capture_dir),
        "turns_added": 0,
        "turns_revised": 0,
        "applied": 0,
        "lagging": False,
        "session": None,
    }
    write_last(capture_dir, agent, event, {**record, **extra})
