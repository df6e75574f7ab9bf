"""The summary: every current turn's listing facts in one small local table.

``hs log -n 20``, ``hs status`` and ``hs show <turn id>`` must not read every
session of a large store (at 1M turns that is seconds). The summary is a
SQLite file, ``local/summary.sqlite``, holding per turn what a listing needs
(session, turn id, object, time, project, subagent) and per session its
revision, title, project, agent and counts — like git's commit-graph: derived
data, rebuilt from the session refs at any time, never synced.

It follows the refs log as the recall index does (docs/format.md, "The
summary"): ``applied_op`` names the last operation it reflects; catching up
replays the session ref changes logged since — a revision that adds turns to
the one before it (a delta) costs the turns it adds; any other move (an undo,
a merge, a sync) re-reads that session. One transaction per catch-up
(SQLite's ``BEGIN IMMEDIATE``: one writer at a time), so a reader sees it
before or after, never half.
Readers catch it up when it is behind (the refs log's version compared with
the one it last matched, then two ids: cheap); when it cannot be written (a
read-only store) or another process is writing it, they read the sessions.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.errors import CorruptObject, CorruptStore, HistError, NotFound
from histstore.history.project import project_key
from histstore.history.summary_schema import DDL, SCHEMA, TABLES, UPGRADES
from histstore.history.turn import as_text
from histstore.store import fsutil
from histstore.store.kinds import Session, SessionRev, TurnEntry, ordered, parse
from histstore.store.oplog import Operation
from histstore.store.store import SESSION_PREFIX, Store

NAME = "summary.sqlite"


@dataclass(frozen=True)
class SessionInfo:
    """A session as the summary lists it (no turns: ask the store for those)."""

    session_id: str
    rev: str
    project: str
    agent: str
    title: str | None
    turns: int


@dataclass(frozen=True)
class Row:
    """A current turn as the summary lists it, with its session."""

    session: SessionInfo
    entry: TurnEntry


class Unavailable(Exception):
    """The summary cannot be used here (cannot be written): read the sessions."""


class Summary:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.dir = store.root / "local"
        self.path = self.dir / NAME
        self._conn: sqlite3.Connection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> Summary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ opening

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        for attempt in range(2):
            try:
                self._conn = self._open()
                return self._conn
            except sqlite3.DatabaseError as e:
                if isinstance(e, sqlite3.OperationalError) or attempt:
                    raise Unavailable(str(e)) from None
                self._drop()  # not a database: derived data, start it again
            except OSError as e:
                raise Unavailable(str(e)) from None
        raise AssertionError("unreachable")

    def _open(self) -> sqlite3.Connection:
        self.dir.mkdir(exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            # a turn row REPLACEd is a delete too: the project counts' trigger sees it
            conn.execute("PRAGMA recursive_triggers = ON")
            if not fsutil.FSYNC:
                conn.execute("PRAGMA synchronous = OFF")  # the test-only switch
            else:
                conn.execute("PRAGMA synchronous = NORMAL")
            have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if "meta" not in have:
                conn.executescript("BEGIN IMMEDIATE;" + DDL + "COMMIT;")
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA,))
        except BaseException:
            conn.close()
            raise
        return conn

    def _drop(self) -> None:
        self.close()
        with contextlib.suppress(OSError):
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)

    def remove(self) -> None:
        """The summary's files gone for good (a purge: it may name what went;
        the next reader rebuilds it from the refs)."""
        if self.path.exists():
            self._drop()
            fsutil.fsync_dir(self.dir)

    def _meta(self, conn: sqlite3.Connection, key: str) -> str | None:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def current(self, *, limit: int | None = None) -> sqlite3.Connection:
        """The summary, caught up with the refs log (Unavailable when it cannot
        be read or written here). With ``limit``, Unavailable too when that
        would take a rebuild or more than ``limit`` operations: a hook does
        not pay for a summary left far behind (the next reader does)."""
        conn = self._connect()
        try:
            for old, script in UPGRADES.items():  # oldest first
                if self._meta(conn, "schema") == old:
                    new = str(int(old) + 1)
                    conn.executescript(
                        f"BEGIN IMMEDIATE;{script}UPDATE meta SET value = '{new}' "
                        f"WHERE key = 'schema' AND value = '{old}';COMMIT;"
                    )
            if self._meta(conn, "schema") != SCHEMA:
                if limit is not None:
                    raise Unavailable(
                        "the summary is of another schema: the next reader rebuilds it"
                    )
                self._reset(conn)
            # the log as it was when the summary last matched it: unchanged
            # since, nothing to compare (its newest entry can be megabytes)
            log = fsutil.version(self.store.refs.log_path)
            built = self._meta(conn, "built") is not None
            if log is not None and built and self._meta(conn, "log_version") == _text(log):
                return conn
            want = self.store.refs.last_op_id() or ""
            if (self._meta(conn, "applied_op") or "") != want or not built:
                self._catch_up(conn, limit, log, want)
            elif log is not None:
                self._note_log_version(conn, log)
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                self._drop()
                raise Unavailable(
                    f"the summary was damaged ({e}); it is rebuilt next time"
                ) from None
            # another process holds it (a rebuild at 1M turns takes a minute):
            # read the sessions this time, and leave its work alone
            raise Unavailable(f"the summary is being written by another process ({e})") from None
        except sqlite3.DatabaseError as e:
            # a damaged file is derived data: start it again next time
            self._drop()
            raise Unavailable(f"the summary was damaged ({e}); it is rebuilt next time") from None
        return conn

    def _reset(self, conn: sqlite3.Connection) -> None:
        """A summary of another schema: its tables made again, empty."""
        drops = "".join(f"DROP TABLE IF EXISTS {table};" for table in TABLES)
        # one script, one transaction (the triggers' bodies hold semicolons)
        conn.executescript(
            f"BEGIN IMMEDIATE;{drops}{DDL}INSERT INTO meta VALUES ('schema', '{SCHEMA}');COMMIT;"
        )

    # ----------------------------------------------------------- catching up

    def _note_log_version(self, conn: sqlite3.Connection, log: tuple[int, int, int]) -> None:
        """``log_version``: the refs log's version (inode, size, mtime) when the
        summary was found to match it. Written only if no other process holds
        the summary (a reader never waits for this), and not at all where it
        cannot be (a read-only store: the next reader compares again)."""
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            try:
                self._set(conn, "log_version", _text(log))
            finally:
                conn.execute("PRAGMA busy_timeout = 30000")
        except sqlite3.OperationalError:
            pass

    def _catch_up(
        self,
        conn: sqlite3.Connection,
        limit: int | None = None,
        log: tuple[int, int, int] | None = None,
        want: str | None = None,
    ) -> None:
        """Replay the operations logged since ``applied_op`` in one transaction
        (BEGIN IMMEDIATE serializes catch-ups; the one that waited finds the
        work done); with ``limit``, Unavailable rather than a rebuild or more
        than ``limit`` operations. ``log``: the refs log's version, taken
        before it was read, and ``want``: that version's newest operation;
        the version is recorded only when the summary ends at that very
        operation (a rebuild that met an operation still moving its refs
        ends before it, and the next reader must compare again)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            applied = self._meta(conn, "applied_op")
            built = self._meta(conn, "built")
            if limit is not None:
                ops = self._recent(applied, limit) if built else None
                if ops is None:
                    raise Unavailable("the summary is far behind: the next reader catches it up")
            else:
                ops = self.store.refs.operations_after(applied) if built else None
            if ops is None:
                self._rebuild(conn)
            else:
                for op in ops:
                    for c in op.changes:
                        if c.ref.startswith(SESSION_PREFIX):
                            self._move(conn, c.ref[len(SESSION_PREFIX) :], c.old, c.new)
                    self._set(conn, "applied_op", op.op)
                    self._bump(conn, 1)
            if log is not None and want is not None and self._meta(conn, "applied_op") == want:
                self._set(conn, "log_version", _text(log))
            else:
                conn.execute("DELETE FROM meta WHERE key = 'log_version'")
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise

    def _recent(self, applied: str | None, limit: int) -> list[Operation] | None:
        """The operations after ``applied``, oldest first, if there are at
        most ``limit`` (None otherwise, or when ``applied`` is not found)."""
        newer: list[Operation] = []
        for op in self.store.refs.newest_first():
            if op.op == applied:
                return newer[::-1]
            newer.append(op)
            if len(newer) > limit:
                return None
        return newer[::-1] if not applied else None

    def _set(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def _bump(self, conn: sqlite3.Connection, n: int) -> None:
        have = int(self._meta(conn, "operations") or "0")
        self._set(conn, "operations", str(have + n))

    def _rebuild(self, conn: sqlite3.Connection) -> None:
        """The summary made again from the session refs. It reflects the last
        operation whose refs were all moved (``refs.applied``, read before
        the refs): one logged but still moving its refs is replayed by the
        next catch-up, not taken as done over refs it has not moved yet."""
        conn.execute("DELETE FROM turn")
        conn.execute("DELETE FROM session")
        applied = self.store.refs.applied()
        last = None
        count = upto = 0
        for line in self.store.refs.read_log():
            if line.op is not None:
                last = line.op.op
                count += 1
                if last == applied:
                    upto = count
        for sid, rev in self.store.session_refs().items():
            self._put_session(conn, sid, rev)
        if upto:  # the operations after it are the next catch-up's to count
            last, count = applied, upto
        self._set(conn, "applied_op", last or "")
        self._set(conn, "operations", str(count))
        self._set(conn, "built", "1")

    def _move(self, conn: sqlite3.Connection, sid: str, old: str | None, new: str | None) -> None:
        if new is None:
            conn.execute("DELETE FROM turn WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM session WHERE session_id = ?", (sid,))
            return
        have = conn.execute("SELECT rev FROM session WHERE session_id = ?", (sid,)).fetchone()
        try:
            rev: SessionRev = parse(new, *self.store.objects.get(new))
        except (NotFound, CorruptObject):
            # gone since (a later operation moved on, gc past the window): the
            # ref's value now is what counts, and a later change brings it
            conn.execute("DELETE FROM turn WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM session WHERE session_id = ?", (sid,))
            return
        if not rev.full and have is not None and rev.parents == [have[0]]:
            # a delta on the revision the summary holds: just the turns it adds
            self._put_turns(conn, sid, rev.project, rev.turns)
            self._put_row(conn, sid, new, rev.project, rev.agent, rev.title, rev.count)
            return
        self._put_session(conn, sid, new)

    def _put_session(self, conn: sqlite3.Connection, sid: str, rev_id: str) -> None:
        try:
            s = self.store.load_session(rev_id)
        except (NotFound, CorruptObject):
            conn.execute("DELETE FROM turn WHERE session_id = ?", (sid,))
            conn.execute("DELETE FROM session WHERE session_id = ?", (sid,))
            return
        conn.execute("DELETE FROM turn WHERE session_id = ?", (sid,))
        self._put_turns(conn, sid, s.project, s.turns)
        self._put_row(conn, sid, rev_id, s.project, s.agent, s.title, len(s.turns))

    def _put_turns(
        self, conn: sqlite3.Connection, sid: str, project: str, turns: list[TurnEntry]
    ) -> None:
        conn.executemany(
            "INSERT OR REPLACE INTO turn VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    sid,
                    t.turn_id,
                    t.object,
                    t.asked_at,
                    t.project or project,
                    project_key(t.project or project),
                    t.subagent,
                    t.project,
                )
                for t in turns
            ],
        )

    def _put_row(
        self,
        conn: sqlite3.Connection,
        sid: str,
        rev: str,
        project: str,
        agent: str,
        title: str | None,
        turns: int,
    ) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO session VALUES (?, ?, ?, ?, ?, ?, ?)",
            (sid, rev, project, project_key(project), agent, title, turns),
        )

    # ---------------------------------------------------------------- reads

    def log(
        self,
        *,
        session: str | None = None,
        projects: Collection[str] | None = None,
        since: str | None = None,
        limit: int | None = None,
        agent: str | None = None,
    ) -> list[Row]:
        """Current turns matching the filters (``projects``: the turn's own
        project is one of them), newest first (as
        histstore.history.reading.log_entries orders them)."""
        conn = self.current()
        where: list[str] = []
        args: list[str | int] = []
        # an argument of odd bytes (surrogates) searches what the store can hold
        session = None if session is None else as_text(session)
        agent = None if agent is None else as_text(agent)
        projects = None if projects is None else [as_text(p) for p in projects]
        if session is not None:
            where.append("t.session_id = ?")
            args.append(session)
        if projects is not None:
            where.append("t.project IN (SELECT value FROM json_each(?))")
            args.append(json.dumps(sorted(projects)))
        if since is not None:
            where.append("t.asked_at >= ?")
            args.append(since)
        if agent is not None:
            where.append("s.agent = ?")
            args.append(agent)
        sql = (
            "SELECT t.session_id, t.turn_id, t.object, t.asked_at, t.subagent, t.project,"
            " s.rev, s.project, s.agent, s.title, s.turns"
            " FROM turn t JOIN session s ON s.session_id = t.session_id"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY t.asked_at DESC, t.turn_id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(min(limit, 2**63 - 1))  # SQLite's integers: more is every row
        return [_row(r) for r in conn.execute(sql, args)]

    def projects(self) -> set[tuple[str, str]]:
        """Every project a current turn has, as recorded, with its project key."""
        conn = self.current()
        return {
            (str(p), str(k)) for p, k in conn.execute("SELECT DISTINCT project, pkey FROM turn")
        }

    def project_turns(self, limit: int) -> list[tuple[str, int]]:
        """The projects (by project key) with the most current turns, and how many."""
        conn = self.current()
        # counted as turns come and go (the triggers of DDL), not per read:
        # a GROUP BY over a million turns is ~130 ms
        rows = conn.execute(
            "SELECT pkey, turns FROM project WHERE turns > 0 ORDER BY turns DESC, pkey LIMIT ?",
            (limit,),
        )
        return [(str(k), int(n)) for k, n in rows]

    def turns_named(self, text: str) -> list[Row]:
        """The turns whose id is ``text`` or starts with it (at most 11)."""
        conn = self.current()
        text = as_text(text)
        hi = text + "\U0010ffff"
        rows = conn.execute(
            "SELECT t.session_id, t.turn_id, t.object, t.asked_at, t.subagent, t.project,"
            " s.rev, s.project, s.agent, s.title, s.turns"
            " FROM turn t JOIN session s ON s.session_id = t.session_id"
            " WHERE t.turn_id >= ? AND t.turn_id < ? ORDER BY t.turn_id LIMIT 11",
            (text, hi),
        )
        return [_row(r) for r in rows]

    def abbreviations(self, turn_ids: list[str], least: int = 12) -> dict[str, str]:
        """The shortest prefix (``least`` characters at the fewest) of each turn
        id that no other turn id and no session id of the store starts with, so
        that ``hs show`` takes it (as git abbreviates object ids). Codex turn
        ids of early generations are ``<session id>-<n>``: theirs are longer."""
        conn = self.current()
        out: dict[str, str] = {}
        for tid in turn_ids:
            length = least
            for table, column in (("turn", "turn_id"), ("session", "session_id")):
                for op, order in (("<", "DESC"), (">", "ASC")):
                    row = conn.execute(
                        f"SELECT {column} FROM {table} WHERE {column} {op} ?"
                        f" ORDER BY {column} {order} LIMIT 1",
                        (tid,),
                    ).fetchone()
                    if row is not None:
                        other = str(row[0])
                        # characters, not path parts: what a prefix shares
                        common = len(os.path.commonprefix([tid, other]))  # noqa: RUF071
                        length = max(length, common + 1)
            out[tid] = tid[:length]
        return out

    def session(self, session_id: str, rev_id: str, *, limit: int | None = None) -> Session | None:
        """The session at revision ``rev_id`` read from the summary (every turn
        entry as the revisions hold it: a few rows, where materializing it
        from the objects reads every delta back to its last full revision), or
        None when the summary does not hold that revision whole. ``limit``:
        as :meth:`current`'s."""
        conn = self.current(limit=limit)
        row = conn.execute(
            "SELECT rev, turns FROM session WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None or row[0] != rev_id:
            return None
        rev = self.store.load_revision(rev_id)
        turns = [
            TurnEntry(*r)
            for r in conn.execute(
                "SELECT turn_id, object, asked_at, subagent, own FROM turn WHERE session_id = ?",
                (session_id,),
            )
        ]
        if len(turns) != rev.count or row[1] != rev.count or rev.session_id != session_id:
            return None
        return Session(
            session_id, rev.project, rev.agent, rev.title, ordered(turns), rev_id, list(rev.parents)
        )

    def sessions(self) -> Iterator[SessionInfo]:
        conn = self.current()
        for r in conn.execute(
            "SELECT session_id, rev, project, agent, title, turns FROM session ORDER BY session_id"
        ):
            yield SessionInfo(*r)

    def counts(self) -> dict[str, Any]:
        """Sessions, turns, projects, turns per agent, operations."""
        conn = self.current()
        # from the counts the triggers keep (a few rows), not the sessions
        sessions, turns = conn.execute(
            "SELECT coalesce(sum(sessions), 0), coalesce(sum(turns), 0) FROM agent"
        ).fetchone()
        projects = conn.execute("SELECT count(*) FROM session_pkey WHERE sessions > 0").fetchone()[
            0
        ]
        agents = dict(
            conn.execute("SELECT agent, turns FROM agent WHERE sessions > 0 ORDER BY agent")
        )
        turn_projects = conn.execute("SELECT count(*) FROM project WHERE turns > 0").fetchone()[0]
        return {
            "sessions": int(sessions),
            "turns": int(turns),
            "projects": int(projects),
            "turn_projects": int(turn_projects),
            "agents": {str(k): int(v) for k, v in agents.items()},
            "operations": int(self._meta(conn, "operations") or "0"),
        }


def _text(version: tuple[int, int, int]) -> str:
    """A file version (histstore.store.fsutil.version) as ``meta`` holds it."""
    return " ".join(map(str, version))


def _row(r: tuple[Any, ...]) -> Row:
    sid, tid, obj, asked_at, sub, tproject, rev, sproject, agent, title, count = r
    own = tproject if tproject != sproject else None
    return Row(
        SessionInfo(sid, rev, sproject, agent, title, count),
        TurnEntry(tid, obj, asked_at, sub, own),
    )


def open_summary(store: Store) -> Summary | None:
    """The store's summary caught up, or None when it cannot be used here."""
    s = Summary(store)
    try:
        s.current()
    except (Unavailable, HistError, CorruptStore):
        s.close()
        return None
    return s
