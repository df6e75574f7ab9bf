"""The recall index's check for fsck: the current generation readable, whole,
and holding one row per visible turn when it is up to date."""

from __future__ import annotations

import sqlite3

from histstore.errors import HistError
from histstore.overlay.markers import Overlay
from histstore.recall.index import SCHEMA_VERSION, RecallIndex
from histstore.store.check import Finding
from histstore.store.store import Store

#: schemas an older hs wrote, rebuilt by the next catch-up
OLDER_SCHEMAS = frozenset({"1"})


def check_index(store: Store, *, compare: bool) -> list[Finding]:
    """The current generation of the recall index: readable, whole, and holding
    one row per turn when it is up to date (an index is derived data: any
    problem is mended by `hs plumbing index-build`)."""
    index = RecallIndex(store)
    try:
        path = index.current_path()
        if path is None:
            if compare and store.session_refs():
                return [Finding("warning", "index", "no recall index yet; hs recall builds it")]
            return []
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            bad = [r[0] for r in conn.execute("PRAGMA quick_check") if r[0] != "ok"]
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            rows = conn.execute("SELECT count(*) FROM turn").fetchone()[0]
        finally:
            conn.close()
    except (HistError, sqlite3.Error) as e:
        return [Finding("error", "index", f"{e}; rebuild it with `hs plumbing index-build`")]
    out = [Finding("error", "index", f"damaged: {b}", path.name) for b in bad[:5]]
    if meta.get("schema") in OLDER_SCHEMAS:
        out.append(
            Finding(
                "warning",
                "index",
                f"built by an older hs (schema {meta.get('schema')}); "
                "the next write or hs recall rebuilds it",
                path.name,
            )
        )
        return out
    if meta.get("schema") != SCHEMA_VERSION:
        out.append(Finding("error", "index", f"unknown schema {meta.get('schema')!r}", path.name))
    last = store.refs.last_operation()
    applied = meta.get("applied_op") or None
    if applied is not None and store.refs.operations_after(applied) is None:
        out.append(
            Finding(
                "error", "index", f"built from operation {applied}, not in the refs log", path.name
            )
        )
    elif meta.get("applied_op") != (last.op if last else ""):
        out.append(
            Finding(
                "warning",
                "index",
                "behind the refs log; the next write or hs recall catches it up",
                path.name,
            )
        )
    elif compare and (last is None or store.refs.applied() == last.op):
        # (an operation logged but not yet applied is reported above; the index
        # already holds it)
        overlay = Overlay.read(store)
        turns = sum(
            1
            for s in store.sessions()
            for t in s.turns
            if not overlay.hides(s.session_id, t.turn_id)  # forgotten: never indexed
        )
        if rows != turns:
            out.append(
                Finding("error", "index", f"holds {rows} turns, the store {turns}", path.name)
            )
    return out
