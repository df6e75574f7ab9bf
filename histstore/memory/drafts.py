"""Drafts: a note proposed for a person to confirm, checked and kept outside memory.

An agent may propose a note but never write one: :func:`propose` checks the
draft against every memory rule and, when it keeps them all, shows what
``hs memory write`` would do with it (the preview, against the scope's folder
when it has one) and writes it as a draft file in a folder of its own, for a
person to bring in with ``hs memory write --from``. A draft folder is never a
memory folder (one with an index) nor inside the store, and no file in it is
ever written over: a draft's folder is named by its content, so the same
proposal lands on the same file and a different one on another.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import blake3
import yaml

from histstore.errors import BadInput, HistError
from histstore.memory import index as memindex
from histstore.memory import rules as memrules
from histstore.memory.scopes import MemoryDir, Scope, configured_dirs, inside
from histstore.memory.writes import plan_write
from histstore.overlay.markers import Overlay
from histstore.overlay.visibility import View, Visibility
from histstore.store.fsutil import atomic_write
from histstore.store.store import Store


def check_folder(store: Store, folder: Path, what: str) -> Path:
    """A folder drafts may be written to (created when missing): outside the
    store, and not a memory folder."""
    folder = store.check_outside(folder, what)
    if folder.exists() and not folder.is_dir():
        raise BadInput(f"{what} {folder} is not a directory")
    hint = "drafts go to a folder of their own; `hs memory write --from` brings one in"
    if folder.is_dir() and memindex.index_order(os.listdir(folder)):
        raise BadInput(f"{what} {folder} is a memory directory (it has an index)", hint=hint)
    here = folder.resolve()
    for scope, d in configured_dirs(store).items():
        mdir = Path(d).expanduser().resolve()
        if here == mdir or here.is_relative_to(mdir):
            where = "is" if here == mdir else "is inside"
            raise BadInput(
                f"{what} {folder} {where} the {scope} memory directory {mdir}", hint=hint
            )
    return folder


def _violation(file: str, rule: str, e: HistError) -> memrules.Violation:
    hint = f": {e.hint}" if e.hint else ""
    return memrules._v(file, 1, rule, f"{e.message}{hint}")


def check_draft(
    type_: str, slug: str, name: str, description: str, body: str
) -> tuple[str, str, list[memrules.Violation]]:
    """(file name, note text, every rule the note breaks). The text is the
    canonical rendering when no rule is broken; otherwise a plain rendering
    of the fields, so the note's rules can all be checked at once."""
    file = f"{type_}_{slug}.md"
    out: list[memrules.Violation] = []
    ok_type = type_ in memrules.TYPES
    for rule, check, value in (
        ("type", memrules.check_type, type_),
        ("slug", memrules.check_slug, slug),
    ):
        try:
            check(value)
        except BadInput as e:
            out.append(_violation(file, rule, e))
    for what, value in (("name", name), ("description", description)):
        if any(c in value for c in "\r\n\x00"):
            out.append(
                memrules._v(file, 1, what, f"the {what} holds a line break: give it on one line")
            )
    plain = "---\n" + yaml.safe_dump(
        {"name": name, "description": description, "type": type_},
        sort_keys=False,
        allow_unicode=True,
        width=1 << 30,
    )
    plain += "---\n" + ("\n" + body.replace("\r\n", "\n").strip() + "\n" if body.strip() else "")
    # checked under a valid file name when the given one is not (already reported)
    as_file = file if not out else f"{type_ if ok_type else 'reference'}_{'draft'}.md"
    _, violations = memrules.parse_note(as_file, plain.encode("utf-8"))
    out += [
        memrules.Violation(file, v.line, v.rule, v.message)
        for v in violations
        if ok_type or v.rule not in ("type", "type-mismatch")
    ]
    if out:
        return file, plain, out
    try:
        text = memrules.render_note(type_, name.strip(), description.strip(), body)
        memindex.index_line(name, file, description)
    except BadInput as e:
        return file, plain, [_violation(file, "index-line", e)]
    _, again = memrules.parse_note(file, text.encode("utf-8"))
    return file, text, again


@dataclass
class Proposal:
    """What :func:`propose` found: the violations, or the preview and the draft."""

    scope: Scope
    file: str
    text: str
    violations: list[memrules.Violation]
    #: the preview against the scope's folder (None: no folder, or violations)
    preview: dict[str, Any] | None = None
    #: why there is no preview when the note keeps every rule
    no_preview: str | None = None
    draft: Path | None = None
    confirm: str | None = None  # the command that writes it
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope.id,
            "file": self.file,
            "ok": not self.violations,
            "violations": [v.as_json() for v in self.violations],
            "text": self.text,
            "preview": self.preview,
            "no_preview": self.no_preview,
            "draft": str(self.draft) if self.draft else None,
            "confirm": self.confirm,
        }


def propose(
    store: Store,
    scope: Scope,
    mdir: MemoryDir | None,
    folder: Path,
    *,
    type_: str,
    slug: str,
    name: str,
    description: str,
    body: str,
    no_folder: str | None = None,
) -> Proposal:
    """Check a note; when it keeps every rule, preview it against ``mdir``
    (the scope's folder; None: ``no_folder`` says why there is none) and
    write it as a draft under ``folder``. Nothing in a memory folder, the
    store's refs or the overlay changes. The preview never names a note a
    model is not given (View.MEMORY_PROMPT): a draft of one is refused."""
    file, text, violations = check_draft(type_, slug, name, description, body)
    prop = Proposal(scope, file, text, violations)
    if violations:
        return prop
    vis = Visibility(Overlay.read(store))
    if vis.note(View.MEMORY_PROMPT, scope.id, file) is not None:
        prop.violations = [
            memrules._v(
                file, 1, "forgotten", f"{file} is a forgotten note: propose it under another slug"
            )
        ]
        return prop
    revise = None
    if mdir is None:
        prop.no_preview = no_folder or f"the {scope.label} scope has no memory folder"
    else:
        path = inside(mdir.path, file)
        revise = file if path.exists() else None
        try:
            plan = plan_write(
                store,
                mdir,
                type_=type_,
                slug=slug,
                name=name,
                description=description,
                body=body,
                revise=revise,
            )
        except HistError as e:
            prop.no_preview = e.line().removeprefix("hs: error: ")
        else:
            shown = plan.preview()
            shown["duplicates"] = [
                d.as_json()
                for d in plan.duplicates
                if vis.note(View.MEMORY_PROMPT, scope.id, d.file) is None
            ]
            prop.preview = shown
    folder = check_folder(store, folder, "the drafts folder")
    digest = blake3.blake3(f"{scope.id}\0{text}".encode()).hexdigest()[:12]
    draft = folder / digest / file
    if not draft.exists():
        atomic_write(draft, text.encode("utf-8"))
    prop.draft = draft
    cmd = ["hs", "memory", "write", "--from", str(draft)]
    if scope.project is not None:
        cmd += ["--project", scope.project]
    if revise is not None:
        cmd += ["--revise", revise]
    prop.confirm = shlex.join(cmd)
    return prop
