"""The project key: what views scope by (hs log --project, recall), and which
recorded projects a ``--project`` names.

Turns keep their project directory as the agent recorded it; a view maps it
through :func:`project_key` when it compares, so what is stored never depends
on what this machine's disk holds."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

from histstore.errors import BadInput


@functools.lru_cache(maxsize=4096)
def project_key(directory: str) -> str:
    """The top level of the git work tree holding ``directory``, else the directory.

    A path that does not exist on this machine (a session recorded elsewhere, a
    Windows path) is kept as given: only a local work tree can be looked up.
    """
    p = Path(directory)
    try:
        if not p.is_absolute() or not p.is_dir():
            return directory
        for d in (p, *p.parents):
            if (d / ".git").exists():
                return str(d)
    except OSError:
        return directory
    return directory


def local_project_key(directory: str) -> str:
    """The project key of a directory a person or an agent names here (``hs
    memory --project``, the MCP tools' project): one that exists is made
    absolute, its links and any trailing separator resolved away, then
    mapped by :func:`project_key`; one that does not is kept as given."""
    path = Path(directory).expanduser()
    try:
        return project_key(str(path.resolve())) if path.exists() else directory
    except (OSError, RuntimeError):
        return directory


def _trim(path: str) -> str:
    """A path without its trailing separators (``/`` stays ``/``)."""
    trimmed = path.rstrip("/\\")
    return trimmed or path[:1]


def _name(path: str) -> str:
    """The last component of a recorded path, POSIX or Windows."""
    return re.split(r"[/\\]", _trim(path))[-1]


def matching_projects(given: str, recorded: Iterable[tuple[str, str]]) -> set[str]:
    """The recorded projects ``--project GIVEN`` names, from ``recorded``
    (each project as stored, with its project key).

    In order, the first rule that matches any: ``GIVEN`` an existing directory
    here (made absolute), matched by project key (so a subdirectory of a work
    tree names the work tree's sessions); ``GIVEN`` as a path, a trailing
    ``/`` or not, equal to a project or its key; ``GIVEN`` with no separator,
    the last component of a project or of its key (``webshop`` for
    ``/home/dev/src/webshop``)."""
    text = given.strip()
    if not text:
        raise BadInput("--project is empty", hint="give a project directory or its name")
    pairs = list(recorded)
    path = Path(text).expanduser()
    try:
        here = path.is_dir()
    except OSError:
        here = False
    if here:
        absolute = str(path.resolve())
        key = project_key(absolute)
        found = {p for p, k in pairs if _trim(p) == absolute or k == key}
        if found:
            return found
    want = _trim(str(path) if text.startswith("~") else text)
    found = {p for p, k in pairs if _trim(p) == want or _trim(k) == want}
    if found or re.search(r"[/\\]", want):
        return found
    return {p for p, k in pairs if _name(k) == want or _name(p) == want}
