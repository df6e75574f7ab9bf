"""Searching a generation with the engine: the query, the filters, the hits.

Every term in every field, bm25 over the whole index, the filters inside the
engine; the best candidates are re-ordered newest first among equal scores,
merged with the overlay at read time (a target forgotten a moment ago is
hidden before the index has dropped it) and made hits from their turn
objects (histstore.recall.hits).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import tantivy

from histstore.overlay.markers import Overlay
from histstore.recall import engine
from histstore.recall.hits import make_hits
from histstore.recall.query import Hit, Query, Scope
from histstore.store.store import Store

#: candidates fetched per hit wanted: enough to re-order ties newest first, to
#: skip what the overlay hides and to drop a turn id seen in a second session
PER_HIT = 10
MIN_CANDIDATES = 50


def filters_of(scope: Scope, since_ms: int | None) -> engine.Filters:
    return engine.Filters(scope.paths, scope.name, since_ms, scope.agent, scope.session)


def search(
    store: Store,
    index: tantivy.Index,
    query: Query,
    scope: Scope,
    since_ms: int | None,
    k: int,
    overlay: Overlay,
) -> tuple[list[Hit], str]:
    """(hits, outcome): ``found``, ``no-match`` or ``no-match-in-days``."""
    searcher = index.searcher()
    sch = index.schema
    tq = engine.text_query(searcher, sch, query.phrases)
    if tq is None:
        return [], "no-match"
    filters = filters_of(scope, since_ms)
    full = engine.with_filters(tq.query, engine.filter_query(sch, filters))
    ranked = engine.candidates(searcher, full, max(MIN_CANDIDATES, PER_HIT * k), k)
    hits = make_hits(store, query, _lazy(searcher, tq, ranked), k, overlay)
    if hits:
        return hits, "found"
    if since_ms is not None:
        wider = engine.with_filters(tq.query, engine.filter_query(sch, filters.any_time()))
        for address in engine.any_hit(searcher, wider, MIN_CANDIDATES):
            c = engine.stored(searcher, 0.0, 0, address)
            if not (overlay and overlay.hides(c.session_id, c.turn_id)):
                return [], "no-match-in-days"
    return [], "no-match"


def _lazy(
    searcher: tantivy.Searcher, tq: engine.TextQuery, ranked: list[tuple[float, int, Any]]
) -> Iterator[tuple[float, str, str, str, Callable[[], str]]]:
    """The candidates as make_hits takes them; a candidate's stored ids are read
    when it is reached, the field it matched in only when it becomes a hit."""
    for score, ts, address in ranked:
        c = engine.stored(searcher, score, ts, address)

        def field(address: Any = address) -> str:
            return engine.matched_field(searcher, tq, address) or "asked"

        yield score, c.session_id, c.turn_id, c.object_id, field
