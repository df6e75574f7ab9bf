"""``hs upgrade``: a format-1 store rewritten as format 2, in place, nothing lost.

Every object a format-1 store holds that a ref or the refs log reaches is
rewritten as format 2 says (docs/format.md, "Changes per format version"):

- a turn loses ``source`` (kept beside it, in the local source table), and is
  encoded as RFC 8785; its blobs keep their ids (their bytes do not change);
- a session revision lists every turn (format 1); as format 2 it holds the
  turns that differ from its parent's (a *delta*), or all of them when it has
  no parent, two, or drops a turn; ``parent``/``merged`` become ``parents``,
  each turn entry gains the turn's own ``project``;
- a marker's ``ts`` becomes ``time``, ``parent``/``merged`` ``parents``; a
  turn's overlay ref is named ``<session>~<turn>``;
- a memory tree and revision are re-encoded (the tree and parents mapped);
- every ref and refs-log entry names the new ids; each operation gets the id
  its rewritten entry derives (the chain of parents kept), ``undoes`` too.

The old ids stay resolvable through ``format-1/`` (histstore.store.upgrading).
Crash safety: the new store is built and made durable in ``.upgrade/new``
while the old one is untouched; the commit record then names what moves, and
the move (store.upgrading.finish) is repeated by whoever opens the store next
until it is done. Killed anywhere, the store is the format-1 store it was, or
the format-2 store it became.
"""

from __future__ import annotations

import json
import os
import re
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock

from histstore.errors import BadInput, CorruptObject, CorruptStore, HistError, NotFound
from histstore.history.sources import PendingSources, Sources
from histstore.memory.folders import BASE_DIR
from histstore.store import upgrading
from histstore.store.codec import canonical_json, decode_json, is_object_id
from histstore.store.config import CONFIG_NAME, FORMAT_VERSION, write_config
from histstore.store.fsutil import atomic_write, fsync_dir
from histstore.store.kinds import TURN_SEPARATOR, TurnEntry, blob_refs, ordered
from histstore.store.locking import acquire, clear_owner, write_owner
from histstore.store.objectstore import Batch, DiskObjectStore
from histstore.store.oplog import Operation, RefChange, read_log
from histstore.store.refs import PACKED_HEADER, PACKED_NAME, RefStore
from histstore.store.store import Store, lock_timeout
from histstore.store.views import write_views

#: what a format-2 store holds at its top, each moved in by the commit
ENTRIES = (
    "objects",
    "refs",
    PACKED_NAME,
    "refs.log",
    "refs.applied",
    "overlay",
    BASE_DIR,
    "local",
    "index",
    "gc-horizon",
    upgrading.MAP_DIR,
)


@dataclass
class UpgradeReport:
    """What an upgrade rewrote, counted by kind."""

    already: bool = False
    objects: int = 0  # objects rewritten
    turns: int = 0
    sessions: int = 0
    revisions: int = 0
    markers: int = 0
    memory_revisions: int = 0
    operations: int = 0
    refs: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "already": self.already,
            "objects": self.objects,
            "turns": self.turns,
            "sessions": self.sessions,
            "revisions": self.revisions,
            "markers": self.markers,
            "memory_revisions": self.memory_revisions,
            "operations": self.operations,
            "refs": self.refs,
            "seconds": round(self.seconds, 3),
        }


def _format_of(root: Path) -> int | None:
    try:
        config = tomllib.loads((root / CONFIG_NAME).read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CorruptStore(f"{root / CONFIG_NAME} is not valid TOML: {e}") from None
    v = config.get("store", {}).get("format")
    return v if isinstance(v, int) else None


def upgrade(
    root: Path,
    *,
    progress: Callable[[str, int], None] | None = None,
) -> UpgradeReport:
    """Upgrade the store at ``root`` in place (module docstring)."""
    started = time.monotonic()
    report = UpgradeReport()
    version = _format_of(root)
    if version is None and not upgrading.committed(root):
        raise BadInput(f"no store at {root}", hint="point --store at a store")
    if upgrading.committed(root) or version == FORMAT_VERSION:
        # a committed upgrade is finished by opening the store
        Store.open(root).close()
        report.already = True
        upgrading.remove_leftovers(root)
        return report
    if version != 1:
        raise BadInput(
            f"the store at {root} has format version {version!r}; hs upgrade upgrades format 1",
            hint="use the hs release that wrote it",
        )
    lock = filelock.FileLock(str(root / "lock"))
    acquire(lock, root, lock_timeout(), None)
    try:
        write_owner(root)
        upgrading.remove_leftovers(root)  # an upgrade stopped before it committed
        try:
            _Builder(root, report, progress).build()
        except HistError:
            if not upgrading.committed(root):
                upgrading.remove_leftovers(root)  # refused: nothing was changed, nothing left
            raise
        upgrading.finish(root)
    finally:
        clear_owner(root)
        lock.release()
    report.seconds = time.monotonic() - started
    return report


#: an overlay ref, or a remote's tracking ref of one: (remotes/<r>/)?overlay/<name>
_OVERLAY_REF = re.compile(r"(remotes/[^/]+/)?overlay/(.+)")


class _Builder:
    def __init__(
        self, root: Path, report: UpgradeReport, progress: Callable[[str, int], None] | None
    ) -> None:
        self.root = root
        self.report = report
        self.progress = progress
        self.old = DiskObjectStore(root / "objects", legacy_packs=True)
        self.old_refs = RefStore(root)
        self.new_root = root / upgrading.UPGRADE_DIR / upgrading.NEW
        self.ids: dict[str, str] = {}  # old object id -> new
        #: where each turn came from, for the new store's source table
        self.sources = PendingSources(self.new_root / "local")
        self.batch: Batch | None = None
        self.new: Store | None = None

    # ------------------------------------------------------------ reading f1

    def _get(self, object_id: str, kind: str) -> Any:
        try:
            k, payload = self.old.get(object_id)
        except NotFound:
            raise CorruptStore(
                f"cannot upgrade: object {object_id} ({kind}) is missing",
                hint="the store was damaged before the upgrade: run hs fsck with the hs "
                "release that wrote it; nothing was changed",
            ) from None
        except CorruptObject as e:
            raise CorruptStore(
                f"cannot upgrade: {e}", hint="nothing was changed; see hs fsck"
            ) from None
        if k != kind:
            raise CorruptStore(f"cannot upgrade: object {object_id} is a {k}, not a {kind}")
        return decode_json(object_id, payload) if kind != "blob" else payload

    def _put(self, kind: str, value: Any) -> str:
        assert self.batch is not None
        self.report.objects += 1
        if self.progress and self.report.objects % 1000 == 0:
            self.progress("objects", self.report.objects)
        return self.batch.put(kind, value if kind == "blob" else canonical_json(value))

    def _blob(self, object_id: str) -> str:
        if object_id not in self.ids:
            data = self._get(object_id, "blob")
            self.ids[object_id] = self._put("blob", data)
        return self.ids[object_id]

    # ---------------------------------------------------------- each kind

    def turn(self, object_id: str) -> str:
        if object_id in self.ids:
            return self.ids[object_id]
        d = dict(self._get(object_id, "turn"))
        source = d.pop("source", None)
        for b in blob_refs(d):
            self._blob(b)
        new = self._put("turn", d)
        self.ids[object_id] = new
        if isinstance(source, dict):
            self.sources.append(new, source)
        self.report.turns += 1
        self._projects[new] = d.get("project")
        return new

    _projects: dict[str, Any]

    def _parents_first(
        self,
        root: str,
        kind: str,
        parents_of: Callable[[dict[str, Any]], list[str]],
        rewrite: Callable[[dict[str, Any], list[str]], str],
    ) -> str:
        """``root`` and its history rewritten, parents first, each once
        (``rewrite`` gets the old payload and its parents' new ids). No
        recursion: a session recorded turn by turn has a chain as long as its
        turns."""
        stack = [root]
        while stack:
            at = stack[-1]
            if at in self.ids:
                stack.pop()
                continue
            d = self._get(at, kind)
            parents = parents_of(d)
            todo = [p for p in parents if p not in self.ids]
            if todo:
                stack += todo
                continue
            stack.pop()
            self.ids[at] = rewrite(d, [self.ids[p] for p in parents])
        return self.ids[root]

    def session(self, rev_id: str) -> str:
        """A session revision and its history, parents first."""
        return self._parents_first(
            rev_id,
            "session",
            lambda d: [p for p in (d.get("parent"), d.get("merged")) if p],
            self._session_rev,
        )

    def _session_rev(self, d: dict[str, Any], parents: list[str]) -> str:
        entries = []
        for t in d["turns"]:
            new = self.turn(t["object"])
            entries.append(
                TurnEntry(
                    t["turn_id"], new, t["asked_at"], t.get("subagent"), self._projects.get(new)
                )
            )
        entries = ordered(entries)
        full = len(parents) != 1
        turns = entries
        if not full:
            base = {e.turn_id: e for e in self.session_entries[parents[0]]}
            now = {e.turn_id: e for e in entries}
            if set(base) - set(now):
                full = True  # format 2's deltas only add or replace
            else:
                turns = [e for e in entries if base.get(e.turn_id) != e]
        payload = {
            "session_id": d["session_id"],
            "project": d["project"],
            "agent": d["agent"],
            "title": d.get("title"),
            "parents": sorted(parents),
            "full": full,
            "count": len(entries),
            "turns": [e.as_json() for e in turns],
        }
        new = self._put("session", payload)
        self.session_entries[new] = entries
        self.report.revisions += 1
        return new

    session_entries: dict[str, list[TurnEntry]]

    def marker(self, marker_id: str) -> str:
        def rewrite(d: dict[str, Any], parents: list[str]) -> str:
            payload = {k: v for k, v in d.items() if k not in ("ts", "parent", "merged")}
            payload["time"] = d.get("ts") or d.get("time")
            payload["parents"] = sorted(parents)
            self.report.markers += 1
            return self._put("marker", payload)

        return self._parents_first(
            marker_id,
            "marker",
            lambda d: ([d["parent"]] if d.get("parent") else []) + list(d.get("merged") or []),
            rewrite,
        )

    def memrev(self, rev_id: str) -> str:
        def rewrite(d: dict[str, Any], parents: list[str]) -> str:
            payload = dict(d)
            payload["tree"] = self.memtree(d["tree"])
            payload["parents"] = sorted(parents)
            self.report.memory_revisions += 1
            return self._put("memrev", payload)

        return self._parents_first(
            rev_id, "memrev", lambda d: list(d.get("parents") or []), rewrite
        )

    def memtree(self, tree_id: str) -> str:
        if tree_id not in self.ids:
            d = self._get(tree_id, "memtree")
            files = {name: self._blob(b) for name, b in d["files"].items()}
            self.ids[tree_id] = self._put("memtree", {"files": files})
        return self.ids[tree_id]

    def value(self, ref: str, object_id: str) -> str:
        """The new id of what ref ``ref`` (its namespace) names."""
        if not is_object_id(object_id):
            raise CorruptStore(f"cannot upgrade: ref {ref} does not hold an object id")
        ns = ref.split("/")[0]
        if ns == "sessions" or (ns == "remotes" and "/sessions/" in ref):
            return self.session(object_id)
        if ns == "overlay" or (ns == "remotes" and "/overlay/" in ref):
            return self.marker(object_id)
        if ns == "memory" or (ns == "remotes" and "/memory/" in ref):
            return self.memrev(object_id)
        return self.any(object_id)

    def any(self, object_id: str) -> str:
        if object_id in self.ids:
            return self.ids[object_id]
        kind, _ = self.old.get(object_id)
        handler: dict[str, Callable[[str], str]] = {
            "session": self.session,
            "marker": self.marker,
            "memrev": self.memrev,
            "memtree": self.memtree,
            "turn": self.turn,
            "blob": self._blob,
        }
        return handler[kind](object_id)

    def ref_name(self, name: str, new_value: str) -> str:
        """A turn's overlay ref is named ``<session>~<turn>`` in format 2, and
        so is a remote's tracking ref of one (``remotes/<r>/overlay/…``)."""
        m = _OVERLAY_REF.fullmatch(name)
        if m is None or TURN_SEPARATOR in m.group(2):
            return name
        assert self.new is not None
        d = json.loads(self.new.objects.get(new_value)[1])
        if d.get("target_kind") == "turn" and m.group(2) == d["target"]:
            return f"{m.group(1) or ''}overlay/{d['session']}{TURN_SEPARATOR}{d['target']}"
        return name

    # --------------------------------------------------------------- build

    def build(self) -> None:
        self._projects = {}
        self.session_entries = {}
        self.old_refs.recover()  # a logged operation a crash left: completed first
        new_root = self.new_root
        new_root.mkdir(parents=True)
        (new_root / "objects" / "pack").mkdir(parents=True)
        (new_root / "refs").mkdir()
        config = tomllib.loads((self.root / CONFIG_NAME).read_text("utf-8"))
        config.setdefault("store", {})["format"] = FORMAT_VERSION
        config["store"]["upgraded"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        write_config(new_root, config)
        self.new = Store.open(new_root)
        refs = self.old_refs.list_refs()
        log = [ln.op for ln in read_log(self.root / "refs.log") if ln.op is not None]
        with self.new.objects.batch() as batch:
            self.batch = batch
            new_refs = {}
            for name, value in refs.items():
                nv = self.value(name, value)
                new_refs[name] = nv
            for op in log:
                for c in op.changes:
                    for v in (c.old, c.new):
                        if v:
                            self.value(c.ref, v)
            bases = self._bases()
        self.batch = None
        self.new.close()
        self.new = Store.open(new_root)
        renamed = {name: self.ref_name(name, v) for name, v in new_refs.items()}
        self._write_refs({renamed[n]: v for n, v in new_refs.items()})
        ops = self._write_log(log, renamed)
        self._write_bases(bases)
        write_views(self.new)
        src = Sources(self.new)  # (its file is made only if a turn said where it came from)
        src.record_rows(self.sources)
        src.close()
        self.sources.close()
        (new_root / "index").mkdir(exist_ok=True)  # rebuilt from the new ids on first use
        upgrading.write_map(new_root / upgrading.MAP_DIR, self.ids.items(), ops)
        self.report.sessions = sum(1 for n in new_refs if n.startswith("sessions/"))
        self.report.refs = len(new_refs)
        self.report.operations = len(ops)
        self.new.close()
        self.old.close()
        _sync_tree(new_root)
        move_in = [n for n in ENTRIES if (new_root / n).exists()] + [CONFIG_NAME]
        move_out = [n for n in ENTRIES if (self.root / n).exists() and n not in move_in]
        upgrading.commit(self.root, move_in, move_out)

    def _write_refs(self, refs: dict[str, str]) -> None:
        body = b"".join(f"{v} {k}\n".encode("ascii") for k, v in sorted(refs.items()))
        atomic_write(self.new_root / PACKED_NAME, PACKED_HEADER + b"\n" + body)

    def _write_log(self, log: list[Operation], renamed: dict[str, str]) -> list[tuple[str, str]]:
        """The refs log with every id mapped, each entry's id derived again."""
        ops: list[tuple[str, str]] = []
        op_ids: dict[str, str] = {}
        parent: str | None = None
        lines = []
        for op in log:
            changes = []
            for c in op.changes:
                old = self.ids.get(c.old, c.old) if c.old else None
                new = self.ids.get(c.new, c.new) if c.new else None
                name = renamed.get(c.ref) or self._log_ref_name(c.ref, new or old)
                changes.append(RefChange(name, old, new))
            extra = dict(op.extra)
            if isinstance(extra.get("undoes"), str):
                extra["undoes"] = op_ids.get(extra["undoes"], extra["undoes"])
            entry = Operation("", op.time, op.command, changes, parent, extra)
            entry.op = entry.derive_id()
            op_ids[op.op] = entry.op
            ops.append((op.op, entry.op))
            lines.append(canonical_json(entry.as_json()) + b"\n")
            parent = entry.op
        if lines:
            atomic_write(self.new_root / "refs.log", b"".join(lines))
            atomic_write(self.new_root / "refs.applied", (parent or "").encode() + b"\n")
        return ops

    def _log_ref_name(self, name: str, value: str | None) -> str:
        if value is None:
            return name
        return self.ref_name(name, value)

    def _bases(self) -> dict[str, str]:
        """Each memory folder's base, mapped (read inside the batch)."""
        out = {}
        base = self.root / BASE_DIR
        if base.is_dir():
            for f in sorted(base.iterdir()):
                words = f.read_text("utf-8").split()
                if words and is_object_id(words[0]):
                    words[0] = self.memrev(words[0])
                out[f.name] = " ".join(words)
        return out

    def _write_bases(self, bases: dict[str, str]) -> None:
        for name, line in bases.items():
            atomic_write(self.new_root / BASE_DIR / name, (line + "\n").encode("utf-8"))


def _sync_tree(root: Path) -> None:
    """Every directory of the new store durable (its files were fsynced as
    they were written)."""
    for dirpath, _, _ in os.walk(root):
        fsync_dir(Path(dirpath))


def old_ids(store: Store, prefix: str) -> Iterator[tuple[str, str]]:
    """(format-1 id, its id now) for old object ids starting with ``prefix``."""
    yield from upgrading.IdMap(store.root).objects(prefix)
