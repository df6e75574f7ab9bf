"""The secret rule set and its scanner.

Rules from two sources, in this order of precedence (when two findings start
at the same place, the earlier rule names the kind):

1. histstore's own provider formats (:mod:`histstore.store.secret_rules`);
2. gitleaks' default rules (``rules/gitleaks.json``: converted from gitleaks'
   ``config/gitleaks.toml``, MIT licence, see ``rules/NOTICE``), applied the way
   gitleaks applies them (secret group, entropy limit, global and per-rule
   allowlists), all but ``generic-api-key``;
3. histstore's own assignment rules;
4. gitleaks' ``generic-api-key``.

Every regex is RE2 (google-re2), matched over UTF-8 bytes: RE2 matches in time
linear in its input, and the scanner searches each rule once through the text,
left to right (it resumes after each finding's secret), so a text costs each
rule it runs one pass. Which rules run is decided by one RE2 set of every
rule's keywords (case-insensitive literals): a rule runs only when one of its
keywords is in the text. Rules are compiled on first use.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import blake3
import re2

from histstore.store import secret_rules
from histstore.store.secret_rules import CHECKS, VALUE_GROUPS, Check, entropy, group_index

__all__ = ["GITLEAKS_FILE", "RULESET_VERSION", "Finding", "kinds", "ruleset_id", "scan"]

GITLEAKS_FILE = Path(__file__).with_name("rules") / "gitleaks.json"

#: the version of the whole rule set; the store records it (with
#: :func:`ruleset_id`), because redaction decides the ids of what it stores
RULESET_VERSION = f"{secret_rules.VERSION}+gitleaks-v8.30.0-27"

# How far around a match a gitleaks "line" allowlist looks for the line (its
# regexes are about short lines: an import statement, a Dockerfile mount).
_LINE_WINDOW = 512


class Finding(NamedTuple):
    start: int  # byte offsets of the secret in the scanned text
    end: int
    rank: int  # the rule's place in the precedence order
    kind: str


class _Allow(NamedTuple):
    target: str  # "secret", "match" or "line"
    regex: Any  # one RE2 alternation of the allowlist's regexes, or None
    stopwords: Any  # one case-insensitive RE2 alternation of its stopwords, or None


class _Rule(NamedTuple):
    kind: str
    rx: Any  # a compiled RE2 regex over bytes
    group: int | None  # the secret group; None = first group that took part, or the match
    value_groups: tuple[int, ...]  # histstore rules: the groups a value may be in
    entropy: float | None  # gitleaks: a secret of at most this entropy is dropped
    allow: tuple[_Allow, ...]
    gitleaks: bool
    check: Check | None
    group_numbers: dict[str, int]  # group name -> number


def _options(case_sensitive: bool = True) -> Any:
    o = re2.Options()
    o.log_errors = False  # a failed compile raises re2.error; absl would also print it
    o.case_sensitive = case_sensitive
    return o


def _compile(pattern: str, case_sensitive: bool = True) -> Any:
    return re2.compile(pattern.encode("utf-8"), _options(case_sensitive))


def _alternation(patterns: list[str]) -> Any:
    return _compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def _literals(words: list[str]) -> Any:
    if not words:
        return None
    return _compile("|".join(re.escape(w) for w in words), case_sensitive=False)


class _Set(NamedTuple):
    makers: tuple[Callable[[], _Rule], ...]  # each rule, compiled on first use
    built: list[_Rule | None]
    keywords: Any  # RE2 set of all keywords
    keyword_rules: tuple[tuple[int, ...], ...]  # keyword index -> rule ranks
    global_regex: Any
    global_stopwords: Any
    digest: str
    kinds: tuple[str, ...]
    rank_cache: dict[tuple[int, ...], tuple[int, ...]]  # keywords found -> rules to run

    def rule(self, rank: int) -> _Rule:
        r = self.built[rank]
        if r is None:
            r = self.built[rank] = self.makers[rank]()
        return r


def _histstore_rule(spec: secret_rules.Spec) -> _Rule:
    rx = _compile(spec.regex)
    index = group_index(rx)
    values = tuple(index[g] for g in VALUE_GROUPS if g in index)
    return _Rule(
        kind=spec.kind,
        rx=rx,
        group=values[0] if len(values) == 1 else None,
        value_groups=values if len(values) > 1 else (),
        entropy=None,
        allow=(),
        gitleaks=False,
        check=CHECKS[spec.check] if spec.check else None,
        group_numbers=index,
    )


def _gitleaks_rule(d: dict[str, Any]) -> _Rule:
    allow = tuple(
        _Allow(a["target"], _alternation(a.get("regexes", [])), _literals(a.get("stopwords", [])))
        for a in d.get("allowlists", [])
    )
    rx = _compile(d["regex"])
    return _Rule(
        kind=d["id"],
        rx=rx,
        group=d.get("secret_group"),
        value_groups=(),
        entropy=d.get("entropy"),
        allow=allow,
        gitleaks=True,
        check=None,
        group_numbers=group_index(rx),
    )


@functools.cache
def _load() -> _Set:
    """The rule set: the keyword prefilter now, each rule when it first runs
    (compiling all of them up front would cost every writing command ~0.1 s)."""
    raw = GITLEAKS_FILE.read_bytes()
    data = json.loads(raw)
    gitleaks = data["rules"]
    generic = [d for d in gitleaks if d["id"] == "generic-api-key"]
    specific = [d for d in gitleaks if d["id"] != "generic-api-key"]
    order: list[tuple[str, Callable[[], _Rule], tuple[str, ...]]] = []
    for group in (secret_rules.PROVIDERS, specific, secret_rules.ASSIGNMENTS, generic):
        for item in group:
            if isinstance(item, secret_rules.Spec):
                order.append((item.kind, functools.partial(_histstore_rule, item), item.keywords))
            else:
                kws = tuple(item["keywords"])
                order.append((item["id"], functools.partial(_gitleaks_rule, item), kws))
    words = sorted({k.lower() for _k, _m, kws in order for k in kws})
    kwset = re2.Set.SearchSet(_options(case_sensitive=False))
    for w in words:
        kwset.Add(re.escape(w).encode("utf-8"))
    kwset.Compile()
    where = {w: i for i, w in enumerate(words)}
    by_word: list[list[int]] = [[] for _ in words]
    for rank, (kind, _m, kws) in enumerate(order):
        if not kws:
            raise ValueError(f"secret rule {kind} has no keywords")
        for k in kws:
            by_word[where[k.lower()]].append(rank)
    g = data["global_allowlist"]
    material = json.dumps(
        {**secret_rules.digest_material(), "line_window": _LINE_WINDOW}, sort_keys=True
    ).encode("utf-8")
    digest = blake3.blake3(RULESET_VERSION.encode() + b"\0" + material + b"\0" + raw).hexdigest()
    return _Set(
        makers=tuple(m for _k, m, _kws in order),
        built=[None] * len(order),
        keywords=kwset,
        keyword_rules=tuple(tuple(x) for x in by_word),
        global_regex=_alternation(g["regexes"]),
        global_stopwords=_literals(g["stopwords"]),
        digest=digest,
        kinds=tuple(dict.fromkeys(k for k, _m, _kws in order)),
        rank_cache={},
    )


def ruleset_id() -> str:
    """The rule set's version and the blake3 digest of its rules (64 hex digits):
    ``<RULESET_VERSION>:<digest>``. Any change to a rule changes the digest."""
    return f"{RULESET_VERSION}:{_load().digest}"


def kinds() -> tuple[str, ...]:
    """Every kind a rule reports, in precedence order (gitleaks kinds are rule ids)."""
    return _load().kinds


def rules() -> tuple[Any, ...]:
    """Every rule, compiled, in precedence order (for tests)."""
    rs = _load()
    return tuple(rs.rule(i) for i in range(len(rs.built)))


class _Match:
    """The spans of one RE2 match, group by group (what checks and allowlists read)."""

    __slots__ = ("index", "spans")

    def __init__(self, spans: list[tuple[int, int]], index: dict[str, int]) -> None:
        self.spans = spans
        self.index = index

    def span(self, group: int = 0) -> tuple[int, int]:
        return self.spans[group]

    def start(self, group: int = 0) -> int:
        return self.spans[group][0]

    def end(self, group: int = 0) -> int:
        return self.spans[group][1]


_UNANCHORED = re2._Anchor.UNANCHORED
#: what replaces a secret (histstore.store.redact.marker)
_MARKER = re.compile(rb"\[REDACTED:[A-Za-z0-9_.-]{1,64}\]")


def _found(rx: Any, data: bytes) -> bool:
    """Whether the RE2 regex ``rx`` (or None: no regex) matches in ``data``."""
    return rx is not None and rx._regexp.Match(_UNANCHORED, data, 0, len(data))[0][0] >= 0


def _allowed(rs: _Set, rule: _Rule, text: bytes, ms: int, me: int, s: int, e: int) -> bool:
    """gitleaks' allowlists: the finding is not a secret."""
    secret = text[s:e]
    if _found(rs.global_regex, secret) or _found(rs.global_stopwords, secret):
        return True
    for a in rule.allow:
        if a.regex is not None:
            if a.target == "match":
                target = text[ms:me]
            elif a.target == "line":
                # the line around the match, looked for no further than a window
                # on each side (a fixed cost per finding, however long the line)
                lo = max(0, ms - _LINE_WINDOW)
                lo = text.rfind(b"\n", lo, ms) + 1 or lo
                hi = text.find(b"\n", me, me + _LINE_WINDOW)
                target = text[lo : hi if hi >= 0 else min(len(text), me + _LINE_WINDOW)]
            else:
                target = secret
            if _found(a.regex, target):
                return True
        if _found(a.stopwords, secret):
            return True
    return False


def _run(rs: _Set, rank: int, text: bytes, out: list[Finding]) -> None:
    """Every finding of one rule in ``text``: one search after another, each
    starting where the last one's secret ended, so the text is read once, left
    to right (plus, per finding, the few characters after its secret that its
    match took)."""
    rule = rs.rule(rank)
    # the compiled RE2 object itself: one call per search, no Python match object
    match = rule.rx._regexp.Match
    n = len(text)
    pos = 0
    while pos <= n:
        spans = match(_UNANCHORED, text, pos, n)
        ms, me = spans[0]
        if ms < 0:
            return
        if rule.group is not None:
            s, e = spans[rule.group]
        elif rule.value_groups:
            s = e = -1
            for gi in rule.value_groups:
                s, e = spans[gi]
                if s >= 0:
                    break
        elif rule.gitleaks and len(spans) > 1:
            s, e = ms, me
            for gs, ge in spans[1:]:
                if ge > gs:
                    s, e = gs, ge
                    break
        else:
            s, e = ms, me
        # resume after the secret (its right boundary may start the next match)
        at = pos
        pos = e if e > pos else max(me, pos + 1)
        if s < 0 or e <= s:
            continue
        kind = rule.kind
        if rule.gitleaks:
            rejected = (
                rule.entropy is not None and entropy(text[s:e]) <= rule.entropy
            ) or _allowed(rs, rule, text, ms, me, s, e)
        elif rule.check is not None:
            verdict = rule.check(text, _Match(spans, rule.group_numbers), s, e)
            rejected = verdict is None
            kind = verdict or kind
        else:
            rejected = False
        if rejected:
            # what was taken for its secret may start a real one (``key:
            # password=…``: the name ``key`` with the value ``password=…``
            # is no secret, ``password=…`` is): look again from there, the
            # character before it included (a rule's left boundary)
            pos = s - 1 if s - 1 > at else at + 1
            continue
        out.append(Finding(s, e, rank, kind))


def candidates(text: bytes) -> tuple[int, ...]:
    """The ranks of the rules whose keywords occur in ``text``."""
    rs = _load()
    hits = rs.keywords.Match(text)
    if not hits:
        return ()
    key = tuple(hits)
    found = rs.rank_cache.get(key)
    if found is None:
        if len(rs.rank_cache) >= 4096:
            rs.rank_cache.clear()
        ranks: set[int] = set()
        for i in hits:
            ranks.update(rs.keyword_rules[i])
        found = rs.rank_cache[key] = tuple(sorted(ranks))
    return found


def scan(text: bytes, ranks: tuple[int, ...] | None = None) -> list[Finding]:
    """The secrets in ``text`` (UTF-8 bytes), sorted, overlapping findings merged
    (the one that starts first, then the higher-ranked, names the kind)."""
    rs = _load()
    if ranks is None:
        ranks = candidates(text)
    found: list[Finding] = []
    for rank in ranks:
        _run(rs, rank, text, found)
    if found and b"[REDACTED:" in text:
        # a marker already there is never a secret (``http://[REDACTED:x]@h``
        # is no user and password): redacting again changes nothing
        marks = [m.span() for m in _MARKER.finditer(text)]
        found = [f for f in found if not any(f.start < e and s < f.end for s, e in marks)]
    if len(found) < 2:
        return found
    found.sort()
    merged = [found[0]]
    for f in found[1:]:
        last = merged[-1]
        if f.start < last.end:
            if f.end > last.end:
                merged[-1] = last._replace(end=f.end)
        else:
            merged.append(f)
    return merged
