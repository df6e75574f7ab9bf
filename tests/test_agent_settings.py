"""histstore.agents.settings: one entry of an agent's JSON or TOML settings set,
merged into or removed, every other byte kept where the format allows; atomic, a
backup beside, a second identical change a no-op, a file that does not parse
refused untouched; lists (hooks) keep the person's entries and lose only hs's."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histstore.agents import homes, settings
from histstore.errors import BadInput

ENTRY = {"type": "stdio", "command": "/bin/hs", "args": ["mcp"], "env": {}, "alwaysLoad": True}
KEYS = ("mcpServers", "histstore")

CLAUDE = (
    "{\n"
    '  "numStartups": 12,\n'
    '  "theme": "dark",\n'
    '  "tipsHistory": {"a": 1, "b": 1e3},\n'
    '  "name": "caf\\u00e9",\n'
    '  "projects": {\n'
    '    "/x": {\n'
    '      "mcpServers": {}\n'
    "    }\n"
    "  }\n"
    "}\n"
)


def test_json_set_keeps_every_other_byte_and_a_second_set_changes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".claude.json"
    path.write_text(CLAUDE)
    os.chmod(path, 0o600)
    change = settings.set_json(path, KEYS, ENTRY)
    assert change.changed and not change.created and change.backup is not None
    text = path.read_text()
    assert text.startswith(CLAUDE[: CLAUDE.rindex("  }\n}")])  # all of it, untouched
    assert '"b": 1e3' in text and "caf\\u00e9" in text  # not re-serialised
    assert json.loads(text)["mcpServers"] == {"histstore": ENTRY}
    assert change.backup.read_text() == CLAUDE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(change.backup.stat().st_mode) == 0o600
    again = settings.set_json(path, KEYS, ENTRY)
    assert not again.changed and again.backup is None and path.read_text() == text
    assert settings.delete_json(path, KEYS).changed
    assert path.read_text() == CLAUDE  # removing it gives the file back


def test_json_set_beside_other_servers_and_in_a_compact_file(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{\n    "mcpServers": {\n        "other": {"command": "x"}\n    }\n}\n')
    settings.set_json(path, KEYS, {"command": "y"})
    assert path.read_text() == (
        '{\n    "mcpServers": {\n        "other": {"command": "x"},\n'
        '        "histstore": {\n            "command": "y"\n        }\n    }\n}\n'
    )
    settings.delete_json(path, KEYS)
    assert json.loads(path.read_text()) == {"mcpServers": {"other": {"command": "x"}}}
    path.write_text('{"a":1}')
    settings.set_json(path, KEYS, {"command": "y"})
    assert path.read_text() == '{"a":1, "mcpServers": {"histstore": {"command": "y"}}}'


def test_a_missing_file_is_created_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "settings.json"
    change = settings.set_json(path, KEYS, ENTRY)
    assert change.created and change.backup is None
    assert json.loads(path.read_text()) == {"mcpServers": {"histstore": ENTRY}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not settings.delete_json(tmp_path / "none.json", KEYS).changed


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "its top level is not a table"),
        ('{"mcpServers": [1]}', "mcpServers is not a table"),
    ],
)
def test_json_that_is_not_settings_is_refused_untouched(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "a.json"
    path.write_text(text)
    with pytest.raises(BadInput) as e:
        settings.set_json(path, KEYS, ENTRY)
    assert says in e.value.message and "nothing changed" in e.value.message
    assert path.read_text() == text and not (tmp_path / "a.json.hs-backup").exists()


def test_a_symlinked_settings_file_is_changed_where_it_lives(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "config.json"
    real.parent.mkdir()
    real.write_text("{}\n")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    settings.set_json(link, KEYS, ENTRY)
    assert link.is_symlink() and json.loads(real.read_text())["mcpServers"]


CODEX = """# my codex config
model = "gpt-5"  # the model I use

[projects."/home/me/app"]
trust_level = "trusted"

[mcp_servers.github]
command = "gh-mcp"
"""


def test_toml_set_keeps_comments_and_layout(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CODEX)
    value = {"command": "/bin/hs", "args": ["mcp"], "startup_timeout_sec": 20}
    change = settings.set_toml(path, ("mcp_servers", "histstore"), value)
    assert change.changed and change.backup is not None
    text = path.read_text()
    assert text == CODEX + (
        '\n[mcp_servers.histstore]\ncommand = "/bin/hs"\nargs = ["mcp"]\nstartup_timeout_sec = 20\n'
    )
    assert not settings.set_toml(path, ("mcp_servers", "histstore"), value).changed
    assert settings.delete_toml(path, ("mcp_servers", "histstore")).changed
    assert path.read_text() == CODEX
    path.write_text('model = "gpt-5"\n[broken\n')
    with pytest.raises(BadInput) as e:
        settings.set_toml(path, ("mcp_servers", "histstore"), value)
    assert "is not valid TOML" in e.value.message
    assert path.read_text() == 'model = "gpt-5"\n[broken\n'


def test_a_table_added_after_root_dotted_keys_keeps_every_comment(tmp_path: Path) -> None:
    """tomlkit would put the new table among the root's dotted keys, and the
    keys after it would move into it: the table goes at the end instead, every
    byte before it kept, and its removal gives the file back."""
    text = (
        "# keep me\n"
        'mcp_servers.other.command = "o"   # c\n'
        'model = "gpt-5"  # c2\n'
        "[profiles.fast]\n"
        "# c3\n"
        'model = "o4-mini"\n'
    )
    path = tmp_path / "config.toml"
    path.write_text(text)
    value = {"command": "/bin/hs", "args": ["mcp"]}
    assert settings.set_toml(path, ("mcp_servers", "histstore"), value).changed
    after = path.read_text()
    assert after == text + '\n[mcp_servers.histstore]\ncommand = "/bin/hs"\nargs = ["mcp"]\n'
    assert tomllib.loads(after)["model"] == "gpt-5"
    assert settings.delete_toml(path, ("mcp_servers", "histstore")).changed
    assert path.read_text() == text


@pytest.mark.parametrize(
    "text",
    [
        'model = "x"\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = "command"\n'
        'command = "ping"   # my ping\n\n# trailing\n',
        'model = "gpt-5"  # the model\n'
        'hooks = { Stop = [ { hooks = [ { type = "command", command = "ping" } ] } ] }\n'
        '[mcp_servers.docs]\n# a comment\ncommand = "d"\n',
    ],
    ids=["array-of-tables", "inline"],
)
def test_a_toml_list_of_hooks_keeps_the_persons_entries_as_written(
    tmp_path: Path, text: str
) -> None:
    """hs's entry is put in and taken out of the list itself: the person's
    entries keep their comments and layout (the whole list is not written anew)."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    keys = ("hooks", "Stop")
    group = {"hooks": [HOOK]}
    assert settings.update_toml(path, keys, lambda cur: settings.merged(cur, group, _ours)).changed
    after = path.read_text()
    assert tomllib.loads(after)["hooks"]["Stop"][1] == group
    comments = [ln[ln.index("#") :] for ln in text.splitlines() if "#" in ln]
    assert all(c in after for c in comments) and after.startswith(text.split("\n")[0])
    assert settings.update_toml(path, keys, lambda cur: settings.without(cur, _ours)).changed
    back = path.read_text()
    assert tomllib.loads(back) == tomllib.loads(text)
    # an inline array keeps the comma before the entry taken out (tomlkit's way)
    assert back == text or back == text.replace("} ] } ] }", "} ] }, ] }")


def test_a_null_where_a_json_object_goes_is_replaced_alone(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    text = '{\n  "mcpServers": null,\n  "list": [1,2,   3]\n}\n'
    path.write_text(text)
    assert settings.set_json(path, KEYS, ENTRY).changed
    after = path.read_text()
    assert json.loads(after) == {"mcpServers": {"histstore": ENTRY}, "list": [1, 2, 3]}
    assert '"list": [1,2,   3]' in after  # the rest as written


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=4), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=5,
    ),
    st.sampled_from([None, 2, 4, "\t"]),
)
def test_json_set_then_delete_round_trips_any_document(
    doc: dict[str, object], indent: object
) -> None:
    doc.pop("mcpServers", None)
    text = json.dumps(doc, indent=indent) + "\n"  # type: ignore[arg-type]
    for keys in (KEYS, ("histstore",)):
        set_text = settings._json_change(Path("x"), text, keys, lambda _: ENTRY, False)
        want = (
            {**doc, "mcpServers": {"histstore": ENTRY}}
            if len(keys) == 2
            else {**doc, "histstore": ENTRY}
        )
        assert json.loads(set_text) == want
        # the other members' text is still there as it was
        for k in doc:
            assert json.dumps(k) in set_text
        back = settings._json_change(Path("x"), set_text, keys, lambda _: settings.DELETE, True)
        assert back == text or (keys == ("histstore",) and "histstore" in doc)


HOOK = {"type": "command", "command": "/bin/hs capture --agent claude-code", "timeout": 30}


def _ours(group: object) -> bool:
    hooks = group.get("hooks", []) if isinstance(group, dict) else []
    return any(h.get("command", "").startswith("/bin/hs capture") for h in hooks)


def test_a_list_of_hooks_keeps_the_persons_entries_and_loses_only_ours(tmp_path: Path) -> None:
    """What the hooks installer does with Claude Code's settings.json: hs's
    group merged into hooks.Stop beside the person's, replaced in place by a
    second install, removed alone by an uninstall."""
    path = tmp_path / "settings.json"
    theirs = {"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}
    original = json.dumps({"model": "opus", "hooks": {"Stop": [theirs]}}, indent=2) + "\n"
    path.write_text(original)
    keys = ("hooks", "Stop")
    group = {"hooks": [HOOK]}
    assert settings.update_json(path, keys, lambda cur: settings.merged(cur, group, _ours)).changed
    assert json.loads(path.read_text())["hooks"]["Stop"] == [theirs, group]
    newer = {"hooks": [{**HOOK, "timeout": 60}]}
    settings.update_json(path, keys, lambda cur: settings.merged(cur, newer, _ours))
    assert json.loads(path.read_text())["hooks"]["Stop"] == [theirs, newer]
    again = settings.update_json(path, keys, lambda cur: settings.merged(cur, newer, _ours))
    assert not again.changed
    assert settings.update_json(path, keys, lambda cur: settings.without(cur, _ours)).changed
    assert path.read_text() == original
    assert not settings.update_json(path, keys, lambda cur: settings.without(cur, _ours)).changed
    # the only group was ours: the list goes, and the hooks table left empty
    path.write_text('{\n  "model": "opus"\n}\n')
    settings.update_json(path, keys, lambda cur: settings.merged(cur, group, _ours))
    settings.update_json(path, keys, lambda cur: settings.without(cur, _ours))
    assert path.read_text() == '{\n  "model": "opus"\n}\n'


def test_an_update_sees_the_value_there_and_may_refuse(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{"n": 1}\n')
    seen: list[object] = []

    def bump(cur: object) -> object:
        seen.append(cur)
        return cur + 1 if isinstance(cur, int) else 1

    settings.update_json(path, ("n",), bump)
    settings.update_json(path, ("m",), bump)
    assert seen[0] == 1 and seen[-1] is settings.MISSING
    assert json.loads(path.read_text()) == {"n": 2, "m": 1}

    def refuse(cur: object) -> object:
        raise BadInput("not ours")

    before = path.read_bytes()
    with pytest.raises(BadInput):
        settings.update_json(path, ("n",), refuse)
    assert path.read_bytes() == before
    # true is not 1: a flag set to 1 by hand is set to true
    path.write_text('{"flag": 1}\n')
    assert settings.set_json(path, ("flag",), True).changed
    assert json.loads(path.read_text()) == {"flag": True}
    assert not settings.delete_json(tmp_path / "none.json", ("x",)).changed
    assert not (tmp_path / "none.json").exists()


def test_toml_scalars_trust_tables_and_inline_tables(tmp_path: Path) -> None:
    """What the Codex hooks installer needs: a [features] flag, a
    [hooks.state."<key>"] table; and a table inside an inline table."""
    path = tmp_path / "config.toml"
    path.write_text("# mine\n[features]\nweb_search = true  # keep\n")
    settings.set_toml(path, ("features", "hooks"), True)
    key = "/home/me/.codex/hooks.json:stop:0:0"
    settings.set_toml(path, ("hooks", "state", key), {"trusted_hash": "sha256:ab"})
    text = path.read_text()
    assert text.startswith("# mine\n[features]\nweb_search = true  # keep\nhooks = true\n")
    assert tomllib.loads(text)["hooks"]["state"][key] == {"trusted_hash": "sha256:ab"}
    settings.delete_toml(path, ("hooks", "state", key))
    settings.delete_toml(path, ("features", "hooks"))
    assert path.read_text() == "# mine\n[features]\nweb_search = true  # keep\n"
    path.write_text('mcp_servers = { other = { command = "x" } }  # inline\n')
    settings.set_toml(path, ("mcp_servers", "histstore"), {"command": "hs", "args": ["mcp"]})
    assert tomllib.loads(path.read_text())["mcp_servers"] == {
        "other": {"command": "x"},
        "histstore": {"command": "hs", "args": ["mcp"]},
    }
    assert "# inline" in path.read_text()


def test_the_agents_homes_follow_their_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path.home()
    assert homes.claude_state_file() == home / ".claude.json"
    assert homes.codex_config_file() == home / ".codex" / "config.toml"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    assert homes.claude_state_file() == tmp_path / "cc" / ".claude.json"
    assert homes.claude_settings_file() == tmp_path / "cc" / "settings.json"
    assert homes.codex_config_file() == tmp_path / "cx" / "config.toml"
    (tmp_path / "cc").mkdir()
    (tmp_path / "cc" / ".config.json").write_text("{}")
    assert homes.claude_state_file() == tmp_path / "cc" / ".config.json"
    monkeypatch.setenv("CODEX_HOME", "")
    assert homes.codex_config_file() == home / ".codex" / "config.toml"
