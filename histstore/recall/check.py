"""The recall index's check for fsck: the current generation readable, whole,
and holding one document per visible turn when it is up to date."""

from __future__ import annotations

from histstore.errors import HistError
from histstore.overlay.markers import Overlay
from histstore.recall.index import SCHEMA_VERSION, RecallIndex
from histstore.store.check import Finding
from histstore.store.store import Store

HINT = "rebuild it with `hs plumbing index-build`"
#: what an older hs left, rebuilt by the next catch-up
OLDER = "the next write or hs recall rebuilds it"


def check_index(store: Store, *, compare: bool) -> list[Finding]:
    """The current generation of the recall index: readable, whole, and holding
    one document per turn when it is up to date (an index is derived data: any
    problem is mended by `hs plumbing index-build`)."""
    index = RecallIndex(store)
    try:
        gen = index.gens.current()
        if gen is None:
            legacy = index.gens.legacy_name()
            if legacy is not None:
                return [
                    Finding("warning", "index", f"built by an older hs (SQLite); {OLDER}", legacy)
                ]
            if compare and store.has_sessions():
                return [Finding("warning", "index", "no recall index yet; hs recall builds it")]
            return []
        schema = gen.meta.get("schema")
        if isinstance(schema, int) and not isinstance(schema, bool) and schema < SCHEMA_VERSION:
            return [
                Finding(
                    "warning", "index", f"built by an older hs (schema {schema}); {OLDER}", gen.name
                )
            ]
        if schema != SCHEMA_VERSION:
            return [
                Finding(
                    "error", "index", f"unknown schema {gen.meta.get('schema')!r}; {HINT}", gen.name
                )
            ]
        rows = index.status().rows  # opens it: a damaged generation raises
    except HistError as e:
        return [Finding("error", "index", f"{e.message}; {HINT}")]
    finally:
        index.close()
    out: list[Finding] = []
    last = store.refs.last_operation()
    applied = gen.applied_op
    if applied is not None and store.refs.operations_after(applied) is None:
        out.append(
            Finding(
                "error", "index", f"built from operation {applied}, not in the refs log", gen.name
            )
        )
    elif applied != (last.op if last else None):
        out.append(
            Finding(
                "warning",
                "index",
                "behind the refs log; the next write or hs recall catches it up",
                gen.name,
            )
        )
    elif compare and (last is None or store.refs.applied() == last.op):
        overlay = Overlay.read(store)
        turns = sum(
            1
            for s in store.sessions()
            for t in s.turns
            if not overlay.hides(s.session_id, t.turn_id)  # forgotten: never indexed
        )
        if rows != turns:
            out.append(
                Finding("error", "index", f"holds {rows} turns, the store {turns}", gen.name)
            )
    return out
