"""The index file of a memory folder (``MEMORY.md``): its entries, and merging them.

One line per note, ``- [<name>](<file>) — <description>``, plus blank lines,
``#`` headings and one-line ``<!-- comments -->``. Pure: parsing, the one line
a note gets, and the three-way merge by entry that sync and a folder share.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from histstore.errors import BadInput
from histstore.memory.rules import (
    _INDEX_INDEX,
    _TYPE_LIST,
    INDEX_NAMES,
    MAX_INDEX_BYTES,
    MAX_INDEX_LINE,
    Violation,
    _decode,
    _show,
    _v,
    is_index_name,
    split_file_name,
)
from histstore.store.merge import deletion_loses, merge3

# An index entry. The name is matched lazily so a description holding "](" cannot
# steal it; index_line() refuses any name this would not give back unchanged.
_ENTRY_RE = re.compile(r"- \[(?P<name>.+?)\]\((?P<file>[^()\s]+)\)\s+[—-]\s+(?P<desc>\S.*)")


@dataclass(frozen=True)
class IndexEntry:
    """One ``- [name](file) — description`` line of the index (``text`` as written)."""

    line: int
    name: str
    file: str
    description: str
    text: str


def index_order(names: Iterable[str]) -> list[str]:
    """The index files among ``names``, the one that is the index first:
    ``MEMORY.md``, then its other spellings, then ``INDEX.md`` and its spellings."""
    return sorted(
        (n for n in names if is_index_name(n)),
        key=lambda n: (_INDEX_INDEX[n.lower()], n != INDEX_NAMES[_INDEX_INDEX[n.lower()]], n),
    )


def entry_file(text: str) -> str | None:
    """The note file an index line is the entry of, as the index reads it;
    None for a line that is no entry."""
    parts = _entry_parts(text)
    return None if parts is None else parts[1]


def _entry_parts(text: str) -> tuple[str, str, str] | None:
    m = _ENTRY_RE.fullmatch(text.rstrip())
    if m is None:
        return None
    return m.group("name").strip(), m.group("file"), m.group("desc").strip()


def index_line(name: str, file_name: str, description: str) -> str:
    """The exact index line of a note: ``- [<name>](<file>) — <description>``.

    White space in the name and description is collapsed to single spaces. Refuses
    (:class:`BadInput`) a line the index rules would refuse, and control characters.
    """
    name = " ".join(name.split())
    description = " ".join(description.split())
    if split_file_name(file_name) is None:
        raise BadInput(
            f"{_show(file_name)} is not a memory file name",
            hint=f"memory files are named <type>_<slug>.md (type: {_TYPE_LIST})",
        )
    if not name:
        raise BadInput("the name is empty", hint="give the note a short title")
    if "," in name:
        raise BadInput(
            f"the name {_show(name)} holds a comma, which the index cannot hold",
            hint="use another word or a dash instead of the comma",
        )
    if not description:
        raise BadInput("the description is empty", hint="say in one line what the note holds")
    for what, text in (("name", name), ("description", description)):
        if any(unicodedata.category(c) == "Cc" for c in text):
            raise BadInput(
                f"the {what} {_show(text)} holds a control character",
                hint="remove it: an index line is plain text",
            )
    line = f"- [{name}]({file_name}) — {description}"
    over = len(line) - MAX_INDEX_LINE
    if over > 0:
        room = len(description) - over
        raise BadInput(
            f"the index line for {file_name} is {len(line)} characters, "
            f"{over} over the limit of {MAX_INDEX_LINE}",
            hint=f"shorten the description to {room} characters or fewer"
            if room >= 20
            else "shorten the name (and the description)",
        )
    if _entry_parts(line) != (name, file_name, description):
        raise BadInput(
            f"the name {_show(name)} cannot be read back from the index",
            hint="leave ']' and '(' out of the name",
        )
    return line


def parse_index(file_name: str, data: bytes) -> tuple[list[IndexEntry], list[Violation]]:
    """The entries of an index file and every line rule it breaks.

    An entry that names no memory file is reported (``index-entry``) and left out.
    """
    text, bad = _decode(file_name, data, MAX_INDEX_BYTES)
    if text is None:
        return [], bad
    entries: list[IndexEntry] = []
    out: list[Violation] = []
    for n, raw in enumerate(text.split("\n"), start=1):
        s = raw.strip()
        if not s or s.startswith("#") or (s.startswith("<!--") and s.endswith("-->")):
            continue
        parts = _entry_parts(raw) if raw.startswith("- ") else None
        if parts is None:
            out.append(
                _v(
                    file_name,
                    n,
                    "index-entry",
                    "not an index entry: write '- [name](file.md) — description' "
                    "(blank lines, # headings and <!-- comments --> are allowed too)",
                )
            )
            continue
        name, file, description = parts
        if len(raw) > MAX_INDEX_LINE:
            out.append(
                _v(
                    file_name,
                    n,
                    "index-line-length",
                    f"the entry is {len(raw)} characters, {len(raw) - MAX_INDEX_LINE} over "
                    f"the limit of {MAX_INDEX_LINE}: shorten the description",
                )
            )
        if "," in name:
            out.append(
                _v(
                    file_name,
                    n,
                    "index-name-comma",
                    f"the name {_show(name)} holds a comma: use another word or a dash",
                )
            )
        if split_file_name(file) is None:
            out.append(
                _v(
                    file_name,
                    n,
                    "index-entry",
                    f"the entry points at {_show(file)}, which is not a memory file name "
                    f"(<type>_<slug>.md in this directory)",
                )
            )
            continue
        entries.append(IndexEntry(n, name, file, description, raw))
    return entries, out


def _index_text_lines(data: bytes | None) -> list[str] | None:
    """The lines of an index (LF endings, no BOM; the last one empty when the
    file ends with a line break); [] for no file; None when the bytes are not
    text an index can be (too large, binary, not UTF-8)."""
    if data is None:
        return []
    if len(data) > MAX_INDEX_BYTES or b"\0" in data:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    return text.replace("\r\n", "\n").split("\n") if text else []


def _entry_keys(name: str, lines: list[str]) -> dict[int, tuple[str, int]]:
    """The entry lines of an index by line number (0-based): the file each
    links and which entry for that file it is (an index may, wrongly, name a
    file twice)."""
    entries, _ = parse_index(name, "\n".join(lines).encode())
    seen: dict[str, int] = {}
    out = {}
    for e in entries:
        n = seen.get(e.file, 0)
        seen[e.file] = n + 1
        out[e.line - 1] = (e.file, n)
    return out


def merge_index(
    name: str,
    won: bytes | None,
    lost: bytes | None,
    base: bytes | None,
    *,
    keep: set[str] | None = None,
    gone: set[str] | None = None,
) -> tuple[bytes, bool] | None:
    """Two versions of an index changed from ``base``, merged by entry:
    (the merged bytes, whether an entry changed differently on both sides).

    Each entry line is keyed by the note it links; per key three-way against
    the base (one side unchanged: the other's; both changed differently: a
    conflict, ``won``'s line; an entry deleted loses to one changed). Other
    lines (headings, comments, blank lines) are ``won``'s. Order: ``won``'s
    lines, then the entries only ``lost`` has, in its order. Line endings
    become LF. None when a version is not text an index can be (the caller
    merges the file as a whole). Sync passes the later revision's version as
    ``won``; a memory folder merging what a sync brought passes its own.

    ``keep``: the notes the merged directory holds; ``gone``: those a version
    held that the merge removed. An entry for a note gone is dropped, and a
    kept note whose entry the merge dropped (deleted on one side while the
    note changed on the other: the deletion lost) gets its line back.
    (Entries for notes no version ever held are left as they are.)"""
    lw, ll, lo = _index_text_lines(won), _index_text_lines(lost), _index_text_lines(base)
    if lw is None or ll is None or lo is None:
        return None
    ew, el, eo = _entry_keys(name, lw), _entry_keys(name, ll), _entry_keys(name, lo)
    vw = {k: lw[i] for i, k in ew.items()}
    vl = {k: ll[i] for i, k in el.items()}
    vo = {k: lo[i] for i, k in eo.items()}
    clash = False

    def pick(k: tuple[str, int]) -> str | None:
        nonlocal clash
        line, conflicted = merge3(vw.get(k), vl.get(k), vo.get(k), deletion_loses)
        clash = clash or conflicted
        return line

    ended = bool(lw) and lw[-1] == ""
    body = lw[:-1] if ended else lw
    out: list[str] = []
    for i, line in enumerate(body):
        if i not in ew:
            out.append(line)
        elif (chosen := pick(ew[i])) is not None:
            out.append(chosen)
    for i in sorted(el):
        k = el[i]
        if k not in vw and (chosen := pick(k)) is not None:
            out.append(chosen)
    if gone:
        out = [ln for ln in out if _linked_file(name, ln) not in gone]
    if keep is not None:
        listed = {_linked_file(name, ln) for ln in out}
        for versions in (vw, vl, vo):
            for (f, n), ln in versions.items():
                if n == 0 and f in keep and f not in listed:
                    out.append(ln)
                    listed.add(f)
    if ended:
        out.append("")
    return "\n".join(out).encode(), clash


def _linked_file(name: str, line: str) -> str | None:
    """The note an index line links, None when it is not an entry."""
    entries, _ = parse_index(name, line.encode())
    return entries[0].file if entries else None
