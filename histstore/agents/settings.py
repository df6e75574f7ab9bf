"""Changing one entry of an agent's JSON or TOML settings file, and nothing else.

The file is the agent's, and a person's: hs changes only the entry it was
asked to, and leaves every other byte alone where the format allows. This is
the one way hs edits an agent's configuration: ``hs mcp install`` (an entry of
``mcpServers`` / ``[mcp_servers]``) and the hooks installer (entries in the
lists of ``hooks.<Event>``, a ``[features]`` flag, ``[hooks.state."<key>"]``
trust tables) both go through it.

**The change is a function of what is there.** :func:`update_json` and
:func:`update_toml` take a key path and a function from the value found
there (:data:`MISSING` when there is none) to the value wanted (the same
value: nothing to do; :data:`DELETE`: remove it, and with ``prune`` the
tables left empty on the way). The function runs on the file as it is just
before the write, again if the file changed meanwhile, so it can merge into
what the person has (:func:`merged` adds or replaces hs's own item of a list
and keeps the rest; :func:`without` removes only hs's items) and refuse, by
raising, to touch an entry that is not hs's. :func:`set_json`,
:func:`delete_json`, :func:`set_toml` and :func:`delete_toml` are the
common cases.

* **JSON** is edited as text: the spans of the objects on the key path are
  found with the standard library's own scanner, and only the entry's value
  (or one new member) is written, indented like its neighbours. The result is
  parsed again and must equal the whole document with exactly that change;
  if it ever does not, the document is written out whole instead (same
  indentation), which changes layout but no value.
* **TOML** goes through ``tomlkit``, which keeps comments, order and
  formatting of everything it is not told to change (a table hs writes is a
  ``[a.b]`` table, or an inline one inside an inline table). The result is
  checked the same way, and written whole by tomlkit if it ever differs.

Every write: the file's bytes are read, the change computed; when the result
is what is there already nothing is written (a second install changes
nothing); else the old bytes go to ``<file>.hs-backup`` beside it and the new
ones replace the file atomically, with its permissions (``~/.claude.json`` is
private). A symlink is followed: the file it names is changed. The file is
read again just before the rename, and the change redone when someone (the
agent itself) wrote it meanwhile. A file that is not UTF-8 JSON or TOML, or
whose key path holds something other than tables, is refused with one line
and left untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from histstore.agents.json_text import (
    Keys,
    json_del_text,
    json_set_text,
    same,
    skip,
    unit_of,
)
from histstore.errors import BadInput, Conflict
from histstore.store.fsutil import fsync, fsync_dir, make_dirs

BACKUP_SUFFIX = ".hs-backup"
_RETRIES = 5


@dataclass(frozen=True)
class Change:
    """What a settings change did."""

    path: Path  # the file changed (a symlink's target)
    changed: bool  # False: it already held this, nothing was written
    created: bool  # the file did not exist
    backup: Path | None  # the previous bytes, when there were any and they changed


# ------------------------------------------------------------------ the write


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _replace(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.hs-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)  # whatever the umask made of it
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def rewrite(path: Path, what: str, change: Callable[[str], str]) -> Change:
    """Apply ``change`` (old text -> new text; ``""`` for a missing file) to
    the file at ``path`` as described above. ``what`` names the format in
    messages ("JSON", "TOML")."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    for _ in range(_RETRIES):
        old = _read(target)
        try:
            text = "" if old is None else old.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid(target, what, "it is not UTF-8 text") from None
        new = change(text)
        if old is not None and new == text:
            return Change(target, False, False, None)
        mode = stat.S_IMODE(target.stat().st_mode) if old is not None else 0o600
        if not target.parent.is_dir():
            make_dirs(target.parent)
        backup = None
        if old is not None:
            backup = target.with_name(target.name + BACKUP_SUFFIX)
            _replace(backup, old, mode)
        if _read(target) != old:
            continue  # written meanwhile (the agent itself): compute the change again
        _replace(target, new.encode("utf-8"), mode)
        return Change(target, True, old is None, backup)
    raise Conflict(
        f"{target} kept changing while hs edited it: nothing changed",
        hint="quit the agent, then run the command again",
    )


def _invalid(path: Path, what: str, why: str) -> BadInput:
    return BadInput(
        f"{path} is not valid {what} ({why}): nothing changed",
        hint="fix the file or move it away, then run the command again",
    )


# ------------------------------------------------------------------ values


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: what an update function is given where the key path holds nothing
MISSING: Any = _Marker("MISSING")
#: what an update function returns to remove the entry
DELETE: Any = _Marker("DELETE")

#: the value found (or MISSING) -> the value wanted (or DELETE)
Update = Callable[[Any], Any]


def get(doc: Any, keys: Keys, default: Any = None) -> Any:
    """The value at ``keys`` in a parsed document; ``default`` when it is not there."""
    for k in keys:
        if not isinstance(doc, dict) or k not in doc:
            return default
        doc = doc[k]
    return doc


def merged(items: Any, item: Any, ours: Callable[[Any], bool]) -> list[Any]:
    """A list (``items``: a list, or MISSING) with ``item`` in it as hs's one
    entry: in place of the first entry ``ours`` recognises (any others it
    recognises dropped), else at the end; every other entry kept in order."""
    old = list(items) if isinstance(items, list) else []
    out: list[Any] = []
    placed = False
    for x in old:
        if ours(x):
            if not placed:
                out.append(item)
                placed = True
        else:
            out.append(x)
    if not placed:
        out.append(item)
    return out


def without(items: Any, ours: Callable[[Any], bool]) -> Any:
    """A list without the entries ``ours`` recognises; DELETE when that
    leaves it empty, ``items`` itself when it holds none (or is no list)."""
    if not isinstance(items, list) or not any(ours(x) for x in items):
        return items
    rest = [x for x in items if not ours(x)]
    return rest if rest else DELETE


def _with(doc: dict[str, Any], keys: Keys, value: Any) -> dict[str, Any]:
    out = dict(doc)
    if len(keys) == 1:
        out[keys[0]] = value
    else:
        inner = out.get(keys[0])
        out[keys[0]] = _with(inner if isinstance(inner, dict) else {}, keys[1:], value)
    return out


def _without(doc: dict[str, Any], keys: Keys, prune: bool) -> dict[str, Any]:
    out = dict(doc)
    if len(keys) == 1:
        out.pop(keys[0], None)
    elif isinstance(out.get(keys[0]), dict):
        inner = _without(out[keys[0]], keys[1:], prune)
        if inner or not prune:
            out[keys[0]] = inner
        else:
            del out[keys[0]]
    return out


def _check_path(path: Path, what: str, doc: Any, keys: Keys) -> None:
    if not keys:
        raise ValueError("an empty key path")
    if not isinstance(doc, dict):
        raise _invalid(path, what, "its top level is not a table of settings")
    for i, k in enumerate(keys[:-1]):
        doc = doc.get(k)
        if doc is None:
            return
        if not isinstance(doc, dict):
            raise BadInput(
                f"{path}: {'.'.join(keys[: i + 1])} is not a table: nothing changed",
                hint="fix the file, then run the command again",
            )


def _plan(
    path: Path, what: str, doc: Any, keys: Keys, fn: Update, prune: bool
) -> tuple[bool, Any, dict[str, Any]]:
    """(delete?, the new value, the whole document expected), or None-like
    (False, MISSING, doc) when nothing is to change."""
    _check_path(path, what, doc, keys)
    current = get(doc, keys, MISSING)
    new = fn(current)
    if new is DELETE or new is MISSING:
        if current is MISSING:
            return False, MISSING, doc
        return True, DELETE, _without(doc, keys, prune)
    if current is not MISSING and same(current, new):
        return False, MISSING, doc
    return False, new, _with(doc, keys, new)


# ------------------------------------------------------------------ JSON


def _load_json(path: Path, text: str) -> Any:
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise _invalid(path, "JSON", str(e)) from None


def _json_change(path: Path, text: str, keys: Keys, fn: Update, prune: bool) -> str:
    doc = _load_json(path, text)
    delete, value, expected = _plan(path, "JSON", doc, keys, fn, prune)
    if not delete and value is MISSING:
        return text
    unit = unit_of(text)
    if not text.strip():
        return json.dumps(expected, ensure_ascii=False, indent=unit) + "\n"
    start = skip(text, 0)
    try:
        if delete:
            new = json_del_text(text, start, keys, prune)
        else:
            new = json_set_text(text, start, keys, value, unit)
        ok = same(json.loads(new), expected)
    except (ValueError, IndexError, RecursionError):
        ok = False
    if not ok:  # never wrong: the whole document, with this change
        end = "\n" if text.endswith("\n") else ""
        new = json.dumps(expected, ensure_ascii=False, indent=unit) + end
    return new


def update_json(path: Path, keys: Keys, fn: Update, *, prune: bool = True) -> Change:
    """Change the value at ``keys`` (a path of object members) of a JSON file
    to ``fn(current)`` (see the module's docstring), creating the file and the
    objects on the way when missing."""
    if _read(path) is None and fn(MISSING) in (MISSING, DELETE):
        return Change(path, False, False, None)
    return rewrite(path, "JSON", lambda text: _json_change(path, text, keys, fn, prune))


def update_json_many(
    path: Path, changes: list[tuple[Keys, Update]], *, prune: bool = True
) -> Change:
    """Several :func:`update_json` changes made as one write (one backup of
    the file as it was, and no write when none of them changes anything)."""
    if _read(path) is None and all(fn(MISSING) in (MISSING, DELETE) for _, fn in changes):
        return Change(path, False, False, None)
    return rewrite(path, "JSON", _changes(path, "json", changes, prune))


def check_many(path: Path, fmt: str, changes: list[tuple[Keys, Update]]) -> None:
    """Refuse now (BadInput), writing nothing, what :func:`update_json_many`
    or :func:`update_toml_many` (``fmt`` "json" or "toml") would refuse on
    the file as it is: so a command that changes several files changes none
    when one would refuse."""
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    old = _read(target)
    what = fmt.upper()
    try:
        text = "" if old is None else old.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(target, what, "it is not UTF-8 text") from None
    _changes(path, fmt, changes, True)(text)


def _changes(
    path: Path, fmt: str, changes: list[tuple[Keys, Update]], prune: bool
) -> Callable[[str], str]:
    """The text -> text function of several changes of a JSON or TOML file."""
    step = _json_change if fmt == "json" else _toml_change

    def change(text: str) -> str:
        for keys, fn in changes:
            text = step(path, text, keys, fn, prune)
        return text

    return change


def set_json(path: Path, keys: Keys, value: Any) -> Change:
    """Set ``keys`` to ``value`` in a JSON file."""
    return update_json(path, keys, lambda _: value)


def delete_json(path: Path, keys: Keys, *, prune: bool = True) -> Change:
    """Remove ``keys`` from a JSON file (and, with ``prune``, the objects
    left empty). A missing file or entry changes nothing."""
    return update_json(path, keys, lambda _: DELETE, prune=prune)


def read_json(path: Path, keys: Keys) -> Any:
    """The value at ``keys`` of a JSON file (None: no file, or not there)."""
    data = _read(path)
    if data is None:
        return None
    return get(_load_json(path, data.decode("utf-8", "replace")), keys)


# ------------------------------------------------------------------ TOML


def _load_toml(path: Path, text: str) -> Any:
    try:
        return tomlkit.parse(text)
    except (TOMLKitError, ValueError, RecursionError) as e:
        raise _invalid(path, "TOML", " ".join(str(e).split())) from None


def _toml_item(value: Any, inline: bool) -> Any:
    """``value`` as tomlkit writes it: a dict as a ``[table]`` (nested dicts
    as its sub-tables), or inline inside an inline table."""
    if isinstance(value, list) and inline:  # a list of tables inline too
        items = tomlkit.array()
        for x in value:
            items.append(_toml_item(x, True))
        return items
    if not isinstance(value, dict):
        return tomlkit.item(value)
    table: Any = tomlkit.inline_table() if inline else tomlkit.table()
    for k, v in value.items():
        table[k] = _toml_item(v, inline)
    return table


def _toml_change(path: Path, text: str, keys: Keys, fn: Update, prune: bool) -> str:
    doc = _load_toml(path, text)
    delete, value, expected = _plan(path, "TOML", doc.unwrap(), keys, fn, prune)
    if not delete and value is MISSING:
        return text
    if delete:
        parents = [doc]
        for k in keys[:-1]:
            parents.append(parents[-1][k])
        del parents[-1][keys[-1]]
        if prune:
            for i in range(len(keys) - 1, 0, -1):
                if len(parents[i]) == 0:
                    del parents[i - 1][keys[i - 1]]
        out = tomlkit.dumps(doc)
        # a table removed from the end leaves its blank separator line behind
        want = len(text) - len(text.rstrip("\n"))
        out = out.rstrip("\n") + "\n" * want if out.strip() else ""
    else:
        table = doc
        for k in keys[:-1]:
            if k not in table:
                table[k] = tomlkit.table(is_super_table=True)
            table = table[k]
        inline = isinstance(table, tomlkit.items.InlineTable)
        try:
            held = table.get(keys[-1])
            if isinstance(held, (tomlkit.items.Array, tomlkit.items.AoT)) and isinstance(
                value, list
            ):
                _edit_list(held, held.unwrap(), value)
            else:
                table[keys[-1]] = _toml_item(value, inline)
            out = tomlkit.dumps(doc)
        except (TOMLKitError, ValueError, TypeError):
            out = None
        if not _parses_to(out, expected):
            out = _appended(text, keys, value)
    if not _parses_to(out, expected):  # never wrong, and never another layout
        raise BadInput(
            f"{path}: this change cannot be made without rewriting the file's layout "
            "(its comments would be lost): nothing changed",
            hint=f"{'remove' if delete else 'change'} {'.'.join(keys)} by hand, or move the "
            f"file's {'.'.join(keys[:-1]) or keys[0]} tables together, then run it again",
        )
    return str(out)


def _parses_to(out: str | None, expected: Any) -> bool:
    try:
        return out is not None and same(tomllib.loads(out), expected)
    except tomllib.TOMLDecodeError:
        return False


def _edit_list(items: Any, old: list[Any], new: list[Any]) -> None:
    """Turn tomlkit array ``items`` (which holds ``old``) into ``new`` in
    place: the entries both hold stay as written, comments and all; the
    others are removed or put in where ``new`` has them."""
    plan: list[int | None] = []  # for each new entry, the old one it is
    j = 0
    for x in new:
        k = next((i for i in range(j, len(old)) if same(old[i], x)), None)
        plan.append(k)
        if k is not None:
            j = k + 1
    kept = {k for k in plan if k is not None}
    for i in reversed(range(len(old))):
        if i not in kept:
            del items[i]
    inline = not isinstance(items, tomlkit.items.AoT)
    for pos, (k, x) in enumerate(zip(plan, new, strict=True)):
        if k is None:
            items.insert(pos, _toml_item(x, inline))


def _appended(text: str, keys: Keys, value: Any) -> str | None:
    """A new table (or value) written at the end of the file under its whole
    dotted name, every byte before it kept: where tomlkit would put it among
    dotted keys, the keys after it would move into it."""
    if len(keys) < 2 and not isinstance(value, dict):
        return None
    snippet: Any = tomlkit.document()
    path, leaf = (keys, value) if isinstance(value, dict) else (keys[:-1], {keys[-1]: value})
    table = snippet
    for k in path[:-1]:
        table[k] = tomlkit.table(is_super_table=True)
        table = table[k]
    table[path[-1]] = _toml_item(leaf, False)
    body = text.rstrip("\n")
    return (body + "\n\n" if body else "") + tomlkit.dumps(snippet)


def update_toml(path: Path, keys: Keys, fn: Update, *, prune: bool = True) -> Change:
    """Change the value at ``keys`` of a TOML file to ``fn(current)`` (see
    the module's docstring), creating the file and tables when missing."""
    if _read(path) is None and fn(MISSING) in (MISSING, DELETE):
        return Change(path, False, False, None)
    return rewrite(path, "TOML", lambda text: _toml_change(path, text, keys, fn, prune))


def update_toml_many(
    path: Path, changes: list[tuple[Keys, Update]], *, prune: bool = True
) -> Change:
    """Several :func:`update_toml` changes made as one write."""
    if _read(path) is None and all(fn(MISSING) in (MISSING, DELETE) for _, fn in changes):
        return Change(path, False, False, None)
    return rewrite(path, "TOML", _changes(path, "toml", changes, prune))


def set_toml(path: Path, keys: Keys, value: Any) -> Change:
    """Set ``keys`` to ``value`` (a table, or any TOML value) in a TOML file."""
    return update_toml(path, keys, lambda _: value)


def delete_toml(path: Path, keys: Keys, *, prune: bool = True) -> Change:
    """Remove the entry at ``keys`` from a TOML file (and, with ``prune``,
    tables left empty on the way)."""
    return update_toml(path, keys, lambda _: DELETE, prune=prune)


def read_toml(path: Path, keys: Keys) -> Any:
    data = _read(path)
    if data is None:
        return None
    return get(_load_toml(path, data.decode("utf-8", "replace")).unwrap(), keys)
