"""Checking a whole memory folder: every rule, every violation with file and line.

What ``hs memory check`` reports and what every write re-checks after it
touched the folder. Files are read carefully (regular files only, size
first, symlinks inside the folder only); a file that cannot be read is a
violation, never a crash.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from histstore.errors import BadInput, NotFound
from histstore.memory.index import IndexEntry, index_line, index_order, parse_index
from histstore.memory.rules import (
    INDEX_FILE,
    MAX_INDEX_BYTES,
    MAX_NOTE_BYTES,
    Note,
    Violation,
    _file_name_violation,
    _v,
    is_index_name,
    parse_note,
    split_file_name,
)


def _read(root: Path, path: Path, limit: int) -> bytes | Violation | None:
    """At most ``limit + 1`` bytes of a file in the directory; a violation when it is
    a symlink leading outside (not followed) or cannot be read; None when it is
    not a regular file (a directory, a fifo) or vanished."""
    shown = path.name
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    target = path
    if stat.S_ISLNK(st.st_mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return _v(
                shown, 1, "symlink", "is a symlink that leads nowhere: replace it with the file"
            )
        if not target.is_relative_to(root):
            return _v(
                shown,
                1,
                "symlink",
                "is a symlink to a file outside the memory directory (not followed): "
                "copy the file in instead",
            )
    elif not stat.S_ISREG(st.st_mode):
        return None
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:  # swapped for a symlink since we looked
            return _v(shown, 1, "symlink", "became a symlink while it was read: check it again")
        return _v(shown, 1, "unreadable", f"cannot be read ({e.strerror}): check its permissions")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as e:
        return _v(shown, 1, "unreadable", f"cannot be read ({e.strerror}): check its permissions")
    finally:
        os.close(fd)


def _read_index(
    directory: Path, root: Path, md: list[str], out: list[Violation]
) -> tuple[str | None, list[IndexEntry] | None]:
    """(the index's name, its entries; None when its bytes could not be read as
    an index). A second index file is a violation."""
    index_name: str | None = None
    entries: list[IndexEntry] | None = None
    for n in index_order(md):
        path = directory / n
        if path.is_dir() and not path.is_symlink():
            continue
        if index_name is not None:
            out.append(
                _v(
                    n,
                    1,
                    "file-name",
                    f"a second index beside {index_name}: move its entries there and remove it",
                )
            )
            continue
        got = _read(root, path, MAX_INDEX_BYTES)
        if got is None:
            continue
        index_name = n
        if isinstance(got, Violation):
            out.append(got)
            continue
        parsed, bad = parse_index(n, got)
        out += bad
        if not any(v.rule in {"size", "binary", "encoding"} for v in bad):
            entries = parsed
    return index_name, entries


def _read_notes(
    directory: Path, root: Path, md: list[str], out: list[Violation]
) -> tuple[set[str], dict[str, Note]]:
    """(the note files present, those that parse as notes)."""
    present: set[str] = set()
    notes: dict[str, Note] = {}
    for n in md:
        if is_index_name(n):
            continue
        if split_file_name(n) is None:
            if not (directory / n).is_dir():
                out.append(_file_name_violation(n))
            continue
        got = _read(root, directory / n, MAX_NOTE_BYTES)
        if got is None:
            continue
        present.add(n)
        if isinstance(got, Violation):
            out.append(got)
            continue
        note, bad = parse_note(n, got)
        out += bad
        if note is not None:
            notes[n] = note
    return present, notes


def _check_entries(
    index_name: str,
    entries: list[IndexEntry],
    present: set[str],
    notes: dict[str, Note],
    out: list[Violation],
) -> None:
    """Each entry names a note there is, once; each note has an entry."""
    seen: dict[str, IndexEntry] = {}
    for e in entries:
        if e.file not in present:
            out.append(
                _v(
                    index_name,
                    e.line,
                    "index-dangling",
                    f"the entry points at {e.file}, which does not exist: "
                    "remove the entry or restore the file",
                )
            )
        elif e.file in seen:
            out.append(
                _v(
                    index_name,
                    e.line,
                    "index-duplicate",
                    f"a second entry for {e.file} (the first is on line "
                    f"{seen[e.file].line}): remove one",
                )
            )
        else:
            seen[e.file] = e
    for n in sorted(present - seen.keys()):
        out.append(
            _v(
                n,
                1,
                "index-missing",
                f"{index_name} has no entry for {n}: add one" + _entry_suggestion(notes.get(n)),
            )
        )


def check_dir(directory: Path) -> list[Violation]:
    """Every rule for a memory directory, sorted by (file, line).

    Notes are ``<type>_<slug>.md`` files at its top; sub-directories, dotfiles and
    files not ending in ``.md`` are not looked at. The index is ``MEMORY.md``
    (else ``INDEX.md``, any case); a second index file is a ``file-name`` violation.
    """
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise NotFound(
            f"memory directory {directory} {what}",
            hint="give the directory that holds MEMORY.md and the note files",
        )
    root = directory.resolve()
    out: list[Violation] = []
    names = sorted(p.name for p in directory.iterdir())
    md = [n for n in names if not n.startswith(".") and n.lower().endswith(".md")]
    index_name, entries = _read_index(directory, root, md, out)
    present, notes = _read_notes(directory, root, md, out)
    if index_name is None:
        for n in sorted(present):
            out.append(
                _v(
                    n,
                    1,
                    "index-missing",
                    f"there is no {INDEX_FILE}: create it with an entry for {n}"
                    + _entry_suggestion(notes.get(n)),
                )
            )
    elif entries is not None:
        _check_entries(index_name, entries, present, notes, out)
    return sorted(out, key=lambda v: (v.file, v.line, v.rule, v.message))


def _entry_suggestion(note: Note | None) -> str:
    if note is None:
        return ""
    try:
        return f", e.g. {index_line(note.name, note.file, note.description)}"
    except BadInput:
        return ""
