"""`hs remote`, `hs push`, `hs pull`, `hs sync`: the commands of docs/sync.md.

Kept apart from porcelain/cli.py (which calls :func:`register`) so the sync
commands change without touching the others."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from histstore.plumbing.common import command_line, new_app, open_store
from histstore.porcelain import complete
from histstore.porcelain.render import plural, say, size_text

if TYPE_CHECKING:
    from histstore.store.oplog import RefChange
    from histstore.store.store import Store
    from histstore.sync.engine import SyncReport

ReportJsonOpt = Annotated[
    bool,
    typer.Option(
        "--json", help="One JSON object: the report (sent, received, refs moved, operations)."
    ),
]
DryRunOpt = Annotated[
    bool,
    typer.Option(
        "--dry-run", "-n", help="Say what would move (objects, bytes, refs); write nothing."
    ),
]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="The remote's name.")]
RemoteArg = Annotated[
    str,
    typer.Argument(metavar="NAME", help="The remote's name.", autocompletion=complete.remotes),
]
SHOWN = 20  # ref changes listed per side before "and N more"
BAR_AFTER = 50  # refs to walk before a progress bar is worth showing


class _Bar:
    """A progress bar on stderr, made when a transfer turns out long enough."""

    def __init__(self, label: str, enabled: bool) -> None:
        self.label = label
        self.enabled = enabled
        self.bar: Any = None
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < BAR_AFTER:
            return
        if self.bar is None:
            self.bar = typer.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _short(value: str | None) -> str:
    return value[:12] if value else "(none)"


def _on_terminal() -> bool:
    """Whether a person is there to answer (stdin and stderr are a terminal)."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def _print_changes(side: str, changes: list[RefChange], verb: str) -> None:
    if not changes:
        return
    say(f"  {side}: {plural(len(changes), 'ref')} {verb}")
    for c in changes[:SHOWN]:
        say(f"    {c.ref}: {_short(c.old)} -> {_short(c.new)}")
    if len(changes) > SHOWN:
        say(f"    and {len(changes) - SHOWN} more")


def _print_report(rep: SyncReport) -> None:
    where = f"{rep.remote} ({rep.path})"
    if rep.dry_run:
        say(f"dry run: {rep.direction} {where}; nothing written")
        if rep.nothing:
            say("  up to date: nothing would move")
            return
        if rep.initialized:
            say(f"  would create a store at {rep.path}")
        say(
            f"  would send {plural(rep.sent.objects, 'object')} ({size_text(rep.sent.bytes)}), "
            f"receive {plural(rep.received.objects, 'object')} ({size_text(rep.received.bytes)})"
            + (f", make {plural(rep.made, 'merge object')}" if rep.made else "")
        )
        if rep.purges_sent or rep.purges_received:
            say(
                f"  would carry purges: {rep.purges_sent} to the remote, "
                f"{rep.purges_received} from it (each completed where it arrives)"
            )
        _print_changes("remote", rep.remote_changes, "would move")
        _print_changes("local", rep.local_changes, "would move")
        if rep.merged:
            say("  would merge: " + ", ".join(rep.merged[:SHOWN]))
        for c in rep.memory_conflicts:
            say("  would report " + c.message())
        return
    if rep.nothing:
        say(f"{where} is up to date: nothing moved, no operation recorded")
        return
    verb = {"push": "pushed to", "pull": "pulled from", "sync": "synced with"}[rep.direction]
    if rep.initialized:
        say(f"created a store at {rep.path}")
    say(
        f"{verb} {where}: sent {plural(rep.sent.objects, 'object')} ({size_text(rep.sent.bytes)}), "
        f"received {plural(rep.received.objects, 'object')} ({size_text(rep.received.bytes)})"
    )
    if rep.purges_sent or rep.purges_received:
        say(
            f"  purges: {rep.purges_sent} carried to the remote, {rep.purges_received} "
            "from it, each completed where it arrived"
        )
    if rep.remote_operation:
        say(
            f"  remote: {plural(len(rep.remote_changes), 'ref')} moved "
            f"(operation {rep.remote_operation.op})"
        )
    if rep.local_operation:
        parts = [f"{plural(len(rep.local_changes), 'ref')} moved"] if rep.local_changes else []
        if rep.tracking_changes:
            parts.append(f"{plural(len(rep.tracking_changes), 'remote-tracking ref')} moved")
        say(f"  local: {', '.join(parts)} (operation {rep.local_operation.op})")
    if rep.merged:
        more = f" and {len(rep.merged) - SHOWN} more" if len(rep.merged) > SHOWN else ""
        say("  merged: " + ", ".join(rep.merged[:SHOWN]) + more)
    for c in rep.memory_conflicts:
        say(c.message())


def _run(
    ctx: typer.Context,
    name: str,
    *,
    push: bool,
    pull: bool,
    dry_run: bool,
    json_out: bool,
    init: bool = False,
) -> None:
    from histstore.sync.engine import preview_fresh, sync
    from histstore.sync.remotes import check_empty_folder, connect, get_remote

    store = open_store(ctx)
    remote = get_remote(store, name)
    on_terminal = _on_terminal()
    if push and not init and not (remote.path / "config.toml").exists():
        if not remote.path.is_file():
            check_empty_folder(remote)  # never offer a store where one cannot be made
        if dry_run and not pull:
            init = True  # a push's dry run says what an --init push would do (sync has none)
        elif on_terminal and not json_out and not remote.path.is_file():
            init = typer.confirm(
                f"no store at {remote.path} (remote {name}): create one there?",
                default=False,
                err=True,
            )
    if dry_run and push and init and not (remote.path / "config.toml").exists():
        rep = preview_fresh(store, remote)
    else:
        _, other, created = connect(store, name, init=init and not dry_run)
        ctx.call_on_close(other.close)
        label = {(True, False): "pushing", (False, True): "pulling"}.get((push, pull), "syncing")
        bar = _Bar(label, sys.stderr.isatty() and not json_out)
        try:
            rep = sync(
                store,
                other,
                name,
                push=push,
                pull=pull,
                dry_run=dry_run,
                command=command_line(ctx, name),
                progress=bar,
            )
        finally:
            bar.close()
        rep.initialized = created
    if json_out:
        typer.echo(json.dumps(rep.as_json(), ensure_ascii=False))
    else:
        _print_report(rep)
        for line in rep.memory_dirs:
            say(f"memory: {line}")
    if rep.index_error:
        say(
            f"hs: warning: the recall index did not follow the pull ({rep.index_error}); "
            "hint: the sync stands; `hs plumbing index-build` rebuilds the index",
            err=True,
        )


def push(
    ctx: typer.Context,
    name: RemoteArg,
    init: Annotated[
        bool, typer.Option("--init", help="Create a store at the remote's path if none is there.")
    ] = False,
    dry_run: DryRunOpt = False,
    json_out: ReportJsonOpt = False,
) -> None:
    """Send what the remote lacks and move its refs (merging where both changed).

    Example: hs push usb --init
    """
    _run(ctx, name, push=True, pull=False, dry_run=dry_run, json_out=json_out, init=init)


def pull(
    ctx: typer.Context,
    name: RemoteArg,
    dry_run: DryRunOpt = False,
    json_out: ReportJsonOpt = False,
) -> None:
    """Fetch what this store lacks from the remote and move this store's refs.

    Example: hs pull usb --dry-run
    """
    _run(ctx, name, push=False, pull=True, dry_run=dry_run, json_out=json_out)


def sync_cmd(
    ctx: typer.Context,
    name: RemoteArg,
    dry_run: DryRunOpt = False,
    json_out: ReportJsonOpt = False,
) -> None:
    """Push and pull at once: both stores end with the same history, memory and forgets.

    Example: hs sync usb
    """
    _run(ctx, name, push=True, pull=True, dry_run=dry_run, json_out=json_out)


def _remote_info(store: Store, remote: Any) -> dict[str, Any]:
    from histstore.sync.remotes import TRACKING

    out: dict[str, Any] = remote.as_json()
    out["store"] = (remote.path / "config.toml").exists()
    out["tracking_refs"] = len(store.refs.list_refs(f"{TRACKING}{remote.name}/"))
    return out


def register(app: typer.Typer) -> None:
    """Add the sync commands to the `hs` app."""
    remote_app = new_app(
        "The other stores this one syncs with: add, list, remove.\n\n"
        "Example: hs remote add usb /media/usb/hs"
    )

    @remote_app.command("add")
    def remote_add(
        ctx: typer.Context,
        name: NameArg,
        path: Annotated[str, typer.Argument(metavar="PATH", help="The remote store's folder.")],
        json_out: Annotated[
            bool, typer.Option("--json", help="One JSON object: name, path, store, tracking_refs.")
        ] = False,
    ) -> None:
        """Remember another store folder under a name (it may not exist yet).

        Example: hs remote add usb /media/usb/hs
        """
        from histstore.sync.remotes import add_remote

        store = open_store(ctx)
        remote = add_remote(store, name, path)
        info = _remote_info(store, remote)
        if json_out:
            typer.echo(json.dumps(info, ensure_ascii=False))
            return
        say(f"added remote {remote.name}: {remote.path}")
        if not info["store"]:
            say(f"  no store there yet: `hs push {remote.name} --init` creates one")

    @remote_app.command("list")
    def remote_list(
        ctx: typer.Context,
        json_out: Annotated[
            bool,
            typer.Option(
                "--json",
                help="One JSON object per remote: name, path, store, tracking_refs (or error, hint).",
            ),
        ] = False,
    ) -> None:
        """The remotes: name, path, and whether a store is there.

        Example: hs remote list
        """
        from histstore.sync.remotes import remote_entries

        store = open_store(ctx)
        found, bad = remote_entries(store)
        if not found and not bad and not json_out:
            say("no remotes: add one with `hs remote add NAME PATH`")
        rows: dict[str, dict[str, Any]] = {}
        for remote in found.values():
            rows[remote.name] = _remote_info(store, remote)
        for name, problem in bad.items():
            # reported, not fatal: the others stay usable, and this one removable
            fix = f"set [remotes.{name}] path, or `hs remote remove {name}`"
            rows[name] = {"name": name, "path": None, "error": problem, "hint": fix}
        for name, info in sorted(rows.items()):
            if json_out:
                typer.echo(json.dumps(info, ensure_ascii=False))
            elif "error" in info:
                say(f"{name}\t(bad entry in config.toml: {info['error']}; {info['hint']})")
            else:
                state = "" if info["store"] else "  (no store there yet)"
                say(f"{name}\t{info['path']}{state}")

    @remote_app.command("remove")
    def remote_remove(
        ctx: typer.Context,
        name: RemoteArg,
        json_out: Annotated[
            bool,
            typer.Option(
                "--json", help="One JSON object: name, path, tracking_refs_deleted, operation."
            ),
        ] = False,
    ) -> None:
        """Forget a remote and its remote-tracking refs (the remote store is untouched).

        Example: hs remote remove usb
        """
        from histstore.sync.remotes import remove_remote

        store = open_store(ctx)
        remote, op = remove_remote(store, name, command_line(ctx, name))
        n = len(op.changes) if op else 0
        if json_out:
            out = remote.as_json()
            out.update(tracking_refs_deleted=n, operation=op.op if op else None)
            typer.echo(json.dumps(out, ensure_ascii=False))
            return
        what = f" ({plural(n, 'remote-tracking ref')} deleted, operation {op.op})" if op else ""
        say(f"removed remote {remote.name}{what}")

    app.add_typer(remote_app, name="remote")
    app.command("push")(push)
    app.command("pull")(pull)
    app.command("sync")(sync_cmd)
