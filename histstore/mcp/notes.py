"""The memory tools: memory_list, memory_read, memory_prompt, memory_propose.

Each reads through memory's read paths for a model (``memory.prompt``:
View.MEMORY_PROMPT, a tombstoned note hidden as well as an excluded one) or,
for a proposal, ``memory.drafts`` (checked, written only as a draft), and
returns the text the model reads.
"""

from __future__ import annotations

from typing import Any

from histstore.errors import HistError, NotFound
from histstore.history.project import local_project_key
from histstore.mcp.base import Env
from histstore.memory import drafts as memdrafts
from histstore.memory.prompt import list_notes, prompt, read_note
from histstore.memory.revisions import load_revision
from histstore.memory.revisions import scopes as memory_scopes
from histstore.memory.scopes import MemoryDir, Scope, memory_dir, scope_for
from histstore.store.store import Store

# ------------------------------------------------------------------ memory


def _scopes(store: Store, env: Env, which: str | None) -> list[Scope]:
    here = scope_for(local_project_key(env.project))
    if which == "project":
        return [here]
    if which == "system":
        return [scope_for(None)]
    if which == "all":
        out = [scope_for(None)]
        for sid, rev in sorted(memory_scopes(store).items()):
            if sid != out[0].id:
                out.append(Scope(sid, load_revision(store, rev).project))
        return out
    return [scope_for(None), here]


def memory_list(env: Env, a: dict[str, Any]) -> str:
    with Store.open(env.store) as store:
        wanted = _scopes(store, env, a["scope"])
        notes = list_notes(store, wanted)
        recorded = bool(memory_scopes(store))
    if not notes:
        if not recorded:
            return "no memory recorded yet: `hs memory snapshot` records a memory folder"
        return "no memory notes in " + " or ".join(f"the {s.label} scope" for s in wanted)
    out: list[str] = []
    for scope in wanted:
        mine = [n for n in notes if n.scope.id == scope.id]
        if not mine:
            continue
        out.append(f"{scope.label}:")
        for n in mine:
            bad = f" [breaks {n.problems} memory rule{'s' if n.problems != 1 else ''}]"
            out.append(
                f"  {n.file} ({n.type}): {n.name} — {n.description}" + (bad if n.problems else "")
            )
    return "\n".join(out)


def memory_read(env: Env, a: dict[str, Any]) -> str:
    with Store.open(env.store) as store:
        wanted = _scopes(store, env, a["scope"])
        if a["scope"] is None:
            wanted.reverse()  # the project's first, then the system's
        scope, file, data = read_note(store, wanted, a["name"])
    return f"# {file} ({scope.label})\n" + data.decode("utf-8", "replace")


def _dirs(store: Store, env: Env) -> tuple[list[MemoryDir], list[str]]:
    """The memory folders of the system scope (config.toml) and of the
    project ($MEMORY_DIR, else config.toml), as ``hs memory prompt --project``
    finds them; why one is missing."""
    dirs: list[MemoryDir] = []
    missing: list[str] = []
    for scope, use_env in (
        (scope_for(None), False),
        (scope_for(local_project_key(env.project)), True),
    ):
        try:
            dirs.append(memory_dir(store, scope, use_env=use_env))
        except HistError as e:
            missing.append(e.message)
    return dirs, missing


def memory_prompt(env: Env, a: dict[str, Any]) -> str:
    with Store.open(env.store) as store:
        dirs, missing = _dirs(store, env)
        if not dirs:
            raise NotFound(
                "no memory directory for the system scope or this project",
                hint="a person names one with `hs memory dir --set DIR`",
            )
        parts = prompt(store, a["model"], dirs)
    out = [f"(no memory folder: {m})" for m in missing]
    total = 0
    for p in parts:
        total += p.tokens
        out.append(f"=== {p.what}: {p.file} ({p.scope}, ~{p.tokens} tokens)")
        out.append(p.text.rstrip("\n"))
        out.append("")
    if not any(p.what == "identity" for p in parts):
        out.append("(no identity memory: the system scope has no user_identity.md)")
    out.append(f"~{total} tokens in all")
    return "\n".join(out)


def memory_propose(env: Env, a: dict[str, Any]) -> str:
    with Store.open(env.store) as store:
        here = scope_for(local_project_key(env.project))
        mdir: MemoryDir | None = None
        why: str | None = None
        choices = {"project": [(here, True)], "system": [(scope_for(None), False)]}
        tries = choices.get(a["scope"]) or [(here, True), (scope_for(None), False)]
        for scope, use_env in tries:
            try:
                mdir = memory_dir(store, scope, use_env=use_env)
                break
            except HistError as e:
                why = why or e.message
        scope = mdir.scope if mdir is not None else tries[0][0]
        prop = memdrafts.propose(
            store,
            scope,
            mdir,
            env.drafts,
            type_=a["type"],
            slug=a["slug"],
            name=a["name"],
            description=a["description"],
            body=a["body"],
            no_folder=why,
        )
    if prop.violations:
        n = len(prop.violations)
        lines = [f"the note breaks {n} memory rule{'s' if n != 1 else ''}; nothing was written:"]
        lines += [f"  {v}" for v in prop.violations]
        lines.append("fix the note and propose it again")
        return "\n".join(lines)
    lines = [
        f"{prop.file} keeps every memory rule. Nothing was written to memory: it is a draft "
        "for a person to confirm with",
        f"  {prop.confirm}",
        f"draft: {prop.draft}",
    ]
    pv = prop.preview
    if pv is None:
        lines.append(f"(no preview: {prop.no_preview})")
        lines += ["─" * 40, prop.text.rstrip("\n"), "─" * 40]
        return "\n".join(lines)
    lines.append(f"it would {'change' if pv['exists'] else 'create'} {pv['path']}:")
    lines += ["─" * 40, pv["content"].rstrip("\n"), "─" * 40]
    if pv["index_replaces"] is None:
        lines.append(f"{pv['index']} gains one line:\n  + {pv['index_line']}")
    elif pv["index_replaces"] == pv["index_line"]:
        lines.append(f"{pv['index']} keeps its line:\n    {pv['index_line']}")
    else:
        lines.append(
            f"{pv['index']} changes one line:\n  - {pv['index_replaces']}\n  + {pv['index_line']}"
        )
    for d in pv["duplicates"]:
        lines.append(f"near-duplicate ({d['why']}): {d['file']} — {d['name']} — {d['description']}")
    return "\n".join(lines)
