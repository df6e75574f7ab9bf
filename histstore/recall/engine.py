"""The search engine under recall: a Tantivy index, its schema, documents and queries.

Everything that knows Tantivy is here (docs/format.md, "The recall index"):
the schema (one document per turn of a session; ids, time, project, agent,
and one text field per part of a turn, :mod:`histstore.recall.fields`), the
analyzer the text fields use, documents made from a turn, and the query of a
recall — every term in every field, each field with its weight, bm25 over the
whole index; the filters inside the engine as conditions that do not score.
The index stores ids only, never text: a hit's text is read from its turn
object.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import tantivy

from histstore.recall.fields import FIELDS, WEIGHTS
from histstore.recall.query import index_analyzer, project_values

#: the analyzer every text field uses: runs of letters and digits (``_``, ``.``,
#: ``/``, ``-`` separate), lower case, accents folded to ASCII, tokens of 40
#: bytes or more dropped
WORDS = "hs_words"
#: tantivy's writer needs at least 15 MB of heap per indexing thread. A build
#: flushes a segment each time its heap fills, and Tantivy merges 8 segments of
#: a size into one, rereading them: at 1M turns a 96 MB heap gave ~16
#: segments and merges (249 CPU-s, RSS 666 MB with the merged files mapped),
#: 200 MB gives 5 and none (211 CPU-s, RSS 338 MB, 272 MB of it the heap's)
SMALL_HEAP = 20_000_000
BULK_HEAP = 200_000_000

KEY, OBJECT, SESSION, TS, PROJ, PNAME, AGENT = (
    "key",
    "object",
    "session",
    "ts",
    "proj",
    "pname",
    "agent",
)


analyzer = index_analyzer


def schema() -> tantivy.Schema:
    """The fields in their fixed order (docs/format.md, "Schema")."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field(KEY, stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_bytes_field(OBJECT, stored=True)
    sb.add_text_field(SESSION, tokenizer_name="raw", index_option="basic")
    sb.add_integer_field(TS, fast=True)
    sb.add_text_field(PROJ, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(PNAME, tokenizer_name="raw", index_option="basic")
    sb.add_text_field(AGENT, tokenizer_name="raw", index_option="basic")
    for f in FIELDS:
        sb.add_text_field(f, tokenizer_name=WORDS, index_option="position")
    return sb.build()


def key_of(session_id: str, turn_id: str) -> str:
    """A document's key: the turn id first (a turn is found by prefix), then the
    session (``~`` is in no id)."""
    return f"{turn_id}~{session_id}"


def split_key(key: str) -> tuple[str, str]:
    """(session id, turn id) of a key."""
    turn_id, _, session_id = key.partition("~")
    return session_id, turn_id


def create(path: Path) -> tantivy.Index:
    path.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(schema(), path=str(path), reuse=False)
    index.register_tokenizer(WORDS, analyzer())
    return index


def open_index(path: Path) -> tantivy.Index:
    index = tantivy.Index.open(str(path))
    index.register_tokenizer(WORDS, analyzer())
    index.config_reader(reload_policy="manual")
    return index


_PROJECTS: dict[str, tuple[list[str], list[str]]] = {}


def document(
    session_id: str,
    turn_id: str,
    object_id: str,
    ts_ms: int,
    project: str,
    agent: str,
    texts: dict[str, list[str]],
) -> tantivy.Document:
    """A turn's document; ``texts``: each text field's values
    (fields.field_texts), added one by one, so Tantivy leaves a position
    between two parts and no phrase spans them."""
    doc = tantivy.Document()
    doc.add_text(KEY, f"{turn_id}~{session_id}")
    doc.add_bytes(OBJECT, bytes.fromhex(object_id))
    doc.add_text(SESSION, session_id)
    doc.add_integer(TS, ts_ms)
    values = _PROJECTS.get(project)
    if values is None:  # a few projects, a million turns: computed once each
        values = _PROJECTS[project] = project_values(project)
    for p in values[0]:
        doc.add_text(PROJ, p)
    for n in values[1]:
        doc.add_text(PNAME, n)
    if agent:
        doc.add_text(AGENT, agent)
    for f, parts in texts.items():
        for text in parts:
            doc.add_text(f, text)
    return doc


# ------------------------------------------------------------------ queries


class Filters:
    """What a recall is limited to, applied inside the engine: the project as
    a path (any of ``paths``) or by its last path component (``name``)."""

    __slots__ = ("agent", "name", "paths", "session", "since_ms")

    def __init__(
        self,
        paths: tuple[str, ...] = (),
        name: str | None = None,
        since_ms: int | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> None:
        self.paths = paths
        self.name = name
        self.since_ms = since_ms
        self.agent = agent
        self.session = session

    def any_time(self) -> Filters:
        return Filters(self.paths, self.name, None, self.agent, self.session)

    @property
    def scoped(self) -> bool:
        return bool(self.paths or self.name)


def _term(sch: tantivy.Schema, field: str, value: str) -> tantivy.Query:
    return tantivy.Query.term_query(sch, field, value)


def _field_query(
    searcher: tantivy.Searcher, sch: tantivy.Schema, field: str, phrase: Sequence[str | None]
) -> tantivy.Query | None:
    """A term (one token) or a phrase (its tokens in order, each at its place:
    a None of ``phrase``, a token too long to index, is a place left open) in
    one field; None when a token is in no document's field (nothing to score)."""
    words: list[str | tuple[int, str]] = [(i, t) for i, t in enumerate(phrase) if t is not None]
    toks = [t for t in phrase if t is not None]
    if any(searcher.doc_freq(field, t) == 0 for t in toks):
        return None
    if len(toks) == 1:
        return _term(sch, field, toks[0])
    if len(toks) == len(phrase):
        return tantivy.Query.phrase_query(sch, field, list(toks))
    return tantivy.Query.phrase_query(sch, field, words)


class TextQuery:
    """The scored part of a recall: every term in every field, boosted by the
    field's weight, summed (bm25 in each field). ``by_field`` keeps each field's
    part, to tell which field a hit matched in."""

    __slots__ = ("by_field", "query")

    def __init__(self, query: tantivy.Query, by_field: dict[str, tantivy.Query]) -> None:
        self.query = query
        self.by_field = by_field


def text_query(
    searcher: tantivy.Searcher, sch: tantivy.Schema, terms: Iterable[Sequence[str | None]]
) -> TextQuery | None:
    """Each term (``Query.phrases``: the index's tokens at their places, as
    query.positioned makes them with the index's analyzer) a phrase of them,
    in every field."""
    clauses: list[tuple[tantivy.Occur, tantivy.Query]] = []
    per_field: dict[str, list[tuple[tantivy.Occur, tantivy.Query]]] = {}
    for toks in terms:
        if not toks:
            continue
        for f in FIELDS:
            q = _field_query(searcher, sch, f, toks)
            if q is None:
                continue
            boosted = tantivy.Query.boost_query(q, WEIGHTS[f])
            clauses.append((tantivy.Occur.Should, boosted))
            per_field.setdefault(f, []).append((tantivy.Occur.Should, boosted))
    if not clauses:
        return None
    return TextQuery(
        tantivy.Query.boolean_query(clauses),
        {f: tantivy.Query.boolean_query(c) for f, c in per_field.items()},
    )


def filter_query(sch: tantivy.Schema, filters: Filters) -> list[tantivy.Query]:
    """The conditions of a recall, each scoring 0 (they select, never rank)."""
    out: list[tantivy.Query] = []
    if filters.scoped:
        alts = [_term(sch, PROJ, p) for p in filters.paths]
        if filters.name:
            alts.append(_term(sch, PNAME, filters.name))
        out.append(
            alts[0]
            if len(alts) == 1
            else tantivy.Query.boolean_query([(tantivy.Occur.Should, a) for a in alts])
        )
    if filters.since_ms is not None:
        out.append(
            tantivy.Query.range_query(sch, TS, tantivy.FieldType.Integer, filters.since_ms, None)
        )
    if filters.agent is not None:
        out.append(_term(sch, AGENT, filters.agent))
    if filters.session is not None:
        out.append(_term(sch, SESSION, filters.session))
    return [tantivy.Query.const_score_query(q, 0.0) for q in out]


def with_filters(query: tantivy.Query, conditions: list[tantivy.Query]) -> tantivy.Query:
    if not conditions:
        return query
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, query), *[(tantivy.Occur.Must, c) for c in conditions]]
    )


class Candidate:
    """A document found: its score, time, ids and address."""

    __slots__ = ("address", "object_id", "score", "session_id", "ts_ms", "turn_id")

    def __init__(
        self,
        score: float,
        ts_ms: int,
        session_id: str,
        turn_id: str,
        object_id: str,
        address: Any,
    ) -> None:
        self.score = score
        self.ts_ms = ts_ms
        self.session_id = session_id
        self.turn_id = turn_id
        self.object_id = object_id
        self.address = address


#: the most documents fetched to settle a tie at the ``k``-th place (beyond
#: it, which of the equally scored documents come first is the engine's)
TIE_LIMIT = 20_000


def candidates(
    searcher: tantivy.Searcher, query: tantivy.Query, limit: int, k: int = 1
) -> list[tuple[float, int, Any]]:
    """The ``limit`` best documents, (score, time, address), best first and
    newest first among equal scores. The engine breaks ties by where a
    document sits in the index, so when the documents scored as the ``k``-th
    run past ``limit``, more are fetched (up to :data:`TIE_LIMIT`) until the
    whole run is in: the newest of them come first, however the index was
    built (one build, or catch-ups in any order)."""
    hits = searcher.search(query, limit, count=False).hits
    while len(hits) == limit and limit < TIE_LIMIT and hits[-1][0] == hits[min(k, limit) - 1][0]:
        limit = min(limit * 4, TIE_LIMIT)
        hits = searcher.search(query, limit, count=False).hits
    if not hits:
        return []
    times = searcher.fast_field_values(TS, [a for _, a in hits])
    ranked = [(float(s), int(t or 0), a) for (s, a), t in zip(hits, times, strict=True)]
    ranked.sort(key=lambda x: (-x[0], -x[1]))
    return ranked


def stored(searcher: tantivy.Searcher, score: float, ts_ms: int, address: Any) -> Candidate:
    doc = searcher.doc(address)
    session_id, turn_id = split_key(str(doc.get_first(KEY)))
    raw = doc.get_first(OBJECT)
    object_id = bytes(raw).hex() if raw is not None else ""
    return Candidate(score, ts_ms, session_id, turn_id, object_id, address)


def matched_field(searcher: tantivy.Searcher, tq: TextQuery, address: Any) -> str | None:
    """The field that gave a hit most of its score (its weight included)."""
    best: tuple[float, int, str] | None = None
    for f, q in tq.by_field.items():
        try:
            value = float(json.loads(q.explain(searcher, address).to_json())["value"])
        except ValueError:
            continue  # this field does not match the document
        rank = (value, -FIELDS.index(f), f)
        if best is None or rank > best:
            best = rank
    return best[2] if best else None


def stored_key(searcher: tantivy.Searcher, address: Any) -> tuple[str, str]:
    """(session id, turn id) of a document."""
    return split_key(str(searcher.doc(address).get_first(KEY)))


def all_live(searcher: tantivy.Searcher) -> list[Any]:
    """The address of every document not deleted."""
    n = int(searcher.num_docs)
    if not n:
        return []
    return [a for _, a in searcher.search(tantivy.Query.all_query(), n, count=False).hits]


def any_hit(searcher: tantivy.Searcher, query: tantivy.Query, limit: int) -> list[Any]:
    return [a for _, a in searcher.search(query, limit, count=False).hits]


def count(searcher: tantivy.Searcher, query: tantivy.Query) -> int:
    result: Any = searcher.search(query, 1, count=True)
    return int(result.count or 0)


def key_query(sch: tantivy.Schema, session_id: str | None, turn_id: str | None) -> tantivy.Query:
    """The documents of a turn (in one session, or in any), or of a session."""
    if turn_id is not None and session_id is not None:
        return _term(sch, KEY, key_of(session_id, turn_id))
    if turn_id is not None:
        return tantivy.Query.regex_query(sch, KEY, re.escape(turn_id) + "~.*")
    if session_id is not None:
        return _term(sch, SESSION, session_id)
    return tantivy.Query.all_query()


def segments(path: Path) -> list[dict[str, Any]]:
    """The segments a committed index is made of, as its ``meta.json`` lists them
    (``segment_id``, ``max_doc``, ``deletes``)."""
    meta = json.loads((path / "meta.json").read_text("utf-8"))
    segs: list[dict[str, Any]] = meta.get("segments", [])
    return segs


def version() -> str:
    return str(getattr(tantivy, "__version__", "tantivy"))
