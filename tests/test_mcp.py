"""`hs mcp install|uninstall` as a person runs it, and the tools as plain
functions (histstore.mcp.tools, no MCP): the project a call is about, paging,
argument checks, and a proposed note brought in by `hs memory write --from`."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from helpers import HS, turn_record, write_turns

from histstore.mcp import history, tools
from histstore.mcp import install as reg
from histstore.mcp.base import Env
from histstore.ops.importing import import_paths
from histstore.store.store import Store

# ------------------------------------------------------------------ install


def test_install_claude_code_writes_the_user_scope_entry(hs: HS, tmp_path: Path) -> None:
    hs("init")
    path = Path.home() / ".claude.json"
    path.write_text('{\n  "numStartups": 3,\n  "projects": {}\n}\n')
    r = hs("mcp", "install", "claude-code")
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines[0] == (
        f"registered histstore with claude-code in {path} "
        f"(the previous file is kept as {path}.hs-backup)"
    )
    assert lines[2] == "  check it with `claude mcp get histstore`; restart the agent to load it"
    data = json.loads(path.read_text())
    assert data["numStartups"] == 3 and data["projects"] == {}
    entry = data["mcpServers"]["histstore"]
    store = str(tmp_path / "store")
    assert entry["type"] == "stdio" and entry["alwaysLoad"] is True
    assert entry["args"][-3:] == ["--store", store, "mcp"]
    assert lines[1] == "  command: " + " ".join([entry["command"], *entry["args"]])
    before = path.read_bytes()
    again = hs("mcp", "install", "claude-code")
    assert again.exit_code == 0
    assert again.stdout.splitlines()[0] == (
        f"histstore is already registered with claude-code in {path}: nothing changed"
    )
    assert path.read_bytes() == before
    gone = hs("mcp", "uninstall", "claude-code")
    assert gone.exit_code == 0 and gone.stdout.startswith(f"removed histstore from {path}")
    assert path.read_text() == '{\n  "numStartups": 3,\n  "projects": {}\n}\n'
    assert hs("mcp", "uninstall", "claude-code").stdout == (
        f"histstore is not registered with claude-code in {path}: nothing changed\n"
    )


def test_install_codex_writes_its_config_toml(hs: HS, tmp_path: Path) -> None:
    hs("init")
    cfg = Path.home() / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text('# mine\nmodel = "gpt-5"  # kept\n')
    r = hs("--store", str(tmp_path / "store"), "mcp", "install", "codex", "--json")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["changed"] and out["file"] == str(cfg) and out["backup"] == f"{cfg}.hs-backup"
    text = cfg.read_text()
    assert text.startswith('# mine\nmodel = "gpt-5"  # kept\n\n[mcp_servers.histstore]\n')
    server = tomllib.loads(text)["mcp_servers"]["histstore"]
    assert server == out["entry"]
    assert server["args"][-3:] == ["--store", str(tmp_path / "store"), "mcp"]
    assert server["startup_timeout_sec"] == 20
    assert hs("mcp", "uninstall", "codex").exit_code == 0
    assert cfg.read_text() == '# mine\nmodel = "gpt-5"  # kept\n'


def test_install_honours_the_agents_config_variables(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    assert hs("mcp", "install", "claude-code").exit_code == 0
    assert hs("mcp", "install", "codex").exit_code == 0
    assert json.loads((tmp_path / "cc" / ".claude.json").read_text())["mcpServers"]
    assert tomllib.loads((tmp_path / "cx" / "config.toml").read_text())["mcp_servers"]
    assert not (Path.home() / ".claude.json").exists()
    assert not (Path.home() / ".codex").exists()


def test_install_refuses_a_broken_file_and_an_unknown_agent(hs: HS) -> None:
    cfg = Path.home() / ".codex" / "config.toml"
    cfg.parent.mkdir()
    cfg.write_text("model = [\n")
    r = hs("mcp", "install", "codex")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith(f"hs: error: {cfg} is not valid TOML (")
    assert r.stderr.count("\n") == 1 and "nothing changed" in r.stderr
    assert cfg.read_text() == "model = [\n" and not Path(f"{cfg}.hs-backup").exists()
    claude = Path.home() / ".claude.json"
    claude.write_text("{oops")
    r = hs("mcp", "uninstall", "claude-code")
    assert r.exit_code == 2 and "is not valid JSON" in r.stderr and claude.read_text() == "{oops"
    r = hs("mcp", "install", "cursor")
    assert r.exit_code == 2
    assert r.stderr == ("hs: error: unknown agent 'cursor'; hint: use one of claude-code, codex\n")


def test_install_keeps_a_persons_additions_and_never_touches_a_server_not_its_own(
    hs: HS, tmp_path: Path
) -> None:
    hs("init")
    path = Path.home() / ".claude.json"
    assert hs("mcp", "install", "claude-code").exit_code == 0
    data = json.loads(path.read_text())
    data["mcpServers"]["histstore"]["env"] = {"HS_LOCK_TIMEOUT": "9"}  # added by hand
    data["mcpServers"]["mine"] = {"command": "my-server"}
    path.write_text(json.dumps(data, indent=2) + "\n")
    r = hs("--store", str(tmp_path / "elsewhere"), "mcp", "install", "claude-code")
    assert r.exit_code == 0, r.stderr
    entry = json.loads(path.read_text())["mcpServers"]["histstore"]
    assert entry["env"] == {"HS_LOCK_TIMEOUT": "9"}
    assert entry["args"][-3:] == ["--store", str(tmp_path / "elsewhere"), "mcp"]
    assert hs("mcp", "uninstall", "claude-code").exit_code == 0
    assert json.loads(path.read_text())["mcpServers"] == {"mine": {"command": "my-server"}}
    # a server of another program under the same name: refused both ways
    cfg = Path.home() / ".codex" / "config.toml"
    cfg.parent.mkdir()
    foreign = '[mcp_servers.histstore]\ncommand = "uvx"\nargs = ["some-other-histstore"]\n'
    cfg.write_text(foreign)
    for verb in ("install", "uninstall"):
        r = hs("mcp", verb, "codex")
        assert r.exit_code == 2 and r.stdout == ""
        assert r.stderr == (
            f"hs: error: {cfg}: mcp_servers.histstore is not an entry hs mcp install wrote "
            "(it runs 'uvx'): nothing changed; hint: rename or remove that server in the "
            "file, then run the command again\n"
        )
        assert cfg.read_text() == foreign and not Path(f"{cfg}.hs-backup").exists()


def test_the_registered_command_starts_this_hs() -> None:
    argv = reg.command(["/opt/hs"], Path("/s"))
    assert argv == ["/opt/hs", "--store", "/s", "mcp"]
    assert reg.entry("codex", argv) == {
        "command": "/opt/hs",
        "args": ["--store", "/s", "mcp"],
        "startup_timeout_sec": 20,
    }


# ------------------------------------------------------------------ the tools


def test_the_project_is_the_meta_workspace_then_the_first_file_root_then_the_cwd() -> None:
    meta = {"x-codex-turn-metadata": {"workspaces": {"/w/a": {"has_changes": False}}}}
    roots = ["https://example.com/x", "file:///r/b%20c", "file:///r/d"]
    assert tools.project_of(meta, roots, "/cwd") == ("/w/a", "meta")
    assert tools.project_of({}, roots, "/cwd") == ("/r/b c", "roots")
    assert tools.project_of(None, None, "/cwd") == ("/cwd", "cwd")
    bad = {"x-codex-turn-metadata": {"workspaces": {"relative/x": {}}}}
    assert tools.project_of(bad, [], "/cwd") == ("/cwd", "cwd")
    assert tools.project_of({"x-codex-turn-metadata": "junk"}, None, "/c") == ("/c", "cwd")


def test_pages_are_bounded_and_lose_nothing() -> None:
    text = "".join(f"{i} " * (i % 50) + "\n" for i in range(2000)) + "y" * 20_000
    pages = history.split_pages(text, 1000)
    assert all(len(p) <= 1000 for p in pages) and "".join(pages) == text
    assert history.split_pages("short") == ["short"]


def _env(store: Store, tmp_path: Path, project: str = "/home/dev/src/app") -> Env:
    return Env(store.root, project, tmp_path / "drafts")


def test_the_tools_run_without_mcp(store: Store, tmp_path: Path) -> None:
    recs = [turn_record(1, turn_id="t-1", agent="codex"), turn_record(2, turn_id="t-2")]
    import_paths(store, [write_turns(tmp_path / "t.jsonl", recs)])
    env = _env(store, tmp_path)
    text = tools.call(env, "recall_history", {"query": "login_user"})
    assert re.findall(r"turn (t-\d)", text) == ["t-2", "t-1"]
    assert (
        tools.call(env, "recall_history", {"query": "login_user", "agent": "codex"}).count(
            "session sess-a  turn t-1"
        )
        == 1
    )
    assert tools.call(env, "show_turn", {"turn_id": "t-1"}).startswith("turn t-1\nsession: sess-a")
    with pytest.raises(Exception) as e:
        tools.call(env, "recall_history", {"query": "x", "k": 12})
    assert e.value.line() == (  # type: ignore[attr-defined]
        "hs: error: recall_history: k 12 is out of range: give a number from 1 to 10"
    )


def test_a_proposed_note_is_written_by_memory_write_from_its_draft(
    hs: HS, store: Store, tmp_path: Path
) -> None:
    mem = tmp_path / "mem"
    mem.mkdir()
    assert hs("memory", "dir", "--set", str(mem)).exit_code == 0
    env = _env(Store.open(store.root), tmp_path)
    text = tools.call(
        env,
        "memory_propose",
        {
            "type": "feedback",
            "slug": "use-tabs",
            "name": "Use tabs",
            "description": "Indent with tabs",
            "body": "Tabs.\n\n**Why:** the linter.\n\n**How to apply:** everywhere.",
            "scope": "system",
        },
    )
    assert list(mem.iterdir()) == []  # nothing written to memory
    confirm = re.search(r"^  (hs memory write --from .+)$", text, re.M).group(1)  # type: ignore[union-attr]
    assert "--project" not in confirm
    draft = confirm.split("--from ", 1)[1]
    assert f"{mem / 'MEMORY.md'} gains one line:\n  + - [Use tabs](feedback_use-tabs.md)" in text
    r = hs("memory", "write", "--from", draft, "--yes")
    assert r.exit_code == 0, r.stderr
    assert (mem / "feedback_use-tabs.md").read_text() == Path(draft).read_text()
    # proposing it again: the note is there now, so the draft revises it
    again = tools.call(
        env,
        "memory_propose",
        {
            "type": "feedback",
            "slug": "use-tabs",
            "name": "Use tabs",
            "description": "Indent with tabs, always",
            "body": "Tabs.\n\n**Why:** the linter.\n\n**How to apply:** everywhere.",
        },
    )
    assert "--revise feedback_use-tabs.md" in again and "changes one line" in again


def test_recent_sessions_reads_only_new_revisions_and_follows_the_refs(
    hs: HS, store: Store, tmp_path: Path
) -> None:
    from histstore.overlay import reads

    import_paths(store, [write_turns(tmp_path / "a.jsonl", [turn_record(1, session_id="s-1")])])
    cache: dict[str, object] = {}
    first = reads.sessions(store, cache=cache)  # type: ignore[arg-type]
    assert [i.session.session_id for i in first] == ["s-1"] and len(cache) == 1
    rec = turn_record(2, session_id="s-1", asked_at="2026-04-01T10:00:00Z")
    import_paths(store, [write_turns(tmp_path / "b.jsonl", [rec])])
    again = reads.sessions(store, cache=cache)  # type: ignore[arg-type]
    assert again[0].turns == 2 and len(cache) == 1  # the old revision is dropped
    assert hs("undo").exit_code == 0  # the ref moves back to a revision read before
    back = reads.sessions(Store.open(store.root), cache=cache)  # type: ignore[arg-type]
    assert back[0].turns == 1 and list(cache) == list(store.session_refs().values())


@pytest.mark.parametrize("how", ["symlink", "trailing-slash"])
def test_the_memory_tools_map_the_project_as_the_cli_does(
    hs: HS, store: Store, tmp_path: Path, how: str
) -> None:
    """A project named through a link (roots, ``_meta``), or with a trailing
    separator, is the scope `hs memory --project` gives that directory."""
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    if how == "symlink":
        (real / ".git").mkdir()
        (tmp_path / "link").symlink_to(real)
        named = str(tmp_path / "link" / "src")
    else:
        named = str(real) + "/"
    mem = tmp_path / "mem"
    mem.mkdir()
    assert hs("memory", "dir", "--project", str(real), "--set", str(mem)).exit_code == 0
    body = "Tox runs CI.\n\n**Why:** one place.\n\n**How to apply:** run tox."
    args = ["--type", "project", "--slug", "ci-tox", "--name", "CI runs tox"]
    args += ["--description", "CI is tox", "--body", body, "--yes"]
    r = hs("memory", "write", "--project", str(real), *args)
    assert r.exit_code == 0, r.stderr
    env = _env(Store.open(store.root), tmp_path, named)
    assert "project_ci-tox.md" in tools.call(env, "memory_list", {})
    assert "CI runs tox" in tools.call(env, "memory_prompt", {"model": "gpt-5"})
    assert tools.call(env, "memory_read", {"name": "ci-tox"}).startswith("# project_ci-tox.md")


@pytest.mark.parametrize("inside", [False, True])
def test_drafts_never_go_into_a_configured_memory_folder(
    hs: HS, store: Store, tmp_path: Path, inside: bool
) -> None:
    """A memory folder config.toml names is one even while it has no index."""
    mem = tmp_path / "mem"
    mem.mkdir()
    assert hs("memory", "dir", "--set", str(mem)).exit_code == 0
    drafts = mem / "drafts" if inside else mem
    env = Env(Store.open(store.root).root, "/home/dev/src/app", drafts)
    note = {"type": "user", "slug": "dr1", "name": "Dr", "description": "A draft"}
    note["body"] = "Works in vim."
    with pytest.raises(Exception) as e:
        tools.call(env, "memory_propose", note)
    where = "is inside" if inside else "is"
    assert e.value.line().startswith(  # type: ignore[attr-defined]
        f"hs: error: the drafts folder {drafts} {where} the system memory directory {mem}"
    )
    assert list(mem.rglob("*")) == []


@pytest.mark.parametrize("tool", ["recall_history", "recent_sessions"])
def test_days_too_far_back_is_refused_in_the_tools_own_words(
    store: Store, tmp_path: Path, tool: str
) -> None:
    """Not the CLI's ``--since '3000000d' reaches before year 1``: the tool
    has no --since."""
    args: dict[str, object] = {"days": 3_000_000}
    if tool == "recall_history":
        args["query"] = "login"
    with pytest.raises(Exception) as e:
        tools.call(_env(store, tmp_path), tool, args)
    assert e.value.line().startswith(  # type: ignore[attr-defined]
        f"hs: error: {tool}: days 3000000 is out of range: give a number from 1 to "
    )
