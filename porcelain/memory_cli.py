"""`hs memory …`: memory files with history (docs/memory.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from histstore.display import text_lines
from histstore.errors import BadInput, Conflict, NotFound
from histstore.plumbing.common import command_line, new_app, open_store
from histstore.plumbing.term import Text, paint
from histstore.porcelain import complete
from histstore.porcelain.render import say, when

if TYPE_CHECKING:
    from histstore.memory.scopes import MemoryDir, Scope
    from histstore.memory.writes import WritePlan
    from histstore.store.store import Store

app = new_app(
    "Memory files with history: checked writes, revisions, diff, restore.\n\n"
    "Example: hs memory log && hs memory diff"
)

ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project",
        help="The project scope: a project directory ('.' = here). Default: the system scope.",
        show_default=False,
    ),
]
DirOpt = Annotated[
    Path | None,
    typer.Option(
        "--memory-dir",
        help="The memory directory (else $MEMORY_DIR, else the one config.toml names).",
        show_default=False,
    ),
]


class Unconfirmed(BadInput):
    """A write the person did not accept (exit 2)."""


def _scope(project: str | None) -> Scope:
    from histstore.history.project import local_project_key
    from histstore.memory.scopes import scope_for

    if project is None:
        return scope_for(None)
    if not project.strip():
        raise BadInput("--project is empty", hint="give a project directory, e.g. --project .")
    return scope_for(local_project_key(project))


def _dir(store: Store, project: str | None, memory_dir: Path | None) -> MemoryDir:
    from histstore.memory.scopes import memory_dir as resolve

    return resolve(store, _scope(project), memory_dir)


def _echo_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False))


@app.command()
def check(
    ctx: typer.Context,
    project: ProjectOpt = None,
    memory_dir: DirOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object per violation.")
    ] = False,
) -> None:
    """Check a memory directory against every rule; list each violation (exit 1 if any).

    Example: hs memory check --project .
    """
    from histstore.memory import check as memcheck

    store = open_store(ctx)
    mdir = _dir(store, project, memory_dir)
    violations = memcheck.check_dir(mdir.path)
    if json_out:
        for v in violations:
            _echo_json(v.as_json())
    else:
        for v in violations:
            say(str(v))
        n = len(violations)
        say(
            f"{mdir.path}: {n} violation{'s' if n != 1 else ''}"
            if n
            else f"{mdir.path}: every rule holds"
        )
    if violations:
        raise typer.Exit(1)


def _print_preview(plan: WritePlan) -> None:
    state = "changes" if plan.note_old is not None else "creates"
    say(f"{plan.kind} {state} {plan.path}")
    say("─" * 60)
    say(plan.text.rstrip("\n"))
    say("─" * 60)
    if plan.index_replaces is None:
        say(f"{plan.index_path} gains one line:")
        say(f"  + {plan.index_line}")
    elif plan.index_replaces == plan.index_line:
        say(f"{plan.index_path} keeps its line:")
        say(f"    {plan.index_line}")
    else:
        say(f"{plan.index_path} changes one line:")
        say(f"  - {plan.index_replaces}")
        say(f"  + {plan.index_line}")


def _print_duplicates(plan: WritePlan) -> None:
    for d in plan.duplicates:
        say(f"near-duplicate ({d.why}): {d.file}", err=True)
        if d.name or d.description:
            say(f"  {d.name} — {d.description}", err=True)


def _accept(plan: WritePlan, yes: bool, json_out: bool) -> None:
    if json_out:
        _echo_json({"preview": plan.preview()})
    else:
        _print_preview(plan)
    if yes:
        return
    if not sys.stdin.isatty():
        raise Unconfirmed(
            "nothing written: the preview was not accepted",
            hint="read the preview, then run again with --yes",
        )
    if not typer.confirm("write it?", default=False, err=True):
        raise Unconfirmed("nothing written: the preview was declined")


def _write(ctx: typer.Context, store: Store, plan: WritePlan, yes: bool, json_out: bool) -> None:
    from histstore.memory.writes import apply_write

    if plan.duplicates and plan.revise is None and not plan.create and plan.kind == "write":
        _print_duplicates(plan)
        d = plan.duplicates[0]
        raise Conflict(
            f"{d.file} looks like this note ({d.why}): nothing written",
            hint=f"revise it with --revise {d.file}, or write a separate note with --create",
        )
    _accept(plan, yes, json_out)
    res = apply_write(store, plan, command=command_line(ctx, plan.file))
    if json_out:
        _echo_json(res.as_json())
    else:
        if res.operation is None:
            say(f"{res.file} already holds this: nothing recorded")
        else:
            assert res.revision is not None
            say(f"wrote {res.path}; revision {res.revision[:12]}, operation {res.operation.op}")
    if res.warning:
        say(f"hs: note: {res.warning}", err=True)


@app.command()
def write(
    ctx: typer.Context,
    type_: Annotated[
        str | None, typer.Option("--type", help="feedback, project, user or reference.")
    ] = None,
    slug: Annotated[
        str | None, typer.Option(help="The file's slug: a-z, 0-9 and '-', at most 40.")
    ] = None,
    name: Annotated[str, typer.Option(help="The note's name (no comma).")] = "",
    description: Annotated[str, typer.Option(help="One line: what the note is for.")] = "",
    body: Annotated[str, typer.Option(help="The note's text ('-': read stdin).")] = "",
    from_: Annotated[
        Path | None,
        typer.Option("--from", help="A draft file: a whole note with its frontmatter."),
    ] = None,
    revise: Annotated[
        str | None, typer.Option(help="Change this existing note (name, file or slug).")
    ] = None,
    create: Annotated[
        bool, typer.Option("--create", help="Write a new note even though a similar one exists.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Accept the preview (scripts).")] = False,
    project: ProjectOpt = None,
    memory_dir: DirOpt = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="Two JSON objects, one per line: the preview, then the result."
        ),
    ] = False,
) -> None:
    """Write one memory note and its index line, after a preview; checked, then recorded.

    Example: hs memory write --type feedback --slug use-tabs --name "Use tabs" --description "Indent Go with tabs" --body -
    """
    from histstore.memory import rules as memrules
    from histstore.memory.writes import draft_fields, plan_write

    if revise is not None and create:
        raise BadInput("--revise and --create exclude each other", hint="choose one")
    store = open_store(ctx)
    mdir = _dir(store, project, memory_dir)
    text: str | None = None
    if from_ is not None:
        if name or description or body:
            raise BadInput(
                "--from holds the whole note", hint="leave out --name/--description/--body"
            )
        text = _read_draft(from_)
        fields = draft_fields(text)
        split = memrules.split_file_name(from_.name)
        if type_ is None:
            t = fields.get("type")
            type_ = t if isinstance(t, str) else split[0] if split else None
        if slug is None and split is not None:
            slug = split[1]
    elif body == "-":
        try:
            body = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError:
            raise BadInput("--body - : stdin is not UTF-8 text") from None
    plan = plan_write(
        store,
        mdir,
        type_=type_,
        slug=slug,
        name=name,
        description=description,
        body=body,
        revise=revise,
        create=create,
        text=text,
    )
    _write(ctx, store, plan, yes, json_out)


def _read_draft(path: Path) -> str:

    from histstore.memory.scopes import read_regular

    if path.is_dir():
        raise BadInput(f"--from {path} is a directory", hint="give a draft note file")
    try:
        read = read_regular(path)
    except BadInput as e:
        raise BadInput(f"--from {e.message}", hint="a memory note is a short text file") from None
    if read is None:
        raise NotFound(f"no draft file {path}")
    data = read
    if b"\0" in data:
        raise BadInput(f"--from {path} is binary, not a text note")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise BadInput(f"--from {path} is not UTF-8 text") from None


@app.command()
def restore(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            metavar="NAME@REV", help="A note at a revision.", autocompletion=complete.notes
        ),
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Accept the preview (scripts).")] = False,
    project: ProjectOpt = None,
    memory_dir: DirOpt = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="Two JSON objects, one per line: the preview, then the result."
        ),
    ] = False,
) -> None:
    """Put a note back as it was at a revision (a new revision; the old ones stay).

    Example: hs memory restore use-tabs@~1
    """
    from histstore.memory.revisions import split_name_rev
    from histstore.memory.writes import plan_restore

    name, rev = split_name_rev(target)
    if rev is None:
        raise BadInput(f"{target!r} names no revision", hint="NAME@REV, e.g. use-tabs@~1")
    store = open_store(ctx)
    mdir = _dir(store, project, memory_dir)
    plan = plan_restore(store, mdir, name, rev)
    _write(ctx, store, plan, yes, json_out)


@app.command()
def snapshot(
    ctx: typer.Context,
    project: ProjectOpt = None,
    memory_dir: DirOpt = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="One JSON object per directory: scope, dir, revision, operation."
        ),
    ] = False,
) -> None:
    """Record the memory directories as they are now (edits agents made on their own).

    Example: hs memory snapshot
    """
    import os

    from histstore.memory.folders import snapshot
    from histstore.memory.scopes import configured_dirs, scope_for
    from histstore.memory.scopes import memory_dir as resolve

    store = open_store(ctx)
    cmd = command_line(ctx)
    if project is None and memory_dir is None and not os.environ.get("MEMORY_DIR"):
        keys = list(configured_dirs(store))
        if not keys:
            raise NotFound(
                "no memory directory is configured",
                hint="pass --memory-dir DIR, set MEMORY_DIR, or `hs memory dir --set DIR`",
            )
        dirs = [resolve(store, scope_for(None if k == "system" else k)) for k in keys]
    else:
        dirs = [_dir(store, project, memory_dir)]
    for mdir in dirs:
        notes: list[str] = []
        op, rev = snapshot(store, mdir, command=cmd, notes=notes)
        for note in notes:
            say(note, err=True)
        if json_out:
            _echo_json(
                {
                    "scope": mdir.scope.id,
                    "dir": str(mdir.path),
                    "revision": rev,
                    "operation": op.op if op else None,
                }
            )
        elif op is None:
            say(f"{mdir.scope.label}: unchanged since the last revision; nothing recorded")
        else:
            assert rev is not None
            say(f"{mdir.scope.label}: revision {rev[:12]}, operation {op.op}")


@app.command("log")
def log_(
    ctx: typer.Context,
    name: Annotated[
        str | None,
        typer.Argument(help="Only revisions that change this note.", autocompletion=complete.notes),
    ] = None,
    project: ProjectOpt = None,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="One JSON object per revision: its fields, revision, changes."),
    ] = False,
) -> None:
    """Revisions newest first, with what each changed.

    Example: hs memory log use-tabs
    """
    from histstore.memory.revisions import log

    store = open_store(ctx)
    scope = _scope(project)
    entries = log(store, scope, name)
    if not entries and not json_out:
        say(f"the {scope.label} memory has no revision yet")
    for rev, changes in entries:
        if json_out:
            d = rev.as_json()
            d.update(
                revision=rev.id,
                changes=[{"file": c.file, "status": c.status} for c in changes],
            )
            _echo_json(d)
            continue
        say(
            Text(
                paint(rev.id[:12], "id"),
                "  ",
                paint(when(rev.time, seconds=True), "date"),
                f"  {rev.kind}  {rev.message}",
            )
        )
        for c in changes:
            mark = {"added": "+", "removed": "-", "modified": "~"}[c.status]
            say(f"    {mark} {c.file}")
        for conflict in rev.conflicts:
            say(f"    ! conflict {conflict.get('file')}: both versions kept")


@app.command()
def show(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            metavar="NAME[@REV]", help="A note, at a revision.", autocompletion=complete.notes
        ),
    ],
    project: ProjectOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object: file, revision, target, text (exact).")
    ] = False,
) -> None:
    """Print a note as it is in the newest revision, or at REV (an id prefix or ~N).

    Example: hs memory show use-tabs@~1
    """
    from histstore.memory import rules as memrules
    from histstore.memory.revisions import note_at, split_name_rev
    from histstore.memory.scopes import target_id

    store = open_store(ctx)
    scope = _scope(project)
    name, rev = split_name_rev(target)
    file, data, r = note_at(store, scope, name, rev)
    if json_out:
        _echo_json(
            {
                "file": file,
                "revision": r.id,
                "target": None
                if memrules.split_file_name(file) is None
                else target_id(scope, file),
                "text": data.decode("utf-8", "replace"),
            }
        )
        return
    say(f"# {file} at revision {r.id[:12]} ({when(r.time, seconds=True)})", err=True)
    say(data.decode("utf-8", "replace"), nl=not data.endswith(b"\n"))


@app.command()
def diff(
    ctx: typer.Context,
    args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[NAME] [REV1 [REV2]]",
            help="Default: the last change.",
            autocompletion=complete.notes,
        ),
    ] = None,
    project: ProjectOpt = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json",
            help='One JSON object: scope, note (NAME or null), files: [{"file", "status", '
            '"from", "to", "diff"}] (each file\'s unified diff, exact).',
        ),
    ] = False,
) -> None:
    """A unified diff between revisions (coloured on a terminal).

    Example: hs memory diff use-tabs ~1
    """
    from histstore.memory.revisions import diff_files

    store = open_store(ctx)
    scope = _scope(project)
    name, revs = _diff_args(args or [], lambda a: _names_a_note(store, scope, a))
    files = diff_files(store, scope, name, *revs)
    if json_out:
        _echo_json({"scope": scope.id, "note": name, "files": [f.as_json() for f in files]})
        return
    if not files:
        say("no difference")
        return
    for f in files:
        for ln in f.lines:
            # the note's text is made visible by say() first: the only escapes
            # printed are the colours of its pieces
            say(Text((ln.rstrip("\n"), _diff_style(ln))))


def _diff_style(line: str) -> str | None:
    if line.startswith(("+++ ", "--- ")):
        return "head"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return None


def _looks_like_rev(text: str) -> bool:
    import re

    return bool(re.fullmatch(r"~\d+|[0-9a-fA-F]{4,64}", text))


def _names_a_note(store: Store, scope: Scope, text: str) -> bool:
    from histstore.memory.revisions import find_file, head, load_revision, load_tree

    tip = head(store, scope)
    if tip is None:
        return False
    try:
        find_file(store, load_tree(store, load_revision(store, tip).tree), text)
    except (NotFound, BadInput):
        return False
    return True


def _diff_args(
    args: list[str], is_note: Any = lambda text: False
) -> tuple[str | None, tuple[str | None, str | None]]:
    if len(args) > 3:
        raise BadInput("too many arguments", hint="hs memory diff [NAME] [REV1 [REV2]]")
    name = None
    if args and (not _looks_like_rev(args[0]) or is_note(args[0])):
        name, args = args[0], args[1:]
    if len(args) > 2:
        raise BadInput("too many revisions", hint="hs memory diff [NAME] [REV1 [REV2]]")
    for a in args:
        if not _looks_like_rev(a):
            raise BadInput(f"{a!r} is not a revision", hint="a revision id (4+ hex digits) or ~N")
    rev1 = args[0] if args else None
    rev2 = args[1] if len(args) > 1 else None
    return name, (rev1, rev2)


@app.command()
def prompt(
    ctx: typer.Context,
    model: Annotated[str, typer.Option("--model", "-m", help="The session's model.")],
    project: ProjectOpt = None,
    memory_dir_opt: DirOpt = None,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="One JSON object per part: what, file, scope, tokens, text."),
    ] = False,
) -> None:
    """What a session on MODEL gets: identity, matching model notes, both indexes.

    Example: hs memory prompt --model claude-opus-4 --project .
    """
    from histstore.memory.prompt import prompt as build
    from histstore.memory.scopes import memory_dir

    store = open_store(ctx)
    # --memory-dir and $MEMORY_DIR name the scope the command is about: the
    # project's when --project is given, else the system scope's
    dirs = []
    if project is None:
        dirs.append(memory_dir(store, _scope(None), memory_dir_opt))
    else:
        try:
            dirs.append(memory_dir(store, _scope(None), use_env=False))
        except NotFound as e:
            say(f"hs: note: {e.message}", err=True)
        dirs.append(memory_dir(store, _scope(project), memory_dir_opt))
    parts = build(store, model, dirs)
    if json_out:
        for p in parts:
            _echo_json(p.as_json())
        return
    total = 0
    for p in parts:
        total += p.tokens
        say(f"=== {p.what}: {p.file} ({p.scope}, ~{p.tokens} tokens)")
        say(p.text.rstrip("\n"))
        say()
    if not any(p.what == "identity" for p in parts):
        say("(no identity memory: the system scope has no user_identity.md)", err=True)
    say(f"~{total} tokens in all", err=True)


@app.command()
def scan(
    ctx: typer.Context,
    sessions: Annotated[
        list[str] | None, typer.Argument(metavar="[SESSION…]", help="Default: every session.")
    ] = None,
    drafts: Annotated[
        Path | None,
        typer.Option(help="Also write each proposal as a draft file here (for `write --from`)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per proposal.")] = False,
) -> None:
    """Propose memories from what people said in recorded turns (nothing is written).

    Example: hs memory scan --drafts /tmp/drafts
    """
    from histstore.memory.scan import scan as do_scan
    from histstore.memory.scan import write_drafts

    store = open_store(ctx)
    proposals = do_scan(store, sessions or None)
    if drafts is not None:
        for path in write_drafts(store, proposals, drafts):
            say(f"hs: kept {path}: a file of that name is there", err=True)
    for p in proposals:
        if json_out:
            _echo_json(p.as_json())
            continue
        say(f"{p.file}  ({p.kind}; evidence: {', '.join(e[:12] for e in p.evidence)})")
        say(f"  index: {p.index_line}")
        for ln in text_lines(p.body):
            say(f"  | {ln}")
        say()
    if not json_out:
        n = len(proposals)
        say(f"{n} proposal{'s' if n != 1 else ''}", err=True)
        if n and drafts is not None:
            say(f"drafts in {drafts}: write one with `hs memory write --from FILE`", err=True)


@app.command("dir")
def dir_(
    ctx: typer.Context,
    set_: Annotated[
        Path | None, typer.Option("--set", help="Name this directory for the scope.")
    ] = None,
    unset: Annotated[bool, typer.Option("--unset", help="Forget the scope's directory.")] = False,
    project: ProjectOpt = None,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="One JSON object per scope's directory: scope, project, dir."),
    ] = False,
) -> None:
    """Show or set the memory directory of a scope (kept in config.toml).

    Example: hs memory dir --set ~/notes/memory
    """
    from histstore.memory.scopes import configured_dirs, memory_dir, scope_for
    from histstore.store.config import read_config, write_config

    store = open_store(ctx)
    scope = _scope(project)
    key = "system" if scope.project is None else scope.project
    if set_ is not None or unset:
        if set_ is not None and unset:
            raise BadInput("--set and --unset exclude each other")
        if set_ is not None:
            mdir = memory_dir(store, scope, set_, given_as="--set")  # every check a path gets
        with store.lock():
            config = read_config(store.root)
            dirs = dict(config.get("memory", {}).get("dirs", {}))
            if unset:
                if key not in dirs:
                    raise NotFound(f"the {scope.label} scope names no directory")
                del dirs[key]
            else:
                dirs[key] = str(mdir.path)
            config.setdefault("memory", {})["dirs"] = dirs
            write_config(store.root, config)
        store.config = config
    dirs = configured_dirs(store)
    shown = {k: v for k, v in dirs.items() if project is None or k == key}
    if json_out:
        for k, v in shown.items():
            sid = scope_for(None if k == "system" else k).id
            _echo_json({"scope": sid, "project": None if k == "system" else k, "dir": v})
        return
    if not shown:
        say("no memory directory is configured")
    for k, v in shown.items():
        say(f"{k}: {v}")
