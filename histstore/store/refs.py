"""Refs and the refs log (the operation log).

A ref is a name (``sessions/<session-id>``, later ``memory/<scope>``,
``overlay/<target>``, ``remotes/<name>/...``) pointing at an object id. Each ref is
one file ``refs/<name>`` holding ``<id>\\n``.

Every change goes through :meth:`RefStore.apply`, under the store lock:

1. compare-and-swap: every change names the value it expects; any mismatch
   raises :class:`Conflict` and nothing is written;
2. the operation is appended to ``refs.log`` as one JSON line holding all its
   ref changes (old -> new), its time, its command and its parent operation, and
   fsynced — this is the commit point (a write-ahead record);
3. the ref files are written, then ``refs.applied`` records the operation id.

A crash between 2 and 3 leaves an operation logged but not (fully) applied; the
next writer, or ``hs fsck --repair``, rolls it forward from the log, so no
acknowledged change is lost. Readers never take the lock: a ref file is replaced
atomically, and a torn last log line is skipped (and reported by fsck).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, Conflict, CorruptStore
from histstore.store.clock import now_rfc3339
from histstore.store.codec import canonical_json, is_object_id
from histstore.store.fsutil import append_line, atomic_write, fsync_dir, fsync_file, sync_filesystem
from histstore.store.kinds import TURN_SEPARATOR
from histstore.store.oplog import LogLine, Operation, RefChange, newest_first, one_line, read_log

_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+=-]*")
_UPPER = re.compile(r"[A-Z]")
_ESCAPED = re.compile(r"\^([a-z])")
# names Windows reserves for devices, whatever the extension
_DEVICE_NAMES = frozenset(
    ["CON", "PRN", "AUX", "NUL"] + [f"{p}{i}" for p in ("COM", "LPT") for i in range(1, 10)]
)
MAX_COMPONENT = 128
#: a component's file name (capitals take two characters) leaves room for the
#: temporary name of an atomic write within the usual 255-byte limit
MAX_FILE_NAME = 200
MAX_NAME = 255
NAMESPACES = ("sessions", "memory", "overlay", "remotes", "heads")
#: the kind of object a ref of each namespace points at
KIND_OF_NAMESPACE = {"sessions": "session", "memory": "memrev", "overlay": "marker"}


def check_component(text: str, what: str = "id") -> str:
    """Validate one id from outside that becomes part of a ref name or path.

    Ids can never escape the store or forge a ref: no ``/`` or ``\\``, no ``..``,
    no leading dot, no NUL or control characters, no spaces, at most 128 chars.
    """
    if not isinstance(text, str) or not text:
        raise BadInput(f"empty {what}")
    shown = text[:60].encode("unicode_escape").decode("ascii")
    if len(text) > MAX_COMPONENT or len(_file_name(text)) > MAX_FILE_NAME:
        raise BadInput(f"{what} is too long ({len(text)} characters, at most {MAX_COMPONENT})")
    if (
        ".." in text
        or text.endswith((".lock", "."))
        or not _COMPONENT.fullmatch(text)
        or text.split(".")[0].upper() in _DEVICE_NAMES
    ):
        raise BadInput(
            f"{what} {shown!r} is not allowed",
            hint="ids may hold letters, digits and . _ @ + = - (no '/', '..', spaces or controls)",
        )
    return text


def _file_name(component: str) -> str:
    """A component as a file name: each capital letter X is written ``^x``, so ids
    that differ only in case never share a file on a case-insensitive disk."""
    return _UPPER.sub(lambda m: "^" + m.group(0).lower(), component)


def _ref_name(file_name: str) -> str:
    return _ESCAPED.sub(lambda m: m.group(1).upper(), file_name)


def check_ref_name(name: str) -> str:
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise BadInput(f"bad ref name {str(name)[:60]!r}: 1 to {MAX_NAME} characters")
    parts = name.split("/")
    # remotes/<remote>/<namespace>/<id> mirror another store's refs; every other
    # namespace holds exactly one level: <namespace>/<id>
    depth_ok = len(parts) >= 3 if parts[0] == "remotes" else len(parts) == 2
    if not depth_ok or parts[0] not in NAMESPACES:
        raise BadInput(
            f"bad ref name {name[:60]!r}",
            hint=f"a ref name is <namespace>/<id>, the namespace one of {', '.join(NAMESPACES)}",
        )
    for i, part in enumerate(parts):
        if i == len(parts) - 1 and parts[i - 1] == "overlay" and TURN_SEPARATOR in part:
            # a turn's marker: overlay/<session>~<turn>, each an id of its own
            halves = part.split(TURN_SEPARATOR)
            if len(halves) != 2:
                raise BadInput(f"bad ref name {name[:60]!r}: one {TURN_SEPARATOR} at most")
            for half in halves:
                check_component(half, "ref name component")
            if len(_file_name(part)) > MAX_FILE_NAME:
                raise BadInput(f"ref name {name[:60]!r} is too long")
            continue
        check_component(part, "ref name component")
    return name


class RefStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.refs_dir = root / "refs"
        self.log_path = root / "refs.log"
        self.applied_path = root / "refs.applied"

    # ---------------------------------------------------------------- reading

    def _path(self, name: str) -> Path:
        return self.refs_dir.joinpath(*map(_file_name, check_ref_name(name).split("/")))

    def _check_free(self, name: str) -> None:
        """A ref cannot be both a file and a folder (``remotes/o/x`` and
        ``remotes/o/x/y``): refused before anything is logged."""
        path = self._path(name)
        if path.is_dir():
            raise Conflict(f"ref {name} cannot be created: refs exist below it")
        for parent in path.parents:
            if parent == self.refs_dir:
                break
            if parent.is_file():
                raise Conflict(f"ref {name} cannot be created: a ref exists at {parent.name}")

    def read(self, name: str) -> str | None:
        try:
            value = self._path(name).read_text("ascii").strip()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None  # no ref of that name (refs below it, or one above it)
        except UnicodeDecodeError:
            raise CorruptStore(f"ref {name} does not hold an object id") from None
        if not is_object_id(value):
            raise CorruptStore(f"ref {name} does not hold an object id")
        return value

    def list_refs(self, prefix: str = "") -> dict[str, str]:
        """Every ref whose name starts with ``prefix`` -> its id, sorted by name."""
        out: dict[str, str] = {}
        base = self.refs_dir
        # walk only the folder the prefix's whole components name (overlay/: not
        # the thousands of session refs beside it)
        folders = prefix.split("/")[:-1]
        start = base.joinpath(*map(_file_name, folders)) if folders else base
        if not start.is_dir():
            return out
        for dirpath, _dirs, files in os.walk(start):
            for fname in files:
                if fname.startswith("."):
                    continue  # a temp file of an atomic write
                rel = os.path.relpath(os.path.join(dirpath, fname), base).replace(os.sep, "/")
                rel = _ref_name(rel)
                if not rel.startswith(prefix):
                    continue
                with contextlib.suppress(FileNotFoundError):
                    data = (Path(dirpath) / fname).read_bytes()
                    out[rel] = data.decode("ascii", "replace").strip()
        return dict(sorted(out.items()))

    def read_log(self) -> Iterator[LogLine]:
        """Every line of the refs log, oldest first; bad lines come with an error."""
        return read_log(self.log_path)

    def operations(self) -> list[Operation]:
        return [ln.op for ln in self.read_log() if ln.op is not None]

    def newest_first(self) -> Iterator[Operation]:
        """Complete entries from the end of the log backwards (torn lines skipped),
        reading only as far back as the caller goes."""
        return newest_first(self.log_path)

    def last_operation(self) -> Operation | None:
        """The newest complete entry, read from the end of the log."""
        return next(self.newest_first(), None)

    def operations_after(self, op_id: str | None) -> list[Operation] | None:
        """The operations logged after ``op_id``, oldest first (all of them for
        None), read from the end; None when ``op_id`` is not in the log."""
        if op_id is None:
            return self.operations()
        newer: list[Operation] = []
        for op in self.newest_first():
            if op.op == op_id:
                return newer[::-1]
            newer.append(op)
        return None

    # ---------------------------------------------------------------- writing

    def applied(self) -> str | None:
        try:
            return self.applied_path.read_text("ascii").strip() or None
        except FileNotFoundError:
            return None

    BULK = 16

    def _write_ref(self, name: str, value: str | None, *, sync: bool) -> None:
        path = self._path(name)
        if value is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        atomic_write(path, (value + "\n").encode("ascii"), sync=sync, sync_dir=False)

    def _apply_changes(self, op: Operation, before_done: Callable[[], None] | None = None) -> None:
        # Many refs (an import touching thousands of sessions): write them all,
        # then flush the filesystem once. Few refs: fsync each file. Either way
        # each directory touched is fsynced before refs.applied says "done".
        bulk = len(op.changes) > self.BULK
        dirs: set[Path] = set()
        for c in op.changes:
            self._write_ref(c.ref, c.new, sync=not bulk)
            dirs.add(self._path(c.ref).parent)
        if bulk and not sync_filesystem(self.root):
            for c in op.changes:
                if c.new is not None:
                    fsync_file(self._path(c.ref))
        for d in dirs:
            if d.is_dir():
                fsync_dir(d)
        if before_done is not None:
            before_done()  # derived files that must never lag the refs (overlay views)
        atomic_write(self.applied_path, (op.op + "\n").encode("ascii"))

    def recover(self) -> Operation | None:
        """Roll forward the last logged operation if a crash stopped it half-applied.
        Call with the store lock held. Returns the operation it completed, if any."""
        last = self.last_operation()
        if last is None or self.applied() == last.op:
            return None
        for c in last.changes:
            cur = self.read(c.ref)
            if cur != c.new and cur != c.old:
                raise CorruptStore(
                    f"ref {c.ref} is {cur}, neither before ({c.old}) nor after ({c.new}) "
                    f"operation {last.op}",
                    hint="run hs fsck to see every problem",
                )
        self._apply_changes(last)
        return last

    def apply(
        self,
        changes: Sequence[RefChange],
        command: str,
        *,
        extra: dict[str, Any] | None = None,
        before_done: Callable[[], None] | None = None,
    ) -> Operation | None:
        """Compare-and-swap every change, log the operation, apply it.

        Must be called with the store lock held. Changes whose new value equals
        the old are dropped; with none left, nothing is written and None returned.
        ``before_done`` runs once the ref files are written, before
        ``refs.applied`` names the operation: a crash before it leaves the
        operation to be rolled forward, so what it writes never lags the refs.
        """
        self.recover()
        names = [c.ref for c in changes]
        if len(set(names)) != len(names):
            raise BadInput("an operation changes the same ref twice")
        for c in changes:  # every expectation is checked, no-op changes too
            check_ref_name(c.ref)
            for v in (c.old, c.new):
                if v is not None and not is_object_id(v):
                    raise BadInput(f"not an object id: {v[:80]!r}")
            if c.new is not None:
                self._check_free(c.ref)
            cur = self.read(c.ref)
            if cur != c.old:
                raise Conflict(
                    f"ref {c.ref} is {cur or 'absent'}, expected {c.old or 'absent'}",
                    hint="another operation changed it first; read it again and retry",
                )
        real = [c for c in changes if c.old != c.new]
        if not real:
            return None
        last = self.last_operation()
        op = Operation(
            op="",
            time=now_rfc3339(),
            command=one_line(command),
            changes=list(real),
            parent=last.op if last else None,
            extra=extra or {},
        )
        op.op = op.derive_id()
        self.root.mkdir(parents=True, exist_ok=True)
        append_line(self.log_path, canonical_json(op.as_json()))
        if before_done is None:
            self._apply_changes(op)
        else:
            self._apply_changes(op, before_done)
        return op
