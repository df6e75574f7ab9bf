"""The merges of sync: deterministic and symmetric, so every order of syncs converges.

Session revisions merge turn by turn, markers by their concurrent heads (an
unseen exclusion holds), memory revisions file by file (an index by entry),
all three-way through histstore.store.merge. The same inputs give the same
merge object whichever side makes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from histstore.errors import BadInput, CorruptObject, CorruptStore, HistError, NotFound
from histstore.history.turn import parse_time
from histstore.memory.index import merge_index
from histstore.memory.rules import is_index_name
from histstore.store.kinds import Marker, Session, SessionRev, TurnEntry, materialize, ordered
from histstore.store.merge import deletion_loses, keep, merge3
from histstore.sync.walk import Objects


def _relate(
    parents_of: Callable[[str], list[str]], a: str, b: str
) -> tuple[str | None, str | None]:
    """(the one of ``a``/``b`` that descends from the other, or None; the merge
    base when neither does: the common ancestor nearest to both, by the sum of
    its distances and then its id, so either side picks the same one).

    Both histories are walked a level at a time, side by side, and the walk
    stops as soon as one side reaches the other: a fast-forward (the usual
    case: one new revision on one side) reads a revision or two, however long
    the history. Only revisions made apart walk both histories whole."""
    depth = ({a: 0}, {b: 0})
    front = ([a], [b])
    while True:
        if b in depth[0]:
            return a, None
        if a in depth[1]:
            return b, None
        if not front[0] and not front[1]:
            break
        for side in (0, 1):
            nxt = []
            for rev in front[side]:
                try:
                    parents = parents_of(rev)
                except NotFound:
                    parents = []  # a purge removed it: a root here
                for p in parents:
                    if p not in depth[side]:
                        depth[side][p] = depth[side][rev] + 1
                        nxt.append(p)
            front[side][:] = nxt
    ha, hb = depth
    common = set(ha) & set(hb)
    base = min(common, key=lambda r: (ha[r] + hb[r], r)) if common else None
    return None, base


def _pick(a: Any, b: Any, base: Any, tie: Any) -> Any:
    """Three-way for one field: the side that changed it, else ``tie``."""
    return merge3(a, b, base, keep(tie))[0]


def merge_sessions(objs: Objects, a: str, b: str) -> str:
    """The revision a session ref moves to when the sides hold ``a`` and ``b``:
    the descendant when one descends from the other, else a merge revision
    (made in ``objs``) whose turns are the union of both sides', a turn both
    sides changed differently taken from the later ``asked_at`` (then the
    greater object id). The same object whichever side makes it."""

    revisions: dict[str, SessionRev] = {}
    sessions: dict[str, Session] = {}

    def revision(rev: str) -> SessionRev:
        if rev not in revisions:
            try:
                revisions[rev] = SessionRev.from_json(objs.json(rev, "session"))
            except ValueError as e:
                raise CorruptObject(rev, str(e)) from None
        return revisions[rev]

    def load(rev: str) -> Session:
        return materialize(rev, revision, sessions)

    def parents_of(rev: str) -> list[str]:
        return revision(rev).parents

    ahead, base_id = _relate(parents_of, a, b)
    if ahead is not None:
        return ahead
    ra, rb = load(a), load(b)
    rbase = None
    if base_id:
        with contextlib.suppress(NotFound):  # a purge removed it: no base
            rbase = load(base_id)
    ta = {t.turn_id: t for t in ra.turns}
    tb = {t.turn_id: t for t in rb.turns}
    to = {t.turn_id: t for t in rbase.turns} if rbase else {}
    turns: list[TurnEntry] = []
    for tid in set(ta) | set(tb):
        x, y = ta.get(tid), tb.get(tid)
        if x is None or y is None:
            turns.append(x or y)  # type: ignore[arg-type]
            continue
        later = max(x, y, key=lambda t: (t.asked_at, t.object))
        turns.append(_pick(x, y, to.get(tid), later))
    greater = rb if b > a else ra
    merged = SessionRev(
        session_id=ra.session_id,
        project=_pick(ra.project, rb.project, rbase.project if rbase else None, greater.project),
        agent=_pick(ra.agent, rb.agent, rbase.agent if rbase else None, greater.agent),
        title=_pick(ra.title, rb.title, rbase.title if rbase else None, greater.title),
        turns=ordered(turns),
        parents=sorted([a, b]),
        full=True,
        count=len(turns),
    )
    return objs.make("session", merged.as_json())


def _when(text: Any) -> datetime:
    """A time of an object, for ordering; one that does not parse sorts first."""
    try:
        return parse_time(str(text))
    except HistError:
        return datetime.min.replace(tzinfo=UTC)


def _marker(objs: Objects, marker_id: str) -> Marker:
    try:
        return Marker.from_json(objs.json(marker_id, "marker"))
    except ValueError as e:
        raise CorruptObject(marker_id, str(e)) from None


def _marker_heads(objs: Objects, marker: str) -> set[str]:
    """The concurrent markers a value stands for: a merge marker's heads (its
    parents), or the marker itself."""
    m = _marker(objs, marker)
    return set(m.parents) if m.is_merge else {marker}


def merge_markers(objs: Objects, a: str, b: str) -> str:
    """The marker an overlay ref moves to when the sides hold ``a`` and ``b``.

    The two values stand for sets of *heads*: markers none of the others
    follows (a marker made by a forget or unforget on top of another follows
    it, through ``parent``; a merge marker follows the heads it joins). The
    result stands for the union of both sets, less every head another one
    follows — a join, so any order of syncs ends on the same value. One head
    left: that marker (the newer marker wins whenever it was made on top of
    the older). Several, made apart on different stores: a merge marker
    joining them (its parents), which says what the newest of them says (by
    ``time``, then id) — except that an active exclusion no other head has seen holds over
    them all (the newest such): a tombstone or an unforget made where the
    exclusion was not yet known never weakens it. The losers stay objects."""
    heads = _marker_heads(objs, a) | _marker_heads(objs, b)
    seen: dict[str, set[str]] = {}

    def ancestors(m: str) -> set[str]:
        if m not in seen:
            out: set[str] = set()
            todo = [m]
            while todo:
                for p in _marker(objs, todo.pop()).parents:
                    if p not in out:
                        out.add(p)
                        with contextlib.suppress(NotFound):
                            objs.get(p)
                            todo.append(p)
            seen[m] = out
        return seen[m]

    heads = {h for h in heads if not any(h in ancestors(o) for o in heads if o != h)}
    if len(heads) == 1:
        return heads.pop()
    body = {h: _marker(objs, h) for h in heads}
    excluding = [h for h in heads if body[h].excludes]
    chosen = body[max(excluding or heads, key=lambda h: (_when(body[h].time), h))]
    merged = Marker(
        chosen.target,
        chosen.target_kind,
        chosen.session,
        chosen.mode,
        chosen.state,
        chosen.reason,
        chosen.time,
        tuple(sorted(heads)),
    ).as_json()
    return objs.make("marker", merged)


@dataclass(frozen=True)
class MemoryConflict:
    """A memory file both sides changed differently, with both versions."""

    scope: str
    file: str
    versions: list[str]
    #: False when the merge that found it was made by an earlier sync between
    #: other stores, and this one only moved a ref onto it (a fast-forward)
    merged_here: bool = True

    def as_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "file": self.file,
            "versions": self.versions,
            "merged_here": self.merged_here,
        }

    def message(self) -> str:
        where = "" if self.merged_here else " by a merge made on another store"
        return (
            f"memory conflict: {self.scope} {self.file}: both versions kept{where}; "
            "settle with hs memory restore"
        )


def recorded_conflicts(objs: Objects, rev: str) -> list[MemoryConflict]:
    """The conflicts a merge revision recorded when it was made (its
    ``conflicts`` field), for a sync that arrives at it by a fast-forward."""
    d = objs.json(rev, "memrev")
    out = []
    for c in d.get("conflicts") or []:
        if isinstance(c, dict) and isinstance(c.get("file"), str):
            versions = [v for v in c.get("versions") or [] if isinstance(v, str)]
            out.append(MemoryConflict(str(d.get("scope")), c["file"], versions, False))
    return out


def _merge_index(
    objs: Objects,
    name: str,
    won: str | None,
    lost: str | None,
    base: str | None,
    *,
    keep: set[str],
    gone: set[str],
) -> tuple[str, bool] | None:
    """An index file both sides changed, merged by entry
    (:func:`histstore.memory.index.merge_index`): (the merged blob, made in
    ``objs``; whether an entry changed differently on both sides). ``won`` is
    the version of the winning revision (the later one). None: a version is
    not text an index can be, and the file is merged as a whole."""

    def data(blob: str | None) -> bytes | None:  # None: no index on that side
        if blob is None:
            return None
        try:
            kind, payload = objs.get(blob)
        except NotFound:
            if blob == base:
                return None  # a base version a purge removed: none
            raise
        return payload if kind == "blob" else b"\0"

    merged = merge_index(name, data(won), data(lost), data(base), keep=keep, gone=gone)
    if merged is None:
        return None
    return objs.make_blob(merged[0]), merged[1]


def _theirs_unless_deleted(ours: str | None, theirs: str | None) -> str | None:
    return deletion_loses(theirs, ours)


def merge_memory(objs: Objects, a: str, b: str) -> tuple[str, list[MemoryConflict]]:
    """The memory revision a ``memory/<scope>`` ref moves to, and the files both
    sides changed differently. One side descending from the other: that one.
    Else a ``merge`` revision, per file three-way against the merge base; a
    conflict takes the version of the revision with the later ``time`` (then
    the greater id; a deletion loses to a modification) and is listed in the
    revision's ``conflicts`` with both blob ids. The index (``MEMORY.md``) is
    merged by entry (:func:`_merge_index`): notes added on two machines keep
    both lines, and only an entry changed differently on both is a conflict."""
    revs: dict[str, Any] = {}

    def rev(r: str) -> Any:
        if r not in revs:
            revs[r] = objs.json(r, "memrev")
        return revs[r]

    def parents_of(r: str) -> list[str]:
        parents = rev(r).get("parents") or []
        return [p for p in parents if isinstance(p, str)]

    def files(r: str | None) -> dict[str, str]:
        try:  # (a base a purge removed is none)
            return dict(objs.json(rev(r)["tree"], "memtree").get("files") or {}) if r else {}
        except NotFound:
            return {}

    ahead, base = _relate(parents_of, a, b)
    if ahead is not None:
        return ahead, []
    fa, fb, fo = files(a), files(b), files(base)
    ka = (_when(rev(a).get("time")), a)
    kb = (_when(rev(b).get("time")), b)
    scope = str(rev(a).get("scope"))
    merged: dict[str, str] = {}
    conflicts: list[MemoryConflict] = []
    names = sorted(set(fa) | set(fb) | set(fo))
    # the notes first, then the index, which lists exactly the notes kept
    for name in [n for n in names if not is_index_name(n)] + [n for n in names if is_index_name(n)]:
        x, y, o = fa.get(name), fb.get(name), fo.get(name)
        by_entry = None
        pick: str | None
        if x != y and is_index_name(name) and (x is not None or y is not None):
            # the side that changed it wins its other lines; both: the later
            if x == o:
                won, lost = y, x
            elif y == o:
                won, lost = x, y
            else:
                won, lost = (x, y) if ka > kb else (y, x)
            notes = {n for n in merged if not is_index_name(n)}
            gone = {n for n in names if not is_index_name(n)} - notes
            by_entry = _merge_index(objs, name, won, lost, o, keep=notes, gone=gone)
        if by_entry is not None:
            pick, clash = by_entry
            if clash:
                conflicts.append(
                    MemoryConflict(scope, name, sorted(v for v in (x, y) if v is not None))
                )
        else:
            # a file changed both ways keeps the later revision's; a deletion loses
            pick, clash = merge3(x, y, o, deletion_loses if ka > kb else _theirs_unless_deleted)
            if clash:
                versions = sorted(v for v in {x, y} if v is not None)
                conflicts.append(MemoryConflict(scope, name, versions))
        if pick is not None:
            merged[name] = pick
    tree = objs.make("memtree", {"files": merged})
    newer = rev(a) if ka > kb else rev(b)
    body: dict[str, Any] = {
        "scope": scope,
        "project": newer.get("project"),
        "tree": tree,
        "parents": sorted([a, b]),
        "time": newer.get("time"),
        "kind": "merge",
        "message": "merge",
    }
    if conflicts:
        body["conflicts"] = [{"file": c.file, "versions": c.versions} for c in conflicts]
    return objs.make("memrev", body), conflicts


def merge_values(
    objs: Objects, ref: str, a: str | None, b: str | None
) -> tuple[str | None, list[MemoryConflict]]:
    """What a synced ref holds on both sides when one holds ``a`` and the other
    ``b``: symmetric (``merge_values(b, a)`` is the same) and deterministic."""
    if a == b or b is None:
        return a, []
    if a is None:
        return b, []
    if ref.startswith("sessions/"):
        return merge_sessions(objs, a, b), []
    if ref.startswith("overlay/"):
        return merge_markers(objs, a, b), []
    if ref.startswith("memory/"):
        return merge_memory(objs, a, b)
    raise BadInput(f"sync does not carry ref {ref}")


def check_value(objs: Objects, ref: str, value: str, side: str) -> None:
    """A ref value about to be adopted by another store must be what its
    namespace holds (a well-formed session revision of that session, a marker
    of that target, a memory revision of that scope): damage in one store is
    refused at the border instead of spreading (exit 7)."""
    ns, _, name = ref.partition("/")
    want = {"sessions": "session", "overlay": "marker", "memory": "memrev"}[ns]
    what = f"the {side} store's ref {ref}"
    try:
        d = objs.json(value, want)
        if ns == "sessions":
            if SessionRev.from_json(d).session_id != name:
                raise ValueError("a revision of another session")
        elif ns == "overlay":
            if not Marker.from_json(d).names_ref(name):
                raise ValueError("a marker of another target")
        elif d.get("scope") != name or not isinstance(d.get("tree"), str):
            raise ValueError("not a memory revision of that scope")
    except (CorruptObject, NotFound, ValueError, AttributeError) as e:
        reason = (
            e.reason
            if isinstance(e, CorruptObject)
            else "an object it does not have"
            if isinstance(e, NotFound)
            else str(e)
        )
        raise CorruptStore(
            f"{what} points at {value[:12]}: {reason}; no ref was moved",
            hint=f"run hs fsck on the {side} store",
        ) from None
