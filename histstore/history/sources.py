"""Where turns came from, beside the store: the source table.

A turn object never holds the path it was imported from (format 2): the same
record imported from any path, on any machine, is the same object. Where it
came from is recorded here instead, in ``<store>/local/sources.sqlite``, a
record of this machine that is never synced:

* ``turns``: for each turn object, each file it was read from (path, format,
  first and last line, byte offset of its first line, and the line of each of
  its raw records), newest first;
* ``files``: for each file imported, what it was when last read — device,
  inode, size, modification time — and where a later import may resume: the
  byte offset (and line) at which the file's last turn starts, the importer's
  state there, and a blake3 of the bytes just before that offset, to check the
  file was only appended to.

So a re-import reads nothing of a file whose size, time and identity are
unchanged, and only the tail of one that grew (see :func:`plan`). Losing the
table loses no history: the next import reads every file again, and
``hs show`` no longer says where a turn came from.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3

from histstore.history.importers import Resume
from histstore.store import fsutil
from histstore.store.store import Store

NAME = "sources.sqlite"
#: how many bytes before the resume offset must be unchanged for an import to
#: read only what follows (a file rewritten in place is read again whole)
WINDOW = 64 * 1024

SCHEMA = """
CREATE TABLE IF NOT EXISTS files(
    path TEXT PRIMARY KEY,
    format TEXT NOT NULL,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    resume_offset INTEGER NOT NULL,
    resume_line INTEGER NOT NULL,
    resume_state TEXT NOT NULL,
    window TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS turns(
    object TEXT NOT NULL,
    path TEXT NOT NULL,
    format TEXT NOT NULL,
    line INTEGER,
    end_line INTEGER,
    byte_offset INTEGER,
    seq INTEGER NOT NULL,
    raw_lines TEXT,
    PRIMARY KEY(object, path)
);
CREATE INDEX IF NOT EXISTS turns_by_seq ON turns(object, seq);
"""


@dataclass(frozen=True)
class FileState:
    """A source file as the last import left it: identity, size, time and where to resume."""

    path: str
    format: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    resume: Resume
    window: str


def window_digest(path: Path, offset: int) -> str:
    """blake3 of the ``WINDOW`` bytes before ``offset`` (and the file's first
    4 KiB), the check that a grown file was only appended to."""
    h = blake3.blake3()
    with fsutil.open_regular(path) as f:
        h.update(f.read(min(offset, 4096)))
        start = max(0, offset - WINDOW)
        f.seek(start)
        h.update(f.read(offset - start))
    return str(h.hexdigest())


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


#: a row of the ``turns`` table as an import gives it, before its ``seq``:
#: (object, path, format, line, end_line, byte_offset, raw_lines)
Row = tuple[str, str, str, Any, Any, Any, str | None]


def source_row(object_id: str, src: dict[str, Any]) -> Row:
    """The table's row for a turn object read from ``src`` (its ``source``)."""
    lines = src.get("lines")
    return (
        object_id,
        str(src.get("file") or ""),
        str(src.get("format") or ""),
        src.get("line"),
        src.get("end_line"),
        src.get("offset"),
        json.dumps(lines) if isinstance(lines, list) else None,
    )


class PendingSources:
    """Where each turn an import read came from, held until the import's
    objects and refs are committed (only then do the rows go into the table).

    A long import holds a bounded number of rows in memory: every ``CHUNK``
    rows go, as one line of JSON, to an unnamed temporary file beside the
    table (gone with the process, however it ends), and iterating gives every
    row in the order added. A spill that cannot be written (a full disk) is
    never read back, whatever part of it reached the file, and the rows stay
    in memory from then on: the table only says where turns came from, and
    the import must not fail for it."""

    CHUNK = 20_000

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._rows: list[Row] = []
        self._file: Any = None
        self._spills = True
        #: where the last whole spill ends: nothing after it is read back
        self._end = 0

    @classmethod
    def of(cls, store: Store) -> PendingSources:
        return cls(store.root / "local")

    def append(self, object_id: str, src: dict[str, Any]) -> None:
        self._rows.append(source_row(object_id, src))
        if self._spills and len(self._rows) >= self.CHUNK:
            self._spill()

    def _spill(self) -> None:
        line = json.dumps(self._rows).encode("utf-8") + b"\n"
        try:
            if self._file is None:
                import tempfile

                fsutil.make_dirs(self._folder)
                # closed by close(), or with the process
                self._file = tempfile.TemporaryFile(dir=self._folder, prefix="import-sources-")  # noqa: SIM115
            self._file.seek(self._end)
            self._file.write(line)
            self._file.flush()
        except OSError:
            self._spills = False  # kept in memory from now on
            return
        self._end += len(line)
        self._rows = []

    def __iter__(self) -> Iterator[Row]:
        if self._file is not None:
            self._file.seek(0)
            left = self._end
            while left > 0:
                line = self._file.readline()
                if not line:
                    break  # (cannot happen: the file is this object's alone)
                left -= len(line)
                yield from (tuple(row) for row in json.loads(line))
        yield from self._rows

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class Sources:
    """The source table of a store (opened on first use, created when written)."""

    def __init__(self, store: Store, *, readonly: bool = False) -> None:
        self.path = store.root / "local" / NAME
        self._conn: sqlite3.Connection | None = None
        self._store = store
        #: whether the table has the ``raw_lines`` column (a read-only
        #: connection cannot add it to a table made before it)
        self._lines = True
        #: only read, and leave no file behind (``hs import --dry-run``)
        self.readonly = readonly

    def key(self, path: Path) -> str:
        """How a file is named in the table: its path as text (odd bytes spelled
        ``\\xNN``), redacted like any text from outside."""
        text = str(path)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = os.fsencode(text).decode("utf-8", "backslashreplace")
        return self._store.redactor(text)

    def _db(self, write: bool = False) -> sqlite3.Connection | None:
        if self._conn is None and self.readonly:
            if write or not self.path.exists():
                return None
            # a read-only connection still makes SQLite's -wal and -shm files;
            # without a -wal beside it (no writer has it open) the table is read
            # as an immutable file, which makes none
            wal = self.path.with_name(self.path.name + "-wal").exists()
            uri = self.path.as_uri() + ("?mode=ro" if wal else "?mode=ro&immutable=1")
            self._conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
            self._lines = _has_raw_lines(self._conn)
            return self._conn
        if self._conn is None:
            if not self.path.exists():
                if not write:
                    return None
                fsutil.make_dirs(self.path.parent)
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self._conn.execute("PRAGMA journal_mode = WAL")
            if not fsutil.FSYNC:
                self._conn.execute("PRAGMA synchronous = OFF")
            self._conn.executescript(SCHEMA)
            if not _has_raw_lines(self._conn):
                self._conn.execute("ALTER TABLE turns ADD COLUMN raw_lines TEXT")
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------ files

    def file_state(self, path: str) -> FileState | None:
        try:
            db = self._db()
            if db is None:
                return None
            row = db.execute("SELECT * FROM files WHERE path = ?", (path,)).fetchone()
        except sqlite3.DatabaseError:
            return None  # a damaged table only costs reading the file again
        if row is None:
            return None
        try:
            state = json.loads(row[8])
        except ValueError:
            return None
        return FileState(
            row[0], row[1], row[2], row[3], row[4], row[5], Resume(row[6], row[7], state), row[9]
        )

    def known_format(self, path: Path) -> str | None:
        """The format the file had when last imported (None: never imported, or
        empty then: an empty file's format was a guess, told again once it
        holds lines)."""
        known = self.file_state(self.key(path))
        if known is None:
            return None
        if known.size == 0:
            st = _stat(path)
            if st is None or st.st_size > 0:
                return None
        return known.format

    def plan(self, path: Path, fmt: str) -> Resume | bool | None:
        """What an import must read of ``path``: ``False`` nothing (it is as it
        was when last read), a :class:`Resume` only what follows it (it was
        appended to), ``None`` all of it."""
        known = self.file_state(self.key(path))
        st = _stat(path)
        if known is None or st is None or known.format != fmt:
            return None
        if (st.st_dev, st.st_ino) != (known.dev, known.ino) or st.st_size < known.size:
            return None
        if st.st_size == known.size and st.st_mtime_ns == known.mtime_ns:
            return False
        try:
            if window_digest(path, known.resume.offset) != known.window:
                return None
        except OSError:
            return None
        return known.resume

    def record_file(self, path: Path, fmt: str, resume: Resume, size: int) -> None:
        """After an import read ``path`` to ``size`` bytes (and committed what
        it found): remember the file and where to resume."""
        st = _stat(path)
        db = self._db(write=True)
        if st is None or db is None:
            return
        try:
            window = window_digest(path, resume.offset)
        except OSError:
            return
        db.execute(
            "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                self.key(path),
                fmt,
                st.st_dev,
                st.st_ino,
                size,
                st.st_mtime_ns,
                resume.offset,
                resume.line,
                json.dumps(resume.state, sort_keys=True),
                window,
            ),
        )

    # ------------------------------------------------------------ turns

    def record_rows(self, rows: Iterable[Row]) -> None:
        """Rows (:func:`source_row`) in the order read, numbered after every
        row the table holds, in one transaction."""
        rows = iter(rows)
        first = next(rows, None)
        if first is None:
            return
        db = self._db(write=True)
        if db is None:
            return
        with self._transaction(db):
            seq = db.execute("SELECT coalesce(max(seq), 0) FROM turns").fetchone()[0]
            db.executemany(
                "INSERT OR REPLACE INTO turns"
                " (object, path, format, line, end_line, byte_offset, raw_lines, seq)"
                " VALUES (?,?,?,?,?,?,?,?)",
                ((*row, i) for i, row in enumerate(itertools.chain([first], rows), seq + 1)),
            )

    def of(self, object_id: str) -> dict[str, Any] | None:
        """Where a turn object was read from last: {format, file, line,
        end_line, offset}, or None when no import of this store read it."""
        found = self.where(object_id)
        if found is None:
            return None
        found.pop("lines")
        return found

    def where(self, object_id: str) -> dict[str, Any] | None:
        """:meth:`of` with ``lines``: the line of each raw record of the turn
        in that file, ascending (None when the import that read it was older
        than this column, or the file was turn JSONL)."""
        try:
            db = self._db()
            if db is None:
                return None
            lines = "raw_lines" if self._lines else "NULL"
            row = db.execute(
                f"SELECT format, path, line, end_line, byte_offset, {lines} FROM turns"
                " WHERE object = ? ORDER BY seq DESC LIMIT 1",
                (object_id,),
            ).fetchone()
        except sqlite3.DatabaseError:
            return None
        if row is None:
            return None
        return {
            "format": row[0],
            "file": row[1],
            "line": row[2],
            "end_line": row[3],
            "offset": row[4],
            "lines": _line_numbers(row[5]),
        }

    def all_turns(self) -> Iterator[tuple[str, str]]:
        """(object, path) of every row (for fsck and gc)."""
        db = self._db()
        if db is None:
            return
        yield from db.execute("SELECT object, path FROM turns")

    @contextlib.contextmanager
    def _transaction(self, db: sqlite3.Connection) -> Iterator[None]:
        # the write lock up front: a deferred transaction that read first
        # fails at once ("database is locked") when another writer committed
        # meanwhile, where this one waits for it (parallel captures)
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")


def _has_raw_lines(db: sqlite3.Connection) -> bool:
    """Whether the ``turns`` table has the ``raw_lines`` column: a table made
    before it gets it when opened for writing (its old rows hold none; the
    next import of their file fills them in)."""
    try:
        return "raw_lines" in {row[1] for row in db.execute("PRAGMA table_info(turns)")}
    except sqlite3.DatabaseError:
        return False


def _line_numbers(text: Any) -> list[int] | None:
    """``[[first, count], ...]`` as stored, back to line numbers (None when
    absent or not that shape)."""
    if not isinstance(text, str):
        return None
    try:
        runs = json.loads(text)
    except ValueError:
        return None
    out: list[int] = []
    if not isinstance(runs, list):
        return None
    for run in runs:
        if not (isinstance(run, list) and len(run) == 2 and all(type(v) is int for v in run)):
            return None
        out.extend(range(run[0], run[0] + run[1]))
    return out
