"""Which models a model note applies to: bare model names and the ``small`` class.

A model note opens its body with ``models: <pattern>|...``. A pattern is an
fnmatch glob (case-insensitive) matched against the model's bare name (cloud
catalogue prefixes and version suffixes taken off) and its whole lower-cased
name; ``small`` matches every model whose bare name holds one of
:data:`SMALL_WORDS` as a word of its own. Also the token estimate prompts use.
"""

from __future__ import annotations

import fnmatch
import re

SMALL_WORDS = ("haiku", "mini", "nano", "small", "flash", "lite")


_DATE_SUFFIX_RE = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


_BRACKET_SUFFIX_RE = re.compile(r"\[[^\[\]]*\]$")


_CLOUD_PREFIX_RE = re.compile(
    r"^(?:[a-z]{2,6}\.)?(?:anthropic|amazon|meta|mistral|cohere|openai)\."
)


_CLOUD_SUFFIX_RE = re.compile(r"(?:-v\d+(?::\d+)?|@\d{8}|@latest)$")


def bare_model_name(model: str) -> str:
    """The model's name without provider, context-size suffix or date, lower-cased:
    ``"anthropic/Claude-Sonnet-4-5-20250929[1m]"`` -> ``"claude-sonnet-4-5"``.
    Both date forms are dropped: ``-20250929`` and ``-2024-08-06``."""
    bare = model.strip().lower()
    bare = bare.rsplit("/", 1)[-1]
    bare = _BRACKET_SUFFIX_RE.sub("", bare)
    # cloud catalogue ids: "us.anthropic.claude-x-20250929-v1:0", "claude-x@20250929"
    bare = _CLOUD_PREFIX_RE.sub("", bare)
    bare = _CLOUD_SUFFIX_RE.sub("", bare)
    return _DATE_SUFFIX_RE.sub("", bare)


def _is_small(bare: str) -> bool:
    return any(word in SMALL_WORDS for word in re.split(r"[^a-z0-9]+", bare))


def model_matches(globs: list[str], model: str) -> bool:
    """Whether a model note with these patterns applies to ``model`` (see the module
    docstring: fnmatch globs, case-insensitive, or ``small``)."""
    bare = bare_model_name(model)
    whole = model.strip().lower()
    for glob in globs:
        pattern = glob.strip().lower()
        if not pattern:
            continue
        if pattern == "small":
            if _is_small(bare):
                return True
        elif fnmatch.fnmatchcase(bare, pattern) or fnmatch.fnmatchcase(whole, pattern):
            return True
    return False


def estimate_tokens(text: str) -> int:
    """A rough token count: characters / 4, rounded up."""
    return (len(text) + 3) // 4
