"""The project's own turn JSONL: one turn record per line (docs/format.md, "Turn JSONL").

This is what ``hs export --format jsonl`` writes and what ``hs record`` reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..turn import normalize_turn
from . import Parsed, Problem, Redact

FORMAT = "turns"


def is_turn_line(obj: Any) -> bool:
    return isinstance(obj, dict) and "turn_id" in obj and "asked" in obj and "session_id" in obj


def parse_record(obj: Any, redact: Redact) -> dict[str, Any]:
    """Redact every string of a record from outside, then validate it."""
    redact_obj = getattr(redact, "redact_obj", None)
    if redact_obj is not None:
        obj = redact_obj(obj)
    return normalize_turn(obj)


def parse_file(path: Path, redact: Redact) -> Iterator[Parsed]:
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as e:
                yield Problem(str(path), lineno, f"not valid JSON ({e.msg})")
                continue
            except ValueError:
                yield Problem(str(path), lineno, "not valid JSON (not UTF-8)")
                continue
            try:
                turn = parse_record(obj, redact)
            except BadInput as e:
                yield Problem(str(path), lineno, e.message)
                continue
            if turn.get("source") is None:
                turn["source"] = {"format": FORMAT, "file": str(path), "line": lineno}
            yield turn
