"""Secret redaction: applied to everything before it is hashed or indexed.

A :class:`Redactor` replaces each secret it recognizes with ``[REDACTED:<kind>]``.
It runs on two kinds of text and is safe for both:

* raw JSON lines exactly as an agent wrote them. A built-in pattern never matches
  across a ``"`` and never starts or ends inside a backslash escape (``\\n``,
  ``\\"``, ``\\uXXXX``), so a redacted JSON line is still valid JSON with the
  same structure. A match of a user pattern in a JSON text is cut to the parts of
  it inside JSON strings (whole escapes), so user patterns cannot break it either;
* plain decoded strings.

Kinds (the ``<kind>`` in the marker):

====================  =====================================================
``openai-key``        ``sk-...`` / ``sk-proj-...`` (20+ key chars, at least
                      one uppercase letter or digit so ``sk-learn-...`` prose
                      is left alone)
``anthropic-key``     ``sk-ant-...``
``github-token``      ``ghp_ gho_ ghu_ ghs_ ghr_`` + 36, ``github_pat_...``
``gitlab-token``      ``glpat-...``
``huggingface-token`` ``hf_`` + 30+ letters/digits
``aws-access-key-id`` ``AKIA`` / ``ASIA`` + 16 uppercase letters/digits
``aws-secret-key``    the value after an ``aws_secret_access_key`` /
                      ``SecretAccessKey`` label (the label is kept)
``slack-token``       ``xoxb- xoxp- xoxa- xoxr- xoxs-``
``slack-webhook``     ``https://hooks.slack.com/services/...``
``google-api-key``    ``AIza`` + 35
``stripe-key``        ``sk_live_ rk_live_``
``private-key``       a ``-----BEGIN ... PRIVATE KEY-----`` block through its
                      ``-----END ... PRIVATE KEY-----`` line (real newlines or
                      JSON ``\\n`` escapes); a block cut short is redacted
                      from its header to the end of its base64 body
``url-password``      the password of ``scheme://user:password@host``
                      (scheme, user and host are kept)
``jwt``               ``eyJ...``.``eyJ...``.``signature``
``bearer-token``      the token after ``Bearer`` (20+ chars)
``basic-auth``        the credentials after ``Authorization: Basic``
``custom``            a match of an extra pattern from config.toml
                      ``[redact] patterns`` (only its ``secret`` group when
                      the pattern has one)
====================  =====================================================
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from histstore.errors import BadInput

__all__ = ["DEFAULT", "KINDS", "Redactor", "marker"]

# Each pattern is a list of literal prefixes and the rest of the pattern. Every
# branch of the combined regex starts with a plain literal, so the regex engine
# skips positions that cannot start a match (a lookbehind or a case-insensitive
# group first would make it try every branch at every position: ~1 MB/s).
#
# A "bounded" prefix may not follow a letter, digit, "_" or a backslash, except a
# whole JSON escape (\n \r \t \b \f, \uXXXX, or an escaped backslash): a match never
# begins inside an escape, and "\nsk-..." (a key after an escaped newline) matches.
# A group named "v" in the rest marks the only part to replace (the label before
# it is kept); otherwise the whole match is replaced. Token character classes
# exclude '"' and '\\', so a match never crosses a JSON string boundary and never
# ends inside an escape. Order matters only between branches that can match at the
# same position (the first one wins).
_E = r"(?![A-Za-z0-9_-])"  # where a fixed-length token must end


class _P(NamedTuple):
    kind: str
    prefixes: tuple[str, ...]
    rest: str
    bounded: bool = True


_PATTERNS: tuple[_P, ...] = (
    _P(
        "private-key",
        ("-----BEGIN",),
        # the body runs, without backtracking, to the next "-----": an END line
        # or not (a BEGIN with no END is the pattern below); each header is
        # then looked at once, so crafted runs of headers cost linear time
        r"[A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[^\"-]|-(?!----)){0,16384}+"
        r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----",
        bounded=False,
    ),
    # a block cut short (no END line): the header and the base64 body after it
    _P(
        "private-key",
        ("-----BEGIN",),
        r"[A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\[nrt])*+",
        bounded=False,
    ),
    _P("anthropic-key", ("sk-ant-",), r"[A-Za-z0-9_-]{20,}"),
    _P("openai-key", ("sk-",), r"(?=[A-Za-z0-9_-]{0,255}[A-Z0-9])[A-Za-z0-9_-]{20,}"),
    _P("stripe-key", ("sk_live_", "rk_live_"), r"[A-Za-z0-9]{16,}"),
    _P("github-token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"[A-Za-z0-9]{36,}"),
    _P("github-token", ("github_pat_",), r"[A-Za-z0-9_]{22,}"),
    _P("gitlab-token", ("glpat-",), r"[A-Za-z0-9_-]{20,}"),
    _P("huggingface-token", ("hf_",), r"[A-Za-z0-9]{30,}" + _E),
    _P("aws-access-key-id", ("AKIA", "ASIA"), r"[A-Z0-9]{16}" + _E),
    _P(
        # the label (aws_secret_access_key, SecretAccessKey, ...) is kept
        "aws-secret-key",
        ("ecret", "ECRET"),
        r"(?i:[_-]?access[_-]?key)(?:\\*[\"'])?[ \t]*(?:=>|[:=])[ \t]*(?:\\*[\"'])?"
        r"(?P<v>[A-Za-z0-9/+=]{20,})",
        bounded=False,
    ),
    _P("slack-token", ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"), r"[A-Za-z0-9-]{10,}"),
    _P(
        "slack-webhook",
        ("https://hooks.slack.com/", r"https:\/\/hooks.slack.com\/"),
        r"(?:services|workflows|triggers)(?:\\?/[A-Za-z0-9_-]+)+",
    ),
    _P("google-api-key", ("AIza",), r"[A-Za-z0-9_-]{35}" + _E),
    _P("jwt", ("eyJ",), r"[A-Za-z0-9_-]{5,1024}\.eyJ[A-Za-z0-9_-]{5,8192}\.[A-Za-z0-9_-]*"),
    _P(
        # ':' of "scheme://" (after a letter or digit), the user (kept), ':', the
        # password, '@', the host. The password runs to the last '@' before
        # whitespace, '/', '"' or '\\'.
        "url-password",
        (":",),
        r"(?<=[A-Za-z0-9]:)(?:\\?/){2}[^\s:/?#@\"\\]{0,256}:(?P<v>[^\s/\"\\]{1,256})"
        r"@(?=[A-Za-z0-9\[])",
        bounded=False,
    ),
    _P("bearer-token", ("Bearer", "bearer"), r"[ \t]+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"),
    _P(
        "basic-auth",
        ("uthorization",),
        r"(?:\\*[\"'])?[ \t]*[:=][ \t]*(?:\\*[\"'])?[ \t]*(?i:basic)[ \t]+"
        r"(?P<v>[A-Za-z0-9+/]{8,}={0,2})",
        bounded=False,
    ),
)

#: every kind a built-in pattern reports, plus "custom"
KINDS: tuple[str, ...] = (*dict.fromkeys(p.kind for p in _PATTERNS), "custom")

# Cheap pre-check. A pattern can match only if one of its prefixes occurs in the
# text; these searches (literal-prefixed regexes, ~1-2 GB/s each) find which
# patterns may, and only the alternation of those runs (the alternation of all of
# them runs at ~45 MB/s). Every prefix of a pattern must be found by a pre-check
# of that pattern (tests/test_redact.py checks it).
_PRECHECKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"sk-", ("anthropic-key", "openai-key")),
    (r"k_live_", ("stripe-key",)),
    (r"gh[pousr]_", ("github-token",)),
    (r"github_pat_", ("github-token",)),
    (r"A(?:KIA|SIA|Iza)", ("aws-access-key-id", "google-api-key")),
    (r"eyJ", ("jwt",)),
    (r"ecret", ("aws-secret-key",)),
    (r"ECRET", ("aws-secret-key",)),
    (r"earer", ("bearer-token",)),
    (r"PRIVATE KEY", ("private-key",)),
    (r"xox", ("slack-token",)),
    (r"hooks\.slack\.com", ("slack-webhook",)),
    (r"uthorization", ("basic-auth",)),
    (r"glpat-", ("gitlab-token",)),
    (r"hf_", ("huggingface-token",)),
)
_TRIGGERS: tuple[tuple[Callable[[str], object], frozenset[int]], ...] = tuple(
    (
        re.compile(needle).search,
        frozenset(i for i, p in enumerate(_PATTERNS) if p.kind in kinds),
    )
    for needle, kinds in _PRECHECKS
)
_URL_PASSWORD = next(i for i, p in enumerate(_PATTERNS) if p.kind == "url-password")


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


def _bound(prefix: str) -> str:
    """Lookbehinds, placed after ``prefix``, for where a bounded token may start.

    A backslash right before the token is refused only where it could make a
    JSON escape with the token's first letter (``\\rk_live_`` is CR + text); a
    token starting with any other letter may follow one (a Windows path
    ``C:\\ghp_…`` in plain text, where no escape can be)."""
    lit = re.escape(prefix)
    after_backslash = "" if prefix[:1] in "bfnrtu" else rf"|(?<=\\{lit})"
    return (
        rf"(?:(?<![\\A-Za-z0-9_]{lit})|(?<=\\[nrtbf]{lit})"
        rf"|(?<=\\u[0-9A-Fa-f]{{4}}{lit})|(?<=[^\\]\\\\{lit}){after_backslash})"
    )


def _branches(i: int) -> list[str]:
    """The regex branches of pattern ``i``, one per prefix, each naming itself.

    An empty group right after the prefix names the branch; a "v" group (renamed)
    closes after it, so ``Match.lastgroup`` is the "v" group when there is one.
    """
    p = _PATTERNS[i]
    out = []
    for j, prefix in enumerate(p.prefixes):
        rest = p.rest.replace("(?P<v>", f"(?P<v{i}_{j}>")
        bound = _bound(prefix) if p.bounded else ""
        out.append(f"{re.escape(prefix)}{bound}(?P<k{i}_{j}>){rest}")
    return out


def _groups() -> dict[str, tuple[str, str | None]]:
    """Branch group name -> (marker, the group to replace, or None for the whole match)."""
    groups: dict[str, tuple[str, str | None]] = {}
    for i, p in enumerate(_PATTERNS):
        for j in range(len(p.prefixes)):
            groups[f"k{i}_{j}"] = (marker(p.kind), None)
            if "(?P<v>" in p.rest:
                groups[f"v{i}_{j}"] = (marker(p.kind), f"v{i}_{j}")
    return groups


_GROUPS = _groups()


@functools.lru_cache(maxsize=512)
def _regex(selected: tuple[int, ...]) -> re.Pattern[str]:
    """The alternation of the patterns ``selected`` (indices into _PATTERNS, in order)."""
    return re.compile("|".join(b for i in selected for b in _branches(i)))


def _candidates(text: str) -> tuple[int, ...]:
    """Indices of the patterns that may match ``text``, in order."""
    hits: set[int] = set()
    for search, indices in _TRIGGERS:
        if search(text):
            hits |= indices
    # url-password: "://" (or JSON-escaped ":\/\/") and an '@'
    if "@" in text and (":/" in text or ":\\/" in text):
        hits.add(_URL_PASSWORD)
    return tuple(sorted(hits))


def _replace_builtin(m: re.Match[str]) -> str:
    name = m.lastgroup
    assert name is not None
    mark, value_group = _GROUPS[name]
    if value_group is None:
        return mark
    start, end = m.span(value_group)
    whole = m.group(0)
    base = m.start()
    return whole[: start - base] + mark + whole[end - base :]


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _escape_around(text: str, pos: int, lo: int) -> tuple[int, int] | None:
    """The backslash escape of a JSON string (content from ``lo``) that ``pos`` falls
    strictly inside (after its first character), as (start, end); None if none."""
    for k in range(pos - 1, max(lo, pos - 6) - 1, -1):
        if text[k] != "\\":
            continue
        run = 1
        while k - run >= lo and text[k - run] == "\\":
            run += 1
        if run % 2 == 0:
            return None  # text[k] ends an escaped backslash, which ends before pos
        end = k + (6 if text[k + 1] == "u" else 2)
        return (k, end) if end > pos else None
    return None


def _clip_to_strings(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``spans`` inside the strings of the JSON ``text``, widened to whole
    escapes, so replacing them keeps the text valid JSON of the same structure."""
    strings = [(m.start() + 1, m.end() - 1) for m in _JSON_STRING.finditer(text)]
    ends = [b for _a, b in strings]
    out: list[tuple[int, int]] = []
    for s, e in spans:
        for a, b in strings[bisect.bisect_right(ends, s) :]:
            if a >= e:
                break
            ps, pe = max(s, a), min(e, b)
            if ps >= pe:
                continue
            inside = _escape_around(text, ps, a)
            if inside is not None:
                ps = inside[0]
            inside = _escape_around(text, pe, a)
            if inside is not None:
                pe = inside[1]
            out.append((ps, pe))
    return out


def _replace_spans(text: str, spans: list[tuple[int, int]], mark: str) -> str:
    """``text`` with each span replaced by ``mark`` (overlapping spans merged)."""
    parts: list[str] = []
    pos = 0
    for s, e in sorted(spans):
        if e <= pos:
            continue
        if s < pos:
            s = pos
        else:
            parts.append(text[pos:s])
            parts.append(mark)
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


class Redactor:
    """Replace secrets in text with ``[REDACTED:<kind>]``.

    ``extra_patterns`` are regular expressions (Python ``re`` syntax) from
    config.toml ``[redact] patterns``; each match is replaced by
    ``[REDACTED:custom]``, or only its group named ``secret`` when the pattern has
    one (``token=(?P<secret>[0-9a-f]+)`` keeps ``token=``). An extra pattern that does not
    compile, or that matches the empty string, raises :class:`BadInput`.
    """

    def __init__(self, extra_patterns: Sequence[str] = ()) -> None:
        if isinstance(extra_patterns, str):
            extra_patterns = (extra_patterns,)
        extras: list[re.Pattern[str]] = []
        for pattern in extra_patterns:
            if not isinstance(pattern, str):
                raise BadInput(f"[redact] pattern {pattern!r} is not a string")
            try:
                rx = re.compile(pattern)
            except re.error as e:
                raise BadInput(
                    f"[redact] pattern {pattern!r} is not a valid regular expression: {e}",
                    hint="patterns use Python `re` syntax; in TOML write them as '...' literals",
                ) from e
            if rx.search("") is not None:
                raise BadInput(
                    f"[redact] pattern {pattern!r} matches the empty string",
                    hint="a pattern must match at least one character",
                )
            extras.append(rx)
        self.extra_patterns: tuple[str, ...] = tuple(extra_patterns)
        self._extras = tuple(extras)

    def __repr__(self) -> str:
        return f"Redactor(extra_patterns={list(self.extra_patterns)!r})"

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced (``text`` itself when it has none)."""
        selected = _candidates(text)
        out = _regex(selected).sub(_replace_builtin, text) if selected else text
        if self._extras:
            out = self._redact_extras(out)
        return out

    def _redact_extras(self, text: str) -> str:
        spans: list[tuple[int, int]] = []
        for rx in self._extras:
            group: int | str = "secret" if "secret" in rx.groupindex else 0
            for m in rx.finditer(text):
                s, e = m.span(group)
                if e > s:
                    spans.append((s, e))
        if not spans:
            return text
        if text.startswith(("{", "[")) and _is_json(text):
            spans = _clip_to_strings(text, spans)
        return _replace_spans(text, spans, marker("custom"))

    def redact_obj(self, obj: Any) -> Any:
        """A copy of ``obj`` with every string in it (values and keys) redacted."""
        return redact_strings(self, obj)


#: the redactor with only the built-in patterns
DEFAULT = Redactor()


def redact_strings(redact: Callable[[str], str], obj: Any) -> Any:
    """A copy of JSON data with every string (values and keys) passed through ``redact``."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {
            redact(k) if isinstance(k, str) else k: redact_strings(redact, v)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [redact_strings(redact, v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_strings(redact, v) for v in obj)
    return obj


def redact_json_line(redact: Callable[[str], str], text: str) -> tuple[str, Any]:
    """Redact one JSON line as written and parse it: (redacted text, parsed value).

    The text is redacted as it is, so the line keeps its bytes wherever nothing
    was secret. A secret spelled with ``\\uXXXX`` escapes is invisible to the
    patterns in that form; a line holding such escapes also has its decoded
    strings redacted, and when that finds something the line is re-encoded from
    the redacted value. Raises ``json.JSONDecodeError`` for a line that is not JSON.
    """
    text = redact(text)
    obj = json.loads(text, parse_constant=_refuse_constant)
    if "\\u" in text:
        clean = redact_strings(redact, obj)
        try:
            json.dumps(clean, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            # a lone surrogate (an output cut mid-character): it has no UTF-8
            # form, so it cannot be stored; it becomes U+FFFD
            clean = redact_strings(_replace_surrogates, clean)
        if clean != obj:
            return json.dumps(clean, ensure_ascii=False, separators=(",", ":")), clean
    return text, obj


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value the store keeps")


_SURROGATE = re.compile("[\ud800-\udfff]")


def _replace_surrogates(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)
