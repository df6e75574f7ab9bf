"""The rules a memory directory follows: note files, their frontmatter, the index.

Pure validation and rendering: nothing here touches a store, prints or exits.
``histstore.memory`` calls it before every write and ``hs memory check`` reports
what :func:`check_dir` finds. Each finding is a :class:`Violation` whose ``rule``
is a stable id (scripts match on it; the wording of ``message`` may change):

=====================  ====================================================
``file-name``          a ``*.md`` file that is neither the index nor
                       ``<type>_<slug>.md`` (or a second index file)
``frontmatter``        no ``---`` frontmatter, not closed, or not a mapping
``yaml``               the frontmatter is not valid YAML (line = the real line)
``name``               ``name`` missing, not a string, empty or holding a comma
``description``        ``description`` missing, not a string or empty
``type``               ``type`` missing or not one of :data:`TYPES`
``type-mismatch``      ``type`` differs from the type in the file name
``why``                a feedback/project note without ``**Why:**``
``how-to-apply``       a feedback/project note without ``**How to apply:**``
``model-line``         a model note without a ``models: <globs>`` first line
``index-entry``        an index line that is not an entry, heading, comment
                       or blank, or an entry naming no memory file
``index-line-length``  an index entry over :data:`MAX_INDEX_LINE` characters
``index-name-comma``   an index entry whose name holds a comma
``index-missing``      a memory file with no index entry (or no index at all)
``index-dangling``     an index entry naming a file that does not exist
``index-duplicate``    a second index entry for one memory file
``encoding``           not UTF-8
``binary``             holds a NUL byte
``size``               over :data:`MAX_NOTE_BYTES` / :data:`MAX_INDEX_BYTES`
``symlink``            a symlink leading outside the directory, or nowhere
``unreadable``         the file cannot be opened (permissions)
=====================  ====================================================

A note file::

    ---
    name: Use tabs
    description: The user wants tabs, not spaces, in Go files
    type: feedback
    ---

    Indent Go with tabs. **Why:** gofmt. **How to apply:** every .go edit.

The index, ``MEMORY.md``, holds one line per note, ``- [<name>](<file>) — <description>``,
plus blank lines, ``#`` headings and one-line ``<!-- comments -->``.

Model notes: a note named ``model_notes_<something>`` applies only to some models.
Its first non-blank body line is ``models: <pattern>|<pattern>...``. A pattern is an
fnmatch glob (case-insensitive) matched against the model's bare name (see
:func:`bare_model_name`) and against its whole lower-cased name; the pattern
``small`` instead matches every model whose bare name holds one of the words
:data:`SMALL_WORDS` (``haiku``, ``mini``, ``nano``, ``small``, ``flash``, ``lite``)
as a word of its own between hyphens, dots or other separators, so
``gpt-4o-mini`` and ``gemini-2.5-flash`` are small but ``gemini-2.5-pro`` is not
(its ``gemini`` merely contains ``mini``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode

from histstore.errors import BadInput

TYPES = ("feedback", "project", "user", "reference")


MAX_SLUG = 40


MAX_INDEX_LINE = 150


MAX_NOTE_BYTES = 64 * 1024


MAX_INDEX_BYTES = 64 * 1024


INDEX_FILE = "MEMORY.md"


#: File names (compared case-insensitively) that are the index, never a memory.
#: The first is the one histstore writes.
INDEX_NAMES = ("MEMORY.md", "INDEX.md")


MODEL_NOTE_PREFIX = "model_notes_"


NEEDS_WHY = ("feedback", "project")


WHY = "**Why:**"


HOW_TO_APPLY = "**How to apply:**"


_TYPE_LIST = ", ".join(TYPES)


_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9-]*")


_FILE_RE = re.compile(rf"({'|'.join(TYPES)})_([a-z0-9][a-z0-9-]{{0,{MAX_SLUG - 1}}})\.md")


_MODELS_RE = re.compile(r"models:(?P<value>.*)")


_BOM = b"\xef\xbb\xbf"


_SHOW_MAX = 60


_INDEX_INDEX = {n.lower(): i for i, n in enumerate(INDEX_NAMES)}


def is_index_name(name: str) -> bool:
    """Whether ``name`` is an index file (``MEMORY.md``, ``INDEX.md``, in any case)."""
    return name.lower() in _INDEX_INDEX


@dataclass(frozen=True)
class Violation:
    """One broken rule: where (file, 1-based line) and what to do about it."""

    file: str
    line: int
    rule: str
    message: str

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "rule": self.rule, "message": self.message}

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message} [{self.rule}]"


@dataclass(frozen=True)
class Note:
    """A memory note as read from its file. ``body`` is stripped of the blank
    lines that open it and of trailing white space; ``body_line`` is the line of
    the file where it starts."""

    file: str
    type: str
    slug: str
    name: str
    description: str
    frontmatter: dict[str, Any]
    body: str
    body_line: int
    models: list[str] | None


def split_file_name(file_name: str) -> tuple[str, str] | None:
    """``"feedback_use-tabs.md"`` -> ``("feedback", "use-tabs")``; None for any other name."""
    m = _FILE_RE.fullmatch(file_name)
    return (m.group(1), m.group(2)) if m else None


def check_type(type_: str) -> str:
    """``type_`` if it is a memory type, else :class:`BadInput`."""
    if type_ not in TYPES:
        raise BadInput(f"unknown memory type {_show(type_)}", hint=f"use one of {_TYPE_LIST}")
    return type_


def check_slug(slug: str) -> str:
    """``slug`` if it is a valid slug, else :class:`BadInput` with a suggestion."""
    problem = _slug_problem(slug)
    if problem is None:
        return slug
    suggestion = _slugify(slug)
    hint = "use lowercase letters, digits and hyphens, starting with a letter or digit"
    if suggestion and suggestion != slug:
        hint += f", e.g. {suggestion}"
    raise BadInput(f"slug {_show(slug)} {problem}", hint=hint)


def note_file_name(type_: str, slug: str) -> str:
    """The file name of a note, ``<type>_<slug>.md``, after checking both parts."""
    return f"{check_type(type_)}_{check_slug(slug)}.md"


def _slug_problem(slug: str) -> str | None:
    if not slug:
        return "is empty"
    if len(slug) > MAX_SLUG:
        return f"is {len(slug)} characters, over the limit of {MAX_SLUG}"
    if not _SLUG_RE.fullmatch(slug):
        bad = next((c for c in slug if not (c.isascii() and (c.isdigit() or c.islower()))), "")
        if bad and bad != "-":
            return f"holds {bad!r}, which a slug cannot hold"
        return "must start with a letter or digit"
    return None


def _slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:MAX_SLUG].rstrip("-")


def _show(text: str) -> str:
    """A short, one-line, quoted rendering of untrusted text for a message."""
    if len(text) > _SHOW_MAX:
        text = text[: _SHOW_MAX - 3] + "..."
    return repr(text)


def _safe_name(name: str) -> str:
    """A file name as it may appear in a violation: non-printable characters escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _file_name_violation(file_name: str) -> Violation:
    shown = _safe_name(file_name)
    if is_index_name(file_name):
        return _v(shown, 1, "file-name", f"{shown} is an index file, not a memory note")
    hint = f"name it <type>_<slug>.md (type: {_TYPE_LIST}) or move it out of the directory"
    head, sep, rest = file_name.partition("_")
    if sep and head.lower() in TYPES and rest.lower().endswith(".md"):
        slug = _slugify(rest[:-3])
        if slug:
            hint = f"rename it to {head.lower()}_{slug}.md"
    return _v(shown, 1, "file-name", f"{shown} is not a memory file name: {hint}")


def _v(file: str, line: int, rule: str, message: str) -> Violation:
    return Violation(file, line, rule, " ".join(message.split()))


def _dump_field(key: str, value: str) -> str:
    """One ``key: value`` frontmatter line; the value is quoted so YAML gives it back."""
    if value.isprintable():
        out = yaml.safe_dump(
            {key: value}, default_flow_style=False, allow_unicode=True, width=1 << 30
        )
    else:
        # line breaks, tabs, control characters: a double-quoted scalar escapes them
        # all (plain dumping folds some, e.g. U+0085, and loses them)
        out = yaml.safe_dump(
            {key: value},
            default_flow_style=False,
            allow_unicode=True,
            width=1 << 30,
            default_style='"',
        )
        out = key + out[len(key) + 2 :]  # unquote the key: '"name": ...' -> 'name: ...'
    if out.count("\n") != 1 or yaml.safe_load(out) != {key: value}:
        raise BadInput(f"the {key} {_show(value)} cannot be written as frontmatter")
    return out


def render_note(type_: str, name: str, description: str, body: str) -> str:
    """The canonical text of a note file.

    Refuses (:class:`BadInput`) what would break a frontmatter rule: an unknown type,
    an empty name or description, a name holding a comma. The body rules (``why``,
    ``how-to-apply``, ``model-line``) are :func:`parse_note`'s to report.
    """
    check_type(type_)
    if not name.strip():
        raise BadInput("the name is empty", hint="give the note a short title")
    if "," in name:
        raise BadInput(
            f"the name {_show(name)} holds a comma, which the index cannot hold",
            hint="use another word or a dash instead of the comma",
        )
    if not description.strip():
        raise BadInput("the description is empty", hint="say in one line what the note holds")
    text = "---\n" + "".join(
        _dump_field(k, v)
        for k, v in (("name", name), ("description", description), ("type", type_))
    )
    text += "---\n"
    body = body.replace("\r\n", "\n").strip()
    return text + ("\n" + body + "\n" if body else "")


def _decode(file_name: str, data: bytes, limit: int) -> tuple[str | None, list[Violation]]:
    """The text of a note or index file with LF line endings, or the violation."""
    if len(data) > limit:
        return None, [
            _v(
                file_name,
                1,
                "size",
                f"is larger than {limit} bytes ({limit // 1024} KiB); split it or shorten it",
            )
        ]
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        return None, [_v(file_name, line, "binary", "holds a NUL byte: it is not a text file")]
    skip = len(_BOM) if data.startswith(_BOM) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = skip + e.start
        return None, [
            _v(
                file_name,
                data.count(b"\n", 0, at) + 1,
                "encoding",
                f"is not UTF-8 (bad byte at offset {at}): save the file as UTF-8",
            )
        ]
    return text.replace("\r\n", "\n"), []


def _is_fence(line: str) -> bool:
    return line.rstrip() == "---"


#: flow collections ("[", "{") nested deeper than this are refused before any
#: YAML loader runs: the pure-Python one takes seconds to reach its recursion
#: limit on such text, and no note needs it
MAX_FLOW_DEPTH = 200


def too_deep(source: str) -> bool:
    """Whether ``source`` opens more than ``MAX_FLOW_DEPTH`` flow collections
    inside one another (brackets inside quotes count too: a fast upper bound)."""
    if source.count("[") + source.count("{") <= MAX_FLOW_DEPTH:
        return False
    depth = 0
    for ch in source:
        if ch in "[{":
            depth += 1
            if depth > MAX_FLOW_DEPTH:
                return True
        elif ch in "]}" and depth:
            depth -= 1
    return False


def _load_fast(source: str) -> tuple[Any, dict[str, int], list[Violation]] | None:
    """The frontmatter read by libyaml (PyYAML's C loader, when it was built
    with it), which is many times faster; None when it is missing or the
    frontmatter is not plain valid YAML, so that the pure-Python loader reads
    it again and says exactly what is wrong, and where."""
    loader_class = getattr(yaml, "CSafeLoader", None)
    if loader_class is None:
        return None
    loader = loader_class(source)
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node) if node is not None else None
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if isinstance(node, MappingNode):
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.value not in lines:
                lines[key.value] = 2 + source.count("\n", 0, max(0, key.start_mark.index))
    return value, lines, []


def _load_frontmatter(file_name: str, source: str) -> tuple[Any, dict[str, int], list[Violation]]:
    """The YAML value of the frontmatter, the file line of each top-level key, and
    any ``yaml`` violation. ``source`` starts on line 2 of the file."""

    def file_line(index: int) -> int:
        return 2 + source.count("\n", 0, max(0, index))

    def broken(index: int | None, what: str) -> tuple[Any, dict[str, int], list[Violation]]:
        line = file_line(index) if index is not None else 2
        return None, {}, [_v(file_name, line, "yaml", f"frontmatter is not valid YAML: {what}")]

    if too_deep(source):
        return broken(None, "nested too deeply to read: flatten it")
    fast = _load_fast(source)
    if fast is not None:
        return fast
    try:
        loader = yaml.SafeLoader(source)
    except yaml.reader.ReaderError as e:  # a character YAML does not allow
        return broken(e.position, f"character #x{e.character:04x} is not allowed: remove it")
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node) if node is not None else None
    except yaml.reader.ReaderError as e:
        return broken(e.position, f"character #x{e.character:04x} is not allowed: remove it")
    except yaml.MarkedYAMLError as e:
        # the problem's line; but a problem found only at the end (an unclosed quote
        # or bracket) is reported where the unclosed thing starts
        mark = e.problem_mark
        if e.context_mark is not None and (mark is None or mark.index >= len(source.rstrip())):
            mark = e.context_mark
        what = ": ".join(p for p in (e.context, e.problem) if p) or "broken YAML"
        return broken(
            mark.index if mark is not None else None,
            f"{what}; quote values that hold ': ' or ' #' or start with a special character",
        )
    except yaml.YAMLError as e:
        return broken(None, str(e))
    except RecursionError:
        return broken(None, "nested too deeply to read: flatten it")
    finally:
        loader.dispose()
    lines: dict[str, int] = {}
    if isinstance(node, MappingNode):
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.value not in lines:
                lines[key.value] = file_line(key.start_mark.index)
    return value, lines, []


def _split_frontmatter(
    file_name: str, lines: list[str], out: list[Violation]
) -> tuple[dict[str, Any], dict[str, int], int] | None:
    """(the frontmatter mapping, each key's line, the closing fence's index);
    None, with what is wrong in ``out``, when there is no mapping to read."""
    if not lines or not _is_fence(lines[0]):
        out.append(
            _v(
                file_name,
                1,
                "frontmatter",
                "no frontmatter: start the file with a --- line, then name, description "
                "and type, then a closing --- line",
            )
        )
        return None
    close = next((i for i in range(1, len(lines)) if _is_fence(lines[i])), None)
    if close is None:
        out.append(
            _v(
                file_name,
                1,
                "frontmatter",
                "the frontmatter is not closed: add a --- line after it",
            )
        )
        return None
    value, key_lines, bad = _load_frontmatter(file_name, "\n".join(lines[1:close]) + "\n")
    if bad:
        out.extend(bad)
        return None
    if not isinstance(value, dict):
        what = "empty" if value is None else f"a {type(value).__name__}"
        out.append(
            _v(
                file_name,
                2 if value is not None else 1,
                "frontmatter",
                f"the frontmatter is {what}, not a mapping: write name:, description: "
                "and type: lines",
            )
        )
        return None
    return value, key_lines, close


def _check_fields(
    file_name: str,
    frontmatter: dict[str, Any],
    key_lines: dict[str, int],
    parts: tuple[str, str] | None,
    out: list[Violation],
) -> tuple[str | None, str | None, str | None]:
    """(name, description, type) of the frontmatter, each None when it breaks a rule."""

    def field(key: str, rule: str, what: str) -> str | None:
        line = key_lines.get(key, 1)
        v = frontmatter.get(key)
        if key not in frontmatter:
            out.append(_v(file_name, 1, rule, f"the frontmatter has no {key}: add {key}: {what}"))
        elif not isinstance(v, str):
            out.append(_v(file_name, line, rule, f"{key} must be text: put the value in quotes"))
        elif not v.strip():
            out.append(_v(file_name, line, rule, f"{key} is empty: give {what}"))
        else:
            return v
        return None

    name = field("name", "name", "a short title")
    if name is not None and "," in name:
        out.append(
            _v(
                file_name,
                key_lines.get("name", 1),
                "name",
                f"the name {_show(name)} holds a comma, which the index cannot hold: "
                "use another word or a dash",
            )
        )
    description = field("description", "description", "one line saying what the note holds")
    fm_type = field("type", "type", f"one of {_TYPE_LIST}")
    if fm_type is not None and fm_type not in TYPES:
        out.append(
            _v(
                file_name,
                key_lines.get("type", 1),
                "type",
                f"type {_show(fm_type)} is not a memory type: use one of {_TYPE_LIST}",
            )
        )
        fm_type = None
    if parts is not None and fm_type is not None and fm_type != parts[0]:
        out.append(
            _v(
                file_name,
                key_lines.get("type", 1),
                "type-mismatch",
                f"type is {fm_type} but the file name says {parts[0]}: change one to match",
            )
        )
    return name, description, fm_type


def _check_body(
    file_name: str, note_type: str | None, body: str, body_line: int, out: list[Violation]
) -> None:
    """A feedback or project note says why, and how to apply it."""
    if note_type not in NEEDS_WHY:
        return
    for marker, rule, what in (
        (WHY, "why", "why the rule holds"),
        (HOW_TO_APPLY, "how-to-apply", "when and how to apply it"),
    ):
        if marker not in body:
            out.append(
                _v(
                    file_name,
                    body_line,
                    rule,
                    f"a {note_type} note needs {marker} in its body: say {what}",
                )
            )


def _model_globs(
    file_name: str, name: str | None, first_line: str | None, body_line: int, out: list[Violation]
) -> list[str] | None:
    """A model note's globs (its first body line ``models: ...``); None for any other note."""
    if name is None or not name.startswith(MODEL_NOTE_PREFIX) or name == MODEL_NOTE_PREFIX:
        return None
    m = _MODELS_RE.fullmatch(first_line.strip()) if first_line is not None else None
    globs = [g.strip() for g in m.group("value").split("|")] if m else []
    globs = [g for g in globs if g]
    if globs:
        return globs
    out.append(
        _v(
            file_name,
            body_line,
            "model-line",
            "a model note must open its body with a line 'models: <glob>|<glob>' "
            "(or 'models: small')",
        )
    )
    return None


def parse_note(file_name: str, data: bytes) -> tuple[Note | None, list[Violation]]:
    """Every rule for one note file (its name and its bytes).

    The note is None when the file cannot be read as a note at all (bad name, bad
    bytes, no frontmatter, broken YAML); otherwise it comes back even when some
    rule is broken, so check the violations. ``Note.type`` is the file name's type.
    """
    out: list[Violation] = []
    parts = split_file_name(file_name)
    if parts is None:
        out.append(_file_name_violation(file_name))
    text, bad = _decode(file_name, data, MAX_NOTE_BYTES)
    if text is None:
        return None, out + bad
    lines = text.split("\n")
    split = _split_frontmatter(file_name, lines, out)
    if split is None:
        return None, out
    frontmatter, key_lines, close = split
    name, description, fm_type = _check_fields(file_name, frontmatter, key_lines, parts, out)
    first = next((i for i in range(close + 1, len(lines)) if lines[i].strip()), None)
    body = "\n".join(lines[first:]).rstrip() if first is not None else ""
    body_line = (first if first is not None else close + 1) + 1
    _check_body(file_name, parts[0] if parts is not None else fm_type, body, body_line, out)
    models = _model_globs(
        file_name, name, lines[first] if first is not None else None, body_line, out
    )
    if parts is None:
        return None, out
    note = Note(
        file=file_name,
        type=parts[0],
        slug=parts[1],
        name=name or "",
        description=description or "",
        frontmatter=frontmatter,
        body=body,
        body_line=body_line,
        models=models,
    )
    return note, out
