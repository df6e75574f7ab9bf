"""Where agents keep their history on this machine: the agent homes.

``hs import`` without a path imports every source :func:`agent_homes` finds
under the home folder, honouring each agent's own override of where it keeps
its files:

==============  =====================================================  ==========
agent           sources (each folder that exists)                      format
==============  =====================================================  ==========
``claude-code``  ``projects/`` of ``$CLAUDE_CONFIG_DIR`` (or of each     claude-code
                folder of a comma-separated list, as tools reading
                Claude Code's files allow); without it, ``~/.claude`` and
                ``$XDG_CONFIG_HOME/claude`` (``~/.config/claude``)
``codex``       ``sessions/`` and ``archived_sessions/`` of             codex
                ``$CODEX_HOME``, else of ``~/.codex``
==============  =====================================================  ==========

A variable set to an empty value counts as unset. Only folders are looked at
(nothing is read here), and the same folder reached twice is listed once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Home:
    """One folder of one agent's history: where its session files are."""

    agent: str
    path: Path
    format: str
    #: how it was found: the variable or default that named it
    via: str


def _env_dirs(value: str | None) -> list[Path]:
    """The folders a variable names: one path, or (when the whole value is no
    folder) a comma-separated list of them."""
    if not value or not value.strip():
        return []
    whole = Path(value.strip()).expanduser()
    if whole.is_dir() or "," not in value:
        return [whole]
    return [Path(p.strip()).expanduser() for p in value.split(",") if p.strip()]


def candidates(env: Mapping[str, str] | None = None, home: Path | None = None) -> list[Home]:
    """Every folder an agent home could be, whether it exists or not (what
    ``hs import`` says it looked in when it finds none)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    out: list[Home] = []
    claude = _env_dirs(env.get("CLAUDE_CONFIG_DIR"))
    if claude:
        out += [
            Home("claude-code", d / "projects", "claude-code", "$CLAUDE_CONFIG_DIR") for d in claude
        ]
    else:
        xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
        out.append(Home("claude-code", home / ".claude" / "projects", "claude-code", "~/.claude"))
        out.append(
            Home("claude-code", xdg / "claude" / "projects", "claude-code", "~/.config/claude")
        )
    value = (env.get("CODEX_HOME") or "").strip()
    codex_home, via = (
        (Path(value).expanduser(), "$CODEX_HOME") if value else (home / ".codex", "~/.codex")
    )
    for sub in ("sessions", "archived_sessions"):
        out.append(Home("codex", codex_home / sub, "codex", via))
    return out


def agent_homes(env: Mapping[str, str] | None = None, home: Path | None = None) -> list[Home]:
    """The agent homes that exist here, each folder once."""
    out: list[Home] = []
    seen: set[Path] = set()
    for h in candidates(env, home):
        try:
            if not h.path.is_dir():
                continue
            key = h.path.resolve()
        except OSError:
            continue
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out
