"""Driving `hs mcp` as an agent does: a real subprocess over stdio, through the
SDK's own client (imported as `mcptools`; tests/ is on sys.path).

:class:`Server` starts ``python -m histstore.porcelain.cli --store S mcp`` in a
working directory, connects the SDK's ``Client`` to it (in a thread of its
own, through an anyio blocking portal, so tests stay plain functions) and
offers ``call(name, args, meta=...)`` -> (text, is_error). ``roots`` makes the
client declare the roots capability and answer ``roots/list`` with them, as
Claude Code does; without it the client declares none, as Codex does.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from helpers import turn_record, write_turns

from histstore.memory.folders import snapshot
from histstore.memory.scopes import memory_dir, scope_for
from histstore.ops.importing import import_paths
from histstore.store.config import read_config, write_config
from histstore.store.store import Store


class Server:
    def __init__(
        self,
        store: Path,
        cwd: Path,
        home: Path,
        *,
        roots: list[str] | None = None,
        extra: list[str] = (),  # type: ignore[assignment]
    ) -> None:
        # the SDK loads in a second: only in a worker that starts a server
        import anyio.from_thread
        from mcp import Client, StdioServerParameters
        from mcp.client import ClientRequestContext
        from mcp.client.stdio import stdio_client
        from mcp.types import ListRootsResult, Root

        env = {
            "HOME": str(home),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "HS_TEST_NO_FSYNC": "1",
            "HS_LOCK_TIMEOUT": "5",
            "PATH": os.environ.get("PATH", ""),
        }
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "histstore.porcelain.cli", "--store", str(store), "mcp", *extra],
            cwd=str(cwd),
            env=env,
        )
        self.log = tempfile.TemporaryFile("w+")  # the server's stderr  # noqa: SIM115
        self._stack = ExitStack()
        self.portal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())
        callback = None
        if roots is not None:

            async def list_roots(context: ClientRequestContext) -> ListRootsResult:
                return ListRootsResult(roots=[Root(uri=r) for r in roots])  # type: ignore[arg-type]

            callback = list_roots
        client = Client(
            stdio_client(params, errlog=self.log), mode="legacy", list_roots_callback=callback
        )
        self.client: Any = self._stack.enter_context(self.portal.wrap_async_context_manager(client))

    def call(
        self, name: str, args: dict[str, Any] | None = None, meta: dict[str, Any] | None = None
    ) -> tuple[str, bool]:
        r = self.portal.call(lambda: self.client.call_tool(name, args or {}, meta=meta))
        assert len(r.content) == 1 and r.content[0].type == "text", r
        return r.content[0].text, bool(r.is_error)

    def ok(self, name: str, args: dict[str, Any] | None = None, **kw: Any) -> str:
        text, err = self.call(name, args, **kw)
        assert not err, text
        return text

    def error(self, name: str, args: dict[str, Any] | None = None, **kw: Any) -> str:
        text, err = self.call(name, args, **kw)
        assert err, text
        return text

    def run(self, method: str, *args: Any) -> Any:
        """Any other request of the client (list_tools, list_resources, …)."""
        return self.portal.call(lambda: getattr(self.client, method)(*args))

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def close(self) -> None:
        self._stack.close()
        self.log.close()


NOTE_BODY = "{word} rule.\n\n**Why:** {word}.\n\n**How to apply:** {word}."


def note(slug: str, name: str, description: str, word: str, type_: str = "feedback") -> bytes:
    return (
        f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n\n"
        + NOTE_BODY.format(word=word)
        + "\n"
    ).encode()


def build_store(root: Path) -> dict[str, Path]:
    """The fixture store of the MCP tests, under ``root``: an app work tree
    (a git top) with sessions of two agents, another project, a long turn,
    an old turn, and a system memory folder with two notes."""
    app = root / "work" / "app"
    (app / ".git").mkdir(parents=True)
    (app / "src").mkdir()
    other = root / "work" / "other"
    other.mkdir(parents=True)
    store_path = root / "store"
    store, _ = Store.init(store_path)
    long_answer = "\n".join(f"line {i}: the long answer goes on" for i in range(900))
    recs = [
        turn_record(
            1,
            session_id="s-app",
            turn_id="t-login",
            project=str(app),
            agent="claude-code",
            asked_at="2026-03-01T10:00:00Z",
            asked="How should login_user handle expired tokens?",
            answered="Refresh them in the middleware.",
            files=["src/auth.py"],
            edited=["src/middleware.py"],
            tainted=True,
        ),
        turn_record(
            2,
            session_id="s-app",
            turn_id="t-long",
            project=str(app),
            agent="claude-code",
            asked_at="2026-03-02T10:00:00Z",
            asked="Explain the parse_response helper in full",
            answered=long_answer,
            files=[],
            edited=[],
            steps=[
                {"type": "tool", "name": "Read", "input": {"path": "src/p.py"}, "output": "x" * 600}
            ],
        ),
        turn_record(
            3,
            session_id="s-cx",
            turn_id="t-codex",
            project=str(app),
            agent="codex",
            asked_at="2026-03-03T10:00:00Z",
            asked="login page redirect loop",
            answered="Fixed the redirect.",
            files=[],
            edited=["src/views.py"],
        ),
        turn_record(
            4,
            session_id="s-other",
            turn_id="t-other",
            project=str(other),
            agent="claude-code",
            asked_at="2026-03-04T10:00:00Z",
            asked="zebra stripes in the other project",
            answered="Done.",
            files=[],
            edited=[],
        ),
    ]
    import_paths(store, [write_turns(root / "turns.jsonl", recs)])
    mem = root / "memory"
    mem.mkdir()
    (mem / "feedback_use-tabs.md").write_bytes(
        note("use-tabs", "Use tabs", "Indent with tabs in every file", "tabs")
    )
    (mem / "project_ci-tox.md").write_bytes(
        note("ci-tox", "CI runs tox", "The tests run through tox", "tox", "project")
    )
    (mem / "MEMORY.md").write_bytes(
        "- [Use tabs](feedback_use-tabs.md) — Indent with tabs in every file\n"
        "- [CI runs tox](project_ci-tox.md) — The tests run through tox\n".encode()
    )
    config = read_config(store_path)
    config.setdefault("memory", {})["dirs"] = {"system": str(mem)}
    write_config(store_path, config)
    store = Store.open(store_path)
    snapshot(store, memory_dir(store, scope_for(None)))
    store.close()
    return {"store": store_path, "app": app, "other": other, "memory": mem}
