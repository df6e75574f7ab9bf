"""Shell completion of values (``hs --install-completion``; typer's mechanism):
remote names, memory note names, session ids, agent names.

Each function is given what the shell has typed so far and answers from the
store named before the command (``--store``/``-C``, else ``$HISTORY_DIR``, else
the default). Completion never fails a shell: any error is no candidates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

#: at most this many ids are offered (a store holds many)
MAX_IDS = 100


def _store(ctx: typer.Context) -> Any:
    from histstore.store.config import default_store_path
    from histstore.store.store import Store

    given = ctx.find_root().params.get("store")
    return Store.open(Path(given).expanduser() if given else default_store_path())


def _quietly(fn: Callable[[Any, str], list[str]]) -> Callable[[typer.Context, str], list[str]]:
    def complete(ctx: typer.Context, incomplete: str) -> list[str]:
        try:
            store = _store(ctx)
        except Exception:
            return []
        try:
            return [c for c in fn(store, incomplete) if c.startswith(incomplete)]
        except Exception:
            return []
        finally:
            store.close()

    return complete


@_quietly
def remotes(store: Any, incomplete: str) -> list[str]:
    from histstore.sync.remotes import remote_entries

    good, _ = remote_entries(store)
    return sorted(good)


@_quietly
def sessions(store: Any, incomplete: str) -> list[str]:
    from histstore.history.summary import open_summary

    summary = open_summary(store)
    if summary is None:
        ids = sorted(store.session_refs())
    else:
        with summary:
            ids = [s.session_id for s in summary.sessions()]
    return [i for i in ids if i.startswith(incomplete)][:MAX_IDS]


@_quietly
def agents(store: Any, incomplete: str) -> list[str]:
    from histstore.history.summary import open_summary

    summary = open_summary(store)
    if summary is None:
        return sorted({s.agent for s in store.sessions()})
    with summary:
        return sorted(summary.counts()["agents"])


def notes(ctx: typer.Context, incomplete: str) -> list[str]:
    """The notes of the scope given by --project (else the system scope)."""
    project = ctx.params.get("project")

    def names(store: Any, _: str) -> list[str]:
        from histstore.memory.revisions import note_files
        from histstore.porcelain.memory_cli import _scope

        return note_files(store, _scope(project))

    return _quietly(names)(ctx, incomplete)
