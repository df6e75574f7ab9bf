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

import bisect
import contextlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, Conflict, CorruptStore
from histstore.store.clock import now_rfc3339
from histstore.store.codec import canonical_json, is_object_id
from histstore.store.fsutil import append_line, atomic_write, fsync_dir, version
from histstore.store.kinds import TURN_SEPARATOR
from histstore.store.oplog import (
    LONG_LINE,
    LogLine,
    Operation,
    RefChange,
    last_op_id,
    long_last_line,
    newest_brief,
    newest_first,
    newest_first_json,
    one_line,
    read_log,
)

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
#: refs.packed: every ref at its last bulk write or gc (a loose file wins over it)
PACKED_NAME = "packed-refs"
PACKED_HEADER = b"# hs packed-refs 1"
#: a packed-refs file after its header: lines of ``<id> <name>``, blank ones
#: allowed (a name is printable ASCII without spaces: check_component)
_PACKED_LINE = re.compile(rb"[0-9a-f]{64} [!-~]+")
_PACKED_BODY = re.compile(rb"(?:[0-9a-f]{64} [!-~]+\n|\n)*(?:[0-9a-f]{64} [!-~]+)?")


def _parse_run(run: bytes) -> dict[str, str] | None:
    """Lines of ``<id> <name>`` (blank ones allowed) as name -> id, checked by
    one pattern (44k lines at 1M turns); None when a line is not one."""
    if not _PACKED_BODY.fullmatch(run):
        return None
    return {line[65:]: line[:64] for line in run.decode("ascii").split("\n") if line}


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
        self.packed_path = root / PACKED_NAME
        self._packed: tuple[tuple[int, int, int], dict[str, str]] | None = None
        self._folders: tuple[dict[str, str], set[str]] | None = None
        #: the sorted names of packed-refs, by its (inode, size, mtime)
        self._names: tuple[tuple[int, int, int] | None, list[str]] | None = None
        #: the bytes of packed-refs, by its (inode, size, mtime), for bisection
        self._raw: tuple[tuple[int, int, int], bytes] | None = None
        #: last_op_id's answer, by the refs log's (inode, size, mtime)
        self._last_op: tuple[tuple[int, int, int], str | None] | None = None
        self._long: tuple[tuple[int, int, int], tuple[bytes, str] | None] | None = None
        self.writes = 0  #: ref files this object wrote or removed (``state``)

    # ---------------------------------------------------------------- reading

    def _path(self, name: str) -> Path:
        return self.refs_dir.joinpath(*map(_file_name, check_ref_name(name).split("/")))

    def _check_free(self, name: str) -> None:
        """A ref cannot be both a ref and a folder of refs (``remotes/o/x`` and
        ``remotes/o/x/y``), loose or packed: refused before anything is logged."""
        path = self._path(name)
        if path.is_dir():
            raise Conflict(f"ref {name} cannot be created: refs exist below it")
        for parent in path.parents:
            if parent == self.refs_dir:
                break
            if parent.is_file():
                raise Conflict(f"ref {name} cannot be created: a ref exists at {parent.name}")
        packed = self.packed()
        parts = name.split("/")
        if any("/".join(parts[:i]) in packed for i in range(2, len(parts))):
            raise Conflict(f"ref {name} cannot be created: a ref exists above it")
        if name in self._packed_folders():
            raise Conflict(f"ref {name} cannot be created: refs exist below it")

    def _packed_folders(self) -> set[str]:
        """Every folder a packed ref lives in (``remotes/o`` of
        ``remotes/o/sessions/x``...), computed once per ``packed-refs`` read:
        asking each new ref's name of every packed one made creating N refs
        cost N times the packed count."""
        packed = self.packed()
        if self._folders is not None and self._folders[0] is packed:
            return self._folders[1]
        folders: set[str] = set()
        for name in packed:
            cut = name.rfind("/")
            while cut > 0:
                folder = name[:cut]
                if folder in folders:
                    break
                folders.add(folder)
                cut = name.rfind("/", 0, cut)
        self._folders = (packed, folders)
        return folders

    def read(self, name: str) -> str | None:
        """A ref's value: its loose file, else its line in ``packed-refs``."""
        path = self._path(name)
        try:
            value = path.read_text("ascii").strip()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            # (refs below it, or one above it: none)
            return self._packed_under(name, exact=True).get(name)
        except UnicodeDecodeError:
            raise CorruptStore(f"ref {name} does not hold an object id") from None
        if not is_object_id(value):
            raise CorruptStore(f"ref {name} does not hold an object id")
        return value

    # ---------------------------------------------------------------- packed

    def _packed_bytes(self) -> tuple[tuple[int, int, int], bytes] | None:
        """``packed-refs``' version and bytes, read once per version of the
        file (None when there is none). A file without its header is damage."""
        key = version(self.packed_path)
        if key is None:
            self._raw = self._packed = None
            return None
        if self._raw is None or self._raw[0] != key:
            try:
                data = self.packed_path.read_bytes()
            except FileNotFoundError:
                return None
            if not data.startswith(PACKED_HEADER + b"\n") and data != PACKED_HEADER:
                raise CorruptStore(
                    f"{self.packed_path} is not a packed-refs file", hint="run hs fsck"
                )
            self._raw = (key, data)
        return self._raw

    def packed(self) -> dict[str, str]:
        """Every ref of ``packed-refs``, name -> id (parsed again only when the
        file changed). A line that is not ``<id> <name>`` is damage."""
        got = self._packed_bytes()
        if got is None:
            return {}
        key, data = got
        if self._packed is not None and self._packed[0] == key:
            return self._packed[1]
        body = data[len(PACKED_HEADER) + 1 :]
        out = _parse_run(body)
        if out is None:
            out = {}
            for n, raw in enumerate(body.split(b"\n"), 2):
                if not raw:
                    continue
                value, _, name = raw.decode("ascii", "replace").partition(" ")
                if not is_object_id(value) or not name:
                    raise CorruptStore(
                        f"{self.packed_path} line {n} is not '<id> <ref>'", hint="run hs fsck"
                    )
                out[name] = value
        self._packed = (key, out)
        return out

    def _packed_under(self, prefix: str, *, exact: bool = False) -> dict[str, str]:
        """The packed refs whose name starts with ``prefix`` (is it, with
        ``exact``). From the parsed file when it is current; else found by
        bisecting the file's bytes, which are sorted by name (docs/format.md):
        a read of one ref or one namespace of a bulk-written store (44k lines
        at 1M turns) parses a few lines, not all. A line it meets that is not
        ``<id> <name>`` is left to the full parse, which says where."""
        got = self._packed_bytes()
        if got is None:
            return {}
        key, data = got
        if not prefix or (self._packed is not None and self._packed[0] == key):
            return self._packed_under_parsed(prefix, exact)
        want = prefix.encode("utf-8")
        lo = self._bisect(data, len(PACKED_HEADER) + 1, want, lambda name: name < want)
        if lo is None:
            return self._packed_under_parsed(prefix, exact)
        if exact:
            stop = data.find(b"\n", lo)
            line = data[lo : len(data) if stop < 0 else stop]
            if line[65:] == want and _PACKED_LINE.fullmatch(line):
                return {prefix: line[:64].decode("ascii")}
            return {}
        hi = self._bisect(data, lo, want, lambda name: name < want or name.startswith(want))
        if hi is None:
            return self._packed_under_parsed(prefix, exact)
        found = _parse_run(data[lo:hi])
        return self._packed_under_parsed(prefix, exact) if found is None else found

    @staticmethod
    def _bisect(data: bytes, lo: int, want: bytes, before: Callable[[bytes], bool]) -> int | None:
        """The start of the first line at or after ``lo`` whose name is not
        ``before`` (the lines are sorted by name, so those that are come
        first); None when a line it meets is not ``<id> <name>``."""
        hi = end = len(data)
        while lo < hi:  # lo and hi are line starts; the lines before lo are before
            mid = (lo + hi) // 2
            start = data.rfind(b"\n", lo, mid) + 1 or lo
            stop = data.find(b"\n", start)
            stop = end if stop < 0 else stop
            if start < stop and not _PACKED_LINE.fullmatch(data, start, stop):
                return None
            if before(data[start + 65 : stop]):
                lo = stop + 1
            else:
                hi = start
        return min(lo, end)

    def _packed_under_parsed(self, prefix: str, exact: bool) -> dict[str, str]:
        """:meth:`_packed_under` from the parsed file (CorruptStore, naming the
        line, when it is damaged)."""
        packed = self.packed()
        if exact:
            return {prefix: packed[prefix]} if prefix in packed else {}
        # the names under a prefix are one run of the sorted names: found by
        # bisection, not by looking at every ref
        names = self._sorted_names()
        out = {}
        for name in names[bisect.bisect_left(names, prefix) :]:
            if not name.startswith(prefix):
                break
            out[name] = packed[name]
        return out

    def any_under(self, namespace: str) -> bool:
        """Whether any ref lives under ``namespace`` (e.g. ``overlay``), loose or
        packed: a cheap check before reading what they hold."""
        folder = self.refs_dir / namespace
        try:
            if any(os.scandir(folder)):
                return True
        except (FileNotFoundError, NotADirectoryError):
            pass
        # packed-refs holds every ref of a bulk-written store (44k lines at 1M
        # turns: ~70 ms to parse): its bytes (kept per version of the file) are
        # sorted by name, so the first name at or after "<namespace>/" is found
        # by bisection; a damaged line met on the way, or found there, leaves
        # it to a search of every byte (names hold no space, so " <namespace>/"
        # starts a name)
        got = self._packed_bytes()
        if got is None:
            return False
        data, want = got[1], f"{namespace}/".encode("ascii")
        lo = self._bisect(data, len(PACKED_HEADER) + 1, want, lambda name: name < want)
        if lo is not None and lo < len(data):
            stop = data.find(b"\n", lo)
            stop = len(data) if stop < 0 else stop
            if _PACKED_LINE.fullmatch(data, lo, stop):
                return data.startswith(want, lo + 65)
        elif lo is not None:
            return False  # every name sorts before it
        return b" " + want in data

    def state(self) -> tuple[object, ...]:
        """What changes whenever a ref may have (what a reader may keep refs it
        listed by): refs move only in a logged operation (the log grows before,
        refs.applied is replaced after), and this process counts its writes."""
        paths = (self.log_path, self.applied_path, self.packed_path)
        return (self.writes, *map(version, paths))

    def _write_packed(self, updates: dict[str, str | None]) -> None:
        """``packed-refs`` with ``updates`` applied (None deletes), written whole
        through the one write path."""
        self.writes += 1
        refs = dict(self.packed())
        for name, value in updates.items():
            if value is None:
                refs.pop(name, None)
            else:
                refs[name] = value
        body = b"".join(f"{v} {k}\n".encode("ascii") for k, v in sorted(refs.items()))
        atomic_write(self.packed_path, PACKED_HEADER + b"\n" + body)
        self._packed = None

    def pack(self) -> int:
        """Every loose ref into ``packed-refs`` (lock held; ``hs gc``): the new
        file first, then the loose files it holds; returns how many moved."""
        loose = self._loose("")
        if not loose:
            return 0
        self._write_packed(dict(loose))
        for name, value in loose.items():
            if self.packed().get(name) == value:
                with contextlib.suppress(FileNotFoundError):
                    self._path(name).unlink()
        self._prune_dirs()
        return len(loose)

    def _prune_dirs(self) -> None:
        """Remove the folders packing left empty (below refs/<namespace>/)."""
        for dirpath, dirs, files in os.walk(self.refs_dir, topdown=False):
            d = Path(dirpath)
            if d.parent == self.refs_dir or d == self.refs_dir:
                continue  # keep refs/<namespace>/ itself
            if not dirs and not files:
                with contextlib.suppress(OSError):
                    d.rmdir()

    def list_refs(self, prefix: str = "") -> dict[str, str]:
        """Every ref whose name starts with ``prefix`` -> its id, sorted by name:
        the loose ones (read first, so a loose file removed by packing is then
        found packed), over those of ``packed-refs``."""
        loose = self._loose(prefix)
        out = self._packed_under(prefix) if prefix else dict(self.packed())
        out.update(loose)
        return dict(sorted(out.items()))

    def _sorted_names(self) -> list[str]:
        """The names of ``packed-refs``, sorted (kept per version of the file)."""
        packed = self.packed()
        version = self._packed[0] if self._packed is not None else None
        if self._names is None or self._names[0] != version or len(self._names[1]) != len(packed):
            self._names = (version, sorted(packed))
        return self._names[1]

    def _loose(self, prefix: str) -> dict[str, str]:
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
        return out

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

    def newest_first_json(self) -> Iterator[dict[str, Any]]:
        """:meth:`newest_first` as the entries' JSON objects (no object per ref change)."""
        return newest_first_json(self.log_path)

    def _long_last(self, key: tuple[int, int, int]) -> tuple[bytes, str] | None:
        """histstore.store.oplog.long_last_line, read once per version of the
        log (an import's entry is megabytes, and a read asks for its id two
        or three times and for its brief once). Only the line's end is kept
        (what follows its changes is all a brief reads; a long-lived process
        keeps no megabytes)."""
        if self._long is None or self._long[0] != key:
            got = long_last_line(self.log_path)
            self._long = (key, None if got is None else (got[0][-LONG_LINE:], got[1]))
        return self._long[1]

    def newest_brief(self) -> dict[str, Any] | None:
        """The newest entry without its ref changes (histstore.store.oplog.newest_brief)."""
        key = version(self.log_path)
        if key is None:
            return None
        return newest_brief(self.log_path, self._long_last(key))

    def last_op_id(self) -> str | None:
        """The id of the newest complete entry: what a derived view compares
        with the operation it last applied. Kept per version of the log."""
        key = version(self.log_path)
        if key is None:
            return None
        if self._last_op is None or self._last_op[0] != key:
            self._last_op = (key, last_op_id(self.log_path, self._long_last(key)))
        return self._last_op[1]

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
        self.writes += 1
        path = self._path(name)
        if value is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        atomic_write(path, (value + "\n").encode("ascii"), sync=sync, sync_dir=False)

    def _apply_changes(self, op: Operation, before_done: Callable[[], None] | None = None) -> None:
        # Many refs (an import touching thousands of sessions): one rewrite of
        # packed-refs (one fsync), then their loose files go (a crash between
        # leaves the old loose values: not applied, rolled forward again). Few:
        # a loose file each, fsynced; a deleted one packed-refs holds rewrites
        # it. Each directory touched is fsynced before refs.applied says "done".
        bulk = len(op.changes) > self.BULK
        dirs: set[Path] = set()
        packed = self.packed()
        if bulk:
            self._write_packed({c.ref: c.new for c in op.changes})
            for c in op.changes:
                self._write_ref(c.ref, None, sync=False)
                dirs.add(self._path(c.ref).parent)
        else:
            gone = {c.ref: None for c in op.changes if c.new is None and c.ref in packed}
            if gone:
                self._write_packed(dict(gone))
            for c in op.changes:
                self._write_ref(c.ref, c.new, sync=True)
                dirs.add(self._path(c.ref).parent)
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
