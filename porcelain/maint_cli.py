"""`hs gc` and `hs upgrade`: keeping a store in shape (docs/cli.md).

Kept apart from porcelain/cli.py (which calls :func:`register`), as the sync
commands are."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from histstore.errors import BadInput
from histstore.plumbing.common import open_store
from histstore.porcelain.render import plural, say, size_text


class _Progress:
    """Phases on one stderr line, on a terminal only."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.shown = False

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        of = f"/{total}" if total else ""
        sys.stderr.write(f"\r{phase} {done}{of} objects\x1b[K")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def gc(
    ctx: typer.Context,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", "-n", help="Say what would be freed; change nothing.")
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Rewrite every pack into one (slower, smallest).")
    ] = False,
    auto: Annotated[
        bool,
        typer.Option("--auto", help="Only when loose objects pass [gc] auto_loose; no pruning."),
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help='One JSON object: ran, dry_run, objects and bytes before and after, ... ({"ran": false} when --auto did not run).',
        ),
    ] = False,
) -> None:
    """Repack loose objects and small packs; remove what nothing reaches.

    Example: hs gc --dry-run
    """
    from histstore.ops import gc as gcmod

    if auto and (dry_run or full):
        raise BadInput("--auto takes neither --dry-run nor --full", hint="hs gc --auto")
    store = open_store(ctx)
    progress = _Progress(sys.stderr.isatty() and not json_out)
    try:
        if auto:
            rep = gcmod.auto(store)
            if rep is None:
                if json_out:
                    typer.echo(json.dumps({"ran": False}))
                return
        else:
            rep = gcmod.gc(store, dry_run=dry_run, full=full, progress=progress)
    finally:
        progress.close()
    if json_out:
        typer.echo(json.dumps({"ran": True, **rep.as_json()}))
        return
    _print_gc(rep.as_json())


def _print_gc(r: dict[str, Any]) -> None:
    would = r["dry_run"]
    say(f"{'would free' if would else 'freed'} {size_text(r['bytes_freed'])}")
    say(
        f"  objects: {size_text(r['bytes_before'])} -> {size_text(r['bytes_after'])}"
        + (" (estimated)" if would else "")
    )
    say(
        f"  {plural(r['pruned'], 'object')} nothing reaches "
        f"{'would be' if would else 'were'} removed"
        + (f" ({r['reachable']} reachable)" if r["reachable"] else "")
    )
    say(
        f"  packs: {r['packs_before']} -> {r['packs_after']} "
        f"({r['packs_rewritten']} rewritten, {r['loose_packed']} loose objects packed)"
    )
    if r["index_bytes_freed"]:
        say(f"  recall index: {size_text(r['index_bytes_freed'])} freed")
    if r["refs_packed"]:
        say(f"  refs: {plural(r['refs_packed'], 'loose ref')} packed")


def upgrade(
    ctx: typer.Context,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object: the upgrade's counts and seconds.")
    ] = False,
) -> None:
    """Upgrade a format-1 store to format 2 in place (nothing is lost).

    Example: hs upgrade
    """
    from histstore.ops.upgrade import upgrade as run_upgrade
    from histstore.plumbing.common import store_path

    root = store_path(ctx)
    shown = [False]

    def progress(what: str, n: int) -> None:
        if sys.stderr.isatty() and not json_out:
            sys.stderr.write(f"\rrewriting {n} {what}\x1b[K")
            sys.stderr.flush()
            shown[0] = True

    try:
        rep = run_upgrade(root, progress=progress)
    finally:
        if shown[0]:
            sys.stderr.write("\r\x1b[K")
    if json_out:
        typer.echo(json.dumps(rep.as_json()))
        return
    if rep.already:
        say(f"the store at {root} is format 2 already")
        return
    say(
        f"upgraded to format 2: {plural(rep.turns, 'turn')} in {plural(rep.sessions, 'session')}"
        f" ({plural(rep.revisions, 'revision')}), {plural(rep.markers, 'marker')}, "
        f"{plural(rep.memory_revisions, 'memory revision')}, "
        f"{plural(rep.operations, 'operation')}, in {rep.seconds:.1f} s"
    )
    say("format-1 ids still resolve: hs show and hs undo take them")


def register(app: typer.Typer) -> None:
    app.command("gc")(gc)
    app.command("upgrade")(upgrade)
