"""Finding session files under a path and telling their format."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, NotFound
from histstore.store.fsutil import open_regular

FORMATS = ("turns", "claude-code", "codex")


def detect_file(path: Path) -> str | None:
    """The format of a JSONL file from its first few records, or None."""
    # the importers are loaded only for a file whose format is not known yet
    from histstore.history.importers import claude_code, codex, turns_jsonl

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
                if codex.is_codex_line(obj):
                    return "codex"
    except OSError:
        return None
    return None


def parser(fmt: str) -> Callable[..., Iterator[Any]]:
    """The ``parse_file`` of a format's importer, loaded when first asked for:
    a hook recording a Claude Code turn never loads the Codex importer."""
    if fmt == "claude-code":
        from histstore.history.importers import claude_code

        return claude_code.parse_file
    if fmt == "codex":
        from histstore.history.importers import codex

        return codex.parse_file
    from histstore.history.importers import turns_jsonl

    return turns_jsonl.parse_file


def check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}", hint=f"use one of {', '.join(FORMATS)}")


def list_files(paths: list[Path]) -> list[tuple[Path, bool]]:
    """Every file to import under ``paths``, resolved (the source of a turn
    names its file the same whatever the cwd), with whether it was found in a
    folder (True) or named (False). A folder is searched for ``*.jsonl``
    files; a file named explicitly is taken whatever its extension."""
    out: list[tuple[Path, bool]] = []
    seen: set[Path] = set()
    for p in paths:
        if not p.exists():
            raise NotFound(f"{p}: no such file or folder", hint="check the path to import")
        p = p.resolve()
        files = sorted(f for f in p.rglob("*.jsonl") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                out.append((f, p.is_dir()))
    return out


def format_of(path: Path, in_folder: bool, fmt: str | None = None) -> str | None:
    """The format of one file: ``fmt`` when forced, else detected from its
    first records (an empty file in a folder is an empty Claude Code session)."""
    if fmt is not None:
        return fmt
    try:
        if path.stat().st_size == 0:
            return "claude-code" if in_folder else None
    except OSError:
        return None
    return detect_file(path)


def expand(paths: list[Path], fmt: str | None = None) -> list[tuple[Path, str | None]]:
    """Every file to import under ``paths`` with its format (None: not recognised)."""
    check_format(fmt)
    return [(f, format_of(f, in_folder, fmt)) for f, in_folder in list_files(paths)]
