"""Three-way merge: the one rule every merge in histstore follows.

Sync merges session revisions field by field and memory revisions file by
file; a memory folder merges what a sync brought with its own edits; an index
file merges entry by entry. Each is the same decision over a value on two
sides and their common base:

* both sides agree, or only ``ours`` changed it: ``ours``;
* only ``theirs`` changed it: ``theirs``;
* both changed it differently: a *conflict*, settled by the caller's explicit
  policy (``resolve``), and reported as one.

``None`` stands for "absent" (a file deleted, a field unset), so a deletion
is a change like any other; :func:`deletion_loses` is the policy that keeps
the side that still has the value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import TypeVar

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)


def merge3(ours: T, theirs: T, base: T, resolve: Callable[[T, T], T]) -> tuple[T, bool]:
    """(the merged value, whether both sides changed it differently)."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    return resolve(ours, theirs), True


def deletion_loses(ours: T | None, theirs: T | None) -> T | None:
    """Conflict policy: ``ours``, unless ours deleted it and theirs changed it."""
    return ours if ours is not None else theirs


def keep(value: T) -> Callable[[T, T], T]:
    """Conflict policy: a value the caller chose beforehand (a tie-break)."""
    return lambda _ours, _theirs: value


def merge3_keyed(
    ours: Mapping[K, T],
    theirs: Mapping[K, T],
    base: Mapping[K, T],
    resolve: Callable[[T | None, T | None], T | None],
    keys: list[K] | None = None,
) -> tuple[dict[K, T], list[K]]:
    """Every key merged with :func:`merge3` (absent keys are None): (the merged
    mapping without the keys that end absent, the conflicting keys), in the
    order of ``keys`` (default: every key of the three, sorted)."""
    order = keys if keys is not None else sorted({*ours, *theirs, *base})  # type: ignore[type-var]
    out: dict[K, T] = {}
    conflicts: list[K] = []
    for k in order:
        value, clash = merge3(ours.get(k), theirs.get(k), base.get(k), resolve)
        if value is not None:
            out[k] = value
        if clash:
            conflicts.append(k)
    return out, conflicts
