"""A hit as recall shows it: read from its turn object, with where it matched.

Both search paths (the engine, histstore.recall.search; the scan,
histstore.recall.scan) end here with a ranked list of turns and the field
each matched in most. The turn object is read to say where, in words (``in
the answer``, ``in Bash output``: the part of that field where a term first
matches), and to cut the excerpt around that match. The index holds no text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from histstore.overlay.markers import Overlay
from histstore.recall.fields import FIELDS, WEIGHTS, WHERE, BlobReader, Part, blob_reader, parts
from histstore.recall.query import EXCERPT, Hit, Query, excerpt
from histstore.store.store import Store

#: the other fields in the order an excerpt is looked for when the matched
#: field's text does not show a term (the heaviest first)
_BY_WEIGHT = sorted(FIELDS, key=lambda f: -WEIGHTS[f])


def locate(
    turn: dict[str, Any], query: Query, field: str, blob: BlobReader
) -> tuple[str, str, str]:
    """(excerpt, where, field): the first part of ``field`` where a term matches
    token-wise; else of the other fields, heaviest first; else the prompt."""
    for fields in ({field}, set(FIELDS) - {field}):
        ps: list[Part] = parts(turn, blob, fields)
        for f in (field,) if len(fields) == 1 else _BY_WEIGHT:
            for p in ps:
                if p.field != f:
                    continue
                ex = excerpt(p.text, query.terms)
                if ex is not None:
                    return ex, p.where, f
    asked = " ".join(str(turn.get("asked") or "").split())
    return asked[:EXCERPT], WHERE[field], field


def make_hits(
    store: Store,
    query: Query,
    ranked: Iterable[tuple[float, str, str, str, str | Callable[[], str]]],
    k: int,
    overlay: Overlay,
) -> list[Hit]:
    """``ranked``: (score, session id, turn id, object id, field — or what
    tells it), best first. The first ``k`` the overlay does not hide, one per
    turn id."""
    blob = blob_reader(store)
    hits: list[Hit] = []
    seen: set[str] = set()
    for score, session_id, turn_id, object_id, matched in ranked:
        if turn_id in seen or (overlay and overlay.hides(session_id, turn_id)):
            continue  # the same turn id twice is one hit; a target forgotten since
        field = matched if isinstance(matched, str) else matched()
        turn = store.get_json(object_id, "turn")
        text, where, found = locate(turn, query, field, blob)
        seen.add(turn_id)
        hits.append(
            Hit(
                turn_id=turn_id,
                session_id=session_id,
                object=object_id,
                project=str(turn.get("project") or ""),
                asked_at=str(turn.get("asked_at") or ""),
                excerpt=text,
                read=list(turn.get("files") or []),
                edited=list(turn.get("edited") or []),
                tainted=bool(turn.get("tainted")),
                score=round(score, 4),
                field=found,
                where=where,
                agent=str(turn.get("agent") or ""),
            )
        )
        if len(hits) == k:
            break
    return hits
