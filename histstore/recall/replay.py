"""Writing the index: turns as documents, the refs log replayed as deletes and adds.

Every change to sessions and markers is an operation in the refs log. A
generation records the last operation it applied (``applied_op``) and is
caught up by replaying the later ones, up to ``refs.applied``, into one
commit: a session ref that moved from revision A to B adds the turns B has
that A had not (a turn revised is deleted, then added) and deletes those A
had that B has not; a marker deletes its target's documents, or (lifted) adds
them back from the session's current revision. Documents are written against
the overlay as it is now, so the end state is the refs and the overlay of
now; and replaying an operation twice gives the same documents, which is why
``applied_op`` may be written just after the commit it covers (a crash
between the two replays that operation again). :class:`Writer` is the
document-writing half of histstore.recall.index.RecallIndex.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import tantivy

from histstore.errors import CorruptStore, HistError
from histstore.overlay.markers import PREFIX as OVERLAY_PREFIX
from histstore.overlay.markers import Marker, Overlay, load_marker
from histstore.recall import engine
from histstore.recall.fields import blob_reader, field_texts, parts, project_and_agent
from histstore.recall.query import time_ms
from histstore.store.kinds import Session, TurnEntry
from histstore.store.store import SESSION_PREFIX, Store

if TYPE_CHECKING:
    from histstore.store.oplog import Operation


class Writer:
    """Deletes and adds against one open Tantivy writer, committed at once."""

    def __init__(self, store: Store, index: tantivy.Index, *, bulk: bool) -> None:
        self.store = store
        heap = engine.BULK_HEAP if bulk else engine.SMALL_HEAP
        try:
            self.w = index.writer(heap_size=heap, num_threads=1)
        except ValueError as e:
            raise HistError(f"the recall index cannot be written ({e})") from None
        self.blob = blob_reader(store)
        self.changed = 0

    def document(self, session: Session, entry: TurnEntry) -> tantivy.Document:
        turn = self.store.get_json(entry.object, "turn")
        texts = field_texts(parts(turn, self.blob))
        project, agent = project_and_agent(turn, session.project, session.agent)
        return engine.document(
            session.session_id,
            entry.turn_id,
            entry.object,
            time_ms(entry.asked_at),
            project,
            agent,
            texts,
        )

    def add(self, session: Session, entry: TurnEntry) -> None:
        """The turn's document, replacing any it had in that session."""
        self.delete(session.session_id, entry.turn_id)
        self.w.add_document(self.document(session, entry))

    def delete(self, session_id: str, turn_id: str) -> None:
        self.w.delete_documents_by_term(engine.KEY, engine.key_of(session_id, turn_id))
        self.changed += 1

    def delete_session(self, session_id: str) -> None:
        self.w.delete_documents_by_term(engine.SESSION, session_id)
        self.changed += 1

    def commit(self) -> None:
        """Make every change visible at once, then let merges finish (a writer
        dropped with merges pending abandons them, and segments would pile up)."""
        self.w.commit()
        self.w.wait_merging_threads()

    def abandon(self) -> None:
        try:
            self.w.rollback()
        finally:
            del self.w


def pending(store: Store, applied: str | None) -> list[Operation]:
    """The operations a generation at ``applied`` lacks, oldest first, up to and
    including the one ``refs.applied`` names (one logged but still moving its
    refs would be replayed against the refs and markers of before it)."""
    done = store.refs.applied()
    todo = store.refs.operations_after(applied)
    if todo is None:
        raise CorruptStore(
            f"the recall index was built from operation {applied}, not in the refs log",
            hint="rebuild it with `hs plumbing index-build`",
        )
    if done is None:
        return []
    upto = next((i for i, op in enumerate(todo) if op.op == done), None)
    return todo[: upto + 1] if upto is not None else []


def touches_index(op: Operation) -> bool:
    """Whether an operation moved a session or a marker (the rest — remote-
    tracking refs, memory — never changes a document)."""
    return any(c.ref.startswith((SESSION_PREFIX, OVERLAY_PREFIX)) for c in op.changes)


def session_changes(ops: list[Operation]) -> int:
    return sum(1 for op in ops for c in op.changes if c.ref.startswith(SESSION_PREFIX))


def _entries(store: Store, rev: str | None) -> tuple[Session | None, dict[str, TurnEntry]]:
    if rev is None:
        return None, {}
    s = store.load_session(rev)
    return s, {t.turn_id: t for t in s.turns}


def apply(store: Store, w: Writer, op: Operation, overlay: Overlay) -> None:
    """One operation's changes as deletes and adds, read against the overlay as
    it is now (so the end state is the refs and the overlay of now)."""
    for c in op.changes:
        if c.ref.startswith(OVERLAY_PREFIX):
            target = c.ref[len(OVERLAY_PREFIX) :]
            marker = overlay.markers.get(target)
            if marker is None and (c.old or c.new):
                # the ref is gone (an undone first forget): what it named is back
                known = load_marker(store, c.old or c.new or "")
                marker = dataclasses.replace(known, state="lifted")
            if marker is not None:
                apply_marker(store, w, marker, overlay)
            continue
        if not c.ref.startswith(SESSION_PREFIX):
            continue
        _, old = _entries(store, c.old)
        new_s, new = _entries(store, c.new)
        sid = c.ref[len(SESSION_PREFIX) :]
        for tid, entry in old.items():
            if new.get(tid) != entry:
                w.delete(sid, tid)
        for tid, entry in new.items():
            if old.get(tid) != entry:
                assert new_s is not None
                if overlay.hides(sid, tid):
                    w.delete(sid, tid)
                else:
                    w.add(new_s, entry)


def apply_marker(store: Store, w: Writer, marker: Marker, overlay: Overlay) -> None:
    """A target forgotten or brought back: its documents go, or come back from
    the session's current revision (unless another marker still hides them)."""
    if marker.target_kind not in ("turn", "session"):
        return  # a memory note: not in the index (its marker's session is a scope)
    sid = marker.session
    if marker.target_kind == "session":
        w.delete_session(sid)
    else:
        w.delete(sid, marker.target)
    if marker.active:
        return
    rev = store.session_ref(sid)
    if rev is None:
        return
    session = store.load_session(rev)
    for entry in session.turns:
        if marker.target_kind == "turn" and entry.turn_id != marker.target:
            continue
        if not overlay.hides(sid, entry.turn_id):
            w.add(session, entry)
