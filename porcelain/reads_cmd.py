"""`hs log`, `hs show` and `hs status` without the CLI framework.

Each command's body: the typer commands of histstore.porcelain.cli parse
their options and call it, and so does the quick path
(histstore.porcelain.quick), which runs these commands without importing
typer when it knows every argument. Human lines go through
:func:`histstore.porcelain.render.say`; JSON and exact bytes through
:func:`histstore.porcelain.render.raw_line`, as they are.
"""

from __future__ import annotations

import json
from typing import Any

from histstore.errors import BadInput, NotFound
from histstore.plumbing import term
from histstore.plumbing.report import check_count
from histstore.plumbing.term import Text, paint
from histstore.porcelain.quick import Spec
from histstore.porcelain.render import field, plural, raw_line, say, size_text, when


def check_log(*, n: int | None, oneline: bool = False, json_out: bool = False, **_: Any) -> None:
    """What ``hs log`` refuses before it opens the store."""
    check_count(n)
    if oneline and json_out:
        raise BadInput("--oneline and --json are two ways to print: give one")


def check_show(*, raw: bool = False, json_out: bool = False, **_: Any) -> None:
    """What ``hs show`` refuses before it opens the store."""
    if raw and json_out:
        raise BadInput(
            "--raw prints the source lines as read, --json one object: give one",
            hint="the source lines are JSON already",
        )


LOG = Spec(
    flags={"--oneline": "oneline", "--all": "all_", "--json": "json_out"},
    values={
        "--session": "session",
        "--project": "project",
        "--since": "since",
        "-n": "n",
        "--max-count": "n",
        "--grep": "grep",
        "--agent": "agent",
    },
    numbers=frozenset({"n"}),
    check=check_log,
)


def log(
    store: Any,
    *,
    session: str | None,
    project: str | None,
    since: str | None,
    n: int | None,
    oneline: bool,
    grep: str | None,
    all_: bool,
    agent: str | None,
    json_out: bool,
) -> None:
    """Turns, newest first (``hs log``)."""
    from histstore.history.reading import parse_since
    from histstore.overlay import reads
    from histstore.porcelain import render

    since_ts = parse_since(since) if since else None
    project_note(store, project)
    items = reads.log(
        store,
        session=session,
        project=project,
        since=since_ts,
        limit=n,
        show_all=all_,
        agent=agent,
        grep=grep,
    )
    if n == 0:
        return  # as git log -n 0: nothing asked for, nothing said
    if not items and not json_out:
        filtered = session or project or since or grep or agent is not None
        say("no turns" + (" match" if filtered else " recorded yet"))
        return
    shorts = reads.short_ids(store, [it.turn_id for it in items]) if oneline else {}
    width = max((len(v) for v in shorts.values()), default=12)
    for i, it in enumerate(items):
        if it.turn is None:
            assert it.withheld is not None
            _print_forgotten(
                shorts.get(it.turn_id, it.turn_id),
                it.session.session_id,
                it.entry.asked_at,
                it.withheld,
                json_out,
                oneline,
                i,
                width,
            )
            continue
        if json_out:
            raw_line(json.dumps(_turn_summary(it.turn, it.entry.object), ensure_ascii=False))
        elif oneline:
            say(render.oneline(it.turn, shorts.get(it.turn_id), width, grep))
        else:
            if i:
                say("")
            say(render.turn_text(it.turn, it.session, max_lines=6, grep=grep))


SHOW = Spec(
    flags={"--full": "full", "--raw": "raw", "--all": "all_", "--json": "json_out"},
    values={},
    positional="ident",
    check=check_show,
)


def show(store: Any, *, ident: str, full: bool, raw: bool, all_: bool, json_out: bool) -> None:
    """A turn, a session or any object (``hs show``)."""
    from histstore.overlay import reads

    try:
        r = reads.show(store, ident, show_all=all_)
    except NotFound:
        if not _show_purged(store, ident, json_out):
            raise
        return
    if r.old_id:
        say(f"hs: {r.old_id[:12]} is a format-1 id; it is {r.id[:12]} now", err=True)
    if r.kind == "turn":
        _show_turn(store, r, full=full, raw=raw, json_out=json_out)
    elif r.kind == "session":
        _show_session(store, r, json_out=json_out)
    else:
        _show_object(r, json_out=json_out)


STATUS = Spec(flags={"--json": "json_out"}, values={})


def status(store: Any, *, json_out: bool) -> None:
    """Where the store is and what it holds (``hs status``)."""
    from histstore.capture.journal import summary
    from histstore.ops.status import status_info

    info = status_info(store, changes=json_out)
    info["capture"] = summary(store.root)
    if json_out:
        raw_line(json.dumps(info, ensure_ascii=False))
        return
    label = "{:<14}".format
    say(label("store:") + f"{info['store']} (format {info['format']})")
    say(label("sessions:") + f"{info['sessions']} in {plural(info['projects'], 'project')}")
    say(label("turns:") + str(info["turns"]))
    by_agent = sorted(info["agents"].items(), key=lambda an: (-an[1], an[0]))
    top = info["project_turns"]
    width = len(str(max([n for _, n in by_agent] + [p["turns"] for p in top], default=0)))
    _counted("  by agent:", [(n, paint(field(a), "agent")) for a, n in by_agent], width)
    _counted(
        "  by project:",
        [(p["turns"], paint(field(p["project"]), "project")) for p in top],
        width,
        more=info["turn_projects"] - len(top),
    )
    parts = info["sizes"]
    packs, loose = info["packs"], info["loose_objects"]
    say(
        label("size:")
        + f"{size_text(sum(parts.values()))} on disk: objects {size_text(info['size_bytes'])} "
        f"({info['objects']} objects: {plural(packs, 'pack')}, {loose} loose)"
        + "".join(
            f", {part} {size_text(n)}" for part, n in parts.items() if part != "objects" and n
        )
    )
    dirs = info["memory_dirs"]
    say(
        label("memory:")
        + f"{plural(info['memory_scopes'], 'scope')} recorded; "
        + f"{len(dirs)} director{'ies' if len(dirs) != 1 else 'y'} configured"
    )
    cap = info["last_capture"]
    if cap:
        say(
            Text(
                label("last capture:"),
                paint(when(cap["time"], seconds=True), "date"),
                f": {field(cap['command'])} (operation ",
                paint(cap["op"], "id"),
                ")",
            )
        )
    else:
        say(label("last capture:") + "none yet: `hs import` captures what agents recorded")
    last = info["last_operation"]
    if last:
        say(
            Text(
                label("operations:"),
                f"{info['operations']}; last ",
                paint(last["op"], "id"),
                " at ",
                paint(when(last["time"], seconds=True), "date"),
                f": {field(last['command'])}",
            )
        )
    else:
        say(label("operations:") + "none yet")
    for line in _capture_lines(info["capture"]):
        # the hooks' lines, under the same labels
        head, colon, rest = line.partition(":") if not line.startswith(" ") else ("", "", line)
        say(label(head + colon) + rest.lstrip())


def _turn_summary(turn: dict[str, Any], object_id: str) -> dict[str, Any]:
    keys = (
        "turn_id",
        "session_id",
        "project",
        "asked_at",
        "answered_at",
        "asked",
        "answered",
        "files",
        "edited",
        "tools",
        "tainted",
        "model",
        "agent",
        "status",
        "subagent",
        "cwd",
    )
    out = {k: turn.get(k) for k in keys}
    out["object"] = object_id
    return out


def project_note(store: Any, project: str | None) -> None:
    """When ``--project`` names several projects, say which (all are shown)."""
    if project is None:
        return
    from histstore.history.reading import match_projects

    m = match_projects(store, project)
    if len(m.keys) > 1:
        say(
            f"hs: note: --project {project} matches {len(m.keys)} projects: {', '.join(m.keys)}",
            err=True,
        )


def mode_word(mode: str) -> str:
    return "exclusion" if mode == "exclude" else mode


def _print_forgotten(
    turn_id: str,
    session_id: str,
    asked_at: str,
    marker: Any,
    json_out: bool,
    oneline: bool,
    i: int,
    width: int = 12,
) -> None:
    """A forgotten turn as log and show give it without --all: that it was, not what."""
    if json_out:
        raw_line(
            json.dumps(
                {
                    "turn_id": turn_id,
                    "session_id": session_id,
                    "asked_at": asked_at,
                    "forgotten": {"mode": marker.mode, "since": marker.time},
                }
            )
        )
        return
    note = f"forgotten ({mode_word(marker.mode)} since {when(marker.time, seconds=True)})"
    if oneline:
        date = term.local_time(asked_at, zone=False)
        tid = turn_id[:width]
        say(
            Text(
                paint(tid, "id"),
                " " * max(width - len(tid), 0) + "  ",
                paint(date, "date"),
                "  ",
                paint(session_id[:8], "id"),
                "  " + note,
            )
        )
    else:
        if i:
            say("")
        say(Text("turn ", paint(turn_id, "id"), "\nSession: ", paint(session_id, "id")))
        say(f"\n    {note}")


def _show_purged(store: Any, ident: str, json_out: bool) -> bool:
    """What a purge removed that ``ident`` names: said so (exit 0, as a
    forgotten turn is), or False when a purge removed nothing of that name."""
    from histstore.ops.purge import purged_match

    hit = purged_match(store, ident)
    if hit is None:
        return False
    what, e = hit
    if json_out:
        purged = {"what": what, "purge": e.id, "time": e.time}
        raw_line(json.dumps({"id": ident, "purged": purged}, ensure_ascii=False))
    else:
        say(
            f"{what} {field(ident)}\n\n    purged ({when(e.time, seconds=True)}, purge {e.id}): its content is gone"
        )
    return True


def _show_turn(store: Any, r: Any, *, full: bool, raw: bool, json_out: bool) -> None:
    from histstore.history.reading import expand_turn, raw_records
    from histstore.porcelain import render

    assert r.entry is not None and r.session is not None
    if r.turn is None:
        _print_forgotten(
            r.entry.turn_id, r.session.session_id, r.entry.asked_at, r.withheld, json_out, False, 0
        )
        return
    turn = r.turn
    if raw:
        for line in raw_records(store, turn):
            raw_line(line)
        return
    if json_out:
        out = expand_turn(store, turn) if full else _turn_summary(turn, r.entry.object)
        out["object"] = r.entry.object
        raw_line(json.dumps(out, ensure_ascii=False))
        return
    say(render.turn_text(turn, r.session, max_lines=None))
    links = r.links
    if links is not None and (links.spawned or links.started_by):
        say("")
        for agent, turns in links.spawned.items():
            which = ", ".join(turns) if turns else "not in the store"
            n = f"{len(turns)} turn{'s' if len(turns) != 1 else ''}"
            say(f"Sub-agent {agent}: {n}: {which}" if turns else f"Sub-agent {agent}: {which}")
        if links.started_by:
            say(f"Started by: turn {links.started_by}")
    if full:
        say("")
        for step in expand_turn(store, turn)["steps"]:
            say(render.step_text(step))
    src = r.source or {}
    if src.get("file"):
        say(f"\nSource:  {field(src['file'])}:{src.get('line') or '?'}")


def _show_session(store: Any, r: Any, *, json_out: bool) -> None:
    from histstore.overlay import reads
    from histstore.porcelain import render

    s = r.session
    if r.withheld is not None:
        _print_forgotten_session(s.session_id, r.withheld, json_out)
        return
    if json_out:
        raw_line(json.dumps(s.as_json(), ensure_ascii=False))
        return
    say(Text("session ", paint(s.session_id, "id")))
    if s.title:
        say(f"Title:   {field(s.title)}")
    say(Text("Project: ", paint(field(s.project), "project")))
    say(Text("Agent:   ", paint(field(s.agent), "agent")))
    say(f"Turns:   {len(s.turns)}")
    say("")
    # each id as hs log --oneline abbreviates it: one hs show takes
    shorts = reads.short_ids(store, [it.turn_id for it in r.turns])
    width = max((len(v) for v in shorts.values()), default=12)
    for it in r.turns:
        short = shorts.get(it.turn_id, it.turn_id[:12])
        if it.turn is None:
            _print_forgotten(
                short, s.session_id, it.entry.asked_at, it.withheld, False, True, 0, width
            )
        else:
            say(render.oneline(it.turn, short, width))


def _show_object(r: Any, *, json_out: bool) -> None:
    kind = r.object_kind
    if r.withheld is not None:
        names = r.names
        if "turn_id" in names:
            _print_forgotten(
                names["turn_id"],
                names["session_id"],
                names["asked_at"],
                r.withheld,
                json_out,
                False,
                0,
            )
        else:
            _print_forgotten_session(names["session_id"], r.withheld, json_out)
        return
    payload = r.payload
    if json_out:
        body: Any = payload.decode("utf-8", "replace") if kind == "blob" else json.loads(payload)
        out = {"id": r.id, "kind": kind, "size": len(payload), "payload": body}
        raw_line(json.dumps(out, ensure_ascii=False))  # as every --json writes text
        return
    say(f"{kind} {r.id} ({len(payload)} bytes)")
    if kind == "blob":
        say(payload.decode("utf-8", "replace"))
    else:
        say(json.dumps(json.loads(payload), ensure_ascii=False, indent=2, sort_keys=True))


def _print_forgotten_session(session_id: str, marker: Any, json_out: bool) -> None:
    if json_out:
        forgotten = {"mode": marker.mode, "since": marker.time}
        raw_line(json.dumps({"session_id": session_id, "forgotten": forgotten}))
    else:
        since = when(marker.time, seconds=True)
        say(Text("session ", paint(session_id, "id")))
        say(f"\n    forgotten ({mode_word(marker.mode)} since {since})")


def _capture_lines(info: dict[str, Any]) -> list[str]:
    """The capture lines of ``hs status`` (from histstore.capture.journal.summary)."""
    last = info["last_run"]
    out = []
    if last is None:
        out.append("capture:    no hook has run (see `hs hooks install`)")
    else:
        out.append(
            f"capture:    last {last.get('agent')} {last.get('event')} at "
            f"{when(last.get('time'), seconds=True)}: "
            f"{last.get('result')}"
        )
    extra = []
    if info["waiting"]:
        extra.append(f"{info['waiting']} spooled")
    if info["set_aside"]:
        extra.append(f"{info['set_aside']} set aside")
    if info["failures"]:
        f = info["last_failure"] or {}
        extra.append(
            f"{info['failures']} failure{'s' if info['failures'] != 1 else ''} in "
            f"{info['failures_days']} days, the latest: {field(str(f.get('message')))}"
        )
    if extra:
        out.append("            " + "; ".join(extra))
    return out


def _counted(head: str, rows: list[tuple[int, Text]], width: int, more: int = 0) -> None:
    """Rows of ``count  name`` under a label, the counts right-aligned."""
    for i, (n, name) in enumerate(rows):
        say(Text(f"{head if i == 0 else '':<14}{n:>{width}}  ", name))
    if more > 0:
        say(f"{'':<14}… and {plural(more, 'more project')}")
