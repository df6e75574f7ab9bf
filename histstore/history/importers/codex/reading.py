"""Codex rollouts: cutting the lines into turns, parse_file (the format and the rules: the package's docstring)."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

from histstore.history.importers import (
    Parsed,
    Problem,
    Progress,
    Redact,
    Resume,
    SessionMeta,
)
from histstore.history.importers.codex.lines import (
    _ROLLBACK_MARK,
    _dict,
    _Line,
    _mentions,
    _read_lines,
    _str,
    _turn_id_of,
)
from histstore.history.importers.codex.session import _Session
from histstore.history.importers.codex.turn import _Turn

# --------------------------------------------------------------------------- cutting


class _Cutter:
    """Cuts a stream of lines into turns (see the module doc). ``feed`` returns a
    turn when a new prompt closes it; ``close`` returns the last one.

    Each turn remembers where its first line starts and what the lines before
    it said (:meth:`_mark`), so a later import of the grown file can start
    there (see :func:`parse_file`)."""

    def __init__(self, session: _Session, light: bool, state: dict[str, Any] | None = None) -> None:
        self.session = session
        self.light = light
        self.turn = _Turn(session, light)  # the first turn, before its prompt
        self.pending: list[_Line] = []  # opening lines of what may be a new turn
        self.pending_mark: dict[str, Any] | None = None
        self.prompts = 0
        self.rolled: set[int] = set()  # prompts a rollback undid
        #: the task running before the first line read (a resumed read)
        self.running: str | None = None
        if state is not None:
            self.prompts = int(state.get("prompts", 0))
            self.rolled = {int(n) for n in state.get("rolled", [])}
            self.running = _str(state.get("running"))

    def _mark(self, line: _Line) -> dict[str, Any] | None:
        """What a turn starting at ``line`` needs of the lines before it."""
        if self.light:
            return None
        mark = self.session.mark()
        mark.update(
            offset=line.offset,
            line=line.lineno,
            prompts=self.prompts,
            rolled=sorted(self.rolled),
            running=self.turn.running() or self.running,
        )
        return mark

    def _roll_back(self, n: int) -> None:
        """Undo the last ``n`` prompts still in effect."""
        i = self.prompts
        while n > 0 and i >= 1:
            if i not in self.rolled:
                self.rolled.add(i)
                n -= 1
            i -= 1

    def _flush(self, role: str) -> None:
        for line in self.pending:
            self.turn.add(line, role)
        self.pending = []
        self.pending_mark = None

    def _open(self, line: _Line, mark: dict[str, Any] | None) -> None:
        if self.pending:
            self._flush("foreign")
        self.turn.in_foreign = False
        self.pending = [line]
        self.pending_mark = mark

    def feed(self, line: _Line) -> _Turn | None:
        kind, text = line.classified()
        mark = self._mark(line) if kind in _MAYBE_START else None
        self.session.observe(line)
        turn = self.turn
        if kind == "rollback":
            n = _dict((line.obj or {}).get("payload")).get("num_turns")
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                self._roll_back(n)
        if kind in ("E", "R"):
            if turn.pairs(kind, text):
                self._flush("own")
                turn.add(line, "own", sig=kind)
                return None
            done: _Turn | None = None
            running = turn.running() if turn.started else self.running
            if turn.started:
                done = turn
                self.turn = turn = _Turn(self.session, self.light)
                turn.start_mark = self.pending_mark if self.pending else mark
            self._flush("open")
            self.prompts += 1
            turn.ordinal = self.prompts
            turn.in_foreign = False
            turn.add(line, "own", sig=kind)
            # a prompt typed while a task ran is a turn of that task
            turn.prompt_codex_id = turn.codex_id or running
            self.running = None
            return done
        if kind == "task_started":
            if not self.pending and turn.owns_task_start(line):
                turn.add(line, "own")
            else:
                self._open(line, mark)
            return None
        if kind == "turn_context" and not self.pending:
            tid = _turn_id_of(line.obj)
            if turn.started and turn.codex_id and tid and tid != turn.codex_id:
                self._open(line, mark)
                return None
        if self.pending:
            if kind == "activity":
                self._flush("foreign")
                turn.in_foreign = True
            elif kind == "end":
                self.pending.append(line)
                self._flush("foreign")
                return None
            else:
                self.pending.append(line)
                return None
        turn.add(line, turn.mode())
        if kind == "end" and turn.in_foreign:
            turn.in_foreign = False
        return None

    def close(self) -> _Turn | None:
        if self.pending:
            self._flush("foreign")
        return self.turn if self.turn.started else None


#: the kinds of line a turn may start at
_MAYBE_START = frozenset({"E", "R", "task_started", "turn_context"})


def _rollback_pass(path: pathlib.Path, redact: Redact, resume: Resume | None) -> set[int] | None:
    """The prompts (by position) a ``thread_rolled_back`` undoes: a first,
    counting pass, only for a file that mentions one (from ``resume`` on, when
    given); None when it does not."""
    if not _mentions(path, _ROLLBACK_MARK, resume.offset if resume else 0):
        return None
    session = _Session(path, redact)
    state = resume.state if resume else None
    if state is not None:
        session.restore(state)
    cutter = _Cutter(session, light=True, state=state)
    for line in _read_lines(path, redact, [], None, resume, _legacy_of(state)):
        cutter.feed(line)
    return cutter.rolled


# --------------------------------------------------------------------------- parsing


def _legacy_of(state: dict[str, Any] | None) -> dict[str, str | None]:
    """What a resumed read knows of a rollout from before the envelope."""
    legacy = (state or {}).get("legacy")
    return dict(legacy) if isinstance(legacy, dict) else {}


def parse_file(
    path: pathlib.Path,
    redact: Redact,
    progress: Progress | None = None,
    resume: Resume | None = None,
) -> Iterator[Parsed]:
    """Yield turn records and Problems for one Codex rollout file, then its
    SessionMeta, then where a later import may resume: the start of its last
    turn, with what the lines before it said (the session, the model and cwd in
    effect, the prompts counted and rolled back, the turn ids taken).

    A resumed read starts there. When the lines read from there roll back a
    prompt before it (a ``thread_rolled_back`` reaching past the resume
    point), the whole file is read again instead, so those turns are marked."""
    path = pathlib.Path(path)
    if resume is not None and not resume.state:
        resume = None  # the start of the file
    rolled_first = _rollback_pass(path, redact, resume)
    if resume is not None and rolled_first is not None:
        before = {int(n) for n in resume.state.get("rolled", [])}
        upto = int(resume.state.get("prompts", 0))
        if any(n <= upto and n not in before for n in rolled_first):
            resume = None  # a rollback undid turns read before: read them again
            rolled_first = _rollback_pass(path, redact, None)
    rolled_first = rolled_first or set()
    session = _Session(path, redact)
    state = resume.state if resume is not None else None
    if state is not None:
        session.restore(state)
    cutter = _Cutter(session, light=False, state=state)
    if resume is not None:
        cutter.turn.start_mark = dict(resume.state, offset=resume.offset, line=resume.line)
    problems: list[Problem] = []
    legacy = _legacy_of(state)

    def emit(turn: _Turn) -> Iterator[Parsed]:
        rolled = turn.ordinal in rolled_first or turn.ordinal in cutter.rolled
        record = turn.record(rolled, problems)
        yield from problems
        problems.clear()
        if record is not None:
            yield record

    for line in _read_lines(path, redact, problems, progress, resume, legacy):
        yield from problems
        problems.clear()
        done = cutter.feed(line)
        if done is not None:
            yield from emit(done)
    yield from problems
    problems.clear()
    last = cutter.close()
    if last is not None:
        yield from emit(last)
    yield SessionMeta(session_id=session.session_id, title=session.title, project=session.project)
    mark = last.start_mark if last is not None else None
    if last is None or mark is None:
        yield Resume(0, 1, {})  # no turn, or one that starts the file: read it all again
    else:
        state = {k: v for k, v in mark.items() if k not in ("offset", "line")}
        state.update(session.fixed(drop=last.assigned_id))
        if legacy:
            state["legacy"] = legacy
        yield Resume(int(mark["offset"]), int(mark["line"]), state)
