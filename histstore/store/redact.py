"""Secret redaction: applied to everything before it is hashed or indexed.

A :class:`Redactor` replaces each secret it recognizes with ``[REDACTED:<kind>]``.
The rules (:mod:`histstore.store.ruleset`: gitleaks' default rules, kept as data
in ``rules/gitleaks.json``, and histstore's own, :mod:`histstore.store.secret_rules`)
are RE2 regular expressions, matched in linear time over UTF-8 bytes. The
redactor runs on two kinds of text and is safe for both:

* JSON text (a line of an agent's session file, a turn, a JSON object): it is
  parsed, and the rules run over its strings *decoded*, so escapes such as
  ``\\n``, ``\\"`` or ``\\u0041`` hide nothing: over the text itself with its
  one-character escapes decoded (in C) when it has no others, else over its
  keys and string values laid out as ``"key": "value"`` lines, where a string
  that is itself a JSON document with escapes of its own (a tool call's
  arguments) is redacted the same way, as a document of its own. Only the
  strings that hold a secret are written again (as JSON strings, UTF-8);
  every other byte of the text is kept, so a redacted JSON text is still
  valid JSON with the same structure;
* any other text, as it is.

Kinds (the ``<kind>`` in the marker) are listed in :data:`KINDS`: histstore's
own (``openai-key``, ``github-token``, ``private-key``, ``url-password``,
``password``, ``secret``, ...), then each gitleaks rule's id
(``npm-access-token``, ``sendgrid-api-token``, ...), then ``custom``: a match
of an extra pattern from config.toml ``[redact] patterns`` (only its
``secret`` group when the pattern has one). Extra patterns are Python ``re``
expressions, run over the text as written; a match in JSON text is cut to the
parts of it inside JSON strings (whole escapes), so they cannot break it either.
"""

from __future__ import annotations

import bisect
import codecs
import json
import re
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

from histstore.errors import BadInput
from histstore.store import ruleset
from histstore.store.ruleset import RULESET_VERSION, Finding, ruleset_id

__all__ = [
    "DEFAULT",
    "KINDS",
    "RULESET_VERSION",
    "Redactor",
    "marker",
    "redact_json_line",
    "redact_strings",
    "ruleset_id",
]

#: every kind a rule reports, plus "custom"
KINDS: tuple[str, ...] = (*ruleset.kinds(), "custom")

# A string of a JSON text that is itself JSON text is redacted as a document of
# its own, to this depth (each level doubles the escaping, so real data nests
# two or three deep; past that its strings are still scanned, escaped).
_MAX_DEPTH = 4
_JSON_START = re.compile(r"[ \t\r\n]*[\[{\"]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


def _encode(text: str) -> bytes:
    """``text`` as UTF-8 for the rules: a lone surrogate (an output cut
    mid-character) is scanned as U+FFFD, which is as long in UTF-8, so byte
    offsets stay those of ``text.encode("utf-8", "surrogatepass")``."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def _char_offsets(data: bytes, text: str, offsets: list[int]) -> dict[int, int]:
    """Byte offsets in ``data`` (``text`` encoded) -> character offsets in ``text``."""
    if len(data) == len(text):
        return {o: o for o in offsets}
    out: dict[int, int] = {}
    prev = chars = 0
    for o in sorted(set(offsets)):
        chars += len(data[prev:o].decode("utf-8"))
        out[o] = chars
        prev = o
    return out


def _replace(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each (start, end, kind) span replaced by its marker (sorted,
    not overlapping)."""
    parts: list[str] = []
    pos = 0
    for s, e, kind in spans:
        parts.append(text[pos:s])
        parts.append(marker(kind))
        pos = e
    parts.append(text[pos:])
    return "".join(parts)


def _redact_plain(text: str) -> str:
    data = _encode(text)
    found = ruleset.scan(data)
    if not found:
        return text
    where = _char_offsets(data, text, [o for f in found for o in (f.start, f.end)])
    return _replace(text, [(where[f.start], where[f.end], f.kind) for f in found])


def _strings(obj: Any) -> tuple[list[str], list[bool]]:
    """Every string of a JSON value in document order (keys and values), and
    for each whether it is a key whose value is a string."""
    strings: list[str] = []
    pairs: list[bool] = []
    add, pair = strings.append, pairs.append
    # iterative: a document nested as deep as the JSON parser allows must not
    # overflow the stack here
    stack: list[tuple[bool, Any]] = [(False, iter((obj,)))]
    while stack:
        is_dict, items = stack[-1]
        for item in items:
            if is_dict:
                k, v = item
                add(k)
                if type(v) is str:
                    pair(True)
                    add(v)
                    pair(False)
                    continue
                pair(False)
            else:
                v = item
                if type(v) is str:
                    add(v)
                    pair(False)
                    continue
            if type(v) is dict:
                stack.append((True, iter(v.items())))
                break
            if type(v) is list:
                stack.append((False, iter(v)))
                break
        else:
            stack.pop()
    return strings, pairs


class _View:
    """The decoded strings of a JSON value, laid out as one text for the rules:
    ``"key": "value"`` for a key with a string value, ``"string"`` otherwise, one
    a line. A string that is a JSON document of its own is redacted as one and
    left out of the view (``replaced``)."""

    def __init__(self, obj: Any, depth: int) -> None:
        self.strings, pairs = _strings(obj)
        self.replaced: dict[int, str] = {}  # string index -> its redacted form
        shown = self.strings
        if depth < _MAX_DEPTH:
            for i, s in enumerate(self.strings):
                if s[:1] in "{[" and '"' in s:
                    inner = _redact_json(s, depth + 1)
                    if inner is not None:
                        if shown is self.strings:
                            shown = list(shown)
                        shown[i] = ""
                        if inner[0] != s:
                            self.replaced[i] = inner[0]
        pieces = [f'"{s}": ' if p else f'"{s}"\n' for s, p in zip(shown, pairs, strict=True)]
        self.text = "".join(pieces)
        # the view offset of each string's first character
        self.starts = [
            end - len(piece) + 1
            for end, piece in zip(accumulate(map(len, pieces)), pieces, strict=True)
        ]

    def spans(self, found: list[Finding], data: bytes) -> dict[int, list[tuple[int, int, str]]]:
        """Findings in the view (byte offsets) -> string index -> its spans,
        each cut to the string (a finding across strings is cut into each)."""
        where = _char_offsets(data, self.text, [o for f in found for o in (f.start, f.end)])
        out: dict[int, list[tuple[int, int, str]]] = {}
        starts = self.starts
        for f in found:
            cs, ce = where[f.start], where[f.end]
            i = max(0, bisect.bisect_right(starts, cs) - 1)
            while i < len(starts) and starts[i] < ce:
                st = starts[i]
                a, b = max(cs, st) - st, min(ce, st + len(self.strings[i])) - st
                if i not in self.replaced and a < b:
                    out.setdefault(i, []).append((a, b, f.kind))
                i += 1
        return out


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_STRING_BYTES = re.compile(rb'"(?:[^"\\]|\\.)*"')
# A key ending in "tokens" whose value is a number, true, false or null
# ("input_tokens": 9, in every assistant record) names no secret: its keyword
# does not make rules run. (Found by its literal, at C speed.)
_TOKEN_COUNTS = re.compile(rb'tokens":(?=[ \t]*(?:-?[0-9]|true|false|null))')


def _may_nest(data: bytes) -> bool:
    """Whether a JSON text may hold a string that is a JSON document with
    escapes of its own (``\\\\n``, ``\\\\\\"`` as written): a string that starts
    with "{" or "[" (in valid JSON a closing quote is never followed by one, so
    '"{' and '"[' can only open such a string, or sit in one escaped), and an
    escaped backslash. A document with no escapes of its own reads the same in
    the decoded text."""
    return (b'"{' in data or b'"[' in data) and b"\\\\" in data


# what ``_redact_json`` returns for the value when it did not parse the text
_UNPARSED: Any = object()


def _dumps_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=_SURROGATE.search(s) is not None)


def _redact_json(text: str, depth: int = 0) -> tuple[str, Any] | None:
    """``text`` redacted as JSON (see the module's docstring) and its parsed
    value (``_UNPARSED`` when there was no need to parse it); None when it is
    not JSON."""
    data = _encode(text)
    simple = b"\\u" not in data and b"\\/" not in data
    ranks = ruleset.candidates(_TOKEN_COUNTS.sub(b'":', data)) if simple else ()
    if simple and not ranks:
        # no escape can hide a keyword: if the text has none, no rule can
        # match in its decoded strings either
        return text, _UNPARSED
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if simple and not (depth < _MAX_DEPTH and _may_nest(data)):
        return _redact_json_simple(text, data, obj, ranks)
    return _redact_json_view(text, obj, depth)


def _redact_json_simple(
    text: str, data: bytes, obj: Any, ranks: tuple[int, ...]
) -> tuple[str, Any]:
    """JSON text whose only escapes are those of one character (``\\n``,
    ``\\"``, ...) and with no string that is a JSON document: the rules run
    over the text itself with its escapes decoded (in C), so they see its keys,
    values and structure as a person reads them."""
    view = codecs.escape_decode(data)[0] if b"\\" in data else data
    # decoding these escapes makes no keyword: none holds a control
    # character or a quote, and the one with a backslash (":\\/\\/") could
    # only come from "\\/", which this text does not hold
    found = ruleset.scan(view, ranks)
    if not found:
        return text, obj
    # where each string's content starts in the view, and its decoded bytes
    starts: list[int] = []
    contents: list[bytes] = []
    saved = 0
    for m in _JSON_STRING_BYTES.finditer(data):
        a, b = m.start() + 1, m.end() - 1
        content = data[a:b]
        if b"\\" in content:
            content = codecs.escape_decode(content)[0]
        starts.append(a - saved)
        contents.append(content)
        saved += (b - a) - len(content)
    by_string: dict[int, list[tuple[int, int, str]]] = {}
    for f in found:
        i = max(0, bisect.bisect_right(starts, f.start) - 1)
        while i < len(starts) and starts[i] < f.end:
            st = starts[i]
            lo, hi = max(f.start, st) - st, min(f.end, st + len(contents[i])) - st
            if lo < hi:
                by_string.setdefault(i, []).append((lo, hi, f.kind))
            i += 1
    if not by_string:
        return text, obj
    edits: dict[int, str] = {}
    for i, spans in by_string.items():
        content = contents[i]
        s = content.decode("utf-8", "surrogatepass")
        where = _char_offsets(content, s, [o for lo, hi, _k in spans for o in (lo, hi)])
        edits[i] = _replace(s, _merge([(where[lo], where[hi], k) for lo, hi, k in spans]))
    return _splice(text, edits), _UNPARSED


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Spans sorted, overlapping ones merged (the first names the kind)."""
    spans.sort()
    merged: list[tuple[int, int, str]] = []
    for s, e, kind in spans:
        if merged and s < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]), merged[-1][2])
        else:
            merged.append((s, e, kind))
    return merged


def _splice(text: str, edits: dict[int, str]) -> str:
    """The JSON ``text`` with its ``i``-th string (in document order) replaced by
    ``edits[i]``, written as a JSON string; every other byte is kept."""
    tokens = list(_JSON_STRING.finditer(text))
    parts: list[str] = []
    pos = 0
    for i in sorted(edits):
        m = tokens[i]
        parts.append(text[pos : m.start()])
        parts.append(_dumps_string(edits[i]))
        pos = m.end()
    parts.append(text[pos:])
    return "".join(parts)


def _redact_json_view(text: str, obj: Any, depth: int) -> tuple[str, Any] | None:
    """JSON text with ``\\uXXXX`` or ``\\/`` escapes, or strings that may be JSON
    documents: the rules run over a view of its decoded strings (``_View``)."""
    view = _View(obj, depth)
    data = _encode(view.text)
    found = ruleset.scan(data)
    if not found and not view.replaced:
        return text, obj
    edits: dict[int, str] = dict(view.replaced)
    for i, spans in view.spans(found, data).items():
        edits[i] = _replace(view.strings[i], _merge(spans))
    if not edits:
        return text, obj
    if sum(1 for _ in _JSON_STRING.finditer(text)) != len(view.strings):
        # duplicate keys (the parsed value kept one): redact the value as parsed
        again = json.dumps(obj, ensure_ascii=False)
        return _redact_json(again, depth) if again != text else None
    return _splice(text, edits), _UNPARSED


def _redact_builtin(text: str) -> tuple[str, Any]:
    """``text`` redacted by the rules, and its value when it was parsed as JSON."""
    if _JSON_START.match(text):
        out = _redact_json(text)
        if out is not None:
            return out
    return _redact_plain(text), _UNPARSED


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
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
        return self.redact_parsed(text)[0]

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every secret replaced (``data`` itself when it has
        none). Bytes that are not UTF-8 are read one character per byte
        (Latin-1) and written back so: every byte is kept but the secrets',
        which are ASCII (a file with one odd byte keeps no secret either)."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raw = data.decode("latin-1")
            clean = self(raw)
            return data if clean == raw else clean.encode("latin-1", "replace")
        clean = self(text)
        return data if clean == text else clean.encode("utf-8")

    def redact_parsed(self, text: str) -> tuple[str, Any]:
        """``text`` redacted, and its JSON value when redacting it parsed it and
        nothing changed it after (else a sentinel that is no JSON value)."""
        out, value = _redact_builtin(text)
        if self._extras:
            again = self._redact_extras(out)
            if again != out:
                out, value = again, _UNPARSED
        return out, value

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

    A :class:`Redactor` redacts JSON text through its decoded strings and keeps
    the bytes of every string that holds no secret, so a secret spelled with
    ``\\uXXXX`` escapes is caught. Any other ``redact`` sees only the text as
    written, so a line holding such escapes also has its decoded strings
    redacted, and when that finds something the line is re-encoded from the
    redacted value. A lone surrogate (an output cut mid-character, spelled
    ``\\udXXX``) has no UTF-8 form, so it cannot be stored: it becomes U+FFFD and
    the line is re-encoded. Raises ``json.JSONDecodeError`` for a line that is
    not JSON.
    """
    if isinstance(redact, Redactor):
        text, obj = redact.redact_parsed(text)
        if obj is _UNPARSED or "NaN" in text or "Infinity" in text:
            obj = json.loads(text, parse_constant=_refuse_constant)
    else:
        text = redact(text)
        obj = json.loads(text, parse_constant=_refuse_constant)
    if "\\u" not in text:
        return text, obj
    clean = obj if isinstance(redact, Redactor) else redact_strings(redact, obj)
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(clean, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            clean = redact_strings(_replace_surrogates, clean)
    if clean is not obj and clean != obj:
        return json.dumps(clean, ensure_ascii=False, separators=(",", ":")), clean
    return text, obj


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value the store keeps")


# the escape of a surrogate (paired or lone), where a lone one may hide
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _replace_surrogates(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)
