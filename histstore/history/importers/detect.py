"""Finding session files under a path and telling their format."""

from __future__ import annotations

import json
from pathlib import Path

from histstore.errors import BadInput, NotFound
from histstore.history.importers import claude_code, turns_jsonl
from histstore.store.fsutil import open_regular

FORMATS = ("turns", "claude-code")


def detect_file(path: Path) -> str | None:
    """The format of a JSONL file from its first few records, or None."""
    try:
        with open_regular(path) as f:
            for _, raw in zip(range(50), f, strict=False):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError):  # not JSON, or nested past reading
                    continue
                if turns_jsonl.is_turn_line(obj):
                    return "turns"
                if isinstance(obj, dict) and claude_code.is_claude_code_line(obj):
                    return "claude-code"
    except OSError:
        return None
    return None


def expand(paths: list[Path], fmt: str | None = None) -> list[tuple[Path, str | None]]:
    """Every file to import under ``paths`` with its format (None: not recognised).

    A folder is searched for ``*.jsonl`` files (Claude Code's projects folder, one
    project folder, or any folder of turn JSONL). A file named explicitly is read
    whatever its extension.
    """
    if fmt is not None and fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")
    out: list[tuple[Path, str | None]] = []
    seen: set[Path] = set()
    for p in paths:
        if not p.exists():
            raise NotFound(f"{p}: no such file or folder", hint="check the path to import")
        p = p.resolve()  # the source of a turn names its file the same whatever the cwd
        files = sorted(f for f in p.rglob("*.jsonl") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            key = f.resolve()
            if key in seen:
                continue
            seen.add(key)
            if fmt is not None:
                out.append((f, fmt))
            elif f.stat().st_size == 0:
                out.append((f, "claude-code" if p.is_dir() else None))
            else:
                out.append((f, detect_file(f)))
    return out
