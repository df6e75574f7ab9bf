"""Putting a session back where its agent resumes it (``hs restore``).

The files are the session in its agent's format (histstore.overlay.transcripts:
exclusions applied there), written into the agent's own folder
(histstore.agents.sessions says where): Claude Code's
``projects/<slug>/<session>.jsonl`` with its sub-agents' files, Codex's
``sessions/YYYY/MM/DD/rollout-…-<id>.jsonl``.

* A file already there with the same content (for a sub-agent's
  ``.meta.json``: the same JSON) is left alone; a session whose files are all
  there is a no-op. The session's file already anywhere in the agent's folder
  (another project folder, another day's folder) counts as there.
* A file there that differs is never overwritten: the whole restore is
  refused (``Conflict``, nothing written) with the hint ``--as-new``, which
  writes the session under a new id with its records rewritten to it.
* Files are created, never replaced: each is written to a temporary file and
  linked into place, which fails if a file appeared there meanwhile (the
  agent wrote one); then the files this restore created are removed and it
  is refused. The sub-agents' files come first, the session's file last.
* A new file's modification time is now, so the agent's own cleanup (Claude
  Code deletes transcripts by mtime after ``cleanupPeriodDays``) does not
  take it at once. Files are private (0600).

The store is only read: a restore is no operation and takes no lock.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from histstore.agents.sessions import (
    Found,
    claude_project_dir,
    claude_root,
    codex_root,
    find_claude_session,
    find_codex_session,
)
from histstore.errors import BadInput, Conflict, HistError, NotFound
from histstore.history.reading import log_entries, resolve_session
from histstore.overlay.transcripts import AGENT_FORMATS, Transcript, TranscriptFile, transcript
from histstore.store.fsutil import create_new
from histstore.store.store import Store


@dataclass
class PlannedFile:
    """A transcript file a restore would write, and how it stands now."""

    path: Path
    file: TranscriptFile
    #: ``new`` (to write), ``same`` (there, unchanged) or ``differs``
    state: str


@dataclass
class RestorePlan:
    """What a restore would write into an agent's folder."""

    transcript: Transcript
    #: the agent's folder written into
    root: Path
    files: list[PlannedFile] = field(default_factory=list)
    #: the session's file found in the agent's folder where the agent does not
    #: resume from (Codex's archive)
    archived: list[Path] = field(default_factory=list)
    #: written into a folder given with --to, not the agent's own
    elsewhere: bool = False

    @property
    def session_path(self) -> Path:
        return next(f.path for f in self.files if f.file.kind == "session")

    @property
    def status(self) -> str:
        """``conflict`` (a file differs), ``present`` (every file there
        unchanged), ``partial`` (the session's file there, others missing) or
        ``missing`` (the session's file is not there)."""
        states = {f.state for f in self.files}
        if "differs" in states:
            return "conflict"
        if states == {"same"}:
            return "present"
        main = next(f for f in self.files if f.file.kind == "session")
        return "partial" if main.state == "same" else "missing"

    @property
    def to_write(self) -> list[PlannedFile]:
        return [f for f in self.files if f.state == "new"]

    def resume_command(self) -> str:
        """What to type to resume it (with the folder named, when it was --to)."""
        t = self.transcript
        if t.agent == "codex":
            env = f"CODEX_HOME={shlex.quote(str(self.root))} " if self.elsewhere else ""
            return f"{env}codex resume {t.session_id}"
        env = f"CLAUDE_CONFIG_DIR={shlex.quote(str(self.root))} " if self.elsewhere else ""
        return f"cd {shlex.quote(t.project)} && {env}claude --resume {t.session_id}"

    def as_json(self) -> dict[str, Any]:
        t = self.transcript
        out: dict[str, Any] = {
            "session": t.session_id,
            "agent": t.agent,
            "root": str(self.root),
            "files": [
                {"path": str(f.path), "kind": f.file.kind, "lines": f.file.lines, "state": f.state}
                for f in self.files
            ],
            "left_out": t.left_out,
            "relinked": t.relinked,
            "resume": self.resume_command(),
        }
        if t.session_id != t.stored_id:
            out["stored_session"] = t.stored_id
        if self.archived:
            out["archived"] = [str(p) for p in self.archived]
        return out


def _same(path: Path, f: TranscriptFile) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if data == f.data:
        return True
    if f.kind == "meta":  # hs keeps a sub-agent's meta as JSON, not its bytes
        try:
            return bool(json.loads(data) == json.loads(f.data))
        except ValueError:
            return False
    return False


def plan(
    store: Store, session: str, *, to: Path | None = None, as_new: bool = False
) -> RestorePlan:
    """Where session ``session`` (id or prefix) would go, and what is there."""
    sid_agent = _agent_of(store, session)
    t = transcript(store, session, sid_agent, as_new=as_new)
    if to is not None:
        to = store.check_outside(to, "--to")
    if t.agent == "claude-code":
        root = claude_root(to)
        found = [] if as_new else find_claude_session(root, t.session_id)
        base = found[0].path.parent if found else claude_project_dir(root / "projects", t.project)
        p = RestorePlan(t, root, elsewhere=to is not None)
    else:
        root = codex_root(to)
        found_all: list[Found] = [] if as_new else find_codex_session(root, t.session_id)
        resumable = [f for f in found_all if f.resumable]
        archived = [f.path for f in found_all if not f.resumable]
        p = RestorePlan(t, root, archived=archived, elsewhere=to is not None)
        base = root / "sessions"
        if resumable:
            p.files.append(
                PlannedFile(resumable[0].path, t.main, _state(resumable[0].path, t.main))
            )
            return p
    for f in t.files:
        path = base.joinpath(*f.path.parts)
        p.files.append(PlannedFile(path, f, _state(path, f)))
    return p


def _state(path: Path, f: TranscriptFile) -> str:
    if not path.exists():
        return "new"
    return "same" if _same(path, f) else "differs"


def _agent_of(store: Store, session: str) -> str:
    s = store.session(resolve_session(store, session))
    if s.agent not in AGENT_FORMATS:
        raise BadInput(
            f"session {s.session_id} was written by {s.agent}: only Claude Code and Codex "
            "sessions can be restored",
            hint="`hs export --format jsonl` exports it in hs's own format",
        )
    return s.agent


def apply(p: RestorePlan) -> list[Path]:
    """Write what ``p`` says is missing; the paths written. Refused (nothing
    written) when a file there differs."""
    differs = [f for f in p.files if f.state == "differs"]
    if differs:
        sid = p.transcript.stored_id
        raise Conflict(
            f"{differs[0].path} exists and differs from session {sid} as the store holds it",
            hint=f"`hs restore {sid} --as-new` writes it under a new id (both can be "
            "resumed); `--to DIR` writes it into another folder",
        )
    written: list[Path] = []
    try:
        for f in p.to_write:
            if not create_new(f.path, f.file.data, mode=0o600):
                if _same(f.path, f.file):
                    continue  # the same file appeared meanwhile
                raise Conflict(
                    f"{f.path} appeared while the session was restored, and differs",
                    hint="run `hs restore` again to see what is there",
                )
            written.append(f.path)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    return written


@dataclass
class Restored:
    """One session of ``hs restore --since``."""

    session_id: str
    agent: str
    #: ``restored`` (written; ``would-restore`` in a dry run), ``present``
    #: (its file is in the agent's folder: left alone), ``skipped`` (not
    #: restorable: ``reason`` says why)
    status: str
    plan: RestorePlan | None = None
    reason: str | None = None
    written: list[Path] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"session": self.session_id, "agent": self.agent}
        out["status"] = self.status
        if self.plan is not None:
            out.update({k: v for k, v in self.plan.as_json().items() if k not in out})
        if self.reason:
            out["reason"] = self.reason
        return out


def sessions_since(
    store: Store, since: str, *, agent: str | None = None, project: str | None = None
) -> list[tuple[str, str]]:
    """(session id, agent) of every Claude Code or Codex session with a turn
    asked since ``since`` (RFC 3339), newest first."""
    if agent is not None and agent not in AGENT_FORMATS:
        raise BadInput(
            f"--agent {agent}: only claude-code and codex sessions can be restored",
            hint="use --agent claude-code or --agent codex",
        )
    seen: dict[str, str] = {}
    for e in log_entries(store, since=since, agent=agent, project=project):
        a = e.session.agent
        if a in AGENT_FORMATS and e.session.session_id not in seen:
            seen[e.session.session_id] = a
    return list(seen.items())


def restore_missing(
    store: Store, session_id: str, agent: str, *, to: Path | None = None, dry_run: bool = False
) -> Restored:
    """One session of ``hs restore --since``: written when its file is missing
    from the agent's folder, left alone when it is there (unchanged or not)."""
    try:
        p = plan(store, session_id, to=to)
    except (NotFound, Conflict, BadInput) as e:
        return Restored(session_id, agent, "skipped", reason=e.message)
    if p.status != "missing":
        return Restored(session_id, agent, "present", p)
    if dry_run:
        return Restored(session_id, agent, "would-restore", p)
    try:
        return Restored(session_id, agent, "restored", p, written=apply(p))
    except HistError as e:
        return Restored(session_id, agent, "skipped", p, reason=e.message)


def restore_since(
    store: Store,
    since: str,
    *,
    agent: str | None = None,
    project: str | None = None,
    to: Path | None = None,
    dry_run: bool = False,
    progress: Callable[[Restored], None] | None = None,
) -> list[Restored]:
    """Restore every session of the window whose file is missing from its
    agent's folder; sessions there are left alone."""
    out = []
    for sid, a in sessions_since(store, since, agent=agent, project=project):
        r = restore_missing(store, sid, a, to=to, dry_run=dry_run)
        out.append(r)
        if progress is not None:
            progress(r)
    return out
