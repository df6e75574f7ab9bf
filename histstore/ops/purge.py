"""``hs purge``: remove a session, a turn, a memory note or a text for good.

Forgetting hides; a purge removes. Afterwards no byte of what it removed is
anywhere under the store (docs/invariants.md, "Purged means gone"): not in an
object, a pack, a loose file, the recall index or any of its generations,
the overlay views, the local SQLite files, the refs log's command text. What
stays is the purge record (``purged``, histstore.store.purged): the ids it
removed, which every writer treats as gone for good and sync carries, so
that no other store brings the content back and each that receives it purges
too.

A purge is made like gc's swap, in an order that leaves a consistent store
wherever it is killed:

1. **Plan** (under the store lock): what goes. A target (a session, a turn, a
   memory note) takes every object any revision of it ever named — through
   its refs, its remote-tracking refs and every refs-log entry — less what
   something else still reaches (a blob shared with another session stays).
   A text, or a re-redaction (``hs redact --apply``), rewrites every object
   holding it (histstore.ops.rewrite): the new objects, and each ref's new
   value, are written now, before anything names them.
2. **Commit**: ``purge-pending`` is written (the entries, and what else must
   change: refs-log text, local rows — ids and placeholder text only). From
   here on the purge has happened; whoever takes the lock next completes it.
3. **Complete** (:func:`run_pending`, again after a crash): the entries into
   the record; the refs log rewritten where it held the text; the refs moved
   off every purged object in one operation (a session revision that listed
   a purged turn gets a new, full revision without it); the purged objects
   out of the packs (rewritten without them by gc's machinery) and the loose
   files; the local source table's rows and the summary; the recall index
   rebuilt with every older generation gone; the memory folders brought
   along; ``purge-pending`` removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from histstore.errors import BadInput, HistError, NotFound, Unconfirmed
from histstore.memory import rules as memrules
from histstore.memory.scopes import PREFIX as MEMORY_PREFIX
from histstore.memory.scopes import index_link, parse_target
from histstore.ops import gc as gcmod
from histstore.ops.forget import Target, check_confirmation, resolve_target
from histstore.ops.purge_files import session_edits, session_states
from histstore.ops.purge_run import (
    KIND,
    Plan,
    Report,
    Step,
    commit,
    head_changes,
    inner_ref,
    run_pending,
    say_step,
)
from histstore.store import purged as purging
from histstore.store.codec import hash_object, is_object_id
from histstore.store.kinds import (
    TURN_SEPARATOR,
    Marker,
    blob_refs,
    parse,
)
from histstore.store.purged import PurgeEntry
from histstore.store.store import OVERLAY_PREFIX, SESSION_PREFIX, Store

__all__ = ["KIND", "Plan", "Report", "Step"]

# ------------------------------------------------------------------ targets


def _present(store: Store, ids: Iterable[str]) -> set[str]:
    purged = store.purged_ids()
    return {i for i in ids if is_object_id(i) and i not in purged and store.objects.has(i)}


def _values(store: Store, match: Callable[[str], bool]) -> set[str]:
    """Every value a ref ``match`` accepts holds now or ever held, by the refs log."""
    out = {v for n, v in store.refs.list_refs().items() if match(n)}
    for op in store.operations():
        for c in op.changes:
            if match(c.ref):
                out.update(v for v in (c.old, c.new) if v)
    return out


def _chain(store: Store, starts: Iterable[str], kind: str) -> dict[str, Any]:
    """Every object of ``kind`` reachable through ``parents`` from ``starts``
    (present ones; a purged or missing one is a hole), parsed."""
    out: dict[str, Any] = {}
    todo = sorted(_present(store, starts))
    while todo:
        i = todo.pop()
        if i in out:
            continue
        try:
            k, payload = store.objects.get(i)
        except NotFound:
            continue
        if k != kind:
            continue
        obj = parse(i, k, payload)
        out[i] = obj
        todo.extend(p for p in _present(store, obj.parents) if p not in out)
    return out


def _marker_chains(store: Store, keep: Callable[[Marker], bool]) -> set[str]:
    """Every marker of every overlay ref whose newest marker ``keep`` accepts,
    and every marker such refs ever held (the refs log), with their parents."""
    names = set()
    for name, value in store.refs.list_refs(OVERLAY_PREFIX).items():
        with contextlib.suppress(HistError):
            if keep(store.load_marker(value)):
                names.add(name)
    starts = _values(store, lambda n: n in names)
    # markers a ref held once and no longer (an undone forget): by what they name
    once = _values(store, lambda n: n.startswith(OVERLAY_PREFIX)) - starts
    for v in _present(store, once):
        with contextlib.suppress(HistError):
            if keep(store.load_marker(v)):
                starts.add(v)
    return set(_chain(store, starts, "marker"))


def _kept(store: Store, skip: set[str]) -> set[str]:
    """What stays reachable without ``skip``: from every ref and every value
    the refs log names (not only gc's window), and each memory folder's base."""
    roots = set(store.refs.list_refs().values()) | gcmod._base_roots(store)
    for op in store.operations():
        for c in op.changes:
            roots.update(v for v in (c.old, c.new) if v)
    roots = _present(store, roots) - skip
    return gcmod.mark(store, roots, skip=skip, who="purge")


def plan_session(store: Store, session_id: str) -> Plan:
    def ours(name: str) -> bool:
        return inner_ref(name) == SESSION_PREFIX + session_id

    revs = _chain(store, _values(store, ours), "session")
    turns = {t.object for r in revs.values() for t in r.turns}
    markers = _marker_chains(
        store, lambda m: m.session == session_id and m.target_kind in ("session", "turn")
    )
    return _finish(store, "session", session_id, set(revs), turns, markers)


def plan_turn(store: Store, session_id: str, turn_id: str) -> Plan:
    revs = _chain(
        store, _values(store, lambda n: inner_ref(n) == SESSION_PREFIX + session_id), "session"
    )
    turns = {t.object for r in revs.values() for t in r.turns if t.turn_id == turn_id}
    markers = _marker_chains(
        store,
        lambda m: m.target_kind == "turn" and m.session == session_id and m.target == turn_id,
    )
    target = f"{session_id}{TURN_SEPARATOR}{turn_id}"
    return _finish(store, "turn", target, set(), turns, markers)


def plan_note(store: Store, target: str) -> Plan:
    parsed = parse_target(target)
    if parsed is None:
        raise BadInput(f"{target!r} is not a memory target")
    scope_id, file = parsed
    revs = _chain(
        store, _values(store, lambda n: inner_ref(n) == MEMORY_PREFIX + scope_id), "memrev"
    )
    blobs: set[str] = set()
    for rev in revs.values():
        with contextlib.suppress(HistError):
            files = parse(rev.tree, *store.objects.get(rev.tree)).files
            for name, blob in files.items():
                if name.lower() == file.lower():
                    blobs.add(blob)
                elif memrules.is_index_name(name) and _indexes(store, blob, file):
                    blobs.add(blob)  # its line names the note and tells what it holds
    markers = _marker_chains(store, lambda m: m.target_kind == "memory" and m.target == target)
    return _finish(store, "memory", target, set(), blobs, markers)


def _indexes(store: Store, blob: str, file: str) -> bool:
    """Whether an index blob has a line linking ``file``."""
    data = store.get_blob(blob)
    return any(
        (index_link(ln) or "").lower() == file.lower()
        for ln in data.decode("utf-8", "replace").splitlines()
    )


def _finish(
    store: Store,
    what: str,
    target: str,
    revisions: set[str],
    leaves: set[str],
    markers: set[str],
) -> Plan:
    """The plan of a target: its revisions, turns (or note blobs) and markers,
    and every blob they reach that nothing else does."""
    leaves = _present(store, leaves)
    blobs: set[str] = set()
    for i in leaves:
        k, payload = store.objects.get(i)
        if k == "turn":
            blobs.update(blob_refs(parse(i, k, payload).data))
    skip = revisions | leaves | markers
    candidates = skip | _present(store, blobs)
    kept = _kept(store, skip)
    drop = candidates - kept
    plan = Plan(what, target, drop)
    if what in ("session", "turn"):
        plan.capture = session_edits(store, target.partition(TURN_SEPARATOR)[0])
    if what == "session":
        plan.states = session_states(store, leaves)
    count_kinds(store, plan)
    # the refs it would move or delete (new revisions only hashed, not written)
    plan.refs = len(head_changes(store, [plan.entry()], put=hash_object))
    return plan


def count_kinds(store: Store, plan: Plan) -> None:
    for i in sorted(plan.drop):
        try:
            k, payload = store.objects.get(i)
        except NotFound:
            continue
        plan.kinds[k] = plan.kinds.get(k, 0) + 1
        if k == "turn":
            t = parse(i, k, payload).data
            plan.turns.append(f"{t['session_id']}{TURN_SEPARATOR}{t['turn_id']}")
        elif k == "session":
            sid = parse(i, k, payload).session_id
            if sid not in plan.sessions:
                plan.sessions.append(sid)
    if plan.what == "memory" and plan.target:
        plan.notes.append(plan.target)
    plan.turns.sort()
    plan.sessions.sort()


def resolve(store: Store, text: str, confirm: str | None) -> Target:
    """The target of ``hs purge TARGET``, as ``hs forget`` resolves one; else
    a session (or ``SESSION~TURN``) only the refs log still names, an undone
    import's: what a purge removes is found through the log too."""
    try:
        return resolve_target(store, text, confirm=confirm)
    except NotFound:
        found = _logged_target(store, text.strip())
        if found is None:
            raise
        return found


def _logged_target(store: Store, text: str) -> Target | None:
    sid, sep, tid = text.partition(TURN_SEPARATOR)
    if not sid or (sep and not tid):
        return None
    names = {
        inner_ref(c.ref)[len(SESSION_PREFIX) :]
        for op in store.operations()
        for c in op.changes
        if inner_ref(c.ref).startswith(SESSION_PREFIX)
    }
    hits = [n for n in names if n == sid] or sorted(n for n in names if n.startswith(sid))
    if len(hits) != 1:
        return None
    session = hits[0]
    if not sep:
        return Target("session", session, session, 0, "", in_store=False)
    revs = _chain(
        store, _values(store, lambda n: inner_ref(n) == SESSION_PREFIX + session), "session"
    )
    turns = {t.turn_id for r in revs.values() for t in r.turns}
    match = [t for t in turns if t == tid] or sorted(t for t in turns if t.startswith(tid))
    if len(match) != 1:
        return None
    return Target("turn", match[0], session, 1, "", in_store=False)


def plan_target(store: Store, target: Target) -> Plan:
    if target.kind == "session":
        return plan_session(store, target.id)
    if target.kind == "turn":
        return plan_turn(store, target.session, target.id)
    return plan_note(store, target.id)


def plan_of(store: Store, what: str, target: str | None) -> Plan:
    """A target purge planned again from what it names (a store that receives one)."""
    if what == "session" and target:
        return plan_session(store, target)
    if what == "turn" and target and TURN_SEPARATOR in target:
        sid, _, tid = target.partition(TURN_SEPARATOR)
        return plan_turn(store, sid, tid)
    if what == "memory" and target:
        return plan_note(store, target)
    return Plan(what, target, set())


# ------------------------------------------------------------------ the command


def purge(
    store: Store,
    make_plan: Callable[[Store, Callable[[str, bytes], str]], Plan],
    *,
    command: str,
    confirm: Callable[[Plan], None] | None = None,
    step: Step | None = None,
) -> Report:
    """Plan under the lock (``make_plan`` writes the objects a rewrite needs
    through the ``put`` it is given), check the confirmation against the plan,
    commit, complete (module docstring)."""
    with store.lock():
        was, store.purging = store.purging, True
        try:
            with store.objects.batch() as batch:
                plan = make_plan(store, batch.put)
                if confirm is not None:
                    confirm(plan)
            if plan.empty:
                return Report(plan)
            say_step(step, "commit")
            pending = commit(store, plan, command)
            report = run_pending(store, pending, step)
        finally:
            store.purging = was
    report.plan = plan
    return report


def preview(store: Store, make_plan: Callable[[Store, Callable[[str, bytes], str]], Plan]) -> Plan:
    """The plan without writing anything (new objects are only hashed)."""
    return make_plan(store, hash_object)


def target_planner(target: Target) -> Callable[[Store, Callable[[str, bytes], str]], Plan]:
    def make(store: Store, put: Callable[[str, bytes], str]) -> Plan:
        return plan_target(store, target)

    return make


def check_target_confirmation(target: Target, confirm: str | None) -> None:
    check_confirmation(target, confirm)


def check_text_confirmation(text: str, confirm: str | None) -> None:
    if confirm != text:
        given = "no confirmation given" if confirm is None else "the confirmation given"
        raise Unconfirmed(
            f"unconfirmed-target: {given} is not the text to purge",
            hint="repeat the text exactly: --text TEXT --confirm TEXT",
        )


def entries(store: Store) -> list[PurgeEntry]:
    return store.purges.entries()


def purged_match(store: Store, ident: str) -> tuple[str, PurgeEntry] | None:
    """What a purge removed that ``ident`` names (a session id, a turn id or
    ``SESSION~TURN``, a memory target, an object id or prefix): (what it
    was, the purge), None when nothing."""
    ident = ident.strip()
    for e in store.purges.entries():
        if e.target is None:
            continue
        if e.what == "turn":
            tid = e.target.partition(TURN_SEPARATOR)[2]
            if ident in (tid, e.target):
                return "turn", e
        elif ident == e.target:
            return e.what, e
        elif e.what == "session" and ident in e.turns:
            return "turn", e
    low = ident.lower()
    if len(low) >= 4 and all(c in "0123456789abcdef" for c in low):
        for e in store.purges.entries():
            if any(o.startswith(low) for o in e.objects):
                return "object", e
    return None


def receive(store: Store, entries: list[PurgeEntry], *, command: str) -> Report:
    """Purge entries another store made, completed here (a sync carried them):
    their objects go, and a target purge also takes what only this store held
    of the target (recorded as an entry of this store's own)."""
    was, store.purging = store.purging, True
    try:
        with store.lock():
            extra = []
            for e in entries:
                if e.what not in ("session", "turn", "memory"):
                    continue
                local = plan_of(store, e.what, e.target)
                more = local.drop - set(e.objects)
                if more:
                    local.drop = more
                    extra.append(local.entry())
            pending = {
                "entries": [e.as_json() for e in [*entries, *extra]],
                "command": command,
                "log": {},
                "torn": {},
                "files": [],
            }
            purging.write_pending(store.root, pending)
            return run_pending(store, pending)
    finally:
        store.purging = was
