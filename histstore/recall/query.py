"""Queries: what a recall looks for, where it looks, and what a hit shows.

A query is reduced to its informative terms (function words dropped,
histstore.recall.stopwords), each a phrase of tokens as the index's analyzer
makes them (runs of letters and digits, case and accents folded) at the
places the index puts them (a token of 40 bytes or more is not indexed but
keeps its place), so the engine and the scan agree on what matches. The
scope (a project by path or by name, days, an agent, a session) is a
:class:`Scope`. The tokens of a text with where they are written
(:func:`token_spans`) serve the excerpts (histstore.recall.hits) and the
marks on a recall's lines. Text that is not UTF-8 (Python's lone
surrogates: an argument of odd bytes) is read as :func:`as_text` spells it.
"""

from __future__ import annotations

import functools
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
from histstore.history.turn import as_text, parse_time
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


# (the two patterns below are compiled when first asked: these classes of
# characters beyond Latin-1 take ~0.6 ms to compile, at every hs recall's
# start-up otherwise, and only a text that is not ASCII is folded)


@functools.cache
def _marks() -> re.Pattern[str]:
    """The combining marks decomposition leaves after a letter (accents, diacritics)."""
    return re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


@functools.cache
def _folded() -> re.Pattern[str]:
    """The letters of ``_FOLD``, found at C speed (translating a long text by
    a dict costs a Python lookup per character)."""
    return re.compile("[" + "".join(chr(c) for c in _FOLD) + "]")


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
    if _folded().search(text):
        text = _folded().sub(_fold_letter, text)
    return unicodedata.normalize("NFC", _marks().sub("", unicodedata.normalize("NFKD", text)))


#: a token this long (characters) may be of 40 UTF-8 bytes or more
_MAYBE_LONG = TOKEN_MAX // 4


#: a lone surrogate: a byte that was not UTF-8 (U+DC80..U+DCFF, as Python reads
#: an argument or a file name: surrogateescape), or half of a pair (JSON's \ud800)
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
    try:
        return _ANALYZE[0](text)
    except UnicodeEncodeError:  # a lone surrogate: the analyzer takes UTF-8 only
        return _ANALYZE[0](as_text(text))


#: the tokenizer of ``hs_words`` without ``remove_long``, for the places of
#: the tokens it drops: (the analyzer it stands beside, its positions)
_PLACES: list[tuple[Callable[[str], list[str]], Callable[[str], list[str | None]]]] = []
#: ASCII's tokens, in lower-cased text: its runs of letters and digits
_ASCII_RUN = re.compile("[a-z0-9]+")
#: where a token of 40 bytes or more can be in other text: a run of 10 or more
#: characters that are neither white space nor ASCII punctuation (a token is
#: letters and digits, at most 4 bytes each)
_RUN_LONG = re.compile(f"[^\\s!-/:-@\\[-`{{-~]{{{_MAYBE_LONG},}}")


def _may_drop(text: str) -> bool:
    """Whether the analyzer may drop a token of ``text``, not ASCII (one of 40
    bytes or more); False is sure."""
    return any(
        len(m.group().encode("utf-8", "surrogatepass")) >= TOKEN_MAX
        for m in _RUN_LONG.finditer(text)
    )


def positioned(text: str) -> list[str | None]:
    """The tokens of ``text`` at the positions the index gives them: a token
    of 40 bytes or more is not indexed but keeps its place, None here (up to
    the last token kept; the places after it are no position of the text's).
    Where no token is that long, :func:`tokens`."""
    out = _every_place(text)
    while out and out[-1] is None:
        out.pop()
    return out


def _every_place(text: str) -> list[str | None]:
    """:func:`positioned`, the places of the long tokens after the last kept
    one included."""
    if text.isascii():
        # ASCII's tokens are its runs of letters and digits, lower-cased: one
        # regular expression, as fast as the analyzer (tool outputs are full
        # of hashes, each a dropped token)
        return [t if len(t) < TOKEN_MAX else None for t in _ASCII_RUN.findall(text.lower())]
    if not _may_drop(text):
        return list(tokens(text))
    tokens("")  # which analyzer there is (the engine's, or Python's)
    analyze = _ANALYZE[0]
    if not _PLACES or _PLACES[0][0] is not analyze:
        _PLACES[:] = [(analyze, approx_positioned if analyze is approx_tokens else _placed())]
    return _PLACES[0][1](text)


def _placed() -> Callable[[str], list[str | None]]:
    """The index's tokenizer and filters but ``remove_long``, each token kept
    or dropped (None) as ``remove_long`` measures it: as written, in bytes."""
    import tantivy

    whole = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )

    def run(text: str) -> list[str | None]:
        text = as_text(text)
        out: list[str | None] = []
        for t in whole.pre_tokenize(text).tokens:
            a, b = t.char_offset_from, t.char_offset_to
            out.extend([None] * (t.position - len(out)))
            dropped = b - a >= _MAYBE_LONG and len(text[a:b].encode()) >= TOKEN_MAX
            out.append(None if dropped else t.text)
        return out

    return run


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
    drop = _long_dropped(text, folded, toks)
    return [t for i, t in enumerate(toks) if i not in drop] if drop else toks


def approx_positioned(text: str) -> list[str | None]:
    """:func:`positioned` in Python (without the tantivy package): the tokens
    of :func:`approx_tokens`, those of 40 bytes or more None in their place."""
    folded = fold(text)
    toks: list[str] = _TOKEN.findall(folded)
    if text.isascii():
        drop = {i for i, t in enumerate(toks) if len(t) >= TOKEN_MAX}
    else:
        drop = _long_dropped(text, folded, toks)
    return [None if i in drop else t for i, t in enumerate(toks)]


def _long_dropped(text: str, folded: str, toks: list[str]) -> set[int]:
    """Which of ``toks`` (of ``folded``, some long) are of 40 bytes or more as
    ``text`` wrote them."""
    longs = list(itertools.compress(range(len(toks)), map(_MAYBE_LONG.__le__, map(len, toks))))
    written: list[str] = []
    if len(folded) == len(text) and not _marks().search(text):
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
    return {i for i, w in zip(longs, written, strict=True) if len(w.encode()) >= TOKEN_MAX}


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


#: a phrase: its tokens at their places, None where the query had a token of
#: 40 bytes or more (not indexed: any one token, or none, fills that place)
Phrase = tuple[str | None, ...]


class Query:
    """A query reduced to its informative terms, each a phrase of tokens.
    ``phrases`` are what is searched: each term's tokens at their places (None
    for a token too long to index, which keeps its place); ``terms`` the same
    without those places, as a term is shown and marked. ``long_words``: some
    word of the query held a token too long to index."""

    __slots__ = ("long_words", "phrases", "terms", "text")

    def __init__(self, text: str, phrases: tuple[Phrase, ...], long_words: bool = False) -> None:
        self.text = text
        self.phrases = phrases
        terms = (tuple(t for t in p if t is not None) for p in phrases)
        self.terms: tuple[tuple[str, ...], ...] = tuple(dict.fromkeys(terms))
        self.long_words = long_words

    @classmethod
    def parse(cls, text: str) -> Query:
        text = as_text(text)
        seen: dict[Phrase, None] = {}
        long_words = False
        for word in text.split():
            bare = word.lower().replace("\u2019", "'").strip(_PUNCT)
            if bare in FUNCTION_WORDS:  # before tokens: "don't" is one function word
                continue
            placed = _every_place(word)
            toks = tuple(t for t in placed if t is not None)
            if len(toks) < len(placed):
                long_words = True
            if not toks or (len(toks) == 1 and toks[0] in FUNCTION_WORDS):
                continue
            if all(t in FUNCTION_WORDS for t in toks) and len(toks) > 1:
                continue
            # only the places between its tokens count
            first = next(i for i, t in enumerate(placed) if t is not None)
            last = max(i for i, t in enumerate(placed) if t is not None)
            seen.setdefault(tuple(placed[first : last + 1]), None)
        return cls(text, tuple(seen), long_words)


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
        exists here is matched as given, made absolute, and as its real path
        (symlinks resolved), each also mapped to its project key, as ``hs log
        --project`` finds it either way; anything else is a path as given; a
        name without ``/`` also matches every project whose last path
        component it is. A trailing slash is ignored. Values that are not
        UTF-8 are read as :func:`as_text` spells them."""
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
        agent = None if agent is None else as_text(agent)
        session = None if session is None else as_text(session)
        if project is None:
            return cls(days=days, agent=agent, session=session)
        text = project.strip()
        if not text:
            raise BadInput("--project: give a project directory or name")
        bare = text.rstrip("/\\") or text[:1]
        paths = [bare]
        if os.path.isdir(bare):
            # the real path (its key names the scope, as it did) and the path
            # as given, made absolute (a symlink kept, as it may have been
            # recorded), each with its project key
            real, given = str(Path(bare).resolve()), os.path.abspath(bare)
            paths = [project_key(real), real, project_key(given), given]
        paths = [as_text(p) for p in paths]
        key = paths[0]
        name = as_text(bare) if "/" not in bare and "\\" not in bare else None
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
    found = [m for m in _runs(text) if not _long(m)]
    toks = tokens(text)
    if len(found) == len(toks):  # the analyzer's tokens are those runs, in order
        return [(m.start(), m.end(), t) for m, t in zip(found, toks, strict=True)]
    return [(m.start(), m.end(), " ".join(t)) for m in found if (t := tokens(m.group()))]


def _runs(text: str) -> list[re.Match[str]]:
    """The runs of ``text`` the index's tokenizer makes tokens of (those of
    40 bytes or more included)."""
    known = _TOKEN_CHAR
    letters = []
    for c in set(text):
        if not c.isascii():
            inside = known.get(c)
            if inside is None:
                inside = known[c] = bool(tokens(c))
            if inside:
                letters.append(re.escape(c))
    return list(re.finditer("[A-Za-z0-9" + "".join(sorted(letters)) + "]+", text))


def _long(m: re.Match[str]) -> bool:
    return m.end() - m.start() >= _MAYBE_LONG and len(m.group().encode()) >= TOKEN_MAX


def placed_spans(text: str) -> list[tuple[int, int, str | None]]:
    """:func:`token_spans` with the tokens of 40 bytes or more in their places
    (None): the places the index gives them (when the runs are not the
    analyzer's tokens, the tokens kept without them)."""
    runs = _runs(text)
    toks = tokens(text)
    kept = [m for m in runs if not _long(m)]
    if len(kept) != len(toks):
        return list(token_spans(text))
    it = iter(toks)
    return [(m.start(), m.end(), None if _long(m) else next(it)) for m in runs]


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
