"""What every command shares: opening the store, and turning errors into one line.

Errors are mapped in one place (:class:`HsGroup`): a :class:`HistError` becomes
``hs: error: <message>`` (plus ``hint: ...``) on stderr and its exit code; any
other exception becomes a one-line internal error (exit 1), never a traceback
(set ``HS_DEBUG=1`` to see one).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from histstore.display import visible
from histstore.errors import HistError
from histstore.plumbing.report import error_lines, internal_line, os_error_line
from histstore.store.config import default_store_path
from histstore.store.store import Store


def stderr_line(text: str) -> None:
    """One line on stderr, control characters made visible: a message may
    quote stored text or an argument (an id, a path), which must not act on
    the terminal (histstore.display)."""
    typer.echo(visible(text, lines=False), err=True)


def report_error(e: HistError) -> None:
    """One line: what went wrong with which input, and what to do about it.
    An ambiguous id is followed by its candidates, one per line."""
    for line in error_lines(e):
        stderr_line(line)


class HsGroup(TyperGroup):
    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except HistError as e:
            report_error(e)
            ctx.exit(e.exit_code)
        except KeyboardInterrupt:
            typer.echo("hs: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:
            # the reader went away (hs log | head): not an error
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)
        except OSError as e:
            stderr_line(os_error_line(e))
            ctx.exit(1)
        except Exception as e:  # the last resort: never a traceback to a user
            if os.environ.get("HS_DEBUG") or _is_cli_signal(e):
                raise
            stderr_line(internal_line(e))
            ctx.exit(1)


def _is_cli_signal(e: Exception) -> bool:
    """Exit, abort and usage errors that typer's own machinery turns into output
    and an exit code (their classes live in typer's vendored click)."""
    return isinstance(e, (typer.Exit, typer.Abort)) or type(e).__module__.startswith(
        ("typer.", "click.")
    )


def new_app(help_text: str, **options: Any) -> typer.Typer:
    settings: dict[str, Any] = {
        "cls": HsGroup,
        "help": help_text,
        "no_args_is_help": True,
        "add_completion": False,
        "pretty_exceptions_enable": False,
        "pretty_exceptions_show_locals": False,  # agent history holds secrets
        "context_settings": {"help_option_names": ["-h", "--help"]},
    }
    return typer.Typer(**{**settings, **options})


def store_path(ctx: typer.Context) -> Path:
    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    given = obj.get("store")
    return Path(given).expanduser() if given else default_store_path()


def open_store(ctx: typer.Context) -> Store:
    store = Store.open(store_path(ctx))
    store.notify = lambda message: stderr_line(f"hs: {message}")
    store.break_lock = bool((ctx.find_root().obj or {}).get("break_lock"))
    ctx.call_on_close(store.close)
    return store


def command_line(ctx: typer.Context, *args: str) -> str:
    """The command as a person would type it, for the refs log (the store redacts it)."""
    return " ".join(["hs", *ctx.command_path.split()[1:], *args])


def emit(obj: Any) -> None:
    """One JSON object per line: the plumbing output format."""
    typer.echo(json.dumps(obj, ensure_ascii=False, sort_keys=True))
