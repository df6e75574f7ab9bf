"""What a gc would do (histstore.ops.gc, step 2): which packs it rewrites
and which it keeps, geometric, and which objects the new pack keeps."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from histstore.errors import CorruptObject, CorruptStore
from histstore.store.objectstore import DiskObjectStore
from histstore.store.packs import Pack

#: a kept pack with at least this share of garbage is rewritten
GARBAGE_SHARE = 0.25
#: the geometric factor: a kept pack is at least this many times the next smaller
FACTOR = 2


def mtime_of(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return None


def size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def unreadable(object_id: str, why: str, who: str = "gc") -> CorruptStore:
    done = "gc" if who == "gc" else f"the {who}"
    return CorruptStore(
        f"{who} stopped: object {object_id} cannot be read ({why}), so what it reaches is unknown",
        hint=f"run `hs fsck` (and `hs fsck --repair`); {done} removed nothing",
    )


@dataclass
class Plan:
    """What a gc would do: the packs to rewrite (the rest stay), the loose
    objects, and which of their objects the new pack keeps."""

    rewrite: list[Pack]
    kept_packs: list[Pack]
    loose: list[str]
    keep: set[str]
    drop: int
    made: float  # when the plan was made: a file touched since is checked again
    #: packs some object of which goes (a purged one aside)
    dropped_from: set[str] = field(default_factory=set)
    #: objects a file that goes holds whose copy in a kept pack is the one left
    relied: set[str] = field(default_factory=set)
    #: purged objects stored again that go, however fresh their file
    purged: set[str] = field(default_factory=set)


def geometric_split(sizes: list[int], rolled: int) -> int:
    """How many of the packs (sizes ascending) to roll up with ``rolled``
    bytes of loose objects, so the packs left and the new one grow by at
    least ``FACTOR`` each (git's ``repack --geometric``)."""
    n = len(sizes)
    split = 0
    # from the largest down, the longest run that already is a progression
    for i in range(n - 1, 0, -1):
        if sizes[i] < FACTOR * sizes[i - 1]:
            split = i
            break
    total = rolled + sum(sizes[:split])
    while split < n and sizes[split] < FACTOR * total:
        total += sizes[split]
        split += 1
    return split


def plan(
    objects: DiskObjectStore,
    reachable: set[str],
    *,
    threshold: float,
    made: float,
    full: bool,
    prune: bool,
    purged: frozenset[str] = frozenset(),
    heal: frozenset[str] = frozenset(),
) -> Plan:
    """Which packs to rewrite and what the new pack keeps: whatever is reachable
    or in a file touched after ``threshold`` (everything, when not pruning).
    ``heal``: packs to rewrite whatever their size (a damaged frame in them)."""
    packs = sorted(objects.packs(), key=lambda p: (p.pack_path.stat().st_size, p.name))
    loose = list(objects.iter_loose())
    in_kept: set[str] = set()

    def fresh(path: Path) -> bool:
        m = mtime_of(path)
        return m is None or m > threshold

    def wanted(object_id: str, fresh_file: bool) -> bool:
        if prune and object_id in purged:
            return False  # written again after its purge (a racing import): it goes
        return not prune or object_id in reachable or fresh_file

    kept: list[Pack] = []
    if full:
        rewrite = packs
    else:
        rolled = sum(size_of(objects._loose_path(i)) for i in loose)
        split = geometric_split([p.pack_path.stat().st_size for p in packs], rolled)
        rewrite = packs[:split]
        for p in packs[split:]:
            garbage = 0
            if p.name in heal:
                rewrite.append(p)  # its damaged copy replaced by a whole one
                continue
            if prune and purged and any(i in purged for i in p.ids()):
                rewrite.append(p)  # a purged object stored again goes, however fresh
                continue
            if prune and not fresh(p.pack_path):
                garbage = sum(1 for i in p.ids() if i not in reachable)
            if p.n and garbage / p.n >= GARBAGE_SHARE:
                rewrite.append(p)
            else:
                kept.append(p)
    for p in kept:
        in_kept.update(p.ids())
    keep: set[str] = set()
    dropped: set[str] = set()
    dropped_from: set[str] = set()
    relied: set[str] = set()
    for p in rewrite:
        fresh_pack = fresh(p.pack_path)
        for i in p.ids():
            if i in in_kept:
                relied.add(i)
                continue
            if wanted(i, fresh_pack):
                keep.add(i)
            else:
                dropped.add(i)
                if i not in purged:  # (a purged one goes however fresh its pack)
                    dropped_from.add(p.name)
    for i in loose:
        if i in in_kept:
            relied.add(i)
            continue
        if wanted(i, fresh(objects._loose_path(i))):
            keep.add(i)
        else:
            dropped.add(i)
    dropped -= keep  # an object two files held, one of them fresh
    relied -= purged if prune else set()
    plan = Plan(rewrite, kept, loose, keep, len(dropped), made, dropped_from, relied)
    plan.purged = (dropped & purged) if prune else set()
    return plan


def check_relied(objects: DiskObjectStore, p: Plan) -> frozenset[str]:
    """Every object whose other copy goes must read back whole from the kept
    pack that holds it: the packs where it does not, while another copy of it
    is whole (the one about to go), are to be rewritten with that copy (gc
    plans again); with no whole copy anywhere gc stops before anything goes."""
    heal: set[str] = set()
    for object_id in sorted(p.relied):
        raw = bytes.fromhex(object_id)
        for pack in p.kept_packs:
            hit = pack.entry(raw)
            if hit is None:
                continue
            try:
                objects.codec.decode(object_id, pack.read(raw, *hit), pack.decompressor)
            except CorruptObject as e:
                if objects.whole_copy(object_id, besides=pack.name) is None:
                    raise unreadable(object_id, f"its copy in {pack.name}: {e.reason}") from None
                heal.add(pack.name)
            break
    return frozenset(heal)
