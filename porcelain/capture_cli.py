"""``hs capture``, ``hs hooks install|uninstall|status`` and ``hs watch``
(docs/capture.md): turns recorded as the agents work."""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

from histstore.plumbing.common import new_app, open_store, store_path
from histstore.porcelain.render import field, say, when

hooks_app = new_app(
    "The agents' hooks that record every turn as it happens (docs/capture.md).\n\n"
    "Example: hs hooks install claude-code && hs hooks status"
)

AgentArg = Annotated[str, typer.Argument(metavar="AGENT", help="claude-code or codex.")]
ProjectOpt = Annotated[
    Path | None,
    typer.Option(
        "--project",
        help="A project's own settings (Claude Code: DIR/.claude/settings.local.json; "
        "Codex: DIR/.codex/) instead of the user's.",
        show_default=False,
    ),
]


def capture(
    ctx: typer.Context,
    agent: Annotated[
        str | None, typer.Argument(metavar="AGENT", help="claude-code or codex.")
    ] = None,
    notify: Annotated[
        bool,
        typer.Option("--notify", help="Codex's notify program: the payload is the last argument."),
    ] = False,
    drain: Annotated[
        bool, typer.Option("--drain", help="Apply every spooled payload, waiting for the lock.")
    ] = False,
    fresh: Annotated[
        Path | None,
        typer.Option("--fresh", help="With --drain: the spool entry of the hook that started it."),
    ] = None,
    rest: Annotated[
        list[str] | None,
        typer.Argument(help="With --notify: a notify program to run first, then the payload."),
    ] = None,
) -> None:
    """What an agent's hook runs: record the turn its payload names (never fails).

    Example: hs capture claude-code < payload.json (as the hook runs it)
    """
    from histstore.porcelain.hook import HookArgs, run

    rest = list(rest or [])
    store = store_path(ctx)
    if drain:
        args = HookArgs(store, None, drain=True, payload=str(fresh) if fresh else None)
    elif agent not in ("claude-code", "codex"):
        from histstore.capture.run import record_failure

        # even a hook written wrong must not break its agent: recorded, exit 0
        record_failure(store, str(agent), "", f"hs capture: unknown agent {agent!r}")
        return
    elif notify:
        args = HookArgs(
            store, agent, notify=True, chain=rest[:-1], payload=rest[-1] if rest else ""
        )
    else:
        args = HookArgs(store, agent)
    run(args)


def _hs_argv() -> list[str]:
    from histstore.porcelain.mcp_cli import _hs_argv as argv

    return argv()


def _ensure_store(ctx: typer.Context, json_out: bool) -> Path:
    from histstore.store.store import Store

    path = store_path(ctx).absolute()
    store, created = Store.init(path)
    store.close()
    if created and not json_out:
        say(f"created the store at {path}")
    return path


def _print_installed(res: Any, verb: str, json_out: bool) -> None:
    if json_out:
        say(json.dumps(res.as_json(), ensure_ascii=False))
        return
    for c in res.changes:
        if not c.changed:
            say(f"{res.agent}: {c.path} already {verb}: nothing changed")
        else:
            how = "a new file" if c.created else f"the previous file is kept as {c.backup}"
            say(f"{res.agent}: {verb} {c.path} ({how})")


@hooks_app.command("install")
def hooks_install(
    ctx: typer.Context,
    agent: AgentArg,
    project: ProjectOpt = None,
    notify: Annotated[
        bool | None,
        typer.Option(
            "--notify/--no-notify",
            help="Codex: also (or never) install the notify program "
            "(default: only when the installed Codex runs no hooks).",
            show_default=False,
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object: the agent, its files and what changed.")
    ] = False,
) -> None:
    """Add hs's hooks to an agent's settings (keeping everything else).

    Example: hs hooks install codex
    """
    from histstore.capture import hooks

    argv = _hs_argv()
    store = store_path(ctx).absolute()
    # every file checked (and a refusal raised) before anything is written, the store too
    plan = hooks.plan_install(agent, argv, store, project=project, notify=notify)
    _ensure_store(ctx, json_out)
    res = hooks.apply(plan)
    _print_installed(res, "hooked in", json_out)
    if json_out:
        return
    if res.events:
        say(f"  events: {', '.join(res.events)}")
    if res.notify:
        say("  notify: hs runs after each turn (a notify program set before runs first)")
    say(f"  command: {hooks.command(argv, store, agent)}")
    for note in res.notes:
        say(f"  note: {note}")
    say("  check it with `hs hooks status`; an agent already running reads it at its next session")


@hooks_app.command("uninstall")
def hooks_uninstall(
    ctx: typer.Context,
    agent: AgentArg,
    project: ProjectOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="One JSON object: the agent, its files and what changed.")
    ] = False,
) -> None:
    """Take hs's hooks out of an agent's settings (nothing else).

    Example: hs hooks uninstall codex
    """
    from histstore.capture import hooks

    hooks.events_of(agent)
    res = hooks.uninstall(agent, project=project)
    if json_out:
        say(json.dumps(res.as_json(), ensure_ascii=False))
        return
    for c in res.changes:
        if not c.changed:
            say(f"{agent}: no hook of hs's in {c.path}: nothing changed")
        else:
            say(
                f"{agent}: removed hs's hooks from {c.path} (the previous file is kept as {c.backup})"
            )


def _ran(run: dict[str, Any] | None) -> str:
    if not run:
        return "never ran"
    what = str(run.get("result") or "?")
    added, revised = run.get("turns_added") or 0, run.get("turns_revised") or 0
    if added or revised:
        what += f" ({added} added, {revised} revised)"
    if run.get("message"):
        what += f": {run['message']}"
    secs = run.get("seconds")
    took = f" in {float(secs):.2f} s" if isinstance(secs, int | float) else ""
    return f"last ran {when(run.get('time'), seconds=True)}{took}: {what}"


@hooks_app.command("status")
def hooks_status(
    ctx: typer.Context,
    agent: Annotated[
        str | None, typer.Argument(metavar="[AGENT]", help="claude-code or codex (default: both).")
    ] = None,
    project: ProjectOpt = None,
    json_out: Annotated[
        bool,
        typer.Option(
            "--json", help="One JSON object per agent: file, events, runs, error, ... (times UTC)."
        ),
    ] = False,
) -> None:
    """Per agent: which of hs's hooks are installed, where, and how each last ran.

    Example: hs hooks status claude-code
    """
    from histstore.capture import hooks
    from histstore.capture.journal import Journal, summary
    from histstore.store.config import CONFIG_NAME

    agents = hooks.agents_named(agent)
    store = store_path(ctx).absolute()
    have_store = (store / CONFIG_NAME).is_file()
    journal = Journal.of_store(store)
    fallback = Journal.fallback(store)
    for a in agents:
        st = hooks.hook_status(a, store, project)
        runs = hooks.runs_of(journal, a)
        for ev, r in hooks.runs_of(fallback, a).items():
            if r.get("store") == str(store) and str(r.get("time")) > str(
                (runs.get(ev) or {}).get("time") or ""
            ):
                runs[ev] = r
        st["runs"] = runs
        if json_out:
            say(json.dumps(st, ensure_ascii=False))
            continue
        say(f"{a}: {st['file']}")
        if st["error"]:
            say(f"  hs: error: {st['error']}", err=True)
        names = list(st["events"]) + (["notify"] if a == "codex" else [])
        for ev in names:
            info = st["events"].get(ev) or st.get("notify") or {}
            if not info.get("installed"):
                state = "not installed"
            else:
                state = "installed"
                if info.get("timeout"):
                    state += f" (timeout {info['timeout']} s)"
                if info.get("trust"):
                    state += f", {info['trust']}"
                if info.get("store") and not info.get("this_store"):
                    state += f", writes to another store: {field(str(info['store']))}"
                if info.get("chained"):
                    state += f", then runs {field(' '.join(info['chained']))}"
            say(f"  {ev:<13} {state}; {_ran(runs.get(ev))}")
    if json_out:
        return
    if not have_store:
        say(f"store: none at {store}: every capture fails until `hs init` (or `hs hooks install`)")
        return
    _print_capture_summary(summary(store))


def _print_capture_summary(info: dict[str, Any]) -> None:
    waiting = info["waiting"]
    line = f"spool: {waiting} payload{'s' if waiting != 1 else ''} waiting"
    if info["set_aside"]:
        line += f", {info['set_aside']} set aside (spool/failed)"
    say(line)
    n, days = info["failures"], info["failures_days"]
    if n:
        last = info["last_failure"] or {}
        say(
            f"failures: {n} in the last {days} days; the latest at "
            f"{when(last.get('time'), seconds=True)} "
            f"({last.get('agent')} {last.get('event')}): {field(str(last.get('message')))}"
        )
    else:
        say(f"failures: none in the last {days} days")


def watch(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Folders or files to watch (default: every agent home found)."),
    ] = None,
    debounce: Annotated[
        float,
        typer.Option(help="Seconds of quiet after a change before importing.", min=0.0),
    ] = 2.0,
    json_out: Annotated[
        bool,
        typer.Option("--json", help="One JSON object per event: watching, import, stopped, ..."),
    ] = False,
) -> None:
    """Import agent sessions as their files change, until Ctrl-C.

    Example: hs watch ~/.claude/projects
    """
    from histstore.capture.watch import Watcher, watch_roots

    store = open_store(ctx)
    roots = watch_roots(paths or [])
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_signal)

    def report(event: dict[str, Any]) -> None:
        if json_out:
            typer.echo(json.dumps(event, ensure_ascii=False))
        elif event["event"] == "watching":
            for r in event["roots"]:
                say(f"watching {r}")
        elif event["event"] == "imported":
            say(
                f"imported {event['files']} file{'s' if event['files'] != 1 else ''}: "
                f"{event['turns_added']} turns added, {event['turns_revised']} revised"
                + (f" (operation {event['operation']})" if event["operation"] else "")
            )
        elif event["event"] == "error":
            say(f"hs: warning: {event['message']}", err=True)
        elif event["event"] == "stopped":
            say("stopped watching")

    watcher = Watcher(store, roots, debounce=debounce, report=report)
    try:
        watcher.run(stop)
    except KeyboardInterrupt:
        watcher.close()
        report({"event": "stopped"})
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def register(app: typer.Typer) -> None:
    app.command("capture")(capture)
    app.add_typer(hooks_app, name="hooks")
    app.command("watch")(watch)


def record_hook(ctx: typer.Context, obj: dict[str, Any], agent: str | None, json_out: bool) -> None:
    """``hs record`` given what a hook sends: the turns its transcript gained,
    imported now (waiting for the lock like any writer; errors are errors)."""
    from histstore.capture import events
    from histstore.capture.apply import apply_event, refresh
    from histstore.errors import BadInput, NotFound
    from histstore.history.importers.detect import detect_file

    if agent is None:
        if obj.get("type") == "agent-turn-complete":
            agent = "codex"
        else:
            path = events.from_object("claude-code", obj).transcript
            found = detect_file(path) if path is not None and path.is_file() else None
            if found not in ("claude-code", "codex"):
                raise BadInput(
                    "cannot tell which agent sent this hook payload",
                    hint="give it: hs record --agent claude-code (or codex)",
                )
            agent = found
    event = events.from_object(agent, obj)
    if not [p for p in events.files(event) if p.is_file()]:
        where = event.transcript or f"the rollout of thread {event.session_id}"
        raise NotFound(f"the transcript {where} is not there", hint="check the payload's paths")
    store = open_store(ctx)
    done = apply_event(store, event)
    refresh(store, wait=True)
    rep = done.report
    if json_out:
        out = rep.as_json()
        out["agent"], out["event"] = agent, event.name
        out["answered_from_hook"] = done.lag.patched
        typer.echo(json.dumps(out, ensure_ascii=False))
        return
    if rep.operation is None:
        say(f"{agent} {event.name}: nothing new in its transcript: nothing recorded")
    else:
        say(
            f"{agent} {event.name}: {rep.turns_added} turns added, {rep.turns_revised} revised "
            f"(operation {rep.operation.op})"
        )
    if done.lag.patched:
        say(f"  the transcript lags: turn {done.lag.patched} took its answer from the payload")
    for p in rep.problems:
        say(f"hs: warning: {p}", err=True)
