"""What of a turn is searchable, field by field (docs/format.md, "The recall index").

A turn is cut into *parts*, each in one field: the prompt, the answer, the file
paths, and every step — text the agent or the person said along the way,
thinking, each tool call's input and its output. The engine indexes the parts
field by field; the scan (no engine) and the excerpt of a hit read the same
parts, from the turn object, so all three agree on what a turn says and where.
Pure Python: no engine needed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any

from histstore.errors import HistError
from histstore.store.kinds import is_blob_ref

if TYPE_CHECKING:
    from histstore.store.store import Store

#: the searched fields, in the order the engine declares them
FIELDS = ("asked", "answered", "paths", "said", "thinking", "tool_in", "tool_out")

#: each field's weight: a match in the prompt or the answer counts most, one in
#: a tool's output least (outputs are long and repeat what the files hold)
WEIGHTS: dict[str, float] = {
    "asked": 3.0,
    "answered": 2.0,
    "paths": 1.5,
    "said": 1.0,
    "tool_in": 1.0,
    "thinking": 0.7,
    "tool_out": 0.5,
}

#: a tool output longer than this (UTF-8 bytes) is searched in its first this
#: many bytes only: a turn that read a huge file is found by what it asked and
#: answered, and the index stays a fraction of the store
OUTPUT_CAP = 64 * 1024


class Part:
    """One searchable piece of a turn: its field, its text, and the tool whose
    input or output it is (None for the rest)."""

    __slots__ = ("field", "text", "tool")

    def __init__(self, field: str, text: str, tool: str | None = None) -> None:
        self.field = field
        self.text = text
        self.tool = tool

    @property
    def where(self) -> str:
        """How a hit says where it matched: ``in the answer``, ``in Bash output``."""
        if self.field == "tool_in":
            return f"in {self.tool or 'a tool'} input"
        if self.field == "tool_out":
            return f"in {self.tool or 'a tool'} output"
        return WHERE[self.field]


WHERE = {
    "asked": "in the prompt",
    "answered": "in the answer",
    "paths": "in a file path",
    "said": "in the conversation",
    "thinking": "in thinking",
    "tool_in": "in a tool input",
    "tool_out": "in a tool output",
}

#: reads a blob's bytes by id (None when it cannot be read: the part is left out)
BlobReader = Callable[[str], bytes | None]


def blob_reader(store: Store) -> BlobReader:
    """The store's blobs; one missing or damaged is left out (fsck reports it)."""

    def read(object_id: str) -> bytes | None:
        try:
            return store.get_blob(object_id)
        except HistError:
            return None

    return read


def strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value (a tool's input): keys are names, not
    what was asked, so only values count."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield str(value)


def _output_text(value: Any, blob: BlobReader) -> str:
    if value is None:
        return ""
    if is_blob_ref(value):
        data = blob(value["blob"])
        if data is None:
            return ""
        return data[:OUTPUT_CAP].decode("utf-8", errors="ignore")
    if isinstance(value, str):
        return value if len(value) <= OUTPUT_CAP else value[:OUTPUT_CAP]
    return " ".join(strings(value))


def _input_text(value: Any) -> str:
    if isinstance(value, str):
        # stored as JSON text when it was not an object (importing.stored_turn)
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return "\n".join(strings(value))


def parts(turn: dict[str, Any], blob: BlobReader, fields: Collection[str] = FIELDS) -> list[Part]:
    """The searchable parts of a stored turn (of ``fields`` only: a blob is read
    only when its field is asked for), in the order of the exchange. The prompt
    and the answer are parts of their own, and so is each file path; a step
    repeating them (the first user step, the last assistant text) is not
    searched twice."""
    asked = turn.get("asked") or ""
    answered = turn.get("answered") or ""
    if not isinstance(asked, str):
        asked = str(asked)
    if not isinstance(answered, str):
        answered = str(answered)
    out = []
    if "asked" in fields:
        out.append(Part("asked", asked))
    if "answered" in fields:
        out.append(Part("answered", answered))
    if "paths" in fields:
        paths = [p for k in ("files", "edited") for p in turn.get(k) or [] if isinstance(p, str)]
        out += [Part("paths", p) for p in dict.fromkeys(paths) if p]  # a part a path
    steps = turn.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, dict):
            continue
        kind = step.get("type")
        if kind == "tool":
            name = step.get("name") if isinstance(step.get("name"), str) else None
            if "tool_in" in fields:
                text = _input_text(step.get("input"))
                if text:
                    out.append(Part("tool_in", text, name))
            if "tool_out" in fields:
                text = _output_text(step.get("output"), blob)
                if text:
                    out.append(Part("tool_out", text, name))
            continue
        said = step.get("text")
        if not isinstance(said, str) or not said:
            continue
        text = said
        if kind == "thinking":
            f = "thinking"
        elif kind in ("user", "assistant", "event") and text not in (asked, answered):
            f = "said"
        else:
            continue
        if f in fields:
            out.append(Part(f, text))
    return out


def field_texts(ps: list[Part]) -> dict[str, list[str]]:
    """The values of each field: the texts of its parts, each a value of its
    own (the engine puts a position between two values, so the end of one
    part and the start of the next are no phrase); empty ones left out."""
    out: dict[str, list[str]] = {}
    for p in ps:
        if p.text:
            out.setdefault(p.field, []).append(p.text)
    return out


def project_and_agent(turn: dict[str, Any], project: str, agent: str) -> tuple[str, str]:
    """The project and agent a turn is filtered by: its own, else its
    session's (``project``, ``agent``), for the engine's documents and the
    scan alike."""
    own_project, own_agent = turn.get("project"), turn.get("agent")
    return (
        own_project if isinstance(own_project, str) else project,
        own_agent if isinstance(own_agent, str) else agent,
    )
