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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.history.reading import resolve_session
from histstore.memory import index as memindex
from histstore.memory import rules as memrules
from histstore.memory.drafts import check_folder
from histstore.memory.statements import (
    _content_words,
    _Hit,
    _sentence_case,
    find_statements,
    is_injected,
)
from histstore.overlay.markers import Overlay
from histstore.store.fsutil import atomic_write
from histstore.store.store import Store

KINDS = ("remember", "correction", "preference", "fact")


MAX_INDEX_LINE = 150


MAX_SLUG = 40


SLUG_WORDS = 6


@dataclass(frozen=True)
class Proposal:
    """A memory note proposed from recorded turns: its fields, text and index line."""

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


def write_drafts(store: Store, proposals: list[Proposal], folder: Path) -> list[Path]:
    """Each proposal as a draft note file in ``folder`` (for ``hs memory write
    --from``); the files it left as they were (a file of that name is there).
    ``folder`` must not be a memory folder (one with an index) nor inside the
    store; it is created when missing. Nothing is ever written over a file."""
    folder = check_folder(store, folder, "--drafts")
    folder.mkdir(parents=True, exist_ok=True)
    kept = []
    for p in proposals:
        path = folder / p.file
        if path.exists() or path.is_symlink():
            kept.append(path)
            continue
        atomic_write(path, memrules.render_note(p.type, p.name, p.description, p.body).encode())
    return kept
