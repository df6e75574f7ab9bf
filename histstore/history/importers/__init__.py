"""Importers turn agent session files into turn records (see histstore.turn).

Every importer is a pure parser: it reads files, never touches a store, and yields

* turn records (dicts, the shape documented in :mod:`histstore.turn`), with every
  string that came from the file already passed through the redactor;
* :class:`Problem` for a line it could not read (the rest of the file imports);
* :class:`SessionMeta` for what it learned about a session besides its turns
  (a title from a ``summary`` line, the project key).
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
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class SessionMeta:
    session_id: str
    title: str | None = None
    project: str | None = None


Parsed = dict[str, Any] | Problem | SessionMeta
