"""The line reader the JSONL importers share: decode, redact, parse.

Its own module so that reading history (which imports the importers'
shared types) does not load the redaction rules."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from histstore.history.importers import PROGRESS_STEP, Problem, Progress, Redact, Resume
from histstore.store.fsutil import open_regular
from histstore.store.redact import redact_json_line


@dataclass(frozen=True)
class JsonLine:
    """One line of a JSONL session file as :func:`json_lines` reads it."""

    lineno: int
    #: the byte offset at which the line starts
    at: int
    #: the line without its ending, redacted when it parsed (else as written)
    text: str
    #: its JSON value, or None when it did not parse
    obj: Any
    #: why it did not parse (``not valid JSON: …``)
    error: str | None
    #: the file's last line, without its newline: still being written
    unfinished: bool


def json_lines(
    path: pathlib.Path,
    redact: Redact,
    problems: list[Problem],
    progress: Progress | None = None,
    start: Resume | None = None,
) -> Iterator[JsonLine]:
    """Every non-blank line of a JSONL file from ``start``, decoded (invalid
    UTF-8 replaced, and said in ``problems``), redacted and parsed as an import
    reads it, with progress reported per MiB: the loop the importers share.

    A last line without its newline (``unfinished``: the agent may be writing
    it) is the last one read, even if the file grows meanwhile: reading on
    would take the rest of that line for a line of its own, and every line
    number after it would be one too many."""
    unreported = 0
    offset = start.offset if start else 0
    lineno = start.line - 1 if start else 0
    with open_regular(path) as fh:
        fh.seek(offset)
        for data in fh:
            lineno += 1
            at, offset = offset, offset + len(data)
            unreported += len(data)
            if progress is not None and unreported >= PROGRESS_STEP:
                progress(unreported)
                unreported = 0
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = data.decode("utf-8", errors="replace")
                problems.append(Problem(str(path), lineno, "invalid UTF-8, replaced", kept=True))
            if lineno == 1:
                text = text.lstrip("\ufeff")
            unfinished = not text.endswith("\n")
            text = text.rstrip("\r\n")
            if text.strip():
                try:
                    text, obj = redact_json_line(redact, text)
                except (ValueError, RecursionError) as exc:
                    yield JsonLine(lineno, at, text, None, f"not valid JSON: {exc}", unfinished)
                else:
                    yield JsonLine(lineno, at, text, obj, None, unfinished)
            if unfinished:
                # the end of the file as it was: what the agent writes after it
                # (the rest of this line, more lines) is for the next read
                break
    if progress is not None and unreported:
        progress(unreported)
