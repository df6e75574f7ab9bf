"""Recall without the engine: the same question answered by scanning the objects.

Forced by ``HS_RECALL_FALLBACK`` (or taken when the engine cannot be
loaded). Every turn the overlay does not hide is read, cut into the same
parts and fields as the index holds (histstore.recall.fields), tokenized as
the index's analyzer tokenizes, and scored with the engine's formula: bm25
per field (k1 1.2, b 0.75, document lengths bucketed as Tantivy buckets them,
idf and average lengths over every turn), each field times its weight,
summed over the terms and fields that match (a term of several tokens
matches as a phrase, at the places the engine gives tokens: a part of a
field a position after the one before it, a token too long to index keeping
its place). So on the same data it gives the same hits in the same order,
only slower: it reads every turn on every question (while the index holds
no deleted documents: docs/format.md, "Without the engine").
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import chain

from histstore.overlay.markers import Overlay
from histstore.recall.fields import (
    FIELDS,
    WEIGHTS,
    blob_reader,
    field_texts,
    parts,
    project_and_agent,
)
from histstore.recall.query import (
    TOKEN_MAX,
    Phrase,
    Query,
    Scope,
    positioned,
    project_values,
    time_ms,
    tokens,
)
from histstore.store.store import Store

K1 = 1.2
B = 0.75


def _fieldnorms() -> list[int]:
    """The 256 document lengths a field length is bucketed to (Lucene's 4-bit
    float scheme, as Tantivy stores field norms): 0..39 exactly, then buckets
    that double in width every 8 values."""
    free = 24

    def int4(i: int) -> int:
        bits, shift = i & 7, (i >> 3) - 1
        return bits if shift == -1 else (bits | 8) << shift

    return [b if b < free else free + int4(b - free) for b in range(256)]


NORMS = _fieldnorms()


def bucketed(length: int) -> int:
    """The length Tantivy scores a field of ``length`` tokens with."""
    lo, hi = 0, len(NORMS) - 1
    while lo < hi:  # the largest bucket not above length
        mid = (lo + hi + 1) // 2
        if NORMS[mid] <= length:
            lo = mid
        else:
            hi = mid - 1
    return NORMS[lo]


#: the tokens of ASCII text, lower-cased (as the analyzer makes them there)
_ASCII_RUN = re.compile("[a-z0-9]+")
#: the bytes of ASCII letters and digits
_ALNUM = bytes(range(48, 58)) + bytes(range(65, 91)) + bytes(range(97, 123))


def placed_tokens(value: str, kept: list[str]) -> list[str | None]:
    """The tokens of ``value`` in their places, from ``kept`` (the tokens it
    keeps) when it dropped none. In ASCII text that is known at C speed —
    its tokens are its runs of letters and digits, so it dropped one when
    they hold more letters and digits than ``kept`` — and otherwise one
    regular expression gives the places: a run of 40 or more left as it is,
    where it equals no token of a query (a place with no token), those after
    the last token kept cut off (tool outputs are full of hashes).
    Elsewhere query.positioned."""
    if not value.isascii():
        return positioned(value)
    raw = value.encode("ascii")
    if len(raw) - len(raw.translate(None, _ALNUM)) == sum(map(len, kept)):
        return list(kept)
    runs: list[str | None] = _ASCII_RUN.findall(value.lower())
    while runs and len(runs[-1] or "") >= TOKEN_MAX:
        runs.pop()
    return runs


def field_tokens(values: list[str], kept: list[list[str]]) -> list[str | None]:
    """A field's tokens at the positions Tantivy gives them (a place with no
    token None, or a run too long to be a token), from its values and the
    tokens each keeps: each value's from where the one before it ended, one
    position on (a value's end is after its last token kept; one with none
    ends where it starts), a token too long to index keeping its place."""
    out: list[str | None] = []
    start = 0
    for value, toks in zip(values, kept, strict=True):
        placed = placed_tokens(value, toks)
        out.extend([None] * (start - len(out)))
        out.extend(placed)
        start += len(placed) + 1
    return out


def phrase_count(term: Phrase, toks: list[str | None]) -> int:
    """How often ``term`` is in ``toks``, as Tantivy counts a phrase (a None
    of ``term`` fits any place)."""
    n = len(term)
    if n == 1:
        return toks.count(term[0])
    first = term[0]
    rest = [(i, t) for i, t in enumerate(term) if i and t is not None]
    found, at, last = 0, -1, len(toks) - n
    while True:
        try:
            at = toks.index(first, at + 1, last + 1)
        except ValueError:
            return found
        if all(toks[at + i] == t for i, t in rest):
            found += 1


@dataclass
class _Doc:
    """A turn the scan matched, with its terms' counts per field."""

    session_id: str
    turn_id: str
    object_id: str
    ts_ms: int
    in_days: bool
    #: (field, term) -> (occurrences, the field's length)
    matched: dict[tuple[str, Phrase], tuple[int, int]] = field(default_factory=dict)


@dataclass
class ScanResult:
    """The scan's ranking, and whether older turns match outside the days."""

    #: (score, session id, turn id, object id, field), best first, newest first among equals
    ranked: list[tuple[float, str, str, str, str]]
    #: whether turns in scope match outside the days window
    older: bool


def _read_field(
    values: list[str], query: Query, wanted: set[str], in_scope: bool
) -> tuple[int, set[str], list[tuple[Phrase, int]]]:
    """One field of a turn: (its length, the query's tokens it holds, each
    term it holds with how often — when the turn is in scope)."""
    # the tokens kept, value by value (what a length and a frequency count);
    # their places only for a phrase to count
    kept = [tokens(v) for v in values]
    length = sum(map(len, kept))
    present = wanted.intersection(kept[0] if len(kept) == 1 else chain(*kept))
    found: list[tuple[Phrase, int]] = []
    if not in_scope or not present:
        return length, present, found
    placed: list[str | None] | None = None
    for term in query.phrases:
        if all(t is None or t in present for t in term):
            if len(term) == 1:
                one = str(term[0])  # (a phrase starts with a token)
                tf = sum([k.count(one) for k in kept])
            else:
                if placed is None:
                    placed = field_tokens(values, kept)
                tf = phrase_count(term, placed)
            if tf:
                found.append((term, tf))
    return length, present, found


def scan(
    store: Store, query: Query, scope: Scope, since_ms: int | None, overlay: Overlay
) -> ScanResult:
    wanted = {t for term in query.phrases for t in term if t is not None}
    n_docs = 0
    total: dict[str, int] = defaultdict(int)
    df: dict[tuple[str, str], int] = defaultdict(int)
    docs: list[_Doc] = []
    blob = blob_reader(store)
    for session in store.sessions():
        sid = session.session_id
        for entry in session.turns:
            if overlay.hides(sid, entry.turn_id):
                continue
            turn = store.get_json(entry.object, "turn")
            n_docs += 1
            texts = field_texts(parts(turn, blob))
            project, agent = project_and_agent(turn, session.project, session.agent)
            paths, names = project_values(project)
            in_scope = (
                scope.matches(paths, names)
                and (scope.agent is None or agent == scope.agent)
                and (scope.session is None or sid == scope.session)
            )
            ts = time_ms(entry.asked_at)
            doc = _Doc(sid, entry.turn_id, entry.object, ts, since_ms is None or ts >= since_ms)
            for f in FIELDS:
                values = texts.get(f)
                if not values:
                    continue
                length, present, found = _read_field(values, query, wanted, in_scope)
                total[f] += length
                for t in present:
                    df[(f, t)] += 1
                for term, tf in found:
                    doc.matched[(f, term)] = (tf, length)
            if doc.matched:
                docs.append(doc)
    if not n_docs:
        return ScanResult([], False)

    def idf(f: str, term: Phrase) -> float:
        return sum(
            math.log(1 + (n_docs - df[(f, t)] + 0.5) / (df[(f, t)] + 0.5))
            for t in term
            if t is not None
        )

    avg = {f: total[f] / n_docs for f in FIELDS}
    ranked: list[tuple[float, int, _Doc, str]] = []
    older = False
    for doc in docs:
        if not doc.in_days:
            older = True
            continue
        by_field: dict[str, float] = defaultdict(float)
        for (f, term), (tf, length) in doc.matched.items():
            norm = K1 * (1 - B + B * bucketed(length) / avg[f]) if avg[f] else K1
            by_field[f] += WEIGHTS[f] * idf(f, term) * (K1 + 1) * tf / (tf + norm)
        best = max(by_field.items(), key=lambda kv: (kv[1], -FIELDS.index(kv[0])))[0]
        ranked.append((sum(by_field.values()), doc.ts_ms, doc, best))
    ranked.sort(key=lambda x: (-x[0], -x[1]))
    return ScanResult(
        [(s, d.session_id, d.turn_id, d.object_id, f) for s, _, d, f in ranked], older
    )
