"""The ``hs`` executable: the commands asked most often run without loading
typer — the hook command (histstore.porcelain.hook) and ``hs recall``,
``hs log``, ``hs show`` and ``hs status`` (histstore.porcelain.quick), when
every argument is one they know; every other command is the typer app
(histstore.porcelain.cli)."""

from __future__ import annotations

import gc
import importlib
import sys
import types
from typing import Any


def dataclasses_without_inspect() -> None:
    """Import dataclasses with a stand-in for inspect, which dataclasses of
    Python 3.11 uses only for a class without a docstring (none in hs) and
    which costs, with the ast, dis and tokenize it imports, ~10 ms of a quick
    command's start-up. The stand-in imports the real module on its first
    attribute lookup and hands that over; no other module ever sees it.
    (From 3.12 dataclasses calls inspect for every class: nothing to gain.)"""
    if sys.version_info >= (3, 12) or "dataclasses" in sys.modules or "inspect" in sys.modules:
        return
    stand_in = types.ModuleType("inspect")
    users: list[types.ModuleType] = []

    def real(name: str) -> Any:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]  # asked while dataclasses is being imported
        module = importlib.import_module("inspect")
        for user in users:
            user.inspect = module  # type: ignore[attr-defined]
        return getattr(module, name)

    stand_in.__getattr__ = real  # type: ignore[method-assign]
    sys.modules["inspect"] = stand_in
    try:
        import dataclasses

        users.append(dataclasses)
    finally:
        if sys.modules.get("inspect") is stand_in:
            del sys.modules["inspect"]


#: the collector's first threshold while a quick command runs (Python's is 700)
QUICK_GC_THRESHOLD = 50_000


def quick(argv: list[str]) -> int | None:
    """The quick path (histstore.porcelain.quick) with the cyclic garbage
    collector set for a short process: its exit code, or None with the
    collector as it was (the full CLI runs the command).

    While it starts, a quick command makes ~11,000 objects the collector
    tracks and that all stay (modules, functions, classes), and Python
    collects every 700 new ones: ~17 collections, ~1-2 ms, that find
    nothing. Every 50,000 instead, a command on a small store ends before the
    first; one that reads a big store still collects, less often.

    Once the command is done, what the process holds is frozen
    (``gc.freeze``): Python's exit collects the modules, and all they hold,
    through the collector (~6 ms here), and leaves frozen objects alone. Only
    objects in reference cycles are affected (left to the end of the process,
    not finalized), which Python never promised to finalize at exit anyway:
    by then a quick command has closed what it opened (the store, the
    summary, the index) and waited for its pager, and stdout and stderr are
    flushed at exit all the same. tests/test_quick.py checks both settings,
    and that any other command gets the collector as it was."""
    threshold = gc.get_threshold()
    gc.set_threshold(QUICK_GC_THRESHOLD, *threshold[1:])
    from histstore.porcelain.quick import dispatch

    code = dispatch(argv)
    if code is None:
        gc.set_threshold(*threshold)
    else:
        gc.freeze()
    return code


def main() -> None:
    if sys.argv[1:] == ["--version"]:  # asked by scripts and tools: no CLI to build
        from histstore import __version__

        print(f"hs (histstore) {__version__}")
        return
    dataclasses_without_inspect()
    from histstore.porcelain.hook import main_fast

    code = main_fast(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    code = quick(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from histstore.porcelain.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
