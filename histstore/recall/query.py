"""Queries: what a recall looks for, and the excerpt a hit shows.

A query is reduced to its informative terms (function words dropped,
histstore.recall.stopwords), each a phrase of tokens as SQLite's unicode61
tokenizer makes them (letters and digits, case folded, diacritics removed), so
the FTS5 path and the scanning path agree on what matches. An excerpt is the
text around the first match, read from the stored turn.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from histstore.recall.stopwords import FUNCTION_WORDS

K_MAX = 10
EXCERPT = 160
UNTRUSTED_LABEL = "[this turn read untrusted content — weigh its answer accordingly]"

_TOKEN = re.compile(r"[^\W_]+")  # what SQLite's unicode61 tokenizer keeps as a token
_PUNCT = "\"'`.,;:!?()[]{}<>"


def fold(text: str | None) -> str:
    """Lower case without diacritics, as unicode61 compares (``Café`` -> ``cafe``)."""
    if text is None:
        return ""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    """Tokens as SQLite's unicode61 tokenizer makes them: letters and digits,
    case folded, diacritics removed (so the LIKE path's check agrees with FTS5)."""
    return _TOKEN.findall(fold(text))


# ------------------------------------------------------------------ queries


@dataclass(frozen=True)
class Query:
    """A query reduced to its informative terms, each a phrase of tokens."""

    text: str
    terms: tuple[tuple[str, ...], ...]

    @classmethod
    def parse(cls, text: str) -> Query:
        seen: dict[tuple[str, ...], None] = {}
        for word in text.split():
            bare = word.lower().replace("\u2019", "'").strip(_PUNCT)
            if bare in FUNCTION_WORDS:  # before tokens: "don't" is one function word
                continue
            toks = tuple(tokens(word))
            if not toks or (len(toks) == 1 and toks[0] in FUNCTION_WORDS):
                continue
            if all(t in FUNCTION_WORDS for t in toks) and len(toks) > 1:
                continue
            seen.setdefault(toks, None)
        return cls(text, tuple(seen))

    def fts(self) -> str:
        return self.fts_of(self.terms)

    @staticmethod
    def fts_of(terms: tuple[tuple[str, ...], ...]) -> str:
        """Each term quoted (so ``login_user`` is the phrase "login user"), OR-ed."""
        return " OR ".join('"' + " ".join(t) + '"' for t in terms)


def term_in(term: tuple[str, ...], toks: list[str]) -> int:
    """Index of the first token where the phrase ``term`` starts in ``toks``, or -1."""
    n = len(term)
    first = term[0]
    for i, t in enumerate(toks):
        if t == first and tuple(toks[i : i + n]) == term:
            return i
    return -1


def excerpt(text: str, terms: tuple[tuple[str, ...], ...], width: int = EXCERPT) -> str | None:
    """The text around the first match of any term (token-wise, ignoring case),
    whitespace collapsed; None when no term is in the text. The same rule serves
    both search paths."""
    flat = " ".join(text.split())
    folded = fold(flat)
    if not any(t[0] in folded for t in terms):
        return None  # no term's first token anywhere: the common case, decided at C speed
    spans = [(m.start(), fold(m.group())) for m in _TOKEN.finditer(flat)]
    words = [w for _, w in spans]
    firsts = {t[0] for t in terms}
    best: int | None = None
    for i, w in enumerate(words):
        if w in firsts and any(tuple(words[i : i + len(t)]) == t for t in terms):
            best = spans[i][0]
            break
    if best is None:
        return None
    lo = max(0, best - width // 2)
    hi = min(len(flat), lo + width)
    lo = max(0, min(lo, hi - width))
    # cut at word boundaries
    if lo > 0:
        sp = flat.find(" ", lo)
        lo = sp + 1 if 0 <= sp < best else lo
    if hi < len(flat):
        sp = flat.rfind(" ", best, hi)
        hi = sp if sp > best else hi
    return ("…" if lo > 0 else "") + flat[lo:hi] + ("…" if hi < len(flat) else "")


@dataclass
class Hit:
    turn_id: str
    session_id: str
    object: str
    project: str
    asked_at: str
    excerpt: str
    read: list[str]
    edited: list[str]
    tainted: bool
    score: float
    #: the agent of the turn's session
    agent: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "session_id": self.session_id,
            "agent": self.agent,
            "object": self.object,
            "project": self.project,
            "asked_at": self.asked_at,
            "excerpt": self.excerpt,
            "read": self.read,
            "edited": self.edited,
            "tainted": self.tainted,
            "score": self.score,
        }


@dataclass
class RecallResult:
    query: Query
    hits: list[Hit]
    #: "found" | "no-terms" | "empty" (nothing recorded yet) | "no-match" | "no-match-in-days"
    outcome: str
    scope: str | None  # the project key searched, None when everywhere
    days: int | None
    path: str  # "fts5" or "like"
