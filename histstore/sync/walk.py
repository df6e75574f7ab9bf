"""The object graph a sync copies: what one side lacks, children before parents.

A walk starts at ref values, follows every object's ``refs()``
(histstore.store.kinds) and stops at each object the receiving side already
has, emitting objects children first so that none is written before what it
names. It holds ids, not payloads, beyond a small budget.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from histstore.errors import CorruptObject, NotFound
from histstore.store.codec import canonical_json, decode_json, hash_object
from histstore.store.kinds import refs_of
from histstore.store.objectstore import ObjectStore


def children(object_id: str, kind: str, payload: bytes) -> list[str]:
    """The ids an object refers to (the objects a copy must bring with it),
    parent revisions last (:func:`walk_missing` relies on it): the object
    kind's own ``refs()``, which fsck checks too."""
    return [r.id for r in refs_of(object_id, kind, payload)]


class _Presence:
    """Whether the receiving store has an object: ``has`` per id, until many
    misses show a big transfer (a first sync); then one listing of its ids."""

    LIST_AFTER = 2000

    def __init__(
        self, objects: ObjectStore, *, skip: frozenset[str] | set[str] = frozenset()
    ) -> None:
        self.objects = objects
        self.ids: set[str] | None = None
        self.misses = 0
        #: ids a purge removed: never sent, never read (what names one keeps a hole)
        self.skip = skip

    def has(self, object_id: str) -> bool:
        if object_id in self.skip:
            return True
        if self.ids is not None:
            return object_id in self.ids
        if self.objects.has(object_id):
            return True
        self.misses += 1
        if self.misses >= self.LIST_AFTER:
            self.ids = set(self.objects.iter_ids())
            return object_id in self.ids
        return False

    def add(self, object_id: str) -> None:
        if self.ids is not None:
            self.ids.add(object_id)


@dataclass
class Moved:
    """Objects and bytes copied one way."""

    objects: int = 0
    bytes: int = 0

    def as_json(self) -> dict[str, int]:
        return {"objects": self.objects, "bytes": self.bytes}


class _Source(Protocol):
    def get(self, object_id: str) -> tuple[str, bytes]: ...


class _Has(Protocol):
    def has(self, object_id: str) -> bool: ...


HOLD_BYTES = 8 << 20  # payloads a walk keeps on its stack; beyond, it reads again


def walk_missing(
    src: _Source,
    dst: _Has,
    roots: list[str],
    emit: Callable[[str, str, bytes], None],
    progress: Callable[[], None] | None = None,
    *,
    hold: int | None = None,
) -> None:
    """Every object reachable from ``roots`` that ``dst`` lacks, children before
    parents (so an interrupted copy never leaves an object without what it
    names), each passed to ``emit`` once.

    Memory stays bounded however long the history: an object with no
    children is emitted as soon as it is read; one with children waits on the
    stack by id, keeping its payload only while the payloads kept total at
    most ``hold`` bytes (:data:`HOLD_BYTES`), else read again when emitted. Its
    children are entered in the order :func:`children` lists them, parent
    revisions last, so a frame descending a revision chain has no sibling ids
    left to keep: a session recorded a turn at a time (a chain of thousands
    of revisions, each naming every turn) is walked in memory linear in its
    length, not quadratic."""
    budget = HOLD_BYTES if hold is None else hold
    held = 0
    seen: set[str] = set()
    # (id, kind, payload or None when not kept, children left to enter, reversed)
    stack: list[tuple[str, str, bytes | None, list[str]]] = []

    def enter(oid: str) -> None:
        nonlocal held
        if oid in seen:
            return
        seen.add(oid)
        if dst.has(oid):
            return
        kind, payload = src.get(oid)
        kids = children(oid, kind, payload)
        if not kids:
            emit(oid, kind, payload)
            return
        keep = held + len(payload) <= budget
        held += len(payload) if keep else 0
        stack.append((oid, kind, payload if keep else None, kids[::-1]))

    for root in roots:
        enter(root)
        while stack:
            oid, kind, payload, kids = stack[-1]
            if kids:
                enter(kids.pop())
                continue
            stack.pop()
            if payload is None:
                again, payload = src.get(oid)
                if again != kind:
                    raise CorruptObject(oid, f"was a {kind}, read again as a {again}")
            else:
                held -= len(payload)
            emit(oid, kind, payload)
        if progress is not None:
            progress()


class Objects:
    """Reads an object from whichever of the stores has it (a merge reads both
    sides' histories), and keeps the objects a merge makes until they are
    written."""

    def __init__(self, *stores: ObjectStore) -> None:
        self.stores = stores
        self.made: dict[str, tuple[str, bytes]] = {}

    def get(self, object_id: str) -> tuple[str, bytes]:
        if object_id in self.made:
            return self.made[object_id]
        for s in self.stores:
            with contextlib.suppress(NotFound):
                return s.get(object_id)
        raise NotFound(f"no object {object_id} on either side")

    def json(self, object_id: str, kind: str) -> Any:
        k, payload = self.get(object_id)
        if k != kind:
            raise CorruptObject(object_id, f"expected a {kind}, found a {k}")
        return decode_json(object_id, payload)

    def make(self, kind: str, obj: Any) -> str:
        return self.make_raw(kind, canonical_json(obj))

    def make_blob(self, data: bytes) -> str:
        return self.make_raw("blob", data)

    def make_raw(self, kind: str, payload: bytes) -> str:
        oid = hash_object(kind, payload)
        self.made[oid] = (kind, payload)
        return oid


class _Made:
    """The objects a merge made, read like a store, to be written children
    first; what they name that no merge made is in the store already."""

    def __init__(self, objs: Objects, dst: ObjectStore) -> None:
        self.made = objs.made
        self.dst = dst

    def get(self, object_id: str) -> tuple[str, bytes]:
        return self.made[object_id]

    def has(self, object_id: str) -> bool:
        return object_id not in self.made or self.dst.has(object_id)
