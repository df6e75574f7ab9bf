"""Statements in what a person typed: the reading half of histstore.memory.scan.

Masking code and quotes, cutting sentences, passing over lead-ins, splitting
off the person's own reason, and matching the cues (remember, correction,
preference, standing rule, a fact about the person or the project, a
reference URL). The rules, in order, are in histstore.memory.scan's docstring.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from histstore.recall.stopwords import FUNCTION_WORDS

#: a longer sentence is a paste, not a statement to remember (and would not fit a note)
MAX_QUOTE = 400

_INJECTED = (
    "<command-",
    "<local-command",
    "caveat:",
    "[request interrupted",
    "<bash-",
    "<user-memory-input",
    "<system-reminder",
    "<task-notification",
    "<tool_result",
    "<tool-result",
    "<function_results",
)


_JSON_TOOL_RESULT = re.compile(r'^\[?\s*\{\s*"(?:tool_use_id|type"\s*:\s*"tool_result)')


def is_injected(text: str) -> bool:
    """Text the agent's tooling put in the person's place."""
    head = text.lstrip()[:200]
    return head.lower().startswith(_INJECTED) or bool(_JSON_TOOL_RESULT.match(head))


_BLANK = "\x00"


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)


_BLOCKQUOTE = re.compile(r"^[ \t]*>[^\n]*", re.M)


_INLINE_CODE = re.compile(r"`[^`\n]+`")


_DQUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')


def mask(text: str) -> str:
    """The text with code, quoted text and block quotes blanked out, same length,
    curly apostrophes made straight: what the cues are matched against."""
    out = text.replace("’", "'").replace("‘", "'")
    for rx in (_FENCE, _BLOCKQUOTE, _INLINE_CODE, _DQUOTED):
        spans = [(m.start(), m.end()) for m in rx.finditer(out)]
        if not spans:
            continue
        chars = list(out)
        for s, e in spans:
            for i in range(s, e):
                if chars[i] != "\n":
                    chars[i] = _BLANK
        out = "".join(chars)
    return out


_END = re.compile(r"[.!?]+(?=\s|$)")


_ABBREV = re.compile(r"(?:^|[\s(])(?:e\.g|i\.e|etc|vs|cf|incl)\.$", re.I)


_BULLET = re.compile(r"(?:[-*+•]\s+|\d{1,3}[.)]\s+|#{1,6}\s+)?(?:\[[ xX]\]\s+)?(?:\*\*|__)?\s*")


def sentences(masked: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each sentence of a masked text, bullets and spaces trimmed."""
    for line in re.finditer(r"[^\n]+", masked):
        base, text = line.start(), line.group()
        start = 0
        cuts = []
        for m in _END.finditer(text):
            if _ABBREV.search(text[start : m.end()]):
                continue
            cuts.append((start, m.end()))
            start = m.end()
        if start < len(text):
            cuts.append((start, len(text)))
        for s, e in cuts:
            piece = text[s:e]
            lead = len(piece) - len(piece.lstrip())
            s += lead
            bullet = _BULLET.match(text, s, e)
            if bullet is not None:
                s = bullet.end()
            e -= len(piece) - len(piece.rstrip())
            if s < e:
                yield base + s, base + e


_F = re.I | re.S


_LEAD_WORDS = (
    r"no|nope|nah|ok|okay|also|and|but|so|please|hey|actually|oh|well|btw|fyi|"
    r"note\s*:|important\s*:|reminder\s*:|"
    r"from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|in\s+general|generally"
)


_LEAD = re.compile(rf"(?:[*_]*(?:{_LEAD_WORDS})[*_]*(?:[\s,:;!—–-]+|$))*", _F)


_STANDING_LEAD = re.compile(r"from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future", _F)


_REASON = re.compile(r"[\s,;—–(-]+(?:because|since|so\s+that)\b", _F)


_REMEMBER = re.compile(
    r"(?:remember|keep\s+in\s+mind|bear\s+in\s+mind|note\s+for\s+the\s+future"
    r"|for\s+future\s+reference|note\s+to\s+self)"
    r"(?!\s+(?:when|how|what|where|who|why|if|whether|the\s+time)\b)"
    r"(?:\s+(?:that|this)\b)?\s*[:,;—–-]?\s*(?P<c>\S.*)",
    _F,
)


_CORRECTIONS = [
    re.compile(
        r"(?:don't|dont|do\s+not)\s+"
        r"(?!(?:you|we|they|i|he|she|worry|know|mind|care|bother|think)\b)\S.*",
        _F,
    ),
    re.compile(r"never\s+(?!mind\b)\S.*", _F),
    re.compile(r"stop\s+\w+ing\b.*", _F),
    re.compile(r"always\s+\S.*", _F),
    re.compile(r"avoid\s+\S.*", _F),
]


_USE = r"(?:use|prefer|go\s+with|call|run|write)"


_INSTEAD_FIRST = re.compile(
    rf"(?P<conn>instead\s+of|rather\s+than)\s+(?P<x>\S.*?)[\s,;—–-]+(?P<y>{_USE}\s+\S.*)", _F
)


_INSTEAD_LAST = re.compile(
    rf"(?P<y>{_USE}\s+\S.*?)\s+(?P<conn>instead\s+of|rather\s+than)\s+(?P<x>\S.*)", _F
)


_PREFER = re.compile(
    r"i(?:\s+(?:prefer|like|would\s+rather|would\s+prefer)|'d\s+(?:rather|prefer))\s+"
    r"(?!(?:it|this|that|these|those|what|how|the\s+way|your|when|the\s+idea)\b)\S.*",
    _F,
)


_WANT = re.compile(
    r"i(?:\s+want|'d\s+like|\s+would\s+like)\s+you\s+to\s+(?P<c>\S.*)",
    _F,
)


_STANDING_START = re.compile(r"(?:always|never|keep|stop|avoid|only)\b", _F)


_STANDING = re.compile(
    r"\b(?:always|never|from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|every\s+time"
    r"|whenever|each\s+time|by\s+default|in\s+general)\b",
    _F,
)


_ABOUT_PERSON = re.compile(
    r"(?:(?:i\s+am|i'm)\s+(?!a\s+(?:bit|little|lot)\b|the\s+one\b)"
    r"(?:a|an|the|new\s+to|responsible\s+for|in\s+charge\s+of|based\s+in|from|part\s+of)\s+\S"
    r"|my\s+(?:role|job|title|team|background)\b\s*\S"
    r"|i\s+work\s+(?:on|at|for|in|as|with|mostly|mainly|primarily)\s+\S).*",
    _F,
)


_URL = re.compile(r"https?://[^\s<>\x00]+")


_URL_HOME = re.compile(
    r"(?P<what>\S.*?)\s+(?:is|are|lives?|can\s+be\s+found"
    r"|(?:is|are)\s+(?:kept|hosted|located|tracked|documented|published))"
    r"\s+(?:at|in|on|under)\s*:?\s+<?https?://\S.*",
    _F,
)


_FACTS = [
    re.compile(
        r"(?:this|the)\s+(?:project|repo|repository|codebase|app|service|package|library)\s+"
        r"(?:uses|is\s+built\s+with|is\s+written\s+in|runs\s+on|targets|requires|depends\s+on"
        r"|relies\s+on|deploys\s+to|is\s+deployed\s+(?:to|on)|lives\s+in|has|keeps|follows)"
        r"\s+\S.*",
        _F,
    ),
    re.compile(r"the\s+repo(?:sitory)?\s+is\s+\S.*", _F),
    re.compile(
        r"we\s+(?:(?:always|usually|now|only|mostly)\s+)?"
        r"(?:use|deploy|build\s+with|host|target|follow|release|store)\s+\S.*",
        _F,
    ),
    re.compile(r"our\s+[^\x00,;]{1,40}?\s+(?:is|are|lives|live|runs|run|uses|use|goes)\s+\S.*", _F),
    re.compile(
        r"(?:the\s+)?tests?\s+(?:(?:are|is|should\s+be|must\s+be)\s+)?run\s+"
        r"(?:with|via|using|through|under|in|by)\s+\S.*",
        _F,
    ),
]


#: what a remember statement about things (not an instruction) starts with
_DECLARATIVE = re.compile(
    r"(?:the|our|this|these|those|we|we're|it|it's|its|there|there's)\s+\S", _F
)


_PASSING_STATE = re.compile(
    r"\b(?:is|are|'s|looks?|seems?)\s+(?:now\s+|currently\s+|still\s+)?"
    r"(?:broken|failing|down|dirty|fine|ok|okay|good|done|green|red|a\s+mess|messed"
    r"|not\s+working|weird|wrong)\b",
    _F,
)


_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")


_KEEP = frozenset({"don't", "not", "no", "only", "use", "using"})


_CUE_WORDS = frozenset(
    [
        "always",
        "never",
        "stop",
        "avoid",
        "dont",
        "instead",
        "rather",
        "prefer",
        "remember",
        "keep",
        "mind",
        "bear",
        "note",
        "future",
        "reference",
        "self",
    ]
)


@dataclass
class _Hit:
    """A statement found in an asked text: what kind, where, and its parts."""

    kind: str
    type: str
    start: int  # the quote, in the asked text
    end: int
    content: tuple[int, int]  # the words the slug and name are made of
    reason: tuple[int, int] | None
    apply: str | None  # the instruction restated, None when it is the quote itself
    turns: list[dict[str, Any]] = field(default_factory=list)


def _host(m: re.Match[str]) -> str:
    try:
        host = urlsplit(m.group()).hostname or ""
    except ValueError:  # not a URL after all ("http://[fe80::1")
        return " "
    return " " + host.removeprefix("www.") + " "


def _content_words(text: str) -> list[str]:
    """The words a slug and a name are made of, in order, each word once (a URL
    gives its host name)."""
    text = _URL.sub(_host, text.replace("’", "'"))
    out: list[str] = []
    seen: set[str] = set()
    for w in _WORD.findall(text):
        key = w.lower()
        if (key in FUNCTION_WORDS and key not in _KEEP) or key in seen:
            continue
        if not key.isdigit():  # numbers repeat in versions and addresses
            seen.add(key)
        out.append(w)
    return out


def _has_content(text: str) -> bool:
    """Some word besides function words and the cues themselves."""
    words = re.findall(r"\w+(?:'\w+)?", text.replace("’", "'"))
    return any(w.lower() not in FUNCTION_WORDS and w.lower() not in _CUE_WORDS for w in words)


def _lead(masked: str) -> str:
    m = _LEAD.match(masked)
    return m.group() if m else ""


def _is_fact(text: str) -> bool:
    return any(rx.fullmatch(text) for rx in _FACTS) and not _PASSING_STATE.search(text)


def _type_of_content(masked: str) -> str:
    """The type of what a remember statement holds, by the other cues."""
    rest = masked[len(_lead(masked)) :]
    rest = re.sub(r"^to\s+", "", rest, flags=re.I)
    if _ABOUT_PERSON.fullmatch(rest):
        return "user"
    if _URL.search(rest):
        return "reference"
    if _is_fact(rest) or _DECLARATIVE.match(rest):
        return "project"
    return "feedback"


def _sentence_hit(asked: str, masked: str, s: int, e: int) -> _Hit | None:
    # the quote: the sentence without its closing . or !
    while e > s and asked[e - 1] in ".!":
        e -= 1
    while e > s and asked[e - 1].isspace():
        e -= 1
    if e <= s or e - s > MAX_QUOTE:
        return None
    if masked[s:e].rstrip("\x00)\"'*_ ").endswith("?"):
        return None  # a question
    lead = _lead(masked[s:e])
    rs = s + len(lead)
    if rs >= e:
        return None
    standing_lead = bool(_STANDING_LEAD.search(lead))
    ie, reason = e, None
    r = _REASON.search(masked, rs, e)
    if r is not None and r.start() > rs:
        word = re.search(r"because|since|so\s+that", r.group(), re.I)
        assert word is not None
        ie, reason = r.start(), (r.start() + word.start(), e)
    instr = masked[rs:ie].rstrip(" ,;:—–-")
    ie = rs + len(instr)
    if not instr:
        return None

    def hit(kind: str, type_: str, content: tuple[int, int], apply: str | None) -> _Hit | None:
        if not _has_content(asked[content[0] : content[1]]):
            return None
        return _Hit(kind, type_, s, e, content, reason, apply)

    clause = _sentence_case(asked[rs:ie])

    m = _REMEMBER.fullmatch(instr)
    if m is not None:
        c0 = rs + m.start("c")
        to = re.match(r"to\s+", masked[c0:ie], re.I)
        said = asked[c0 + (to.end() if to else 0) : ie]
        return hit("remember", _type_of_content(masked[c0:ie]), (c0, ie), said)
    for rx in _CORRECTIONS:
        if rx.fullmatch(instr):
            return hit("correction", "feedback", (rs, ie), clause)
    m = _INSTEAD_FIRST.fullmatch(instr)
    if m is not None:
        y = asked[rs + m.start("y") : rs + m.end("y")]
        x = asked[rs + m.start("x") : rs + m.end("x")]
        conn = asked[rs + m.start("conn") : rs + m.end("conn")].lower()
        return hit("correction", "feedback", (rs, ie), f"{y} {conn} {x}")
    if _INSTEAD_LAST.fullmatch(instr):
        return hit("correction", "feedback", (rs, ie), clause)
    if _PREFER.fullmatch(instr):
        words = instr.split(None, 2)
        apply: str | None = None
        if len(words) == 3 and words[1].lower() == "prefer":
            apply = "prefer " + asked[ie - len(words[2]) : ie]
        return hit("preference", "feedback", (rs, ie), apply)
    m = _WANT.fullmatch(instr)
    if m is not None:
        c0 = rs + m.start("c")
        if _STANDING_START.match(masked, c0) or _STANDING.search(masked, s, e) or standing_lead:
            return hit("preference", "feedback", (c0, ie), asked[c0:ie])
        return None
    if _ABOUT_PERSON.fullmatch(instr):
        return hit("preference", "user", (rs, ie), None)
    if _URL_HOME.fullmatch(instr):
        return hit("fact", "reference", (rs, ie), None)
    if _is_fact(instr):
        return hit("fact", "project", (rs, ie), None)
    if standing_lead:
        return hit("remember", _type_of_content(instr), (rs, ie), clause)
    return None


def _sentence_case(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def find_statements(asked: str) -> list[_Hit]:
    """Every statement worth remembering in one text, in text order."""
    masked = mask(asked)
    out = []
    for s, e in sentences(masked):
        h = _sentence_hit(asked, masked, s, e)
        if h is not None:
            out.append(h)
    return out
