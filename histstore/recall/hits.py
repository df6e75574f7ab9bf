"""A hit as recall shows it: read from its turn object, with where it matched.

Both search paths (the engine, histstore.recall.search; the scan,
histstore.recall.scan) end here with a ranked list of turns and the field
each matched in most. The turn object is read to say where, in words (``in
the answer``, ``in Bash output``: the part of that field where a term first
matches), and to cut the excerpt around that match (:func:`excerpt`, by the
index's tokens at their places). The index holds no text.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from typing import Any

from histstore.overlay.markers import Overlay
from histstore.recall.fields import FIELDS, WEIGHTS, WHERE, BlobReader, Part, blob_reader, parts
from histstore.recall.query import (
    _TOKEN,
    EXCERPT,
    Hit,
    Phrase,
    Query,
    placed_spans,
    tokens,
)
from histstore.store.store import Store

#: the other fields in the order an excerpt is looked for when the matched
#: field's text does not show a term (the heaviest first)
_BY_WEIGHT = sorted(FIELDS, key=lambda f: -WEIGHTS[f])


def excerpt(text: str, terms: tuple[Phrase, ...], width: int = EXCERPT) -> str | None:
    """The text around the first match of any term (a phrase, token-wise, by
    the index's tokens at their places: ``Query.phrases``, or ``Query.terms``),
    whitespace collapsed; None when no term is in the text. The match is
    centred (from its first token's start to its last token's end; one wider
    than ``width`` starts the excerpt). The same rule serves the engine's
    hits and the scan's."""
    flat = " ".join(text.split())
    firsts = {str(t[0]) for t in terms}
    # no term's first token anywhere: the common case, decided at C speed
    if flat.isascii():
        folded = flat.lower()
        if not any(f in folded for f in firsts):
            return None
    elif firsts.isdisjoint(tokens(flat)):
        return None
    found = _first_match(flat, terms, firsts)
    if found is None:
        return None
    return _window(flat, found[0], found[1], width)


def _window(flat: str, start: int, end: int, width: int) -> str:
    """``width`` characters of ``flat`` around ``start:end``, cut at word
    boundaries outside it, ``…`` where text was left out."""
    lo = start if end - start >= width else max(0, (start + end) // 2 - width // 2)
    hi = min(len(flat), lo + width)
    lo = max(0, min(lo, hi - width))
    # cut at word boundaries
    if lo > 0:
        sp = flat.find(" ", lo)
        lo = sp + 1 if 0 <= sp < start else lo
    if hi < len(flat):
        sp = flat.rfind(" ", end, hi)
        hi = sp if sp >= end else hi
    return ("…" if lo > 0 else "") + flat[lo:hi] + ("…" if hi < len(flat) else "")


def clip(text: str, width: int = EXCERPT) -> str:
    """The start of ``text``, whitespace collapsed, at most ``width``
    characters cut at a word boundary, ``…`` where it was cut."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    sp = flat.rfind(" ", 0, width + 1)
    return flat[: sp if sp > 0 else width] + "…"


def _fits(phrase: Phrase, words: list[str | None], at: int) -> bool:
    """Whether ``phrase`` is at ``at`` in ``words`` (a None of it fits any)."""
    if len(words) - at < len(phrase):
        return False
    return all(p is None or p == words[at + i] for i, p in enumerate(phrase))


def _first_match(flat: str, terms: tuple[Phrase, ...], firsts: set[str]) -> tuple[int, int] | None:
    """Where in ``flat`` the first term is, token-wise: (start, end)."""
    if flat.isascii():
        # letters and digits are ASCII's tokens: find the first tokens by one
        # regex over the lower-cased text, then check the rest of the phrase
        # (a token of 40 or more is in no phrase but keeps its place)
        folded = flat.lower()
        pattern = re.compile(
            "(?<![^\\W_])(?:" + "|".join(re.escape(f) for f in sorted(firsts)) + ")(?![^\\W_])"
        )
        most = max(len(t) for t in terms)  # the longest phrase's tokens
        for m in pattern.finditer(folded):
            runs = list(itertools.islice(_TOKEN.finditer(folded, m.start()), most))
            words: list[str | None] = [r.group() for r in runs]
            for t in terms:
                if t[0] == m.group() and _fits(t, words, 0):
                    return m.start(), runs[len(t) - 1].end()
        return None
    spans = placed_spans(flat)
    words = [w for _, _, w in spans]
    for i, w in enumerate(words):
        if w in firsts:
            for t in terms:
                if t[0] == w and _fits(t, words, i):
                    return spans[i][0], spans[i + len(t) - 1][1]
    return None


def locate(
    turn: dict[str, Any], query: Query, field: str, blob: BlobReader
) -> tuple[str, str, str]:
    """(excerpt, where, field): the first part of ``field`` where a term matches
    token-wise; else of the other fields, heaviest first; else the start of
    the prompt, said as such (``the prompt (matched in the answer)``: the
    field is still the one matched)."""
    for fields in ({field}, set(FIELDS) - {field}):
        ps: list[Part] = parts(turn, blob, fields)
        for f in (field,) if len(fields) == 1 else _BY_WEIGHT:
            for p in ps:
                if p.field != f:
                    continue
                ex = excerpt(p.text, query.phrases)
                if ex is not None:
                    return ex, p.where, f
    return clip(str(turn.get("asked") or "")), f"the prompt (matched {WHERE[field]})", field


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
