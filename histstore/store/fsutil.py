"""The write paths of the store (CONVENTIONS 1), and of what hs writes outside it.

* :func:`atomic_write`: every file the store writes whole goes through it — a temp
  file in the same directory, write, fsync, rename over the target, fsync the
  directory. A reader sees the old bytes or the new bytes, never a mix.
* :func:`append_line`: every append to a log goes through it, under the store lock.
  A torn last line left by a crash is closed with a newline first, so it stays a
  single (unparseable, reported) line instead of corrupting the next entry.
* :func:`create_new`: a whole file that must not replace one already there
  (``hs restore`` writing into an agent's folder).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from pathlib import Path
from typing import BinaryIO

#: Tests that do not test durability set ``HS_TEST_NO_FSYNC=1`` (tests/conftest.py):
#: every write then skips its fsyncs, which are most of the suite's time on
#: this kind of disk. Nothing else may set it: a store written so is not durable.
FSYNC = os.environ.get("HS_TEST_NO_FSYNC", "") != "1"


def fsync(fd: int) -> None:
    """os.fsync, unless the test-only switch turned it off."""
    if FSYNC:
        os.fsync(fd)


def fsync_dir(path: Path) -> None:
    if not FSYNC:
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on directories
        pass
    finally:
        os.close(fd)


def make_dirs(path: Path) -> None:
    """mkdir -p, then fsync each new directory's parent so the new entries last."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    path.mkdir(parents=True, exist_ok=True)
    for d in reversed(missing):
        fsync_dir(d.parent)


def fsync_file(path: Path) -> None:
    if not FSYNC:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, sync: bool = True, sync_dir: bool = True) -> None:
    if not path.parent.is_dir():
        make_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if sync:
            fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:  # (a folder at path): no copy of the data is left beside it
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync and sync_dir:
        fsync_dir(path.parent)


def create_new(path: Path, data: bytes, *, mode: int = 0o644) -> bool:
    """Write a file that must not exist yet, whole: a temporary file beside
    it, written and fsynced, then hard-linked into place, which fails if a
    file appeared at ``path`` meanwhile (then False, and nothing is changed).
    For files written into another program's folder (``hs restore`` into an
    agent's), where replacing what that program just wrote would lose it."""
    if not path.parent.is_dir():
        make_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsync_dir(path.parent)
    return True


#: no process id is this large (Linux's pid_max is at most 2**22)
PID_MAX = 1 << 22


def pid_alive(pid: int) -> bool:
    """Whether a process of this host has the id (one we may not signal is
    alive; an id beyond any system's, as a damaged file name may hold, is not)."""
    if pid >= PID_MAX:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # not ours to signal: alive
        return True
    return True


def unfinished_pack_pid(name: str) -> int | None:
    """The writer's pid in an unfinished pack's name (``tmp-<pid>-<hex>.pack``,
    histstore.store.repack and the object store's batches), None when it has none."""
    if not (name.startswith("tmp-") and name.endswith(".pack")):
        return None
    word = name.split("-")[1]
    return int(word) if word.isdigit() and int(word) < PID_MAX else None


def version(path: Path) -> tuple[int, int, int] | None:
    """A file's (inode, size, mtime): what a reader keeps beside what it parsed
    of the file, to read it again only once it changed (a rewrite through
    :func:`atomic_write` is a new inode; an append changes the size). None
    when there is no file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def append_line(path: Path, line: bytes) -> None:
    """Append one line (``line`` must not contain a newline) and fsync."""
    if b"\n" in line:
        raise ValueError("a log line must not contain a newline")
    created = not path.exists()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        size = os.fstat(fd).st_size
        prefix = b""
        if size and os.pread(fd, 1, size - 1) != b"\n":
            prefix = b"\n"  # close a torn last line left by a crash
        os.write(fd, prefix + line + b"\n")
        fsync(fd)
    finally:
        os.close(fd)
    if created:
        fsync_dir(path.parent)


def sync_filesystem(path: Path) -> bool:
    """Flush every written file of the filesystem holding ``path`` (Linux ``syncfs``),
    for operations that write many small files: one call instead of an fsync each.
    Returns False where it is not available; the caller then fsyncs file by file."""
    if not FSYNC:
        return True
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only bulk writers pay for it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        return bool(syncfs(fd) == 0)
    finally:
        os.close(fd)


def open_regular(path: Path) -> BinaryIO:
    """Open a file from outside for reading, only if it is a regular file.

    Opened without blocking and checked on the open descriptor, so a FIFO, a
    device or a socket is refused (``OSError`` EINVAL, "not a regular file")
    instead of hanging the reader, and nothing can be swapped in between a
    check and the open."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
