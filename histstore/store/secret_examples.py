"""An example secret for every kind of the rule set, made from the rules themselves.

For a test that plants "one secret of every rule kind" (the leak test) and for
the tests of the rules: :func:`examples` gives, for each kind in
:func:`histstore.store.ruleset.kinds`, a text that holds one made-up secret of
that kind, and that secret. Nothing here is a real credential: each example is
generated from the regular expression of the first rule of its kind, with
characters drawn from a random generator seeded by the kind's name (so the
examples are the same on every run and every machine, and change only when a
rule does), and it is kept only when:

* the rule alone finds exactly that secret in the text, reported as that kind
  (its entropy limit, allowlists and checks passed);
* the whole redactor (:data:`histstore.store.redact.DEFAULT`) removes the
  secret from the text as it is, from the text inside a sentence, and from
  the text inside a JSON string of a JSON object, as the places a secret is
  planted in (a prompt, a tool's output, a record).

A regular expression is turned into text by walking Python's parse of it
(``re._parser``): RE2's inline flags, POSIX classes and ``\\z`` are first
rewritten into what that parser reads (only the case of literals changes:
a case-insensitive literal is written as the rule spells it). A repeat inside
the secret's group runs long enough for the entropy limits (32 characters, or
as the repeat allows); any other repeat runs as few times as it may, so the
example is the rule's shape with the least text around the secret. When the
first draw fails a check (a random secret that contains an allowlisted word,
a boundary that does not hold), further draws choose branches and lengths at
random, up to :data:`TRIES`.
"""

from __future__ import annotations

import functools
import json
import random
import re
import string
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any, NamedTuple

from histstore.store import ruleset, secret_rules
from histstore.store.redact import DEFAULT

__all__ = ["TRIES", "Example", "example", "examples"]

#: how many draws a kind gets before it is reported as having no example
TRIES = 100

# what a rule's pattern leaves out before its first literal, for an example
# that reads like the real thing
_LEADS = {"aws-secret-key": "AWS_S", "basic-auth": "A"}

# the capture groups of histstore's rules that hold the secret (the others name
# a label or a separator, and stay short)
_SECRET_GROUPS = frozenset(secret_rules.VALUE_GROUPS)

_POSIX = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "space": r" \t\n\r\f\v",
    "xdigit": "0-9A-Fa-f",
    "word": r"\w",
    "punct": r"!-/:-@\[-`{-~",
}
_PRINTABLE = [chr(c) for c in range(0x20, 0x7F)]
_ALNUM = frozenset(string.ascii_letters + string.digits)
_WORD = frozenset(string.ascii_letters + string.digits + "_")


class Example(NamedTuple):
    kind: str
    text: str  # a line holding the secret, in the rule's shape
    secret: str  # what redaction must remove

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text, "secret": self.secret}


def _python_syntax(pattern: str) -> str:
    """An RE2 pattern as Python's parser reads it, matching the same texts or
    more: inline flags dropped (a literal keeps the case the rule spells it
    in), POSIX classes spelled out, ``\\z`` as ``$``."""
    pattern = re.sub(r"\(\?[a-zA-Z]+\)", "", pattern)
    pattern = re.sub(r"\(\?-?[a-zA-Z]+(?:-[a-zA-Z]+)?:", "(?:", pattern)
    pattern = re.sub(r"\[:([a-z]+):\]", lambda m: _POSIX[m.group(1)], pattern)
    return pattern.replace(r"\z", "$")


@functools.cache
def _class(items: tuple[tuple[Any, Any], ...]) -> list[str]:
    """The printable ASCII characters a character class allows, letters and
    digits first when it has any (a secret is made of those). Cached: a
    class repeated ``{32}`` is asked for once per character drawn."""
    negate = False
    chars: set[str] = set()
    for op, av in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            chars.add(chr(av))
        elif op is sre.RANGE:
            lo, hi = av
            chars.update(chr(c) for c in range(lo, min(hi, 0x7E) + 1) if c >= 0x09)
        elif op is sre.CATEGORY:
            chars.update(_category(av))
    allowed = [c for c in _PRINTABLE if (c in chars) != negate]
    if not negate:
        allowed += sorted(c for c in chars if c in "\t\n")
    alnum = [c for c in allowed if c in _ALNUM]
    return alnum or [c for c in allowed if not c.isspace()] or allowed


def _category(code: Any) -> set[str]:
    if code is sre.CATEGORY_DIGIT:
        return set(string.digits)
    if code is sre.CATEGORY_WORD:
        return set(_WORD)
    if code is sre.CATEGORY_SPACE:
        return set(" \t\n")
    if code is sre.CATEGORY_NOT_DIGIT:
        return set(_PRINTABLE) - set(string.digits)
    if code is sre.CATEGORY_NOT_WORD:
        return set(_PRINTABLE) - _WORD
    if code is sre.CATEGORY_NOT_SPACE:
        return set(_PRINTABLE) - set(" \t\n")
    return set()


class _Draw:
    """One text for a parsed pattern; ``first`` draws the plainest one."""

    def __init__(self, rng: random.Random, first: bool, secret_groups: set[int]) -> None:
        self.rng = rng
        self.first = first
        self.secret_groups = secret_groups

    def text(self, items: Any, in_secret: bool = False) -> str:
        out: list[str] = []
        for op, av in items:
            if op is sre.LITERAL:
                out.append(chr(av))
            elif op is sre.NOT_LITERAL:
                out.append(self.rng.choice([c for c in _PRINTABLE if ord(c) != av and c.isalnum()]))
            elif op is sre.ANY:
                # an unescaped dot is mostly meant as one (hooks.slack.com)
                out.append("." if self.first else self.rng.choice(string.ascii_letters + "."))
            elif op is sre.IN:
                out.append(self.rng.choice(_class(tuple(av))))
            elif op is sre.BRANCH:
                branches = av[1]
                pick = branches[0] if self.first else self.rng.choice(branches)
                out.append(self.text(pick, in_secret))
            elif op is sre.SUBPATTERN:
                group, _add, _del, sub = av
                inner = in_secret or (group is not None and group in self.secret_groups)
                out.append(self.text(sub, inner))
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
                lo, hi, sub = av
                hi = min(hi, lo + 400)
                if in_secret and hi > 1:
                    n = min(hi, max(lo, 32)) if self.first else self.rng.randint(lo, hi)
                    n = max(n, min(hi, lo + 12))
                else:
                    n = lo if self.first else self.rng.randint(lo, min(hi, lo + 2))
                out.extend(self.text(sub, in_secret) for _ in range(n))
            # AT (anchors, \b), ASSERT: nothing to write
        return "".join(out)


def _secret_groups(parsed: Any, pattern: str, gitleaks: bool) -> set[int]:
    """The groups that hold the secret: for a gitleaks rule its secret group or
    every group (the first that matches is the secret); for histstore's, the
    value groups (``s``, ``dq``, ``uq``, ...), or the whole match."""
    names = parsed.state.groupdict
    if gitleaks:
        return set(range(1, parsed.state.groups))
    return {i for name, i in names.items() if name in _SECRET_GROUPS}


def _caught(text: str, secret: str) -> bool:
    """Whether redaction removes ``secret`` from ``text`` as it is, in a
    sentence, and in a JSON string (read back as the string it is)."""
    if secret in DEFAULT(text) or secret in DEFAULT(f"see {text} now"):
        return False
    record = json.loads(DEFAULT(json.dumps({"output": text})))
    return secret not in record["output"]


def _draw_example(
    kind: str, rank: int, pattern: str, gitleaks: bool, keywords: tuple[str, ...]
) -> Example | None:
    try:
        parsed = sre_parse.parse(_python_syntax(pattern))
    except (re.error, KeyError, OverflowError):
        return None
    groups = _secret_groups(parsed, pattern, gitleaks)
    rng = random.Random(f"histstore secret example {kind}")
    for attempt in range(TRIES):
        text = _Draw(rng, attempt == 0, groups).text(parsed, in_secret=not groups)
        text = _LEADS.get(kind, "") + text
        if not any(k in text.lower() for k in keywords):
            # a rule runs only where one of its keywords is (gitleaks' prefilter)
            text = f"{keywords[0]} {text}"
        data = text.encode("utf-8")
        found = [f for f in ruleset.scan(data, (rank,)) if f.kind == kind]
        if len(found) != 1:
            continue
        secret = data[found[0].start : found[0].end].decode("utf-8", "replace")
        if len(secret) >= 8 and _caught(text, secret):
            return Example(kind, text, secret)
    return None


@functools.cache
def _patterns() -> dict[int, tuple[str, bool, tuple[str, ...]]]:
    """Rule rank -> (its pattern, whether gitleaks', its keywords)."""
    rules = ruleset.rules()
    specs = [*secret_rules.PROVIDERS, *secret_rules.ASSIGNMENTS]
    own_ranks = [i for i, r in enumerate(rules) if not r.gitleaks]
    patterns = {
        rank: (spec.regex, False, spec.keywords)
        for rank, spec in zip(own_ranks, specs, strict=True)
    }
    data = json.loads(ruleset.GITLEAKS_FILE.read_text())
    by_id = {d["id"]: d for d in data["rules"]}
    for rank, r in enumerate(rules):
        if r.gitleaks:
            d = by_id[r.kind]
            patterns[rank] = (d["regex"], True, tuple(d["keywords"]))
    return patterns


def _draw(kind: str, rules: tuple[Any, ...]) -> Example | None:
    """The example of ``kind``: from the first of its rules that gives one, then
    from the rules whose check may report it (an assigned password is
    reported as ``password`` by a ``secret`` rule)."""
    patterns = _patterns()
    ranks = [i for i, r in enumerate(rules) if r.kind == kind]
    ranks += [i for i, r in enumerate(rules) if r.kind != kind and _reports(r, kind)]
    for rank in ranks:
        found = _draw_example(kind, rank, *patterns[rank])
        if found is not None:
            return found
    return None


@functools.cache
def examples() -> dict[str, Example]:
    """Every kind of the rule set -> its example, kinds in precedence order.
    A kind no draw gave an example for is left out (tests/test_secret_examples.py
    checks that there is none)."""
    rules = ruleset.rules()
    out: dict[str, Example] = {}
    for kind in ruleset.kinds():
        found = _draw(kind, rules)
        if found is not None:
            out[kind] = found
    return out


_ASSIGNING = (secret_rules.CHECKS["assignment"], secret_rules.CHECKS["flag"])


def _reports(rule: Any, kind: str) -> bool:
    return rule.check in _ASSIGNING and kind in ("password", "secret")


def example(kind: str) -> Example:
    """The example of one kind (KeyError: no such kind, or none was found)."""
    return examples()[kind]
