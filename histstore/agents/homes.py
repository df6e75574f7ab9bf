"""Where each agent keeps its configuration, as the agent itself finds it.

* Claude Code: its MCP servers (user scope) are in ``~/.claude.json``, or with
  ``CLAUDE_CONFIG_DIR`` set in ``$CLAUDE_CONFIG_DIR/.claude.json`` (its
  ``.config.json`` instead, when that file exists there); its settings (hooks)
  in ``$CLAUDE_CONFIG_DIR/settings.json``, default ``~/.claude/settings.json``.
* Codex: ``$CODEX_HOME/config.toml`` (MCP servers, features, hook trust) and
  ``$CODEX_HOME/hooks.json``; ``CODEX_HOME`` defaults to ``~/.codex``.

An empty variable counts as unset, as both agents treat it.
"""

from __future__ import annotations

import os
from pathlib import Path

AGENTS = ("claude-code", "codex")


def _env_dir(name: str) -> Path | None:
    value = os.environ.get(name, "")
    return Path(value).expanduser() if value else None


def claude_config_dir() -> Path:
    return _env_dir("CLAUDE_CONFIG_DIR") or Path.home() / ".claude"


def claude_state_file() -> Path:
    """The file holding Claude Code's user-scope ``mcpServers``."""
    base = _env_dir("CLAUDE_CONFIG_DIR")
    if base is None:
        return Path.home() / ".claude.json"
    legacy = base / ".config.json"
    return legacy if legacy.exists() else base / ".claude.json"


def claude_settings_file() -> Path:
    return claude_config_dir() / "settings.json"


def codex_home() -> Path:
    return _env_dir("CODEX_HOME") or Path.home() / ".codex"


def codex_config_file() -> Path:
    return codex_home() / "config.toml"
