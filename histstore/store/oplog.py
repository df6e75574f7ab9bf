"""The operation log (``refs.log``): one JSON line per operation.

An operation holds every ref change it made (old -> new), its time, its
command (one line, redacted) and its parent operation, so the log is a chain
``hs ops``, ``hs undo`` and ``hs fsck`` read. Appending is the commit point
of a ref change (histstore.store.refs.RefStore.apply, under the lock);
reading never locks and tolerates a torn line, which a crash mid-append
leaves and the next append closes.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3

from histstore.store.codec import canonical_json


@dataclass(frozen=True)
class RefChange:
    """One ref moved by an operation: from ``old`` to ``new`` (None: absent)."""

    ref: str
    old: str | None
    new: str | None

    def as_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "old": self.old, "new": self.new}


@dataclass
class Operation:
    """One entry of the refs log: every ref change of one command, its time and parent."""

    op: str
    time: str
    command: str
    changes: list[RefChange]
    parent: str | None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "op": self.op,
            "time": self.time,
            "command": self.command,
            "parent": self.parent,
            "changes": [c.as_json() for c in self.changes],
        }
        if self.extra:
            d["extra"] = self.extra
        return d

    def derive_id(self) -> str:
        """The id an entry must have: blake3 of its canonical JSON without ``op``, 16 hex."""
        body = self.as_json()
        del body["op"]
        return str(blake3.blake3(canonical_json(body)).hexdigest())[:16]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Operation:
        return cls(
            op=d["op"],
            time=d["time"],
            command=d["command"],
            parent=d.get("parent"),
            changes=[RefChange(c["ref"], c.get("old"), c.get("new")) for c in d["changes"]],
            extra=d.get("extra") or {},
        )


def one_line(text: str, limit: int = 1000) -> str:
    """Collapse whitespace so nothing can forge a log entry or a second line."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class LogLine:
    """A line of the refs log as read: its entry, or why it is none."""

    lineno: int
    op: Operation | None
    error: str | None = None


def read_log(log_path: Path) -> Iterator[LogLine]:
    """Every line of the refs log, oldest first; bad lines come with an error."""
    try:
        f = open(log_path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return
    with f:
        for lineno, raw in enumerate(f, 1):
            torn = not raw.endswith(b"\n")
            try:
                op = Operation.from_json(json.loads(raw))
                yield LogLine(lineno, op)
            except (ValueError, KeyError, TypeError):
                what = "torn (an interrupted write)" if torn else "unreadable"
                yield LogLine(lineno, None, f"refs.log line {lineno} is {what}")


def newest_first(log_path: Path) -> Iterator[Operation]:
    """Complete entries from the end of the log backwards (torn lines skipped),
    reading only as far back as the caller goes."""
    for d in newest_first_json(log_path):
        try:
            yield Operation.from_json(d)
        except (KeyError, TypeError):
            continue  # not an entry: look further back


#: an entry as the writer spells it (canonical JSON: sorted keys, so op,
#: parent and time come last; every control character escaped)
_HEAD = b'{"changes":['
_TAIL = re.compile(
    rb',"op":"([0-9a-f]{16})","parent":(?:null|"[0-9a-f]{16}"),"time":"[^"\\\x00-\x1f]*"\}\Z'
)
#: every byte to itself but the control characters, which become 0
_CONTROL = bytes(0 if b < 0x20 else b for b in range(256))
#: a line longer than this has its id read from its ends (an import's entry
#: names every session it moved: megabytes to parse at 1M turns)
LONG_LINE = 1 << 16


def _long_last_line(log_path: Path) -> tuple[bytes, str] | None:
    """(the last line, without its newline, and its op) when that line is long
    (over LONG_LINE), whole (the file ends with its newline), spelled as the
    writer spells an entry at both ends and holds no raw control byte: its
    ends can then be read without parsing it. None otherwise (parse it). Only
    that line is read: the file is mapped, and the line's start found by one
    search backwards from its end."""
    with open(log_path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= LONG_LINE:
            return None  # the last line cannot be long
        with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as mm:
            if mm[size - 1] != 0x0A:
                return None  # torn
            start = mm.rfind(b"\n", 0, size - 1) + 1
            if size - 1 - start < LONG_LINE:
                return None
            line = mm[start : size - 1]
    m = _TAIL.search(line, len(line) - 256)
    if m is not None and line.startswith(_HEAD) and line.translate(_CONTROL).find(0) < 0:
        return line, m.group(1).decode("ascii")
    return None


def long_last_line(log_path: Path) -> tuple[bytes, str] | None:
    """:func:`_long_last_line`, None as well when there is no log or it cannot
    be mapped (a filesystem without mmap: the line is then parsed)."""
    try:
        return _long_last_line(log_path)
    except (OSError, ValueError):
        return None


def last_op_id(log_path: Path, long: tuple[bytes, str] | None) -> str | None:
    """The id of the newest complete entry (:func:`newest_first_json`'s first):
    ``long``'s, when the last line is long (:func:`long_last_line`'s answer),
    else the last line parsed."""
    if long is not None:
        return long[1]
    d = next(newest_first_json(log_path), None)
    return None if d is None else str(d["op"])


def newest_brief(log_path: Path, long: tuple[bytes, str] | None) -> dict[str, Any] | None:
    """The newest complete entry without its ref changes (op, time, command,
    parent, extra): for a long last line (``long`` as :func:`last_op_id`'s),
    parsed from what follows the changes (no change names a key ``command``,
    and no string holds an unescaped quote, so the one ``],"command":`` ends
    them: found from the line's end)."""
    if long is not None:
        line = long[0]
        cut = line.rfind(b'],"command":')
        if cut > 0:
            try:
                d = json.loads(b"{" + line[cut + 2 :])
            except ValueError:
                d = None
            if isinstance(d, dict) and isinstance(d.get("op"), str):
                return d
    d = next(newest_first_json(log_path), None)
    if d is None:
        return None
    return {k: v for k, v in d.items() if k != "changes"}


def _is_entry(d: Any) -> bool:
    """Whether a parsed line is an entry :meth:`Operation.from_json` reads."""
    if not (isinstance(d, dict) and isinstance(d.get("op"), str)):
        return False
    changes = d.get("changes")
    return (
        "time" in d
        and "command" in d
        and isinstance(changes, list)
        and all(isinstance(c, dict) and "ref" in c for c in changes)
    )


def newest_first_json(log_path: Path) -> Iterator[dict[str, Any]]:
    """:func:`newest_first` as the entries' JSON objects, as written (what
    ``Operation.as_json`` gives), without making an object of every ref
    change: an import's entry names every session it moved, and a reader
    that wants the newest entry's id or time need not build them all."""
    try:
        f = open(log_path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return
    with f:
        pos = f.seek(0, os.SEEK_END)
        # the pieces, latest first, of a line that starts further back (kept
        # apart until its start is read: an import's line is megabytes long)
        carry: list[bytes] = []
        while pos > 0:
            step = min(1 << 16, pos)
            pos -= step
            f.seek(pos)
            chunk = f.read(step)
            if pos > 0 and b"\n" not in chunk:
                carry.append(chunk)
                continue
            lines = (chunk + b"".join(reversed(carry))).split(b"\n")
            # the first piece may be the tail of a line that starts further back
            carry = [lines[0]] if pos > 0 else []
            for raw in reversed(lines[1:] if pos > 0 else lines):
                if raw.strip():
                    try:
                        d = json.loads(raw)
                    except ValueError:
                        continue  # a torn line: look further back
                    if _is_entry(d):
                        yield d
