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
    say: Echo,
    raw: Echo,
) -> None:
    """Ask the library (histstore.ops.recall, the answer the MCP tool gives too)
    and print it: ``say`` prints a human line (histstore.porcelain.render.say:
    control characters made visible, colour and the pager as the terminal
    allows), ``raw`` the exact JSON."""
    from histstore.ops.recall import answer, render
    from histstore.porcelain.render import recall_lines

    if everywhere and project is not None:
        raise BadInput("give --everywhere or --project, not both")
    # the project as given (a directory or a name; the library maps it), or here
    where_from = None if everywhere else project if project is not None else os.getcwd()
    ans = answer(
        store,
        " ".join(words),
        project=where_from,
        days=days,
        k=k,
        agent=agent,
        session=session,
    )
    if json_out:
        raw(json.dumps(ans.as_json(), ensure_ascii=False))
        return
    for line in recall_lines(ans, render(ans)):
        say(line)


# ------------------------------------------------------------------ quick path

_FLAGS = {
    "--everywhere": "everywhere",
    "-e": "everywhere",
    "--json": "json_out",
    "--no-pager": "no_pager",
    "-P": "no_pager",
}
_VALUES = {
    "--project": "project",
    "--days": "days",
    "-k": "k",
    "--agent": "agent",
    "--session": "session",
    "--color": "color",
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
        "color": None,
        "no_pager": False,
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
        if key == "color" and value not in ("auto", "always", "never"):
            return None  # the full CLI's usage line says why
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
    from histstore.plumbing import term
    from histstore.plumbing.report import guarded, stderr_line
    from histstore.porcelain.render import say

    def raw(line: str = "") -> None:
        print(line)

    def run() -> None:
        from histstore.store.config import default_store_path
        from histstore.store.store import Store

        term.set_options(color=kw.pop("color"), no_pager=kw.pop("no_pager"))
        root = Path(store_arg).expanduser() if store_arg else default_store_path()
        store = Store.open(root)
        store.notify = lambda message: stderr_line(f"hs: {message}")
        try:
            show(store, say=say, raw=raw, **kw)
        finally:
            store.close()
        sys.stdout.flush()

    # as HsGroup.main does: the terminal's state per command line, the pager
    # (when recall pages) waited for before the exit
    term.start()
    term.set_command("recall")
    try:
        return guarded(run)
    finally:
        term.finish()
