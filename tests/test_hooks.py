"""``hs hooks install|uninstall|status``: hs's hooks merged into the agents'
own settings files (every other key and hook kept, a backup beside, a second
install a no-op, uninstall removing exactly what install added), and the
installed command run as the agent runs it. Every file is under the test's
temporary HOME (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_agents import FakeClaude, FakeCodex
from helpers import HS

from histstore.store.store import Store

HOME = lambda: Path(os.environ["HOME"])  # noqa: E731


def settings_file() -> Path:
    return HOME() / ".claude" / "settings.json"


#: a settings file as Claude Code writes it (two-space JSON), with a person's
#: own hooks and other settings
CLAUDE_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git *)"]},
    "hooks": {
        "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "check-bash.sh"}]}
        ],
    },
    "statusLine": {"type": "command", "command": "~/bin/status"},
}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def ok(r: Any) -> Any:
    assert r.exit_code == 0, r.stderr
    assert r.stderr == ""
    return r


def our_hooks(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        ev: [h for g in groups for h in g["hooks"] if "capture" in h.get("command", "")]
        for ev, groups in doc.get("hooks", {}).items()
    }


# --------------------------------------------------------------------------- Claude Code


def test_claude_install_merges_keeps_everything_and_uninstall_gives_the_file_back(
    hs: HS, store_path: Path
) -> None:
    original = json.dumps(CLAUDE_SETTINGS, indent=2) + "\n"
    path = write(settings_file(), original)
    r = ok(hs("hooks", "install", "claude-code"))
    assert f"created the store at {store_path}" in r.stdout
    assert (
        f"claude-code: hooked in {path} (the previous file is kept as {path}.hs-backup)" in r.stdout
    )
    assert "events: Stop, SubagentStop, PreCompact, SessionEnd" in r.stdout
    doc = json.loads(path.read_text())
    assert Path(str(path) + ".hs-backup").read_text() == original
    ours = our_hooks(doc)
    assert sorted(ours) == sorted(
        ["Stop", "SubagentStop", "PreCompact", "SessionEnd", "PreToolUse"]
    )
    assert ours["PreToolUse"] == []
    for ev, timeout in (("Stop", 30), ("SubagentStop", 30), ("PreCompact", 30), ("SessionEnd", 10)):
        (h,) = ours[ev]
        assert h["timeout"] == timeout
        assert h["command"].endswith(f"--store {store_path} capture claude-code")
    # the person's own Stop hook and every other key are as they were
    assert doc["hooks"]["Stop"][0] == CLAUDE_SETTINGS["hooks"]["Stop"][0]
    for key in ("model", "permissions", "statusLine"):
        assert doc[key] == CLAUDE_SETTINGS[key]
    assert '"statusLine": {\n    "type": "command",' in path.read_text()  # layout kept
    # a second install changes nothing, not even the backup
    before = path.read_bytes()
    r = ok(hs("hooks", "install", "claude-code"))
    assert f"claude-code: {path} already hooked in: nothing changed" in r.stdout
    assert path.read_bytes() == before
    r = ok(hs("hooks", "uninstall", "claude-code"))
    assert f"claude-code: removed hs's hooks from {path}" in r.stdout
    assert path.read_text() == original  # byte for byte
    r = ok(hs("hooks", "uninstall", "claude-code"))
    assert "no hook of hs's in" in r.stdout and path.read_text() == original


def test_claude_odd_formatting_and_a_person_s_key_on_our_hook(hs: HS, store: Store) -> None:
    odd = (
        '{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"say hi"}]}]},\n'
        '   "env" : { "A" : "1" } }'
    )
    path = write(settings_file(), odd)
    ok(hs("hooks", "install", "claude-code"))
    text = path.read_text()
    assert '"env" : { "A" : "1" }' in text  # untouched member, untouched bytes
    assert '[{"hooks":[{"type":"command","command":"say hi"}]}, ' in text  # the person's group too
    ok(hs("hooks", "uninstall", "claude-code"))
    assert path.read_text() == odd  # byte for byte
    # a person adds a key to hs's own hook: a second install keeps it
    ok(hs("hooks", "install", "claude-code"))
    doc = json.loads(path.read_text())
    doc["hooks"]["Stop"][1]["hooks"][0]["statusMessage"] = "saving the turn"
    path.write_text(json.dumps(doc))
    r = ok(hs("hooks", "install", "claude-code"))
    assert "already hooked in: nothing changed" in r.stdout
    ok(hs("hooks", "uninstall", "claude-code"))
    assert json.loads(path.read_text()) == json.loads(odd)


def test_claude_config_dir_and_a_projects_local_settings(
    hs: HS, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "ccconf"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(conf))
    ok(hs("hooks", "install", "claude-code"))
    assert (conf / "settings.json").is_file() and not settings_file().exists()
    assert stat.S_IMODE((conf / "settings.json").stat().st_mode) == 0o600  # a new file is private
    proj = tmp_path / "proj"
    proj.mkdir()
    r = ok(hs("hooks", "install", "claude-code", "--project", str(proj)))
    local = proj / ".claude" / "settings.local.json"
    assert f"hooked in {local} (a new file)" in r.stdout
    assert our_hooks(json.loads(local.read_text()))["Stop"]
    r = ok(hs("hooks", "status", "claude-code", "--project", str(proj)))
    assert f"claude-code: {local}" in r.stdout
    ok(hs("hooks", "uninstall", "claude-code", "--project", str(proj)))
    assert json.loads(local.read_text()) == {}


def test_a_settings_file_that_does_not_parse_is_refused_untouched(hs: HS, store: Store) -> None:
    path = write(settings_file(), '{"hooks": {"Stop": [}')
    r = hs("hooks", "install", "claude-code")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.startswith(f"hs: error: {path} is not valid JSON (")
    assert r.stderr.count("\n") == 1
    assert path.read_text() == '{"hooks": {"Stop": [}'
    assert not Path(str(path) + ".hs-backup").exists()
    write(settings_file(), '{"hooks": {"Stop": {"not": "a list"}}}')
    r = hs("hooks", "install", "claude-code")
    assert r.exit_code == 2 and "hooks.Stop is not a list of hook groups" in r.stderr
    r = hs("hooks", "install", "gemini")
    assert r.exit_code == 2 and "unknown agent 'gemini'" in r.stderr


def test_the_installed_command_run_as_claude_code_runs_it(hs: HS, store_path: Path) -> None:
    """The hook command from settings.json, through a shell, with a real-shaped
    payload on stdin: exit 0, nothing on stdout or stderr, the turn stored."""
    ok(hs("hooks", "install", "claude-code"))
    doc = json.loads(settings_file().read_text())
    claude = FakeClaude(HOME() / ".claude")
    claude.turn("fix the login", "fixed")
    env = {**os.environ, "HS_CAPTURE_DETACH": "0"}
    for event in ("Stop", "SessionEnd"):
        (cmd,) = [h["command"] for g in doc["hooks"][event] for h in g["hooks"]]
        payload = claude.payload(event, last_assistant_message="fixed")
        p = subprocess.run(
            cmd, shell=True, input=json.dumps(payload).encode(), capture_output=True, env=env
        )
        assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    r = ok(hs("log", "--json"))
    (turn,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert turn["asked"] == "fix the login" and turn["answered"] == "fixed"
    r = ok(hs("hooks", "status", "claude-code"))
    assert "Stop          installed (timeout 30 s); last ran" in r.stdout
    assert "recorded (1 added, 0 revised)" in r.stdout
    assert "SessionEnd    installed (timeout 10 s); last ran" in r.stdout
    assert "PreCompact    installed (timeout 30 s); never ran" in r.stdout
    # the hook with a store that is gone: still nothing for the agent
    (cmd,) = [h["command"] for g in doc["hooks"]["Stop"] for h in g["hooks"]]
    broken = cmd.replace(str(store_path), str(store_path) + "-gone")
    p = subprocess.run(broken, shell=True, input=b"{}", capture_output=True, env=env)
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")


def test_hooks_status_says_what_is_not_installed(hs: HS, store: Store) -> None:
    r = ok(hs("hooks", "status"))
    assert f"claude-code: {settings_file()}" in r.stdout
    assert "Stop          not installed; never ran" in r.stdout
    assert f"codex: {HOME() / '.codex' / 'hooks.json'}" in r.stdout
    assert "notify        not installed; never ran" in r.stdout
    assert "spool: 0 payloads waiting" in r.stdout
    lines = [json.loads(x) for x in ok(hs("hooks", "status", "--json")).stdout.splitlines()]
    assert [x["agent"] for x in lines] == ["claude-code", "codex"]
    assert lines[0]["events"]["Stop"] == {"installed": False}


# --------------------------------------------------------------------------- Codex


def fake_codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: str) -> None:
    """A `codex` on PATH whose `features list` prints ``rows``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "codex"
    exe.write_text(f"#!{sys.executable}\nimport sys\nprint({rows!r})\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


def test_codex_hooks_json_and_trust(
    hs: HS, store: Store, store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex_home = tmp_path / "cx"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    fake_codex(tmp_path, monkeypatch, "hooks   stable   true")
    r = ok(hs("hooks", "install", "codex"))
    path = codex_home / "hooks.json"
    assert f"codex: hooked in {path} (a new file)" in r.stdout
    assert "review it in /hooks" in r.stdout
    doc = json.loads(path.read_text())
    (h,) = doc["hooks"]["Stop"][0]["hooks"]
    assert h["command"].endswith(f"--store {store_path} capture codex") and h["timeout"] == 30
    assert not (codex_home / "config.toml").exists()  # no notify: this Codex has hooks
    r = ok(hs("hooks", "status", "codex"))
    assert "Stop          installed (timeout 30 s), review in /hooks; never ran" in r.stdout
    # trusted in /hooks: Codex records it in config.toml
    write(
        codex_home / "config.toml",
        f'[hooks.state."{path}:stop:0:0"]\ntrusted_hash = "sha256:00"\n',
    )
    r = ok(hs("hooks", "status", "codex"))
    assert "installed (timeout 30 s), trusted; never ran" in r.stdout
    # the installed command, as Codex runs it
    cx = FakeCodex(codex_home)
    cx.turn("Fix it", "Fixed.")
    p = subprocess.run(
        h["command"],
        shell=True,
        input=json.dumps(cx.stop_payload("Fixed.")).encode(),
        capture_output=True,
        env={**os.environ, "HS_CAPTURE_DETACH": "0"},
    )
    assert (p.returncode, p.stdout, p.stderr) == (0, b"", b"")
    assert "recorded (1 added, 0 revised)" in ok(hs("hooks", "status", "codex")).stdout
    ok(hs("hooks", "uninstall", "codex"))
    assert json.loads(path.read_text()) == {}


def test_codex_hooks_kept_in_config_toml_stay_there(
    hs: HS, store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_codex(tmp_path, monkeypatch, "hooks   stable   true")
    config = HOME() / ".codex" / "config.toml"
    original = (
        "# my codex settings\n"
        'model = "gpt-5"  # the default\n'
        "\n"
        "[[hooks.SessionStart]]\n"
        "[[hooks.SessionStart.hooks]]\n"
        'type = "command"\n'
        'command = "echo hi"\n'
        "\n"
        '[projects."/home/dev/proj"]\n'
        'trust_level = "trusted"\n'
    )
    write(config, original)
    r = ok(hs("hooks", "install", "codex"))
    assert f"codex: hooked in {config}" in r.stdout
    text = config.read_text()
    assert text.startswith('# my codex settings\nmodel = "gpt-5"  # the default\n')
    assert '[projects."/home/dev/proj"]' in text and 'command = "echo hi"' in text
    assert not (HOME() / ".codex" / "hooks.json").exists()
    assert "installed (timeout 30 s)" in ok(hs("hooks", "status", "codex")).stdout
    ok(hs("hooks", "uninstall", "codex"))
    import tomllib

    assert tomllib.loads(config.read_text()) == tomllib.loads(original)
    assert config.read_text().startswith("# my codex settings\n")


def test_codex_without_hooks_gets_notify_chaining_the_one_set(
    hs: HS, store: Store, store_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_codex(tmp_path, monkeypatch, "unified_exec   stable   true")  # no hooks row
    config = HOME() / ".codex" / "config.toml"
    original = '# notify me\nnotify = ["terminal-notifier", "-title", "Codex"]\nmodel = "o3"\n'
    write(config, original)
    r = ok(hs("hooks", "install", "codex"))
    assert "this Codex runs no hooks" in r.stdout
    import tomllib

    notify = tomllib.loads(config.read_text())["notify"]
    assert notify[-6:] == ["codex", "--notify", "--", "terminal-notifier", "-title", "Codex"]
    assert notify[notify.index("--store") + 1] == str(store_path)
    assert config.read_text().startswith("# notify me\n")
    assert not (HOME() / ".codex" / "hooks.json").exists()
    r = ok(hs("hooks", "status", "codex"))
    assert "notify        installed, then runs terminal-notifier -title Codex" in r.stdout
    assert "nothing changed" in ok(hs("hooks", "install", "codex")).stdout
    ok(hs("hooks", "uninstall", "codex"))
    assert tomllib.loads(config.read_text()) == tomllib.loads(original)
    assert config.read_text().startswith("# notify me\n")


def test_codex_notify_asked_for_and_nothing_to_chain(
    hs: HS, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = ok(hs("hooks", "install", "codex", "--notify"))
    assert "no `codex` found to ask" not in r.stdout
    config = HOME() / ".codex" / "config.toml"
    import tomllib

    assert tomllib.loads(config.read_text())["notify"][-3:] == ["codex", "--notify", "--"]
    ok(hs("hooks", "uninstall", "codex"))
    assert tomllib.loads(config.read_text()) == {}
    bad = write(config, "notify = 3\n")
    r = hs("hooks", "install", "codex", "--notify")
    assert r.exit_code == 2 and "notify is not a list of strings" in r.stderr
    assert bad.read_text() == "notify = 3\n"


def test_codex_config_that_does_not_parse_is_refused(
    hs: HS, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(HOME() / ".codex" / "config.toml", "notify = [\n")
    r = hs("hooks", "install", "codex", "--notify")
    assert r.exit_code == 2 and f"hs: error: {config} is not valid TOML" in r.stderr
    assert config.read_text() == "notify = [\n"


def test_codex_hook_in_hooks_json_is_found_when_config_toml_gains_hooks_later(
    hs: HS, store: Store, store_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Install wrote hooks.json (config.toml had no hooks); the person then
    keeps a hook of their own in config.toml: status, a second install and
    uninstall all find hs's hook where it is, and touch nothing else."""
    fake_codex(tmp_path, monkeypatch, "hooks   stable   true")
    hooks_json = HOME() / ".codex" / "hooks.json"
    ok(hs("hooks", "install", "codex"))
    config = write(
        HOME() / ".codex" / "config.toml",
        '[[hooks.SessionStart]]\n[[hooks.SessionStart.hooks]]\ntype = "command"\n'
        'command = "echo hi"\n',
    )
    mine = config.read_text()
    r = ok(hs("hooks", "status", "codex"))
    assert r.stdout.startswith(f"codex: {hooks_json}\n")
    assert "  Stop          installed (timeout 30 s), review in /hooks; never ran\n" in r.stdout
    (st,) = [
        json.loads(x) for x in ok(hs("hooks", "status", "codex", "--json")).stdout.splitlines()
    ]
    assert st["file"] == str(hooks_json) and st["events"]["Stop"]["file"] == str(hooks_json)
    before = hooks_json.read_bytes()
    r = ok(hs("hooks", "install", "codex"))  # hs's hook stays where it is: no second one
    assert f"codex: {hooks_json} already hooked in: nothing changed" in r.stdout
    assert hooks_json.read_bytes() == before and config.read_text() == mine
    r = ok(hs("hooks", "uninstall", "codex"))
    assert r.stdout == (
        f"codex: no hook of hs's in {config}: nothing changed\n"
        f"codex: removed hs's hooks from {hooks_json} "
        f"(the previous file is kept as {hooks_json}.hs-backup)\n"
    )
    assert json.loads(hooks_json.read_text()) == {} and config.read_text() == mine
    r = ok(hs("hooks", "status", "codex"))
    assert "  Stop          not installed; never ran\n" in r.stdout


def test_codex_refused_input_changes_nothing_in_any_file(
    hs: HS, store: Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every file is checked before any is written: a config.toml that does
    not parse (or whose notify is no list) refuses the whole install or
    uninstall, hooks.json included; a broken config.toml is never taken for
    one without hooks."""
    fake_codex(tmp_path, monkeypatch, "hooks   stable   true")
    hooks_json = HOME() / ".codex" / "hooks.json"
    broken = 'model="gpt-5"\n[broken'
    config = write(HOME() / ".codex" / "config.toml", broken)
    for args in (["--notify"], ["--no-notify"], []):
        r = hs("hooks", "install", "codex", *args)
        assert (r.exit_code, r.stdout) == (2, ""), args
        assert r.stderr.startswith(f"hs: error: {config} is not valid TOML (")
        assert r.stderr.count("\n") == 1
        assert not hooks_json.exists() and config.read_text() == broken
    write(config, "notify = 3\n")
    r = hs("hooks", "install", "codex", "--notify")
    assert (r.exit_code, r.stdout) == (2, "") and "notify is not a list of strings" in r.stderr
    assert not hooks_json.exists() and config.read_text() == "notify = 3\n"
    # hs's hook in hooks.json, then config.toml breaks: uninstall changes nothing
    config.unlink()
    ok(hs("hooks", "install", "codex", "--notify"))
    write(config, broken)
    before = hooks_json.read_bytes()
    for f in (hooks_json, config):
        Path(str(f) + ".hs-backup").unlink(missing_ok=True)
    r = hs("hooks", "uninstall", "codex")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.startswith(f"hs: error: {config} is not valid TOML (")
    assert hooks_json.read_bytes() == before and config.read_text() == broken
    assert not Path(str(hooks_json) + ".hs-backup").exists()
    # status still tells where hs's hook is, and what is wrong
    r = hs("hooks", "status", "codex")
    assert r.exit_code == 0
    assert r.stdout.startswith(f"codex: {hooks_json}\n")
    assert "  Stop          installed (timeout 30 s), review in /hooks; never ran\n" in r.stdout
    assert r.stderr.startswith(f"  hs: error: {config} is not valid TOML (")


def test_a_refused_install_creates_no_store(hs: HS, store_path: Path) -> None:
    config = write(HOME() / ".codex" / "config.toml", "[broken")
    r = hs("hooks", "install", "codex", "--notify")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.startswith(f"hs: error: {config} is not valid TOML (")
    assert not store_path.exists() and not (HOME() / ".codex" / "hooks.json").exists()


def test_an_install_the_toml_layout_refuses_creates_no_store(hs: HS, store_path: Path) -> None:
    """hooks.Stop split around another table: hs's entry cannot be put in
    without writing the file anew (its comments lost), so the install is
    refused — before any file is written, the store included."""
    text = (
        '[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "ping"  # mine\n\n'
        '[foo]\nx = 1\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\ncommand = "pong"\n'
    )
    config = write(HOME() / ".codex" / "config.toml", text)
    r = hs("hooks", "install", "codex", "--no-notify")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.startswith(
        f"hs: error: {config}: this change cannot be made without rewriting the file's layout"
    )
    assert r.stderr.count("\n") == 1 and "{" not in r.stderr
    assert config.read_text() == text
    assert not store_path.exists() and not (HOME() / ".codex" / "hooks.json").exists()
