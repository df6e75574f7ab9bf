"""Importers turn agent session files into turn records (see histstore.turn).

Every importer is a pure parser: it reads files, never touches a store, and yields

* turn records (dicts, the shape documented in :mod:`histstore.turn`), with every
  string that came from the file already passed through the redactor;
* :class:`Problem` for a line it could not read (the rest of the file imports);
* :class:`SessionMeta` for what it learned about a session besides its turns
  (a title from a ``summary`` line, the project key);
* last, one :class:`Resume`: where a later import of the same file, grown by
  appends, may start reading (the start of the last turn, which it reads again:
  that turn may still be growing), with the state the importer needs there.

``parse_file(path, redact, progress=None, resume=None)`` starts at ``resume``
when given (the caller checked the file was only appended to since).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Redact = Callable[[str], str]
#: called with a number of bytes read, so a caller can show progress
Progress = Callable[[int], None]
PROGRESS_STEP = 1 << 20  # report at most once per MiB read


@dataclass(frozen=True)
class Problem:
    """A line an importer could not read, and why; ``kept``: it was read all
    the same, with a stand-in (a borrowed time, a replaced byte), so nothing
    of it was left out (the import is still complete)."""

    file: str
    line: int
    message: str
    kept: bool = False

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class SessionMeta:
    """What a session file says about its session besides its turns."""

    session_id: str
    title: str | None = None
    project: str | None = None


@dataclass(frozen=True)
class Resume:
    """Where an import may start reading a file it read before: a byte offset
    at the start of a line, that line's number, and the importer's state there
    (JSON-able)."""

    offset: int
    line: int
    state: dict[str, Any]


Parsed = dict[str, Any] | Problem | SessionMeta | Resume


def line_runs(numbers: list[int]) -> list[list[int]]:
    """Line numbers (ascending) as runs ``[[first, count], ...]``: where a turn's
    raw records sit in its file (``source["lines"]``, kept in the source table).
    A turn's records need not be one run of its file (a fork's branch continued
    after a later prompt); an export in the agent's format puts each back there."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][0] + runs[-1][1] == n:
            runs[-1][1] += 1
        else:
            runs.append([n, 1])
    return runs
