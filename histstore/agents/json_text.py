"""JSON edited as text: the spans of an object's members found with the
standard library's scanner, and one member's value (or a new member,
indented like its neighbours) written in place, every other byte kept
(histstore.agents.settings checks the result and writes the file)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"

Keys = tuple[str, ...]


def same(a: Any, b: Any) -> bool:
    """Equal as the file holds them: ``true`` is not ``1``, ``1.0`` is not ``1``."""
    if type(a) is not type(b) and not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass(frozen=True)
class _Member:
    """One member of a JSON object as the text spells it: where its key and value lie."""

    key: str
    start: int  # the key's opening quote
    value: int  # the value's first character
    end: int  # one past the value


def skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _members(text: str, start: int) -> tuple[list[_Member], int]:
    """The members of the object opening at ``start``, and its ``}``'s index."""
    i = skip(text, start + 1)
    out: list[_Member] = []
    if text[i] == "}":
        return out, i
    while True:
        key, after = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        colon = skip(text, after)
        value = skip(text, colon + 1)
        _, end = _DECODER.raw_decode(text, value)
        out.append(_Member(key, i, value, end))
        i = skip(text, end)
        if text[i] == "}":
            return out, i
        i = skip(text, i + 1)  # past the comma


def _line_indent(text: str, i: int) -> str:
    """The white space that opens the line holding index ``i``."""
    bol = text.rfind("\n", 0, i) + 1
    j = bol
    while j < len(text) and text[j] in " \t":
        j += 1
    return text[bol:j]


def unit_of(text: str) -> str:
    """The file's indentation step (two spaces, as Claude Code writes, when it has none)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return "  "


def _dump(value: Any, indent: str | None, at: str) -> str:
    """``value`` as JSON; multi-line with ``indent`` steps from ``at``, or on one line."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, indent=indent).replace("\n", "\n" + at)


def _elements(text: str, start: int) -> list[tuple[int, int]]:
    """The (start, end) of each element of the array opening at ``start``."""
    i = skip(text, start + 1)
    out: list[tuple[int, int]] = []
    if text[i] == "]":
        return out
    while True:
        _, end = _DECODER.raw_decode(text, i)
        out.append((i, end))
        i = skip(text, end)
        if text[i] == "]":
            return out
        i = skip(text, i + 1)  # past the comma


def _json_list_text(text: str, start: int, end: int, new: list[Any], unit: str) -> str | None:
    """An array changed element by element, so the elements that stay keep
    their bytes: ``new`` is the old array with elements appended, one run of
    them removed, or some replaced in place. None for any other change (the
    caller writes the array whole)."""
    spans = _elements(text, start)
    old = [_DECODER.raw_decode(text, a)[0] for a, _ in spans]
    multiline = "\n" in text[start:end]

    def dumped(v: Any, at_elem: int) -> str:
        at = _line_indent(text, at_elem)
        return _dump(v, unit if multiline else None, at)

    if not spans:
        return None
    if len(new) > len(old) and all(same(a, b) for a, b in zip(old, new, strict=False)):
        at = _line_indent(text, spans[-1][0]) if multiline else ""
        sep = (",\n" + at) if multiline else ", "
        added = "".join(sep + dumped(v, spans[-1][0]) for v in new[len(old) :])
        return text[: spans[-1][1]] + added + text[spans[-1][1] :]
    if len(new) < len(old):
        k = len(old) - len(new)
        for i in range(len(new) + 1):  # the run old[i:i+k] removed?
            if all(same(a, b) for a, b in zip(old[:i] + old[i + k :], new, strict=True)):
                if i + k < len(spans):  # up to the next kept element
                    return text[: spans[i][0]] + text[spans[i + k][0] :]
                if i > 0:  # a run at the end: from the last kept element's end
                    return text[: spans[i - 1][1]] + text[spans[-1][1] :]
                return None
        return None
    if len(new) == len(old):
        out = text
        for (a, b), was, now in reversed(list(zip(spans, old, new, strict=True))):
            if not same(was, now):
                out = out[:a] + dumped(now, a) + out[b:]
        return out
    return None


def json_set_text(text: str, start: int, keys: Keys, value: Any, unit: str) -> str:
    members, close = _members(text, start)
    multiline = "\n" in text[start:close]
    found = [m for m in members if m.key == keys[0]]
    if found:
        m = found[-1]  # JSON parsers take the last of repeated keys
        if len(keys) > 1 and text[m.value] == "{":
            return json_set_text(text, m.value, keys[1:], value, unit)
        for k in reversed(keys[1:]):  # a null there: the object takes its place
            value = {k: value}
        if text[m.value] == "[" and isinstance(value, list):
            edited = _json_list_text(text, m.value, m.end, value, unit)
            if edited is not None:
                return edited
        at = _line_indent(text, m.start)
        new = _dump(value, unit if multiline else None, at)
        return text[: m.value] + new + text[m.end :]
    for k in reversed(keys[1:]):
        value = {k: value}
    if members:
        at = _line_indent(text, members[-1].start) if multiline else ""
        sep = (",\n" + at) if multiline else ", "
        member = json.dumps(keys[0], ensure_ascii=False) + ": "
        member += _dump(value, unit if multiline else None, at)
        end = members[-1].end
        return text[:end] + sep + member + text[end:]
    outer = _line_indent(text, start)
    at = outer + unit
    member = json.dumps(keys[0], ensure_ascii=False) + ": " + _dump(value, unit, at)
    return text[: start + 1] + "\n" + at + member + "\n" + outer + text[close:]


def json_del_text(text: str, start: int, keys: Keys, prune: bool) -> str:
    members, close = _members(text, start)
    found = [i for i, m in enumerate(members) if m.key == keys[0]]
    if not found:
        return text
    i = found[-1]
    m = members[i]
    if len(keys) > 1:
        if text[m.value] != "{":
            return text
        inner = json_del_text(text, m.value, keys[1:], prune)
        if not prune or _DECODER.raw_decode(inner, m.value)[0]:
            return inner
        text = inner
        members, close = _members(text, start)
        m = members[i]
    if i > 0:
        return text[: members[i - 1].end] + text[m.end :]
    if len(members) > 1:
        return text[: m.start] + text[members[1].start :]
    return text[: start + 1] + text[close:]
