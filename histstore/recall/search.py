"""Searching a generation: the query plan for FTS5, the LIKE path, and the hits.

bm25 over FTS5 with the work bounded for very common terms (see
:func:`ranked_fts`), or the same question by LIKE when FTS5 is missing or
the fallback is forced; then the hits, merged with the overlay at read time
and given excerpts. Every function takes an open read-only connection to one
generation (histstore.recall.index keeps it).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import blake3

from histstore.overlay.markers import Overlay
from histstore.recall.query import EXCERPT, Hit, Query, excerpt, fold, term_in, tokens

#: a term in more documents than this is "common": ranking all its matches is
#: the slow part of a query, so the work for it is bounded (see ranked_fts)
COMMON_DOCS = 2000


def proj_token(pkey: str) -> str:
    return "p" + str(blake3.blake3(pkey.encode("utf-8")).hexdigest())[:20]


def agent_token(agent: str) -> str:
    """The token naming an agent in the ``proj`` column (beside the project's)."""
    return "a" + str(blake3.blake3(agent.encode("utf-8")).hexdigest())[:20]


def like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def is_common(conn: sqlite3.Connection, term: tuple[str, ...]) -> bool:
    """Whether ``term`` is in more than COMMON_DOCS turns: a bounded probe (it
    stops at that many matches), where a document count would read the
    term's whole posting list."""
    probe = '"' + " ".join(term) + '"'
    return (
        conn.execute(
            "SELECT 1 FROM fts WHERE fts MATCH ? LIMIT 1 OFFSET ?", (probe, COMMON_DOCS)
        ).fetchone()
        is not None
    )


def ranked_fts(
    conn: sqlite3.Connection,
    query: Query,
    scope: str | None,
    since: int | None,
    k: int,
    agent: str | None = None,
) -> list[tuple[int, float]]:
    """bm25 over FTS5, with the work bounded for very common terms. bm25
    weighs a term by how rare it is, which means reading every match of it:
    for a term in most turns that is the whole cost of a query. So the
    informative terms (each in at most COMMON_DOCS turns) are ranked by
    bm25 over every turn in scope; when they give fewer hits than wanted
    (or there are none), the newest turns in scope that match any term
    follow, unranked: FTS5 reads those newest first and stops."""
    rare = tuple(t for t in query.terms if not is_common(conn, t))
    ranked: list[tuple[int, float]] = []
    if rare:
        ranked = ranked_bm25(conn, rare, scope, since, k, agent)
    if len(ranked) < k * 3 and len(rare) < len(query.terms):
        have = {r for r, _ in ranked}
        ranked += [
            (r, 0.0) for r in newest(conn, query.terms, scope, since, k, agent) if r not in have
        ]
    return ranked


def match_expr(
    terms: tuple[tuple[str, ...], ...], scope: str | None, agent: str | None = None
) -> str:
    match = f"({Query.fts_of(terms)})"
    if scope is not None:
        match = f"proj : {proj_token(scope)} AND {match}"
    if agent is not None:
        match = f"proj : {agent_token(agent)} AND {match}"
    return match


def newest(
    conn: sqlite3.Connection,
    terms: tuple[tuple[str, ...], ...],
    scope: str | None,
    since: int | None,
    k: int,
    agent: str | None = None,
) -> list[int]:
    sql = "SELECT rowid FROM fts WHERE fts MATCH ?"
    args: list[Any] = [match_expr(terms, scope, agent)]
    if since is not None:
        sql += " AND rowid >= ?"
        args.append(since)
    sql += " ORDER BY rowid DESC LIMIT ?"
    args.append(k * 3)
    return [r for (r,) in conn.execute(sql, args)]


def ranked_bm25(
    conn: sqlite3.Connection,
    terms: tuple[tuple[str, ...], ...],
    scope: str | None,
    low: int | None,
    k: int,
    agent: str | None = None,
) -> list[tuple[int, float]]:
    sql = "SELECT rowid, bm25(fts, 4.0, 2.0, 1.0, 0.0) AS score FROM fts WHERE fts MATCH ?"
    args: list[Any] = [match_expr(terms, scope, agent)]
    if low is not None:
        sql += " AND rowid >= ?"
        args.append(low)
    sql += " ORDER BY score, rowid DESC LIMIT ?"
    args.append(k * 3)
    return [(r, float(s)) for r, s in conn.execute(sql, args)]


def scan_like(
    conn: sqlite3.Connection,
    query: Query,
    scope: str | None,
    since: int | None,
    k: int,
    agent: str | None = None,
) -> list[tuple[int, float]]:
    """The same question by LIKE: candidates by substring of the folded text
    (case and accents, as the tokens of the FTS path), then the token rule
    checked in Python; ranked by how many terms match (asked counts most,
    then answered, then files), newest first."""
    conn.create_function("hsfold", 1, fold, deterministic=True)
    clauses: list[str] = []
    args: list[Any] = []
    for t in query.terms:
        clauses.append("hsfold(asked || ' ' || answered || ' ' || files) LIKE ? ESCAPE '\\'")
        args.append("%" + "%".join(like_escape(x) for x in t) + "%")
    sql = "SELECT rowid, asked, answered, files FROM turn WHERE (" + " OR ".join(clauses) + ")"
    if scope is not None:
        sql += " AND pkey = ?"
        args.append(scope)
    if agent is not None:
        sql += " AND agent = ?"
        args.append(agent)
    if since is not None:
        sql += " AND rowid >= ?"
        args.append(since)
    sql += " ORDER BY rowid DESC"
    scored: list[tuple[float, int]] = []
    for rowid, asked, answered, files in conn.execute(sql, args):
        fields = [(tokens(asked), 4.0), (tokens(answered), 2.0), (tokens(files), 1.0)]
        score = 0.0
        for t in query.terms:
            score += sum(w for toks, w in fields if term_in(t, toks) >= 0)
        if score:
            scored.append((-score, -rowid))
    scored.sort()
    return [(-r, s) for s, r in scored[: k * 3]]


def any_match(
    conn: sqlite3.Connection,
    query: Query,
    scope: str | None,
    like: bool,
    overlay: Overlay,
    agent: str | None = None,
) -> bool:
    """Whether any turn the overlay does not hide matches, ignoring the days
    window (looking at the newest 50 matches: enough for the hint it gives)."""
    if like:
        rowids = [r for r, _ in scan_like(conn, query, scope, None, 17, agent)]
    else:
        rowids = [
            r
            for (r,) in conn.execute(
                "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT 50",
                (match_expr(query.terms, scope, agent),),
            )
        ]
    for rowid in rowids:
        row = conn.execute(
            "SELECT session_id, turn_id FROM turn WHERE rowid = ?", (rowid,)
        ).fetchone()
        if row is not None and not (overlay and overlay.hides(row[0], row[1])):
            return True
    return False


def hits_of(
    conn: sqlite3.Connection,
    query: Query,
    ranked: list[tuple[int, float]],
    k: int,
    overlay: Overlay,
) -> list[Hit]:
    hits: list[Hit] = []
    seen: set[str] = set()
    for rowid, score in ranked:
        row = conn.execute(
            "SELECT turn_id, session_id, object, project, asked_at, asked, answered, files,"
            " read_json, edited_json, tainted, agent FROM turn WHERE rowid = ?",
            (rowid,),
        ).fetchone()
        if row is None or row[0] in seen:
            continue  # the same turn id twice is one hit
        if overlay and overlay.hides(row[1], row[0]):
            continue
        seen.add(row[0])
        text = (
            excerpt(row[5], query.terms)
            or excerpt(row[6], query.terms)
            or excerpt(row[7], query.terms)
            or " ".join(row[5].split())[:EXCERPT]
        )
        hits.append(
            Hit(
                turn_id=row[0],
                session_id=row[1],
                object=row[2],
                project=row[3],
                asked_at=row[4],
                excerpt=text,
                read=json.loads(row[8]),
                edited=json.loads(row[9]),
                tainted=bool(row[10]),
                score=score,
                agent=row[11],
            )
        )
        if len(hits) == k:
            break
    return hits
