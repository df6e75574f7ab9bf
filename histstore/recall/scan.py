"""Recall without the engine: the same question answered by scanning the objects.

Forced by ``HS_RECALL_FALLBACK`` (or taken when the engine cannot be
loaded). Every turn the overlay does not hide is read, cut into the same
parts and fields as the index holds (histstore.recall.fields), tokenized as
the index's analyzer tokenizes, and scored with the engine's formula: bm25
per field (k1 1.2, b 0.75, document lengths bucketed as Tantivy buckets them,
idf and average lengths over every turn), each field times its weight,
summed over the terms and fields that match (a term of several tokens
matches as a phrase). So on the same data it gives the same hits in the
same order, only slower: it reads every turn on every question.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from histstore.overlay.markers import Overlay
from histstore.recall.fields import (
    FIELDS,
    WEIGHTS,
    blob_reader,
    field_texts,
    parts,
    project_and_agent,
)
from histstore.recall.query import Query, Scope, project_values, time_ms, tokens
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


def phrase_count(term: tuple[str, ...], toks: list[str]) -> int:
    n = len(term)
    if n == 1:
        return toks.count(term[0])
    first = term[0]
    return sum(1 for i, t in enumerate(toks) if t == first and tuple(toks[i : i + n]) == term)


@dataclass
class _Doc:
    """A turn the scan matched, with its terms' counts per field."""

    session_id: str
    turn_id: str
    object_id: str
    ts_ms: int
    in_days: bool
    #: (field, term) -> (occurrences, the field's length)
    matched: dict[tuple[str, tuple[str, ...]], tuple[int, int]] = field(default_factory=dict)


@dataclass
class ScanResult:
    """The scan's ranking, and whether older turns match outside the days."""

    #: (score, session id, turn id, object id, field), best first, newest first among equals
    ranked: list[tuple[float, str, str, str, str]]
    #: whether turns in scope match outside the days window
    older: bool


def scan(
    store: Store, query: Query, scope: Scope, since_ms: int | None, overlay: Overlay
) -> ScanResult:
    wanted = {t for term in query.terms for t in term}
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
                text = texts.get(f)
                if not text:
                    continue
                toks = tokens(text)
                total[f] += len(toks)
                present = wanted.intersection(toks)
                for t in present:
                    df[(f, t)] += 1
                if not in_scope or not present:
                    continue
                for term in query.terms:
                    if all(t in present for t in term):
                        tf = phrase_count(term, toks)
                        if tf:
                            doc.matched[(f, term)] = (tf, len(toks))
            if doc.matched:
                docs.append(doc)
    if not n_docs:
        return ScanResult([], False)

    def idf(f: str, term: tuple[str, ...]) -> float:
        return sum(math.log(1 + (n_docs - df[(f, t)] + 0.5) / (df[(f, t)] + 0.5)) for t in term)

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
