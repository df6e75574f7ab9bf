"""Typed errors. The library raises these; the CLI maps each to one line and an exit code.

Exit codes are part of the interface (documented in docs/cli.md):

==  ===========================================================
0   success
1   a failure not covered below (HistError)
2   bad input: a malformed argument, id, ref name or record
3   no store at the path, or a store of an unknown format version
4   not found: no object, turn, session or ref matches
5   conflict: a compare-and-swap lost, or the operation cannot apply
6   locked: another writer holds the store lock past the timeout
7   corrupt: an object or file failed verification
8   rebuild-failed: a forget's index swap failed; the marker was rolled back
9   blocked-non-converged: a forget is recorded but the index still holds it
10  blocked: a memory write failed a check after touching the folder (rolled back)
==  ===========================================================

Every error class of the library is here, so this is the one list of exit codes.
"""

from __future__ import annotations


class HistError(Exception):
    """Base of every error the library raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message

    def line(self) -> str:
        """The one line every front end gives for it (the CLI on stderr, the MCP
        server as a tool error): ``hs: error: <message>; hint: <what to do>``."""
        hint = f"; hint: {self.hint}" if self.hint else ""
        return f"hs: error: {self.message}{hint}"


class BadInput(HistError):
    exit_code = 2


class NoStore(HistError):
    exit_code = 3


class UnsupportedStore(NoStore):
    """A store of a format version this hs does not read."""


class NotFound(HistError):
    exit_code = 4


class PurgedObject(NotFound):
    """An object a purge removed was asked for (exit 4): a hole, not damage."""

    def __init__(self, object_id: str) -> None:
        super().__init__(f"object {object_id} was purged", hint="see hs purge --list")
        self.object_id = object_id


class Ambiguous(BadInput):
    def __init__(self, message: str, candidates: list[str], *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.candidates = candidates


class Conflict(HistError):
    exit_code = 5


class Locked(HistError):
    exit_code = 6


class CorruptObject(HistError):
    exit_code = 7

    def __init__(self, object_id: str, reason: str) -> None:
        super().__init__(f"object {object_id} is corrupt: {reason}")
        self.object_id = object_id
        self.reason = reason


class CorruptStore(HistError):
    exit_code = 7


class Unconfirmed(BadInput):
    """The confirmation does not name the resolved target (exit 2)."""


class RebuildFailed(HistError):
    """A forget, unforget or undo could not swap the recall index; the marker
    change was rolled back and the previous generation serves."""

    exit_code = 8


class NotConverged(HistError):
    """A forget stands but the index could not be brought to hide it."""

    exit_code = 9


class WriteBlocked(HistError):
    """A memory write failed a check after it touched the directory (exit 10)."""

    exit_code = 10
