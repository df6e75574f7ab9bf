"""Import: parse session files, store their turns, move session refs in one operation.

The pipeline (docs/architecture.md, "Import"):

1. Parse each file with its importer (streaming, line by line). Every turn is put
   in its stored form (:func:`stored_turn`) and hashed; a turn whose object the
   session already lists is skipped, so importing the same files again adds
   nothing and records no operation, and a grown file adds only its new turns.
2. New objects go into one pack (:class:`histstore.objectstore.Batch`), made
   durable with one fsync before any ref points at them.
3. Under the store lock, each touched session gets a new revision (its turns
   merged by turn id: a turn recorded again with new content replaces the old in
   the new revision; the old stays reachable through the parent revision), and
   all session refs move in one compare-and-swap operation in the refs log.

This module stores turns; histstore.ops.importing is what callers use: it
also catches the recall index up and snapshots the memory folders.

Parsing happens outside the lock, so a long import does not block ``hs record``;
if another writer moved a session meanwhile, that session is re-merged under the
lock against its current revision, so two importers at once lose nothing.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histstore.errors import BadInput
from histstore.history.importers import (
    Problem,
    Progress,
    Resume,
    SessionMeta,
)
from histstore.history.importers.detect import (
    FORMATS,
    check_format,
    detect_file,
    format_of,
    list_files,
    parser,
)
from histstore.history.sources import PendingSources, Sources
from histstore.history.turn import BLOB_THRESHOLD, Turn
from histstore.store.codec import canonical_json, hash_object
from histstore.store.fsutil import open_regular
from histstore.store.kinds import (
    BLOB_FIELDS,
    MEMORY_TARGET_PREFIX,
    SessionRev,
    TurnEntry,
    ordered,
)
from histstore.store.objectstore import Batch
from histstore.store.oplog import Operation, RefChange
from histstore.store.purged import purged_turns
from histstore.store.refs import check_component
from histstore.store.store import SESSION_PREFIX, Store


def stored_turn(put: Callable[[str, bytes], str], turn: Turn) -> dict[str, Any]:
    """The turn as its object holds it: the raw records become one blob, and any
    step output or image larger than BLOB_THRESHOLD bytes a blob of its own, so
    the same large output is stored once however often it was read."""
    out = dict(turn)
    out.pop("source", None)  # recorded beside the turn (history.sources), never in it
    raw = turn.get("raw") or []
    if raw:
        data = ("\n".join(raw) + "\n").encode("utf-8")
        out["raw"] = {"blob": put("blob", data), "lines": len(raw), "size": len(data)}
    else:
        out["raw"] = None
    steps = []
    for step in turn.get("steps") or []:
        s = dict(step)
        for key in BLOB_FIELDS:
            value = s.get(key)
            if value is not None and not isinstance(value, str):
                # input is data: whatever shape it has, it is kept as its JSON
                # text, so it can never pass for a blob reference
                value = s[key] = json.dumps(value, ensure_ascii=False, sort_keys=True)
            if isinstance(value, str):
                data = value.encode("utf-8")
                if len(data) > BLOB_THRESHOLD:
                    s[key] = {"blob": put("blob", data), "size": len(data)}
        steps.append(s)
    out["steps"] = steps
    return out


def encode_turn(turn: Turn) -> tuple[bytes, list[tuple[str, bytes, str]]]:
    """The turn object's payload and the blobs it refers to (kind, bytes, id),
    hashed, not written: an import skips both when the session already holds
    that very turn."""
    blobs: list[tuple[str, bytes, str]] = []

    def put(kind: str, data: bytes) -> str:
        blob_id = hash_object(kind, data)
        blobs.append((kind, data, blob_id))
        return blob_id

    return canonical_json(stored_turn(put, turn)), blobs


def path_text(name: str) -> str:
    """A file name as text: as it is when it is UTF-8; else its bytes that are
    not spelled ``\\xNN`` (a lone surrogate, as Python reads such a name, has
    no UTF-8 form and could not be stored)."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "backslashreplace")


@dataclass
class SessionWork:
    """A session as an import builds it up: its facts and the turns it holds."""

    session_id: str
    project: str | None = None
    agent: str | None = None
    title: str | None = None
    turns: dict[str, TurnEntry] = field(default_factory=dict)
    #: the title or project changed since the session was last flushed
    meta_changed: bool = False


@dataclass
class ImportReport:
    """What an import read, added, revised and skipped, and its operation."""

    files: int = 0
    #: files as they were when last imported: not read at all
    files_unchanged: int = 0
    files_skipped: list[tuple[str, str]] = field(default_factory=list)
    turns_added: int = 0
    turns_revised: int = 0
    turns_unchanged: int = 0
    #: turns a purge removed, read again: never stored again
    turns_purged: int = 0
    sessions_added: int = 0
    sessions_updated: int = 0
    sessions_unchanged: int = 0
    objects_written: int = 0
    problems: list[Problem] = field(default_factory=list)
    operation: Operation | None = None
    #: why the recall index could not take the new turns (they are stored all the same)
    index_error: str | None = None
    #: operations of the memory snapshots taken after the import
    memory_operations: list[str] = field(default_factory=list)
    #: what the automatic gc after it did (``hs gc --auto``), when it ran
    auto_gc: dict[str, Any] | None = None
    #: why that gc could not run (the turns are stored all the same)
    gc_error: str | None = None

    @property
    def complete(self) -> bool:
        """Whether every input was imported or was already there (no file
        skipped, no line or turn refused; a line read with a stand-in is in)."""
        return not self.files_skipped and all(p.kept for p in self.problems)

    def as_json(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "files": self.files,
            "files_unchanged": self.files_unchanged,
            "files_skipped": [{"file": f, "reason": r} for f, r in self.files_skipped],
            "turns_added": self.turns_added,
            "turns_revised": self.turns_revised,
            "turns_unchanged": self.turns_unchanged,
            "turns_purged": self.turns_purged,
            "sessions_added": self.sessions_added,
            "sessions_updated": self.sessions_updated,
            "sessions_unchanged": self.sessions_unchanged,
            "objects_written": self.objects_written,
            "problems": [
                {"file": p.file, "line": p.line, "message": p.message, "kept": p.kept}
                for p in self.problems
            ],
            "operation": self.operation.op if self.operation else None,
            "index_error": self.index_error,
            "memory_operations": self.memory_operations,
            "auto_gc": self.auto_gc,
            "gc_error": self.gc_error,
        }


class Importer:
    """Collects turns into sessions and commits them as one operation.

    Memory stays bounded however long the import: every ``FLUSH_TURNS`` turns the
    sessions touched so far are written out as *staged* revisions (objects no ref
    points at yet) and the object batch starts a new pack; only session id ->
    staged revision id is kept. The commit then moves each session ref from the
    revision it had when the import began to the final one, in one operation.
    """

    FLUSH_TURNS = 50_000
    KNOWN_CACHE = 256

    def __init__(self, store: Store, command: str) -> None:
        self.store = store
        self.command = command
        self.report = ImportReport()
        self.work: dict[str, SessionWork] = {}
        self.base: dict[str, str | None] = {}  # session -> its ref when first touched
        self.refused: set[str] = set()  # session ids already reported as not allowed
        self.staged: dict[str, str] = {}  # session -> staged revision with flushed turns
        self.pending = 0
        #: (turn object id, where it was read) of every turn read
        self.sources = PendingSources.of(store)
        #: each file's path as the sources name it (redacted once per file)
        self._paths: dict[str, str] = {}
        # session -> turn id -> object id, as the store had it (for the report)
        self._known: OrderedDict[str, dict[str, str]] = OrderedDict()
        #: what purges removed, as the import began (read again under the lock)
        self._purged = store.purged_ids()
        #: (session, turn id) of every turn a purge named: read again, grown
        #: or not (another object then), it is still the purged turn
        self._purged_turns = purged_turns(store)

    def _known_turns(self, session_id: str) -> dict[str, str]:
        known = self._known.get(session_id)
        if known is not None:
            self._known.move_to_end(session_id)
            return known
        rev = self.base[session_id]
        known = {t.turn_id: t.object for t in self.store.load_session(rev).turns} if rev else {}
        self._known[session_id] = known
        if len(self._known) > self.KNOWN_CACHE:
            self._known.popitem(last=False)
        return known

    def _session(self, session_id: str) -> SessionWork:
        w = self.work.get(session_id)
        if w is None:
            check_component(session_id, "session id")
            if session_id.startswith(MEMORY_TARGET_PREFIX):
                raise BadInput(
                    f"session id {session_id!r} is reserved: it names memory notes' markers"
                )
            w = self.work[session_id] = SessionWork(session_id)
            self.base[session_id] = self.store.session_ref(session_id)
        return w

    def add_meta(self, meta: SessionMeta, path: str = "-") -> None:
        if meta.session_id in self.refused:
            return  # said once, at its turns' lines
        try:
            w = self._session(meta.session_id)
        except BadInput as e:
            self.refused.add(meta.session_id)
            self.report.problems.append(Problem(path, 0, e.message))
            return
        if meta.title and not w.title:
            w.title = meta.title
            w.meta_changed = True
        if meta.project and not w.project:
            w.project = meta.project
            w.meta_changed = True

    def add_turn(self, batch: Batch, turn: Turn, where: tuple[str, int]) -> None:
        try:
            check_component(turn["turn_id"], "turn id")
        except BadInput as e:
            self.report.problems.append(Problem(where[0], where[1], e.message))
            return
        sid = str(turn["session_id"])
        if sid in self.refused:
            return  # one line per session id, not per turn
        try:
            w = self._session(sid)
        except BadInput as e:
            self.refused.add(sid)
            self.report.problems.append(Problem(where[0], where[1], e.message))
            return
        tid = turn["turn_id"]
        src = turn.get("source")
        if isinstance(src, dict) and isinstance(src.get("file"), str):
            # a path is text from outside too: it can hold a token; a name that
            # is not UTF-8 is kept with its odd bytes spelled \xNN
            name = self._paths.get(src["file"])
            if name is None:
                name = self._paths[src["file"]] = self.store.redactor(path_text(src["file"]))
            turn["source"] = {**src, "file": name}
        if w.project is None and not turn.get("subagent"):
            w.project = turn["project"]
        if w.agent is None:
            w.agent = turn.get("agent")
        try:
            payload, blobs = encode_turn(turn)
        except (ValueError, RecursionError) as e:  # no canonical form: NaN, a lone surrogate
            self.report.problems.append(Problem(where[0], where[1], f"cannot store turn: {e}"))
            return
        object_id = hash_object("turn", payload)
        purged = self._purged
        if (
            object_id in purged
            or (sid, tid) in self._purged_turns
            or any(blob_id in purged for _, _, blob_id in blobs)
        ):
            self.report.turns_purged += 1  # a purge removed it (or a blob of it) for good
            return
        if isinstance(turn.get("source"), dict):
            self.sources.append(object_id, turn["source"])
        previous = w.turns.get(tid)
        if previous is not None and previous.object == object_id:
            return  # the same turn twice in one import
        old = self._known_turns(w.session_id).get(tid)
        if old == object_id and previous is None:
            self.report.turns_unchanged += 1
            return
        for kind, data, _ in blobs:
            batch.put(kind, data)
        batch.put("turn", payload)
        w.turns[tid] = TurnEntry(
            tid, object_id, turn["asked_at"], turn.get("subagent"), turn.get("project")
        )
        if old is None:
            self.report.turns_added += 1
        else:
            self.report.turns_revised += 1
        self.pending += 1
        if self.pending >= self.FLUSH_TURNS:
            self._flush(batch)

    def _flush(self, batch: Batch) -> None:
        """Write the pending turns of every session out as staged revisions."""
        for sid, w in self.work.items():
            if not w.turns:
                continue
            start = self.staged.get(sid) or self.base[sid]
            rev = self._merge(w, start)
            if rev is not None:
                self.staged[sid] = batch.put("session", rev.payload())
            w.turns = {}
            w.meta_changed = False
        batch.checkpoint()
        self.pending = 0

    def _merge(self, w: SessionWork, start: str | None) -> SessionRev | None:
        """``w``'s turns merged by turn id into the session as of ``start``: a
        revision holding only the turns that change (a delta whose parent is
        ``start``), or a full one when the session is new; None when that
        changes nothing."""
        base = self.store.load_session(start) if start else None
        had = {t.turn_id: t for t in base.turns} if base else {}
        changed = [entry for tid, entry in w.turns.items() if had.get(tid) != entry]
        project = (base.project if base else None) or w.project or ""
        agent = (base.agent if base else None) or w.agent or "unknown"
        title = w.title or (base.title if base else None)
        if base is None:
            if not changed:
                return None  # a session with no turn at all is not worth a ref
            turns = ordered(changed)
            return SessionRev(w.session_id, project, agent, title, turns, count=len(turns))
        if not changed and title == base.title:
            return None
        count = len(had) + sum(1 for t in changed if t.turn_id not in had)
        return SessionRev(
            w.session_id,
            project,
            agent,
            title,
            ordered(changed),
            parents=[base.rev],
            full=False,
            count=count,
        )

    def _final(self, batch: Batch, w: SessionWork, current: str | None) -> str | None:
        """The revision a session's ref moves to (written), or None for no change:
        what this import brings (the staged turns that differ from the base, and
        the pending ones) as one revision on top of the session's current one —
        so each import adds one revision to a session's history (the staged ones
        only bounded memory, and no ref ever names them), and when another
        writer moved the session meanwhile, both imports land."""
        sid = w.session_id
        base, staged = self.base[sid], self.staged.get(sid)
        ours = SessionWork(sid, w.project, w.agent, w.title)
        if staged is not None:
            had = {t.turn_id: t for t in self.store.load_session(base).turns} if base else {}
            for t in self.store.load_session(staged).turns:
                if had.get(t.turn_id) != t:
                    ours.turns[t.turn_id] = t
        ours.turns.update(w.turns)
        rev = self._merge(ours, current)
        if rev is None:
            return None
        return batch.put("session", rev.payload())

    def commit(self, batch: Batch) -> Operation | None:
        """Under the lock: merge each touched session against its current revision,
        make every new object durable (one fsync), then move the session refs in
        one compare-and-swap operation."""
        store = self.store
        with store.lock():
            changes: list[RefChange] = []
            purged = store.purged_ids()  # as of now: a purge may have run meanwhile
            named = purged_turns(store) if purged != self._purged else self._purged_turns
            for sid, w in self.work.items():
                gone = [t for t, e in w.turns.items() if e.object in purged or (sid, t) in named]
                for t in gone:
                    del w.turns[t]
                    self.report.turns_purged += 1
                current = store.session_ref(sid)
                new = self._final(batch, w, current)
                if new is None or new == current:
                    if current is not None:
                        self.report.sessions_unchanged += 1
                    continue
                changes.append(RefChange(SESSION_PREFIX + sid, current, new))
                if current:
                    self.report.sessions_updated += 1
                else:
                    self.report.sessions_added += 1
            batch.commit()
            self.report.objects_written = batch.count
            op = store.apply(changes, self.command, extra={"kind": "import"})
        self.report.operation = op
        return op


#: what the formats known are called when an input fits none
KNOWN = "formats known: " + ", ".join(FORMATS)


@dataclass
class FilePlan:
    """What an import does with one file: read it whole (``read`` None), from
    a :class:`Resume` (it grew), not at all (``read`` False: as it was when
    last imported), or skip it (``skip`` says why)."""

    path: Path
    format: str | None
    read: Resume | bool | None
    size: int
    skip: str | None = None

    @property
    def new_bytes(self) -> int:
        """The bytes an import reads of it."""
        if self.skip is not None or self.read is False:
            return 0
        return max(0, self.size - (self.read.offset if isinstance(self.read, Resume) else 0))


def plan_files(
    sources: Sources, paths: Iterable[Path], fmt: str | None = None
) -> Iterator[FilePlan]:
    """Every file under ``paths`` and what an import does with it. A file
    ``--format`` does not fit (its first records are another format's) is
    skipped, and so is one no importer recognises, each saying so."""
    check_format(fmt)
    for path, in_folder in list_files(list(paths)):
        size = _size(path)
        f = fmt or sources.known_format(path)
        plan = sources.plan(path, f) if f is not None else None
        if plan is False:
            yield FilePlan(path, f, False, size)
            continue
        if fmt is not None:
            seen = detect_file(path) if size else None
            if seen is not None and seen != fmt:
                why = f"it is {seen}, not {fmt} (--format {fmt} does not fit); {KNOWN}"
                yield FilePlan(path, seen, None, size, why)
                continue
        f = f or format_of(path, in_folder)
        if f is None:
            yield FilePlan(path, None, None, size, f"format not recognised; {KNOWN}")
            continue
        yield FilePlan(path, f, plan if isinstance(plan, Resume) else None, size)


#: given each turn an importer read (the file, the turn, whether it is the
#: file's last turn), returns the turn to store
Amend = Callable[[Path, Turn, bool], Turn]


def _amended(path: Path, items: Iterable[Any], amend: Amend) -> Iterator[Any]:
    """The items with each turn through ``amend`` (held back a step: is it the last?)."""
    held: Turn | None = None
    for item in items:
        if isinstance(item, dict):
            if held is not None:
                yield amend(path, held, False)
            held = item
            continue
        if isinstance(item, Resume) and held is not None:
            yield amend(path, held, True)
            held = None
        yield item
    if held is not None:
        yield amend(path, held, True)


def store_paths(
    store: Store,
    paths: Iterable[Path],
    *,
    fmt: str | None = None,
    command: str = "hs import",
    progress: Progress | None = None,
    amend: Amend | None = None,
) -> ImportReport:
    """Store the turns of files and folders as one operation (objects and refs
    only: histstore.ops.importing.import_paths also brings the recall index and
    the memory folders along). Per-line problems are reported, the rest imports.
    ``amend`` may change each turn read before it is stored (``hs capture``
    fills in an answer the transcript does not hold yet)."""
    check_format(fmt)
    imp = Importer(store, command)
    try:
        return _store_files(store, imp, paths, fmt, progress, amend)
    finally:
        imp.sources.close()  # its spill file, however the import ended


def _store_files(
    store: Store,
    imp: Importer,
    paths: Iterable[Path],
    fmt: str | None,
    progress: Progress | None,
    amend: Amend | None,
) -> ImportReport:
    sources = Sources(store)
    read: list[tuple[Path, str, Resume, int]] = []
    with store.objects.batch() as batch:
        for fp in plan_files(sources, paths, fmt):
            path = fp.path
            if fp.read is False:
                imp.report.files_unchanged += 1  # as it was when last read: not read
                if progress:
                    progress(fp.size)
                continue
            if fp.skip is not None or fp.format is None:
                imp.report.files_skipped.append((str(path), fp.skip or "format not recognised"))
                if progress:
                    progress(fp.size)
                continue
            f = fp.format
            imp.report.files += 1
            resume = fp.read if isinstance(fp.read, Resume) else None
            turns = problems = 0
            try:
                size = path.stat().st_size
                items: Iterable[Any] = parser(f)(path, store.redactor, progress, resume)
                if amend is not None:
                    items = _amended(path, items, amend)
                for item in items:
                    if isinstance(item, Problem):
                        problems += 1
                        imp.report.problems.append(item)
                    elif isinstance(item, SessionMeta):
                        imp.add_meta(item, str(path))
                    elif isinstance(item, Resume):
                        read.append((path, f, item, size))
                    else:
                        turns += 1
                        src = item.get("source") or {}
                        line = src.get("line")
                        imp.add_turn(batch, item, (str(path), line if isinstance(line, int) else 0))
            except OSError as e:
                imp.report.problems.append(Problem(str(path), 0, f"cannot read: {e.strerror}"))
                continue
            if fmt is not None and not turns and not problems and _has_text(path):
                # forced, and nothing in it was the format's: not imported, and said so
                imp.report.files_skipped.append(
                    (str(path), f"nothing in it reads as {fmt} (--format {fmt}); {KNOWN}")
                )
        imp.commit(batch)
    # beside the objects, once they are committed: where each turn came from,
    # and where each file was read to (so the next import reads only what is new)
    sources.record_rows(imp.sources)
    for path, f, resume, size in read:
        sources.record_file(path, f, resume, size)
    sources.close()
    return imp.report


@dataclass
class SourcePlan:
    """What ``hs import --dry-run`` says of one source (an agent home, or a
    path given): its files and the bytes an import would read."""

    path: Path
    agent: str | None
    files: list[FilePlan] = field(default_factory=list)

    @property
    def new_bytes(self) -> int:
        return sum(f.new_bytes for f in self.files)

    @property
    def label(self) -> str | None:
        """The agent, or for a path given, the formats of its files."""
        if self.agent is not None:
            return self.agent
        found = sorted({f.format for f in self.files if f.format and not f.skip})
        return "+".join(found) or None

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.label,
            "path": str(self.path),
            "files": len(self.files),
            "files_to_read": sum(1 for f in self.files if f.skip is None and f.read is not False),
            "files_unchanged": sum(1 for f in self.files if f.read is False),
            "files_skipped": [
                {"file": str(f.path), "reason": f.skip} for f in self.files if f.skip
            ],
            "new_bytes": self.new_bytes,
        }


def dry_run(
    store: Store, sources: Iterable[tuple[Path, str | None]], fmt: str | None = None
) -> list[SourcePlan]:
    """What an import of each (path, agent) would read, without reading a
    session file beyond its first lines, and without writing anything (the
    source table is opened read-only)."""
    table = Sources(store, readonly=True)
    try:
        return [SourcePlan(p, agent, list(plan_files(table, [p], fmt))) for p, agent in sources]
    finally:
        table.close()


def _has_text(path: Path) -> bool:
    """Whether the file holds anything but blanks (in its first 64 KiB)."""
    try:
        with open_regular(path) as f:
            return bool(f.read(1 << 16).strip())
    except OSError:
        return False


def store_record(store: Store, text: str, command: str = "hs record") -> tuple[str, ImportReport]:
    """Store one turn given as JSON text (``hs record``); (turn id, report)."""
    from histstore.history.importers import turns_jsonl

    turn = turns_jsonl.parse_text(text, store.redactor)
    if turn.get("source") is None:
        turn["source"] = {"format": "record"}
    imp = Importer(store, command)
    with store.objects.batch() as batch:
        imp.add_turn(batch, turn, ("<stdin>", 1))
        if imp.report.problems:
            raise BadInput(imp.report.problems[0].message)
        imp.commit(batch)
    sources = Sources(store)
    sources.record_rows(imp.sources)
    sources.close()
    return turn["turn_id"], imp.report


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
