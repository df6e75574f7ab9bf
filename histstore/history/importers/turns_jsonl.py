"""The project's own turn JSONL: one turn record per line (docs/format.md, "Turn JSONL").

This is what ``hs record`` reads (one line on stdin) and the format ``hs export
--format jsonl`` will write, so an export can be imported again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from histstore.errors import BadInput
from histstore.history.importers import PROGRESS_STEP, Parsed, Problem, Progress, Redact, Resume
from histstore.history.turn import normalize_turn
from histstore.store.fsutil import open_regular
from histstore.store.redact import redact_json_line

FORMAT = "turns"


def is_turn_line(obj: Any) -> bool:
    return isinstance(obj, dict) and "turn_id" in obj and "asked" in obj and "session_id" in obj


def parse_text(text: str, redact: Redact) -> dict[str, Any]:
    """One turn from its JSON text: the text is redacted first (the redactor keeps
    JSON valid), so no secret reaches a parsed value; then it is validated."""
    try:
        _, obj = redact_json_line(redact, text)
    except json.JSONDecodeError as e:
        raise BadInput(f"not valid JSON ({e.msg})") from None
    except (ValueError, RecursionError) as e:  # NaN, a 5000-digit number, deep nesting
        raise BadInput(f"not JSON the store can keep ({str(e)[:80]})") from None
    return normalize_turn(obj)


def parse_file(
    path: Path, redact: Redact, progress: Progress | None = None, resume: Resume | None = None
) -> Iterator[Parsed]:
    """Every line a turn. A last line without its newline is being written: it
    is left for the next import (the resume point is its start)."""
    unreported = 0
    offset = resume.offset if resume else 0
    lineno = resume.line - 1 if resume else 0
    with open_regular(path) as f:
        f.seek(offset)
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # unfinished: read again next time
            lineno += 1
            at, offset = offset, offset + len(raw)
            unreported += len(raw)
            if progress is not None and unreported >= PROGRESS_STEP:
                progress(unreported)
                unreported = 0
            if not raw.strip():
                continue
            try:
                turn = parse_text(raw.decode("utf-8"), redact)
            except UnicodeDecodeError:
                yield Problem(str(path), lineno, "not valid UTF-8")
                continue
            except BadInput as e:
                yield Problem(str(path), lineno, e.message)
                continue
            turn["source"] = {
                **(turn.get("source") or {}),
                "format": FORMAT,
                "file": str(path),
                "line": lineno,
                "end_line": lineno,
                "offset": at,
            }
            yield turn
    if progress is not None and unreported:
        progress(unreported)
    yield Resume(offset, lineno + 1, {})
