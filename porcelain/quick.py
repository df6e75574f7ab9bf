"""The quick path: the commands asked most often, run without loading typer.

Importing typer and building the app is most of the start-up of an ``hs``
command (~60 ms of ~170 here), and ``hs log``, ``hs show``, ``hs status`` and
``hs recall`` are asked often, by people and by scripts. When every argument
of such a command line is one its :class:`Spec` knows, :func:`run` parses it,
opens the store as the full CLI does and runs the command's typer-free body
(histstore.porcelain.reads_cmd, histstore.porcelain.recall_cmd); anything
else — ``--help``, an option the spec does not know, a value that is not a
number, ``--`` — is None, and the full CLI parses it as always. Both paths
print the same lines and exit with the same codes (tests/test_quick.py runs
every case through both).
"""

# No ``from __future__ import annotations`` in this module: the field types of
# Spec are evaluated objects, not strings, which typing.NamedTuple would
# compile one by one (~1 ms of every quick command's start-up).

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from histstore.plumbing.term import COLOR_CHOICES

#: what every command takes (histstore.plumbing.common adds them to each)
TERM_FLAGS = {"--no-pager": "no_pager", "-P": "no_pager"}
TERM_VALUES = {"--color": "color"}


class Spec(NamedTuple):
    """A command's arguments: ``flags`` (option -> keyword, set to True),
    ``values`` (option -> keyword, the next argument or ``--opt=value``),
    ``numbers`` (keywords whose value is an integer), ``defaults`` (a
    keyword's value when not given, where it is not False for a flag or None
    for a value), and what it takes besides options: ``positional``
    names the keyword of exactly one argument, ``words`` that of one or more
    (a list); neither, no argument. ``check(**kw)`` refuses a bad value
    before the store is opened, as the typer command does."""

    flags: dict[str, str]
    values: dict[str, str]
    numbers: frozenset[str] = frozenset()
    defaults: dict[str, Any] = {}  # noqa: RUF012 (a NamedTuple field, never changed)
    positional: str | None = None
    words: str | None = None
    #: what the command refuses before it opens the store (BadInput)
    check: Callable[..., None] | None = None


def parse(argv: list[str], command: str, spec: Spec) -> tuple[str | None, dict[str, Any]] | None:
    """``[--store S | -C S] COMMAND ARGS...`` as (store, keyword arguments),
    or None for anything the full CLI must parse."""
    args = list(argv)
    store: str | None = None
    while args and args[0] != command:
        head = args.pop(0)
        if head in ("--store", "-C") and args:
            store = args.pop(0)
        elif head.startswith("--store="):
            store = head.partition("=")[2]
        else:
            return None
        if not store:
            return None  # typer makes "" the current directory: the full CLI says so
    if not args:
        return None
    args.pop(0)
    flags = {**spec.flags, **TERM_FLAGS}
    values = {**spec.values, **TERM_VALUES}
    kw: dict[str, Any] = {
        **dict.fromkeys(values.values()),
        **dict.fromkeys(flags.values(), False),
        **spec.defaults,
    }
    rest: list[str] = []
    while args:
        a = args.pop(0)
        if a in flags:
            kw[flags[a]] = True
            continue
        name, eq, value = a.partition("=")
        if name in values and a.startswith("--"):
            if not eq:
                if not args:
                    return None
                value = args.pop(0)
        elif a in values:
            if not args:
                return None
            name, value = a, args.pop(0)
        elif a.startswith("-"):
            return None  # --help, an option this path does not know, "--", a negative number
        else:
            rest.append(a)
            continue
        key = values[name]
        if not value.strip():
            return None  # the full CLI refuses an empty value (plumbing/common.py)
        if key == "color" and value not in COLOR_CHOICES:
            return None  # the full CLI's usage line says why
        if key in spec.numbers:
            try:
                kw[key] = int(value)
            except ValueError:
                return None  # the full CLI says why
        else:
            kw[key] = value
    if spec.words is not None:
        if not rest:
            return None
        kw[spec.words] = rest
    elif spec.positional is not None:
        if len(rest) != 1:
            return None
        kw[spec.positional] = rest[0]
    elif rest:
        return None
    return store, kw


def run(argv: list[str], command: str, spec: Spec, body: Callable[..., None]) -> int | None:
    """Run ``hs COMMAND`` without typer: ``body(store, **kw)`` against the
    store opened as the full CLI opens it; None when the full CLI must parse
    ``argv``."""
    parsed = parse(argv, command, spec)
    if parsed is None:
        return None
    store_arg, kw = parsed
    from histstore.plumbing import term
    from histstore.plumbing.report import guarded, open_store_at

    def go() -> None:
        from histstore.store.config import default_store_path

        term.set_options(color=kw.pop("color"), no_pager=kw.pop("no_pager"))
        if spec.check is not None:
            spec.check(**kw)
        root = Path(store_arg).expanduser() if store_arg else default_store_path()
        store = open_store_at(root, break_lock=False)
        try:
            body(store, **kw)
        finally:
            store.close()
        sys.stdout.flush()

    # as HsGroup.main does: the terminal's state per command line, the pager
    # (when the command pages) waited for before the exit
    term.start()
    term.set_command(command)
    try:
        return guarded(go)
    finally:
        term.finish()


#: the commands with a quick path
COMMANDS = ("recall", "log", "show", "status")


def dispatch(argv: list[str]) -> int | None:
    """The quick path of the command ``argv`` names (first, or after the
    store: ``hs --store S log``), or None: the full CLI runs it."""
    first = argv[0] if argv else ""
    i = 2 if first in ("--store", "-C") else 1 if first.startswith("--store=") else 0
    command = argv[i] if i < len(argv) else None
    if command not in COMMANDS:
        return None
    if command == "recall":
        from histstore.porcelain.recall_cmd import quick

        return quick(argv)
    from histstore.porcelain import reads_cmd

    bodies: dict[str, tuple[Spec, Callable[..., None]]] = {
        "log": (reads_cmd.LOG, reads_cmd.log),
        "show": (reads_cmd.SHOW, reads_cmd.show),
        "status": (reads_cmd.STATUS, reads_cmd.status),
    }
    spec, body = bodies[command]
    return run(argv, command, spec, body)
