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
second install a no-op, a broken file refused). An entry of that name hs did
not write (:func:`is_ours`) is neither written over nor removed.
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
    """The agent's entry for ``argv`` (as :func:`command` makes it): the keys
    hs sets. Any other key a person adds to the entry (``env``, a timeout)
    is kept by a second install."""
    if _agent(agent) == "claude-code":
        return {"type": "stdio", "command": argv[0], "args": argv[1:], "alwaysLoad": True}
    return {"command": argv[0], "args": argv[1:], "startup_timeout_sec": CODEX_STARTUP_TIMEOUT}


def is_ours(value: Any) -> bool:
    """Whether an entry is one ``hs mcp install`` wrote: a server whose
    arguments end ``--store <dir> mcp``. A server of another program that
    happens to be named ``histstore`` is not, and is never changed."""
    if not isinstance(value, dict):
        return False
    args = value.get("args")
    return (
        isinstance(value.get("command"), str)
        and isinstance(args, list)
        and len(args) >= 3
        and args[-3] == "--store"
        and args[-1] == "mcp"
    )


def _keys(agent: str) -> tuple[str, str]:
    return ("mcpServers", NAME) if agent == "claude-code" else ("mcp_servers", NAME)


def _not_ours(path: Path, agent: str, value: Any) -> BadInput:
    what = ".".join(_keys(agent))
    command = value.get("command") if isinstance(value, dict) else None
    runs = f" (it runs {command!r})" if isinstance(command, str) else ""
    return BadInput(
        f"{path}: {what} is not an entry hs mcp install wrote{runs}: nothing changed",
        hint="rename or remove that server in the file, then run the command again",
    )


def install(agent: str, argv: list[str]) -> settings.Change:
    path = config_file(agent)
    ours = entry(agent, argv)

    def change(current: Any) -> Any:
        if current is settings.MISSING:
            return ours
        if not is_ours(current):
            raise _not_ours(path, agent, current)
        return {**current, **ours}  # a person's own additions stay

    if agent == "claude-code":
        return settings.update_json(path, _keys(agent), change)
    return settings.update_toml(path, _keys(agent), change)


def uninstall(agent: str) -> settings.Change:
    """Remove hs's entry (and the table of servers, when that leaves it
    empty); an entry of the same name that hs did not write stays."""
    path = config_file(agent)

    def change(current: Any) -> Any:
        if current is settings.MISSING:
            return current
        if not is_ours(current):
            raise _not_ours(path, agent, current)
        return settings.DELETE

    if agent == "claude-code":
        return settings.update_json(path, _keys(agent), change)
    return settings.update_toml(path, _keys(agent), change)


def registered(agent: str) -> Any:
    """The agent's entry for hs as its file holds it now (None: none)."""
    path = config_file(agent)
    if agent == "claude-code":
        return settings.read_json(path, _keys(agent))
    return settings.read_toml(path, _keys(agent))
