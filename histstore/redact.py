"""Secret redaction: applied to everything before it is hashed or indexed.

A :class:`Redactor` replaces each secret it recognizes with ``[REDACTED:<kind>]``.
It runs on two kinds of text and is safe for both:

* raw JSON lines exactly as an agent wrote them. A built-in pattern never matches
  across a ``"`` and never starts or ends inside a backslash escape (``\\n``,
  ``\\"``, ``\\uXXXX``), so a redacted JSON line is still valid JSON. As a safety
  net (for user patterns), when redaction would turn valid JSON into invalid JSON
  the line is decoded, its strings redacted one by one, and re-encoded;
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
``npm-token``         ``npm_`` + 36
``aws-access-key-id`` ``AKIA`` / ``ASIA`` + 16 uppercase letters/digits
``aws-secret-key``    the value after an ``aws_secret_access_key`` /
                      ``SecretAccessKey`` label (the label is kept)
``slack-token``       ``xoxb- xoxp- xoxa- xoxr- xoxs-``
``slack-webhook``     ``https://hooks.slack.com/services/...``
``google-api-key``    ``AIza`` + 35
``stripe-key``        ``sk_live_ rk_live_ sk_test_ rk_test_``
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

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from .errors import BadInput

__all__ = ["DEFAULT", "KINDS", "Redactor", "marker"]

# Where a token may start: not right after a letter, digit, "_" or a backslash,
# except right after a whole JSON escape (\n \r \t \b \f, \uXXXX, or an escaped
# backslash), so a match never begins inside an escape and "\nsk-..." still matches.
_B = r"(?:(?<![\\A-Za-z0-9_])|(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4})|(?<=[^\\]\\\\))"
# Where a fixed-length token must end.
_E = r"(?![A-Za-z0-9_-])"

# (kind, pattern). A pattern with a group named "v" has only that group replaced;
# otherwise the whole match is. No pattern may contain other capturing groups.
# Token character classes exclude '"' and '\\', so a match never crosses a JSON
# string boundary and never ends inside an escape. Order matters only between
# patterns that can match at the same position (the first one wins).
_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----[^\"]{0,65536}?"
        r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY-----",
    ),
    (
        # a block cut short (no END line): the header and the base64 body after it
        "private-key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\[nrt])*",
    ),
    ("anthropic-key", _B + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai-key", _B + r"sk-(?=[A-Za-z0-9_-]*[A-Z0-9])[A-Za-z0-9_-]{20,}"),
    ("stripe-key", _B + r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("github-token", _B + r"gh[pousr]_[A-Za-z0-9]{36,}"),
    ("github-token", _B + r"github_pat_[A-Za-z0-9_]{22,}"),
    ("gitlab-token", _B + r"glpat-[A-Za-z0-9_-]{20,}"),
    ("huggingface-token", _B + r"hf_[A-Za-z0-9]{30,}" + _E),
    ("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E),
    ("aws-access-key-id", _B + r"A(?:KIA|SIA)[A-Z0-9]{16}" + _E),
    (
        "aws-secret-key",
        r"(?i:aws[_-]?secret[_-]?access[_-]?key|secret[_-]?access[_-]?key)"
        r"(?:\\?[\"'])?[ \t]*(?:=>|[:=])[ \t]*(?:\\?[\"'])?"
        r"(?P<v>[A-Za-z0-9/+=]{20,})",
    ),
    ("slack-token", _B + r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    (
        "slack-webhook",
        _B + r"https?:(?:\\?/){2}hooks\.slack\.com(?:\\?/)(?:services|workflows|triggers)"
        r"(?:\\?/[A-Za-z0-9_-]+)+",
    ),
    ("google-api-key", _B + r"AIza[A-Za-z0-9_-]{35}" + _E),
    ("jwt", _B + r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    (
        "url-password",
        # ':' of "scheme://", the user (kept), ':', the password, '@', the host.
        # The password runs to the last '@' before whitespace, '/', '"' or '\\'.
        r"(?<=[A-Za-z0-9]):(?:\\?/){2}[^\s:/?#@\"\\]{0,256}:(?P<v>[^\s/\"\\]{1,256})"
        r"@(?=[A-Za-z0-9\[])",
    ),
    ("bearer-token", _B + r"(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{20,}=*)"),
    (
        "basic-auth",
        r"(?i:authorization)(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?[ \t]*"
        r"(?i:basic)[ \t]+(?P<v>[A-Za-z0-9+/]{8,}={0,2})",
    ),
)

#: every kind a built-in pattern reports, plus "custom"
KINDS: tuple[str, ...] = (*dict.fromkeys(kind for kind, _ in _PATTERNS), "custom")

# Cheap pre-check: a built-in pattern can match only if one of these occurs.
# Plain substring tests run at memory speed, far faster than the combined regex.
_TRIGGERS: tuple[str, ...] = (
    "PRIVATE KEY",
    "sk-",
    "k_live_",
    "k_test_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "hf_",
    "npm_",
    "AKIA",
    "ASIA",
    "ecret_access_key",
    "ECRET_ACCESS_KEY",
    "ecretAccessKey",
    "ecret-access-key",
    "ecret_Access_Key",
    "xox",
    "AIza",
    "eyJ",
    "earer",
    "EARER",
    "asic",
    "ASIC",
)


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


def _compile_builtin() -> tuple[re.Pattern[str], dict[str, tuple[str, str | None]]]:
    parts: list[str] = []
    groups: dict[str, tuple[str, str | None]] = {}
    for i, (kind, pattern) in enumerate(_PATTERNS):
        value_group: str | None = None
        if "(?P<v>" in pattern:
            value_group = f"v{i}"
            pattern = pattern.replace("(?P<v>", f"(?P<{value_group}>")
        parts.append(f"(?P<k{i}>{pattern})")
        groups[f"k{i}"] = (marker(kind), value_group)
    return re.compile("|".join(parts)), groups


_BUILTIN, _GROUPS = _compile_builtin()


def _has_trigger(text: str) -> bool:
    for trigger in _TRIGGERS:
        if trigger in text:
            return True
    # url-password: "://" (or JSON-escaped ":\/\/") plus an '@'
    return "@" in text and (":/" in text or ":\\/" in text)


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


def _extra_replacer(rx: re.Pattern[str]) -> Callable[[re.Match[str]], str]:
    mark = marker("custom")
    if "secret" not in rx.groupindex:

        def whole(m: re.Match[str]) -> str:
            return mark if m.end() > m.start() else m.group(0)

        return whole

    def group(m: re.Match[str]) -> str:
        start, end = m.span("secret")
        if start < 0 or end == start:
            return m.group(0)
        whole = m.group(0)
        base = m.start()
        return whole[: start - base] + mark + whole[end - base :]

    return group


class Redactor:
    """Replace secrets in text with ``[REDACTED:<kind>]``.

    ``extra_patterns`` are regular expressions (Python syntax) from config.toml
    ``[redact] patterns``; each match is replaced by ``[REDACTED:custom]``, or only
    the group named ``secret`` when the pattern has one. An extra pattern that does
    not compile, or that matches the empty string, raises :class:`BadInput`.
    """

    def __init__(self, extra_patterns: Sequence[str] = ()) -> None:
        if isinstance(extra_patterns, str):
            extra_patterns = (extra_patterns,)
        extras: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = []
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
            extras.append((rx, _extra_replacer(rx)))
        self.extra_patterns: tuple[str, ...] = tuple(extra_patterns)
        self._extras = tuple(extras)

    def __repr__(self) -> str:
        return f"Redactor(extra_patterns={list(self.extra_patterns)!r})"

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced; ``text`` itself when there is none."""
        out = text
        if _has_trigger(text):
            out = _BUILTIN.sub(_replace_builtin, text)
        for rx, replace in self._extras:
            out = rx.sub(replace, out)
        if out == text:
            return text
        if text.startswith(("{", "[")):
            return self._keep_json_valid(text, out)
        return out

    def _keep_json_valid(self, text: str, out: str) -> str:
        """``out``, unless it breaks a JSON ``text``: then redact value by value."""
        try:
            json.loads(out)
            return out
        except ValueError:
            pass
        try:
            decoded = json.loads(text)
        except ValueError:
            return out  # it was not JSON to begin with
        body = text.rstrip()
        compact = '": ' not in body and '", ' not in body
        encoded = json.dumps(
            self.redact_obj(decoded),
            ensure_ascii=False,
            separators=(",", ":") if compact else (", ", ": "),
        )
        return encoded + text[len(body) :]

    def redact_obj(self, obj: Any) -> Any:
        """A copy of ``obj`` with every string in it (values and keys) redacted."""
        if isinstance(obj, str):
            return self(obj)
        if isinstance(obj, dict):
            return {
                (self(k) if isinstance(k, str) else k): self.redact_obj(v) for k, v in obj.items()
            }
        if isinstance(obj, list):
            return [self.redact_obj(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.redact_obj(v) for v in obj)
        return obj


#: the redactor with only the built-in patterns
DEFAULT = Redactor()
