"""Replaying the refs log into a generation: turns as rows, markers as deletes.

Every change to sessions and markers is an operation in the refs log. A
generation records the last operation it applied (``applied_op``) and is
caught up by replaying the later ones, up to ``refs.applied``: a session ref
that moved from revision A to B inserts the turns B has that A had not and
deletes those A had that B has not; a marker deletes its target's rows, or
(lifted) puts them back from the session's current revision. Rows are read
against the overlay as it is now, so the end state is the refs and the
overlay of now. :class:`Replay` is the row-writing half of
histstore.recall.index.RecallIndex.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from typing import TYPE_CHECKING

from histstore.errors import CorruptStore
from histstore.history.project import project_key
from histstore.history.turn import parse_time
from histstore.overlay.markers import PREFIX as OVERLAY_PREFIX
from histstore.overlay.markers import Marker, Overlay, load_marker
from histstore.recall.search import agent_token, proj_token
from histstore.store.kinds import Session, TurnEntry
from histstore.store.store import SESSION_PREFIX, Store

if TYPE_CHECKING:
    from histstore.store.oplog import Operation

#: a catch-up moving more session or marker refs than this builds a new
#: generation instead (loading rows in bulk is several times faster)
REBUILD_CHANGES = 500


def time_ms(ts: str) -> int:
    return int(parse_time(ts).timestamp() * 1000)


# ------------------------------------------------------------------ the index


class _TooMuch(Exception):
    """A catch-up that would cost more than a build."""


class Replay:
    """Writing rows into an open generation (``self.store`` is the store)."""

    store: Store

    @staticmethod
    def _meta(conn: sqlite3.Connection) -> dict[str, str]:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())

    def _row(
        self,
        conn: sqlite3.Connection,
        fts: bool,
        session: Session,
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
            # the project's token and the agent's: both filters inside the MATCH
            f"{proj_token(pkey)} {agent_token(session.agent)}",
            entry.asked_at,
            turn.get("asked") or "",
            turn.get("answered") or "",
            files,
            json.dumps(turn.get("files", []), ensure_ascii=False),
            json.dumps(turn.get("edited", []), ensure_ascii=False),
            1 if turn.get("tainted") else 0,
            session.agent,
        )
        conn.execute("INSERT INTO turn VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
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

    def _entries(self, rev: str | None) -> tuple[Session | None, dict[str, TurnEntry]]:
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
