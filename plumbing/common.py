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
from typer._click.exceptions import ClickException, NoArgsIsHelpError, NoSuchOption, UsageError
from typer.core import TyperGroup

from histstore.display import visible
from histstore.errors import HistError
from histstore.plumbing import term
from histstore.plumbing.report import error_lines, internal_line, open_store_at, os_error_line
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
    """Every group of ``hs``: errors mapped to one line, terminal options on
    each of its commands (``TERM_OPTIONS``)."""

    #: give each command of the group ``--color`` and ``--no-pager``/``-P``
    #: (plumbing prints JSON only: none)
    TERM_OPTIONS = True

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        _refuse_blank_values(self)  # the group's own options: hs -C '', hs mcp --drafts ''
        for cmd in self.commands.values():
            if not isinstance(cmd, TyperGroup):
                _refuse_blank_values(cmd)
                if self.TERM_OPTIONS:
                    _add_term_options(cmd)

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Run ``hs``: a usage error (an unknown command or option, a missing
        argument, a bad value) is one line on stderr, exit 2; Ctrl-C at any
        point exits 130; the pager is waited for before the exit."""
        term.start()
        if not standalone_mode:
            try:
                return super().main(args, prog_name, complete_var, False, **extra)
            finally:
                term.finish()
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
            code = rv if isinstance(rv, int) else 0
        except NoArgsIsHelpError as e:  # `hs`, `hs memory`: the help, as --help
            term.finish()
            typer.echo(e.ctx.get_help())
            code = 0
        except UsageError as e:
            term.finish()
            stderr_line(usage_line(e))
            code = e.exit_code
        except ClickException as e:
            term.finish()
            stderr_line(f"hs: error: {_sentence(e.format_message())}")
            code = e.exit_code
        except (KeyboardInterrupt, typer.Abort):
            term.finish()
            stderr_line("hs: interrupted")
            code = 130
        finally:
            term.finish()
        sys.exit(code)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """The command named (recorded for the pager), or a one-line usage
        error with what the name was close to."""
        unknown = args and self.get_command(ctx, args[0]) is None
        if unknown and not args[0].startswith("-") and not ctx.resilient_parsing:
            import difflib

            close = difflib.get_close_matches(args[0], list(self.commands), n=3)
            where = f"{_path(ctx)}: " if ctx.parent is not None else ""
            raise Usage(
                f"{where}no such command {args[0]!r}",
                ctx,
                hint=f"did you mean {_either(close)}?"
                if close
                else f"`{_path(ctx)} --help` lists the commands",
            )
        name, cmd, rest = self._click_resolve_command(ctx, args)
        if name is not None:
            path = [*ctx.command_path.split()[1:], name]
            term.set_command(" ".join(path))
        return name, cmd, rest

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except HistError as e:
            report_error(e)
            ctx.exit(e.exit_code)
        except (KeyboardInterrupt, typer.Abort) as e:
            # Ctrl-C (at a prompt too: typer's Abort, when the question's line
            # is left open): nothing more is done
            term.finish()
            if isinstance(e, typer.Abort):
                typer.echo("", err=True)
            stderr_line("hs: interrupted")
            ctx.exit(130)
        except BrokenPipeError:
            # the reader went away (hs log | head, a pager quit): not an error
            term.drop_stdout()
            ctx.exit(0)
        except OSError as e:
            stderr_line(os_error_line(e))
            ctx.exit(1)
        except ClickException:
            raise  # a usage error: main() makes it one line
        except Exception as e:  # the last resort: never a traceback to a user
            if os.environ.get("HS_DEBUG") or _is_cli_signal(e):
                raise
            stderr_line(internal_line(e))
            ctx.exit(1)


class PlumbingGroup(HsGroup):
    """``hs plumbing``: JSON lines only, so no colour or pager options."""

    TERM_OPTIONS = False


class Usage(UsageError):
    """A usage error with a hint of our own (``did you mean 'log'?``)."""

    def __init__(self, message: str, ctx: Any, *, hint: str) -> None:
        super().__init__(message, ctx)
        self.hint = hint


def _path(ctx: Any) -> str:
    """The command as typed, ``hs memory log`` (whatever the program's name)."""
    return " ".join(["hs", *ctx.command_path.split()[1:]])


def _either(names: list[str] | tuple[str, ...]) -> str:
    quoted = [f"'{n}'" if not n.startswith("-") else n for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _sentence(text: str) -> str:
    """click's message as part of our line: no capital, no full stop."""
    text = " ".join(text.split())
    if text[:1].isupper() and not text[1:2].isupper():
        text = text[0].lower() + text[1:]
    return text.rstrip(".")


def usage_line(e: UsageError) -> str:
    """``hs: error: <what>; hint: <what to do>`` for a usage error: the
    command it was given to, and what the name is close to when it is close
    to something."""
    # click leaves out the context of some errors (an option missing its value)
    where = _path(e.ctx) if e.ctx is not None else " ".join(["hs", *term.command().split()])
    help_hint = f"see `{where} --help`"
    if isinstance(e, Usage):
        return f"hs: error: {e.message}; hint: {e.hint}"
    if isinstance(e, NoSuchOption):
        message, hint = _sentence(e.message), help_hint
        if e.possibilities:
            hint = f"did you mean {e.possibilities[0]}?"  # the closest
    else:
        message, hint = _sentence(e.format_message()), help_hint
    prefix = f"{where}: " if where != "hs" else ""
    return f"hs: error: {prefix}{message}; hint: {hint}"


def _add_term_options(cmd: Any) -> None:
    """``--color`` and ``--no-pager``/``-P`` after the command too
    (``hs log --color never``), as before it (``hs -P log``)."""
    from typer._types import TyperChoice
    from typer.core import TyperOption

    names = {n for p in cmd.params for n in getattr(p, "opts", [])}
    if "--color" not in names:
        cmd.params.append(
            TyperOption(
                param_decls=["--color"],
                type=TyperChoice(term.COLOR_CHOICES),
                default=None,
                expose_value=False,
                callback=lambda ctx, param, value: term.set_options(color=value),
                help="Colour: auto (on a terminal, unless NO_COLOR is set), always or never.",
                show_default=False,
            )
        )
    if "--no-pager" not in names and "-P" not in names:
        cmd.params.append(
            TyperOption(
                param_decls=["--no-pager", "-P"],
                is_flag=True,
                default=False,
                expose_value=False,
                callback=lambda ctx, param, value: term.set_options(no_pager=value),
                help="Print straight to the terminal, not through $HS_PAGER, $PAGER or less.",
            )
        )


#: (command, option) whose empty value has a documented meaning: update-ref's
#: --old ("-", "none" or empty: absent; its NEW, an argument, is not checked)
BLANK_MEANS = frozenset({("update-ref", "old")})


def _refuse_blank_values(cmd: Any) -> None:
    """An option given an empty or blank value (``--since ''``,
    ``--memory-dir "$DIR"`` with DIR unset), or a path argument given one, is
    a usage error (exit 2) before the command runs: typer reads ``''`` as
    the current directory, and a command would take it for "every session"
    or "the newest". An option whose default is ``''`` takes it as left out.
    The other arguments (an id, a query, a target) are the library's to
    refuse, each with its own hint."""
    make_parser = cmd.make_parser

    def checked_parser(ctx: Any) -> Any:
        parser = make_parser(ctx)
        parse = parser.parse_args

        def parse_args(args: list[str]) -> Any:
            asks_help = any(a in ctx.help_option_names for a in args)
            opts, rest, order = parse(args)
            if not ctx.resilient_parsing and not asks_help:  # --help wins, as before
                _check_blank(cmd, ctx, opts)
            return opts, rest, order

        parser.parse_args = parse_args
        return parser

    cmd.make_parser = checked_parser


def _check_blank(cmd: Any, ctx: Any, opts: dict[str, Any]) -> None:
    from typer.core import TyperOption
    from typer.models import TyperPath

    for p in cmd.params:
        if p.name not in opts or (cmd.name, p.name) in BLANK_MEANS:
            continue
        option = isinstance(p, TyperOption)
        if (option and p.is_flag) or (not option and not isinstance(p.type, TyperPath)):
            continue
        if p.default == "":
            continue
        raw = opts[p.name]
        values = raw if isinstance(raw, list | tuple) else [raw]
        if not any(isinstance(v, str) and not v.strip() for v in values):
            continue
        if option:  # every spelling, as click names an option: -o/--output
            label = "/".join(sorted(p.opts + p.secondary_opts, key=len))
            hint = "give it a value, or leave the option out"
        else:
            label, hint = p.human_readable_name, "name a file or folder (. for this one)"
        where = f"{_path(ctx)}: " if ctx.parent is not None else ""
        raise Usage(f"{where}{label} is empty", ctx, hint=hint)


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
    store = open_store_at(
        store_path(ctx), break_lock=bool((ctx.find_root().obj or {}).get("break_lock"))
    )
    ctx.call_on_close(store.close)
    return store


def command_line(ctx: typer.Context, *args: str) -> str:
    """The command as a person would type it, for the refs log (the store redacts it)."""
    return " ".join(["hs", *ctx.command_path.split()[1:], *args])


def emit(obj: Any) -> None:
    """One JSON object per line: the plumbing output format."""
    typer.echo(json.dumps(obj, ensure_ascii=False, sort_keys=True))
