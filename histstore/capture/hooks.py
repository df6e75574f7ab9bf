"""Putting hs's hooks into an agent's settings, and taking them out again.

* **Claude Code**: ``Stop``, ``SubagentStop``, ``PreCompact`` and
  ``SessionEnd`` in ``$CLAUDE_CONFIG_DIR/settings.json`` (default
  ``~/.claude/settings.json``), or with a project in its
  ``.claude/settings.local.json`` — the project file Claude Code keeps out of
  git, since the command names this machine's paths. Each event gets one
  matcher group of its own, ``{"hooks": [{"type": "command", "command": ...,
  "timeout": N}]}`` (no matcher: every one of them matches). ``SessionEnd``
  gets a timeout of 10 s: without one Claude Code gives it 1.5 s.
* **Codex**: ``Stop`` in ``$CODEX_HOME/hooks.json`` (a project's
  ``.codex/hooks.json``), or in ``[hooks]`` of the same folder's
  ``config.toml`` when the person keeps their hooks there (Codex warns about
  both forms in one folder; a ``config.toml`` that does not parse is
  refused, never taken for one without hooks). Once installed, hs's hook is
  looked for in both files (:func:`places`): the person may keep hooks of
  their own in the other one since. Codex runs a hook only once it is trusted
  (``/hooks`` in Codex; its record is ``[hooks.state."<key>"]`` in
  ``config.toml``), which :func:`hook_status` reports. A Codex without hooks gets
  ``notify = [hs, ..., "capture", "codex", "--notify", "--", *previous]``
  instead: a notify program set before is kept, run first, and given back
  by uninstall.

The command is ``<hs> --store <store> capture <agent>``; an entry is hs's
when its command ends ``capture <agent>`` and names a ``--store``
(:func:`is_ours`): install replaces hs's entry in place, in the file that
holds it (a person's own keys on it stay), or appends a group; uninstall
removes hs's entries only, from every file that holds them, and the groups
and tables that leaves empty, so install then uninstall gives the file back.
Every change to a file is one write through :mod:`histstore.agents.settings`
(every other key kept, a backup beside it, nothing written when nothing
changes, a file that does not parse refused in one line), and every file an
install or uninstall writes is checked before the first is written
(:func:`plan_install`, :func:`plan_uninstall`, then :func:`apply`): refused
input changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histstore.agents import homes, settings
from histstore.capture.journal import Journal
from histstore.errors import BadInput

AGENTS = ("claude-code", "codex")
#: the events hs hooks, with the timeout (seconds) it gives each
CLAUDE_EVENTS: dict[str, int] = {"Stop": 30, "SubagentStop": 30, "PreCompact": 30, "SessionEnd": 10}
CODEX_EVENTS: dict[str, int] = {"Stop": 30}


def _agent(agent: str) -> str:
    if agent not in AGENTS:
        raise BadInput(f"unknown agent {agent!r}", hint=f"use one of {', '.join(AGENTS)}")
    return agent


def agents_named(agent: str | None) -> list[str]:
    """The agents a command names: that one (checked; an empty name is no
    agent), or every one when none is named."""
    return list(AGENTS) if agent is None else [_agent(agent)]


def events_of(agent: str) -> dict[str, int]:
    return CLAUDE_EVENTS if _agent(agent) == "claude-code" else CODEX_EVENTS


def command_argv(hs: list[str], store: Path, agent: str) -> list[str]:
    return [*hs, "--store", str(store), "capture", agent]


def command(hs: list[str], store: Path, agent: str) -> str:
    """The hook's command line, quoted for the shell the agent runs it with."""
    return shlex.join(command_argv(hs, store, agent))


def _tokens(text: Any) -> list[str]:
    if not isinstance(text, str):
        return []
    try:
        return shlex.split(text)
    except ValueError:
        return []


def is_ours(hook: Any, agent: str) -> bool:
    """Whether a hook entry is one hs install wrote for ``agent``."""
    if not isinstance(hook, dict) or hook.get("type", "command") != "command":
        return False
    t = _tokens(hook.get("command"))
    return len(t) >= 4 and t[-2:] == ["capture", agent] and "--store" in t[:-2]


def store_of(hook: Any) -> str | None:
    """The store a hook of hs's writes to."""
    t = _tokens(hook.get("command") if isinstance(hook, dict) else None)
    for i, tok in enumerate(t[:-1]):
        if tok == "--store":
            return t[i + 1]
    return None


# ------------------------------------------------------------------ where


@dataclass(frozen=True)
class Place:
    """Where an agent's hooks go: the file, its format, and the key path of
    the table of events in it."""

    agent: str
    path: Path
    format: str  # "json" | "toml"
    keys: tuple[str, ...] = ("hooks",)


def _read(p: Place) -> Any:
    """The table of events at a place (None: no file, or no table)."""
    if p.format == "json":
        return settings.read_json(p.path, p.keys)
    return settings.read_toml(p.path, p.keys)


def _codex_base(project: Path | None) -> Path:
    return (project / ".codex") if project is not None else homes.codex_home()


def _toml_has_hook_events(path: Path) -> bool:
    """Whether a Codex config.toml defines hooks itself (``[hooks]`` tables
    other than the trust records of ``[hooks.state]``). A file that does not
    parse is refused (BadInput), never taken for one without hooks."""
    table = settings.read_toml(path, ("hooks",))
    return isinstance(table, dict) and any(k != "state" for k in table)


def places(agent: str, project: Path | None = None) -> list[Place]:
    """Every file that may hold hs's hooks for ``agent``: Claude Code's one
    settings file; Codex's ``config.toml`` (its ``[hooks]``) and ``hooks.json``
    (an install chose one, and the person may have added hooks of their own
    to the other since)."""
    if _agent(agent) == "claude-code":
        if project is not None:
            return [Place(agent, project / ".claude" / "settings.local.json", "json")]
        return [Place(agent, homes.claude_settings_file(), "json")]
    base = _codex_base(project)
    return [Place(agent, base / "config.toml", "toml"), Place(agent, base / "hooks.json", "json")]


def _ours(table: Any, event: str, agent: str) -> tuple[int, int, dict[str, Any]] | None:
    """Where hs's hook is in an event's list of groups of a table of events:
    (group, handler, the hook), the first one; None when there is none."""
    groups = table.get(event) if isinstance(table, dict) else None
    for gi, group in enumerate(groups if isinstance(groups, list) else []):
        hooks = group.get("hooks") if isinstance(group, dict) else None
        for hi, h in enumerate(hooks if isinstance(hooks, list) else []):
            if is_ours(h, agent):
                return gi, hi, h
    return None


def place(agent: str, project: Path | None = None) -> Place:
    """Where install puts hs's hooks: the file that holds them already; else
    Claude Code's settings file, Codex's ``config.toml`` when it defines
    hooks itself, or its ``hooks.json``. A file that does not parse is
    refused (BadInput)."""
    candidates = places(agent, project)
    for p in candidates:
        table = _read(p)
        if any(_ours(table, e, agent) for e in events_of(agent)):
            return p
    if agent == "claude-code":
        return candidates[0]
    config, hooks_json = candidates
    return config if _toml_has_hook_events(config.path) else hooks_json


def codex_config(project: Path | None = None) -> Path:
    return _codex_base(project) / "config.toml"


# ------------------------------------------------------------------ the changes


def _hook(cmd: str, timeout: int) -> dict[str, Any]:
    return {"type": "command", "command": cmd, "timeout": timeout}


def _not_a_list(where: str) -> BadInput:
    return BadInput(
        f"{where} is not a list of hook groups: nothing changed",
        hint="fix that entry of the file, then run the command again",
    )


def with_ours(current: Any, hook: dict[str, Any], agent: str, where: str) -> Any:
    """An event's list of matcher groups with hs's hook in it once: in place
    of the one there (keeping any key a person added to it), else in a new
    group at the end; every other group and hook as it was."""
    if current is settings.MISSING:
        return [{"hooks": [hook]}]
    if not isinstance(current, list):
        raise _not_a_list(where)
    out: list[Any] = []
    placed = False
    for group in current:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list) or not any(is_ours(h, agent) for h in hooks):
            out.append(group)
            continue
        kept = []
        for h in hooks:
            if not is_ours(h, agent):
                kept.append(h)
            elif not placed:
                kept.append({**h, **hook})
                placed = True
        if kept:
            out.append({**group, "hooks": kept})
    if not placed:
        out.append({"hooks": [hook]})
    return out


def without_ours(current: Any, agent: str) -> Any:
    """An event's list without hs's hooks, and without the groups that leaves
    empty (a person's hooks in a group with hs's stay); DELETE when nothing is
    left; as it was when it holds none of hs's."""
    if not isinstance(current, list):
        return current
    out: list[Any] = []
    changed = False
    for group in current:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list) or not any(is_ours(h, agent) for h in hooks):
            out.append(group)
            continue
        changed = True
        kept = [h for h in hooks if not is_ours(h, agent)]
        if kept:
            out.append({**group, "hooks": kept})
    if not changed:
        return current
    return out if out else settings.DELETE


@dataclass
class _Write:
    """The changes to make to one file, made as one write (one backup)."""

    path: Path
    format: str  # "json" | "toml"
    changes: list[tuple[tuple[str, ...], settings.Update]] = field(default_factory=list)


def _add(
    writes: list[_Write], path: Path, fmt: str, changes: list[tuple[tuple[str, ...], Any]]
) -> None:
    """Add ``changes`` to the write of ``path`` (a new one when there is none yet)."""
    for w in writes:
        if w.path == path:
            w.changes.extend(changes)
            return
    writes.append(_Write(path, fmt, list(changes)))


def _check(w: _Write) -> None:
    """Refuse now (BadInput) what the write would refuse, so a refused install
    or uninstall writes no file at all (nor creates the store): the changes
    computed on the file as it is, nothing written (the functions are pure:
    run again on the file when it is written)."""
    settings.check_many(w.path, w.format, w.changes)


def _write(w: _Write) -> settings.Change:
    if w.format == "json":
        return settings.update_json_many(w.path, w.changes)
    return settings.update_toml_many(w.path, w.changes)


# ------------------------------------------------------------------ notify


def _is_our_notify(value: Any) -> bool:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return False
    try:
        i = value.index("capture")
    except ValueError:
        return False
    return value[i + 1 : i + 3] == ["codex", "--notify"] and "--store" in value[:i]


def notify_argv(hs: list[str], store: Path, previous: Any) -> list[str]:
    """hs's notify program, chaining the one set before (a list of strings)."""
    chain = list(previous) if isinstance(previous, list) else []
    return [*command_argv(hs, store, "codex"), "--notify", "--", *chain]


def _chained(value: list[str]) -> list[str]:
    """The notify program hs was put in front of ([] for none)."""
    try:
        i = value.index("--", value.index("--notify"))
    except ValueError:
        return []
    return value[i + 1 :]


def codex_has_hooks() -> bool | None:
    """Whether the installed Codex runs hooks (``codex features list`` has a
    ``hooks`` or ``codex_hooks`` row); None when there is no ``codex`` to ask."""
    exe = shutil.which("codex")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "features", "list"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return False  # a Codex before `features`: no hooks either
    rows = {line.split()[0] for line in out.stdout.splitlines() if line.split()}
    return bool(rows & {"hooks", "codex_hooks"})


# ------------------------------------------------------------------ install


@dataclass
class Installed:
    """What an install or uninstall does to one agent's settings: planned
    (``writes``, every file checked), then done (``changes``: :func:`apply`)."""

    agent: str
    writes: list[_Write] = field(default_factory=list)
    changes: list[settings.Change] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    notify: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(c.changed for c in self.changes)

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "changed": self.changed,
            "events": self.events,
            "notify": self.notify,
            "files": [
                {
                    "file": str(c.path),
                    "changed": c.changed,
                    "created": c.created,
                    "backup": str(c.backup) if c.backup else None,
                }
                for c in self.changes
            ],
            "notes": self.notes,
        }


def check_install(agent: str, notify: bool | None) -> None:
    """What an install refuses before anything is written: an unknown agent,
    ``notify`` for an agent other than Codex."""
    if _agent(agent) != "codex" and notify is not None:
        raise BadInput(
            f"--notify and --no-notify are Codex's: {agent} has no notify program",
            hint=f"hs hooks install {agent}",
        )


def apply(plan: Installed) -> Installed:
    """Make a plan's writes, one per file."""
    plan.changes.extend(_write(w) for w in plan.writes)
    return plan


def plan_install(
    agent: str,
    hs: list[str],
    store: Path,
    *,
    project: Path | None = None,
    notify: bool | None = None,
) -> Installed:
    """What putting hs's hooks into ``agent``'s settings writes, every file
    checked first: a file that does not parse, or an entry hs would have to
    overwrite, refuses the whole install (BadInput) before anything is
    written. For Codex, ``notify`` True installs the notify program too,
    False never, None when the installed Codex has no hooks; it is Codex's
    alone (BadInput for another agent)."""
    check_install(agent, notify)
    cmd = command(hs, store, agent)
    p = place(agent, project)
    out = Installed(agent)
    use_hooks = True
    if agent == "codex" and notify is None:
        has = codex_has_hooks()
        if has is False:
            notify, use_hooks = True, False
            out.notes.append("this Codex runs no hooks: its notify program captures each turn")
        elif has is None:
            out.notes.append(
                "no `codex` found to ask whether it runs hooks; a Codex older than 0.114 "
                "does not: run again with --notify"
            )
    if use_hooks:
        evs = events_of(agent)

        def fn(event: str, timeout: int) -> settings.Update:
            where = f"{p.path}: {'.'.join((*p.keys, event))}"
            return lambda cur: with_ours(cur, _hook(cmd, timeout), agent, where)

        _add(out.writes, p.path, p.format, [((*p.keys, e), fn(e, t)) for e, t in evs.items()])
        out.events = list(evs)
        if agent == "codex":
            out.notes.append(
                "Codex runs a new hook only once it is trusted: open Codex and review it in /hooks"
            )
    if agent == "codex" and notify:

        def set_notify(cur: Any) -> Any:
            if _is_our_notify(cur):
                return notify_argv(hs, store, _chained(cur))
            if cur is not settings.MISSING and (
                not isinstance(cur, list) or not all(isinstance(v, str) for v in cur)
            ):
                raise BadInput(
                    f"{codex_config(project)}: notify is not a list of strings: nothing changed",
                    hint="fix it, then run the command again",
                )
            return notify_argv(hs, store, None if cur is settings.MISSING else cur)

        _add(out.writes, codex_config(project), "toml", [(("notify",), set_notify)])
        out.notify = True
    for w in out.writes:
        _check(w)
    return out


def uninstall(agent: str, *, project: Path | None = None) -> Installed:
    """Take hs's hooks (and notify program) out of ``agent``'s settings."""
    return apply(plan_uninstall(agent, project=project))


def plan_uninstall(agent: str, *, project: Path | None = None) -> Installed:
    """What taking hs's hooks (and notify program) out of ``agent``'s
    settings writes: every file that may hold them (:func:`places`), each
    checked first, so a file that does not parse refuses the whole
    uninstall before anything is written."""
    out = Installed(agent)
    evs = events_of(agent)

    def fn(cur: Any) -> Any:
        return without_ours(cur, agent)

    # every event hs may have hooked, whichever the install of the time chose
    names = sorted(set(evs) | set(CLAUDE_EVENTS if agent == "claude-code" else CODEX_EVENTS))
    out.events = names
    candidates = places(agent, project)
    for p in candidates:
        if p.path.exists():
            _add(out.writes, p.path, p.format, [((*p.keys, e), fn) for e in names])
    if agent == "codex":

        def unset_notify(cur: Any) -> Any:
            if not _is_our_notify(cur):
                return cur
            chain = _chained(cur)
            return chain if chain else settings.DELETE

        config = codex_config(project)
        if config.exists():
            _add(out.writes, config, "toml", [(("notify",), unset_notify)])
            out.notify = True
    if not out.writes:  # no file at all: nothing to change, and it says where it looked
        p = candidates[-1]
        _add(out.writes, p.path, p.format, [((*p.keys, e), fn) for e in names])
    for w in out.writes:
        _check(w)
    return out


# ------------------------------------------------------------------ status


def _codex_trust(p: Place, event: str, group: int, handler: int) -> str:
    """``trusted`` when Codex recorded trust for hs's hook at this place, else
    ``review in /hooks``. (Codex checks a hash of the hook against the record;
    hs cannot tell a stale record from a current one.)"""
    base = p.path.parent
    key = f"{p.path}:{_snake(event)}:{group}:{handler}"
    with contextlib.suppress(BadInput):
        state = settings.read_toml(base / "config.toml", ("hooks", "state"))
        if isinstance(state, dict):
            for k in (key, f"{p.path.resolve()}:{_snake(event)}:{group}:{handler}"):
                entry = state.get(k)
                if isinstance(entry, dict) and entry.get("trusted_hash"):
                    return "trusted"
    return "review in /hooks"


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


def hook_status(agent: str, store: Path, project: Path | None = None) -> dict[str, Any]:
    """What is installed for ``agent``: per event, whether hs's hook is there,
    in which file (:func:`places`: wherever it is), the store it writes to,
    its timeout, and (Codex) its trust. ``file`` is the file that holds
    hs's hooks, else the one install would write; ``error`` the first file
    that could not be read."""
    out: dict[str, Any] = {"agent": agent, "file": None, "events": {}, "error": None}
    tables: list[tuple[Place, Any]] = []
    for p in places(agent, project):
        try:
            tables.append((p, _read(p)))
        except BadInput as e:
            out["error"] = out["error"] or e.message
    for event in events_of(agent):
        found: dict[str, Any] = {"installed": False}
        for p, table in tables:
            hit = _ours(table, event, agent)
            if hit is None:
                continue
            gi, hi, h = hit
            found = {
                "installed": True,
                "file": str(p.path),
                "store": store_of(h),
                "this_store": store_of(h) == str(store),
                "timeout": h.get("timeout"),
            }
            if agent == "codex":
                found["trust"] = _codex_trust(p, event, gi, hi)
            break
        out["events"][event] = found
    held = [f["file"] for f in out["events"].values() if f["installed"]]
    if held:
        out["file"] = held[0]
    else:
        try:
            out["file"] = str(place(agent, project).path)
        except BadInput:  # said in error already
            out["file"] = str(places(agent, project)[-1].path)
    if agent == "codex":
        config = codex_config(project)
        try:
            value = settings.read_toml(config, ("notify",))
        except BadInput as e:
            value = None
            out["error"] = out["error"] or e.message
        out["notify"] = {
            "installed": _is_our_notify(value),
            "chained": _chained(value) if _is_our_notify(value) else [],
            "file": str(config),
        }
    return out


def runs_of(journal: Journal, agent: str) -> dict[str, dict[str, Any]]:
    """The last run of each of ``agent``'s hooks the journal recorded."""
    return {str(r.get("event")): r for r in journal.last_runs() if r.get("agent") == agent}


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)
