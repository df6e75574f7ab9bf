"""Scopes and their folders: which memory a command is about, and where it lives.

The system scope and one per project key (``memory/system``,
``memory/p-<16 hex of blake3(project key)>``); a scope's folder is
``--memory-dir``, else ``$MEMORY_DIR``, else ``[memory.dirs]`` in config.toml.
Every folder and every name in it is distrusted: a folder git would track, one
inside the store, a missing one, a name resolving outside, anything but a
regular file, and a file over its size limit are refused. Also the overlay
target that names a note, and the index file's lines as links.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import blake3

from histstore.errors import BadInput, NotFound
from histstore.memory import index as memindex
from histstore.memory import rules as memrules
from histstore.overlay.targets import MEMORY_PREFIX, memory_target, parse_memory_target
from histstore.store.store import Store

PREFIX = "memory/"


SYSTEM = "system"


DEFAULT_INDEX_WARN_TOKENS = 2500


#: the system scope's note that says who the person is (hs memory prompt)
IDENTITY_FILE = "user_identity.md"


INDEX_FILE = "MEMORY.md"


#: the revision kinds that changed files in the directory (undo puts them back)
FILE_KINDS = ("write", "restore")


@dataclass(frozen=True)
class Scope:
    """A memory scope: the system one or one per project key."""

    id: str  # "system" or "p-<16 hex>"
    project: str | None  # the project key, None for the system scope

    @property
    def ref(self) -> str:
        return PREFIX + self.id

    @property
    def label(self) -> str:
        return "system" if self.project is None else f"project {self.project}"


def scope_for(project: str | None) -> Scope:
    """The system scope (None) or the scope of a project key."""
    if project is None:
        return Scope(SYSTEM, None)
    digest = blake3.blake3(project.encode("utf-8")).hexdigest()
    return Scope(f"p-{digest[:16]}", project)


def configured_dirs(store: Store) -> dict[str, str]:
    """``[memory.dirs]`` of config.toml: ``system`` or a project key -> directory."""
    dirs = store.config.get("memory", {}).get("dirs", {})
    if not isinstance(dirs, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in dirs.items()
    ):
        raise BadInput("config.toml: [memory.dirs] must map scope names to directory paths")
    return dirs


def index_warn_tokens(store: Store) -> int:
    value = store.config.get("memory", {}).get("index_warn_tokens", DEFAULT_INDEX_WARN_TOKENS)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise BadInput(
            "config.toml: memory.index_warn_tokens must be a whole number >= 0",
            hint="0 turns the warning off",
        )
    return value


@dataclass(frozen=True)
class MemoryDir:
    """The memory directory of a scope, and where that choice came from."""

    scope: Scope
    path: Path  # resolved
    source: str  # "--memory-dir", "MEMORY_DIR", "config"


def _in_version_control(path: Path) -> bool:
    """Would git track files in ``path``? (inside a work tree and not ignored)"""
    top = next((d for d in (path, *path.parents) if (d / ".git").exists()), None)
    if top is None:
        return False
    try:
        ignored = subprocess.run(
            ["git", "-C", str(top), "check-ignore", "-q", str(path / "MEMORY.md")],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return True  # no git to ask: a work tree is a work tree
    return ignored.returncode != 0


def memory_dir(
    store: Store,
    scope: Scope,
    given: Path | None = None,
    *,
    use_env: bool = True,
    given_as: str = "--memory-dir",
) -> MemoryDir:
    """``--memory-dir``, else ``$MEMORY_DIR``, else the folder config.toml names.

    Every path is untrusted: one inside a git work tree (not ignored) is
    refused, and a missing directory is never created here."""
    if given is not None:
        raw, source = str(given), given_as
    elif use_env and os.environ.get("MEMORY_DIR"):
        raw, source = os.environ["MEMORY_DIR"], "MEMORY_DIR"
    else:
        dirs = configured_dirs(store)
        key = SYSTEM if scope.project is None else scope.project
        if key not in dirs:
            raise NotFound(
                f"no memory directory for the {scope.label} scope",
                hint="pass --memory-dir DIR, set MEMORY_DIR, or name one with "
                "`hs memory dir --set DIR`",
            )
        raw, source = dirs[key], "config"
    if "\0" in raw:
        raise BadInput(f"{source} holds a NUL character")
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    if not path.exists():
        raise NotFound(
            f"{source} {path} does not exist",
            hint=f"create it first (mkdir -p {path}); hs does not create memory directories",
        )
    if not path.is_dir():
        raise BadInput(f"{source} {path} is not a directory")
    path = path.resolve()
    root = store.root.resolve()
    if path == root or path.is_relative_to(root) or root.is_relative_to(path):
        raise BadInput(
            f"{source} {path} is inside the store (or holds it)",
            hint="keep memory in its own folder, apart from the store",
        )
    if _in_version_control(path):
        raise BadInput(
            f"{source} is inside version control ({path})",
            hint="keep memory outside a git work tree, or list it in .gitignore",
        )
    return MemoryDir(scope, path, source)


def inside(directory: Path, name: str) -> Path:
    """The file ``name`` of ``directory``; refused when it would resolve outside."""
    if not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        raise BadInput(f"{name!r} is not a file name in the memory directory")
    path = directory / name
    if path.is_symlink() or not path.resolve().is_relative_to(directory):
        raise BadInput(
            f"{name} resolves outside the memory directory {directory}",
            hint="memory files must be regular files inside the directory (no symlinks)",
        )
    return path


def read_files(directory: Path) -> dict[str, bytes]:
    """The files a revision records: the top-level regular ``*.md`` files (the
    notes and the index). Symlinks are refused, other files ignored."""
    out: dict[str, bytes] = {}
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.name.startswith(".") or not entry.name.lower().endswith(".md"):
            continue
        if entry.is_symlink() and not _leads_inside(Path(entry.path), directory):
            raise BadInput(
                f"{entry.name} in {directory} is a symlink leading outside it",
                hint="memory files must be regular files inside the directory",
            )
        if _is_file(entry):
            data = read_regular(
                Path(entry.path), max(memrules.MAX_NOTE_BYTES, memrules.MAX_INDEX_BYTES)
            )
            if data is not None:
                out[entry.name] = data
    return out


def _is_file(entry: os.DirEntry[str]) -> bool:
    """Whether an entry is a file (a symlink's target); a loop is none."""
    try:
        return entry.is_file()
    except OSError as e:
        if e.errno == errno.ELOOP:
            return False
        raise


def _leads_inside(link: Path, directory: Path) -> bool:
    """Whether a symlink leads to a path inside ``directory``; a loop leads
    nowhere (like a dangling link: not a file, so never recorded)."""
    try:
        return link.resolve().is_relative_to(directory.resolve())
    except (RuntimeError, OSError):  # RuntimeError: a symlink loop (Python 3.11)
        return True


def read_regular(path: Path, limit: int = memrules.MAX_NOTE_BYTES) -> bytes | None:
    """A memory file's bytes; None when there is none. Anything but a regular
    file (a FIFO, a device, a folder) is refused before it is opened, and so is
    a file over ``limit`` bytes."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:  # a symlink loop leads nowhere: no file
            return None
        raise
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"{path} is not a regular file", hint="memory files are plain text files")
    if st.st_size > limit:
        raise BadInput(
            f"{path.name} is {st.st_size} bytes, over the {limit}-byte limit of a memory file",
            hint="shorten it; `hs memory check` lists every problem",
        )
    return path.read_bytes()


def redacted(store: Store, data: bytes) -> bytes:
    """A memory file's bytes as the store keeps them: redacted, also when they
    are not UTF-8 (hs memory check refuses such a file; a snapshot keeps it)."""
    return store.redactor.redact_bytes(data)


_LINK_RE = re.compile(r"\]\(([^)]+)\)")


#: a file name a line may mention, link or not (``user_x.md``)
_FILE_RE = re.compile(r"[^\s\[\]()<>/\\\"'`*]+\.md(?![A-Za-z0-9]|\.[A-Za-z0-9])", re.I)


def link_target(raw: str) -> str:
    """The file a Markdown link's target names, as a reader follows it:
    ``<…>`` unwrapped, a title, ``#fragment`` and ``?query`` cut, ``%xx``
    decoded, leading ``./`` dropped."""
    t = raw.strip()
    if t.startswith("<") and ">" in t:
        t = t[1 : t.index(">")]
    t = t.split()[0] if t.split() else ""
    t = unquote(t.split("#", 1)[0].split("?", 1)[0])
    while t.startswith("./"):
        t = t[2:]
    return t


def index_link(line: str) -> str | None:
    """The note an index line is about: the file of its entry as the index
    reads it (a name may hold "](x)"), else its first link's target."""
    file = memindex.entry_file(line)
    if file is not None:
        return file
    m = _LINK_RE.search(line)
    return link_target(m.group(1)) if m else None


def index_lines(text: str) -> list[str]:
    """A memory file's lines with their endings, split at line feeds only, as
    the index is read (and diff(1) splits): a form feed or U+2028 is inside a
    line, not between two."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _names_any(line: str, names: Callable[[str], bool]) -> bool:
    """Whether a line names a note ``names`` holds, by its entry, by any link
    in it in any form a reader follows, or by the file's name written out (a
    withheld note's line is never kept for a misread)."""
    file = index_link(line)
    if file is not None and names(file):
        return True
    # (every link to a note names its file: the links are among these)
    for t in _FILE_RE.findall(unquote(line)):
        t = t.strip("_~")  # emphasis around it
        if names(t) or names(t.lower()):
            return True
    return False


def split_index(data: bytes, withheld: set[str]) -> tuple[list[str], list[str]]:
    """An index's lines (with their endings): (the others, those of withheld notes)."""
    mine: list[str] = []
    held: list[str] = []
    for ln in index_lines(data.decode("utf-8", "replace")):
        (held if index_link(ln) in withheld else mine).append(ln)
    return mine, held


def join_index_lines(lines: list[str], extra: list[str]) -> bytes:
    out = list(lines)
    if out and extra and not out[-1].endswith("\n"):
        out[-1] += "\n"
    return "".join(out + extra).encode("utf-8")


def drop_index_lines(data: bytes, hidden: Callable[[str], bool]) -> bytes:
    """An index without the lines of the notes ``hidden`` names (exclusions:
    not even a note's name and description are handed out)."""
    lines = index_lines(data.decode("utf-8", "replace"))
    return "".join(ln for ln in lines if not _names_any(ln, hidden)).encode()


def index_file(directory: Path) -> str:
    """The directory's index: ``MEMORY.md``, else another name in any case
    (``memory.md``, ``INDEX.md``) that is there, else ``MEMORY.md`` (created)."""
    if (directory / INDEX_FILE).is_file():
        return INDEX_FILE
    found = memindex.index_order(e.name for e in os.scandir(directory) if e.is_file())
    return found[0] if found else INDEX_FILE


TARGET_PREFIX = MEMORY_PREFIX


def target_id(scope: Scope, file: str) -> str:
    """The overlay target naming a note: ``memory@<scope>@<type>@<slug>``."""
    split = memrules.split_file_name(file)
    if split is None:
        raise BadInput(f"{file} is not a memory note")
    return memory_target(scope.id, split[0], split[1])


parse_target = parse_memory_target
