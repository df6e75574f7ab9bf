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
import os
import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from histstore.errors import BadInput, CorruptStore, HistError, Locked
from histstore.history.project import project_key
from histstore.overlay.markers import Overlay
from histstore.recall.query import K_MAX, Query, RecallResult
from histstore.recall.replay import Replay, _TooMuch
from histstore.recall.search import any_match, hits_of, ranked_fts, scan_like
from histstore.store import fsutil
from histstore.store.fsutil import atomic_write, fsync_dir, fsync_file
from histstore.store.store import Store

if TYPE_CHECKING:
    pass

#: 2: the ``proj`` column also holds the agent's token (``--agent``); a
#: generation of an older schema is rebuilt by the next catch-up
SCHEMA_VERSION = "2"
KEEP = 3

_GEN = re.compile(r"^gen-(\d+)\.sqlite$")

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE turn(
    rowid INTEGER PRIMARY KEY,      -- asked_at in ms * 4096 + n: time order
    turn_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    object TEXT NOT NULL,
    project TEXT NOT NULL,          -- as recorded
    pkey TEXT NOT NULL,             -- histstore.project.project_key(project)
    proj TEXT NOT NULL,             -- tokens naming pkey and the agent, for the FTS filters
    asked_at TEXT NOT NULL,
    asked TEXT NOT NULL,
    answered TEXT NOT NULL,
    files TEXT NOT NULL,            -- read and edited paths, one per line (searched)
    read_json TEXT NOT NULL,
    edited_json TEXT NOT NULL,
    tainted INTEGER NOT NULL,
    agent TEXT NOT NULL             -- the session's agent (schema 2)
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


class RecallIndex(Replay):
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
        if write and not fsutil.FSYNC:
            conn.execute("PRAGMA synchronous = OFF")  # the test-only switch (store.fsutil)
        return conn

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
            meta = self._meta(conn)
        return meta.get("applied_op") != applied or meta.get("schema") != SCHEMA_VERSION

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

    def compact(self) -> IndexStatus:
        """Merge the current generation's FTS segments (so a deleted row's text,
        a forgotten turn's, leaves the file) and delete every other generation
        (older ones hold that text too). What ``hs gc`` calls."""
        with self.lock():
            current = self.current_path()
            if current is not None:
                conn = self._connect(current, write=True)
                try:
                    with contextlib.suppress(sqlite3.OperationalError):  # built without FTS5
                        conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
                    conn.execute("VACUUM")
                except sqlite3.DatabaseError as e:
                    raise _damaged(current, e) from None
                finally:
                    conn.close()
                for old in self.generations():
                    if old != current:
                        _remove_db(old)
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
                if self._meta(conn).get("schema") != SCHEMA_VERSION:
                    conn.close()
                    return self.build().rows  # an older schema: a whole new generation
                return self._catch_up(conn)
            except _TooMuch:
                conn.close()
                return self.build().rows  # build() takes the (re-entrant) lock
            finally:
                conn.close()

    # -------------------------------------------------------- search

    def search(
        self,
        text: str,
        *,
        project: str | None = None,
        days: int | None = None,
        k: int = 5,
        agent: str | None = None,
        fallback: bool = False,
    ) -> RecallResult:
        """The k best turns for ``text``: within ``project`` (a directory; None
        searches everywhere), the last ``days`` days, and of one ``agent``'s
        sessions (None: every agent's). Never takes a lock."""
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
            if agent is not None and not agent.strip():
                raise BadInput("--agent: give an agent's name (claude-code, codex, ...)")
            if use_like:
                ranked = scan_like(conn, query, scope, since, k, agent)
            else:
                ranked = ranked_fts(conn, query, scope, since, k, agent)
            # the overlay is merged at read time: a target forgotten a moment ago is
            # hidden even before the index has dropped its rows
            overlay = Overlay.read(self.store)
            hits = hits_of(conn, query, ranked, k, overlay)
            if hits:
                outcome = "found"
            elif days is not None and any_match(conn, query, scope, use_like, overlay, agent):
                outcome = "no-match-in-days"
            else:
                outcome = "no-match"
            return RecallResult(query, hits, outcome, scope, days, where)


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


def _gen_no(path: Path) -> int:
    m = _GEN.match(path.name)
    return int(m.group(1)) if m else 0


#: set (to anything but 0) to answer every recall by the LIKE path
FALLBACK_ENV = "HS_RECALL_FALLBACK"


def recall(
    store: Store,
    text: str,
    *,
    project: str | None = None,
    days: int | None = None,
    k: int = 5,
    agent: str | None = None,
) -> RecallResult:
    """What ``hs recall`` and every library caller ask: the index caught up
    first when it is behind the refs log (a store written before it existed,
    a crash) — if no writer holds the index lock; a search never waits for
    one, it searches what is there — then searched."""
    index = RecallIndex(store)
    try:
        if index.behind():
            with contextlib.suppress(Locked):
                index.catch_up(timeout=0)
        fallback = os.environ.get(FALLBACK_ENV, "") not in ("", "0")
        return index.search(text, project=project, days=days, k=k, agent=agent, fallback=fallback)
    finally:
        index.close()
