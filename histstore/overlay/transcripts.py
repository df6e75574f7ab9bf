"""A session out of the store in its agent's own format: Claude Code's session
JSONL with its sub-agents' files, or a Codex rollout.

The files are the turns' raw records — each line as the agent wrote it
(redacted: a line differs from the original only inside redacted spans) —
put back in their original order:

* on the machine that imported them, by the file line of every record (the
  source table keeps it, histstore.history.sources): exact, also when a turn's
  records are not one run of the file (a fork's branch continued after a
  later prompt);
* else by the file line of each turn's prompt, when the table has that (a
  table row from before per-record lines): each turn's records in file order,
  the turns in file order; a file whose turns overlap is listed in
  :attr:`Transcript.unordered`;
* else (a store synced from elsewhere) in the session's order, by ``asked_at``:
  what the importers give whenever a turn's records are one run of the file
  and prompts were written in time order, as in every sample checked.

What an exclusion hides is decided by histstore.overlay.visibility (the
export view): an excluded turn's records are left out, a tombstoned turn's
kept. So that the agent can still resume what is left:

* Claude Code rebuilds a conversation by following ``parentUuid``; a record
  whose parent (or ``logicalParentUuid``, or a ``leafUuid``) was left out is
  re-linked to the nearest ancestor that stays (``null`` when none does).
  Only that value of the line changes.
* Codex needs the ``session_meta`` that opens the rollout: when the first
  turn is excluded, that line (the session's header, none of the turn's
  text) stays. A ``thread_rolled_back`` after an excluded turn would undo a
  different turn once that one is gone, so such an export is refused.

Text a later record repeats (a compaction's summary, Codex's replacement
history) belongs to that record and stays.

``as_new`` gives the session a new id with every id it defines rewritten
consistently (Claude Code: the session, every record's ``uuid`` and
``promptId``, every sub-agent's ``agentId``; Codex: the session and every
``turn_id``), wherever it appears in a line, so the copy and the original can
both be resumed (and imported) side by side.
"""

from __future__ import annotations

import json
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from histstore.agents.sessions import codex_rollout_name, parse_utc
from histstore.errors import BadInput, Conflict, NotFound
from histstore.history.reading import load_turn, raw_records, resolve_session
from histstore.history.sources import Sources
from histstore.overlay.markers import Overlay
from histstore.overlay.visibility import View, Visibility
from histstore.store.fsutil import atomic_write
from histstore.store.kinds import TurnEntry
from histstore.store.refs import check_component
from histstore.store.store import Store

AGENT_FORMATS = ("claude-code", "codex")

_UUID = re.compile(
    r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-"
    r"[0-9A-Fa-f]{12}(?![0-9A-Fa-f])"
)
_LINK_KEYS = ("parentUuid", "logicalParentUuid", "leafUuid")


@dataclass(frozen=True)
class TranscriptFile:
    """One file of a session in its agent's layout."""

    #: relative to the agent's folder for the session: Claude Code's project
    #: folder (``<session>.jsonl``, ``<session>/subagents/agent-<id>.jsonl``,
    #: ``agent-<id>.jsonl``), Codex's ``sessions/`` (``YYYY/MM/DD/rollout-….jsonl``)
    path: PurePosixPath
    data: bytes
    #: ``session``, ``subagent`` or ``meta`` (a sub-agent's ``.meta.json``)
    kind: str
    lines: int
    subagent: str | None = None


@dataclass
class Transcript:
    """A session written back in its agent's own format, file by file."""

    session_id: str  # the id the files carry (a new one with as_new)
    stored_id: str  # the session's id in the store
    agent: str
    #: the session's launch directory (Claude Code's project folder is named for it)
    project: str
    files: list[TranscriptFile] = field(default_factory=list)
    #: excluded turns whose records were left out
    left_out: list[str] = field(default_factory=list)
    #: records whose parent link was moved over a left-out turn
    relinked: int = 0
    #: turns with no raw records (written by ``hs record``): not in the files
    no_raw: list[str] = field(default_factory=list)
    #: files whose turns overlap in the original and whose records' lines this
    #: store does not know: their order is the turns' order, maybe not the original
    unordered: list[str] = field(default_factory=list)
    #: as_new: every id rewritten, old -> new
    ids: dict[str, str] = field(default_factory=dict)
    #: Codex: when the session started (its rollout is named for it)
    started: datetime | None = None

    @property
    def main(self) -> TranscriptFile:
        return next(f for f in self.files if f.kind == "session")


@dataclass
class _Part:
    """One turn's records."""

    entry: TurnEntry
    lines: list[str]
    hidden: bool
    where: dict[str, Any] | None
    meta: Any = None  # a Claude Code sub-agent's .meta.json, as stored


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _obj(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def transcript(store: Store, session: str, fmt: str, *, as_new: bool = False) -> Transcript:
    """Session ``session`` (id or prefix) as files of agent format ``fmt``."""
    if fmt not in AGENT_FORMATS:
        raise BadInput(f"unknown agent format {fmt!r}", hint="use claude-code or codex")
    sid = resolve_session(store, session)
    s = store.session(sid)
    if s.agent != fmt:
        hint = (
            f"use --format {s.agent}"
            if s.agent in AGENT_FORMATS
            else "use --format jsonl or markdown: only Claude Code and Codex sessions have one"
        )
        raise BadInput(f"session {sid} was written by {s.agent}, not {fmt}", hint=hint)
    vis = Visibility(Overlay.read(store))
    out = Transcript(sid, sid, fmt, s.project)
    groups: dict[str | None, list[_Part]] = {}
    sources = Sources(store, readonly=True)
    try:
        for e in s.turns:
            turn = load_turn(store, e.object)
            hidden = vis.turn(View.EXPORT, sid, e.turn_id) is not None
            lines = raw_records(store, turn)
            if hidden:
                out.left_out.append(e.turn_id)
            elif not lines:
                out.no_raw.append(e.turn_id)
                continue
            extra = _dict(turn.get("extra"))
            part = _Part(e, lines, hidden, sources.where(e.object), extra.get("subagent_meta"))
            groups.setdefault(e.subagent, []).append(part)
    finally:
        sources.close()
    if not any(not p.hidden for p in groups.get(None, [])):
        hint = "`hs forgotten` lists exclusions; `hs unforget` lifts one"
        if out.left_out and not any(not p.hidden for ps in groups.values() for p in ps):
            raise NotFound(f"every turn of session {sid} is excluded: nothing to export", hint=hint)
        if out.left_out:
            raise NotFound(
                f"every turn of session {sid}'s own file is excluded (only sub-agents' are "
                "left): nothing the agent could resume",
                hint=hint,
            )
        raise NotFound(f"session {sid} holds no records of {fmt}'s to export")
    if fmt == "claude-code":
        _claude(out, groups)
    else:
        _codex(out, groups.get(None, []))
    if as_new:
        _as_new(out)
    return out


# --------------------------------------------------------------------------- order


def _ordered(parts: list[_Part], name: str, out: Transcript) -> list[str]:
    """The records of the shown turns of one file, in the file's order."""
    shown = [p for p in parts if not p.hidden]
    wheres = [p.where for p in shown]
    files = {w.get("file") for w in wheres if w is not None}
    if len(files) == 1 and all(w is not None for w in wheres):
        exact = all(
            isinstance(w.get("lines"), list) and len(w["lines"]) == len(p.lines)
            for w, p in zip(wheres, shown, strict=True)
            if w is not None
        )
        if exact:
            numbered = [
                (n, line)
                for p in shown
                if p.where is not None
                for n, line in zip(p.where["lines"], p.lines, strict=True)
            ]
            numbered.sort(key=lambda x: x[0])
            return [line for _, line in numbered]
        if all(isinstance(w.get("line"), int) for w in wheres if w is not None):
            shown.sort(key=lambda p: p.where["line"] if p.where else 0)
            ends = [p.where.get("end_line") for p in shown if p.where]
            starts = [p.where.get("line") for p in shown if p.where]
            if any(
                isinstance(a, int) and isinstance(b, int) and a > b
                for a, b in zip(ends, starts[1:], strict=False)
            ):
                out.unordered.append(name)
    return [line for p in shown for line in p.lines]


# --------------------------------------------------------------------------- Claude Code


def _claude(out: Transcript, groups: dict[str | None, list[_Part]]) -> None:
    removed: dict[str, str | None] = {}
    for parts in groups.values():
        for p in parts:
            if p.hidden:
                for line in p.lines:
                    obj = _obj(line)
                    u = obj.get("uuid")
                    if isinstance(u, str):
                        parent = obj.get("parentUuid")
                        removed[u] = parent if isinstance(parent, str) else None
    if removed:  # a uuid a record that stays defines too is no gap
        for parts in groups.values():
            for p in parts:
                if not p.hidden:
                    for line in p.lines:
                        u = _obj(line).get("uuid")
                        if isinstance(u, str):
                            removed.pop(u, None)
    sid = out.session_id
    for agent, parts in groups.items():
        if not any(not p.hidden for p in parts):
            continue
        if agent is None:
            name = PurePosixPath(f"{sid}.jsonl")
        else:
            check_component(agent, "sub-agent id")
            legacy = _legacy_subagent(parts)
            name = (
                PurePosixPath(f"agent-{agent}.jsonl")
                if legacy
                else PurePosixPath(sid, "subagents", f"agent-{agent}.jsonl")
            )
        lines = _ordered(parts, str(name), out)
        if removed:
            lines = [_relink(line, removed, out) for line in lines]
        kind = "session" if agent is None else "subagent"
        out.files.append(TranscriptFile(name, _join(lines), kind, len(lines), agent))
        meta = next((p.meta for p in parts if not p.hidden and p.meta is not None), None)
        if agent is not None and meta is not None:
            data = json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            meta_name = name.with_name(f"agent-{agent}.meta.json")
            out.files.append(TranscriptFile(meta_name, data, "meta", 1, agent))
    # the session's file last: written last, it appears only once all else is there
    out.files.sort(key=lambda f: (f.kind == "session", str(f.path)))


def _legacy_subagent(parts: list[_Part]) -> bool:
    """A sub-agent whose file sits beside the session's (``agent-<id>.jsonl``),
    not under ``<session>/subagents/``: where its file was when it was
    imported, else as Claude Code up to 2.0 wrote it (the ``version`` of its
    records)."""
    for p in parts:
        file = p.where.get("file") if p.where else None
        if isinstance(file, str) and PurePosixPath(file).name.startswith("agent-"):
            return PurePosixPath(file).parent.name != "subagents"
    for p in parts:
        for line in p.lines:
            version = _obj(line).get("version")
            m = re.match(r"(\d+)\.(\d+)", version) if isinstance(version, str) else None
            if m:
                return (int(m.group(1)), int(m.group(2))) < (2, 1)
    return False


def _relink(line: str, removed: dict[str, str | None], out: Transcript) -> str:
    """``line`` with each link to a left-out record moved to the nearest
    ancestor that stays."""
    obj = _obj(line)
    if not any(isinstance(obj.get(k), str) and obj[k] in removed for k in _LINK_KEYS):
        return line
    changed = False
    for key in _LINK_KEYS:
        old = obj.get(key)
        if not isinstance(old, str) or old not in removed:
            continue
        new = _ancestor(old, removed)
        as_text = f'"{key}":"{old}"'
        replacement = f'"{key}":' + (f'"{new}"' if new is not None else "null")
        if line.count(as_text) == 1:
            line = line.replace(as_text, replacement)
        else:  # not written compactly: the value changes, the layout may not survive
            obj[key] = new
            line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        obj[key] = new
        changed = True
    if changed:
        out.relinked += 1
    return line


def _ancestor(u: str, removed: dict[str, str | None]) -> str | None:
    seen = set()
    cur: str | None = u
    while cur is not None and cur in removed and cur not in seen:
        seen.add(cur)
        cur = removed[cur]
    return None if cur in removed else cur


# --------------------------------------------------------------------------- Codex


def _codex(out: Transcript, parts: list[_Part]) -> None:
    header: list[str] = []
    first_hidden = parts[0].hidden if parts else False
    if first_hidden:
        for line in parts[0].lines:
            if _obj(line).get("type") == "session_meta":
                header.append(line)
                break
    for i, p in enumerate(parts):
        if not p.hidden:
            continue
        later = [q for q in parts[i + 1 :] if not q.hidden]
        if any(
            "thread_rolled_back" in line
            and _dict(_obj(line).get("payload")).get("type") == "thread_rolled_back"
            for q in later
            for line in q.lines
        ):
            raise Conflict(
                f"turn {p.entry.turn_id} of session {out.session_id} is excluded and a later "
                "rollback (thread_rolled_back) counts it: without it the rollback would undo "
                "a different turn, so the rollout is not exported",
                hint="`hs export --format jsonl --session` exports its turns in hs's own format",
            )
    lines = header + _ordered(parts, "rollout", out)
    started = None
    for line in lines[:50]:
        obj = _obj(line)
        if obj.get("type") == "session_meta":
            payload = _dict(obj.get("payload"))
            started = parse_utc(str(payload.get("timestamp") or obj.get("timestamp") or ""))
            break
    if started is None:
        first = _obj(lines[0]) if lines else {}
        started = parse_utc(str(first.get("timestamp") or ""))
    if started is None:
        started = parse_utc(parts[0].entry.asked_at)
    out.started = started
    assert started is not None
    name = PurePosixPath(codex_rollout_name(started, out.session_id))
    out.files.append(TranscriptFile(name, _join(lines), "session", len(lines)))


# --------------------------------------------------------------------------- as new


def _uuid7() -> str:
    """A time-ordered UUID (version 7), as Codex's thread ids are."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(secrets.token_bytes(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | (rand >> 68) << 64
    value |= 0b10 << 62 | rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def _new_agent_id(old: str) -> str:
    """A new sub-agent id shaped like ``old`` (its first character kept: 2.1's
    ids start with ``a``), lowercase hex."""
    return old[:1] + secrets.token_hex(len(old))[: len(old) - 1]


def _as_new(out: Transcript) -> None:
    codex = out.agent == "codex"
    fresh = _uuid7 if codex else (lambda: str(uuid.uuid4()))
    ids: dict[str, str] = {out.stored_id: fresh()}
    agents: dict[str, str] = {}
    for f in out.files:
        if f.kind == "meta":
            continue
        for line in f.data.decode("utf-8").split("\n")[:-1]:
            obj = _obj(line)
            if codex:
                values = [_dict(obj.get("payload")).get("turn_id")]
            else:
                values = [obj.get("uuid"), obj.get("promptId")]
                agent = obj.get("agentId")
                if isinstance(agent, str) and agent and agent not in agents:
                    agents[agent] = _new_agent_id(agent)
            for v in values:
                if isinstance(v, str) and v and v not in ids:
                    ids[v] = fresh()
        if f.subagent and f.subagent not in agents:
            agents[f.subagent] = _new_agent_id(f.subagent)
    lower = {k.lower(): v for k, v in ids.items() if _UUID.fullmatch(k)}
    # an id of another shape (a hand-written record's) is rewritten where it is
    # a whole JSON string
    other = {
        json.dumps(k, ensure_ascii=False): json.dumps(v)
        for k, v in ids.items()
        if not _UUID.fullmatch(k)
    }
    other_re = (
        re.compile("|".join(re.escape(k) for k in sorted(other, key=len, reverse=True)))
        if other
        else None
    )
    agent_re = (
        re.compile(
            r"(?<![0-9A-Za-z])("
            + "|".join(re.escape(a) for a in sorted(agents, key=len, reverse=True))
            + r")(?![0-9A-Za-z])"
        )
        if agents
        else None
    )

    def rewrite(text: str) -> str:
        text = _UUID.sub(lambda m: lower.get(m.group(0).lower(), m.group(0)), text)
        if other_re is not None:
            text = other_re.sub(lambda m: other[m.group(0)], text)
        if agent_re is not None:
            text = agent_re.sub(lambda m: agents[m.group(1)], text)
        return text

    files = []
    for f in out.files:
        name = PurePosixPath(rewrite(str(f.path)))
        data = rewrite(f.data.decode("utf-8")).encode("utf-8")
        sub = agents.get(f.subagent, f.subagent) if f.subagent else None
        files.append(TranscriptFile(name, data, f.kind, f.lines, sub))
    out.files = files
    out.session_id = ids[out.stored_id]
    out.ids = {**ids, **agents}


def _join(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode("utf-8")


# --------------------------------------------------------------------------- export


def export_transcript(
    store: Store,
    t: Transcript,
    *,
    output: Path | None = None,
    directory: Path | None = None,
) -> list[Path]:
    """Write ``t``: its session file to ``output``, or every file of it under
    ``directory`` in the agent's layout (atomically each, never inside the
    store); the paths written."""
    if output is not None:
        target = store.check_output_file(output, "--output")
        atomic_write(target, t.main.data)
        return [target]
    if directory is None:
        return []
    root = store.check_outside(directory, "--dir")
    written = []
    for f in t.files:
        path = root.joinpath(*f.path.parts)
        atomic_write(path, f.data)
        written.append(path)
    return written
