"""The recall index: SQLite FTS5 over turns, in generations swapped atomically.

Derived data (docs/format.md, "The recall index"): it can always be rebuilt from
the objects the session refs reach. Layout under ``index/`` in the store::

    CURRENT             the name of the generation readers use, replaced atomically
    gen-<n>.sqlite      a generation (and SQLite's -wal/-shm beside it)
    lock                the index writers' lock (readers never take it)

A rebuild writes a new generation file from scratch, then swaps ``CURRENT``
under the lock; the last ``KEEP`` generations stay, so a swap can be undone.
New operations reach the current generation by *catching up*: the refs-log
entries after the one it last applied are replayed as row changes (a session
ref that moved from revision A to B: the turns B has that A had not are
inserted, those A had that B has not are deleted). ``hs import`` and
``hs record`` catch up before they return.

Rows are numbered in time order (``rowid = asked_at ms * 4096 + n``), so a
days window is a rowid range. The project scope is a token column inside the
FTS table. When FTS5 is missing from the SQLite at hand, or the fallback is
forced, the same questions are answered by LIKE over the same table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import sqlite3
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3

from histstore.errors import BadInput, CorruptStore, HistError, Locked
from histstore.history.project import project_key
from histstore.overlay.markers import PREFIX as OVERLAY_PREFIX
from histstore.overlay.markers import Marker, Overlay, load_marker
from histstore.recall.stopwords import FUNCTION_WORDS
from histstore.store.fsutil import atomic_write, fsync_dir, fsync_file
from histstore.store.kinds import SessionRev, TurnEntry
from histstore.store.store import SESSION_PREFIX, Store

if TYPE_CHECKING:
    from histstore.store.oplog import Operation

SCHEMA_VERSION = "1"
KEEP = 3
#: a term in more documents than this is "common": ranking all its matches is
#: the slow part of a query, so the work for it is bounded (see search)
COMMON_DOCS = 2000
K_MAX = 10
#: a catch-up moving more session or marker refs than this builds a new
#: generation instead (loading rows in bulk is several times faster)
REBUILD_CHANGES = 500
EXCERPT = 160
UNTRUSTED_LABEL = "[this turn read untrusted content — weigh its answer accordingly]"

_GEN = re.compile(r"^gen-(\d+)\.sqlite$")
_TOKEN = re.compile(r"[^\W_]+")  # what SQLite's unicode61 tokenizer keeps as a token
_PUNCT = "\"'`.,;:!?()[]{}<>"

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE turn(
    rowid INTEGER PRIMARY KEY,      -- asked_at in ms * 4096 + n: time order
    turn_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    object TEXT NOT NULL,
    project TEXT NOT NULL,          -- as recorded
    pkey TEXT NOT NULL,             -- histstore.project.project_key(project)
    proj TEXT NOT NULL,             -- a token naming pkey, for the FTS column filter
    asked_at TEXT NOT NULL,
    asked TEXT NOT NULL,
    answered TEXT NOT NULL,
    files TEXT NOT NULL,            -- read and edited paths, one per line (searched)
    read_json TEXT NOT NULL,
    edited_json TEXT NOT NULL,
    tainted INTEGER NOT NULL
);
"""
# made after a build's bulk load (faster than keeping them up to date row by row)
INDEXES = """
CREATE UNIQUE INDEX turn_key ON turn(session_id, turn_id);
CREATE INDEX turn_pkey ON turn(pkey, rowid);
CREATE INDEX turn_id ON turn(turn_id);
"""
FTS_SCHEMA = """
CREATE VIRTUAL TABLE fts USING fts5(
    asked, answered, files, proj, content='turn', content_rowid='rowid'
);
"""


def fts5_available() -> bool:
    try:
        c = sqlite3.connect(":memory:")
        c.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        c.close()
        return True
    except sqlite3.OperationalError:
        return False


def proj_token(pkey: str) -> str:
    return "p" + str(blake3.blake3(pkey.encode("utf-8")).hexdigest())[:20]


def time_ms(ts: str) -> int:
    from histstore.history.turn import parse_time  # writers only

    return int(parse_time(ts).timestamp() * 1000)


def _fold(text: str | None) -> str:
    """Lower case without diacritics, as unicode61 compares (``Café`` -> ``cafe``)."""
    if text is None:
        return ""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    """Tokens as SQLite's unicode61 tokenizer makes them: letters and digits,
    case folded, diacritics removed (so the LIKE path's check agrees with FTS5)."""
    return _TOKEN.findall(_fold(text))


# ------------------------------------------------------------------ queries


@dataclass(frozen=True)
class Query:
    """A query reduced to its informative terms, each a phrase of tokens."""

    text: str
    terms: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Query:
        seen: dict[tuple[str, ...], None] = {}
        for word in text.split():
            bare = word.lower().replace("\u2019", "'").strip(_PUNCT)
            if bare in FUNCTION_WORDS:  # before tokens: "don't" is one function word
                continue
            toks = tuple(tokens(word))
            if not toks or (len(toks) == 1 and toks[0] in FUNCTION_WORDS):
                continue
            if all(t in FUNCTION_WORDS for t in toks) and len(toks) > 1:
                continue
            seen.setdefault(toks, None)
        return cls(text, tuple(seen))

    def fts(self) -> str:
        return self.fts_of(self.terms)

    @staticmethod
    def fts_of(terms: tuple[tuple[str, ...], ...]) -> str:
        """Each term quoted (so ``login_user`` is the phrase "login user"), OR-ed."""
        return " OR ".join('"' + " ".join(t) + '"' for t in terms)


def term_in(term: tuple[str, ...], toks: list[str]) -> int:
    """Index of the first token where the phrase ``term`` starts in ``toks``, or -1."""
    n = len(term)
    first = term[0]
    for i, t in enumerate(toks):
        if t == first and tuple(toks[i : i + n]) == term:
            return i
    return -1


def excerpt(text: str, terms: tuple[tuple[str, ...], ...], width: int = EXCERPT) -> str | None:
    """The text around the first match of any term (token-wise, ignoring case),
    whitespace collapsed; None when no term is in the text. The same rule serves
    both search paths."""
    flat = " ".join(text.split())
    folded = _fold(flat)
    if not any(t[0] in folded for t in terms):
        return None  # no term's first token anywhere: the common case, decided at C speed
    spans = [(m.start(), _fold(m.group())) for m in _TOKEN.finditer(flat)]
    words = [w for _, w in spans]
    firsts = {t[0] for t in terms}
    best: int | None = None
    for i, w in enumerate(words):
        if w in firsts and any(tuple(words[i : i + len(t)]) == t for t in terms):
            best = spans[i][0]
            break
    if best is None:
        return None
    lo = max(0, best - width // 2)
    hi = min(len(flat), lo + width)
    lo = max(0, min(lo, hi - width))
    # cut at word boundaries
    if lo > 0:
        sp = flat.find(" ", lo)
        lo = sp + 1 if 0 <= sp < best else lo
    if hi < len(flat):
        sp = flat.rfind(" ", best, hi)
        hi = sp if sp > best else hi
    return ("…" if lo > 0 else "") + flat[lo:hi] + ("…" if hi < len(flat) else "")


@dataclass
class Hit:
    turn_id: str
    session_id: str
    object: str
    project: str
    asked_at: str
    excerpt: str
    read: list[str]
    edited: list[str]
    tainted: bool
    score: float

    def as_json(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "session_id": self.session_id,
            "object": self.object,
            "project": self.project,
            "asked_at": self.asked_at,
            "excerpt": self.excerpt,
            "read": self.read,
            "edited": self.edited,
            "tainted": self.tainted,
            "score": self.score,
        }


@dataclass
class RecallResult:
    query: Query
    hits: list[Hit]
    #: "found" | "no-terms" | "empty" (nothing recorded yet) | "no-match" | "no-match-in-days"
    outcome: str
    scope: str | None  # the project key searched, None when everywhere
    days: int | None
    path: str  # "fts5" or "like"


# ------------------------------------------------------------------ the index


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class IndexStatus:
    generation: str | None
    built_op: str | None
    applied_op: str | None
    last_op: str | None
    rows: int
    fts5: bool
    generations: list[str] = field(default_factory=list)

    @property
    def stale(self) -> bool:
        return self.generation is None or self.applied_op != self.last_op

    def as_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "built_op": self.built_op,
            "applied_op": self.applied_op,
            "last_op": self.last_op,
            "stale": self.stale,
            "rows": self.rows,
            "fts5": self.fts5,
            "generations": self.generations,
        }


class RecallIndex:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.dir = store.root / "index"
        self._lock: Any = None  # a filelock.FileLock, made by the first writer
        # a long-lived caller (an agent's tool, a server) searches many times: the
        # connection to the current generation is kept until CURRENT names another
        self._reader: tuple[tuple[Path, int], sqlite3.Connection] | None = None

    # -------------------------------------------------------- generations

    def current_path(self) -> Path | None:
        try:
            name = (self.dir / "CURRENT").read_text("utf-8").strip()
        except FileNotFoundError:
            return None
        if not _GEN.match(name):
            raise CorruptStore(
                f"{self.dir / 'CURRENT'} does not name a generation",
                hint="rebuild the index with `hs plumbing index-build`",
            )
        path = self.dir / name
        if not path.exists():
            raise CorruptStore(
                f"the current recall index {name} is missing",
                hint="rebuild it with `hs plumbing index-build`",
            )
        return path

    def generations(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        gens = [(int(m.group(1)), p) for p in self.dir.iterdir() if (m := _GEN.match(p.name))]
        return [p for _, p in sorted(gens)]

    @contextlib.contextmanager
    def lock(self, timeout: float | None = None) -> Iterator[None]:
        import filelock  # writers only: readers never lock

        self.dir.mkdir(parents=True, exist_ok=True)
        if self._lock is None:
            self._lock = filelock.FileLock(str(self.dir / "lock"))
        try:
            self._lock.acquire(timeout=self.store.lock_timeout if timeout is None else timeout)
        except filelock.Timeout:
            raise Locked(f"the recall index of {self.store.root} is being rebuilt") from None
        try:
            yield
        finally:
            self._lock.release()

    @contextlib.contextmanager
    def _reading(self, path: Path) -> Iterator[sqlite3.Connection]:
        """A read-only connection to a generation; a damaged file is corruption."""
        try:
            conn = self._connect(path, write=False)
            try:
                yield conn
            finally:
                conn.close()
        except sqlite3.DatabaseError as e:
            raise _damaged(path, e) from None

    @contextlib.contextmanager
    def _searching(self, path: Path) -> Iterator[sqlite3.Connection]:
        try:
            key = (path, os.stat(path).st_ino)  # a name is reused if index/ was deleted
        except FileNotFoundError:
            key = (path, -1)
        if self._reader is not None and self._reader[0] != key:
            self.close()
        try:
            if self._reader is None:
                self._reader = (key, self._connect(path, write=False))
            yield self._reader[1]
        except sqlite3.DatabaseError as e:
            self.close()
            raise _damaged(path, e) from None

    def close(self) -> None:
        if self._reader is not None:
            self._reader[1].close()
            self._reader = None

    def _connect(self, path: Path, *, write: bool) -> sqlite3.Connection:
        if write:
            conn = sqlite3.connect(path, isolation_level=None)
        else:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 5000")
        return conn

    @staticmethod
    def _meta(conn: sqlite3.Connection) -> dict[str, str]:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())

    def status(self) -> IndexStatus:
        last = self.store.refs.last_operation()
        path = self.current_path()
        gens = [p.name for p in self.generations()]
        if path is None:
            return IndexStatus(
                None, None, None, last.op if last else None, 0, fts5_available(), gens
            )
        with self._reading(path) as conn:
            meta = self._meta(conn)
        return IndexStatus(
            path.name,
            meta.get("built_op") or None,
            meta.get("applied_op") or None,
            last.op if last else None,
            int(meta.get("rows", "0")),
            meta.get("fts5") == "1",
            gens,
        )

    def behind(self) -> bool:
        """Whether operations were applied that the current generation lacks (or
        there is none while turns exist): a cheap check, reading two ids."""
        try:
            applied = (self.store.root / "refs.applied").read_text("ascii").strip()
        except FileNotFoundError:
            return False  # nothing was ever recorded
        path = self.current_path()
        if path is None:
            return True
        with self._reading(path) as conn:
            return self._meta(conn).get("applied_op") != applied

    # -------------------------------------------------------- writing rows

    def _row(
        self,
        conn: sqlite3.Connection,
        fts: bool,
        session: SessionRev,
        entry: TurnEntry,
        taken: dict[int, int] | None = None,
    ) -> None:
        """Insert one turn. ``taken`` (a build's own count of rows per millisecond)
        saves asking the table; ``fts`` False also serves a build that fills the
        FTS table in one pass at the end."""
        turn = self.store.get_json(entry.object, "turn")
        pkey = project_key(session.project)
        base = time_ms(entry.asked_at) * 4096
        if taken is not None:
            rowid = base + taken.get(base, 0)
            taken[base] = rowid - base + 1
        else:
            top = conn.execute(
                "SELECT max(rowid) FROM turn WHERE rowid BETWEEN ? AND ?", (base, base + 4095)
            ).fetchone()[0]
            rowid = base if top is None else top + 1
        files = "\n".join([*turn.get("files", []), *turn.get("edited", [])])
        values = (
            rowid,
            entry.turn_id,
            session.session_id,
            entry.object,
            session.project,
            pkey,
            proj_token(pkey),
            entry.asked_at,
            turn.get("asked") or "",
            turn.get("answered") or "",
            files,
            json.dumps(turn.get("files", []), ensure_ascii=False),
            json.dumps(turn.get("edited", []), ensure_ascii=False),
            1 if turn.get("tainted") else 0,
        )
        conn.execute("INSERT INTO turn VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
        if fts:
            conn.execute(
                "INSERT INTO fts(rowid, asked, answered, files, proj) VALUES (?,?,?,?,?)",
                (rowid, values[8], values[9], files, values[6]),
            )

    def _delete(self, conn: sqlite3.Connection, fts: bool, session_id: str, turn_id: str) -> None:
        row = conn.execute(
            "SELECT rowid, asked, answered, files, proj FROM turn"
            " WHERE session_id = ? AND turn_id = ?",
            (session_id, turn_id),
        ).fetchone()
        if row is None:
            return
        if fts:
            conn.execute(
                "INSERT INTO fts(fts, rowid, asked, answered, files, proj)"
                " VALUES ('delete', ?, ?, ?, ?, ?)",
                row,
            )
        conn.execute("DELETE FROM turn WHERE rowid = ?", (row[0],))

    @staticmethod
    def _has_fts(conn: sqlite3.Connection) -> bool:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'fts'").fetchone() is not None

    def _set_meta(self, conn: sqlite3.Connection, **values: str) -> None:
        conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            list(values.items()),
        )

    # -------------------------------------------------------- build

    def build(self, *, fts: bool | None = None) -> IndexStatus:
        """A new generation from every turn the session refs reach, swapped in."""
        use_fts = fts5_available() if fts is None else fts
        with self.lock():
            gens = self.generations()
            n = int(_GEN.match(gens[-1].name).group(1)) + 1 if gens else 1  # type: ignore[union-attr]
            final = self.dir / f"gen-{n}.sqlite"
            tmp = self.dir / f".gen-{n}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            # built from the refs as of the last operation fully applied (one
            # logged but still moving its refs is caught up afterwards)
            done = self.store.refs.applied()
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = OFF")
                conn.execute("PRAGMA synchronous = OFF")
                conn.executescript(SCHEMA)
                if use_fts:
                    conn.executescript(FTS_SCHEMA)
                conn.execute("BEGIN")
                rows = 0
                overlay = Overlay.read(self.store)
                taken: dict[int, int] = {}
                for session in self.store.sessions():
                    for entry in session.turns:
                        if overlay.hides(session.session_id, entry.turn_id):
                            continue  # forgotten: the index never holds it
                        self._row(conn, False, session, entry, taken)
                        rows += 1
                conn.execute("COMMIT")
                # indexes and the FTS table made once over the loaded rows: faster
                # than keeping them up to date a row at a time
                conn.executescript(INDEXES)
                conn.execute("BEGIN")
                if use_fts:
                    conn.execute("INSERT INTO fts(fts) VALUES ('rebuild')")
                op = done or ""
                self._set_meta(
                    conn,
                    schema=SCHEMA_VERSION,
                    built_op=op,
                    applied_op=op,
                    built_at=_now().isoformat(),
                    rows=str(rows),
                    fts5="1" if use_fts else "0",
                )
                conn.execute("COMMIT")
                if use_fts:
                    conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
                conn.execute("PRAGMA journal_mode = WAL")
            except BaseException:
                conn.close()
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                raise
            conn.close()
            self._publish(tmp, final)
        return self.status()

    def _publish(self, tmp: Path, final: Path) -> None:
        """Make a finished generation durable, name it, point CURRENT at it, and
        prune the old ones (with the index lock held)."""
        fsync_file(tmp)
        os.replace(tmp, final)
        fsync_dir(self.dir)
        atomic_write(self.dir / "CURRENT", (final.name + "\n").encode())
        with contextlib.suppress(OSError):  # an old file that will not go is no failure
            self._prune()

    def _prune(self) -> None:
        gens = self.generations()
        current = self.current_path()
        for old in gens[:-KEEP]:
            if old == current:
                continue
            _remove_db(old)

    def swap(self) -> IndexStatus:
        """A new generation that is the current one caught up to the refs log
        (overlay changes included), swapped in: a copy of the file, not a
        rebuild, so a forget at 100k turns costs a file copy. The current
        generation keeps serving until the swap and stays for rollback."""
        with self.lock():
            current = self.current_path()
            if current is None:
                return self.build()
            conn = self._connect(current, write=True)
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all of it in the main file
            finally:
                conn.close()
            n = _gen_no(self.generations()[-1]) + 1
            final = self.dir / f"gen-{n}.sqlite"
            tmp = self.dir / f".gen-{n}.{os.getpid()}.tmp"
            try:
                shutil.copyfile(current, tmp)
                conn = self._connect(tmp, write=True)
                try:
                    self._catch_up(conn)
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except _TooMuch:
                    conn.close()
                    _remove_db(tmp)
                    return self.build()  # far behind: a whole new generation
                finally:
                    conn.close()
                _remove_db(tmp, main=False)  # checkpointed: all of it is in the main file
            except BaseException:
                _remove_db(tmp)
                raise
            self._publish(tmp, final)
        return self.status()

    def holds(self, session_id: str | None = None, turn_id: str | None = None) -> int:
        """Rows of the current generation for a session or a turn (a check that a
        target is gone after a forget)."""
        path = self.current_path()
        if path is None:
            return 0
        where, args = [], []
        if session_id is not None:
            where.append("session_id = ?")
            args.append(session_id)
        if turn_id is not None:
            where.append("turn_id = ?")
            args.append(turn_id)
        with self._reading(path) as conn:
            sql = "SELECT count(*) FROM turn" + (" WHERE " + " AND ".join(where) if where else "")
            return int(conn.execute(sql, args).fetchone()[0])

    def sessions_of(self, turn_id: str) -> list[str]:
        """The sessions whose turn ``turn_id`` the current generation holds."""
        try:
            path = self.current_path()
        except HistError:
            return []
        if path is None:
            return []
        with self._reading(path) as conn:
            rows = conn.execute("SELECT session_id FROM turn WHERE turn_id = ?", (turn_id,))
            return sorted({r[0] for r in rows})

    def rollback(self) -> IndexStatus:
        """Serve the generation before the current one (it catches up on the next write)."""
        with self.lock():
            gens = self.generations()
            current = self.current_path()
            older = [g for g in gens if current is None or g.name != current.name]
            older = [g for g in older if current is None or _gen_no(g) < _gen_no(current)]
            if not older:
                raise BadInput("no earlier generation of the recall index is kept")
            atomic_write(self.dir / "CURRENT", (older[-1].name + "\n").encode())
        return self.status()

    # -------------------------------------------------------- catch up

    def catch_up(self, *, timeout: float | None = None) -> int:
        """Apply the operations logged since the current generation last did;
        build a first generation when there is none. Returns rows changed."""
        with self.lock(timeout):
            path = self.current_path()
            if path is None:
                if not self.store.session_refs():
                    return 0  # nothing recorded yet: no index needed
                return self.build().rows  # build() takes the (re-entrant) lock
            conn = self._connect(path, write=True)
            try:
                return self._catch_up(conn)
            except _TooMuch:
                conn.close()
                return self.build().rows  # build() takes the (re-entrant) lock
            finally:
                conn.close()

    def _catch_up(self, conn: sqlite3.Connection) -> int:
        meta = self._meta(conn)
        applied = meta.get("applied_op") or None
        # only operations whose refs are all written: an entry is logged before
        # its refs move (refs.applied names the last one done), and replaying one
        # half-applied would read refs and markers from before it
        done = self.store.refs.applied()
        todo = self.store.refs.operations_after(applied)
        if todo is not None and done is not None:
            upto = next((i for i, op in enumerate(todo) if op.op == done), None)
            todo = todo[: upto + 1] if upto is not None else []
        elif todo is not None:
            todo = []
        if todo is None:
            raise CorruptStore(
                f"the recall index was built from operation {applied}, not in the refs log",
                hint="rebuild it with `hs plumbing index-build`",
            )
        if not todo:
            return 0
        if sum(len(op.changes) for op in todo) > REBUILD_CHANGES:
            raise _TooMuch  # a big import: one build beats a row at a time
        changed = 0
        fts = self._has_fts(conn)
        overlay = Overlay.read(self.store)
        conn.execute("BEGIN IMMEDIATE")
        try:
            for op in todo:
                changed += self._apply(conn, fts, op, overlay)
            rows = conn.execute("SELECT count(*) FROM turn").fetchone()[0]
            self._set_meta(conn, applied_op=todo[-1].op, rows=str(rows))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return changed

    def _entries(self, rev: str | None) -> tuple[SessionRev | None, dict[str, TurnEntry]]:
        if rev is None:
            return None, {}
        s = self.store.load_session(rev)
        return s, {t.turn_id: t for t in s.turns}

    def _apply(self, conn: sqlite3.Connection, fts: bool, op: Operation, overlay: Overlay) -> int:
        """One operation's changes as row changes, read against the overlay as it
        is now (so the end state is the refs and the overlay of now)."""
        changed = 0
        for c in op.changes:
            if c.ref.startswith(OVERLAY_PREFIX):
                target = c.ref[len(OVERLAY_PREFIX) :]
                marker = overlay.markers.get(target)
                if marker is None and (c.old or c.new):
                    # the ref is gone (an undone first forget): what it named is back
                    known = load_marker(self.store, c.old or c.new or "")
                    marker = dataclasses.replace(known, state="lifted")
                if marker is not None:
                    changed += self._apply_marker(conn, fts, marker, overlay)
                continue
            if not c.ref.startswith(SESSION_PREFIX):
                continue
            _, old = self._entries(c.old)
            new_s, new = self._entries(c.new)
            sid = c.ref[len(SESSION_PREFIX) :]
            for tid, entry in old.items():
                if new.get(tid) != entry:
                    self._delete(conn, fts, sid, tid)
                    changed += 1
            for tid, entry in new.items():
                if old.get(tid) != entry:
                    assert new_s is not None
                    self._delete(conn, fts, sid, tid)
                    if not overlay.hides(sid, tid):
                        self._row(conn, fts, new_s, entry)
                    changed += 1
        return changed

    def _apply_marker(
        self, conn: sqlite3.Connection, fts: bool, marker: Marker, overlay: Overlay
    ) -> int:
        """A target forgotten or brought back: its rows go, or come back from the
        session's current revision (unless another marker still hides them)."""
        if marker.target_kind not in ("turn", "session"):
            return 0  # a memory note: not in the index (its marker's session is a scope)
        target = marker.target
        sid = marker.session
        rows = conn.execute(
            "SELECT turn_id FROM turn WHERE session_id = ?"
            + (" AND turn_id = ?" if marker.target_kind == "turn" else ""),
            (sid, target) if marker.target_kind == "turn" else (sid,),
        ).fetchall()
        for (tid,) in rows:
            self._delete(conn, fts, sid, tid)
        if marker.active:
            return len(rows)
        rev = self.store.session_ref(sid)
        if rev is None:
            return len(rows)
        session = self.store.load_session(rev)
        added = 0
        for entry in session.turns:
            if marker.target_kind == "turn" and entry.turn_id != target:
                continue
            if overlay.hides(sid, entry.turn_id):
                continue
            self._delete(conn, fts, sid, entry.turn_id)
            self._row(conn, fts, session, entry)
            added += 1
        return len(rows) + added

    # -------------------------------------------------------- search

    def search(
        self,
        text: str,
        *,
        project: str | None = None,
        days: int | None = None,
        k: int = 5,
        fallback: bool = False,
    ) -> RecallResult:
        """The k best turns for ``text``: within ``project`` (a directory; None
        searches everywhere) and the last ``days`` days. Never takes a lock."""
        if not 1 <= k <= K_MAX:
            raise BadInput(f"-k {k}: give a number from 1 to {K_MAX}")
        if days is not None and days < 1:
            raise BadInput(f"--days {days}: give a number of days, 1 or more")
        query = Query.parse(text)
        scope = project_key(project) if project is not None else None
        path = self.current_path()
        if path is None:
            if self.store.session_refs():
                raise HistError(
                    "the recall index has not been built",
                    hint="build it with `hs plumbing index-build`",
                )
            return RecallResult(query, [], "empty", scope, days, "none")
        with self._searching(path) as conn:
            use_like = fallback or self._meta(conn).get("fts5") != "1"
            where = "fts5" if not use_like else "like"
            if not query.terms:
                return RecallResult(query, [], "no-terms", scope, days, where)
            if conn.execute("SELECT 1 FROM turn LIMIT 1").fetchone() is None:
                return RecallResult(query, [], "empty", scope, days, where)
            since = None
            if days is not None:
                since = int((_now() - timedelta(days=days)).timestamp() * 1000) * 4096
            if use_like:
                ranked = self._like(conn, query, scope, since, k)
            else:
                ranked = self._fts(conn, query, scope, since, k)
            # the overlay is merged at read time: a target forgotten a moment ago is
            # hidden even before the index has dropped its rows
            overlay = Overlay.read(self.store)
            hits = self._hits(conn, query, ranked, k, overlay)
            if hits:
                outcome = "found"
            elif days is not None and self._any(conn, query, scope, use_like, overlay):
                outcome = "no-match-in-days"
            else:
                outcome = "no-match"
            return RecallResult(query, hits, outcome, scope, days, where)

    def _is_common(self, conn: sqlite3.Connection, term: tuple[str, ...]) -> bool:
        """Whether ``term`` is in more than COMMON_DOCS turns: a bounded probe (it
        stops at that many matches), where a document count would read the
        term's whole posting list."""
        probe = '"' + " ".join(term) + '"'
        return (
            conn.execute(
                "SELECT 1 FROM fts WHERE fts MATCH ? LIMIT 1 OFFSET ?", (probe, COMMON_DOCS)
            ).fetchone()
            is not None
        )

    def _fts(
        self,
        conn: sqlite3.Connection,
        query: Query,
        scope: str | None,
        since: int | None,
        k: int,
    ) -> list[tuple[int, float]]:
        """bm25 over FTS5, with the work bounded for very common terms. bm25
        weighs a term by how rare it is, which means reading every match of it:
        for a term in most turns that is the whole cost of a query. So the
        informative terms (each in at most COMMON_DOCS turns) are ranked by
        bm25 over every turn in scope; when they give fewer hits than wanted
        (or there are none), the newest turns in scope that match any term
        follow, unranked: FTS5 reads those newest first and stops."""
        rare = tuple(t for t in query.terms if not self._is_common(conn, t))
        ranked: list[tuple[int, float]] = []
        if rare:
            ranked = self._ranked(conn, rare, scope, since, k)
        if len(ranked) < k * 3 and len(rare) < len(query.terms):
            have = {r for r, _ in ranked}
            ranked += [
                (r, 0.0) for r in self._newest(conn, query.terms, scope, since, k) if r not in have
            ]
        return ranked

    def _match(self, terms: tuple[tuple[str, ...], ...], scope: str | None) -> str:
        match = f"({Query.fts_of(terms)})"
        if scope is not None:
            match = f"proj : {proj_token(scope)} AND {match}"
        return match

    def _newest(
        self,
        conn: sqlite3.Connection,
        terms: tuple[tuple[str, ...], ...],
        scope: str | None,
        since: int | None,
        k: int,
    ) -> list[int]:
        sql = "SELECT rowid FROM fts WHERE fts MATCH ?"
        args: list[Any] = [self._match(terms, scope)]
        if since is not None:
            sql += " AND rowid >= ?"
            args.append(since)
        sql += " ORDER BY rowid DESC LIMIT ?"
        args.append(k * 3)
        return [r for (r,) in conn.execute(sql, args)]

    def _ranked(
        self,
        conn: sqlite3.Connection,
        terms: tuple[tuple[str, ...], ...],
        scope: str | None,
        low: int | None,
        k: int,
    ) -> list[tuple[int, float]]:
        sql = "SELECT rowid, bm25(fts, 4.0, 2.0, 1.0, 0.0) AS score FROM fts WHERE fts MATCH ?"
        args: list[Any] = [self._match(terms, scope)]
        if low is not None:
            sql += " AND rowid >= ?"
            args.append(low)
        sql += " ORDER BY score, rowid DESC LIMIT ?"
        args.append(k * 3)
        return [(r, float(s)) for r, s in conn.execute(sql, args)]

    def _like(
        self,
        conn: sqlite3.Connection,
        query: Query,
        scope: str | None,
        since: int | None,
        k: int,
    ) -> list[tuple[int, float]]:
        """The same question by LIKE: candidates by substring of the folded text
        (case and accents, as the tokens of the FTS path), then the token rule
        checked in Python; ranked by how many terms match (asked counts most,
        then answered, then files), newest first."""
        conn.create_function("hs_fold", 1, _fold, deterministic=True)
        clauses: list[str] = []
        args: list[Any] = []
        for t in query.terms:
            clauses.append("hs_fold(asked || ' ' || answered || ' ' || files) LIKE ? ESCAPE '\\'")
            args.append("%" + "%".join(_like_escape(x) for x in t) + "%")
        sql = "SELECT rowid, asked, answered, files FROM turn WHERE (" + " OR ".join(clauses) + ")"
        if scope is not None:
            sql += " AND pkey = ?"
            args.append(scope)
        if since is not None:
            sql += " AND rowid >= ?"
            args.append(since)
        sql += " ORDER BY rowid DESC"
        scored: list[tuple[float, int]] = []
        for rowid, asked, answered, files in conn.execute(sql, args):
            fields = [(tokens(asked), 4.0), (tokens(answered), 2.0), (tokens(files), 1.0)]
            score = 0.0
            for t in query.terms:
                score += sum(w for toks, w in fields if term_in(t, toks) >= 0)
            if score:
                scored.append((-score, -rowid))
        scored.sort()
        return [(-r, s) for s, r in scored[: k * 3]]

    def _any(
        self,
        conn: sqlite3.Connection,
        query: Query,
        scope: str | None,
        like: bool,
        overlay: Overlay,
    ) -> bool:
        """Whether any turn the overlay does not hide matches, ignoring the days
        window (looking at the newest 50 matches: enough for the hint it gives)."""
        if like:
            rowids = [r for r, _ in self._like(conn, query, scope, None, 17)]
        else:
            rowids = [
                r
                for (r,) in conn.execute(
                    "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT 50",
                    (self._match(query.terms, scope),),
                )
            ]
        for rowid in rowids:
            row = conn.execute(
                "SELECT session_id, turn_id FROM turn WHERE rowid = ?", (rowid,)
            ).fetchone()
            if row is not None and not (overlay and overlay.hides(row[0], row[1])):
                return True
        return False

    def _hits(
        self,
        conn: sqlite3.Connection,
        query: Query,
        ranked: list[tuple[int, float]],
        k: int,
        overlay: Overlay,
    ) -> list[Hit]:
        hits: list[Hit] = []
        seen: set[str] = set()
        for rowid, score in ranked:
            row = conn.execute(
                "SELECT turn_id, session_id, object, project, asked_at, asked, answered, files,"
                " read_json, edited_json, tainted FROM turn WHERE rowid = ?",
                (rowid,),
            ).fetchone()
            if row is None or row[0] in seen:
                continue  # the same turn id twice is one hit
            if overlay and overlay.hides(row[1], row[0]):
                continue
            seen.add(row[0])
            text = (
                excerpt(row[5], query.terms)
                or excerpt(row[6], query.terms)
                or excerpt(row[7], query.terms)
                or " ".join(row[5].split())[:EXCERPT]
            )
            hits.append(
                Hit(
                    turn_id=row[0],
                    session_id=row[1],
                    object=row[2],
                    project=row[3],
                    asked_at=row[4],
                    excerpt=text,
                    read=json.loads(row[8]),
                    edited=json.loads(row[9]),
                    tainted=bool(row[10]),
                    score=score,
                )
            )
            if len(hits) == k:
                break
        return hits


def _damaged(path: Path, e: Exception) -> CorruptStore:
    return CorruptStore(
        f"the recall index {path.name} is damaged ({e})",
        hint="rebuild it with `hs plumbing index-build`",
    )


def _remove_db(path: Path, *, main: bool = True) -> None:
    """A database file and SQLite's -wal and -shm beside it (or only those)."""
    for suffix in ("", "-wal", "-shm") if main else ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).unlink()


class _TooMuch(Exception):
    """A catch-up that would cost more than a build."""


def _gen_no(path: Path) -> int:
    m = _GEN.match(path.name)
    return int(m.group(1)) if m else 0


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
