"""`hs mcp`: the MCP server on stdio, and registering it with an agent (docs/mcp.md).

The SDK is imported only when the server runs (``histstore.mcp.server``):
``hs mcp install`` and every other command start without it.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Annotated

import typer

from histstore.plumbing.common import new_app, store_path
from histstore.porcelain.render import say

app = new_app(
    "The MCP server: recall and memory as tools any agent can call.\n\n"
    "Example: hs mcp install claude-code (then the agent runs hs mcp)",
    invoke_without_command=True,
    no_args_is_help=False,
)

AgentArg = Annotated[str, typer.Argument(metavar="AGENT", help="claude-code or codex.")]


@app.callback()
def mcp(
    ctx: typer.Context,
    drafts: Annotated[
        Path | None,
        typer.Option(
            help="Where memory_propose writes drafts "
            "(default: $XDG_STATE_HOME/histstore/drafts, ~/.local/state/histstore/drafts).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the MCP server on stdin/stdout (an agent starts it); `install` registers it.

    Example: hs mcp install claude-code (then the agent runs hs mcp)
    """
    if ctx.invoked_subcommand is not None:
        return
    from histstore.mcp.server import serve
    from histstore.mcp.tools import default_drafts

    serve(store_path(ctx).absolute(), (drafts or default_drafts()).expanduser().absolute())


def _hs_argv() -> list[str]:
    """How the agent runs this hs: the ``hs`` executable being run, else the
    one on PATH, else this Python with the module."""
    exe = Path(sys.argv[0])
    if exe.name == "hs" and exe.is_file():
        return [str(exe.absolute())]
    found = shutil.which("hs")
    if found:
        return [str(Path(found).absolute())]
    return [sys.executable, "-m", "histstore.porcelain.entry"]


_CHECK = {"claude-code": "claude mcp get histstore", "codex": "codex mcp get histstore"}


@app.command()
def install(
    ctx: typer.Context,
    agent: AgentArg,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="One JSON object: agent, file, changed, created, backup, entry."
        ),
    ] = False,
) -> None:
    """Register the server with an agent (Claude Code or Codex), keeping its other settings.

    Example: hs mcp install codex
    """
    from histstore.mcp import install as reg

    argv = reg.command(_hs_argv(), store_path(ctx).absolute())
    change = reg.install(agent, argv)
    if json_out:
        say(
            json.dumps(
                {
                    "agent": agent,
                    "file": str(change.path),
                    "changed": change.changed,
                    "created": change.created,
                    "backup": str(change.backup) if change.backup else None,
                    "entry": reg.registered(agent),
                },
                ensure_ascii=False,
            )
        )
        return
    if not change.changed:
        say(f"{reg.NAME} is already registered with {agent} in {change.path}: nothing changed")
    else:
        how = "a new file" if change.created else f"the previous file is kept as {change.backup}"
        say(f"registered {reg.NAME} with {agent} in {change.path} ({how})")
    say(f"  command: {' '.join(argv)}")
    say(f"  check it with `{_CHECK[agent]}`; restart the agent to load it")


@app.command()
def uninstall(
    ctx: typer.Context,
    agent: AgentArg,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object: agent, file, changed, backup.")
    ] = False,
) -> None:
    """Remove the server's entry from an agent's settings (nothing else).

    Example: hs mcp uninstall codex
    """
    from histstore.mcp import install as reg

    change = reg.uninstall(agent)
    if json_out:
        say(
            json.dumps(
                {
                    "agent": agent,
                    "file": str(change.path),
                    "changed": change.changed,
                    "backup": str(change.backup) if change.backup else None,
                },
                ensure_ascii=False,
            )
        )
        return
    if not change.changed:
        say(f"{reg.NAME} is not registered with {agent} in {change.path}: nothing changed")
    else:
        say(f"removed {reg.NAME} from {change.path} (the previous file is kept as {change.backup})")
