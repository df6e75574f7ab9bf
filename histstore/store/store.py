"""The store: objects, refs and the refs log, config, and the lock, in one directory.

Layout (docs/format.md)::

    config.toml        format version, store id, settings
    objects/xx/...     loose objects; objects/pack/pack-*.{pack,idx} packs
    refs/<name>        one file per ref
    refs.log           the operation log, one JSON line per operation
    refs.applied       id of the last operation fully applied to refs/
    lock               the writers' lock (readers never take it)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from histstore.errors import BadInput, CorruptObject, CorruptStore, NotFound
from histstore.store import purged as purging
from histstore.store.codec import decode_json, is_object_id
from histstore.store.config import (
    FORMAT_VERSION,
    new_config,
    read_config,
    ruleset_of,
    rulesets_of,
    write_config,
)
from histstore.store.fsutil import atomic_write
from histstore.store.kinds import Marker, Session, SessionRev, materialize, parse
from histstore.store.upgrading import committed, finish
from histstore.store.views import write_views

if TYPE_CHECKING:
    from histstore.store.objectstore import ObjectStore
    from histstore.store.oplog import Operation, RefChange
    from histstore.store.redact import Redactor
    from histstore.store.refs import RefStore

SESSION_PREFIX = "sessions/"
#: ``extra`` keys of an operation kept as given in the refs log: hs undo of a
#: memory write finds the folder by its ``dir`` (docs/invariants.md, 5)
VERBATIM_EXTRA = frozenset({"dir"})
OVERLAY_PREFIX = "overlay/"


def lock_timeout() -> float:
    text = os.environ.get("HS_LOCK_TIMEOUT", "30")
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise BadInput(f"HS_LOCK_TIMEOUT={text!r} is not a number of seconds", hint="e.g. 30")
    return value


def _finish_upgrade(root: Path) -> None:
    """Move a committed ``hs upgrade`` into place before anything reads the
    store (histstore.store.upgrading), under the writers' lock."""
    import filelock

    from histstore.store.locking import acquire, clear_owner, write_owner

    lock = filelock.FileLock(str(root / "lock"))
    acquire(lock, root, lock_timeout(), None)
    try:
        write_owner(root)
        finish(root)
    finally:
        clear_owner(root)
        lock.release()


#: the file holding gc's horizon (Store.gc_horizon)
GC_HORIZON = "gc-horizon"


class Store:
    #: how many sessions load_session keeps
    SESSION_CACHE = 256

    def __init__(self, root: Path, config: dict[str, Any]) -> None:
        self.root = root
        self.config = config
        self._objects: ObjectStore | None = None
        self._refs: RefStore | None = None
        self._redactor: Redactor | None = None
        self._lock: Any = None  # a filelock.FileLock, made by the first writer
        self.lock_timeout = lock_timeout()
        #: sessions read, by revision id (load_session), newest last
        self._sessions: dict[str, Session] = {}
        #: what markers() last read, by the refs' state then
        self._markers: tuple[tuple[object, ...], dict[str, Marker]] | None = None
        #: told what a person should know that is no error (a lock taken over
        #: from a dead process); the CLI prints it on stderr
        self.notify: Callable[[str], None] | None = None
        #: take over a stale lock record of another host (``--break-lock``)
        self.break_lock = False
        self._purges: purging.PurgeRecord | None = None
        #: a purge is running or being completed in this process (Store.lock)
        self.purging = False

    # The parts are made on first use: a command imports and opens only what it
    # touches (hs recall needs neither the object store nor the redactor).

    @property
    def objects(self) -> ObjectStore:
        if self._objects is None:
            from histstore.store.objectstore import DiskObjectStore

            self._objects = DiskObjectStore(self.root / "objects")
            self._objects.is_purged = self.is_purged
        return self._objects

    @objects.setter
    def objects(self, value: ObjectStore) -> None:
        self._objects = value

    @property
    def refs(self) -> RefStore:
        if self._refs is None:
            from histstore.store.refs import RefStore

            self._refs = RefStore(self.root)
        return self._refs

    @property
    def purges(self) -> purging.PurgeRecord:
        """The purge record (``purged``): what purges removed, by id."""
        if self._purges is None:
            self._purges = purging.PurgeRecord(self.root)
        return self._purges

    def purged_ids(self) -> frozenset[str]:
        """Every object id a purge removed: never stored, sent or named again."""
        return self.purges.ids()

    def is_purged(self, object_id: str) -> bool:
        return object_id in self.purges.ids()

    def purged_still_stored(self) -> set[str]:
        """The purged ids the object store holds again (an import that raced a
        purge wrote them back): what fsck reports and a purge removes."""
        return {i for i in self.purged_ids() if is_object_id(i) and self.objects.has(i)}

    @property
    def redactor(self) -> Redactor:
        if self._redactor is None:
            from histstore.store.redact import Redactor

            self._redactor = Redactor(self.config.get("redact", {}).get("patterns", []))
        return self._redactor

    # ------------------------------------------------------------ lifecycle

    @classmethod
    def init(cls, root: Path) -> tuple[Store, bool]:
        """Create a store at ``root`` (or open the one there). (store, created).
        A bad ``HS_LOCK_TIMEOUT`` is refused before anything is made."""
        lock_timeout()
        root = Path(root)
        if (root / "config.toml").exists():
            return cls.open(root), False
        if root.exists() and not root.is_dir():
            raise BadInput(f"{root} exists and is not a directory")
        if root.is_dir() and any(root.iterdir()):
            raise BadInput(
                f"{root} is not empty and holds no store",
                hint="choose an empty or new directory for the store",
            )
        outer = next((p for p in root.resolve().parents if (p / "config.toml").is_file()), None)
        if outer is not None and (outer / "refs").is_dir() and (outer / "objects").is_dir():
            raise BadInput(
                f"{root} is inside the store {outer}: a store there would damage it",
                hint="choose a directory outside every store",
            )
        root.mkdir(parents=True, exist_ok=True)
        (root / "objects" / "pack").mkdir(parents=True, exist_ok=True)
        (root / "refs").mkdir(exist_ok=True)
        write_config(root, new_config())
        return cls.open(root), True

    @classmethod
    def open(cls, root: Path) -> Store:
        root = Path(root)
        if committed(root):
            _finish_upgrade(root)
        return cls(root, read_config(root))

    def close(self) -> None:
        close = getattr(self._objects, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def format_version(self) -> int:
        return FORMAT_VERSION

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """The writers' lock. Waits up to ``HS_LOCK_TIMEOUT`` seconds (default 30).

        A writer that takes it first completes an operation a crash left logged
        but not applied, so what it reads under the lock is the latest state."""
        import filelock  # writers only: readers never lock, and start-up stays lean

        from histstore.store.locking import Refresher, acquire, clear_owner, write_owner

        if self._lock is None:
            self._lock = filelock.FileLock(str(self.root / "lock"))
        outer = not self._lock.is_locked
        refresher = None
        if outer:
            # the kernel's flock decides; the owner record beside it names the
            # holder and is refreshed while we hold it (histstore/store/locking.py)
            acquire(
                self._lock, self.root, self.lock_timeout, self.notify, break_lock=self.break_lock
            )
            try:
                refresher = Refresher(self.root, write_owner(self.root))
            except BaseException:
                self._lock.release()
                raise
        else:
            self._lock.acquire(timeout=self.lock_timeout)
        try:
            done = self.refs.recover()
            if done is not None and any(c.ref.startswith("overlay/") for c in done.changes):
                write_views(self)  # the views follow the refs just completed
            if not self.purging and (self.root / purging.PENDING).exists():
                self._complete_purge()
            yield
        finally:
            if outer:
                if refresher is not None:
                    refresher.stop()
                clear_owner(self.root)
            self._lock.release()

    def _complete_purge(self) -> None:
        """(Lock held.) A purge past its commit point is completed before
        anything else is written (histstore.ops.purge)."""
        hook = purging.complete_hook
        if hook is None:
            raise CorruptStore(
                f"a purge of the store at {self.root} was interrupted and must be completed first",
                hint="run any hs command (or `hs fsck --repair`), which completes it",
            )
        self.purging = True
        try:
            hook(self)
        finally:
            self.purging = False

    def check_outside(self, path: Path, what: str) -> Path:
        """A path a person named for a command to write (an export file, a
        drafts folder): refused when it is inside the store or holds it, so no
        command ever writes a user-named path among the store's own files."""
        target = Path(path).expanduser().absolute()
        resolved = target.resolve()
        root = self.root.resolve()
        if resolved == root or resolved.is_relative_to(root) or root.is_relative_to(resolved):
            raise BadInput(
                f"{what} {path} is inside the store at {self.root} (or holds it)",
                hint="write it somewhere outside the store",
            )
        return target

    def check_output_file(self, path: Path, what: str) -> Path:
        """A file a person named for a command to write (``-o FILE``): outside
        the store, in a folder that exists (as a shell's ``>`` wants it: a
        mistyped folder is said, never made)."""
        target = self.check_outside(path, what)
        if not target.parent.is_dir():
            raise NotFound(
                f"{what} {path}: there is no folder {target.parent}",
                hint="make the folder first, or name a file in one that exists",
            )
        if target.is_dir():
            raise BadInput(f"{what} {path} is a folder", hint="name a file in it, or another file")
        return target

    # ------------------------------------------------------------ objects

    def get_json(self, object_id: str, kind: str | None = None) -> Any:
        k, payload = self.objects.get(object_id)
        if kind is not None and k != kind:
            raise BadInput(f"object {object_id} is a {k}, not a {kind}")
        return decode_json(object_id, payload)

    def get_blob(self, object_id: str) -> bytes:
        k, payload = self.objects.get(object_id)
        if k != "blob":
            raise CorruptObject(object_id, f"expected a blob, found a {k}")
        return payload

    # ------------------------------------------------------------ sessions

    def session_refs(self, starting: str = "") -> dict[str, str]:
        """session id -> id of its newest revision (of the ids ``starting``
        with a prefix: found in packed-refs by bisection)."""
        n = len(SESSION_PREFIX)
        return {k[n:]: v for k, v in self.refs.list_refs(SESSION_PREFIX + starting).items()}

    def has_sessions(self) -> bool:
        """Whether any session is recorded (without listing them)."""
        return self.refs.any_under(SESSION_PREFIX.rstrip("/"))

    def session_ref(self, session_id: str) -> str | None:
        from histstore.store.refs import check_component

        return self.refs.read(SESSION_PREFIX + check_component(session_id, "session id"))

    def load_revision(self, rev_id: str) -> SessionRev:
        """One session revision object as stored (a delta or a full one)."""
        kind, payload = self.objects.get(rev_id)
        if kind != "session":
            raise BadInput(f"object {rev_id} is a {kind}, not a session")
        rev: SessionRev = parse(rev_id, kind, payload)
        return rev

    def load_session(self, rev_id: str) -> Session:
        """A session as of revision ``rev_id``, with every turn: the revision's
        turns applied, by turn id, over its first parent's, back to the nearest
        full revision. Reading a session of N turns reads O(N) bytes: each
        revision holds only what it added. Sessions read are kept (a few
        thousand turn entries each), so reading a revision after its parent
        costs its own delta only."""
        return materialize(rev_id, self.load_revision, self._sessions, self.SESSION_CACHE)

    def remember_session(self, session: Session) -> None:
        """Keep a session read another way (the summary's rows) as
        load_session keeps one it materialized, so reading that revision, or
        a delta on it, reads no revision before it. The caller vouches that
        it is what load_session would give."""
        self._sessions[session.rev] = session
        while len(self._sessions) > self.SESSION_CACHE:
            self._sessions.pop(next(iter(self._sessions)))

    def _reached(self, name: str, rev_id: str) -> Session:
        """A session revision a ref points at: anything wrong with it is damage."""
        if not is_object_id(rev_id):
            raise CorruptStore(f"ref {name} does not hold an object id", hint="run hs fsck")
        try:
            return self.load_session(rev_id)
        except CorruptObject as e:
            raise CorruptStore(f"ref {name}: {e}", hint="run hs fsck") from None
        except NotFound:
            raise CorruptStore(f"ref {name} points at missing object {rev_id}") from None
        except BadInput as e:
            raise CorruptStore(f"ref {name}: {e.message}", hint="run hs fsck") from None

    def session(self, session_id: str) -> Session:
        rev = self.session_ref(session_id)
        if rev is None:
            raise NotFound(f"no session {session_id}")
        return self._reached(SESSION_PREFIX + session_id, rev)

    def sessions(self) -> Iterator[Session]:
        for sid, rev in self.session_refs().items():
            yield self._reached(SESSION_PREFIX + sid, rev)

    # ------------------------------------------------------------ markers

    def load_marker(self, marker_id: str) -> Marker:
        kind, payload = self.objects.get(marker_id)
        if kind != "marker":
            raise BadInput(f"object {marker_id} is a {kind}, not a marker")
        marker: Marker = parse(marker_id, kind, payload)
        return marker

    def markers(self) -> dict[str, Marker]:
        """Every overlay ref's target -> its newest marker (active or lifted).
        Cheap when nothing was ever forgotten: one look at refs/overlay and
        packed-refs. Read again only once the refs may have moved
        (``RefStore.state``): a command asks several times (what it shows,
        what it withholds, the views it writes)."""
        if not self.refs.any_under("overlay"):
            return {}
        state = self.refs.state()
        if self._markers is not None and self._markers[0] == state:
            return dict(self._markers[1])
        n = len(OVERLAY_PREFIX)
        found = {
            ref[n:]: self.load_marker(marker_id)
            for ref, marker_id in self.refs.list_refs(OVERLAY_PREFIX).items()
        }
        self._markers = (state, found)
        return dict(found)

    def session_history(self, session_id: str) -> Iterator[tuple[str, Session]]:
        """Every revision of a session along first parents, newest first."""
        rev: str | None = self.session_ref(session_id)
        while rev is not None:
            s = self.load_session(rev)
            yield rev, s
            rev = s.parent

    # ------------------------------------------------------------ operations

    def apply(
        self, changes: list[RefChange], command: str, *, extra: dict[str, Any] | None = None
    ) -> Operation | None:
        """Move refs as one operation (lock held by the caller); the command line
        and ``extra`` are redacted before they reach the refs log. When overlay refs move, the
        overlay views are rewritten before the operation counts as applied, so
        a crash never leaves them behind the refs (the roll-forward rewrites
        them)."""
        self._record_ruleset()
        before_done = None
        if any(c.ref.startswith(OVERLAY_PREFIX) for c in changes):

            def before_done() -> None:
                write_views(self)

        # what the entry says of itself is text too (a remote's name), but the
        # memory folder hs undo puts files back into, which must stay usable
        told = (
            {k: v if k in VERBATIM_EXTRA else self.redactor.redact_obj(v) for k, v in extra.items()}
            if extra
            else extra
        )
        return self.refs.apply(changes, self.redactor(command), extra=told, before_done=before_done)

    def _record_ruleset(self) -> None:
        """(Lock held.) config.toml names the rule set this hs redacts with:
        the first operation of an hs whose rules are not the ones recorded
        (another release) records its own as ``[redact] ruleset`` and adds it
        to ``rulesets``, keeping every other key (docs/format.md, "config.toml")."""
        from histstore.store.redact import ruleset_id

        current = ruleset_id()
        if ruleset_of(self.config) == current and current in rulesets_of(self.config):
            return
        config = read_config(self.root)
        seen = rulesets_of(config)
        section = config.setdefault("redact", {})
        section["ruleset"] = current
        section["rulesets"] = seen if current in seen else [*seen, current]
        write_config(self.root, config)
        self.config = config

    def settle_rulesets(self) -> None:
        """(Lock held.) Every object was redacted again with this hs's rule set
        (``hs redact --apply``): ``rulesets`` names it alone."""
        from histstore.store.redact import ruleset_id

        config = read_config(self.root)
        section = config.setdefault("redact", {})
        current = ruleset_id()
        if section.get("ruleset") != current or section.get("rulesets") != [current]:
            section["ruleset"] = current
            section["rulesets"] = [current]
            write_config(self.root, config)
        self.config = config

    def add_rulesets(self, rulesets: list[str]) -> None:
        """(Lock held.) Record that objects redacted with ``rulesets`` arrived
        (a sync brought them)."""
        config = read_config(self.root)
        seen = rulesets_of(config)
        new = [r for r in rulesets if r not in seen]
        if new:
            config.setdefault("redact", {})["rulesets"] = [*seen, *new]
            write_config(self.root, config)
        self.config = config

    # gc's horizon: refs-log entries older than it may name objects gc removed

    def gc_horizon(self) -> str | None:
        """The time (RFC 3339) before which refs-log entries may name objects
        ``hs gc`` removed (they were outside its retention window); None when
        gc never removed any."""
        try:
            text = (self.root / GC_HORIZON).read_text("utf-8").strip()
        except (FileNotFoundError, UnicodeDecodeError):
            return None
        return text or None

    def set_gc_horizon(self, time: str) -> None:
        """Move the horizon forward to ``time`` (never back; lock held)."""
        old = self.gc_horizon()
        if old is None or time > old:
            atomic_write(self.root / GC_HORIZON, (time + "\n").encode("utf-8"))

    def operations(self) -> list[Operation]:
        return self.refs.operations()
