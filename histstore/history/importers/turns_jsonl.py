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
from histstore.history.importers import PROGRESS_STEP, Parsed, Problem, Progress, Redact
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


def parse_file(path: Path, redact: Redact, progress: Progress | None = None) -> Iterator[Parsed]:
    unreported = 0
    with open_regular(path) as f:
        for lineno, raw in enumerate(f, 1):
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
            if turn.get("source") is None:
                turn["source"] = {"format": FORMAT, "file": str(path), "line": lineno}
            yield turn
    if progress is not None and unreported:
        progress(unreported)
