"""The SDK wiring of ``hs mcp``: the tools of :mod:`histstore.mcp.tools` over stdio.

The only module that imports the ``mcp`` SDK, and only ``hs mcp`` imports it:
the SDK costs about a second of start-up (its pydantic models), which no other
command pays. Built on the SDK's low-level ``Server`` (which serves the
``initialize`` handshake of today's agents and the 2026-07-28 requests alike):
the tools' schemas and descriptions are histstore's own data, and every call
goes to :func:`histstore.mcp.tools.call` in a worker thread, one at a time.

A call never ends the server: an error of the library is a tool error (its
text the one line the CLI prints for it); anything else is a tool error
naming only its type, with the traceback on stderr (the agent's log), so no
stored text can reach the model through an exception message. Nothing but
JSON-RPC is written to stdout.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from mcp.types import Tool as SdkTool

from histstore import __version__
from histstore.errors import Ambiguous, HistError
from histstore.mcp.base import Env
from histstore.mcp.tools import INSTRUCTIONS, TOOLS, call, project_of

log = logging.getLogger("histstore.mcp")

#: how long a call waits for the client to list its roots
ROOTS_TIMEOUT = 2.0
#: the tools that work on "the current project" (the others need no roots)
_PROJECT_TOOLS = {
    "recall_history",
    "recent_sessions",
    "memory_list",
    "memory_read",
    "memory_prompt",
    "memory_propose",
}


def sdk_tools() -> list[SdkTool]:
    return [
        SdkTool(name=t.name, title=t.title, description=t.description, input_schema=t.schema)
        for t in TOOLS
    ]


def error_text(e: BaseException) -> str:
    """What a failed call tells the model: the CLI's line for a library error."""
    if isinstance(e, HistError):
        text = e.line()
        if isinstance(e, Ambiguous) and e.candidates:
            text += "".join(f"\n  {c}" for c in e.candidates)
        return text
    if isinstance(e, OSError):
        where = f" ({e.filename})" if e.filename else ""
        return f"hs: error: {e.strerror or type(e).__name__}{where}"
    return (
        f"hs: internal error: {type(e).__name__}; "
        "hint: the server's log (its stderr) has the details; report it"
    )


async def _roots(ctx: ServerRequestContext[Any, Any]) -> list[str] | None:
    """The client's roots, when it declared it has them (Claude Code does,
    Codex does not); None when it has none or cannot say in time."""
    caps = ctx.session.client_capabilities
    if caps is None or caps.roots is None:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in the 2026-07-28 spec
            with anyio.fail_after(ROOTS_TIMEOUT):
                result = await ctx.session.list_roots()
    except Exception as e:  # no back-channel, an error, a timeout: the cwd decides
        log.debug("roots/list failed: %r", e)
        return None
    return [str(r.uri) for r in result.roots]


def make_server(store: Path, drafts: Path) -> Server[Any]:
    one_at_a_time = anyio.CapacityLimiter(1)
    tools = sdk_tools()

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams
    ) -> CallToolResult:
        try:
            meta = dict(ctx.meta or {})
            project, how = project_of(meta, None, os.getcwd())
            if how == "cwd" and params.name in _PROJECT_TOOLS:
                project, how = project_of(meta, await _roots(ctx), os.getcwd())
            env = Env(store, project, drafts, how)
            text = await anyio.to_thread.run_sync(
                call, env, params.name, params.arguments, limiter=one_at_a_time
            )
            return CallToolResult(content=[TextContent(type="text", text=text)])
        except Exception as e:
            if not isinstance(e, HistError | OSError):
                log.error("tool %s failed", params.name, exc_info=e)
            return CallToolResult(
                content=[TextContent(type="text", text=error_text(e))], is_error=True
            )

    return Server(
        "histstore",
        version=__version__,
        title="histstore",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def serve(store: Path, drafts: Path) -> None:
    """Serve on stdin/stdout until the client closes stdin."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="hs mcp: %(levelname)s: %(message)s"
    )
    server = make_server(store, drafts)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
