"""A CLI that feels like git (issue 18), on a pipe: usage errors in one line,
`--version`, shell completion, local times, `--project` by name, `--json`
everywhere, `hs status` and `hs init`. (The terminal side, pager, colour and
Ctrl-C: tests/test_cli_terminal.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import HS, turn_record, write_turns
from synctools import snapshot

import histstore
from histstore.history.project import matching_projects
from histstore.plumbing import term

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo" / "claude-projects"


def _run(hs: HS, *args: str, input: str | None = None) -> tuple[int, str, str]:
    r = hs(*args, input=input)
    return r.exit_code, r.stdout, r.stderr


# ------------------------------------------------------------ usage errors


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["lgo"], "hs: error: no such command 'lgo'; hint: did you mean 'log'?"),
        (["memroy", "log"], "hs: error: no such command 'memroy'; hint: did you mean 'memory'?"),
        (
            ["memory", "lgo"],
            "hs: error: hs memory: no such command 'lgo'; hint: did you mean 'log'?",
        ),
        (
            ["zzzz"],
            "hs: error: no such command 'zzzz'; hint: `hs --help` lists the commands",
        ),
        (
            ["log", "--jsno"],
            "hs: error: hs log: no such option: --jsno; hint: did you mean --json?",
        ),
        (
            ["--colour", "never", "log"],
            "hs: error: no such option: --colour; hint: did you mean --color?",
        ),
        (["show"], "hs: error: hs show: missing argument 'ID'; hint: see `hs show --help`"),
        (
            ["log", "-n", "x"],
            "hs: error: hs log: invalid value for '-n' / '--max-count': 'x' is not a valid "
            "integer; hint: see `hs log --help`",
        ),
        (
            ["log", "--session"],
            "hs: error: hs log: option '--session' requires an argument; hint: see `hs log --help`",
        ),
        (
            ["plumbing", "cat-object"],
            "hs: error: hs plumbing cat-object: missing argument 'ID'; "
            "hint: see `hs plumbing cat-object --help`",
        ),
    ],
)
def test_a_usage_error_is_one_line_with_exit_2(hs: HS, args: list[str], line: str) -> None:
    assert _run(hs, *args) == (2, "", line + "\n")


@pytest.fixture(scope="module")
def _demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo imported once per module (the import is what costs)."""
    root = tmp_path_factory.mktemp("demo") / "store"
    hs = HS()
    assert hs("-C", str(root), "init").exit_code == 0
    assert hs("-C", str(root), "import", str(DEMO)).exit_code == 0
    return root


@pytest.fixture
def demo(_demo_template: Path, store_path: Path) -> Path:
    """This test's store ($HISTORY_DIR): a copy of the demo store."""
    shutil.copytree(_demo_template, store_path)
    return store_path


@pytest.mark.parametrize(
    ("args", "line"),
    [
        # the quick path (log) hands an empty value to the full CLI, which refuses it
        (["log", "--since", ""], "hs log: --since is empty"),
        (["log", "--session", "  "], "hs log: --session is empty"),
        (["recall", "--agent", "", "login"], "hs recall: --agent is empty"),
        (["export", "-o", ""], "hs export: -o/--output is empty"),
        (["log", "-n", " "], "hs log: -n/--max-count is empty"),
        (["-C", "", "log"], "-C/--store is empty"),
        (["--store=", "init"], "-C/--store is empty"),
        (["mcp", "--drafts", ""], "hs mcp: --drafts is empty"),
        (["export", "--session="], "hs export: --session is empty"),
        (["restore", "x", "--to", ""], "hs restore: --to is empty"),
        (["memory", "snapshot", "--memory-dir", ""], "hs memory snapshot: --memory-dir is empty"),
        (["memory", "dir", "--set", " "], "hs memory dir: --set is empty"),
        (["forgotten", "--agent", ""], "hs forgotten: --agent is empty"),
    ],
)
def test_an_empty_option_value_is_refused_and_changes_nothing(
    hs: HS,
    demo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    line: str,
) -> None:
    """``--memory-dir "$DIR"`` with DIR unset: typer took '' for the current
    directory, a command took it for every session; it is a usage error."""
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    code, out, err = _run(hs, *args)
    assert (code, out) == (2, "")
    assert err == f"hs: error: {line}; hint: give it a value, or leave the option out\n"
    assert snapshot(tmp_path) == before


def test_help_wins_over_an_empty_value(hs: HS) -> None:
    r = hs("log", "--since", "", "--help")
    assert r.exit_code == 0 and "Usage: hs log" in r.stdout and r.stderr == ""


@pytest.mark.parametrize("args", [["import", ""], ["import", str(DEMO), "  "], ["watch", ""]])
def test_an_empty_path_argument_is_refused(
    hs: HS, store_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """``hs import ''`` imported the current directory."""
    monkeypatch.chdir(tmp_path)
    hs("init")
    before = snapshot(tmp_path)
    code, out, err = _run(hs, *args)
    assert (code, out) == (2, "")
    assert err == (
        f"hs: error: hs {args[0]}: PATHS is empty; hint: name a file or folder (. for this one)\n"
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["restore", ""], "the session id is empty; hint: name a session; see them with `hs log`"),
        (
            ["memory", "scan", " "],
            "the session id is empty; hint: name a session; see them with `hs log`",
        ),
        (["plumbing", "hash-object", ""], "the path is empty; hint: name a file, or - for stdin"),
        (
            ["remote", "add", "r2", ""],
            "the remote's folder is empty; hint: name the other store's folder",
        ),
        (["hooks", "status", ""], "unknown agent ''; hint: use one of claude-code, codex"),
    ],
)
def test_an_empty_argument_is_refused_by_the_command(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], line: str
) -> None:
    """An empty session prefix matched every session (with one, ``hs restore
    ''`` restored it); an empty path or folder was the current one; an empty
    agent was every agent."""
    monkeypatch.chdir(tmp_path)
    hs("init")
    one = next((DEMO / "-home-dev-src-webshop").glob("*.jsonl"))
    hs("import", str(one))  # one session: an empty prefix names only it
    assert len(hs.json_lines("plumbing", "show-ref", "sessions/")) == 1
    before = snapshot(tmp_path)
    code, out, err = _run(hs, *args)
    assert (code, out, err) == (2, "", f"hs: error: {line}\n")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "code", "line"),
    [
        (["ops", "-n", "-1"], 2, "-n -1: give a count of 0 or more"),
        (["plumbing", "refs-log", "-n", "-2"], 2, "-n -2: give a count of 0 or more"),
        (["log", "--json", "--oneline"], 2, "--oneline and --json are two ways to print: give one"),
        (
            ["recall", "--everywhere", "--days", "1000000", "login"],
            2,
            "--days 1000000 reaches before year 1; hint: give fewer days, or leave --days out "
            "to search them all",
        ),
        (
            ["recall", "--everywhere", "--days", "99999999999999999999", "login"],
            2,
            "--days 99999999999999999999 reaches before year 1; hint: give fewer days, or leave "
            "--days out to search them all",
        ),
        (["recall", "--everywhere", "-k", "0", "login"], 2, "-k 0: give a number from 1 to 10"),
        (
            ["forget", "--list", "--exclude"],
            2,
            "--list takes only --agent and --json: --exclude, --reason and --confirm go with a "
            "target; hint: hs forget --list [--agent NAME]",
        ),
        (
            ["purge", "--list", "--confirm", "x"],
            2,
            "--list takes no target, --text or --confirm: it lists every purge; hint: hs purge --list",
        ),
        (
            ["hooks", "install", "claude-code", "--notify"],
            2,
            "--notify and --no-notify are Codex's: claude-code has no notify program; "
            "hint: hs hooks install claude-code",
        ),
    ],
)
def test_counts_windows_and_flag_pairs_out_of_range_are_refused(
    hs: HS,
    demo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    code: int,
    line: str,
) -> None:
    """Each used to crash (an int SQLite or a date cannot hold), print what
    was not asked for, or take one flag of a pair and drop the other; the
    refused recall caught the index up first. Refused, nothing changes."""
    monkeypatch.chdir(tmp_path)
    # an operation the index has not seen: a search would catch up (a write)
    some = hs.json_lines("plumbing", "show-ref")[0]["id"]
    assert hs("plumbing", "update-ref", "heads/x", some).exit_code == 0
    before = snapshot(tmp_path)
    got = _run(hs, *args)
    assert got == (code, "", f"hs: error: {line}\n")
    assert snapshot(tmp_path) == before


def test_a_count_of_zero_prints_nothing_and_a_huge_one_everything(hs: HS, demo: Path) -> None:
    assert _run(hs, "log", "-n", "0") == (0, "", "")
    assert _run(hs, "ops", "-n", "0") == (0, "", "")
    every = hs("log", "--oneline").stdout
    assert _run(hs, "log", "--oneline", "-n", "99999999999999999999") == (0, every, "")


def test_show_refuses_raw_with_json(hs: HS, demo: Path) -> None:
    turn = hs.json_lines("log", "--json")[0]["turn_id"]
    assert _run(hs, "show", turn, "--raw", "--json") == (
        2,
        "",
        "hs: error: --raw prints the source lines as read, --json one object: give one; "
        "hint: the source lines are JSON already\n",
    )


def test_a_bad_lock_timeout_makes_no_store(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HS_LOCK_TIMEOUT", "abc")
    target = tmp_path / "new"
    code, out, err = _run(hs, "-C", str(target), "init")
    assert (code, out) == (2, "")
    assert err == "hs: error: HS_LOCK_TIMEOUT='abc' is not a number of seconds; hint: e.g. 30\n"
    assert not target.exists()


def test_an_empty_value_that_means_something_is_taken(hs: HS, demo: Path) -> None:
    """update-ref's NEW and --old: empty is documented as "no object"
    (docs/cli.md); show-ref's prefix: empty is its default (every ref)."""
    refs = hs.json_lines("plumbing", "show-ref", "")
    assert refs and refs == hs.json_lines("plumbing", "show-ref")
    name = next(r["ref"] for r in refs if r["ref"].startswith("sessions/"))
    code, _, err = _run(hs, "plumbing", "update-ref", "--old", "", "heads/none", "")
    assert code == 0, err
    code, _, err = _run(hs, "plumbing", "update-ref", name, "")
    assert code == 0, err
    assert name not in {r["ref"] for r in hs.json_lines("plumbing", "show-ref")}


def test_hs_alone_prints_its_help(hs: HS) -> None:
    code, out, err = _run(hs)
    assert code == 0 and err == ""
    assert "Usage: hs [OPTIONS] COMMAND [ARGS]..." in out and "recall" in out


def test_version_is_the_package_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert histstore.__version__ == version
    assert _run(HS(), "--version") == (0, f"hs (histstore) {version}\n", "")
    # the executable answers it without building the CLI: the same line
    r = subprocess.run(
        [str(Path(sys.executable).with_name("hs")), "--version"], capture_output=True, text=True
    )
    assert (r.returncode, r.stdout, r.stderr) == (0, f"hs (histstore) {version}\n", "")


# -------------------------------------------------------------- completion


def _complete(hs: HS, monkeypatch: pytest.MonkeyPatch, words: str) -> list[str]:
    """What bash is offered for ``words`` (the last one being completed)."""
    parts = words.split(" ")
    monkeypatch.setenv("_HS_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(parts) - 1))
    r = hs()
    monkeypatch.delenv("_HS_COMPLETE")
    assert r.exit_code == 0, r.stderr
    return r.stdout.split()


def test_completion_of_commands_options_remotes_notes_and_ids(
    hs: HS, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert hs("init").exit_code == 0
    assert hs("import", str(DEMO)).exit_code == 0
    assert hs("remote", "add", "usb", str(tmp_path / "usb")).exit_code == 0
    assert hs("remote", "add", "nas", str(tmp_path / "nas")).exit_code == 0
    mem = tmp_path / "mem"
    mem.mkdir()
    monkeypatch.setenv("MEMORY_DIR", str(mem))
    body = "Use tabs.\n\n**Why:** gofmt.\n\n**How to apply:** always."
    w = ["memory", "write", "--type", "feedback", "--slug", "use-tabs", "--name", "Tabs"]
    assert hs(*w, "--description", "tabs", "--body", body, "--yes").exit_code == 0
    assert _complete(hs, monkeypatch, "hs lo") == ["log"]
    assert _complete(hs, monkeypatch, "hs memory d") == ["diff", "dir"]
    assert "--oneline" in _complete(hs, monkeypatch, "hs log --o")
    assert _complete(hs, monkeypatch, "hs log --color ") == ["auto", "always", "never"]
    assert _complete(hs, monkeypatch, "hs push ") == ["nas", "usb"]
    assert _complete(hs, monkeypatch, "hs sync u") == ["usb"]
    assert _complete(hs, monkeypatch, "hs memory show ") == ["feedback_use-tabs.md"]
    assert _complete(hs, monkeypatch, "hs show 5f") == ["5f0c1e7a-3b2d-4c8e-9a61-0d2f4b6c8e10"]
    assert _complete(hs, monkeypatch, "hs log --agent c") == ["claude-code"]
    # no store there: nothing offered, nothing printed on stderr
    assert _complete(hs, monkeypatch, f"hs -C {tmp_path / 'none'} push ") == []


def test_show_completion_gives_the_script_for_the_shell() -> None:
    """typer's --show-completion detects the shell running hs (here bash)."""
    script = subprocess.run(
        # "; exit $?" keeps bash the parent (a lone command is exec'ed in its
        # place, and detection then depends on whatever started the suite)
        ["bash", "-c", f"{sys.executable} -m histstore.porcelain.entry --show-completion; exit $?"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert "_hs_completion()" in script and "_HS_COMPLETE=complete_bash" in script
    assert "complete -o default -F _hs_completion hs" in script


# --------------------------------------------------------------- times


@pytest.fixture
def in_tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def test_times_are_shown_in_the_local_zone_and_json_stays_utc(
    hs: HS, tmp_path: Path, in_tokyo: None
) -> None:
    path = write_turns(tmp_path / "t.jsonl", [turn_record(1, asked_at="2026-03-02T20:30:00Z")])
    assert hs("init").exit_code == 0 and hs("import", str(path)).exit_code == 0
    code, out, _ = _run(hs, "log", "--oneline")
    assert code == 0 and out.startswith("turn-0001  2026-03-03 05:30  sess-a  ")
    assert "Date:    2026-03-03 05:30 JST\n" in hs("log").stdout
    assert hs.json_lines("log", "--json")[0]["asked_at"] == "2026-03-02T20:30:00.000Z"
    recalled = hs("recall", "-e", "login_user").stdout
    assert recalled.startswith("2026-03-03  session sess-a  turn turn-0001")
    op = hs.json_lines("ops", "--json")[0]
    shown = term.local_time(op["time"], seconds=True)
    assert shown.endswith(" JST") and hs("ops").stdout.startswith(f"{op['op']}  {shown}  hs import")


def test_tz_utc_shows_utc(hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert term.local_time("2026-03-02T20:30:00.000Z") == "2026-03-02 20:30 UTC"
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert (
            term.local_time("2026-03-02T20:30:00.000Z", seconds=True) == "2026-03-02 15:30:00 EST"
        )
        assert term.local_time("2026-07-02T20:30:00Z") == "2026-07-02 16:30 EDT"
        assert term.local_time("not a time") == "not a time" and term.local_time(None) == "-"
    finally:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()


# ------------------------------------------------------------- --project


def test_project_matching_rules() -> None:
    recorded = [
        ("/home/ana/src/webshop", "/home/ana/src/webshop"),
        ("/home/ana/src/webshop/api", "/home/ana/src/webshop"),
        ("/home/bo/webshop", "/home/bo/webshop"),
        ("C:\\Users\\ana\\tools", "C:\\Users\\ana\\tools"),
        ("/srv/app/", "/srv/app/"),
    ]
    m = matching_projects
    assert m("/home/ana/src/webshop", recorded) == {
        "/home/ana/src/webshop",
        "/home/ana/src/webshop/api",
    }
    assert m("/home/ana/src/webshop/", recorded) == m("/home/ana/src/webshop", recorded)
    assert m("webshop", recorded) == {
        "/home/ana/src/webshop",
        "/home/ana/src/webshop/api",
        "/home/bo/webshop",
    }
    assert m("tools", recorded) == {"C:\\Users\\ana\\tools"}
    assert m("/srv/app", recorded) == m("app", recorded) == {"/srv/app/"}
    assert m("shop", recorded) == set() and m("ana/webshop", recorded) == set()
    with pytest.raises(Exception, match="--project is empty"):
        m("  ", recorded)


def test_project_by_name_by_path_and_with_a_slash(hs: HS, tmp_path: Path) -> None:
    recs = [
        turn_record(1, session_id="a", project="/home/ana/src/webshop"),
        turn_record(2, session_id="b", project="/home/bo/webshop"),
        turn_record(3, session_id="c", project="/home/ana/src/blog"),
    ]
    path = write_turns(tmp_path / "t.jsonl", recs)
    assert hs("init").exit_code == 0 and hs("import", str(path)).exit_code == 0

    def ids(*args: str) -> tuple[list[str], str]:
        r = hs("log", "--json", *args)
        assert r.exit_code == 0
        return [json.loads(x)["turn_id"] for x in r.stdout.splitlines()], r.stderr

    assert ids("--project", "blog") == (["turn-0003"], "")
    assert ids("--project", "/home/ana/src/blog/") == (["turn-0003"], "")
    assert ids("--project", "/home/ana/src/blog") == (["turn-0003"], "")
    assert ids("--project", "webshop") == (
        ["turn-0002", "turn-0001"],
        "hs: note: --project webshop matches 2 projects: /home/ana/src/webshop, /home/bo/webshop\n",
    )
    assert _run(hs, "log", "--project", "nothing") == (0, "no turns match\n", "")
    exported = hs("export", "--project", "blog/")
    assert [json.loads(x)["turn_id"] for x in exported.stdout.splitlines()] == ["turn-0003"]


def test_project_a_directory_here_names_its_work_tree(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "shop"
    (tree / ".git").mkdir(parents=True)
    (tree / "src").mkdir()
    recs = [turn_record(1, project=str(tree / "src")), turn_record(2, project="/elsewhere/x")]
    path = write_turns(tmp_path / "t.jsonl", recs)
    assert hs("init").exit_code == 0 and hs("import", str(path)).exit_code == 0
    monkeypatch.chdir(tmp_path)
    got = hs.json_lines("log", "--json", "--project", "shop/")
    assert [t["turn_id"] for t in got] == ["turn-0001"]


# ---------------------------------------------------------------- --grep


def test_log_grep_finds_and_marks_and_never_searches_a_forgotten_turn(
    hs: HS, tmp_path: Path
) -> None:
    recs = [
        turn_record(1, asked="Why is the CART total wrong?"),
        turn_record(2, asked="fix the cart", session_id="s2"),
        turn_record(3, asked="nothing here"),
    ]
    path = write_turns(tmp_path / "t.jsonl", recs)
    assert hs("init").exit_code == 0 and hs("import", str(path)).exit_code == 0
    code, out, err = _run(hs, "log", "--oneline", "--grep", "cart")
    assert (code, err) == (0, "")
    assert [ln.split()[0] for ln in out.splitlines()] == ["turn-0002", "turn-0001"]
    assert _run(hs, "log", "--oneline", "--grep", "cart", "-n", "1")[1].startswith("turn-0002")
    assert hs("forget", "s2", "--confirm", "s2").exit_code == 0
    assert [
        ln.split()[0] for ln in hs("log", "--oneline", "--grep", "cart").stdout.splitlines()
    ] == ["turn-0001"]
    assert _run(hs, "log", "--grep", "zebra") == (0, "no turns match\n", "")


# ----------------------------------------------------------------- --json


def _store_with_memory(hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert hs("init").exit_code == 0
    assert hs("import", str(DEMO)).exit_code == 0
    mem = tmp_path / "mem"
    mem.mkdir()
    monkeypatch.setenv("MEMORY_DIR", str(mem))
    w = ["memory", "write", "--type", "feedback", "--slug", "use-tabs", "--name", "Tabs"]
    for text in ("Use tabs.", "Use tabs, always."):
        body = f"{text}\n\n**Why:** gofmt.\n\n**How to apply:** always."
        more = ["--revise", "use-tabs"] if "always" in text else []
        assert hs(*w, "--description", "tabs", "--body", body, *more, "--yes").exit_code == 0


def test_fsck_json(hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _store_with_memory(hs, tmp_path, monkeypatch)
    code, out, err = _run(hs, "fsck", "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["ok"] and report["errors"] == 0
    assert report["findings"] == hs.json_lines("plumbing", "fsck")
    store = Path(os.environ["HISTORY_DIR"])
    (store / "refs.log").write_bytes((store / "refs.log").read_bytes() + b'{"torn')
    code, out, err = _run(hs, "fsck", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and err == ""
    assert report["warnings"] == len(report["findings"]) >= 1
    assert "refs-log" in {f["check"] for f in report["findings"]}
    # a damaged object is an error: exit 7, ok false
    loose = next(p for p in (store / "objects").rglob("*") if p.is_file() and "pack" not in p.parts)
    loose.write_bytes(b"garbage")
    code, out, err = _run(hs, "fsck", "--json")
    report = json.loads(out)
    assert code == 7 and not report["ok"] and report["errors"] >= 1 and err == ""


def test_memory_diff_json(hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _store_with_memory(hs, tmp_path, monkeypatch)
    code, out, err = _run(hs, "memory", "diff", "--json")
    assert (code, err) == (0, "") and out.count("\n") == 1
    d = json.loads(out)
    assert d["scope"] == "system" and d["note"] is None
    (f,) = d["files"]
    assert f["file"] == "feedback_use-tabs.md" and f["status"] == "modified"
    assert f["from"].startswith("a/feedback_use-tabs.md@") and f["to"].startswith("b/")
    assert "-Use tabs.\n+Use tabs, always.\n" in f["diff"]
    assert f["diff"] == "".join(ln + "\n" for ln in hs("memory", "diff").stdout.splitlines())


def _json_help(cmd: Any) -> str:
    return next(p.help for p in cmd.params if "--json" in getattr(p, "opts", []))


def test_json_help_says_what_is_printed_and_one_object_is_one_line(
    hs: HS, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every --json help names what it prints; the commands that print one
    object say so and print one line."""
    from helpers import COMMAND

    helps = {}
    for name, cmd in COMMAND.commands.items():
        for sub, leaf in getattr(cmd, "commands", {name: cmd}).items():
            if any("--json" in getattr(p, "opts", []) for p in leaf.params):
                path = name if sub == name else f"{name} {sub}"
                helps[path] = _json_help(leaf)
    assert len(helps) > 30
    for path, text in helps.items():
        assert text.startswith(("One JSON object", "Two JSON objects")), path
        assert text != "One JSON object per line.", path
    _store_with_memory(hs, tmp_path, monkeypatch)
    single = {
        "status": [],
        "recall": ["-e", "login_user"],
        "fsck": [],
        "init": [],
        "show": ["64a19766"],
        "memory diff": [],
        "memory show": ["use-tabs"],
        "undo": [],
    }
    for path, args in single.items():
        assert helps[path].startswith("One JSON object:"), path
        r = hs(*path.split(), *args, "--json")
        assert r.exit_code == 0, (path, r.stderr)
        assert r.stdout.count("\n") == 1, path
        json.loads(r.stdout)
    for path in ("log", "ops", "forgotten", "memory log", "remote list", "memory check"):
        assert helps[path].startswith("One JSON object per "), path


# --------------------------------------------------------- status and init


def test_init_says_what_to_run_next(hs: HS, store_path: Path, tmp_path: Path) -> None:
    assert _run(hs, "init") == (
        0,
        f"Initialized empty histstore in {store_path}\n"
        "next: `hs import` reads every agent's history it finds (~/.claude, ~/.codex)\n",
        "",
    )
    other = tmp_path / "other"
    code, out, _ = _run(hs, "-C", str(other), "init")
    assert code == 0 and out.endswith(
        f"next: `hs -C {other} import` reads every agent's history it finds (~/.claude, ~/.codex)\n"
    )
    assert json.loads(hs("init", "--json").stdout) == {"path": str(store_path), "created": False}


def test_status_shows_turns_per_agent_and_project_sizes_and_last_capture(
    hs: HS, tmp_path: Path, store_path: Path
) -> None:
    recs = [turn_record(i, session_id=f"s{i}", project=f"/p/proj{i % 12:02d}") for i in range(30)]
    recs += [turn_record(100, session_id="cx", project="/p/proj00", agent="codex")]
    path = write_turns(tmp_path / "t.jsonl", recs)
    assert hs("init").exit_code == 0
    code, out, _ = _run(hs, "status")
    assert "last capture: none yet: `hs import` captures what agents recorded\n" in out
    assert hs("import", str(path)).exit_code == 0
    op = hs.json_lines("ops", "--json")[0]
    assert hs("forget", "s1", "--confirm", "s1").exit_code == 0  # a later op, not a capture
    info = json.loads(hs("status", "--json").stdout)
    assert info["agents"] == {"codex": 1, "hs": 30}
    assert info["project_turns"][:3] == [
        {"project": "/p/proj00", "turns": 4},
        {"project": "/p/proj01", "turns": 3},
        {"project": "/p/proj02", "turns": 3},
    ]
    assert len(info["project_turns"]) == 10
    assert set(info["sizes"]) == {"objects", "recall index", "local", "refs", "refs log", "other"}
    assert info["sizes"]["objects"] == info["size_bytes"] > 0
    assert info["last_capture"]["op"] == op["op"]
    code, out, err = _run(hs, "status")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[2:6] == [
        "turns:        31",
        "  by agent:   30  hs",
        "               1  codex",
        "  by project:  4  /p/proj00",
    ]
    assert "              … and 2 more projects" in lines
    shown = term.local_time(op["time"], seconds=True)
    assert f"last capture: {shown}: {op['command']} (operation {op['op']})" in lines
    size = next(ln for ln in lines if ln.startswith("size:"))
    assert " on disk: objects " in size and ", recall index " in size


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_completion_scripts_and_answers_for_zsh_and_fish(
    shell: str, monkeypatch: pytest.MonkeyPatch, hs: HS, capsys: pytest.CaptureFixture[str]
) -> None:
    """The script for a shell named (typer's way, its shell detection off),
    and what that shell's protocol is answered."""
    import typer

    from histstore.porcelain.cli import app

    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    command = typer.main.get_command(app)  # the options take the shell's name now
    with pytest.raises(SystemExit) as done:
        command.main(["--show-completion", shell], prog_name="hs")
    assert done.value.code == 0
    script = capsys.readouterr().out
    assert "_HS_COMPLETE" in script and f"complete_{shell}" in script
    monkeypatch.setenv("_HS_COMPLETE", f"complete_{shell}")
    monkeypatch.setenv("_TYPER_COMPLETE_ARGS", "hs memory d")
    if shell == "fish":
        monkeypatch.setenv("_TYPER_COMPLETE_FISH_ACTION", "get-args")
    r = hs()
    assert r.exit_code == 0
    assert "diff" in r.stdout and "dir" in r.stdout and "log" not in r.stdout


def test_ctrl_c_in_the_middle_of_a_command_exits_130_and_changes_nothing(
    hs: HS, tmp_path: Path, store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from histstore.ops import importing

    assert hs("init").exit_code == 0
    log = (store_path / "refs.log").read_bytes() if (store_path / "refs.log").exists() else b""

    def interrupted(*args: Any, **kw: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(importing, "store_paths", interrupted)
    path = write_turns(tmp_path / "t.jsonl", [turn_record(1)])
    assert _run(hs, "import", str(path)) == (130, "", "hs: interrupted\n")
    now = (store_path / "refs.log").read_bytes() if (store_path / "refs.log").exists() else b""
    assert now == log and hs.json_lines("log", "--json") == []
