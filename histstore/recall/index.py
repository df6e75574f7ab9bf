"""The recall index: a Tantivy index over every part of every turn, in generations.

Derived data (docs/format.md, "The recall index"): it can always be rebuilt
from the objects the session refs reach and the overlay. A build writes a new
generation beside the old ones and points ``CURRENT`` at it under the index
lock (histstore.recall.generations); every later change — new turns, a
forget, an unforget, an undo — is *caught up*: the refs-log operations after
the one the generation last applied are replayed into one commit (deletes and
adds, histstore.recall.replay), which readers see whole or not at all. So a
forget costs a delete and a commit, whatever the size of the store.

:func:`recall` is what every caller asks: it catches an index left behind up
first (if no writer holds the lock), then searches it — or, without the
engine (``HS_RECALL_FALLBACK``, or Tantivy missing), scans the objects
(histstore.recall.scan) for the same answer, slower.
"""

from __future__ import annotations

import contextlib
import heapq
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from histstore.errors import BadInput, CorruptStore, HistError, Locked
from histstore.overlay.markers import Overlay
from histstore.recall.generations import REBUILD_HINT, Generation, Generations, number
from histstore.recall.hits import make_hits
from histstore.recall.query import K_MAX, Query, RecallResult, Scope, time_ms
from histstore.store.kinds import Session, TurnEntry
from histstore.store.store import Store

#: the schema of a generation (its meta's ``schema``; docs/format.md): 4, each
#: part of a turn a value of its own (3 joined a field's parts into one value,
#: so phrases spanned them; 1 and 2 were SQLite FTS5 databases); a generation
#: of another schema is rebuilt by the next catch-up
SCHEMA_VERSION = 4
#: set (to anything but 0) to answer every recall by scanning the objects
FALLBACK_ENV = "HS_RECALL_FALLBACK"
#: the engine's handles on generations this process opened: (path, inode) -> index
_OPEN: dict[tuple[str, int], Any] = {}


def _now() -> datetime:
    return datetime.now(UTC)


def load_engine() -> ModuleType:
    """histstore.recall.engine, or :class:`HistError` when Tantivy cannot be
    loaded (recall then scans the objects)."""
    try:
        from histstore.recall import engine
    except ImportError as e:
        raise HistError(
            f"the search engine cannot be loaded ({e})",
            hint="reinstall histstore (it needs the tantivy package); recall scans meanwhile",
        ) from None
    return engine


def load_replay() -> ModuleType:
    load_engine()
    from histstore.recall import replay

    return replay


class IndexStatus:
    """The state of the index (``hs plumbing index-status``). ``deleted``:
    documents deleted but still in a segment's files (until compact)."""

    def __init__(
        self,
        generation: str | None,
        built_op: str | None,
        applied_op: str | None,
        last_op: str | None,
        rows: int,
        segments: int = 0,
        deleted: int = 0,
        generations: list[str] | None = None,
        engine: str = "",
    ) -> None:
        self.generation = generation
        self.built_op = built_op
        self.applied_op = applied_op
        self.last_op = last_op
        self.rows = rows
        self.segments = segments
        self.deleted = deleted
        self.generations = generations or []
        self.engine = engine

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
            "segments": self.segments,
            "deleted": self.deleted,
            "generations": self.generations,
            "engine": self.engine,
        }


class RecallIndex:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.gens = Generations(store)
        self.dir = self.gens.dir
        # a long-lived caller (an agent's tool, a server) searches many times: the
        # engine's handle on the current generation is kept while CURRENT names it
        self._reader: tuple[str, int, Any] | None = None

    # -------------------------------------------------------- generations

    def current_path(self) -> Path | None:
        gen = self.gens.current()
        return None if gen is None else gen.path

    def generations(self) -> list[Path]:
        return [self.dir / n for n in self.gens.names()]

    def lock(self, timeout: float | None = None) -> contextlib.AbstractContextManager[None]:
        return self.gens.lock(timeout)

    def close(self) -> None:
        self._reader = None

    def _open(self, gen: Generation) -> Any:
        """The engine's handle on a generation, reloaded to its last commit. The
        handles are kept for the process (a tool or a server asks many times):
        opening a generation of 1M turns costs milliseconds, reloading one a
        fraction of that."""
        engine = load_engine()
        try:
            key = (str(gen.path), os.stat(gen.path).st_ino)  # a name is reused if index/ is
            index = _OPEN.get(key)
            if index is not None:
                index.reload()
            else:
                for old in [k for k in _OPEN if k[0].startswith(str(self.dir))]:
                    del _OPEN[old]  # another generation of this index: let its files go
                index = engine.open_index(gen.path)
                _OPEN[key] = index
            self._reader = (gen.name, key[1], index)
            return index
        except (ValueError, OSError) as e:
            for old in [k for k in _OPEN if k[0] == str(gen.path)]:
                del _OPEN[old]
            self._reader = None
            raise _damaged(gen.name, e) from None

    def status(self) -> IndexStatus:
        last_op = self.store.refs.last_op_id()
        gen = self.gens.current()
        names = self.gens.names()
        if gen is None:
            return IndexStatus(None, None, None, last_op, 0, generations=names)
        engine = load_engine()
        searcher = self._open(gen).searcher()
        try:
            segs = engine.segments(gen.path)
        except (OSError, ValueError) as e:
            raise _damaged(gen.name, e) from None
        deleted = sum(int((s.get("deletes") or {}).get("num_deleted_docs", 0)) for s in segs)
        return IndexStatus(
            gen.name,
            gen.built_op,
            gen.applied_op,
            last_op,
            int(searcher.num_docs),
            len(segs),
            deleted,
            names,
            engine.version(),
        )

    def behind(self) -> bool:
        """Whether operations were applied that the current generation lacks (or
        there is none while turns exist): a cheap check, reading two small files."""
        try:
            applied = (self.store.root / "refs.applied").read_text("ascii").strip()
        except FileNotFoundError:
            return False  # nothing was ever recorded
        gen = self.gens.current()
        if gen is None:
            return True
        return gen.applied_op != applied or gen.meta.get("schema") != SCHEMA_VERSION

    # -------------------------------------------------------- writing

    def build(self) -> IndexStatus:
        """A new generation from every turn the session refs reach, swapped in."""
        with self.lock():
            self._build()
        return self.status()

    def _build(self) -> int:
        """Build and publish a new generation; returns the documents it holds."""
        import shutil  # a build alone removes what it left (with zlib, bz2, lzma)

        engine, replay = load_engine(), load_replay()
        n = self.gens.next_number()
        tmp = self.gens.scratch(n)
        # built from the refs as of the last operation fully applied (one logged
        # but still moving its refs is caught up afterwards)
        done = self.store.refs.applied() or ""
        w = None
        try:
            w = replay.Writer(self.store, engine.create(tmp), bulk=True)
            overlay = Overlay.read(self.store)
            rows = 0
            for session, entry in self._newest_first():
                if not overlay.hides(session.session_id, entry.turn_id):
                    w.w.add_document(w.document(session, entry))
                    rows += 1
            w.commit()
            w = None
        except BaseException:
            if w is not None:
                with contextlib.suppress(Exception):
                    w.abandon()
                w = None
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        meta = {
            "schema": SCHEMA_VERSION,
            "built_op": done,
            "applied_op": done,
            "built_at": _now().isoformat(),
            "engine": engine.version(),
        }
        self.gens.publish(tmp, n, meta)
        return rows

    def _newest_first(self) -> Iterator[tuple[Session, TurnEntry]]:
        """Every turn of every session, newest first. A build adds documents in
        this order, so each segment holds a stretch of time: a days window then
        passes over segments wholly outside it (Tantivy compares a segment's
        smallest and largest time with the window; five times faster at 1M),
        and among equal scores the engine keeps the newer. Sessions are read
        twice (once for their last turn's time); only those still being merged
        are held."""
        last: list[tuple[int, str, str]] = []
        for sid in self.store.session_refs():
            s = self.store.session(sid)
            if s.turns:
                last.append((time_ms(s.turns[-1].asked_at), sid, s.rev))
        last.sort(reverse=True)
        # (-time, turn id, the session's place in ``last``, position, session)
        heap: list[tuple[int, str, int, int, Session]] = []
        i = 0
        while i < len(last) or heap:
            # open every session whose newest turn is at least as new as the
            # newest turn still waiting: none opened later can be newer
            while i < len(last) and (not heap or last[i][0] >= -heap[0][0]):
                s = self.store.load_session(last[i][2])
                n = len(s.turns) - 1
                heapq.heappush(heap, (-time_ms(s.turns[n].asked_at), s.turns[n].turn_id, i, n, s))
                i += 1
            _, _, at, n, s = heapq.heappop(heap)
            yield s, s.turns[n]
            if n:
                t = s.turns[n - 1]
                heapq.heappush(heap, (-time_ms(t.asked_at), t.turn_id, at, n - 1, s))

    def catch_up(self, *, timeout: float | None = None) -> int:
        """Apply the operations logged since the current generation last did, in
        one commit; build a first generation when there is none. Returns the
        documents deleted or added (or built)."""
        with self.lock(timeout):
            return self._catch_up()

    def follow(self, *, timeout: float | None = None) -> int:
        """Catch up after an operation that moved no session or marker (a
        push's remote-tracking refs): when the generation lacks only such
        operations, its meta alone moves (no engine writer, no commit);
        operations left behind before it are replayed as any catch-up's.
        Without a current generation (none, or one of another schema) it does
        nothing: building one is for the next write or recall, not a push."""
        with self.lock(timeout):
            gen = self.gens.current()
            if gen is None or gen.meta.get("schema") != SCHEMA_VERSION:
                return 0
            return self._catch_up()

    def _catch_up(self) -> int:
        gen = self.gens.current()
        if gen is None or gen.meta.get("schema") != SCHEMA_VERSION:
            if not self.store.has_sessions():
                return 0  # nothing recorded yet: no index needed
            return self._build()
        replay = load_replay()
        todo = replay.pending(self.store, gen.applied_op)
        if not todo:
            return 0
        changed = 0
        if any(replay.touches_index(op) for op in todo):
            engine = load_engine()
            try:
                index = engine.open_index(gen.path)
            except ValueError as e:
                raise _damaged(gen.name, e) from None
            w = replay.Writer(self.store, index, bulk=replay.session_changes(todo) > 32)
            overlay = Overlay.read(self.store)
            try:
                for op in todo:
                    if replay.touches_index(op):
                        replay.apply(self.store, w, op, overlay)
            except BaseException:
                w.abandon()
                raise
            w.commit()
            changed = w.changed
            del w, index
        # after the commit: a crash between the two replays these operations
        # again, which gives the same documents (histstore.recall.replay)
        self.gens.write_meta(gen.name, {**gen.meta, "applied_op": todo[-1].op})
        return changed

    def rollback(self) -> IndexStatus:
        """Serve the generation before the current one (it catches up on the next write)."""
        with self.lock():
            current = self.gens.current_name()
            names = self.gens.names()
            older = [n for n in names if current is None or number(n) < number(current)]
            if not older:
                raise BadInput("no earlier generation of the recall index is kept")
            self.gens.point(older[-1])
        return self.status()

    def compact(self) -> IndexStatus:
        """Rewrite every segment that holds deleted documents, so what was
        deleted (a forgotten turn's text, a revised turn's old text) leaves the
        index files for good; then delete every other generation (older ones
        hold it too). What ``hs gc`` calls."""
        with self.lock():
            self._catch_up()
            gen = self.gens.current()
            if gen is not None:
                self._compact(gen)
                for name in self.gens.names():
                    if name != gen.name:
                        self.gens.remove(name)
        return self.status()

    def _compact(self, gen: Generation) -> None:
        engine, replay = load_engine(), load_replay()
        segs = engine.segments(gen.path)
        affected = {
            i for i, s in enumerate(segs) if (s.get("deletes") or {}).get("num_deleted_docs")
        }
        if not affected:
            return
        ids = {segs[i]["segment_id"] for i in affected}
        index = engine.open_index(gen.path)
        searcher = index.searcher()
        live = engine.all_live(searcher)
        keys = [engine.stored_key(searcher, a) for a in live if a.segment_ord in affected]
        w = replay.Writer(self.store, index, bulk=len(keys) > 32)
        overlay = Overlay.read(self.store)
        current: dict[str, Any] = {}
        try:
            for session_id, turn_id in keys:
                w.delete(session_id, turn_id)
                if session_id not in current:
                    rev = self.store.session_ref(session_id)
                    current[session_id] = self.store.load_session(rev) if rev else None
                s = current[session_id]
                entry = next((e for e in s.turns if e.turn_id == turn_id), None) if s else None
                if entry is not None and not overlay.hides(session_id, turn_id):
                    w.w.add_document(w.document(s, entry))
        except BaseException:
            w.abandon()
            raise
        w.commit()
        del w, index, searcher
        self._reader = None
        left = {s["segment_id"] for s in engine.segments(gen.path)} & ids
        if left:  # the segments were not dropped: make sure, by building anew
            self._build()

    # -------------------------------------------------------- reading

    def holds(self, session_id: str | None = None, turn_id: str | None = None) -> int:
        """Documents of the current generation for a session or a turn (a check
        that a target is gone after a forget)."""
        gen = self.gens.current()
        if gen is None:
            return 0
        engine = load_engine()
        index = self._open(gen)
        return int(
            engine.count(index.searcher(), engine.key_query(index.schema, session_id, turn_id))
        )

    def sessions_of(self, turn_id: str) -> list[str]:
        """The sessions whose turn ``turn_id`` the current generation holds."""
        try:
            gen = self.gens.current()
            if gen is None:
                return []
            engine = load_engine()
            index = self._open(gen)
        except HistError:
            return []
        searcher = index.searcher()
        found = engine.any_hit(searcher, engine.key_query(index.schema, None, turn_id), 1000)
        return sorted({engine.stored_key(searcher, a)[0] for a in found})

    def search(
        self,
        text: str,
        *,
        project: str | None = None,
        days: int | None = None,
        k: int = 5,
        agent: str | None = None,
        session: str | None = None,
        fallback: bool = False,
    ) -> RecallResult:
        """The k best turns for ``text``: within ``project`` (as a person gives
        it: a directory or a name; None searches everywhere), the last ``days``
        days, one agent, one session. Never takes a lock."""
        scope = check_request(project, days=days, k=k, agent=agent, session=session)
        query = check_query(text)
        since = None
        if days is not None:
            since = int((_now() - timedelta(days=days)).timestamp() * 1000)
        gen = None if fallback else self.gens.current()
        engine_ok = not fallback and _engine_loads()
        path = "tantivy" if engine_ok else "scan"
        if engine_ok and gen is None:
            if self.store.has_sessions():
                raise HistError(
                    "the recall index has not been built",
                    hint="build it with `hs plumbing index-build`",
                )
            return RecallResult(query, [], "empty", scope.key, days, "none")
        if not query.terms:
            return RecallResult(query, [], "no-terms", scope.key, days, path)
        # the overlay is merged at read time: a target forgotten a moment ago is
        # hidden even before the index has dropped it
        overlay = Overlay.read(self.store)
        if gen is not None and engine_ok:
            from histstore.recall.search import search

            hits, outcome = search(self.store, self._open(gen), query, scope, since, k, overlay)
        else:
            from histstore.recall.scan import scan

            found = scan(self.store, query, scope, since, overlay)
            hits = make_hits(self.store, query, found.ranked, k, overlay)
            outcome = "found" if hits else "no-match-in-days" if found.older else "no-match"
        if not hits and not self.store.has_sessions():
            outcome = "empty"  # nothing recorded yet
        return RecallResult(query, hits, outcome, scope.key, days, path)


def _engine_loads() -> bool:
    try:
        load_engine()
    except HistError:
        return False
    return True


def _damaged(name: str, e: Exception) -> CorruptStore:
    return CorruptStore(f"the recall index {name} is damaged ({e})", hint=REBUILD_HINT)


def compact(store: Store) -> IndexStatus:
    """What ``hs gc`` calls: every segment holding deleted documents rewritten,
    every older generation deleted, so the text of a turn deleted from the
    index (an exclusion, a tombstone, a revised turn's old text) is in no
    file of ``index/`` any more. Waits for the index lock."""
    return RecallIndex(store).compact()


def check_request(
    project: str | None, *, days: int | None, k: int, agent: str | None, session: str | None
) -> Scope:
    """What a search refuses (BadInput) before it reads or writes anything;
    its scope otherwise."""
    if not 1 <= k <= K_MAX:
        raise BadInput(f"-k {k}: give a number from 1 to {K_MAX}")
    return Scope.of(project, days=days, agent=agent, session=session)


def check_query(text: str) -> Query:
    """The query of ``text``; refused (BadInput) when every word it would
    search is too long to be indexed (a git commit id alone): it could match
    nothing, and "only function words" would not be true."""
    query = Query.parse(text)
    if not query.terms and query.long_words:
        raise BadInput(
            f"nothing to look for: {query.text!r} holds no word recall can search "
            "(a word of 40 bytes or more is not indexed)",
            hint="look for other words of the turn, or a shorter part of that word",
        )
    return query


def recall(
    store: Store,
    text: str,
    *,
    project: str | None = None,
    days: int | None = None,
    k: int = 5,
    agent: str | None = None,
    session: str | None = None,
) -> RecallResult:
    """What ``hs recall`` and every library caller ask: the index caught up
    first when it is behind the refs log (a store written before it existed,
    a crash) — if no writer holds the index lock; a search never waits for
    one, it searches what is there — then searched. A request it refuses
    changes nothing: no catch-up first."""
    check_request(project, days=days, k=k, agent=agent, session=session)
    check_query(text)
    index = RecallIndex(store)
    fallback = os.environ.get(FALLBACK_ENV, "") not in ("", "0") or not _engine_loads()
    try:
        if not fallback and index.behind():
            with contextlib.suppress(Locked):
                index.catch_up(timeout=0)
        return index.search(
            text,
            project=project,
            days=days,
            k=k,
            agent=agent,
            session=session,
            fallback=fallback,
        )
    finally:
        index.close()
