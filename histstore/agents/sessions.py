"""Where each agent keeps a session's files and resumes it from.

* Claude Code: ``<config dir>/projects/<slug>/<session>.jsonl``, the config
  dir ``$CLAUDE_CONFIG_DIR`` else ``~/.claude``; the slug is the session's
  launch directory with every character outside ``[A-Za-z0-9]`` (each UTF-16
  code unit of it, as JavaScript counts) made ``-``; a slug over 200
  characters is cut to 200 and given ``-<hash>`` (Claude Code's hash of the
  directory: under Node a 32-bit string hash in base 36, under Bun
  ``Bun.hash``; so an existing folder of that prefix is used when there is
  exactly one, else the Node form). Sub-agents: ``<slug>/<session>/subagents/
  agent-<id>.jsonl`` (2.1 on), ``<slug>/agent-<id>.jsonl`` (up to 2.0).
  ``claude --resume <session>`` run in that directory finds it.
* Codex: ``<home>/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl``,
  the home ``$CODEX_HOME`` else ``~/.codex``, date and time the session's
  start in local time (what Codex writes: its ``session_meta`` holds the same
  instant in UTC). ``codex resume <id>`` finds a rollout by the id in its
  name (its thread database is repaired from the file). Old rollouts are
  moved to ``archived_sessions/``, where ``codex resume`` does not look.

Nothing here reads a session's content or writes anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from histstore.agents.homes import claude_config_dir, codex_home

SLUG_MAX = 200
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def js_hash36(text: str) -> str:
    """Claude Code's hash of a long project path under Node: ``h = (h << 5) -
    h + c | 0`` over UTF-16 code units, ``Math.abs(h).toString(36)``."""
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = ((h << 5) - h + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    n = abs(h)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def claude_slug(cwd: str) -> str:
    """The folder name Claude Code gives a launch directory (short form)."""
    # a character outside the BMP is two UTF-16 code units: two dashes
    units = "".join(c if ord(c) < 0x10000 else c + c for c in cwd)
    return _NOT_ALNUM.sub("-", units)


def claude_project_dir(projects: Path, cwd: str) -> Path:
    """``projects/<slug>`` for ``cwd``, as the Claude Code here would name it."""
    slug = claude_slug(cwd)
    if len(slug) <= SLUG_MAX:
        return projects / slug
    prefix = slug[:SLUG_MAX] + "-"
    try:
        found = [p for p in projects.iterdir() if p.is_dir() and p.name.startswith(prefix)]
    except OSError:
        found = []
    if len(found) == 1:
        return found[0]
    return projects / (prefix + js_hash36(cwd))


def claude_root(to: Path | None = None) -> Path:
    """Claude Code's folder: ``to`` when given, else ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    return to if to is not None else claude_config_dir()


def codex_root(to: Path | None = None) -> Path:
    """Codex's folder: ``to`` when given, else ``$CODEX_HOME`` or ``~/.codex``."""
    return to if to is not None else codex_home()


def codex_rollout_name(started: datetime, session_id: str) -> PurePosixPath:
    """``YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl`` (under ``sessions/``)
    for a session started at ``started``, in this machine's local time."""
    local = started.astimezone()
    stamp = local.strftime("%Y-%m-%dT%H-%M-%S")
    return PurePosixPath(
        f"{local:%Y}", f"{local:%m}", f"{local:%d}", f"rollout-{stamp}-{session_id}.jsonl"
    )


def parse_utc(text: str) -> datetime | None:
    """An RFC 3339 time as Codex writes it (``2026-03-04T05:06:07.890Z``)."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Found:
    """A session's file already in an agent's folder."""

    path: Path
    #: it is where the agent resumes from (not, say, Codex's archive)
    resumable: bool


def find_claude_session(root: Path, session_id: str) -> list[Found]:
    """Every ``projects/*/<session>.jsonl`` under Claude Code's folder."""
    projects = root / "projects"
    try:
        dirs = [p for p in projects.iterdir() if p.is_dir()]
    except OSError:
        return []
    name = f"{session_id}.jsonl"
    return [Found(d / name, True) for d in sorted(dirs) if (d / name).is_file()]


def find_codex_session(root: Path, session_id: str) -> list[Found]:
    """Every rollout named for ``session_id`` under ``sessions/`` (resumable)
    and ``archived_sessions/`` (not)."""
    out: list[Found] = []
    for sub, pattern, resumable in (
        ("sessions", "*/*/*/rollout-*", True),
        ("archived_sessions", "rollout-*", False),
    ):
        base = root / sub
        if not base.is_dir():
            continue
        out += [
            Found(p, resumable)
            for p in sorted(base.glob(pattern))
            if p.name.endswith(f"-{session_id}.jsonl") and p.is_file()
        ]
    return out
