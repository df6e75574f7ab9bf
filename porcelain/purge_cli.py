"""`hs purge` and `hs redact`: removing content for good (docs/cli.md).

Kept apart from porcelain/cli.py (which calls :func:`register`), as the sync
and maintenance commands are. The library decides everything
(histstore.ops.purge, histstore.ops.rewrite); this module parses, shows the
preview, asks, and prints. A preview never shows stored text: counts and ids.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from histstore.errors import BadInput
from histstore.plumbing.common import command_line, open_store
from histstore.porcelain.render import field, plural, say

JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object.")]

#: ids a preview lists before it says how many more
SHOWN = 20

_KINDS = {
    "turn": ("turn", "turns"),
    "blob": ("blob", "blobs"),
    "session": ("session revision", "session revisions"),
    "memtree": ("memory tree", "memory trees"),
    "memrev": ("memory revision", "memory revisions"),
    "marker": ("marker", "markers"),
}


def _by_kind(kinds: dict[str, int]) -> str:
    parts = [plural(n, *_KINDS.get(k, (k, k + "s"))) for k, n in sorted(kinds.items())]
    return ", ".join(parts) or "nothing"


def _ids(label: str, ids: list[str], err: bool) -> None:
    if not ids:
        return
    shown = ", ".join(field(i) for i in ids[:SHOWN])
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    say(f"  {label}: {shown}{more}", err=err)


def _what(plan: Any) -> str:
    if plan.what == "text":
        return "every place the text given occurs"
    if plan.what == "memory":
        return f"memory note {plan.target}"
    return f"{plan.what} {plan.target}"


def _preview(plan: Any, *, err: bool) -> None:
    """What a purge would remove, for the person deciding (never stored text)."""
    say(f"purge {field(_what(plan))}: this cannot be undone", err=err)
    say(
        "  what it removes is gone from this store for good, and from every store "
        "it syncs with (hs sync carries the purge)",
        err=err,
    )
    say(f"  it removes {plural(len(plan.drop), 'object')}: {_by_kind(plan.kinds)}", err=err)
    if plan.replaced:
        say(
            f"  and writes {plural(len(plan.replaced), 'object')} in their place "
            "(the text replaced by [REDACTED:purged])",
            err=err,
        )
    if plan.refs:
        say(f"  refs it moves or removes: {plan.refs}", err=err)
    _ids("sessions", plan.sessions, err)
    _ids("turns", plan.turns, err)
    _ids("memory notes", plan.notes, err)
    if plan.log or plan.torn:
        say(f"  refs-log entries rewritten: {len(plan.log) + len(plan.torn)}", err=err)
    if plan.files:
        say(
            f"  source files forgotten (the next import reads them again): {len(plan.files)}",
            err=err,
        )
    if plan.capture:
        say(f"  capture records rewritten or removed: {len(plan.capture)}", err=err)


def purge(
    ctx: typer.Context,
    target: Annotated[
        str | None,
        typer.Argument(help="A session id, a turn id (or SESSION~TURN), or memory@… target."),
    ] = None,
    text: Annotated[
        str | None,
        typer.Option("--text", help="Purge every place this exact text occurs instead."),
    ] = None,
    confirm: Annotated[
        str | None,
        typer.Option(help="The target (or the text) again: required to purge without a terminal."),
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the purges this store knows.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Remove a session, a turn, a memory note or a text for good (irreversible).

    Example: hs purge 5f0c1e7a --confirm 5f0c1e7a-3b2d-4c8e-9a61-0d2f4b6c8e10
    """
    from histstore.ops import purge as purging
    from histstore.ops import rewrite

    if list_ and (target is not None or text is not None or confirm is not None):
        raise BadInput(
            "--list takes no target, --text or --confirm: it lists every purge",
            hint="hs purge --list",
        )
    store = open_store(ctx)
    if list_:
        _print_list(purging.entries(store), json_out)
        return
    if (target is None) == (text is None):
        raise BadInput(
            "name one thing to purge: a TARGET or --text TEXT",
            hint="hs purge TARGET --confirm TARGET, or hs purge --text TEXT --confirm TEXT",
        )
    if text is not None:
        make = rewrite.text_planner(text)
        command = command_line(ctx, "--text", "[REDACTED:purged]")

        def check(plan: Any) -> None:
            purging.check_text_confirmation(text, answer)

        ask = "type the text again to purge it for good"
    else:
        assert target is not None
        t = purging.resolve(store, target, confirm)
        make = purging.target_planner(t)
        command = command_line(ctx, t.qualified)

        def check(plan: Any) -> None:
            purging.check_target_confirmation(t, answer)

        ask = f"type the {t.kind} id to purge it for good"
    answer = confirm
    if confirm is None:
        plan = purging.preview(store, make)
        if plan.empty:
            _nothing(plan, json_out)
            return
        if not _on_terminal():
            if json_out:
                typer.echo(json.dumps({"dry_run": True, **plan.as_json()}))
            else:
                _preview(plan, err=False)
                say(
                    "nothing was removed: to purge, run again with --confirm repeating "
                    + ("the text" if text is not None else "the target")
                )
            return
        _preview(plan, err=True)
        answer = typer.prompt(ask, err=True, default="", hide_input=text is not None).strip()
    rep = purging.purge(store, make, command=command, confirm=check)
    if json_out:
        typer.echo(json.dumps({"dry_run": False, **rep.as_json()}))
        return
    if rep.plan.empty:
        _nothing(rep.plan, json_out)
        return
    _done(rep, "purged " + _what(rep.plan))


def _on_terminal() -> bool:
    return sys.stdin.isatty()


def _nothing(plan: Any, json_out: bool) -> None:
    if json_out:
        typer.echo(json.dumps({"dry_run": True, **plan.as_json()}))
    elif plan.what == "text":
        say("the text occurs nowhere in the store: nothing to purge")
    else:
        say(f"nothing of {field(_what(plan))} is left in the store: nothing to purge")


def _done(rep: Any, head: str) -> None:
    plan = rep.plan
    say(f"{field(head)}: {plural(len(plan.drop), 'object')} removed ({_by_kind(plan.kinds)})")
    if plan.replaced:
        say(f"  {plural(len(plan.replaced), 'object')} written in their place")
    if rep.entry is not None:
        op = f", operation {rep.operation.op}" if rep.operation is not None else ""
        say(f"  purge {rep.entry.id}{op}; {plural(rep.packs_rewritten, 'pack')} rewritten")
    if rep.index:
        say(f"  recall index rebuilt: {rep.index}, every older generation removed")
    for line in rep.memory_dirs:
        say(f"  {field(line)}")
    say("  hs sync carries the purge to the stores this one syncs with; hs undo cannot undo it")


def _print_list(items: list[Any], json_out: bool) -> None:
    if json_out:
        for e in items:
            typer.echo(json.dumps({**e.as_json(), "objects": len(e.objects)}))
        return
    if not items:
        say("nothing was ever purged")
        return
    for e in items:
        what = e.what if e.target is None else f"{e.what} {e.target}"
        say(f"{e.id}  {e.time}  {field(what)}  ({plural(len(e.objects), 'object')})")


def redact(
    ctx: typer.Context,
    apply: Annotated[
        bool,
        typer.Option("--apply", help="Write the redacted revisions and purge the old bytes."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="Only say what would change (the default).")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Redact everything stored again with the current rules and [redact] patterns.

    Example: hs redact --apply
    """
    from histstore.ops import purge as purging
    from histstore.ops import rewrite

    if apply and dry_run:
        raise BadInput("--apply and --dry-run contradict each other", hint="hs redact --apply")
    store = open_store(ctx)
    if not apply:
        plan = purging.preview(store, rewrite.redact_planner())
        if json_out:
            typer.echo(json.dumps({"dry_run": True, **plan.as_json()}))
            return
        if plan.empty:
            say("everything stored is redacted by the current rules: nothing would change")
            return
        _redact_summary(plan, "would redact")
        say("nothing was changed: `hs redact --apply` writes the redacted revisions and purges")
        say("  the old bytes (irreversible)")
        return
    rep = rewrite.redact_apply(store, command=command_line(ctx, "--apply"))
    if json_out:
        typer.echo(json.dumps({"dry_run": False, **rep.as_json()}))
        return
    if rep.plan.empty:
        say("everything stored is redacted by the current rules: nothing changed")
        return
    _redact_summary(rep.plan, "redacted")
    _done(rep, "purged the old bytes")


def _redact_summary(plan: Any, verb: str) -> None:
    say(f"{verb} {plural(len(plan.drop), 'object')}: {_by_kind(plan.kinds)}")
    if plan.findings:
        found = ", ".join(f"{k} {n}" for k, n in sorted(plan.findings.items()))
        say(f"  secrets by kind: {found}")
    if plan.log or plan.torn:
        say(f"  refs-log entries: {len(plan.log) + len(plan.torn)}")
    if plan.files:
        say(f"  source files forgotten (the next import reads them again): {len(plan.files)}")


def register(app: typer.Typer) -> None:
    app.command("purge")(purge)
    app.command("redact")(redact)
