"""`hs recall`: the answer as a person reads it, and the quick path to it.

:func:`show` asks the library and prints (typer's ``hs recall`` calls it, and
so does the quick path). :func:`quick` runs ``hs [--store S] recall ...``
without loading typer at all — most of the start-up of any ``hs`` command,
and recall is asked often — when every argument is one it knows; anything
else (``--help``, an option it does not know, a value that is not a number)
returns None, and the full CLI parses it as always. Both print the same
lines and exit with the same codes (histstore.plumbing.report).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from histstore.errors import BadInput

Echo = Callable[..., None]


def show(
    store: Any,
    words: list[str],
    *,
    everywhere: bool,
    project: str | None,
    days: int | None,
    k: int,
    agent: str | None,
    session: str | None,
    json_out: bool,
    echo: Echo,
) -> None:
    from histstore.recall.index import recall
    from histstore.recall.query import UNTRUSTED_LABEL

    if everywhere and project is not None:
        raise BadInput("give --everywhere or --project, not both")
    where_from = None if everywhere else project if project is not None else os.getcwd()
    text = " ".join(words)
    res = recall(store, text, project=where_from, days=days, k=k, agent=agent, session=session)
    notes = _memory_hits(store, [" ".join(t) for t in res.query.terms], res.scope, everywhere)
    if json_out:
        echo(
            json.dumps(
                {
                    "query": text,
                    "terms": [" ".join(t) for t in res.query.terms],
                    "outcome": res.outcome,
                    "project": res.scope,
                    "days": days,
                    "path": res.path,
                    "hits": [h.as_json() for h in res.hits],
                    "memory": [n.as_json() for n in notes],
                },
                ensure_ascii=False,
            )
        )
        return
    where = f" in {res.scope}" if res.scope else ""
    if res.outcome == "empty":
        echo("nothing recorded yet: import sessions with `hs import`")
    elif res.outcome == "no-terms":
        echo(f"nothing to look for: {text!r} holds only function words")
    elif res.outcome == "no-match":
        more = " (try --everywhere)" if res.scope else ""
        echo(f"no turn matches {text!r}{where}{more}")
    elif res.outcome == "no-match-in-days":
        echo(
            f"no turn matches {text!r}{where} in the last {days} days "
            "(older turns do: widen or drop --days)"
        )
    for i, h in enumerate(res.hits):
        if i:
            echo("")
        echo(f"{h.asked_at[:10]}  session {h.session_id[:8]}  turn {h.turn_id[:12]}")
        if res.scope is None:
            echo(f"  project: {h.project}")
        echo(f"  {h.where}: {h.excerpt}")
        if h.edited:
            echo("  edited: " + ", ".join(h.edited))
        if h.read:
            echo("  read: " + ", ".join(h.read))
        if h.tainted:
            echo(f"  {UNTRUSTED_LABEL}")
    if notes:
        echo("")
        echo("memory notes:")
        for n in notes:
            echo(f"  {n.file} ({n.scope.label}): {n.name} — {n.description}")


def _memory_hits(store: Any, terms: list[str], scope: str | None, everywhere: bool) -> list[Any]:
    """Memory notes that hold the query's terms (only when memory was recorded)."""
    if not (store.root / "refs" / "memory").is_dir():
        return []
    from histstore.memory.prompt import search_notes

    return search_notes(store, terms, scope, everywhere=everywhere)


# ------------------------------------------------------------------ quick path

_FLAGS = {"--everywhere": "everywhere", "-e": "everywhere", "--json": "json_out"}
_VALUES = {
    "--project": "project",
    "--days": "days",
    "-k": "k",
    "--agent": "agent",
    "--session": "session",
}
_NUMBERS = {"days", "k"}


def parse(argv: list[str]) -> tuple[str | None, dict[str, Any]] | None:
    """``[--store S | -C S] recall OPTIONS... WORDS...`` as (store, keyword
    arguments of :func:`show`), or None for anything else."""
    args = list(argv)
    store: str | None = None
    while args and args[0] != "recall":
        head = args.pop(0)
        if head in ("--store", "-C") and args:
            store = args.pop(0)
        elif head.startswith("--store="):
            store = head.partition("=")[2]
        else:
            return None
    if not args:
        return None
    args.pop(0)
    kw: dict[str, Any] = {
        "everywhere": False,
        "project": None,
        "days": None,
        "k": 5,
        "agent": None,
        "session": None,
        "json_out": False,
    }
    words: list[str] = []
    while args:
        a = args.pop(0)
        if a in _FLAGS:
            kw[_FLAGS[a]] = True
            continue
        name, eq, value = a.partition("=")
        if name in _VALUES and a.startswith("--"):
            if not eq:
                if not args:
                    return None
                value = args.pop(0)
        elif a in _VALUES:
            if not args:
                return None
            name, value = a, args.pop(0)
        elif a.startswith("-"):
            return None  # --help, an option this path does not know, "--", a negative number
        else:
            words.append(a)
            continue
        key = _VALUES[name]
        if key in _NUMBERS:
            try:
                kw[key] = int(value)
            except ValueError:
                return None  # the full CLI says why
        else:
            kw[key] = value
    if not words:
        return None
    kw["words"] = words
    return store, kw


def quick(argv: list[str]) -> int | None:
    """Run ``hs recall`` without typer; None when the full CLI must parse ``argv``."""
    parsed = parse(argv)
    if parsed is None:
        return None
    store_arg, kw = parsed
    from histstore.plumbing.report import guarded

    def echo(line: str = "", err: bool = False) -> None:
        print(line, file=sys.stderr if err else sys.stdout)

    def run() -> None:
        from histstore.store.config import default_store_path
        from histstore.store.store import Store

        root = Path(store_arg).expanduser() if store_arg else default_store_path()
        store = Store.open(root)
        store.notify = lambda message: echo(f"hs: {message}", err=True)
        try:
            show(store, echo=echo, **kw)
        finally:
            store.close()
        sys.stdout.flush()

    return guarded(run)
