"""Registering ``hs mcp`` with an agent: the one entry each agent's config gets.

* Claude Code: ``mcpServers.histstore`` at the top of ``~/.claude.json``
  (``$CLAUDE_CONFIG_DIR/.claude.json``), the user scope ``claude mcp add
  --scope user`` writes, so it serves every project without the approval a
  project's ``.mcp.json`` needs. ``alwaysLoad`` makes Claude Code wait for
  the server before the first turn (the SDK needs about a second to start;
  without it the tools can be missing from the first turn of ``claude -p``).
* Codex: ``[mcp_servers.histstore]`` in ``$CODEX_HOME/config.toml``.

The command names the store by path (``--store``): Codex passes the server
only a few variables (``HOME``, ``PATH``, …), so a ``HISTORY_DIR`` or
``XDG_DATA_HOME`` of the shell would not reach it. Every change goes through
:mod:`histstore.agents.settings` (the other keys kept, a backup beside, a
second install a no-op, a broken file refused).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from histstore.agents import homes, settings
from histstore.errors import BadInput

NAME = "histstore"
#: Codex's wait for the server to start (its default is 10 s; a loaded machine
#: can take several to import the SDK)
CODEX_STARTUP_TIMEOUT = 20


def _agent(agent: str) -> str:
    if agent not in homes.AGENTS:
        raise BadInput(f"unknown agent {agent!r}", hint=f"use one of {', '.join(homes.AGENTS)}")
    return agent


def config_file(agent: str) -> Path:
    """The file the agent's entry goes in."""
    if _agent(agent) == "claude-code":
        return homes.claude_state_file()
    return homes.codex_config_file()


def command(hs: list[str], store: Path) -> list[str]:
    """The command line the agent runs: ``hs --store <store> mcp``."""
    return [*hs, "--store", str(store), "mcp"]


def entry(agent: str, argv: list[str]) -> dict[str, Any]:
    """The agent's entry for ``argv`` (as :func:`command` makes it)."""
    if _agent(agent) == "claude-code":
        return {
            "type": "stdio",
            "command": argv[0],
            "args": argv[1:],
            "env": {},
            "alwaysLoad": True,
        }
    return {"command": argv[0], "args": argv[1:], "startup_timeout_sec": CODEX_STARTUP_TIMEOUT}


def _keys(agent: str) -> tuple[str, str]:
    return ("mcpServers", NAME) if agent == "claude-code" else ("mcp_servers", NAME)


def install(agent: str, argv: list[str]) -> settings.Change:
    path = config_file(agent)
    value = entry(agent, argv)
    if agent == "claude-code":
        return settings.set_json(path, _keys(agent), value)
    return settings.set_toml(path, _keys(agent), value)


def uninstall(agent: str) -> settings.Change:
    path = config_file(agent)
    if agent == "claude-code":
        return settings.delete_json(path, _keys(agent))
    return settings.delete_toml(path, _keys(agent))


def registered(agent: str) -> Any:
    """The agent's entry for hs as its file holds it now (None: none)."""
    path = config_file(agent)
    if agent == "claude-code":
        return settings.read_json(path, _keys(agent))
    return settings.read_toml(path, _keys(agent))
