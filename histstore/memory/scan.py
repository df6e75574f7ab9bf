"""Propose memory notes from what the person said in recorded turns (``hs memory scan``).

Only the person's words count: a turn's ``asked`` text, never its answer. A turn is
skipped when it is ``tainted`` (it read untrusted content, so its text may carry
injected instructions), when it ran in a sub-agent (its ``asked`` is the Task
prompt another agent wrote), or when its text was injected by the agent's tooling
rather than typed (it starts with ``<command-``, ``<local-command``, ``Caveat:``,
``[Request interrupted``, ``<bash-``, ``<user-memory-input``, ``<system-reminder``,
``<task-notification``, a ``<tool_result``/``<function_results`` wrapper, or is a
JSON tool result).

How a text is read
------------------
1. **Masking.** Fenced code blocks, inline code, double-quoted text (``"…"``,
   ``“…”``) and ``>`` block-quote lines are blanked out (offsets kept), so a
   "don't" inside a code sample or a quoted message is never a cue. The quote a
   proposal rests on is still cut from the original text, code included.
2. **Sentences.** Each line is cut after ``.``, ``!`` or ``?`` followed by a space
   (not after ``e.g.``, ``i.e.``, ``etc.``, ``vs.``); list bullets and task
   boxes are trimmed.
   A sentence ending in ``?`` is a question and is skipped; one over 400
   characters is a paste, not a statement, and is skipped too.
3. **Lead-in.** Interjections and framing before the statement are passed over:
   ``no``, ``ok``, ``also``, ``and``, ``but``, ``so``, ``please``, ``actually``,
   ``btw``, ``fyi``, ``note:``, ``important:``, ``from now on``, ``going forward``,
   ``in (the) future``, ``in general`` (each with an optional ``,``/``:``/``!``).
   Every cue below must then start the statement: "I think we should never…"
   or "if we use…" is not one.
4. **Reason.** The first ``because``/``since``/``so that`` after the start splits
   the statement into the instruction and the person's own reason.
5. **Cues**, tried in this order on the instruction; the first match wins:

   ===========  ================================================================
   kind         cue (case-insensitive, at the start of the statement)
   ===========  ================================================================
   remember     ``remember [that|this][:]``, ``keep in mind``, ``bear in mind``,
                ``note for the future``, ``for future reference``, ``note to
                self`` — not ``remember when/how/what/where/who/why/if``.
                A statement led in by ``from now on``/``going forward``/``in
                (the) future`` that matches no other cue is a remember too.
   correction   ``don't``/``do not`` … (not ``don't you/we/they/I …``, ``don't
                worry/know/mind/care/bother/think``), ``never`` … (not ``never
                mind``), ``stop <verb>ing`` …, ``always`` …, ``avoid`` …,
                ``instead of X[,] use/prefer/go with/call/run/write Y``,
                ``use/prefer/… Y instead of X`` (``rather than`` alike)
   preference   ``I prefer``, ``I like`` (not ``I like it/this/that/what/how/your
                …``: that is a reaction, not a standing preference), ``I'd
                rather``/``I would rather``, ``I'd prefer``; ``I want you to``/
                ``I'd like you to`` only when standing (its clause starts with
                always/never/keep/stop/avoid/only, or the sentence says always,
                never, from now on, going forward, in future, every time,
                whenever, each time, by default, in general) — else it is a task.
                About the person (type ``user``): ``I am``/``I'm`` + ``a``/``an``/
                ``the``/``new to``/``responsible for``/``in charge of``/``based
                in``/``from``/``part of`` (not ``a bit``/``a little``/``a lot``,
                ``the one``), ``my role/job/title/team/background …``, ``I work
                on/at/for/in/as/with/mostly/mainly/primarily …``
   fact         a URL stated as where something lives: ``X is/are/lives/can be
                found/is kept|hosted|located|tracked|documented|published
                at/in/on/under https://…`` (type ``reference``); ``this|the
                project|repo|repository|codebase|app|service|package|library
                uses/is built with/is written in/runs on/targets/requires/depends
                on/relies on/deploys to/is deployed to|on/lives in/has/keeps/
                follows …``, ``the repo is …``, ``we [always|usually|now|only|
                mostly] use/deploy/build with/host/target/follow/release/store
                …``, ``our X is/are/lives/runs/uses/goes …``, ``[the] tests [are|
                should be|must be] run with/via/using/through/under/in/by …`` —
                not a passing state (``is broken/failing/down/fine/done/green…``).
   ===========  ================================================================

   The statement must keep at least one content word after its cue ("don't do
   that", "never again" say nothing to remember).

Type: correction → ``feedback``; preference → ``feedback`` (``user`` when about
the person); fact → ``project`` (``reference`` for a URL). A remember statement is
typed by the same cues on what follows "remember …": about the person → ``user``,
a URL in it → ``reference``, a project fact or a statement about things (it starts
with the/our/this/these/those/we/it/there) → ``project``, else ``feedback``.

What a proposal holds
---------------------
* ``slug``: the statement's words (``[A-Za-z0-9]`` runs), lowercased, function
  words (:mod:`histstore.stopwords`) dropped except the ones a rule turns on
  (don't, not, no, only, use, using), each word once, a URL as its host name,
  the first six, cut to 40 characters on a word; when no word is left,
  ``<kind>-<7 hex of sha256(quote)>``. Two statements with the same slug: the
  first keeps it, later ones get ``-2``, ``-3`` … (and their names `` 2``, `` 3``).
* ``name``: the same words in their original case, first letter capitalized.
* ``description``: the quote, shortened on a word boundary (with ``…``) until
  the index line fits 150 characters.
* ``body``: only words from the evidence. For feedback/project: the quote, then
  ``**Why:**`` (the person's reason, or "Stated by the person in turn <8 chars>
  on <date>; no reason given."), then ``**How to apply:**`` (the instruction
  restated from the quote — the clause from its cue on without lead-in or reason,
  "Use Y instead of X" for the instead-of form, "Prefer …" for "I prefer …", the
  clause after "I want you to" — or "As stated above." when that is the quote
  itself), then ``Evidence: turn <id> (session <id>, <date>); …``. For
  user/reference: the quote and the evidence line.

The same quote (exact words, trailing ``.``/``!`` trimmed) in several turns is one
proposal citing every turn, in time order. Turns are read in (asked_at, turn_id)
order, so any input order gives the same proposals. The last step,
:func:`keep_verified`, drops any proposal whose quote is not a verbatim substring of
every cited turn's ``asked`` text, or whose note would break a memory rule.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from histstore.history.reading import resolve_session
from histstore.memory import index as memindex
from histstore.memory import rules as memrules
from histstore.overlay.markers import Overlay
from histstore.recall.stopwords import FUNCTION_WORDS
from histstore.store.store import Store

KINDS = ("remember", "correction", "preference", "fact")
MAX_INDEX_LINE = 150
MAX_SLUG = 40
SLUG_WORDS = 6
#: a longer sentence is a paste, not a statement to remember (and would not fit a note)
MAX_QUOTE = 400

# ------------------------------------------------------------------ the proposal


@dataclass(frozen=True)
class Proposal:
    type: str
    slug: str
    name: str
    description: str
    body: str
    index_line: str  # the draft MEMORY.md line
    file: str  # note_file_name(type, slug)
    evidence: list[str]  # turn ids whose `asked` text holds the quote, oldest first
    quote: str  # the person's exact words the proposal rests on
    kind: str  # "remember" | "correction" | "preference" | "fact"
    session: str
    asked_at: str

    def as_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "slug": self.slug,
            "name": self.name,
            "description": self.description,
            "body": self.body,
            "index_line": self.index_line,
            "file": self.file,
            "evidence": list(self.evidence),
            "quote": self.quote,
            "kind": self.kind,
            "session": self.session,
            "asked_at": self.asked_at,
        }

    def render(self) -> str:
        """The note as it would be written."""
        return memrules.render_note(self.type, self.name, self.description, self.body)


# ------------------------------------------------------------------ which turns

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


def _readable(turn: dict[str, Any]) -> bool:
    asked = turn.get("asked")
    return (
        isinstance(asked, str)
        and bool(asked.strip())
        and turn.get("tainted") is not True
        and not turn.get("subagent")
        and isinstance(turn.get("turn_id"), str)
        and not is_injected(asked)
    )


def _order(turn: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(turn.get("asked_at") or ""),
        str(turn.get("turn_id") or ""),
        str(turn.get("session_id") or ""),
        str(turn.get("asked") or ""),
    )


# ------------------------------------------------------------------ masking, sentences

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


# ------------------------------------------------------------------ cues

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


# ------------------------------------------------------------------ building proposals


def _slug_and_name(words: list[str], kind: str, quote: str) -> tuple[str, str]:
    """The slug (lowercase, digits, hyphens, at most 40) and the name from the same words."""
    chosen: list[tuple[str, str]] = []  # (slug part, word as written)
    length = -1
    for w in words[:SLUG_WORDS]:
        part = re.sub(r"[^a-z0-9]+", "", w.lower())
        if not part:
            continue
        if length + 1 + len(part) > MAX_SLUG:
            if not chosen:
                chosen.append((part[:MAX_SLUG], w[:MAX_SLUG]))
            break
        chosen.append((part, w))
        length += 1 + len(part)
    if not chosen:
        digest = hashlib.sha256(quote.encode("utf-8")).hexdigest()[:7]
        return f"{kind}-{digest}", f"{kind.capitalize()} {digest}"
    name = " ".join(w for _, w in chosen)
    return "-".join(p for p, _ in chosen), name[:1].upper() + name[1:]


def _short(text: str, fits: Any) -> str:
    """``text`` cut on a word boundary (with …) until ``fits(text)``."""
    text = " ".join(text.split())
    if fits(text):
        return text
    words = text.split(" ")
    while len(words) > 1:
        words.pop()
        cut = " ".join(words).rstrip(",;:—–-") + "…"
        if fits(cut):
            return cut
    cut = text
    while len(cut) > 1 and not fits(cut + "…"):
        cut = cut[:-1]
    return cut + "…"


def _line_fits(name: str, file: str) -> Any:
    def fits(description: str) -> bool:
        try:
            return len(memindex.index_line(name, file, description)) <= MAX_INDEX_LINE
        except Exception:  # the rules refuse it: try shorter
            return False

    return fits


def _date(turn: dict[str, Any]) -> str:
    return str(turn.get("asked_at", ""))[:10]


def _evidence_line(turns: list[dict[str, Any]]) -> str:
    parts = [f"turn {t['turn_id']} (session {t.get('session_id', '')}, {_date(t)})" for t in turns]
    return "Evidence: " + "; ".join(parts) + "."


def _sentence_end(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _body(hit: _Hit, quote: str, asked: str) -> str:
    first = hit.turns[0]
    evidence = _evidence_line(hit.turns)
    quoted = "> " + quote
    if hit.type in ("user", "reference"):
        return f"{quoted}\n\n{evidence}\n"
    if hit.reason is not None:
        why = _sentence_end(_sentence_case(asked[hit.reason[0] : hit.reason[1]]))
    else:
        why = (
            f"Stated by the person in turn {str(first['turn_id'])[:8]} on "
            f"{_date(first)}; no reason given."
        )
    apply = "As stated above."
    if hit.apply is not None:
        restated = _sentence_end(_sentence_case(" ".join(hit.apply.split())))
        if restated.rstrip(".!").lower() != " ".join(quote.split()).rstrip(".!").lower():
            apply = restated
    return f"{quoted}\n\n**Why:** {why}\n\n**How to apply:** {apply}\n\n{evidence}\n"


def scan_turns(turns: Iterable[dict[str, Any]]) -> list[Proposal]:
    """Proposals from turn records (pure: reads nothing but the records)."""
    ordered = sorted((t for t in turns if isinstance(t, dict)), key=_order)
    readable = [t for t in ordered if _readable(t)]
    by_quote: dict[str, tuple[_Hit, str]] = {}
    for turn in readable:
        asked: str = turn["asked"]
        for h in find_statements(asked):
            quote = asked[h.start : h.end]
            if quote in by_quote:
                seen, _ = by_quote[quote]
                if not any(t is turn for t in seen.turns):
                    seen.turns.append(turn)
                continue
            h.turns.append(turn)
            by_quote[quote] = (h, asked)
    proposals: list[Proposal] = []
    used: set[str] = set()
    for quote, (h, asked) in by_quote.items():
        words = _content_words(asked[h.content[0] : h.content[1]])
        slug, name = _slug_and_name(words, h.kind, quote)
        base, base_name, n = slug, name, 1
        while slug in used:
            n += 1
            suffix = f"-{n}"
            slug = base[: MAX_SLUG - len(suffix)].rstrip("-") + suffix
            name = f"{base_name} {n}"
        used.add(slug)
        name = name.replace(",", " ")
        file = memrules.note_file_name(h.type, slug)
        description = _short(quote, _line_fits(name, file))
        first = h.turns[0]
        proposals.append(
            Proposal(
                type=h.type,
                slug=slug,
                name=name,
                description=description,
                body=_body(h, quote, asked),
                index_line=memindex.index_line(name, file, description),
                file=file,
                evidence=[str(t["turn_id"]) for t in h.turns],
                quote=quote,
                kind=h.kind,
                session=str(first.get("session_id", "")),
                asked_at=str(first.get("asked_at", "")),
            )
        )
    return keep_verified(proposals, readable)


def keep_verified(proposals: Iterable[Proposal], turns: Iterable[dict[str, Any]]) -> list[Proposal]:
    """The guard over the whole pipeline: keep a proposal only when its quote is a
    verbatim substring of the ``asked`` text of every turn it cites (a turn that is
    unknown, tainted or injected holds nothing), and its note and index line pass
    the memory rules."""
    asked_by_id: dict[str, list[str]] = {}
    for t in turns:
        if isinstance(t, dict) and _readable(t):
            asked_by_id.setdefault(str(t["turn_id"]), []).append(t["asked"])
    out = []
    for p in proposals:
        if not p.quote.strip() or not p.evidence:
            continue
        if not all(any(p.quote in a for a in asked_by_id.get(i, [])) for i in p.evidence):
            continue
        if p.quote not in p.body:
            continue
        if not _passes_rules(p):
            continue
        out.append(p)
    return out


def _passes_rules(p: Proposal) -> bool:
    try:
        if memrules.note_file_name(p.type, p.slug) != p.file:
            return False
        note, violations = memrules.parse_note(p.file, p.render().encode("utf-8"))
        line = memindex.index_line(p.name, p.file, p.description)
    except Exception:  # a rule refused it outright
        return False
    return note is not None and not violations and line == p.index_line


# ------------------------------------------------------------------ over a store


def scan(store: Store, session_ids: Sequence[str] | None = None) -> list[Proposal]:
    """Proposals from the turns of the given sessions (a unique prefix will do),
    or of every session; turns the overlay hides are not read."""
    if session_ids is None:
        sessions = list(store.sessions())
    else:
        wanted = dict.fromkeys(resolve_session(store, s) for s in session_ids)
        sessions = [store.session(s) for s in wanted]
    overlay = Overlay.read(store)
    turns = []
    for rev in sessions:
        for entry in rev.turns:
            if overlay.hides(rev.session_id, entry.turn_id) is not None:
                continue
            turns.append(store.get_json(entry.object, "turn"))
    return scan_turns(turns)
