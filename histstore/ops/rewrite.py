"""The purges that rewrite: a text wherever it occurs (``hs purge --text``) and
what the current rules redact (``hs redact --apply``).

Both read every object the store holds, reachable or not, and rewrite each
whose content changes — the text replaced by ``[REDACTED:purged]``, or every
string redacted again with the current rule set and ``[redact] patterns`` —
as a new object; then everything that names a rewritten object is rewritten
to name its replacement (a turn its blobs, a marker its parents), and each
ref's value gets a new revision (a session's full, a memory scope's of kind
``purge``) so that nothing current names an old one. The old objects are what
the purge removes (histstore.ops.purge); ``replaced`` maps each to its
replacement, so a store that receives the purge moves its refs the same way.

Ids are never rewritten: a text that occurs in a session's or turn's id, a
ref name or ``config.toml`` is refused (purge that session or turn, or change
the setting, instead); a redaction leaves an id as it is.
"""

from __future__ import annotations

import json
import re
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from histstore.errors import BadInput, NotFound
from histstore.history.sources import NAME as SOURCES_NAME
from histstore.ops.purge import Plan, Report, Step, count_kinds, purge
from histstore.ops.purge_files import capture_files, capture_key, line_key, path_key, read_only
from histstore.store.codec import canonical_json, decode_json
from histstore.store.kinds import (
    BLOB_FIELDS,
    MemRev,
    SessionRev,
    TurnEntry,
    blob_refs,
    is_blob_ref,
    ordered,
    parse,
)
from histstore.store.purged import PLACEHOLDER
from histstore.store.redact import Redactor, redact_json_line
from histstore.store.store import SESSION_PREFIX, Store

Put = Callable[[str, bytes], str]

#: fields that hold ids, never rewritten (a text in one refuses the purge)
_IDS = {
    "turn": ("turn_id", "session_id"),
    "session": ("session_id", "parents"),
    "memrev": ("scope", "tree", "parents"),
    "marker": ("target", "session", "parents", "target_kind"),
    "memtree": (),
}
_MARK = re.compile(r"\[REDACTED:([A-Za-z0-9_-]+)\]")
#: the minimum length of a text to purge (shorter ones are in everything)
MIN_TEXT = 6


class Rewrite(ABC):
    what: str

    @abstractmethod
    def string(self, s: str) -> str: ...

    @abstractmethod
    def blob(self, data: bytes, raw: bool) -> bytes: ...

    @abstractmethod
    def may_change(self, payload: bytes) -> bool:
        """A cheap look: False when rewriting cannot change this payload."""

    def document(self, kind: str, value: Any) -> Any:
        """A JSON object's strings (and keys) rewritten, its ids kept."""
        new = self._strings(value)
        return self._keep_ids(kind, value, new)

    def _strings(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, dict):
            return {self.string(k): self._strings(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._strings(v) for v in value]
        return value

    def _keep_ids(self, kind: str, old: Any, new: Any) -> Any:
        if not isinstance(old, dict) or not isinstance(new, dict):
            return old
        for key in _IDS.get(kind, ()):
            if key in old and new.get(key) != old[key]:
                self.refuse(kind, str(old[key]))
                new[key] = old[key]
        if kind == "turn":
            if "raw" in old:
                new["raw"] = old["raw"]
            old_steps, new_steps = old.get("steps"), new.get("steps")
            if isinstance(old_steps, list) and isinstance(new_steps, list):
                for o, n in zip(old_steps, new_steps, strict=False):
                    if isinstance(o, dict) and isinstance(n, dict):
                        for f in BLOB_FIELDS:
                            if is_blob_ref(o.get(f)):
                                n[f] = o[f]
        elif kind == "session":
            turns_old, turns_new = old.get("turns") or [], new.get("turns") or []
            for o, n in zip(turns_old, turns_new, strict=False):
                for f in ("turn_id", "object", "asked_at"):
                    if isinstance(o, dict) and isinstance(n, dict) and f in o:
                        if n.get(f) != o[f]:
                            self.refuse(kind, str(o[f]))
                        n[f] = o[f]
        elif kind == "memtree":
            files = old.get("files") or {}
            new["files"] = {self.string(k): v for k, v in files.items()}
        return new

    @abstractmethod
    def refuse(self, kind: str, ident: str) -> None:
        """A text in an id: a redaction leaves the id; a text purge refuses."""

    def command(self, text: str) -> str:
        return self.string(text)

    def extra(self, extra: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in extra.items():
            out[k] = self.string(v) if isinstance(v, str) and k not in ("undoes", "purge") else v
        return out


class TextRewrite(Rewrite):
    """A literal text replaced by the placeholder, wherever it is."""

    what = "text"

    def __init__(self, text: str) -> None:
        if len(text) < MIN_TEXT:
            raise BadInput(
                f"the text to purge is {len(text)} characters long; give at least {MIN_TEXT}",
                hint="a shorter text occurs in ordinary prose and ids everywhere",
            )
        if PLACEHOLDER in text or text in PLACEHOLDER:
            raise BadInput("the text to purge overlaps the placeholder it is replaced by")
        self.text = text
        forms = {
            text.encode("utf-8"),
            json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8"),
            json.dumps(text)[1:-1].encode("ascii"),
        }
        self.forms = sorted(forms, key=len, reverse=True)

    def string(self, s: str) -> str:
        return s.replace(self.text, PLACEHOLDER) if self.text in s else s

    def may_change(self, payload: bytes) -> bool:
        return any(f in payload for f in self.forms)

    def blob(self, data: bytes, raw: bool) -> bytes:
        for f in self.forms:
            if f in data:
                data = data.replace(f, PLACEHOLDER.encode("ascii"))
        return data

    def refuse(self, kind: str, ident: str) -> None:
        raise BadInput(
            f"the text occurs in the id of a {kind} ({ident[:60]}); ids are never rewritten",
            hint="purge that session or turn instead: hs purge ID --confirm ID",
        )


class RedactRewrite(Rewrite):
    """Every string redacted again, with the rules and patterns of now."""

    what = "redact"

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def string(self, s: str) -> str:
        return self.redactor(s)

    def may_change(self, payload: bytes) -> bool:
        return True

    def refuse(self, kind: str, ident: str) -> None:
        return None  # the id stays as it is

    def document(self, kind: str, value: Any) -> Any:
        # the JSON text as a whole, so a key names what its value is
        # (``"password": "…"``); ids and blob references are put back
        text = canonical_json(value).decode("utf-8")
        out = self.redactor(text)
        if out == text:
            return value
        try:
            new = json.loads(out)
        except ValueError:
            new = self._strings(value)
        return self._keep_ids(kind, value, new)

    def blob(self, data: bytes, raw: bool) -> bytes:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return data  # not text: stored as it came
        if not raw:
            return self.redactor(text).encode("utf-8")
        lines = text.split("\n")
        out: list[str] = []
        for ln in lines:
            if not ln:
                out.append(ln)
                continue
            try:
                out.append(redact_json_line(self.redactor, ln)[0])
            except ValueError:
                out.append(self.redactor(ln))
        return "\n".join(out).encode("utf-8")


def _count(plan: Plan, old: str, new: str) -> None:
    before: dict[str, int] = {}
    for m in _MARK.finditer(old):
        before[m.group(1)] = before.get(m.group(1), 0) + 1
    for m in _MARK.finditer(new):
        k = m.group(1)
        if before.get(k, 0) > 0:
            before[k] -= 1
        else:
            plan.findings[k] = plan.findings.get(k, 0) + 1


def _text(value: Any) -> str:
    return value if isinstance(value, str) else canonical_json(value).decode("utf-8", "replace")


def plan_rewrite(store: Store, rw: Rewrite, put: Put) -> Plan:
    """Every object rewritten (module docstring); new objects through ``put``."""
    plan = Plan(rw.what, None, set())
    if isinstance(rw, TextRewrite):
        _refuse_outside_objects(store, rw)
    objects = store.objects
    purged = store.purged_ids()
    raw_blobs: set[str] = set()
    turn_blobs: dict[str, list[str]] = {}
    marker_parents: dict[str, list[str]] = {}
    hits: dict[str, tuple[str, Any]] = {}
    blobs: list[str] = []
    for i in objects.iter_ids():
        if i in purged:
            continue
        kind, payload = objects.get(i)
        if kind == "blob":
            blobs.append(i)
            continue
        value = decode_json(i, payload)
        if kind == "turn" and isinstance(value, dict):
            refs = list(blob_refs(value))
            turn_blobs[i] = refs
            raw = value.get("raw")
            if isinstance(raw, dict) and is_blob_ref(raw, frozenset({"blob", "lines", "size"})):
                raw_blobs.add(str(raw["blob"]))
        elif kind == "marker" and isinstance(value, dict):
            marker_parents[i] = [p for p in value.get("parents") or [] if isinstance(p, str)]
        if rw.may_change(payload):
            new = rw.document(kind, value)
            if new != value:
                hits[i] = (kind, new)
                _count(plan, _text(value), _text(new))
    replaced = plan.replaced
    for b in blobs:
        data = store.get_blob(b)
        if not rw.may_change(data):
            continue
        new_data = rw.blob(data, b in raw_blobs)
        if new_data != data:
            _count(plan, data.decode("utf-8", "replace"), new_data.decode("utf-8", "replace"))
            plan.drop.add(b)
            replaced[b] = put("blob", new_data)
    for t, refs in turn_blobs.items():
        if t in hits or any(r in replaced for r in refs):
            value = hits[t][1] if t in hits else store.get_json(t, "turn")
            _remap_blobs(value, replaced)
            plan.drop.add(t)
            replaced[t] = put("turn", canonical_json(value))
    changed = True
    while changed:  # a marker follows its parents' replacements
        changed = False
        for m, parents in marker_parents.items():
            if m in replaced or not (m in hits or any(p in replaced for p in parents)):
                continue
            value = hits[m][1] if m in hits else store.get_json(m, "marker")
            value["parents"] = sorted(replaced.get(p, p) for p in parents)
            plan.drop.add(m)
            replaced[m] = put("marker", canonical_json(value))
            changed = True
    for i, (kind, _) in hits.items():
        if kind in ("session", "memtree", "memrev"):
            plan.drop.add(i)  # a revision of history: gone (what names it keeps a hole)
    _heads(store, rw, plan, put)
    _log(store, rw, plan)
    _sources(store, rw, plan)
    _capture(store, rw, plan)
    count_kinds(store, plan)
    return plan


def _remap_blobs(turn: dict[str, Any], replaced: dict[str, str]) -> None:
    raw = turn.get("raw")
    if isinstance(raw, dict) and raw.get("blob") in replaced:
        raw["blob"] = replaced[raw["blob"]]
    for step in turn.get("steps") or []:
        if isinstance(step, dict):
            for f in BLOB_FIELDS:
                ref = step.get(f)
                if isinstance(ref, dict) and is_blob_ref(ref) and ref["blob"] in replaced:
                    step[f] = {**ref, "blob": replaced[ref["blob"]]}


def _refuse_outside_objects(store: Store, rw: TextRewrite) -> None:
    """A text a purge could not take out: in a ref's name, or in config.toml."""
    for name in store.refs.list_refs():
        if rw.text in name:
            raise BadInput(
                f"the text occurs in the name of ref {name[:60]}; ids are never rewritten",
                hint="purge that session or turn instead: hs purge ID --confirm ID",
            )
    config = (store.root / "config.toml").read_bytes()
    if rw.may_change(config):
        raise BadInput(
            "the text occurs in config.toml (a setting: a memory folder, a remote, a pattern)",
            hint="change that setting first (hs memory dir, hs remote), then purge",
        )


def _heads(store: Store, rw: Rewrite, plan: Plan, put: Put) -> None:
    """A new value for every session and memory ref whose state changes."""
    replaced, drop = plan.replaced, plan.drop
    for name, value in store.refs.list_refs().items():
        if value in replaced or name.startswith("remotes/"):
            continue
        if name.startswith(SESSION_PREFIX):
            new = _session(store, rw, name[len(SESSION_PREFIX) :], value, plan, put)
        elif name.startswith("memory/"):
            new = _memory(store, rw, value, plan, put)
        else:
            continue
        if new is not None and new != value:
            replaced[value] = new
            plan.refs += 1
    plan.refs += sum(1 for v in store.refs.list_refs().values() if v in drop and v not in replaced)


def _session(store: Store, rw: Rewrite, sid: str, value: str, plan: Plan, put: Put) -> str | None:
    s = store.load_session(value)
    changed = False
    at: str | None = value
    while at is not None:
        if at in plan.drop:
            changed = True
        rev = store.load_revision(at)
        at = None if rev.full else rev.parents[0]
    turns = []
    for t in s.turns:
        obj = plan.replaced.get(t.object, t.object)
        project = rw.string(t.project) if t.project is not None else None
        entry = TurnEntry(t.turn_id, obj, t.asked_at, t.subagent, project)
        changed = changed or entry != t
        turns.append(entry)
    title = rw.string(s.title) if s.title is not None else None
    project, agent = rw.string(s.project), rw.string(s.agent)
    changed = changed or (title, project, agent) != (s.title, s.project, s.agent)
    if not changed:
        return None
    rev = SessionRev(sid, project, agent, title, ordered(turns), [value], True, len(turns))
    return put("session", rev.payload())


def _memory(store: Store, rw: Rewrite, value: str, plan: Plan, put: Put) -> str | None:
    rev: MemRev = parse(value, *store.objects.get(value))
    files = parse(rev.tree, *store.objects.get(rev.tree)).files
    out = {rw.string(k): plan.replaced.get(v, v) for k, v in files.items()}
    project = rw.string(rev.project) if rev.project is not None else None
    same = out == files and project == rev.project
    if same and value not in plan.drop and rev.tree not in plan.drop:
        return None
    tree = put("memtree", canonical_json({"files": out}))
    body = MemRev(rev.scope, project, tree, [value], plan.time, "purge", "purge")
    return put("memrev", body.payload())


def _log(store: Store, rw: Rewrite, plan: Plan) -> None:
    """The refs-log entries whose text changes (their new command and extra),
    and the torn lines that hold it."""
    for ln in store.refs.read_log():
        if ln.op is None:
            continue
        op = ln.op
        command, extra = rw.command(op.command), rw.extra(op.extra)
        if command != op.command or extra != op.extra:
            plan.log[op.op] = {"command": command, "extra": extra}
            _count(plan, op.command, command)
    try:
        raw_lines = store.refs.log_path.read_bytes().split(b"\n")
    except FileNotFoundError:
        return
    parsed = {ln.lineno for ln in store.refs.read_log() if ln.op is not None}
    for n, raw in enumerate(raw_lines, 1):
        if raw and n not in parsed:
            new = rw.blob(raw, False)
            if new != raw:
                plan.torn[line_key(raw)] = new.decode("utf-8", "replace")


def _sources(store: Store, rw: Rewrite, plan: Plan) -> None:
    """Source-table files whose path or resume state holds the text (or a
    secret now): forgotten (the next import reads the file again)."""
    path = store.root / "local" / SOURCES_NAME
    if not path.exists():
        return
    conn = read_only(path)
    try:
        rows = conn.execute("SELECT path, resume_state FROM files").fetchall()
        rows += conn.execute("SELECT DISTINCT path, '' FROM turns").fetchall()
    except sqlite3.DatabaseError:
        rows = []
    finally:
        conn.close()
    keys = set(plan.files)
    for p, state in rows:
        p, state = str(p), str(state)
        if rw.string(p) != p:
            keys.add(path_key(p))  # its name holds it: the next import reads it again
        elif state:
            new = _state(rw, state)
            if new != state:  # rewritten in place: read again, it would bring it back
                plan.states[path_key(p)] = new
    plan.files = sorted(keys)
    for key in keys:
        plan.states.pop(key, None)


def _state(rw: Rewrite, state: str) -> str:
    """A resume state (JSON) with every string in it rewritten."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return rw.string(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {rw.string(k): walk(v) for k, v in value.items()}
        return value

    try:
        return json.dumps(walk(json.loads(state)), sort_keys=True)
    except (ValueError, RecursionError):
        return rw.string(state)


def _capture(store: Store, rw: Rewrite, plan: Plan) -> None:
    """Capture records (a payload waiting in the spool is the hook's text as
    it came) holding the text, or a secret now: rewritten."""
    for rel, data in capture_files(store).items():
        if not rw.may_change(data):
            continue
        if isinstance(rw, TextRewrite):
            new = rw.blob(data, False)
        else:
            text = data.decode("utf-8", "replace")
            lines = text.splitlines(keepends=True) if rel.endswith(".jsonl") else [text]
            new = "".join(rw.string(ln) for ln in lines).encode("utf-8")
        if new != data:
            plan.capture[rel] = [capture_key(data), new.decode("utf-8", "replace")]


def text_planner(text: str) -> Callable[[Store, Put], Plan]:
    rw = TextRewrite(text)

    def make(store: Store, put: Put) -> Plan:
        return plan_rewrite(store, rw, put)

    return make


def redact_planner() -> Callable[[Store, Put], Plan]:
    def make(store: Store, put: Put) -> Plan:
        try:
            redactor = store.redactor
        except NotFound:  # pragma: no cover - a store always has one
            redactor = Redactor()
        return plan_rewrite(store, RedactRewrite(redactor), put)

    return make


def redact_apply(store: Store, *, command: str, step: Step | None = None) -> Report:
    """``hs redact --apply``: every object redacted again, the old bytes purged;
    then config.toml says the store's objects carry only this rule set's
    redaction (``[redact] rulesets``)."""
    report = purge(store, redact_planner(), command=command, step=step)
    with store.lock():
        store.settle_rulesets()
    return report
