"""The one-line messages every failure becomes, without the CLI framework.

:class:`histstore.plumbing.common.HsGroup` prints these for every command;
the quick path of ``hs recall`` (histstore.porcelain.recall_cmd), which runs
before typer is imported, prints the same lines through :func:`guarded`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from histstore.display import visible
from histstore.errors import Ambiguous, BadInput, HistError
from histstore.plumbing import term

if TYPE_CHECKING:
    from histstore.store.store import Store


def check_count(n: int | None, option: str = "-n") -> None:
    """A count option (``-n N``) refuses a negative number, in every command
    that takes one (0 is nothing asked for)."""
    if n is not None and n < 0:
        raise BadInput(f"{option} {n}: give a count of 0 or more")


def error_lines(e: HistError) -> list[str]:
    """What went wrong with which input, and what to do about it; an ambiguous
    id is followed by its candidates, one per line."""
    lines = [e.line()]
    if isinstance(e, Ambiguous) and e.candidates:
        lines += [f"  {c}" for c in e.candidates]
    return lines


def os_error_line(e: OSError) -> str:
    where = f" ({e.filename})" if e.filename else ""
    return f"hs: error: {e.strerror or e}{where}"


def internal_line(e: BaseException) -> str:
    return (
        f"hs: internal error: {type(e).__name__}: {e}; "
        "hint: run again with HS_DEBUG=1 for details, and report it"
    )


def stderr_line(text: str) -> None:
    """One line on stderr, control characters made visible (a message may
    quote stored text or an argument: histstore.display)."""
    print(visible(text, lines=False), file=sys.stderr)


def guarded(run: Callable[[], None]) -> int:
    """Run a command the way HsGroup does, returning its exit code: a typed
    error is its lines on stderr and its code; Ctrl-C 130; a closed pipe 0;
    an OSError one line, 1; anything else one internal-error line, 1."""
    try:
        run()
    except HistError as e:
        for line in error_lines(e):
            stderr_line(line)
        return e.exit_code
    except KeyboardInterrupt:
        term.finish()
        stderr_line("hs: interrupted")
        return 130
    except BrokenPipeError:
        term.drop_stdout()  # the reader went away (a pager quit, | head)
        return 0
    except OSError as e:
        stderr_line(os_error_line(e))
        return 1
    except Exception as e:
        if os.environ.get("HS_DEBUG"):
            raise
        stderr_line(internal_line(e))
        return 1
    return 0


def open_store_at(root: Path, *, break_lock: bool) -> Store:
    """The store at ``root`` as every command opens it: its notices as lines
    on stderr, ``--break-lock`` as given, and a purge a crash interrupted
    completed first (the next command completes it)."""
    from histstore.store.purged import PENDING
    from histstore.store.store import Store

    store = Store.open(root)
    store.notify = lambda message: stderr_line(f"hs: {message}")
    store.break_lock = break_lock
    if (store.root / PENDING).exists():
        from histstore.ops.purge_run import complete_pending

        try:
            complete_pending(store)
        except BaseException:
            store.close()
            raise
    return store
