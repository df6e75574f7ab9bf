"""Codex rollouts: what a file says about its session (the format and the rules: the package's docstring)."""

from __future__ import annotations

import pathlib
from typing import Any

from histstore.history.importers import (
    Redact,
)
from histstore.history.importers.codex.lines import (
    _FILE_UUID,
    _META_KEYS,
    _dict,
    _Line,
    _str,
    _valid_id,
)

# --------------------------------------------------------------------------- the session


class _Session:
    """What the file says about the session, and what all its turns share."""

    def __init__(self, path: pathlib.Path, redact: Redact) -> None:
        self.path = path
        self.redact = redact
        self.meta: dict[str, Any] | None = None
        self.title: str | None = None
        self.model: str | None = None  # the model in effect (last turn_context)
        self.cwd: str | None = None  # the cwd in effect
        self.first_cwd: str | None = None
        self.last_time: tuple[str, int] | None = None  # (time, line)
        self.used_ids: set[str] = set()
        self._id: str | None = None
        self._project: str | None = None

    def observe(self, line: _Line) -> None:
        obj = line.obj
        if obj is None:
            return
        at = line.at
        if at is not None:
            self.last_time = (at, line.lineno)
        payload = _dict(obj.get("payload"))
        kind = obj.get("type")
        if kind == "session_meta" and self.meta is None:
            self.meta = payload
        elif kind == "turn_context":
            model, cwd = _str(payload.get("model")), _str(payload.get("cwd"))
            if model:
                self.model = model
            if cwd:
                self.cwd = cwd
                self.first_cwd = self.first_cwd or cwd
        elif kind == "event_msg" and payload.get("type") == "thread_name_updated":
            name = _str(payload.get("thread_name")) or _str(payload.get("name"))
            if name and name.strip():
                self.title = name

    @property
    def session_id(self) -> str:
        """Fixed the first time it is asked, so every turn of the file agrees."""
        if self._id is None:
            meta = self.meta or {}
            ids = (_str(meta.get("id")), _str(meta.get("session_id")))
            valid = next((i for i in ids if i and _valid_id(i)), None)
            if valid:
                self._id = valid
            else:
                m = _FILE_UUID.search(self.path.stem)
                # names taken from the file system are text from outside too
                self._id = self.redact(m.group(1) if m else self.path.stem)
        return self._id

    def meta_cwd(self) -> str | None:
        return _str((self.meta or {}).get("cwd")) or None

    @property
    def project(self) -> str:
        """Fixed the first time a turn asks, so every turn of the file agrees."""
        if self._project is None:
            self._project = self.meta_cwd() or self.first_cwd or ""
        return self._project

    def extra(self) -> dict[str, Any]:
        meta = self.meta or {}
        out: dict[str, Any] = {}
        for key in ("cli_version", "originator", "parent_thread_id", "forked_from_id"):
            value = _str(meta.get(key))
            if value:
                out[key] = value
        return out

    def is_subagent(self) -> bool:
        meta = self.meta or {}
        return bool(_str(meta.get("parent_thread_id"))) or "subagent" in _dict(meta.get("source"))

    # ---------------------------------------------------------------- resuming

    def mark(self) -> dict[str, Any]:
        """What changes as lines are read (taken where a turn may start)."""
        return {
            "model": self.model,
            "cwd": self.cwd,
            "first_cwd": self.first_cwd,
            "last_time": list(self.last_time) if self.last_time else None,
            "title": self.title,
        }

    def fixed(self, drop: str | None) -> dict[str, Any]:
        """What is fixed once read (the session's first ``session_meta``, its id
        and project) and the turn ids taken, but ``drop`` (the turn that will
        be read again)."""
        meta: dict[str, Any] | None = None
        if self.meta is not None:
            meta = {k: v for k, v in self.meta.items() if k in _META_KEYS and isinstance(v, str)}
            if "subagent" in _dict(self.meta.get("source")):
                meta["source"] = {"subagent": True}
        return {
            "meta": meta,
            "id": self._id,
            "project": self._project,
            "used_ids": sorted(self.used_ids - {drop} if drop else self.used_ids),
        }

    def restore(self, state: dict[str, Any]) -> None:
        meta = state.get("meta")
        self.meta = meta if isinstance(meta, dict) else None
        self.model = _str(state.get("model"))
        self.cwd = _str(state.get("cwd"))
        self.first_cwd = _str(state.get("first_cwd"))
        self.title = _str(state.get("title"))
        last = state.get("last_time")
        if isinstance(last, list) and len(last) == 2:
            self.last_time = (str(last[0]), int(last[1]))
        self._id = _str(state.get("id"))
        self._project = _str(state.get("project"))
        self.used_ids = {str(i) for i in state.get("used_ids") or []}
