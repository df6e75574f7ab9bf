"""The project key: what views scope by (hs log --project, recall).

Turns keep their project directory as the agent recorded it; a view maps it
through :func:`project_key` when it compares, so what is stored never depends
on what this machine's disk holds."""

from __future__ import annotations

import functools
from pathlib import Path


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
