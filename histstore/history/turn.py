"""The turn record: one finished exchange with an agent.

A turn record is a plain JSON-able dict. Importers produce it, the store hashes
its canonical JSON as a ``turn`` object, and ``hs export`` writes it back out.
Field names are a contract (docs/format.md, "Turn"):

================  =========================================================
``turn_id``       str, unique within the agent (Claude Code: the prompt's uuid)
``session_id``    str, the session the turn belongs to
``project``       str, the project: the directory the session ran in as the agent
                  recorded it (Claude Code: its launch directory). Views that
                  scope by project compare histstore.project.project_key of it
``asked_at``      str, RFC 3339 UTC with milliseconds, ``2026-01-02T03:04:05.678Z``
``asked``         str, what the person asked
``answered``      str, the agent's final answer ("" when there was none)
``files``         list[str], files the turn read, first-seen order, no duplicates
``edited``        list[str], files the turn edited, first-seen order, no duplicates
``tools``         dict[str, int], tool name -> number of calls
``tainted``       bool, the turn read untrusted content (web fetch/search, MCP)
``model``         str | None, the model that answered (the last one, if it changed)
``agent``         str, the agent that wrote it: ``claude-code``, ``codex``, ``hs`` ...
``status``        ``completed`` | ``failed`` | ``interrupted``
``answered_at``   str | None, time of the last record of the turn
``cwd``           str | None, the working directory when the turn was asked
``subagent``      str | None, the sub-agent id when the turn ran in a sub-agent
``source``        {"format", "file", "line", "end_line"}: where it came from
``steps``         list of steps (below), the whole exchange in normalized form
``raw``           list[str], the source records as the agent wrote them
                  (redacted); the store keeps them as one blob and replaces the
                  list with {"blob": id, "lines": n, "size": bytes}
================  =========================================================

A step is one of::

    {"type": "user", "text": str, "at": ts}
    {"type": "assistant", "text": str, "at": ts, "model": str | None}
    {"type": "thinking", "text": str, "at": ts}
    {"type": "image", "media_type": str, "data": str, "at": ts}
    {"type": "tool", "id": str, "name": str, "input": {...}, "output": str | None,
     "is_error": bool, "at": ts}
    {"type": "event", "kind": str, "text": str, "at": ts}

``at`` may be None. In the store, a step's ``output`` or ``data`` longer than
:data:`BLOB_THRESHOLD` bytes is replaced by {"blob": id, "size": n} so the same
large output (a file read fifty times) is stored once.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from histstore.errors import BadInput

STATUSES = ("completed", "failed", "interrupted")
REQUIRED = ("turn_id", "session_id", "project", "asked_at", "asked", "answered")
BLOB_THRESHOLD = 512
UNTRUSTED_TOOLS = frozenset({"WebFetch", "WebSearch", "web_search", "web_fetch", "fetch"})

Turn = dict[str, Any]


def is_untrusted_tool(name: str) -> bool:
    """A tool whose output comes from outside: the web, or any MCP server."""
    return name in UNTRUSTED_TOOLS or name.startswith("mcp__") or name.startswith("mcp_")


_TS = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")


def parse_time(value: str) -> datetime:
    """Parse an RFC 3339 / ISO-8601 time; a time without zone is taken as UTC."""
    if not isinstance(value, str) or not _TS.match(value.strip()):
        raise BadInput(f"not an RFC 3339 time: {value!r}", hint="write it as 2026-01-02T03:04:05Z")
    text = value.strip().replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return dt.astimezone(UTC)
    except (ValueError, OverflowError):
        raise BadInput(
            f"not a valid time: {value!r}", hint="write it as 2026-01-02T03:04:05Z"
        ) from None


def format_time(dt: datetime) -> str:
    """The one time format of the store: UTC, milliseconds, ``Z``."""
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def normalize_time(value: str) -> str:
    return format_time(parse_time(value))


def _str_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadInput(f"field {field!r} must be a list of strings")
    seen: dict[str, None] = {}
    for v in value:
        seen.setdefault(v, None)
    return list(seen)


def _tools(value: Any) -> dict[str, int]:
    if value is None:
        return {}
    if isinstance(value, dict):
        out: dict[str, int] = {}
        for k, v in value.items():
            if not isinstance(k, str) or not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise BadInput("field 'tools' must map tool names to call counts")
            out[k] = v
        return out
    if isinstance(value, list):
        counts: dict[str, int] = {}
        for item in value:
            if isinstance(item, str):
                counts[item] = counts.get(item, 0) + 1
            elif isinstance(item, dict) and isinstance(item.get("name"), str):
                n = item.get("count", 1)
                if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                    raise BadInput("a tool's 'count' must be a non-negative integer")
                counts[item["name"]] = counts.get(item["name"], 0) + n
            else:
                raise BadInput("field 'tools' must list tool names or {name, count} objects")
        return counts
    raise BadInput("field 'tools' must be an object {name: count} or a list of names")


def _opt_str(record: dict[str, Any], field: str) -> str | None:
    value = record.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadInput(f"field {field!r} must be a string")
    return value


#: the fields of ``source`` and the type each must have
_SOURCE_FIELDS: dict[str, type] = {"format": str, "file": str, "line": int, "end_line": int}


def _source(value: Any) -> dict[str, Any] | None:
    """``source`` as a turn may hold it: an object whose known fields have
    their types (a line number is a whole number), other fields kept."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadInput("field 'source' must be an object")
    for key, kind in _SOURCE_FIELDS.items():
        v = value.get(key)
        if v is not None and (not isinstance(v, kind) or isinstance(v, bool)):
            what = "a whole number" if kind is int else "a string"
            raise BadInput(f"field 'source.{key}' must be {what}")
    return value


def normalize_turn(record: Any, *, default_agent: str = "hs") -> Turn:
    """Validate a turn record from outside (turn JSONL, ``hs record``) and return
    it in normal form. Unknown fields are kept under ``extra`` so nothing is lost."""
    if not isinstance(record, dict):
        raise BadInput("a turn must be a JSON object")
    missing = [f for f in REQUIRED if f not in record]
    if missing:
        raise BadInput(f"turn is missing field(s): {', '.join(missing)}")
    for f in ("turn_id", "session_id", "project", "asked", "answered"):
        if not isinstance(record[f], str):
            raise BadInput(f"field {f!r} must be a string")
    if not record["turn_id"] or not record["session_id"]:
        raise BadInput("fields 'turn_id' and 'session_id' must not be empty")
    tainted = record.get("tainted", False)
    if not isinstance(tainted, bool):
        raise BadInput("field 'tainted' must be true or false")
    status = record.get("status", "completed")
    if status not in STATUSES:
        raise BadInput(f"field 'status' must be one of {', '.join(STATUSES)}")
    steps = record.get("steps", [])
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise BadInput("field 'steps' must be a list of objects")
    raw = record.get("raw", [])
    if not isinstance(raw, list) or not all(isinstance(r, str) for r in raw):
        raise BadInput("field 'raw' must be a list of strings")
    answered_at = record.get("answered_at")
    source = _source(record.get("source"))
    turn: Turn = {
        "turn_id": record["turn_id"],
        "session_id": record["session_id"],
        "project": record["project"],
        "asked_at": normalize_time(record["asked_at"]),
        "asked": record["asked"],
        "answered": record["answered"],
        "files": _str_list(record.get("files"), "files"),
        "edited": _str_list(record.get("edited"), "edited"),
        "tools": _tools(record.get("tools")),
        "tainted": tainted,
        "model": _opt_str(record, "model"),
        "agent": _opt_str(record, "agent") or default_agent,
        "status": status,
        "answered_at": normalize_time(answered_at) if answered_at else None,
        "cwd": _opt_str(record, "cwd"),
        "subagent": _opt_str(record, "subagent"),
        "source": source,
        "steps": steps,
        "raw": raw,
    }
    extra = {k: v for k, v in record.items() if k not in turn and k != "extra"}
    if isinstance(record.get("extra"), dict):
        extra = {**record["extra"], **extra}
    if extra:
        turn["extra"] = extra
    return turn


_SURROGATE = re.compile("[\ud800-\udfff]")


def _spell(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else "\ufffd"


def as_text(value: str) -> str:
    """``value`` as UTF-8 can hold it: a byte that was not UTF-8 spelled
    ``\\xNN``, as the store keeps a file name that is not UTF-8
    (``caf\\xe9``); any other lone surrogate replaced by U+FFFD, as the
    store keeps one. A query or a filter searches what the store can hold."""
    if value.isascii() or not _SURROGATE.search(value):
        return value
    return _SURROGATE.sub(_spell, value)
