"""Remotes: other store folders this store syncs with, named in config.toml.

``[remotes.<name>] path = "..."``. A remote is a store like any other (a
mounted disk, a network share); a path inside this store, holding it, a file,
or a non-empty folder with no store is refused.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histstore.errors import BadInput, Conflict, HistError, NoStore, NotFound
from histstore.recall.index import RecallIndex
from histstore.store.config import patterns_of, read_config, write_config
from histstore.store.oplog import Operation, RefChange
from histstore.store.refs import check_component
from histstore.store.store import Store

#: the ref namespaces a sync carries
NAMESPACES = ("sessions/", "memory/", "overlay/")
#: remote-tracking refs: ``remotes/<name>/<ref>`` is what remote ``name`` held
TRACKING = "remotes/"


@dataclass(frozen=True)
class Remote:
    """A remote: its name and the store's path."""

    name: str
    path: Path

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path)}


def check_remote_name(name: str) -> str:
    return check_component(name, "remote name")


def remote_entries(store: Store) -> tuple[dict[str, Remote], dict[str, str]]:
    """The remotes of ``config.toml`` (``[remotes.NAME] path = "..."``), by name,
    and the entries that are not a remote (name -> what is wrong), so one bad
    entry neither hides the others nor keeps ``hs remote remove`` from it."""
    table = store.config.get("remotes", {})
    if not isinstance(table, dict):
        raise BadInput(f"{store.root / 'config.toml'}: [remotes] must be a table of remotes")
    good, bad = {}, {}
    for name, entry in sorted(table.items()):
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not path:
            bad[name] = "has no path" if isinstance(entry, dict) else "is not a table"
        else:
            good[name] = Remote(name, Path(path))
    return good, bad


def _bad_remote(store: Store, name: str, problem: str) -> BadInput:
    return BadInput(
        f"{store.root / 'config.toml'}: remote {name!r} {problem}",
        hint=f"set [remotes.{name}] path, or `hs remote remove {name}`",
    )


def get_remote(store: Store, name: str) -> Remote:
    """Remote ``name``; another remote's bad entry does not matter here."""
    check_remote_name(name)
    good, bad = remote_entries(store)
    if name in bad:
        raise _bad_remote(store, name, bad[name])
    found = good.get(name)
    if found is None:
        known = ", ".join(sorted([*good, *bad])) or "none"
        raise NotFound(
            f"no remote {name!r} (remotes: {known})",
            hint=f"add it with `hs remote add {name} PATH`",
        )
    return found


def overlap_of(path: Path, store: Store) -> str | None:
    """How a remote's folder overlaps this store's (it is the store, inside
    it, or holds it), or None. A remote there would copy a store into itself."""
    try:
        there, here = path.resolve(), store.root.resolve()
    except OSError:
        return None
    if there == here:
        return "is this store itself"
    if here in there.parents:
        return "is inside this store"
    if there in here.parents:
        return "holds this store"
    return None


def add_remote(store: Store, name: str, location: str | Path) -> Remote:
    """Record a remote in ``config.toml`` (under the store lock). The folder
    need not hold a store yet (``hs push --init`` makes one); it must not be a
    file, nor be given as an empty text (which a Path reads as this folder)."""
    check_remote_name(name)
    shown = store.redactor(name)
    if shown != name:  # it would name refs (remotes/<name>/…), which are never redacted
        raise BadInput(f"remote name {shown!r} holds a secret", hint="give the remote another name")
    if isinstance(location, str) and not location.strip():
        raise BadInput("the remote's folder is empty", hint="name the other store's folder")
    path = Path(location).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise BadInput(f"{path} is a file, not a store folder", hint="give a folder for the remote")
    overlap = overlap_of(path, store)
    if overlap:
        raise BadInput(
            f"{path} {overlap}", hint="a remote is another store folder, outside this one"
        )
    with store.lock():
        config = read_config(store.root)
        table = config.setdefault("remotes", {})
        if name in table:
            raise BadInput(
                f"remote {name!r} already exists ({table[name].get('path')})",
                hint=f"remove it first with `hs remote remove {name}`",
            )
        table[name] = {"path": str(path)}
        write_config(store.root, config)
        store.config = config
    return Remote(name, path)


def remove_remote(
    store: Store, name: str, command: str = "hs remote remove"
) -> tuple[Remote, Operation | None]:
    """Forget a remote: its remote-tracking refs go (one operation), then its
    entry in ``config.toml``. The remote store itself is not touched."""
    check_remote_name(name)
    good, bad = remote_entries(store)
    if name not in good and name not in bad:
        get_remote(store, name)  # raises: no such remote
    # a bad entry (no path) is removed all the same: that is how it is fixed
    remote = good.get(name) or Remote(name, Path())
    with store.lock():
        prefix = f"{TRACKING}{name}/"
        tracking = store.refs.list_refs(prefix)
        op = store.apply(
            [RefChange(ref, value, None) for ref, value in tracking.items()],
            command,
            extra={"kind": "remote-remove", "remote": name},
        )
        config = read_config(store.root)
        config.get("remotes", {}).pop(name, None)
        if not config.get("remotes"):
            config.pop("remotes", None)
        write_config(store.root, config)
        store.config = config
    if op is not None:  # it moved tracking refs only: the index follows by its meta
        with contextlib.suppress(HistError, OSError, ValueError):
            RecallIndex(store).follow()
    return remote, op


def check_empty_folder(remote: Remote) -> None:
    """A remote folder with no store must be missing or empty for one to be
    made there (so ``--init`` is never hinted where it would fail)."""
    path = remote.path
    if path.is_dir() and any(path.iterdir()):
        raise BadInput(
            f"remote {remote.name}: {path} is not empty and holds no store",
            hint=(
                "point the remote at an empty or new folder "
                f"(`hs remote remove {remote.name}`, then `hs remote add {remote.name} PATH`)"
            ),
        )


def open_remote(store: Store, remote: Remote, *, init: bool = False) -> tuple[Store, bool]:
    """The remote's store (created when ``init``): (store, created)."""
    path = remote.path
    if path.exists() and not path.is_dir():
        raise BadInput(f"remote {remote.name}: {path} is a file, not a store folder")
    overlap = overlap_of(path, store)
    if overlap:
        raise BadInput(
            f"remote {remote.name}: {path} {overlap}",
            hint="a remote is another store folder, outside this one",
        )
    if not (path / "config.toml").exists():
        check_empty_folder(remote)
        if not init:
            raise NoStore(
                f"no store at {path} (remote {remote.name})",
                hint=f"`hs push {remote.name} --init` creates one there",
            )
        other, created = Store.init(path)
        if created:
            adopt_patterns(other, store)
    else:
        other, created = Store.open(path), False
    other.notify = store.notify
    other.break_lock = store.break_lock  # --break-lock reaches the remote too
    return other, created


def connect(local: Store, name: str, *, init: bool = False) -> tuple[Remote, Store, bool]:
    """The remote ``name`` of ``local``, opened (or created with ``init``)."""
    remote = get_remote(local, name)
    other, created = open_remote(local, remote, init=init)
    return remote, other, created


def adopt_patterns(new: Store, source: Store) -> None:
    """A store made for a push (``--init``) takes the pushing store's
    ``[redact] patterns``, so the two redact alike from the start."""
    patterns = patterns_of(read_config(source.root))
    if not patterns:
        return
    with new.lock():
        config = read_config(new.root)
        config.setdefault("redact", {})["patterns"] = patterns
        write_config(new.root, config)
    new.config = config


def check_same_patterns(local: Store, remote: Store, name: str) -> None:
    """Refuse (before anything moves) to sync two stores whose ``[redact]
    patterns`` differ: what one store keeps unredacted would reach the other,
    whose patterns would have caught it, and objects cannot be redacted again
    on the way (their ids are their content)."""
    here = patterns_of(read_config(local.root))
    there = patterns_of(read_config(remote.root))
    if here == there:
        return
    only_here = [p for p in here if p not in there]
    only_there = [p for p in there if p not in here]
    parts = []
    if only_here:
        parts.append("only here: " + ", ".join(repr(p) for p in only_here))
    if only_there:
        parts.append(f"only in {name}: " + ", ".join(repr(p) for p in only_there))
    raise Conflict(
        f"redaction-mismatch: this store and remote {name} ({remote.root}) have different "
        f"[redact] patterns ({'; '.join(parts)}); nothing was synced",
        hint=f"give both config.toml files the same [redact] patterns "
        f"({local.root / 'config.toml'}, {remote.root / 'config.toml'}), then sync again",
    )
