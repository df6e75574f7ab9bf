"""What a recall answers, turns and memory notes together, and the text it reads as.

``hs recall`` and the MCP server's ``recall_history`` tool give one answer
through this module: the turns from the recall index
(:func:`histstore.recall.index.recall`: the index caught up first, the overlay
merged at read time), the memory notes holding the query's terms
(:func:`histstore.memory.prompt.search_notes`: hidden notes left out), and
:func:`render`, the text a person or a model reads: dated excerpts centred on
the first match, ``edited:``/``read:``, the project named only when the
search left it, where each matched (``in Bash output: …``), the
untrusted-content label in line on a tainted turn, and one
line for each way of finding nothing (nothing recorded yet, no match, no
match in the last N days). Only the names of the options in the hints differ
between the two front ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from histstore.errors import BadInput
from histstore.history.turn import as_text
from histstore.recall.index import recall
from histstore.recall.query import UNTRUSTED_LABEL, RecallResult
from histstore.store.store import Store

if TYPE_CHECKING:
    from histstore.memory.prompt import NoteHit


@dataclass(frozen=True)
class Answer:
    """A recall's answer: the turns found and the memory notes matching."""

    text: str  # the query as asked
    result: RecallResult
    notes: list[NoteHit]
    agent: str | None = None  # only turns this agent recorded, when given
    session: str | None = None  # only turns of this session, when given

    @property
    def terms(self) -> list[str]:
        return [" ".join(t) for t in self.result.query.terms]

    def as_json(self) -> dict[str, Any]:
        res = self.result
        out: dict[str, Any] = {
            "query": self.text,
            "terms": self.terms,
            "outcome": res.outcome,
            "project": res.scope,
            "days": res.days,
            "path": res.path,
            "hits": [h.as_json() for h in res.hits],
            "memory": [n.as_json() for n in self.notes],
        }
        if self.agent is not None:
            out["agent"] = self.agent
        if self.session is not None:
            out["session"] = self.session
        return out


def answer(
    store: Store,
    text: str,
    *,
    project: str | None,
    days: int | None = None,
    k: int = 5,
    agent: str | None = None,
    session: str | None = None,
) -> Answer:
    """The turns and notes that talk about ``text``: in ``project`` (a
    directory, mapped to its project key, or a project's name, its last path
    component; None searches every project), the last ``days`` days, at most
    ``k`` turns, only ``agent``'s and ``session``'s when given (filtered inside
    the index)."""
    if not text.strip():
        raise BadInput("the query is empty", hint="give the words to look for")
    if agent is not None:
        # the summary (and sqlite3) loads only to check an agent's name
        from histstore.history.reading import check_agent

        check_agent(store, agent)
    res = recall(store, text, project=project, days=days, k=k, agent=agent, session=session)
    terms = [" ".join(t) for t in res.query.terms]
    notes: list[NoteHit] = []
    # nothing to read until memory was recorded, and nothing to import (yaml); the
    # refs, not a folder of them: packed refs leave none ("memory/" is
    # histstore.memory.scopes.PREFIX, not imported for the same reason)
    if store.refs.list_refs("memory/"):
        from histstore.memory.prompt import search_notes

        notes = search_notes(store, terms, res.scope, everywhere=res.scope is None)
    # what the answer says back is what was searched: odd bytes as the store spells them
    return Answer(
        as_text(text),
        res,
        notes,
        as_text(agent) if agent else agent,
        as_text(session) if session else session,
    )


@dataclass(frozen=True)
class Style:
    """How a front end names its options in the hints, and how long the ids are."""

    everywhere: str = "--everywhere"
    days: str = "--days"
    full_ids: bool = False


CLI = Style()


def render(ans: Answer, style: Style = CLI) -> list[str]:
    """The answer as the lines a person (or a model) reads."""
    res = ans.result
    text = ans.text
    out: list[str] = []
    where = f" in {res.scope}" if res.scope else ""
    if ans.session is not None:
        where += f" in session {ans.session}"
    who = f" of {ans.agent}" if ans.agent is not None else ""
    if res.outcome == "empty":
        out.append("nothing recorded yet: import sessions with `hs import`")
    elif res.outcome == "no-terms":
        out.append(f"nothing to look for: {text!r} holds only function words")
    elif res.outcome == "no-match":
        more = f" (try {style.everywhere})" if res.scope else ""
        out.append(f"no turn{who} matches {text!r}{where}{more}")
    elif res.outcome == "no-match-in-days":
        out.append(
            f"no turn{who} matches {text!r}{where} in the last {res.days} days "
            f"(older turns do: widen or drop {style.days})"
        )
    for i, h in enumerate(res.hits):
        if i:
            out.append("")
        session = h.session_id if style.full_ids else h.session_id[:8]
        turn = h.turn_id if style.full_ids else h.turn_id[:12]
        agent = f"  {h.agent}" if h.agent else ""
        out.append(f"{h.asked_at[:10]}  session {session}  turn {turn}{agent}")
        if res.scope is None:
            out.append(f"  project: {h.project}")
        out.append(f"  {h.where}: {h.excerpt}")
        if h.edited:
            out.append("  edited: " + ", ".join(h.edited))
        if h.read:
            out.append("  read: " + ", ".join(h.read))
        if h.tainted:
            out.append(f"  {UNTRUSTED_LABEL}")
    if ans.notes:
        out.append("")
        out.append("memory notes:")
        for n in ans.notes:
            out.append(f"  {n.file} ({n.scope.label}): {n.name} — {n.description}")
    return out
