"""Queries: what a recall looks for, where it looks, and what a hit shows.

A query is reduced to its informative terms (function words dropped,
histstore.recall.stopwords), each a phrase of tokens as the index's analyzer
makes them (runs of letters and digits, case and accents folded), so the
engine and the scan agree on what matches. The scope (a project by path or
by name, days, an agent, a session) is a :class:`Scope`. An excerpt is the
text around the first match, read from the stored turn.
"""

from __future__ import annotations

import itertools
import os
import re
import unicodedata
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from histstore.errors import BadInput
from histstore.history.project import project_key
from histstore.history.turn import parse_time
from histstore.recall.stopwords import FUNCTION_WORDS

K_MAX = 10
EXCERPT = 160
UNTRUSTED_LABEL = "[this turn read untrusted content — weigh its answer accordingly]"

_TOKEN = re.compile(r"[^\W_]+")  # runs of letters and digits, as the index's tokenizer
_PUNCT = "\"'`.,;:!?()[]{}<>"
#: a token of this many UTF-8 bytes or more is not indexed (nor searched)
TOKEN_MAX = 40
#: letters ASCII folding maps that Unicode decomposition does not
_FOLD = str.maketrans(
    {"ß": "ss", "æ": "ae", "ø": "o", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"}
)


#: the combining marks decomposition leaves after a letter (accents, diacritics)
_MARKS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


#: the letters of ``_FOLD``, found at C speed (translating a long text by a
#: dict costs a Python lookup per character)
_FOLDED = re.compile("[" + "".join(chr(c) for c in _FOLD) + "]")


def _fold_letter(m: re.Match[str]) -> str:
    return str(_FOLD[ord(m.group())])


def fold(text: str | None) -> str:
    """Lower case without accents, as the index compares (``Café`` -> ``cafe``);
    what decomposing split and no mark was taken from is put back together
    (a Hangul syllable stays one)."""
    if text is None:
        return ""
    text = text.lower()
    if text.isascii():
        return text
    if _FOLDED.search(text):
        text = _FOLDED.sub(_fold_letter, text)
    return unicodedata.normalize("NFC", _MARKS.sub("", unicodedata.normalize("NFKD", text)))


#: a token this long (characters) may be of 40 UTF-8 bytes or more
_MAYBE_LONG = TOKEN_MAX // 4


def index_analyzer() -> Any:
    """The analyzer of the index's text fields (``hs_words``, a
    ``tantivy.TextAnalyzer``): runs of letters and digits, those of 40 bytes
    or more dropped, lower case, ASCII folding."""
    import tantivy  # the scan runs without the package (approx_tokens then)

    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(TOKEN_MAX))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


_ANALYZE: list[Callable[[str], list[str]]] = []


def tokens(text: str) -> list[str]:
    """Tokens as the index holds them, by the index's own analyzer — of a
    query and, in the scan, of every turn, so the two answer alike in every
    script; without the tantivy package, as :func:`approx_tokens` makes them."""
    if not _ANALYZE:
        try:
            _ANALYZE.append(index_analyzer().analyze)
        except ImportError:
            _ANALYZE.append(approx_tokens)
    return _ANALYZE[0](text)


def approx_tokens(text: str) -> list[str]:
    """Tokens as the index's analyzer makes them, in Python: runs of letters
    and digits, case and accents folded, those of 40 bytes or more dropped —
    measured as written, before folding, as the analyzer drops them (``Café``
    is 5 bytes, ``cafe`` 4). The same in Latin text; Python's folding is wider
    elsewhere (docs/architecture.md)."""
    folded = fold(text)
    toks: list[str] = _TOKEN.findall(folded)
    # (in C where it can be: the scan asks this of every turn's every field;
    # folding never makes a token shorter in characters)
    if max(map(len, toks), default=0) < _MAYBE_LONG:
        return toks
    if text.isascii():  # a byte a character, before folding and after
        return list(itertools.compress(toks, map(TOKEN_MAX.__gt__, map(len, toks))))
    return _long_dropped(text, folded, toks)


def _long_dropped(text: str, folded: str, toks: list[str]) -> list[str]:
    """``toks`` (of ``folded``, some long) less those of 40 bytes or more as
    ``text`` wrote them."""
    longs = list(itertools.compress(range(len(toks)), map(_MAYBE_LONG.__le__, map(len, toks))))
    written: list[str] = []
    if len(folded) == len(text) and not _MARKS.search(text):
        # folded letter for letter (only a mark folds to nothing): the same places
        at = 0
        for i in longs:
            at = folded.find(toks[i], at)
            written.append(text[at : at + len(toks[i])])
            at += len(toks[i])
    else:
        # (ß, æ, a ligature, a mark) the runs as written, paired in order; a
        # pair that does not fold to its token (folding moved a boundary) is
        # measured as folded
        runs = _TOKEN.findall(text)
        if len(runs) != len(toks):
            runs = toks
        written = [runs[i] if fold(runs[i]) == toks[i] else toks[i] for i in longs]
    drop = {i for i, w in zip(longs, written, strict=True) if len(w.encode()) >= TOKEN_MAX}
    return [t for i, t in enumerate(toks) if i not in drop] if drop else toks


def time_ms(ts: str) -> int:
    """An RFC 3339 time as milliseconds since the epoch (a document's ``ts``)."""
    try:
        # the stored form (...T10:00:00.000Z) in C; anything else the full parser
        dt = datetime.fromisoformat(ts)
    except ValueError:
        dt = None
    if dt is None or dt.tzinfo is None:  # (no zone: UTC, as parse_time reads it)
        dt = parse_time(ts)
    return int(dt.timestamp() * 1000)


# ------------------------------------------------------------------ queries


# (plain classes, not dataclasses: each dataclass costs a millisecond or more
# of start-up, and hs recall imports this module on every question)


class Query:
    """A query reduced to its informative terms, each a phrase of tokens."""

    __slots__ = ("terms", "text")

    def __init__(self, text: str, terms: tuple[tuple[str, ...], ...]) -> None:
        self.text = text
        self.terms = terms

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


#: the most days a window may reach back (a wider one overflowed: "date value
#: out of range"): counted from 2000 back to year 1, the first a date has, so a
#: window from any later day stays within the dates there are
MAX_DAYS = (datetime(2000, 1, 1) - datetime(1, 1, 1)).days


class Scope:
    """Where a recall looks: a project (``key``, the project key searched; the
    paths it matches; or, given as a bare name, every project whose last path
    component it is), the last ``days`` days, one agent, one session."""

    __slots__ = ("agent", "days", "key", "name", "paths", "session")

    def __init__(
        self,
        key: str | None = None,
        paths: tuple[str, ...] = (),
        name: str | None = None,
        days: int | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> None:
        self.key = key
        self.paths = paths
        self.name = name
        self.days = days
        self.agent = agent
        self.session = session

    @classmethod
    def of(
        cls,
        project: str | None,
        *,
        days: int | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> Scope:
        """``project`` as a person gave it (None: everywhere). A directory that
        exists here is made absolute and mapped to its project key; anything
        else is a path as given; a name without ``/`` also matches every
        project whose last path component it is. A trailing slash is ignored."""
        if days is not None and days < 1:
            raise BadInput(f"--days {days}: give a number of days, 1 or more")
        if days is not None and days > MAX_DAYS:
            raise BadInput(
                f"--days {days} reaches before year 1",
                hint="give fewer days, or leave --days out to search them all",
            )
        for what, value in (("--agent", agent), ("--session", session)):
            if value is not None and not value.strip():
                raise BadInput(f"{what}: give a non-empty value")
        if project is None:
            return cls(days=days, agent=agent, session=session)
        text = project.strip()
        if not text:
            raise BadInput("--project: give a project directory or name")
        bare = text.rstrip("/\\") or text[:1]
        paths = [bare]
        if os.path.isdir(bare):
            absolute = str(Path(bare).resolve())
            paths = [project_key(absolute), absolute]
        key = paths[0]
        name = bare if "/" not in bare and "\\" not in bare else None
        return cls(key, tuple(dict.fromkeys(paths)), name, days, agent, session)

    def matches(self, paths: list[str], names: list[str]) -> bool:
        """Whether a turn with these project values (engine.project_values) is in scope."""
        if not self.paths and not self.name:
            return True
        return any(p in self.paths for p in paths) or (self.name is not None and self.name in names)


def project_values(project: str) -> tuple[list[str], list[str]]:
    """What a turn's project is matched by: (paths, names). The paths are the
    project as recorded and its project key, without a trailing slash; the names
    their last components."""
    paths = list(dict.fromkeys(p for p in (strip(project), strip(project_key(project))) if p))
    names = list(dict.fromkeys(n for n in (base_name(p) for p in paths) if n))
    return paths, names


def strip(path: str) -> str:
    """A path without its trailing slashes (``/`` stays ``/``)."""
    out = path.rstrip("/\\")
    return out if out else path[:1]


def base_name(path: str) -> str:
    return strip(path).replace("\\", "/").rsplit("/", 1)[-1]


def excerpt(text: str, terms: tuple[tuple[str, ...], ...], width: int = EXCERPT) -> str | None:
    """The text around the first match of any term (token-wise, by the
    index's tokens), whitespace collapsed; None when no term is in the text.
    The same rule serves the engine's hits and the scan's."""
    flat = " ".join(text.split())
    firsts = {t[0] for t in terms}
    # no term's first token anywhere: the common case, decided at C speed
    if flat.isascii():
        folded = flat.lower()
        if not any(f in folded for f in firsts):
            return None
    elif firsts.isdisjoint(tokens(flat)):
        return None
    best = _first_match(flat, terms, firsts)
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


def _first_match(flat: str, terms: tuple[tuple[str, ...], ...], firsts: set[str]) -> int | None:
    """Where in ``flat`` the first term starts, token-wise."""
    if flat.isascii():
        # letters and digits are ASCII's tokens: find the first tokens by one
        # regex over the lower-cased text, then check the rest of the phrase
        folded = flat.lower()
        pattern = re.compile(
            "(?<![^\\W_])(?:" + "|".join(re.escape(f) for f in sorted(firsts)) + ")(?![^\\W_])"
        )
        span = 80 * max(len(t) for t in terms)  # room for the longest phrase's tokens
        for m in pattern.finditer(folded):
            toks = _TOKEN.findall(folded, m.start(), m.start() + span)
            if any(tuple(toks[: len(t)]) == t for t in terms if t[0] == m.group()):
                return m.start()
        return None
    spans = token_spans(flat)
    words = [w for _, _, w in spans]
    for i, w in enumerate(words):
        if w in firsts and any(tuple(words[i : i + len(t)]) == t for t in terms):
            return spans[i][0]
    return None


_ASCII_TOKEN = re.compile(r"[A-Za-z0-9]+")
#: whether a character is one of a token's, as the index's tokenizer decides
_TOKEN_CHAR: dict[str, bool] = {}


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """Each token of ``text`` as the index makes it, with where it is written:
    (start, end, token). Where the text is not ASCII, each of its characters
    is asked of the index's tokenizer once (its notion of a letter is
    Unicode's Alphabetic, wider than Python's), and the runs of those found
    by one regular expression."""
    if text.isascii():
        return [
            (m.start(), m.end(), m.group().lower())
            for m in _ASCII_TOKEN.finditer(text)
            if m.end() - m.start() < TOKEN_MAX
        ]
    known = _TOKEN_CHAR
    letters = []
    for c in set(text):
        if not c.isascii():
            inside = known.get(c)
            if inside is None:
                inside = known[c] = bool(tokens(c))
            if inside:
                letters.append(re.escape(c))
    runs = re.compile("[A-Za-z0-9" + "".join(sorted(letters)) + "]+")
    found = [
        m
        for m in runs.finditer(text)
        if m.end() - m.start() < _MAYBE_LONG or len(m.group().encode()) < TOKEN_MAX
    ]
    toks = tokens(text)
    if len(found) == len(toks):  # the analyzer's tokens are those runs, in order
        return [(m.start(), m.end(), t) for m, t in zip(found, toks, strict=True)]
    return [(m.start(), m.end(), " ".join(t)) for m in found if (t := tokens(m.group()))]


class Hit:
    """A turn found: its ids, what it says where it matched (``field``, the
    field it matched in most; ``where``, in words: "in Bash output"), its
    bm25 ``score``."""

    __slots__ = (
        "agent",
        "asked_at",
        "edited",
        "excerpt",
        "field",
        "object",
        "project",
        "read",
        "score",
        "session_id",
        "tainted",
        "turn_id",
        "where",
    )

    def __init__(
        self,
        *,
        turn_id: str,
        session_id: str,
        object: str,
        project: str,
        asked_at: str,
        excerpt: str,
        read: list[str],
        edited: list[str],
        tainted: bool,
        score: float,
        field: str,
        where: str,
        agent: str = "",
    ) -> None:
        self.turn_id = turn_id
        self.session_id = session_id
        self.object = object
        self.project = project
        self.asked_at = asked_at
        self.excerpt = excerpt
        self.read = read
        self.edited = edited
        self.tainted = tainted
        self.score = score
        self.field = field
        self.where = where
        self.agent = agent

    def as_json(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "session_id": self.session_id,
            "object": self.object,
            "project": self.project,
            "asked_at": self.asked_at,
            "agent": self.agent,
            "excerpt": self.excerpt,
            "field": self.field,
            "where": self.where,
            "read": self.read,
            "edited": self.edited,
            "tainted": self.tainted,
            "score": self.score,
        }


class RecallResult:
    """What a recall answers. ``outcome``: "found", "no-terms", "empty" (nothing
    recorded yet), "no-match" or "no-match-in-days"; ``scope``: the project key
    searched (None: everywhere); ``path``: "tantivy" (the index), "scan" (the
    objects, no engine) or "none"."""

    __slots__ = ("days", "hits", "outcome", "path", "query", "scope")

    def __init__(
        self,
        query: Query,
        hits: list[Hit],
        outcome: str,
        scope: str | None,
        days: int | None,
        path: str,
    ) -> None:
        self.query = query
        self.hits = hits
        self.outcome = outcome
        self.scope = scope
        self.days = days
        self.path = path
