"""`hs`: the command people type. Human output; `--json` on every listing."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer._types import TyperChoice

from histstore.errors import BadInput
from histstore.plumbing import term
from histstore.plumbing.cli import app as plumbing_app
from histstore.plumbing.common import command_line, new_app, open_store, store_path
from histstore.plumbing.report import check_count
from histstore.plumbing.term import Text, paint
from histstore.porcelain import complete, reads_cmd
from histstore.porcelain.capture_cli import register as register_capture_commands
from histstore.porcelain.maint_cli import register as register_maint_commands
from histstore.porcelain.mcp_cli import app as mcp_app
from histstore.porcelain.memory_cli import app as memory_app
from histstore.porcelain.purge_cli import register as register_purge_commands
from histstore.porcelain.reads_cmd import mode_word, project_note
from histstore.porcelain.render import field, say, size_text, when
from histstore.porcelain.restore_cli import register as register_restore_commands
from histstore.porcelain.sync_cli import register as register_sync_commands

if TYPE_CHECKING:
    from histstore.history.importing import ImportReport
    from histstore.ops.fsck import Finding

# Start-up is part of every command's cost (an agent hook runs `hs record` per
# turn): modules only one command needs are imported inside that command.


app = new_app(
    "histstore: keep what coding agents did and remember, for good.\n\n"
    "The store is --store, else $HISTORY_DIR, else the platform data directory\n"
    "($XDG_DATA_HOME/histstore or ~/.local/share/histstore on Linux).\n\n"
    "Example: hs init && hs import && hs log --oneline --since 2w",
    add_completion=True,  # --install-completion, --show-completion (bash, zsh, fish)
)
app.add_typer(plumbing_app, name="plumbing")
app.add_typer(memory_app, name="memory")
app.add_typer(mcp_app, name="mcp")

ProjectOpt = Annotated[
    str | None,
    typer.Option(
        help="Only this project: its directory (a subdirectory of a work tree names the "
        "work tree), its path as recorded (a trailing / or not), or its last path component.",
        show_default=False,
    ),
]
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        help="Only this agent's sessions: claude-code, codex, hs, ...",
        autocompletion=complete.agents,
    ),
]
SessionOpt = Annotated[
    str | None,
    typer.Option(help="Only this session (id or prefix).", autocompletion=complete.sessions),
]


def _version(value: bool) -> None:
    if value:
        from histstore import __version__

        say(f"hs (histstore) {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    store: Annotated[
        Path | None,
        typer.Option("--store", "-C", help="The store directory.", show_default=False),
    ] = None,
    break_lock: Annotated[
        bool,
        typer.Option(
            "--break-lock",
            help="Take over the lock of a writer on another host that has not "
            "refreshed it for 10 minutes (it is gone).",
        ),
    ] = False,
    color: Annotated[
        str | None,
        typer.Option(
            "--color",
            click_type=TyperChoice(term.COLOR_CHOICES),
            help="Colour: auto (on a terminal, unless NO_COLOR is set), always or never.",
            show_default=False,
        ),
    ] = None,
    no_pager: Annotated[
        bool,
        typer.Option(
            "--no-pager",
            "-P",
            help="Print straight to the terminal, not through $HS_PAGER, $PAGER or less.",
        ),
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print hs's version and exit."
        ),
    ] = False,
) -> None:
    ctx.obj = {"store": str(store) if store else None, "break_lock": break_lock}
    term.set_options(color=color, no_pager=no_pager)


@app.command()
def init(
    ctx: typer.Context,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="One JSON object: path, created (false: one was there)."),
    ] = False,
) -> None:
    """Create a store (or say where the existing one is), and what to run next.

    Example: hs -C ~/h init
    """
    from histstore.store.store import Store

    path = store_path(ctx)
    store, created = Store.init(path)
    store.close()
    if json_out:
        typer.echo(json.dumps({"path": str(path), "created": created}, ensure_ascii=False))
        return
    if created:
        say(f"Initialized empty histstore in {path}")
    else:
        say(f"A histstore already exists in {path}")
    where = "" if ctx.find_root().params.get("store") is None else f"-C {path} "
    say(f"next: `hs {where}import` reads every agent's history it finds (~/.claude, ~/.codex)")


def _progress_total(paths: list[Path]) -> int:
    total = 0
    for p in paths:
        if p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*.jsonl") if f.is_file())
        elif p.is_file():
            total += p.stat().st_size
    return total


def _print_report(rep: ImportReport, verb: str = "imported") -> None:
    files = f"{verb} {rep.files} file{'s' if rep.files != 1 else ''}"
    if rep.files_unchanged:
        files += f", {rep.files_unchanged} unchanged since the last import (not read)"
    parts = [
        files,
        f"sessions: {rep.sessions_added} added, {rep.sessions_updated} updated",
        f"turns: {rep.turns_added} added, {rep.turns_revised} revised, "
        f"{rep.turns_unchanged} unchanged"
        + (f", {rep.turns_purged} purged (not stored again)" if rep.turns_purged else ""),
    ]
    say("; ".join(parts))
    if rep.operation is None:
        say("nothing new: no operation recorded")
    else:
        say(f"operation {rep.operation.op}")
    for f, why in rep.files_skipped:
        say(f"hs: skipped {f}: {why}", err=True)
    for p in rep.problems:
        say(f"hs: warning: {p}", err=True)
    if rep.index_error:
        say(
            f"hs: warning: the recall index did not take the new turns ({rep.index_error}); "
            "hint: they are stored; `hs plumbing index-build` rebuilds it",
            err=True,
        )
    if not rep.complete:
        say(
            f"hs: some input was not imported ({len(rep.files_skipped)} file(s) skipped, "
            f"{len(rep.problems)} problem(s) above); the rest is stored",
            err=True,
        )


@app.command("import")
def import_(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Session files or folders (default: every agent home found)."),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", help="Force a format: turns, claude-code or codex."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Say what would be imported (agent, path, files, new bytes); write nothing.",
        ),
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object: the report (files, turns_added, ..., operation); with --dry-run, one per source.",
        ),
    ] = False,
) -> None:
    """Import agent sessions: Claude Code, Codex CLI, turn JSONL.

    Without a path, every agent home found is imported: ~/.claude (or
    $CLAUDE_CONFIG_DIR), ~/.codex (or $CODEX_HOME).

    Example: hs import ~/.claude/projects
    """
    from histstore.history.homes import agent_homes, candidates
    from histstore.history.importers.detect import check_format

    check_format(fmt)
    store = open_store(ctx)
    homes = []
    if not paths:
        homes = [h for h in agent_homes() if fmt is None or h.format == fmt]
        if not homes:
            looked = ", ".join(str(h.path) for h in candidates() if fmt is None or h.format == fmt)
            if json_out:
                typer.echo(json.dumps({"sources": [], "looked_in": looked.split(", ")}))
            else:
                say(f"nothing to import: no agent history found (looked in {looked})")
            return
    if dry_run:
        _dry_run(store, paths or [], homes, fmt, json_out)
        return
    from histstore.capture.apply import import_with_spool

    targets = list(paths) if paths else [h.path for h in homes]
    cmd = command_line(ctx, *(str(p) for p in paths or []))
    if homes and not json_out:
        for h in homes:
            say(f"{h.agent}: {h.path}")
    show_bar = sys.stderr.isatty() and not json_out
    if show_bar:
        with typer.progressbar(
            length=max(_progress_total(targets), 1), label="importing", file=sys.stderr
        ) as bar:
            rep, spooled = import_with_spool(
                store, targets, fmt=fmt, command=cmd, progress=bar.update
            )
    else:
        rep, spooled = import_with_spool(store, targets, fmt=fmt, command=cmd)
    if spooled.applied and not json_out:
        say(
            f"applied {spooled.applied} spooled hook payload{'s' if spooled.applied != 1 else ''}: "
            f"{spooled.turns_added} turns added, {spooled.turns_revised} revised"
        )
    if json_out:
        out = rep.as_json()
        if homes:
            out["sources"] = [{"agent": h.agent, "path": str(h.path)} for h in homes]
        out["spool"] = {
            "applied": spooled.applied,
            "turns_added": spooled.turns_added,
            "turns_revised": spooled.turns_revised,
        }
        typer.echo(json.dumps(out, ensure_ascii=False))
    else:
        _print_report(rep)
    if not rep.complete:
        raise typer.Exit(1)  # documented: some input was not imported


def _dry_run(
    store: Any, paths: list[Path], homes: list[Any], fmt: str | None, json_out: bool
) -> None:
    """``hs import --dry-run``: each source, its files and new bytes; nothing written."""
    from histstore.history.importing import dry_run

    sources = [(h.path, h.agent) for h in homes] or [(p, None) for p in paths]
    plans = dry_run(store, sources, fmt)
    skipped = [f for sp in plans for f in sp.files if f.skip]
    if json_out:
        for sp in plans:
            typer.echo(json.dumps(sp.as_json(), ensure_ascii=False))
    else:
        for sp in plans:
            j = sp.as_json()
            files = f"{j['files']} file{'s' if j['files'] != 1 else ''}"
            parts = [f"{j['files_to_read']} to read"]
            if j["files_unchanged"]:
                parts.append(f"{j['files_unchanged']} unchanged")
            if j["files_skipped"]:
                parts.append(f"{len(j['files_skipped'])} skipped")
            say(
                f"{j['agent'] or '-'}  {j['path']}  {files} ({', '.join(parts)}), "
                f"{size_text(j['new_bytes'])} new"
            )
        total = sum(sp.new_bytes for sp in plans)
        to_read = sum(sp.as_json()["files_to_read"] for sp in plans)
        say(
            f"dry run: {to_read} file{'s' if to_read != 1 else ''} to read, "
            f"{size_text(total)} new; nothing was written"
        )
    for f in skipped:
        say(f"hs: would skip {f.path}: {f.skip}", err=True)
    if skipped:
        say(f"hs: some input would not be imported ({len(skipped)} file(s) skipped)", err=True)
        raise typer.Exit(1)


@app.command()
def record(
    ctx: typer.Context,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Who sent a hook payload: claude-code or codex (default: told from its transcript).",
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object: the hs import report, and turn_id.")
    ] = False,
) -> None:
    """Record one turn given as a JSON object on stdin, or what an agent's hook sends.

    Example: hs record < turn.json
    """
    from histstore.capture.events import is_hook_payload
    from histstore.ops.importing import record_turn

    data = sys.stdin.read()
    if not data.strip():
        raise BadInput("no turn on stdin", hint="pipe one JSON turn object into `hs record`")
    try:
        obj = json.loads(data)
    except ValueError as e:
        raise BadInput(f"stdin is not JSON: {e}", hint="give one JSON object") from None
    except RecursionError:
        raise BadInput("stdin nests too deeply to read", hint="give one flat JSON turn") from None
    if agent is not None and agent not in ("claude-code", "codex"):
        raise BadInput(f"unknown agent {agent!r}", hint="use claude-code or codex")
    if is_hook_payload(obj):
        from histstore.porcelain.capture_cli import record_hook

        record_hook(ctx, obj, agent, json_out)
        return
    if agent is not None:
        raise BadInput("--agent is for a hook payload; this is a turn record")
    store = open_store(ctx)
    turn_id, rep = record_turn(store, data, command=command_line(ctx))
    if rep.index_error and not json_out:
        say(f"hs: warning: the recall index did not take the turn ({rep.index_error})", err=True)
    if json_out:
        out = rep.as_json()
        out["turn_id"] = turn_id
        typer.echo(json.dumps(out, ensure_ascii=False))
    elif rep.operation is None:
        say(f"turn {turn_id} unchanged: nothing recorded")
    else:
        what = "revised" if rep.turns_revised else "recorded"
        say(f"{what} turn {turn_id} (operation {rep.operation.op})")


def _project_arg(project: str | None) -> str | None:
    """--project as given, or, when it names a directory here, its absolute path
    (views then compare project keys, so a subdirectory finds its work tree)."""
    if project is not None and os.path.isdir(project):
        return str(Path(project).resolve())
    return project


@app.command()
def log(
    ctx: typer.Context,
    session: SessionOpt = None,
    project: ProjectOpt = None,
    since: Annotated[
        str | None, typer.Option(help="Only turns asked since: 2w, 3d, 12h, or a date.")
    ] = None,
    n: Annotated[int | None, typer.Option("-n", "--max-count", help="At most N turns.")] = None,
    oneline: Annotated[bool, typer.Option("--oneline", help="One line per turn.")] = False,
    grep: Annotated[
        str | None,
        typer.Option(
            "--grep",
            metavar="TEXT",
            help="Only turns whose question or answer holds TEXT (ignoring case); "
            "the matches are marked on a terminal.",
        ),
    ] = None,
    all_: Annotated[
        bool,
        typer.Option("--all", help="Show tombstoned turns' content too (never an excluded one's)."),
    ] = False,
    agent: AgentOpt = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per turn: turn_id, session_id, project, asked_at (UTC), "
            "asked, answered, ..., object.",
        ),
    ] = False,
) -> None:
    """Turns, newest first, like `git log`.

    Example: hs log --oneline --since 2w --project webshop
    """
    reads_cmd.check_log(n=n, oneline=oneline, json_out=json_out)
    reads_cmd.log(
        open_store(ctx),
        session=session,
        project=project,
        since=since,
        n=n,
        oneline=oneline,
        grep=grep,
        all_=all_,
        agent=agent,
        json_out=json_out,
    )


@app.command()
def show(
    ctx: typer.Context,
    ident: Annotated[
        str,
        typer.Argument(
            metavar="ID",
            help="Turn, session or object id or prefix.",
            autocompletion=complete.sessions,
        ),
    ],
    full: Annotated[bool, typer.Option("--full", help="Every step of a turn.")] = False,
    raw: Annotated[bool, typer.Option("--raw", help="A turn's source records as written.")] = False,
    all_: Annotated[
        bool,
        typer.Option("--all", help="Show tombstoned turns' content too (never an excluded one's)."),
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object: a turn (with --full, every step), a session revision, or an object.",
        ),
    ] = False,
) -> None:
    """Show a turn (with --full every step), a session, or any object.

    Example: hs show --full 64a19766
    """
    reads_cmd.check_show(raw=raw, json_out=json_out)
    reads_cmd.show(open_store(ctx), ident=ident, full=full, raw=raw, all_=all_, json_out=json_out)


@app.command()
def recall(
    ctx: typer.Context,
    query: Annotated[list[str], typer.Argument(help="What to look for.")],
    everywhere: Annotated[
        bool, typer.Option("--everywhere", "-e", help="Search every project.")
    ] = False,
    project: Annotated[
        str | None,
        typer.Option(help="Search this project: a directory or a name (default: the current one)."),
    ] = None,
    days: Annotated[int | None, typer.Option(help="Only the last N days.")] = None,
    k: Annotated[int, typer.Option("-k", help="How many turns, 1 to 10.")] = 5,
    agent: AgentOpt = None,
    session: Annotated[str | None, typer.Option(help="Only turns of this session.")] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object: query, terms, outcome, project, days, path, hits, memory.",
        ),
    ] = False,
) -> None:
    """Find the turns that talked about something, best first.

    Example: hs recall -e login_user expiry
    """
    from histstore.porcelain.recall_cmd import show

    show(
        open_store(ctx),
        query,
        everywhere=everywhere,
        project=project,
        days=days,
        k=k,
        agent=agent,
        session=session,
        json_out=json_out,
        say=say,
        raw=typer.echo,
    )


def _what(target: Any) -> str:
    """How a target is named in a sentence: ``turn <id>``, ``memory note <id>``."""
    return f"memory note {target.id}" if target.kind == "memory" else f"{target.kind} {target.id}"


def _on_terminal() -> bool:
    return sys.stdin.isatty()


def _confirm_target(target: Any, confirm: str | None, verb: str) -> str | None:
    """On a terminal without --confirm: show what will change and ask for the id."""
    if confirm is not None or not _on_terminal():
        return confirm
    if target.kind == "memory":
        say(f"{verb} memory note {target.id} (scope {target.session})", err=True)
    else:
        what = f"{target.turns} turn{'s' if target.turns != 1 else ''}"
        say(f"{verb} {target.kind} {target.id}: {what} of session {target.session}", err=True)
    if target.first_prompt:
        say(f"  first prompt: {field(target.first_prompt)}", err=True)
    answer: str = typer.prompt(f"type the {target.kind} id to confirm", err=True, default="")
    return answer.strip()


def _print_forgotten_list(items: list[Any], json_out: bool) -> None:
    if json_out:
        for f in items:
            typer.echo(json.dumps(f.as_json(), ensure_ascii=False))
        return
    if not items:
        say("nothing is forgotten")
        return
    for f in items:
        m = f.marker
        hides = (
            f"stale: {m.target_kind} {m.target} is not in the store"
            if f.stale
            else "hides the note"
            if m.target_kind == "memory"
            else f"hides {f.hides} turn{'s' if f.hides != 1 else ''}"
        )
        if f.agent:
            hides += f" of {field(f.agent)}"
        named = field(f"{m.session}~{m.target}" if m.target_kind == "turn" else m.target)
        say(
            Text(
                f"{m.mode:9}  ",
                paint(when(m.time, seconds=True), "date"),
                f"  {m.target_kind} ",
                paint(named, "id"),
                f"  ({hides})",
            )
        )
        if m.reason:
            say(f"           reason: {field(m.reason)}")
        if f.first_prompt:
            say(f"           first prompt: {field(f.first_prompt)}")


@app.command()
def forget(
    ctx: typer.Context,
    target: Annotated[
        str | None,
        typer.Argument(
            help="A session id or turn id, whole or a unique prefix.",
            autocompletion=complete.sessions,
        ),
    ] = None,
    exclude: Annotated[
        bool, typer.Option("--exclude", help="Hide from export too (default: recall only).")
    ] = False,
    reason: Annotated[str, typer.Option(help="Why; recorded with the marker.")] = "",
    confirm: Annotated[
        str | None, typer.Option(help="The exact id, required without a terminal.")
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="List what is forgotten.")] = False,
    agent: Annotated[
        str | None, typer.Option("--agent", help="With --list: only this agent's sessions.")
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object: the result (target, mode, marker, operation, ...); with --list, one per marker.",
        ),
    ] = False,
) -> None:
    """Hide a session or a turn from recall (a tombstone) or also from export.

    Example: hs forget 5f0c --confirm 5f0c1e7a-3b2d-4c8e-9a61-0d2f4b6c8e10
    """
    from histstore.ops.forget import forget as do_forget
    from histstore.ops.forget import forgotten, resolve_target

    if list_ and target is not None:
        raise BadInput(
            f"--list takes no target ({target!r}): it lists every marker",
            hint="hs forget --list [--agent NAME]",
        )
    if list_ and (exclude or reason or confirm is not None):
        raise BadInput(
            "--list takes only --agent and --json: --exclude, --reason and --confirm "
            "go with a target",
            hint="hs forget --list [--agent NAME]",
        )
    store = open_store(ctx)
    if list_:
        _print_forgotten_list(forgotten(store, agent=agent), json_out)
        return
    if agent is not None:
        raise BadInput("--agent only filters --list", hint="hs forget --list --agent NAME")
    if target is None:
        raise BadInput("name what to forget", hint="hs forget TARGET --confirm TARGET")
    t = resolve_target(store, target, confirm=confirm)
    answer = _confirm_target(t, confirm, "forget")
    mode = "exclude" if exclude else "tombstone"
    res = do_forget(
        store, t, mode=mode, reason=reason, confirm=answer, command=command_line(ctx, t.id)
    )
    if json_out:
        typer.echo(json.dumps(res.as_json(), ensure_ascii=False))
        return
    hidden = "recall and export" if mode == "exclude" else "recall"
    if not res.changed:
        say(f"{_what(t)} is already forgotten ({mode_word(res.marker.mode)}): nothing changed")
        return
    assert res.operation is not None
    if t.kind == "memory":
        views = "hs memory prompt and recall" + (
            " and every view of its text" if mode == "exclude" else ""
        )
        say(f"forgot memory note {t.id}: {mode}, hidden from {views}")
        say(
            f"  operation {res.operation.op}, marker {res.marker_id[:12]} "
            f"at {when(res.marker.time, seconds=True)}"
        )
        say("  the note's file is not deleted; `hs unforget` lifts the marker")
        return
    say(
        f"forgot {t.kind} {t.id} ({t.turns} turn{'s' if t.turns != 1 else ''}): {mode}, hidden from {hidden}"
    )
    say(
        f"  operation {res.operation.op}, marker {res.marker_id[:12]} "
        f"at {when(res.marker.time, seconds=True)}"
    )
    say(f"  index updated: generation {res.generation}; recall no longer finds it")


@app.command()
def forgotten(
    ctx: typer.Context,
    agent: AgentOpt = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per marker: target, mode, reason, ts, hides, first_prompt, ...",
        ),
    ] = False,
) -> None:
    """Every tombstone and exclusion: when, why, and what it hides.

    Example: hs forgotten --agent codex
    """
    from histstore.ops.forget import forgotten as list_forgotten

    _print_forgotten_list(list_forgotten(open_store(ctx), agent=agent), json_out)


@app.command()
def unforget(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="A forgotten session id or turn id.")],
    confirm: Annotated[
        str | None, typer.Option(help="The exact id, required without a terminal.")
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="One JSON object: the result, as hs forget --json gives it."),
    ] = False,
) -> None:
    """Bring a forgotten session or turn back (its marker history stays).

    Example: hs unforget 5f0c --confirm 5f0c1e7a-3b2d-4c8e-9a61-0d2f4b6c8e10
    """
    from histstore.ops.forget import resolve_target
    from histstore.ops.forget import unforget as do_unforget

    store = open_store(ctx)
    t = resolve_target(store, target, confirm=confirm)
    answer = _confirm_target(t, confirm, "unforget")
    res = do_unforget(store, t, confirm=answer, command=command_line(ctx, t.id))
    if json_out:
        typer.echo(json.dumps(res.as_json(), ensure_ascii=False))
    elif not res.changed:
        say(f"{_what(t)} is not forgotten: nothing changed")
    else:
        assert res.operation is not None
        say(f"unforgot {_what(t)}: back in recall (operation {res.operation.op})")
        if t.kind != "memory":
            say(f"  index updated: generation {res.generation}")


@app.command()
def export(
    ctx: typer.Context,
    fmt: Annotated[
        str, typer.Option("--format", help="jsonl, markdown, or an agent's: claude-code, codex.")
    ] = "jsonl",
    session: SessionOpt = None,
    project: ProjectOpt = None,
    since: Annotated[
        str | None, typer.Option(help="Only turns asked since: 2w, 3d, 12h, or a date.")
    ] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write to FILE.")] = None,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="claude-code, codex: write the session's files under DIR in the agent's "
            "layout (sub-agents' transcripts too).",
        ),
    ] = None,
    agent: AgentOpt = None,
) -> None:
    """Turns out of the store (excluded ones never): turn JSONL, markdown, or
    one session in its agent's own format (Claude Code, Codex).

    Example: hs export --format markdown --project webshop -o webshop.md
    """
    from histstore.overlay.transcripts import AGENT_FORMATS

    store = open_store(ctx)
    if fmt in AGENT_FORMATS:
        data = _export_transcript(store, fmt, session, output, directory, project, since, agent)
        if data is not None:
            typer.echo(data, nl=False)  # the session's file, byte for byte
        return
    if directory is not None:
        raise BadInput(f"--dir is for --format claude-code or codex, not {fmt}", hint="use -o FILE")
    from histstore.history.reading import parse_since
    from histstore.overlay.export import export as do_export

    project_note(store, project)
    since_ts = parse_since(since) if since else None
    chunks = do_export(
        store, fmt, output, session=session, project=project, since=since_ts, agent=agent
    )
    for chunk in chunks:
        typer.echo(chunk, nl=False)


def _export_transcript(
    store: Any,
    fmt: str,
    session: str | None,
    output: Path | None,
    directory: Path | None,
    project: str | None,
    since: str | None,
    agent: str | None,
) -> bytes | None:
    """``hs export --format claude-code|codex``: one session as its agent wrote
    it; the session file's bytes when they go to stdout."""
    from histstore.overlay.transcripts import export_transcript, transcript
    from histstore.porcelain.render import transcript_notes

    given = [n for n, v in (("--project", project), ("--since", since), ("--agent", agent)) if v]
    if given:
        raise BadInput(
            f"{given[0]} does not apply to --format {fmt}: it exports one whole session",
            hint="name it with --session",
        )
    if session is None:
        raise BadInput(f"--format {fmt} exports one session: name it with --session")
    if output is not None and directory is not None:
        raise BadInput("give -o FILE or --dir DIR, not both")
    t = transcript(store, session, fmt)
    for note in transcript_notes(t):
        say(note, err=True)
    subagents = [f for f in t.files if f.kind == "subagent"]
    if directory is None and subagents:
        n = len(subagents)
        say(
            f"hs: {n} sub-agent transcript{'s' if n != 1 else ''} not written; "
            "hint: --dir DIR writes them in Claude Code's layout",
            err=True,
        )
    if output is None and directory is None:
        return t.main.data
    for path in export_transcript(store, t, output=output, directory=directory):
        if directory is not None:
            say(f"wrote {path}")
    return None


@app.command()
def ops(
    ctx: typer.Context,
    n: Annotated[int | None, typer.Option("-n", help="At most N operations.")] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object per operation: op, time (UTC), command, parent, changes, extra.",
        ),
    ] = False,
) -> None:
    """Operations, newest first: id, time, command, refs changed.

    Example: hs ops -n 5
    """
    check_count(n)
    store = open_store(ctx)
    items = list(reversed(store.operations()))
    if n is not None:
        items = items[:n]
    if not items and not json_out and n != 0:
        say("no operations yet")
    for op in items:
        if json_out:
            typer.echo(json.dumps(op.as_json(), ensure_ascii=False))
            continue
        refs = ", ".join(c.ref for c in op.changes[:3])
        more = f" and {len(op.changes) - 3} more" if len(op.changes) > 3 else ""
        say(
            Text(
                paint(op.op, "id"),
                "  ",
                paint(when(op.time, seconds=True), "date"),
                "  " + field(op.command),
            )
        )
        say(f"    {len(op.changes)} ref{'s' if len(op.changes) != 1 else ''}: {refs}{more}")


@app.command()
def undo(
    ctx: typer.Context,
    op: Annotated[
        str | None,
        typer.Argument(metavar="[OP]", help="An operation id or prefix (default: the last)."),
    ] = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="One JSON object: the new operation, as hs ops --json gives it."
        ),
    ] = False,
) -> None:
    """Revert an operation as a new one (so an undo can be undone).

    Example: hs undo 3db3895f
    """
    from histstore.ops.undo import undo as do_undo

    store = open_store(ctx)
    new = do_undo(store, op, command=command_line(ctx))
    if json_out:
        typer.echo(json.dumps(new.as_json(), ensure_ascii=False))
        return
    say(
        f"undid {new.extra.get('undoes')}: operation {new.op} moved {len(new.changes)} ref{'s' if len(new.changes) != 1 else ''} back"
    )


@app.command()
def status(
    ctx: typer.Context,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON object: store, format, id, sessions, turns, agents, projects, "
            "project_turns, objects, packs, loose_objects, size_bytes, sizes, last_capture, "
            "operations, last_operation, memory_scopes, memory_dirs, capture.",
        ),
    ] = False,
) -> None:
    """Where the store is, what it holds (turns per agent and per project), its
    size by part, the last capture, and how the agents' hooks fare.

    Example: hs status
    """
    reads_cmd.status(open_store(ctx), json_out=json_out)


@app.command()
def fsck(
    ctx: typer.Context,
    repair: Annotated[
        bool, typer.Option("--repair", help="Complete or clean what a crash left.")
    ] = False,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help='One JSON object: ok, errors, warnings, findings: [{"severity", "check", '
            '"subject", "message"}].',
        ),
    ] = False,
) -> None:
    """Check the store: every object re-hashed, every ref and log entry checked.

    Exit 7 when a finding is an error.

    Example: hs fsck --repair
    """
    from histstore.ops.fsck import fsck as run_fsck

    store = open_store(ctx)
    findings = run_fsck(store, repair=repair)
    errors = sum(1 for f in findings if f.severity == "error")
    if json_out:
        report = {
            "ok": not errors,
            "errors": errors,
            "warnings": len(findings) - errors,
            "findings": [f.as_json() for f in findings],
        }
        typer.echo(json.dumps(report, ensure_ascii=False))
    else:
        print_findings_human(findings)
    if errors:
        raise typer.Exit(7)


def print_findings_human(findings: list[Finding]) -> None:
    errors = [f for f in findings if f.severity == "error"]
    for f in findings:
        subject = f" {f.subject}:" if f.subject else ""
        say(f"{f.severity}: {f.check}{subject} {f.message}", err=f.severity == "error")
    if errors:
        say(f"{len(errors)} error{'s' if len(errors) != 1 else ''} found", err=True)
    else:
        warn = f" ({len(findings)} warning{'s' if len(findings) != 1 else ''})" if findings else ""
        say(f"ok: the store is consistent{warn}")


register_sync_commands(app)  # hs remote, push, pull, sync (porcelain/sync_cli.py)
register_maint_commands(app)  # hs gc, hs upgrade (porcelain/maint_cli.py)
register_restore_commands(app)  # hs restore (porcelain/restore_cli.py)
register_capture_commands(app)  # hs capture, hs hooks, hs watch (porcelain/capture_cli.py)
register_purge_commands(app)  # hs purge, hs redact (porcelain/purge_cli.py)


def main() -> None:
    app(prog_name="hs")


if __name__ == "__main__":
    main()
