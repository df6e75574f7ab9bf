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
from collections.abc import Callable
from typing import Any

from histstore.errors import BadInput
from histstore.porcelain.quick import Spec, run
from histstore.porcelain.quick import parse as quick_parse

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
    where_from = None if everywhere else project if project is not None else _here()
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

RECALL = Spec(
    flags={"--everywhere": "everywhere", "-e": "everywhere", "--json": "json_out"},
    values={
        "--project": "project",
        "--days": "days",
        "-k": "k",
        "--agent": "agent",
        "--session": "session",
    },
    numbers=frozenset({"days", "k"}),
    defaults={"k": 5},
    words="words",
)


def parse(argv: list[str]) -> tuple[str | None, dict[str, Any]] | None:
    """``[--store S | -C S] recall OPTIONS... WORDS...`` as (store, keyword
    arguments of :func:`show`), or None for anything else."""
    return quick_parse(argv, "recall", RECALL)


def quick(argv: list[str]) -> int | None:
    """Run ``hs recall`` without typer; None when the full CLI must parse ``argv``."""
    from histstore.porcelain.render import raw_line, say

    def body(store: Any, **kw: Any) -> None:
        show(store, say=say, raw=raw_line, **kw)

    return run(argv, "recall", RECALL, body)


def _here() -> str:
    """The current directory, the project a recall is about by default."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise BadInput(
            "the current directory no longer exists: no project to look in",
            hint="cd to a project, or give --project DIR or --everywhere",
        ) from None
