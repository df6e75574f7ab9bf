"""`hs restore`: a session put back where its agent resumes it (docs/cli.md).

Kept apart from porcelain/cli.py (which calls :func:`register`), as the sync
and maintenance commands are."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from histstore.errors import BadInput
from histstore.plumbing.common import open_store
from histstore.porcelain.render import field, plural, say, transcript_notes


def restore(
    ctx: typer.Context,
    session: Annotated[
        str | None,
        typer.Argument(metavar="[SESSION]", help="The session (id or prefix)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            help="Every session with a turn since WHEN (2w, 60d, a date) whose file is "
            "missing from its agent's folder."
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="With --since: only claude-code or codex.")
    ] = None,
    project: Annotated[str | None, typer.Option(help="With --since: only this project.")] = None,
    to: Annotated[
        Path | None,
        typer.Option(
            "--to",
            help="The agent's folder to write into instead of ~/.claude ($CLAUDE_CONFIG_DIR) "
            "or ~/.codex ($CODEX_HOME).",
        ),
    ] = None,
    as_new: Annotated[
        bool,
        typer.Option(
            "--as-new",
            help="Write the session under a new id, every id in its records rewritten "
            "(when a different file is there).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be written; write nothing.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per session.")] = False,
) -> None:
    """Put a session back where its agent resumes it (claude --resume, codex resume).

    Example: hs restore 5f0c1e7a --dry-run
    """
    if (session is None) == (since is None):
        raise BadInput(
            "give a session, or --since WHEN for every missing session of a window",
            hint="hs restore SESSION, or hs restore --since 60d",
        )
    if session is not None and (agent or project):
        raise BadInput("--agent and --project go with --since", hint="hs restore --since 60d")
    if since is not None and as_new:
        raise BadInput("--as-new is for one session", hint="hs restore SESSION --as-new")
    store = open_store(ctx)
    if session is not None:
        _one(store, session, to=to, as_new=as_new, dry_run=dry_run, json_out=json_out)
    else:
        assert since is not None
        _since(store, since, agent, project, to=to, dry_run=dry_run, json_out=json_out)


def _one(
    store: Any, session: str, *, to: Path | None, as_new: bool, dry_run: bool, json_out: bool
) -> None:
    from histstore.ops.restore import apply, plan

    p = plan(store, session, to=to, as_new=as_new)
    t = p.transcript
    for note in transcript_notes(t):
        say(note, err=True)
    for path in p.archived:
        say(
            f"hs: note: Codex archived it too: {field(path)} (codex resume does not look there)",
            err=True,
        )
    if p.status == "conflict":
        apply(p)  # refused: a file there differs (exit 5), in a dry run too
    written = [] if dry_run else apply(p)
    if json_out:
        out = p.as_json()
        out["status"] = "present" if not p.to_write else "would-restore" if dry_run else "restored"
        out["written"] = [str(x) for x in written or []]
        typer.echo(json.dumps(out, ensure_ascii=False))
        return
    new = f" as new session {t.session_id}" if t.session_id != t.stored_id else ""
    if not p.to_write:
        say(f"session {t.stored_id} is already there, unchanged: {field(p.session_path)}")
        return
    if dry_run:
        say(f"would restore session {t.stored_id} ({t.agent}){new}:")
        for f in p.files:
            what = "would write" if f.state == "new" else "there, unchanged:"
            say(f"  {what} {field(f.path)} ({plural(f.file.lines, 'line')})")
        say("dry run: nothing was written")
        return
    say(f"restored session {t.stored_id} ({t.agent}){new}:")
    for path in written:
        f = next(x for x in p.files if x.path == path)
        say(f"  wrote {field(path)} ({plural(f.file.lines, 'line')})")
    say(f"resume it: {field(p.resume_command())}")


def _since(
    store: Any,
    since: str,
    agent: str | None,
    project: str | None,
    *,
    to: Path | None,
    dry_run: bool,
    json_out: bool,
) -> None:
    from histstore.history.reading import parse_since
    from histstore.ops.restore import Restored, restore_missing, sessions_since
    from histstore.porcelain.cli import _project_arg

    todo = sessions_since(store, parse_since(since), agent=agent, project=_project_arg(project))
    results: list[Restored] = []
    bar = None
    if _on_terminal() and not json_out and todo:
        bar = typer.progressbar(length=len(todo), label="restoring", file=sys.stderr)
        bar.__enter__()
    try:
        for sid, a in todo:
            r = restore_missing(store, sid, a, to=to, dry_run=dry_run)
            results.append(r)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    for r in results:
        if json_out:
            typer.echo(json.dumps(r.as_json(), ensure_ascii=False))
            continue
        where = f"  {field(r.plan.session_path)}" if r.plan is not None else ""
        if r.status == "skipped":
            say(f"skipped        {r.session_id}  {r.agent}: {field(r.reason)}")
        else:
            label = {"would-restore": "would restore"}.get(r.status, r.status)
            say(f"{label:<14} {r.session_id}  {r.agent}{where}")
    counts = {
        s: sum(1 for r in results if r.status == s)
        for s in ("restored", "would-restore", "present", "skipped")
    }
    if not json_out:
        verb = "would restore" if dry_run else "restored"
        n = counts["would-restore"] if dry_run else counts["restored"]
        tail = "; nothing was written" if dry_run else ""
        say(
            f"{verb} {plural(n, 'session')} of {len(results)} since {since}: "
            f"{counts['present']} already there, {counts['skipped']} skipped{tail}"
        )
    if counts["skipped"]:
        say(f"hs: {plural(counts['skipped'], 'session')} could not be restored (above)", err=True)
        raise typer.Exit(1)


def _on_terminal() -> bool:
    return sys.stderr.isatty()


def register(app: typer.Typer) -> None:
    app.command("restore")(restore)
