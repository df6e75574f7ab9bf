"""``hs gc``: repack what piled up, remove what nothing reaches.

Three things, under the store's lock, in an order that leaves the store whole
wherever it is killed (restic's: the new pack is durable before anything it
replaces goes):

1. **Mark.** What must stay: every object a ref reaches, or a refs-log entry
   inside the retention window (``[gc] retention_days``, 90 by default: what
   ``hs undo`` can bring back within it), or a memory folder's base; and, so
   that a writer outside the lock never loses what it is about to name, every
   object written or reused (freshened) within the grace period (``[gc]
   grace_seconds``, an hour) — with what those reach.
2. **Repack, geometric.** Loose objects and the small packs are rewritten into
   one new pack with a trained dictionary, leaving the packs whose sizes
   already grow geometrically (each at least twice the next smaller one) as
   they are: a daily gc rewrites about what is new, not the store. A kept pack
   of which a quarter or more is garbage is rewritten too; ``--full`` rewrites
   everything into one pack. What a rewrite leaves out is what is removed.
3. **Swap.** The new pack and then the multi-pack index are made durable, then
   the packs and loose objects they replace are removed — each file checked
   again just before, so one freshened since the plan stays. Then the recall
   index is compacted (``histstore.recall.index.compact``: the segments holding
   deleted documents rewritten, the older generations deleted, so an excluded
   turn's text leaves the index files) and loose refs are packed.

``--dry-run`` plans and says what it would free; nothing is written.
``hs gc --auto`` (run by import and record) only repacks, and only when loose
objects pass ``[gc] auto_loose`` (estimated from one fan-out folder, as git
does), so it costs nothing most of the time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, CorruptObject, NotFound
from histstore.ops.gc_plan import Plan, check_relied, mtime_of, plan, size_of, unreadable
from histstore.recall.index import compact as compact_index
from histstore.store import packs, repack
from histstore.store.codec import is_object_id
from histstore.store.kinds import parse
from histstore.store.objectstore import DiskObjectStore
from histstore.store.packs import Pack
from histstore.store.store import Store

#: defaults of ``[gc]`` in config.toml
RETENTION_DAYS = 90
GRACE_SECONDS = 3600
AUTO_LOOSE = 1000
#: seconds by which a file's mtime may lag the clock gc reads
MTIME_SLACK = 2.0


@dataclass(frozen=True)
class Settings:
    """The ``[gc]`` settings: retention, grace and the automatic threshold."""

    retention_days: int = RETENTION_DAYS
    grace_seconds: int = GRACE_SECONDS
    auto_loose: int = AUTO_LOOSE

    @classmethod
    def of(cls, store: Store) -> Settings:
        """``[gc]`` of the store's config, each a whole number ≥ 0."""
        section = store.config.get("gc", {})
        if not isinstance(section, dict):
            raise BadInput("config.toml: [gc] must be a table", hint="see docs/cli.md, hs gc")
        values: dict[str, int] = {}
        for key, default in (
            ("retention_days", RETENTION_DAYS),
            ("grace_seconds", GRACE_SECONDS),
            ("auto_loose", AUTO_LOOSE),
        ):
            v = section.get(key, default)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise BadInput(
                    f"config.toml: [gc] {key} = {v!r} is not a whole number ≥ 0",
                    hint=f"e.g. {key} = {default}",
                )
            if key != "auto_loose" and not _fits_in_time(key, v):
                raise BadInput(
                    f"config.toml: [gc] {key} = {v} reaches before year 1",
                    hint=f"e.g. {key} = {default}",
                )
            values[key] = v
        return cls(**values)


def _fits_in_time(key: str, value: int) -> bool:
    """Whether a window of ``value`` days (or seconds) back from now stays
    within the dates there are."""
    try:
        span = timedelta(days=value) if key == "retention_days" else timedelta(seconds=value)
        datetime.now(UTC) - span
    except OverflowError:
        return False
    return True


@dataclass
class GcReport:
    """What a gc freed, packed and kept (or would, on a dry run)."""

    dry_run: bool
    objects_before: int = 0
    reachable: int = 0
    pruned: int = 0  # objects removed (or that would be)
    loose_packed: int = 0  # loose objects now in a pack (or that would be)
    packs_before: int = 0
    packs_after: int = 0
    packs_rewritten: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    index_bytes_freed: int = 0
    refs_packed: int = 0
    kept_fresh: list[str] = field(default_factory=list)  # files freshened during gc

    @property
    def bytes_freed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after) + self.index_bytes_freed

    def as_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "objects_before": self.objects_before,
            "reachable": self.reachable,
            "pruned": self.pruned,
            "loose_packed": self.loose_packed,
            "packs_before": self.packs_before,
            "packs_after": self.packs_after,
            "packs_rewritten": self.packs_rewritten,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "bytes_freed": self.bytes_freed,
            "index_bytes_freed": self.index_bytes_freed,
            "refs_packed": self.refs_packed,
        }


Progress = Callable[[str, int, int], None]  # (phase, done, total)


def _window_roots(store: Store, since: datetime) -> set[str]:
    """Every id a ref held at some moment inside the window: the old and new
    side of every change logged since ``since`` (a ref's value at a moment is
    its value now with the later changes undone, each of which names it)."""
    out: set[str] = set()
    cut = since.strftime("%Y-%m-%dT%H:%M:%S")
    for op in store.refs.newest_first():
        if op.time[:19] < cut:
            break
        for c in op.changes:
            out.update(v for v in (c.old, c.new) if v)
    return out


def _base_roots(store: Store) -> set[str]:
    from histstore.memory.folders import BASE_DIR  # hs capture asks gc_due without yaml

    out: set[str] = set()
    base = store.root / BASE_DIR
    if base.is_dir():
        for f in base.iterdir():
            try:
                words = f.read_text("utf-8").split()
            except (OSError, UnicodeDecodeError):
                continue
            if words and is_object_id(words[0]):
                out.add(words[0])
    return out


def roots(store: Store, settings: Settings, now: datetime) -> set[str]:
    """What gc keeps, and what it reaches: refs, the refs log inside the
    retention window, the memory folders' bases."""
    out = set(store.refs.list_refs().values())
    out |= _window_roots(store, now - timedelta(days=settings.retention_days))
    out |= _base_roots(store)
    return out


def mark(
    store: Store,
    start: Iterable[str],
    progress: Progress | None = None,
    *,
    skip: Iterable[str] = (),
    who: str = "gc",
) -> set[str]:
    """Every id reachable from ``start``, each object read once (blobs never):
    one that cannot be read stops ``who`` (gc, a purge) — nothing may go."""
    seen: set[str] = set()
    # a purged id is a hole: what names it stays, it is never read (hs purge)
    purged = store.purged_ids() | set(skip)
    todo = [i for i in start if is_object_id(i) and i not in purged]
    kinds: dict[str, str | None] = dict.fromkeys(todo)
    while todo:
        object_id = todo.pop()
        if object_id in seen:  # (purged ids are never pushed)
            continue
        seen.add(object_id)
        if kinds.get(object_id) == "blob":
            if not store.objects.has(object_id):
                raise unreadable(object_id, "it is missing", who)
            continue
        try:
            obj = parse(object_id, *store.objects.get(object_id))
        except NotFound:
            raise unreadable(object_id, "it is missing", who) from None
        except CorruptObject as e:
            raise unreadable(object_id, e.reason, who) from None
        for ref in obj.refs():
            if ref.id not in seen and ref.id not in purged:
                kinds[ref.id] = ref.kind
                todo.append(ref.id)
        if progress is not None and len(seen) % 5000 == 0:
            progress("marking", len(seen), 0)
    return seen


def _pack_bytes(p: Pack) -> int:
    return size_of(p.pack_path) + size_of(p.idx_path)


def gc(
    store: Store,
    *,
    dry_run: bool = False,
    full: bool = False,
    prune: bool = True,
    now: datetime | None = None,
    progress: Progress | None = None,
    step: Callable[[str], None] | None = None,
) -> GcReport:
    """Mark, repack and swap (module docstring). ``step`` is told each write
    step's name before it is taken (the crash-point tests kill there)."""
    objects = store.objects
    if not isinstance(objects, DiskObjectStore):
        raise BadInput("this store keeps its objects in memory: nothing to collect")
    settings = Settings.of(store)
    now = now or datetime.now(UTC)
    report = GcReport(dry_run=dry_run)
    with store.lock():
        # (less a margin: file times come from the kernel's coarse clock,
        # which may lag time.time() by a tick)
        made = time.time() - MTIME_SLACK
        # grace is judged at ``now`` (a test's "a day later"); a file touched
        # after ``made`` is checked again before it goes
        threshold = now.timestamp() - settings.grace_seconds
        packs_before = objects.packs()
        report.packs_before = len(packs_before)
        loose_before = list(objects.iter_loose())
        report.bytes_before = sum(_pack_bytes(p) for p in packs_before) + sum(
            size_of(objects._loose_path(i)) for i in loose_before
        )
        report.objects_before = objects.count()
        reachable: set[str] = set()
        if prune:
            fresh = _fresh_objects(objects, threshold)
            reachable = mark(store, roots(store, settings, now) | fresh, progress)
            report.reachable = len(reachable)
        p = _plan_healed(
            objects,
            reachable,
            threshold=threshold,
            made=made,
            full=full,
            prune=prune,
            purged=store.purged_ids(),
        )
        report.pruned = p.drop
        report.loose_packed = sum(1 for i in p.loose if i in p.keep)
        report.packs_rewritten = len(p.rewrite)
        if dry_run:
            new_bytes = _estimate(objects, p)
            report.packs_after = len(p.kept_packs) + (1 if p.keep else 0)
            report.bytes_after = sum(_pack_bytes(k) for k in p.kept_packs) + new_bytes
            return report
        if prune and p.drop:
            # before anything goes: fsck and undo know why an older entry's
            # objects may be missing
            window = now - timedelta(days=settings.retention_days)
            store.set_gc_horizon(window.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
        _swap(store, objects, p, report, step, progress, thorough=full)
        if step:
            step("index")
        index_dir = store.root / "index"
        before = _dir_bytes(index_dir)
        compact_index(store)
        report.index_bytes_freed = max(0, before - _dir_bytes(index_dir))
        if step:
            step("refs")
        report.refs_packed = store.refs.pack()
    after = objects.packs()
    report.packs_after = len(after)
    report.bytes_after = sum(_pack_bytes(q) for q in after) + sum(
        size_of(objects._loose_path(i)) for i in objects.iter_loose()
    )
    return report


def _plan_healed(objects: DiskObjectStore, reachable: set[str], **kw: Any) -> Plan:
    """:func:`plan`, with every kept pack whose copy of an object the plan
    relies on is damaged rewritten too, from the whole copy."""
    heal: frozenset[str] = frozenset()
    while True:
        p = plan(objects, reachable, heal=heal, **kw)
        damaged = check_relied(objects, p)
        if damaged <= heal:
            return p
        heal |= damaged


def _fresh_objects(objects: DiskObjectStore, threshold: float) -> set[str]:
    """Objects in files written or freshened after ``threshold``: roots, so a
    writer's objects and all they name stay until it commits."""
    out: set[str] = set()
    for p in objects.packs():
        m = mtime_of(p.pack_path)
        if m is None or m > threshold:
            out.update(p.ids())
    for i in objects.iter_loose():
        m = mtime_of(objects._loose_path(i))
        if m is None or m > threshold:
            out.add(i)
    return out


def _estimate(objects: DiskObjectStore, p: Plan) -> int:
    """The new pack's size with its index, guessed from the frames it would
    copy (their compression now; a dictionary makes them smaller)."""
    if not p.keep:
        return 0
    total = len(packs.pack_header()) + packs.index_size(len(p.keep))
    sizes: dict[str, int] = {}
    for pack in p.rewrite:
        for raw, _, length in pack.entries():
            sizes.setdefault(raw.hex(), length)
    for i in p.loose:
        sizes.setdefault(i, size_of(objects._loose_path(i)))
    for i in p.keep:
        total += sizes.get(i, 0)
    return total


def _swap(
    store: Store,
    objects: DiskObjectStore,
    p: Plan,
    report: GcReport,
    step: Callable[[str], None] | None,
    progress: Progress | None,
    *,
    force: bool = False,
    thorough: bool = False,
) -> None:
    """The new pack and the multi-pack index durable, then what they replace
    removed. ``force`` (hs purge): nothing replaced is spared for having been
    freshened since the plan — what a purge removes must go. ``thorough``
    (``--full``): the new pack compressed as small as repack.FULL_LEVEL makes it."""
    total = len(p.keep)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress("writing", done, total)

    if step:
        step("pack")
    level, dict_size = (
        (repack.FULL_LEVEL, repack.FULL_DICT_SIZE) if thorough else (repack.LEVEL, repack.DICT_SIZE)
    )
    written = (
        repack.write_pack(objects, p.keep, level=level, dict_size=dict_size, progress=tick)
        if p.keep
        else None
    )
    new = [q for q in objects.packs() if written is not None and q.name == written.name]
    if step:
        step("midx")
    repack.write_midx(objects, p.kept_packs + new)
    for old in p.rewrite:
        if written is not None and old.name == written.name:
            continue  # the rewrite gave the same pack back
        m = mtime_of(old.pack_path)
        if not force and old.name in p.dropped_from and m is not None and m > p.made:
            # freshened since the plan: a writer may be about to name an
            # object only this pack holds
            report.kept_fresh.append(old.pack_path.name)
            continue
        if step:
            step("remove-pack")
        repack.remove_pack(old)
    gone = []
    for i in p.loose:
        m = mtime_of(objects._loose_path(i))
        if not force and m is not None and m > p.made and i not in p.keep and i not in p.purged:
            report.kept_fresh.append(i)
            continue
        gone.append(i)
    if gone:
        if step:
            step("remove-loose")
        repack.remove_loose(objects, gone)
    objects._scan_packs()


def remove_objects(
    store: Store, drop: set[str], step: Callable[[str], None] | None = None
) -> tuple[int, int]:
    """Every object of ``drop`` out of the store's files (``hs purge``), by
    gc's swap: each pack holding one is rewritten without it (its other
    objects, reachable or not, into one new pack with a dictionary trained on
    them), the multi-pack index rewritten, then the old packs and each loose
    copy removed, in gc's order. Unlike gc nothing is spared for having been
    freshened. Lock held. Returns (objects removed, packs rewritten)."""
    objects = store.objects
    if not isinstance(objects, DiskObjectStore) or not drop:
        return 0, 0
    raws = [bytes.fromhex(i) for i in sorted(drop)]
    packs = objects.packs()
    rewrite = [p for p in packs if any(p.has(r) for r in raws)]
    kept = [p for p in packs if p not in rewrite]
    loose = [i for i in sorted(drop) if objects._loose_path(i).exists()]
    keep: set[str] = set()
    gone: set[str] = set(loose)
    for p in rewrite:
        for i in p.ids():
            (gone if i in drop else keep).add(i)
    if not rewrite and not loose:
        return 0, 0
    names = {p.name for p in rewrite}
    pl = Plan(rewrite, kept, loose, keep, len(gone), time.time(), names)
    _swap(store, objects, pl, GcReport(dry_run=False), step, None, force=True)
    return len(gone), len(rewrite)


def _dir_bytes(path: Path) -> int:
    return sum(size_of(Path(d) / name) for d, _, files in os.walk(path) for name in files)


def loose_estimate(objects: DiskObjectStore) -> int:
    """About how many loose objects there are: one fan-out folder's count
    times 256 (git's ``gc --auto`` estimate), cheap at any size."""
    d = objects.root / "17"
    try:
        n = sum(1 for f in os.scandir(d) if len(f.name) == 62)
    except FileNotFoundError:
        return 0
    return n * 256


def auto_due(store: Store) -> bool:
    """Whether ``hs gc --auto`` would repack now (loose objects past
    ``[gc] auto_loose``): cheap, one fan-out folder listed."""
    objects = store.objects
    if not isinstance(objects, DiskObjectStore):
        return False
    settings = Settings.of(store)
    return settings.auto_loose != 0 and loose_estimate(objects) >= settings.auto_loose


def auto(store: Store, step: Callable[[str], None] | None = None) -> GcReport | None:
    """``hs gc --auto``: repack (no pruning) once loose objects pass
    ``[gc] auto_loose``; None when there was nothing to do."""
    if not auto_due(store):
        return None
    return gc(store, prune=False, step=step)
